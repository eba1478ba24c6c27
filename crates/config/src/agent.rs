//! Agent blocks: `agent.<name>` (V1), `mode.<name>` (V1, deprecated), `agents.<name>` (V2)
//! and Markdown agent files with front matter (spec §4.10).

use std::path::Path;

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{ConfigError, ErrorKind, key_path};
use crate::rules::{Permission, RuleItem, RuleSpec, Tools, block_rules};
use crate::values::{AgentMode, Flag};

/// One agent's block, as OpenCode V1 and V2 write it. toolgate reads the rules (`tools`,
/// `permission`, `permissions`), `mode`, `description` and `disable`/`disabled`; every
/// other key (the model, its prompt and options, OpenCode passes unknown ones to the
/// provider) is accepted and ignored.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(expecting = "an object")]
pub struct AgentConfig {
    /// What the agent is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `primary`, `subagent` or `all`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<AgentMode>,
    /// V1: `true` removes the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable: Option<Flag>,
    /// V2: `true` removes the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<Flag>,
    /// The agent's V1 rules, after every layer's global rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<Permission>,
    /// The agent's V2 rules, after its `permission`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<Vec<RuleItem>>,
    /// Legacy booleans (`false` = deny), before its `permission`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Tools>,
    /// OpenCode's `hidden`: accepted, not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hidden: Option<Value>,
    /// OpenCode's model (`provider/model`): accepted, not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Value>,
    /// OpenCode's system prompt (V1 `prompt`, V2 `system`): accepted, not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<Value>,
    /// OpenCode V2's system prompt: accepted, not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<Value>,
    /// OpenCode's sampling temperature: accepted, not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<Value>,
    /// OpenCode's `top_p`: accepted, not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<Value>,
    /// OpenCode's `steps` (V1 also `maxSteps`): accepted, not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Value>,
    /// OpenCode's colour: accepted, not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<Value>,
    /// OpenCode's provider options (V1 `options`, V2 `request`): accepted, not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Value>,
}

/// One agent block's settings and rules, ready for the permission crate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentSpec {
    /// The agent's name.
    pub name: String,
    /// `mode`, when the block sets it.
    pub mode: Option<AgentMode>,
    /// `description`, when set.
    pub description: Option<String>,
    /// `disable` (V1) or `disabled` (V2), when set.
    pub disable: Option<bool>,
    /// The block's rules in order: `tools`, `permission`, `permissions`.
    pub rules: Vec<RuleSpec>,
}

impl AgentConfig {
    /// This block's settings and rules; `path` is its key path (`agent.plan`).
    pub(crate) fn spec(&self, name: &str, path: &str, home: Option<&Path>) -> Result<AgentSpec, ConfigError> {
        Ok(AgentSpec {
            name: name.to_string(),
            mode: self.mode,
            description: self.description.clone(),
            disable: self.disabled.or(self.disable).map(|flag| flag.0),
            rules: block_rules(
                self.tools.as_ref(),
                self.permission.as_ref(),
                self.permissions.as_deref(),
                path,
                home,
            )?,
        })
    }
}

/// The agents of one file: `agent` (V1), then `mode` (V1, forced primary), then `agents`
/// (V2) — the order OpenCode V2's normalizer gives them.
pub(crate) fn agent_specs(
    agent: Option<&IndexMap<String, AgentConfig>>,
    mode: Option<&IndexMap<String, AgentConfig>>,
    agents: Option<&IndexMap<String, AgentConfig>>,
    home: Option<&Path>,
) -> Result<Vec<AgentSpec>, ConfigError> {
    let mut specs = Vec::new();
    for (key, blocks, primary) in [("agent", agent, false), ("mode", mode, true), ("agents", agents, false)] {
        for (name, block) in blocks.into_iter().flatten() {
            let mut spec = block.spec(name, &key_path(key, name), home)?;
            if primary {
                spec.mode = Some(AgentMode::Primary);
            }
            specs.push(spec);
        }
    }
    Ok(specs)
}

/// A Markdown agent's name: its path under the scanned directory without the leading
/// `agent/`, `agents/`, `mode/` or `modes/` and without `.md`; nested directories stay
/// (`agents/team/reviewer.md` is `team/reviewer`).
pub(crate) fn markdown_name(relative: &Path) -> String {
    let text = relative.to_string_lossy().replace('\\', "/");
    let text = ["agent/", "agents/", "mode/", "modes/"]
        .iter()
        .find_map(|prefix| text.strip_prefix(prefix))
        .unwrap_or(&text);
    text.strip_suffix(".md").unwrap_or(text).to_string()
}

/// The front matter of a Markdown agent as JSON (`{}` when it has none: the file is
/// still an agent, with no settings of its own).
pub(crate) fn front_matter(text: &str, source: &str) -> Result<Value, ConfigError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    let mut yaml = String::new();
    let mut closed = false;
    for line in lines {
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        yaml.push_str(line);
    }
    if !closed {
        return Err(ConfigError::whole(
            ErrorKind::Syntax,
            source,
            "the front matter opened by `---` is never closed",
        ));
    }
    if yaml.trim().is_empty() {
        return Ok(Value::Object(serde_json::Map::new()));
    }
    let value: Value = serde_yaml::from_str(&yaml).map_err(|error| {
        ConfigError::whole(
            ErrorKind::Syntax,
            source,
            format!("the front matter is not valid YAML: {error}"),
        )
    })?;
    match value {
        Value::Object(_) => Ok(value),
        Value::Null => Ok(Value::Object(serde_json::Map::new())),
        other => Err(ConfigError::whole(
            ErrorKind::Syntax,
            source,
            format!("the front matter must be a mapping of keys, found {other}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn names_come_from_the_path() {
        assert_eq!(markdown_name(Path::new("agents/review.md")), "review");
        assert_eq!(markdown_name(Path::new("agent/team/reviewer.md")), "team/reviewer");
        assert_eq!(markdown_name(Path::new("modes/fast.md")), "fast");
    }

    #[test]
    fn front_matter_is_yaml_between_dashes() {
        let text = "---\ndescription: Code review\npermission:\n  bash:\n    \"*\": ask\n    \"git diff\": allow\n---\n\nBody.\n";
        let value = front_matter(text, "review.md").unwrap();
        assert_eq!(value["permission"]["bash"]["git diff"], "allow");
        assert_eq!(front_matter("Just a prompt.", "x.md").unwrap(), serde_json::json!({}));
        assert!(front_matter("---\nmode: [\n---\n", "x.md").is_err());
        assert!(front_matter("---\nmode: primary\n", "x.md").is_err());
    }
}
