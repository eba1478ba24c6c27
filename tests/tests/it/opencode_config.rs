//! OpenCode's config as OpenCode reads it, through the binary (spec §4.9, §4.10): the
//! examples of OpenCode's own docs (`crates/config/tests/fixtures/opencode`, with the
//! decisions their README expects), both formats and vocabularies, OpenCode's discovery
//! (upward to the worktree root, `.opencode/`, the global directory, `OPENCODE_CONFIG`,
//! Markdown agents, managed files), unknown keys and misspelt rules keys.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use e2e::Sandbox;
use serde_json::Value;

/// The text of a fixture copied from OpenCode's docs.
fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/config/tests/fixtures/opencode")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// A sandbox whose project is a git worktree (so the upward walk stops there).
fn project() -> Sandbox {
    let sandbox = Sandbox::new();
    std::fs::create_dir(sandbox.project().join(".git")).unwrap();
    sandbox
}

/// `toolgate check ACTION RESOURCE --json` for `agent` (none: the default): for a bash
/// line, the effect of the line's own command (not of the reads and writes it also
/// asks); otherwise the effect.
fn decide_with(sandbox: &Sandbox, agent: Option<&str>, action: &str, resource: &str, env: &[(&str, &str)]) -> String {
    let mut args = vec!["check", action, resource, "--json"];
    if let Some(agent) = agent {
        args.extend(["--agent", agent]);
    }
    let mut command = sandbox.command(&args);
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{action} {resource}: {stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    if matches!(action, "bash" | "shell")
        && let Some(own) = report["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["resource"] == resource)
    {
        return own["effect"].as_str().unwrap().to_string();
    }
    report["effect"].as_str().unwrap().to_string()
}

fn decide(sandbox: &Sandbox, agent: Option<&str>, action: &str, resource: &str) -> String {
    decide_with(sandbox, agent, action, resource, &[])
}

/// Installs each fixture at its place and checks every expected decision:
/// `(fixture, where, [(agent, action, resource, effect)])`.
type Case<'a> = (&'a str, &'a str, &'a [(Option<&'a str>, &'a str, &'a str, &'a str)]);

fn check_cases(cases: &[Case<'_>]) {
    for (name, place, expected) in cases {
        let sandbox = project();
        sandbox.write(place, &fixture(name));
        sandbox.write("project/prompts/build.txt", &fixture("prompts/build.txt"));
        for (agent, action, resource, effect) in *expected {
            assert_eq!(
                decide(&sandbox, *agent, action, resource),
                *effect,
                "{name} at {place}: {agent:?} {action} {resource:?}"
            );
        }
    }
}

const BUILD: Option<&str> = None;

/// The V1 docs' "Permissions" page (fixtures README rows 1–7); "+defaults" where it differs.
#[test]
fn v1_permissions_page_examples_decide_as_documented() {
    check_cases(&[
        (
            "v1-permissions__global-star-override.json",
            "project/opencode.json",
            &[
                (BUILD, "bash", "ls -la", "allow"),
                (BUILD, "edit", "src/a.ts", "deny"),
                (BUILD, "read", "README.md", "ask"),
                (BUILD, "webfetch", "https://x.dev", "ask"),
            ],
        ),
        (
            "v1-permissions__string-shorthand.json",
            "project/opencode.json",
            &[
                (BUILD, "bash", "rm -rf /", "allow"),
                (BUILD, "edit", "x", "allow"),
                (Some("plan"), "edit", "src/a.ts", "allow"),
            ],
        ),
        (
            "v1-permissions__granular-object.json",
            "project/opencode.json",
            &[
                (BUILD, "bash", "git status", "allow"),
                (BUILD, "bash", "git", "allow"),
                (BUILD, "bash", "npm install", "allow"),
                (BUILD, "bash", "rm -rf build", "deny"),
                (BUILD, "bash", "curl example.com", "ask"),
                (BUILD, "edit", "packages/web/src/content/docs/agents.mdx", "allow"),
                (BUILD, "edit", "packages/web/src/content/docs/sub/x.mdx", "allow"),
                (BUILD, "edit", "README.md", "deny"),
                (BUILD, "read", "x", "allow"),
            ],
        ),
        (
            "v1-permissions__command-wrappers.json",
            "project/opencode.json",
            &[
                (BUILD, "bash", "rm -rf /", "deny"),
                (BUILD, "bash", "ls", "allow"),
                // The docs' "wrapper extraction": toolgate's analysis sees `rm` inside `sudo`.
                (BUILD, "bash", "rm -rf /", "deny"),
            ],
        ),
        (
            "v1-permissions__read-env-defaults.json",
            "project/opencode.json",
            &[
                (BUILD, "read", "src/.env", "deny"),
                (BUILD, "read", "config/.env.local", "deny"),
                (BUILD, "read", ".env.example", "allow"),
                (BUILD, "read", "README.md", "allow"),
            ],
        ),
        (
            "v1-permissions__agent-override.json",
            "project/opencode.json",
            &[
                (BUILD, "bash", "git commit -m x", "ask"),
                (BUILD, "bash", "git push origin main", "deny"),
                (BUILD, "bash", "git status", "allow"),
                (BUILD, "bash", "ls", "ask"),
                (Some("general"), "bash", "git commit -m x", "deny"),
            ],
        ),
        (
            "v1-permissions__agent-review.md",
            "xdg/opencode/agents/review.md",
            &[
                (Some("review"), "edit", "x", "deny"),
                (Some("review"), "bash", "ls", "ask"),
                (Some("review"), "webfetch", "https://x.dev", "deny"),
                (Some("review"), "read", "a.ts", "allow"),
            ],
        ),
    ]);
    // `sudo rm …` is checked as `rm …` (the docs' command wrappers).
    let sandbox = project();
    sandbox.write(
        "project/opencode.json",
        &fixture("v1-permissions__command-wrappers.json"),
    );
    let (code, out, err) = sandbox.run(&["check", "bash", "sudo rm -rf /", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["effect"], "deny", "{out}");
}

/// Row 5: `~` in a V1 pattern is the home directory, also for `edit` of an absolute path.
#[test]
fn v1_external_directory_example_expands_home() {
    let sandbox = project();
    sandbox.write(
        "project/opencode.json",
        &fixture("v1-permissions__external-directory.json"),
    );
    let home = sandbox.root.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let home_text = home.to_str().unwrap();
    let env = [("HOME", home_text)];
    let notes = format!("{home_text}/projects/personal/notes/*");
    assert_eq!(
        decide_with(&sandbox, BUILD, "external_directory", &notes, &env),
        "allow"
    );
    assert_eq!(
        decide_with(&sandbox, BUILD, "external_directory", "/srv/*", &env),
        "ask"
    );
    let todo = format!("{home_text}/projects/personal/notes/todo.md");
    assert_eq!(decide_with(&sandbox, BUILD, "edit", &todo, &env), "deny");
}

/// The V1 docs' "Agents" and "Config" pages (rows 9–16).
#[test]
fn v1_agents_and_config_page_examples_decide_as_documented() {
    check_cases(&[
        (
            "v1-agents__json-agents.json",
            "project/opencode.json",
            &[
                (Some("build"), "edit", "x", "allow"),
                (Some("build"), "bash", "ls", "allow"),
                (Some("plan"), "edit", ".opencode/plans/p.md", "deny"),
                (Some("plan"), "bash", "ls", "deny"),
                (Some("code-reviewer"), "bash", "ls", "allow"),
                (Some("code-reviewer"), "edit", "x", "deny"),
            ],
        ),
        (
            "v1-agents__review-tools.md",
            "project/.opencode/agent/review.md",
            &[
                (Some("review"), "edit", "x", "deny"),
                (Some("review"), "bash", "ls", "deny"),
                (Some("review"), "read", "x", "allow"),
            ],
        ),
        (
            "v1-agents__review-permission.md",
            "project/.opencode/agents/review.md",
            &[
                (Some("review"), "bash", "git diff", "allow"),
                (Some("review"), "bash", "git diff HEAD~1", "ask"),
                (Some("review"), "bash", "git log --oneline", "allow"),
                (Some("review"), "bash", "git logx", "allow"),
                (Some("review"), "bash", "grep -r TODO src", "allow"),
                (Some("review"), "bash", "rm -rf /", "ask"),
                (Some("review"), "edit", "x", "deny"),
                (Some("review"), "webfetch", "u", "deny"),
            ],
        ),
        (
            "v1-agents__task-permissions.json",
            "project/opencode.json",
            &[
                (Some("orchestrator"), "task", "orchestrator-planner", "allow"),
                (Some("orchestrator"), "task", "code-reviewer", "ask"),
                (Some("orchestrator"), "task", "general", "deny"),
                // The V2 name decides the same.
                (Some("orchestrator"), "subagent", "orchestrator-planner", "allow"),
                (Some("orchestrator"), "subagent", "general", "deny"),
            ],
        ),
        (
            "v1-agents__global-deny-agent-ask.json",
            "project/opencode.json",
            &[
                (Some("build"), "edit", "src/a.ts", "ask"),
                (Some("plan"), "edit", "src/a.ts", "deny"),
                (Some("general"), "edit", "src/a.ts", "deny"),
            ],
        ),
        (
            "v1-agents__readonly-mcp-wildcard.json",
            "project/opencode.json",
            &[
                (Some("readonly"), "mymcp_search", "*", "deny"),
                (Some("readonly"), "edit", "x", "deny"),
                (Some("readonly"), "read", "x", "allow"),
            ],
        ),
        (
            "v1-config__legacy-tools.json",
            "project/opencode.json",
            &[(BUILD, "bash", "ls", "deny"), (BUILD, "edit", "x", "deny")],
        ),
        (
            "v1-config__managed-mobileconfig-payload.json",
            "managed/opencode.json",
            &[
                (BUILD, "bash", "rm -rf /", "deny"),
                (BUILD, "bash", "rm -rf", "deny"),
                (BUILD, "bash", "ls", "ask"),
                (BUILD, "edit", "x", "ask"),
            ],
        ),
    ]);
    // The trap of row 15: in one file `tools` comes before `permission`, so `"*": "ask"`
    // shadows the legacy deny — in OpenCode and in toolgate alike.
    let sandbox = project();
    sandbox.write(
        "project/opencode.json",
        r#"{"tools": {"write": false, "bash": false}, "permission": {"*": "ask"}}"#,
    );
    assert_eq!(decide(&sandbox, BUILD, "bash", "ls"), "ask");
    // Row 16: the managed file is the last layer: a project allow does not lift its rules.
    let sandbox = project();
    sandbox.write(
        "managed/opencode.json",
        &fixture("v1-config__managed-mobileconfig-payload.json"),
    );
    sandbox.write(
        "project/opencode.json",
        r#"{"permission": {"bash": "allow", "edit": "allow"}}"#,
    );
    assert_eq!(decide(&sandbox, BUILD, "bash", "rm -rf /"), "deny");
    assert_eq!(decide(&sandbox, BUILD, "edit", "x"), "ask");
}

/// The V2 docs' "Permissions" and "Agents" pages (rows 17–20), in both vocabularies.
#[test]
fn v2_examples_decide_as_documented_in_both_vocabularies() {
    check_cases(&[
        (
            "v2-permissions__rule-schema.jsonc",
            "project/opencode.jsonc",
            &[
                (BUILD, "read", "src/.env", "deny"),
                (BUILD, "read", ".env.example", "allow"),
                (BUILD, "read", "README.md", "allow"),
                (BUILD, "shell", "git status", "allow"),
                (BUILD, "shell", "git status --short", "allow"),
                (BUILD, "shell", "git push origin main", "deny"),
                (BUILD, "bash", "git push origin main", "deny"),
                (BUILD, "shell", "ls", "ask"),
                (BUILD, "edit", "packages/docs/config.mdx", "allow"),
                (BUILD, "edit", "src/a.ts", "ask"),
                (BUILD, "webfetch", "https://x.dev", "ask"),
            ],
        ),
        (
            "v2-permissions__git-workflow.jsonc",
            "project/opencode.jsonc",
            &[
                (BUILD, "shell", "git diff --stat", "allow"),
                (BUILD, "bash", "git status", "allow"),
                (BUILD, "bash", "git push", "deny"),
                (BUILD, "shell", "npm test", "ask"),
                (BUILD, "read", "x", "allow"),
            ],
        ),
        (
            "v2-agents__reviewer.md",
            "project/.opencode/agents/reviewer.md",
            &[
                (Some("reviewer"), "edit", "x", "deny"),
                (Some("reviewer"), "shell", "ls", "deny"),
                (Some("reviewer"), "bash", "ls", "deny"),
                (Some("reviewer"), "read", "x", "allow"),
            ],
        ),
        (
            "v2-agents__reviewer-jsonc.jsonc",
            "project/opencode.jsonc",
            &[
                (Some("reviewer"), "edit", "x", "deny"),
                (Some("reviewer"), "bash", "ls", "allow"),
            ],
        ),
    ]);
}

/// The V2 docs' own example denies `git push` through the bash tool: the command never
/// runs (a `git` on `PATH` that leaves a mark would show it), even with `--auto`.
#[test]
fn the_v2_docs_example_denies_git_push_through_call() {
    let sandbox = project();
    sandbox.write(
        "project/opencode.json",
        r#"{"permissions": [{"action": "shell", "resource": "git push *", "effect": "deny"}]}"#,
    );
    let bin = sandbox.root.path().join("bin");
    let mark = sandbox.root.path().join("pushed");
    sandbox.write("bin/git", &format!("#!/bin/sh\ntouch {}\n", mark.display()));
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("git"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let output = sandbox
        .command(&["call", "bash", r#"{"command": "git push origin main"}"#, "--auto"])
        .env("PATH", &path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{err}");
    assert!(!mark.exists(), "git push ran");
    // The fake git does run where nothing denies it.
    let output = sandbox
        .command(&["call", "bash", r#"{"command": "git status"}"#, "--auto"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(mark.exists());
}

/// Project config is found upward from the directory to the worktree root, nearest last
/// (OpenCode V1 `ConfigPaths.files`), and nothing above the root is read.
#[test]
fn a_subdirectory_run_reads_the_project_config_up_to_the_worktree_root() {
    let sandbox = project();
    sandbox.write("opencode.json", r#"{"permission": "deny"}"#);
    sandbox.write("project/opencode.json", r#"{"permission": {"bash": {"rm *": "deny"}}}"#);
    sandbox.write(
        "project/sub/opencode.json",
        r#"{"permission": {"bash": {"rm -i *": "allow"}}}"#,
    );
    std::fs::create_dir_all(sandbox.project().join("sub/deeper")).unwrap();
    let from = |dir: &str, command: &str| {
        let dir = sandbox.project().join(dir);
        let (code, out, err) = sandbox.run(&["check", "bash", command, "--json", "--dir", dir.to_str().unwrap()]);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<Value>(&out).unwrap()["resources"][0]["effect"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(from("sub/deeper", "rm -rf x"), "deny");
    assert_eq!(from("sub/deeper", "rm -i x"), "allow", "the nearest file wins");
    assert_eq!(
        from(".", "rm -i x"),
        "deny",
        "a subdirectory's file is not read from above it"
    );
    assert_eq!(
        from("sub/deeper", "ls"),
        "allow",
        "the file above the worktree root is not read"
    );
}

/// Only the global OpenCode config holds the rule: it applies, from `$XDG_CONFIG_HOME`
/// and, without it, from `~/.config/opencode`.
#[test]
fn the_global_opencode_config_alone_applies() {
    let sandbox = project();
    sandbox.write(
        "xdg/opencode/opencode.json",
        r#"{"permission": {"bash": {"rm *": "deny"}}}"#,
    );
    assert_eq!(decide(&sandbox, BUILD, "bash", "rm -rf x"), "deny");
    let sandbox = project();
    sandbox.write(
        "home/.config/opencode/opencode.json",
        r#"{"permission": {"bash": {"rm *": "deny"}}}"#,
    );
    let home = sandbox.root.path().join("home");
    let mut command = sandbox.command(&["check", "bash", "rm -rf x", "--json"]);
    command.env_remove("XDG_CONFIG_HOME").env("HOME", &home);
    let output = command.output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["resources"][0]["effect"], "deny", "{report}");
}

/// `.opencode/opencode.json` applies and outranks the project's direct files; an
/// `opencode.jsonc` beside an `opencode.json` is read too, after it.
#[test]
fn dot_opencode_and_jsonc_beside_json_are_read() {
    let sandbox = project();
    sandbox.write(
        "project/opencode.json",
        r#"{"permission": {"bash": {"rm *": "allow", "ls *": "deny"}}}"#,
    );
    sandbox.write("project/opencode.jsonc", "{\n  // later than opencode.json\n  \"permission\": {\"bash\": {\"ls *\": \"allow\"}, \"webfetch\": \"deny\"},\n}");
    sandbox.write(
        "project/.opencode/opencode.json",
        r#"{"permission": {"bash": {"rm *": "deny"}}}"#,
    );
    assert_eq!(decide(&sandbox, BUILD, "bash", "rm -rf x"), "deny");
    assert_eq!(decide(&sandbox, BUILD, "bash", "ls -la"), "allow");
    assert_eq!(decide(&sandbox, BUILD, "webfetch", "https://x.dev"), "deny");
}

/// `$OPENCODE_CONFIG` names one more file; a name that is not a file is an error.
#[test]
fn opencode_config_names_one_more_file() {
    let sandbox = project();
    sandbox.write("elsewhere.json", r#"{"permission": {"bash": {"rm *": "deny"}}}"#);
    let file = sandbox.root.path().join("elsewhere.json");
    let env = [("OPENCODE_CONFIG", file.to_str().unwrap())];
    assert_eq!(decide_with(&sandbox, BUILD, "bash", "rm -rf x", &env), "deny");
    let (code, _, err) = {
        let output = sandbox
            .command(&["check", "bash", "ls"])
            .env("OPENCODE_CONFIG", sandbox.root.path().join("missing.json"))
            .output()
            .unwrap();
        (
            output.status.code(),
            (),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    assert_eq!(code, Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("missing.json") && err.contains("OPENCODE_CONFIG"), "{err}");
}

/// Markdown agents from every config directory, named by their path.
#[test]
fn markdown_agents_are_read_from_every_config_directory() {
    let sandbox = project();
    sandbox.write(
        "project/.opencode/agents/team/reviewer.md",
        "---\nmode: subagent\npermission:\n  edit: deny\n---\nReview.\n",
    );
    sandbox.write(
        "xdg/opencode/agent/notes.md",
        "---\npermissions:\n  - action: shell\n    resource: \"*\"\n    effect: deny\n---\n",
    );
    sandbox.write("project/.opencode/modes/quick.md", "Just a prompt, no front matter.\n");
    assert_eq!(decide(&sandbox, Some("team/reviewer"), "edit", "a.rs"), "deny");
    assert_eq!(decide(&sandbox, Some("notes"), "bash", "ls"), "deny");
    let (code, out, err) = sandbox.run(&["config", "--json", "--agent", "quick"]);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["agent"], "quick");
    // Broken front matter is an error naming the file, never an agent without its rules.
    sandbox.write("project/.opencode/agents/broken.md", "---\npermission: [\n---\n");
    let (code, _, err) = sandbox.run(&["check", "bash", "ls"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("broken.md") && err.contains("front matter"), "{err}");
}

/// A misspelt rules key would drop its rules: it is a configuration error, exit 2.
#[test]
fn a_misspelt_rules_key_is_a_configuration_error() {
    for (config, key) in [
        (r#"{"permision": {"bash": "deny"}}"#, "permision"),
        (r#"{"agnets": {"build": {"permissions": []}}}"#, "agnets"),
        (
            r#"{"agent": {"build": {"permisions": {"bash": "deny"}}}}"#,
            "agent.build.permisions",
        ),
    ] {
        let sandbox = project();
        sandbox.write("project/opencode.json", config);
        let (code, _, err) = sandbox.run(&["check", "bash", "ls"]);
        assert_eq!(code, 2, "{config}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("opencode.json") && err.contains(&format!("{key}: unknown key; did you mean")),
            "{err}"
        );
    }
}

/// Unknown keys are ignored with one warning each, naming the file and the key path;
/// OpenCode's own keys are not unknown.
#[test]
fn unknown_keys_warn_with_file_and_key_path() {
    let sandbox = project();
    sandbox.write(
        "project/toolgate.json",
        r#"{"$schema": "https://opencode.ai/config.json", "model": "anthropic/x", "theme": "dark",
            "colour": 1, "sandbox": {"modee": "x"}, "webfetch": {"allowed_host": []},
            "mcp": {"s": {"type": "remote", "url": "https://x", "enabeld": false}}}"#,
    );
    let (code, _, err) = sandbox.run(&["tools", "--json"]);
    assert_eq!(code, 0, "{err}");
    let file = sandbox.project().join("toolgate.json");
    let warnings: Vec<&str> = err.lines().filter(|line| line.contains("warning: config")).collect();
    for path in ["colour", "sandbox.modee", "webfetch.allowed_host", "mcp.s.enabeld"] {
        let line = format!(
            "toolgate: warning: config {}: {path}: unknown key (ignored)",
            file.display()
        );
        assert!(warnings.contains(&line.as_str()), "{line} not in {err}");
    }
    assert_eq!(warnings.len(), 4, "{err}");
}

/// `toolgate config` lists every file read, in order, and the saved approvals.
#[test]
fn config_lists_every_file_in_order_and_the_saved_approvals() {
    let sandbox = project();
    sandbox.write("xdg/opencode/opencode.json", "{}");
    sandbox.write("config/toolgate.json", "{}");
    sandbox.write("project/opencode.json", "{}");
    sandbox.write("project/toolgate.json", "{}");
    sandbox.write("project/.opencode/opencode.jsonc", "{}");
    sandbox.write("project/.opencode/agents/x.md", "x");
    sandbox.write("config/managed.json", "{}");
    let project_dir = std::fs::canonicalize(sandbox.project()).unwrap();
    let store = toolgate_permission::SqliteStore::open(sandbox.data_dir().join("toolgate.db")).unwrap();
    use toolgate_permission::ApprovalStore;
    store
        .add(
            &toolgate_permission::project_id(&project_dir),
            "bash",
            &["git push *".into()],
        )
        .unwrap();
    let (code, out, err) = sandbox.run(&["config", "--json"]);
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let kinds: Vec<&str> = report["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "opencode global",
            "toolgate global",
            "project",
            "project",
            ".opencode",
            "agent file",
            "managed"
        ],
        "{report}"
    );
    assert_eq!(report["approvals"][0]["resource"], "git push *", "{report}");
    let (_, text, _) = sandbox.run(&["config"]);
    assert!(
        text.contains("saved approvals") && text.contains("git push *"),
        "{text}"
    );
}

/// `managed.json`'s `tools` and `agent` blocks apply, after everything else.
#[test]
fn managed_tools_and_agent_blocks_apply() {
    let sandbox = project();
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": "allow", "webfetch": "allow"}}"#,
    );
    sandbox.write(
        "config/managed.json",
        r#"{"tools": {"webfetch": false}, "agent": {"build": {"permission": {"bash": {"rm *": "deny"}}}}}"#,
    );
    assert_eq!(decide(&sandbox, BUILD, "webfetch", "https://x.dev"), "deny");
    assert_eq!(decide(&sandbox, BUILD, "bash", "rm -rf x"), "deny");
    assert_eq!(decide(&sandbox, Some("general"), "bash", "rm -rf x"), "allow");
}

/// `toolgate config --schema` prints the schema the README's `$schema` names.
#[test]
fn config_schema_prints_the_json_schema() {
    let sandbox = Sandbox::new();
    let (code, out, err) = sandbox.run(&["config", "--schema"]);
    assert_eq!(code, 0, "{err}");
    let schema: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(schema, toolgate_config::schema());
    assert!(schema["properties"]["permissions"].is_object(), "{schema}");
}
