//! The official MCP conformance suite's client scenarios against toolgate's MCP client:
//! the suite starts a test server, `tests/conformance/client.sh` configures toolgate
//! with its URL and drives it (`toolgate mcp list`, `toolgate call … --auto`), and the
//! suite checks what toolgate sent. Scenarios left out are listed, with the reason, in
//! `tests/conformance/client-baseline.yml`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

fn run(scenario: &str) {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance");
    let tools = e2e::npm_tools();
    let node = e2e::node();
    let out = tempfile::tempdir().unwrap();
    let path = format!(
        "{}:{}",
        node.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new(&node)
        .arg(tools.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"))
        .args(["client", "--scenario", scenario, "--command"])
        .arg(format!("bash {}", here.join("client.sh").display()))
        .arg("--expected-failures")
        .arg(here.join("client-baseline.yml"))
        .arg("--output-dir")
        .arg(out.path())
        .env("TOOLGATE_BIN", e2e::toolgate_binary())
        .env("PATH", path)
        .env_remove("TOOLGATE_PERMISSION")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{scenario}:\n{stdout}\n{stderr}");
    // Every check the suite made, from its results directory: none failed or warned.
    let mut statuses = Vec::new();
    for run in std::fs::read_dir(out.path()).unwrap() {
        let checks = std::fs::read_to_string(run.unwrap().path().join("checks.json")).unwrap();
        let checks: serde_json::Value = serde_json::from_str(&checks).unwrap();
        for check in checks.as_array().unwrap() {
            statuses.push((
                check["id"].as_str().unwrap().to_string(),
                check["status"].as_str().unwrap().to_string(),
            ));
        }
    }
    let verdicts: Vec<&(String, String)> = statuses.iter().filter(|(_, status)| status != "INFO").collect();
    assert!(!verdicts.is_empty(), "{scenario}: the suite made no check:\n{stdout}");
    for (id, status) in &verdicts {
        assert_eq!(status, "SUCCESS", "{scenario}: check {id}:\n{stdout}\n{stderr}");
    }
}

#[test]
fn conformance_client_initialize() {
    run("initialize");
}

#[test]
fn conformance_client_tools_call() {
    run("tools_call");
}

#[test]
fn conformance_client_elicitation_defaults() {
    run("elicitation-sep1034-client-defaults");
}

#[test]
fn conformance_client_sse_retry() {
    run("sse-retry");
}
