//! Peak memory of bounding a 100 MiB text output, as a whole process.
//!
//! Prints `figure peak_ratio <VmHWM / output size>` and the raw numbers, for
//! `cargo xtask bench`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use toolgate_core::{Content, ToolOutput};
use toolgate_output_store::OutputStore;

const SIZE: usize = 100 * 1024 * 1024;

fn main() {
    let data = tempfile::tempdir().unwrap();
    let store = OutputStore::new(data.path());
    let output = ToolOutput::new(serde_json::Value::Null, vec![Content::text(e2e::log_text(SIZE))]);
    let start = std::time::Instant::now();
    let bounded = store.bound_now(output).unwrap();
    let seconds = start.elapsed().as_secs_f64();
    assert_eq!(
        std::fs::metadata(&bounded.output_paths[0]).unwrap().len() as usize,
        SIZE
    );
    let peak = e2e::status_kib("VmHWM:") * 1024.0;
    println!("figure peak_ratio {:.3}", peak / SIZE as f64);
    println!("figure peak_mib {:.1}", peak / 1024.0 / 1024.0);
    println!("figure seconds {seconds:.4}");
}
