//! The race suite, in one process: threads editing and patching the same files (disjoint
//! lines and the very same line) while another program appends to one of them. Afterwards
//! every change reported as applied is in the files, no failed change is, every appended
//! line is there, and every failure says the file changed. (`tests/tests/it/fs.rs` in the
//! `e2e` package runs the same suite across processes of the binary.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use support::{Project, call};
use toolgate_builtins_fs::{edit_tool, patch_tool};

const THREADS: usize = 8;
const ROUNDS: usize = 12;

/// One change a worker made: its marker, and whether the tool said it was applied.
struct Outcome {
    marker: String,
    applied: bool,
}

fn slot(kind: &str, thread: usize, round: usize) -> String {
    format!("{kind} {thread:02}-{round:02} .")
}

/// Appends a numbered line every half millisecond, opening the file each time as a shell's
/// `>>` would, until told to stop. Returns the lines it wrote.
fn appender(path: std::path::PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let mut written = Vec::new();
        for n in 0.. {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let line = format!("appended {n:06}");
            let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            file.write_all(format!("{line}\n").as_bytes()).unwrap();
            drop(file);
            written.push(line);
            std::thread::sleep(Duration::from_micros(500));
        }
        written
    })
}

#[test]
fn threads_editing_and_patching_the_same_files_lose_nothing() {
    let project = Project::new();
    let mut shared = String::from("top\nANCHOR-E\n");
    let mut other = String::from("ANCHOR-Q\n");
    for thread in 0..THREADS {
        for round in 0..ROUNDS {
            shared.push_str(&format!("{}\n", slot("eslot", thread, round)));
            other.push_str(&format!("{}\n", slot("pslot", thread, round)));
        }
    }
    shared.push_str("ANCHOR-P\nend\n");
    project.write("shared.txt", &shared);
    project.write("other.txt", &other);
    let runtime = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap(),
    );
    let services = project.services();
    let outcomes: Arc<Mutex<Vec<Outcome>>> = Arc::default();
    let failures: Arc<Mutex<Vec<String>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let appending = appender(project.dir.path().join("shared.txt"), stop.clone());
    let workers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let (runtime, services) = (runtime.clone(), services.clone());
            let (outcomes, failures) = (outcomes.clone(), failures.clone());
            std::thread::spawn(move || {
                let edit = edit_tool(services.clone());
                let patch = patch_tool(services);
                for round in 0..ROUNDS {
                    let record = |marker: String, result: Result<String, String>| {
                        if let Err(error) = &result {
                            failures.lock().unwrap().push(error.clone());
                        }
                        outcomes.lock().unwrap().push(Outcome {
                            marker,
                            applied: result.is_ok(),
                        });
                    };
                    // Disjoint lines: each worker its own line of the shared file.
                    let mine = slot("eslot", thread, round);
                    let marker = format!("{mine} edited");
                    let input = json!({"path": "shared.txt", "oldString": mine, "newString": marker});
                    record(marker, runtime.block_on(call(&edit, input)));
                    // The same line: every worker inserts after one anchor.
                    let marker = format!("edit-entry {thread:02}-{round:02}");
                    let input = json!({"path": "shared.txt", "oldString": "ANCHOR-E\n", "newString": format!("ANCHOR-E\n{marker}\n")});
                    record(marker, runtime.block_on(call(&edit, input)));
                    // Two files at once, one line shared by all, one line of its own.
                    let marker = format!("patch-entry {thread:02}-{round:02}");
                    let own = slot("pslot", thread, round);
                    let text = format!(
                        "*** Begin Patch\n*** Update File: shared.txt\n@@\n ANCHOR-P\n+{marker}\n*** Update File: other.txt\n@@\n ANCHOR-Q\n+{marker}\n@@\n-{own}\n+{own} {marker}\n*** End Patch"
                    );
                    record(marker, runtime.block_on(call(&patch, json!({"patchText": text}))));
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    let appended = appending.join().unwrap();
    let shared = project.read("shared.txt");
    let other = project.read("other.txt");
    let outcomes = outcomes.lock().unwrap();
    let failures = failures.lock().unwrap();
    for failure in failures.iter() {
        assert!(
            failure.starts_with("File changed since it was read: ") && failure.contains("; read it again"),
            "a failure must say the file changed: {failure}"
        );
    }
    let mut found = 0;
    for outcome in outcomes.iter() {
        let in_shared = shared.lines().filter(|line| line.contains(&outcome.marker)).count();
        let in_other = other.lines().filter(|line| line.contains(&outcome.marker)).count();
        let count = in_shared + in_other;
        let expected = match (outcome.applied, outcome.marker.starts_with("patch-entry")) {
            (false, _) => 0,
            (true, true) => 3,
            (true, false) => 1,
        };
        assert_eq!(
            count,
            expected,
            "{} (reported {}) is in the files {count} times",
            outcome.marker,
            if outcome.applied { "applied" } else { "failed" }
        );
        found += usize::from(count > 0);
    }
    let missing: Vec<(&String, usize)> = appended
        .iter()
        .map(|line| (line, shared.lines().filter(|l| l == line).count()))
        .filter(|(_, count)| *count != 1)
        .collect();
    assert!(
        missing.is_empty(),
        "appended lines lost (0) or doubled (2): {missing:?}"
    );
    for anchor in ["top", "ANCHOR-E", "ANCHOR-P", "end"] {
        assert_eq!(shared.lines().filter(|line| *line == anchor).count(), 1, "{anchor}");
    }
    let applied = outcomes.iter().filter(|o| o.applied).count();
    println!(
        "race suite (threads): {THREADS} threads × {ROUNDS} rounds × 3 changes = {} changes; reported applied {applied}, \
         found {found}; failed clearly {}; appended {} lines, all found",
        outcomes.len(),
        failures.len(),
        appended.len()
    );
    assert!(
        applied > outcomes.len() / 2,
        "most changes land: {applied} of {}",
        outcomes.len()
    );
}
