//! `toolgate hook AGENT` run as each agent runs its hook: a process with the payload on
//! stdin (the fixtures in tests/fixtures/hooks, taken from each agent's hook reference),
//! the agent's environment, in a project with a `toolgate.json`. And `check --exit-code`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use e2e::Sandbox;
use serde_json::{Value, json};

/// The rules every test here runs under.
const RULES: &str = r#"{"permission": {
    "bash": {"*": "ask", "git status*": "allow", "npm test*": "allow", "rm *": "deny"},
    "edit": {"*": "allow", "*.env": "deny", "Cargo.lock": "deny"},
    "read": {"*": "allow", "*.env": "deny"},
    "memory_create_entities": "deny",
    "github_get_issue": "allow"
}}"#;

fn sandbox() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("project/toolgate.json", RULES);
    sandbox
}

/// A fixture payload with the documentation's project directory replaced by the sandbox's.
fn fixture(sandbox: &Sandbox, agent: &str, name: &str) -> Value {
    let path = format!("{}/fixtures/hooks/{agent}/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"));
    let project = sandbox.project().to_string_lossy().into_owned();
    let text = text
        .replace("/home/user/my-project", &project)
        .replace("/path/to/cwd", &project);
    serde_json::from_str(&text).unwrap()
}

/// Runs `toolgate hook AGENT` as the agent does: the payload on stdin, the agent's
/// environment. (exit code, stdout, stderr).
fn hook(sandbox: &Sandbox, agent: &str, payload: &str) -> (i32, String, String) {
    let mut command = sandbox.command(&["hook", agent]);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match agent {
        // Claude Code: every hook gets CLAUDE_PROJECT_DIR.
        "claude-code" => {
            command.env("CLAUDE_PROJECT_DIR", sandbox.project());
        }
        // Gemini CLI: GEMINI_PROJECT_DIR (and CLAUDE_PROJECT_DIR as an alias).
        "gemini" => {
            command
                .env("GEMINI_PROJECT_DIR", sandbox.project())
                .env("CLAUDE_PROJECT_DIR", sandbox.project());
        }
        _ => {}
    }
    let mut child = command.spawn().unwrap();
    child.stdin.take().unwrap().write_all(payload.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn answer(sandbox: &Sandbox, agent: &str, payload: &Value) -> (i32, Value, String) {
    let (code, out, err) = hook(sandbox, agent, &payload.to_string());
    let value = if out.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&out).unwrap_or_else(|error| panic!("not JSON ({error}): {out}"))
    };
    (code, value, err)
}

fn with_command(mut payload: Value, command: &str) -> Value {
    payload["tool_input"]["command"] = json!(command);
    payload
}

#[test]
fn claude_code_pre_tool_use_allows_denies_and_asks() {
    let sandbox = sandbox();
    let bash = fixture(&sandbox, "claude-code", "pre_tool_use_bash");
    let (code, out, err) = answer(&sandbox, "claude-code", &bash);
    assert_eq!(code, 0, "{err}");
    let output = &out["hookSpecificOutput"];
    assert_eq!(output["hookEventName"], "PreToolUse");
    assert_eq!(output["permissionDecision"], "allow", "{out}");
    assert!(
        output["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains(r#"bash "npm test*" allow"#),
        "{out}"
    );

    // Composition: the denied part of the line decides, and the reason names its rule.
    let (code, out, _) = answer(
        &sandbox,
        "claude-code",
        &with_command(bash.clone(), "git status && rm -rf /"),
    );
    assert_eq!(code, 0);
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny", "{out}");
    let reason = out["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap();
    assert!(reason.contains(r#"rule bash "rm *" deny"#), "{reason}");
    assert!(reason.contains("toolgate.json"), "the rule's file is named: {reason}");

    // No rule allows it: Claude Code's own prompt asks.
    let (_, out, _) = answer(&sandbox, "claude-code", &with_command(bash, "cargo build"));
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "ask", "{out}");

    let write = fixture(&sandbox, "claude-code", "pre_tool_use_write");
    let (_, out, _) = answer(&sandbox, "claude-code", &write);
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny", "{out}");
    assert!(
        out["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains(r#"edit "*.env" deny"#),
        "{out}"
    );

    let mcp = fixture(&sandbox, "claude-code", "pre_tool_use_mcp");
    let (_, out, _) = answer(&sandbox, "claude-code", &mcp);
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny", "{out}");
    assert!(
        out["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("memory_create_entities"),
        "{out}"
    );
}

#[test]
fn claude_code_file_tools_see_the_file_outside_the_project_and_relative_paths() {
    let sandbox = sandbox();
    sandbox.write("project/sub/keep.txt", "x");
    // A path outside the project is also asked as `external_directory`, as the file tools ask it.
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"read": "allow", "external_directory": "deny"}}"#,
    );
    let mut read = fixture(&sandbox, "claude-code", "pre_tool_use_write");
    read["tool_name"] = json!("Read");
    read["tool_input"] = json!({"file_path": "/etc/hostname"});
    let (_, out, _) = answer(&sandbox, "claude-code", &read);
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny", "{out}");
    assert!(
        out["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("external_directory"),
        "{out}"
    );
    // Relative to the payload's cwd: inside the project, allowed.
    read["cwd"] = json!(sandbox.project().join("sub"));
    read["tool_input"] = json!({"file_path": "keep.txt"});
    let (_, out, _) = answer(&sandbox, "claude-code", &read);
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "allow", "{out}");
}

#[test]
fn claude_code_permission_request_answers_allow_deny_and_leaves_asks_to_the_dialog() {
    let sandbox = sandbox();
    let request = fixture(&sandbox, "claude-code", "permission_request_bash");
    let (code, out, err) = answer(&sandbox, "claude-code", &request);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out["hookSpecificOutput"]["hookEventName"], "PermissionRequest");
    assert_eq!(out["hookSpecificOutput"]["decision"]["behavior"], "deny", "{out}");
    assert!(
        out["hookSpecificOutput"]["decision"]["message"]
            .as_str()
            .unwrap()
            .contains(r#"rule bash "rm *" deny"#),
        "{out}"
    );
    let (_, out, _) = answer(&sandbox, "claude-code", &with_command(request.clone(), "git status"));
    assert_eq!(
        out,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}})
    );
    // An ask: no decision, so Claude Code shows its dialog.
    let (code, out, _) = answer(&sandbox, "claude-code", &with_command(request, "cargo build"));
    assert_eq!((code, out), (0, Value::Null));
}

#[test]
fn codex_pre_tool_use_only_denies() {
    let sandbox = sandbox();
    let bash = fixture(&sandbox, "codex", "pre_tool_use_bash");
    // An ask and an allow: Codex's PreToolUse takes neither, so nothing is said.
    let (code, out, err) = answer(&sandbox, "codex", &bash);
    assert_eq!((code, &out), (0, &Value::Null), "{err}");
    let (code, out, _) = answer(&sandbox, "codex", &with_command(bash.clone(), "git status"));
    assert_eq!((code, out), (0, Value::Null));
    let (code, out, _) = answer(&sandbox, "codex", &with_command(bash, "git status; rm -rf ~"));
    assert_eq!(code, 0);
    assert_eq!(out["hookSpecificOutput"]["hookEventName"], "PreToolUse");
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny", "{out}");
    assert!(
        out["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains(r#"rule bash "rm *" deny"#),
        "{out}"
    );
    // apply_patch: every file of the patch is an edit.
    let patch = fixture(&sandbox, "codex", "pre_tool_use_apply_patch");
    let (_, out, _) = answer(&sandbox, "codex", &patch);
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny", "{out}");
    assert!(
        out["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains(r#"edit "Cargo.lock" deny"#),
        "{out}"
    );
    let request = fixture(&sandbox, "codex", "permission_request_bash");
    let (_, out, _) = answer(&sandbox, "codex", &request);
    assert_eq!(out["hookSpecificOutput"]["decision"]["behavior"], "deny", "{out}");
    // Its PermissionRequest takes an allow: what Codex would ask, the rules allow.
    let (_, out, _) = answer(&sandbox, "codex", &with_command(request.clone(), "git status --short"));
    assert_eq!(
        out,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}})
    );
    let (code, out, _) = answer(&sandbox, "codex", &with_command(request, "cargo publish"));
    assert_eq!((code, out), (0, Value::Null), "an ask is left to Codex's prompt");
}

#[test]
fn gemini_before_tool_allows_denies_and_asks() {
    let sandbox = sandbox();
    let shell = fixture(&sandbox, "gemini", "before_tool_shell");
    let (code, out, err) = answer(&sandbox, "gemini", &shell);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, json!({"decision": "allow"}));
    let (_, out, _) = answer(
        &sandbox,
        "gemini",
        &with_command(shell.clone(), "git status && rm -rf /"),
    );
    assert_eq!(out["decision"], "deny", "{out}");
    assert!(
        out["reason"].as_str().unwrap().contains(r#"rule bash "rm *" deny"#),
        "{out}"
    );
    let (_, out, _) = answer(&sandbox, "gemini", &with_command(shell, "make"));
    assert_eq!(out["decision"], "ask", "{out}");
    let write = fixture(&sandbox, "gemini", "before_tool_write_file");
    let (_, out, _) = answer(&sandbox, "gemini", &write);
    assert_eq!(out, json!({"decision": "allow"}));
    let mut secret = write.clone();
    secret["tool_input"]["file_path"] = json!("config/.env");
    let (_, out, _) = answer(&sandbox, "gemini", &secret);
    assert_eq!(out["decision"], "deny", "a relative path resolves against cwd: {out}");
    let mcp = fixture(&sandbox, "gemini", "before_tool_mcp");
    let (_, out, _) = answer(&sandbox, "gemini", &mcp);
    assert_eq!(
        out,
        json!({"decision": "allow"}),
        "mcp_context names the server and tool"
    );
}

#[test]
fn a_payload_that_cannot_be_read_is_refused() {
    let sandbox = sandbox();
    for agent in ["claude-code", "codex", "gemini"] {
        for payload in [
            "",
            "not json",
            "[1, 2]",
            r#"{"hook_event_name": "PreToolUse", "tool_input": {"command": "ls"}}"#,
            r#"{"tool_name": ""}"#,
        ] {
            let (code, out, err) = hook(&sandbox, agent, payload);
            assert_eq!(code, 2, "{agent} {payload:?}: {out}{err}");
            assert!(out.is_empty(), "{agent} {payload:?}: nothing on stdout: {out}");
            assert!(err.starts_with("toolgate: refused: "), "{agent} {payload:?}: {err}");
        }
    }
    let (code, _, err) = hook(
        &sandbox,
        "claude-code",
        r#"{"hook_event_name": "PostToolUse", "tool_name": "Bash"}"#,
    );
    assert_eq!(code, 2);
    assert!(err.contains("PostToolUse"), "{err}");
    // A config that does not load refuses too.
    sandbox.write("project/toolgate.json", "{ not json");
    let bash = fixture(&sandbox, "claude-code", "pre_tool_use_bash");
    let (code, out, err) = hook(&sandbox, "claude-code", &bash.to_string());
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(err.contains("not valid JSONC"), "{err}");
}

#[test]
fn decisions_are_audited_with_the_agent_that_asked() {
    let sandbox = sandbox();
    let bash = fixture(&sandbox, "claude-code", "pre_tool_use_bash");
    let (code, _, err) = hook(
        &sandbox,
        "claude-code",
        &with_command(bash, "git status && rm -rf /").to_string(),
    );
    assert_eq!(code, 0, "{err}");
    let shell = fixture(&sandbox, "gemini", "before_tool_shell");
    hook(&sandbox, "gemini", &shell.to_string());
    let audit = std::fs::read_to_string(sandbox.data_dir().join("audit.jsonl")).unwrap();
    let entries: Vec<Value> = audit.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let claude: Vec<&Value> = entries
        .iter()
        .filter(|e| e["via"] == "claude-code" && e["action"] == "bash")
        .collect();
    assert_eq!(claude.len(), 1, "{audit}");
    assert_eq!(claude[0]["kind"], "decision");
    assert_eq!(claude[0]["tool"], "Bash");
    assert_eq!(claude[0]["session"], "abc123");
    assert_eq!(claude[0]["call"], "toolu_01ABC123");
    assert_eq!(claude[0]["effect"], "deny");
    assert_eq!(claude[0]["rule"]["resource"], "rm *");
    assert_eq!(claude[0]["source"]["kind"], "hook", "{}", claude[0]);
    // toolgate's own calls name no other agent.
    sandbox.run(&["call", "bash", r#"{"command": "git status"}"#]);
    let audit = std::fs::read_to_string(sandbox.data_dir().join("audit.jsonl")).unwrap();
    let last: Value = serde_json::from_str(audit.lines().rev().find(|l| l.contains("\"decision\"")).unwrap()).unwrap();
    assert!(last.get("via").is_none(), "{last}");
    let gemini: Vec<&Value> = entries
        .iter()
        .filter(|e| e["via"] == "gemini" && e["action"] == "bash")
        .collect();
    assert_eq!(gemini.len(), 1, "{audit}");
    assert_eq!(gemini[0]["effect"], "allow");
    assert_eq!(gemini[0]["tool"], "run_shell_command");
}

#[test]
fn saved_approvals_answer_the_hook() {
    let sandbox = sandbox();
    let bash = fixture(&sandbox, "claude-code", "pre_tool_use_bash");
    let (_, out, _) = answer(&sandbox, "claude-code", &with_command(bash.clone(), "echo hello"));
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "ask", "{out}");
    // "Always" at toolgate's own prompt saves `echo *` for the project.
    let mut command = sandbox.command(&["call", "bash", r#"{"command": "echo first"}"#]);
    command.env("NO_COLOR", "1");
    let mut session = e2e::pty::Session::spawn(command).unwrap();
    session.expect("answer [o/s/a/r]:", Duration::from_secs(20)).unwrap();
    session.send("a\r").unwrap();
    let (code, screen) = session.finish(Duration::from_secs(20)).unwrap();
    assert_eq!(code, 0, "{screen}");
    let (_, out, _) = answer(&sandbox, "claude-code", &with_command(bash.clone(), "echo hello"));
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "allow", "{out}");
    assert!(
        out["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains("saved approval"),
        "{out}"
    );
    // A saved approval never turns a deny into allow.
    let (_, out, _) = answer(
        &sandbox,
        "claude-code",
        &with_command(bash.clone(), "echo hello && rm x"),
    );
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny", "{out}");
    let (code, _, _) = sandbox.run(&["approvals", "clear"]);
    assert_eq!(code, 0);
    let (_, out, _) = answer(&sandbox, "claude-code", &with_command(bash, "echo hello"));
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "ask", "{out}");
}

#[test]
fn check_exit_code_gives_the_effect() {
    let sandbox = sandbox();
    for (command, expected) in [("git status", 0), ("git status && rm -rf /", 3), ("cargo build", 4)] {
        let (code, out, err) = sandbox.run(&["check", "bash", command, "--exit-code"]);
        assert_eq!(code, expected, "{command}: {out}{err}");
        assert!(
            out.starts_with("bash: "),
            "the report is printed as without the flag: {out}"
        );
        assert!(err.is_empty(), "{err}");
    }
    let (code, out, _) = sandbox.run(&["check", "read", ".env", "--exit-code", "--json"]);
    assert_eq!(code, 3);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["effect"], "deny");
    // Without the flag the exit code is 0 whatever the effect.
    let (code, _, _) = sandbox.run(&["check", "read", ".env"]);
    assert_eq!(code, 0);
    let (_, out, _) = sandbox.run(&["check", "--help"]);
    assert!(out.contains("--exit-code") && out.contains("3 deny, 4 ask"), "{out}");
}

/// With the project pinned (`--dir "$CLAUDE_PROJECT_DIR"`) and the agent's shell in a
/// subdirectory, a line's relative paths are read from the payload's `cwd`, where the
/// agent's shell reads them: `cat hidden.txt` in `sub/` is a read of `sub/hidden.txt`.
#[test]
fn a_shell_line_is_read_from_the_payloads_cwd_when_the_project_is_pinned() {
    let sandbox = Sandbox::new();
    sandbox.write("project/sub/hidden.txt", "x");
    sandbox.write("project/hidden.txt", "y");
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": "allow", "read": {"*": "allow", "sub/hidden.txt": "deny"}}}"#,
    );
    let mut payload = fixture(&sandbox, "claude-code", "pre_tool_use_bash");
    payload["cwd"] = json!(sandbox.project().join("sub"));
    let decide = |command: &str| {
        let payload = with_command(payload.clone(), command);
        let project = sandbox.project();
        let mut child = sandbox
            .command(&["hook", "claude-code", "--dir", project.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.to_string().as_bytes())
            .unwrap();
        let output = child.wait_with_output().unwrap();
        let out: Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|error| panic!("{error}: {}", String::from_utf8_lossy(&output.stderr)));
        out["hookSpecificOutput"]["permissionDecision"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(decide("cat hidden.txt"), "deny");
    assert_eq!(decide("cat ../hidden.txt"), "allow");
}
