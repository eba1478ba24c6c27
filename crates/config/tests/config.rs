//! The config crate from outside: the JSON Schema against OpenCode's docs examples, the
//! published schema file, discovery order (spec §4.9; README "Configuration"), and
//! files that cannot be read whole.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolgate_config::{Effect, Env, ErrorKind, Inputs, SourceKind, load, schema};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/opencode")
}

/// Every fixture as a config document: JSON(C) as is, a Markdown agent's front matter
/// as the agent block it is.
fn fixture_documents() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let document = if name.ends_with(".json") || name.ends_with(".jsonc") {
            jsonc_parser::parse_to_serde_value::<Value>(&text, &Default::default()).unwrap()
        } else if name.ends_with(".md") && name != "README.md" {
            let front = text.split("---").nth(1).unwrap();
            let block: Value = serde_yaml::from_str(front).unwrap();
            json!({"agent": {"x": block}})
        } else {
            continue;
        };
        out.push((name, document));
    }
    assert_eq!(out.len(), 20, "the fixtures README lists 20 configs");
    out
}

#[test]
fn the_schema_validates_every_opencode_docs_example() {
    let validator = jsonschema::validator_for(&schema()).unwrap();
    for (name, document) in fixture_documents() {
        let errors: Vec<String> = validator.iter_errors(&document).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{name}: {errors:?}");
    }
    // OpenCode keys toolgate ignores are in the schema, and unknown keys are not refused.
    for key in toolgate_config::OPENCODE_IGNORED_KEYS {
        assert!(schema()["properties"].get(*key).is_some(), "{key}");
    }
    assert!(validator.is_valid(&json!({"someFutureOpenCodeKey": {"x": 1}})));
    // …but a malformed rule is.
    for bad in [
        json!({"permission": {"bash": "never"}}),
        json!({"permissions": [{"action": "shell", "resource": "*"}]}),
        json!({"agent": {"x": {"mode": "sometimes"}}}),
        json!({"sandbox": {"mode": "everything"}}),
        json!({"tool_output": {"max_lines": 0}}),
    ] {
        assert!(!validator.is_valid(&bad), "{bad}");
    }
}

/// `schema/toolgate.schema.json` is what editors fetch through `$schema`: it must be
/// the generated schema. `TOOLGATE_BLESS=1` rewrites it.
#[test]
fn the_published_schema_is_the_generated_one() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema/toolgate.schema.json");
    let generated = serde_json::to_string_pretty(&schema()).unwrap() + "\n";
    if std::env::var_os("TOOLGATE_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &generated).unwrap();
    }
    let published = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        published == generated,
        "{} is stale: run with TOOLGATE_BLESS=1",
        path.display()
    );
}

#[test]
fn every_docs_example_loads_without_a_warning() {
    for (name, document) in fixture_documents() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join("opencode.json"), document.to_string()).unwrap();
        let loaded = load(&Inputs::new(dir.path())).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert!(loaded.warnings.is_empty(), "{name}: {:?}", loaded.warnings);
    }
}

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Every source, each with one rule naming it, read in the order README gives.
#[test]
fn discovery_reads_every_source_in_order() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let rule = |name: &str| format!(r#"{{"permission": {{"bash": {{"{name}": "deny"}}}}}}"#);
    for file in [
        "opencode/config.json",
        "opencode/opencode.json",
        "opencode/opencode.jsonc",
        "toolgate/toolgate.json",
        "toolgate/toolgate.jsonc",
        "toolgate/managed.json",
        "explicit.json",
        "env.json",
        "above/opencode.json",
        "above/repo/opencode.json",
        "above/repo/toolgate.json",
        "above/repo/sub/opencode.jsonc",
        "above/repo/.opencode/opencode.json",
        "above/repo/sub/.opencode/opencode.json",
        "home/.opencode/opencode.json",
        "dir/opencode.json",
        "managed/opencode.json",
    ] {
        write(r, file, &rule(file));
    }
    write(r, "opencode/agents/g.md", "---\npermission:\n  bash: deny\n---\n");
    write(
        r,
        "above/repo/.opencode/agent/p.md",
        "---\npermission:\n  bash: deny\n---\n",
    );
    std::fs::create_dir_all(r.join("above/repo/.git")).unwrap();
    let mut env = Env::default();
    env.opencode_config = Some(r.join("env.json"));
    env.opencode_config_dir = Some(r.join("dir"));
    env.opencode_config_content = Some(rule("content"));
    env.opencode_permission = Some(r#"{"bash": {"opencode-permission": "deny"}}"#.into());
    env.toolgate_permission = Some(r#"{"bash": {"toolgate-permission": "deny"}}"#.into());
    let inputs = Inputs::new(r.join("above/repo/sub"))
        .toolgate_dir(r.join("toolgate"))
        .opencode_dir(Some(r.join("opencode")))
        .managed_dir(Some(r.join("managed")))
        .home(Some(r.join("home")))
        .explicit(Some(r.join("explicit.json")))
        .env(env);
    let loaded = load(&inputs).unwrap();
    let order: Vec<(SourceKind, String)> = loaded
        .all()
        .map(|layer| {
            let source = layer
                .source
                .strip_prefix(&format!("{}/", r.display()))
                .unwrap_or(&layer.source);
            (layer.kind, source.to_string())
        })
        .collect();
    use SourceKind::*;
    let expected = [
        (OpenCodeGlobal, "opencode/config.json"),
        (OpenCodeGlobal, "opencode/opencode.json"),
        (OpenCodeGlobal, "opencode/opencode.jsonc"),
        (MarkdownAgent, "opencode/agents/g.md"),
        (ToolgateGlobal, "toolgate/toolgate.json"),
        (ToolgateGlobal, "toolgate/toolgate.jsonc"),
        (OpenCodeConfig, "env.json"),
        // Up to the worktree root only: `above/opencode.json` is not read.
        (Project, "above/repo/opencode.json"),
        (Project, "above/repo/toolgate.json"),
        (Project, "above/repo/sub/opencode.jsonc"),
        (DotOpenCode, "home/.opencode/opencode.json"),
        (DotOpenCode, "above/repo/.opencode/opencode.json"),
        (MarkdownAgent, "above/repo/.opencode/agent/p.md"),
        (DotOpenCode, "above/repo/sub/.opencode/opencode.json"),
        (DotOpenCode, "dir/opencode.json"),
        (OpenCodeConfigContent, "$OPENCODE_CONFIG_CONTENT"),
        (Explicit, "explicit.json"),
        (OpenCodePermission, "$OPENCODE_PERMISSION"),
        (ToolgatePermission, "$TOOLGATE_PERMISSION"),
        (OpenCodeManaged, "managed/opencode.json"),
        (Managed, "toolgate/managed.json"),
    ];
    let expected: Vec<(SourceKind, String)> = expected.iter().map(|(k, s)| (*k, s.to_string())).collect();
    assert_eq!(order, expected);
    // The Markdown agents are agents named by their path, with their rules.
    let agent = &loaded.layers[3].agents[0];
    assert_eq!((agent.name.as_str(), agent.rules[0].effect), ("g", Effect::Deny));
    // OPENCODE_DISABLE_PROJECT_CONFIG drops OpenCode's project files, not toolgate's.
    let mut env = Env::default();
    env.disable_project_config = true;
    let loaded = load(&Inputs::new(r.join("above/repo/sub")).env(env)).unwrap();
    let sources: Vec<&str> = loaded.all().map(|layer| layer.source.as_str()).collect();
    assert_eq!(sources.len(), 1, "{sources:?}");
    assert!(sources[0].ends_with("above/repo/toolgate.json"), "{sources:?}");
}

/// A file that exists but cannot be read whole stops the load with its name: never a
/// partial set of rules.
#[test]
fn a_file_that_cannot_be_read_whole_is_an_error() {
    for (file, text, kind, says) in [
        (
            ".opencode/opencode.jsonc",
            "{ \"permission\": ",
            ErrorKind::Syntax,
            "is not valid JSONC",
        ),
        (
            "opencode.json",
            "[]",
            ErrorKind::Invalid,
            "expected an object at the top level",
        ),
        (
            "opencode.json",
            r#"{"permission": {"bash": {"rm *": "never"}}}"#,
            ErrorKind::Invalid,
            "permission.bash[\"rm *\"]: expected \"allow\", \"ask\" or \"deny\", found \"never\"",
        ),
        (
            "opencode.json",
            r#"{"permissions": [{"action": "shell", "resource": "*", "effect": "maybe"}]}"#,
            ErrorKind::Invalid,
            "permissions[0].effect: expected",
        ),
        (
            ".opencode/agents/a.md",
            "---\nmode: [\n---\n",
            ErrorKind::Syntax,
            "front matter is not valid YAML",
        ),
        (
            ".opencode/agents/a.md",
            "---\nmode: sometimes\n---\n",
            ErrorKind::Invalid,
            "mode: expected \"primary\"",
        ),
        (
            "opencode.json",
            r#"{"Permission": {"bash": "deny"}}"#,
            ErrorKind::Misspelt,
            "did you mean `permission`",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        write(dir.path(), file, text);
        let error = load(&Inputs::new(dir.path())).unwrap_err();
        assert_eq!(error.kind, kind, "{file} {text}: {error}");
        assert!(error.origin.ends_with(file), "{error}");
        assert!(error.to_string().contains(says), "{file} {text}: {error}");
    }
}

/// On the walk, a file someone else owns (not root either) is not read: without `.git`
/// the walk reaches shared directories like `/tmp`, where anyone may leave an
/// `opencode.json`. Needs root to give a file away; skipped otherwise.
#[cfg(unix)]
#[test]
fn a_config_file_someone_else_owns_on_the_walk_is_not_read() {
    let root = tempfile::tempdir().unwrap();
    write(root.path(), "shared/opencode.json", r#"{"permission": "allow"}"#);
    write(
        root.path(),
        "shared/project/opencode.json",
        r#"{"permission": {"bash": "ask"}}"#,
    );
    let planted = root.path().join("shared/opencode.json");
    if std::os::unix::fs::chown(&planted, Some(54321), None).is_err() {
        eprintln!("not root: cannot give a file away, skipped");
        return;
    }
    let loaded = load(&Inputs::new(root.path().join("shared/project"))).unwrap();
    let sources: Vec<&str> = loaded.all().map(|layer| layer.source.as_str()).collect();
    assert_eq!(sources.len(), 1, "{sources:?}");
    assert!(sources[0].ends_with("shared/project/opencode.json"));
    let warning = &loaded.warnings[0];
    assert!(warning.source.ends_with("shared/opencode.json"), "{warning}");
    assert!(warning.message.contains("owned by uid 54321"), "{warning}");
}
