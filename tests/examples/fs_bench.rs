//! Whole-process figures of the file tools, each side by side with its anchor:
//! grep and glob against ripgrep on a large real tree (this workspace's dependencies,
//! vendored into `target/bench-vendor`), and reading the last page of a 1 GiB file
//! against `wc -l`.
//!
//! `fs_bench` prepares the data and runs everything; `fs_bench grep|glob|read ARGS` are
//! the measured modes (one process each).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use toolgate_core::{Context, Location, ModelResult};

const GREP_PATTERN: &str = "unsafe impl";
const GLOB_PATTERN: &str = "*.rs";
const RUNS: usize = 7;

use e2e::AllowAll;

use e2e::peak_rss_mib;

/// Runs one tool call in this process, the way the binary would.
fn tool_mode(tool: &str, root: &Path, input: serde_json::Value) {
    let services = toolgate_builtins_fs::Services::new(Location::new(root).unwrap(), Arc::new(AllowAll));
    let tool = match tool {
        "grep" => toolgate_builtins_fs::grep_tool(services),
        "glob" => toolgate_builtins_fs::glob_tool(services),
        _ => toolgate_builtins_fs::read_tool(services),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let output = runtime
        .block_on(tool.settle(input, Context::default()))
        .unwrap()
        .unwrap();
    let ModelResult::Text(text) = ModelResult::from_output(&output) else {
        panic!("text expected")
    };
    std::hint::black_box(text);
    println!("figure peak_rss_mib {:.1}", peak_rss_mib());
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

fn time(command: &mut Command) -> (f64, String) {
    let start = Instant::now();
    let output = command.output().unwrap();
    let seconds = start.elapsed().as_secs_f64();
    assert!(
        output.status.success() || output.status.code() == Some(1),
        "{command:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (seconds, String::from_utf8_lossy(&output.stdout).into_owned())
}

fn side_by_side(name: &str, ours: impl Fn() -> Command, anchor: impl Fn() -> Command) -> (f64, f64, f64) {
    // One warm-up each: the figures are about the tools, not the page cache.
    let _ = time(&mut ours());
    let _ = time(&mut anchor());
    let mut our_times = Vec::new();
    let mut anchor_times = Vec::new();
    let mut peak: f64 = 0.0;
    for _ in 0..RUNS {
        let (seconds, out) = time(&mut anchor());
        anchor_times.push(seconds);
        std::hint::black_box(out);
        let (seconds, out) = time(&mut ours());
        our_times.push(seconds);
        if let Some(rss) = out.lines().find_map(|l| l.strip_prefix("figure peak_rss_mib ")) {
            peak = peak.max(rss.parse().unwrap());
        }
    }
    let (ours, anchor) = (median(our_times), median(anchor_times));
    println!("figure {name}_seconds {ours:.4}");
    println!("figure {name}_anchor_seconds {anchor:.4}");
    println!("figure {name}_ratio {:.3}", ours / anchor);
    (ours, anchor, peak)
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

fn big_file(root: &Path) -> PathBuf {
    let path = root.join("target/bench-1gib.txt");
    const SIZE: u64 = 1024 * 1024 * 1024;
    if std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0) != SIZE {
        use std::io::Write;
        let mut file = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&path).unwrap());
        let line = b"2026-11-29T12:00:00Z INFO request served in 12 ms path=/api/v1/items status=200\n";
        let mut written = 0u64;
        while written + line.len() as u64 <= SIZE {
            file.write_all(line).unwrap();
            written += line.len() as u64;
        }
        file.write_all(&vec![b'x'; (SIZE - written) as usize]).unwrap();
    }
    path
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [mode, root, input] = args.as_slice() {
        return tool_mode(mode, Path::new(root), serde_json::from_str(input).unwrap());
    }
    if Command::new("rg").arg("--version").output().is_err() {
        eprintln!("fs_bench: ripgrep (`rg`) is needed as the anchor: apt-get install ripgrep");
        std::process::exit(2);
    }
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let exe = std::env::current_exe().unwrap();
    let tree = vendored_tree(&workspace);
    let ours = |mode: &'static str, root: PathBuf, input: serde_json::Value| {
        let exe = exe.clone();
        move || {
            let mut command = Command::new(&exe);
            command.arg(mode).arg(&root).arg(input.to_string());
            command
        }
    };
    side_by_side(
        "grep",
        ours("grep", tree.clone(), serde_json::json!({"pattern": GREP_PATTERN})),
        || {
            let mut command = Command::new("rg");
            command.args(["-n", GREP_PATTERN]).current_dir(&tree);
            command
        },
    );
    side_by_side(
        "glob",
        ours("glob", tree.clone(), serde_json::json!({"pattern": GLOB_PATTERN})),
        || {
            let mut command = Command::new("rg");
            command.args(["--files", "-g", GLOB_PATTERN]).current_dir(&tree);
            command
        },
    );
    let file = big_file(&workspace);
    let lines = std::fs::metadata(&file).unwrap().len() / 80;
    let (_, _, peak) = side_by_side(
        "read_last_page",
        ours(
            "read",
            file.parent().unwrap().to_path_buf(),
            serde_json::json!({"path": file.file_name().unwrap().to_str().unwrap(), "offset": lines.saturating_sub(100).max(1)}),
        ),
        || {
            let mut command = Command::new("wc");
            command.arg("-l").arg(&file);
            command
        },
    );
    println!("figure read_peak_rss_mib {peak:.1}");
}
