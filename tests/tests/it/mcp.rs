//! `toolgate mcp` with real clients: the official MCP Python SDK, and raw JSON-RPC over
//! the same stdio pipes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use e2e::Sandbox;
use serde_json::{Value, json};

pub(crate) fn project(sandbox: &Sandbox) {
    sandbox.write("project/hello.txt", "hello world\n");
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"edit": "ask", "bash": {"*": "ask", "rm *": "deny"}}}"#,
    );
}

/// Runs `tests/python/mcp_client.py ARGS` and returns what it saw.
pub(crate) fn python_client(sandbox: &Sandbox, args: &[&str]) -> Value {
    python_client_with(sandbox, args, &[])
}

/// [`python_client`] with more environment for the client and the server it starts.
pub(crate) fn python_client_with(sandbox: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/mcp_client.py");
    let output = Command::new(e2e::python_with_mcp())
        .arg(script)
        .args(args)
        .env("TOOLGATE_DATA_DIR", sandbox.data_dir())
        .env("TOOLGATE_CONFIG_DIR", sandbox.config_dir())
        .env("NO_PROXY", "*")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap()
}

/// What the Python SDK client saw: tools listed, a read, an edit approved through the
/// permission form, two questions answered through one form each (spec §8.3), and a
/// denied command.
pub(crate) fn check_python_session(sandbox: &Sandbox, seen: &Value) {
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"read") && tools.contains(&"edit") && tools.contains(&"bash") && tools.contains(&"question"),
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
    // One form per question: options as an enum, several as an array of the enum.
    let forms = seen["forms"].as_array().unwrap();
    assert_eq!(forms.len(), 2, "{seen}");
    assert!(
        forms[0]["message"].as_str().unwrap().contains("Which colour?"),
        "{seen}"
    );
    assert_eq!(forms[0]["schema"]["properties"]["answer"]["type"], "string");
    assert_eq!(
        forms[0]["schema"]["properties"]["answer"]["enum"],
        json!(["Blue", "Red"])
    );
    assert_eq!(forms[1]["schema"]["properties"]["answer"]["type"], "array");
    assert_eq!(
        forms[1]["schema"]["properties"]["answer"]["items"]["enum"],
        json!(["Rust", "Go", "C"])
    );
    assert_eq!(seen["question_error"], false, "{seen}");
    assert_eq!(
        seen["question"][0],
        "User has answered your questions: \"Which colour?\"=\"Blue, and tea\", \"Which languages?\"=\"Rust, Go, and tea\". You can now continue with the user's answers in mind."
    );
    // Structured output, checked by the SDK against the listed schema.
    assert_eq!(seen["echoed_error"], false, "{seen}");
    assert_eq!(seen["echoed_structured"]["exit"], 0, "{seen}");
    assert_eq!(seen["read_structured"]["kind"], "file", "{seen}");
    assert_eq!(seen["read_structured"]["start"], 1, "{seen}");
    assert!(seen["read_structured"].get("next").is_none(), "no nulls: {seen}");
    // Titles and hints from the tools themselves.
    let described = &seen["described"];
    let hint = |tool: &str, name: &str| described[tool]["annotations"][name].clone();
    for tool in ["read", "glob", "grep"] {
        assert_eq!(hint(tool, "readOnlyHint"), true, "{tool}: {seen}");
    }
    for tool in ["write", "edit", "apply_patch", "bash"] {
        assert_eq!(hint(tool, "readOnlyHint"), false, "{tool}: {seen}");
        assert_eq!(hint(tool, "destructiveHint"), true, "{tool}: {seen}");
    }
    for tool in ["webfetch", "websearch"] {
        assert_eq!(hint(tool, "openWorldHint"), true, "{tool}: {seen}");
    }
    assert_eq!(described["bash"]["title"], "Run a shell command", "{seen}");
    assert_eq!(
        described["read"]["outputSchema"]["properties"]["kind"]["type"], "string",
        "{seen}"
    );
    assert_eq!(seen["denied_error"], true);
    let denied = seen["denied"][0].as_str().unwrap();
    assert!(
        denied.starts_with("Permission denied: bash \"") && denied.contains(" by rule bash "),
        "{denied}"
    );
}

#[test]
fn the_official_python_sdk_over_stdio_lists_reads_edits_asks_questions_and_is_refused() {
    let sandbox = Sandbox::new();
    project(&sandbox);
    let binary = e2e::toolgate_binary();
    let project = sandbox.project();
    let seen = python_client(
        &sandbox,
        &["stdio", binary.to_str().unwrap(), project.to_str().unwrap()],
    );
    check_python_session(&sandbox, &seen);
}

#[test]
fn the_official_python_sdk_over_streamable_http_does_the_same_at_mcp() {
    let sandbox = Sandbox::new();
    project(&sandbox);
    let served = sandbox.serve(&[]);
    let url = format!("{}/mcp", served.base);
    let seen = python_client(&sandbox, &["http", &url, e2e::SERVER_TOKEN]);
    check_python_session(&sandbox, &seen);
}

/// Runs `tests/python/mcp_modern.py ARGS` (the Python SDK's `Client` at a chosen version).
fn modern_client(sandbox: &Sandbox, args: &[&str]) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/mcp_modern.py");
    let output = Command::new(e2e::python_with_mcp())
        .arg(script)
        .args(args)
        .env("TOOLGATE_DATA_DIR", sandbox.data_dir())
        .env("TOOLGATE_CONFIG_DIR", sandbox.config_dir())
        .env_remove("TOOLGATE_PERMISSION")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "mcp_modern.py {args:?}: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// What a client that cannot show forms sees, at any version: the file read, the edit
/// the rules ask for declined (`toolgate mcp`) or left to the person (`serve`), the
/// denied command refused by its rule.
fn check_modern_session(seen: &Value, protocol: &str) {
    assert_eq!(seen["protocol"], protocol, "{seen}");
    let tools: Vec<&str> = seen["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(tools.contains(&"read") && tools.contains(&"bash"), "{tools:?}");
    // No forms at 2026-07-28 (no server-to-client requests): `question` is not offered.
    assert!(!tools.contains(&"question"), "{tools:?}");
    assert_eq!(seen["read_error"], false, "{seen}");
    assert!(seen["read"][0].as_str().unwrap().contains("1: hello world"), "{seen}");
    assert_eq!(seen["denied_error"], true, "{seen}");
    assert!(
        seen["denied"][0].as_str().unwrap().contains("by rule bash \"rm *\""),
        "{seen}"
    );
}

#[test]
fn a_2026_07_28_python_client_and_a_handshake_one_both_work_over_stdio() {
    let binary = e2e::toolgate_binary();
    for (mode, protocol) in [
        ("2026-07-28", "2026-07-28"),
        ("auto", "2026-07-28"),
        ("legacy", "2025-11-25"),
    ] {
        let sandbox = Sandbox::new();
        project(&sandbox);
        let project = sandbox.project();
        let seen = modern_client(
            &sandbox,
            &["stdio", mode, binary.to_str().unwrap(), project.to_str().unwrap()],
        );
        check_modern_session(&seen, protocol);
        // Over stdio no one else can answer: the ask is declined, the file unchanged.
        assert_eq!(seen["edit_error"], true, "{mode}: {seen}");
        assert!(seen["edit"][0].as_str().unwrap().contains("declined"), "{mode}: {seen}");
        assert_eq!(
            std::fs::read_to_string(sandbox.project().join("hello.txt")).unwrap(),
            "hello world\n"
        );
    }
}

#[test]
fn a_2026_07_28_python_client_works_over_streamable_http() {
    let sandbox = Sandbox::new();
    project(&sandbox);
    // The edit is allowed here: a stateless request has no session to wait in while a
    // person answers elsewhere, and this test is about the wire.
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"edit": "allow", "bash": {"*": "ask", "rm *": "deny"}}}"#,
    );
    let served = sandbox.serve(&[]);
    let url = format!("{}/mcp", served.base);
    let seen = modern_client(&sandbox, &["http", "2026-07-28", &url, e2e::SERVER_TOKEN]);
    check_modern_session(&seen, "2026-07-28");
    assert_eq!(seen["edit_error"], false, "{seen}");
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join("hello.txt")).unwrap(),
        "goodbye world\n"
    );
}

struct Pipes {
    child: std::process::Child,
    input: std::process::ChildStdin,
    /// stdout's lines, read by a thread so a missing answer fails the test after a
    /// deadline instead of hanging it.
    output: std::sync::mpsc::Receiver<String>,
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
            output: {
                let (sender, receiver) = std::sync::mpsc::channel();
                let stdout = BufReader::new(child.stdout.take().unwrap());
                std::thread::spawn(move || {
                    for line in stdout.lines() {
                        let Ok(line) = line else { break };
                        if sender.send(line).is_err() {
                            break;
                        }
                    }
                });
                receiver
            },
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
        let line = self
            .output
            .recv_timeout(std::time::Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("no line from the server within 30 s ({e})"));
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
fn without_elicitation_asks_are_declined_and_question_is_not_offered() {
    let sandbox = Sandbox::new();
    project(&sandbox);
    let mut pipes = Pipes::start(&sandbox, json!({}));
    // No forms, no questions: `question` is neither listed nor callable.
    pipes.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let listed = pipes.response(1, "once");
    let names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"read") && !names.contains(&"question"), "{names:?}");
    pipes.send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "question",
        "arguments": {"questions": [{"question": "?", "header": "h", "options": []}]}}}),
    );
    let refused = pipes.response(3, "once");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(refused["error"]["message"], "Unknown tool: question");
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
    let text = third["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with(r#"Permission denied: doom_loop "read" by rule doom_loop "#),
        "{text}"
    );
    // The same values in another key order are another call.
    let swapped = call(&mut pipes, 5, json!({"limit": 5, "path": "hello.txt"}));
    assert_eq!(swapped["result"]["isError"], false, "{swapped}");
    drop(pipes.input);
    let _ = pipes.child.wait();
}

impl Pipes {
    fn send_raw(&mut self, bytes: &[u8]) {
        self.input.write_all(bytes).unwrap();
        self.input.flush().unwrap();
    }
}

#[test]
fn malformed_lines_are_answered_with_json_rpc_errors_and_the_session_goes_on() {
    let sandbox = Sandbox::new();
    project(&sandbox);
    let mut pipes = Pipes::start(&sandbox, json!({}));
    pipes.send_raw(b"this is not json\n");
    let answer = pipes.receive();
    assert_eq!(answer["id"], Value::Null, "{answer}");
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    pipes.send_raw(br#"{"jsonrpc": "2.0", "id": 5, "method": "tools/list""#);
    pipes.send_raw(b"\n");
    assert_eq!(pipes.receive()["error"]["code"], -32700);
    // JSON, but not JSON-RPC: Invalid Request, with the id when there is one.
    pipes.send(json!({"jsonrpc": "2.0", "id": 6}));
    let answer = pipes.receive();
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (json!(6), json!(-32600)),
        "{answer}"
    );
    pipes.send(json!([1, 2, 3]));
    assert_eq!(pipes.receive()["error"]["code"], -32600);
    // Notifications and responses are never answered: the next line out answers the ping.
    pipes.send(json!({"jsonrpc": "2.0", "method": "notifications/whatever", "params": 7}));
    pipes.send(json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "echo"}}));
    pipes.send(json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}));
    let pong = pipes.receive();
    assert_eq!(
        (pong["id"].clone(), pong["result"].clone()),
        (json!(8), json!({})),
        "{pong}"
    );
    drop(pipes.input);
    assert!(pipes.child.wait().unwrap().success());
}

#[test]
fn an_oversized_message_is_answered_with_its_id_and_the_limit() {
    let sandbox = Sandbox::new();
    project(&sandbox);
    let mut pipes = Pipes::start(&sandbox, json!({}));
    let huge = "x".repeat(17 * 1024 * 1024);
    // Python clients put the id first, TypeScript clients last: both are found.
    let first = format!(
        r#"{{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{{"name":"read","arguments":{{"path":"{huge}"}}}}}}"#
    );
    let last = format!(
        r#"{{"method":"tools/call","params":{{"name":"read","arguments":{{"path":"{huge}"}}}},"jsonrpc":"2.0","id":"req-42"}}"#
    );
    for (line, id) in [(first, json!(41)), (last, json!("req-42"))] {
        // The server reads while it is written, and its answer fits the pipe.
        pipes.send_raw(line.as_bytes());
        pipes.send_raw(b"\n");
        let answer = pipes.receive();
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("16 MiB") && message.contains("17825"), "{message}");
    }
    // The session survives.
    pipes.send(json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}));
    assert_eq!(pipes.receive()["id"], 9);
    drop(pipes.input);
    assert!(pipes.child.wait().unwrap().success());
}

/// The server crate logs through `tracing`; the binary shows its events on stderr in its
/// own one-line style, and stdout stays the protocol's alone.
#[test]
fn a_library_warning_reaches_stderr_as_one_toolgate_line() {
    let sandbox = Sandbox::new();
    project(&sandbox);
    let mut command = sandbox.command(&["mcp"]);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    let huge = "x".repeat(17 * 1024 * 1024);
    let line = format!(r#"{{"jsonrpc":"2.0","id":7,"method":"ping","params":{{"pad":"{huge}"}}}}"#);
    let length = line.len();
    let writer = std::thread::spawn(move || {
        input.write_all(line.as_bytes()).unwrap();
        input.write_all(b"\n").unwrap();
    });
    writer.join().unwrap();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let warning: Vec<&str> = stderr.lines().filter(|line| line.contains("-byte message")).collect();
    assert_eq!(
        warning,
        [format!(
            "toolgate: refused a {length}-byte message (the limit is 16777216 bytes)"
        )],
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("\"id\":7") && !stdout.contains("refused a"), "{stdout}");
}

#[test]
fn the_elicitation_shows_the_file_diff_and_the_allowed_parts() {
    // Over MCP too (spec §4.4): the question a client shows carries the whole-file diff
    // (hunk line numbers, path header) and marks the bash parts a rule already allows.
    let sandbox = Sandbox::new();
    sandbox.write("project/hello.txt", "one\ntwo\nthree\nfour\nfive\nsix\n");
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"edit": "ask", "bash": {"*": "ask", "ls *": "allow"}}}"#,
    );
    let mut pipes = Pipes::start(&sandbox, json!({"elicitation": {}}));
    let asked = |pipes: &mut Pipes, id: u64, tool: &str, arguments: Value| -> (String, Value) {
        pipes.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}));
        let mut question = None;
        loop {
            let message = pipes.receive();
            if message["method"] == "elicitation/create" {
                question = Some(message["params"]["message"].as_str().unwrap().to_string());
                let answer = json!({"jsonrpc": "2.0", "id": message["id"], "result": {"action": "accept", "content": {"decision": "reject"}}});
                pipes.send(answer);
            } else if message["id"] == id {
                return (
                    question.unwrap_or_else(|| panic!("no elicitation before {message}")),
                    message,
                );
            }
        }
    };
    let (question, reply) = asked(
        &mut pipes,
        2,
        "edit",
        json!({"path": "hello.txt", "oldString": "five", "newString": "FIVE"}),
    );
    assert_eq!(reply["result"]["isError"], true, "rejected: {reply}");
    assert!(
        question.contains("--- hello.txt") && question.contains("+++ hello.txt"),
        "{question}"
    );
    assert!(question.contains("@@ -2,5 +2,5 @@"), "file line numbers: {question}");
    // The standard unified diff (line numbers in the hunk header), as in `metadata.diff`.
    assert!(question.contains("\n-five\n+FIVE\n"), "{question}");
    assert!(
        question.contains("\n two\n three\n four\n"),
        "three lines of context: {question}"
    );
    assert!(!question.contains("\n one\n"), "no more than three: {question}");
    let (question, _) = asked(&mut pipes, 3, "bash", json!({"command": "ls -la && touch made"}));
    assert!(question.contains("✓ ls -la (already allowed by a rule)"), "{question}");
    assert!(!question.contains("✓ touch made"), "{question}");
    assert!(question.contains("• touch made"), "{question}");
    assert!(
        question.contains("`always` saves for the project: touch *"),
        "only the asked part is saved: {question}"
    );
    assert!(!sandbox.project().join("made").exists());
    drop(pipes.input);
    let _ = pipes.child.wait();
}

/// Lines built to crash the analysis — 1,500 nested `$(` (which
/// overflowed a tokio worker's stack), 7,000 (the main thread's) and 80,000 commands in one
/// line (quadratic before) — sent over a real pipe to `toolgate mcp`: each is answered
/// (refused, or asked and rejected), none of it runs, and the server answers the next
/// request. A plain line approved afterwards does run (the marker the hostile lines would
/// have made is one this setup can make).
#[test]
fn lines_built_to_crash_the_bash_analysis_are_answered_and_the_server_goes_on() {
    let sandbox = Sandbox::new();
    project(&sandbox);
    let marker = sandbox.project().join("ran");
    let mut pipes = Pipes::start(&sandbox, json!({"elicitation": {}}));
    let nested = |depth: usize| format!("{}touch ran{}", "$(".repeat(depth), ")".repeat(depth));
    let many = "touch ran; ".repeat(80_000);
    let lines = [nested(1_500), nested(7_000), many];
    for (index, line) in lines.iter().enumerate() {
        let id = 10 + index as u64 * 2;
        pipes.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "bash",
            "arguments": {"command": line, "description": "hostile"}}}),
        );
        let answer = pipes.response(id, "reject");
        let shown = answer.to_string();
        let shown = &shown[..shown.len().min(600)];
        assert_eq!(answer["result"]["isError"], true, "line {index}: {shown}");
        assert!(
            pipes.child.try_wait().unwrap().is_none(),
            "line {index}: the server exited"
        );
        pipes.send(json!({"jsonrpc": "2.0", "id": id + 1, "method": "ping"}));
        let pong = pipes.response(id + 1, "reject");
        assert_eq!(pong["result"], json!({}), "line {index}: {pong}");
        assert!(!marker.exists(), "line {index} ran");
    }
    pipes.send(
        json!({"jsonrpc": "2.0", "id": 30, "method": "tools/call", "params": {"name": "bash",
        "arguments": {"command": "touch ran", "description": "plain"}}}),
    );
    let plain = pipes.response(30, "once");
    assert_eq!(plain["result"]["isError"], false, "{plain}");
    assert!(marker.exists(), "the approved plain line ran");
    drop(pipes.input);
    let status = pipes.child.wait().unwrap();
    assert!(status.success(), "the server exits cleanly when stdin closes");
}

/// The elicitation offers what the terminal prompt offers (spec §10.1: "always" for this
/// session or for the project), each naming the very patterns `toolgate check` shows as
/// "always would save"; "session" covers the next matching call of the session and saves
/// nothing, "always" saves for the project. An edit of a file that defines the rules is
/// offered once or reject only, and asked every time (README "Files that define the
/// rules"). Driven by the official Python SDK's client.
#[test]
fn the_elicitation_offers_once_session_always_with_checks_patterns_and_never_always_for_a_rule_file() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        // Edits are allowed: the rule file is asked all the same.
        r#"{"permission": {"edit": "allow", "bash": {"*": "ask"}}}"#,
    );
    let (code, out, err) = sandbox.run(&["check", "bash", "touch a.txt", "--json"]);
    assert_eq!(code, 0, "{err}");
    let predicted: Value = serde_json::from_str(&out).unwrap();
    let save: Vec<&str> = predicted["save"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(save, ["touch *"], "{out}");

    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/mcp_scopes.py");
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
    let forms = seen["forms"].as_array().unwrap();

    assert_eq!(
        forms[0]["choices"],
        json!(["once", "session", "always", "reject"]),
        "{seen}"
    );
    let message = forms[0]["message"].as_str().unwrap();
    let patterns = save.join(", ");
    assert!(
        message.contains(&format!("`session` allows for this session: {patterns}"))
            && message.contains(&format!("`always` saves for the project: {patterns}")),
        "{message}"
    );
    assert!(sandbox.project().join("a.txt").exists(), "{seen}");
    // The session's approval covers the next `touch`: no form.
    assert_eq!(
        (seen["forms_after_first"].as_u64(), seen["forms_after_second"].as_u64()),
        (Some(1), Some(1)),
        "{seen}"
    );
    assert!(sandbox.project().join("b.txt").exists(), "{seen}");

    // The rule file: once or reject, asked each time, nothing saved.
    for form in &forms[1..3] {
        assert_eq!(form["choices"], json!(["once", "reject"]), "{seen}");
        let message = form["message"].as_str().unwrap();
        assert!(
            message.contains("defines the rules") && message.contains("never saved"),
            "{message}"
        );
        assert!(
            !message.contains("`always`") && !message.contains("`session`"),
            "{message}"
        );
    }
    assert_eq!(forms.len(), 4, "{seen}");

    // "always" was saved for the project; "session" was not.
    let (_, listed, _) = sandbox.run(&["approvals", "list", "--json"]);
    assert!(listed.contains("echo *"), "{listed}");
    assert!(!listed.contains("touch *"), "{listed}");
}

/// A second request under the id of a request still running (its ask is with the
/// client's form) is answered with -32600 naming the id, never run; the first still
/// gets its own answer once the form is answered, and the id is free again after.
#[test]
fn over_stdio_a_request_id_in_use_is_refused_and_the_first_answer_still_comes() {
    let sandbox = Sandbox::new();
    project(&sandbox);
    let mut pipes = Pipes::start(&sandbox, json!({"elicitation": {}}));
    pipes.send(
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "bash",
        "arguments": {"command": "echo first", "description": "first"}}}),
    );
    let form = pipes.receive();
    assert_eq!(form["method"], "elicitation/create", "{form}");
    pipes.send(
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "bash",
        "arguments": {"command": "echo second", "description": "second"}}}),
    );
    let refused = pipes.receive();
    assert_eq!(refused["id"], 7, "{refused}");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "Invalid Request: request id 7 is already in use by a request that is still running"
    );
    pipes.send(
        json!({"jsonrpc": "2.0", "id": form["id"], "result": {"action": "accept", "content": {"decision": "once"}}}),
    );
    let first = pipes.response(7, "once");
    assert_eq!(first["result"]["isError"], false, "{first}");
    assert!(
        first["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("first"),
        "{first}"
    );
    // Answered: the id may be used again.
    pipes.send(json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}));
    assert_eq!(pipes.response(7, "once")["result"], json!({}));
    drop(pipes.input);
    assert!(pipes.child.wait().unwrap().success());
}

/// Without `--dir`, `toolgate mcp` asks a client that declares `roots` for them once it
/// is initialized, and its first `file://` root is the project (README "MCP roots"):
/// started elsewhere, the server reads the root's files.
#[test]
fn without_dir_the_clients_first_file_root_is_the_project() {
    let sandbox = Sandbox::new();
    project(&sandbox);
    let elsewhere = sandbox.root.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("hello.txt"), "not this one\n").unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/mcp_roots.py");
    let output = Command::new(e2e::python_with_mcp())
        .arg(script)
        .arg(e2e::toolgate_binary())
        .arg(&elsewhere)
        .arg(sandbox.project())
        .env("TOOLGATE_DATA_DIR", sandbox.data_dir())
        .env("TOOLGATE_CONFIG_DIR", sandbox.config_dir())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(seen["asked"], 1, "{seen}");
    assert_eq!(seen["read_error"], false, "{seen}");
    assert!(seen["read"][0].as_str().unwrap().contains("1: hello world"), "{seen}");
    // glob answers its structured value too: the project's files.
    let files = seen["glob_structured"]["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{seen}");
    assert!(files[0].as_str().unwrap().ends_with("project/hello.txt"), "{seen}");
}

/// `approval_prompt`, Claude Code's `--permission-prompt-tool`: its input (`tool_name`,
/// `input`, `tool_use_id`) decided under the rules, an ask put to the person through
/// elicitation, and the answer as the JSON text Claude Code parses.
#[test]
fn approval_prompt_answers_claude_codes_permission_prompt() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": {"*": "ask", "git status*": "allow", "rm *": "deny"}, "edit": {"*": "allow", "*.env": "deny"}}}"#,
    );
    let mut pipes = Pipes::start(&sandbox, json!({"elicitation": {}}));
    pipes.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    let listed = pipes.response(2, "once");
    let prompt = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "approval_prompt")
        .unwrap_or_else(|| panic!("approval_prompt is offered: {listed}"))
        .clone();
    assert_eq!(prompt["inputSchema"]["required"], json!(["tool_name"]), "{prompt}");
    let mut id = 10;
    let mut ask = |pipes: &mut Pipes, tool: &str, input: Value, decision: &str| -> (Value, Vec<Value>) {
        id += 1;
        pipes.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "approval_prompt",
            "arguments": {"tool_name": tool, "input": input, "tool_use_id": format!("toolu_{id}")}}}),
        );
        let mut forms = Vec::new();
        let answer = loop {
            let message = pipes.receive();
            if message["id"] == id && message.get("method").is_none() {
                break message;
            }
            if message["method"] == "elicitation/create" {
                forms.push(message["params"].clone());
                pipes.send(json!({"jsonrpc": "2.0", "id": message["id"], "result": {"action": "accept", "content": {"decision": decision}}}));
            }
        };
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        let text = answer["result"]["content"][0]["text"].as_str().unwrap();
        (serde_json::from_str(text).unwrap(), forms)
    };
    let (answer, forms) = ask(&mut pipes, "Bash", json!({"command": "git status"}), "reject");
    assert_eq!(
        answer,
        json!({"behavior": "allow", "updatedInput": {"command": "git status"}})
    );
    assert!(forms.is_empty(), "an allow asks no one: {forms:?}");
    let (answer, forms) = ask(&mut pipes, "Bash", json!({"command": "git status && rm -rf /"}), "once");
    assert_eq!(answer["behavior"], "deny", "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains(r#"by rule bash "rm *" deny"#),
        "{answer}"
    );
    assert!(forms.is_empty(), "a deny asks no one: {forms:?}");
    let (answer, forms) = ask(
        &mut pipes,
        "Edit",
        json!({"file_path": sandbox.project().join("prod.env")}),
        "once",
    );
    assert_eq!(answer["behavior"], "deny", "{answer}");
    // An ask goes to the person: rejected, then approved.
    let (answer, forms_rejected) = ask(&mut pipes, "Bash", json!({"command": "cargo build"}), "reject");
    assert_eq!(answer["behavior"], "deny", "{answer}");
    assert_eq!(forms_rejected.len(), 1, "{forms_rejected:?}");
    assert!(
        forms_rejected[0]["message"].as_str().unwrap().contains("cargo build"),
        "{forms_rejected:?}"
    );
    let (answer, _) = ask(&mut pipes, "Bash", json!({"command": "cargo build"}), "once");
    assert_eq!(
        answer,
        json!({"behavior": "allow", "updatedInput": {"command": "cargo build"}})
    );
    assert!(forms.is_empty());
    drop(pipes.input);
    let _ = pipes.child.wait();
}
