//! toolgate as an MCP gateway: real MCP servers (the official Python SDK, the reference
//! `server-everything`) configured under `mcp`, their tools called through `call`,
//! `tools`, `mcp list` and `toolgate mcp`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use e2e::Sandbox;
use serde_json::{Value, json};

fn server_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/mcp_server.py")
}

fn marks(sandbox: &Sandbox) -> PathBuf {
    let dir = sandbox.root.path().join("marks");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The test server over stdio as V1 config, with `extra` merged into the config's top level.
fn stdio_config(sandbox: &Sandbox, extra: Value) -> Value {
    let mut config = json!({"mcp": {"py": {
        "type": "local",
        "command": [e2e::python_with_mcp(), server_script(), "stdio"],
        "environment": {"MARKS": marks(sandbox)},
        "timeout": 30000,
    }}});
    if let (Some(map), Value::Object(extra)) = (config.as_object_mut(), extra) {
        map.extend(extra);
    }
    config
}

/// The project's config, trusted (a project file's servers start only once it is).
fn write_config(sandbox: &Sandbox, config: &Value) {
    sandbox.write("project/toolgate.json", &config.to_string());
    sandbox.trust();
}

fn json_out(sandbox: &Sandbox, args: &[&str]) -> Value {
    let (code, out, err) = sandbox.run(args);
    assert_eq!(code, 0, "toolgate {args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

/// Polls until `path` exists (or fails after `within`).
fn wait_for_file(path: &Path, within: Duration) -> String {
    let deadline = Instant::now() + within;
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && !text.is_empty()
        {
            return text;
        }
        assert!(Instant::now() < deadline, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A Python SDK server on loopback (`http` = streamable HTTP, `sse` = HTTP+SSE), ended on drop.
struct HttpServer {
    child: Child,
    port: u16,
}

impl HttpServer {
    fn start(sandbox: &Sandbox, mode: &str) -> HttpServer {
        let port_file = sandbox.root.path().join(format!("{mode}.port"));
        let child = Command::new(e2e::python_with_mcp())
            .arg(server_script())
            .arg(mode)
            .arg(&port_file)
            .env("MARKS", marks(sandbox))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let port = wait_for_file(&port_file, Duration::from_secs(60))
            .trim()
            .parse()
            .unwrap();
        HttpServer { child, port }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn stdio_tools_are_listed_called_validated_and_bounded() {
    let sandbox = Sandbox::new();
    write_config(&sandbox, &stdio_config(&sandbox, json!({})));
    let tools = json_out(&sandbox, &["tools", "--json"]);
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for name in [
        "read",
        "bash",
        "py_add",
        "py_echo",
        "py_fail",
        "py_long",
        "py_ask_name",
        "py_crash",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let add = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "py_add")
        .unwrap();
    assert_eq!(add["description"], "Add two integers.");
    assert_eq!(add["inputSchema"]["required"], json!(["a", "b"]));

    // A call: structuredContent is the structured output.
    let called = json_out(&sandbox, &["call", "py_add", r#"{"a": 2, "b": 3}"#, "--json"]);
    assert_eq!(called["output"]["structured"], json!({"sum": 5}), "{called}");

    // isError: a tool failure with the server's text.
    let (code, _, err) = sandbox.run(&["call", "py_fail", r#"{"message": "the disk is full"}"#]);
    assert_eq!(code, 1);
    assert!(err.contains("the disk is full"), "{err}");

    // Invalid input never reaches the server.
    let (code, _, err) = sandbox.run(&["call", "py_echo", r#"{"text": 42}"#]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("Invalid tool input: /text: 42 is not of type \"string\""),
        "{err}"
    );
    let (code, _, err) = sandbox.run(&["call", "py_echo", r#"{"txt": "x"}"#]);
    assert_eq!(code, 1);
    assert!(
        err.contains("Invalid tool input: \"text\" is a required property"),
        "{err}"
    );
    assert!(!marks(&sandbox).join("echo").exists(), "the server saw an invalid call");
    let (code, _, _) = sandbox.run(&["call", "py_echo", r#"{"text": "ok"}"#]);
    assert_eq!(code, 0);
    assert_eq!(std::fs::read_to_string(marks(&sandbox).join("echo")).unwrap(), "ok");

    // The one output bound: a long answer is cut to a preview and spilled whole.
    let long = json_out(&sandbox, &["call", "py_long", r#"{"lines": 5000}"#, "--json"]);
    let spilled = long["outputPaths"][0].as_str().unwrap();
    let full = std::fs::read_to_string(spilled).unwrap();
    assert_eq!(full.lines().count(), 5000);
    assert!(full.ends_with("line 5000"));
    let preview = long["result"]["value"].as_str().unwrap();
    assert!(preview.lines().count() <= 2000, "preview not bounded");

    // An image stays media.
    let picture = json_out(&sandbox, &["call", "py_picture", "--json"]);
    assert_eq!(picture["result"]["type"], "content", "{picture}");
    assert_eq!(picture["result"]["value"][0]["mime"], "image/png");
}

#[test]
fn denied_tools_are_hidden_and_asked_tools_wait_for_a_person() {
    let sandbox = Sandbox::new();
    write_config(
        &sandbox,
        &stdio_config(
            &sandbox,
            json!({"permission": {"py_*": "ask", "py_crash": "deny", "py_add": "allow"}}),
        ),
    );
    let tools = json_out(&sandbox, &["tools", "--json"]);
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"py_wipe") && names.contains(&"py_add"), "{names:?}");
    assert!(
        !names.contains(&"py_crash"),
        "a wholly denied tool is offered: {names:?}"
    );
    let (code, _, err) = sandbox.run(&["call", "py_crash"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("Permission denied: tool py_crash for agent build by rule "),
        "{err}"
    );
    assert!(!marks(&sandbox).join("crashed").exists());

    // An allowed tool runs without asking.
    let (code, out, err) = sandbox.run(&["call", "py_add", r#"{"a": 1, "b": 1}"#]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"sum\": 2"), "{out}");

    // An asked tool without anyone to ask: declined, nothing sent.
    let (code, _, err) = sandbox.run(&["call", "py_wipe", r#"{"target": "prod"}"#]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("py_wipe"), "{err}");
    assert!(
        !marks(&sandbox).join("wiped").exists(),
        "a declined call reached the server"
    );

    // At a terminal: the ask names the server, its hints and the arguments; "always" saves
    // the tool's pin (its definition's hash).
    let mut command = sandbox.command(&["call", "py_wipe", r#"{"target": "staging"}"#]);
    command.env("NO_COLOR", "1");
    let mut session = e2e::pty::Session::spawn(command).unwrap();
    let asked = session.expect("answer [o/s/a/r]:", Duration::from_secs(60)).unwrap();
    assert!(asked.contains("permission: py_wipe"), "{asked}");
    assert!(asked.contains("MCP tool `wipe` of server `py`"), "{asked}");
    assert!(asked.contains("may modify, destructive"), "{asked}");
    assert!(asked.contains(r#"arguments: {"target":"staging"}"#), "{asked}");
    assert!(asked.contains("allow always for the project: pin:"), "{asked}");
    session.send("a\n").unwrap();
    let (code, seen) = session.finish(Duration::from_secs(60)).unwrap();
    assert_eq!(code, 0, "{seen}");
    assert_eq!(
        std::fs::read_to_string(marks(&sandbox).join("wiped")).unwrap(),
        "staging"
    );
    let approvals = json_out(&sandbox, &["approvals", "list", "--json"]);
    let saved: Vec<(&str, &str)> = approvals
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["action"].as_str().unwrap(), a["resource"].as_str().unwrap()))
        .collect();
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert_eq!(saved[0].0, "py_wipe");
    assert!(saved[0].1.starts_with("pin:") && saved[0].1.len() == 36, "{saved:?}");
    // Saved: the next call needs no one.
    let (code, _, err) = sandbox.run(&["call", "py_wipe", r#"{"target": "dev"}"#]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_request_timeout_names_the_server_and_the_timeout() {
    let sandbox = Sandbox::new();
    let config = json!({"mcp": {"servers": {"py": {
        "command": [e2e::python_with_mcp(), server_script(), "stdio"],
        "environment": {"MARKS": marks(&sandbox)},
        "timeout": {"startup": 30000, "request": 1000},
    }}}});
    write_config(&sandbox, &config);
    let started = Instant::now();
    let (code, _, err) = sandbox.run(&["call", "py_sleep", r#"{"seconds": 30, "tag": "slow"}"#]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("MCP server `py` did not answer `sleep` within 1 s (its request timeout)"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the call waited for the tool"
    );
}

#[test]
fn streamable_http_and_the_older_sse_transport_on_loopback() {
    let sandbox = Sandbox::new();
    let http = HttpServer::start(&sandbox, "http");
    let sse = HttpServer::start(&sandbox, "sse");
    let config = json!({"mcp": {
        "web": {"type": "remote", "url": format!("http://127.0.0.1:{}/mcp", http.port), "timeout": 30000,
                "headers": {"X-Test": "{env:E2E_HEADER}"}},
        "old": {"type": "remote", "url": format!("http://127.0.0.1:{}/sse", sse.port), "timeout": 30000},
    }});
    write_config(&sandbox, &config);
    let listed = json_out(&sandbox, &["mcp", "list", "--json"]);
    assert_eq!(listed[0]["name"], "web");
    assert_eq!(listed[0]["state"], "connected", "{listed}");
    assert_eq!(listed[0]["transport"], "streamable HTTP");
    assert_eq!(listed[1]["state"], "connected", "{listed}");
    assert_eq!(listed[1]["transport"], "HTTP+SSE");
    assert!(
        listed[1]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "old_add")
    );

    for tool in ["web_add", "old_add"] {
        let called = json_out(&sandbox, &["call", tool, r#"{"a": 20, "b": 22}"#, "--json"]);
        assert_eq!(called["output"]["structured"], json!({"sum": 42}), "{tool}: {called}");
    }
    let (code, _, err) = sandbox.run(&["call", "web_fail", r#"{"message": "remote says no"}"#]);
    assert_eq!((code, err.trim()), (1, "Error executing tool fail: remote says no"));
    let (code, _, err) = sandbox.run(&["call", "web_add", r#"{"a": 1}"#]);
    assert_eq!(code, 1);
    assert!(err.contains("Invalid tool input"), "{err}");
}

#[test]
fn a_server_that_fails_to_start_is_reported_and_the_others_still_work() {
    let sandbox = Sandbox::new();
    let mut config = stdio_config(&sandbox, json!({}));
    config["mcp"]["broken"] =
        json!({"type": "local", "command": ["sh", "-c", "echo 'no such module: frobnicate' >&2; exit 7"]});
    config["mcp"]["missing"] = json!({"type": "local", "command": ["/nonexistent/mcp-server"]});
    config["mcp"]["off"] = json!({"type": "local", "command": ["/nonexistent/never-started"], "enabled": false});
    write_config(&sandbox, &config);
    let listed = json_out(&sandbox, &["mcp", "list", "--json"]);
    let by_name = |name: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(by_name("py")["state"], "connected");
    let broken = by_name("broken");
    assert_eq!(broken["state"], "failed");
    let reason = broken["errors"][0].as_str().unwrap();
    assert!(
        reason.contains("initialize failed") && reason.contains("no such module: frobnicate"),
        "{reason}"
    );
    assert!(
        by_name("missing")["errors"][0]
            .as_str()
            .unwrap()
            .contains("could not start `/nonexistent/mcp-server`")
    );
    assert_eq!(by_name("off")["state"], "disabled");

    let (code, out, err) = sandbox.run(&["mcp", "list"]);
    assert_eq!(code, 0);
    assert!(out.contains("broken (stdio, failed)") && out.contains("log: "), "{out}");
    let (code, _, err2) = sandbox.run(&["tools"]);
    assert_eq!(code, 0, "{err}");
    assert!(err2.contains("toolgate: MCP server broken:"), "{err2}");
    let (code, _, _) = sandbox.run(&["call", "py_echo", r#"{"text": "still here"}"#]);
    assert_eq!(code, 0);
}

#[test]
fn malformed_mcp_config_is_one_line_with_file_and_key_path() {
    let sandbox = Sandbox::new();
    for (config, expected) in [
        (
            json!({"mcp": {"py": {"type": "local", "command": "python server.py"}}}),
            "mcp.py.command: expected a non-empty list",
        ),
        (
            json!({"mcp": {"servers": {"py": {"command": ["x"], "timeout": {"request": "soon"}}}}}),
            "mcp.servers.py.timeout.request: expected a positive number of milliseconds",
        ),
        (
            json!({"mcp": {"gh": {"type": "remote", "url": "file:///etc/passwd"}}}),
            "mcp.gh.url: expected an http://",
        ),
    ] {
        sandbox.write("project/toolgate.json", &config.to_string());
        let (code, _, err) = sandbox.run(&["tools"]);
        assert_eq!(code, 2, "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("toolgate.json: ") && err.contains(expected), "{err}");
    }
}

#[test]
fn layers_merge_by_server_name_and_toolgate_variables_never_reach_a_server() {
    let sandbox = Sandbox::new();
    // The global layer names a server the project replaces whole: the project's command wins,
    // and the global `environment` does not leak into it.
    sandbox.write(
        "config/toolgate.json",
        &json!({"mcp": {"py": {"type": "local", "command": ["/nonexistent/global"], "environment": {"FROM_GLOBAL": "1"}}}})
            .to_string(),
    );
    let env_dump = sandbox.root.path().join("env.txt");
    let script = format!(
        "env > {}; exec {} {} stdio",
        env_dump.display(),
        e2e::python_with_mcp().display(),
        server_script().display()
    );
    write_config(
        &sandbox,
        &json!({"mcp": {"py": {"type": "local", "command": ["sh", "-c", script], "timeout": 30000,
            "environment": {"SERVER_TOKEN": "{env:E2E_SECRET}", "STOLEN": "{env:TOOLGATE_SERVER_TOKEN}"}}}}),
    );
    let mut command = sandbox.command(&["call", "py_echo", r#"{"text": "hi"}"#]);
    command
        .env("E2E_SECRET", "s3cret")
        .env("TOOLGATE_SERVER_TOKEN", "toolgate-only");
    let output = command.output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let env = std::fs::read_to_string(&env_dump).unwrap();
    assert!(env.lines().any(|l| l == "SERVER_TOKEN=s3cret"), "{env}");
    assert!(env.lines().any(|l| l == "STOLEN="), "{env}");
    assert!(!env.contains("toolgate-only"), "toolgate's secret reached the server");
    assert!(!env.lines().any(|l| l.starts_with("TOOLGATE_")), "{env}");
    assert!(!env.contains("FROM_GLOBAL"), "layers were deep-merged: {env}");
}

#[test]
fn toolgate_mcp_as_a_gateway_list_changed_elicitation_cancellation_and_a_crash() {
    let sandbox = Sandbox::new();
    let config = json!({"mcp": {"servers": {"py": {
        "command": [e2e::python_with_mcp(), server_script(), "stdio"],
        "environment": {"MARKS": marks(&sandbox)},
        "timeout": {"startup": 30000, "request": 5000},
    }}}, "permission": {"py_wipe": "ask"}});
    write_config(&sandbox, &config);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/gateway_client.py");
    let output = Command::new(e2e::python_with_mcp())
        .arg(script)
        .arg(e2e::toolgate_binary())
        .arg(sandbox.project())
        .arg(marks(&sandbox))
        .env("TOOLGATE_DATA_DIR", sandbox.data_dir())
        .env("TOOLGATE_CONFIG_DIR", sandbox.config_dir())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    // A request timeout names the server; the upstream tool was cancelled while both stayed up.
    assert_eq!(seen["timeout"][0], true);
    assert!(
        seen["timeout"][1]
            .as_str()
            .unwrap()
            .contains("did not answer `sleep` within 5 s"),
        "{seen}"
    );
    assert_eq!(seen["timeout_cancelled_upstream"], true, "{seen}");
    // The client of `toolgate mcp` cancelling its call cancels the upstream call too.
    assert_eq!(seen["client_cancel_reached_upstream"], true, "{seen}");
    let before: Vec<&str> = seen["before"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(before.contains(&"read") && before.contains(&"py_add"), "{before:?}");
    assert!(!before.contains(&"py_added_later"));
    assert_eq!(seen["add"][0], "{\n  \"sum\": 42\n}");
    // The server's own description passes on: its hints, its output schema (every member
    // optional, as toolgate lists every output schema) and its structured content.
    let described = &seen["described"];
    assert_eq!(
        described["py_add"]["annotations"],
        json!({"readOnlyHint": true}),
        "{seen}"
    );
    assert_eq!(
        described["py_wipe"]["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": true}),
        "{seen}"
    );
    assert_eq!(
        described["py_add"]["outputSchema"]["properties"]["sum"]["type"], "integer",
        "{seen}"
    );
    assert_eq!(seen["add_structured"], json!({"sum": 42}), "{seen}");
    // The builtins describe themselves too.
    assert_eq!(described["read"]["title"], "Read a file or directory", "{seen}");
    assert_eq!(described["read"]["annotations"]["readOnlyHint"], true, "{seen}");
    // The ask of an MCP tool shows, over MCP as on the terminal, the server's hints and
    // the arguments; the form asks for a decision and feedback only.
    let ask = &seen["asks"][0];
    let message = ask["message"].as_str().unwrap();
    assert!(
        message.contains("MCP tool `wipe` of server `py` (server says: may modify, destructive)"),
        "{message}"
    );
    assert!(message.contains(r#"arguments: {"target":"build"}"#), "{message}");
    let fields: Vec<&String> = ask["schema"]["properties"].as_object().unwrap().keys().collect();
    assert_eq!(fields, ["decision", "feedback"], "{ask}");
    assert_eq!(seen["wipe"][0], true, "rejected: {seen}");
    assert!(!sandbox.root.path().join("marks/wiped").exists(), "{seen}");
    // The upstream list_changed reached toolgate's own client, and the new tool is offered.
    assert!(seen["list_changed"].as_u64().unwrap() >= 1, "{seen}");
    assert!(
        seen["after"].as_array().unwrap().iter().any(|t| t == "py_added_later"),
        "{seen}"
    );
    // It was added after the server was pinned: its first call asked `mcp_pin`.
    assert!(
        seen["pin_asks"][0]
            .as_str()
            .unwrap()
            .contains("MCP server `py` added the tool `added_later` after its tools were approved"),
        "{seen}"
    );
    assert_eq!(seen["later"][0], "later: hi");
    // The server's elicitation went to the client of `toolgate mcp`, schema and all.
    let elicited = &seen["elicited"][0];
    assert_eq!(elicited["message"], "[MCP server py] What is your name?");
    assert_eq!(elicited["schema"]["required"], json!(["name"]), "{elicited}");
    assert_eq!(seen["ask"][0], "hello Ada (30)");
    // A crash mid-call fails that call, the next call restarts the server once...
    assert_eq!(seen["crash1"][0], true);
    assert!(
        seen["crash1"][1]
            .as_str()
            .unwrap()
            .contains("MCP server `py` failed during `crash`: exited with status 3"),
        "{seen}"
    );
    assert_eq!(seen["after_crash"][0], "back");
    // ...and a second crash is reported, not restarted again.
    assert_eq!(seen["crash2"][0], true);
    assert_eq!(seen["after_crash2"][0], true, "{seen}");
    assert!(
        seen["after_crash2"][1].as_str().unwrap().contains("not restarting"),
        "{seen}"
    );
}

/// `call` at a terminal: a server's elicitation is put to the person as questions, one per
/// field, and the answers go back to the server; dismissing declines; with no one to ask
/// (no terminal) it is declined without waiting.
#[test]
fn elicitation_through_call_reaches_the_person_at_the_terminal() {
    let sandbox = Sandbox::new();
    write_config(
        &sandbox,
        &stdio_config(&sandbox, json!({"permission": {"py_*": "allow"}})),
    );

    let mut command = sandbox.command(&["call", "py_ask_name"]);
    command.env("NO_COLOR", "1");
    let mut session = e2e::pty::Session::spawn(command).unwrap();
    let asked = session.expect("your own words", Duration::from_secs(60)).unwrap();
    assert!(asked.contains("[MCP server py] What is your name?"), "{asked}");
    // A text field offers no numbers to pick.
    assert!(asked.contains("answer (your own words"), "{asked}");
    session.send("Ada Lovelace\n").unwrap();
    // The second field has a default: Enter keeps it.
    let asked = session
        .expect("Enter for the default: 30", Duration::from_secs(30))
        .unwrap();
    assert!(asked.contains("Age"), "{asked}");
    session.send("\n").unwrap();
    let (code, seen) = session.finish(Duration::from_secs(60)).unwrap();
    assert_eq!(code, 0, "{seen}");
    assert!(seen.contains("hello Ada Lovelace (30)"), "{seen}");

    // `!` dismisses: the server hears a decline, the call itself still settles.
    let mut command = sandbox.command(&["call", "py_ask_name"]);
    command.env("NO_COLOR", "1");
    let mut session = e2e::pty::Session::spawn(command).unwrap();
    session.expect("your own words", Duration::from_secs(60)).unwrap();
    session.send("!\n").unwrap();
    let (code, seen) = session.finish(Duration::from_secs(60)).unwrap();
    assert_eq!(code, 0, "{seen}");
    assert!(seen.contains("no name (decline)"), "{seen}");

    // No terminal, no one to answer: declined at once.
    let (code, out, err) = sandbox.run(&["call", "py_ask_name"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("no name (decline)"), "{out}");
}

/// The test server over stdio as a server of MCP 2025-11-25 and before would be: it
/// knows no `server/discover` and speaks only after `initialize`.
fn legacy_server() -> Value {
    json!({
        "type": "local",
        "command": [e2e::python_with_mcp(), server_script(), "stdio"],
        "environment": {"MCP_LEGACY_ONLY": "1"},
        "timeout": 30000,
    })
}

#[test]
fn each_server_gets_its_own_version_2026_07_28_or_the_initialize_handshake() {
    let sandbox = Sandbox::new();
    let mut config = stdio_config(&sandbox, json!({"permission": {"py_*": "allow", "old_*": "allow"}}));
    config["mcp"]["old"] = legacy_server();
    write_config(&sandbox, &config);

    let listed = json_out(&sandbox, &["mcp", "list", "--json"]);
    let protocol = |name: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|server| server["name"] == name)
            .map(|server| (server["state"].clone(), server["protocol"].clone()))
            .unwrap()
    };
    assert_eq!(protocol("py"), (json!("connected"), json!("2026-07-28")), "{listed}");
    assert_eq!(protocol("old"), (json!("connected"), json!("2025-11-25")), "{listed}");
    let (code, out, _) = sandbox.run(&["mcp", "list"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("(MCP 2026-07-28)") && out.contains("(MCP 2025-11-25)"),
        "{out}"
    );

    for server in ["py", "old"] {
        let (code, out, err) = sandbox.run(&["call", &format!("{server}_add"), r#"{"a": 2, "b": 3}"#]);
        assert_eq!(code, 0, "{server}: {err}");
        assert!(out.contains('5'), "{server}: {out}");
        // A form reaches the person both ways: as an input round of the call at
        // 2026-07-28, as an elicitation/create request in the middle of it before.
        let mut command = sandbox.command(&["call", &format!("{server}_ask_name")]);
        command.env("NO_COLOR", "1");
        let mut session = e2e::pty::Session::spawn(command).unwrap();
        let asked = session.expect("your own words", Duration::from_secs(60)).unwrap();
        assert!(
            asked.contains(&format!("[MCP server {server}] What is your name?")),
            "{asked}"
        );
        session.send("Ada\n").unwrap();
        session
            .expect("Enter for the default: 30", Duration::from_secs(30))
            .unwrap();
        session.send("\n").unwrap();
        let (code, seen) = session.finish(Duration::from_secs(60)).unwrap();
        assert_eq!(code, 0, "{server}: {seen}");
        assert!(seen.contains("hello Ada (30)"), "{server}: {seen}");
    }
}

/// One Python process on two loopback ports: the first answers every request with a 307
/// to the second (another origin), which records the headers of whatever reaches it.
const REDIRECTOR: &str = r#"
import http.server, json, sys, threading
record, ports = sys.argv[1], sys.argv[2]
class Recorder(http.server.BaseHTTPRequestHandler):
    def handle_one(self):
        with open(record, "a") as out:
            out.write(json.dumps({k.lower(): v for k, v in self.headers.items()}) + "\n")
        self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers()
    do_GET = do_POST = do_DELETE = handle_one
    def log_message(self, *args): pass
target = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
class Redirect(http.server.BaseHTTPRequestHandler):
    def redirect(self):
        self.send_response(307)
        self.send_header("Location", f"http://127.0.0.1:{target.server_port}{self.path}")
        self.send_header("Content-Length", "0"); self.end_headers()
    do_GET = do_POST = do_DELETE = redirect
    def log_message(self, *args): pass
front = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
threading.Thread(target=target.serve_forever, daemon=True).start()
open(ports, "w").write(str(front.server_port))
front.serve_forever()
"#;

#[test]
fn credential_headers_are_never_sent_after_a_redirect_to_another_origin() {
    let sandbox = Sandbox::new();
    let record = sandbox.root.path().join("seen.jsonl");
    let ports = sandbox.root.path().join("front.port");
    let mut redirector = Command::new("python3")
        .args(["-c", REDIRECTOR])
        .arg(&record)
        .arg(&ports)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let port = wait_for_file(&ports, Duration::from_secs(30)).trim().to_string();
    let config = json!({"mcp": {"far": {
        "type": "remote", "url": format!("http://127.0.0.1:{port}/mcp"), "timeout": 10000,
        "headers": {"Authorization": "Bearer e2e-remote-credential", "X-Api-Key": "e2e-remote-api-key"},
    }}});
    write_config(&sandbox, &config);
    let listed = json_out(&sandbox, &["mcp", "list", "--json"]);
    let _ = redirector.kill();
    let _ = redirector.wait();
    assert_eq!(listed[0]["state"], "failed", "{listed}");
    assert!(listed.to_string().contains("error following redirect"), "{listed}");
    // Nothing at all reached the other origin: neither transport followed the redirect.
    let seen = std::fs::read_to_string(&record).unwrap_or_default();
    assert!(
        !seen.contains("e2e-remote-credential") && !seen.contains("e2e-remote-api-key"),
        "credentials sent after a redirect: {seen}"
    );
    assert!(seen.is_empty(), "a request followed the redirect: {seen}");
}
