//! grep streams (spec §5.7): what it keeps is bounded by `limit`, whatever the number of
//! matches, and every match is still counted. Every allocation of this test process is
//! counted (a global allocator that tracks the peak), so keeping the matches — even as
//! little as a line number and an empty string each — shows as tens of megabytes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "it/support.rs"]
mod support;

use std::io::Write as _;

use serde_json::json;
use support::{Project, call};
use toolgate_builtins_fs::grep_tool;

#[global_allocator]
static ALLOCATED: peak_alloc::PeakAlloc = peak_alloc::PeakAlloc;

/// Matching lines in the big file: kept, each would cost at least 32 bytes (a line number
/// and a `String`) plus its text, over 20 MB in all.
const MATCHES: usize = 500_000;
/// What one search may allocate on top of what the process held before it: the walker's
/// and searchers' buffers and the `limit` lines shown, nothing per match.
const BOUND: usize = 2 << 20;

/// Peak bytes allocated while `work` runs, above what was allocated when it started.
fn peak_during<T>(work: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCATED.current_usage();
    ALLOCATED.reset_peak_usage();
    let result = work();
    (result, ALLOCATED.peak_usage().saturating_sub(before))
}

#[test]
fn grep_keeps_what_it_shows_not_every_match_and_counts_them_all() {
    let project = Project::new();
    {
        let file = std::fs::File::create(project.dir.path().join("big.log")).unwrap();
        let mut out = std::io::BufWriter::new(file);
        for n in 0..MATCHES {
            writeln!(out, "hit {n}").unwrap();
        }
        out.flush().unwrap();
    }
    project.write("small.log", "hit a\nmiss\nhit b\n");
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let grep = grep_tool(project.services());
    let run = |input: serde_json::Value| peak_during(|| runtime.block_on(call(&grep, input)).unwrap());
    // A baseline with two matches: what a search costs when nothing piles up.
    let (text, small) = run(json!({"pattern": "^hit", "path": "small.log"}));
    assert!(text.starts_with("Found 2 matches\n"), "{text}");
    let total = MATCHES + 2;
    for input in [
        // The directory walk (parallel) and one file named directly.
        json!({"pattern": "^hit"}),
        json!({"pattern": "^hit", "path": "big.log"}),
        json!({"pattern": "^hit", "limit": 1000}),
    ] {
        let (text, peak) = run(input.clone());
        let expected = if input.get("path").is_some() { MATCHES } else { total };
        let shown = input.get("limit").and_then(|limit| limit.as_u64()).unwrap_or(100);
        assert!(
            text.starts_with(&format!("Found {expected} matches (showing first {shown})\n")),
            "{input}: {}",
            &text[..text.len().min(200)]
        );
        assert_eq!(
            text.lines().filter(|line| line.starts_with("  Line ")).count() as u64,
            shown,
            "{input}"
        );
        assert!(
            peak < BOUND,
            "{input}: grep over {expected} matches allocated {peak} bytes at its peak (bound {BOUND}, a \
             two-match search {small})"
        );
        println!("{input}: peak {peak} bytes above the start for {expected} matches (two matches: {small})");
    }
}
