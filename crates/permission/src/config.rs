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

const EFFECT: &str = "\"allow\", \"ask\" or \"deny\"";

/// `path` extended by `key`: `.key` for plain names, `["key"]` otherwise.
pub fn key_path(path: &str, key: &str) -> String {
    let plain = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}[{}]", Value::String(key.to_string()))
    }
}

fn effect(value: &Value, path: &str) -> Result<Effect, ConfigError> {
    value
        .as_str()
        .and_then(Effect::parse)
        .ok_or_else(|| ConfigError::new(path, EFFECT, value))
}

/// Expands `~`, `~/…`, `$HOME` and `$HOME…` at the start of a pattern (V1 `expand`).
///
/// ```
/// use std::path::Path;
/// use toolgate_permission::config::expand_home;
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

/// Rules from a `permission` value, in key order.
///
/// Accepts OpenCode's object form (`"allow"`, or `{action: effect | {pattern: effect}}`)
/// and the V2 list form (`[{action, resource, effect}]`). `path` names the value in errors.
///
/// ```
/// use toolgate_permission::{config::rules_from_config, Effect, Origin};
/// let value = serde_json::json!({"*": "ask", "bash": {"*": "deny", "git *": "allow"}});
/// let rules = rules_from_config(&value, "permission", Origin::UserConfig, None).unwrap();
/// assert_eq!(rules.len(), 3);
/// assert_eq!((rules[2].action.as_str(), rules[2].resource.as_str(), rules[2].effect), ("bash", "git *", Effect::Allow));
/// let bad = rules_from_config(&serde_json::json!({"bash": "maybe"}), "permission", Origin::UserConfig, None);
/// assert_eq!(bad.unwrap_err().to_string(), "permission.bash: expected \"allow\", \"ask\" or \"deny\", found \"maybe\"");
/// ```
pub fn rules_from_config(
    value: &Value,
    path: &str,
    origin: Origin,
    home: Option<&Path>,
) -> Result<Vec<Rule>, ConfigError> {
    match value {
        Value::String(_) => Ok(vec![Rule::new("*", "*", effect(value, path)?, origin)]),
        Value::Object(map) => {
            let mut rules = Vec::new();
            for (action, entry) in map {
                let entry_path = key_path(path, action);
                match entry {
                    Value::Object(patterns) => {
                        for (pattern, value) in patterns {
                            let rule_path = key_path(&entry_path, pattern);
                            rules.push(Rule::new(
                                action,
                                expand_home(pattern, home),
                                effect(value, &rule_path)?,
                                origin,
                            ));
                        }
                    }
                    other => rules.push(Rule::new(action, "*", effect(other, &entry_path)?, origin)),
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
                    item.get(name).and_then(Value::as_str).ok_or_else(|| {
                        ConfigError::new(
                            &format!("{item_path}.{name}"),
                            "a string",
                            item.get(name).unwrap_or(&Value::Null),
                        )
                    })
                };
                if !item.is_object() {
                    return Err(ConfigError::new(
                        &item_path,
                        "an object {action, resource, effect}",
                        item,
                    ));
                }
                let effect_value = item.get("effect").unwrap_or(&Value::Null);
                Ok(Rule::new(
                    field("action")?,
                    expand_home(field("resource")?, home),
                    effect(effect_value, &format!("{item_path}.effect"))?,
                    origin,
                ))
            })
            .collect(),
        other => Err(ConfigError::new(
            path,
            "\"allow\", \"ask\", \"deny\", an object of actions, or a list of rules",
            other,
        )),
    }
}

/// The `permission` object equivalent to legacy `tools: {name: bool}`: `true` → allow,
/// `false` → deny; `write`, `edit`, `patch`, `multiedit` become `edit`.
pub fn permission_from_tools(tools: &Value, path: &str) -> Result<Map<String, Value>, ConfigError> {
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
/// place, new keys go last), anything else is replaced.
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

/// The effective `permission` value of a config block: the legacy `tools` map merged
/// under the explicit `permission` (explicit wins), as V1 does.
pub fn effective_permission(
    permission: Option<&Value>,
    tools: Option<&Value>,
    path: &str,
) -> Result<Option<Value>, ConfigError> {
    let from_tools = match tools {
        Some(tools) => Some(permission_from_tools(tools, &path.replace("permission", "tools"))?),
        None => None,
    };
    Ok(match (from_tools, permission) {
        (None, None) => None,
        (None, Some(permission)) => Some(permission.clone()),
        (Some(tools), None) => Some(Value::Object(tools)),
        (Some(tools), Some(Value::String(effect))) => {
            // A single effect means `{"*": effect}`: keep the tools' entries before it.
            let mut merged = Value::Object(tools);
            deep_merge(&mut merged, &serde_json::json!({"*": effect}));
            Some(merged)
        }
        (Some(tools), Some(permission)) => {
            let mut merged = Value::Object(tools);
            deep_merge(&mut merged, permission);
            Some(merged)
        }
    })
}
