//! Every rule the user wrote holds, in every tool, through the binary: `grep`, `glob` and
//! `read` of a directory show a file only as far as `read` of it is allowed (spec §5.2,
//! §5.6, §5.7); path rules hold for every spelling, symlinks included (§4.3, §5.1);
//! approvals stay inside what the person meant — the prompt and `check` agree on what
//! "always" saves (§4.5, §4.7, §10.1), the files that define the rules and those git runs
//! code from always ask (README, "Files that define the rules"), a refusal names its rule
//! (§4.6) and a tool hidden by a deny is denied, not unknown (§2.4, §4.8).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use e2e::Sandbox;
use serde_json::{Value, json};

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|error| panic!("not JSON ({error}): {text}"))
}

/// `toolgate call TOOL INPUT EXTRA…`: (exit code, stdout, stderr).
fn call(sandbox: &Sandbox, tool: &str, input: &Value, extra: &[&str]) -> (i32, String, String) {
    let input = input.to_string();
    let mut args = vec!["call", tool, input.as_str()];
    args.extend_from_slice(extra);
    sandbox.run(&args)
}

/// `toolgate check ACTION RESOURCE --json`.
fn check(sandbox: &Sandbox, action: &str, resource: &str) -> Value {
    let (code, out, err) = sandbox.run(&["check", action, resource, "--json"]);
    assert_eq!(code, 0, "{err}");
    json_of(&out)
}

/// A project with `.env`-like files the default read rules ask for (`*.env.*`, spec
/// §4.10), one secret a config denies, and a plain file; every file holds `TOKEN=`.
fn secrets_project() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("project/app.env.bak", "TOKEN=bak-secret\n");
    sandbox.write("project/config.env.local", "TOKEN=local-secret\n");
    sandbox.write("project/.env.d/prod", "TOKEN=envd-secret\n");
    sandbox.write("project/vault/key.txt", "TOKEN=vault-secret\n");
    sandbox.write("project/notes.txt", "TOKEN=public\n");
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"read": {"vault/*": "deny"}}}"#,
    );
    sandbox
}

// ---- read rules hold in every tool ----------------------------------------------------

/// §5.7 with §5.2: grep's lines of a file are shown only as far as `read` of the file is
/// allowed. Before, only names like `.env` were checked: `app.env.bak`,
/// `config.env.local` and `.env.d/prod` (asked by `*.env.*`) and `vault/key.txt`
/// (denied) were printed.
#[test]
fn grep_shows_lines_only_as_far_as_read_is_allowed() {
    let sandbox = secrets_project();
    let (code, out, err) = call(&sandbox, "grep", &json!({"pattern": "TOKEN"}), &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("TOKEN=public"), "{out}");
    for secret in ["bak-secret", "local-secret", "envd-secret", "vault-secret"] {
        assert!(!out.contains(secret), "{secret} shown: {out}");
    }
    for name in ["app.env.bak", "config.env.local", ".env.d", "vault"] {
        assert!(!out.contains(name), "{name} named: {out}");
    }
    assert!(out.contains("4 files are not shown"), "{out}");
    assert!(out.contains("1 denied by the read rules"), "{out}");
    assert!(out.contains("3 whose reading needs a person's approval"), "{out}");
    // Found counts only what may be shown.
    assert!(out.contains("Found 1 matches"), "{out}");

    // With --auto the asks are answered (as `read` of each would be); the deny holds.
    let (code, out, err) = call(&sandbox, "grep", &json!({"pattern": "TOKEN"}), &["--auto"]);
    assert_eq!(code, 0, "{err}");
    for shown in ["bak-secret", "local-secret", "envd-secret", "public"] {
        assert!(out.contains(shown), "{shown} missing: {out}");
    }
    assert!(!out.contains("vault-secret"), "{out}");
    assert!(out.contains("1 denied by the read rules"), "{out}");

    // A single file whose reading asks: asked (declined here, no terminal), not shown.
    let (code, out, err) = call(
        &sandbox,
        "grep",
        &json!({"pattern": "TOKEN", "path": "config.env.local"}),
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("local-secret"), "{out}");
    assert!(out.contains("1 file is not shown"), "{out}");
}

/// §5.6 with §5.2: glob lists a name only as far as reading the file is allowed.
#[test]
fn glob_lists_names_only_as_far_as_read_is_allowed() {
    let sandbox = secrets_project();
    let (code, out, err) = call(&sandbox, "glob", &json!({"pattern": "**/*"}), &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("notes.txt"), "{out}");
    for name in ["app.env.bak", "config.env.local", ".env.d/prod", "vault/key.txt"] {
        assert!(!out.contains(name), "{name} listed: {out}");
    }
    assert!(out.contains("1 denied by the read rules"), "{out}");
    assert!(out.contains("3 whose reading needs a person's approval"), "{out}");
}

/// §5.2: a directory listing names an entry only as far as reading it is allowed.
#[test]
fn read_of_a_directory_lists_entries_only_as_far_as_read_is_allowed() {
    let sandbox = secrets_project();
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"read": {"vault/*": "deny", "vault": "deny"}}}"#,
    );
    let (code, out, err) = call(&sandbox, "read", &json!({"path": "."}), &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("notes.txt"), "{out}");
    for name in ["app.env.bak", "config.env.local", ".env.d", "vault/"] {
        assert!(!out.contains(name), "{name} listed: {out}");
    }
    assert!(out.contains("4 entries are not shown"), "{out}");
}

/// §4.3, §5.1: a deny written with a symlinked spelling of an outside path holds for the
/// path as it really is, whichever spelling the model uses, in `read`, `grep` and
/// `check`. Before, only the canonical spelling was matched, and the read went through.
#[test]
fn a_deny_written_through_a_symlink_holds_for_every_spelling() {
    let sandbox = Sandbox::new();
    let root = std::fs::canonicalize(sandbox.root.path()).unwrap();
    sandbox.write("outside/vault/key.txt", "TOKEN=outside-secret\n");
    sandbox.write("outside/open.txt", "TOKEN=outside-open\n");
    std::os::unix::fs::symlink(root.join("outside"), root.join("link")).unwrap();
    let link = root.join("link").to_string_lossy().into_owned();
    let real = root.join("outside").to_string_lossy().into_owned();
    sandbox.write(
        "project/toolgate.json",
        &json!({"permission": {"external_directory": "allow", "read": {format!("{link}/vault/*"): "deny"}}})
            .to_string(),
    );
    for spelling in [format!("{real}/vault/key.txt"), format!("{link}/vault/key.txt")] {
        let (code, out, err) = call(&sandbox, "read", &json!({"path": spelling}), &[]);
        assert_eq!(code, 3, "{spelling}: {out}{err}");
        assert!(!out.contains("outside-secret"), "{out}");
        assert!(err.contains("Unable to read"), "{err}");
        assert_eq!(check(&sandbox, "read", &spelling)["effect"], "deny", "{spelling}");
    }
    let (code, out, err) = call(&sandbox, "read", &json!({"path": format!("{real}/open.txt")}), &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("outside-open"), "{out}");
    let (code, out, err) = call(&sandbox, "grep", &json!({"pattern": "TOKEN", "path": real}), &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("outside-open") && !out.contains("outside-secret"), "{out}");

    // Inside the project: a rule for a linked directory holds for the real one.
    sandbox.write("project/real/data.txt", "TOKEN=inner-secret\n");
    std::os::unix::fs::symlink(sandbox.project().join("real"), sandbox.project().join("alias")).unwrap();
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"read": {"alias/*": "deny"}}}"#,
    );
    let (code, out, err) = call(&sandbox, "read", &json!({"path": "real/data.txt"}), &[]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(!out.contains("inner-secret"), "{out}");
}

// ---- approvals that stay inside what the person meant ---------------------------------

/// §4.7, §5.3: what `check` says "always" would save for an edit is what the tool's
/// prompt offers (`*`, the file tools' pattern), for both scopes. Before, check predicted
/// the path itself.
#[test]
fn check_predicts_the_pattern_the_edit_prompt_offers() {
    let sandbox = Sandbox::new();
    sandbox.write("project/toolgate.json", r#"{"permission": {"edit": "ask"}}"#);
    sandbox.write("project/src/a.rs", "fn a() {}\n");
    let report = check(&sandbox, "edit", "src/a.rs");
    assert_eq!(report["effect"], "ask");
    assert_eq!(report["save"], json!(["*"]));
    let (code, out, _) = sandbox.run(&["check", "edit", "src/a.rs"]);
    assert_eq!(code, 0);
    assert!(out.contains("always would save: *"), "{out}");

    let mut command = sandbox.command(&["call", "write", r#"{"path": "src/a.rs", "content": "fn b() {}\n"}"#]);
    command.env("NO_COLOR", "1");
    let mut session = e2e::pty::Session::spawn(command).unwrap();
    let screen = session.expect("answer [o/s/a/r]:", Duration::from_secs(30)).unwrap();
    assert!(screen.contains("[s] allow for this session: *"), "{screen}");
    assert!(screen.contains("[a] allow always for the project: *"), "{screen}");
    session.send("s\r").unwrap();
    let (code, screen) = session.finish(Duration::from_secs(30)).unwrap();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join("src/a.rs")).unwrap(),
        "fn b() {}\n"
    );
    // "This session" saved nothing for the project: the next process asks again.
    let (code, _, err) = call(&sandbox, "write", &json!({"path": "src/a.rs", "content": "x\n"}), &[]);
    assert_eq!(code, 3, "{err}");
    let (_, out, _) = sandbox.run(&["approvals", "list"]);
    assert!(out.contains("no saved approvals"), "{out}");
}

/// README "Files that define the rules": an edit of a config file, an agent file, or a
/// file git runs code from asks even where the rules allow every edit (the build agent's
/// default, spec §4.10); `--auto` does not approve it, headless it is declined, and
/// `check` says why and that "always" saves nothing. Before, `write` rewrote them.
#[test]
fn edits_of_rule_files_and_git_code_files_always_ask() {
    let sandbox = Sandbox::new();
    sandbox.write("project/.git/HEAD", "ref: refs/heads/main\n");
    sandbox.write("project/.git/config", "[core]\n");
    sandbox.write("project/opencode.json", "{}\n");
    for path in [
        "opencode.json",
        "toolgate.json",
        ".opencode/opencode.jsonc",
        ".opencode/agent/reviewer.md",
        ".opencode/agents/builder.md",
        ".toolgate/state",
        ".git/hooks/pre-commit",
        ".git/config",
    ] {
        for extra in [&[][..], &["--auto"][..]] {
            let (code, out, err) = call(
                &sandbox,
                "write",
                &json!({"path": path, "content": "{\"permission\": \"allow\"}\n"}),
                extra,
            );
            assert_eq!(code, 3, "{path} {extra:?}: {out}{err}");
            assert!(err.contains(&format!("Unable to write {path}")), "{err}");
        }
        let report = check(&sandbox, "edit", path);
        assert_eq!(report["effect"], "ask", "{path}: {report}");
        assert_eq!(report["resources"][0]["rule"]["origin"], "protected", "{report}");
        assert_eq!(report["save"], json!([]), "{report}");
    }
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join("opencode.json")).unwrap(),
        "{}\n"
    );
    assert!(!sandbox.project().join(".git/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join(".git/config")).unwrap(),
        "[core]\n"
    );
    // The same file by another spelling: a symlink to it.
    std::os::unix::fs::symlink(
        sandbox.project().join("opencode.json"),
        sandbox.project().join("cfg.json"),
    )
    .unwrap();
    let (code, _, err) = call(
        &sandbox,
        "write",
        &json!({"path": "cfg.json", "content": "x"}),
        &["--auto"],
    );
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("defines the rules"), "{err}");
    // The global config and the approvals database too.
    let (code, _, err) = call(
        &sandbox,
        "write",
        &json!({"path": sandbox.config_dir().join("toolgate.json"), "content": "{}"}),
        &["--auto"],
    );
    assert_eq!(code, 3, "{err}");
    // An ordinary file still follows the rules (allowed).
    let (code, _, err) = call(
        &sandbox,
        "write",
        &json!({"path": "src/ok.txt", "content": "ok\n"}),
        &[],
    );
    assert_eq!(code, 0, "{err}");
    // A person may still approve one, once: the prompt says it is asked every time.
    let mut command = sandbox.command(&[
        "call",
        "write",
        r#"{"path": "opencode.json", "content": "{\"x\": 1}\n"}"#,
    ]);
    command.env("NO_COLOR", "1");
    let mut session = e2e::pty::Session::spawn(command).unwrap();
    let screen = session.expect("answer [o/s/a/r]:", Duration::from_secs(30)).unwrap();
    assert!(screen.contains("asked every time, never saved"), "{screen}");
    assert!(
        screen.contains("[a] always (nothing to save: same as once)"),
        "{screen}"
    );
    session.send("a\r").unwrap();
    let (code, screen) = session.finish(Duration::from_secs(30)).unwrap();
    assert_eq!(code, 0, "{screen}");
    let (_, out, _) = sandbox.run(&["approvals", "list"]);
    assert!(out.contains("no saved approvals"), "{out}");
}

/// §4.6: a refusal names the resource and the rule that decided it, with the file the rule
/// was written in. Before: `Permission denied: bash`.
#[test]
fn a_refusal_names_the_deciding_rule_and_its_file() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": {"*": "allow", "rm *": "deny"}}}"#,
    );
    let (code, _, err) = call(&sandbox, "bash", &json!({"command": "rm -rf build"}), &[]);
    assert_eq!(code, 3, "{err}");
    let file = std::fs::canonicalize(sandbox.project()).unwrap().join("toolgate.json");
    assert_eq!(
        err.trim(),
        format!(
            "Permission denied: bash \"rm -rf build\" by rule bash \"rm *\" deny ({})",
            file.display()
        )
    );
}

/// §2.4, §4.8: a tool the rules wholly deny is not offered, and calling it says it is
/// denied and by which rule — not that it is unknown.
#[test]
fn a_tool_hidden_by_a_deny_is_denied_not_unknown() {
    let sandbox = Sandbox::new();
    sandbox.write("project/toolgate.json", r#"{"permission": {"webfetch": "deny"}}"#);
    let (code, _, err) = call(&sandbox, "webfetch", &json!({"url": "http://127.0.0.1:9/"}), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("Permission denied: tool webfetch for agent build by rule webfetch \"*\" deny"),
        "{err}"
    );
    assert!(!err.contains("unknown"), "{err}");
    let (code, _, err) = call(&sandbox, "no_such_tool", &json!({}), &[]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown tool"), "{err}");
}

/// §4.12: without a terminal, an asked edit is declined and says so, as bash's does.
/// Before, write, edit and apply_patch said only `Unable to write <path>`.
#[test]
fn file_changes_without_a_terminal_say_they_were_declined() {
    let sandbox = Sandbox::new();
    sandbox.write("project/toolgate.json", r#"{"permission": {"edit": "ask"}}"#);
    sandbox.write("project/a.txt", "one\n");
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch";
    for (tool, input) in [
        ("write", json!({"path": "a.txt", "content": "two\n"})),
        ("edit", json!({"path": "a.txt", "oldString": "one", "newString": "two"})),
        ("apply_patch", json!({"patchText": patch})),
    ] {
        let (code, _, err) = call(&sandbox, tool, &input, &[]);
        assert_eq!(code, 3, "{tool}: {err}");
        assert!(
            err.contains("declined (no terminal; use --auto to approve)"),
            "{tool}: {err}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join("a.txt")).unwrap(),
        "one\n"
    );
}
