//! Gateway overhead (release binary): the same minimal stdio JSON-RPC client calls a
//! trivial tool (`echo`) of the Python SDK test server directly, then through `toolgate
//! mcp` (`py_echo`: rules, audit, output bound, the extra hop). Prints
//! `figure mcp_gateway_direct_us`, `figure mcp_gateway_through_us` and
//! `figure mcp_gateway_ratio` (medians of 1,000 calls each, in the same run).
//!
//! Both clients run side by side and their calls alternate one by one, so a change in the
//! machine's load (other builds on a shared 2-core box) weighs on both medians alike
//! instead of on whichever phase it fell in.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

struct Client {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    next: u64,
}

impl Client {
    fn start(mut command: Command) -> Client {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut client = Client {
            input: child.stdin.take().unwrap(),
            output: BufReader::new(child.stdout.take().unwrap()),
            child,
            next: 1,
        };
        client.request(
            "initialize",
            r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}"#,
        );
        client
            .input
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .unwrap();
        client.request("tools/list", "{}");
        client
    }

    /// Sends one request and waits for its answer; the answer's text.
    fn request(&mut self, method: &str, params: &str) -> String {
        let id = self.next;
        self.next += 1;
        // One write per message, as MCP clients send them: a line written in pieces wakes
        // the reader once per piece.
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#) + "\n";
        self.input.write_all(line.as_bytes()).unwrap();
        self.input.flush().unwrap();
        let marker = format!("\"id\":{id}");
        loop {
            let mut line = String::new();
            assert!(
                self.output.read_line(&mut line).unwrap() > 0,
                "the server closed stdout"
            );
            if line.contains(&marker) && !line.contains("\"method\"") {
                return line;
            }
        }
    }

    /// Calls `tool` with the `n`-th text; the call's wall time in microseconds. Every call
    /// has its own text: identical calls in a row would ask doom_loop (§4.11).
    fn call_us(&mut self, tool: &str, n: usize) -> f64 {
        let params = format!(r#"{{"name":"{tool}","arguments":{{"text":"ping {n}"}}}}"#);
        let start = Instant::now();
        let answer = self.request("tools/call", &params);
        let elapsed = start.elapsed().as_secs_f64() * 1e6;
        assert!(
            answer.contains("ping") && !answer.contains("\"isError\":true"),
            "{answer}"
        );
        elapsed
    }
}

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(|a, b| a.total_cmp(b));
    times[times.len() / 2]
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn main() {
    let python = e2e::python_with_mcp();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("python/mcp_server.py");
    let sandbox = tempfile::tempdir().unwrap();
    let config = serde_json::json!({
        "mcp": {"py": {"type": "local", "command": [python, script, "stdio"], "timeout": 60000}},
        "permission": {"py_*": "allow"},
    });
    std::fs::write(sandbox.path().join("toolgate.json"), config.to_string()).unwrap();

    let mut direct = Command::new(&python);
    direct.arg(&script).arg("stdio");
    let mut through = Command::new(e2e::release_binary());
    through
        .args(["mcp", "--trust-project", "--dir"])
        .arg(sandbox.path())
        .env("TOOLGATE_DATA_DIR", sandbox.path().join("data"))
        .env("TOOLGATE_CONFIG_DIR", sandbox.path().join("config"));

    let mut direct = Client::start(direct);
    let mut through = Client::start(through);
    for n in 0..30 {
        direct.call_us("echo", n);
        through.call_us("py_echo", n);
    }
    let (mut direct_times, mut through_times) = (Vec::new(), Vec::new());
    for n in 30..1030 {
        direct_times.push(direct.call_us("echo", n));
        through_times.push(through.call_us("py_echo", n));
    }
    let (direct_us, through_us) = (median(direct_times), median(through_times));
    println!("figure mcp_gateway_direct_us {direct_us:.0}");
    println!("figure mcp_gateway_through_us {through_us:.0}");
    println!("figure mcp_gateway_ratio {:.2}", through_us / direct_us);
}
