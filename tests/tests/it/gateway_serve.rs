//! `toolgate serve` as an MCP gateway (the gateway works through `call`, `serve` and
//! `mcp` alike): a configured server's tools are listed and called over HTTP, its asks wait
//! for a reply through the API, and its elicitations become HTTP questions.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use e2e::{Sandbox, Served};
use serde_json::{Value, json};

const TOKEN: &str = e2e::SERVER_TOKEN;

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

async fn get(served: &Served, path: &str) -> Value {
    let response = client()
        .get(format!("{}{path}", served.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200, "GET {path}");
    serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
}

async fn post(served: &Served, path: &str, body: Value) -> (u16, Value) {
    post_to(format!("{}{path}", served.base), body).await
}

async fn post_to(url: String, body: Value) -> (u16, Value) {
    let response = client()
        .post(url)
        .bearer_auth(TOKEN)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let bytes = response.bytes().await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// A call that may wait for a person, run while the test answers.
fn call_in_background(served: &Served, session: &str, body: Value) -> tokio::task::JoinHandle<(u16, Value)> {
    tokio::spawn(post_to(format!("{}/session/{session}/call", served.base), body))
}

/// Polls `path` until its list has an entry (30 s: the server starts lazily).
async fn first_pending(served: &Served, path: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let list = get(served, path).await;
        if let Some(first) = list.as_array().and_then(|l| l.first()) {
            return first.clone();
        }
        assert!(Instant::now() < deadline, "nothing pending at {path}");
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

#[tokio::test]
async fn serve_lists_calls_asks_and_elicits_through_http() {
    let sandbox = Sandbox::new();
    let marks = sandbox.root.path().join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/mcp_server.py");
    let config = json!({
        "mcp": {"py": {
            "type": "local",
            "command": [e2e::python_with_mcp(), script, "stdio"],
            "environment": {"MARKS": marks},
            "timeout": 30000,
        }},
        "permission": {"py_*": "allow", "py_wipe": "ask", "py_crash": "deny"},
    });
    sandbox.write("project/toolgate.json", &config.to_string());
    sandbox.trust();
    let served = sandbox.serve(&[]);

    // Listed next to the builtins; a wholly denied tool is not offered.
    let tools = get(&served, "/tool").await;
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for name in ["read", "py_echo", "py_ask_name", "py_wipe"] {
        assert!(names.contains(&name), "{name} missing: {names:?}");
    }
    assert!(!names.contains(&"py_crash"), "{names:?}");

    // Called; invalid input never reaches the server.
    let (status, result) = post(
        &served,
        "/session/ses_gw/call",
        json!({"tool": "py_echo", "input": {"text": "over http"}}),
    )
    .await;
    assert_eq!(status, 200, "{result}");
    assert!(text(&result).contains("over http"), "{result}");
    let (_, result) = post(
        &served,
        "/session/ses_gw/call",
        json!({"tool": "py_echo", "input": {"text": 7}}),
    )
    .await;
    assert!(text(&result).contains("Invalid tool input"), "{result}");
    assert_eq!(std::fs::read_to_string(marks.join("echo")).unwrap(), "over http");

    // An elicitation is an HTTP question of the calling session; the answers reach the server.
    let call = call_in_background(&served, "ses_gw", json!({"tool": "py_ask_name", "input": {}}));
    let question = first_pending(&served, "/question").await;
    assert_eq!(question["sessionID"], "ses_gw", "{question}");
    let asked = question["questions"][0]["question"].as_str().unwrap();
    assert!(asked.contains("[MCP server py] What is your name?"), "{question}");
    let id = question["id"].as_str().unwrap();
    let (status, _) = post(
        &served,
        &format!("/question/{id}/reply"),
        json!({"answers": [["Grace"], []]}),
    )
    .await;
    assert_eq!(status, 200);
    let (status, result) = call.await.unwrap();
    assert_eq!(status, 200, "{result}");
    assert!(text(&result).contains("hello Grace (30)"), "{result}");

    // Dismissed: the server hears a decline.
    let call = call_in_background(&served, "ses_gw", json!({"tool": "py_ask_name", "input": {}}));
    let question = first_pending(&served, "/question").await;
    let id = question["id"].as_str().unwrap();
    assert_eq!(
        post(&served, &format!("/question/{id}/reject"), json!(null)).await.0,
        200
    );
    let (_, result) = call.await.unwrap();
    assert!(text(&result).contains("no name (decline)"), "{result}");

    // An asked tool waits for a reply through the API; nothing reaches the server before.
    let call = call_in_background(
        &served,
        "ses_gw",
        json!({"tool": "py_wipe", "input": {"target": "staging"}}),
    );
    let ask = first_pending(&served, "/permission").await;
    assert_eq!(ask["action"], "py_wipe", "{ask}");
    assert!(
        !marks.join("wiped").exists(),
        "the server ran an asked tool before the reply"
    );
    let id = ask["id"].as_str().unwrap();
    let (status, _) = post(&served, &format!("/permission/{id}/reply"), json!({"reply": "once"})).await;
    assert_eq!(status, 200);
    let (status, result) = call.await.unwrap();
    assert_eq!(status, 200, "{result}");
    assert_eq!(std::fs::read_to_string(marks.join("wiped")).unwrap(), "staging");
}
