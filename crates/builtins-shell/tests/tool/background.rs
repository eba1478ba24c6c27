//! Background processes through the registry, with real processes: start and wait for
//! readiness, read, write (to a shell: a command line asked like `bash`), a terminal, kill
//! with the whole tree checked in `/proc`, sessions apart, limits.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use toolgate_builtins_shell::{BashOptions, ShellLimits, Shells, bash_tools};
use toolgate_core::{Context, Location, ModelResult};
use toolgate_registry::{ApplicationTools, Registration, ToolRegistry};

use super::{PassThrough, Recording};

struct Fixture {
    dir: tempfile::TempDir,
    registry: ToolRegistry,
    shells: Shells,
    _guard: Registration,
}

fn fixture(permissions: Arc<Recording>, limits: ShellLimits) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let location = Location::new(dir.path()).unwrap();
    let registry = ToolRegistry::new(&ApplicationTools::new(), Arc::new(PassThrough));
    let shells = Shells::with_limits(dir.path().join(".data/shell"), limits);
    let options = BashOptions::default().with_shells(shells.clone());
    let guard = registry.register(bash_tools(location, permissions, options)).unwrap();
    Fixture {
        dir,
        registry,
        shells,
        _guard: guard,
    }
}

async fn call(fixture: &Fixture, session: &str, tool: &str, input: Value) -> toolgate_registry::Settlement {
    fixture
        .registry
        .materialize(|_| false)
        .settle(tool, input, Context::new(session, "build"))
        .await
        .unwrap()
}

fn text(settled: &toolgate_registry::Settlement) -> String {
    match &settled.result {
        ModelResult::Text(text) | ModelResult::Error(text) => text.clone(),
        other => panic!("{other:?}"),
    }
}

/// Starts `command` in the background in `session`; its shell ID.
async fn start(fixture: &Fixture, session: &str, input: Value) -> String {
    let waits = input.get("wait_for").is_some();
    let settled = call(fixture, session, "bash", input).await;
    let said = text(&settled);
    assert!(!settled.result.is_error(), "{said}");
    assert_eq!(said.contains("\n\nReady: "), waits, "{said}");
    assert!(
        said.starts_with("Command moved to the background (shell ID: "),
        "{said}"
    );
    settled.output.unwrap().structured["shellId"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Reads `id`'s output until it holds `wanted`: each read waits for new output, then the
/// whole kept output is read again, since output comes in pieces (a terminal echoes a
/// line a byte at a time on a busy machine) and each read's text has its own trailer.
async fn read_until(fixture: &Fixture, session: &str, id: &str, wanted: &str) -> String {
    let mut seen = String::new();
    for _ in 0..100 {
        let waited = call(fixture, session, "shell_output", json!({"id": id, "wait_ms": 10_000})).await;
        assert!(!waited.result.is_error(), "{}", text(&waited));
        let settled = call(fixture, session, "shell_output", json!({"id": id, "since": 0})).await;
        assert!(!settled.result.is_error(), "{}", text(&settled));
        let structured = settled.output.as_ref().unwrap().structured.clone();
        seen = text(&settled);
        if seen.contains(wanted) {
            return seen;
        }
        assert_eq!(structured["state"], "running", "ended before {wanted:?}: {seen}");
    }
    panic!("never saw {wanted:?}: {seen}");
}

/// Whether process `pid` has ended (gone, or a zombie).
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => matches!(
            stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next()),
            Some("Z" | "X")
        ),
    }
}

/// The PID a command wrote to `path`, once it is there.
async fn pid_in(path: &Path) -> u32 {
    for _ in 0..1000 {
        if let Some(pid) = std::fs::read_to_string(path).ok().and_then(|t| t.trim().parse().ok()) {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no PID in {}", path.display());
}

#[tokio::test]
async fn a_background_process_is_read_written_and_killed_with_its_whole_tree() {
    let permissions = Recording::new(|_| false);
    let fixture = fixture(Arc::clone(&permissions), ShellLimits::default());
    let dir = fixture.dir.path().display().to_string();
    // A job in the group, a setsid child that left it, and the shell reading its input.
    let command = format!(
        "sleep 1000 & echo $! > {dir}/job.pid; setsid sleep 1000 & echo $! > {dir}/setsid.pid; \
         echo $$ > {dir}/shell.pid; echo hello; while read line; do echo got:$line; done"
    );
    let id = start(
        &fixture,
        "ses_a",
        json!({"command": command, "background": true, "wait_for": {"pattern": "^hel+o$"}}),
    )
    .await;
    assert_eq!(permissions.asked()[0].0, "bash", "asked like a foreground command");
    let shell = pid_in(&fixture.dir.path().join("shell.pid")).await;
    let job = pid_in(&fixture.dir.path().join("job.pid")).await;
    let escaped = pid_in(&fixture.dir.path().join("setsid.pid")).await;
    for pid in [shell, job, escaped] {
        assert!(!ended(pid), "{pid} runs");
    }

    let wrote = call(&fixture, "ses_a", "shell_write", json!({"id": id, "input": "abc\n"})).await;
    assert!(!wrote.result.is_error(), "{}", text(&wrote));
    let seen = read_until(&fixture, "ses_a", &id, "got:abc").await;
    assert!(seen.contains("hello"), "{seen}");
    // The cursor moved on: the next read shows only what came since.
    let again = call(&fixture, "ses_a", "shell_output", json!({"id": id})).await;
    assert!(text(&again).starts_with("(no new output)"), "{}", text(&again));
    // From 0: everything still kept.
    let all = call(&fixture, "ses_a", "shell_output", json!({"id": id, "since": 0})).await;
    assert!(text(&all).starts_with("hello\ngot:abc\n"), "{}", text(&all));

    let listed = call(&fixture, "ses_a", "shell_list", json!({})).await;
    let shells = listed.output.unwrap().structured["shells"].clone();
    assert_eq!(shells[0]["id"], json!(id));
    assert_eq!(shells[0]["state"], "running");
    assert_eq!(shells[0]["pid"], json!(shell));

    let killed = call(&fixture, "ses_a", "shell_kill", json!({"id": id})).await;
    assert!(
        text(&killed).starts_with(&format!("The background process {id} ended")),
        "{}",
        text(&killed)
    );
    for pid in [shell, job, escaped] {
        assert!(ended(pid), "{pid} outlived shell_kill");
    }
    let listed = call(&fixture, "ses_a", "shell_list", json!({})).await;
    assert_eq!(listed.output.unwrap().structured["shells"][0]["state"], "exited");
    // The log file has the output.
    let log = std::fs::read_to_string(fixture.shells.list(None)[0].output.clone()).unwrap();
    assert!(log.starts_with("hello\ngot:abc\n"), "{log}");
}

#[tokio::test]
async fn another_session_neither_sees_nor_touches_a_process() {
    let permissions = Recording::new(|_| false);
    let fixture = fixture(permissions, ShellLimits::default());
    let id = start(
        &fixture,
        "ses_mine",
        json!({"command": "sleep 1000", "background": true}),
    )
    .await;
    let listed = call(&fixture, "ses_other", "shell_list", json!({})).await;
    assert_eq!(listed.output.unwrap().structured["shells"], json!([]));
    for (tool, input) in [
        ("shell_output", json!({"id": id})),
        ("shell_write", json!({"id": id, "input": "x\n"})),
        ("shell_kill", json!({"id": id})),
    ] {
        let refused = call(&fixture, "ses_other", tool, input).await;
        assert!(refused.result.is_error(), "{tool}");
        assert_eq!(
            text(&refused),
            format!("No background process {id} in this session (shell_list lists them).")
        );
    }
    assert_eq!(fixture.shells.list(Some("ses_mine"))[0].state, "running");
    // The end of the session ends it.
    let pid = fixture.shells.list(Some("ses_mine"))[0].pid;
    assert_eq!(fixture.shells.end_session("ses_mine").await, 1);
    assert!(ended(pid));
    assert!(fixture.shells.list(Some("ses_mine")).is_empty());
}

#[tokio::test]
async fn the_limit_per_session_holds_and_a_slot_comes_back_when_a_process_ends() {
    let permissions = Recording::new(|_| false);
    let fixture = fixture(permissions, ShellLimits::default().with_per_session(1));
    let first = start(&fixture, "ses_l", json!({"command": "sleep 1000", "background": true})).await;
    let refused = call(
        &fixture,
        "ses_l",
        "bash",
        json!({"command": "sleep 1000", "background": true}),
    )
    .await;
    assert!(
        text(&refused).starts_with("Too many background processes"),
        "{}",
        text(&refused)
    );
    // Another session has its own.
    let other = start(&fixture, "ses_m", json!({"command": "sleep 1000", "background": true})).await;
    call(&fixture, "ses_l", "shell_kill", json!({"id": first})).await;
    let second = start(&fixture, "ses_l", json!({"command": "sleep 1000", "background": true})).await;
    assert_ne!(first, second);
    assert_eq!(fixture.shells.end_all().await, 2);
    let _ = other;
}

#[tokio::test]
async fn a_line_written_to_a_shell_is_asked_like_a_bash_call() {
    let permissions = Recording::new(|request| request.resources.iter().any(|r| r.starts_with("rm ")));
    let fixture = fixture(Arc::clone(&permissions), ShellLimits::default());
    let id = start(&fixture, "ses_s", json!({"command": "bash", "background": true})).await;
    let wrote = call(
        &fixture,
        "ses_s",
        "shell_write",
        json!({"id": id, "input": "touch made; echo done\n"}),
    )
    .await;
    assert!(!wrote.result.is_error(), "{}", text(&wrote));
    read_until(&fixture, "ses_s", &id, "done").await;
    assert!(fixture.dir.path().join("made").exists());
    let asked = permissions.asked();
    assert!(
        asked
            .iter()
            .any(|(action, resources)| action == "bash" && resources.contains(&"touch made".to_string())),
        "{asked:?}"
    );
    assert!(
        asked
            .iter()
            .any(|(action, resources)| action == "edit" && resources == &["made".to_string()])
    );
    let refused = call(
        &fixture,
        "ses_s",
        "shell_write",
        json!({"id": id, "input": "rm -rf sub\n"}),
    )
    .await;
    assert!(refused.is_declined());
    let _ = call(
        &fixture,
        "ses_s",
        "shell_write",
        json!({"id": id, "input": "echo after\n"}),
    )
    .await;
    read_until(&fixture, "ses_s", &id, "after").await;
    assert!(
        fixture.dir.path().join("sub").exists(),
        "the refused line never reached the shell"
    );
    fixture.shells.end_all().await;
}

#[tokio::test]
async fn input_to_another_interpreter_is_asked_as_bash_with_the_input_and_code_is_never_saved() {
    let permissions = Recording::new(|_| false);
    let fixture = fixture(Arc::clone(&permissions), ShellLimits::default());
    let id = start(&fixture, "ses_i", json!({"command": "cat", "background": true})).await;
    for input in ["print(1)\n", "yes\n"] {
        let wrote = call(&fixture, "ses_i", "shell_write", json!({"id": id, "input": input})).await;
        assert!(!wrote.result.is_error(), "{}", text(&wrote));
    }
    read_until(&fixture, "ses_i", &id, "yes").await;
    let asked = permissions.asked.lock().unwrap().clone();
    let code = asked.iter().find(|r| r.resources == ["cat <<< print(1)"]).unwrap();
    // As it is: never saved, and no allow rule of `cat`'s own may stand for it.
    assert_eq!(
        (code.action.as_str(), code.opaque.clone(), code.save.clone()),
        ("bash", vec!["cat <<< print(1)".to_string()], Vec::<String>::new())
    );
    let data = asked.iter().find(|r| r.resources == ["cat <<< yes"]).unwrap();
    assert!(data.unsaveable.is_empty());
    assert_eq!(data.save, ["cat <<< yes"]);
    fixture.shells.end_all().await;
}

#[tokio::test]
async fn a_python_repl_on_a_terminal_is_driven_through_shell_write() {
    let permissions = Recording::new(|_| false);
    let fixture = fixture(permissions, ShellLimits::default());
    let id = start(
        &fixture,
        "ses_t",
        json!({"command": "python3 -q", "background": true, "tty": true, "wait_for": {"pattern": ">>> "}}),
    )
    .await;
    let wrote = call(
        &fixture,
        "ses_t",
        "shell_write",
        json!({"id": id, "input": "import os, sys; print(6 * 7, os.isatty(0), sys.stdout.isatty())\n"}),
    )
    .await;
    assert!(!wrote.result.is_error(), "{}", text(&wrote));
    read_until(&fixture, "ses_t", &id, "42 True True").await;
    call(&fixture, "ses_t", "shell_write", json!({"id": id, "input": "exit()\n"})).await;
    let settled = call(&fixture, "ses_t", "shell_output", json!({"id": id, "wait_ms": 10_000})).await;
    let mut state = settled.output.unwrap().structured["state"].clone();
    for _ in 0..10 {
        if state == "exited" {
            break;
        }
        let settled = call(&fixture, "ses_t", "shell_output", json!({"id": id, "wait_ms": 10_000})).await;
        state = settled.output.unwrap().structured["state"].clone();
    }
    assert_eq!(state, "exited");
    assert_eq!(fixture.shells.list(Some("ses_t"))[0].exit, Some(0));
}

#[tokio::test]
async fn wait_for_a_port_returns_once_a_server_listens() {
    let permissions = Recording::new(|_| false);
    let fixture = fixture(permissions, ShellLimits::default());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let settled = call(
        &fixture,
        "ses_p",
        "bash",
        json!({"command": format!("python3 -m http.server {port} --bind 127.0.0.1"), "background": true,
               "wait_for": {"port": port, "timeout_ms": 60_000}}),
    )
    .await;
    let said = text(&settled);
    assert!(
        said.contains(&format!("Ready: port {port} accepts connections")),
        "{said}"
    );
    assert_eq!(settled.output.unwrap().structured["ready"], json!(true));
    std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    // A process that ends before it is ready is said to have ended.
    let gone = call(
        &fixture,
        "ses_p",
        "bash",
        json!({"command": "echo bye; exit 3", "background": true, "wait_for": {"port": port + 1}}),
    )
    .await;
    let said = text(&gone);
    assert!(said.contains("The process ended before port"), "{said}");
    assert!(said.contains("The process exited with code 3."), "{said}");
    assert!(said.contains("bye"), "{said}");
    fixture.shells.end_all().await;
}

#[tokio::test]
async fn wrong_background_inputs_are_refused_before_anything_runs() {
    let permissions = Recording::new(|_| false);
    let fixture = fixture(Arc::clone(&permissions), ShellLimits::default());
    for (input, said) in [
        (
            json!({"command": "ls", "tty": true}),
            "`wait_for` and `tty` need `background: true`.",
        ),
        (
            json!({"command": "ls", "background": true, "wait_for": {"port": 1, "pattern": "x"}}),
            "wait_for takes one of",
        ),
        (
            json!({"command": "ls", "background": true, "wait_for": {"pattern": "("}}),
            "Invalid wait_for.pattern",
        ),
    ] {
        let settled = call(&fixture, "ses_w", "bash", input.clone()).await;
        assert!(text(&settled).starts_with(said), "{input}: {}", text(&settled));
    }
    assert!(permissions.asked().is_empty());
}
