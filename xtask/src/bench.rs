//! `cargo xtask bench`: every figure an issue asks for, measured and written down.
//!
//! In-process figures come from criterion benches (their median, read from
//! `target/criterion/<id>/new/estimates.json`); whole-process figures come from release
//! examples that print `figure <key> <value>` lines. Add a figure by adding a row to
//! [`FIGURES`].
//!
//! Every run, filtered or not, rewrites the rows it measured in BENCHMARKS.md and keeps the
//! others as they were, so the table is always the latest measurement of each figure. Each
//! measured row also shows the value it replaced and the change; a figure more than
//! [`REGRESSION`] worse than before is listed at the end of the run (no figure may regress
//! by more than 10 % without someone saying why). Hand-written sections of BENCHMARKS.md
//! (any `## ` section the generator does not write) are kept.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Where a figure's value comes from.
#[allow(dead_code)] // Ratio: kept for figures that compare two criterion benches.
enum Source {
    /// Median time of a criterion benchmark, in microseconds.
    MedianMicros { bench: &'static str, id: &'static str },
    /// Median time of a criterion benchmark, in milliseconds.
    MedianMillis { bench: &'static str, id: &'static str },
    /// `bytes` divided by the median time of a criterion benchmark, in GB/s.
    Throughput {
        bench: &'static str,
        id: &'static str,
        bytes: f64,
    },
    /// A `figure <key> <value>` line printed by a release example.
    Example { example: &'static str, key: &'static str },
    /// The median of one criterion benchmark divided by the median of another.
    Ratio {
        bench: &'static str,
        id: &'static str,
        over: &'static str,
    },
}

/// Which way a target points.
enum Target {
    AtMost(f64),
    AtLeast(f64),
}

struct Figure {
    issue: u32,
    name: &'static str,
    unit: &'static str,
    source: Source,
    target: Target,
    how: &'static str,
}

/// Every bench and example lives in the end-to-end package, the one place that may
/// combine all crates.
const PACKAGE: &str = "e2e";

const MIB: f64 = 1024.0 * 1024.0;

static FIGURES: &[Figure] = &[
    Figure {
        issue: 2,
        name: "settle of a no-op tool through registry + output bound (median)",
        unit: "µs",
        source: Source::MedianMicros {
            bench: "settle",
            id: "settle/noop",
        },
        target: Target::AtMost(5.0),
        how: "criterion, `tests/benches/settle.rs`: materialized catalog, decode, execute, encode, bound by a real OutputStore",
    },
    Figure {
        issue: 2,
        name: "bound of a 100 MiB text output (throughput)",
        unit: "GB/s",
        source: Source::Throughput {
            bench: "bound",
            id: "bound/100MiB",
            bytes: 100.0 * MIB,
        },
        target: Target::AtLeast(1.0),
        how: "criterion, `tests/benches/bound.rs`: count, spill to a file in a temp dir, preview; the file is removed outside the timing",
    },
    Figure {
        issue: 2,
        name: "bound of a 100 MiB text output (peak RSS / output size)",
        unit: "×",
        source: Source::Example {
            example: "bound_peak",
            key: "peak_ratio",
        },
        target: Target::AtMost(2.0),
        how: "whole process, `tests/examples/bound_peak.rs`: VmHWM of a process that builds the output and bounds it once",
    },
    Figure {
        issue: 3,
        name: "one permission decision against a 1,000-rule set (median)",
        unit: "µs",
        source: Source::MedianMicros {
            bench: "permission",
            id: "permission/decision_1000_rules",
        },
        target: Target::AtMost(2.0),
        how: "criterion, `tests/benches/permission.rs`: rules indexed by literal action (literal and `word *` patterns by hash, the rest in RegexSets of at most 512 patterns, long patterns matched alone), wildcard actions checked from the end; nothing is ever skipped",
    },
    Figure {
        issue: 3,
        name: "the same decision by the naive last-match scan (reference, not a target)",
        unit: "µs",
        source: Source::MedianMicros {
            bench: "permission",
            id: "permission/decision_1000_rules_naive",
        },
        target: Target::AtMost(f64::INFINITY),
        how: "criterion: every rule's precompiled pattern tried from the end; the proptest reference of the indexed evaluation",
    },
    Figure {
        issue: 11,
        name: "one file-path permission decision against a 1,000-rule set, RegexSet pass and absolute candidate (median)",
        unit: "µs",
        source: Source::MedianMicros {
            bench: "permission",
            id: "permission/decision_1000_rules_edit_path",
        },
        target: Target::AtMost(2.0),
        how: "criterion, `tests/benches/permission.rs`: the same 1,000 rules, `evaluate_path(\"edit\", \"src/module507/deep/lib.txt\", [absolute])` as a file tool asks it: no hashed pattern decides it, so the 200 `edit` wildcard patterns run as one RegexSet pass, then the absolute-pattern group and the wildcard actions",
    },
    Figure {
        issue: 11,
        name: "one permission decision against 10,000 edit rules with a deny after them (reference, not a target)",
        unit: "µs",
        source: Source::MedianMicros {
            bench: "permission",
            id: "permission/decision_10000_rules",
        },
        target: Target::AtMost(f64::INFINITY),
        how: "criterion, `tests/benches/permission.rs`: 10,000 `src/moduleN/*/part?N.rs` edit rules (20 RegexSet passes) and `secret/*: deny` last, deciding `src/lib.rs`, which none of them matches, so every pass runs",
    },
    Figure {
        issue: 3,
        name: "10,000 pending asks resolved by one `always` cascade",
        unit: "ms",
        source: Source::MedianMillis {
            bench: "permission",
            id: "permission/always_cascade_10000",
        },
        target: Target::AtMost(100.0),
        how: "criterion, `tests/benches/permission.rs`: the reply call alone (save, resolve target, re-evaluate and resolve all 10,000 others, publish events)",
    },
    Figure {
        issue: 16,
        name: "1 GiB flood through the bash tool, wall time ÷ `sh -c 'CMD | cat >/dev/null'` (#5's row against what a pipe reader can reach)",
        unit: "×",
        source: Source::Example {
            example: "bash_flood",
            key: "pipe_ratio",
        },
        target: Target::AtMost(1.2),
        how: "whole process, `tests/examples/bash_flood.rs`: `head -c 1073741824 /dev/zero` settled through registry + bash tool + output store in a fresh process, against the same command piped into `cat >/dev/null` in the same run (any reader behind a pipe pays that copy); median of 5",
    },
    Figure {
        issue: 5,
        name: "1 GiB flood through the bash tool, wall time ÷ `sh -c 'CMD >/dev/null'` (reference: no pipe at all)",
        unit: "×",
        source: Source::Example {
            example: "bash_flood",
            key: "wall_ratio",
        },
        target: Target::AtMost(f64::INFINITY),
        how: "whole process, `tests/examples/bash_flood.rs`: the same call against the command writing straight to /dev/null, which no reader of the output can match (restated by #16 against the pipe floor)",
    },
    Figure {
        issue: 5,
        name: "the same bytes through `| cat >/dev/null` ÷ the anchor (the floor of any pipe reader; reference)",
        unit: "×",
        source: Source::Example {
            example: "bash_flood",
            key: "pipe_floor_ratio",
        },
        target: Target::AtMost(f64::INFINITY),
        how: "whole process: what a pipe alone costs on this machine, so the flood figure can be judged against what is reachable",
    },
    Figure {
        issue: 5,
        name: "1 GiB flood through the bash tool, peak RSS",
        unit: "MiB",
        source: Source::Example {
            example: "bash_flood",
            key: "peak_rss_mib",
        },
        target: Target::AtMost(32.0),
        how: "whole process: VmHWM of the process that settles the call (largest of 5 runs)",
    },
    Figure {
        issue: 5,
        name: "permission analysis of a 200-command script (median)",
        unit: "ms",
        source: Source::MedianMillis {
            bench: "shell",
            id: "shell/analyze_200_commands",
        },
        target: Target::AtMost(5.0),
        how: "criterion, `tests/benches/shell.rs`: parse and walk (words with holes, side-effect table, globs against the files) of 200 lines of pipelines, lists, substitutions, wrappers, redirections and control flow",
    },
    Figure {
        issue: 12,
        name: "permission analysis of a 1 MiB line of short commands (median)",
        unit: "ms",
        source: Source::MedianMillis {
            bench: "shell",
            id: "shell/analyze_1mib",
        },
        target: Target::AtMost(100.0),
        how: "criterion, `tests/benches/shell.rs`: `analyze` of the 200-command script repeated up to 1 MiB (the size limit; about 30,000 commands), asserted to be analysed, not refused",
    },
    Figure {
        issue: 12,
        name: "permission analysis, 1 MiB ÷ 512 KiB of short commands (linear: ≤ 2.2)",
        unit: "×",
        source: Source::Ratio {
            bench: "shell",
            id: "shell/analyze_1mib",
            over: "shell/analyze_512kib",
        },
        target: Target::AtMost(2.2),
        how: "criterion, `tests/benches/shell.rs`: the two medians of the same script repeated up to 1 MiB and up to 512 KiB",
    },
    Figure {
        issue: 4,
        name: "grep over this workspace's vendored dependencies, wall time ÷ `rg -n` on the same tree",
        unit: "×",
        source: Source::Example {
            example: "fs_bench",
            key: "grep_ratio",
        },
        target: Target::AtMost(1.1),
        how: "whole process, `tests/examples/fs_bench.rs`: the release `toolgate call grep` (config, rules, audit, bound) against `rg -n 'unsafe impl'`, on `cargo vendor` of this workspace in target/bench-vendor; the two alternate run by run, and which goes first alternates too; median of 11 after two warm-ups each",
    },
    Figure {
        issue: 4,
        name: "glob over the same tree, wall time ÷ `rg --files -g '*.rs'`",
        unit: "×",
        source: Source::Example {
            example: "fs_bench",
            key: "glob_ratio",
        },
        target: Target::AtMost(1.1),
        how: "whole process, `tests/examples/fs_bench.rs`: the release `toolgate call glob '**/*.rs'` (newest first, so it also stats every match; hidden files in, .git out) against `rg --files -g '*.rs'`, alternating as above; median of 11",
    },
    Figure {
        issue: 4,
        name: "read of the last page of a 1 GiB text file, wall time ÷ `wc -l`",
        unit: "×",
        source: Source::Example {
            example: "fs_bench",
            key: "read_last_page_ratio",
        },
        target: Target::AtMost(1.5),
        how: "whole process, `tests/examples/fs_bench.rs`: the release `toolgate call read` with an offset 100 lines before the end of a generated 1 GiB log of 107-byte lines (10,034,971 lines, page cache warm) against `wc -l` on it, alternating as above; median of 11 (#13: the first version timed the tool in-process on 80-byte lines with `wc` always first)",
    },
    Figure {
        issue: 4,
        name: "read of the last page of a 1 GiB text file, peak RSS",
        unit: "MiB",
        source: Source::Example {
            example: "fs_bench",
            key: "read_peak_rss_mib",
        },
        target: Target::AtMost(32.0),
        how: "whole process: `/usr/bin/time -f %M` of the release `toolgate call read` (largest of 3)",
    },
    Figure {
        issue: 4,
        name: "edit of a 10 MiB file (median)",
        unit: "ms",
        source: Source::MedianMillis {
            bench: "fs",
            id: "fs/edit_10mib",
        },
        target: Target::AtMost(30.0),
        how: "criterion, `tests/benches/fs.rs`: the edit tool end to end (read after approval, conditional re-read, replace, atomic write)",
    },
    Figure {
        issue: 4,
        name: "apply_patch of 100 files × 10 hunks (median)",
        unit: "ms",
        source: Source::MedianMillis {
            bench: "fs",
            id: "fs/patch_100_files_10_hunks",
        },
        target: Target::AtMost(100.0),
        how: "criterion, `tests/benches/fs.rs`: parse, verify every hunk, one assertion, all-or-nothing writes of 100 files",
    },
    Figure {
        issue: 7,
        name: "`toolgate call read` on a small file, cold process (median wall)",
        unit: "ms",
        source: Source::Example {
            example: "cold_start",
            key: "cold_ms",
        },
        target: Target::AtMost(15.0),
        how: "whole process, `tests/examples/cold_start.rs`: the release binary, a fresh process per call (config, rules, registry, tool, audit, bound) with the data directory kept between runs, median of 30",
    },
    Figure {
        issue: 14,
        name: "`toolgate call read` on a small file, cold process and a new data directory each run (median wall)",
        unit: "ms",
        source: Source::Example {
            example: "cold_start",
            key: "cold_fresh_ms",
        },
        target: Target::AtMost(10.0),
        how: "whole process, `tests/examples/cold_start.rs`: as above, but every run gets an empty data directory (no database, no audit log yet), median of 30; `cat` of the same file is printed alongside for scale. No SQLite file is opened, no schema built and the audit log opened once for a read that no rule asks about",
    },
    Figure {
        issue: 14,
        name: "`toolgate call read` on a small file, cold process, data directory kept (median wall)",
        unit: "ms",
        source: Source::Example {
            example: "cold_start",
            key: "cold_ms",
        },
        target: Target::AtMost(10.0),
        how: "the #7 figure against the #14 target",
    },
    Figure {
        issue: 7,
        name: "`toolgate call read` on a small file, peak RSS",
        unit: "MiB",
        source: Source::Example {
            example: "cold_start",
            key: "cold_peak_rss_mib",
        },
        target: Target::AtMost(20.0),
        how: "whole process: `/usr/bin/time -f %M` of the release binary, largest of 5",
    },
    Figure {
        issue: 6,
        name: "webfetch of a 1 MiB HTML page from a local server, converted to Markdown (median)",
        unit: "ms",
        source: Source::MedianMillis {
            bench: "net",
            id: "net/fetch_convert_1mib_html",
        },
        target: Target::AtMost(20.0),
        how: "criterion, `tests/benches/net.rs`: the tool end to end against an axum server on 127.0.0.1 (guard off for loopback); the same page as raw HTML takes about 2.6 ms, so conversion is the rest",
    },
    Figure {
        issue: 6,
        name: "webfetch of a 1 GiB body: peak RSS above the process baseline",
        unit: "MiB",
        source: Source::Example {
            example: "fetch_peak",
            key: "fetch_peak_above_baseline_mib",
        },
        target: Target::AtMost(16.0),
        how: "whole process, `tests/examples/fetch_peak.rs`: VmHWM after the call minus VmRSS before it, server in the same process streaming 64 KiB chunks; the tool keeps 5 MiB and drops the connection",
    },
    Figure {
        issue: 8,
        name: "HTTP: 50 concurrent clients calling a near no-op tool (`read` of a one-line file) for 10 s, calls per second",
        unit: "calls/s",
        source: Source::Example {
            example: "http_load",
            key: "http_calls_per_second",
        },
        target: Target::AtLeast(5000.0),
        how: "whole process, `tests/examples/http_load.rs`: the release `toolgate serve` on loopback, 50 keep-alive reqwest clients in one process on the same 2 cores, every call through registry, permission (with the audit log) and output bound",
    },
    Figure {
        issue: 8,
        name: "HTTP: p99 latency of those calls",
        unit: "ms",
        source: Source::Example {
            example: "http_load",
            key: "http_p99_ms",
        },
        target: Target::AtMost(20.0),
        how: "whole process: the 99th percentile of every call's round trip in the run",
    },
    Figure {
        issue: 8,
        name: "HTTP: failed calls in that run",
        unit: "calls",
        source: Source::Example {
            example: "http_load",
            key: "http_errors",
        },
        target: Target::AtMost(0.0),
        how: "whole process: non-2xx answers and transport errors",
    },
    Figure {
        issue: 8,
        name: "HTTP: `tool.settled` events missing from the SSE stream in that run",
        unit: "events",
        source: Source::Example {
            example: "http_load",
            key: "http_lost_events",
        },
        target: Target::AtMost(0.0),
        how: "whole process: calls completed minus `tool.settled` events seen by one SSE subscriber once its backlog drained (its count stopped moving for 2 s)",
    },
    Figure {
        issue: 15,
        name: "MCP at /mcp: the same load (50 clients, one MCP session each, `tools/call` of `read`) for 10 s, calls per second",
        unit: "calls/s",
        source: Source::Example {
            example: "mcp_load",
            key: "mcp_calls_per_second",
        },
        target: Target::AtLeast(2000.0),
        how: "whole process, `tests/examples/mcp_load.rs`: the release `toolgate serve` with its timeouts and connection cap, 50 keep-alive reqwest clients each with its own streamable HTTP session (initialize + initialized first), every `tools/call` answered on its SSE stream through the gate",
    },
    Figure {
        issue: 15,
        name: "MCP at /mcp: p99 latency of those calls (reference)",
        unit: "ms",
        source: Source::Example {
            example: "mcp_load",
            key: "mcp_p99_ms",
        },
        target: Target::AtMost(f64::INFINITY),
        how: "whole process: the 99th percentile of every `tools/call` round trip in the run",
    },
    Figure {
        issue: 15,
        name: "MCP at /mcp: failed calls in that run",
        unit: "calls",
        source: Source::Example {
            example: "mcp_load",
            key: "mcp_errors",
        },
        target: Target::AtMost(0.0),
        how: "whole process: non-2xx answers, transport errors and answers that are not the file's text",
    },
    Figure {
        issue: 15,
        name: "HTTP with 1,000 attacker connections held open (half-sent heads, reopened when closed): p99 of an authenticated call",
        unit: "ms",
        source: Source::Example {
            example: "http_idle_attackers",
            key: "attacked_p99_ms",
        },
        target: Target::AtMost(50.0),
        how: "whole process, `tests/examples/http_idle_attackers.rs`: the release `toolgate serve`; 1,000 connections each send half a request head and reconnect at once when the 10 s header timeout closes them, while 10 authenticated keep-alive clients call `read` for 15 s (one whole timeout wave inside the run)",
    },
    Figure {
        issue: 15,
        name: "HTTP under that attack: authenticated calls per second (reference)",
        unit: "calls/s",
        source: Source::Example {
            example: "http_idle_attackers",
            key: "attacked_calls_per_second",
        },
        target: Target::AtLeast(f64::NEG_INFINITY),
        how: "whole process: the rate the 10 authenticated clients reached during the attack",
    },
    Figure {
        issue: 15,
        name: "HTTP under that attack: failed authenticated calls",
        unit: "calls",
        source: Source::Example {
            example: "http_idle_attackers",
            key: "attacked_errors",
        },
        target: Target::AtMost(0.0),
        how: "whole process: non-2xx answers and transport errors of the authenticated clients",
    },
    Figure {
        issue: 15,
        name: "HTTP under that attack: attacker connections the server closed and the attacker reopened (reference)",
        unit: "connections",
        source: Source::Example {
            example: "http_idle_attackers",
            key: "attacker_reconnects",
        },
        target: Target::AtMost(f64::INFINITY),
        how: "whole process: shows the header timeout fired during the run (about 1,000 when it did)",
    },
    Figure {
        issue: 8,
        name: "`toolgate mcp`: from process start to the `tools/list` answer (median)",
        unit: "ms",
        source: Source::Example {
            example: "mcp_start",
            key: "mcp_tools_list_ms",
        },
        target: Target::AtMost(50.0),
        how: "whole process, `tests/examples/mcp_start.rs`: the release binary spawned, initialize + initialized + tools/list written at once, time to the answer; median of 10 cold starts",
    },
    Figure {
        issue: 12,
        name: "shell oracle: generated lines checked per second",
        unit: "lines/s",
        source: Source::Example {
            example: "oracle_throughput",
            key: "oracle_lines_per_second",
        },
        target: Target::AtLeast(200.0),
        how: "whole process, `tests/examples/oracle_throughput.rs`: 2,000 generated lines (seed 12) end to end — fresh project copy, `plan()`, real bash under one long-lived strace per worker inside the unshare sandbox, observation, both soundness checks — with the default workers (two per core); lines the analysis denies are checked without running (nothing would run)",
    },
    Figure {
        issue: 12,
        name: "shell oracle: of those, lines run in the sandbox per second (reference)",
        unit: "lines/s",
        source: Source::Example {
            example: "oracle_throughput",
            key: "oracle_run_lines_per_second",
        },
        target: Target::AtLeast(f64::NEG_INFINITY),
        how: "the same run: only the lines that were executed, per second of the whole run",
    },
    Figure {
        issue: 17,
        name: "MCP gateway: `tools/call` of a trivial upstream tool through `toolgate mcp` ÷ the same call made directly (median)",
        unit: "×",
        source: Source::Example {
            example: "mcp_gateway",
            key: "mcp_gateway_ratio",
        },
        target: Target::AtMost(1.3),
        how: "whole process, `tests/examples/mcp_gateway.rs`: one minimal stdio JSON-RPC client, the Python SDK test server's `echo` called directly and as `py_echo` through the release `toolgate mcp` (rules, audit, output bound, the extra hop); the two clients side by side, their calls alternating one by one; median of 1,000 calls each",
    },
    Figure {
        issue: 17,
        name: "MCP gateway: `tools/call` through `toolgate mcp` (median; reference)",
        unit: "µs",
        source: Source::Example {
            example: "mcp_gateway",
            key: "mcp_gateway_through_us",
        },
        target: Target::AtMost(f64::INFINITY),
        how: "same run as the ratio; the direct call's median is printed as `mcp_gateway_direct_us`",
    },
    Figure {
        issue: 17,
        name: "`toolgate tools` cold with 10 MCP servers × 20 tools (median)",
        unit: "ms",
        source: Source::Example {
            example: "mcp_fanout",
            key: "mcp_fanout_tools_ms",
        },
        target: Target::AtMost(300.0),
        how: "whole process, `tests/examples/mcp_fanout.rs`: the release binary with 10 stdio servers configured (a minimal MCP server, the example itself), started in parallel, initialize + tools/list each, 200 MCP tools listed; median of 10 runs",
    },
    Figure {
        issue: 13,
        name: "edit of a 10 MiB file with the cross-process lock and the compare-and-swap checks (median)",
        unit: "ms",
        source: Source::MedianMillis {
            bench: "fs",
            id: "fs/edit_10mib",
        },
        target: Target::AtMost(30.0),
        how: "criterion, `tests/benches/fs.rs`: the edit tool end to end: flock on the file, read under the lock, replace, temporary file, check (inode, size, mtime, ctime), rename, wait for writers of the old inode in /proc, post-check",
    },
    Figure {
        issue: 13,
        name: "20 concurrent edits of one 10 MiB file ÷ one edit (medians)",
        unit: "×",
        source: Source::Example {
            example: "edit_concurrent",
            key: "edit_20_concurrent_ratio",
        },
        target: Target::AtMost(20.0),
        how: "in process, `tests/examples/edit_concurrent.rs`: 20 edit calls spawned at once on a 2-worker runtime, each of its own line of the same 10 MiB file, all of which must land (checked every round), against one edit of the same file; the two alternate run by run and which goes first alternates too; median of 15 ÷ median of 15 after two warm-ups (two criterion benches run minutes apart compared two different loads of a shared machine). Threads of one process queue per inode and a release wakes one of them; the lock is let go before the replaced inode's pages and the two copies of the file are freed",
    },
    Figure {
        issue: 13,
        name: "grep over 5,000,000 matching lines, peak RSS",
        unit: "MiB",
        source: Source::Example {
            example: "grep_peak",
            key: "grep_5m_peak_rss_mib",
        },
        target: Target::AtMost(32.0),
        how: "whole process, `tests/examples/grep_peak.rs`: VmHWM of a fresh process that settles grep (limit 100) over a 101 MB file of 5 M matching lines and checks the answer counts all of them (largest of 3)",
    },
    Figure {
        issue: 16,
        name: "`toolgate call bash 'true'` with `workspace-write` ÷ without (median)",
        unit: "×",
        source: Source::Example {
            example: "sandbox_bench",
            key: "true_ratio",
        },
        target: Target::AtMost(1.5),
        how: "whole process, `tests/examples/sandbox_bench.rs`: the release binary, `call bash 'true'` with `--sandbox workspace-write` and `--sandbox off` alternately, 40 each after a warm-up; the sandboxed one adds the trampoline process (namespaces, read-only view, Landlock, seccomp)",
    },
    Figure {
        issue: 16,
        name: "`toolgate call bash 'true'`: time the sandbox adds (median difference)",
        unit: "ms",
        source: Source::Example {
            example: "sandbox_bench",
            key: "true_added_ms",
        },
        target: Target::AtMost(2.0),
        how: "whole process: the two medians above, subtracted",
    },
    Figure {
        issue: 16,
        name: "`toolgate call bash 'true'` without the sandbox (median; reference)",
        unit: "ms",
        source: Source::Example {
            example: "sandbox_bench",
            key: "true_off_ms",
        },
        target: Target::AtMost(f64::INFINITY),
        how: "whole process: the denominator of the ratio above",
    },
    Figure {
        issue: 16,
        name: "1 GiB flood through `toolgate call bash` with `workspace-write` ÷ without",
        unit: "×",
        source: Source::Example {
            example: "sandbox_bench",
            key: "flood_ratio",
        },
        target: Target::AtMost(1.2),
        how: "whole process, `tests/examples/sandbox_bench.rs`: `head -c 1073741824 /dev/zero` through the release binary's `call bash`, sandboxed and not alternately, median of 5 each",
    },
    Figure {
        issue: 22,
        name: "exec-time enforcement: what one checked exec adds (1,000 `/bin/true` from a bash loop, median difference ÷ 1,000)",
        unit: "µs",
        source: Source::Example {
            example: "exec_guard_bench",
            key: "exec_added_us",
        },
        target: Target::AtMost(100.0),
        how: "whole process, `tests/examples/exec_guard_bench.rs`: the release binary's `call bash` of `for i in $(seq 1000); do /bin/true; done` in a project with `sandbox.enforce_exec` on and one with it off, interleaved, median of 7 each",
    },
    Figure {
        issue: 22,
        name: "exec-time enforcement: `find -exec /bin/true {} \\;` over 1,000 files, on ÷ off",
        unit: "×",
        source: Source::Example {
            example: "exec_guard_bench",
            key: "find_ratio",
        },
        target: Target::AtMost(1.15),
        how: "whole process, `tests/examples/exec_guard_bench.rs`: the same pairing, median of 7 each",
    },
    Figure {
        issue: 22,
        name: "exec-time enforcement: `cargo build` of a small crate (fresh target directory), on ÷ off",
        unit: "×",
        source: Source::Example {
            example: "exec_guard_bench",
            key: "cargo_ratio",
        },
        target: Target::AtMost(1.15),
        how: "whole process, `tests/examples/exec_guard_bench.rs`: `cargo build --offline` of a two-module crate with no dependency, its target directory removed before each run, median of 5 each",
    },
    Figure {
        issue: 22,
        name: "exec-time enforcement: 1 GiB flood through `call bash`, on ÷ off",
        unit: "×",
        source: Source::Example {
            example: "exec_guard_bench",
            key: "flood_ratio",
        },
        target: Target::AtMost(1.05),
        how: "whole process, `tests/examples/exec_guard_bench.rs`: `head -c 1073741824 /dev/zero`, median of 5 each (the guard sees execs, never output)",
    },
    Figure {
        issue: 22,
        name: "exec-time enforcement: what it adds to `toolgate call bash 'true'` (median difference)",
        unit: "ms",
        source: Source::Example {
            example: "exec_guard_bench",
            key: "true_added_ms",
        },
        target: Target::AtMost(2.0),
        how: "whole process, `tests/examples/exec_guard_bench.rs`: the trampoline process, the filter, the listener's hand-over and the first exec's check; median of 40 each",
    },
    Figure {
        issue: 22,
        name: "everyday corpus: allowed without a question",
        unit: "%",
        source: Source::Example {
            example: "everyday_corpus",
            key: "everyday_allowed_percent",
        },
        target: Target::AtLeast(97.0),
        how: "`tests/examples/everyday_corpus.rs`: the 536 lines of `crates/shell-analysis/tests/corpus/everyday.txt` planned in a fixture project under `everyday-config.json` (each program the lines use allowed, `rm *` and `git push *` asked) with exec-time enforcement, decided without asking anyone; the worse of a fresh home and one with every package cache (the same measurement as the crate's `everyday` test)",
    },
    Figure {
        issue: 22,
        name: "everyday corpus: denied",
        unit: "lines",
        source: Source::Example {
            example: "everyday_corpus",
            key: "everyday_denied",
        },
        target: Target::AtMost(0.0),
        how: "the same run: lines a rule denies outright (none may be)",
    },
    Figure {
        issue: 25,
        name: "background: start-to-ready of `python3 -m http.server` with `wait_for: {port}`, over the server's own start (median difference)",
        unit: "ms",
        source: Source::Example {
            example: "shells_bench",
            key: "ready_added_ms",
        },
        target: Target::AtMost(20.0),
        how: "whole process, `tests/examples/shells_bench.rs`: one HTTP call to the release `serve` (`bash` with `background: true` and `wait_for: {port}`, polled every 2 ms in its first second) against the same server started directly and connected to every millisecond until it accepts; interleaved, median of 15 each. Each start but the server's first finds its trampoline made ahead, already in its cgroup (a move into a cgroup waits for the kernel's RCU grace period, 10 to 20 ms here)",
    },
    Figure {
        issue: 25,
        name: "background: `shell_output` round trip over HTTP (median)",
        unit: "ms",
        source: Source::Example {
            example: "shells_bench",
            key: "output_round_trip_ms",
        },
        target: Target::AtMost(2.0),
        how: "whole process, `tests/examples/shells_bench.rs`: 200 `shell_output` calls (`since: 0`) on a running process, after 20 warm-ups",
    },
    Figure {
        issue: 25,
        name: "background: 64 live processes each printing 1 MB/s, toolgate's CPU (share of one core)",
        unit: "%",
        source: Source::Example {
            example: "shells_bench",
            key: "flood_cpu_percent",
        },
        target: Target::AtMost(25.0),
        how: "whole process, `tests/examples/shells_bench.rs`: 4 sessions × 16 `python3` writers of 64 KiB 16 times a second; the server's utime + stime over 10 s (`/proc/<pid>/stat`) ÷ 10 s",
    },
    Figure {
        issue: 25,
        name: "background: 64 live processes each printing 1 MB/s, toolgate's peak RSS",
        unit: "MiB",
        source: Source::Example {
            example: "shells_bench",
            key: "flood_peak_rss_mib",
        },
        target: Target::AtMost(128.0),
        how: "the same run: `VmHWM` of the server at the end (64 rings of 1 MiB are kept)",
    },
    Figure {
        issue: 27,
        name: "`toolgate hook claude-code` on a `Bash` PreToolUse payload, cold process (median wall)",
        unit: "ms",
        source: Source::Example {
            example: "hook_bench",
            key: "hook_bash_ms",
        },
        target: Target::AtMost(10.0),
        how: "whole process, `tests/examples/hook_bench.rs`: the release binary spawned with the payload on stdin (`git status && cargo test -p toolgate --quiet`, the whole bash analysis, an audit entry per assertion), its answer read; 50 runs after 5 warm-ups",
    },
    Figure {
        issue: 27,
        name: "`toolgate hook claude-code` on a `Read` PreToolUse payload, cold process (median wall)",
        unit: "ms",
        source: Source::Example {
            example: "hook_bench",
            key: "hook_read_ms",
        },
        target: Target::AtMost(10.0),
        how: "the same run, a `Read` of a file in the project",
    },
];

struct Measured<'a> {
    figure: &'a Figure,
    value: f64,
}

impl Measured<'_> {
    fn passes(&self) -> bool {
        match self.figure.target {
            Target::AtMost(limit) => self.value <= limit,
            Target::AtLeast(limit) => self.value >= limit,
        }
    }

    fn target_text(&self) -> String {
        match self.figure.target {
            Target::AtMost(limit) | Target::AtLeast(limit) if limit.is_infinite() => "—".to_string(),
            Target::AtMost(limit) => format!("≤ {limit} {}", self.figure.unit),
            Target::AtLeast(limit) => format!("≥ {limit} {}", self.figure.unit),
        }
    }
}

fn bench_of(source: &Source) -> Option<&'static str> {
    match source {
        Source::MedianMicros { bench, .. }
        | Source::MedianMillis { bench, .. }
        | Source::Throughput { bench, .. }
        | Source::Ratio { bench, .. } => Some(bench),
        Source::Example { .. } => None,
    }
}

/// The examples that time `target/release/toolgate` (`e2e::release_binary`).
const RELEASE_EXAMPLES: &[&str] = &[
    "cold_start",
    "fs_bench",
    "sandbox_bench",
    "exec_guard_bench",
    "http_load",
    "mcp_start",
    "mcp_load",
    "mcp_fanout",
    "mcp_gateway",
    "http_idle_attackers",
    "shells_bench",
    "hook_bench",
];

/// Runs the benchmarks whose figure name, bench or example matches `filter` (all without
/// one): `cargo xtask bench exec_guard` runs the exec guard's whole-process figures.
pub(crate) fn run(filter: Option<&str>) -> Result<()> {
    let selected: Vec<&Figure> = FIGURES
        .iter()
        .filter(|figure| {
            filter.is_none_or(|filter| {
                figure.name.contains(filter)
                    || bench_of(&figure.source).is_some_and(|bench| bench.contains(filter))
                    || matches!(figure.source, Source::Example { example, .. } if example.contains(filter))
            })
        })
        .collect();
    if selected.is_empty() {
        bail!("no figure matches {filter:?}");
    }
    let benches: BTreeSet<&str> = selected.iter().filter_map(|figure| bench_of(&figure.source)).collect();
    for bench in &benches {
        let status = crate::cargo(&["bench", "--locked", "--package", PACKAGE, "--bench", bench])
            .status()
            .with_context(|| format!("could not run bench {bench}"))?;
        if !status.success() {
            bail!("bench {bench} failed ({status})");
        }
    }
    // Whole-process examples measure the release binary: build it, so they never time a
    // stale one.
    let needs_release_binary = selected
        .iter()
        .any(|f| matches!(f.source, Source::Example { example, .. } if RELEASE_EXAMPLES.contains(&example)));
    if needs_release_binary {
        let status = crate::cargo(&["build", "--release", "--locked", "--package", "toolgate"])
            .status()
            .context("could not build the release binary")?;
        if !status.success() {
            bail!("release build of toolgate failed ({status})");
        }
    }
    let mut example_output = std::collections::BTreeMap::new();
    for figure in &selected {
        if let Source::Example { example, .. } = figure.source
            && !example_output.contains_key(example)
        {
            example_output.insert(example, run_example(example)?);
        }
    }
    let mut measured = Vec::new();
    let mut selected = selected;
    selected.sort_by_key(|figure| figure.issue);
    for figure in selected {
        let value = match figure.source {
            Source::MedianMicros { id, .. } => median_ns(id)? / 1_000.0,
            Source::MedianMillis { id, .. } => median_ns(id)? / 1_000_000.0,
            Source::Throughput { id, bytes, .. } => bytes / median_ns(id)?,
            Source::Ratio { id, over, .. } => median_ns(id)? / median_ns(over)?,
            Source::Example { example, key } => example_figure(&example_output[example], key)
                .with_context(|| format!("example {example} printed no `figure {key}` line"))?,
        };
        measured.push(Measured { figure, value });
    }
    let path = crate::root().join("BENCHMARKS.md");
    // A missing file is a first run; an unreadable one must not be silently replaced.
    let before = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(error).with_context(|| format!("could not read {}", path.display())),
    };
    let previous = previous_rows(&before);
    let rows = rows(&measured, &previous);
    let table = table(&rows, &previous);
    println!("\n{}", table_of(&rows));
    std::fs::write(&path, document(&table, &kept_sections(&before))).context("could not write BENCHMARKS.md")?;
    println!(
        "BENCHMARKS.md: {} row(s) rewritten, the others kept as they were",
        measured.len()
    );
    let regressed: Vec<String> = rows
        .iter()
        .filter_map(|row| {
            row.change
                .filter(|change| *change > REGRESSION)
                .map(|change| format!("{} ({:+.0} % worse)", row.measured.figure.name, change * 100.0))
        })
        .collect();
    if !regressed.is_empty() {
        println!(
            "figures more than {:.0} % worse than the previous measurement:\n  {}",
            REGRESSION * 100.0,
            regressed.join("\n  ")
        );
    }
    let failing: Vec<&str> = measured.iter().filter(|m| !m.passes()).map(|m| m.figure.name).collect();
    if !failing.is_empty() {
        bail!("figures missing their target: {}", failing.join("; "));
    }
    Ok(())
}

/// How much worse than its previous measurement a figure may get before the run lists it.
const REGRESSION: f64 = 0.10;

/// One measured figure with what BENCHMARKS.md said before.
struct Row<'a> {
    measured: &'a Measured<'a>,
    /// The value the table held for this figure, if any.
    before: Option<f64>,
    /// Relative change, positive when worse (slower, larger, or fewer per second).
    change: Option<f64>,
}

fn rows<'a>(measured: &'a [Measured<'a>], previous: &BTreeMap<String, PreviousRow>) -> Vec<Row<'a>> {
    measured
        .iter()
        .map(|m| {
            let before = previous.get(m.figure.name).and_then(|row| row.value);
            let change = before.filter(|b| *b > 0.0).map(|b| {
                let relative = (m.value - b) / b;
                match m.figure.target {
                    Target::AtLeast(_) => -relative,
                    Target::AtMost(_) => relative,
                }
            });
            Row {
                measured: m,
                before,
                change,
            }
        })
        .collect()
}

/// A row of the table as BENCHMARKS.md has it.
struct PreviousRow {
    /// The whole line, kept verbatim when the figure is not measured this run.
    line: String,
    /// The measured value, when the cell starts with a number.
    value: Option<f64>,
}

/// The table rows of an existing BENCHMARKS.md, by figure name. Only the generated table
/// (the first one) counts; tables in hand-written sections are not figures of record.
fn previous_rows(text: &str) -> BTreeMap<String, PreviousRow> {
    let mut rows = BTreeMap::new();
    let mut in_table = false;
    for line in text.lines() {
        if line.starts_with("| issue | figure |") {
            if in_table || !rows.is_empty() {
                break;
            }
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        if cells.len() < 5 || !cells[0].starts_with('#') {
            continue;
        }
        let value = cells[2]
            .split_whitespace()
            .next()
            .and_then(|number| number.replace(',', "").parse().ok());
        rows.insert(
            cells[1].to_string(),
            PreviousRow {
                line: line.to_string(),
                value,
            },
        );
    }
    rows
}

/// The `## ` sections of an existing BENCHMARKS.md that the generator does not write.
fn kept_sections(text: &str) -> String {
    let mut kept = String::new();
    let mut keeping = false;
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            keeping = heading != "How each figure is measured";
        }
        // The closing line is generated; a hand-written section must not repeat it.
        if keeping && !line.starts_with("Reproduce: `cargo xtask bench`") {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept.trim_end().to_string()
}

fn median_ns(id: &str) -> Result<f64> {
    let path = crate::target_dir()
        .join("criterion")
        .join(id)
        .join("new/estimates.json");
    let text = std::fs::read_to_string(&path).with_context(|| format!("could not read {}", path.display()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    json.pointer("/median/point_estimate")
        .and_then(serde_json::Value::as_f64)
        .with_context(|| format!("{} has no median", path.display()))
}

fn run_example(example: &str) -> Result<String> {
    let output: std::process::Output = crate::cargo(&[
        "run",
        "--release",
        "--locked",
        "--package",
        PACKAGE,
        "--example",
        example,
    ])
    .stderr(std::process::Stdio::inherit())
    .output()
    .with_context(|| format!("could not run example {example}"))?;
    if !output.status.success() {
        bail!("example {example} failed ({})", output.status);
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn example_figure(output: &str, key: &str) -> Option<f64> {
    output.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some("figure"), Some(found), Some(value)) if found == key => value.parse().ok(),
            _ => None,
        }
    })
}

const TABLE_HEAD: &str = "| issue | figure | measured | target | verdict | before |\n|---|---|---|---|---|---|\n";

fn row_line(row: &Row<'_>) -> String {
    let m = row.measured;
    let verdict = match m.figure.target {
        // A reference figure has no target; a rate (`/s`) is better higher.
        Target::AtMost(limit) | Target::AtLeast(limit) if limit.is_infinite() => "reference",
        _ if m.passes() => "met",
        _ => "MISSED",
    };
    let before = match (row.before, row.change) {
        (Some(before), Some(change)) => format!(
            "{before:.3} ({:+.0} %{})",
            change * 100.0,
            if change > REGRESSION { ", worse" } else { "" }
        ),
        (Some(before), None) => format!("{before:.3}"),
        _ => "—".to_string(),
    };
    format!(
        "| #{} | {} | {:.3} {} | {} | {verdict} | {before} |",
        m.figure.issue,
        m.figure.name,
        m.value,
        m.figure.unit,
        m.target_text()
    )
}

/// The rows measured this run, as printed on the terminal.
fn table_of(rows: &[Row<'_>]) -> String {
    let mut out = String::from(TABLE_HEAD);
    for row in rows {
        let _ = writeln!(out, "{}", row_line(row));
    }
    out
}

/// The whole table: this run's rows where measured, the file's rows for the others, in
/// the order of [`FIGURES`] (by issue).
fn table(rows: &[Row<'_>], previous: &BTreeMap<String, PreviousRow>) -> String {
    let mut figures: Vec<&Figure> = FIGURES.iter().collect();
    figures.sort_by_key(|figure| figure.issue);
    let mut out = String::from(TABLE_HEAD);
    for figure in figures {
        if let Some(row) = rows.iter().find(|row| row.measured.figure.name == figure.name) {
            let _ = writeln!(out, "{}", row_line(row));
        } else if let Some(old) = previous.get(figure.name) {
            // Rows of the older five-column layout get an empty "before" cell.
            let line = if old.line.matches(" | ").count() < 5 {
                format!("{} — |", old.line.trim_end())
            } else {
                old.line.clone()
            };
            let _ = writeln!(out, "{line}");
        }
    }
    out
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split(':').nth(1))
                .map(|name| name.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let rustc = Command::new("rustc")
        .arg("--version")
        .output()
        .ok()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .unwrap_or_default();
    format!("{cpu}, {cores} cores, {rustc}")
}

fn document(table: &str, kept: &str) -> String {
    let mut out = String::from(
        "# Benchmarks\n\nMeasured figures, one row per figure an issue asks for. This file is written by \
         `cargo xtask bench [FILTER]`: a run rewrites the rows it measured and keeps the others, and \
         `before` is the value a row replaced (positive change = worse). Do not edit the table by hand.\n\n",
    );
    let _ = writeln!(out, "Machine of the last run: {}.\n", machine());
    out.push_str(table);
    out.push_str("\n## How each figure is measured\n\n");
    for figure in FIGURES {
        let _ = writeln!(out, "- **{}** (#{}): {}.", figure.name, figure.issue, figure.how);
    }
    if !kept.is_empty() {
        out.push('\n');
        out.push_str(kept);
        out.push('\n');
    }
    out.push_str(
        "\nReproduce: `cargo xtask bench` (all), or `cargo xtask bench settle` for one bench. Criterion's \
         raw estimates are kept under `target/criterion/`.\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# Benchmarks\n\nintro\n\n| issue | figure | measured | target | verdict |\n|---|---|---|---|---|\n\
| #2 | settle of a no-op tool through registry + output bound (median) | 0.393 µs | ≤ 5 µs | met |\n\
| #8 | HTTP: 50 concurrent clients calling a near no-op tool (`read` of a one-line file) for 10 s, calls per second | 15,716.000 calls/s | ≥ 5000 calls/s | met |\n\
\n## How each figure is measured\n\n- generated\n\n## Notes by hand\n\n| issue | figure | measured | target | verdict |\n|---|---|---|---|---|\n\
| #2 | settle of a no-op tool through registry + output bound (median) | 9 µs | x | y |\n\nReproduce: `cargo xtask bench` (all)\n";

    #[test]
    fn previous_rows_come_from_the_generated_table_only() {
        let rows = previous_rows(FILE);
        assert_eq!(rows.len(), 2);
        let settle = &rows["settle of a no-op tool through registry + output bound (median)"];
        assert_eq!(settle.value, Some(0.393));
        let http = rows
            .values()
            .find(|row| row.line.contains("HTTP"))
            .and_then(|row| row.value);
        assert_eq!(http, Some(15716.0));
    }

    #[test]
    fn hand_written_sections_are_kept_without_the_generated_closing_line() {
        let kept = kept_sections(FILE);
        assert!(kept.starts_with("## Notes by hand"), "{kept}");
        assert!(!kept.contains("Reproduce:"), "{kept}");
        assert!(!kept.contains("- generated"), "{kept}");
    }

    #[test]
    fn a_filtered_run_rewrites_its_rows_and_keeps_the_others() {
        let previous = previous_rows(FILE);
        let settle = FIGURES
            .iter()
            .find(|f| f.name.starts_with("settle of a no-op tool"))
            .expect("settle row");
        let measured = [Measured {
            figure: settle,
            value: 0.5,
        }];
        let rows = rows(&measured, &previous);
        // 0.393 -> 0.5 is 27 % slower: worse, and flagged.
        let change = rows[0].change.expect("a change");
        assert!((change - 0.2723).abs() < 0.001, "{change}");
        let table = table(&rows, &previous);
        assert!(
            table.contains("| 0.500 µs | ≤ 5 µs | met | 0.393 (+27 %, worse) |"),
            "{table}"
        );
        assert!(
            table.contains("| 15,716.000 calls/s | ≥ 5000 calls/s | met | — |"),
            "{table}"
        );
        // Throughput: fewer calls per second is worse.
        let http = FIGURES
            .iter()
            .find(|f| f.name.starts_with("HTTP: 50 concurrent"))
            .expect("http row");
        let measured = [Measured {
            figure: http,
            value: 17000.0,
        }];
        let rows = super::rows(&measured, &previous);
        assert!(rows[0].change.is_some_and(|change| change < 0.0));
    }

    #[test]
    fn a_reference_rate_that_rose_is_not_worse() {
        let oracle = FIGURES
            .iter()
            .find(|f| f.name.starts_with("shell oracle: of those"))
            .expect("oracle reference row");
        let previous = BTreeMap::from([(
            oracle.name.to_string(),
            PreviousRow {
                value: Some(135.7),
                line: String::new(),
            },
        )]);
        let faster = [Measured {
            figure: oracle,
            value: 198.0,
        }];
        let rows = rows(&faster, &previous);
        assert!(rows[0].change.is_some_and(|change| change < 0.0));
        let line = row_line(&rows[0]);
        assert!(line.contains("| — | reference | 135.700 (-46 %) |"), "{line}");
        let slower = [Measured {
            figure: oracle,
            value: 100.0,
        }];
        assert!(row_line(&super::rows(&slower, &previous)[0]).contains(", worse"));
    }
}
