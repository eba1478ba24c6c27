//! `toolgate hook claude-code` as Claude Code runs it: a whole, cold release process per
//! decision, the `PreToolUse` payload on stdin, the answer read from stdout. Median wall
//! time over 50 runs for a `Bash` line (the whole bash analysis) and for a `Read`, after
//! 5 warm-ups each, with the data directory (audit log) kept between runs
//! (`cargo xtask bench hook_bench` builds the binary first).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Instant;

const RUNS: usize = 50;

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2] * 1000.0
}

fn main() {
    let binary = e2e::release_binary();
    let sandbox = tempfile::tempdir().unwrap();
    let project = sandbox.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(
        project.join("toolgate.json"),
        r#"{"permission": {"bash": {"*": "ask", "git *": "allow", "cargo test*": "allow", "rm *": "deny"},
            "read": {"*": "allow", "*.env": "deny"}}}"#,
    )
    .unwrap();
    let payload = |tool: &str, input: serde_json::Value| {
        serde_json::json!({
            "session_id": "bench",
            "transcript_path": "/tmp/bench.jsonl",
            "cwd": project,
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": input,
            "tool_use_id": "toolu_bench",
        })
        .to_string()
    };
    let bash = payload(
        "Bash",
        serde_json::json!({"command": "git status && cargo test -p toolgate --quiet"}),
    );
    let read = payload("Read", serde_json::json!({"file_path": project.join("src/main.rs")}));
    let run = |payload: &str, expected: &str| {
        let start = Instant::now();
        let mut child = Command::new(&binary)
            .args(["hook", "claude-code"])
            .current_dir(&project)
            .env("TOOLGATE_DATA_DIR", sandbox.path().join("data"))
            .env("TOOLGATE_CONFIG_DIR", sandbox.path().join("config"))
            .env("CLAUDE_PROJECT_DIR", &project)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(payload.as_bytes()).unwrap();
        let output = child.wait_with_output().unwrap();
        let seconds = start.elapsed().as_secs_f64();
        let out = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        assert!(out.contains(expected), "{out}");
        seconds
    };
    let allow = r#""permissionDecision":"allow""#;
    for _ in 0..5 {
        run(&bash, allow);
        run(&read, allow);
    }
    let bash_times: Vec<f64> = (0..RUNS).map(|_| run(&bash, allow)).collect();
    let read_times: Vec<f64> = (0..RUNS).map(|_| run(&read, allow)).collect();
    println!("figure hook_bash_ms {:.2}", median(bash_times));
    println!("figure hook_read_ms {:.2}", median(read_times));
}
