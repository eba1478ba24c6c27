//! 20 concurrent edits of one 10 MiB file against one edit of it, alternating run by run
//! so that the load of the machine weighs on both sides alike (two criterion benches run
//! minutes apart compare two different machines).
//!
//! Prints `figure edit_20_concurrent_ratio X` (median of the 20-edit runs ÷ median of the
//! single-edit runs) and both medians in milliseconds. Every edit must land: after each
//! round the file is checked.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use e2e::AllowAll;
use toolgate_builtins_fs::{Services, edit_tool};
use toolgate_core::{Context, Location, Tool};

const EDITS: usize = 20;
const ROUNDS: usize = 15;

fn median(mut values: Vec<Duration>) -> f64 {
    values.sort();
    values[values.len() / 2].as_secs_f64() * 1000.0
}

fn edit(runtime: &tokio::runtime::Runtime, tool: &Tool, old: String, new: String) {
    let input = serde_json::json!({"path": "big.rs", "oldString": old, "newString": new});
    runtime
        .block_on(tool.settle(input, Context::default()))
        .unwrap()
        .unwrap();
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let line = "let value = compute(input, options).unwrap_or_default(); // padding\n";
    let body = line.repeat(10 * 1024 * 1024 / line.len() / EDITS);
    // Line EDITS is the single edit's: it flips between 1 and 2 like the others.
    let text: String = (0..=EDITS).map(|k| format!("{body}MARKER_{k:02} = 1\n")).collect();
    let path = dir.path().join("big.rs");
    std::fs::write(&path, &text).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let tool = edit_tool(Services::new(Location::new(dir.path()).unwrap(), Arc::new(AllowAll)));
    let flip = |round: usize| {
        if round.is_multiple_of(2) {
            ("1", "2")
        } else {
            ("2", "1")
        }
    };
    let mut one = Vec::new();
    let mut many = Vec::new();
    // Two rounds of warm-up, then ROUNDS measured; which side goes first alternates.
    for round in 0..ROUNDS + 2 {
        let (from, to) = flip(round);
        let single = || {
            let start = Instant::now();
            edit(
                &runtime,
                &tool,
                format!("MARKER_{EDITS:02} = {from}"),
                format!("MARKER_{EDITS:02} = {to}"),
            );
            start.elapsed()
        };
        let concurrent = || {
            let start = Instant::now();
            runtime.block_on(async {
                let calls: Vec<_> = (0..EDITS)
                    .map(|k| {
                        let tool = tool.clone();
                        let input = serde_json::json!({"path": "big.rs", "oldString": format!("MARKER_{k:02} = {from}"), "newString": format!("MARKER_{k:02} = {to}")});
                        tokio::spawn(async move { tool.settle(input, Context::default()).await })
                    })
                    .collect();
                for call in calls {
                    call.await.unwrap().unwrap().unwrap();
                }
            });
            start.elapsed()
        };
        let (a, b) = if round.is_multiple_of(2) {
            let a = single();
            (a, concurrent())
        } else {
            let b = concurrent();
            (single(), b)
        };
        let now = std::fs::read_to_string(&path).unwrap();
        for k in 0..=EDITS {
            assert!(
                now.contains(&format!("MARKER_{k:02} = {to}\n")),
                "edit {k} of round {round} is lost"
            );
        }
        eprintln!(
            "round {round}: one {:.1} ms, {EDITS} at once {:.1} ms",
            a.as_secs_f64() * 1e3,
            b.as_secs_f64() * 1e3
        );
        if round >= 2 {
            one.push(a);
            many.push(b);
        }
    }
    let one = median(one);
    let many = median(many);
    println!("one edit of 10 MiB: {one:.2} ms (median of {ROUNDS})");
    println!("{EDITS} concurrent edits: {many:.2} ms (median of {ROUNDS})");
    println!("figure edit_20_concurrent_ratio {:.3}", many / one);
}
