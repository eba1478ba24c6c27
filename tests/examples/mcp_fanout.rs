//! `toolgate tools` cold with 10 MCP servers × 20 tools configured (release binary): the
//! servers start in parallel. Prints `figure mcp_fanout_tools_ms` (median of 10 runs).
//!
//! The servers are this example itself run as `mcp_fanout serve`: a minimal MCP server
//! over stdio (initialize, tools/list with 20 tools, tools/call) that starts in a few
//! milliseconds, so the figure measures toolgate, not an interpreter's start-up.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, Write};
use std::process::Command;
use std::time::Instant;

const SERVERS: usize = 10;
const TOOLS: usize = 20;

fn serve() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        let Some(id) = message.get("id").cloned() else { continue };
        let result = match message["method"].as_str() {
            Some("initialize") => serde_json::json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fanout", "version": "1"},
            }),
            Some("tools/list") => serde_json::json!({"tools": (0..TOOLS).map(|i| serde_json::json!({
                "name": format!("tool{i}"),
                "description": format!("Tool number {i}."),
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            })).collect::<Vec<_>>()}),
            Some("tools/call") => serde_json::json!({"content": [{"type": "text", "text": "ok"}]}),
            _ => serde_json::json!({}),
        };
        writeln!(
            out,
            "{}",
            serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result})
        )
        .unwrap();
        out.flush().unwrap();
    }
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("serve") {
        serve();
        return;
    }
    let me = std::env::current_exe().unwrap();
    let sandbox = tempfile::tempdir().unwrap();
    let servers: serde_json::Map<String, serde_json::Value> = (0..SERVERS)
        .map(|i| {
            (
                format!("s{i}"),
                serde_json::json!({"type": "local", "command": [me, "serve"], "timeout": 10000}),
            )
        })
        .collect();
    std::fs::write(
        sandbox.path().join("toolgate.json"),
        serde_json::json!({"mcp": servers}).to_string(),
    )
    .unwrap();
    let mut times = Vec::new();
    for _ in 0..11 {
        let start = Instant::now();
        let output = Command::new(e2e::release_binary())
            .args(["tools", "--json", "--dir"])
            .arg(sandbox.path())
            .env("TOOLGATE_DATA_DIR", sandbox.path().join("data"))
            .env("TOOLGATE_CONFIG_DIR", sandbox.path().join("config"))
            .output()
            .unwrap();
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let tools: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let mcp = tools
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| {
                t["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with('s') && n.contains("_tool"))
            })
            .count();
        assert_eq!(mcp, SERVERS * TOOLS, "every server's tools are listed");
    }
    times.remove(0);
    times.sort_by(|a, b| a.total_cmp(b));
    println!("figure mcp_fanout_tools_ms {:.1}", times[times.len() / 2]);
}
