//! The load of `http_load` over MCP: 50 concurrent clients, each with its own MCP session
//! at `/mcp` (streamable HTTP, initialize + initialized), calling `read` of a one-line
//! file with `tools/call` for 10 s against the release `toolgate serve`. Prints calls/s,
//! p99 latency and errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const CLIENTS: usize = 50;
const SECONDS: u64 = 10;
const TOKEN: &str = "load-test-token-0123456789abcdefghij";

/// The JSON-RPC message answering request `id` in an MCP POST response (SSE or JSON).
fn answer(body: &str, id: u64) -> Option<Value> {
    let candidates: Vec<&str> = if body.trim_start().starts_with('{') {
        vec![body]
    } else {
        body.lines().filter_map(|line| line.strip_prefix("data:")).collect()
    };
    candidates
        .into_iter()
        .filter_map(|text| serde_json::from_str::<Value>(text.trim()).ok())
        .find(|message| message["id"] == id)
}

async fn post(client: &reqwest::Client, url: &str, session: Option<&str>, message: &Value) -> (String, Option<String>) {
    let mut request = client
        .post(url)
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .body(message.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = request.send().await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    (response.text().await.unwrap(), session)
}

fn main() {
    let server = e2e::LoadServer::start(TOKEN);
    let base = server.base.clone();
    let url = format!("{base}/mcp");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (calls, errors, p99, elapsed) = runtime.block_on(async move {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .no_proxy()
            .pool_max_idle_per_host(CLIENTS)
            .build()
            .unwrap();
        // One session per client, opened before the clock starts.
        let mut sessions = Vec::new();
        for _ in 0..CLIENTS {
            let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "load", "version": "1"}}});
            let (body, session) = post(&client, &url, None, &initialize).await;
            assert!(answer(&body, 0).is_some(), "no initialize answer: {body}");
            let session = session.expect("no Mcp-Session-Id");
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            let _ = post(&client, &url, Some(&session), &initialized).await;
            sessions.push(session);
        }
        let errors = Arc::new(AtomicU64::new(0));
        let deadline = Instant::now() + Duration::from_secs(SECONDS);
        let start = Instant::now();
        let mut tasks = Vec::new();
        for session in sessions {
            let client = client.clone();
            let url = url.clone();
            let errors = Arc::clone(&errors);
            tasks.push(tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut id = 1u64;
                while Instant::now() < deadline {
                    id += 1;
                    let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                        "params": {"name": "read", "arguments": {"path": "one.txt"}}});
                    let sent = Instant::now();
                    let (body, _) = post(&client, &url, Some(&session), &call).await;
                    let ok = answer(&body, id).is_some_and(|message| {
                        message["result"]["isError"] == false
                            && message["result"]["content"][0]["text"]
                                .as_str()
                                .is_some_and(|text| text.contains("one line"))
                    });
                    if !ok {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                    latencies.push(sent.elapsed());
                }
                latencies
            }));
        }
        let mut all = Vec::new();
        for task in tasks {
            all.extend(task.await.unwrap());
        }
        let elapsed = start.elapsed().as_secs_f64();
        all.sort();
        let p99 = all[all.len() * 99 / 100];
        (all.len() as u64, errors.load(Ordering::Relaxed), p99, elapsed)
    });
    drop(server);
    println!("figure mcp_calls_per_second {:.0}", calls as f64 / elapsed);
    println!("figure mcp_p99_ms {:.2}", p99.as_secs_f64() * 1000.0);
    println!("figure mcp_errors {errors}");
}
