//! Replays the failures the bash analysis oracle recorded (`corpus/oracle-failures.jsonl`)
//! without a sandbox: each record holds a line and what bash really did with it in the
//! fixture project; the line's analysis (`plan`) must ask at least as much as that, under
//! the oracle's rules, approved once and with "always" (the comparison is defined in
//! `tests/src/shell_oracle/soundness.rs`, shared with the oracle). The oracle itself
//! (`cargo nextest run -p e2e shell_oracle::`) runs them again for real.

use crate::soundness;
use crate::soundness::{check, issue_rules, read_corpus, write_fixture};
use toolgate_core::Location;

#[test]
fn every_recorded_oracle_failure_is_fixed() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/oracle-failures.jsonl");
    let records = read_corpus(&path).unwrap();
    assert!(!records.is_empty(), "{} holds no record", path.display());
    let rules = issue_rules();
    let mut unsound = Vec::new();
    let mut stale = Vec::new();
    for record in &records {
        // A record is evidence: against an analysis that asks nothing, what it saw
        // must fail, or it should not be in the corpus.
        if check(&rules, &[], &record.events).is_ok() {
            stale.push(format!("{:?}", record.line));
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let project = root.join("proj");
        std::fs::create_dir(&project).unwrap();
        std::fs::create_dir_all(root.join("home/.ssh")).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        write_fixture(&project).unwrap();
        let location = Location::new(&project).unwrap();
        // The shell ran with `HOME` next to the project, and the events name the line's
        // directory `/sandbox`: the analysis and the events must speak of the same place.
        let shell_env =
            toolgate_shell_analysis::ShellEnv::inherited().with_home(Some(root.join("home").display().to_string()));
        let plan = toolgate_shell_analysis::plan_with(&location, &record.line, None, None, &shell_env).unwrap();
        let events: Vec<soundness::Event> = record
            .events
            .iter()
            .map(|event| soundness::Event {
                forms: event
                    .forms
                    .iter()
                    .map(|form| form.replace("/sandbox/", &format!("{}/", root.display())))
                    .collect(),
                ..event.clone()
            })
            .collect();
        if let Err(found) = check(&rules, &plan.requests, &events) {
            unsound.push(format!("{:?}\n    {}", record.line, found.summary()));
        }
    }
    assert!(
        stale.is_empty(),
        "records of nothing the rules restrict:\n{}",
        stale.join("\n")
    );
    println!(
        "{} of {} recorded oracle failures still fail",
        unsound.len(),
        records.len()
    );
    for line in &unsound {
        println!("{line}");
    }
    assert!(unsound.is_empty(), "{}", unsound.join("\n"));
}
