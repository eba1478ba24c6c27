//! Trust on first use for a project's config files, through the binary (README
//! "Configuration", "Trusted project files"): what a file found on the project walk may
//! change that starts programs or weakens the sandbox applies only once its exact content
//! is trusted (`toolgate trust`, a terminal's answer, `--trust-project`); its rules apply
//! either way; `{env:…}` in it never gives it toolgate's own secrets.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::Duration;

use e2e::Sandbox;
use serde_json::{Value, json};

/// A sandbox whose project is a git worktree (the walk stops there).
fn project() -> Sandbox {
    let sandbox = Sandbox::new();
    std::fs::create_dir(sandbox.project().join(".git")).unwrap();
    sandbox
}

/// A project `opencode.json` whose MCP server `x` creates `marker` when it is started.
fn marker_config(marker: &std::path::Path, extra: Value) -> String {
    let mut config = json!({
        "mcp": {"x": {"type": "local", "command": ["sh", "-c", format!("touch {}", marker.display())]}},
        "permission": {"bash": {"*": "allow", "rm *": "deny"}},
    });
    if let (Some(map), Value::Object(extra)) = (config.as_object_mut(), extra) {
        map.extend(extra);
    }
    config.to_string()
}

/// The lines of `stderr` that say what was ignored.
fn ignored_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|line| line.contains("ignored from untrusted"))
        .collect()
}

#[test]
fn an_mcp_server_of_a_project_file_starts_only_once_that_content_is_trusted() {
    let sandbox = project();
    let marker: PathBuf = sandbox.root.path().join("started");
    sandbox.write("project/opencode.json", &marker_config(&marker, json!({})));

    // Not trusted: not started, said in one line; the file's rules still apply.
    let (code, _, err) = sandbox.run(&["mcp", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(!marker.exists(), "an untrusted project's MCP server was started");
    assert_eq!(
        ignored_lines(&err),
        [
            "toolgate: ignored from untrusted ./opencode.json: mcp server \"x\"; run `toolgate trust` to apply them (or pass --trust-project)"
        ],
        "{err}"
    );
    let (code, out, _) = sandbox.run(&["check", "bash", "rm -rf build"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("bash: deny"), "{out}");
    let (_, out, _) = sandbox.run(&["config"]);
    assert!(
        out.contains("opencode.json  [untrusted: ignored until `toolgate trust`: mcp server \"x\"]"),
        "{out}"
    );

    // `toolgate trust` lists what it trusts; then the server starts, and nothing is ignored.
    let (code, out, err) = sandbox.run(&["trust"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("trusted ./opencode.json (sha256 "), "{out}");
    assert!(out.contains("  - start mcp server \"x\": {\"type\":\"local\""), "{out}");
    let (code, _, err) = sandbox.run(&["mcp", "list"]);
    assert_eq!(code, 0, "{err}");
    assert!(marker.exists(), "the trusted server was not started: {err}");
    assert!(ignored_lines(&err).is_empty(), "{err}");
    let (_, out, _) = sandbox.run(&["config", "--json"]);
    let config: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(config["sources"][0]["trust"]["state"], "trusted", "{out}");
    let (_, out, _) = sandbox.run(&["trust"]);
    assert_eq!(out.trim(), "already trusted: ./opencode.json");

    // A changed file is another content: not started again until trusted again.
    std::fs::remove_file(&marker).unwrap();
    let changed = marker_config(&marker, json!({"permission": {"bash": "allow"}}));
    sandbox.write("project/opencode.json", &changed);
    let (_, _, err) = sandbox.run(&["mcp", "list"]);
    assert!(!marker.exists(), "a changed file's server was started on the old trust");
    assert_eq!(ignored_lines(&err).len(), 1, "{err}");

    // Revoked: the same content is untrusted again.
    sandbox.run(&["trust"]);
    let (code, out, _) = sandbox.run(&["trust", "--revoke"]);
    assert_eq!((code, out.trim()), (0, "revoked the trust of 1 project file(s)"));
    let (_, _, err) = sandbox.run(&["mcp", "list"]);
    assert!(!marker.exists());
    assert_eq!(ignored_lines(&err).len(), 1, "{err}");
}

#[test]
fn a_sandbox_below_the_users_is_ignored_until_trusted_and_trust_project_applies_it_for_one_run() {
    let sandbox = project();
    sandbox.write(
        "config/toolgate.json",
        r#"{"sandbox": {"mode": "read-only", "required": true}}"#,
    );
    sandbox.write(
        "project/toolgate.json",
        r#"{"sandbox": {"mode": "off", "required": false, "enforce_exec": false}}"#,
    );
    let report = |args: &[&str]| {
        let mut all = vec!["config", "--json"];
        all.extend_from_slice(args);
        let (code, out, err) = sandbox.run(&all);
        assert_eq!(code, 0, "{err}");
        let value: Value = serde_json::from_str(&out).unwrap();
        (value["sandbox"].clone(), err)
    };
    let (held, err) = report(&[]);
    assert_eq!(held["mode"], "read-only", "{held}");
    assert_eq!(
        held["execEnforcement"]["on"].as_bool(),
        held["execEnforcement"]["available"].as_bool()
    );
    assert_eq!(
        ignored_lines(&err),
        [
            "toolgate: ignored from untrusted ./toolgate.json: sandbox.mode \"off\", sandbox.required false, sandbox.enforce_exec false; run `toolgate trust` to apply them (or pass --trust-project)"
        ],
        "{err}"
    );
    // `--trust-project`: applied for this run, nothing recorded.
    let (lowered, err) = report(&["--trust-project"]);
    assert_eq!(lowered["mode"], "off", "{lowered}");
    assert_eq!(lowered["execEnforcement"]["on"], false, "{lowered}");
    assert!(ignored_lines(&err).is_empty(), "{err}");
    assert_eq!(report(&[]).0["mode"], "read-only", "--trust-project recorded a trust");
    // Stricter than the user's applies without trust.
    sandbox.write(
        "project/toolgate.json",
        r#"{"sandbox": {"network": false, "required": true}}"#,
    );
    let (_, err) = report(&[]);
    assert!(ignored_lines(&err).is_empty(), "{err}");
    // Trusted: applied.
    sandbox.write("project/toolgate.json", r#"{"sandbox": {"mode": "off"}}"#);
    let (code, _, err) = sandbox.run(&["trust"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(report(&[]).0["mode"], "off");
}

#[test]
fn a_terminal_is_asked_once_at_startup_with_what_the_file_would_change() {
    let sandbox = project();
    sandbox.write(
        "project/opencode.json",
        r#"{"permission": {"bash": "allow"}, "shell_env": {"set": {"FROM_PROJECT": "set-by-project"}}}"#,
    );
    let input = r#"{"command": "echo value=$FROM_PROJECT"}"#;
    // Declined: the rules apply, `shell_env` does not.
    let mut command = sandbox.command(&["call", "bash", input]);
    command.env("NO_COLOR", "1");
    let mut session = e2e::pty::Session::spawn(command).unwrap();
    let screen = session.expect("[y/N]", Duration::from_secs(20)).unwrap();
    assert!(
        screen.contains("opencode.json asks for what only a trusted file may do"),
        "{screen}"
    );
    assert!(
        screen.contains(r#"- set shell_env.set to {"FROM_PROJECT":"set-by-project"}"#),
        "{screen}"
    );
    session.send("n\r").unwrap();
    let (code, screen) = session.finish(Duration::from_secs(20)).unwrap();
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains("value=\r\n") || screen.contains("value=\n"), "{screen}");
    assert!(screen.contains("ignored from untrusted"), "{screen}");

    // Accepted: applied now, and recorded for the runs without a terminal.
    let mut command = sandbox.command(&["call", "bash", input]);
    command.env("NO_COLOR", "1");
    let mut session = e2e::pty::Session::spawn(command).unwrap();
    session.expect("[y/N]", Duration::from_secs(20)).unwrap();
    session.send("y\r").unwrap();
    let (code, screen) = session.finish(Duration::from_secs(20)).unwrap();
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains("value=set-by-project"), "{screen}");
    let (code, out, err) = sandbox.run(&["call", "bash", input]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("value=set-by-project\n"), "{out}");
    assert!(ignored_lines(&err).is_empty(), "{err}");
}

#[test]
fn env_substitution_never_gives_a_project_file_toolgates_secrets() {
    let sandbox = project();
    let dump = sandbox.root.path().join("env.txt");
    let secret_dir = sandbox.root.path().join("secret");
    std::fs::create_dir(&secret_dir).unwrap();
    sandbox.write(
        "project/opencode.json",
        &json!({
            "mcp": {"x": {"type": "local", "command": ["sh", "-c", format!("env > {}", dump.display())],
                "environment": {"A": "{env:TOOLGATE_SERVER_TOKEN}", "B": "x{env:EXA_API_KEY}", "C": "{env:E2E_PLAIN}",
                    "D": "{env:PARALLEL_API_KEY}"}}},
            // OpenCode substitutes keys too: a rule's pattern may name a variable.
            "permission": {"read": {"{env:E2E_SECRET_DIR}/*": "deny"}},
        })
        .to_string(),
    );
    let mut command = sandbox.command(&["mcp", "list", "--trust-project"]);
    command
        .env("TOOLGATE_SERVER_TOKEN", "toolgate-token-0123456789abcdefghijkl")
        .env("EXA_API_KEY", "exa-key")
        .env("PARALLEL_API_KEY", "parallel-key")
        .env("E2E_PLAIN", "plain")
        .env("E2E_SECRET_DIR", &secret_dir);
    let output = command.output().unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    let env = std::fs::read_to_string(&dump).unwrap_or_else(|e| panic!("server not started ({e}): {err}"));
    for line in ["A=", "B=x", "C=plain", "D="] {
        assert!(env.lines().any(|l| l == line), "{line} missing: {env}");
    }
    assert!(!env.contains("exa-key") && !env.contains("toolgate-token") && !env.contains("parallel-key"));
    for (path, name) in [
        ("mcp.x.environment.A", "TOOLGATE_SERVER_TOKEN"),
        ("mcp.x.environment.B", "EXA_API_KEY"),
    ] {
        assert!(
            err.contains(&format!(
                "toolgate: warning: config {}: {path}: {{env:{name}}} is toolgate's own secret, never given to a project's config: left empty",
                sandbox.project().join("opencode.json").display()
            )),
            "{err}"
        );
    }
    let mut command = sandbox.command(&["check", "read", &format!("{}/key", secret_dir.display())]);
    command.env("E2E_SECRET_DIR", &secret_dir);
    let out = String::from_utf8_lossy(&command.output().unwrap().stdout).into_owned();
    assert!(out.starts_with("read: deny"), "{out}");

    // The user's own file may hand a key to a server of their choosing.
    std::fs::remove_file(sandbox.project().join("opencode.json")).unwrap();
    std::fs::remove_file(&dump).unwrap();
    sandbox.write(
        "config/toolgate.json",
        &json!({"mcp": {"x": {"type": "local", "command": ["sh", "-c", format!("env > {}", dump.display())],
            "environment": {"B": "{env:EXA_API_KEY}"}}}})
        .to_string(),
    );
    let mut command = sandbox.command(&["mcp", "list"]);
    command.env("EXA_API_KEY", "exa-key");
    let output = command.output().unwrap();
    let env =
        std::fs::read_to_string(&dump).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stderr)));
    assert!(env.lines().any(|l| l == "B=exa-key"), "{env}");
}

/// `{file:…}` through the binary: a project file's MCP server gets the project's own file
/// but never toolgate's (its data directory: the approval database, `trusted.json`), even
/// when the data directory lies inside the project; a missing file stops toolgate with a
/// configuration error naming the file and key path, exit 2 (spec §4.9: a config is read
/// whole or not at all).
#[test]
fn file_substitution_gives_a_project_file_its_own_files_never_toolgates() {
    let sandbox = project();
    let dump = sandbox.root.path().join("env.txt");
    sandbox.write("project/key.txt", "project-key\n");
    // The data directory inside the project, with a file toolgate keeps there.
    let mut command = sandbox.command(&["approvals", "list"]);
    command.env("TOOLGATE_DATA_DIR", sandbox.project().join(".data"));
    assert!(command.output().unwrap().status.success());
    let database = std::fs::read_dir(sandbox.project().join(".data"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.is_file())
        .expect("toolgate keeps a file in its data directory");
    let name = database.file_name().unwrap().to_string_lossy().into_owned();
    sandbox.write(
        "project/opencode.json",
        &json!({
            "mcp": {"x": {"type": "local", "command": ["sh", "-c", format!("env > {}", dump.display())],
                "environment": {"OWN": "{file:key.txt}", "DATA": format!("{{file:.data/{name}}}")}}},
        })
        .to_string(),
    );
    let mut command = sandbox.command(&["mcp", "list", "--trust-project"]);
    command.env("TOOLGATE_DATA_DIR", sandbox.project().join(".data"));
    let output = command.output().unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    let env = std::fs::read_to_string(&dump).unwrap_or_else(|e| panic!("server not started ({e}): {err}"));
    assert!(env.lines().any(|l| l == "OWN=project-key"), "{env}");
    assert!(env.lines().any(|l| l == "DATA="), "{env}");
    assert!(
        err.contains("mcp.x.environment.DATA: {file:.data/") && err.contains("is toolgate's own file"),
        "{err}"
    );

    // The file a config's `{file:…}` reads defines its values: an edit of it always asks
    // and "always" saves nothing for it, as for the config file itself.
    let mut command = sandbox.command(&["check", "edit", "key.txt", "--json"]);
    command.env("TOOLGATE_DATA_DIR", sandbox.project().join(".data"));
    let report: Value = serde_json::from_slice(&command.output().unwrap().stdout).unwrap();
    assert_eq!(report["resources"][0]["rule"]["origin"], "protected", "{report}");
    assert_eq!(report["save"], json!([]), "{report}");

    sandbox.write(
        "project/opencode.json",
        r#"{"permission": {"bash": {"{file:missing.txt}": "deny"}}}"#,
    );
    let (code, _, err) = sandbox.run(&["check", "bash", "ls"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "config {}: permission.bash[\"{{file:missing.txt}}\"]: bad file reference \"{{file:missing.txt}}\": {} does not exist",
            sandbox.project().join("opencode.json").display(),
            sandbox.project().join("missing.txt").display()
        )),
        "{err}"
    );
}
