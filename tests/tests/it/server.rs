//! `toolgate serve` driven over real HTTP: auth and error paths, an approval through the
//! API with its events on the SSE stream, cancellation on disconnect, graceful shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use e2e::{Sandbox, Served};
use futures_util::StreamExt;
use serde_json::{Value, json};

const TOKEN: &str = e2e::SERVER_TOKEN;

fn serve(sandbox: &Sandbox) -> Served {
    sandbox.serve(&[])
}

fn client() -> reqwest::Client {
    // reqwest is built without a crypto provider (ring is installed where TLS is used).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

async fn get(served: &Served, path: &str) -> (u16, Value) {
    let response = client()
        .get(format!("{}{path}", served.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json_value().await)
}

async fn post(served: &Served, path: &str, body: &str) -> (u16, Value) {
    let response = client()
        .post(format!("{}{path}", served.base))
        .bearer_auth(TOKEN)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json_value().await)
}

trait JsonValue {
    async fn json_value(self) -> Value;
}

impl JsonValue for reqwest::Response {
    async fn json_value(self) -> Value {
        let bytes = self.bytes().await.unwrap();
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    }
}

#[tokio::test]
async fn auth_and_error_paths() {
    let sandbox = Sandbox::new();
    let served = serve(&sandbox);
    let anonymous = client().get(format!("{}/tool", served.base)).send().await.unwrap();
    assert_eq!(anonymous.status().as_u16(), 401);
    let wrong = client()
        .get(format!("{}/tool", served.base))
        .bearer_auth("nope")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
    let (status, tools) = get(&served, "/tool").await;
    assert_eq!(status, 200);
    assert!(tools.as_array().unwrap().iter().any(|t| t["name"] == "bash"));
    let (status, explore) = get(&served, "/tool?agent=explore").await;
    assert_eq!(status, 200);
    assert!(!explore.as_array().unwrap().iter().any(|t| t["name"] == "bash"));
    assert_eq!(get(&served, "/tool?agent=ghost").await.0, 400);
    assert_eq!(get(&served, "/nowhere").await.0, 404);
    let (status, body) = post(&served, "/permission/per_missing/reply", r#"{"reply": "once"}"#).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (404, "no pending permission request per_missing")
    );
    let (status, body) = post(&served, "/permission/per_missing/reply", r#"{"reply": "maybe"}"#).await;
    assert_eq!(status, 400);
    assert!(
        body["error"].as_str().unwrap().contains("unknown variant `maybe`"),
        "{body}"
    );
    assert_eq!(post(&served, "/session/s/call", "not json").await.0, 400);
    assert_eq!(post(&served, "/session/s/call", r#"{"tool": "nope"}"#).await.0, 400);
    assert_eq!(post(&served, "/question/q_missing/reject", "").await.0, 404);
    let response = client()
        .delete(format!("{}/approvals/per_missing", served.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    let (status, doc) = get(&served, "/doc").await;
    assert_eq!(status, 200);
    for path in [
        "/tool",
        "/session/{id}/call",
        "/permission",
        "/permission/{requestID}/reply",
        "/question",
        "/event",
        "/approvals/{id}",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} missing from /doc");
    }
}

#[tokio::test]
async fn an_approval_through_the_api_with_its_events() {
    let sandbox = Sandbox::new();
    sandbox.write("project/toolgate.json", r#"{"permission": {"bash": "ask"}}"#);
    let served = serve(&sandbox);
    let stream = client()
        .get(format!("{}/event", served.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let (sender, mut events) = tokio::sync::mpsc::unbounded_channel::<(String, Value)>();
    tokio::spawn(async move {
        let mut body = stream.bytes_stream();
        let mut buffer = String::new();
        while let Some(Ok(chunk)) = body.next().await {
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                let kind = block
                    .lines()
                    .find_map(|l| l.strip_prefix("event: "))
                    .unwrap_or("")
                    .to_string();
                let data = block.lines().find_map(|l| l.strip_prefix("data: ")).unwrap_or("null");
                let _ = sender.send((kind, serde_json::from_str(data).unwrap_or(Value::Null)));
            }
        }
    });
    let base = served.base.clone();
    let call = tokio::spawn(async move {
        let response = client()
            .post(format!("{base}/session/ses_http/call"))
            .bearer_auth(TOKEN)
            .body(json!({"tool": "bash", "input": {"command": "echo approved"}}).to_string())
            .send()
            .await
            .unwrap();
        response.json_value().await
    });
    let mut next = async |wanted: &str| loop {
        let (kind, data) = tokio::time::timeout(Duration::from_secs(20), events.recv())
            .await
            .unwrap()
            .unwrap();
        if kind == wanted {
            return data;
        }
    };
    let asked = next("permission.asked").await;
    let id = asked["properties"]["id"].as_str().unwrap().to_string();
    assert_eq!(asked["properties"]["resources"], json!(["echo approved"]));
    let (_, pending) = get(&served, "/permission").await;
    assert_eq!(pending[0]["id"], id);
    assert_eq!(
        post(&served, &format!("/permission/{id}/reply"), r#"{"reply": "once"}"#).await,
        (200, json!(true))
    );
    let replied = next("permission.replied").await;
    assert_eq!(
        replied["properties"],
        json!({"sessionID": "ses_http", "requestID": id, "reply": "once"})
    );
    let settled = next("tool.settled").await;
    assert_eq!(settled["properties"]["tool"], "bash");
    let result = call.await.unwrap();
    assert_eq!(result["result"]["type"], "text");
    assert!(result["result"]["value"].as_str().unwrap().starts_with("approved"));
    assert_eq!(result["declined"], false);
}

fn running(pattern: &str) -> bool {
    std::process::Command::new("pgrep")
        .args(["-f", pattern])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// Polls `done` every 20 ms until it holds or `limit` passes; true when it held.
async fn within(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + limit;
    while !done() {
        if std::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

#[tokio::test]
async fn a_client_that_disconnects_cancels_its_call() {
    let sandbox = Sandbox::new();
    sandbox.write("project/toolgate.json", r#"{"permission": {"bash": "allow"}}"#);
    let served = serve(&sandbox);
    let marker = "sleep 61.5";
    let request = client()
        .post(format!("{}/session/s/call", served.base))
        .bearer_auth(TOKEN)
        .body(json!({"tool": "bash", "input": {"command": marker}}).to_string())
        .send();
    let request = tokio::spawn(request);
    // Precondition: the command runs before the client goes away.
    assert!(
        within(Duration::from_secs(20), || running(marker)).await,
        "the call never started its command"
    );
    request.abort();
    assert!(request.await.is_err(), "the request was cut, not answered");
    assert!(
        within(Duration::from_secs(10), || !running(marker)).await,
        "the cancelled call left its process behind"
    );
    // The call is on record as cancelled, not left open and not settled.
    let audit = sandbox.data_dir().join("audit.jsonl");
    let cancelled = || {
        std::fs::read_to_string(&audit)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|entry| entry["tool"] == "bash")
            .map(|entry| entry["kind"].as_str().unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    assert!(
        within(Duration::from_secs(10), || cancelled()
            .contains(&"cancelled".to_string()))
        .await,
        "{:?}",
        cancelled()
    );
    assert!(!cancelled().contains(&"settled".to_string()), "{:?}", cancelled());
}

#[tokio::test]
async fn shutdown_declines_pending_asks_and_exits_zero() {
    let sandbox = Sandbox::new();
    sandbox.write("project/toolgate.json", r#"{"permission": {"bash": "ask"}}"#);
    let mut served = serve(&sandbox);
    let base = served.base.clone();
    let call = tokio::spawn(async move {
        client()
            .post(format!("{base}/session/s/call"))
            .bearer_auth(TOKEN)
            .body(json!({"tool": "bash", "input": {"command": "echo never"}}).to_string())
            .send()
            .await
            .unwrap()
            .json_value()
            .await
    });
    for _ in 0..100 {
        if get(&served, "/permission")
            .await
            .1
            .as_array()
            .is_some_and(|p| !p.is_empty())
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let pid = served.child.id() as i32;
    std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(result["declined"], true, "{result}");
    let status = tokio::task::spawn_blocking(move || served.child.wait().unwrap())
        .await
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

/// The pending asks, polled until there are `count` (10 s deadline).
async fn pending(served: &Served, count: usize) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (_, list) = get(served, "/permission").await;
        let list = list.as_array().cloned().unwrap_or_default();
        if list.len() >= count {
            return list;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "expected {count} pending asks: {list:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn call_in_background(served: &Served, session: &str, body: Value) -> tokio::task::JoinHandle<Value> {
    let url = format!("{}/session/{session}/call", served.base);
    tokio::spawn(async move {
        client()
            .post(url)
            .bearer_auth(TOKEN)
            .body(body.to_string())
            .send()
            .await
            .unwrap()
            .json_value()
            .await
    })
}

#[tokio::test]
async fn a_reply_to_another_projects_request_is_not_found() {
    // Replies are per project (spec §4.5): two servers, two projects; an id of one is unknown to the other.
    let (first, second) = (Sandbox::new(), Sandbox::new());
    for sandbox in [&first, &second] {
        sandbox.write("project/toolgate.json", r#"{"permission": {"bash": "ask"}}"#);
    }
    let (a, b) = (serve(&first), serve(&second));
    let call = call_in_background(&a, "s", json!({"tool": "bash", "input": {"command": "echo a"}}));
    let asked = pending(&a, 1).await;
    let id = asked[0]["id"].as_str().unwrap().to_string();
    let (status, body) = post(&b, &format!("/permission/{id}/reply"), r#"{"reply": "once"}"#).await;
    assert_eq!(
        (status, body["error"].as_str().unwrap()),
        (404, format!("no pending permission request {id}").as_str())
    );
    assert_eq!(pending(&a, 1).await[0]["id"], id, "still pending where it was asked");
    assert_eq!(
        post(&a, &format!("/permission/{id}/reply"), r#"{"reply": "once"}"#)
            .await
            .0,
        200
    );
    let result = call.await.unwrap();
    assert_eq!(result["result"]["type"], "text", "{result}");
}

#[tokio::test]
async fn a_whitespace_message_rejects_as_a_correction() {
    let sandbox = Sandbox::new();
    sandbox.write("project/toolgate.json", r#"{"permission": {"bash": "ask"}}"#);
    let served = serve(&sandbox);
    let call = call_in_background(&served, "s", json!({"tool": "bash", "input": {"command": "echo x"}}));
    let id = pending(&served, 1).await[0]["id"].as_str().unwrap().to_string();
    let reply = json!({"reply": "reject", "message": "   "}).to_string();
    assert_eq!(post(&served, &format!("/permission/{id}/reply"), &reply).await.0, 200);
    let result = call.await.unwrap();
    assert_eq!(result["declined"], false, "a correction lets the loop go on: {result}");
    assert_eq!(
        result["result"]["value"],
        "The user rejected permission to use this specific tool call with the following feedback:    "
    );
}

#[tokio::test]
async fn serve_asks_doom_loop_per_session() {
    let sandbox = Sandbox::new();
    sandbox.write("project/a.txt", "alpha\n");
    sandbox.write("project/toolgate.json", r#"{"doom_loop_threshold": 2}"#);
    let served = serve(&sandbox);
    let body = json!({"tool": "read", "input": {"path": "a.txt"}});
    let (status, first) = post(&served, "/session/s1/call", &body.to_string()).await;
    assert_eq!((status, &first["result"]["type"]), (200, &json!("text")), "{first}");
    // The second identical call of the session asks doom_loop, naming the tool.
    let call = call_in_background(&served, "s1", body.clone());
    let asked = pending(&served, 1).await;
    assert_eq!(asked[0]["action"], "doom_loop");
    assert_eq!(asked[0]["resources"], json!(["read"]));
    assert_eq!(asked[0]["metadata"]["input"], json!({"path": "a.txt"}));
    let id = asked[0]["id"].as_str().unwrap();
    assert_eq!(
        post(&served, &format!("/permission/{id}/reply"), r#"{"reply": "reject"}"#)
            .await
            .0,
        200
    );
    let result = call.await.unwrap();
    assert_eq!(result["declined"], true, "{result}");
    // Another session, or the same values in another key order, is not a loop.
    let (_, other) = post(&served, "/session/s2/call", &body.to_string()).await;
    assert_eq!(other["result"]["type"], "text", "{other}");
    let reordered = r#"{"tool": "read", "input": {"path": "a.txt", "limit": 1}}"#;
    let (_, once) = post(&served, "/session/s3/call", reordered).await;
    assert_eq!(once["result"]["type"], "text", "{once}");
    let (_, swapped) = post(
        &served,
        "/session/s3/call",
        r#"{"tool": "read", "input": {"limit": 1, "path": "a.txt"}}"#,
    )
    .await;
    assert_eq!(swapped["result"]["type"], "text", "key order counts: {swapped}");
}

#[tokio::test]
async fn the_ask_payload_carries_the_file_diff_and_the_allowed_parts() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"edit": "ask", "bash": {"*": "ask", "ls *": "allow"}}}"#,
    );
    let text: String = (1..=30).map(|n| format!("row {n}\n")).collect();
    sandbox.write("project/rows.txt", &text);
    let served = serve(&sandbox);
    let edit = call_in_background(
        &served,
        "s",
        json!({"tool": "edit", "input": {"path": "rows.txt", "oldString": "row 20\n", "newString": "row twenty\n"}}),
    );
    let asked = pending(&served, 1).await;
    let diff = asked[0]["metadata"]["diff"].as_str().unwrap();
    assert!(
        diff.starts_with("--- rows.txt\n+++ rows.txt\n@@ -17,7 +17,7 @@\n row 17\n"),
        "{diff}"
    );
    assert!(diff.contains("-row 20\n+row twenty\n row 21\n"), "{diff}");
    let id = asked[0]["id"].as_str().unwrap();
    post(&served, &format!("/permission/{id}/reply"), r#"{"reply": "reject"}"#).await;
    edit.await.unwrap();
    let bash = call_in_background(
        &served,
        "t",
        json!({"tool": "bash", "input": {"command": "ls && touch new"}}),
    );
    let asked = pending(&served, 1).await;
    assert_eq!(asked[0]["resources"], json!(["ls", "touch new"]));
    assert_eq!(asked[0]["allowed"], json!(["ls"]));
    assert_eq!(asked[0]["save"], json!(["touch *"]));
    let id = asked[0]["id"].as_str().unwrap();
    post(&served, &format!("/permission/{id}/reply"), r#"{"reply": "reject"}"#).await;
    bash.await.unwrap();
}

/// Lines built to crash the analysis, through `toolgate serve`: 1,500 and 7,000 nested `$(` and
/// 80,000 commands in one line are each answered over HTTP (denied under rules that
/// denies all but `echo`), and the server answers the next request.
#[tokio::test]
async fn lines_built_to_crash_the_bash_analysis_are_answered_over_http() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": {"*": "deny", "echo *": "allow"}}}"#,
    );
    let served = serve(&sandbox);
    let nested = |depth: usize| format!("{}touch ran{}", "$(".repeat(depth), ")".repeat(depth));
    let lines = [nested(1_500), nested(7_000), "touch ran; ".repeat(80_000)];
    for (index, line) in lines.iter().enumerate() {
        let body = json!({"tool": "bash", "input": {"command": line, "description": "hostile"}});
        let (status, answer) = post(&served, &format!("/session/h{index}/call"), &body.to_string()).await;
        let shown = answer.to_string();
        let shown = &shown[..shown.len().min(600)];
        assert_eq!(status, 200, "line {index}: {shown}");
        assert!(shown.contains("denied"), "line {index}: {shown}");
        let (status, _) = get(&served, "/doc").await;
        assert_eq!(status, 200, "line {index}: the server stopped answering");
    }
    assert!(!sandbox.project().join("ran").exists());
}

/// The trust of a project's config files over the HTTP API (README "Trusted project
/// files"), the routes the page will use: `GET /trust` lists each untrusted file with its
/// SHA-256 (the one `toolgate config` shows) and the parts ignored until it is trusted,
/// each with what it would change; `POST /trust` trusts exactly that (path, sha256) pair,
/// refuses a hash the file no longer has (409), says so on the event stream
/// (`trust.changed`), and records the trust where `toolgate` reads it (the MCP server
/// starts at the next load). The same bearer and Host/Origin guard as every route.
#[tokio::test]
async fn project_files_are_trusted_over_http_by_exact_hash_with_an_event() {
    let sandbox = Sandbox::new();
    std::fs::create_dir(sandbox.project().join(".git")).unwrap();
    let marker = sandbox.root.path().join("started");
    let config = |extra: &str| {
        json!({
            "mcp": {"x": {"type": "local", "command": ["sh", "-c", format!("touch {}", marker.display())]}},
            "sandbox": {"mode": "off"},
            "permission": {"bash": {"*": "allow", "rm *": extra}},
        })
        .to_string()
    };
    sandbox.write("config/toolgate.json", r#"{"sandbox": {"mode": "workspace-write"}}"#);
    sandbox.write("project/opencode.json", &config("deny"));
    let served = serve(&sandbox);
    let file = std::fs::canonicalize(sandbox.project().join("opencode.json")).unwrap();
    let file = file.display().to_string();

    // The guard: no token, a wrong token or a foreign Origin is refused.
    let anonymous = client().get(format!("{}/trust", served.base)).send().await.unwrap();
    assert_eq!(anonymous.status().as_u16(), 401);
    let foreign = client()
        .post(format!("{}/trust", served.base))
        .bearer_auth(TOKEN)
        .header("Origin", "http://evil.example")
        .body(json!({"path": file, "sha256": "0"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status().as_u16(), 403);

    let stream = client()
        .get(format!("{}/event", served.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    let (sender, mut events) = tokio::sync::mpsc::unbounded_channel::<(String, Value)>();
    tokio::spawn(async move {
        let mut body = stream.bytes_stream();
        let mut buffer = String::new();
        while let Some(Ok(chunk)) = body.next().await {
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                let kind = block.lines().find_map(|l| l.strip_prefix("event: ")).unwrap_or("");
                let data = block.lines().find_map(|l| l.strip_prefix("data: ")).unwrap_or("null");
                let _ = sender.send((kind.to_string(), serde_json::from_str(data).unwrap_or(Value::Null)));
            }
        }
    });

    let (status, listed) = get(&served, "/trust").await;
    assert_eq!(status, 200, "{listed}");
    let files = listed.as_array().unwrap();
    assert_eq!(files.len(), 1, "{listed}");
    assert_eq!(files[0]["path"], file.as_str());
    assert_eq!(files[0]["trusted"], false);
    let keys: Vec<&str> = files[0]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["mcp.x", "sandbox.mode"], "{listed}");
    assert!(
        files[0]["parts"][0]["change"]
            .as_str()
            .unwrap()
            .starts_with("start mcp server \"x\""),
        "{listed}"
    );
    assert_eq!(files[0]["parts"][1]["value"], "off", "{listed}");
    let first = files[0]["sha256"].as_str().unwrap().to_string();
    // The hash `toolgate config` shows for the same file.
    let (_, out, _) = sandbox.run(&["config", "--json"]);
    assert!(out.contains(&first), "{out}");

    // The file changes after it was shown: the shown hash is stale.
    sandbox.write("project/opencode.json", &config("ask"));
    let (status, body) = post(&served, "/trust", &json!({"path": file, "sha256": first}).to_string()).await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("has changed since it was shown"),
        "{body}"
    );
    assert!(!marker.exists());
    let (status, body) = post(
        &served,
        "/trust",
        &json!({"path": "nothing.json", "sha256": first}).to_string(),
    )
    .await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(post(&served, "/trust", r#"{"path": 1}"#).await.0, 400);

    // The content as it is now, by a relative spelling: trusted, and said on the stream.
    let (_, listed) = get(&served, "/trust").await;
    let current = listed[0]["sha256"].as_str().unwrap().to_string();
    assert_ne!(current, first);
    let (status, body) = post(
        &served,
        "/trust",
        &json!({"path": "./opencode.json", "sha256": current}).to_string(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["path"].as_str(), body["trusted"].as_bool()),
        (Some(file.as_str()), Some(true))
    );
    let changed = loop {
        let (kind, data) = tokio::time::timeout(Duration::from_secs(20), events.recv())
            .await
            .unwrap()
            .unwrap();
        if kind == "trust.changed" {
            break data;
        }
    };
    assert_eq!(changed, json!({"path": file, "sha256": current, "trusted": true}));
    let (_, listed) = get(&served, "/trust").await;
    assert_eq!(listed, json!([]));

    // Recorded where toolgate reads trust: the next load starts the server.
    let (code, _, err) = sandbox.run(&["mcp", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(marker.exists(), "the trusted server was not started: {err}");
    let (_, doc) = get(&served, "/doc").await;
    assert!(doc["paths"].get("/trust").is_some());
}
