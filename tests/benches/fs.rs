//! File tools: edit of a 10 MiB file, alone and 20 at once, apply_patch of 100 files × 10 hunks.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use toolgate_builtins_fs::{Services, edit_tool, patch_tool};
use toolgate_core::{Context, Location};

use e2e::AllowAll;

fn services(dir: &std::path::Path) -> Services {
    Services::new(Location::new(dir).unwrap(), Arc::new(AllowAll))
}

fn edit(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let line = "let value = compute(input, options).unwrap_or_default(); // padding\n";
    let mut text = line.repeat(10 * 1024 * 1024 / line.len());
    text.push_str("UNIQUE_MARKER = 1\n");
    std::fs::write(dir.path().join("big.rs"), &text).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let tool = edit_tool(services(dir.path()));
    let mut group = c.benchmark_group("fs");
    group.sample_size(20);
    // The file alternates between the two markers across every call criterion makes.
    let flip = std::cell::Cell::new(false);
    group.bench_function("edit_10mib", |b| {
        b.iter(|| {
            let (old, new) = if flip.get() {
                ("UNIQUE_MARKER = 2", "UNIQUE_MARKER = 1")
            } else {
                ("UNIQUE_MARKER = 1", "UNIQUE_MARKER = 2")
            };
            flip.set(!flip.get());
            let input = serde_json::json!({"path": "big.rs", "oldString": old, "newString": new});
            runtime
                .block_on(tool.settle(input, Context::default()))
                .unwrap()
                .unwrap()
        })
    });
    group.finish();
}

fn edit_concurrent(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let line = "let value = compute(input, options).unwrap_or_default(); // padding\n";
    let body = line.repeat(10 * 1024 * 1024 / line.len() / 20);
    let text: String = (0..20).map(|k| format!("{body}MARKER_{k:02} = 1\n")).collect();
    std::fs::write(dir.path().join("big.rs"), &text).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let tool = edit_tool(services(dir.path()));
    let mut group = c.benchmark_group("fs");
    group.sample_size(10);
    // 20 edits of the one file at once, each of its own line; every one must land.
    let flip = std::cell::Cell::new(false);
    group.bench_function("edit_10mib_20_concurrent", |b| {
        b.iter(|| {
            let (from, to) = if flip.get() { ("2", "1") } else { ("1", "2") };
            flip.set(!flip.get());
            runtime.block_on(async {
                let calls: Vec<_> = (0..20)
                    .map(|k| {
                        let tool = tool.clone();
                        let input = serde_json::json!({"path": "big.rs", "oldString": format!("MARKER_{k:02} = {from}"), "newString": format!("MARKER_{k:02} = {to}")});
                        tokio::spawn(async move { tool.settle(input, Context::default()).await })
                    })
                    .collect();
                for call in calls {
                    call.await.unwrap().unwrap().unwrap();
                }
            })
        })
    });
    group.finish();
}

fn patch(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let body: String = (0..400).map(|n| format!("line {n} of the file\n")).collect();
    for file in 0..100 {
        std::fs::write(dir.path().join(format!("f{file}.txt")), &body).unwrap();
    }
    let make = |from: &str, to: &str| {
        let mut patch = String::from("*** Begin Patch\n");
        for file in 0..100 {
            patch.push_str(&format!("*** Update File: f{file}.txt\n"));
            for hunk in 0..10 {
                let n = hunk * 40 + 5;
                patch.push_str(&format!(
                    "@@\n line {} of the file\n-line {n} of the {from}\n+line {n} of the {to}\n line {} of the file\n",
                    n - 1,
                    n + 1
                ));
            }
        }
        patch.push_str("*** End Patch");
        patch
    };
    let forward = make("file", "patched");
    let backward = make("patched", "file");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let tool = patch_tool(services(dir.path()));
    let mut group = c.benchmark_group("fs");
    group.sample_size(20);
    group.bench_function("patch_100_files_10_hunks", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let start = Instant::now();
                runtime
                    .block_on(tool.settle(serde_json::json!({"patchText": forward}), Context::default()))
                    .unwrap()
                    .unwrap();
                total += start.elapsed();
                // Undo outside the timing.
                runtime
                    .block_on(tool.settle(serde_json::json!({"patchText": backward}), Context::default()))
                    .unwrap()
                    .unwrap();
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, edit, edit_concurrent, patch);
criterion_main!(benches);
