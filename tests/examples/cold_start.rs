//! `toolgate call read` on a small file as a whole, cold process: median wall time over
//! 30 runs of the release binary with the data directory kept between runs, the same with
//! a new data directory for every run, `cat` of the file for scale, and the peak RSS
//! (`cargo xtask bench` builds the binary first).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

const RUNS: usize = 30;

fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(|a, b| a.total_cmp(b));
    times[times.len() / 2] * 1000.0
}

fn main() {
    let binary = e2e::release_binary();
    let sandbox = tempfile::tempdir().unwrap();
    let project = sandbox.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("small.txt"), "fn main() {\n    println!(\"hello\");\n}\n").unwrap();
    let run = |data: &Path, measure_rss: bool| {
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
            .env("TOOLGATE_DATA_DIR", data)
            .env("TOOLGATE_CONFIG_DIR", sandbox.path().join("config"))
            .stdin(std::process::Stdio::null());
        let start = Instant::now();
        let output = command.output().unwrap();
        let seconds = start.elapsed().as_secs_f64();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        assert!(String::from_utf8_lossy(&output.stdout).contains("println!"));
        let rss_kib = String::from_utf8_lossy(&output.stderr)
            .trim()
            .lines()
            .last()
            .and_then(|l| l.parse::<f64>().ok());
        (seconds, rss_kib)
    };
    let kept = sandbox.path().join("data");
    run(&kept, false);
    let warm: Vec<f64> = (0..RUNS).map(|_| run(&kept, false).0).collect();
    let fresh: Vec<f64> = (0..RUNS)
        .map(|index| run(&sandbox.path().join(format!("data-{index}")), false).0)
        .collect();
    let cat: Vec<f64> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            let status = Command::new("cat")
                .arg("small.txt")
                .current_dir(&project)
                .stdout(std::process::Stdio::null())
                .status()
                .unwrap();
            assert!(status.success());
            start.elapsed().as_secs_f64()
        })
        .collect();
    let peak = (0..5).filter_map(|_| run(&kept, true).1).fold(0.0f64, f64::max) / 1024.0;
    println!("figure cold_ms {:.2}", median(warm));
    println!("figure cold_fresh_ms {:.2}", median(fresh));
    println!("figure cat_ms {:.2}", median(cat));
    println!("figure cold_peak_rss_mib {peak:.1}");
}
