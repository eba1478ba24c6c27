//! Peak memory of `grep` over 5,000,000 matching lines: the tool keeps at most `limit`
//! lines whatever the number of matches, and still counts them all.
//!
//! `grep_peak` prepares the file (under `target/bench-grep`, kept between runs) and runs the
//! measured mode in a fresh process; `grep_peak measure DIR` is that mode.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use e2e::{AllowAll, peak_rss_mib};
use toolgate_core::{Context, Location, ModelResult};

const LINES: usize = 5_000_000;

fn measure(root: &Path) {
    let services = toolgate_builtins_fs::Services::new(Location::new(root).unwrap(), Arc::new(AllowAll));
    let grep = toolgate_builtins_fs::grep_tool(services);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let output = runtime
        .block_on(grep.settle(serde_json::json!({"pattern": "match"}), Context::default()))
        .unwrap()
        .unwrap();
    let ModelResult::Text(text) = ModelResult::from_output(&output) else {
        panic!("text expected")
    };
    assert!(
        text.starts_with(&format!("Found {LINES} matches (showing first 100)\n")),
        "{}",
        &text[..80.min(text.len())]
    );
    println!("figure grep_5m_peak_rss_mib {:.1}", peak_rss_mib());
}

fn prepare(dir: &Path) {
    let file = dir.join("matches.txt");
    let line = |n: usize| format!("a match on line {n:07}\n");
    let size: usize = (0..LINES).map(|n| line(n).len()).sum();
    if std::fs::metadata(&file).is_ok_and(|meta| meta.len() as usize == size) {
        return;
    }
    std::fs::create_dir_all(dir).unwrap();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&file).unwrap());
    for n in 0..LINES {
        out.write_all(line(n).as_bytes()).unwrap();
    }
    out.flush().unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [mode, dir] = args.as_slice()
        && mode == "measure"
    {
        return measure(Path::new(dir));
    }
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let dir = workspace.join("target/bench-grep");
    prepare(&dir);
    let mut peak: f64 = 0.0;
    for _ in 0..3 {
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .arg("measure")
            .arg(&dir)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let text = String::from_utf8_lossy(&output.stdout);
        let value: f64 = text
            .lines()
            .find_map(|line| line.strip_prefix("figure grep_5m_peak_rss_mib "))
            .unwrap()
            .parse()
            .unwrap();
        peak = peak.max(value);
    }
    println!("figure grep_5m_peak_rss_mib {peak:.1}");
}
