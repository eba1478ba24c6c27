//! The oracle's throughput: 2,000 generated lines (seed 12) checked end to end
//! — template copy, `plan()`, bash under strace in the sandbox, observation, check — with
//! the default workers. Prints `figure oracle_lines_per_second` (every generated line,
//! including those the analysis denies, which are checked without running) and
//! `figure oracle_run_lines_per_second` (the lines that ran, per second of the same run).

#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use e2e::shell_oracle::{Case, Options, Oracle, generate, summary};

fn main() {
    let oracle = Oracle::new(Options::default()).expect("the oracle needs strace, util-linux and user namespaces");
    let cases: Vec<Case> = generate::lines(12, 2000)
        .into_iter()
        .map(|generated| Case {
            line: generated.line,
            tags: generated.tags,
        })
        .collect();
    let start = Instant::now();
    let outcomes = oracle.run(&cases).unwrap();
    let seconds = start.elapsed().as_secs_f64();
    eprint!("{}", summary(&outcomes));
    let ran = outcomes.iter().filter(|outcome| outcome.ran).count();
    println!("figure oracle_lines_per_second {:.1}", outcomes.len() as f64 / seconds);
    println!("figure oracle_run_lines_per_second {:.1}", ran as f64 / seconds);
}
