//! `toolgate serve`'s `/mcp` with real clients, on what a person's answer takes: an
//! official TypeScript SDK client that waits minutes for a person because progress
//! keeps coming, one request id per running request, and `DELETE /mcp`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use e2e::{Sandbox, Served};
use serde_json::{Value, json};

const TOKEN: &str = e2e::SERVER_TOKEN;

fn client() -> reqwest::Client {
    // reqwest is built without a crypto provider (ring is installed where TLS is used).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// A project whose every bash command is asked.
fn asking_project() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("project/toolgate.json", r#"{"permission": {"bash": {"*": "ask"}}}"#);
    sandbox
}

/// The pending asks, polled until there are `count` (60 s deadline: a client process
/// starts first).
async fn pending(served: &Served, count: usize) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let body = client()
            .get(format!("{}/permission", served.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let list: Value = serde_json::from_slice(&body).unwrap();
        let list = list.as_array().cloned().unwrap_or_default();
        if list.len() >= count {
            return list;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "expected {count} pending asks: {list:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn reply(served: &Served, id: &str, body: Value) {
    let response = client()
        .post(format!("{}/permission/{id}/reply", served.base))
        .bearer_auth(TOKEN)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200, "{:?}", response.text().await);
}

/// The Done-when of the MCP side: a Node TS-SDK client without elicitation, with the
/// SDK's default 60 s request timeout and `resetTimeoutOnProgress`, calls bash over
/// `/mcp`; the ask stays pending for 3 minutes (a person away), is answered through
/// the HTTP API (as the page does), and the client gets the command's output, not a
/// timeout, because progress naming the ask kept coming. The test sleeps meanwhile.
#[tokio::test]
async fn a_typescript_sdk_client_waits_three_minutes_for_a_person_because_progress_arrives() {
    let sandbox = asking_project();
    let served = sandbox.serve(&[]);
    let tools = e2e::npm_tools();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("node/wait_client.cjs");
    let arguments = json!({"command": "echo waited for a person", "description": "waits"}).to_string();
    let node = std::process::Command::new(e2e::node())
        .arg(script)
        .args([&format!("{}/mcp", served.base), TOKEN, "bash", &arguments])
        .env("NPM_TOOLS", &tools)
        .env("NO_PROXY", "*")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let node_pid = node.id();
    let client_ended = tokio::task::spawn_blocking(move || node.wait_with_output());
    let asks = pending(&served, 1).await;
    let id = asks[0]["id"].as_str().unwrap().to_string();
    // A person away for three minutes: three times the client's request timeout.
    tokio::time::sleep(Duration::from_secs(180)).await;
    assert!(
        !client_ended.is_finished(),
        "the client gave up before the person answered"
    );
    reply(&served, &id, json!({"reply": "once"})).await;
    let Ok(output) = tokio::time::timeout(Duration::from_secs(60), client_ended).await else {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(i32::try_from(node_pid).unwrap()).unwrap(),
            rustix::process::Signal::KILL,
        );
        panic!("the client did not end once the call was answered");
    };
    let output = output.unwrap().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(seen["error"], Value::Null, "{seen}");
    assert_eq!(seen["result"]["isError"], false, "{seen}");
    assert!(
        seen["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("waited for a person"),
        "{seen}"
    );
    assert!(seen["seconds"].as_f64().unwrap() >= 180.0, "{seen}");
    let progress = seen["progress"].as_array().unwrap();
    // One every 3 s while the ask waits: far more than the 3 a 60 s timeout needs.
    assert!(
        progress.len() >= 30,
        "{} progress notifications: {seen}",
        progress.len()
    );
    let last = progress.last().unwrap()["at"].as_f64().unwrap();
    assert!(last >= 170.0, "progress kept coming until the answer: {seen}");
    let message = progress[0]["message"].as_str().unwrap();
    assert_eq!(
        message,
        format!(
            "waiting for a person to answer a permission ask (bash: echo waited for a person) in toolgate serve's \
             page, on the terminal (`toolgate approve {id}`) or with POST /permission/{id}/reply"
        )
    );
    // Ending the session the SDK's way went through (DELETE /mcp).
    assert_eq!(seen["ended"], "ok", "{seen}");
}

/// A raw streamable HTTP MCP session: initialized, with the headers the spec asks for.
struct Session {
    base: String,
    id: String,
}

impl Session {
    async fn start(served: &Served) -> Session {
        let response = client()
            .post(format!("{}/mcp", served.base))
            .bearer_auth(TOKEN)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .body(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
                .to_string(),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        let id = response.headers()["mcp-session-id"].to_str().unwrap().to_string();
        let session = Session {
            base: served.base.clone(),
            id,
        };
        let _ = response.text().await;
        let answer = session
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(answer.status().as_u16(), 202);
        session
    }

    async fn post(&self, message: Value) -> reqwest::Response {
        client()
            .post(format!("{}/mcp", self.base))
            .bearer_auth(TOKEN)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .header("Mcp-Session-Id", &self.id)
            .header("MCP-Protocol-Version", "2025-06-18")
            .body(message.to_string())
            .send()
            .await
            .unwrap()
    }
}

/// The first JSON-RPC message answering `id` in a response (an SSE stream, or JSON).
async fn answer_to(response: reqwest::Response, id: u64) -> Value {
    use futures_util::StreamExt;
    let mut body = response.bytes_stream();
    let mut text = String::new();
    while let Some(chunk) = body.next().await {
        text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        for line in text.lines() {
            let data = line.strip_prefix("data:").unwrap_or(line).trim();
            if let Ok(message) = serde_json::from_str::<Value>(data)
                && message["id"] == id
                && message.get("method").is_none()
            {
                return message;
            }
        }
    }
    panic!("no answer to {id} in {text}");
}

/// A second request under the id of a request still running (an ask pending) is
/// answered with -32600 naming the id; the first still gets its own answer once the
/// person answers, and the id is free again after. `DELETE /mcp` then ends the session
/// with 204, and the session is gone.
#[tokio::test]
async fn over_http_a_request_id_in_use_is_refused_and_the_first_answer_still_comes() {
    let sandbox = asking_project();
    let served = sandbox.serve(&[]);
    let session = Session::start(&served).await;
    let first = session
        .post(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "bash", "arguments": {"command": "echo first", "description": "first"}}}))
        .await;
    let first = tokio::spawn(answer_to(first, 7));
    let asks = pending(&served, 1).await;
    let second = session
        .post(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "bash", "arguments": {"command": "echo second", "description": "second"}}}))
        .await;
    let refused = tokio::time::timeout(Duration::from_secs(30), answer_to(second, 7))
        .await
        .expect("the reused id is answered at once");
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert_eq!(
        refused["error"]["message"],
        "Invalid Request: request id 7 is already in use by a request that is still running"
    );
    // The second call never ran: still one ask, the first's.
    assert_eq!(pending(&served, 1).await.len(), 1);
    reply(&served, asks[0]["id"].as_str().unwrap(), json!({"reply": "once"})).await;
    let answered = tokio::time::timeout(Duration::from_secs(30), first)
        .await
        .expect("the first request is answered")
        .unwrap();
    assert_eq!(answered["result"]["isError"], false, "{answered}");
    assert!(
        answered["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("first"),
        "{answered}"
    );
    // Answered: the id may be used again.
    let again = session.post(json!({"jsonrpc": "2.0", "id": 7, "method": "ping"})).await;
    assert_eq!(answer_to(again, 7).await["result"], json!({}));

    let ended = client()
        .delete(format!("{}/mcp", served.base))
        .bearer_auth(TOKEN)
        .header("Mcp-Session-Id", &session.id)
        .header("MCP-Protocol-Version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status().as_u16(), 204);
    let after = session.post(json!({"jsonrpc": "2.0", "id": 8, "method": "ping"})).await;
    assert_eq!(after.status().as_u16(), 404, "the session is gone");
}
