//! Process lifecycle: every call returns one result, in time, with bounded memory.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::time::{Duration, Instant};

use super::{HEAD_BYTES, KILL_GRACE, TAIL_BYTES, run};

fn sh() -> &'static Path {
    Path::new("/bin/sh")
}

/// Whether process `pid` has ended (gone, or a zombie no one has reaped yet).
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the parenthesised command name.
        Ok(stat) => stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next()) == Some("Z"),
    }
}

/// Polls `done` every 10 ms until it holds or `limit` passes; true when it held.
async fn within(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

/// The PID a script wrote to `path`, once it is there.
async fn pid_in(path: &Path) -> u32 {
    let mut pid = None;
    let written = within(Duration::from_secs(10), || {
        pid = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| text.trim().parse().ok());
        pid.is_some()
    })
    .await;
    assert!(written, "the script never wrote its PID to {}", path.display());
    pid.unwrap_or_default()
}

#[tokio::test]
async fn exit_code_and_merged_output() {
    let dir = tempfile::tempdir().unwrap();
    let done = run(
        sh(),
        "echo out; echo err >&2; exit 3",
        dir.path(),
        Duration::from_secs(10),
    )
    .await
    .unwrap();
    assert_eq!(done.exit, Some(3));
    assert!(!done.timed_out);
    assert_eq!(done.capture.text(), "out\nerr\n");
}

#[tokio::test]
async fn a_command_reading_stdin_does_not_hang() {
    let dir = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let done = run(
        sh(),
        "cat; read line; echo read=$?",
        dir.path(),
        Duration::from_secs(10),
    )
    .await
    .unwrap();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(done.capture.text(), "read=1\n");
}

#[tokio::test]
async fn an_escaped_process_holding_the_pipe_does_not_hold_the_result() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("escaped.pid");
    let start = Instant::now();
    let script = format!("setsid sleep 100 & echo $! > {}; echo started", pidfile.display());
    let done = run(sh(), &script, dir.path(), Duration::from_secs(30)).await.unwrap();
    assert!(start.elapsed() < Duration::from_secs(3), "took {:?}", start.elapsed());
    assert_eq!(done.exit, Some(0));
    assert!(done.capture.text().starts_with("started"));
    // Precondition: the escaped process exists and still runs (it left the group).
    let escaped = pid_in(&pidfile).await;
    assert!(!ended(escaped), "the escaped process {escaped} is not running");
    // Ours to end, by its PID.
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &escaped.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
}

#[tokio::test]
async fn background_jobs_of_the_group_are_ended_with_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("job.pid");
    let marker = dir.path().join("alive");
    let script = format!(
        "sh -c 'echo $$ > {}; sleep 2; touch {}' & echo bye",
        pidfile.display(),
        marker.display()
    );
    let done = run(sh(), &script, dir.path(), Duration::from_secs(30)).await.unwrap();
    assert_eq!(done.exit, Some(0));
    // Precondition: the background job started.
    let job = pid_in(&pidfile).await;
    assert!(
        within(Duration::from_secs(10), || ended(job)).await,
        "the background job {job} outlived its call"
    );
    assert!(!marker.exists(), "a background job outlived its call");
}
#[tokio::test]
async fn timeout_terms_then_kills_a_group_that_ignores_term() {
    let dir = tempfile::tempdir().unwrap();
    let start = Instant::now();
    let done = run(
        sh(),
        "trap '' TERM; echo stubborn; sleep 100",
        dir.path(),
        Duration::from_millis(500),
    )
    .await
    .unwrap();
    let elapsed = start.elapsed();
    assert!(done.timed_out);
    assert!(
        elapsed < Duration::from_millis(500) + KILL_GRACE + Duration::from_secs(2),
        "took {elapsed:?}"
    );
    assert!(done.capture.text().contains("stubborn"));
}

#[tokio::test]
async fn a_flood_is_captured_within_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let done = run(
        sh(),
        "head -c 1073741824 /dev/zero; echo; echo tail-marker",
        dir.path(),
        Duration::from_secs(120),
    )
    .await
    .unwrap();
    assert_eq!(done.exit, Some(0));
    assert_eq!(done.capture.total(), 1_073_741_824 + 13);
    assert_eq!(
        done.capture.dropped(),
        done.capture.total() - (HEAD_BYTES + TAIL_BYTES) as u64
    );
    assert!(done.capture.text().ends_with("tail-marker\n"));
}

#[tokio::test]
async fn non_utf8_output_is_replaced_not_lost() {
    let dir = tempfile::tempdir().unwrap();
    let done = run(sh(), "printf 'ok \\377\\376 done'", dir.path(), Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(done.capture.text(), "ok \u{fffd}\u{fffd} done");
}

#[tokio::test]
async fn cancelling_the_call_ends_the_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("shell.pid");
    let marker = dir.path().join("finished");
    let script = format!("echo $$ > {}; sleep 2; touch {}", pidfile.display(), marker.display());
    let workdir = dir.path().to_path_buf();
    let call = tokio::spawn(async move { run(Path::new("/bin/sh"), &script, &workdir, Duration::from_secs(60)).await });
    // Precondition: the command is running when the call is cancelled.
    let shell = pid_in(&pidfile).await;
    assert!(!ended(shell));
    call.abort();
    let _ = call.await;
    assert!(
        within(Duration::from_secs(10), || ended(shell)).await,
        "the cancelled command kept running"
    );
    assert!(!marker.exists(), "the cancelled command kept running");
}
