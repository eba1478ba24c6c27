//! Exec-time enforcement, through the real binary: which rules hold when a program starts
//! (README "The bash tool", "Two layers"). Each test runs `toolgate call bash` with rules
//! the analysis reads one way and the kernel sees another, and checks what really ran
//! with marker files the programs would remove or create.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use e2e::Sandbox;
use serde_json::{Value, json};

/// A project with `rules` as its `permission` block and a few marker files.
fn project(rules: Value) -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        &json!({"permission": {"bash": rules}}).to_string(),
    );
    for marker in ["x", "y", "z"] {
        sandbox.write(&format!("project/{marker}"), marker);
    }
    sandbox
}

/// `toolgate call bash COMMAND --auto --json`: (the text the model reads, the exit code
/// of the command).
fn call(sandbox: &Sandbox, command: &str, extra: &[&str]) -> (String, Option<i64>) {
    let input = json!({"command": command}).to_string();
    let mut args = vec!["call", "bash", input.as_str(), "--json"];
    args.extend_from_slice(extra);
    let (_, out, err) = sandbox.run(&args);
    let value: Value = serde_json::from_str(&out).unwrap_or_else(|_| panic!("not JSON: {out}\n{err}"));
    let text = match &value["result"]["value"] {
        Value::String(text) => text.clone(),
        other => format!("{other}"),
    };
    (text, value["output"]["structured"]["exit"].as_i64())
}

fn exists(sandbox: &Sandbox, marker: &str) -> bool {
    sandbox.project().join(marker).exists()
}

fn guard_available(sandbox: &Sandbox) -> bool {
    let (_, out, _) = sandbox.run(&["check", "bash", "true", "--json"]);
    let value: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
    let on = value["sandbox"]["execEnforcement"]["on"] == true;
    if !on {
        eprintln!("exec-time enforcement unavailable here; skipped: {}", value["sandbox"]);
    }
    on
}

/// A deny written with the program's absolute path: the analysis sees `rm x` and nothing
/// denies that, but the kernel sees `/usr/bin/rm` start.
#[test]
fn a_deny_in_any_spelling_of_the_program_holds_when_it_starts() {
    let rm = std::fs::canonicalize("/usr/bin/rm").unwrap_or_else(|_| "/usr/bin/rm".into());
    let sandbox = project(json!({"*": "allow", format!("{} *", rm.display()): "deny"}));
    if !guard_available(&sandbox) {
        return;
    }
    let (text, exit) = call(&sandbox, "rm x; echo after", &["--auto"]);
    assert!(exists(&sandbox, "x"), "rm ran: {text}");
    assert!(text.contains("after"), "the line went on: {text}");
    assert!(
        text.contains(&format!(
            "toolgate refused to start `rm x` by rule bash \"{} *\" deny",
            rm.display()
        )),
        "{text}"
    );
    assert_eq!(exit, Some(0), "{text}");
    // A raw `~/…` rule (the list form keeps it as written) holds for the program's path.
    let sandbox = Sandbox::new();
    let home = sandbox.root.path().join("home");
    std::fs::create_dir_all(home.join("bin")).unwrap();
    std::fs::write(home.join("bin/deploy"), "#!/bin/sh\ntouch deployed\n").unwrap();
    set_mode(&home.join("bin/deploy"), 0o755);
    sandbox.write(
        "project/toolgate.json",
        &json!({"permission": [
            {"action": "bash", "resource": "*", "effect": "allow"},
            {"action": "bash", "resource": "~/bin/deploy *", "effect": "deny"},
        ]})
        .to_string(),
    );
    let input = json!({"command": "eval \"$(echo ~/bin/deploy)\" now"}).to_string();
    let output = sandbox
        .command(&["call", "bash", &input, "--auto"])
        .env("HOME", &home)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(!sandbox.project().join("deployed").exists(), "deploy ran: {text}");
    assert!(text.contains("by rule bash \"~/bin/deploy *\" deny"), "{text}");
}

fn set_mode(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Lines the analysis misreads on purpose: it asks (a denied program may hide in them),
/// `--auto` approves once, and the kernel still refuses the denied program.
#[test]
fn what_the_analysis_cannot_see_is_asked_and_the_kernel_stops_it() {
    let sandbox = project(json!({"*": "allow", "rm *": "deny"}));
    if !guard_available(&sandbox) {
        return;
    }
    let lines = [
        // A function redefined after the function that calls it was read.
        "f() { true; }; g() { f x; }; f() { $(printf r)m \"$@\"; }; g",
        // A variable set through a builtin, exported, then run.
        "printf -v P '%s' rm; export P; $P x",
        "read -r P <<< rm; $P y",
        // Decoded text.
        "eval \"$(printf '%s' 'cm0geg==' | base64 -d)\"",
        // A script the line writes, then runs.
        "printf 'rm z\\n' > s.sh; bash s.sh",
    ];
    for line in lines {
        let (text, _) = call(&sandbox, line, &["--auto"]);
        assert!(
            exists(&sandbox, "x") && exists(&sandbox, "y") && exists(&sandbox, "z"),
            "{line}: a denied rm ran: {text}"
        );
        assert!(text.contains("toolgate refused to start `rm "), "{line}: {text}");
    }
    // The same opaque line without enforcement is refused before it runs.
    sandbox.write(
        "project/toolgate.json",
        &json!({"sandbox": {"enforce_exec": false}, "permission": {"bash": {"*": "allow", "rm *": "deny"}}})
            .to_string(),
    );
    sandbox.trust();
    let (text, _) = call(&sandbox, "eval \"$(printf '%s' 'cm0geg==' | base64 -d)\"", &["--auto"]);
    assert!(text.contains("declined") || text.contains("denied"), "{text}");
}

/// An explicit ask rule matched by a program the analysis did not predict pauses it in
/// `execve` and asks: without a terminal the ask is declined and the exec fails; `--auto`
/// answers once and it runs.
#[test]
fn an_explicit_ask_at_exec_time_is_asked_with_the_real_command_line() {
    // Written for the absolute path: the analysis sees `touch made`, which the rules allow
    // before the line runs; the kernel sees `/usr/bin/touch made` start.
    let touch = std::fs::canonicalize("/usr/bin/touch").unwrap_or_else(|_| "/usr/bin/touch".into());
    let sandbox = project(json!({"*": "allow", format!("{} *", touch.display()): "ask"}));
    if !guard_available(&sandbox) {
        return;
    }
    let line = "touch made";
    let (text, _) = call(&sandbox, line, &[]);
    assert!(!exists(&sandbox, "made"), "touch ran without an answer: {text}");
    assert!(
        text.contains("toolgate refused to start `touch made` when it started"),
        "{text}"
    );
    assert!(text.contains("declined"), "{text}");
    let (text, _) = call(&sandbox, line, &["--auto"]);
    assert!(exists(&sandbox, "made"), "--auto did not approve it: {text}");
}

/// What an approved program runs inherits the approval unless a deny or an explicit ask
/// matches it; what the line's own shell runs unpredicted is a misreading, and asked.
#[test]
fn programs_run_by_an_approved_program_inherit_its_approval() {
    // Everything asks; `python3 *` is allowed. The script's `touch` is run by python3
    // (approved): it inherits. A `cp` inside is denied.
    let sandbox = project(json!({"*": "ask", "python3 *": "allow", "echo *": "allow", "cp *": "deny"}));
    if !guard_available(&sandbox) {
        return;
    }
    sandbox.write(
        "project/build.py",
        "import subprocess\nsubprocess.run(['touch', 'built'])\nsubprocess.run(['cp', 'x', 'copied'])\n",
    );
    let (text, _) = call(&sandbox, "python3 build.py", &[]);
    assert!(
        exists(&sandbox, "built"),
        "the approved script's touch did not inherit: {text}"
    );
    assert!(!exists(&sandbox, "copied"), "a denied cp ran under sh: {text}");
    assert!(
        text.contains("toolgate refused to start `cp x copied` by rule bash \"cp *\" deny"),
        "{text}"
    );
    // The same touch run by the line itself, hidden from the analysis: asked (declined
    // here, no terminal).
    let (text, _) = call(&sandbox, "echo hi; eval \"$(echo touch other)\"", &[]);
    assert!(!exists(&sandbox, "other"), "{text}");
}

/// `check` says exec checks are on, and the bash description tells the model.
#[test]
fn check_reports_exec_time_enforcement() {
    let sandbox = project(json!({"*": "allow"}));
    let (_, out, _) = sandbox.run(&["check", "bash", "ls"]);
    assert!(
        out.contains("exec checks: on") || out.contains("exec checks: unavailable"),
        "{out}"
    );
}
