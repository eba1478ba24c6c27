//! The `toolgate` binary, driven as a user would: every command, its flags and exit codes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use e2e::Sandbox;
use serde_json::{Value, json};

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|error| panic!("not JSON ({error}): {text}"))
}

#[test]
fn help_and_version() {
    let sandbox = Sandbox::new();
    let (code, out, _) = sandbox.run(&["--version"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("toolgate "));
    for command in ["tools", "call", "check", "config", "approvals"] {
        let (code, out, _) = sandbox.run(&[command, "--help"]);
        assert_eq!(code, 0, "{command}");
        assert!(out.contains("Examples:"), "{command} --help has no example:\n{out}");
    }
    let (code, _, err) = sandbox.run(&["frobnicate"]);
    assert_eq!(code, 2);
    assert!(err.contains("unrecognized subcommand"));
}

#[test]
fn tools_lists_the_catalog_with_visibility_applied() {
    let sandbox = Sandbox::new();
    let (code, out, _) = sandbox.run(&["tools"]);
    assert_eq!(code, 0);
    assert!(out.lines().any(|line| line.starts_with("bash ")), "{out}");
    let (_, out, _) = sandbox.run(&["tools", "--json"]);
    let list = json_of(&out);
    let bash = list.as_array().unwrap().iter().find(|t| t["name"] == "bash").unwrap();
    assert_eq!(bash["inputSchema"]["required"], json!(["command"]));
    // The explore agent denies bash wholly: it is not offered.
    let (_, out, _) = sandbox.run(&["tools", "--agent", "explore", "--json"]);
    assert!(!out.contains("\"bash\""), "{out}");
    let (code, _, err) = sandbox.run(&["tools", "--agent", "nobody"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown agent \"nobody\""), "{err}");
}

#[test]
fn headless_ask_is_declined_with_exit_3_and_nothing_runs() {
    let sandbox = Sandbox::new();
    sandbox.write("project/toolgate.json", r#"{"permission": {"bash": "ask"}}"#);
    let (code, out, err) = sandbox.run(&["call", "bash", r#"{"command": "touch made"}"#]);
    assert_eq!(code, 3, "{out}{err}");
    assert_eq!(
        err.trim(),
        "permission requested: bash (touch made); declined (no terminal; use --auto to approve)"
    );
    assert!(!sandbox.project().join("made").exists());
}

#[test]
fn auto_approves_asks_but_not_denies() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": {"*": "ask", "rm *": "deny"}}}"#,
    );
    let (code, out, err) = sandbox.run(&["call", "bash", r#"{"command": "echo hi > made.txt"}"#, "--auto"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Command exited with code 0."));
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join("made.txt")).unwrap(),
        "hi\n"
    );
    let (code, _, err) = sandbox.run(&["call", "bash", r#"{"command": "rm made.txt"}"#, "--auto"]);
    assert_eq!(code, 3);
    // Spec §4.6, named: the resource and the deciding rule with its file.
    assert!(
        err.trim()
            .starts_with(r#"Permission denied: bash "rm made.txt" by rule bash "rm *" deny ("#)
            && err.trim().ends_with("toolgate.json)"),
        "{err}"
    );
    assert!(sandbox.project().join("made.txt").exists());
}

#[test]
fn call_json_input_from_stdin_and_errors() {
    let sandbox = Sandbox::new();
    let (code, out, _) = sandbox.run(&["call", "bash", r#"{"command": "echo out"}"#, "--json"]);
    assert_eq!(code, 0);
    let settled = json_of(&out);
    assert_eq!(settled["result"]["type"], "text");
    assert_eq!(settled["output"]["structured"]["exit"], 0);
    assert_eq!(settled["outputPaths"], json!([]));

    let mut command = sandbox.command(&["call", "bash", "-"]);
    command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"command": "echo from-stdin"}"#)
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stdout).starts_with("from-stdin"));

    let (code, _, err) = sandbox.run(&["call", "bash", r#"{"cmd": "ls"}"#]);
    assert_eq!(code, 1, "a tool failure");
    assert!(err.contains("Invalid tool input: missing field `command`"), "{err}");
    let (code, _, err) = sandbox.run(&["call", "bash", "{oops"]);
    assert_eq!(code, 2);
    assert!(err.contains("the input is not valid JSON"), "{err}");
    let (code, _, err) = sandbox.run(&["call", "nope"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("unknown tool \"nope\" for agent build; available: read, write"),
        "{err}"
    );
}

#[test]
fn large_output_is_bounded_and_spilled() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        r#"{"tool_output": {"max_lines": 50, "max_bytes": 4000}}"#,
    );
    let (code, out, _) = sandbox.run(&["call", "bash", r#"{"command": "seq 1 10000"}"#, "--json"]);
    assert_eq!(code, 0);
    let settled = json_of(&out);
    let path = settled["outputPaths"][0].as_str().unwrap();
    assert!(path.starts_with(sandbox.data_dir().join("tool-output").to_str().unwrap()));
    let text = settled["result"]["value"].as_str().unwrap();
    assert!(text.lines().count() <= 50 && text.len() <= 4000, "{text}");
    assert!(std::fs::read_to_string(path).unwrap().contains("\n5000\n"));
}

#[test]
fn check_analyses_bash_like_the_tool() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": {"*": "ask", "ls *": "allow", "git status *": "allow", "echo *": "allow", "rm *": "deny"}}}"#,
    );
    let cases = [
        ("ls -la", "allow"),
        ("git status", "allow"),
        ("echo hi", "allow"),
        ("ls 'a;b'", "allow"),
        ("echo \"rm x\"", "allow"),
        ("git push", "ask"),
        ("rm -rf build", "deny"),
        ("git status && rm -rf build", "deny"),
        ("ls; rm x", "deny"),
        // Code no one can see stands for any command: with exec-time enforcement (on by
        // default) it is asked, since a denied program is still refused when it starts.
        ("ls | sh", "ask"),
        ("echo $(rm x)", "deny"),
        ("(rm x)", "deny"),
        ("env FOO=1 rm x", "deny"),
        ("sudo rm x", "deny"),
        ("xargs rm < files", "deny"),
        ("find . -exec rm {} \\;", "deny"),
        ("bash -c 'rm x'", "deny"),
        ("eval 'rm x'", "deny"),
        ("/bin/rm x", "deny"),
        ("\\rm x", "deny"),
        ("ls &&", "ask"),
        ("cat <(rm x)", "deny"),
        ("timeout 5 rm x", "deny"),
        ("python3 -c 'print(1)'", "ask"),
    ];
    for (command, expected) in cases {
        let (code, out, err) = sandbox.run(&["check", "bash", command, "--json"]);
        assert_eq!(code, 0, "{err}");
        let report = json_of(&out);
        assert_eq!(report["effect"], expected, "{command}: {out}");
    }
    // Without exec-time enforcement the analysis is the only wall: a deny rule that could
    // match what no one can see refuses the line before it runs.
    // (The user's own config: a project file turns it off only once trusted.)
    let unguarded = Sandbox::new();
    unguarded.write(
        "config/toolgate.json",
        r#"{"sandbox": {"enforce_exec": false}, "permission": {"bash": {"*": "ask", "ls *": "allow", "rm *": "deny"}}}"#,
    );
    for command in ["ls | sh", "ls &&", "python3 -c 'print(1)'", "eval \"$X\""] {
        let (_, out, _) = unguarded.run(&["check", "bash", command, "--json"]);
        assert_eq!(json_of(&out)["effect"], "deny", "{command}: {out}");
    }
    let (_, out, _) = sandbox.run(&["check", "bash", "git status && rm -rf build", "--json"]);
    let report = json_of(&out);
    assert_eq!(report["action"], "bash");
    assert_eq!(report["resources"][1]["resource"], "rm -rf build");
    let project_config = std::fs::canonicalize(sandbox.project()).unwrap().join("toolgate.json");
    assert_eq!(
        report["resources"][1]["rule"],
        json!({"action": "bash", "resource": "rm *", "effect": "deny", "origin": "user_config",
               "source": project_config.display().to_string()})
    );
    // `git status` is already allowed: "always" would save only the other part's pattern.
    assert_eq!(report["save"], json!(["rm *"]));
    assert_eq!(
        report["resources"][0]["savePattern"], "git status *",
        "each sub-command with its save pattern"
    );
    assert_eq!(report["resources"][1]["savePattern"], "rm *");
    let (_, out, _) = sandbox.run(&["check", "bash", "cat .env"]);
    assert!(out.contains("also asks read: ask"), "{out}");
    assert!(out.contains("read \"*.env\" ask — defaults"), "{out}");
}

#[test]
fn check_shows_holes_and_opaque_parts_with_the_reason() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": {"*": "ask", "echo *": "allow", "rm *": "deny"}}}"#,
    );
    let (_, out, _) = sandbox.run(&["check", "bash", "echo $HOME", "--json"]);
    let report = json_of(&out);
    assert_eq!(report["effect"], "allow", "{out}");
    assert_eq!(report["resources"][0]["holes"], json!(["$HOME"]), "{out}");
    let (_, out, _) = sandbox.run(&["check", "bash", "eval \"$X\"", "--json"]);
    let report = json_of(&out);
    // Asked, not refused: the exec guard holds `rm *` when the program starts.
    assert_eq!(report["effect"], "ask", "{out}");
    assert_eq!(report["resources"][0]["opaque"], true, "{out}");
    assert_eq!(report["resources"][0]["saveable"], false, "{out}");
    assert!(
        report["resources"][0]["why"].as_str().unwrap().contains("eval"),
        "{out}"
    );
    let (_, out, _) = sandbox.run(&["check", "bash", "echo $((x))"]);
    assert!(
        out.contains("not analysed, the whole line stands for any command"),
        "{out}"
    );
    assert!(out.contains("arithmetic"), "{out}");
    let (_, out, _) = sandbox.run(&["check", "bash", "echo \"$X\" | node"]);
    assert!(
        out.contains("opaque, any command: `node` without a script runs code from its input; never saved"),
        "{out}"
    );
    assert!(out.contains("known only when it runs: $X"), "{out}");
}

#[test]
fn check_other_actions_and_agents() {
    let sandbox = Sandbox::new();
    let (_, out, _) = sandbox.run(&["check", "read", ".env", "src/main.rs", "--json"]);
    let report = json_of(&out);
    assert_eq!(report["effect"], "ask");
    assert_eq!(report["resources"][0]["rule"]["origin"], "defaults");
    assert_eq!(report["resources"][1]["effect"], "allow");
    let (_, out, _) = sandbox.run(&["check", "edit", "src/main.rs", "--agent", "plan", "--json"]);
    assert_eq!(json_of(&out)["effect"], "deny");
    let (_, out, _) = sandbox.run(&["check", "edit", ".opencode/plans/p.md", "--agent", "plan", "--json"]);
    assert_eq!(json_of(&out)["effect"], "allow");
}

#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    // `toolgate check … --json | head -1`: the reader is gone before the command writes.
    // A Unix filter then stops quietly; `println!` used to panic with exit 101.
    let sandbox = Sandbox::new();
    for args in [
        &["check", "bash", "ls; cat notes.txt", "--json"][..],
        &["tools"][..],
        &["config"][..],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let output = sandbox
            .command(args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&output.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(output.status.code(), Some(0), "{args:?}: {err}");
        // Precondition: the same command with a reader prints something.
        let (code, out, _) = sandbox.run(args);
        assert_eq!(code, 0);
        assert!(
            !out.is_empty(),
            "{args:?} printed nothing, so the pipe was never written"
        );
    }
}

fn bash_effect(sandbox: &Sandbox, command: &str, extra: &[&str]) -> String {
    let mut args = vec!["check", "bash", command, "--json"];
    args.extend_from_slice(extra);
    let (code, out, err) = sandbox.run(&args);
    assert_eq!(code, 0, "{err}");
    json_of(&out)["effect"].as_str().unwrap().to_string()
}

#[test]
fn config_precedence_global_project_file_env() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "config/toolgate.json",
        r#"{"permission": {"bash": {"make *": "deny", "npm *": "deny", "go *": "deny"}}}"#,
    );
    assert_eq!(bash_effect(&sandbox, "make", &[]), "deny");
    sandbox.write(
        "project/toolgate.jsonc",
        "// project rules\n{\"permission\": {\"bash\": {\"make *\": \"allow\",},},}\n",
    );
    assert_eq!(bash_effect(&sandbox, "make", &[]), "allow", "project over global");
    assert_eq!(bash_effect(&sandbox, "npm test", &[]), "deny", "global still applies");
    // `npm` and `go` also write their caches in the home (`external_directory`): allowed
    // here, so the effect is the bash rule's.
    sandbox.write(
        "extra.json",
        r#"{"permission": {"bash": {"npm *": "allow"}, "external_directory": "allow"}}"#,
    );
    let extra = sandbox.root.path().join("extra.json");
    assert_eq!(
        bash_effect(&sandbox, "npm test", &["--config", extra.to_str().unwrap()]),
        "allow",
        "--config over project"
    );
    let mut command = sandbox.command(&["check", "bash", "go build", "--json"]);
    command.env(
        "TOOLGATE_PERMISSION",
        r#"{"bash": {"go *": "allow"}, "external_directory": "allow"}"#,
    );
    let output = command.output().unwrap();
    assert_eq!(
        json_of(&String::from_utf8_lossy(&output.stdout))["effect"],
        "allow",
        "env over everything"
    );
    let (_, out, _) = sandbox.run(&["config"]);
    assert!(out.contains("config files:"), "{out}");
    assert!(out.contains("user config"), "{out}");
}

/// `check bash --json` of `command` with `HOME` at `home`: the effect and the
/// `external_directory` resources asked.
fn with_home(sandbox: &Sandbox, home: &std::path::Path, command: &str) -> (String, Vec<String>) {
    let output = sandbox
        .command(&["check", "bash", command, "--json"])
        .env("HOME", home)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let json = json_of(&String::from_utf8_lossy(&output.stdout));
    let external = json["also"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|request| request["action"] == "external_directory")
        .flat_map(|request| request["resources"].as_array().cloned().unwrap_or_default())
        .filter_map(|resource| resource["resource"].as_str().map(str::to_string))
        .collect();
    (json["effect"].as_str().unwrap().to_string(), external)
}

#[test]
fn package_managers_write_their_caches_in_the_home_which_the_defaults_allow_and_a_rule_can_deny() {
    // `npm run build` writes `~/.npm/_logs` even when the script does nothing (the shell
    // oracle saw it): the defaults allow the package managers' own directories like the
    // spill directory (§4.4's external_directory defaults, widened as README says), and a
    // user's rule still decides them.
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": {"npm *": "allow", "cargo *": "allow"}}}"#,
    );
    let home = sandbox.root.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let home = std::fs::canonicalize(&home).unwrap();
    let h = home.display();
    // No `~/.npm` yet: npm creates it, and the default allows that too.
    assert_eq!(
        with_home(&sandbox, &home, "npm run build"),
        ("allow".to_string(), vec![format!("{h}/.npm/*")])
    );
    std::fs::create_dir(home.join(".npm")).unwrap();
    assert_eq!(
        with_home(&sandbox, &home, "npm run build"),
        ("allow".to_string(), vec![format!("{h}/.npm/*")])
    );
    std::fs::create_dir(home.join(".cargo")).unwrap();
    assert_eq!(
        with_home(&sandbox, &home, "cargo build --release"),
        (
            "allow".to_string(),
            vec![format!("{h}/.cargo/*"), format!("{h}/.rustup/*")]
        )
    );
    // A bare version query writes nothing.
    assert_eq!(
        with_home(&sandbox, &home, "npm --version"),
        ("allow".to_string(), Vec::new())
    );
    // Moving the cache elsewhere is not modelled: asked as a whole.
    let (effect, _) = with_home(&sandbox, &home, "npm_config_cache=/srv/c npm run build");
    assert_eq!(effect, "ask");
    // A user's rule comes after the defaults and wins.
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": {"npm *": "allow"}, "external_directory": {"~/.npm/*": "deny"}}}"#,
    );
    assert_eq!(
        with_home(&sandbox, &home, "npm run build"),
        ("deny".to_string(), vec![format!("{h}/.npm/*")])
    );
}

#[test]
fn opencode_json_is_honoured_when_there_is_no_toolgate_config() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/opencode.json",
        r#"{"$schema": "https://opencode.ai/config.json", "model": "x/y", "permission": {"bash": {"*": "ask", "rm *": "deny"}}}"#,
    );
    assert_eq!(bash_effect(&sandbox, "rm x", &[]), "deny");
    sandbox.write("project/toolgate.json", r#"{"permission": {"bash": "allow"}}"#);
    assert_eq!(
        bash_effect(&sandbox, "rm x", &[]),
        "allow",
        "a toolgate config takes the place of opencode.json"
    );
}

#[test]
fn malformed_config_names_file_and_key_path() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": {"rm *": "never"}}}"#,
    );
    let (code, _, err) = sandbox.run(&["check", "bash", "ls"]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(
            "toolgate.json: permission.bash[\"rm *\"]: expected \"allow\", \"ask\", \"deny\" or \"audit\", found \"never\""
        ),
        "{err}"
    );
    sandbox.write("project/toolgate.json", r#"{"tool_output": {"max_lines": -1}}"#);
    let (code, _, err) = sandbox.run(&["tools"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("tool_output.max_lines: expected a positive integer, found -1"),
        "{err}"
    );
    sandbox.write("project/toolgate.json", "{ not json");
    let (code, _, err) = sandbox.run(&["config"]);
    assert_eq!(code, 2);
    assert!(err.contains("is not valid JSONC"), "{err}");
}

#[test]
fn always_on_a_terminal_is_saved_listed_and_honoured_after_restart() {
    let sandbox = Sandbox::new();
    sandbox.write("project/toolgate.json", r#"{"permission": {"bash": "ask"}}"#);
    let mut command = sandbox.command(&["call", "bash", r#"{"command": "echo first && git --version"}"#]);
    command.env("NO_COLOR", "1");
    let mut session = e2e::pty::Session::spawn(command).unwrap();
    let screen = session.expect("answer [o/s/a/r]:", Duration::from_secs(20)).unwrap();
    assert!(screen.contains("$ echo first && git --version"), "{screen}");
    assert!(
        screen.contains("allow always for the project: echo *, git --version *"),
        "{screen}"
    );
    session.send("a\r").unwrap();
    let (code, screen) = session.finish(Duration::from_secs(20)).unwrap();
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains("first"), "{screen}");

    let (_, out, _) = sandbox.run(&["approvals", "list", "--json"]);
    let approvals = json_of(&out);
    let saved: Vec<&str> = approvals
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["resource"].as_str().unwrap())
        .collect();
    assert_eq!(saved, ["echo *", "git --version *"]);

    // A new process, no terminal: the saved approval answers.
    let (code, out, err) = sandbox.run(&["call", "bash", r#"{"command": "echo again"}"#]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("again"));

    let id = approvals[0]["id"].as_str().unwrap();
    let (code, out, _) = sandbox.run(&["approvals", "remove", id]);
    assert_eq!(code, 0);
    assert!(out.contains(id));
    let (code, _, err) = sandbox.run(&["approvals", "remove", id]);
    assert_eq!(code, 2);
    assert!(err.contains("approvals list"), "{err}");
    let (code, _, _) = sandbox.run(&["call", "bash", r#"{"command": "echo again"}"#]);
    assert_eq!(code, 3, "the removed approval no longer answers");
    let (code, out, _) = sandbox.run(&["approvals", "clear"]);
    assert_eq!(code, 0);
    assert!(out.contains("removed 1 approval"), "{out}");
}

#[test]
fn reject_with_feedback_on_a_terminal() {
    let sandbox = Sandbox::new();
    sandbox.write("project/toolgate.json", r#"{"permission": {"bash": "ask"}}"#);
    let mut command = sandbox.command(&["call", "bash", r#"{"command": "touch nope"}"#]);
    command.env("NO_COLOR", "1");
    let mut session = e2e::pty::Session::spawn(command).unwrap();
    session.expect("answer [o/s/a/r]:", Duration::from_secs(20)).unwrap();
    session.send("r\r").unwrap();
    session
        .expect("feedback for the model", Duration::from_secs(10))
        .unwrap();
    session.send("use mktemp\r").unwrap();
    let (code, screen) = session.finish(Duration::from_secs(20)).unwrap();
    assert_eq!(code, 3, "{screen}");
    assert!(screen.contains("with the following feedback: use mktemp"), "{screen}");
    assert!(!sandbox.project().join("nope").exists());
}

#[test]
fn todowrite_keeps_the_session_list() {
    let sandbox = Sandbox::new();
    let input = r#"{"todos": [{"content": "plan", "status": "completed", "priority": "high"}, {"content": "build", "status": "in_progress", "priority": "medium"}]}"#;
    let (code, out, err) = sandbox.run(&["call", "todowrite", input, "--session", "ses_todo"]);
    assert_eq!(code, 0, "{err}");
    let shown: Value = json_of(&out);
    assert_eq!(shown[1]["content"], "build");
    let (code, _, err) = sandbox.run(&[
        "call",
        "todowrite",
        r#"{"todos": [{"content": "x", "status": "later", "priority": "high"}]}"#,
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("unknown variant `later`"), "{err}");
}

const QUESTION: &str = r#"{"questions": [{"question": "Which database?", "header": "DB", "options": [{"label": "SQLite", "description": "embedded"}, {"label": "Postgres", "description": "a server"}]}]}"#;

#[test]
fn question_is_answered_on_the_terminal() {
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&["call", "question", QUESTION]);
    command.env("NO_COLOR", "1");
    let mut session = e2e::pty::Session::spawn(command).unwrap();
    let screen = session.expect("Enter to skip", Duration::from_secs(20)).unwrap();
    assert!(
        screen.contains("[DB] Which database?") && screen.contains("2. Postgres — a server"),
        "{screen}"
    );
    session.send("2\r").unwrap();
    let (code, screen) = session.finish(Duration::from_secs(20)).unwrap();
    assert_eq!(code, 0, "{screen}");
    assert!(
        screen.contains("User has answered your questions: \"Which database?\"=\"Postgres\""),
        "{screen}"
    );
}

#[test]
fn question_without_a_terminal_or_allowed_by_rules() {
    let sandbox = Sandbox::new();
    let (code, _, err) = sandbox.run(&["call", "question", QUESTION]);
    assert_eq!(code, 3, "nobody can answer: dismissed like a declined permission");
    assert!(err.contains("dismissed"), "{err}");
    // Subagents deny question wholly: it is not even offered.
    let (code, _, err) = sandbox.run(&["call", "question", QUESTION, "--agent", "general"]);
    assert_eq!(code, 2);
    // Spec §2.4: hidden by a deny, and said to be denied (by which rule), not unknown.
    assert!(
        err.contains("Permission denied: tool question for agent general by rule question \"*\" deny"),
        "{err}"
    );
    // A rule that denies it without hiding it.
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"question": {"*": "deny", "never": "allow"}}}"#,
    );
    let (code, _, err) = sandbox.run(&["call", "question", QUESTION]);
    assert_eq!(code, 3);
    assert_eq!(err.trim(), "Permission denied: question");
}

#[test]
fn audit_tail_shows_decisions_and_settlements() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": {"*": "ask", "echo *": "allow", "rm *": "deny"}}}"#,
    );
    sandbox.run(&["call", "bash", r#"{"command": "echo hi"}"#]);
    sandbox.run(&["call", "bash", r#"{"command": "rm x"}"#]);
    sandbox.run(&["call", "bash", r#"{"command": "make"}"#, "--auto"]);
    let (code, out, _) = sandbox.run(&["audit", "tail", "-n", "20", "--json"]);
    assert_eq!(code, 0);
    let entries: Vec<Value> = out.lines().map(json_of).collect();
    let decisions: Vec<&Value> = entries
        .iter()
        .filter(|e| e["kind"] == "decision" && e["action"] == "bash")
        .collect();
    assert_eq!(decisions.len(), 3, "{out}");
    // `make` reads its makefile (the first of these that exists), decided as `read`.
    let reads: Vec<&Value> = entries
        .iter()
        .filter(|e| e["kind"] == "decision" && e["action"] == "read")
        .collect();
    assert_eq!(reads.len(), 1, "{out}");
    assert_eq!(reads[0]["resources"], json!(["GNUmakefile", "makefile", "Makefile"]));
    assert_eq!(decisions[0]["effect"], "allow");
    assert_eq!(decisions[0]["tool"], "bash");
    assert_eq!(decisions[0]["rule"]["resource"], "echo *");
    assert_eq!(decisions[1]["effect"], "deny");
    assert_eq!(decisions[2]["reply"], "auto");
    assert_eq!(entries.iter().filter(|e| e["kind"] == "settled").count(), 3);
    let (_, out, _) = sandbox.run(&["audit", "tail", "-n", "1"]);
    assert_eq!(out.lines().count(), 1);
    assert!(out.contains("settled"), "{out}");
}

#[test]
fn every_builtin_through_the_binary() {
    let sandbox = Sandbox::new();
    sandbox.write("project/src/lib.rs", "pub fn alpha() {}\n");
    sandbox.write(
        "project/.toolgate/skills/hello/SKILL.md",
        "---\nname: hello\ndescription: Greets\n---\nSay hello.\n",
    );
    let run = |tool: &str, input: Value| {
        let (code, out, err) = sandbox.run(&["call", tool, &input.to_string(), "--auto"]);
        assert_eq!(code, 0, "{tool}: {err}");
        out
    };
    assert!(
        run("read", json!({"path": "src/lib.rs"})).starts_with("Read file src/lib.rs, lines 1-1\n1: pub fn alpha() {}")
    );
    assert!(
        run("write", json!({"path": "notes.md", "content": "one\n"}))
            .starts_with("Created file successfully: notes.md")
    );
    assert!(
        run(
            "edit",
            json!({"path": "notes.md", "oldString": "one", "newString": "two"})
        )
        .starts_with("Edited file successfully: notes.md")
    );
    let patch = "*** Begin Patch\n*** Update File: notes.md\n@@\n-two\n+three\n*** End Patch";
    assert!(
        run("apply_patch", json!({"patchText": patch}))
            .starts_with("Success. Updated the following files:\nM notes.md")
    );
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join("notes.md")).unwrap(),
        "three\n"
    );
    assert!(
        run("glob", json!({"pattern": "*.rs"}))
            .trim_end()
            .ends_with("src/lib.rs")
    );
    assert!(run("grep", json!({"pattern": "alpha"})).starts_with("Found 1 matches"));
    assert!(run("skill", json!({"name": "hello"})).contains("Say hello."));
    assert!(run("bash", json!({"command": "ls src"})).starts_with("lib.rs"));
    let (code, out, _) = sandbox.run(&["tools", "--json"]);
    assert_eq!(code, 0);
    let names: Vec<String> = json_of(&out)
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "read",
            "write",
            "edit",
            "apply_patch",
            "glob",
            "grep",
            "skill",
            "webfetch",
            "websearch",
            "bash",
            "shell_list",
            "shell_output",
            "shell_write",
            "shell_kill",
            "todowrite",
            "question"
        ]
    );
}

#[test]
fn edit_prompt_shows_the_diff_and_a_headless_edit_changes_nothing() {
    let sandbox = Sandbox::new();
    sandbox.write("project/toolgate.json", r#"{"permission": {"edit": "ask"}}"#);
    sandbox.write("project/a.txt", "old line\n");
    let input = r#"{"path": "a.txt", "oldString": "old line", "newString": "new line"}"#;
    let (code, _, err) = sandbox.run(&["call", "edit", input]);
    assert_eq!(code, 3, "{err}");
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join("a.txt")).unwrap(),
        "old line\n"
    );
    let mut command = sandbox.command(&["call", "edit", input]);
    command.env("NO_COLOR", "1");
    let mut session = e2e::pty::Session::spawn(command).unwrap();
    let screen = session.expect("answer [o/s/a/r]:", Duration::from_secs(20)).unwrap();
    assert!(screen.contains("-old line") && screen.contains("+new line"), "{screen}");
    session.send("o\r").unwrap();
    let (code, screen) = session.finish(Duration::from_secs(20)).unwrap();
    assert_eq!(code, 0, "{screen}");
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join("a.txt")).unwrap(),
        "new line\n"
    );
}

#[test]
fn dir_flag_and_config_json() {
    let sandbox = Sandbox::new();
    let elsewhere = sandbox.root.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::fs::write(
        elsewhere.join("toolgate.json"),
        r#"{"permission": {"bash": {"make *": "deny"}}}"#,
    )
    .unwrap();
    std::fs::write(elsewhere.join("here.txt"), "from elsewhere\n").unwrap();
    let dir = elsewhere.to_str().unwrap();
    let (_, out, _) = sandbox.run(&["check", "bash", "make", "--dir", dir, "--json"]);
    assert_eq!(json_of(&out)["effect"], "deny", "the rules of --dir apply");
    let (code, out, err) = sandbox.run(&["call", "read", r#"{"path": "here.txt"}"#, "--dir", dir]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1: from elsewhere"), "{out}");
    let (code, out, _) = sandbox.run(&["config", "--dir", dir, "--agent", "plan", "--json"]);
    assert_eq!(code, 0);
    let config = json_of(&out);
    assert_eq!(config["agent"], "plan");
    let rules = config["rules"].as_array().unwrap();
    assert_eq!(
        rules[0],
        json!({"action": "*", "resource": "*", "effect": "allow", "origin": "defaults"})
    );
    assert!(
        rules
            .iter()
            .any(|r| r["resource"] == "make *" && r["origin"] == "user_config")
    );
    let (code, _, err) = sandbox.run(&["tools", "--dir", "/definitely/not/here"]);
    assert_eq!(code, 2);
    assert!(err.contains("not a directory"), "{err}");
}

/// Serves one fixed HTML page on 127.0.0.1 from a thread; returns its URL.
fn one_page_server() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            let body = "<html><body><h1>Local docs</h1><p>Hello <em>there</em>.</p></body></html>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{address}/docs")
}

#[test]
fn webfetch_refuses_the_local_network_unless_configured() {
    let sandbox = Sandbox::new();
    let url = one_page_server();
    let input = json!({"url": url}).to_string();
    let (code, _, err) = sandbox.run(&["call", "webfetch", &input, "--auto"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("refused to connect to 127.0.0.1: it resolves to 127.0.0.1, a loopback address"),
        "{err}"
    );
    sandbox.write(
        "project/toolgate.json",
        r#"{"webfetch": {"allow_private_network": true}}"#,
    );
    let (code, out, err) = sandbox.run(&["call", "webfetch", &input, "--auto"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("# Local docs") && out.contains("Hello *there*."), "{out}");
    sandbox.write(
        "project/toolgate.json",
        r#"{"webfetch": {"allowed_hosts": "127.0.0.1"}}"#,
    );
    let (code, _, err) = sandbox.run(&["call", "webfetch", &input, "--auto"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("webfetch.allowed_hosts: expected a list of host names"),
        "{err}"
    );
}

/// A read no rule asks about opens no database (a cold `call` stays fast), and every call is on record once.
#[test]
fn a_plain_read_opens_no_database_and_is_audited_once() {
    let sandbox = Sandbox::new();
    sandbox.write("project/small.txt", "hello\n");
    let (code, out, err) = sandbox.run(&["call", "read", r#"{"path": "small.txt"}"#]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("hello"), "{out}");
    assert!(
        !sandbox.data_dir().join("toolgate.db").exists(),
        "the read opened SQLite"
    );
    let audit = std::fs::read_to_string(sandbox.data_dir().join("audit.jsonl")).unwrap();
    let kinds: Vec<String> = audit
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["kind"].to_string())
        .collect();
    assert_eq!(kinds, ["\"decision\"", "\"settled\""]);
    // An ask does consult saved approvals: the database appears when it matters.
    let (code, _, _) = sandbox.run(&["call", "read", r#"{"path": ".env"}"#]);
    assert_eq!(code, 3);
    assert!(sandbox.data_dir().join("toolgate.db").exists());
}

/// Runs `toolgate ARGS` with descriptor 7 open on `secret` and not close-on-exec, as a
/// careless parent (an agent harness) would leave it: (exit code, stdout, stderr).
fn with_inherited_fd_7(sandbox: &Sandbox, secret: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let output = std::process::Command::new("bash")
        .arg("-c")
        .arg(r#"exec 7<"$SECRET"; exec "$@""#)
        .arg("bash")
        .arg(e2e::toolgate_binary())
        .args(args)
        .current_dir(sandbox.project())
        .env("SECRET", secret)
        .env("TOOLGATE_DATA_DIR", sandbox.data_dir())
        .env("TOOLGATE_CONFIG_DIR", sandbox.config_dir())
        .env_remove("TOOLGATE_PERMISSION")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_descriptor_the_parent_left_open_never_reaches_a_command() {
    let sandbox = Sandbox::new();
    sandbox.write("project/toolgate.json", r#"{"permission": {"bash": "allow"}}"#);
    let secret = sandbox.root.path().join("secret");
    std::fs::write(&secret, "the harness's secret\n").unwrap();
    // Precondition: the wrapper really hands descriptor 7 on through exec.
    let direct = std::process::Command::new("bash")
        .arg("-c")
        .arg(r#"exec 7<"$SECRET"; exec bash -c 'cat <&7'"#)
        .env("SECRET", &secret)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&direct.stdout), "the harness's secret\n");

    let input = json!({"command": "cat <&7; echo \"cat: $?\""}).to_string();
    let (code, out, err) = with_inherited_fd_7(&sandbox, &secret, &["call", "bash", &input, "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let output = json_of(&out)["result"]["value"].as_str().unwrap().to_string();
    assert!(
        !output.contains("secret"),
        "the command read the parent's descriptor: {output}"
    );
    assert!(output.contains("Bad file descriptor"), "{output}");
    assert!(output.contains("cat: 1"), "{output}");
}
