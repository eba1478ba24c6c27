//! Rules as a config writes them, and as they come out: plain `(action, resource,
//! effect)` triples in the order that decides (spec §4.9, the last matching rule wins).
//!
//! Three keys hold rules, read in this order within one file, as OpenCode V2's normalizer
//! does: the legacy `tools` map, the V1 `permission` value, the V2 `permissions` list.

use std::borrow::Cow;
use std::fmt;
use std::path::Path;

use indexmap::IndexMap;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::decode::expected;
use crate::error::{ConfigError, key_path};
use crate::values::{Effect, Flag};

/// The longest action or resource pattern a configuration may hold, in bytes. A longer
/// one is refused at load with its key path: matching cost grows with pattern length,
/// and no real rule comes near it.
pub const MAX_PATTERN_BYTES: usize = 65_536;

const EFFECTS: &str = "\"allow\", \"ask\", \"deny\" or \"audit\"";

/// One rule, ready to evaluate: `~` expanded, the action's OpenCode V1 spelling migrated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RuleSpec {
    /// The action pattern (`bash`, `read`, `mymcp_*`).
    pub action: String,
    /// The resource pattern (`git push *`, `src/*`).
    pub resource: String,
    /// What it does.
    pub effect: Effect,
}

/// The V1 `permission` value: one effect for everything, an object of actions, or
/// (toolgate also reads it here) a V2 list of rules.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Permission {
    /// `"allow"`: the rule `* * allow`.
    Effect(Effect),
    /// `{action: effect | {pattern: effect}}`, in key order.
    Actions(IndexMap<String, ActionRules>),
    /// `[{action, resource, effect}]`, in list order.
    List(Vec<RuleItem>),
}

/// What one action of the V1 object form holds.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ActionRules {
    /// `"bash": "ask"`: the rule `bash * ask`.
    Effect(Effect),
    /// `"bash": {"*": "ask", "git *": "allow"}`, one rule per pattern in key order.
    Patterns(IndexMap<String, Effect>),
}

/// One rule of the V2 list form (`permissions`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(expecting = "an object {action, resource, effect}")]
pub struct RuleItem {
    /// The action pattern: a tool's permission (`shell`, `read`, `edit`, …) or `*`.
    pub action: String,
    /// The resource pattern: a command, a path, a URL, or `*`.
    pub resource: String,
    /// `allow`, `ask` or `deny`.
    pub effect: Effect,
}

struct PermissionVisitor;

impl<'de> Visitor<'de> for PermissionVisitor {
    type Value = Permission;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"allow\", \"ask\", \"deny\", \"audit\", an object of actions, or a list of rules")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Permission, E> {
        Effect::parse(text)
            .map(Permission::Effect)
            .ok_or_else(|| E::custom(expected(EFFECTS, &Value::String(text.to_string()))))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Permission, A::Error> {
        IndexMap::deserialize(MapAccessDeserializer::new(map)).map(Permission::Actions)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Permission, A::Error> {
        Vec::deserialize(SeqAccessDeserializer::new(seq)).map(Permission::List)
    }
}

impl<'de> Deserialize<'de> for Permission {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(PermissionVisitor)
    }
}

struct ActionVisitor;

impl<'de> Visitor<'de> for ActionVisitor {
    type Value = ActionRules;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"allow\", \"ask\", \"deny\" or \"audit\", or an object of patterns")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<ActionRules, E> {
        Effect::parse(text)
            .map(ActionRules::Effect)
            .ok_or_else(|| E::custom(expected(EFFECTS, &Value::String(text.to_string()))))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ActionRules, A::Error> {
        IndexMap::deserialize(MapAccessDeserializer::new(map)).map(ActionRules::Patterns)
    }
}

impl<'de> Deserialize<'de> for ActionRules {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ActionVisitor)
    }
}

impl JsonSchema for ActionRules {
    fn schema_name() -> Cow<'static, str> {
        "ActionRules".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let effect = generator.subschema_for::<Effect>();
        json_schema!({
            "description": "One effect for the action (pattern `*`), or an object of resource patterns to effects, in order: the last matching rule wins.",
            "anyOf": [effect, {"type": "object", "additionalProperties": effect}]
        })
    }
}

impl JsonSchema for Permission {
    fn schema_name() -> Cow<'static, str> {
        "Permission".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let effect = generator.subschema_for::<Effect>();
        let action = generator.subschema_for::<ActionRules>();
        let item = generator.subschema_for::<RuleItem>();
        json_schema!({
            "description": "OpenCode V1 rules: one effect for everything, or an object of actions (`bash`, `read`, `edit`, an MCP tool glob, `*`) in key order; toolgate also reads the V2 list form here. The last matching rule wins; no match asks.",
            "anyOf": [effect, {"type": "object", "additionalProperties": action}, {"type": "array", "items": item}]
        })
    }
}

/// The legacy `tools` map: `{name: true | false}`.
pub type Tools = IndexMap<String, Flag>;

/// OpenCode's V1 → V2 migration of action names (`write`, `patch`, `multiedit` are the
/// `edit` permission: those tools ask `edit`, spec §4.9). `bash`/`shell` and
/// `task`/`subagent` stay as written: the permission crate makes each rule decide both
/// spellings.
pub(crate) fn migrate(action: &str) -> &str {
    match action {
        "write" | "patch" | "multiedit" => "edit",
        other => other,
    }
}

fn check_length(pattern: &str, path: &str) -> Result<(), ConfigError> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(ConfigError::invalid(
            "",
            path,
            format!(
                "expected a pattern of at most {MAX_PATTERN_BYTES} bytes, found {} bytes",
                pattern.len()
            ),
        ));
    }
    Ok(())
}

/// Expands `~`, `~/…`, `$HOME` and `$HOME…` at the start of a pattern (V1 `expand`,
/// spec §4.9).
///
/// ```
/// use std::path::Path;
/// use toolgate_config::expand_home;
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
const PATH_ACTIONS: [&str; 3] = ["external_directory", "read", "edit"];

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

fn rule(action: &str, resource: String, effect: Effect) -> RuleSpec {
    RuleSpec {
        action: migrate(action).to_string(),
        resource,
        effect,
    }
}

/// The rules of a `permission` value at `path`. In the object form `~` and `$HOME`
/// expand for every action (V1); in the list form only for the path actions (V2).
pub(crate) fn permission_rules(
    permission: &Permission,
    path: &str,
    home: Option<&Path>,
) -> Result<Vec<RuleSpec>, ConfigError> {
    match permission {
        Permission::Effect(effect) => Ok(vec![rule("*", "*".into(), *effect)]),
        Permission::Actions(actions) => {
            let mut rules = Vec::new();
            for (action, entry) in actions {
                let entry_path = key_path(path, action);
                check_length(action, &entry_path)?;
                match entry {
                    ActionRules::Effect(effect) => rules.push(rule(action, "*".into(), *effect)),
                    ActionRules::Patterns(patterns) => {
                        for (pattern, effect) in patterns {
                            let expanded = expand_home(pattern, home);
                            check_length(&expanded, &key_path(&entry_path, pattern))?;
                            rules.push(rule(action, expanded, *effect));
                        }
                    }
                }
            }
            Ok(rules)
        }
        Permission::List(items) => list_rules(items, path, home),
    }
}

/// The rules of a V2 list at `path`.
pub(crate) fn list_rules(items: &[RuleItem], path: &str, home: Option<&Path>) -> Result<Vec<RuleSpec>, ConfigError> {
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let item_path = format!("{path}[{index}]");
            check_length(&item.action, &format!("{item_path}.action"))?;
            let action = migrate(&item.action);
            let resource = if PATH_ACTIONS.contains(&action) {
                expand_home_v2(&item.resource, home)
            } else {
                item.resource.clone()
            };
            check_length(&resource, &format!("{item_path}.resource"))?;
            Ok(rule(action, resource, item.effect))
        })
        .collect()
}

/// The rules of a legacy `tools` map: `true` → allow, `false` → deny, one rule per action
/// in the order the actions first appear (`write` and `edit` are one `edit` key, V1).
pub(crate) fn tools_rules(tools: &Tools, path: &str) -> Result<Vec<RuleSpec>, ConfigError> {
    let mut merged: IndexMap<&str, Effect> = IndexMap::new();
    for (name, enabled) in tools {
        check_length(name, &key_path(path, name))?;
        merged.insert(migrate(name), if enabled.0 { Effect::Allow } else { Effect::Deny });
    }
    Ok(merged
        .into_iter()
        .map(|(action, effect)| rule(action, "*".into(), effect))
        .collect())
}

/// The rules of one block (a file, or an agent's block): `tools`, then `permission`, then
/// `permissions`, each at its key path under `base`.
pub(crate) fn block_rules(
    tools: Option<&Tools>,
    permission: Option<&Permission>,
    permissions: Option<&[RuleItem]>,
    base: &str,
    home: Option<&Path>,
) -> Result<Vec<RuleSpec>, ConfigError> {
    let mut rules = Vec::new();
    if let Some(tools) = tools {
        rules.extend(tools_rules(tools, &key_path(base, "tools"))?);
    }
    if let Some(permission) = permission {
        rules.extend(permission_rules(permission, &key_path(base, "permission"), home)?);
    }
    if let Some(permissions) = permissions {
        rules.extend(list_rules(permissions, &key_path(base, "permissions"), home)?);
    }
    Ok(rules)
}

/// Decodes a `permission` value given as JSON (`$TOOLGATE_PERMISSION`,
/// `$OPENCODE_PERMISSION`) into its rules.
///
/// ```
/// use toolgate_config::{Effect, permission_value_rules};
/// let rules = permission_value_rules(&serde_json::json!({"*": "ask", "bash": {"git *": "allow"}}), None).unwrap();
/// assert_eq!((rules[1].action.as_str(), rules[1].resource.as_str(), rules[1].effect), ("bash", "git *", Effect::Allow));
/// let bad = permission_value_rules(&serde_json::json!({"bash": "maybe"}), None).unwrap_err();
/// assert_eq!(bad.to_string(), "permission.bash: expected \"allow\", \"ask\", \"deny\" or \"audit\", found \"maybe\"");
/// ```
pub fn permission_value_rules(value: &Value, home: Option<&Path>) -> Result<Vec<RuleSpec>, ConfigError> {
    let permission: Permission = crate::decode::decode(value.clone(), "permission")?;
    permission_rules(&permission, "permission", home)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn rules(value: Value) -> Vec<(String, String, Effect)> {
        permission_value_rules(&value, Some(Path::new("/home/me")))
            .unwrap()
            .into_iter()
            .map(|r| (r.action, r.resource, r.effect))
            .collect()
    }

    #[test]
    fn every_form_is_rules_in_order() {
        assert_eq!(rules(json!("deny")), [("*".into(), "*".into(), Effect::Deny)]);
        assert_eq!(
            rules(json!({"*": "ask", "bash": {"*": "deny", "~/bin/x *": "allow"}})),
            [
                ("*".into(), "*".into(), Effect::Ask),
                ("bash".into(), "*".into(), Effect::Deny),
                ("bash".into(), "/home/me/bin/x *".into(), Effect::Allow)
            ]
        );
        assert_eq!(
            rules(json!([{"action": "shell", "resource": "~/x", "effect": "deny"},
                         {"action": "read", "resource": "~/x", "effect": "deny"}])),
            [
                ("shell".into(), "~/x".into(), Effect::Deny),
                ("read".into(), "/home/me/x".into(), Effect::Deny)
            ]
        );
        // OpenCode's migration: write and patch are the edit permission.
        assert_eq!(
            rules(json!({"write": "deny"})),
            [("edit".into(), "*".into(), Effect::Deny)]
        );
    }

    #[test]
    fn malformed_values_name_their_key_path() {
        let error = |value: Value| permission_value_rules(&value, None).unwrap_err();
        let e = error(json!({"bash": {"rm *": "never"}}));
        assert_eq!(e.path, "permission.bash[\"rm *\"]");
        assert_eq!(
            e.message,
            "expected \"allow\", \"ask\", \"deny\" or \"audit\", found \"never\""
        );
        let e = error(json!([{"action": "bash", "resource": "x"}]));
        assert_eq!(e.path, "permission[0]");
        assert!(e.message.contains("effect"), "{e}");
        let e = error(json!(3));
        assert_eq!(e.path, "permission");
        assert!(
            e.message
                .starts_with("expected \"allow\", \"ask\", \"deny\", \"audit\", an object"),
            "{e}"
        );
        let long = "a".repeat(MAX_PATTERN_BYTES + 1);
        let e = error(json!({"bash": {long: "deny"}}));
        assert!(e.message.contains("at most 65536 bytes"), "{e}");
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
