//! `toolgate call read` on a small file as a whole, cold process: median wall time and
//! peak RSS over 20 runs of the release binary (`cargo xtask bench` builds it first).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;
use std::time::Instant;

fn main() {
    let binary = e2e::release_binary();
    let sandbox = tempfile::tempdir().unwrap();
    let project = sandbox.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("small.txt"), "fn main() {\n    println!(\"hello\");\n}\n").unwrap();
    let run = |measure_rss: bool| {
        let mut command = if measure_rss {
            let mut command = Command::new("/usr/bin/time");
            command.args(["-f", "%M"]).arg(&binary);
            command
        } else {
            Command::new(&binary)
        };
        command
            .args(["call", "read", r#"{"path": "small.txt"}"#])
            .current_dir(&project)
            .env("TOOLGATE_DATA_DIR", sandbox.path().join("data"))
            .env("TOOLGATE_CONFIG_DIR", sandbox.path().join("config"))
            .stdin(std::process::Stdio::null());
        let start = Instant::now();
        let output = command.output().unwrap();
        let seconds = start.elapsed().as_secs_f64();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let rss_kib = String::from_utf8_lossy(&output.stderr)
            .trim()
            .lines()
            .last()
            .and_then(|l| l.parse::<f64>().ok());
        (seconds, rss_kib)
    };
    run(false);
    let mut times: Vec<f64> = (0..20).map(|_| run(false).0).collect();
    times.sort_by(|a, b| a.total_cmp(b));
    let peak = (0..5).filter_map(|_| run(true).1).fold(0.0f64, f64::max) / 1024.0;
    println!("figure cold_ms {:.2}", times[times.len() / 2] * 1000.0);
    println!("figure cold_peak_rss_mib {peak:.1}");
}
