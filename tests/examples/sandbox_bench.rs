//! The bash sandbox's cost, as whole processes of the release binary, side by side in one
//! run: `toolgate call bash 'true'` and a 1 GiB flood through `toolgate call bash`, each
//! with the sandbox off and with `workspace-write`, interleaved so that both see the same
//! machine (`cargo xtask bench` builds the binary first).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

const FLOOD: &str = "head -c 1073741824 /dev/zero";

fn call(binary: &Path, root: &Path, command: &str, mode: &str) -> f64 {
    let input = serde_json::json!({"command": command}).to_string();
    let start = Instant::now();
    let output = Command::new(binary)
        .args(["call", "bash", &input, "--auto", "--sandbox", mode])
        .current_dir(root.join("project"))
        .env("TOOLGATE_DATA_DIR", root.join("data"))
        .env("TOOLGATE_CONFIG_DIR", root.join("config"))
        .env("TMPDIR", root.join("tmp"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let seconds = start.elapsed().as_secs_f64();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    seconds
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

fn main() {
    let binary = e2e::release_binary();
    let support = Command::new(&binary)
        .args(["__sandbox-exec", "--probe"])
        .output()
        .unwrap();
    assert!(
        support.status.success(),
        "the sandbox is unavailable here: {}",
        String::from_utf8_lossy(&support.stderr)
    );
    let root = tempfile::tempdir().unwrap();
    for dir in ["project", "data", "config", "tmp"] {
        std::fs::create_dir(root.path().join(dir)).unwrap();
    }
    // Warm-up: page cache, the probe's remembered answer.
    for mode in ["off", "workspace-write"] {
        call(&binary, root.path(), "true", mode);
    }
    let (mut off, mut sandboxed) = (Vec::new(), Vec::new());
    for _ in 0..40 {
        off.push(call(&binary, root.path(), "true", "off"));
        sandboxed.push(call(&binary, root.path(), "true", "workspace-write"));
    }
    let (off, sandboxed) = (median(&mut off), median(&mut sandboxed));
    println!("figure true_off_ms {:.3}", off * 1000.0);
    println!("figure true_sandboxed_ms {:.3}", sandboxed * 1000.0);
    println!("figure true_ratio {:.3}", sandboxed / off);
    println!("figure true_added_ms {:.3}", (sandboxed - off) * 1000.0);
    let (mut off, mut sandboxed) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        off.push(call(&binary, root.path(), FLOOD, "off"));
        sandboxed.push(call(&binary, root.path(), FLOOD, "workspace-write"));
    }
    let (off, sandboxed) = (median(&mut off), median(&mut sandboxed));
    println!("figure flood_off_seconds {off:.4}");
    println!("figure flood_sandboxed_seconds {sandboxed:.4}");
    println!("figure flood_ratio {:.3}", sandboxed / off);
}
