//! Whole-process figures of the file tools, each side by side with its anchor: grep and glob
//! against ripgrep on a large real tree (this workspace's dependencies, vendored into
//! `target/bench-vendor`), and reading the last page of a 1 GiB log against `wc -l`.
//!
//! Both sides are what a person runs: the release `toolgate call …` (config, rules, audit
//! log, output bound and all) against the anchor command, in fresh processes, on the same
//! files with the page cache warm. The two commands alternate run by run, and which one goes
//! first alternates too, so neither inherits a cache the other warmed. (The first version of
//! this bench ran the tool in-process — no start-up, no audit — on an 80-byte-line file with
//! the anchor always first, and reported 0.88× and 0.75× where a person timing the binary
//! saw 3.5–5× and 1.12×.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const GREP_PATTERN: &str = "unsafe impl";
const RUNS: usize = 11;
/// The log's shape: 10 M lines of 107 bytes (1 GiB / 10 M ≈ 107).
const LINE_BYTES: usize = 107;
const LOG_BYTES: u64 = 1024 * 1024 * 1024;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

fn time(command: &mut Command) -> f64 {
    let start = Instant::now();
    let output = command.output().unwrap();
    let seconds = start.elapsed().as_secs_f64();
    assert!(
        output.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    std::hint::black_box(output.stdout);
    seconds
}

fn side_by_side(name: &str, ours: impl Fn() -> Command, anchor: impl Fn() -> Command) {
    // Warm-up: both read everything once, so the page cache holds it for both.
    for _ in 0..2 {
        time(&mut anchor());
        time(&mut ours());
    }
    let mut our_times = Vec::new();
    let mut anchor_times = Vec::new();
    for run in 0..RUNS {
        if run % 2 == 0 {
            anchor_times.push(time(&mut anchor()));
            our_times.push(time(&mut ours()));
        } else {
            our_times.push(time(&mut ours()));
            anchor_times.push(time(&mut anchor()));
        }
    }
    let (ours, anchor) = (median(our_times), median(anchor_times));
    println!("figure {name}_seconds {ours:.4}");
    println!("figure {name}_anchor_seconds {anchor:.4}");
    println!("figure {name}_ratio {:.3}", ours / anchor);
}

fn vendored_tree(root: &Path) -> PathBuf {
    let tree = root.join("target/bench-vendor");
    if !tree.join(".done").exists() {
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["vendor", "--locked", "--versioned-dirs", "-q"])
            .arg(&tree)
            .current_dir(root)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "cargo vendor failed");
        std::fs::write(tree.join(".done"), "").unwrap();
    }
    tree
}

/// A 1 GiB log of 107-byte lines (about 10 M of them); the last line is shorter. Returns
/// the file and its number of lines.
fn big_log(root: &Path) -> (PathBuf, u64) {
    use std::io::Write;
    // The first version's 80-byte-line file is not this shape: remove it.
    let _ = std::fs::remove_file(root.join("target/bench-1gib.txt"));
    let path = root.join("target/bench-1gib-107.txt");
    let full = LOG_BYTES / LINE_BYTES as u64;
    let lines = full + 1;
    if std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0) != LOG_BYTES {
        let mut file = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&path).unwrap());
        for n in 0..full {
            let line = format!(
                "2026-11-29T12:00:00.000Z INFO request served in {:07} ms method=GET path=/api/v1/items/{n:010} st=200\n",
                n % 100_000
            );
            assert_eq!(line.len(), LINE_BYTES);
            file.write_all(line.as_bytes()).unwrap();
        }
        let rest = (LOG_BYTES - full * LINE_BYTES as u64) as usize;
        file.write_all(&vec![b'x'; rest - 1]).unwrap();
        file.write_all(b"\n").unwrap();
    }
    (path, lines)
}

fn main() {
    if Command::new("rg").arg("--version").output().is_err() {
        eprintln!("fs_bench: ripgrep (`rg`) is needed as the anchor: apt-get install ripgrep");
        std::process::exit(2);
    }
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let binary = e2e::release_binary();
    let home = tempfile::tempdir().unwrap();
    for dir in ["data", "config"] {
        std::fs::create_dir(home.path().join(dir)).unwrap();
    }
    let toolgate = |dir: PathBuf, tool: &'static str, input: serde_json::Value| {
        let (binary, home) = (binary.clone(), home.path().to_path_buf());
        move || {
            let mut command = Command::new(&binary);
            command
                .args(["call", tool, &input.to_string(), "--auto", "--dir"])
                .arg(&dir)
                .env("TOOLGATE_DATA_DIR", home.join("data"))
                .env("TOOLGATE_CONFIG_DIR", home.join("config"))
                .env_remove("TOOLGATE_PERMISSION")
                .stdin(std::process::Stdio::null());
            command
        }
    };
    let tree = vendored_tree(&workspace);
    side_by_side(
        "grep",
        toolgate(tree.clone(), "grep", serde_json::json!({"pattern": GREP_PATTERN})),
        || {
            let mut command = Command::new("rg");
            command.args(["-n", GREP_PATTERN]).current_dir(&tree);
            command
        },
    );
    side_by_side(
        "glob",
        toolgate(tree.clone(), "glob", serde_json::json!({"pattern": "**/*.rs"})),
        || {
            let mut command = Command::new("rg");
            command.args(["--files", "-g", "*.rs"]).current_dir(&tree);
            command
        },
    );
    let (file, lines) = big_log(&workspace);
    side_by_side(
        "read_last_page",
        toolgate(
            file.parent().unwrap().to_path_buf(),
            "read",
            serde_json::json!({"path": file.file_name().unwrap().to_str().unwrap(), "offset": lines - 100}),
        ),
        || {
            let mut command = Command::new("wc");
            command.arg("-l").arg(&file);
            command
        },
    );
    // Peak memory of the reading process, as the kernel counts it (largest of 3).
    let read = toolgate(
        file.parent().unwrap().to_path_buf(),
        "read",
        serde_json::json!({"path": file.file_name().unwrap().to_str().unwrap(), "offset": lines - 100}),
    );
    let mut peak_kib: f64 = 0.0;
    for _ in 0..3 {
        let command = read();
        let output = Command::new("/usr/bin/time")
            .arg("-f")
            .arg("%M")
            .arg(command.get_program())
            .args(command.get_args())
            .envs(
                command
                    .get_envs()
                    .filter_map(|(key, value)| value.map(|value| (key, value))),
            )
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let kib: f64 = String::from_utf8_lossy(&output.stderr)
            .trim()
            .lines()
            .last()
            .unwrap()
            .parse()
            .unwrap();
        peak_kib = peak_kib.max(kib);
    }
    println!("figure read_peak_rss_mib {:.1}", peak_kib / 1024.0);
}
