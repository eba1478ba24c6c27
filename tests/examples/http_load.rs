//! 50 concurrent clients calling a near no-op tool (`read` of a one-line file) over HTTP
//! on loopback for 10 s against the release `toolgate serve`, with an SSE subscriber
//! counting `tool.settled` events. Prints calls/s, p99 latency, errors and lost events.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;

const CLIENTS: usize = 50;
const SECONDS: u64 = 10;
const TOKEN: &str = "load-test-token-0123456789abcdefghij";

fn main() {
    let server = e2e::LoadServer::start(TOKEN);
    let base = server.base.clone();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (calls, errors, events, quantiles, elapsed, lagged) = runtime.block_on(async move {
        let client = reqwest::Client::builder()
            .no_proxy()
            .pool_max_idle_per_host(CLIENTS)
            .build()
            .unwrap();
        let events = Arc::new(AtomicU64::new(0));
        let lag_notices = Arc::new(AtomicU64::new(0));
        let stream = client
            .get(format!("{base}/event"))
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        let counted = Arc::clone(&events);
        let told = Arc::clone(&lag_notices);
        tokio::spawn(async move {
            let mut body = stream.bytes_stream();
            // Whole lines only: an event name split across two chunks is counted once, when
            // its line is complete.
            let mut pending: Vec<u8> = Vec::new();
            let mut lagged_event = false;
            while let Some(Ok(chunk)) = body.next().await {
                pending.extend_from_slice(&chunk);
                let Some(last) = pending.iter().rposition(|&b| b == b'\n') else {
                    continue;
                };
                for line in pending[..last].split(|&b| b == b'\n') {
                    if line == b"event: tool.settled" {
                        counted.fetch_add(1, Ordering::Relaxed);
                    } else if line == b"event: events.lagged" {
                        lagged_event = true;
                    } else if lagged_event && line.starts_with(b"data: ") {
                        // The server tells a subscriber that fell behind how many events it
                        // missed, and whether the stream itself or one of its sources lagged.
                        lagged_event = false;
                        eprintln!("events.lagged {}", String::from_utf8_lossy(&line[6..]));
                        told.fetch_add(1, Ordering::Relaxed);
                    }
                }
                pending.drain(..=last);
            }
        });
        let errors = Arc::new(AtomicU64::new(0));
        let deadline = Instant::now() + Duration::from_secs(SECONDS);
        let start = Instant::now();
        let mut tasks = Vec::new();
        for n in 0..CLIENTS {
            let client = client.clone();
            let base = base.clone();
            let errors = Arc::clone(&errors);
            tasks.push(tokio::spawn(async move {
                let mut latencies = Vec::new();
                let body = r#"{"tool": "read", "input": {"path": "one.txt"}}"#;
                while Instant::now() < deadline {
                    let sent = Instant::now();
                    let response = client
                        .post(format!("{base}/session/ses_{n}/call"))
                        .bearer_auth(TOKEN)
                        .body(body)
                        .send()
                        .await;
                    match response {
                        Ok(r) if r.status().is_success() => {
                            let _ = r.bytes().await;
                        }
                        _ => {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
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
        // A subscriber that fell behind is still reading its backlog: wait until every
        // call's event arrived, or until the count stops moving (what is missing then is
        // lost, not late).
        let calls = all.len() as u64;
        let mut seen = events.load(Ordering::Relaxed);
        let mut still_since = Instant::now();
        while seen < calls && still_since.elapsed() < Duration::from_secs(2) {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let now = events.load(Ordering::Relaxed);
            if now != seen {
                seen = now;
                still_since = Instant::now();
            }
        }
        all.sort();
        // p50, p99, p99.9 and the slowest call: the shape of the tail, not only its p99.
        let at = |per_mille: usize| all[(all.len() * per_mille / 1000).min(all.len() - 1)];
        let quantiles = [at(500), at(990), at(999), at(1000)];
        (
            all.len() as u64,
            errors.load(Ordering::Relaxed),
            events.load(Ordering::Relaxed),
            quantiles,
            elapsed,
            lag_notices.load(Ordering::Relaxed),
        )
    });
    drop(server);
    println!("figure http_calls_per_second {:.0}", calls as f64 / elapsed);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("figure http_p50_ms {:.2}", ms(quantiles[0]));
    println!("figure http_p99_ms {:.2}", ms(quantiles[1]));
    println!("figure http_p999_ms {:.2}", ms(quantiles[2]));
    println!("figure http_max_ms {:.2}", ms(quantiles[3]));
    println!("figure http_errors {errors}");
    println!("figure http_lost_events {}", calls.saturating_sub(events));
    // Where lost events went: a subscriber too slow to keep up is told (`events.lagged`).
    println!("figure http_lag_notices {lagged}");
}
