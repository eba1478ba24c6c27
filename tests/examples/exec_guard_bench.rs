//! Exec-time enforcement's cost, as whole processes of the release binary side by side in
//! one run (`cargo xtask bench` builds the binary first): the same `toolgate call bash`
//! with `sandbox.enforce_exec` on and off, interleaved so that both see the same machine.
//!
//! - 1,000 execs of `/bin/true` from a bash loop: the time one checked exec adds;
//! - `find -exec /bin/true {} \;` over 1,000 files;
//! - `cargo build` of a small crate (a fresh target directory each run);
//! - a 1 GiB flood (output is not touched by the guard; it must cost nothing);
//! - `call bash 'true'`: what the guard adds to the smallest call.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

fn project(root: &Path, name: &str, enforce: bool) {
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("files")).unwrap();
    let config = serde_json::json!({
        "sandbox": {"enforce_exec": enforce},
        "permission": {"bash": "allow", "external_directory": "allow", "edit": "allow", "read": "allow"},
    });
    std::fs::write(dir.join("toolgate.json"), config.to_string()).unwrap();
    for i in 0..1000 {
        std::fs::write(dir.join("files").join(format!("f{i:04}")), "x").unwrap();
    }
    // A small crate: two modules and a test, no dependency.
    std::fs::create_dir_all(dir.join("small/src")).unwrap();
    std::fs::write(
        dir.join("small/Cargo.toml"),
        "[package]\nname = \"small\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("small/src/main.rs"),
        "mod a;\nfn main() { println!(\"{}\", a::twice(21)); }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("small/src/a.rs"),
        "pub fn twice(x: u32) -> u32 { x * 2 }\n#[cfg(test)] mod t { #[test] fn t() { assert_eq!(super::twice(2), 4); } }\n",
    )
    .unwrap();
}

fn call(binary: &Path, root: &Path, name: &str, command: &str) -> f64 {
    let input = serde_json::json!({"command": command, "timeout": 600000}).to_string();
    let start = Instant::now();
    let output = Command::new(binary)
        .args(["call", "bash", &input, "--auto", "--json"])
        .current_dir(root.join(name))
        .env("TOOLGATE_DATA_DIR", root.join("data"))
        .env("TOOLGATE_CONFIG_DIR", root.join("config"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let seconds = start.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("Command exited with code 0."),
        "{command} in {name}: {}{}",
        stdout.chars().take(2000).collect::<String>(),
        String::from_utf8_lossy(&output.stderr)
    );
    seconds
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

/// Medians of `runs` interleaved calls of `command` with enforcement off and on.
fn pair(binary: &Path, root: &Path, command: &str, runs: usize) -> (f64, f64) {
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        off.push(call(binary, root, "off", command));
        on.push(call(binary, root, "on", command));
    }
    (median(&mut off), median(&mut on))
}

fn main() {
    let binary = e2e::release_binary();
    let probe = Command::new(&binary)
        .args(["__sandbox-exec", "--probe-exec-guard"])
        .output()
        .unwrap();
    assert!(
        probe.status.success(),
        "exec-time enforcement is unavailable here: {}",
        String::from_utf8_lossy(&probe.stderr)
    );
    let root = tempfile::tempdir().unwrap();
    for dir in ["data", "config"] {
        std::fs::create_dir(root.path().join(dir)).unwrap();
    }
    project(root.path(), "off", false);
    project(root.path(), "on", true);
    for name in ["off", "on"] {
        call(&binary, root.path(), name, "true");
    }
    let (off, on) = pair(&binary, root.path(), "for i in $(seq 1000); do /bin/true; done", 7);
    println!("figure loop_off_seconds {off:.4}");
    println!("figure loop_on_seconds {on:.4}");
    println!("figure exec_added_us {:.1}", (on - off) / 1000.0 * 1e6);
    let (off, on) = pair(&binary, root.path(), "find files -type f -exec /bin/true {} \\;", 7);
    println!("figure find_off_seconds {off:.4}");
    println!("figure find_on_seconds {on:.4}");
    println!("figure find_ratio {:.3}", on / off);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let build = format!("cd small && rm -rf target && {cargo} build --offline --quiet");
    let (off, on) = pair(&binary, root.path(), &build, 5);
    println!("figure cargo_off_seconds {off:.4}");
    println!("figure cargo_on_seconds {on:.4}");
    println!("figure cargo_ratio {:.3}", on / off);
    let (off, on) = pair(&binary, root.path(), "head -c 1073741824 /dev/zero", 5);
    println!("figure flood_off_seconds {off:.4}");
    println!("figure flood_on_seconds {on:.4}");
    println!("figure flood_ratio {:.3}", on / off);
    let (off, on) = pair(&binary, root.path(), "true", 40);
    println!("figure true_off_ms {:.3}", off * 1000.0);
    println!("figure true_on_ms {:.3}", on * 1000.0);
    println!("figure true_added_ms {:.3}", (on - off) * 1000.0);
}
