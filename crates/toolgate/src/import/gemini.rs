//! Gemini CLI: the `[[rule]]`s of its policy TOML files and the `tools` and `mcpServers`
//! of its `settings.json`.
//!
//! Gemini CLI's policy engine (github.com/google-gemini/gemini-cli,
//! docs/reference/policy-engine.md): the matching rule of the highest priority decides,
//! a file's `priority` (0–999) counting as `tier + priority/1000` (workspace 3, user 4,
//! admin 5); settings add rules of fixed priorities (packages/core/src/policy/config.ts).
//! toolgate's last match wins, so the rules are emitted by priority, lowest first; at one
//! priority the stricter effect comes last.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{Effect, Imported, Places, Rule, Server, literal_safe, read_text};
use crate::Failure;

/// Where the files are looked for, for the message when none is found.
pub(super) const LOOKED: &str = "~/.gemini/policies/*.toml, ~/.gemini/settings.json, .gemini/policies/*.toml, \
.gemini/settings.json, /etc/gemini-cli/policies/*.toml";

/// The priorities settings give their rules (config.ts: `USER_POLICY_TIER + …`).
const MCP_EXCLUDED: f64 = 4.9;
const EXCLUDE_TOOLS: f64 = 4.4;
const ALLOWED_TOOLS: f64 = 4.3;
const TRUSTED_MCP_SERVER: f64 = 4.2;
const ALLOWED_MCP_SERVER: f64 = 4.1;

/// A rule with the priority it has in Gemini CLI.
struct Ranked {
    priority: f64,
    rule: Rule,
}

/// What a policy rule's tool name is in toolgate: its actions, or none.
fn actions(tool: &str, servers: &[String]) -> Option<Vec<String>> {
    let one = |action: &str| Some(vec![action.to_string()]);
    match tool {
        "run_shell_command" | "run_shell" | "shell" => one("bash"),
        "read_file" | "read_many_files" | "list_directory" => one("read"),
        "write_file" | "replace" | "edit" => one("edit"),
        "glob" => one("glob"),
        "grep_search" | "search_file_content" | "grep" => one("grep"),
        "web_fetch" => one("webfetch"),
        "google_web_search" => one("websearch"),
        "write_todos" => one("todowrite"),
        "ask_user" => one("question"),
        "activate_skill" => one("skill"),
        "*" => one("*"),
        "mcp_*" => Some(servers.iter().map(|server| format!("{server}_*")).collect()),
        _ => {
            // `mcp_SERVER_TOOL`: the server is up to the first `_` after `mcp_`.
            let rest = tool.strip_prefix("mcp_")?;
            let (server, name) = rest.split_once('_').unwrap_or((rest, "*"));
            if server == "*" {
                return Some(servers.iter().map(|s| format!("{s}_{name}")).collect());
            }
            Some(vec![format!("{}_{name}", super::claude::mcp_name(server))])
        }
    }
}

/// The literal start of a regular expression, and whether it is all literal.
fn literal_prefix(regex: &str) -> (String, bool) {
    let mut out = String::new();
    let mut chars = regex.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.peek() {
                Some(&next) if !next.is_ascii_alphanumeric() => {
                    out.push(next);
                    chars.next();
                }
                _ => return (out, false),
            },
            '.' | '^' | '$' | '*' | '+' | '?' | '(' | ')' | '[' | ']' | '{' | '}' | '|' => {
                // A quantifier applies to the character before: it is not literal.
                if matches!(c, '*' | '+' | '?' | '{') {
                    out.pop();
                }
                return (out, false);
            }
            c => out.push(c),
        }
    }
    (out, true)
}

fn text_list(value: Option<&toml::Value>) -> Option<Vec<String>> {
    match value? {
        toml::Value::String(text) => Some(vec![text.clone()]),
        toml::Value::Array(items) => Some(items.iter().filter_map(|i| i.as_str().map(str::to_string)).collect()),
        _ => None,
    }
}

/// The rules of one policy file at `tier`.
fn read_policy(
    text: &str,
    file: &Path,
    tier: f64,
    servers: &[String],
    imported: &mut Imported,
    out: &mut Vec<Ranked>,
) -> Result<(), Failure> {
    let fail = |message: String| Failure::usage(format!("{}: {message}", file.display()));
    let table: toml::Table = text
        .parse()
        .map_err(|error: toml::de::Error| fail(error.message().to_string()))?;
    let Some(rules) = table.get("rule") else {
        return Ok(());
    };
    let Some(rules) = rules.as_array() else {
        return Err(fail("rule: not an array of tables".into()));
    };
    for (index, rule) in rules.iter().enumerate() {
        let origin = format!("{} rule #{}", file.display(), index + 1);
        let Some(rule) = rule.as_table() else {
            return Err(fail(format!("rule #{}: not a table", index + 1)));
        };
        let effect = match rule.get("decision").and_then(toml::Value::as_str) {
            Some("allow") => Effect::Allow,
            Some("ask_user") => Effect::Ask,
            Some("deny") => Effect::Deny,
            other => {
                return Err(fail(format!(
                    "rule #{}: decision {other:?} is not allow, deny or ask_user",
                    index + 1
                )));
            }
        };
        let priority = match rule.get("priority") {
            Some(toml::Value::Integer(p)) if (0..=999).contains(p) => *p as f64,
            _ => {
                return Err(fail(format!(
                    "rule #{}: priority must be an integer from 0 to 999",
                    index + 1
                )));
            }
        };
        let priority = tier + priority / 1000.0;
        let mut why = format!("{origin}, priority {priority:.3}");
        if let Some(message) = rule
            .get("denyMessage")
            .or_else(|| rule.get("deny_message"))
            .and_then(toml::Value::as_str)
        {
            why.push_str(&format!(": {message}"));
        }
        // Conditions toolgate has no counterpart for: the rule then holds everywhere, so
        // an allow is left out and an ask or a deny is an ask (unclear → ask).
        let mut unclear: Vec<String> = Vec::new();
        if let Some(modes) = text_list(rule.get("modes"))
            && !modes.is_empty()
            && !modes.iter().any(|m| m == "default")
        {
            imported.note(format!(
                "{origin} is not imported: it applies only in the modes {modes:?}, not in the default one"
            ));
            continue;
        }
        for key in ["subagent", "toolAnnotations", "interactive"] {
            if rule.contains_key(key) {
                unclear.push(format!("its {key} condition"));
            }
        }
        if tier < 4.0 && effect == Effect::Allow {
            imported.note(format!(
                "{origin} is not imported: Gemini CLI does not apply workspace policies yet (policy-engine.md), so its allow would be new"
            ));
            continue;
        }
        let mcp = rule.get("mcpName").and_then(toml::Value::as_str);
        let tools = text_list(rule.get("toolName")).unwrap_or_else(|| vec!["*".into()]);
        let mut targets: Vec<String> = Vec::new();
        for tool in &tools {
            let named = match mcp {
                Some("*") => Some(servers.iter().map(|s| format!("{s}_{tool}")).collect()),
                Some(server) => Some(vec![format!("{}_{tool}", super::claude::mcp_name(server))]),
                None => actions(tool, servers),
            };
            match named {
                Some(list) => targets.extend(list),
                None => imported.note(format!("{origin}: tool {tool:?} has no toolgate counterpart")),
            }
        }
        // The resources: a shell command's prefixes, or everything.
        let mut resources: Vec<String> = vec!["*".into()];
        if let Some(prefixes) = text_list(rule.get("commandPrefix")) {
            resources = Vec::new();
            for prefix in prefixes {
                if !literal_safe(&prefix) && effect == Effect::Allow {
                    imported.note(format!(
                        "{origin}: commandPrefix {prefix:?} holds * or ?, which are wildcards in toolgate; not imported"
                    ));
                    continue;
                }
                resources.push(format!("{} *", prefix.trim_end()));
            }
            targets.retain(|t| t == "bash" || t == "*");
            if targets.is_empty() || tools.iter().any(|t| t == "*") {
                targets = vec!["bash".into()];
            }
        } else if let Some(regex) = rule.get("commandRegex").and_then(toml::Value::as_str) {
            let (prefix, exact) = literal_prefix(regex);
            if exact && literal_safe(&prefix) {
                resources = vec![format!("{prefix}*")];
            } else if effect == Effect::Allow {
                imported.note(format!(
                    "{origin}: commandRegex {regex:?} is not a plain prefix; the allow is not imported"
                ));
                continue;
            } else {
                unclear.push(format!("commandRegex {regex:?}, read as the prefix {prefix:?}"));
                let prefix = if literal_safe(&prefix) { prefix } else { String::new() };
                resources = vec![format!("{prefix}*")];
            }
            targets = vec!["bash".into()];
        } else if let Some(pattern) = rule.get("argsPattern").and_then(toml::Value::as_str) {
            unclear.push(format!("argsPattern {pattern:?}"));
        }
        let mut effect = effect;
        if !unclear.is_empty() {
            if effect == Effect::Allow {
                imported.note(format!(
                    "{origin} is not imported: toolgate cannot check {}",
                    unclear.join(", ")
                ));
                continue;
            }
            imported.note(format!(
                "{origin}: toolgate cannot check {}; it asks for every such call",
                unclear.join(", ")
            ));
            effect = Effect::Ask;
        }
        for target in &targets {
            for resource in &resources {
                out.push(Ranked {
                    priority,
                    rule: Rule::new(target, resource, effect, why.clone()),
                });
            }
        }
    }
    Ok(())
}

/// `${VAR}` (and `$VAR`) in settings values as toolgate's `{env:VAR}`.
fn expand(text: &str, imported: &mut Imported, server: &str) -> String {
    let braced = super::claude::expand(text, imported, server);
    let mut out = String::new();
    let mut chars = braced.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(|n| n.is_ascii_alphabetic() || *n == '_') {
            let mut name = String::new();
            while let Some(&n) = chars.peek() {
                if n.is_ascii_alphanumeric() || n == '_' {
                    name.push(n);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push_str(&format!("{{env:{name}}}"));
        } else {
            out.push(c);
        }
    }
    out
}

fn json_strings(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items.iter().filter_map(|i| i.as_str().map(str::to_string)).collect(),
        _ => Vec::new(),
    }
}

/// A settings file's `mcpServers` (servers and their names), read before the rules.
fn read_servers(root: &Map<String, Value>, file: &Path, imported: &mut Imported, out: &mut Vec<Ranked>) {
    let Some(Value::Object(servers)) = root.get("mcpServers") else {
        return;
    };
    for (name, server) in servers {
        let Value::Object(server) = server else {
            imported.note(format!("MCP server {name:?} ({}): not an object", file.display()));
            continue;
        };
        let known = [
            "command",
            "args",
            "env",
            "cwd",
            "url",
            "httpUrl",
            "headers",
            "timeout",
            "trust",
            "includeTools",
            "excludeTools",
            "type",
        ];
        for key in server.keys().filter(|key| !known.contains(&key.as_str())) {
            imported.note(format!("MCP server {name:?}: {key:?} is not imported"));
        }
        let mut value = if let Some(command) = server.get("command").and_then(Value::as_str) {
            let mut line = vec![Value::String(expand(command, imported, name))];
            line.extend(
                json_strings(server.get("args"))
                    .iter()
                    .map(|a| Value::String(expand(a, imported, name))),
            );
            let mut value = json!({"type": "local", "command": line});
            if let Some(Value::Object(env)) = server.get("env") {
                let env: Map<String, Value> = env
                    .iter()
                    .filter_map(|(k, v)| {
                        v.as_str()
                            .map(|v| (k.clone(), Value::String(expand(v, imported, name))))
                    })
                    .collect();
                value["environment"] = Value::Object(env);
            }
            if let Some(cwd) = server.get("cwd").and_then(Value::as_str) {
                value["cwd"] = Value::String(cwd.to_string());
            }
            value
        } else if let Some(url) = server
            .get("httpUrl")
            .or_else(|| server.get("url"))
            .and_then(Value::as_str)
        {
            let mut value = json!({"type": "remote", "url": expand(url, imported, name)});
            if let Some(Value::Object(headers)) = server.get("headers") {
                let headers: Map<String, Value> = headers
                    .iter()
                    .filter_map(|(k, v)| {
                        v.as_str()
                            .map(|v| (k.clone(), Value::String(expand(v, imported, name))))
                    })
                    .collect();
                value["headers"] = Value::Object(headers);
            }
            value
        } else {
            imported.note(format!("MCP server {name:?}: neither command nor url, not imported"));
            continue;
        };
        if let Some(ms) = server.get("timeout").and_then(Value::as_u64) {
            value["timeout"] = json!(ms);
        }
        let prefix = super::claude::mcp_name(name);
        let origin = format!("mcpServers.{name} ({})", file.display());
        if server.get("trust").and_then(Value::as_bool) == Some(true) {
            out.push(Ranked {
                priority: TRUSTED_MCP_SERVER,
                rule: Rule::new(&format!("{prefix}_*"), "*", Effect::Allow, format!("{origin}: trust")),
            });
        }
        if server.contains_key("includeTools") {
            out.push(Ranked {
                priority: MCP_EXCLUDED,
                rule: Rule::new(
                    &format!("{prefix}_*"),
                    "*",
                    Effect::Deny,
                    format!("{origin}: only includeTools are offered"),
                ),
            });
            for tool in json_strings(server.get("includeTools")) {
                out.push(Ranked {
                    priority: MCP_EXCLUDED + 0.01,
                    rule: Rule::new(
                        &super::claude::mcp_tool(name, &tool),
                        "*",
                        Effect::Ask,
                        format!("{origin}: includeTools"),
                    ),
                });
            }
        }
        for tool in json_strings(server.get("excludeTools")) {
            out.push(Ranked {
                priority: MCP_EXCLUDED + 0.02,
                rule: Rule::new(
                    &super::claude::mcp_tool(name, &tool),
                    "*",
                    Effect::Deny,
                    format!("{origin}: excludeTools"),
                ),
            });
        }
        imported.servers.retain(|s| s.name != *name);
        imported.servers.push(Server {
            name: name.clone(),
            value,
            why: format!("from {origin}"),
        });
    }
}

/// A settings file's `tools.allowed`, `tools.exclude`, `mcp.allowed` and `mcp.excluded`.
fn read_settings_rules(
    root: &Map<String, Value>,
    file: &Path,
    servers: &[String],
    imported: &mut Imported,
    out: &mut Vec<Ranked>,
) {
    let origin = |key: &str| format!("{key} ({})", file.display());
    let tools = root.get("tools");
    let mut narrowed = false;
    for entry in json_strings(tools.and_then(|t| t.get("allowed"))) {
        // `run_shell_command(git status)`: a command prefix; other tools' arguments were
        // never matched (config.ts).
        let (tool, args) = match entry.split_once('(') {
            Some((tool, rest)) if rest.ends_with(')') => (tool.to_string(), Some(rest[..rest.len() - 1].to_string())),
            _ => (entry.clone(), None),
        };
        let Some(targets) = actions(&tool, servers) else {
            imported.note(format!(
                "{}: {entry:?} has no toolgate counterpart",
                origin("tools.allowed")
            ));
            continue;
        };
        for target in targets {
            let resource = match (&args, target.as_str()) {
                (Some(prefix), "bash") => {
                    if !literal_safe(prefix) {
                        imported.note(format!(
                            "{}: {entry:?} holds * or ?; not imported",
                            origin("tools.allowed")
                        ));
                        continue;
                    }
                    narrowed = true;
                    format!("{} *", prefix.trim_end())
                }
                _ => "*".to_string(),
            };
            out.push(Ranked {
                priority: ALLOWED_TOOLS,
                rule: Rule::new(&target, &resource, Effect::Allow, origin("tools.allowed")),
            });
        }
    }
    if narrowed {
        // A narrowed shell tool denies every other command (config.ts, "Narrowing
        // Enforcement").
        out.push(Ranked {
            priority: ALLOWED_TOOLS - 0.01,
            rule: Rule::new(
                "bash",
                "*",
                Effect::Deny,
                format!("{}: only the listed commands", origin("tools.allowed")),
            ),
        });
    }
    for entry in json_strings(tools.and_then(|t| t.get("exclude"))) {
        let tool = entry.split_once('(').map_or(entry.as_str(), |(tool, _)| tool);
        match actions(tool, servers) {
            Some(targets) => {
                for target in targets {
                    out.push(Ranked {
                        priority: EXCLUDE_TOOLS,
                        rule: Rule::new(&target, "*", Effect::Deny, origin("tools.exclude")),
                    });
                }
            }
            None => imported.note(format!(
                "{}: {entry:?} has no toolgate counterpart",
                origin("tools.exclude")
            )),
        }
    }
    if tools.and_then(|t| t.get("core")).is_some() {
        imported.note(format!(
            "{} is not imported: toolgate offers its own tools",
            origin("tools.core")
        ));
    }
    let mcp = root.get("mcp");
    for (key, effect, priority) in [
        ("allowed", Effect::Allow, ALLOWED_MCP_SERVER),
        ("excluded", Effect::Deny, MCP_EXCLUDED),
    ] {
        for server in json_strings(mcp.and_then(|m| m.get(key))) {
            let names: Vec<String> = if server == "*" {
                servers.to_vec()
            } else {
                vec![super::claude::mcp_name(&server)]
            };
            for name in names {
                out.push(Ranked {
                    priority,
                    rule: Rule::new(&format!("{name}_*"), "*", effect, origin(&format!("mcp.{key}"))),
                });
            }
        }
    }
}

/// Reads Gemini CLI's files (or `from`) into toolgate rules and servers.
pub(super) fn import(places: &Places, from: &[PathBuf]) -> Result<Imported, Failure> {
    let mut imported = Imported::default();
    // (file, tier) for policies; settings files apart.
    let (policies, settings): (Vec<(PathBuf, f64)>, Vec<PathBuf>) = if from.is_empty() {
        let mut policies = Vec::new();
        policies.extend(
            super::files_in(&places.dir.join(".gemini/policies"), "toml")
                .into_iter()
                .map(|f| (f, 3.0)),
        );
        if let Some(dir) = places.in_home(".gemini/policies") {
            policies.extend(super::files_in(&dir, "toml").into_iter().map(|f| (f, 4.0)));
        }
        policies.extend(
            super::files_in(Path::new("/etc/gemini-cli/policies"), "toml")
                .into_iter()
                .map(|f| (f, 5.0)),
        );
        let settings = places
            .in_home(".gemini/settings.json")
            .into_iter()
            .chain([places.dir.join(".gemini/settings.json")])
            .filter(|f| f.is_file())
            .collect();
        (policies, settings)
    } else {
        let (toml, json): (Vec<PathBuf>, Vec<PathBuf>) = from
            .iter()
            .cloned()
            .partition(|f| f.extension().is_some_and(|e| e == "toml"));
        (toml.into_iter().map(|f| (f, 4.0)).collect(), json)
    };
    let mut ranked = Vec::new();
    let mut roots = Vec::new();
    for file in &settings {
        let text = read_text(file)?;
        let value: Value = jsonc_parser::parse_to_serde_value(&text, &Default::default())
            .map_err(|error| Failure::usage(format!("{}: {error}", file.display())))?;
        let Value::Object(root) = value else {
            return Err(Failure::usage(format!("{}: not a JSON object", file.display())));
        };
        read_servers(&root, file, &mut imported, &mut ranked);
        roots.push((root, file.clone()));
        imported.sources.push(file.clone());
    }
    let servers: Vec<String> = imported
        .servers
        .iter()
        .map(|s| super::claude::mcp_name(&s.name))
        .collect();
    for (root, file) in &roots {
        read_settings_rules(root, file, &servers, &mut imported, &mut ranked);
    }
    for (file, tier) in &policies {
        read_policy(&read_text(file)?, file, *tier, &servers, &mut imported, &mut ranked)?;
        imported.sources.push(file.clone());
    }
    // The baseline: Gemini CLI's default policies ask for the shell, writes, fetches and
    // MCP tools (read-only tools are allowed, as toolgate's defaults do).
    for action in ["bash", "edit", "webfetch"] {
        imported.rules.push(Rule::baseline(
            action,
            Effect::Ask,
            "Gemini CLI's default policy: ask_user",
        ));
    }
    for server in &servers {
        imported.rules.push(Rule::baseline(
            &format!("{server}_*"),
            Effect::Ask,
            "Gemini CLI's default policy: ask_user",
        ));
    }
    // Lowest priority first; at one priority the stricter last (the sort is stable).
    ranked.sort_by(|a, b| {
        a.priority
            .total_cmp(&b.priority)
            .then(a.rule.effect.cmp(&b.rule.effect))
    });
    imported.rules.extend(ranked.into_iter().map(|r| r.rule));
    Ok(imported)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(text: &str) -> (Vec<(String, String, Effect)>, Imported) {
        let mut imported = Imported::default();
        let mut ranked = Vec::new();
        read_policy(
            text,
            Path::new("p.toml"),
            4.0,
            &["jira".into()],
            &mut imported,
            &mut ranked,
        )
        .unwrap_or_else(|failure| panic!("{}", failure.message));
        ranked.sort_by(|a, b| {
            a.priority
                .total_cmp(&b.priority)
                .then(a.rule.effect.cmp(&b.rule.effect))
        });
        (
            ranked
                .into_iter()
                .map(|r| (r.rule.action, r.rule.resource, r.rule.effect))
                .collect(),
            imported,
        )
    }

    /// The documented examples (docs/reference/policy-engine.md), highest priority last.
    #[test]
    fn documented_rules_in_priority_order() {
        let (rules, _) = policy(
            "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"git\"\ndecision = \"ask_user\"\npriority = 100\n\n[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = [\"git status\", \"git diff\"]\ndecision = \"allow\"\npriority = 200\n\n[[rule]]\nmcpName = \"my-jira-server\"\ntoolName = \"search\"\ndecision = \"allow\"\npriority = 200\n\n[[rule]]\ntoolName = [\"write_file\", \"replace\"]\ndecision = \"ask_user\"\npriority = 10\n\n[[rule]]\nmcpName = \"untrusted-server\"\ndecision = \"deny\"\npriority = 500\n",
        );
        assert_eq!(
            rules,
            [
                ("edit".to_string(), "*".to_string(), Effect::Ask),
                ("edit".into(), "*".into(), Effect::Ask),
                ("bash".into(), "git *".into(), Effect::Ask),
                ("bash".into(), "git status *".into(), Effect::Allow),
                ("bash".into(), "git diff *".into(), Effect::Allow),
                ("my-jira-server_search".into(), "*".into(), Effect::Allow),
                ("untrusted-server_*".into(), "*".into(), Effect::Deny),
            ]
        );
    }

    /// A regular expression that is not a plain prefix: an allow is left out, a deny asks.
    #[test]
    fn regexes_fail_closed() {
        let (rules, imported) = policy(
            "[[rule]]\ntoolName = \"run_shell_command\"\ncommandRegex = \"git (commit|push)\"\ndecision = \"allow\"\npriority = 1\n[[rule]]\ntoolName = \"run_shell_command\"\ncommandRegex = \"rm -rf .*\"\ndecision = \"deny\"\npriority = 2\n[[rule]]\ntoolName = \"run_shell_command\"\ncommandRegex = \"npm test\"\ndecision = \"allow\"\npriority = 3\n",
        );
        assert_eq!(
            rules,
            [
                ("bash".to_string(), "rm -rf *".to_string(), Effect::Ask),
                ("bash".into(), "npm test*".into(), Effect::Allow)
            ]
        );
        assert_eq!(imported.notes.len(), 2, "{:?}", imported.notes);
        assert_eq!(literal_prefix("a\\.b"), ("a.b".into(), true));
        assert_eq!(literal_prefix("ab+"), ("a".into(), false));
    }

    /// `tools.allowed` with a shell command narrows the shell: every other command is
    /// denied just below it (config.ts, "Narrowing Enforcement"); `tools.exclude` denies.
    #[test]
    fn settings_rules() {
        let root: Value = serde_json::json!({
            "tools": {"allowed": ["run_shell_command(git status)", "read_file"], "exclude": ["web_fetch"]},
            "mcp": {"excluded": ["bad"]}
        });
        let mut imported = Imported::default();
        let mut ranked = Vec::new();
        read_settings_rules(
            root.as_object().unwrap(),
            Path::new("settings.json"),
            &[],
            &mut imported,
            &mut ranked,
        );
        ranked.sort_by(|a, b| {
            a.priority
                .total_cmp(&b.priority)
                .then(a.rule.effect.cmp(&b.rule.effect))
        });
        let got: Vec<(String, String, Effect)> = ranked
            .into_iter()
            .map(|r| (r.rule.action, r.rule.resource, r.rule.effect))
            .collect();
        assert_eq!(
            got,
            [
                ("bash".to_string(), "*".to_string(), Effect::Deny),
                ("bash".into(), "git status *".into(), Effect::Allow),
                ("read".into(), "*".into(), Effect::Allow),
                ("webfetch".into(), "*".into(), Effect::Deny),
                ("bad_*".into(), "*".into(), Effect::Deny),
            ]
        );
    }

    /// A rule for other modes is not the default mode's; a bad file is refused.
    #[test]
    fn modes_and_errors() {
        let (rules, _) =
            policy("[[rule]]\ntoolName = \"*\"\ndecision = \"allow\"\npriority = 999\nmodes = [\"yolo\"]\n");
        assert!(rules.is_empty());
        let mut imported = Imported::default();
        let mut ranked = Vec::new();
        for bad in [
            "[[rule]]\ntoolName = \"x\"\ndecision = \"maybe\"\npriority = 1\n",
            "[[rule]]\ntoolName = \"x\"\ndecision = \"allow\"\npriority = 1000\n",
            "[[rule]\n",
        ] {
            assert!(
                read_policy(bad, Path::new("p.toml"), 4.0, &[], &mut imported, &mut ranked).is_err(),
                "{bad}"
            );
        }
    }
}
