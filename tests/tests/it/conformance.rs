//! The official MCP conformance suite (`@modelcontextprotocol/conformance`) against
//! `toolgate serve`'s `/mcp`, once per MCP version toolgate speaks, each at its own wire:
//! 2025-11-25 (with the 2025-06-18 scenarios; the `initialize` handshake and sessions)
//! and 2026-07-28 (the stateless core: `server/discover`, per-request `_meta`, no
//! sessions). Requests go through a proxy that adds the bearer token the suite does not
//! send (auth is not weakened for it).
//!
//! Every server scenario the suite lists for the version runs, except those in its
//! baseline (`tests/conformance/server-baseline.txt`, `server-baseline-2026-07-28.txt`),
//! each with its reason; an entry `scenario:check` excuses one check of a scenario that
//! otherwise runs and must pass. The outcome of every scenario (passed, failed, skipped)
//! is printed and written to `target/conformance/summary*.txt`, which `cargo xtask ci`
//! prints.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Write as _;

use e2e::Sandbox;
use e2e::conformance::{self, Outcome};

async fn run_suite(spec: &str, baseline: &str) {
    let suite = tokio::task::spawn_blocking(conformance::install).await.unwrap();
    let baseline = conformance::baseline(baseline);
    let listed = {
        let suite = conformance::Suite { dir: suite.dir.clone() };
        let spec = spec.to_string();
        tokio::task::spawn_blocking(move || suite.scenarios(&spec))
            .await
            .unwrap()
    };
    assert!(listed.len() > 20, "the suite listed {listed:?}");
    let scenario_of = |name: &str| name.split_once(':').map_or(name, |(scenario, _)| scenario).to_string();
    let stale: Vec<&String> = baseline
        .iter()
        .map(|(name, _)| name)
        .filter(|name| !listed.contains(&scenario_of(name)))
        .collect();
    assert!(
        stale.is_empty(),
        "baseline entries the suite no longer has at {spec}: {stale:?}"
    );

    let sandbox = Sandbox::new();
    sandbox.write("project/hello.txt", "hello\n");
    let served = sandbox.serve(&[]);
    let proxy = conformance::proxy(&served.base, e2e::SERVER_TOKEN).await;
    let url = format!("{}/mcp", proxy.base);

    let mut outcomes: Vec<(Outcome, bool)> = Vec::new();
    let mut summary = format!(
        "MCP conformance (@modelcontextprotocol/conformance {}, MCP {spec}) against toolgate serve /mcp\n",
        conformance::SUITE_VERSION
    );
    for scenario in &listed {
        if let Some((_, reason)) = baseline.iter().find(|(name, _)| name == scenario) {
            let _ = writeln!(summary, "  skipped  {scenario}: {reason}");
            continue;
        }
        let excused: Vec<(&str, &str)> = baseline
            .iter()
            .filter_map(|(name, reason)| {
                let (of, check) = name.split_once(':')?;
                (of == scenario).then_some((check, reason.as_str()))
            })
            .collect();
        let outcome = {
            let suite = conformance::Suite { dir: suite.dir.clone() };
            let (url, scenario, spec) = (url.clone(), scenario.clone(), spec.to_string());
            tokio::task::spawn_blocking(move || suite.run_server_scenario(&url, &scenario, &spec))
                .await
                .unwrap()
        };
        let ids: Vec<&str> = excused.iter().map(|(check, _)| *check).collect();
        let passed = outcome.passed_but(&ids);
        let verdict = if passed { "passed" } else { "FAILED" };
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
            let why = match excused.iter().find(|(id, _)| *id == check.id) {
                Some((_, reason)) if check.status == "FAILURE" => format!("excused: {reason}"),
                _ => check.message.clone().unwrap_or_default(),
            };
            let _ = writeln!(
                summary,
                "             {} {}: {why}",
                check.status.to_lowercase(),
                check.id
            );
        }
        outcomes.push((outcome, passed));
    }
    let passed = outcomes.iter().filter(|(_, passed)| *passed).count();
    let _ = writeln!(
        summary,
        "  {passed} passed, {} failed, {} skipped (see the baseline in tests/conformance/)",
        outcomes.len() - passed,
        listed.len() - outcomes.len()
    );
    println!("{summary}");
    let file = conformance::summary_file(spec);
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&file, &summary).unwrap();
    assert!(outcomes.len() >= 6, "too few scenarios ran:\n{summary}");
    assert_eq!(passed, outcomes.len(), "conformance failures:\n{summary}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_conformance_suite_passes_against_mcp_over_http() {
    run_suite(
        conformance::SPEC_VERSIONS[0],
        include_str!("../../conformance/server-baseline.txt"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_conformance_suite_passes_against_mcp_over_http_at_2026_07_28() {
    run_suite(
        conformance::SPEC_VERSIONS[1],
        include_str!("../../conformance/server-baseline-2026-07-28.txt"),
    )
    .await;
}
