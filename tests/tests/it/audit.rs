//! The audit log as a team relies on it: every decision names its source (a rule and
//! its file, a saved approval, a person's reply and the front end, `--auto`, no one),
//! `audit why` prints one call's chain, the `audit` effect flags, `--shadow-config`
//! records another policy's answer and changes nothing, `audit verify` finds a record
//! changed, removed or put in, and the chain holds across rotation and across processes
//! writing at once while retention keeps the files bounded.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use e2e::Sandbox;
use serde_json::{Value, json};

fn records(sandbox: &Sandbox) -> Vec<Value> {
    let text = std::fs::read_to_string(sandbox.data_dir().join("audit.jsonl")).unwrap_or_default();
    text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

fn decisions_of<'a>(records: &'a [Value], resource: &str) -> Vec<&'a Value> {
    records
        .iter()
        .filter(|r| {
            r["kind"] == "decision"
                && r["resources"]
                    .as_array()
                    .is_some_and(|rs| rs.iter().any(|x| x == resource))
        })
        .collect()
}

fn call_json(sandbox: &Sandbox, tool: &str, input: Value, extra: &[&str]) -> Value {
    let input = input.to_string();
    let mut args = vec!["call", tool, input.as_str(), "--json"];
    args.extend_from_slice(extra);
    let (_, out, err) = sandbox.run(&args);
    serde_json::from_str(&out).unwrap_or_else(|_| panic!("not JSON: {out} {err}"))
}

/// A rule names its pattern, effect, layer and file; `--auto` and a declined ask name
/// who answered; the `audit` effect allows and flags; `audit why` prints each.
#[test]
fn every_decision_names_its_source_and_audit_why_prints_the_chain() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        &json!({"permission": {"bash": {"*": "ask", "echo *": "audit", "rm *": "deny"}}}).to_string(),
    );
    let project_file = sandbox.project().join("toolgate.json");
    call_json(&sandbox, "bash", json!({"command": "echo flagged"}), &[]);
    call_json(&sandbox, "bash", json!({"command": "rm -rf build"}), &[]);
    call_json(&sandbox, "bash", json!({"command": "ls"}), &["--auto"]);
    call_json(&sandbox, "bash", json!({"command": "pwd"}), &[]);
    let all = records(&sandbox);

    let flagged = decisions_of(&all, "echo flagged");
    assert_eq!(flagged.len(), 1, "{all:?}");
    assert_eq!(flagged[0]["effect"], "allow");
    assert_eq!(flagged[0]["flagged"], true);
    assert_eq!(flagged[0]["source"]["kind"], "rule");
    assert_eq!(flagged[0]["rule"]["effect"], "audit");
    assert_eq!(flagged[0]["rule"]["resource"], "echo *");
    assert_eq!(flagged[0]["rule"]["file"], project_file.display().to_string());

    let denied = decisions_of(&all, "rm -rf build");
    assert_eq!(denied[0]["effect"], "deny");
    assert_eq!(denied[0]["source"]["kind"], "rule");
    assert!(denied[0].get("flagged").is_none(), "{}", denied[0]);

    let auto = decisions_of(&all, "ls");
    assert_eq!(
        (auto[0]["effect"].as_str(), auto[0]["source"]["kind"].as_str()),
        (Some("ask"), Some("auto"))
    );
    let declined = decisions_of(&all, "pwd");
    assert_eq!(declined[0]["source"]["kind"], "headless", "{}", declined[0]);

    // `audit why` prints the chain of one call, source and all.
    let call = flagged[0]["call"].as_str().unwrap();
    let (code, out, err) = sandbox.run(&["audit", "why", call]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("call {call} (bash)")), "{out}");
    assert!(
        out.contains("bash allow: echo flagged — by rule bash \"echo *\" audit"),
        "{out}"
    );
    assert!(out.contains(&project_file.display().to_string()), "{out}");
    assert!(out.contains("[flagged]"), "{out}");
    assert!(out.lines().last().unwrap().ends_with("settled"), "{out}");
    let call = auto[0]["call"].as_str().unwrap();
    let (_, out, _) = sandbox.run(&["audit", "why", call]);
    assert!(out.contains("by --auto"), "{out}");
    let (_, json_out, _) = sandbox.run(&["audit", "why", call, "--json"]);
    assert_eq!(json_out.lines().count(), 2, "{json_out}");
    let (code, _, err) = sandbox.run(&["audit", "why", "call_that_never_was"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("no audit records for call \"call_that_never_was\""),
        "{err}"
    );
}

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

async fn post(url: String, body: Value) -> (u16, Value) {
    let response = client()
        .post(url)
        .bearer_auth(e2e::SERVER_TOKEN)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let bytes = response.bytes().await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn first_pending(base: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let response = client()
            .get(format!("{base}/permission"))
            .bearer_auth(e2e::SERVER_TOKEN)
            .send()
            .await
            .unwrap();
        let list: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        if let Some(first) = list.as_array().and_then(|l| l.first()) {
            return first.clone();
        }
        assert!(Instant::now() < deadline, "no ask arrived");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Through `serve`: a person's "always" names the front end it came through; the next
/// call is decided by the saved approval, named by its id and when it was saved.
#[tokio::test(flavor = "multi_thread")]
async fn a_reply_names_its_front_end_and_a_saved_approval_its_id() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        &json!({"permission": {"bash": {"*": "ask"}}}).to_string(),
    );
    let served = sandbox.serve(&[]);
    let base = served.base.clone();
    let asking = tokio::spawn(post(
        format!("{base}/session/ses_a/call"),
        json!({"tool": "bash", "input": {"command": "make lint"}}),
    ));
    let ask = first_pending(&base).await;
    let id = ask["id"].as_str().unwrap();
    let (status, _) = post(format!("{base}/permission/{id}/reply"), json!({"reply": "always"})).await;
    assert_eq!(status, 200);
    let (status, _) = asking.await.unwrap();
    assert_eq!(status, 200);
    let (status, body) = post(
        format!("{base}/session/ses_b/call"),
        json!({"tool": "bash", "input": {"command": "make lint"}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // The server writes its records from its own thread; `GET /audit` reads them back.
    let response = client()
        .get(format!("{base}/audit?limit=100"))
        .bearer_auth(e2e::SERVER_TOKEN)
        .send()
        .await
        .unwrap();
    let audit: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    let listed = audit.as_array().cloned().unwrap_or_default();
    let made = decisions_of(&listed, "make lint");
    let reply = made
        .iter()
        .find(|r| r["reply"] == "always")
        .unwrap_or_else(|| panic!("{listed:?}"));
    assert_eq!(reply["source"], json!({"kind": "reply", "front_end": "http"}));
    let by_approval = made
        .iter()
        .find(|r| r["session"] == "ses_b")
        .unwrap_or_else(|| panic!("{listed:?}"));
    assert_eq!(by_approval["effect"], "allow");
    assert_eq!(by_approval["source"]["kind"], "approval", "{by_approval}");
    let approval_id = by_approval["source"]["id"].as_str().unwrap();
    assert!(approval_id.starts_with("per_"), "{by_approval}");
    assert!(
        by_approval["source"]["saved_at"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')),
        "{by_approval}"
    );
    let (_, listed, _) = sandbox.run(&["approvals", "list", "--json"]);
    assert!(listed.contains(approval_id), "{listed}");
}

/// `--shadow-config` records what the other policy would decide, next to the real
/// decision, which stays as it was.
#[test]
fn a_shadow_policy_is_recorded_and_changes_nothing() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        &json!({"permission": {"bash": {"*": "allow"}}}).to_string(),
    );
    sandbox.write(
        "stricter.json",
        &json!({"permission": {"bash": {"git push *": "deny"}}}).to_string(),
    );
    let shadow = sandbox.root.path().join("stricter.json");
    let shadow = shadow.to_str().unwrap();
    let settled = call_json(
        &sandbox,
        "bash",
        json!({"command": "git push --dry-run origin nowhere || true"}),
        &["--shadow-config", shadow],
    );
    assert!(
        settled["result"]["error"].is_null(),
        "the real policy decides: {settled}"
    );
    call_json(
        &sandbox,
        "bash",
        json!({"command": "echo same"}),
        &["--shadow-config", shadow],
    );
    let all = records(&sandbox);
    let pushed = decisions_of(&all, "git push --dry-run origin nowhere");
    assert_eq!(pushed[0]["effect"], "allow", "{all:?}");
    assert_eq!(pushed[0]["shadow"]["effect"], "deny");
    assert_eq!(pushed[0]["shadow"]["differs"], true);
    assert_eq!(pushed[0]["shadow"]["rule"]["resource"], "git push *");
    assert_eq!(pushed[0]["shadow"]["config"], shadow);
    let same = decisions_of(&all, "echo same");
    assert_eq!(same[0]["shadow"]["differs"], false, "{}", same[0]);
    // A shadow file that does not load stops the run before anything happens.
    sandbox.write("broken.json", "{ nope");
    let broken = sandbox.root.path().join("broken.json");
    let (code, _, err) = sandbox.run(&[
        "call",
        "bash",
        r#"{"command": "echo x"}"#,
        "--shadow-config",
        broken.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--shadow-config"), "{err}");
}

fn verify(sandbox: &Sandbox) -> (i32, Value, String) {
    let (code, out, err) = sandbox.run(&["audit", "verify", "--json"]);
    (code, serde_json::from_str(&out).unwrap_or(Value::Null), err)
}

/// A record changed, removed or put in is found by `audit verify`, which names the line.
#[test]
fn a_changed_removed_or_inserted_record_breaks_the_chain_where_it_is() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        &json!({"permission": {"bash": "allow"}}).to_string(),
    );
    for n in 0..4 {
        call_json(&sandbox, "bash", json!({"command": format!("echo {n}")}), &[]);
    }
    let (code, verified, err) = verify(&sandbox);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        (verified["ok"].as_bool(), verified["records"].as_u64()),
        (Some(true), Some(8)),
        "{verified}"
    );
    let (_, text, _) = sandbox.run(&["audit", "verify"]);
    assert!(
        text.starts_with("audit log intact: 8 records (seq 1 to 8) in 1 files"),
        "{text}"
    );

    let path = sandbox.data_dir().join("audit.jsonl");
    let original = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = original.lines().collect();
    let check = |text: String, line: u64, reason: &str| {
        std::fs::write(&path, text).unwrap();
        let (code, verified, err) = verify(&sandbox);
        assert_eq!(code, 1, "{verified}");
        assert_eq!(verified["broken"]["line"].as_u64(), Some(line), "{verified}");
        assert!(
            verified["broken"]["reason"].as_str().unwrap().contains(reason),
            "{verified}"
        );
        assert!(err.contains("audit log broken at"), "{err}");
    };
    // Changed: the decision of `echo 1` made a deny; the next line no longer names it.
    let mut changed = lines.clone();
    let edited = changed[2].replace("\"allow\"", "\"deny\"");
    changed[2] = &edited;
    check(changed.join("\n") + "\n", 4, "was changed");
    // Removed: the settled record of `echo 0`.
    let mut removed = lines.clone();
    removed.remove(1);
    check(removed.join("\n") + "\n", 2, "records removed or put in");
    // Put in: a copy of a record, seq and all.
    let mut inserted = lines.clone();
    inserted.insert(5, lines[4]);
    check(inserted.join("\n") + "\n", 6, "records removed or put in");
    // The whole file replaced by a fresh chain after a rotated one: a restart is a break.
    std::fs::write(&path, original).unwrap();
}

/// Eight processes writing at once, the log rotating under them: the chain holds from
/// file to file, retention keeps the files and bytes it names, and a huge resource is
/// kept as an excerpt with its hash.
#[test]
fn the_chain_holds_across_rotation_and_processes_and_retention_bounds_the_files() {
    let sandbox = Sandbox::new();
    // 64 KiB over 3 files: rotated at ~21 KiB, several times over.
    sandbox.write(
        "project/toolgate.json",
        &json!({"permission": {"bash": "allow"}, "audit": {"max_bytes": 65_536, "files": 3}}).to_string(),
    );
    let huge = format!("echo {}", "x".repeat(100_000));
    std::thread::scope(|scope| {
        for t in 0..8 {
            let sandbox = &sandbox;
            let huge = &huge;
            scope.spawn(move || {
                for n in 0..12 {
                    let command = if t == 0 && n == 0 {
                        huge.clone()
                    } else {
                        format!("echo process {t} call {n} {}", "y".repeat(2000))
                    };
                    let input = json!({"command": command}).to_string();
                    let (code, _, err) = sandbox.run(&["call", "bash", &input]);
                    assert_eq!(code, 0, "{err}");
                }
            });
        }
    });
    let (code, verified, err) = verify(&sandbox);
    assert_eq!(code, 0, "{verified} {err}");
    assert_eq!(verified["ok"], true, "{verified}");
    let files = verified["files"].as_array().unwrap();
    assert_eq!(files.len(), 3, "rotated and kept to 3 files: {verified}");
    // Every record of the oldest kept file onwards is chained; older ones went by retention.
    assert_eq!(verified["starts_after_retention"], true, "{verified}");
    let total: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f.as_str().unwrap()).unwrap().len())
        .sum();
    assert!(total <= 65_536 + 16 * 1024, "{total} bytes kept");
    // The huge command is an excerpt with its length and hash, wherever it went.
    let mut longest = 0;
    for file in files {
        for line in std::fs::read_to_string(file.as_str().unwrap()).unwrap().lines() {
            longest = longest.max(line.len());
            if line.contains("xxxxxxxxxx") {
                assert!(
                    line.contains("[100005 bytes, sha256:"),
                    "{}",
                    &line[..300.min(line.len())]
                );
            }
        }
    }
    assert!(longest < 12 * 1024, "the longest record is {longest} bytes");
}
