//! The file tools through the binary, as separate processes: the race suite across
//! processes, modes under a umask, a read-only file for a user who may not write it, and
//! answers in JSON when a call cannot be shown.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use e2e::Sandbox;
use serde_json::{Value, json};

const PROCESSES: usize = 6;
const ROUNDS: usize = 4;

fn slot(kind: &str, worker: usize, round: usize) -> String {
    format!("{kind} {worker:02}-{round:02} .")
}

/// Runs `toolgate call TOOL INPUT --auto`: Ok(stdout) on exit 0, Err(stderr) on exit 1.
fn call(sandbox: &Sandbox, tool: &str, input: &Value) -> Result<String, String> {
    let (code, out, err) = sandbox.run(&["call", tool, &input.to_string(), "--auto"]);
    match code {
        0 => Ok(out),
        1 => Err(err.trim().to_string()),
        other => panic!("{tool} exited {other}: {out}{err}"),
    }
}

#[test]
fn processes_editing_and_patching_the_same_files_lose_nothing() {
    let sandbox = Sandbox::new();
    let mut shared = String::from("top\nANCHOR-E\n");
    let mut other = String::from("ANCHOR-Q\n");
    for worker in 0..PROCESSES {
        for round in 0..ROUNDS {
            shared.push_str(&format!("{}\n", slot("eslot", worker, round)));
            other.push_str(&format!("{}\n", slot("pslot", worker, round)));
        }
    }
    shared.push_str("ANCHOR-P\nend\n");
    sandbox.write("project/shared.txt", &shared);
    sandbox.write("project/other.txt", &other);
    let sandbox = Arc::new(sandbox);
    let outcomes: Arc<Mutex<Vec<(String, bool)>>> = Arc::default();
    let failures: Arc<Mutex<Vec<String>>> = Arc::default();
    // Another program appends a line every half millisecond, as `>>` would.
    let stop = Arc::new(AtomicBool::new(false));
    let appender = {
        let (path, stop) = (sandbox.project().join("shared.txt"), stop.clone());
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
    };
    let workers: Vec<_> = (0..PROCESSES)
        .map(|worker| {
            let (sandbox, outcomes, failures) = (sandbox.clone(), outcomes.clone(), failures.clone());
            std::thread::spawn(move || {
                for round in 0..ROUNDS {
                    let record = |marker: String, result: Result<String, String>| {
                        if let Err(error) = &result {
                            failures.lock().unwrap().push(error.clone());
                        }
                        outcomes.lock().unwrap().push((marker, result.is_ok()));
                    };
                    let mine = slot("eslot", worker, round);
                    let marker = format!("{mine} edited");
                    let input = json!({"path": "shared.txt", "oldString": mine, "newString": marker});
                    record(marker, call(&sandbox, "edit", &input));
                    let marker = format!("edit-entry {worker:02}-{round:02}");
                    let input = json!({"path": "shared.txt", "oldString": "ANCHOR-E\n", "newString": format!("ANCHOR-E\n{marker}\n")});
                    record(marker, call(&sandbox, "edit", &input));
                    let marker = format!("patch-entry {worker:02}-{round:02}");
                    let own = slot("pslot", worker, round);
                    let text = format!(
                        "*** Begin Patch\n*** Update File: shared.txt\n@@\n ANCHOR-P\n+{marker}\n*** Update File: other.txt\n@@\n ANCHOR-Q\n+{marker}\n@@\n-{own}\n+{own} {marker}\n*** End Patch"
                    );
                    record(marker, call(&sandbox, "apply_patch", &json!({"patchText": text})));
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    let appended = appender.join().unwrap();
    let shared = std::fs::read_to_string(sandbox.project().join("shared.txt")).unwrap();
    let other = std::fs::read_to_string(sandbox.project().join("other.txt")).unwrap();
    for failure in failures.lock().unwrap().iter() {
        assert!(
            failure.starts_with("File changed since it was read: ") && failure.ends_with("; read it again"),
            "a failure must say the file changed: {failure}"
        );
    }
    let outcomes = outcomes.lock().unwrap();
    let mut found = 0;
    for (marker, applied) in outcomes.iter() {
        let count = shared
            .lines()
            .chain(other.lines())
            .filter(|line| line.contains(marker))
            .count();
        let expected = match (applied, marker.starts_with("patch-entry")) {
            (false, _) => 0,
            (true, true) => 3,
            (true, false) => 1,
        };
        assert_eq!(
            count, expected,
            "{marker} (applied: {applied}) is in the files {count} times"
        );
        found += usize::from(count > 0);
    }
    let lost: Vec<&String> = appended
        .iter()
        .filter(|line| shared.lines().filter(|l| l == line).count() != 1)
        .collect();
    assert!(lost.is_empty(), "appended lines lost or doubled: {lost:?}");
    let applied = outcomes.iter().filter(|(_, applied)| *applied).count();
    println!(
        "race suite (processes): {PROCESSES} processes × {ROUNDS} rounds × 3 changes = {} changes; reported applied \
         {applied}, found {found}; failed clearly {}; appended {} lines, all found",
        outcomes.len(),
        outcomes.len() - applied,
        appended.len()
    );
    assert!(
        applied > outcomes.len() / 2,
        "most changes land: {applied} of {}",
        outcomes.len()
    );
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn new_files_follow_the_umask_and_existing_files_keep_their_mode() {
    for (umask, expected) in [("022", 0o644), ("077", 0o600)] {
        let sandbox = Sandbox::new();
        sandbox.write("project/kept.txt", "old\n");
        std::fs::set_permissions(
            sandbox.project().join("kept.txt"),
            std::fs::Permissions::from_mode(0o664),
        )
        .unwrap();
        // The umask belongs to the process: the binary runs under it in a shell of its own.
        let run = |tool: &str, input: Value| {
            let status = std::process::Command::new("sh")
                .current_dir(sandbox.project())
                .stdin(std::process::Stdio::null())
                .env_remove("TOOLGATE_PERMISSION")
                .arg("-c")
                .arg(format!("umask {umask} && exec \"$0\" call {tool} \"$1\" --auto"))
                .arg(e2e::toolgate_binary())
                .arg(input.to_string())
                .env("TOOLGATE_DATA_DIR", sandbox.data_dir())
                .env("TOOLGATE_CONFIG_DIR", sandbox.config_dir())
                .output()
                .unwrap();
            assert!(
                status.status.success(),
                "{tool}: {}",
                String::from_utf8_lossy(&status.stderr)
            );
        };
        run("write", json!({"path": "w.txt", "content": "x\n"}));
        run(
            "apply_patch",
            json!({"patchText": "*** Begin Patch\n*** Add File: deep/p.txt\n+x\n*** End Patch"}),
        );
        run(
            "edit",
            json!({"path": "kept.txt", "oldString": "old", "newString": "new"}),
        );
        assert_eq!(
            mode(&sandbox.project().join("w.txt")),
            expected,
            "write under umask {umask}"
        );
        assert_eq!(
            mode(&sandbox.project().join("deep/p.txt")),
            expected,
            "Add File under umask {umask}"
        );
        assert_eq!(
            mode(&sandbox.project().join("kept.txt")),
            0o664,
            "an existing file keeps its mode"
        );
        assert_eq!(
            std::fs::read_to_string(sandbox.project().join("kept.txt")).unwrap(),
            "new\n"
        );
    }
}

#[test]
fn a_read_only_file_is_refused_with_the_os_error_for_a_user_who_may_not_write_it() {
    let sandbox = Sandbox::new();
    sandbox.write("project/ro.txt", "keep\n");
    let file = sandbox.project().join("ro.txt");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).unwrap();
    let root = rustix::process::geteuid().is_root();
    if root {
        // Root may write anything; the test runs the binary as `nobody`, owner of the sandbox.
        for entry in [sandbox.root.path().to_path_buf()]
            .into_iter()
            .chain(walk(sandbox.root.path()))
        {
            std::os::unix::fs::lchown(&entry, Some(65534), Some(65534)).unwrap();
        }
    }
    let input = json!({"path": "ro.txt", "oldString": "keep", "newString": "lost"});
    let mut command = sandbox.command(&["call", "edit", &input.to_string(), "--auto"]);
    if root {
        command.uid(65534).gid(65534);
    }
    let output = command.output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stderr).trim(),
        "Unable to edit ro.txt: Permission denied (os error 13)"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep\n");
    assert_eq!(mode(&file), 0o444);
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            found.extend(walk(&path));
        }
        found.push(path);
    }
    found
}

#[test]
fn a_pdf_too_large_to_attach_is_refused_and_answered_in_json() {
    let sandbox = Sandbox::new();
    let mut pdf = b"%PDF-1.4\n".to_vec();
    pdf.resize(4 * 1024 * 1024, b' ');
    std::fs::write(sandbox.project().join("big.pdf"), &pdf).unwrap();
    let (code, out, _) = sandbox.run(&["call", "read", r#"{"path": "big.pdf"}"#, "--auto", "--json"]);
    assert_eq!(code, 1);
    let value: Value = serde_json::from_str(&out).unwrap_or_else(|error| panic!("not JSON ({error}): {out}"));
    assert_eq!(value["result"]["type"], "error");
    let message = value["result"]["value"].as_str().unwrap();
    assert!(message.starts_with("PDF exceeds the 3932160 byte limit"), "{message}");
    // A PDF that fits is attached.
    pdf.truncate(3 * 1024 * 1024);
    std::fs::write(sandbox.project().join("small.pdf"), &pdf).unwrap();
    let (code, out, err) = sandbox.run(&["call", "read", r#"{"path": "small.pdf"}"#, "--auto", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("application/pdf"), "{}", &out[..200.min(out.len())]);
}
