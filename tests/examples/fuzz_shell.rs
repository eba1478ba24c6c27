//! `cargo xtask fuzz-shell N [--seed S]`: N generated command lines through the bash
//! analysis oracle; every unsound one not yet recorded is appended to the corpus file
//! (`crates/shell-analysis/tests/corpus/oracle-failures.jsonl`), which the analysis crate's
//! tests and the oracle test replay.
//!
//! Options: `--seed S` (default: from the clock, printed), `--no-record` (report only),
//! `--show N` (print the first N unsound lines with what ran, default 20), `--workers N`,
//! `--line TEXT` (run TEXT N times instead: for measuring and debugging; records nothing),
//! `--events` (print every line's events and output).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Instant;

use e2e::shell_oracle::{Case, Options, Oracle, Verdict, generate, record, soundness, summary};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut count = 1000usize;
    let mut seed = None;
    let mut write = true;
    let mut show = 20usize;
    let mut fixed: Option<String> = None;
    let mut events = false;
    let mut options = Options::default();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let mut value = |name: &str| -> Option<u64> {
            let parsed = iter.next().and_then(|v| v.parse().ok());
            if parsed.is_none() {
                eprintln!("fuzz-shell: {name} needs a number");
            }
            parsed
        };
        match arg.as_str() {
            "--seed" => match value("--seed") {
                Some(v) => seed = Some(v),
                None => return ExitCode::from(2),
            },
            "--show" => match value("--show") {
                Some(v) => show = v as usize,
                None => return ExitCode::from(2),
            },
            "--workers" => match value("--workers") {
                Some(v) => options.workers = v.max(1) as usize,
                None => return ExitCode::from(2),
            },
            "--no-record" => write = false,
            "--events" => events = true,
            "--line" => fixed = iter.next().cloned(),
            number => match number.parse() {
                Ok(n) => count = n,
                Err(_) => {
                    eprintln!("usage: fuzz_shell [N] [--seed S] [--no-record] [--show N] [--workers N]");
                    return ExitCode::from(2);
                }
            },
        }
    }
    let seed = seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    println!("fuzz-shell: {count} lines, seed {seed}");
    let oracle = match Oracle::new(options) {
        Ok(oracle) => oracle,
        Err(error) => {
            eprintln!("fuzz-shell: {error}");
            return ExitCode::FAILURE;
        }
    };
    let cases: Vec<Case> = (0..count as u64)
        .map(|index| {
            let mut generated = generate::line(seed, index);
            if let Some(line) = &fixed {
                generated.line = line.clone();
                write = false;
            }
            let mut tags = generated.tags;
            tags.push(format!("seed:{seed}:{index}"));
            Case {
                line: generated.line,
                tags,
            }
        })
        .collect();
    let start = Instant::now();
    let outcomes = match oracle.run(&cases) {
        Ok(outcomes) => outcomes,
        Err(error) => {
            eprintln!("fuzz-shell: {error}");
            return ExitCode::FAILURE;
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    print!("{}", summary(&outcomes));
    println!("{:.1} lines per second", outcomes.len() as f64 / seconds);
    if events {
        for outcome in &outcomes {
            println!(
                "=== {:?} → {:?}\n{}",
                outcome.case.line, outcome.verdict, outcome.output
            );
            for event in &outcome.events {
                println!("  {} {:?}  via {}", event.action, event.forms, event.via);
            }
        }
    }
    let unsound: Vec<_> = outcomes
        .iter()
        .filter(|outcome| matches!(outcome.verdict, Verdict::Unsound(_)))
        .collect();
    for outcome in unsound.iter().take(show) {
        if let Verdict::Unsound(found) = &outcome.verdict {
            println!("---\n{:?}\n  {}", outcome.case.line, found.summary());
        }
    }
    if write && !unsound.is_empty() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let path = root.join(soundness::CORPUS);
        let known: std::collections::BTreeSet<String> = match soundness::read_corpus(&path) {
            Ok(records) => records.into_iter().map(|r| r.line).collect(),
            Err(error) => {
                eprintln!("fuzz-shell: {error}");
                return ExitCode::FAILURE;
            }
        };
        let mut added = 0;
        let mut text = String::new();
        let mut seen = known;
        for outcome in &unsound {
            if let Some(record) = record(outcome)
                && seen.insert(record.line.clone())
            {
                text.push_str(&soundness::corpus_line(&record));
                text.push('\n');
                added += 1;
            }
        }
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut file| file.write_all(text.as_bytes()));
        if let Err(error) = appended {
            eprintln!("fuzz-shell: {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
        println!("{added} new failures appended to {}", soundness::CORPUS);
    }
    ExitCode::SUCCESS
}
