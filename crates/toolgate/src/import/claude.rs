//! Claude Code: `permissions` of its `settings.json` files and the MCP servers of
//! `.mcp.json` (and `~/.claude.json`).
//!
//! Claude Code's settings (code.claude.com/docs/en/settings, …/permissions): rules are
//! `Tool` or `Tool(specifier)` in `permissions.allow`, `ask` and `deny`; every file's
//! lists merge, and a call is decided deny first, then ask, then allow, whatever the
//! order. toolgate's last match wins, so the allows go first, then the asks, then the
//! denies. Before them all, the baseline: what Claude Code does when no rule matches
//! (ask for commands, edits, web access and MCP tools; `defaultMode` changes it).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{Effect, Imported, Places, Rule, Server, literal_safe, read_text};
use crate::Failure;

/// Where the files are looked for, for the message when none is found.
pub(super) const LOOKED: &str = "~/.claude/settings.json, .claude/settings.json, .claude/settings.local.json, \
/etc/claude-code/managed-settings.json, .mcp.json, ~/.claude.json";

/// The settings files, lowest precedence first (a later `defaultMode` wins).
fn settings_files(places: &Places) -> Vec<PathBuf> {
    let mut files = Vec::new();
    match std::env::var_os("CLAUDE_CONFIG_DIR") {
        Some(dir) => files.push(PathBuf::from(dir).join("settings.json")),
        None => files.extend(places.in_home(".claude/settings.json")),
    }
    files.push(places.dir.join(".claude/settings.json"));
    files.push(places.dir.join(".claude/settings.local.json"));
    files.push(PathBuf::from("/etc/claude-code/managed-settings.json"));
    files
}

/// What one file gave: its rules by list, its mode, its servers.
#[derive(Default)]
struct Lists {
    allow: Vec<(String, PathBuf)>,
    ask: Vec<(String, PathBuf)>,
    deny: Vec<(String, PathBuf)>,
    mode: Option<(String, PathBuf)>,
    directories: Vec<(String, PathBuf)>,
    servers: Vec<(String, Value, PathBuf)>,
    disabled_servers: Vec<String>,
}

fn strings(value: Option<&Value>, path: &Path, key: &str) -> Result<Vec<String>, Failure> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| Failure::usage(format!("{}: {key}: every entry must be a string", path.display())))
            })
            .collect(),
        Some(_) => Err(Failure::usage(format!("{}: {key}: not a list", path.display()))),
    }
}

fn read_file(path: &Path, lists: &mut Lists, home_state: bool, dir: &Path) -> Result<(), Failure> {
    let text = read_text(path)?;
    let value: Value = jsonc_parser::parse_to_serde_value(&text, &Default::default())
        .map_err(|error| Failure::usage(format!("{}: {error}", path.display())))?;
    let Value::Object(root) = value else {
        return Err(Failure::usage(format!("{}: not a JSON object", path.display())));
    };
    if let Some(permissions) = root.get("permissions") {
        let Value::Object(permissions) = permissions else {
            return Err(Failure::usage(format!(
                "{}: permissions: not an object",
                path.display()
            )));
        };
        for (key, list) in [
            ("allow", &mut lists.allow),
            ("ask", &mut lists.ask),
            ("deny", &mut lists.deny),
        ] {
            for rule in strings(permissions.get(key), path, &format!("permissions.{key}"))? {
                list.push((rule, path.to_path_buf()));
            }
        }
        if let Some(mode) = permissions.get("defaultMode").and_then(Value::as_str) {
            lists.mode = Some((mode.to_string(), path.to_path_buf()));
        }
        for directory in strings(
            permissions.get("additionalDirectories"),
            path,
            "permissions.additionalDirectories",
        )? {
            lists.directories.push((directory, path.to_path_buf()));
        }
    }
    lists.disabled_servers.extend(strings(
        root.get("disabledMcpjsonServers"),
        path,
        "disabledMcpjsonServers",
    )?);
    let mut servers: Vec<&Map<String, Value>> = Vec::new();
    if let Some(Value::Object(map)) = root.get("mcpServers") {
        servers.push(map);
    }
    // `~/.claude.json` keeps a project's local-scope servers under its path.
    if home_state
        && let Some(Value::Object(projects)) = root.get("projects")
        && let Some(Value::Object(project)) = projects.get(&dir.to_string_lossy().into_owned())
        && let Some(Value::Object(map)) = project.get("mcpServers")
    {
        servers.push(map);
    }
    for map in servers {
        for (name, server) in map {
            lists.servers.push((name.clone(), server.clone(), path.to_path_buf()));
        }
    }
    Ok(())
}

/// `${VAR}` (Claude Code's expansion in `.mcp.json`) as toolgate's `{env:VAR}`.
/// `${VAR:-default}` has no counterpart: toolgate's `{env:VAR}` is empty when VAR is
/// unset (an empty URL would not load), so the default is written as it is, and said so.
pub(super) fn expand(text: &str, imported: &mut Imported, server: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(end) = rest[start..].find('}') else { break };
        out.push_str(&rest[..start]);
        let inner = &rest[start + 2..start + end];
        match inner.split_once(":-") {
            Some((name, default)) => {
                imported.note(format!(
                    "MCP server {server:?}: ${{{name}:-{default}}} is imported as its default {default:?}; write {{env:{name}}} there to follow {name}"
                ));
                out.push_str(default);
            }
            None => out.push_str(&format!("{{env:{inner}}}")),
        }
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    out
}

fn string_map(value: Option<&Value>, imported: &mut Imported, server: &str) -> Option<Map<String, Value>> {
    let Value::Object(map) = value? else { return None };
    Some(
        map.iter()
            .filter_map(|(key, value)| {
                value
                    .as_str()
                    .map(|text| (key.clone(), Value::String(expand(text, imported, server))))
            })
            .collect(),
    )
}

/// A `.mcp.json` server (stdio `command`/`args`/`env`; `http` or `sse` `url`/`headers`)
/// in toolgate's `mcp` form.
fn server(name: &str, value: &Value, imported: &mut Imported) -> Option<Value> {
    let Value::Object(object) = value else {
        imported.note(format!("MCP server {name:?}: not an object, not imported"));
        return None;
    };
    let known = ["type", "command", "args", "env", "url", "headers"];
    for key in object.keys().filter(|key| !known.contains(&key.as_str())) {
        imported.note(format!("MCP server {name:?}: {key:?} is not imported"));
    }
    let kind = object.get("type").and_then(Value::as_str).unwrap_or("stdio");
    match kind {
        "stdio" => {
            let Some(command) = object.get("command").and_then(Value::as_str) else {
                imported.note(format!("MCP server {name:?}: no command, not imported"));
                return None;
            };
            let mut line = vec![Value::String(expand(command, imported, name))];
            if let Some(Value::Array(args)) = object.get("args") {
                line.extend(
                    args.iter()
                        .filter_map(Value::as_str)
                        .map(|arg| Value::String(expand(arg, imported, name))),
                );
            }
            let mut out = json!({"type": "local", "command": line});
            if let Some(env) = string_map(object.get("env"), imported, name) {
                out["environment"] = Value::Object(env);
            }
            Some(out)
        }
        "http" | "sse" => {
            let Some(url) = object.get("url").and_then(Value::as_str) else {
                imported.note(format!("MCP server {name:?}: no url, not imported"));
                return None;
            };
            let mut out = json!({"type": "remote", "url": expand(url, imported, name)});
            if let Some(headers) = string_map(object.get("headers"), imported, name) {
                out["headers"] = Value::Object(headers);
            }
            Some(out)
        }
        other => {
            imported.note(format!("MCP server {name:?}: transport {other:?} is not imported"));
            None
        }
    }
}

/// An MCP server or tool name as toolgate registers it: every character outside
/// `[A-Za-z0-9_-]` becomes `_` (README "MCP servers").
pub(super) fn mcp_name(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `<server>_<tool>` exactly as the gateway registers a tool of a literal name, names
/// over 64 characters shortened the same way (`toolgate_mcp_client::tool_name`), so an
/// imported rule names the tool the gateway offers.
pub(super) fn mcp_tool(server: &str, tool: &str) -> String {
    toolgate_mcp_client::tool_name(server, tool).unwrap_or_else(|_| format!("{}_{}", mcp_name(server), mcp_name(tool)))
}

/// A rule string split into its tool and specifier: `Bash(git status:*)`.
fn split_rule(rule: &str) -> (&str, Option<&str>) {
    let rule = rule.trim();
    match rule.find('(') {
        Some(open) if rule.ends_with(')') => (&rule[..open], Some(&rule[open + 1..rule.len() - 1])),
        _ => (rule, None),
    }
}

/// A Bash specifier as a toolgate bash pattern: `git status:*` (the legacy prefix form)
/// is `git status *`; a `*` is toolgate's; `?` is literal in Claude Code but a wildcard
/// in toolgate, and so is a `:*` inside the specifier.
fn bash_pattern(spec: &str) -> (String, bool) {
    let spec = spec.trim();
    if spec.is_empty() || spec == "*" {
        return ("*".into(), true);
    }
    let (pattern, exact) = match spec.strip_suffix(":*") {
        Some(stem) => (format!("{} *", stem.trim_end()), true),
        None => (spec.to_string(), true),
    };
    let exact = exact && !pattern.contains('?') && !pattern.trim_end_matches(" *").contains(":*");
    (pattern, exact)
}

/// The variants of a path pattern with each `**/` also matching no directory at all, as
/// gitignore's does (toolgate's `*` needs the `/` to be there).
fn no_dir_variants(pattern: &str) -> Vec<String> {
    let mut out = vec![pattern.to_string()];
    let mut index = 0;
    while index < out.len() && out.len() < 16 {
        let current = out[index].clone();
        if let Some(rest) = current.strip_prefix("**/") {
            push_new(&mut out, rest.to_string());
        }
        if let Some(at) = current.find("/**/") {
            push_new(&mut out, format!("{}/{}", &current[..at], &current[at + 4..]));
        }
        index += 1;
    }
    out
}

fn push_new(list: &mut Vec<String>, item: String) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// A Read/Edit specifier (gitignore syntax, code.claude.com/docs/en/permissions: `//abs`,
/// `~/home`, `/project-root`, `./relative` or `relative`) as toolgate path patterns, and
/// whether toolgate's `*` (which also matches `/`) makes them wider than Claude Code's.
fn path_patterns(spec: &str) -> (Vec<String>, bool) {
    let spec = spec.trim();
    if spec.is_empty() || spec == "*" || spec == "**" {
        return (vec!["*".into()], false);
    }
    let (base, anchored) = if let Some(rest) = spec.strip_prefix("//") {
        (format!("/{rest}"), true)
    } else if spec.starts_with("~/") {
        (spec.to_string(), true)
    } else if let Some(rest) = spec.strip_prefix('/') {
        (rest.to_string(), true)
    } else if let Some(rest) = spec.strip_prefix("./") {
        (rest.to_string(), true)
    } else {
        // gitignore: a pattern with a slash before its end is relative to the base; one
        // without matches at any depth.
        let anchored = spec.trim_end_matches('/').contains('/');
        (spec.to_string(), anchored)
    };
    // A trailing slash names a directory: everything in it.
    let base = match base.strip_suffix('/') {
        Some(dir) => format!("{dir}/*"),
        None => base,
    };
    let mut patterns = no_dir_variants(&base);
    if !anchored && !base.starts_with('*') {
        for pattern in patterns.clone() {
            push_new(&mut patterns, format!("*/{pattern}"));
        }
    }
    let single_star = patterns.iter().any(|p| has_single_star(p));
    (patterns, anchored && single_star)
}

/// Whether a pattern has a `*` that is not part of `**` and has a `/` after it: there
/// Claude Code's `*` stays within one directory and toolgate's does not.
fn has_single_star(pattern: &str) -> bool {
    let bytes = pattern.as_bytes();
    (0..bytes.len()).any(|i| {
        bytes[i] == b'*'
            && (i == 0 || bytes[i - 1] != b'*')
            && bytes.get(i + 1) != Some(&b'*')
            && (pattern[..i].contains('/') || pattern[i..].contains('/'))
    })
}

/// The same pattern with its first single `*` reaching into subdirectories: what an
/// allow of `pattern` lets through in toolgate and not in Claude Code.
fn deeper(pattern: &str) -> Option<String> {
    let bytes = pattern.as_bytes();
    (0..bytes.len())
        .find(|&i| bytes[i] == b'*' && (i == 0 || bytes[i - 1] != b'*') && bytes.get(i + 1) != Some(&b'*'))
        .map(|i| format!("{}*/*{}", &pattern[..i], &pattern[i + 1..]))
}

/// A `WebFetch(domain:…)` host as URL patterns: exactly its URLs for an allow, every
/// spelling that could reach it for an ask or a deny.
pub(super) fn url_patterns(host: &str, effect: Effect) -> Vec<String> {
    match effect {
        Effect::Allow => ["https", "http"]
            .iter()
            .flat_map(|scheme| [format!("{scheme}://{host}"), format!("{scheme}://{host}/*")])
            .collect(),
        _ => vec![
            format!("*://{host}"),
            format!("*://{host}/*"),
            format!("*://{host}:*"),
            format!("*://{host}?*"),
            format!("*://{host}#*"),
            format!("*@{host}*"),
        ],
    }
}

/// One Claude Code rule as toolgate rules, or why it cannot be (an allow that cannot be
/// expressed exactly is left out; an ask or a deny is widened).
fn map_rule(text: &str, effect: Effect, origin: &str, servers: &[String], imported: &mut Imported) -> Vec<Rule> {
    let (tool, spec) = split_rule(text);
    let why = format!("{text} ({origin}, {})", list_name(effect));
    let spec = spec.map(str::trim).filter(|s| !s.is_empty());
    let mut out = Vec::new();
    let skip = |imported: &mut Imported, reason: &str| {
        imported.note(format!("{} rule {text:?} ({origin}) {reason}", list_name(effect)));
    };
    match tool {
        "Bash" => {
            let (pattern, exact) = match spec {
                Some(spec) => bash_pattern(spec),
                None => ("*".into(), true),
            };
            if !exact && effect == Effect::Allow {
                skip(
                    imported,
                    "is not imported: `?` and an inner `:*` are wildcards in toolgate, so it would allow more",
                );
            } else {
                out.push(Rule::new("bash", &pattern, effect, why));
            }
        }
        "Read" | "Edit" | "Write" | "MultiEdit" | "NotebookEdit" | "NotebookRead" | "LS" => {
            let action = if matches!(tool, "Read" | "NotebookRead" | "LS") {
                "read"
            } else {
                "edit"
            };
            let (patterns, wider) = match spec {
                Some(spec) => path_patterns(spec),
                None => (vec!["*".to_string()], false),
            };
            for pattern in &patterns {
                out.push(Rule::new(action, pattern, effect, why.clone()));
                // Claude Code's `*` stays in one directory: what toolgate's reaches beyond
                // is asked again, right after the allow.
                if effect == Effect::Allow
                    && wider
                    && has_single_star(pattern)
                    && let Some(deeper) = deeper(pattern)
                {
                    out.push(Rule::new(
                        action,
                        &deeper,
                        Effect::Ask,
                        format!("{text}: Claude Code's * stays within one directory"),
                    ));
                }
            }
        }
        "WebFetch" => match spec {
            None | Some("*") => out.push(Rule::new("webfetch", "*", effect, why)),
            Some(spec) => match spec.strip_prefix("domain:") {
                Some(host) if literal_safe(host.trim_start_matches("*.")) && !host.is_empty() => {
                    for pattern in url_patterns(host.trim(), effect) {
                        out.push(Rule::new("webfetch", &pattern, effect, why.clone()));
                    }
                    if effect != Effect::Allow {
                        imported.note(format!(
                            "{text}: toolgate compares URLs as written, so a host spelled in other letter case is not covered"
                        ));
                    }
                }
                _ if effect == Effect::Allow => {
                    skip(imported, "is not imported: only domain:HOST specifiers are understood")
                }
                _ => out.push(Rule::new(
                    "webfetch",
                    "*",
                    effect,
                    format!("{why}; widened to every URL"),
                )),
            },
        },
        "WebSearch" => out.push(Rule::new("websearch", "*", effect, why)),
        "Glob" | "Grep" => {
            if spec.is_some() && effect == Effect::Allow {
                skip(
                    imported,
                    "is not imported: toolgate's glob and grep rules do not take a specifier",
                );
            } else {
                out.push(Rule::new(&tool.to_lowercase(), "*", effect, why));
            }
        }
        "TodoWrite" | "TodoRead" => out.push(Rule::new("todowrite", "*", effect, why)),
        "Task" | "Agent" => out.push(Rule::new("task", spec.unwrap_or("*"), effect, why)),
        "Skill" => out.push(Rule::new("skill", spec.unwrap_or("*"), effect, why)),
        "BashOutput" => out.push(Rule::new("shell_output", "*", effect, why)),
        "KillShell" | "KillBash" => out.push(Rule::new("shell_kill", "*", effect, why)),
        _ if tool.starts_with("mcp__") => {
            let rest = &tool["mcp__".len()..];
            let (server, name) = match rest.split_once("__") {
                Some((server, name)) => (server, Some(name)),
                None => (rest, None),
            };
            let tool_part = match name {
                None | Some("*") => "*".to_string(),
                Some(name) if literal_safe(name) => mcp_name(name),
                Some(name) => name.to_string(),
            };
            if server == "*" || !literal_safe(server) {
                // `*_*` would name toolgate's own tools too (shell_list, external_directory):
                // the servers this import knows stand in.
                if servers.is_empty() {
                    skip(
                        imported,
                        "is not imported: it names every MCP server, and no server was imported",
                    );
                }
                for known in servers {
                    out.push(Rule::new(&format!("{known}_{tool_part}"), "*", effect, why.clone()));
                }
            } else {
                let action = match name {
                    Some(name) if name != "*" && literal_safe(name) => mcp_tool(server, name),
                    _ => format!("{}_{tool_part}", mcp_name(server)),
                };
                out.push(Rule::new(&action, "*", effect, why));
            }
        }
        _ => skip(imported, "is not imported: toolgate has no such tool"),
    }
    out
}

fn list_name(effect: Effect) -> &'static str {
    match effect {
        Effect::Allow => "allow",
        Effect::Ask => "ask",
        Effect::Deny => "deny",
    }
}

/// A path with `.` and `..` taken out as written (Claude Code resolves an additional
/// directory against the working directory; toolgate's resources are such paths).
fn normalize(path: &Path) -> String {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out.to_string_lossy().into_owned()
}

/// Reads Claude Code's files (or `from`) into toolgate rules and servers.
pub(super) fn import(places: &Places, from: &[PathBuf]) -> Result<Imported, Failure> {
    let mut imported = Imported::default();
    let mut lists = Lists::default();
    let home_state = places.in_home(".claude.json");
    let files: Vec<PathBuf> = if from.is_empty() {
        let mut files = settings_files(places);
        files.push(places.dir.join(".mcp.json"));
        files.extend(home_state.clone());
        files.into_iter().filter(|file| file.is_file()).collect()
    } else {
        from.to_vec()
    };
    for file in &files {
        let is_home_state = home_state.as_ref() == Some(file);
        read_file(file, &mut lists, is_home_state, &places.dir)?;
        imported.sources.push(file.clone());
    }
    // Servers first: the rules and the baseline name them.
    let mut names: Vec<String> = Vec::new();
    for (name, value, path) in &lists.servers {
        if names.contains(&mcp_name(name)) {
            imported.note(format!(
                "MCP server {name:?} of {} is defined again later; the first is kept",
                path.display()
            ));
            continue;
        }
        if let Some(mut value) = server(name, value, &mut imported) {
            if lists.disabled_servers.contains(name) {
                value["enabled"] = Value::Bool(false);
            }
            names.push(mcp_name(name));
            imported.servers.push(Server {
                name: name.clone(),
                value,
                why: format!("from {}", path.display()),
            });
        }
    }
    // The baseline: what Claude Code does where no rule matches.
    let (baseline, edits) = match lists.mode.as_ref().map(|(mode, _)| mode.as_str()) {
        None | Some("default") => (Effect::Ask, Effect::Ask),
        Some("acceptEdits") => (Effect::Ask, Effect::Allow),
        Some("dontAsk") => (Effect::Deny, Effect::Deny),
        Some(mode) => {
            imported.note(format!(
                "defaultMode {mode:?} is not imported: toolgate asks where Claude Code's default mode would (plan mode is toolgate's `plan` agent; bypassPermissions has no counterpart)"
            ));
            (Effect::Ask, Effect::Ask)
        }
    };
    let mode = lists
        .mode
        .as_ref()
        .map(|(mode, path)| format!("defaultMode {mode:?} ({})", path.display()))
        .unwrap_or_else(|| "Claude Code's default mode".into());
    for action in ["bash", "webfetch", "websearch"] {
        imported
            .rules
            .push(Rule::baseline(action, baseline, format!("{mode}: no rule matched")));
    }
    imported
        .rules
        .push(Rule::baseline("edit", edits, format!("{mode}: no rule matched")));
    for name in &names {
        imported.rules.push(Rule::baseline(
            &format!("{name}_*"),
            baseline,
            format!("{mode}: MCP tools ask"),
        ));
    }
    for (directory, path) in &lists.directories {
        let directory = directory.trim_end_matches('/');
        let why = format!("additionalDirectories {directory:?} ({})", path.display());
        let directory = if directory.starts_with('/') || directory.starts_with("~/") {
            directory.to_string()
        } else {
            normalize(&places.dir.join(directory))
        };
        if !literal_safe(&directory) {
            imported.note(format!("{why} is not imported: it holds a wildcard character"));
            continue;
        }
        imported
            .rules
            .push(Rule::new("external_directory", &directory, Effect::Allow, why.clone()));
        imported.rules.push(Rule::new(
            "external_directory",
            &format!("{directory}/*"),
            Effect::Allow,
            why,
        ));
    }
    // Claude Code: deny, then ask, then allow, whatever the order; toolgate: the last match.
    for (effect, list) in [
        (Effect::Allow, &lists.allow),
        (Effect::Ask, &lists.ask),
        (Effect::Deny, &lists.deny),
    ] {
        for (rule, path) in list {
            let origin = path.display().to_string();
            let rules = map_rule(rule, effect, &origin, &names, &mut imported);
            imported.rules.extend(rules);
        }
    }
    Ok(imported)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_tool_name_is_the_gateways_shortened_name() {
        let long = "a_tool_whose_name_is_far_longer_than_the_sixty_four_characters_allowed";
        let rules = one(&format!("mcp__gh__{long}"), Effect::Deny);
        let expected = toolgate_mcp_client::tool_name("gh", long).unwrap_or_default();
        assert!(expected.len() <= 64 && expected != format!("gh_{long}"), "{expected}");
        assert_eq!(rules, vec![(expected, "*".to_string(), Effect::Deny)]);
        assert_eq!(
            one("mcp__gh__list", Effect::Deny),
            vec![("gh_list".to_string(), "*".to_string(), Effect::Deny)]
        );
    }

    fn one(text: &str, effect: Effect) -> Vec<(String, String, Effect)> {
        let mut imported = Imported::default();
        map_rule(text, effect, "f", &["gh".into()], &mut imported)
            .into_iter()
            .map(|r| (r.action, r.resource, r.effect))
            .collect()
    }

    fn resources(text: &str, effect: Effect) -> Vec<String> {
        one(text, effect).into_iter().map(|(_, r, _)| r).collect()
    }

    /// The documented specifier forms (code.claude.com/docs/en/permissions).
    #[test]
    fn the_documented_forms() {
        assert_eq!(resources("Bash(git status:*)", Effect::Allow), ["git status *"]);
        assert_eq!(resources("Bash(npm run test *)", Effect::Allow), ["npm run test *"]);
        assert_eq!(resources("Bash", Effect::Allow), ["*"]);
        assert_eq!(resources("Bash(*)", Effect::Deny), ["*"]);
        assert_eq!(resources("Read(./secrets/**)", Effect::Deny), ["secrets/**"]);
        assert_eq!(resources("Read(~/x)", Effect::Deny), ["~/x"]);
        assert_eq!(resources("Read(//abs/path)", Effect::Deny), ["/abs/path"]);
        assert_eq!(resources("Read(.env)", Effect::Deny), [".env", "*/.env"]);
        assert_eq!(resources("Read(*.env)", Effect::Deny), ["*.env"]);
        assert_eq!(
            resources("Edit(/src/**/*.ts)", Effect::Deny),
            ["src/**/*.ts", "src/*.ts"]
        );
        // A trailing slash alone does not anchor: a directory of that name at any depth.
        assert_eq!(resources("Write(docs/)", Effect::Ask), ["docs/*", "*/docs/*"]);
        assert_eq!(
            one("mcp__gh", Effect::Deny),
            [("gh_*".into(), "*".into(), Effect::Deny)]
        );
        assert_eq!(
            one("mcp__gh__*", Effect::Allow),
            [("gh_*".into(), "*".into(), Effect::Allow)]
        );
        assert_eq!(
            one("mcp__gh__create_issue", Effect::Ask),
            [("gh_create_issue".into(), "*".into(), Effect::Ask)]
        );
        assert_eq!(
            one("WebSearch", Effect::Allow),
            [("websearch".into(), "*".into(), Effect::Allow)]
        );
        assert_eq!(
            resources("WebFetch(domain:example.com)", Effect::Allow),
            [
                "https://example.com",
                "https://example.com/*",
                "http://example.com",
                "http://example.com/*"
            ]
        );
        assert!(resources("WebFetch(domain:example.com)", Effect::Deny).contains(&"*://example.com/*".to_string()));
    }

    /// What toolgate cannot say exactly is never an allow.
    #[test]
    fn unclear_allows_are_left_out_and_wider_ones_asked_again() {
        assert!(one("Bash(echo a?b)", Effect::Allow).is_empty());
        assert_eq!(resources("Bash(echo a?b)", Effect::Deny), ["echo a?b"]);
        assert!(one("WebFetch(https://x/*)", Effect::Allow).is_empty());
        assert_eq!(resources("WebFetch(https://x/*)", Effect::Deny), ["*"]);
        assert!(one("Frobnicate", Effect::Allow).is_empty());
        assert_eq!(
            one("Edit(src/*.ts)", Effect::Allow),
            [
                ("edit".into(), "src/*.ts".into(), Effect::Allow),
                ("edit".into(), "src/*/*.ts".into(), Effect::Ask)
            ]
        );
        // `mcp__*` names every server: only the known ones, never toolgate's own tools.
        assert_eq!(one("mcp__*", Effect::Deny), [("gh_*".into(), "*".into(), Effect::Deny)]);
    }

    fn baseline(mode: &str) -> Vec<(String, Effect)> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("settings.json");
        std::fs::write(&file, format!("{{\"permissions\": {{\"defaultMode\": \"{mode}\"}}}}")).unwrap();
        let places = Places {
            dir: dir.path().to_path_buf(),
            home: None,
        };
        let imported = import(&places, &[file]).unwrap_or_else(|failure| panic!("{}", failure.message));
        imported.rules.into_iter().map(|r| (r.action, r.effect)).collect()
    }

    /// What no rule matches follows `defaultMode`; a mode toolgate has no counterpart
    /// for keeps the asks.
    #[test]
    fn the_baseline_follows_the_default_mode() {
        let edit = |rules: &[(String, Effect)]| rules.iter().find(|(a, _)| a == "edit").map(|(_, e)| *e);
        let bash = |rules: &[(String, Effect)]| rules.iter().find(|(a, _)| a == "bash").map(|(_, e)| *e);
        assert_eq!(edit(&baseline("default")), Some(Effect::Ask));
        assert_eq!(edit(&baseline("acceptEdits")), Some(Effect::Allow));
        assert_eq!(bash(&baseline("acceptEdits")), Some(Effect::Ask));
        assert_eq!(bash(&baseline("dontAsk")), Some(Effect::Deny));
        assert_eq!(bash(&baseline("bypassPermissions")), Some(Effect::Ask));
    }

    /// `${VAR}` becomes `{env:VAR}`.
    #[test]
    fn variables_are_toolgates() {
        let mut imported = Imported::default();
        assert_eq!(expand("Bearer ${TOKEN}", &mut imported, "s"), "Bearer {env:TOKEN}");
        assert_eq!(expand("${A:-https://x}/y", &mut imported, "s"), "https://x/y");
        assert_eq!(imported.notes.len(), 1);
    }
}
