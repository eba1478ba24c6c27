//! `toolgate mcp` with real clients: the official MCP Python SDK, and raw JSON-RPC over
//! the same stdio pipes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use e2e::Sandbox;
use serde_json::{Value, json};

fn project(sandbox: &Sandbox) {
    sandbox.write("project/hello.txt", "hello world\n");
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"edit": "ask", "bash": {"*": "ask", "rm *": "deny"}}}"#,
    );
}

#[test]
fn the_official_python_sdk_lists_reads_edits_with_elicitation_and_is_refused() {
    let sandbox = Sandbox::new();
    project(&sandbox);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/mcp_client.py");
    let output = Command::new(e2e::python_with_mcp())
        .arg(script)
        .arg(e2e::toolgate_binary())
        .arg(sandbox.project())
        .env("TOOLGATE_DATA_DIR", sandbox.data_dir())
        .env("TOOLGATE_CONFIG_DIR", sandbox.config_dir())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"read") && tools.contains(&"edit") && tools.contains(&"bash"),
        "{tools:?}"
    );
    assert_eq!(seen["read_error"], false);
    assert!(seen["read"][0].as_str().unwrap().contains("1: hello world"), "{seen}");
    assert_eq!(seen["edit_error"], false, "{seen}");
    assert!(
        seen["edit"][0]
            .as_str()
            .unwrap()
            .starts_with("Edited file successfully: hello.txt"),
        "{seen}"
    );
    let asked = seen["asked"][0].as_str().unwrap();
    assert!(asked.contains("allow edit?") && asked.contains("hello.txt"), "{asked}");
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join("hello.txt")).unwrap(),
        "goodbye world\n"
    );
    assert_eq!(seen["denied_error"], true);
    assert_eq!(seen["denied"][0], "Permission denied: bash");
}

struct Pipes {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: BufReader<std::process::ChildStdout>,
}

impl Pipes {
    /// `toolgate mcp` in `sandbox`, initialized with the client `capabilities`.
    fn start(sandbox: &Sandbox, capabilities: Value) -> Pipes {
        let mut command = sandbox.command(&["mcp"]);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command.spawn().unwrap();
        let mut pipes = Pipes {
            input: child.stdin.take().unwrap(),
            output: BufReader::new(child.stdout.take().unwrap()),
            child,
        };
        pipes.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": capabilities, "clientInfo": {"name": "raw", "version": "1"}}}));
        let initialized = pipes.response(1, "once");
        assert!(
            initialized["result"]["capabilities"]["tools"].is_object(),
            "{initialized}"
        );
        pipes.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        pipes
    }

    fn send(&mut self, message: Value) {
        writeln!(self.input, "{message}").unwrap();
        self.input.flush().unwrap();
    }

    fn receive(&mut self) -> Value {
        let mut line = String::new();
        assert!(
            self.output.read_line(&mut line).unwrap() > 0,
            "the server closed stdout"
        );
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON-RPC on stdout ({e}): {line}"))
    }

    /// The response to request `id`, answering any elicitation on the way with `decision`.
    fn response(&mut self, id: u64, decision: &str) -> Value {
        loop {
            let message = self.receive();
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
            if message["method"] == "elicitation/create" {
                let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {"action": "accept", "content": {"decision": decision}}});
                self.send(answer);
            }
        }
    }
}

#[test]
fn raw_json_rpc_over_stdio() {
    let sandbox = Sandbox::new();
    project(&sandbox);
    let mut pipes = Pipes::start(&sandbox, json!({"elicitation": {}}));
    pipes.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let listed = pipes.response(2, "once");
    let read = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "read")
        .unwrap()
        .clone();
    assert_eq!(read["inputSchema"]["required"], json!(["path"]));
    pipes.send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "edit",
        "arguments": {"path": "hello.txt", "oldString": "world", "newString": "there"}}}),
    );
    let rejected = pipes.response(3, "reject");
    assert_eq!(rejected["result"]["isError"], true, "{rejected}");
    assert_eq!(rejected["result"]["content"][0]["text"], "Unable to edit hello.txt");
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join("hello.txt")).unwrap(),
        "hello world\n"
    );
    pipes.send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "edit",
        "arguments": {"path": "hello.txt", "oldString": "world", "newString": "there"}}}),
    );
    let approved = pipes.response(4, "always");
    assert_eq!(approved["result"]["isError"], false, "{approved}");
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join("hello.txt")).unwrap(),
        "hello there\n"
    );
    drop(pipes.input);
    let status = pipes.child.wait().unwrap();
    assert!(status.success(), "the server exits cleanly when stdin closes");
}

#[test]
fn without_elicitation_asks_are_declined() {
    let sandbox = Sandbox::new();
    project(&sandbox);
    let mut pipes = Pipes::start(&sandbox, json!({}));
    pipes.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "bash", "arguments": {"command": "echo hi"}}}));
    let declined = pipes.response(2, "once");
    assert_eq!(declined["result"]["isError"], true);
    assert!(
        declined["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("declined (the MCP client cannot ask the user"),
        "{declined}"
    );
    drop(pipes.input);
    let _ = pipes.child.wait();
}

#[test]
fn mcp_asks_doom_loop_on_repeated_calls() {
    let sandbox = Sandbox::new();
    sandbox.write("project/hello.txt", "hello world\n");
    sandbox.write(
        "project/toolgate.json",
        r#"{"doom_loop_threshold": 3, "permission": {"doom_loop": "deny"}}"#,
    );
    let mut pipes = Pipes::start(&sandbox, json!({}));
    let call = |pipes: &mut Pipes, id: u64, arguments: Value| {
        pipes.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "read", "arguments": arguments}}));
        pipes.response(id, "once")
    };
    let same = json!({"path": "hello.txt", "limit": 5});
    assert_eq!(call(&mut pipes, 2, same.clone())["result"]["isError"], false);
    assert_eq!(call(&mut pipes, 3, same.clone())["result"]["isError"], false);
    let third = call(&mut pipes, 4, same.clone());
    assert_eq!(third["result"]["isError"], true, "{third}");
    assert_eq!(third["result"]["content"][0]["text"], "Permission denied: doom_loop");
    // The same values in another key order are another call.
    let swapped = call(&mut pipes, 5, json!({"limit": 5, "path": "hello.txt"}));
    assert_eq!(swapped["result"]["isError"], false, "{swapped}");
    drop(pipes.input);
    let _ = pipes.child.wait();
}
