//! `toolgate mcp` from process start to the `tools/list` answer (release binary):
//! prints `figure mcp_tools_list_ms` (median of 10 cold starts).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

fn main() {
    let binary = e2e::release_binary();
    let sandbox = tempfile::tempdir().unwrap();
    let mut times = Vec::new();
    for _ in 0..11 {
        let start = Instant::now();
        let mut child = Command::new(&binary)
            .args(["mcp", "--dir"])
            .arg(sandbox.path())
            .env("TOOLGATE_DATA_DIR", sandbox.path().join("data"))
            .env("TOOLGATE_CONFIG_DIR", sandbox.path().join("config"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut input = child.stdin.take().unwrap();
        let messages = [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        ];
        for message in messages {
            writeln!(input, "{message}").unwrap();
        }
        input.flush().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        loop {
            let line = lines.next().unwrap().unwrap();
            if line.contains("\"id\":2") {
                break;
            }
        }
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        drop(input);
        child.wait().unwrap();
    }
    times.remove(0);
    times.sort_by(|a, b| a.total_cmp(b));
    println!("figure mcp_tools_list_ms {:.2}", times[times.len() / 2]);
}
