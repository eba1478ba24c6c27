//! `toolgate import claude-code|codex|gemini`: each agent's documented examples
//! (`tests/fixtures/import/<agent>/`, every file citing its source) are imported into a
//! project's `toolgate.json`, and then `toolgate check` must give, for every documented
//! example command, the effect the agent documents (`checks.txt`). Also: the diff shown
//! before writing, the file's own rules and comments kept, and errors that write nothing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use e2e::Sandbox;
use serde_json::Value;

fn fixture(agent: &str, file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/import")
        .join(agent)
        .join(file)
}

/// `toolgate ARGS` with the sandbox's own home (no agent file of the machine is read).
fn run(sandbox: &Sandbox, args: &[&str]) -> (i32, String, String) {
    let home = sandbox.root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let output = sandbox
        .command(args)
        .env("HOME", &home)
        .env_remove("CODEX_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The effect `toolgate check` gives.
fn effect(sandbox: &Sandbox, action: &str, resource: &str) -> String {
    let (code, out, err) = run(sandbox, &["check", action, resource, "--json"]);
    assert_eq!(code, 0, "check {action} {resource}: {err}");
    let value: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    value["effect"].as_str().unwrap().to_string()
}

/// Every line of an agent's `checks.txt` (`effect action resource…`) holds.
fn assert_checks(sandbox: &Sandbox, agent: &str) {
    let text = std::fs::read_to_string(fixture(agent, "checks.txt")).unwrap();
    let parent = sandbox.project().parent().unwrap().to_string_lossy().into_owned();
    let mut failures = Vec::new();
    let mut count = 0;
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let mut words = line.splitn(3, ' ');
        let (want, action, resource) = (words.next().unwrap(), words.next().unwrap(), words.next().unwrap());
        let resource = resource.replace("{parent}", &parent);
        let got = effect(sandbox, action, &resource);
        count += 1;
        if got != want {
            failures.push(format!(
                "{action} {resource}: {agent} documents {want}, toolgate gives {got}"
            ));
        }
    }
    assert!(count >= 10, "{agent}: only {count} checks");
    let config = std::fs::read_to_string(sandbox.project().join("toolgate.json")).unwrap_or_default();
    assert!(failures.is_empty(), "{}\n\n{config}", failures.join("\n"));
}

#[test]
fn claude_code_settings_and_mcp_json_round_trip() {
    let sandbox = Sandbox::new();
    // Its own TMPDIR: the directory beside the project is then not the default-allowed
    // temporary directory, so only the imported additionalDirectories allows it.
    sandbox.own_temp_dir();
    std::fs::create_dir(sandbox.project().join(".claude")).unwrap();
    std::fs::copy(
        fixture("claude-code", "settings.json"),
        sandbox.project().join(".claude/settings.json"),
    )
    .unwrap();
    std::fs::copy(fixture("claude-code", "mcp.json"), sandbox.project().join(".mcp.json")).unwrap();
    // Without --write: the rules and the diff are shown, nothing is written.
    let (code, out, err) = run(&sandbox, &["import", "claude-code"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"resource\": \"git status *\""), "{out}");
    assert!(out.contains("+++ "), "a diff: {out}");
    assert!(!sandbox.project().join("toolgate.json").exists());
    let (code, out, err) = run(&sandbox, &["import", "claude-code", "--write"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("wrote "), "{out}");
    let written = std::fs::read_to_string(sandbox.project().join("toolgate.json")).unwrap();
    // The servers, in toolgate's form, with Claude Code's `${VAR}` as `{env:VAR}`.
    let value: Value = jsonc(&written);
    assert_eq!(value["mcp"]["puppeteer"]["command"][0], "npx", "{written}");
    assert_eq!(value["mcp"]["api-server"]["type"], "remote");
    assert_eq!(
        value["mcp"]["api-server"]["headers"]["Authorization"],
        "Bearer {env:API_KEY}"
    );
    assert!(
        written.contains("(.claude/settings.json") || written.contains("settings.json, allow)"),
        "origins are comments: {written}"
    );
    assert_checks(&sandbox, "claude-code");
}

#[test]
fn codex_rules_and_config_round_trip() {
    let sandbox = Sandbox::new();
    let rules = fixture("codex", "default.rules");
    let config = fixture("codex", "config.toml");
    let (code, out, err) = run(
        &sandbox,
        &[
            "import",
            "codex",
            "--from",
            rules.to_str().unwrap(),
            "--from",
            config.to_str().unwrap(),
            "--write",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("wrote "), "{out}");
    let written = std::fs::read_to_string(sandbox.project().join("toolgate.json")).unwrap();
    let value = jsonc(&written);
    assert_eq!(
        value["mcp"]["figma"]["headers"]["Authorization"],
        "Bearer {env:FIGMA_OAUTH_TOKEN}"
    );
    assert_eq!(
        value["mcp"]["context7"]["environment"]["CONTEXT7_API_KEY"],
        "{env:CONTEXT7_API_KEY}"
    );
    assert_eq!(value["mcp"]["old"]["enabled"], false);
    // The not_match examples and justifications are comments; approval_policy a note.
    assert!(
        written.contains("not_match examples (tests only): git status"),
        "{written}"
    );
    assert!(written.contains("never rewrite the remote"), "{written}");
    assert!(written.contains("approval_policy"), "{written}");
    assert_checks(&sandbox, "codex");
}

#[test]
fn codex_files_in_codex_home_are_found() {
    let sandbox = Sandbox::new();
    let home = sandbox.root.path().join("home");
    std::fs::create_dir_all(home.join(".codex/rules")).unwrap();
    std::fs::copy(
        fixture("codex", "default.rules"),
        home.join(".codex/rules/default.rules"),
    )
    .unwrap();
    let (code, out, err) = run(&sandbox, &["import", "codex"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("\"resource\": \"git push --force *\", \"effect\": \"deny\""),
        "{out}"
    );
}

#[test]
fn gemini_policies_and_settings_round_trip() {
    let sandbox = Sandbox::new();
    let home = sandbox.root.path().join("home");
    std::fs::create_dir_all(home.join(".gemini/policies")).unwrap();
    std::fs::copy(
        fixture("gemini", "policy.toml"),
        home.join(".gemini/policies/policy.toml"),
    )
    .unwrap();
    std::fs::copy(fixture("gemini", "settings.json"), home.join(".gemini/settings.json")).unwrap();
    let (code, out, err) = run(&sandbox, &["import", "gemini", "--write"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("wrote "), "{out}");
    // The regex that is no prefix and the rule for the yolo mode are said to be left out.
    assert!(err.contains("commandRegex"), "{err}");
    assert!(err.contains("yolo"), "{err}");
    let written = std::fs::read_to_string(sandbox.project().join("toolgate.json")).unwrap();
    let value = jsonc(&written);
    assert_eq!(value["mcp"]["docs"]["type"], "remote");
    assert_eq!(
        value["mcp"]["my-jira-server"]["environment"]["JIRA_TOKEN"],
        "{env:JIRA_TOKEN}"
    );
    assert_checks(&sandbox, "gemini");
}

/// A toolgate config file (JSONC: comments and trailing commas) as JSON.
fn jsonc(text: &str) -> Value {
    jsonc_parser::parse_to_serde_value(text, &Default::default()).unwrap_or_else(|e| panic!("{e}:\n{text}"))
}

#[test]
fn the_file_keeps_its_own_rules_and_comments_and_the_diff_shows_the_change() {
    let sandbox = Sandbox::new();
    let original = "{\n  // my own rules\n  \"permission\": {\"bash\": {\"cargo *\": \"allow\"}},\n  \"permissions\": [\n    {\"action\": \"read\", \"resource\": \"private/*\", \"effect\": \"deny\"}\n  ]\n}\n";
    std::fs::write(sandbox.project().join("toolgate.json"), original).unwrap();
    let rules = sandbox.root.path().join("r.rules");
    std::fs::write(&rules, "prefix_rule(pattern = [\"git\", \"status\"])\n").unwrap();
    let (code, out, err) = run(&sandbox, &["import", "codex", "--from", rules.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with('+') && l.contains("\"git status *\"")),
        "the diff adds the rule: {out}"
    );
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join("toolgate.json")).unwrap(),
        original,
        "nothing written without --write"
    );
    let (code, _, err) = run(
        &sandbox,
        &["import", "codex", "--from", rules.to_str().unwrap(), "--write"],
    );
    assert_eq!(code, 0, "{err}");
    let written = std::fs::read_to_string(sandbox.project().join("toolgate.json")).unwrap();
    assert!(written.starts_with("{\n  // my own rules\n"), "{written}");
    // The same import again adds nothing.
    let (code, out, err) = run(
        &sandbox,
        &["import", "codex", "--from", rules.to_str().unwrap(), "--write"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("unchanged"), "{out}");
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join("toolgate.json")).unwrap(),
        written
    );
    assert_eq!(
        effect(&sandbox, "read", "private/x"),
        "deny",
        "the file's own rule holds"
    );
    assert_eq!(effect(&sandbox, "bash", "git status"), "allow");
    // The file decides `bash` itself, so Codex's baseline ask is left out: its allow holds.
    assert_eq!(effect(&sandbox, "bash", "cargo build"), "allow");
}

#[test]
fn a_file_that_cannot_be_read_is_an_error_and_nothing_is_written() {
    let sandbox = Sandbox::new();
    let bad = sandbox.root.path().join("bad.rules");
    std::fs::write(&bad, "prefix_rule(pattern = [\"git\"])\nALLOWED = [\"ls\"]\n").unwrap();
    let (code, _, err) = run(
        &sandbox,
        &["import", "codex", "--from", bad.to_str().unwrap(), "--write"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad.rules:2"), "{err}");
    assert!(!sandbox.project().join("toolgate.json").exists());
    // A rule whose own examples fail is refused, as Codex refuses it.
    std::fs::write(
        &bad,
        "prefix_rule(pattern = [\"git\", \"status\"], match = [\"git log\"])\n",
    )
    .unwrap();
    let (code, _, err) = run(
        &sandbox,
        &["import", "codex", "--from", bad.to_str().unwrap(), "--write"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("match example"), "{err}");
    let toml = sandbox.root.path().join("policy.toml");
    std::fs::write(&toml, "[[rule]]\ntoolName = \"glob\"\ndecision = \"allow\"\n").unwrap();
    let (code, _, err) = run(
        &sandbox,
        &["import", "gemini", "--from", toml.to_str().unwrap(), "--write"],
    );
    assert_eq!(code, 2, "a rule without its priority: {err}");
    std::fs::write(sandbox.project().join("toolgate.json"), "[1]").unwrap();
    let rules = sandbox.root.path().join("ok.rules");
    std::fs::write(&rules, "prefix_rule(pattern = [\"ls\"])\n").unwrap();
    let (code, _, err) = run(
        &sandbox,
        &["import", "codex", "--from", rules.to_str().unwrap(), "--write"],
    );
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join("toolgate.json")).unwrap(),
        "[1]"
    );
}

#[test]
fn without_files_it_says_where_it_looked() {
    let sandbox = Sandbox::new();
    for agent in ["claude-code", "codex", "gemini"] {
        let (code, _, err) = run(&sandbox, &["import", agent]);
        assert_eq!(code, 2, "{agent}: {err}");
        assert!(err.contains("--from"), "{agent}: {err}");
    }
}

/// A file whose own rules decide `bash` keeps deciding where no imported rule matches:
/// the agent's baseline ask is left out (with a note), so what the person allowed before
/// is not asked again, while every imported rule holds on top; the same import again
/// changes nothing.
#[test]
fn the_files_own_rules_still_decide_where_no_imported_rule_matches() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": {"make *": "allow", "terraform *": "deny"}}}"#,
    );
    let rules = fixture("codex", "default.rules");
    let import = || {
        run(
            &sandbox,
            &["import", "codex", "--from", rules.to_str().unwrap(), "--write"],
        )
    };
    let (code, out, err) = import();
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("wrote "), "{out}");
    assert!(err.contains("baseline `bash *: ask` left out"), "{err}");
    let written = std::fs::read_to_string(sandbox.project().join("toolgate.json")).unwrap();
    assert!(!written.contains("Codex: no rule matched"), "{written}");
    // The file's own rules, where nothing imported matches.
    assert_eq!(effect(&sandbox, "bash", "make test"), "allow");
    assert_eq!(effect(&sandbox, "bash", "terraform apply"), "deny");
    // The imported ones, over them.
    assert_eq!(effect(&sandbox, "bash", "git status"), "allow");
    assert_eq!(effect(&sandbox, "bash", "git push origin main"), "ask");
    assert_eq!(effect(&sandbox, "bash", "rm -rf build"), "deny");
    assert_eq!(effect(&sandbox, "bash", "make test && sudo reboot"), "deny");
    // Again: nothing changes.
    let (code, out, err) = import();
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("unchanged"), "{out}");
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join("toolgate.json")).unwrap(),
        written
    );
}
