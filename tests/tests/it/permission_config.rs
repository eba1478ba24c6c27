//! Permission rules through the binary (spec §4.3, §4.9, §4.11): a deny never disappears (config layers, large rule
//! sets, absolute paths), nothing fails open, doom_loop in every front end, and prompts
//! that show what will change. `toolgate check --json`, `toolgate call` and
//! `toolgate config` are driven as a user would.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use e2e::Sandbox;
use serde_json::{Map, Value, json};

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|error| panic!("not JSON ({error}): {text}"))
}

/// `toolgate check ACTION RESOURCE --json` with extra args and environment: the effect.
fn effect(sandbox: &Sandbox, action: &str, resource: &str, extra: &[&str], env: &[(&str, &str)]) -> String {
    let mut args = vec!["check", action, resource, "--json"];
    args.extend_from_slice(extra);
    let mut command = sandbox.command(&args);
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    json_of(&out)["effect"].as_str().unwrap().to_string()
}

// ---- every layer is read as rules before the layers are merged ----------------------

#[test]
fn a_string_permission_is_not_lost_to_another_layer() {
    let sandbox = Sandbox::new();
    sandbox.write("project/toolgate.json", r#"{"permission": "deny"}"#);
    sandbox.write("extra.json", r#"{"permission": {"read": "allow"}}"#);
    let extra = sandbox.root.path().join("extra.json");
    let extra = ["--config", extra.to_str().unwrap()];
    assert_eq!(effect(&sandbox, "webfetch", "https://example.com", &extra, &[]), "deny");
    assert_eq!(effect(&sandbox, "read", "src/a.rs", &extra, &[]), "allow");
    // Wholly denied, webfetch is not even offered: `call` does not know it.
    let (code, out, _) = sandbox.run(&["tools", "--json", extra[0], extra[1]]);
    assert_eq!(code, 0);
    let offered: Vec<String> = json_of(&out)
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(offered, ["read"]);
    let (code, _, err) = sandbox.run(&[
        "call",
        "webfetch",
        r#"{"url": "http://127.0.0.1:9/"}"#,
        extra[0],
        extra[1],
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("Permission denied: tool webfetch"), "{err}");

    // Global string + project object.
    let sandbox = Sandbox::new();
    sandbox.write("config/toolgate.json", r#"{"permission": "deny"}"#);
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": {"ls *": "allow"}}}"#,
    );
    assert_eq!(effect(&sandbox, "bash", "rm -rf x", &[], &[]), "deny");
    assert_eq!(effect(&sandbox, "bash", "ls -la", &[], &[]), "allow");

    // $TOOLGATE_PERMISSION over a project string.
    let sandbox = Sandbox::new();
    sandbox.write("project/toolgate.json", r#"{"permission": "deny"}"#);
    let env = [("TOOLGATE_PERMISSION", r#"{"read": "allow"}"#)];
    assert_eq!(effect(&sandbox, "webfetch", "https://example.com", &[], &env), "deny");
    assert_eq!(effect(&sandbox, "read", "a.rs", &[], &env), "allow");

    // An action's string in one layer, patterns for it in the next.
    let sandbox = Sandbox::new();
    sandbox.write("config/toolgate.json", r#"{"permission": {"bash": "deny"}}"#);
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": {"git status *": "allow"}}}"#,
    );
    assert_eq!(effect(&sandbox, "bash", "rm -rf /", &[], &[]), "deny");
    assert_eq!(effect(&sandbox, "bash", "git status", &[], &[]), "allow");
}

#[test]
fn a_list_layer_and_an_object_layer_keep_their_rules_in_order() {
    let sandbox = Sandbox::new();
    sandbox.write("config/toolgate.json", r#"{"permission": "ask"}"#);
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": [{"action": "edit", "resource": "secret/*", "effect": "deny"},
                           {"action": "bash", "resource": "*", "effect": "allow"}]}"#,
    );
    sandbox.write(
        "extra.json",
        r#"{"permission": {"webfetch": "allow", "bash": {"rm *": "deny"}}}"#,
    );
    let extra_path = sandbox.root.path().join("extra.json");
    let extra = ["--config", extra_path.to_str().unwrap()];
    assert_eq!(
        effect(&sandbox, "edit", "secret/key", &extra, &[]),
        "deny",
        "the list's deny holds"
    );
    assert_eq!(effect(&sandbox, "bash", "ls", &extra, &[]), "allow", "the list's allow");
    assert_eq!(
        effect(&sandbox, "bash", "rm x", &extra, &[]),
        "deny",
        "the later object's deny"
    );
    assert_eq!(effect(&sandbox, "webfetch", "https://x", &extra, &[]), "allow");
    assert_eq!(
        effect(&sandbox, "edit", "src/a.rs", &extra, &[]),
        "ask",
        "the global string"
    );
    // `call` refuses the write the list denies, and nothing is written.
    let (code, _, err) = sandbox.run(&[
        "call",
        "write",
        r#"{"path": "secret/key", "content": "x"}"#,
        extra[0],
        extra[1],
    ]);
    assert_eq!(code, 3, "{err}");
    assert!(!sandbox.project().join("secret/key").exists());

    // `toolgate config` shows the string, list and object layers' rules in that order,
    // each with the file it came from.
    let (code, out, err) = sandbox.run(&["config", "--json", extra[0], extra[1]]);
    assert_eq!(code, 0, "{err}");
    let rules = json_of(&out)["rules"].as_array().unwrap().clone();
    let user: Vec<(String, String, String, String)> = rules
        .iter()
        .filter(|r| r["origin"] == "user_config")
        .map(|r| {
            let source = r["source"].as_str().unwrap();
            let file = std::path::Path::new(source)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let dir = std::path::Path::new(source)
                .parent()
                .and_then(|p| p.file_name())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (
                format!("{dir}/{file}"),
                r["action"].as_str().unwrap().to_string(),
                r["resource"].as_str().unwrap().to_string(),
                r["effect"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let root = sandbox.root.path().file_name().unwrap().to_string_lossy().into_owned();
    let expected: Vec<(String, String, String, String)> = [
        ("config/toolgate.json", "*", "*", "ask"),
        ("project/toolgate.json", "edit", "secret/*", "deny"),
        ("project/toolgate.json", "bash", "*", "allow"),
        // Each bash rule decides OpenCode V2's `shell` too (spec §4.9): its twin follows it.
        ("project/toolgate.json", "shell", "*", "allow"),
        (&format!("{root}/extra.json") as &str, "webfetch", "*", "allow"),
        (&format!("{root}/extra.json") as &str, "bash", "rm *", "deny"),
        (&format!("{root}/extra.json") as &str, "shell", "rm *", "deny"),
    ]
    .iter()
    .map(|(a, b, c, d)| (a.to_string(), b.to_string(), c.to_string(), d.to_string()))
    .collect();
    assert_eq!(user, expected);
    let (_, text, _) = sandbox.run(&["config", extra[0], extra[1]]);
    assert!(text.contains("user config ("), "{text}");
}

// ---- large rule sets and long patterns never fail open ------------------------------

#[test]
fn five_thousand_edit_rules_do_not_lose_the_deny_after_them() {
    let sandbox = Sandbox::new();
    let mut edit = Map::new();
    edit.insert("*".into(), json!("allow"));
    for n in 0..5_000 {
        edit.insert(format!("src/module{n}/*/part?{n}.rs"), json!("allow"));
    }
    edit.insert("secret/*".into(), json!("deny"));
    sandbox.write(
        "project/toolgate.json",
        &json!({"permission": {"edit": edit}}).to_string(),
    );
    let check = sandbox.run(&["check", "edit", "secret/key", "--json"]);
    assert_eq!(check.0, 0, "{}", check.2);
    let report = json_of(&check.1);
    assert_eq!(report["effect"], "deny");
    assert_eq!(report["resources"][0]["rule"]["resource"], "secret/*");
    let (code, _, err) = sandbox.run(&["call", "write", r#"{"path": "secret/key", "content": "leak"}"#]);
    assert_eq!(code, 3, "{err}");
    assert!(!sandbox.project().join("secret/key").exists(), "nothing was written");
    let (code, _, err) = sandbox.run(&["call", "write", r#"{"path": "notes.txt", "content": "fine"}"#]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn a_twenty_thousand_character_pattern_holds_and_an_oversized_one_is_refused() {
    let sandbox = Sandbox::new();
    let pattern = "ab?*".repeat(5_000);
    sandbox.write(
        "project/toolgate.json",
        &json!({"permission": {"bash": {"*": "allow", pattern: "deny"}}}).to_string(),
    );
    let matching = "abX ".repeat(5_000);
    assert_eq!(effect(&sandbox, "bash", matching.trim_end(), &[], &[]), "deny");
    assert_eq!(effect(&sandbox, "bash", "ls", &[], &[]), "allow");

    let too_long = "a*".repeat(40_000);
    sandbox.write(
        "project/toolgate.json",
        &json!({"permission": {"bash": {"*": "allow", too_long: "deny"}}}).to_string(),
    );
    let (code, out, err) = sandbox.run(&["check", "bash", "ls", "--json"]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("toolgate.json: permission.bash[\"a*a*a*"), "{err}");
    assert!(
        err.contains("expected a pattern of at most 65536 bytes, found 80000 bytes"),
        "{err}"
    );
    assert!(err.len() < 400, "one short line: {err}");
}

// ---- absolute-path rules hold against relative resources ----------------------------

#[test]
fn absolute_rules_hold_however_the_path_is_written() {
    let sandbox = Sandbox::new();
    let project = std::fs::canonicalize(sandbox.project()).unwrap();
    std::fs::create_dir(project.join("src")).unwrap();
    let abs = project.display().to_string();
    sandbox.write(
        "project/toolgate.json",
        &json!({"permission": {"edit": {format!("{abs}/src/*"): "deny"}, "read": {format!("{abs}/private/*"): "deny"}}})
            .to_string(),
    );
    sandbox.write("project/private/key", "secret\n");
    for path in [
        format!("{abs}/src/y.rs"),
        "src/y.rs".to_string(),
        "./src/y.rs".to_string(),
    ] {
        let input = json!({"path": path, "content": "fn main() {}\n"}).to_string();
        let (code, _, err) = sandbox.run(&["call", "write", &input]);
        assert_eq!(code, 3, "{path}: {err}");
        assert!(!project.join("src/y.rs").exists(), "{path}: written");
    }
    assert_eq!(effect(&sandbox, "edit", "src/y.rs", &[], &[]), "deny");
    assert_eq!(effect(&sandbox, "edit", "lib/z.rs", &[], &[]), "allow");
    let (code, out, err) = sandbox.run(&["call", "read", r#"{"path": "private/key"}"#]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(!out.contains("secret"), "{out}");
}

#[test]
fn rules_may_name_the_project_through_a_symlink() {
    let sandbox = Sandbox::new();
    let link = sandbox.root.path().join("link");
    std::os::unix::fs::symlink(sandbox.project(), &link).unwrap();
    assert!(
        link.symlink_metadata().unwrap().file_type().is_symlink(),
        "precondition"
    );
    sandbox.write(
        "project/toolgate.json",
        &json!({"permission": {"edit": {format!("{}/src/*", link.display()): "deny"}}}).to_string(),
    );
    let dir = link.to_str().unwrap();
    let (code, _, err) = sandbox.run(&["call", "write", r#"{"path": "src/a.rs", "content": "x"}"#, "--dir", dir]);
    assert_eq!(code, 3, "{err}");
    assert!(!sandbox.project().join("src/a.rs").exists());
}

// ---- `~` and `$HOME` expand by action in the list form --------------------------------

#[test]
fn list_form_expands_home_only_for_path_actions() {
    let sandbox = Sandbox::new();
    let home = sandbox.root.path().join("home");
    std::fs::create_dir(&home).unwrap();
    sandbox.write(
        "project/toolgate.json",
        // Exec-time enforcement off: this is about the analysis's own reading of the rules.
        r#"{"sandbox": {"enforce_exec": false}, "permission": [
            {"action": "bash", "resource": "~/bin/deploy *", "effect": "deny"},
            {"action": "read", "resource": "~/private/*", "effect": "deny"},
            {"action": "external_directory", "resource": "$HOME/private/*", "effect": "allow"}
        ]}"#,
    );
    sandbox.trust();
    let env = [("HOME", home.to_str().unwrap())];
    assert_eq!(
        effect(&sandbox, "bash", "~/bin/deploy now", &[], &env),
        "deny",
        "bash stays raw"
    );
    let private = format!("{}/private/notes", home.display());
    assert_eq!(effect(&sandbox, "read", &private, &[], &env), "deny");
    assert_eq!(
        effect(
            &sandbox,
            "external_directory",
            &format!("{}/private/*", home.display()),
            &[],
            &env
        ),
        "allow"
    );
    let mut command = sandbox.command(&["config", "--json"]);
    command.env("HOME", &home);
    let output = command.output().unwrap();
    assert!(output.status.success());
    let rules = json_of(&String::from_utf8_lossy(&output.stdout))["rules"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        rules
            .iter()
            .any(|r| r["action"] == "bash" && r["resource"] == "~/bin/deploy *")
    );
    assert!(
        rules
            .iter()
            .any(|r| r["action"] == "read" && r["resource"] == format!("{}/private/*", home.display()))
    );
}

// ---- what `skill` offers, `read` may read ---------------------------------------------

#[test]
fn files_a_global_skill_lists_can_be_read_without_asking() {
    let sandbox = Sandbox::new();
    sandbox.own_temp_dir();
    sandbox.write(
        "config/skills/review/SKILL.md",
        "---\nname: review\ndescription: Reviews code\n---\nRun helper.sh first.\n",
    );
    sandbox.write("config/skills/review/helper.sh", "echo reviewing\n");
    let (code, out, err) = sandbox.run(&["call", "skill", r#"{"name": "review"}"#]);
    assert_eq!(code, 0, "{err}");
    let listed = out
        .lines()
        .find_map(|line| line.strip_prefix("<file>").and_then(|l| l.strip_suffix("</file>")))
        .unwrap_or_else(|| panic!("no file listed: {out}"))
        .to_string();
    assert!(listed.ends_with("review/helper.sh"), "{listed}");
    let input = json!({"path": listed}).to_string();
    let (code, out, err) = sandbox.run(&["call", "read", &input]);
    assert_eq!(code, 0, "a file skill listed is readable without a prompt: {err}");
    assert!(out.contains("echo reviewing"), "{out}");
    // Elsewhere outside the project still asks.
    sandbox.write("elsewhere/notes.txt", "x\n");
    let elsewhere = json!({"path": sandbox.root.path().join("elsewhere/notes.txt")}).to_string();
    let (code, _, err) = sandbox.run(&["call", "read", &elsewhere]);
    assert_eq!(code, 3, "{err}");
}

#[test]
fn a_project_skill_directory_linked_out_of_the_project_widens_nothing() {
    // A cloned repository can ship `.claude/skills -> /` (or -> $HOME): the skill
    // allowance must not turn into "every outside path is allowed".
    let sandbox = Sandbox::new();
    sandbox.own_temp_dir();
    std::fs::create_dir_all(sandbox.project().join(".claude")).unwrap();
    std::fs::create_dir_all(sandbox.project().join(".opencode")).unwrap();
    std::os::unix::fs::symlink("/", sandbox.project().join(".claude/skills")).unwrap();
    let outside = sandbox.root.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, sandbox.project().join(".opencode/skills")).unwrap();
    sandbox.write("outside/secret.txt", "topsecret\n");
    assert!(outside.join("secret.txt").is_file(), "precondition");
    for path in [outside.join("secret.txt"), outside.join("../outside/secret.txt")] {
        let input = json!({"path": path}).to_string();
        let (code, out, err) = sandbox.run(&["call", "read", &input]);
        assert_eq!(code, 3, "{path:?}: {out}{err}");
        assert!(!out.contains("topsecret"), "{out}");
    }
    let input = json!({"path": outside.join("new.txt"), "content": "pwn"}).to_string();
    let (code, _, err) = sandbox.run(&["call", "write", &input]);
    assert_eq!(code, 3, "{err}");
    assert!(!outside.join("new.txt").exists(), "written outside without asking");
    let (code, out, _) = sandbox.run(&["config", "--json"]);
    assert_eq!(code, 0);
    let allowed: Vec<String> = json_of(&out)["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["action"] == "external_directory" && r["effect"] == "allow")
        .map(|r| r["resource"].as_str().unwrap().to_string())
        .collect();
    assert!(!allowed.iter().any(|glob| glob == "/*"), "{allowed:?}");
    let outside_glob = format!("{}/*", std::fs::canonicalize(&outside).unwrap().display());
    assert!(!allowed.contains(&outside_glob), "{allowed:?}");
}

// ---- doom_loop in `call` ---------------------------------------------------------------

#[test]
fn call_asks_doom_loop_on_the_third_identical_call_of_a_session() {
    let sandbox = Sandbox::new();
    sandbox.write("project/a.txt", "alpha\n");
    let read = |input: &str, session: &str| sandbox.run(&["call", "read", input, "--session", session]);
    let input = r#"{"path": "a.txt", "limit": 5}"#;
    assert_eq!(read(input, "s1").0, 0);
    assert_eq!(read(input, "s1").0, 0);
    let (code, out, err) = read(input, "s1");
    assert_eq!(code, 3, "{out}");
    assert_eq!(
        err.trim(),
        "permission requested: doom_loop (read); declined (no terminal; use --auto to approve)"
    );
    // Another session is another streak; key order makes another call.
    assert_eq!(read(input, "s2").0, 0);
    let reordered = r#"{"limit": 5, "path": "a.txt"}"#;
    assert_eq!(read(reordered, "s1").0, 0);
    assert_eq!(read(input, "s1").0, 0);
    assert_eq!(read(reordered, "s1").0, 0, "alternating calls never loop");
    // --auto approves the ask once; a rule can deny it.
    assert_eq!(read(reordered, "s3").0, 0);
    assert_eq!(read(reordered, "s3").0, 0);
    let (code, _, err) = sandbox.run(&["call", "read", reordered, "--session", "s3", "--auto"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn doom_loop_threshold_and_rules_are_honoured() {
    let sandbox = Sandbox::new();
    sandbox.write("project/a.txt", "alpha\n");
    sandbox.write(
        "project/toolgate.json",
        r#"{"doom_loop_threshold": 2, "permission": {"doom_loop": "deny"}}"#,
    );
    let args = ["call", "read", r#"{"path": "a.txt"}"#, "--session", "t", "--auto"];
    assert_eq!(sandbox.run(&args).0, 0);
    let (code, _, err) = sandbox.run(&args);
    assert_eq!(code, 3, "the second call with threshold 2: {err}");
    assert!(err.contains("Permission denied: doom_loop"), "{err}");
    sandbox.write(
        "project/toolgate.json",
        r#"{"doom_loop_threshold": 5, "permission": {"doom_loop": "deny"}}"#,
    );
    let fresh = ["call", "read", r#"{"path": "a.txt"}"#, "--session", "u", "--auto"];
    for _ in 0..4 {
        assert_eq!(sandbox.run(&fresh).0, 0, "under the threshold");
    }
    assert_eq!(sandbox.run(&fresh).0, 3, "the fifth");
}

// ---- the prompt shows the file's diff and what is asked -------------------------------

#[test]
fn the_edit_prompt_shows_the_whole_file_diff_with_line_numbers() {
    let sandbox = Sandbox::new();
    sandbox.write("project/toolgate.json", r#"{"permission": {"edit": "ask"}}"#);
    let text: String = (1..=20).map(|n| format!("line {n}\n")).collect();
    sandbox.write("project/a.txt", &text);
    let input = r#"{"path": "a.txt", "oldString": "line 10", "newString": "line ten"}"#;
    let mut command = sandbox.command(&["call", "edit", input]);
    command.env("NO_COLOR", "1");
    let mut session = e2e::pty::Session::spawn(command).unwrap();
    let screen = session.expect("answer [o/s/a/r]:", Duration::from_secs(30)).unwrap();
    assert!(screen.contains("--- a.txt") && screen.contains("+++ a.txt"), "{screen}");
    assert!(
        screen.contains("@@ -7,7 +7,7 @@"),
        "file line numbers in the hunk: {screen}"
    );
    assert!(screen.contains("    7  line 7"), "three lines of context: {screen}");
    assert!(screen.contains("   10 -line 10"), "{screen}");
    assert!(screen.contains("   10 +line ten"), "{screen}");
    assert!(
        screen.contains("   13  line 13") && !screen.contains("line 14"),
        "{screen}"
    );
    session.send("r\r").unwrap();
    session.send("\r").unwrap();
    let (code, _) = session.finish(Duration::from_secs(30)).unwrap();
    assert_eq!(code, 3);
    assert_eq!(std::fs::read_to_string(sandbox.project().join("a.txt")).unwrap(), text);
}

#[test]
fn the_write_prompt_shows_what_is_overwritten() {
    let sandbox = Sandbox::new();
    sandbox.write("project/toolgate.json", r#"{"permission": {"edit": "ask"}}"#);
    sandbox.write("project/config.ini", "[server]\nport = 80\nhost = example\n");
    let input = r#"{"path": "config.ini", "content": "[server]\nport = 8080\nhost = example\n"}"#;
    let mut command = sandbox.command(&["call", "write", input]);
    command.env("NO_COLOR", "1");
    let mut session = e2e::pty::Session::spawn(command).unwrap();
    let screen = session.expect("answer [o/s/a/r]:", Duration::from_secs(30)).unwrap();
    assert!(screen.contains("    2 -port = 80"), "the old line: {screen}");
    assert!(screen.contains("    2 +port = 8080"), "{screen}");
    assert!(screen.contains("    1  [server]"), "{screen}");
    session.send("o\r").unwrap();
    let (code, screen) = session.finish(Duration::from_secs(30)).unwrap();
    assert_eq!(code, 0, "{screen}");
    assert!(
        std::fs::read_to_string(sandbox.project().join("config.ini"))
            .unwrap()
            .contains("8080")
    );
}

#[test]
fn the_bash_prompt_marks_allowed_parts_and_saves_only_the_asked_ones() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": {"*": "ask", "git status *": "allow", "echo *": "allow"}}}"#,
    );
    let input = r#"{"command": "git status --short; touch made && echo done"}"#;
    let mut command = sandbox.command(&["call", "bash", input]);
    command.env("NO_COLOR", "1");
    let mut session = e2e::pty::Session::spawn(command).unwrap();
    let screen = session.expect("answer [o/s/a/r]:", Duration::from_secs(30)).unwrap();
    assert!(
        screen.contains("✓ git status --short  (already allowed by a rule)"),
        "{screen}"
    );
    assert!(screen.contains("✓ echo done  (already allowed by a rule)"), "{screen}");
    assert!(screen.contains("• touch made"), "{screen}");
    assert!(screen.contains("allow always for the project: touch *"), "{screen}");
    assert!(
        !screen.contains("project: git status") && !screen.contains(", git status"),
        "{screen}"
    );
    session.send("a\r").unwrap();
    let (code, screen) = session.finish(Duration::from_secs(30)).unwrap();
    assert_eq!(code, 0, "{screen}");
    let (_, list, _) = sandbox.run(&["approvals", "list", "--json"]);
    let saved: Vec<String> = json_of(&list)
        .as_array()
        .unwrap()
        .iter()
        .map(|a| format!("{} {}", a["action"].as_str().unwrap(), a["resource"].as_str().unwrap()))
        .collect();
    assert_eq!(saved, ["bash touch *"]);
}
