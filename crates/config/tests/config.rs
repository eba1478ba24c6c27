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
        let text = document.to_string();
        std::fs::write(dir.path().join("opencode.json"), &text).unwrap();
        // The files the example's `{file:…}` names (a missing one is an error, as in OpenCode).
        for reference in text
            .split("{file:")
            .skip(1)
            .filter_map(|rest| rest.split_once('}'))
            .filter(|(path, _)| !path.is_empty())
        {
            write(dir.path(), reference.0, "text");
        }
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
            "permission.bash[\"rm *\"]: expected \"allow\", \"ask\", \"deny\" or \"audit\", found \"never\"",
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

/// `{file:PATH}` as OpenCode substitutes it (its config loader's `substitute`): the
/// file's content, trimmed, in place of the reference, relative to the config file's
/// directory or `~/` the home directory's, in keys too; a value stays one string whatever
/// the file holds, and a missing file is an error naming the file and key path (spec
/// §4.9: a config read whole or not at all).
#[test]
fn file_references_are_substituted_as_opencode_does_and_a_missing_one_is_an_error() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    write(r, "toolgate/keys/token.txt", "  s3cret\n\n");
    write(r, "toolgate/quote.txt", "a\", \"mcp\": {\n");
    write(r, "home/.secrets/pattern", "/srv/private/**\n");
    write(
        r,
        "toolgate/toolgate.json",
        r#"{"permission": {"read": {"{file:~/.secrets/pattern}": "deny"}},
            "provider": {"openai": {"options": {"apiKey": "Bearer {file:keys/token.txt}"}}},
            "shell_env": {"set": {"Q": "{file:./quote.txt}", "ENV_FILE": "{file:{env:KEYS}/token.txt}", "NONE": "{file:}"}}}"#,
    );
    std::fs::create_dir_all(r.join("dir/.git")).unwrap();
    let mut env = Env::default();
    env.vars = Some([("KEYS".to_string(), r.join("toolgate/keys").display().to_string())].into());
    let inputs = Inputs::new(r.join("dir"))
        .toolgate_dir(r.join("toolgate"))
        .home(Some(r.join("home")))
        .env(env.clone());
    let loaded = load(&inputs).unwrap();
    let layer = &loaded.layers[0];
    assert_eq!(layer.rules[0].resource, "/srv/private/**");
    assert_eq!(layer.raw["provider"]["openai"]["options"]["apiKey"], "Bearer s3cret");
    assert_eq!(layer.raw["shell_env"]["set"]["Q"], "a\", \"mcp\": {");
    assert_eq!(layer.raw["shell_env"]["set"]["ENV_FILE"], "s3cret");
    assert_eq!(layer.raw["shell_env"]["set"]["NONE"], "{file:}");
    assert!(layer.raw.get("mcp").is_none(), "a file's quote added a key");
    // The content is not read for references again.
    write(r, "toolgate/keys/token.txt", "{file:../quote.txt}");
    let loaded = load(&inputs).unwrap();
    assert_eq!(
        loaded.layers[0].raw["provider"]["openai"]["options"]["apiKey"],
        "Bearer {file:../quote.txt}"
    );

    write(
        r,
        "toolgate/toolgate.json",
        r#"{"permission": {"bash": {"{file:gone.txt} *": "deny"}}}"#,
    );
    let error = load(&inputs).unwrap_err();
    assert_eq!(error.kind, ErrorKind::Read, "{error}");
    assert!(error.origin.ends_with("toolgate.json"), "{error}");
    assert_eq!(error.path, "permission.bash[\"{file:gone.txt} *\"]", "{error}");
    let gone = r.join("toolgate/gone.txt");
    assert!(
        error.to_string().contains(&format!(
            "bad file reference \"{{file:gone.txt}}\": {} does not exist",
            gone.display()
        )),
        "{error}"
    );

    // Only a regular file is read: a FIFO would hold the load forever.
    let made = std::process::Command::new("mkfifo")
        .arg(r.join("toolgate/fifo"))
        .status()
        .unwrap();
    assert!(made.success());
    write(
        r,
        "toolgate/toolgate.json",
        r#"{"provider": {"x": {"options": {"apiKey": "{file:fifo}"}}}}"#,
    );
    let error = load(&inputs).unwrap_err();
    assert!(error.to_string().contains("fifo is not a file"), "{error}");
}

/// A project's file (the repository's say) gets no file toolgate keeps its secrets in —
/// its config directory, its data directory (the server token, the approval database,
/// `trusted.json`), even when they are inside the project — nor one outside the project,
/// by any spelling (`..`, a symlink, a second hard link): the reference is left empty
/// with a warning naming the file and key path. The same files are the user's own
/// config's to name.
#[cfg(unix)]
#[test]
fn a_project_file_reads_only_the_projects_own_files_never_toolgates() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    std::fs::create_dir_all(r.join("repo/.git")).unwrap();
    write(r, "repo/.data/token", "SERVER-TOKEN");
    write(r, "repo/.config/managed.json", "{}");
    write(r, "repo/.config/key", "CONFIG-KEY");
    write(r, "repo/prompt.txt", "hello");
    write(r, "outside/id_rsa", "PRIVATE-KEY");
    std::os::unix::fs::symlink(r.join("repo/.data/token"), r.join("repo/link")).unwrap();
    std::os::unix::fs::symlink(r.join("outside/id_rsa"), r.join("repo/key-link")).unwrap();
    write(r, "repo/linked-source", "SHARED");
    std::fs::hard_link(r.join("repo/linked-source"), r.join("repo/hard")).unwrap();
    let references = [
        ("inside", "{file:./prompt.txt}"),
        ("data", "{file:.data/token}"),
        ("config", "{file:.config/key}"),
        ("symlink", "{file:link}"),
        ("up", "{file:../outside/id_rsa}"),
        ("absolute", &format!("{{file:{}}}", r.join("outside/id_rsa").display())),
        ("outside_link", "{file:key-link}"),
        ("hard_link", "{file:hard}"),
        ("home", "{file:~/id_rsa}"),
    ];
    let agents: serde_json::Map<String, Value> = references
        .iter()
        .map(|(name, reference)| (name.to_string(), json!({"description": reference})))
        .collect();
    let text = json!({"agent": agents}).to_string();
    write(r, "repo/opencode.json", &text);
    let inputs = Inputs::new(r.join("repo"))
        .toolgate_dir(r.join("repo/.config"))
        .data_dir(r.join("repo/.data"))
        .home(Some(r.join("outside")));
    let loaded = load(&inputs).unwrap();
    let layer = &loaded.layers[0];
    assert!(layer.project);
    let description = |name: &str| layer.raw["agent"][name]["description"].as_str().unwrap().to_string();
    assert_eq!(description("inside"), "hello");
    for (name, _) in &references[1..] {
        assert_eq!(description(name), "", "{name} was given to the project's file");
    }
    let warned: Vec<&str> = loaded.warnings.iter().map(|w| w.path.as_str()).collect();
    assert_eq!(
        warned,
        references[1..]
            .iter()
            .map(|(name, _)| format!("agent.{name}.description"))
            .collect::<Vec<_>>(),
        "{:?}",
        loaded.warnings
    );
    let said = |name: &str| {
        loaded
            .warnings
            .iter()
            .find(|w| w.path == format!("agent.{name}.description"))
            .unwrap()
            .to_string()
    };
    assert!(said("data").contains("is toolgate's own file"), "{}", said("data"));
    assert!(
        said("symlink").contains("is toolgate's own file"),
        "{}",
        said("symlink")
    );
    assert!(said("up").contains("is outside the project"), "{}", said("up"));
    assert!(said("hard_link").contains("has 2 hard links"), "{}", said("hard_link"));
    assert!(said("config").contains("left empty"), "{}", said("config"));

    // The user's own file (here `--config`) may name the same files.
    write(r, "repo/own.json", &text);
    let own = load(&inputs.clone().explicit(Some(r.join("repo/own.json")))).unwrap();
    let layer = own.layers.iter().find(|layer| !layer.project).unwrap();
    assert_eq!(layer.raw["agent"]["data"]["description"], "SERVER-TOKEN");
    assert_eq!(layer.raw["agent"]["up"]["description"], "PRIVATE-KEY");
}

/// A trust names a file's content; the content of the files its `{file:…}` reads is part
/// of it, so a trusted MCP server whose command comes from another file cannot change
/// without the file needing trust again.
#[test]
fn a_project_files_hash_covers_the_files_it_references() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    std::fs::create_dir_all(r.join(".git")).unwrap();
    write(r, "cmd.txt", "calc-server");
    write(
        r,
        "opencode.json",
        r#"{"mcp": {"calc": {"type": "local", "command": ["{file:cmd.txt}"]}}}"#,
    );
    let hash = |r: &Path| load(&Inputs::new(r)).unwrap().layers[0].sha256.clone().unwrap();
    let before = hash(r);
    assert_eq!(before, hash(r), "the same content, the same hash");
    write(r, "cmd.txt", "rm -rf ~");
    assert_ne!(before, hash(r));
}

/// OpenCode substitutes `{env:…}` and `{file:…}` in its JSON config's text only: a
/// Markdown agent's front matter is parsed as it is written (its `ConfigMarkdown.parse`
/// reads the file with gray-matter and nothing else), so toolgate leaves references there
/// as written too (spec §4.10, README "Configuration").
#[test]
fn references_in_a_markdown_agents_front_matter_are_kept_as_written() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    std::fs::create_dir_all(r.join(".git")).unwrap();
    write(r, "secret.txt", "s3cret");
    write(
        r,
        ".opencode/agents/review.md",
        "---\ndescription: \"{env:HOME} {file:../../secret.txt}\"\npermission:\n  bash:\n    \"{env:HOME}/bin/*\": deny\n---\nBody\n",
    );
    let mut env = Env::default();
    env.vars = Some([("HOME".to_string(), "/home/me".to_string())].into());
    let loaded = load(&Inputs::new(r).env(env)).unwrap();
    let agent = &loaded.layers[0].agents[0];
    assert_eq!(agent.description.as_deref(), Some("{env:HOME} {file:../../secret.txt}"));
    assert_eq!(agent.rules[0].resource, "{env:HOME}/bin/*");
}
