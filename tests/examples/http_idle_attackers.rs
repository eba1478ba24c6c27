//! 1,000 attacker connections held open against the release `toolgate serve` — each
//! sends half a request head and, when the server closes it (the 10 s header timeout),
//! opens another at once — while 10 authenticated keep-alive clients call `read` of a
//! one-line file for 15 s (so one whole timeout wave falls inside the run). Prints the
//! p99 latency of the authenticated calls, their rate, and errors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ATTACKERS: u64 = 1000;
const CLIENTS: usize = 10;
const SECONDS: u64 = 15;
const TOKEN: &str = "load-test-token-0123456789abcdefghij";

fn main() {
    // This process holds the attackers' sockets: it needs more than 1,024 files.
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let _ = rustix::process::setrlimit(
        rustix::process::Resource::Nofile,
        rustix::process::Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        },
    );
    let server = e2e::LoadServer::start(TOKEN);
    let base = server.base.clone();
    let address: std::net::SocketAddr = base.trim_start_matches("http://").parse().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (calls, errors, p99, elapsed, reopened) = runtime.block_on(async move {
        let open = Arc::new(AtomicU64::new(0));
        let reopened = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let head = format!("POST /session/s/call HTTP/1.1\r\nHost: {address}\r\nContent-Le");
        for _ in 0..ATTACKERS {
            let (open, reopened, stop, head) = (
                Arc::clone(&open),
                Arc::clone(&reopened),
                Arc::clone(&stop),
                head.clone(),
            );
            tokio::spawn(async move {
                let mut first = true;
                while !stop.load(Ordering::Relaxed) {
                    let Ok(mut stream) = tokio::net::TcpStream::connect(address).await else {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    };
                    if !first {
                        reopened.fetch_add(1, Ordering::Relaxed);
                    }
                    first = false;
                    let _ = stream.write_all(head.as_bytes()).await;
                    open.fetch_add(1, Ordering::Relaxed);
                    let mut buffer = [0u8; 64];
                    // Held until the server closes it.
                    while matches!(stream.read(&mut buffer).await, Ok(n) if n > 0) {}
                    open.fetch_sub(1, Ordering::Relaxed);
                }
            });
        }
        let ready = Instant::now() + Duration::from_secs(30);
        while open.load(Ordering::Relaxed) < ATTACKERS {
            assert!(
                Instant::now() < ready,
                "only {} attackers connected",
                open.load(Ordering::Relaxed)
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .no_proxy()
            .pool_max_idle_per_host(CLIENTS)
            .build()
            .unwrap();
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
        stop.store(true, Ordering::Relaxed);
        all.sort();
        let p99 = all[all.len() * 99 / 100];
        (
            all.len() as u64,
            errors.load(Ordering::Relaxed),
            p99,
            elapsed,
            reopened.load(Ordering::Relaxed),
        )
    });
    drop(server);
    println!("figure attacked_p99_ms {:.2}", p99.as_secs_f64() * 1000.0);
    println!("figure attacked_calls_per_second {:.0}", calls as f64 / elapsed);
    println!("figure attacked_errors {errors}");
    println!("figure attacker_reconnects {reopened}");
}
