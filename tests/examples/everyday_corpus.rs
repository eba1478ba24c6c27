//! The everyday corpus figure for `cargo xtask bench`: the share of the corpus's lines
//! (`crates/shell-analysis/tests/corpus/everyday.txt`, command lines an agent runs in an
//! ordinary session) that run without a question under its realistic config with
//! exec-time enforcement, and how many are denied; the worse of a fresh home and one
//! with every package cache. The measurement is the analysis crate's own corpus test
//! (`tests/it/everyday.rs`), shared so that the figure and the test cannot differ.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::Path;

#[allow(dead_code, unreachable_pub)]
#[path = "../../crates/shell-analysis/tests/it/everyday.rs"]
mod everyday;

fn main() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/shell-analysis/tests/corpus");
    // Beside the example in the target directory: not under the temporary directory,
    // which the default rules allow (the homes must be judged as homes).
    let exe = std::env::current_exe().unwrap();
    let scratch = exe.parent().unwrap().join("everyday-corpus");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).unwrap();
    let (total, homes) = everyday::measure_corpus(&corpus, &scratch);
    let allowed = homes.iter().map(|(_, measured)| measured.allowed).min().unwrap_or(0);
    let denied = homes
        .iter()
        .map(|(_, measured)| measured.denied.len())
        .max()
        .unwrap_or(0);
    for (name, measured) in &homes {
        println!(
            "{name}: {} of {total} allowed, {} asked, {} denied",
            measured.allowed,
            measured.asked.len(),
            measured.denied.len()
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
    println!(
        "figure everyday_allowed_percent {:.1}",
        allowed as f64 * 100.0 / total as f64
    );
    println!("figure everyday_denied {denied}");
}
