//! Secrets never reach the model: the output boundary redacts the values toolgate knows
//! (variables `shell_env` holds back, `{env:…}` in MCP entries, the server token) and
//! well-known credential formats, in every tool's output (bash's, an MCP server's, a
//! failure's), through `call`, `serve` and `mcp`; the audit names kinds and counts only.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::Stdio;

use e2e::Sandbox;
use serde_json::{Value, json};

const AWS_ID: &str = "AKIAIOSFODNN7EXAMPLE";
const AWS_SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const GITHUB: &str = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
/// Passed to the MCP server as `{env:E2E_MCP_VALUE}` in its entry.
const MCP_SECRET: &str = "mcp-config-secret-4f1c9a";
/// A variable the default `shell_env.exclude` (`*_KEY`) holds back.
const USER_KEY: &str = "user-held-back-key-77aa31";

/// Every value that must never be seen, with the marker that replaces it.
fn secrets() -> Vec<(&'static str, &'static str)> {
    vec![
        (AWS_ID, "[REDACTED:aws-access-key-id]"),
        (AWS_SECRET, "[REDACTED:aws-secret-access-key]"),
        (GITHUB, "[REDACTED:github-token]"),
        (e2e::SERVER_TOKEN, "[REDACTED:server-token]"),
        (MCP_SECRET, "[REDACTED:mcp-config]"),
        (USER_KEY, "[REDACTED:env:E2E_USER_KEY]"),
    ]
}

/// What a leaking tool prints: each secret on a line of its own.
fn leak_text() -> String {
    format!(
        "id {AWS_ID}\naws_secret_access_key = {AWS_SECRET}\n{GITHUB}\ntoken {}\nmcp {MCP_SECRET}\nkey {USER_KEY}\n",
        e2e::SERVER_TOKEN
    )
}

fn server_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/mcp_server.py")
}

/// A project with every rule allowing, a Python SDK server whose entry holds a
/// `{env:…}` secret, and a file that leaks everything; `extra` merged at the top.
fn project(sandbox: &Sandbox, extra: Value) {
    let mut config = json!({
        "permission": "allow",
        "mcp": {"py": {
            "type": "local",
            "command": [e2e::python_with_mcp(), server_script(), "stdio"],
            "environment": {"UPSTREAM_TOKEN": "{env:E2E_MCP_VALUE}"},
            "timeout": 30000,
        }},
    });
    if let (Some(map), Value::Object(extra)) = (config.as_object_mut(), extra) {
        map.extend(extra);
    }
    sandbox.write("project/toolgate.json", &config.to_string());
    sandbox.write("project/leak.txt", &leak_text());
    sandbox.trust();
}

fn command(sandbox: &Sandbox, args: &[&str]) -> std::process::Command {
    let mut command = sandbox.command(args);
    command
        .env("E2E_MCP_VALUE", MCP_SECRET)
        .env("E2E_USER_KEY", USER_KEY)
        .env("TOOLGATE_SERVER_TOKEN", e2e::SERVER_TOKEN);
    command
}

/// Asserts that no secret is in `seen` and every marker is.
fn assert_redacted(seen: &str, what: &str) {
    for (secret, marker) in secrets() {
        assert!(!seen.contains(secret), "{what}: {secret} reached the model: {seen}");
        assert!(seen.contains(marker), "{what}: no {marker} in {seen}");
    }
}

/// The audit log holds no secret, and its `settled` record of `tool` names what was
/// redacted with counts.
fn assert_audited(sandbox: &Sandbox, tool: &str) {
    // A running server writes its records from its own writer thread, a moment after it
    // answers: the record is waited for.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let (audit, record) = loop {
        let audit = std::fs::read_to_string(sandbox.data_dir().join("audit.jsonl")).unwrap_or_default();
        let record = audit
            .lines()
            .rev()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|record| record["kind"] == "settled" && record["tool"] == tool);
        match record {
            Some(record) => break (audit, record),
            None if std::time::Instant::now() < deadline => std::thread::sleep(std::time::Duration::from_millis(10)),
            None => panic!("no settled record of {tool}: {audit}"),
        }
    };
    for (secret, _) in secrets() {
        assert!(!audit.contains(secret), "the audit log holds {secret}");
    }
    let redacted = record["redacted"].as_array().unwrap_or_else(|| panic!("{record}"));
    let kinds: Vec<&str> = redacted.iter().filter_map(|r| r["kind"].as_str()).collect();
    for kind in [
        "aws-access-key-id",
        "aws-secret-access-key",
        "github-token",
        "server-token",
        "mcp-config",
        "env:E2E_USER_KEY",
    ] {
        assert!(kinds.contains(&kind), "{tool}: {kind} not in {record}");
    }
    assert!(redacted.iter().all(|r| r["count"].as_u64() >= Some(1)), "{record}");
}

fn call(sandbox: &Sandbox, tool: &str, input: Value) -> (i32, String, String) {
    let output = command(sandbox, &["call", tool, &input.to_string(), "--json"])
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn call_redacts_bash_read_an_mcp_servers_output_and_a_failure() {
    let sandbox = Sandbox::new();
    project(&sandbox, json!({}));
    for (tool, input) in [
        ("bash", json!({"command": "cat leak.txt"})),
        ("read", json!({"path": "leak.txt"})),
        ("py_echo", json!({"text": leak_text()})),
    ] {
        let (code, out, err) = call(&sandbox, tool, input);
        assert_eq!(code, 0, "{tool}: {err}");
        assert_redacted(&out, tool);
        assert_audited(&sandbox, tool);
    }
    // A failure's message reaches the model too.
    let (code, out, err) = call(&sandbox, "py_fail", json!({"message": leak_text()}));
    assert_eq!(code, 1, "{out}");
    assert_redacted(&format!("{out}{err}"), "py_fail");
    assert_audited(&sandbox, "py_fail");
    // A large output is spilled redacted: the model may read the spill file.
    let (code, out, err) = call(
        &sandbox,
        "bash",
        json!({"command": "for i in $(seq 3000); do cat leak.txt; done"}),
    );
    assert_eq!(code, 0, "{err}");
    let called: Value = serde_json::from_str(&out).unwrap();
    let spill = called["outputPaths"][0]
        .as_str()
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("not spilled: {called}"));
    let full = std::fs::read_to_string(spill).unwrap();
    assert_redacted(&full, "the spill file");
}

#[test]
fn credential_formats_can_be_switched_off_but_known_values_never_are() {
    let sandbox = Sandbox::new();
    project(&sandbox, json!({"redaction": {"credential_formats": false}}));
    let (code, out, err) = call(&sandbox, "bash", json!({"command": "cat leak.txt"}));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(AWS_ID) && out.contains(GITHUB), "{out}");
    for (secret, marker) in [
        (e2e::SERVER_TOKEN, "[REDACTED:server-token]"),
        (MCP_SECRET, "[REDACTED:mcp-config]"),
        (USER_KEY, "[REDACTED:env:E2E_USER_KEY]"),
    ] {
        assert!(!out.contains(secret) && out.contains(marker), "{out}");
    }
}

#[test]
fn an_untrusted_project_file_cannot_switch_credential_formats_off() {
    let sandbox = Sandbox::new();
    project(&sandbox, json!({}));
    // Edited after trust: the switch is withheld until the file is trusted again.
    sandbox.write(
        "project/toolgate.json",
        &json!({"permission": "allow", "redaction": {"credential_formats": false}}).to_string(),
    );
    let (code, out, err) = call(&sandbox, "bash", json!({"command": "cat leak.txt"}));
    assert_eq!(code, 0, "{err}");
    assert!(
        !out.contains(AWS_ID) && out.contains("[REDACTED:aws-access-key-id]"),
        "{out}"
    );
}

#[tokio::test]
async fn serve_redacts_its_own_token_and_credentials_over_http() {
    let sandbox = Sandbox::new();
    project(&sandbox, json!({}));
    let mut served = command(&sandbox, &["serve", "--listen", "127.0.0.1:0"]);
    served.stdout(Stdio::piped());
    let served = e2e::Served::start(served);
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    for (tool, input) in [
        ("bash", json!({"command": "cat leak.txt"})),
        ("py_echo", json!({"text": leak_text()})),
    ] {
        let response = client
            .post(format!("{}/session/ses_redact/call", served.base))
            .bearer_auth(e2e::SERVER_TOKEN)
            .body(json!({"tool": tool, "input": input}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        let body = response.text().await.unwrap();
        assert_redacted(&body, tool);
        assert_audited(&sandbox, tool);
    }
}

#[test]
fn mcp_redacts_bash_and_an_upstream_servers_output() {
    let sandbox = Sandbox::new();
    project(&sandbox, json!({}));
    let mut child = command(&sandbox, &["mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let (sender, lines) = std::sync::mpsc::channel();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let mut send = |message: Value| {
        writeln!(input, "{message}").unwrap();
        input.flush().unwrap();
    };
    let response = |id: u64| loop {
        let line = lines
            .recv_timeout(std::time::Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("no answer to {id}: {e}"));
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == id && message.get("method").is_none() {
            return message;
        }
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}));
    response(1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for (id, tool, arguments) in [
        (2, "bash", json!({"command": "cat leak.txt"})),
        (3, "py_echo", json!({"text": leak_text()})),
    ] {
        send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}),
        );
        let answer = response(id);
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        assert_redacted(&answer.to_string(), tool);
        assert_audited(&sandbox, tool);
    }
    let _ = child.kill();
    let _ = child.wait();
}
