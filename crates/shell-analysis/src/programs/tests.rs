//! The table's examples, checked: every entry has one, and each line's analysis is what
//! its example says (the form is described at [`EXAMPLES`]).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;

use super::table::{EXAMPLES, MODELS};
use crate::analysis::{Analysis, Env, PathRef};

/// The environment every example is read in: an empty working directory, a home that does
/// not exist (a package manager's cache directory is then the home itself), no `PATH`.
fn env(dir: &std::path::Path) -> Env {
    Env {
        workdir: dir.to_path_buf(),
        home: Some("/nonexistent/home".into()),
        path: None,
        cdpath: false,
    }
}

/// An analysis in the examples' compact form.
pub(super) fn render(line: &str, analysis: &Analysis) -> String {
    let mut facts = Vec::new();
    let mut opaque = analysis.opaque.is_some();
    for part in &analysis.parts {
        if part.opaque {
            opaque = true;
            continue;
        }
        let display = part.display();
        let unsaved = if part.save.is_none() { " (unsaved)" } else { "" };
        if display == line {
            if part.save.is_none() {
                facts.push("unsaved".to_string());
            }
            continue;
        }
        facts.push(format!("run {display}{unsaved}"));
    }
    if opaque {
        facts.insert(0, "opaque".to_string());
    }
    let path = |verb: &str, path: &PathRef| {
        let tree = if path.tree { " (tree)" } else { "" };
        format!("{verb} {}{tree}", path.joined())
    };
    facts.extend(analysis.reads.iter().map(|p| path("read", p)));
    facts.extend(analysis.writes.iter().map(|p| path("write", p)));
    facts.extend(analysis.paths.iter().map(|p| path("path", p)));
    if facts.is_empty() {
        return "nothing".to_string();
    }
    facts.join("; ")
}

fn analyze(line: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let analysis = crate::walk::analyze_in(line, &env(dir.path()));
    render(line, &analysis)
}

#[test]
fn every_entry_has_an_example() {
    let programs: BTreeSet<&str> = EXAMPLES.iter().filter_map(|(line, _)| line.split(' ').next()).collect();
    let missing: Vec<&str> = MODELS
        .iter()
        .filter_map(|model| model.names.first().copied())
        .filter(|name| !programs.contains(name))
        .collect();
    assert!(missing.is_empty(), "entries without an example: {missing:?}");
}

#[test]
fn every_example_is_what_the_analysis_finds() {
    let wrong: Vec<String> = EXAMPLES
        .iter()
        .filter_map(|(line, expected)| {
            let got = analyze(line);
            (got != *expected).then(|| format!("{line:?}\n    expected {expected:?}\n    got      {got:?}"))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} examples differ:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
#[ignore = "generator"]
fn print_examples() {
    for (line, _) in EXAMPLES {
        println!("    ({line:?}, {:?}),", analyze(line));
    }
}
