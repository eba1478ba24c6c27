//! The official MCP conformance suite's client scenarios against toolgate's MCP client,
//! at each MCP version toolgate speaks (2025-11-25 and 2026-07-28): the suite starts a
//! test server of that version, `tests/conformance/client.sh` configures toolgate with
//! its URL and drives it (`toolgate mcp list`, `toolgate call … --auto`), and the suite
//! checks what toolgate sent. toolgate negotiates the version with the server itself
//! (`server/discover`, else `initialize`). Scenarios left out, and single checks
//! excused, are listed with the reason in `tests/conformance/client-baseline.yml`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

/// The checks the baseline excuses (`scenario:check` entries under `client:`).
fn excused(scenario: &str) -> Vec<String> {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance/client-baseline.yml");
    std::fs::read_to_string(here)
        .unwrap()
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .filter_map(|entry| entry.split_once(':'))
        .filter(|(of, _)| *of == scenario)
        .map(|(_, check)| check.trim().to_string())
        .collect()
}

fn run(scenario: &str, spec: &str) {
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
        .args(["client", "--scenario", scenario, "--spec-version", spec, "--command"])
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
    assert!(output.status.success(), "{scenario} at {spec}:\n{stdout}\n{stderr}");
    assert!(
        !stdout.contains("SKIPPED: scenario"),
        "{scenario} does not apply at {spec}:\n{stdout}"
    );
    // Every check the suite made, from its results directory: none failed or warned but
    // those the baseline excuses. A check the scenario could not exercise (a method
    // toolgate never sends, such as prompts/get) is skipped, not passed.
    let excused = excused(scenario);
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
    let verdicts: Vec<&(String, String)> = statuses
        .iter()
        .filter(|(_, status)| status != "INFO" && status != "SKIPPED")
        .collect();
    assert!(!verdicts.is_empty(), "{scenario}: the suite made no check:\n{stdout}");
    for (id, status) in &verdicts {
        if excused.contains(id) {
            continue;
        }
        assert_eq!(
            status, "SUCCESS",
            "{scenario} at {spec}: check {id}:\n{stdout}\n{stderr}"
        );
    }
}

const OLD: &str = "2025-11-25";
const NEW: &str = "2026-07-28";

#[test]
fn conformance_client_initialize() {
    run("initialize", OLD);
}

#[test]
fn conformance_client_tools_call() {
    run("tools_call", OLD);
}

#[test]
fn conformance_client_tools_call_at_2026_07_28() {
    run("tools_call", NEW);
}

#[test]
fn conformance_client_elicitation_defaults() {
    run("elicitation-sep1034-client-defaults", OLD);
}

#[test]
fn conformance_client_sse_retry() {
    run("sse-retry", OLD);
}

#[test]
fn conformance_client_json_schema_preservation() {
    run("json-schema-2020-12-preservation", OLD);
}

#[test]
fn conformance_client_json_schema_preservation_at_2026_07_28() {
    run("json-schema-2020-12-preservation", NEW);
}

#[test]
fn conformance_client_request_metadata_at_2026_07_28() {
    run("request-metadata", NEW);
}

#[test]
fn conformance_client_input_rounds_at_2026_07_28() {
    run("sep-2322-client-request-state", NEW);
}

#[test]
fn conformance_client_standard_headers_at_2026_07_28() {
    run("http-standard-headers", NEW);
}

#[test]
fn conformance_client_custom_headers_at_2026_07_28() {
    run("http-custom-headers", NEW);
}

#[test]
fn conformance_client_invalid_tool_headers_at_2026_07_28() {
    run("http-invalid-tool-headers", NEW);
}

#[test]
fn conformance_client_no_network_ref_at_2026_07_28() {
    run("json-schema-ref-no-deref", NEW);
}
