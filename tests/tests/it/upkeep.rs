//! Upkeep of the long-running processes: `toolgate serve` and `toolgate mcp` remove spill
//! files older than 7 days when they start (and hourly after), whether or not a call is
//! ever made; younger spills and other files stay.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use e2e::Sandbox;

/// An 8-day-old spill, a 6-day-old spill and an 8-day-old file that is not a spill.
fn plant(sandbox: &Sandbox) -> (PathBuf, PathBuf, PathBuf) {
    let spills = sandbox.data_dir().join("tool-output");
    std::fs::create_dir_all(&spills).unwrap();
    let age = |path: &Path, days: u64| {
        std::fs::write(path, "spilled output\n").unwrap();
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(days * 24 * 3600))
            .unwrap();
    };
    let old = spills.join("tool_old");
    let young = spills.join("tool_young");
    let other = spills.join("notes.txt");
    age(&old, 8);
    age(&young, 6);
    age(&other, 8);
    (old, young, other)
}

fn gone_within(path: &Path, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while path.exists() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

#[test]
fn serve_removes_an_eight_day_old_spill_at_start_without_any_call() {
    let sandbox = Sandbox::new();
    let (old, young, other) = plant(&sandbox);
    assert!(old.exists(), "precondition: the old spill is there");
    let served = sandbox.serve(&[]);
    assert!(
        gone_within(&old, Duration::from_secs(10)),
        "the 8-day-old spill is still there"
    );
    assert!(
        young.exists() && other.exists(),
        "a young spill or a non-spill was removed"
    );
    drop(served);
}

#[test]
fn mcp_removes_an_eight_day_old_spill_at_start_without_any_call() {
    let sandbox = Sandbox::new();
    let (old, young, other) = plant(&sandbox);
    assert!(old.exists(), "precondition: the old spill is there");
    let mut command = sandbox.command(&["mcp"]);
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null());
    let mut child = command.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    writeln!(
        input,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    )
    .unwrap();
    // Without `--dir` the tools (and their upkeep) start once the client is initialized:
    // only then is its project known (README "MCP roots").
    writeln!(input, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
    let removed = gone_within(&old, Duration::from_secs(10));
    drop(input);
    let _ = child.wait();
    assert!(removed, "the 8-day-old spill is still there");
    assert!(
        young.exists() && other.exists(),
        "a young spill or a non-spill was removed"
    );
}
