//! Every front end applies the same checks (they all settle calls through the one gate).
//! One configuration spread over every kind of layer — a global string, a project list with an absolute-path deny,
//! and a `$TOOLGATE_PERMISSION` object — is enforced alike by `toolgate call`,
//! `toolgate serve` (HTTP) and `toolgate mcp` (stdio): the denied write and read are
//! refused with nothing written or revealed, the allowed write lands. And a
//! `$TOOLGATE_PERMISSION` that cannot be read refuses to start rather than dropping its
//! rules.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

use e2e::Sandbox;
use serde_json::{Value, json};

const ENV_RULES: &str = r#"{"read": {"*.pem": "deny"}}"#;

/// The layers: global `"allow"` (a string), the project's list with an absolute-path
/// deny, and `$TOOLGATE_PERMISSION` (set on each command).
fn configure(sandbox: &Sandbox) -> std::path::PathBuf {
    let project = std::fs::canonicalize(sandbox.project()).unwrap();
    sandbox.write("config/toolgate.json", r#"{"permission": "allow"}"#);
    let list = json!({"permission": [
        {"action": "edit", "resource": format!("{}/secret/*", project.display()), "effect": "deny"},
        {"action": "bash", "resource": "*", "effect": "deny"},
    ]});
    sandbox.write("project/toolgate.json", &list.to_string());
    sandbox.write("project/key.pem", "PRIVATE KEY MATERIAL\n");
    std::fs::create_dir_all(project.join("secret")).unwrap();
    project
}

fn command(sandbox: &Sandbox, args: &[&str]) -> std::process::Command {
    let mut command = sandbox.command(args);
    command.env("TOOLGATE_PERMISSION", ENV_RULES);
    command
}

/// The calls every front end makes, and whether each must be refused.
fn calls() -> Vec<(&'static str, Value, bool)> {
    vec![
        ("write", json!({"path": "secret/key", "content": "leak"}), true),
        (
            "write",
            json!({"path": "./secret/../secret/key2", "content": "leak"}),
            true,
        ),
        ("read", json!({"path": "key.pem"}), true),
        ("bash", json!({"command": "echo hi"}), true),
        ("write", json!({"path": "notes.txt", "content": "fine"}), false),
    ]
}

/// What must hold after the calls, whichever front end made them.
fn assert_outcome(project: &std::path::Path, front: &str, outputs: &[String]) {
    assert!(!project.join("secret/key").exists(), "{front}: the denied write landed");
    assert!(
        !project.join("secret/key2").exists(),
        "{front}: the denied write landed"
    );
    for output in outputs {
        assert!(
            !output.contains("PRIVATE KEY"),
            "{front}: the denied read revealed: {output}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(project.join("notes.txt")).unwrap(),
        "fine",
        "{front}: the allowed write"
    );
}

#[test]
fn call_applies_every_layer() {
    let sandbox = Sandbox::new();
    let project = configure(&sandbox);
    let mut outputs = Vec::new();
    for (tool, input, refused) in calls() {
        let output = command(&sandbox, &["call", tool, &input.to_string()]).output().unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
        let code = output.status.code();
        if refused {
            // bash is wholly denied, so not offered at all (exit 2, unknown tool).
            assert!(
                code == Some(3) || (tool == "bash" && code == Some(2)),
                "{tool} {input}: {code:?} {text}"
            );
        } else {
            assert_eq!(code, Some(0), "{tool} {input}: {text}");
        }
        outputs.push(text);
    }
    assert_outcome(&project, "call", &outputs);
}

#[tokio::test]
async fn serve_applies_every_layer() {
    let sandbox = Sandbox::new();
    let project = configure(&sandbox);
    let mut command = command(&sandbox, &["serve", "--listen", "127.0.0.1:0"]);
    command
        .env("TOOLGATE_SERVER_TOKEN", e2e::SERVER_TOKEN)
        .stdout(Stdio::piped());
    let served = e2e::Served::start(command);
    let base = served.base.clone();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let mut outputs = Vec::new();
    for (tool, input, refused) in calls() {
        let response = client
            .post(format!("{base}/session/s/call"))
            .bearer_auth(e2e::SERVER_TOKEN)
            .body(json!({"tool": tool, "input": input}).to_string())
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        if refused {
            let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let is_error = body["result"]["type"] == "error";
            assert!(
                is_error || (tool == "bash" && status >= 400),
                "{tool} {input}: {status} {text}"
            );
        } else {
            assert_eq!(status, 200, "{text}");
            assert_eq!(
                serde_json::from_str::<Value>(&text).unwrap()["result"]["type"],
                "text",
                "{text}"
            );
        }
        outputs.push(text);
    }
    drop(served);
    assert_outcome(&project, "serve", &outputs);
}

struct Stdio2 {
    input: std::process::ChildStdin,
    output: BufReader<std::process::ChildStdout>,
}

impl Stdio2 {
    fn send(&mut self, message: Value) {
        writeln!(self.input, "{message}").unwrap();
        self.input.flush().unwrap();
    }

    /// The response to request `id` (no elicitation is offered, so none comes).
    fn response(&mut self, id: u64) -> Value {
        loop {
            let mut line = String::new();
            assert!(
                self.output.read_line(&mut line).unwrap() > 0,
                "the server closed stdout"
            );
            let reply: Value = serde_json::from_str(&line).unwrap();
            if reply["id"] == id && reply.get("method").is_none() {
                return reply;
            }
        }
    }
}

#[test]
fn mcp_applies_every_layer() {
    let sandbox = Sandbox::new();
    let project = configure(&sandbox);
    let mut command = command(&sandbox, &["mcp"]);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = command.spawn().unwrap();
    let mut pipes = Stdio2 {
        input: child.stdin.take().unwrap(),
        output: BufReader::new(child.stdout.take().unwrap()),
    };
    pipes.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}));
    let init = pipes.response(1);
    assert!(init["result"]["capabilities"]["tools"].is_object(), "{init}");
    pipes.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut outputs = Vec::new();
    for (n, (tool, arguments, refused)) in calls().into_iter().enumerate() {
        let id = 10 + n as u64;
        pipes.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}),
        );
        let reply = pipes.response(id);
        let failed = reply["result"]["isError"] == true || reply.get("error").is_some();
        assert_eq!(failed, refused, "{tool} {arguments}: {reply}");
        outputs.push(reply.to_string());
    }
    drop(pipes);
    let _ = child.kill();
    let _ = child.wait();
    assert_outcome(&project, "mcp", &outputs);
}

#[test]
fn an_unreadable_toolgate_permission_refuses_to_start() {
    use std::os::unix::ffi::OsStrExt;
    let sandbox = Sandbox::new();
    sandbox.write("project/a.txt", "alpha\n");
    // A deny that must not be dropped: invalid UTF-8 after it.
    let mut bytes = br#"{"read": "deny"}"#.to_vec();
    bytes.push(0xff);
    let value = std::ffi::OsStr::from_bytes(&bytes);
    let mut call = sandbox.command(&["call", "read", r#"{"path": "a.txt"}"#]);
    call.env("TOOLGATE_PERMISSION", value);
    let output = call.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stdout}{stderr}");
    assert!(!stdout.contains("alpha"), "{stdout}");
    assert_eq!(stderr.trim(), "toolgate: $TOOLGATE_PERMISSION is not valid UTF-8");
    // Precondition: without it, the read works.
    let (code, out, err) = sandbox.run(&["call", "read", r#"{"path": "a.txt"}"#]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("alpha"));
}
