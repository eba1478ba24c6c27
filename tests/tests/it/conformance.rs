//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, spec
//! versions 2025-06-18 and 2025-11-25) against `toolgate serve`'s `/mcp`, through a proxy
//! that adds the bearer token the suite does not send (auth is not weakened for it).
//!
//! Every server scenario the suite lists runs, except those in
//! `tests/conformance/server-baseline.txt`, each with its reason. The outcome of every
//! scenario (passed, failed, skipped) is printed and written to
//! `target/conformance/summary.txt`, which `cargo xtask ci` prints.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Write as _;

use e2e::Sandbox;
use e2e::conformance::{self, Outcome};

#[tokio::test(flavor = "multi_thread")]
async fn the_official_conformance_suite_passes_against_mcp_over_http() {
    let suite = tokio::task::spawn_blocking(conformance::install).await.unwrap();
    let baseline = conformance::baseline(include_str!("../../conformance/server-baseline.txt"));
    let listed = {
        let suite = conformance::Suite { dir: suite.dir.clone() };
        tokio::task::spawn_blocking(move || suite.scenarios()).await.unwrap()
    };
    assert!(listed.len() > 20, "the suite listed {listed:?}");
    let stale: Vec<&String> = baseline
        .iter()
        .map(|(name, _)| name)
        .filter(|name| !listed.contains(name))
        .collect();
    assert!(stale.is_empty(), "baseline entries the suite no longer has: {stale:?}");

    let sandbox = Sandbox::new();
    sandbox.write("project/hello.txt", "hello\n");
    let served = sandbox.serve(&[]);
    let proxy = conformance::proxy(&served.base, e2e::SERVER_TOKEN).await;
    let url = format!("{}/mcp", proxy.base);

    let mut outcomes: Vec<Outcome> = Vec::new();
    let mut summary = format!(
        "MCP conformance (@modelcontextprotocol/conformance {}) against toolgate serve /mcp\n",
        conformance::SUITE_VERSION
    );
    for scenario in &listed {
        if let Some((_, reason)) = baseline.iter().find(|(name, _)| name == scenario) {
            let _ = writeln!(summary, "  skipped  {scenario}: {reason}");
            continue;
        }
        let outcome = {
            let suite = conformance::Suite { dir: suite.dir.clone() };
            let url = url.clone();
            let scenario = scenario.clone();
            tokio::task::spawn_blocking(move || suite.run_server_scenario(&url, &scenario))
                .await
                .unwrap()
        };
        let verdict = if outcome.passed() { "passed" } else { "FAILED" };
        let _ = writeln!(
            summary,
            "  {verdict:<7}  {scenario} ({} checks: {} ok, {} warnings, {} failed)",
            outcome.checks.len(),
            outcome.count("SUCCESS"),
            outcome.count("WARNING"),
            outcome.count("FAILURE"),
        );
        for check in outcome
            .checks
            .iter()
            .filter(|c| c.status == "FAILURE" || c.status == "WARNING")
        {
            let _ = writeln!(
                summary,
                "             {} {}: {}",
                check.status.to_lowercase(),
                check.id,
                check.message.as_deref().unwrap_or("")
            );
        }
        outcomes.push(outcome);
    }
    let passed = outcomes.iter().filter(|o| o.passed()).count();
    let _ = writeln!(
        summary,
        "  {passed} passed, {} failed, {} skipped (see tests/conformance/server-baseline.txt)",
        outcomes.len() - passed,
        listed.len() - outcomes.len()
    );
    println!("{summary}");
    let file = conformance::summary_file();
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&file, &summary).unwrap();
    assert!(outcomes.len() >= 6, "too few scenarios ran:\n{summary}");
    assert_eq!(passed, outcomes.len(), "conformance failures:\n{summary}");
}
