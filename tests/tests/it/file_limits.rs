//! The file tools lose nothing and stop nothing, through the binary: a 2 GiB file edited
//! through `toolgate serve` under a memory limit is refused and the server answers the
//! next call; every page `toolgate call read` prints reaches the model whole (spec §3.5),
//! so following its offsets gives back the file byte for byte; and spill files older than
//! 7 days go when only `toolgate call` processes run (§3.6), at most one scan a day.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::{Duration, SystemTime};

use e2e::Sandbox;
use serde_json::{Value, json};

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

async fn call_served(base: &str, body: Value) -> Result<Value, String> {
    let response = client()
        .post(format!("{base}/session/s/call"))
        .bearer_auth(e2e::SERVER_TOKEN)
        .body(body.to_string())
        .timeout(Duration::from_secs(120))
        .send()
        .await
        .map_err(|error| error.to_string())?;
    let bytes = response.bytes().await.map_err(|error| error.to_string())?;
    serde_json::from_slice(&bytes).map_err(|error| error.to_string())
}

/// `VmSize` of a process, in bytes.
fn address_space(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|line| line.starts_with("VmSize:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_two_gib_edit_through_serve_under_a_memory_limit_is_refused_and_the_server_answers_the_next_call() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"edit": "allow", "read": "allow"}}"#,
    );
    sandbox.write("project/small.txt", "one\ntwo\n");
    let huge = sandbox.project().join("huge.txt");
    std::fs::write(&huge, "alpha\n").unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&huge)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let mut served = sandbox.serve(&[]);
    let pid = served.child.id();
    // The server may grow by 1 GiB of address space: far less than the file.
    let limit = address_space(pid) + (1 << 30);
    let status = std::process::Command::new("prlimit")
        .args([format!("--pid={pid}"), format!("--as={limit}")])
        .status()
        .unwrap();
    assert!(status.success(), "prlimit failed");
    for (tool, input) in [
        (
            "edit",
            json!({"path": "huge.txt", "oldString": "alpha", "newString": "beta"}),
        ),
        (
            "apply_patch",
            json!({"patchText": "*** Begin Patch\n*** Update File: huge.txt\n@@\n-alpha\n+beta\n*** End Patch"}),
        ),
    ] {
        let answer = call_served(&served.base, json!({"tool": tool, "input": input}))
            .await
            .unwrap_or_else(|error| panic!("{tool} of a 2 GiB file took the server down: {error}"));
        assert!(
            served.child.try_wait().unwrap().is_none(),
            "the server is still running"
        );
        let text = answer.to_string();
        assert!(
            text.contains("the file is 2 GiB, and edit, write and apply_patch read at most 32 MiB"),
            "{tool}: {answer}"
        );
        // The next call is answered.
        let next = call_served(&served.base, json!({"tool": "read", "input": {"path": "small.txt"}}))
            .await
            .unwrap();
        assert_eq!(
            next["result"]["value"], "Read file small.txt, lines 1-2\n1: one\n2: two",
            "{next}"
        );
    }
    assert_eq!(
        std::fs::metadata(&huge).unwrap().len(),
        2 << 30,
        "the file is untouched"
    );
}

/// Runs `toolgate call read` (stdout on success).
fn read(sandbox: &Sandbox, input: Value) -> String {
    let (code, out, err) = sandbox.run(&["call", "read", &input.to_string(), "--auto"]);
    assert_eq!(code, 0, "{err}");
    out.strip_suffix('\n').unwrap_or(&out).to_string()
}

#[test]
fn pages_printed_by_call_read_reach_the_model_whole_and_join_into_the_file() {
    let sandbox = Sandbox::new();
    // Lines of every length up to 1990 characters (a line is cut at 2000), short ones and
    // empty ones: pages stop on bytes and on lines, never cut by the output bound.
    let mut text = String::new();
    for n in 0..3000u64 {
        let width = match n % 5 {
            0 => 1990,
            1 => (n * 31 % 1900) as usize,
            _ => (n % 11) as usize,
        };
        text.push_str(&format!("{n:05} {}\n", "w".repeat(width)));
    }
    text.push_str(&"\n".repeat(2100));
    sandbox.write("project/long.txt", &text);
    let mut offset = 1u64;
    let mut lines: Vec<String> = Vec::new();
    let mut pages = 0;
    loop {
        let page = read(&sandbox, json!({"path": "long.txt", "offset": offset}));
        pages += 1;
        assert!(
            !page.contains("... output truncated ("),
            "the bound cut page {pages} (offset {offset})"
        );
        let mut next = None;
        for line in page.lines().skip(1) {
            if let Some(rest) = line.strip_prefix("[Output truncated. Continue reading with offset: ") {
                next = Some(rest.trim_end_matches(']').parse::<u64>().unwrap());
                break;
            }
            let (number, content) = line.split_once(": ").unwrap();
            assert_eq!(
                number.parse::<u64>().unwrap(),
                lines.len() as u64 + 1,
                "no line is skipped"
            );
            lines.push(content.to_string());
        }
        match next {
            Some(next) => offset = next,
            None => break,
        }
    }
    assert!(pages > 10, "{pages} pages");
    assert_eq!(
        lines.join("\n") + "\n",
        text,
        "the pages, joined, are the file byte for byte"
    );
    assert!(
        !sandbox.data_dir().join("tool-output").exists() || spills(&sandbox).is_empty(),
        "nothing spilled"
    );
}

fn spills(sandbox: &Sandbox) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(sandbox.data_dir().join("tool-output"))
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .filter(|name| name.starts_with("tool_"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn age(path: &Path, days: u64) {
    if !path.exists() {
        std::fs::write(path, "spilled output\n").unwrap();
    }
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(days * 24 * 3600))
        .unwrap();
}

#[test]
fn calls_alone_remove_spills_older_than_seven_days_at_most_once_a_day() {
    let sandbox = Sandbox::new();
    sandbox.write("project/a.txt", "a\n");
    let dir = sandbox.data_dir().join("tool-output");
    std::fs::create_dir_all(&dir).unwrap();
    age(&dir.join("tool_old"), 8);
    age(&dir.join("tool_young"), 6);
    age(&dir.join("notes.txt"), 8);
    read(&sandbox, json!({"path": "a.txt"}));
    assert_eq!(
        spills(&sandbox),
        ["tool_young"],
        "the 8-day-old spill went, the 6-day-old one stayed"
    );
    assert!(dir.join("notes.txt").exists(), "a file that is not a spill stays");
    let marker = dir.join(".last-cleanup");
    assert!(marker.exists(), "the cleanup is recorded");
    // Within the day, calls do not scan again.
    age(&dir.join("tool_old_again"), 9);
    read(&sandbox, json!({"path": "a.txt"}));
    assert_eq!(
        spills(&sandbox),
        ["tool_old_again", "tool_young"],
        "a second scan the same day"
    );
    // A day later, the next call scans.
    age(&marker, 1);
    let (code, _, err) = sandbox.run(&["call", "glob", r#"{"pattern": "*.txt"}"#, "--auto"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(spills(&sandbox), ["tool_young"], "the day-old marker let the call scan");
}
