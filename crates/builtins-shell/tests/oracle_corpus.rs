//! Replays the failures the oracle of issue #12 recorded (`corpus/oracle-failures.jsonl`)
//! without a sandbox: each record holds a line and what bash really did with it in the
//! fixture project; the line's analysis (`plan`) must ask at least as much as that, under
//! the rules of the issue, approved once and with "always" (the comparison is defined in
//! `tests/src/shell_oracle/soundness.rs`, shared with the oracle). The oracle itself
//! (`cargo nextest run -p e2e --test shell_oracle`) runs them again for real.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout)]

// Shared with the oracle; this test uses part of it.
#[allow(unreachable_pub, dead_code)]
#[path = "../../../tests/src/shell_oracle/soundness.rs"]
mod soundness;

use soundness::{KNOWN_FAILURES_TOLERATED, check, issue_rules, read_corpus, write_fixture};
use toolgate_core::Location;

#[test]
fn recorded_oracle_failures_are_fixed_or_still_tolerated() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/oracle-failures.jsonl");
    let records = read_corpus(&path).unwrap();
    assert!(!records.is_empty(), "{} holds no record", path.display());
    let rules = issue_rules();
    let mut unsound = Vec::new();
    for record in &records {
        // A record is evidence: against an analysis that asks nothing, what it saw
        // must fail, or it should not be in the corpus.
        assert!(
            check(&rules, &[], &record.events).is_err(),
            "{:?} records nothing the rules restrict",
            record.line
        );
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("proj");
        std::fs::create_dir(&project).unwrap();
        write_fixture(&project).unwrap();
        let location = Location::new(&project).unwrap();
        let plan = toolgate_builtins_shell::plan(&location, &record.line, None, None).unwrap();
        if let Err(found) = check(&rules, &plan.requests, &record.events) {
            unsound.push(format!("{:?}\n    {}", record.line, found.summary()));
        }
    }
    println!(
        "{} of {} recorded oracle failures still fail",
        unsound.len(),
        records.len()
    );
    if !KNOWN_FAILURES_TOLERATED {
        assert!(unsound.is_empty(), "{}", unsound.join("\n"));
    }
}
