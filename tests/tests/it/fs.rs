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

fn slot(kind: &str, worker: &str, round: usize) -> String {
    format!("{kind} {worker}-{round:02} .")
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

/// Who makes a change: a process of the binary, or a thread of this process calling the
/// tools in-process (both honour the same lock, through `flock` on the file itself).
#[derive(Clone, Copy)]
enum Worker {
    Process,
    Thread,
}

/// The race suite: `processes` processes of the binary and `threads` threads of this
/// process, all at once, each making `rounds` × 3 changes to the same two files — its own
/// line, one line every worker inserts after, and a two-file patch with one shared and one
/// own line — while another program appends a line every half millisecond. Afterwards
/// every change reported as applied is in the files exactly once, no failed one is, every
/// failure says the file changed, and every appended line is there once.
fn race(processes: usize, threads: usize, rounds: usize) {
    let workers: Vec<(String, Worker)> = (0..processes)
        .map(|n| (format!("p{n:02}"), Worker::Process))
        .chain((0..threads).map(|n| (format!("t{n:02}"), Worker::Thread)))
        .collect();
    let sandbox = Sandbox::new();
    let mut shared = String::from("top\nANCHOR-E\n");
    let mut other = String::from("ANCHOR-Q\n");
    for (name, _) in &workers {
        for round in 0..rounds {
            shared.push_str(&format!("{}\n", slot("eslot", name, round)));
            other.push_str(&format!("{}\n", slot("pslot", name, round)));
        }
    }
    shared.push_str("ANCHOR-P\nend\n");
    sandbox.write("project/shared.txt", &shared);
    sandbox.write("project/other.txt", &other);
    let sandbox = Arc::new(sandbox);
    // The in-process side: the tools as the binary builds them, on one runtime shared by
    // every thread (as a server runs them).
    let runtime = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap(),
    );
    let services = toolgate_builtins_fs::Services::new(
        toolgate_core::Location::new(sandbox.project()).unwrap(),
        Arc::new(e2e::AllowAll),
    );
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
    // Every worker starts at once.
    let start = Arc::new(std::sync::Barrier::new(workers.len()));
    let handles: Vec<_> = workers
        .into_iter()
        .map(|(name, kind)| {
            let (sandbox, outcomes, failures) = (sandbox.clone(), outcomes.clone(), failures.clone());
            let (runtime, services, start) = (runtime.clone(), services.clone(), start.clone());
            std::thread::spawn(move || {
                let edit = toolgate_builtins_fs::edit_tool(services.clone());
                let patch = toolgate_builtins_fs::patch_tool(services);
                let change = |tool: &str, input: Value| match kind {
                    Worker::Process => call(&sandbox, tool, &input),
                    Worker::Thread => {
                        let tool = if tool == "edit" { &edit } else { &patch };
                        match runtime
                            .block_on(tool.settle(input, toolgate_core::Context::default()))
                            .unwrap()
                        {
                            Ok(_) => Ok(String::new()),
                            Err(failure) => Err(failure.message().to_string()),
                        }
                    }
                };
                start.wait();
                for round in 0..rounds {
                    let record = |marker: String, result: Result<String, String>| {
                        if let Err(error) = &result {
                            failures.lock().unwrap().push(error.clone());
                        }
                        outcomes.lock().unwrap().push((marker, result.is_ok()));
                    };
                    let mine = slot("eslot", &name, round);
                    let marker = format!("{mine} edited");
                    let input = json!({"path": "shared.txt", "oldString": mine, "newString": marker});
                    record(marker, change("edit", input));
                    let marker = format!("edit-entry {name}-{round:02}");
                    let input = json!({"path": "shared.txt", "oldString": "ANCHOR-E\n", "newString": format!("ANCHOR-E\n{marker}\n")});
                    record(marker, change("edit", input));
                    let marker = format!("patch-entry {name}-{round:02}");
                    let own = slot("pslot", &name, round);
                    let text = format!(
                        "*** Begin Patch\n*** Update File: shared.txt\n@@\n ANCHOR-P\n+{marker}\n*** Update File: other.txt\n@@\n ANCHOR-Q\n+{marker}\n@@\n-{own}\n+{own} {marker}\n*** End Patch"
                    );
                    record(marker, change("apply_patch", json!({"patchText": text})));
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
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
    assert_eq!(outcomes.len(), (processes + threads) * rounds * 3);
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
    assert!(!appended.is_empty(), "the appender ran");
    for anchor in ["top", "ANCHOR-E", "ANCHOR-P", "end"] {
        assert_eq!(shared.lines().filter(|line| *line == anchor).count(), 1, "{anchor}");
    }
    let applied = outcomes.iter().filter(|(_, applied)| *applied).count();
    println!(
        "race suite: {processes} processes + {threads} threads × {rounds} rounds × 3 changes = {} changes; reported \
         applied {applied}, found {found}; failed clearly {}; appended {} lines, all found",
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

#[test]
fn processes_editing_and_patching_the_same_files_lose_nothing() {
    race(PROCESSES, 0, ROUNDS);
}

#[test]
fn threads_and_processes_editing_and_patching_the_same_files_at_once_lose_nothing() {
    race(4, 4, 3);
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

/// `sh -c SCRIPT sh ARGS…` with the sandbox's environment, in its project directory.
fn shell(sandbox: &Sandbox, script: &str, args: &[&std::ffi::OsStr]) -> std::process::Output {
    let template = sandbox.command(&[]);
    let mut command = std::process::Command::new("sh");
    command.arg("-c").arg(script).arg("sh").args(args);
    for (key, value) in template.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    if let Some(dir) = template.get_current_dir() {
        command.current_dir(dir);
    }
    command.stdin(std::process::Stdio::null()).output().unwrap()
}

fn temporaries(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect()
}

#[test]
fn a_write_that_fails_part_way_reports_failure_and_keeps_every_file() {
    // RLIMIT_FSIZE makes every write past 32 KiB fail (EFBIG), as a full disk would, for any
    // user: the new content is written part-way, then the write fails.
    let sandbox = Sandbox::new();
    sandbox.write("project/small.txt", "keep\n");
    let big = format!("{}\nend\n", "a".repeat(100_000));
    sandbox.write("project/big.txt", &big);
    let toolgate = sandbox.command(&[]).get_program().to_os_string();
    let limited = |tool: &str, input: Value| {
        let input = input.to_string();
        let args: [&std::ffi::OsStr; 5] = [
            toolgate.as_os_str(),
            "call".as_ref(),
            tool.as_ref(),
            input.as_ref(),
            "--auto".as_ref(),
        ];
        // dash counts in 512-byte blocks, bash in 1024: 64 is 32 or 64 KiB, both far below
        // the 100 KB written.
        let output = shell(&sandbox, "trap '' XFSZ; ulimit -f 64 && exec \"$@\"", &args);
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).trim().to_string(),
        )
    };
    let (code, error) = limited("write", json!({"path": "small.txt", "content": "x".repeat(100_000)}));
    assert_eq!(code, Some(1), "{error}");
    assert!(error.contains("File too large"), "{error}");
    let (code, error) = limited(
        "edit",
        json!({"path": "big.txt", "oldString": "end", "newString": "END"}),
    );
    assert_eq!(code, Some(1), "{error}");
    assert!(error.contains("File too large"), "{error}");
    let patch = "*** Begin Patch\n*** Update File: small.txt\n@@\n-keep\n+changed\n*** Update File: big.txt\n@@\n-end\n+END\n*** End Patch";
    let (code, error) = limited("apply_patch", json!({"patchText": patch}));
    assert_eq!(code, Some(1), "{error}");
    assert!(error.contains("File too large"), "{error}");
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join("small.txt")).unwrap(),
        "keep\n"
    );
    assert_eq!(std::fs::read_to_string(sandbox.project().join("big.txt")).unwrap(), big);
    assert_eq!(temporaries(&sandbox.project()), Vec::<String>::new());
    // The same calls without the limit land: the failures above were the limit's.
    let (code, out, err) = sandbox.run(&[
        "call",
        "apply_patch",
        &json!({"patchText": patch}).to_string(),
        "--auto",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join("small.txt")).unwrap(),
        "changed\n"
    );
}

/// Mounts a 64 KiB tmpfs on `full` and makes `ro` a read-only bind mount, in a private
/// mount namespace (nothing outlives the script), then runs each call and prints
/// `<name> <exit code> <first line of stderr>`, and what the tmpfs holds afterwards.
const FULL_AND_READ_ONLY: &str = r#"
set -u
full=$1; ro=$2; toolgate=$3; shift 3
mount -t tmpfs -o size=64k tmpfs "$full" || exit 77
mount --bind "$ro" "$ro" && mount -o remount,bind,ro "$ro" || exit 77
echo mounted
printf 'keep\n' > "$full/small.txt"
head -c 40000 /dev/zero | tr '\0' a > "$full/big.txt"; printf '\nend\n' >> "$full/big.txt"
while [ $# -ge 2 ]; do
  name=$1; input=$2; shift 2
  tool=${name%%:*}
  err=$("$toolgate" call "$tool" "$input" --auto 2>&1 >/dev/null); code=$?
  echo "$name $code $(printf '%s\n' "$err" | head -n 1)"
done
echo "small $(cat "$full/small.txt")"
echo "big $(wc -c < "$full/big.txt") $(tail -n 1 "$full/big.txt")"
echo "files $(ls -A "$full" | tr '\n' ' ')"
"#;

#[test]
fn a_full_disk_or_a_read_only_directory_never_reports_success() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.project().join("full")).unwrap();
    sandbox.write("project/ro/file.txt", "keep\n");
    let toolgate = sandbox.command(&[]).get_program().to_os_string();
    let both = "*** Begin Patch\n*** Update File: full/small.txt\n@@\n-keep\n+changed\n*** Update File: full/big.txt\n@@\n-end\n+END\n*** End Patch";
    let calls = [
        (
            "write:full",
            json!({"path": "full/small.txt", "content": "x".repeat(100_000)}),
        ),
        (
            "edit:full",
            json!({"path": "full/big.txt", "oldString": "end", "newString": "END"}),
        ),
        ("apply_patch:full", json!({"patchText": both})),
        ("write:ro", json!({"path": "ro/file.txt", "content": "lost\n"})),
        ("write:ro-new", json!({"path": "ro/new.txt", "content": "lost\n"})),
        (
            "edit:ro",
            json!({"path": "ro/file.txt", "oldString": "keep", "newString": "lost"}),
        ),
        (
            "apply_patch:ro",
            json!({"patchText": "*** Begin Patch\n*** Update File: ro/file.txt\n@@\n-keep\n+lost\n*** Add File: ro/added.txt\n+lost\n*** End Patch"}),
        ),
    ];
    let inputs: Vec<(String, String)> = calls
        .iter()
        .map(|(name, input)| (name.to_string(), input.to_string()))
        .collect();
    let full = sandbox.project().join("full");
    let ro = sandbox.project().join("ro");
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "-m".as_ref(),
        "sh".as_ref(),
        "-c".as_ref(),
        FULL_AND_READ_ONLY.as_ref(),
        "sh".as_ref(),
        full.as_os_str(),
        ro.as_os_str(),
        toolgate.as_os_str(),
    ];
    for (name, input) in &inputs {
        args.push(name.as_ref());
        args.push(input.as_ref());
    }
    let output = shell(&sandbox, "exec unshare \"$@\"", &args);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !stdout.starts_with("mounted\n") {
        eprintln!(
            "skipped: no private mount namespace with a tmpfs and a read-only bind mount here ({})",
            String::from_utf8_lossy(&output.stderr).trim()
        );
        return;
    }
    let lines: std::collections::BTreeMap<&str, &str> =
        stdout.lines().skip(1).filter_map(|line| line.split_once(' ')).collect();
    for (name, _) in &calls {
        let line = lines
            .get(name)
            .unwrap_or_else(|| panic!("no outcome for {name}: {stdout}"));
        let (code, message) = line.split_once(' ').unwrap();
        assert_eq!(code, "1", "{name} reported success: {line}");
        let cause = if name.ends_with(":full") {
            "No space left on device"
        } else {
            "Read-only file system"
        };
        assert!(message.contains(cause), "{name}: {message}");
    }
    assert_eq!(lines["small"], "keep", "{stdout}");
    assert_eq!(lines["big"], "40005 end", "{stdout}");
    assert_eq!(
        lines["files"].trim(),
        "big.txt small.txt",
        "no temporary file is left: {stdout}"
    );
    assert_eq!(std::fs::read_to_string(ro.join("file.txt")).unwrap(), "keep\n");
    assert!(!ro.join("new.txt").exists() && !ro.join("added.txt").exists());
    assert_eq!(temporaries(&ro), Vec::<String>::new());
}
