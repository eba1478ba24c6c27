//! `toolgate serve` driven over real HTTP: auth and error paths, an approval through the
//! API with its events on the SSE stream, cancellation on disconnect, graceful shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::Duration;

use e2e::Sandbox;
use futures_util::StreamExt;
use serde_json::{Value, json};

const TOKEN: &str = "test-token-123";

struct Served {
    child: Child,
    base: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(sandbox: &Sandbox) -> Served {
    let mut command = sandbox.command(&["serve", "--listen", "127.0.0.1:0"]);
    command.env("TOOLGATE_SERVER_TOKEN", TOKEN).stdout(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let base = first
        .strip_prefix("toolgate: listening on ")
        .unwrap_or_else(|| panic!("{first}"))
        .to_string();
    assert_eq!(lines.next().unwrap().unwrap(), format!("toolgate: token {TOKEN}"));
    Served { child, base }
}

fn client() -> reqwest::Client {
    // reqwest is built without a crypto provider (ring is installed where TLS is used).
    toolgate_builtins_net::fetch::install_crypto_provider();
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
