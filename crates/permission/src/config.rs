//! Permission config → rules (spec §4.9), in OpenCode's format.

use std::path::Path;

use serde_json::{Map, Value};

use crate::rules::{Effect, Origin, Rule};

/// A config value that is not what was expected. Names the key path so the user can find it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: expected {expected}, found {found}")]
pub struct ConfigError {
    /// Where, e.g. `permission.bash["rm *"]`.
    pub path: String,
    /// What was expected there.
    pub expected: String,
    /// What was there (as JSON, shortened).
    pub found: String,
}

impl ConfigError {
    pub(crate) fn new(path: &str, expected: &str, found: &Value) -> Self {
        let mut found = found.to_string();
        if found.len() > 60 {
            let mut cut = 57;
            while !found.is_char_boundary(cut) {
                cut -= 1;
            }
            found.truncate(cut);
            found.push_str("...");
        }
        ConfigError {
            path: path.to_string(),
            expected: expected.to_string(),
            found,
        }
    }
}

const EFFECT: &str = "\"allow\", \"ask\", \"deny\" or \"audit\"";

/// `path` extended by `key`: `.key` for plain names, `["key"]` otherwise. A key longer
/// than 80 characters is shortened to its first 60 and `…`, so an error stays one line
/// a person can read.
pub fn key_path(path: &str, key: &str) -> String {
    let plain = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain && key.len() <= 80 {
        format!("{path}.{key}")
    } else if key.chars().count() > 80 {
        let head = Value::String(key.chars().take(60).collect()).to_string();
        let inner = head
            .strip_prefix('"')
            .and_then(|h| h.strip_suffix('"'))
            .unwrap_or(&head);
        format!("{path}[\"{inner}…\"]")
    } else {
        format!("{path}[{}]", Value::String(key.to_string()))
    }
}

/// The longest action or resource pattern a configuration may hold, in bytes. A longer
/// one is refused at load with its key path: matching cost grows with pattern length,
/// and no real rule comes near it.
pub(crate) const MAX_PATTERN_BYTES: usize = 65_536;

fn check_length(pattern: &str, path: &str) -> Result<(), ConfigError> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(ConfigError {
            path: path.to_string(),
            expected: format!("a pattern of at most {MAX_PATTERN_BYTES} bytes"),
            found: format!("{} bytes", pattern.len()),
        });
    }
    Ok(())
}

/// A rule of `effect_value` (`audit` makes a flagged allow).
fn rule_of(
    action: &str,
    resource: impl Into<String>,
    value: &Value,
    path: &str,
    origin: Origin,
) -> Result<Rule, ConfigError> {
    let (effect, flag) = effect_flag(value, path)?;
    let rule = Rule::new(action, resource, effect, origin);
    Ok(if flag { rule.flagged() } else { rule })
}

/// The effect a config value names, and whether it is `audit` (an allow that flags its
/// decisions).
fn effect_flag(value: &Value, path: &str) -> Result<(Effect, bool), ConfigError> {
    match value.as_str() {
        Some("audit") => Ok((Effect::Allow, true)),
        Some(text) => Effect::parse(text)
            .map(|effect| (effect, false))
            .ok_or_else(|| ConfigError::new(path, EFFECT, value)),
        None => Err(ConfigError::new(path, EFFECT, value)),
    }
}

/// Expands `~`, `~/…`, `$HOME` and `$HOME…` at the start of a pattern (V1 `expand`).
///
/// ```
/// use std::path::Path;
/// use toolgate_permission::expand_home;
/// let home = Some(Path::new("/home/me"));
/// assert_eq!(expand_home("~/projects/*", home), "/home/me/projects/*");
/// assert_eq!(expand_home("$HOME", home), "/home/me");
/// assert_eq!(expand_home("/some/~/path", home), "/some/~/path");
/// ```
pub fn expand_home(pattern: &str, home: Option<&Path>) -> String {
    let Some(home) = home else {
        return pattern.to_string();
    };
    let home = home.to_string_lossy();
    if pattern == "~" {
        home.into_owned()
    } else if let Some(rest) = pattern.strip_prefix("~/") {
        format!("{}/{rest}", home.trim_end_matches('/'))
    } else if let Some(rest) = pattern.strip_prefix("$HOME") {
        format!("{home}{rest}")
    } else {
        pattern.to_string()
    }
}

/// The actions whose list-form resources are paths, so `~` and `$HOME` expand (spec §4.9,
/// V2): every other resource — a bash command, a URL — stays as written.
pub(crate) const PATH_ACTIONS: [&str; 3] = ["external_directory", "read", "edit"];

/// V2's expansion for the list form: exactly `~` or `$HOME`, or either followed by `/`
/// or `\`. (`$HOMEfoo` stays as written, unlike [`expand_home`].)
pub(crate) fn expand_home_v2(pattern: &str, home: Option<&Path>) -> String {
    let Some(home) = home else {
        return pattern.to_string();
    };
    let home = home.to_string_lossy();
    let base = home.trim_end_matches('/');
    for prefix in ["~", "$HOME"] {
        if pattern == prefix {
            return home.into_owned();
        }
        if let Some(rest) = pattern.strip_prefix(prefix)
            && let Some(rest) = rest.strip_prefix('/').or_else(|| rest.strip_prefix('\\'))
        {
            return format!("{base}/{rest}");
        }
    }
    pattern.to_string()
}

/// Rules from a `permission` value, in key order.
///
/// Accepts OpenCode's object form (`"allow"`, or `{action: effect | {pattern: effect}}`)
/// and the V2 list form (`[{action, resource, effect}]`). `path` names the value in errors.
/// Whatever the form, the result is plain rules: a single effect is `{"*": effect}` and
/// an action's single effect is `{action: {"*": effect}}`, so layers can be concatenated
/// without one form replacing another. In the object form `~` and `$HOME` expand for
/// every action (V1); in the list form only for the path actions
/// `external_directory`, `read` and `edit` (V2).
///
/// ```
/// use toolgate_permission::{rules_from_config, Effect, Origin};
/// let value = serde_json::json!({"*": "ask", "bash": {"*": "deny", "git *": "allow"}});
/// let rules = rules_from_config(&value, "permission", Origin::UserConfig, None).unwrap();
/// assert_eq!(rules.len(), 3);
/// assert_eq!((rules[2].action.as_str(), rules[2].resource.as_str(), rules[2].effect), ("bash", "git *", Effect::Allow));
/// let bad = rules_from_config(&serde_json::json!({"bash": "maybe"}), "permission", Origin::UserConfig, None);
/// assert_eq!(bad.unwrap_err().to_string(), "permission.bash: expected \"allow\", \"ask\", \"deny\" or \"audit\", found \"maybe\"");
/// ```
pub fn rules_from_config(
    value: &Value,
    path: &str,
    origin: Origin,
    home: Option<&Path>,
) -> Result<Vec<Rule>, ConfigError> {
    match value {
        Value::String(_) => Ok(vec![rule_of("*", "*", value, path, origin)?]),
        Value::Object(map) => {
            let mut rules = Vec::new();
            for (action, entry) in map {
                let entry_path = key_path(path, action);
                check_length(action, &entry_path)?;
                match entry {
                    Value::Object(patterns) => {
                        for (pattern, value) in patterns {
                            let rule_path = key_path(&entry_path, pattern);
                            let expanded = expand_home(pattern, home);
                            check_length(&expanded, &rule_path)?;
                            rules.push(rule_of(action, expanded, value, &rule_path, origin)?);
                        }
                    }
                    other => rules.push(rule_of(action, "*", other, &entry_path, origin)?),
                }
            }
            Ok(rules)
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(index, item)| {
                let item_path = format!("{path}[{index}]");
                let field = |name: &str| -> Result<&str, ConfigError> {
                    let text = item.get(name).and_then(Value::as_str).ok_or_else(|| {
                        ConfigError::new(
                            &format!("{item_path}.{name}"),
                            "a string",
                            item.get(name).unwrap_or(&Value::Null),
                        )
                    })?;
                    check_length(text, &format!("{item_path}.{name}"))?;
                    Ok(text)
                };
                if !item.is_object() {
                    return Err(ConfigError::new(
                        &item_path,
                        "an object {action, resource, effect}",
                        item,
                    ));
                }
                let action = field("action")?;
                let resource = field("resource")?;
                let resource = if PATH_ACTIONS.contains(&action) {
                    expand_home_v2(resource, home)
                } else {
                    resource.to_string()
                };
                check_length(&resource, &format!("{item_path}.resource"))?;
                let effect_value = item.get("effect").unwrap_or(&Value::Null);
                rule_of(action, resource, effect_value, &format!("{item_path}.effect"), origin)
            })
            .collect(),
        other => Err(ConfigError::new(
            path,
            "\"allow\", \"ask\", \"deny\", \"audit\", an object of actions, or a list of rules",
            other,
        )),
    }
}

/// The `permission` object equivalent to legacy `tools: {name: bool}`: `true` → allow,
/// `false` → deny; `write`, `edit`, `patch`, `multiedit` become `edit`.
pub(crate) fn permission_from_tools(tools: &Value, path: &str) -> Result<Map<String, Value>, ConfigError> {
    let Value::Object(map) = tools else {
        return Err(ConfigError::new(
            path,
            "an object of tool names to true or false",
            tools,
        ));
    };
    let mut out = Map::new();
    for (name, enabled) in map {
        let Some(enabled) = enabled.as_bool() else {
            return Err(ConfigError::new(&key_path(path, name), "true or false", enabled));
        };
        let action = match name.as_str() {
            "write" | "edit" | "patch" | "multiedit" => "edit",
            other => other,
        };
        out.insert(
            action.to_string(),
            Value::String(if enabled { "allow" } else { "deny" }.into()),
        );
    }
    Ok(out)
}

/// Deep-merges `over` into `base`: objects merge key by key (existing keys keep their
/// place, new keys go last), anything else is replaced. Used for the settings that are
/// not rules; `permission` and `tools` blocks are never merged this way (each layer's
/// rules are concatenated, see [`ConfigLayer`](crate::ConfigLayer)).
pub fn deep_merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(key) {
                    Some(existing) => deep_merge(existing, value),
                    None => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (base, over) => *base = over.clone(),
    }
}

/// The rules of one configuration layer: its legacy `tools` map first, then its
/// `permission` (so the explicit `permission` wins, as in V1), each read as rules by
/// [`rules_from_config`]. Layers are then merged by concatenation in layer order, and
/// the last matching rule wins: a string, a list and an object layer each keep all of
/// their rules, and a later layer overrides an earlier one only where its own rules match.
pub(crate) fn layer_rules(
    permission: Option<&Value>,
    tools: Option<&Value>,
    path: &str,
    origin: Origin,
    home: Option<&Path>,
) -> Result<Vec<Rule>, ConfigError> {
    let mut rules = Vec::new();
    if let Some(tools) = tools {
        let tools_path = match path.rsplit_once("permission") {
            Some((head, tail)) => format!("{head}tools{tail}"),
            None => format!("{path}.tools"),
        };
        let from_tools = permission_from_tools(tools, &tools_path)?;
        rules.extend(rules_from_config(
            &Value::Object(from_tools),
            &tools_path,
            origin,
            home,
        )?);
    }
    if let Some(permission) = permission {
        rules.extend(rules_from_config(permission, path, origin, home)?);
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::path::Path;

    use serde_json::json;

    use super::*;
    use crate::Ruleset;

    #[test]
    fn a_later_layer_overrides_only_where_its_rules_match() {
        let project = layer_rules(Some(&json!("deny")), None, "permission", Origin::UserConfig, None).unwrap();
        let extra = layer_rules(
            Some(&json!({"read": "allow"})),
            None,
            "permission",
            Origin::UserConfig,
            None,
        )
        .unwrap();
        let rules = Ruleset::new([project, extra].concat());
        assert_eq!(rules.evaluate("read", "a.rs").effect, Effect::Allow);
        assert_eq!(rules.evaluate("webfetch", "https://x").effect, Effect::Deny);
    }

    #[test]
    fn v2_expansion_needs_a_separator_after_home() {
        let home = Some(Path::new("/home/me"));
        assert_eq!(expand_home_v2("~/notes/*", home), "/home/me/notes/*");
        assert_eq!(expand_home_v2("$HOME\\notes", home), "/home/me/notes");
        assert_eq!(expand_home_v2("$HOMEfoo", home), "$HOMEfoo");
        assert_eq!(expand_home_v2("~", home), "/home/me");
        assert_eq!(expand_home_v2("~/x", None), "~/x");
    }
}
