//! 1 GiB of output through the bash tool (registry + output store), side by side with
//! the same command piped into `cat >/dev/null` (what any pipe reader pays) and writing
//! straight to /dev/null (the reference), as whole processes in one run.
//!
//! Run without arguments it measures both by re-running itself: `tool` mode settles the
//! call in this process and reports its peak RSS; the anchor is `sh -c 'CMD >/dev/null'`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Instant;

use toolgate_core::{Context, Location};
use toolgate_output_store::OutputStore;
use toolgate_registry::{ApplicationTools, ToolRegistry};

const COMMAND: &str = "head -c 1073741824 /dev/zero";

use e2e::AllowAll;

use e2e::peak_rss_mib;

fn tool_mode() {
    let data = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let app = ApplicationTools::new();
    let registry = ToolRegistry::new(&app, Arc::new(OutputStore::new(data.path())));
    let tool = toolgate_builtins_shell::bash_tool_with_shell(
        Location::new(project.path()).unwrap(),
        Arc::new(AllowAll),
        "/bin/sh".into(),
    );
    let _guard = registry.register([("bash", tool)]).unwrap();
    let turn = registry.materialize(|_| false);
    let start = Instant::now();
    let settled = runtime
        .block_on(turn.settle(
            "bash",
            serde_json::json!({"command": COMMAND}),
            Context::new("s", "build"),
        ))
        .unwrap();
    let seconds = start.elapsed().as_secs_f64();
    assert!(!settled.result.is_error());
    println!("figure tool_seconds {seconds:.4}");
    println!("figure peak_rss_mib {:.1}", peak_rss_mib());
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("tool") {
        return tool_mode();
    }
    let exe = std::env::current_exe().unwrap();
    let mut anchor = Vec::new();
    let mut floor = Vec::new();
    let mut tool = Vec::new();
    let mut peak: f64 = 0.0;
    for _ in 0..5 {
        let start = Instant::now();
        let status = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(format!("{COMMAND} >/dev/null"))
            .status()
            .unwrap();
        assert!(status.success());
        anchor.push(start.elapsed().as_secs_f64());
        // The floor of any reader behind a pipe: the same bytes through `cat`.
        let start = Instant::now();
        let status = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(format!("{COMMAND} | cat >/dev/null"))
            .status()
            .unwrap();
        assert!(status.success());
        floor.push(start.elapsed().as_secs_f64());
        let start = Instant::now();
        let output = std::process::Command::new(&exe).arg("tool").output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        tool.push(start.elapsed().as_secs_f64());
        let text = String::from_utf8_lossy(&output.stdout);
        let rss: f64 = text
            .lines()
            .find_map(|line| line.strip_prefix("figure peak_rss_mib "))
            .unwrap()
            .parse()
            .unwrap();
        peak = peak.max(rss);
    }
    let median = |values: &mut Vec<f64>| {
        values.sort_by(|a, b| a.total_cmp(b));
        values[values.len() / 2]
    };
    let anchor = median(&mut anchor);
    let tool = median(&mut tool);
    let floor = median(&mut floor);
    println!("figure pipe_floor_ratio {:.3}", floor / anchor);
    println!("figure pipe_ratio {:.3}", tool / floor);
    println!("figure anchor_seconds {anchor:.4}");
    println!("figure tool_seconds {tool:.4}");
    println!("figure wall_ratio {:.3}", tool / anchor);
    println!("figure peak_rss_mib {peak:.1}");
}
