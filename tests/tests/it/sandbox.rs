//! The bash sandbox (`sandbox` config, `--sandbox`), driven through the binary the way an
//! attacker would: commands the permission analysis cannot see through (or approves with
//! `--auto`) that try to write outside the project, read denied files, change protected
//! ones, reach the network or leave the sandbox — through `call`, `serve` and `mcp`, as
//! root and as an unprivileged user. Also the shell's environment (`shell_env`) and
//! toolgate's own secrets, which never reach a command, sandbox or not.
//!
//! Tests that need the kernel sandbox skip, saying why, where the kernel cannot run it
//! (no Landlock, no user namespaces); `cargo xtask ci` sets
//! `TOOLGATE_REQUIRE_SANDBOX_TESTS=1` when its own probe found support, and then a
//! missing sandbox fails them instead.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use e2e::Sandbox;
use serde_json::{Value, json};

/// A project with a temp dir and a home of its own (`$TMPDIR` is writable in the sandbox,
/// so it must not be the directory that holds everything else).
struct Project {
    sandbox: Sandbox,
}

impl Project {
    fn new(config: Value) -> Project {
        let sandbox = Sandbox::new();
        for dir in ["tmp", "home"] {
            std::fs::create_dir(sandbox.root.path().join(dir)).unwrap();
        }
        sandbox.write("project/toolgate.json", &config.to_string());
        let project = Project { sandbox };
        project.trust();
        project
    }

    /// `toolgate trust`: the project's config (its `sandbox` and `shell_env`) applies. A
    /// config the test made malformed on purpose is a configuration error (exit 2) here,
    /// which the test's own commands then check.
    fn trust(&self) {
        let output = self.command(&["trust"]).output().unwrap();
        let code = output.status.code();
        assert!(
            matches!(code, Some(0 | 2)),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn root(&self) -> PathBuf {
        std::fs::canonicalize(self.sandbox.root.path()).unwrap()
    }

    fn project(&self) -> PathBuf {
        self.root().join("project")
    }

    fn write(&self, path: &str, text: &str) {
        self.sandbox.write(path, text);
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn exists(&self, path: &str) -> bool {
        self.root().join(path).symlink_metadata().is_ok()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(e2e::toolgate_binary());
        command.args(args);
        self.environment(&mut command);
        command
    }

    /// The project's directory and environment for a toolgate command.
    fn environment(&self, command: &mut Command) {
        command
            .current_dir(self.project())
            .env("TOOLGATE_DATA_DIR", self.root().join("data"))
            .env("TOOLGATE_CONFIG_DIR", self.root().join("config"))
            .env("TMPDIR", self.root().join("tmp"))
            .env("HOME", self.root().join("home"))
            .env_remove("TOOLGATE_PERMISSION")
            .env_remove("TOOLGATE_TEST_SANDBOX_MISSING")
            .stdin(Stdio::null());
        e2e::isolate_opencode(command, &self.root());
    }

    /// `toolgate call bash` with `--auto --json` (and `extra`): the settlement.
    fn bash(&self, command: &str, extra: &[&str]) -> Settled {
        let input = json!({"command": command}).to_string();
        let mut args = vec!["call", "bash", input.as_str(), "--auto", "--json"];
        args.extend_from_slice(extra);
        let output = self.command(&args).output().unwrap();
        Settled::from(output)
    }

    /// `bash` of a command that must have run in the sandbox, and its text.
    fn sandboxed(&self, command: &str) -> (Settled, String) {
        let settled = self.bash(command, &[]);
        let text = settled.text();
        assert_eq!(
            settled.sandbox().as_deref(),
            Some("workspace-write"),
            "{command}: {text}"
        );
        (settled, text)
    }

    /// A command that must have been stopped by the sandbox: it ran there and failed.
    fn refused_by_sandbox(&self, command: &str) -> String {
        let (settled, text) = self.sandboxed(command);
        assert_ne!(settled.exit(), Some(0), "{command} succeeded: {text}");
        text
    }
}

/// `command` spelled so the analysis cannot see what it runs (`eval` of a substitution's
/// output): the sound analysis denies dynamic paths a deny rule could match before
/// anything runs, and these tests are about what the sandbox stops when nothing else does.
fn unseen(command: &str) -> String {
    format!("eval \"$(printf %s '{}')\"", command.replace('\'', "'\\''"))
}

/// What `call --json` printed.
struct Settled {
    json: Value,
    stderr: String,
}

impl From<std::process::Output> for Settled {
    fn from(output: std::process::Output) -> Settled {
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        Settled {
            json: serde_json::from_str(&stdout).unwrap_or(Value::Null),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Settled {
    /// The text the model reads.
    fn text(&self) -> String {
        result_text(&self.json["result"]).unwrap_or_else(|| format!("{}{}", self.json, self.stderr))
    }

    /// The sandbox the command ran in, as the result reports it.
    fn sandbox(&self) -> Option<String> {
        self.json["output"]["structured"]["sandbox"]
            .as_str()
            .map(str::to_string)
    }

    fn exit(&self) -> Option<i64> {
        self.json["output"]["structured"]["exit"].as_i64()
    }

    /// Asserts the command ran in `mode` and exited with `exit`; returns its text.
    fn ran(&self, mode: &str, exit: i64) -> String {
        let text = self.text();
        assert_eq!(
            self.sandbox().as_deref(),
            Some(mode),
            "not sandboxed: {text}\n{}",
            self.stderr
        );
        assert_eq!(self.exit(), Some(exit), "{text}\n{}", self.stderr);
        text
    }
}

/// The text of a result as `call --json` and the HTTP API print it.
fn result_text(result: &Value) -> Option<String> {
    match &result["value"] {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => Some(parts.iter().filter_map(|p| p["text"].as_str()).collect()),
        _ => None,
    }
}

fn workspace_write(permission: Value) -> Value {
    json!({"permission": permission, "sandbox": {"mode": "workspace-write"}})
}

/// Polls `done` until it holds or `timeout` passes.
fn wait_for(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    done()
}

#[test]
fn writes_land_inside_the_project_and_temp_dir_and_nowhere_else() {
    if !e2e::kernel_has(e2e::KernelFeature::Sandbox) {
        return;
    }
    let p = Project::new(workspace_write(json!({})));
    p.write("home/.bashrc", "original\n");
    let text = p
        .bash(
            "echo in > inside.txt && echo tmp > \"$TMPDIR/t.txt\" && cat inside.txt",
            &[],
        )
        .ran("workspace-write", 0);
    assert!(text.starts_with("in\n"), "{text}");
    assert_eq!(p.read("project/inside.txt"), "in\n");
    assert_eq!(p.read("tmp/t.txt"), "tmp\n");
    let root = p.root();
    let outside = |name: &str| root.join(name).display().to_string();
    // Every spelling of a write outside: each must fail and leave nothing behind.
    let attempts: Vec<(String, &str)> = vec![
        ("echo x > ../out-redirect.txt".into(), "out-redirect.txt"),
        ("cd .. && echo x > out-cd.txt".into(), "out-cd.txt"),
        (
            "python3 -c \"open('../out-python.txt', 'w').write('x')\"".into(),
            "out-python.txt",
        ),
        (unseen("d=..; f=out-var.txt; echo x > \"$d/$f\""), "out-var.txt"),
        (format!("echo x > {}", outside("out-absolute.txt")), "out-absolute.txt"),
        ("ln -s ../out-link.txt link && echo x > link".into(), "out-link.txt"),
        ("cp inside.txt ../out-cp.txt".into(), "out-cp.txt"),
        ("mkdir ../out-dir".into(), "out-dir"),
        ("echo x >> ~/.bashrc; echo y > ~/.profile".into(), "home/.profile"),
    ];
    for (command, target) in &attempts {
        let text = p.refused_by_sandbox(command);
        assert!(!p.exists(target), "{command} wrote {target}");
        assert!(
            text.contains("sandbox: write outside the workspace refused"),
            "{command}: no sandbox note in {text}"
        );
    }
    assert_eq!(p.read("home/.bashrc"), "original\n");
    // Modes, owners and times outside do not change either (Landlock alone would allow it).
    let bashrc = root.join("home/.bashrc");
    let before = std::fs::metadata(&bashrc).unwrap();
    let settled = p.bash(
        &format!("chmod 777 {0}; touch -d 2001-01-01 {0}", bashrc.display()),
        &[],
    );
    assert_ne!(settled.exit(), Some(0), "{}", settled.text());
    let after = std::fs::metadata(&bashrc).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!((before.mode(), before.mtime()), (after.mode(), after.mtime()));
}

#[test]
fn a_process_that_leaves_the_group_is_still_inside() {
    if !e2e::kernel_has(e2e::KernelFeature::Sandbox) {
        return;
    }
    let p = Project::new(workspace_write(json!({})));
    // The escapee writes after the call has ended, from its own session.
    // The call waits until the escapee has left its group (the group is killed at the end).
    let command = "setsid sh -c 'echo > escapee.left; sleep 0.3; (echo x > ../out-escapee.txt) 2> escapee.err; \
                   echo done > escapee.done' </dev/null >/dev/null 2>&1 & \
                   while [ ! -e escapee.left ]; do sleep 0.01; done";
    p.bash(command, &[]).ran("workspace-write", 0);
    assert!(
        wait_for(Duration::from_secs(10), || p.exists("project/escapee.done")),
        "the escapee never finished"
    );
    assert!(!p.exists("out-escapee.txt"));
    let error = p.read("project/escapee.err");
    assert!(
        error.contains("Read-only file system") || error.contains("Permission denied"),
        "{error}"
    );
}

#[test]
fn files_the_read_rules_deny_are_hidden_from_every_program() {
    if !e2e::kernel_has(e2e::KernelFeature::Sandbox) {
        return;
    }
    let p = Project::new(workspace_write(
        json!({"read": {"*": "allow", "*.env": "deny", "secrets/*": "deny"}}),
    ));
    p.write("project/.env", "TOKEN=top-secret-env\n");
    p.write("project/sub/.env", "TOKEN=top-secret-sub\n");
    p.write("project/secrets/key", "top-secret-key\n");
    p.write("project/notes.txt", "public notes\n");
    // Dynamic paths: the analysis cannot know them, so only the sandbox stands in the way.
    let attempts = [
        "f=.e; cat ${f}nv",
        "f=sub/.e; read -r line < ${f}nv; echo \"got:$line\"",
        "python3 -c \"print(open('secrets/' + 'key').read())\"",
        "python3 -c \"import os; print(os.listdir('secr' + 'ets'))\"",
        "d=secrets; cat $d/key $d/*",
        "cd sub && f=.e && cat ${f}nv",
        "cat /proc/self/root$PWD/.e${x}nv",
        "cat /proc/$PPID/root$PWD/.e${x}nv",
        "ln -s secrets/key alias && cat alias",
        "ln .e${x}nv hard; cat hard",
        "grep -r top-secret . ; grep -r top-secret secrets",
        "mv .e${x}nv moved.txt; cat moved.txt",
        "mv sub sub2; f=.e; cat sub2/${f}nv",
        "base64 < .e${x}nv",
    ]
    .map(unseen);
    for command in &attempts {
        let (_, text) = p.sandboxed(command);
        assert!(!text.contains("top-secret"), "{command} read a secret: {text}");
    }
    // The files are untouched and where they were.
    assert_eq!(p.read("project/.env"), "TOKEN=top-secret-env\n");
    assert_eq!(p.read("project/sub/.env"), "TOKEN=top-secret-sub\n");
    assert_eq!(p.read("project/secrets/key"), "top-secret-key\n");
    // Everything else stays readable, and a refused read says why.
    let text = p.bash("cat notes.txt", &[]).ran("workspace-write", 0);
    assert!(text.contains("public notes"), "{text}");
    let text = p.bash(&unseen("f=.e; cat ${f}nv"), &[]).ran("workspace-write", 1);
    assert!(
        text.contains(".env is hidden: the `read` rules deny or ask for"),
        "{text}"
    );
}

/// No one can be asked from inside the kernel: a file whose read the rules ask for is
/// hidden like a denied one, unless its read was approved for this call. A deny written
/// for a symlinked directory hides where it leads.
#[test]
fn files_the_read_rules_ask_for_are_hidden_unless_approved_and_symlinks_are_followed() {
    if !e2e::kernel_has(e2e::KernelFeature::Sandbox) {
        return;
    }
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("key"), "top-secret-linked\n").unwrap();
    let p = Project::new(workspace_write(json!({
        "bash": "allow",
        "read": {"*": "allow", "*.env": "ask", "vault/*": "deny"},
        "external_directory": "allow",
    })));
    p.write("project/.env", "TOKEN=top-secret-asked\n");
    std::os::unix::fs::symlink(outside.path(), p.project().join("vault")).unwrap();
    // The analysis cannot see these reads: nothing was approved for `.env`.
    for command in [
        "f=.e; cat ${f}nv",
        "d=vau; cat ${d}lt/key",
        "cat \"$(printf %s \"$PWD/vault\")\"/key",
    ]
    .map(unseen)
    {
        let text = p.bash(&command, &[]).text();
        assert!(!text.contains("top-secret"), "{command} read a secret: {text}");
    }
    // Approved for this call (the analysis asked, --auto answered): readable.
    let text = p.bash("cat .env", &[]).ran("workspace-write", 0);
    assert!(text.contains("top-secret-asked"), "{text}");
}

#[test]
fn files_the_edit_rules_deny_and_toolgates_own_config_are_read_only() {
    if !e2e::kernel_has(e2e::KernelFeature::Sandbox) {
        return;
    }
    let p = Project::new(workspace_write(
        json!({"edit": {"*": "allow", "locked.txt": "deny", "protected/*": "deny"}}),
    ));
    p.write("project/locked.txt", "locked\n");
    p.write("project/protected/a.txt", "a\n");
    p.write("project/free.txt", "free\n");
    let config = p.read("project/toolgate.json");
    let attempts = [
        "f=locked; echo x >> $f.txt",
        "f=locked; rm -f $f.txt",
        "f=locked; mv $f.txt gone.txt",
        "d=protected; echo x > $d/a.txt",
        "d=protected; echo x > $d/new.txt",
        "d=protected; rm -rf $d",
        "d=protected; mv $d elsewhere",
        "python3 -c \"open('lock' + 'ed.txt', 'w').write('x')\"",
        "echo '{\"permission\": {\"*\": \"allow\"}}' > toolgate.json",
        "rm -f toolgate.json",
    ]
    .map(unseen);
    for command in &attempts {
        p.refused_by_sandbox(command);
    }
    assert_eq!(p.read("project/locked.txt"), "locked\n");
    assert_eq!(p.read("project/protected/a.txt"), "a\n");
    assert!(!p.exists("project/protected/new.txt"));
    assert_eq!(p.read("project/toolgate.json"), config);
    let text = p
        .bash(&unseen("f=locked; echo x >> $f.txt"), &[])
        .ran("workspace-write", 1);
    assert!(text.contains("locked.txt is read-only"), "{text}");
    // The rest of the project is as writable as ever.
    p.bash("echo more >> free.txt && mkdir -p new/dir && mv free.txt new/dir/", &[])
        .ran("workspace-write", 0);
    assert_eq!(p.read("project/new/dir/free.txt"), "free\nmore\n");
}

#[test]
fn the_writable_directories_are_writable_and_nothing_beside_them() {
    if !e2e::kernel_has(e2e::KernelFeature::Sandbox) {
        return;
    }
    let p = Project::new(json!({"sandbox": {"mode": "workspace-write", "writable": ["~/cache"]}}));
    std::fs::create_dir(p.root().join("home/cache")).unwrap();
    std::fs::create_dir(p.root().join("home/other")).unwrap();
    p.bash("d=~/cache; echo x > $d/f && mkdir -p $d/sub && cp $d/f $d/sub/g", &[])
        .ran("workspace-write", 0);
    assert_eq!(p.read("home/cache/sub/g"), "x\n");
    for command in [
        "d=~/other; echo x > $d/f",
        "echo x > ~/cache-sibling",
        "d=~; echo x > $d/cache/../f",
    ] {
        let settled = p.bash(command, &[]);
        assert_eq!(
            settled.sandbox().as_deref(),
            Some("workspace-write"),
            "{}",
            settled.text()
        );
        assert_ne!(settled.exit(), Some(0), "{command} succeeded: {}", settled.text());
    }
    assert!(!p.exists("home/other/f") && !p.exists("home/cache-sibling") && !p.exists("home/f"));
    // `read-only` ignores the list.
    let settled = p.bash("d=~/cache; echo y > $d/f", &["--sandbox", "read-only"]);
    assert_ne!(settled.exit(), Some(0), "{}", settled.text());
    assert_eq!(p.read("home/cache/f"), "x\n");
}

/// What git follows to find code or config cannot be redirected by a sandboxed command:
/// a new `.git/commondir` or a repository it staged as a submodule is moved aside when the
/// command ends (with a note), and a worktree's `.git` file stays as it is. The person's
/// next plain `git status`, outside the sandbox, then runs nothing the command planted.
#[test]
fn git_cannot_be_redirected_to_code_the_command_planted() {
    if !e2e::kernel_has(e2e::KernelFeature::Sandbox) {
        return;
    }
    let p = Project::new(workspace_write(json!({"bash": "allow"})));
    let git = |dir: &std::path::Path, args: &[&str]| {
        let output = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.com",
                "-c",
                "protocol.file.allow=always",
            ])
            .args(args)
            .current_dir(dir)
            .env("HOME", p.root().join("home"))
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    git(&p.project(), &["init", "-q"]);
    git(&p.project(), &["add", "toolgate.json"]);
    git(&p.project(), &["commit", "-q", "-m", "one"]);
    let pwned = p.root().join("pwned");
    let evil = format!("[core]\n\tfsmonitor = \"touch {}; false\"\n", pwned.display());
    // commondir to a planted git directory whose config runs code.
    let plant_common = format!(
        "mkdir -p evil/hooks evil/objects evil/refs && printf '{}' > evil/config && echo ref: refs/heads/x > evil/HEAD && \
         g=.git; echo ../evil > $g/commondir",
        evil.replace('\n', "\\n").replace('"', "\\\"")
    );
    let text = p.bash(&plant_common, &[]).text();
    assert!(text.contains("commondir"), "no note: {text}");
    assert!(!p.exists("project/.git/commondir"), "{text}");
    // A repository of the command's own, staged as a submodule.
    let plant_sub = format!(
        "mkdir sub && cd sub && git init -q && printf '{}' >> .git/config && echo f > f && git add f && \
         git -c user.name=t -c user.email=t@example.com commit -q -m x && cd .. && git add sub",
        evil.replace('\n', "\\n").replace('"', "\\\"")
    );
    let text = p.bash(&plant_sub, &[]).text();
    assert!(text.contains("staged as a submodule"), "no note: {text}");
    assert!(!p.exists("project/sub/.git"), "{text}");
    // The person's plain git status, outside any sandbox.
    git(&p.project(), &["status"]);
    assert!(!pwned.exists(), "git ran code the sandboxed command planted");
}

#[test]
fn git_hooks_and_config_stay_read_only_while_commits_work() {
    if !e2e::kernel_has(e2e::KernelFeature::Sandbox) {
        return;
    }
    // What git runs code from: a command that wrote it would run code outside the sandbox
    // the next time the person runs git (a hook, `core.fsmonitor`, `core.pager`, a hooks
    // path in the project as husky sets it, a submodule's own config).
    let p = Project::new(workspace_write(json!({})));
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(p.project())
            .env("HOME", p.root().join("home"))
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["config", "core.hooksPath", ".husky/_"]);
    p.write("project/.husky/_/pre-commit", "#!/bin/sh\nexit 0\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        p.project().join(".husky/_/pre-commit"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    p.write("project/.git/modules/lib/HEAD", "ref: refs/heads/main\n");
    p.write("project/.git/modules/lib/config", "[core]\n\tbare = false\n");
    std::fs::create_dir_all(p.project().join(".git/modules/lib/hooks")).unwrap();
    git(&["add", "toolgate.json"]);
    git(&["commit", "-q", "-m", "one"]);
    let config = p.read("project/.git/config");
    let husky = p.read("project/.husky/_/pre-commit");
    let sub = p.read("project/.git/modules/lib/config");
    let attempts = [
        "h=.git/hooks; echo 'touch /tmp/pwned' > $h/pre-commit",
        "c=.git/config; printf '[core]\\n\\tfsmonitor = touch pwned\\n' >> $c",
        "git config core.pager 'touch pwned; cat'",
        "g=.git; mv $g/config $g/config.old",
        "g=.git; rm -rf $g/hooks",
        "g=.git; mv $g elsewhere",
        "h=.husky/_; echo 'touch pwned' > $h/pre-commit",
        "c=.git/modules/lib/config; echo '[core] fsmonitor = x' >> $c",
        "h=.git/modules/lib/hooks; echo x > $h/post-checkout",
    ];
    for command in attempts {
        p.refused_by_sandbox(command);
    }
    assert_eq!(p.read("project/.git/config"), config);
    assert_eq!(p.read("project/.husky/_/pre-commit"), husky);
    assert_eq!(p.read("project/.git/modules/lib/config"), sub);
    assert!(!p.exists("project/.git/hooks/pre-commit"));
    assert!(!p.exists("project/.git/modules/lib/hooks/post-checkout"));
    assert!(p.exists("project/.git/config") && p.exists("project/.git/hooks"));
    let text = p.bash("c=.git/config; echo x >> $c", &[]).ran("workspace-write", 1);
    assert!(text.contains(".git/config is read-only"), "{text}");
    // Everything else git does in the project still works: objects, index, refs, logs.
    let text = p
        .bash(
            "echo a > a.txt && git -c user.name=t -c user.email=t@example.com commit -q -m two --allow-empty \
             && git add a.txt && git -c user.name=t -c user.email=t@example.com commit -q -m three \
             && git checkout -q -b topic && git log --oneline | wc -l",
            &[],
        )
        .ran("workspace-write", 0);
    assert!(text.lines().any(|line| line.trim() == "3"), "{text}");
}

/// A loopback TCP listener that counts the connections it accepted.
struct Listener {
    port: u16,
    accepted: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Listener {
    fn start() -> Listener {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = std::sync::Arc::clone(&accepted);
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let _ = stream.write_all(b"hello\n");
            }
        });
        Listener { port, accepted }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[test]
fn the_network_is_off_even_to_loopback_but_unix_sockets_work() {
    if !e2e::kernel_has(e2e::KernelFeature::Sandbox) {
        return;
    }
    let listener = Listener::start();
    let p = Project::new(workspace_write(json!({})));
    let unix_path = p.root().join("tmp/test.sock");
    let unix = std::os::unix::net::UnixListener::bind(&unix_path).unwrap();
    let tcp = format!(
        "python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', {})); print('connected', s.recv(6))\"",
        listener.port
    );
    let settled = p.bash(&tcp, &[]);
    let text = settled.ran("workspace-write", 1);
    assert!(!text.contains("connected"), "{text}");
    assert!(text.contains("sandbox: network access is off"), "{text}");
    let udp = format!(
        "python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {}))\"",
        listener.port
    );
    p.bash(&udp, &[]).ran("workspace-write", 1);
    let v6 = "python3 -c \"import socket; socket.socket(socket.AF_INET6)\"";
    p.bash(v6, &[]).ran("workspace-write", 1);
    assert_eq!(listener.accepted(), 0);
    // A Unix socket is not the network.
    let accepted = std::thread::spawn(move || unix.accept().and_then(|(mut stream, _)| stream.write_all(b"unix ok\n")));
    let text = p
        .bash(
            &format!(
                "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); print(s.recv(8).decode())\"",
                unix_path.display()
            ),
            &[],
        )
        .ran("workspace-write", 0);
    assert!(text.contains("unix ok"), "{text}");
    accepted.join().unwrap().unwrap();
    // `network: true` is the host network.
    let p = Project::new(json!({"sandbox": {"mode": "workspace-write", "network": true}}));
    let text = p.bash(&tcp, &[]).ran("workspace-write", 0);
    assert!(text.contains("connected b'hello\\n'"), "{text}");
    assert!(wait_for(Duration::from_secs(5), || listener.accepted() == 1));
}

#[test]
fn read_only_mode_writes_nothing_but_dev_null() {
    if !e2e::kernel_has(e2e::KernelFeature::Sandbox) {
        return;
    }
    let p = Project::new(json!({}));
    for command in ["echo x > inside.txt", "mkdir d", "echo x > \"$TMPDIR/t\""] {
        let settled = p.bash(command, &["--sandbox", "read-only"]);
        let text = settled.ran("read-only", 1);
        assert!(
            text.contains("sandbox: the read-only sandbox refuses every write"),
            "{command}: {text}"
        );
    }
    assert!(!p.exists("project/inside.txt") && !p.exists("project/d") && !p.exists("tmp/t"));
    let text = p
        .bash(
            "echo x > /dev/null && echo x 2>/dev/null >&2 && cat toolgate.json",
            &["--sandbox", "read-only"],
        )
        .ran("read-only", 0);
    assert!(text.starts_with('{'), "{text}");
}

#[test]
fn escapes_landlock_does_not_cover_are_refused() {
    if !e2e::kernel_has(e2e::KernelFeature::Sandbox) {
        return;
    }
    let p = Project::new(workspace_write(json!({})));
    let attempts = [
        // New namespaces (a user namespace would give mount rights to undo the view).
        "unshare -r true",
        "unshare -m true",
        "python3 -c \"import os; os.unshare(os.CLONE_NEWUSER)\"",
        // Mounts and their new API.
        "mount -t tmpfs none \"$TMPDIR\"",
        "umount /proc",
        // Signals to processes outside the sandbox (toolgate itself; 0 only asks).
        "kill -0 $PPID",
        // Tracing (no ptrace, no /proc/<pid>/mem of others).
        "python3 -c \"import ctypes; l = ctypes.CDLL(None, use_errno=True); assert l.ptrace(16, 1, 0, 0) == 0\"",
        "head -c 1 /proc/1/environ",
        // Other socket families than Unix with the network off (netlink, raw packets).
        "python3 -c \"import socket; socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)\"",
        "python3 -c \"import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)\"",
        // A new root, and a hard link that would give a file outside a name inside.
        "python3 -c \"import os; os.chroot('.')\"",
        "ln /etc/hostname hostname-link",
    ];
    let mut attempts: Vec<&str> = attempts.to_vec();
    if cfg!(target_arch = "x86_64") {
        // io_uring (its operations would skip seccomp), and the x32 ABI's numbering of
        // unshare(CLONE_NEWUSER) where the kernel has x32 (ENOSYS elsewhere), which a filter
        // keyed on x86_64 numbers alone would let through.
        attempts.push(
            "python3 -c \"import ctypes; l = ctypes.CDLL(None, use_errno=True); p = ctypes.create_string_buffer(120); assert l.syscall(425, 8, p) >= 0\"",
        );
        attempts.push(
            "python3 -c \"import ctypes; l = ctypes.CDLL(None, use_errno=True); assert l.syscall(0x40000000 | 272, 0x10000000) == 0\"",
        );
        // The kernel keyring (keyctl is syscall 250 on x86_64).
        attempts.push(
            "python3 -c \"import ctypes; l = ctypes.CDLL(None, use_errno=True); assert l.syscall(250, 0, -3, 0) >= 0\"",
        );
    }
    for command in attempts {
        p.refused_by_sandbox(command);
    }
    // toolgate itself was not stopped: this call came back, and so does the next one.
    p.bash("true", &[]).ran("workspace-write", 0);
}

#[test]
fn the_shell_environment_follows_shell_env_and_never_carries_toolgate_secrets() {
    let run = |config: Value| {
        let p = Project::new(config);
        let output = p
            .command(&["call", "bash", r#"{"command": "env"}"#, "--auto"])
            .env("TOOLGATE_SERVER_TOKEN", "server-token-value")
            .env("TOOLGATE_ANYTHING", "toolgate-anything-value")
            .env("EXA_API_KEY", "exa-key-value")
            .env("PARALLEL_API_KEY", "parallel-key-value")
            .env("GITHUB_TOKEN", "github-token-value")
            .env("MY_SECRET_THING", "my-secret-value")
            .env("PLAIN_VARIABLE", "plain-value")
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let never = [
        "server-token-value",
        "toolgate-anything-value",
        "exa-key-value",
        "parallel-key-value",
    ];
    // Default: everything but the exclusions.
    let env = run(json!({}));
    assert!(
        env.contains("PLAIN_VARIABLE=plain-value") && env.contains("PATH="),
        "{env}"
    );
    for hidden in never.iter().chain(&["github-token-value", "my-secret-value"]) {
        assert!(!env.contains(hidden), "{hidden} reached the command:\n{env}");
    }
    // No exclusions: still never toolgate's own.
    let env = run(json!({"shell_env": {"exclude": []}}));
    assert!(env.contains("GITHUB_TOKEN=github-token-value") && env.contains("MY_SECRET_THING=my-secret-value"));
    for hidden in never {
        assert!(!env.contains(hidden), "{hidden} reached the command:\n{env}");
    }
    // `core`: the basics only.
    let env = run(json!({"shell_env": {"inherit": "core", "set": {"EXTRA": "1"}}}));
    assert!(
        env.contains("PATH=") && env.contains("HOME=") && env.contains("EXTRA=1"),
        "{env}"
    );
    assert!(!env.contains("PLAIN_VARIABLE"), "{env}");
    // `none` with `set`.
    let env = run(json!({"shell_env": {"inherit": "none", "set": {"ONLY": "this"}}}));
    assert!(
        env.contains("ONLY=this") && !env.contains("HOME=") && !env.contains("PLAIN_VARIABLE"),
        "{env}"
    );
    // A config cannot hand toolgate's variables to commands.
    let p = Project::new(json!({"shell_env": {"set": {"TOOLGATE_SERVER_TOKEN": "x"}}}));
    let output = p.command(&["config"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("shell_env.set.TOOLGATE_SERVER_TOKEN"));
}

/// The analysis plans with the environment the command really gets: with `HOME` moved by
/// `shell_env.set`, `~` in a line is the moved home, in `check` and in the call alike.
#[test]
fn the_analysis_plans_with_the_home_shell_env_gives_the_command() {
    let probe = Project::new(json!({}));
    let moved = probe.root().join("moved-home");
    std::fs::create_dir(&moved).unwrap();
    let config = json!({
        "shell_env": {"set": {"HOME": moved.display().to_string()}},
        "permission": {"external_directory": {"*": "ask", format!("{}/*", moved.display()): "deny"}},
    });
    probe.write("project/toolgate.json", &config.to_string());
    probe.trust();
    let output = probe
        .command(&["check", "--json", "bash", "echo x > ~/f"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    let moved_file = moved.join("f").display().to_string();
    assert!(
        text.contains(&moved_file),
        "check did not plan with the moved home:\n{text}"
    );
    assert!(
        !text.contains(&probe.root().join("home/f").display().to_string()),
        "{text}"
    );
    // The call is refused by the moved home's rule, and nothing is written in either home.
    let settled = probe.bash("echo x > ~/f", &[]);
    assert!(
        settled.text().contains("Permission denied") || settled.text().contains("denied"),
        "{}",
        settled.text()
    );
    assert!(!moved.join("f").exists() && !probe.exists("home/f"));
}

/// Raw block devices (the disk under every hidden file) and raw memory are out of reach
/// inside the sandbox, root included: reading gives nothing, writing lands nowhere.
#[test]
fn raw_block_devices_are_not_reachable() {
    if !e2e::kernel_has(e2e::KernelFeature::Sandbox) {
        return;
    }
    use std::os::unix::fs::FileTypeExt;
    // A block device this user can read outside the sandbox (root: the disk).
    let device = std::fs::read_dir("/dev")
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|path| {
            std::fs::metadata(path).is_ok_and(|m| m.file_type().is_block_device())
                && std::fs::File::open(path)
                    .and_then(|mut f| std::io::Read::read(&mut f, &mut [0u8; 16]))
                    .is_ok_and(|n| n > 0)
        });
    let Some(device) = device else {
        eprintln!("no readable block device here; skipped");
        return;
    };
    let p = Project::new(workspace_write(json!({"bash": "allow"})));
    let command = format!("head -c 4096 {} | wc -c", device.display());
    let text = p.bash(&command, &[]).ran("workspace-write", 0);
    assert!(
        text.trim_start().starts_with('0'),
        "{} was read in the sandbox: {text}",
        device.display()
    );
}

#[test]
fn without_kernel_support_it_warns_once_and_runs_or_refuses_when_required() {
    let p = Project::new(json!({"sandbox": {"mode": "workspace-write"}}));
    let output = p
        .command(&[
            "call",
            "bash",
            r#"{"command": "echo ran > ran.txt && echo ran"}"#,
            "--auto",
        ])
        .env("TOOLGATE_TEST_SANDBOX_MISSING", "Landlock")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(stderr.matches("warning").count(), 1, "{stderr}");
    assert!(
        stderr.contains("Landlock is missing") && stderr.contains("bash runs unsandboxed"),
        "{stderr}"
    );
    assert!(p.exists("project/ran.txt"));
    let output = p
        .command(&["check", "bash", "ls"])
        .env("TOOLGATE_TEST_SANDBOX_MISSING", "Landlock")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("sandbox: workspace-write") && stdout.contains("bash runs UNSANDBOXED"),
        "{stdout}"
    );
    // The description no longer promises a sandbox.
    let output = p
        .command(&["tools", "--json"])
        .env("TOOLGATE_TEST_SANDBOX_MISSING", "Landlock")
        .output()
        .unwrap();
    let tools: Value = serde_json::from_slice(&output.stdout).unwrap();
    let bash = tools.as_array().unwrap().iter().find(|t| t["name"] == "bash").unwrap();
    assert!(bash["description"].as_str().unwrap().contains("Bash is not sandboxed"));
    // Required: refused, with what is missing, and nothing ran.
    let p = Project::new(json!({"sandbox": {"mode": "workspace-write", "required": true}}));
    let output = p
        .command(&["call", "bash", r#"{"command": "echo ran > ran.txt"}"#, "--auto"])
        .env("TOOLGATE_TEST_SANDBOX_MISSING", "user namespaces")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("requires the sandbox (sandbox.required)") && stderr.contains("user namespaces is missing"),
        "{stderr}"
    );
    assert!(!p.exists("project/ran.txt"));
}

#[test]
fn config_check_and_the_description_show_the_sandbox() {
    let p = Project::new(json!({"sandbox": {"mode": "workspace-write", "writable": ["~/cache"]}}));
    std::fs::create_dir(p.root().join("home/cache")).unwrap();
    let output = p.command(&["config"]).output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("sandbox: workspace-write (config), network off"),
        "{text}"
    );
    assert!(text.contains("home/cache"), "{text}");
    let output = p.command(&["check", "bash", "ls", "--json"]).output().unwrap();
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["sandbox"]["mode"], "workspace-write");
    assert_eq!(value["sandbox"]["network"], false);
    // Off by default, with OpenCode's sentence verbatim.
    let off = Project::new(json!({}));
    let output = off.command(&["check", "bash", "ls"]).output().unwrap();
    assert!(String::from_utf8_lossy(&output.stdout).contains("sandbox: off (default): bash is not sandboxed"));
    let description = |project: &Project, extra: &[&str]| {
        let mut args = vec!["tools", "--json"];
        args.extend_from_slice(extra);
        let output = project.command(&args).output().unwrap();
        let tools: Value = serde_json::from_slice(&output.stdout).unwrap();
        let bash = tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "bash")
            .cloned()
            .unwrap();
        bash["description"].as_str().unwrap().to_string()
    };
    // OpenCode's sentence stays; with exec-time enforcement (on by default, sandbox off
    // too) the description adds that every program is checked as it starts.
    let text = description(&off, &[]);
    assert!(
        text.contains("Bash is not sandboxed: the spawned shell runs with the host user's filesystem, process, and network authority."),
        "{text}"
    );
    assert!(text.contains("checked against the rules when it starts"), "{text}");
    let unguarded = Project::new(json!({"sandbox": {"enforce_exec": false}}));
    assert!(description(&unguarded, &[]).ends_with(
        "Bash is not sandboxed: the spawned shell runs with the host user's filesystem, process, and network authority."
    ));
    let output = off.command(&["check", "bash", "ls", "--json"]).output().unwrap();
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["sandbox"]["execEnforcement"]["on"], true, "{value}");
    let output = unguarded.command(&["check", "bash", "ls"]).output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("exec checks: off (sandbox.enforce_exec)"), "{text}");
    if e2e::kernel_has(e2e::KernelFeature::Sandbox) {
        let text = description(&p, &[]);
        assert!(text.contains("Bash runs in a sandbox: the command and everything it starts can write only under the project directory, the temp directory"), "{text}");
        assert!(!text.contains("not sandboxed"), "{text}");
    }
    // Malformed values are reported with their key path.
    let bad = Project::new(json!({"sandbox": {"mode": "everything"}}));
    let output = bad.command(&["config"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("sandbox.mode: expected \"off\", \"read-only\" or \"workspace-write\"")
    );
}

#[test]
fn the_managed_layer_sets_a_floor_that_neither_config_nor_flag_lowers() {
    if !e2e::kernel_has(e2e::KernelFeature::Sandbox) {
        return;
    }
    let p = Project::new(json!({"sandbox": {"mode": "off"}}));
    p.write("config/managed.json", r#"{"sandbox": {"mode": "read-only"}}"#);
    let settled = p.bash("echo x > inside.txt", &["--sandbox", "off"]);
    settled.ran("read-only", 1);
    assert!(!p.exists("project/inside.txt"));
    let output = p.command(&["config"]).output().unwrap();
    assert!(String::from_utf8_lossy(&output.stdout).contains("sandbox: read-only (managed)"));
}

#[test]
fn an_unprivileged_user_gets_the_same_sandbox() {
    if !e2e::kernel_has(e2e::KernelFeature::Sandbox) {
        return;
    }
    let p = Project::new(workspace_write(json!({"read": {"*": "allow", "*.env": "deny"}})));
    p.write("project/.env", "top-secret\n");
    let drop_to_nobody = rustix::process::geteuid().is_root();
    if drop_to_nobody {
        if Command::new("setpriv").arg("--version").output().is_err() {
            eprintln!("SKIPPED: running as root without setpriv, so the unprivileged path cannot be tried");
            return;
        }
        // The binary too, wherever the checkout lives (a home directory nobody may enter).
        std::fs::create_dir(p.root().join("bin")).unwrap();
        std::fs::copy(e2e::toolgate_binary(), p.root().join("bin/toolgate")).unwrap();
        // Everything the user works on is theirs; everything else is root's.
        let status = Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(p.root())
            .status()
            .unwrap();
        assert!(status.success());
    }
    let run = |command: &str| {
        let input = json!({"command": command}).to_string();
        let mut toolgate = if drop_to_nobody {
            let mut setpriv = Command::new("setpriv");
            setpriv
                .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(p.root().join("bin/toolgate"));
            setpriv
        } else {
            Command::new(e2e::toolgate_binary())
        };
        toolgate.args(["call", "bash", &input, "--auto", "--json"]);
        p.environment(&mut toolgate);
        Settled::from(toolgate.output().unwrap())
    };
    let settled = run("id -u; echo in > inside.txt; cat inside.txt");
    let text = settled.ran("workspace-write", 0);
    if drop_to_nobody {
        assert!(text.starts_with("65534\n"), "{text}");
    }
    assert!(text.contains("in\n"), "{text}");
    for command in ["echo x > ../outside.txt", "echo x > ~/.bashrc"] {
        let settled = run(command);
        settled.ran("workspace-write", 1);
    }
    assert!(!p.exists("outside.txt") && !p.exists("home/.bashrc"));
    // A read the analysis cannot see (code it does not read), so only the sandbox stops it.
    let text = run("python3 -c \"print(open('.' + 'env').read())\"").ran("workspace-write", 1);
    assert!(!text.contains("top-secret"), "{text}");
    run("python3 -c \"import socket; socket.create_connection(('127.0.0.1', 9))\"").ran("workspace-write", 1);
    run("unshare -r true").ran("workspace-write", 1);
}

// ---- serve ----

// At least 32 characters: `serve` refuses shorter tokens from the environment.
const TOKEN: &str = "serve-token-never-seen-0123456789abcdef";

struct Served {
    child: std::process::Child,
    base: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(p: &Project, extra: &[&str]) -> Served {
    let mut args = vec!["serve", "--listen", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let mut command = p.command(&args);
    command
        .env("TOOLGATE_SERVER_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = command.spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let base = first.strip_prefix("toolgate: listening on ").unwrap().to_string();
    Served { child, base }
}

/// A plain HTTP/1.1 request with the real token: (status, body).
fn http(base: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let address = base.strip_prefix("http://").unwrap();
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    let body = body.map(Value::to_string).unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.split_whitespace().nth(1).unwrap_or("0").parse().unwrap_or(0);
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("");
    // Chunked bodies: the JSON is on the line after the chunk size.
    let json = serde_json::from_str(body)
        .or_else(|_| serde_json::from_str(body.lines().nth(1).unwrap_or("")))
        .unwrap_or(Value::Null);
    (status, json)
}

/// What a model would run to answer its own asks: the token from its environment (or
/// toolgate's, through /proc), then every pending permission approved.
fn self_approval_script(base: &str) -> String {
    format!(
        r#"python3 - <<'EOF'
import json, os, urllib.request
token = os.environ.get("TOOLGATE_SERVER_TOKEN", "")
if not token:
    try:
        for entry in open("/proc/%d/environ" % os.getppid(), "rb").read().split(b"\0"):
            if entry.startswith(b"TOOLGATE_SERVER_TOKEN="):
                token = entry.split(b"=", 1)[1].decode()
    except Exception as error:
        print("environ:", error)
print("token:", token or "none")
def call(method, path, body=None):
    request = urllib.request.Request("{base}" + path, method=method, data=body,
        headers={{"Authorization": "Bearer " + token, "Content-Type": "application/json"}})
    return json.load(urllib.request.urlopen(request, timeout=5))
try:
    for pending in call("GET", "/permission"):
        call("POST", "/permission/%s/reply" % pending["id"], b'{{"reply": "always"}}')
        print("approved", pending["id"])
except Exception as error:
    print("refused:", error)
EOF"#
    )
}

fn self_approval_is_impossible(extra: &[&str], sandboxed: bool) {
    let p = Project::new(json!({"permission": {"bash": {"*": "allow", "touch *": "ask"}}}));
    let served = serve(&p, extra);
    // Call A: waits for a person.
    let base = served.base.clone();
    let asked = std::thread::spawn(move || {
        http(
            &base,
            "POST",
            "/session/a/call",
            Some(&json!({"tool": "bash", "input": {"command": "touch approved-by-the-model"}})),
        )
    });
    let pending = || {
        http(&served.base, "GET", "/permission", None)
            .1
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    assert!(wait_for(Duration::from_secs(10), || !pending().is_empty()));
    let asked_id = pending()[0]["id"].as_str().unwrap().to_string();
    // Call B: tries to approve A. (If the analysis asks about B itself, a person says yes
    // to that one.)
    let base = served.base.clone();
    let script = self_approval_script(&served.base);
    let model = std::thread::spawn(move || {
        http(
            &base,
            "POST",
            "/session/b/call",
            Some(&json!({"tool": "bash", "input": {"command": script}})),
        )
    });
    while !model.is_finished() {
        for request in pending() {
            let id = request["id"].as_str().unwrap_or_default();
            if id != asked_id {
                http(
                    &served.base,
                    "POST",
                    &format!("/permission/{id}/reply"),
                    Some(&json!({"reply": "once"})),
                );
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (status, settled) = model.join().unwrap();
    assert_eq!(status, 200, "{settled}");
    let text = result_text(&settled["result"]).unwrap_or_else(|| settled.to_string());
    assert!(text.contains("token: none"), "the command found the token: {text}");
    assert!(!text.contains(TOKEN) && !text.contains("approved"), "{text}");
    assert_eq!(
        settled["output"]["structured"]["sandbox"].as_str().is_some(),
        sandboxed,
        "{settled}"
    );
    // A is still waiting; a person says no.
    let still = pending();
    assert_eq!(still.len(), 1, "{still:?}");
    assert_eq!(still[0]["id"], asked_id.as_str());
    let (status, _) = http(
        &served.base,
        "POST",
        &format!("/permission/{asked_id}/reply"),
        Some(&json!({"reply": "reject"})),
    );
    assert!(status < 300);
    let (_, result) = asked.join().unwrap();
    assert!(result.to_string().contains("rejected"), "{result}");
    assert!(!p.exists("project/approved-by-the-model"));
}

#[test]
fn through_serve_a_command_cannot_find_the_token_to_approve_its_own_asks() {
    self_approval_is_impossible(&[], false);
}

#[test]
fn through_serve_the_sandbox_holds() {
    if !e2e::kernel_has(e2e::KernelFeature::Sandbox) {
        return;
    }
    self_approval_is_impossible(&["--sandbox", "workspace-write"], true);
    // Nobody answers asks here: the rules allow what the sandbox must then stop.
    let p = Project::new(workspace_write(
        json!({"external_directory": "allow", "read": {"*": "allow", "*.env": "deny"}}),
    ));
    p.write("project/.env", "top-secret\n");
    let served = serve(&p, &[]);
    let call = |command: &str| {
        http(
            &served.base,
            "POST",
            "/session/s/call",
            Some(&json!({"tool": "bash", "input": {"command": command}})),
        )
        .1
    };
    let settled = call("echo x > ../outside.txt");
    assert_eq!(
        settled["output"]["structured"]["sandbox"], "workspace-write",
        "{settled}"
    );
    let text = result_text(&settled["result"]).unwrap_or_default();
    assert!(
        text.contains("sandbox: write outside the workspace refused"),
        "{settled}"
    );
    assert!(!p.exists("outside.txt"));
    let settled = call("f=.e; cat ${f}nv");
    assert!(!settled.to_string().contains("top-secret"), "{settled}");
    let settled = call("echo in > inside.txt");
    assert_eq!(settled["output"]["structured"]["exit"], 0, "{settled}");
    assert!(p.exists("project/inside.txt"));
}

// ---- mcp ----

#[test]
fn through_mcp_the_sandbox_holds() {
    if !e2e::kernel_has(e2e::KernelFeature::Sandbox) {
        return;
    }
    let p = Project::new(workspace_write(json!({"read": {"*": "allow", "secrets/*": "deny"}})));
    p.write("project/secrets/key", "top-secret\n");
    let mut child = p
        .command(&["mcp", "--auto"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    };
    let mut receive = |id: u64| loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "mcp closed");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == id {
            return message;
        }
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}));
    receive(1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut call = |id: u64, command: &str| {
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "bash", "arguments": {"command": command}}}));
        receive(id)["result"].to_string()
    };
    let text = call(2, "echo x > ../outside.txt");
    assert!(text.contains("sandbox: write outside the workspace refused"), "{text}");
    assert!(!p.exists("outside.txt"));
    let text = call(3, &unseen("d=secrets; cat $d/key"));
    assert!(
        !text.contains("top-secret") && text.contains("exited with code 1"),
        "{text}"
    );
    let text = call(4, "echo in > inside.txt && echo done");
    assert!(text.contains("done"), "{text}");
    drop(stdin);
    let _ = child.wait();
    assert!(p.exists("project/inside.txt"));
}

#[test]
fn the_trampoline_refuses_a_policy_it_cannot_read_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let output = Command::new(e2e::toolgate_binary())
        .args(["__sandbox-exec", "--mode", "off", "--", "/bin/sh", "-c"])
        .arg(format!("touch {}", marker.display()))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&output.stderr).contains("toolgate: sandbox: sandbox option --mode"));
    assert!(!Path::new(&marker).exists());
}

#[test]
fn the_analysis_oracle_runs_its_lines_in_this_sandbox() {
    if !e2e::kernel_has(e2e::KernelFeature::Sandbox) {
        return;
    }
    // `shell_oracle::nothing_escapes_the_sandbox` and the generated lines then run in it.
    assert_eq!(e2e::shell_oracle::Options::default().sandbox.name(), "toolgate");
}
