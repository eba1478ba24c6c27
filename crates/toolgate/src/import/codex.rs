//! Codex: the `prefix_rule`s of its `.rules` files and the `[mcp_servers.NAME]` tables of
//! its `config.toml`.
//!
//! Codex's execpolicy (github.com/openai/codex, codex-rs/execpolicy/README.md): a rule's
//! `pattern` is a list of tokens, each a string or a list of alternatives, matched
//! against the start of a command's argv; `decision` is `allow` (the default), `prompt`
//! or `forbidden`; every rule that matches counts and the strictest decision wins. In
//! toolgate a pattern `git status *` matches `git status` and `git status -s`, the same
//! prefix; emitting every allow, then every prompt (ask), then every forbidden (deny)
//! makes toolgate's last match the strictest match, as in Codex.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::starlark::{self, Expr};
use super::{Effect, Imported, Places, Rule, Server, read_text};
use crate::Failure;

/// Where the files are looked for, for the message when none is found.
pub(super) const LOOKED: &str =
    "$CODEX_HOME (default ~/.codex)/config.toml and rules/*.rules, .codex/config.toml and .codex/rules/*.rules";

/// The most commands one rule's alternatives may spell out; past it an allow is left out
/// and an ask or a deny covers the prefix before the alternatives.
const MAX_SPELLINGS: usize = 256;

/// One `prefix_rule`, read.
#[derive(Clone, Debug)]
pub(super) struct PrefixRule {
    /// Each token's alternatives.
    pub(super) pattern: Vec<Vec<String>>,
    pub(super) effect: Effect,
    pub(super) justification: Option<String>,
    pub(super) not_match: Vec<Vec<String>>,
    pub(super) origin: String,
}

impl PrefixRule {
    /// Whether `argv` starts with this rule's pattern (Codex's match).
    pub(super) fn matches(&self, argv: &[String]) -> bool {
        argv.len() >= self.pattern.len()
            && self
                .pattern
                .iter()
                .zip(argv)
                .all(|(alternatives, word)| alternatives.contains(word))
    }
}

fn codex_home(places: &Places) -> Option<PathBuf> {
    match std::env::var_os("CODEX_HOME") {
        Some(home) if !home.is_empty() => Some(PathBuf::from(home)),
        _ => places.in_home(".codex"),
    }
}

/// A word toolgate shows as written in a bash command (no quoting, no expansion) and that
/// a wildcard pattern can hold as itself.
fn plain(word: &str) -> bool {
    !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%^".contains(&b))
}

fn strings(expr: &Expr, what: &str) -> Result<Vec<String>, String> {
    match expr {
        Expr::List(items) => items
            .iter()
            .map(|item| match item {
                Expr::Str(text) => Ok(text.clone()),
                _ => Err(format!("{what}: every entry must be a string")),
            })
            .collect(),
        _ => Err(format!("{what}: not a list")),
    }
}

/// An example: a list of tokens, or a string split as a shell would (`shlex`).
fn example(expr: &Expr) -> Result<Vec<String>, String> {
    match expr {
        Expr::Str(text) => split_words(text).ok_or_else(|| format!("example {text:?} has invalid shell syntax")),
        Expr::List(_) => strings(expr, "example"),
        _ => Err("an example must be a string or a list of strings".into()),
    }
}

/// POSIX-shell word splitting for examples (quotes and backslashes; no expansion).
pub(super) fn split_words(text: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\' | '$' | '`') => word.push(c),
                            '\n' => {}
                            c => {
                                word.push('\\');
                                word.push(c);
                            }
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') | None => {}
                    Some(c) => word.push(c),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
}

/// The `prefix_rule`s of one `.rules` file; its other statements become notes (or an
/// error when Codex would refuse them too).
pub(super) fn parse_rules(text: &str, file: &Path, imported: &mut Imported) -> Result<Vec<PrefixRule>, Failure> {
    let fail = |line: usize, message: String| Failure::usage(format!("{}:{line}: {message}", file.display()));
    let calls = starlark::parse(text).map_err(|error| fail(error.line, error.message))?;
    let mut rules = Vec::new();
    for call in calls {
        let origin = format!("{}:{}", file.display(), call.line);
        match call.name.as_str() {
            "prefix_rule" => {
                let pattern = match call.arg("pattern").or_else(|| call.args.first().map(|(_, v)| v)) {
                    Some(Expr::List(tokens)) if !tokens.is_empty() => tokens
                        .iter()
                        .map(|token| match token {
                            Expr::Str(word) => Ok(vec![word.clone()]),
                            Expr::List(_) => match strings(token, "a pattern alternative") {
                                Ok(alternatives) if !alternatives.is_empty() => Ok(alternatives),
                                Ok(_) => Err("pattern alternatives cannot be empty".to_string()),
                                Err(error) => Err(error),
                            },
                            _ => Err("a pattern element must be a string or a list of strings".into()),
                        })
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|error| fail(call.line, error))?,
                    _ => return Err(fail(call.line, "prefix_rule needs a non-empty pattern list".into())),
                };
                let effect = match call.arg("decision") {
                    None => Effect::Allow,
                    Some(Expr::Str(decision)) => match decision.as_str() {
                        "allow" => Effect::Allow,
                        "prompt" => Effect::Ask,
                        "forbidden" => Effect::Deny,
                        other => return Err(fail(call.line, format!("unknown decision {other:?}"))),
                    },
                    Some(_) => return Err(fail(call.line, "decision must be a string".into())),
                };
                let justification = match call.arg("justification") {
                    Some(Expr::Str(text)) => Some(text.clone()),
                    _ => None,
                };
                let examples = |key: &str| -> Result<Vec<Vec<String>>, Failure> {
                    match call.arg(key) {
                        None => Ok(Vec::new()),
                        Some(Expr::List(items)) => items
                            .iter()
                            .map(|item| example(item).map_err(|error| fail(call.line, format!("{key}: {error}"))))
                            .collect(),
                        Some(_) => Err(fail(call.line, format!("{key} must be a list"))),
                    }
                };
                let rule = PrefixRule {
                    pattern,
                    effect,
                    justification,
                    not_match: examples("not_match")?,
                    origin,
                };
                // Codex refuses a file whose examples do not hold; so does the import.
                for example in examples("match")? {
                    if !rule.matches(&example) {
                        return Err(fail(call.line, format!("match example {example:?} does not match the pattern")));
                    }
                }
                for example in &rule.not_match {
                    if rule.matches(example) {
                        return Err(fail(call.line, format!("not_match example {example:?} matches the pattern")));
                    }
                }
                rules.push(rule);
            }
            "network_rule" => {
                let host = match call.arg("host") {
                    Some(Expr::Str(host)) => host.clone(),
                    _ => return Err(fail(call.line, "network_rule needs a host".into())),
                };
                let decision = match call.arg("decision") {
                    Some(Expr::Str(decision)) => decision.clone(),
                    _ => return Err(fail(call.line, "network_rule needs a decision".into())),
                };
                let effect = match decision.as_str() {
                    "deny" | "forbidden" => Effect::Deny,
                    "prompt" => Effect::Ask,
                    _ => {
                        imported.note(format!(
                            "network_rule({host:?}, {decision:?}) ({origin}) is not imported: it governs Codex's sandbox network, and toolgate's webfetch is asked on its own"
                        ));
                        continue;
                    }
                };
                if !super::literal_safe(&host) || host.is_empty() {
                    imported.note(format!("network_rule({host:?}) ({origin}) is not imported: its host holds a wildcard"));
                    continue;
                }
                for pattern in super::claude::url_patterns(&host, effect) {
                    imported.rules.push(Rule::new(
                        "webfetch",
                        &pattern,
                        effect,
                        format!("network_rule {host} {decision} ({origin})"),
                    ));
                }
            }
            "host_executable" => imported.note(format!(
                "host_executable ({origin}) is not imported: toolgate decides a program by the name it runs under (README \"What decides a program\")"
            )),
            other => return Err(fail(call.line, format!("unknown function {other:?} (Codex would refuse it too)"))),
        }
    }
    Ok(rules)
}

/// The toolgate bash patterns of one rule and whether they were widened to a shorter
/// prefix, or why an allow cannot be imported.
fn patterns(rule: &PrefixRule) -> Result<(Vec<String>, bool), String> {
    let spellings: usize = rule
        .pattern
        .iter()
        .map(Vec::len)
        .try_fold(1usize, |total, n| total.checked_mul(n).filter(|t| *t <= MAX_SPELLINGS))
        .unwrap_or(usize::MAX);
    // The tokens every spelling shares: up to the first that is not plain, and (when the
    // alternatives are too many) up to the first with alternatives.
    let unsafe_at = rule
        .pattern
        .iter()
        .position(|alternatives| !alternatives.iter().all(|word| plain(word)));
    let cut = if spellings > MAX_SPELLINGS {
        rule.pattern.iter().position(|alternatives| alternatives.len() > 1)
    } else {
        None
    };
    let stop = match (unsafe_at, cut) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    if let Some(stop) = stop {
        let reason = if Some(stop) == unsafe_at {
            "a token that needs shell quoting, or holds * or ?, cannot be written in a toolgate pattern"
        } else {
            "its alternatives spell too many commands"
        };
        if rule.effect == Effect::Allow {
            return Err(reason.into());
        }
        // An ask or a deny covers the prefix before: stricter, never weaker.
        let mut widened = vec![String::new()];
        for alternatives in &rule.pattern[..stop] {
            widened = widened
                .iter()
                .flat_map(|prefix| alternatives.iter().map(move |word| format!("{prefix}{word} ")))
                .collect();
        }
        return Ok((widened.into_iter().map(|prefix| format!("{prefix}*")).collect(), true));
    }
    let mut spelled = vec![String::new()];
    for alternatives in &rule.pattern {
        spelled = spelled
            .iter()
            .flat_map(|prefix| {
                alternatives.iter().map(move |word| {
                    if prefix.is_empty() {
                        word.clone()
                    } else {
                        format!("{prefix} {word}")
                    }
                })
            })
            .collect();
    }
    Ok((spelled.into_iter().map(|prefix| format!("{prefix} *")).collect(), false))
}

/// The toolgate rules of Codex's prefix rules: a baseline ask for every command, then
/// the allows, the prompts and the forbidden ones, so the last match is the strictest.
pub(super) fn rules_of(prefix_rules: &[PrefixRule], imported: &mut Imported) {
    imported.rules.push(Rule::baseline(
        "bash",
        Effect::Ask,
        "Codex: no rule matched (Codex then follows its approval policy; toolgate asks)",
    ));
    for effect in [Effect::Allow, Effect::Ask, Effect::Deny] {
        for rule in prefix_rules.iter().filter(|rule| rule.effect == effect) {
            let decision = match effect {
                Effect::Allow => "allow",
                Effect::Ask => "prompt",
                Effect::Deny => "forbidden",
            };
            let mut why = format!("prefix_rule {} ({})", decision, rule.origin);
            if let Some(justification) = &rule.justification {
                why.push_str(&format!(": {justification}"));
            }
            if !rule.not_match.is_empty() {
                let shown: Vec<String> = rule.not_match.iter().map(|words| words.join(" ")).collect();
                why.push_str(&format!("; not_match examples (tests only): {}", shown.join(" | ")));
            }
            match patterns(rule) {
                Ok((list, widened)) => {
                    // A command toolgate cannot spell: the prefix before it takes the rule
                    // (stricter than Codex on that prefix's other commands); a prefix of
                    // nothing at all would be every command, so that one is only asked.
                    let effect = if widened {
                        imported.note(format!(
                            "prefix_rule {decision} ({}) names a command toolgate cannot spell exactly; the prefix before it takes the rule",
                            rule.origin
                        ));
                        if list.iter().any(|pattern| pattern == "*") {
                            Effect::Ask
                        } else {
                            rule.effect
                        }
                    } else {
                        rule.effect
                    };
                    for pattern in list {
                        imported.rules.push(Rule::new("bash", &pattern, effect, why.clone()));
                    }
                }
                Err(reason) => imported.note(format!("prefix_rule allow ({}) is not imported: {reason}", rule.origin)),
            }
        }
    }
}

fn string_table(value: Option<&toml::Value>) -> Vec<(String, String)> {
    match value {
        Some(toml::Value::Table(table)) => table
            .iter()
            .filter_map(|(key, value)| value.as_str().map(|text| (key.clone(), text.to_string())))
            .collect(),
        _ => Vec::new(),
    }
}

fn string_list(value: Option<&toml::Value>) -> Vec<String> {
    match value {
        Some(toml::Value::Array(items)) => items
            .iter()
            .filter_map(|item| item.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

fn seconds(value: Option<&toml::Value>) -> Option<u64> {
    match value? {
        toml::Value::Integer(n) if *n >= 0 => u64::try_from(*n).ok().map(|n| n * 1000),
        toml::Value::Float(f) if *f >= 0.0 && f.is_finite() => Some((f * 1000.0).round() as u64),
        _ => None,
    }
}

/// The `[mcp_servers.NAME]` tables of one `config.toml` as toolgate servers (and the
/// rules their tool lists give), and notes on its other keys that decide something.
fn read_config(text: &str, file: &Path, imported: &mut Imported, mcp_rules: &mut Vec<Rule>) -> Result<(), Failure> {
    let table: toml::Table = text
        .parse()
        .map_err(|error: toml::de::Error| Failure::usage(format!("{}: {}", file.display(), error.message())))?;
    for key in ["approval_policy", "sandbox_mode", "sandbox_workspace_write"] {
        if table.contains_key(key) {
            imported.note(format!(
                "{key} ({}) is not imported: toolgate's rules decide per call, and its sandbox is set in `sandbox` (README \"The sandbox\")",
                file.display()
            ));
        }
    }
    let Some(servers) = table.get("mcp_servers") else {
        return Ok(());
    };
    let Some(servers) = servers.as_table() else {
        return Err(Failure::usage(format!("{}: mcp_servers: not a table", file.display())));
    };
    let known = [
        "command",
        "args",
        "env",
        "env_vars",
        "cwd",
        "url",
        "bearer_token_env_var",
        "http_headers",
        "env_http_headers",
        "enabled",
        "enabled_tools",
        "disabled_tools",
        "startup_timeout_sec",
        "startup_timeout_ms",
        "tool_timeout_sec",
    ];
    for (name, server) in servers {
        let Some(server) = server.as_table() else {
            imported.note(format!(
                "MCP server {name:?} ({}): not a table, not imported",
                file.display()
            ));
            continue;
        };
        for key in server.keys().filter(|key| !known.contains(&key.as_str())) {
            imported.note(format!("MCP server {name:?}: {key:?} is not imported"));
        }
        let mut value = if let Some(command) = server.get("command").and_then(toml::Value::as_str) {
            let mut line = vec![command.to_string()];
            line.extend(string_list(server.get("args")));
            let mut out = json!({"type": "local", "command": line});
            let mut environment: Map<String, Value> = string_table(server.get("env"))
                .into_iter()
                .map(|(key, value)| (key, Value::String(value)))
                .collect();
            // `env_vars` passes variables of Codex's environment through.
            for var in string_list(server.get("env_vars")) {
                environment.insert(var.clone(), Value::String(format!("{{env:{var}}}")));
            }
            if !environment.is_empty() {
                out["environment"] = Value::Object(environment);
            }
            if let Some(cwd) = server.get("cwd").and_then(toml::Value::as_str) {
                out["cwd"] = Value::String(cwd.to_string());
            }
            out
        } else if let Some(url) = server.get("url").and_then(toml::Value::as_str) {
            let mut headers: Map<String, Value> = string_table(server.get("http_headers"))
                .into_iter()
                .map(|(key, value)| (key, Value::String(value)))
                .collect();
            for (header, var) in string_table(server.get("env_http_headers")) {
                headers.insert(header, Value::String(format!("{{env:{var}}}")));
            }
            if let Some(var) = server.get("bearer_token_env_var").and_then(toml::Value::as_str) {
                headers.insert("Authorization".into(), Value::String(format!("Bearer {{env:{var}}}")));
            }
            let mut out = json!({"type": "remote", "url": url});
            if !headers.is_empty() {
                out["headers"] = Value::Object(headers);
            }
            out
        } else {
            imported.note(format!("MCP server {name:?}: neither command nor url, not imported"));
            continue;
        };
        if server.get("enabled").and_then(toml::Value::as_bool) == Some(false) {
            value["enabled"] = Value::Bool(false);
        }
        let startup = seconds(server.get("startup_timeout_sec")).or_else(|| match server.get("startup_timeout_ms") {
            Some(toml::Value::Integer(ms)) => u64::try_from(*ms).ok(),
            _ => None,
        });
        let request = seconds(server.get("tool_timeout_sec"));
        if startup.is_some() || request.is_some() {
            let mut timeout = Map::new();
            if let Some(ms) = startup {
                timeout.insert("startup".into(), json!(ms));
            }
            if let Some(ms) = request {
                timeout.insert("request".into(), json!(ms));
            }
            value["timeout"] = Value::Object(timeout);
        }
        let prefix = super::claude::mcp_name(name);
        let enabled = string_list(server.get("enabled_tools"));
        let origin = format!("[mcp_servers.{name}] ({})", file.display());
        if server.contains_key("enabled_tools") {
            mcp_rules.push(Rule::new(
                &format!("{prefix}_*"),
                "*",
                Effect::Deny,
                format!("{origin}: only enabled_tools are offered"),
            ));
            for tool in &enabled {
                mcp_rules.push(Rule::new(
                    &super::claude::mcp_tool(name, tool),
                    "*",
                    Effect::Ask,
                    format!("{origin}: enabled_tools"),
                ));
            }
        }
        for tool in string_list(server.get("disabled_tools")) {
            mcp_rules.push(Rule::new(
                &super::claude::mcp_tool(name, &tool),
                "*",
                Effect::Deny,
                format!("{origin}: disabled_tools"),
            ));
        }
        if imported.servers.iter().any(|s| s.name == *name) {
            imported.note(format!(
                "MCP server {name:?} of {} replaces an earlier one",
                file.display()
            ));
            imported.servers.retain(|s| s.name != *name);
        }
        imported.servers.push(Server {
            name: name.clone(),
            value,
            why: format!("from {origin}"),
        });
    }
    Ok(())
}

/// Reads Codex's files (or `from`) into toolgate rules and servers.
pub(super) fn import(places: &Places, from: &[PathBuf]) -> Result<Imported, Failure> {
    let mut imported = Imported::default();
    let (configs, rule_files): (Vec<PathBuf>, Vec<PathBuf>) = if from.is_empty() {
        let mut configs = Vec::new();
        let mut rule_files = Vec::new();
        // The user's layer, then the project's (Codex reads a trusted project's `.codex`).
        for base in codex_home(places).into_iter().chain([places.dir.join(".codex")]) {
            configs.push(base.join("config.toml"));
            rule_files.extend(super::files_in(&base.join("rules"), "rules"));
        }
        (configs.into_iter().filter(|f| f.is_file()).collect(), rule_files)
    } else {
        from.iter()
            .cloned()
            .partition(|file| file.extension().is_some_and(|ext| ext == "toml"))
    };
    let mut mcp_rules = Vec::new();
    for file in &configs {
        read_config(&read_text(file)?, file, &mut imported, &mut mcp_rules)?;
        imported.sources.push(file.clone());
    }
    let mut prefix_rules = Vec::new();
    // Network rules land in `imported.rules` while parsing: kept apart and put after.
    let mut network = Vec::new();
    for file in &rule_files {
        let rules = parse_rules(&read_text(file)?, file, &mut imported)?;
        network.append(&mut imported.rules);
        prefix_rules.extend(rules);
        imported.sources.push(file.clone());
    }
    if !rule_files.is_empty() {
        rules_of(&prefix_rules, &mut imported);
    }
    network.sort_by_key(|rule| rule.effect);
    imported.rules.extend(network);
    imported.rules.extend(mcp_rules);
    Ok(imported)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(text: &str) -> Vec<(String, Effect)> {
        let mut imported = Imported::default();
        let parsed = parse_rules(text, Path::new("t.rules"), &mut imported)
            .unwrap_or_else(|failure| panic!("{}", failure.message));
        rules_of(&parsed, &mut imported);
        imported.rules.into_iter().map(|r| (r.resource, r.effect)).collect()
    }

    /// Alternatives are spelled out; allows come first, then prompts, then forbidden.
    #[test]
    fn the_strictest_match_is_the_last() {
        let got = rules(
            "prefix_rule(pattern=[\"git\"], decision=\"forbidden\")\nprefix_rule(pattern=[\"git\", [\"status\", \"diff\"]])\nprefix_rule(pattern=[\"git\", \"push\"], decision=\"prompt\")",
        );
        assert_eq!(
            got,
            [
                ("*".to_string(), Effect::Ask),
                ("git status *".into(), Effect::Allow),
                ("git diff *".into(), Effect::Allow),
                ("git push *".into(), Effect::Ask),
                ("git *".into(), Effect::Deny),
            ]
        );
    }

    /// A token toolgate cannot spell: an allow is left out, a deny covers the prefix
    /// before it.
    #[test]
    fn tokens_toolgate_cannot_spell() {
        let got = rules(
            "prefix_rule(pattern=[\"echo\", \"a b\"])\nprefix_rule(pattern=[\"rm\", \"-rf\", \"/ *\"], decision=\"forbidden\")",
        );
        assert_eq!(got, [("*".to_string(), Effect::Ask), ("rm -rf *".into(), Effect::Deny)]);
    }

    /// Examples are checked as Codex checks them.
    #[test]
    fn examples_must_hold() {
        let mut imported = Imported::default();
        let ok = "prefix_rule(pattern=[\"git\", \"status\"], match=[\"git status -s\", [\"git\", \"status\"]], not_match=[\"git 'stat us'\"])";
        assert_eq!(
            parse_rules(ok, Path::new("t"), &mut imported)
                .unwrap_or_else(|failure| panic!("{}", failure.message))
                .len(),
            1
        );
        assert!(
            parse_rules(
                "prefix_rule(pattern=[\"git\"], match=[\"ls\"])",
                Path::new("t"),
                &mut imported
            )
            .is_err()
        );
        assert!(
            parse_rules(
                "prefix_rule(pattern=[\"git\"], not_match=[\"git x\"])",
                Path::new("t"),
                &mut imported
            )
            .is_err()
        );
        assert!(
            parse_rules(
                "prefix_rule(pattern=[\"git\"], decision=\"maybe\")",
                Path::new("t"),
                &mut imported
            )
            .is_err()
        );
        assert!(parse_rules("frobnicate()", Path::new("t"), &mut imported).is_err());
    }

    /// The documented server tables (developers.openai.com/codex/mcp).
    #[test]
    fn servers() {
        let mut imported = Imported::default();
        let mut mcp_rules = Vec::new();
        read_config(
            "[mcp_servers.docs]\ncommand = \"docs-server\"\nargs = [\"--port\", \"4000\"]\nenv = { API_KEY = \"v\" }\nenabled_tools = [\"search\"]\n\n[mcp_servers.figma]\nurl = \"https://mcp.figma.com/mcp\"\nbearer_token_env_var = \"FIGMA_OAUTH_TOKEN\"\nenabled = false\ndisabled_tools = [\"delete\"]\ntool_timeout_sec = 1.5\n",
            Path::new("config.toml"),
            &mut imported,
            &mut mcp_rules,
        )
        .unwrap_or_else(|failure| panic!("{}", failure.message));
        assert_eq!(
            imported.servers[0].value["command"],
            json!(["docs-server", "--port", "4000"])
        );
        assert_eq!(imported.servers[0].value["environment"]["API_KEY"], "v");
        assert_eq!(
            imported.servers[1].value["headers"]["Authorization"],
            "Bearer {env:FIGMA_OAUTH_TOKEN}"
        );
        assert_eq!(imported.servers[1].value["enabled"], false);
        assert_eq!(imported.servers[1].value["timeout"]["request"], 1500);
        let got: Vec<(String, Effect)> = mcp_rules.into_iter().map(|r| (r.action, r.effect)).collect();
        assert_eq!(
            got,
            [
                ("docs_*".to_string(), Effect::Deny),
                ("docs_search".into(), Effect::Ask),
                ("figma_delete".into(), Effect::Deny)
            ]
        );
    }

    #[test]
    fn words_split_as_a_shell_would() {
        assert_eq!(
            split_words("git 'a b' \"c\\\"d\" e\\ f").unwrap(),
            ["git", "a b", "c\"d", "e f"]
        );
        assert!(split_words("git 'open").is_none());
    }
}
