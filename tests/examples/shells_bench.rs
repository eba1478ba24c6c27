//! Background processes under the release `toolgate serve`, as whole processes:
//!
//! - start-to-ready: one HTTP call that starts `python3 -m http.server` in the background
//!   with `wait_for: {port}`, against the same server started directly and polled every
//!   millisecond until it accepts (interleaved, median of 15 each);
//! - a `shell_output` round trip on a running process (median of 200 calls);
//! - 64 live processes (4 sessions × 16) each printing 1 MB/s for 10 s: the server's CPU
//!   time over those 10 s as a share of one core (`/proc/<pid>/stat`) and its peak RSS
//!   (`VmHWM`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};

const TOKEN: &str = "shells-bench-token-0123456789abcdefghij";

/// The system's Python, named by its path on both sides: a version manager's shim
/// (`pyenv`'s is a bash script that runs a dozen programs) would be timed too, and under
/// exec-time enforcement each of its programs is checked: that is the shim's cost, not
/// the background start's.
const PYTHON: &str = "/usr/bin/python3";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

async fn call(client: &reqwest::Client, base: &str, session: &str, tool: &str, input: Value) -> String {
    let response = client
        .post(format!("{base}/session/{session}/call"))
        .bearer_auth(TOKEN)
        .body(json!({"tool": tool, "input": input}).to_string())
        .send()
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    let text = body["result"]["value"].as_str().unwrap_or_default().to_string();
    assert_eq!(body["result"]["type"], "text", "{body}");
    text
}

fn shell_id(text: &str) -> String {
    let start = text.find("(shell ID: ").unwrap() + "(shell ID: ".len();
    text[start..].split(')').next().unwrap().to_string()
}

/// The directly started server: spawn, poll a connect every millisecond until it accepts.
fn direct_start(port: u16) -> f64 {
    let start = Instant::now();
    let mut child = std::process::Command::new(PYTHON)
        .args(["-m", "http.server", &port.to_string(), "--bind", "127.0.0.1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        std::thread::sleep(Duration::from_millis(1));
    }
    let seconds = start.elapsed().as_secs_f64();
    let _ = child.kill();
    let _ = child.wait();
    seconds
}

/// utime + stime of `pid`, in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    // Fields 14 and 15 of proc(5); `after` starts at field 3.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // /proc counts in USER_HZ, which is 100 on every Linux.
    ticks as f64 / 100.0
}

fn peak_rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|line| line.starts_with("VmHWM:")).unwrap();
    let kib: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib / 1024.0
}

fn main() {
    let server = e2e::LoadServer::start(TOKEN);
    let base = server.base.clone();
    let pid = server.pid();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let client = reqwest::Client::builder().no_proxy().build().unwrap();

        // Start-to-ready, interleaved with the server's own start.
        let (mut through, mut direct) = (Vec::new(), Vec::new());
        for round in 0..17 {
            let port = free_port();
            let started = Instant::now();
            let text = call(
                &client,
                &base,
                "ses_ready",
                "bash",
                json!({"command": format!("exec {PYTHON} -m http.server {port} --bind 127.0.0.1"), "background": true,
                       "wait_for": {"port": port, "timeout_ms": 30000}}),
            )
            .await;
            let seconds = started.elapsed().as_secs_f64();
            assert!(text.contains("accepts connections"), "{text}");
            let id = shell_id(&text);
            call(&client, &base, "ses_ready", "shell_kill", json!({"id": id, "signal": "KILL"})).await;
            let own = direct_start(free_port());
            if round >= 2 {
                through.push(seconds);
                direct.push(own);
            }
        }
        let (through, direct) = (median(through), median(direct));
        println!("figure ready_through_ms {:.2}", through * 1e3);
        println!("figure ready_direct_ms {:.2}", direct * 1e3);
        println!("figure ready_added_ms {:.2}", (through - direct) * 1e3);

        // shell_output round trips on one running process.
        let text = call(
            &client,
            &base,
            "ses_out",
            "bash",
            json!({"command": "echo ready; exec sleep 600", "background": true, "wait_for": {"pattern": "ready"}}),
        )
        .await;
        let id = shell_id(&text);
        let mut trips = Vec::new();
        for n in 0..220 {
            let sent = Instant::now();
            call(&client, &base, "ses_out", "shell_output", json!({"id": id, "since": 0})).await;
            if n >= 20 {
                trips.push(sent.elapsed().as_secs_f64());
            }
        }
        println!("figure output_round_trip_ms {:.3}", median(trips) * 1e3);
        call(&client, &base, "ses_out", "shell_kill", json!({"id": id, "signal": "KILL"})).await;

        // 64 processes × 1 MB/s: 16 writes of 64 KiB a second each. Inline interpreter
        // code is asked about (no rule can see into it): a person approves each start.
        let approver = {
            let (client, base) = (client.clone(), base.clone());
            tokio::spawn(async move {
                loop {
                    let response = client
                        .get(format!("{base}/permission"))
                        .bearer_auth(TOKEN)
                        .send()
                        .await
                        .unwrap();
                    let pending: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
                    for ask in pending.as_array().into_iter().flatten() {
                        let id = ask["id"].as_str().unwrap();
                        let _ = client
                            .post(format!("{base}/permission/{id}/reply"))
                            .bearer_auth(TOKEN)
                            .body(r#"{"reply": "once"}"#)
                            .send()
                            .await;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            })
        };
        let writer = "import sys,time\nb=b'x'*65535+b'\\n'\nt=time.monotonic()\nwhile True:\n    sys.stdout.buffer.write(b); sys.stdout.flush()\n    t+=1/16; time.sleep(max(0,t-time.monotonic()))";
        let mut ids = Vec::new();
        for n in 0..64 {
            let session = format!("ses_flood{}", n / 16);
            let text = call(
                &client,
                &base,
                &session,
                "bash",
                json!({"command": format!("exec {PYTHON} -c \"{writer}\""), "background": true}),
            )
            .await;
            ids.push((session, shell_id(&text)));
        }
        approver.abort();
        // Every writer running before the window opens.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (cpu_before, at) = (cpu_seconds(pid), Instant::now());
        tokio::time::sleep(Duration::from_secs(10)).await;
        let share = (cpu_seconds(pid) - cpu_before) / at.elapsed().as_secs_f64();
        let listed = call(&client, &base, "ses_flood0", "shell_list", json!({})).await;
        assert_eq!(listed.matches("running").count(), 16, "{listed}");
        println!("figure flood_cpu_percent {:.1}", share * 100.0);
        println!("figure flood_peak_rss_mib {:.1}", peak_rss_mib(pid));
        for (session, id) in ids {
            call(&client, &base, &session, "shell_kill", json!({"id": id, "signal": "KILL"})).await;
        }
    });
}
