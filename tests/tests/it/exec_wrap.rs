//! `toolgate exec`: one command line run as the bash tool runs it (analysed, asked,
//! sandboxed, every program checked as it starts) on the process's own streams, the way
//! an agent's shell is wrapped: its stdout and stderr apart and live, its stdin passed
//! on, its exit code returned, 126 when it never ran, signals passed to it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use e2e::Sandbox;

fn project(rules: &str) -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("project/toolgate.json", rules);
    sandbox
}

const RULES: &str = r#"{"permission": {"bash": {"*": "allow", "rm *": "deny", "curl *": "ask"}}}"#;

#[test]
fn a_command_gets_the_callers_streams_and_its_exit_code_is_the_result() {
    let sandbox = project(RULES);
    let (code, out, err) = sandbox.run(&["exec", "-c", "echo out; echo err >&2; exit 7"]);
    assert_eq!((code, out.as_str(), err.as_str()), (7, "out\n", "err\n"));
    // A program and its arguments, quoted as they are.
    let (code, out, _) = sandbox.run(&["exec", "--", "printf", "%s|", "two words", "it's", "$HOME"]);
    assert_eq!((code, out.as_str()), (0, "two words|it's|$HOME|"));
    // What an agent passes its shell: `-c -l LINE`.
    let (code, out, err) = sandbox.run(&["exec", "-c", "-l", "echo $((6 * 7))"]);
    assert_eq!((code, out.as_str()), (0, "42\n"), "{err}");
    // Input reaches the command, through the exec guard's hand-over too.
    let mut child = sandbox
        .command(&["exec", "-c", "read a; read b; echo \"$b-$a\"; cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"one\ntwo\nrest\n").unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), "two-one\nrest\n");
    assert!(output.status.success());
    // Extra arguments after a `-c` line have nowhere to go: said, not dropped.
    let (code, _, err) = sandbox.run(&["exec", "-c", "echo $1", "name", "arg"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("-c takes exactly one command line"), "{err}");
}

#[test]
fn what_the_rules_refuse_never_runs_and_exits_126_naming_the_rule() {
    let sandbox = project(RULES);
    std::fs::create_dir(sandbox.project().join("keep")).unwrap();
    let (code, out, err) = sandbox.run(&["exec", "-c", "touch ran; git --version > /dev/null && rm -rf keep"]);
    assert_eq!(code, 126, "{out}{err}");
    assert!(
        err.contains(r#"by rule bash "rm *" deny"#) && err.contains("toolgate.json"),
        "{err}"
    );
    assert!(!sandbox.project().join("ran").exists(), "nothing of the line ran");
    assert!(sandbox.project().join("keep").is_dir());
    // An ask with no one to answer is declined, and says how to approve.
    let (code, _, err) = sandbox.run(&["exec", "-c", "curl -s http://127.0.0.1:9/"]);
    assert_eq!(code, 126);
    assert!(err.contains("declined") && err.contains("--auto"), "{err}");
}

#[test]
fn a_spelling_the_analysis_cannot_read_is_stopped_when_it_starts() {
    if !e2e::kernel_has(e2e::KernelFeature::ExecGuard) {
        return;
    }
    let sandbox = project(RULES);
    std::fs::create_dir(sandbox.project().join("keep")).unwrap();
    let (code, out, err) = sandbox.run(&["exec", "--auto", "-c", "f=r; ${f}m -rf keep; echo after $?"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "after 126\n");
    assert!(err.contains("Operation not permitted"), "{err}");
    assert!(
        err.contains("refused to start `rm -rf keep` by rule bash \"rm *\" deny"),
        "{err}"
    );
    assert!(sandbox.project().join("keep").is_dir());
}

#[test]
fn sigterm_reaches_the_command_and_nothing_is_left() {
    let sandbox = project(RULES);
    let marker = format!("86400.{}5", std::process::id());
    let child = sandbox
        .command(&[
            "exec",
            "-c",
            &format!("trap 'echo got TERM; exit 9' TERM; sleep {marker} & wait"),
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let running = |marker: &str| {
        std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
            std::fs::read(entry.path().join("cmdline")).is_ok_and(|cmdline| {
                cmdline.starts_with(b"sleep\0") && String::from_utf8_lossy(&cmdline).contains(marker)
            })
        })
    };
    assert!(
        (0..400).any(|_| {
            std::thread::sleep(Duration::from_millis(25));
            running(&marker)
        }),
        "the command started"
    );
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), "got TERM\n");
    assert_eq!(output.status.code(), Some(9), "the command's own exit code");
    assert!(
        (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            !running(&marker)
        }),
        "its sleep ended with it"
    );
}

/// The recipe README gives: a two-line script set as an agent's shell.
#[test]
fn a_wrapper_script_stands_in_for_an_agents_shell_and_the_audit_records_each_line() {
    let sandbox = project(RULES);
    let wrapper = sandbox.root.path().join("toolgate-shell");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\nexec {} exec \"$@\"\n", e2e::toolgate_binary().display()),
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let run = |line: &str| {
        // The sandbox's own environment (its data and config directories), the wrapper as
        // the program.
        let command = sandbox.command(&[]);
        let output = std::process::Command::new(&wrapper)
            .args(["-c", "-l", line])
            .envs(
                command
                    .get_envs()
                    .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))),
            )
            .current_dir(sandbox.project())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    };
    assert_eq!(run("echo hi | tr a-z A-Z"), (0, "HI\n".to_string()));
    assert_eq!(run("rm -rf nothing-here").0, 126);
    let (code, out, err) = sandbox.run(&["audit", "tail", "--json", "-n", "50"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("echo hi | tr a-z A-Z") || out.contains("echo hi"), "{out}");
    assert!(out.contains("rm -rf nothing-here") && out.contains("deny"), "{out}");
}
