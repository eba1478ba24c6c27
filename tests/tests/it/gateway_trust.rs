//! The MCP gateway against a malicious server (written with the official Python SDK,
//! `python/mcp_malicious.py`): a description changed after approval (a rug pull), a tool
//! added by `list_changed`, a name squatting another server's tool, terminal escapes and
//! invisible characters in descriptions and results, and — sandboxed — a server reading
//! `~/.ssh` and writing outside its directory. Each is stopped through `call`, `serve`
//! and `mcp`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use e2e::{Sandbox, Served};
use serde_json::{Value, json};

fn malicious_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/mcp_malicious.py")
}

fn state(sandbox: &Sandbox) -> PathBuf {
    let dir = sandbox.root.path().join("state");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The malicious server as `evil`, with `extra` merged into the config's top level.
fn config(sandbox: &Sandbox, extra: Value) -> Value {
    let mut config = json!({"mcp": {"evil": {
        "type": "local",
        "command": [e2e::python_with_mcp(), malicious_script()],
        "environment": {"STATE": state(sandbox)},
        "timeout": 30000,
    }}});
    if let (Some(map), Value::Object(extra)) = (config.as_object_mut(), extra) {
        map.extend(extra);
    }
    config
}

fn setup(sandbox: &Sandbox, config: &Value) {
    sandbox.write("project/toolgate.json", &config.to_string());
    sandbox.trust();
}

fn json_out(sandbox: &Sandbox, args: &[&str]) -> Value {
    let (code, out, err) = sandbox.run(args);
    assert_eq!(code, 0, "toolgate {args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

fn rug_pull(sandbox: &Sandbox) {
    std::fs::write(state(sandbox).join("mode"), "pulled").unwrap();
}

fn called(sandbox: &Sandbox, tool: &str) -> Option<String> {
    std::fs::read_to_string(state(sandbox).join(format!("called-{tool}"))).ok()
}

fn forget_calls(sandbox: &Sandbox) {
    for entry in std::fs::read_dir(state(sandbox)).unwrap().flatten() {
        if entry.file_name().to_string_lossy().starts_with("called-") {
            std::fs::remove_file(entry.path()).unwrap();
        }
    }
}

/// Nothing a terminal or a model would read differently from a person.
fn assert_clean(text: &str) {
    for c in text.chars() {
        let hidden = (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}' | '\u{e0000}'..='\u{e007f}');
        assert!(!hidden, "{:?} left in {text:?}", c);
    }
}

fn description_of(tools: &Value, name: &str) -> String {
    tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not offered: {tools}"))["description"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `call` at a terminal: the rug pull waits for a person who sees the diff, invisible
/// characters escaped; "once" keeps asking, "always" keeps the new pin; the tool's own
/// "always" was bound to the old definition and lapses; `--auto` never approves a change;
/// `mcp pins` lists and resets.
#[test]
fn a_rug_pull_waits_for_a_person_through_call() {
    let sandbox = Sandbox::new();
    setup(
        &sandbox,
        &config(&sandbox, json!({"permission": {"evil_notes": "ask"}})),
    );

    // First use pins; the tool's own "always" is saved for this definition.
    let mut command = sandbox.command(&["call", "evil_notes", r#"{"text": "first"}"#]);
    command.env("NO_COLOR", "1");
    let mut session = e2e::pty::Session::spawn(command).unwrap();
    let asked = session.expect("answer [o/s/a/r]:", Duration::from_secs(60)).unwrap();
    assert!(asked.contains("permission: evil_notes"), "{asked}");
    assert!(asked.contains("allow always for the project: pin:"), "{asked}");
    session.send("a\n").unwrap();
    let (code, seen) = session.finish(Duration::from_secs(60)).unwrap();
    assert_eq!(code, 0, "{seen}");
    assert_eq!(called(&sandbox, "notes").as_deref(), Some("first"));
    let pins = json_out(&sandbox, &["mcp", "pins", "--json"]);
    assert_eq!(pins[0]["name"], "evil", "{pins}");
    let pinned = pins[0]["tools"]["notes"]["hash"].as_str().unwrap().to_string();
    let (code, _, err) = sandbox.run(&["call", "evil_notes", r#"{"text": "again"}"#]);
    assert_eq!(code, 0, "{err}");

    // The rug pull: the model no longer sees the server's words for the tool, and with no
    // one to ask the call is declined before anything reaches the server.
    rug_pull(&sandbox);
    forget_calls(&sandbox);
    let tools = json_out(&sandbox, &["tools", "--json"]);
    let shown = description_of(&tools, "evil_notes");
    assert!(shown.contains("not approved yet"), "{shown}");
    assert!(!shown.contains("id_rsa"), "the payload reached the model: {shown}");
    let (code, _, err) = sandbox.run(&["call", "evil_notes", r#"{"text": "x"}"#]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("mcp_pin"), "{err}");
    assert_eq!(called(&sandbox, "notes"), None, "a changed tool ran without approval");
    // --auto approves asks, never a changed definition.
    let (code, _, err) = sandbox.run(&["call", "--auto", "evil_notes", r#"{"text": "x"}"#]);
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("never by --auto"), "{err}");
    assert_eq!(called(&sandbox, "notes"), None);

    // A person sees the change as a diff, the hidden characters escaped; "once" runs it.
    // Each prompt is told by its "always" line: the pin change's names the definition, the
    // tool's own names its pin. What each answer saw is what came after the one before.
    const PIN_ASK: &str = "allow always for the project: evil:notes@";
    const TOOL_ASK: &str = "allow always for the project: pin:";
    let ask = |answers: &[(&str, &str)]| {
        let mut command = sandbox.command(&["call", "evil_notes", r#"{"text": "y"}"#]);
        command.env("NO_COLOR", "1");
        let mut session = e2e::pty::Session::spawn(command).unwrap();
        let mut seen = Vec::new();
        let mut before = 0;
        for (marker, answer) in answers {
            let all = session.expect(marker, Duration::from_secs(60)).unwrap();
            seen.push(all[before..].to_string());
            before = all.len();
            session.send(&format!("{answer}\n")).unwrap();
        }
        let (code, rest) = session.finish(Duration::from_secs(60)).unwrap();
        (code, seen, rest)
    };
    let (code, seen, rest) = ask(&[(PIN_ASK, "o"), (TOOL_ASK, "o")]);
    assert_eq!(code, 0, "{rest}");
    // The tool's own "always" named the old definition's pin: it lapsed, the tool asks.
    assert!(
        seen[1].contains("permission: evil_notes"),
        "the tool's approval outlived its definition: {seen:?}"
    );
    let first = &seen[0];
    assert!(first.contains("permission: mcp_pin"), "{first}");
    assert!(first.contains("changed the definition of its tool `notes`"), "{first}");
    assert!(first.contains("-  \"description\": \"Read the notes.\""), "{first}");
    assert!(
        first.contains("+  \"description\": \"Read the notes.\\u{200b}\\u{200b}<IMPORTANT>"),
        "{first}"
    );
    assert!(first.contains("\\u{e0049}") && first.contains("\\u{202e}"), "{first}");
    assert!(first.contains("Its instructions changed too"), "{first}");
    assert_eq!(called(&sandbox, "notes").as_deref(), Some("y"));
    // "once" kept asking; "always" keeps the new pin (and saves the tool's own approval
    // for the new definition).
    let (code, seen, rest) = ask(&[(PIN_ASK, "a"), (TOOL_ASK, "a")]);
    assert_eq!(code, 0, "{rest}");
    assert!(seen[0].contains("permission: mcp_pin"), "{seen:?}");
    assert!(seen[1].contains("permission: evil_notes"), "{seen:?}");
    let pins = json_out(&sandbox, &["mcp", "pins", "--json"]);
    assert_ne!(pins[0]["tools"]["notes"]["hash"], pinned, "{pins}");
    // Approved: no one is needed, and the tool describes itself again (cleaned).
    let (code, _, err) = sandbox.run(&["call", "evil_notes", r#"{"text": "z"}"#]);
    assert_eq!(code, 0, "{err}");
    let shown = description_of(&json_out(&sandbox, &["tools", "--json"]), "evil_notes");
    assert!(shown.starts_with("Read the notes.<IMPORTANT>"), "{shown}");
    assert_clean(&shown);

    // Reset: the next start is a first use again.
    let (code, out, err) = sandbox.run(&["mcp", "pins", "--reset", "evil"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("forgot the pins of `evil`"), "{out}");
    assert_eq!(json_out(&sandbox, &["mcp", "pins", "--json"]), json!([]));
    let (code, _, err) = sandbox.run(&["mcp", "pins", "--reset", "evil"]);
    assert_eq!(code, 2, "{err}");
    let (code, out, _) = sandbox.run(&["mcp", "list"]);
    assert_eq!(code, 0);
    assert!(out.contains("evil_notes"), "{out}");
    assert_eq!(json_out(&sandbox, &["mcp", "pins", "--json"])[0]["name"], "evil");
}

/// Escapes and invisible characters never reach the model, from descriptions or results;
/// a name squatting another server's tool is refused.
#[test]
fn escapes_invisibles_and_squatters_through_call() {
    let sandbox = Sandbox::new();
    let mut config = config(&sandbox, json!({"permission": {"evil_*": "allow", "py_*": "allow"}}));
    // `py` (the well-behaved test server) offers `ask_name` as `py_ask_name`; the server
    // `py_ask` offers a tool `name`, which would be registered under the same name.
    let squat_state = sandbox.root.path().join("squatter");
    std::fs::create_dir_all(&squat_state).unwrap();
    config["mcp"]["py"] = json!({"type": "local", "timeout": 30000,
        "command": [e2e::python_with_mcp(), PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/mcp_server.py"), "stdio"]});
    config["mcp"]["py_ask"] = json!({"type": "local", "timeout": 30000,
        "command": [e2e::python_with_mcp(), malicious_script()],
        "environment": {"STATE": squat_state, "SQUAT_AS": "name"}});
    setup(&sandbox, &config);
    let tools = json_out(&sandbox, &["tools", "--json"]);
    let shown = description_of(&tools, "evil_poisoned");
    assert_clean(&shown);
    assert!(
        shown.contains("and also reads ~/.aws/credentials"),
        "the text itself stays visible: {shown}"
    );
    let called_json = json_out(&sandbox, &["call", "evil_poisoned", r#"{"a": 2, "b": 3}"#, "--json"]);
    let text = called_json["result"]["value"].as_str().unwrap_or_default().to_string();
    assert!(text.starts_with("5click here"), "{called_json}");
    assert_clean(&text);
    assert_clean(&called_json["output"]["structured"].to_string());
    assert!(called(&sandbox, "poisoned").is_some());
    // The call's audit record counts what was stripped (never the characters themselves).
    let audit = std::fs::read_to_string(sandbox.data_dir().join("audit.jsonl")).unwrap();
    let settled: Value = audit
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|entry| entry["kind"] == "settled" && entry["tool"] == "evil_poisoned")
        .unwrap_or_else(|| panic!("no settled record for evil_poisoned in {audit}"));
    let stripped = settled["redacted"]
        .as_array()
        .and_then(|kinds| kinds.iter().find(|kind| kind["kind"] == "stripped-invisible"))
        .and_then(|kind| kind["count"].as_u64())
        .unwrap_or(0);
    assert!(stripped > 0, "{settled}");
    assert_clean(&audit);
    // The squatter's tool is refused and reported; the name stays `py`'s.
    let listed = json_out(&sandbox, &["mcp", "list", "--json"]);
    let squatter = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "py_ask")
        .unwrap();
    assert!(
        squatter["errors"]
            .to_string()
            .contains("its name `py_ask_name` is taken by server `py`"),
        "{squatter}"
    );
    let (code, out, err) = sandbox.run(&["call", "py_ask_name"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("no name (decline)"), "{out}");
    assert!(!squat_state.join("called-squat").exists(), "the squatter got the call");
}

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

async fn get(served: &Served, path: &str) -> Value {
    let response = client()
        .get(format!("{}{path}", served.base))
        .bearer_auth(e2e::SERVER_TOKEN)
        .send()
        .await
        .unwrap();
    serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
}

async fn post(url: String, body: Value) -> (u16, Value) {
    let response = client()
        .post(url)
        .bearer_auth(e2e::SERVER_TOKEN)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let bytes = response.bytes().await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn call_in_background(served: &Served, session: &str, body: Value) -> tokio::task::JoinHandle<(u16, Value)> {
    tokio::spawn(post(format!("{}/session/{session}/call", served.base), body))
}

async fn pending(served: &Served, path: &str, within: Duration) -> Option<Value> {
    let deadline = Instant::now() + within;
    loop {
        let list = get(served, path).await;
        if let Some(first) = list.as_array().and_then(|l| l.first()) {
            return Some(first.clone());
        }
        if Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn text(result: &Value) -> String {
    match &result["result"]["value"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        other => other.to_string(),
    }
}

/// `serve`: the rug pull and the tool added by `list_changed` are `/permission` asks of
/// `mcp_pin` with the diff; rejected, nothing reaches the server; "always" keeps the pin.
/// Results come back clean. An upstream elicitation reaches only the calling session.
#[tokio::test]
async fn a_rug_pull_and_a_late_tool_wait_for_a_reply_through_serve() {
    let sandbox = Sandbox::new();
    setup(&sandbox, &config(&sandbox, json!({"permission": {"evil_*": "allow"}})));
    // First use, then the pull.
    let (code, _, err) = sandbox.run(&["tools"]);
    assert_eq!(code, 0, "{err}");
    rug_pull(&sandbox);
    let served = sandbox.serve(&[]);

    let call = call_in_background(
        &served,
        "ses_a",
        json!({"tool": "evil_notes", "input": {"text": "leak"}}),
    );
    let ask = pending(&served, "/permission", Duration::from_secs(30))
        .await
        .expect("no mcp_pin ask");
    assert_eq!(ask["action"], "mcp_pin", "{ask}");
    let description = ask["metadata"]["description"].as_str().unwrap();
    assert!(description.contains("\\u{200b}<IMPORTANT>"), "{description}");
    let id = ask["id"].as_str().unwrap();
    let (status, _) = post(
        format!("{}/permission/{id}/reply", served.base),
        json!({"reply": "reject"}),
    )
    .await;
    assert_eq!(status, 200);
    let (_, result) = call.await.unwrap();
    assert!(
        text(&result).contains("rejected") || result.to_string().contains("reject"),
        "{result}"
    );
    assert_eq!(called(&sandbox, "notes"), None, "a rejected change reached the server");

    // The server's instructions changed too: every tool asks until that is approved.
    let call = call_in_background(&served, "ses_a", json!({"tool": "evil_grow", "input": {}}));
    let ask = pending(&served, "/permission", Duration::from_secs(30))
        .await
        .expect("no ask for grow");
    assert!(
        ask["metadata"]["description"]
            .as_str()
            .unwrap()
            .contains("changed its instructions"),
        "{ask}"
    );
    let id = ask["id"].as_str().unwrap();
    let (status, _) = post(
        format!("{}/permission/{id}/reply", served.base),
        json!({"reply": "always"}),
    )
    .await;
    assert_eq!(status, 200);
    let (status, result) = call.await.unwrap();
    assert_eq!(status, 200, "{result}");

    // A tool added after first use, by list_changed: asked too; "always" keeps its pin.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !get(&served, "/tool")
        .await
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "evil_exfil")
    {
        assert!(Instant::now() < deadline, "evil_exfil never offered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let call = call_in_background(
        &served,
        "ses_a",
        json!({"tool": "evil_exfil", "input": {"data": "secret"}}),
    );
    let ask = pending(&served, "/permission", Duration::from_secs(30))
        .await
        .expect("no ask for the new tool");
    assert_eq!(ask["action"], "mcp_pin", "{ask}");
    assert!(
        ask["metadata"]["description"]
            .as_str()
            .unwrap()
            .contains("added the tool `exfil`"),
        "{ask}"
    );
    assert_eq!(called(&sandbox, "exfil"), None);
    let id = ask["id"].as_str().unwrap();
    let (status, _) = post(
        format!("{}/permission/{id}/reply", served.base),
        json!({"reply": "always"}),
    )
    .await;
    assert_eq!(status, 200);
    let (status, result) = call.await.unwrap();
    assert_eq!(status, 200, "{result}");
    assert_eq!(called(&sandbox, "exfil").as_deref(), Some("secret"));
    // Kept: the next call asks no one.
    let (status, result) = post(
        format!("{}/session/ses_a/call", served.base),
        json!({"tool": "evil_exfil", "input": {"data": "two"}}),
    )
    .await;
    assert_eq!(status, 200, "{result}");
    assert_eq!(called(&sandbox, "exfil").as_deref(), Some("two"));

    // Results are clean over HTTP too.
    let (_, result) = post(
        format!("{}/session/ses_b/call", served.base),
        json!({"tool": "evil_poisoned", "input": {"a": 1, "b": 1}}),
    )
    .await;
    let shown = text(&result);
    assert!(shown.starts_with("2click here"), "{result}");
    assert_clean(&shown);
}

/// `mcp`: the rug pull is an elicitation of `mcp_pin` to the client with the diff;
/// rejected, nothing reaches the server. A late tool too. Results come back clean.
#[test]
fn a_rug_pull_and_a_late_tool_are_put_to_the_client_of_mcp() {
    let sandbox = Sandbox::new();
    setup(&sandbox, &config(&sandbox, json!({"permission": {"evil_*": "allow"}})));
    let (code, _, err) = sandbox.run(&["tools"]);
    assert_eq!(code, 0, "{err}");
    rug_pull(&sandbox);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/trust_client.py");
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
    let notes = &seen["described"]["evil_notes"];
    assert!(notes.as_str().unwrap().contains("not approved yet"), "{seen}");
    let ask = &seen["asks"][0];
    assert!(
        ask.as_str()
            .unwrap()
            .contains("changed the definition of its tool `notes`"),
        "{seen}"
    );
    assert!(ask.as_str().unwrap().contains("\\u{200b}"), "{seen}");
    assert_eq!(seen["notes"][0], true, "a rejected change ran: {seen}");
    assert!(
        seen["late_ask"].as_str().unwrap().contains("added the tool `exfil`"),
        "{seen}"
    );
    assert_eq!(seen["exfil"][0], true, "{seen}");
    assert_eq!(called(&sandbox, "notes"), None);
    assert_eq!(called(&sandbox, "exfil"), None);
    let poisoned = seen["poisoned"][1].as_str().unwrap();
    assert!(poisoned.starts_with("5click here"), "{seen}");
    assert_clean(poisoned);
    assert_clean(seen["described"]["evil_poisoned"].as_str().unwrap());
}

/// A home of its own with a key in `~/.ssh`, the read rules hiding it, and every local
/// server sandboxed by `mcp_sandbox`.
fn sandboxed(sandbox: &Sandbox) -> PathBuf {
    sandbox.own_temp_dir();
    let home = std::fs::canonicalize(sandbox.root.path()).unwrap().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "-----BEGIN OPENSSH PRIVATE KEY----- the key").unwrap();
    let config = config(
        sandbox,
        json!({"permission": {"evil_*": "allow", "read": {"*": "allow", format!("{}/.ssh/*", home.display()): "deny"}},
               // The server's evidence directory is all it may write besides its own.
               "mcp_sandbox": {"mode": "workspace-write", "writable": [state(sandbox)]}}),
    );
    setup(sandbox, &config);
    home
}

fn assert_contained(sandbox: &Sandbox, home: &Path, steal: &str, scribble: &str) {
    assert!(steal.starts_with("blocked: "), "the server read ~/.ssh: {steal}");
    assert!(
        scribble.contains("blocked"),
        "the server wrote outside its directory: {scribble}"
    );
    assert!(!home.join("outside.txt").exists());
    assert!(called(sandbox, "steal").is_some_and(|text| !text.contains("PRIVATE KEY")));
}

/// The sandboxed server cannot read `~/.ssh` nor write outside its directory, through
/// `call`, `serve` and `mcp`.
#[tokio::test]
async fn a_sandboxed_server_reads_no_keys_and_writes_nowhere_else() {
    if !e2e::kernel_has(e2e::KernelFeature::Sandbox) {
        return;
    }
    let sandbox = Sandbox::new();
    let home = sandboxed(&sandbox);
    let run = |tool: &str| {
        let mut command = sandbox.command(&["call", tool, "{}", "--json"]);
        command.env("HOME", &home);
        let output = command.output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let value: Value = serde_json::from_slice(&output.stdout).unwrap();
        let structured = &value["output"]["structured"];
        structured["result"]
            .as_str()
            .or(structured.as_str())
            .unwrap()
            .to_string()
    };
    let (steal, scribble) = (run("evil_steal"), run("evil_scribble"));
    assert_contained(&sandbox, &home, &steal, &scribble);

    forget_calls(&sandbox);
    let mut command = sandbox.command(&["serve", "--listen", "127.0.0.1:0"]);
    command
        .env("HOME", &home)
        .env("TOOLGATE_SERVER_TOKEN", e2e::SERVER_TOKEN)
        .stdout(std::process::Stdio::piped());
    let served = Served::start(command);
    let mut answers = Vec::new();
    for tool in ["evil_steal", "evil_scribble"] {
        let (status, result) = post(
            format!("{}/session/ses_s/call", served.base),
            json!({"tool": tool, "input": {}}),
        )
        .await;
        assert_eq!(status, 200, "{result}");
        answers.push(text(&result));
    }
    assert_contained(&sandbox, &home, &answers[0], &answers[1]);
    drop(served);

    forget_calls(&sandbox);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/trust_client.py");
    let output = Command::new(e2e::python_with_mcp())
        .arg(script)
        .arg(e2e::toolgate_binary())
        .arg(sandbox.project())
        .arg("sandbox")
        .env("HOME", &home)
        // The temp directory is writable in the sandbox: not the one that holds the home.
        .env("TMPDIR", sandbox.root.path().join("tmp"))
        .env("TOOLGATE_DATA_DIR", sandbox.data_dir())
        .env("TOOLGATE_CONFIG_DIR", sandbox.config_dir())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_contained(
        &sandbox,
        &home,
        seen["steal"][1].as_str().unwrap(),
        seen["scribble"][1].as_str().unwrap(),
    );
}

/// An upstream elicitation reaches only the session whose call caused it: while calls of
/// two sessions are in flight on the server, it cannot be told whose it is and is declined
/// (no question appears for either); with one session's call alone, that session is asked.
#[tokio::test]
async fn an_elicitation_reaches_only_the_session_that_caused_it() {
    let sandbox = Sandbox::new();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/mcp_server.py");
    // A server of 2025-11-25: its elicitation/create names no call (a 2026-07-28 one's
    // input round is part of one call: see the test after this one).
    let config = json!({"mcp": {"py": {"type": "local", "timeout": 30000,
        "command": [e2e::python_with_mcp(), script, "stdio"], "environment": {"MCP_LEGACY_ONLY": "1"}}},
        "permission": {"py_*": "allow"}});
    setup(&sandbox, &config);
    let served = sandbox.serve(&[]);
    // Session A's call is in flight when session B's call elicits.
    let slow = call_in_background(
        &served,
        "ses_a",
        json!({"tool": "py_sleep", "input": {"seconds": 4, "tag": "a"}}),
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (status, result) = post(
        format!("{}/session/ses_b/call", served.base),
        json!({"tool": "py_ask_name", "input": {}}),
    )
    .await;
    assert_eq!(status, 200, "{result}");
    assert!(text(&result).contains("no name (decline)"), "{result}");
    assert!(get(&served, "/question").await.as_array().unwrap().is_empty());
    let (status, result) = slow.await.unwrap();
    assert_eq!(status, 200, "{result}");
    // Alone, B is asked — B and no one else.
    let call = call_in_background(&served, "ses_b", json!({"tool": "py_ask_name", "input": {}}));
    let question = pending(&served, "/question", Duration::from_secs(30))
        .await
        .expect("B was not asked");
    assert_eq!(question["sessionID"], "ses_b", "{question}");
    let id = question["id"].as_str().unwrap();
    let (status, _) = post(
        format!("{}/question/{id}/reply", served.base),
        json!({"answers": [["Bo"], []]}),
    )
    .await;
    assert_eq!(status, 200);
    let (_, result) = call.await.unwrap();
    assert!(text(&result).contains("hello Bo (30)"), "{result}");
}

#[tokio::test(flavor = "current_thread")]
async fn at_2026_07_28_an_input_round_reaches_the_session_of_its_call_whoever_else_calls() {
    let sandbox = Sandbox::new();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/mcp_server.py");
    let config = json!({"mcp": {"py": {"type": "local", "timeout": 30000,
        "command": [e2e::python_with_mcp(), script, "stdio"]}},
        "permission": {"py_*": "allow"}});
    setup(&sandbox, &config);
    let served = sandbox.serve(&[]);
    // Session A's call is in flight when session B's call asks: the form is part of B's
    // call, so it is put to B (and only to B) all the same.
    let slow = call_in_background(
        &served,
        "ses_a",
        json!({"tool": "py_sleep", "input": {"seconds": 4, "tag": "a"}}),
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let call = call_in_background(&served, "ses_b", json!({"tool": "py_ask_name", "input": {}}));
    let question = pending(&served, "/question", Duration::from_secs(30))
        .await
        .expect("B was not asked");
    assert_eq!(question["sessionID"], "ses_b", "{question}");
    let id = question["id"].as_str().unwrap();
    let (status, _) = post(
        format!("{}/question/{id}/reply", served.base),
        json!({"answers": [["Bo"], []]}),
    )
    .await;
    assert_eq!(status, 200);
    let (_, result) = call.await.unwrap();
    assert!(text(&result).contains("hello Bo (30)"), "{result}");
    let (status, result) = slow.await.unwrap();
    assert_eq!(status, 200, "{result}");
}

/// A server that floods its stderr leaves a bounded, rotated log.
#[test]
fn a_servers_stderr_log_is_bounded_and_rotated() {
    let sandbox = Sandbox::new();
    let flood = format!(
        "head -c 3500000 /dev/zero | tr '\\0' x >&2; exec {} {} stdio",
        e2e::python_with_mcp().display(),
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("python/mcp_server.py")
            .display()
    );
    setup(
        &sandbox,
        &json!({"mcp": {"loud": {"type": "local", "timeout": 60000, "command": ["sh", "-c", flood]}}}),
    );
    let (code, out, err) = sandbox.run(&["mcp", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("loud (stdio, connected)"), "{out}");
    let log = sandbox.data_dir().join("log/mcp/loud.log");
    let size = |path: PathBuf| std::fs::metadata(path).map_or(0, |m| m.len());
    let mib = 1 << 20;
    assert!(size(log.clone()) <= mib, "{}", size(log.clone()));
    assert_eq!(size(log.with_extension("log.1")), mib);
    assert_eq!(size(log.with_extension("log.2")), mib);
    assert!(!log.with_extension("log.3").exists());
}
