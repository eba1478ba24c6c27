//! Default rules, the built-in agents and custom agents from config (spec §4.10).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::{ConfigError, effective_permission, key_path, rules_from_config};
use crate::rules::{Effect, Origin, Rule, Ruleset};

/// How an agent may be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A top-level agent a user talks to.
    Primary,
    /// Only started by another agent.
    Subagent,
    /// Either.
    All,
}

impl Mode {
    fn parse(text: &str) -> Option<Mode> {
        match text {
            "primary" => Some(Mode::Primary),
            "subagent" => Some(Mode::Subagent),
            "all" => Some(Mode::All),
            _ => None,
        }
    }
}

/// One agent: its name, how it is used and its compiled rules.
#[derive(Clone, Debug)]
pub struct Agent {
    /// The agent's name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// How it may be used.
    pub mode: Mode,
    /// Hidden agents (compaction, title, summary) never appear in pickers.
    pub hidden: bool,
    /// Its rules, in order.
    pub rules: Ruleset,
}

/// What the agent set is built from: the parsed config values and two directories.
#[derive(Clone, Debug, Default)]
pub struct AgentSettings {
    /// The data directory (`<data>/tool-output/*` and `<data>/plans/*` are allowed there).
    pub data_dir: PathBuf,
    /// The home directory for `~` expansion.
    pub home: Option<PathBuf>,
    /// The user's `permission` value.
    pub permission: Option<Value>,
    /// The user's legacy `tools` value.
    pub tools: Option<Value>,
    /// The `agent` object: `{name: {permission, tools, description, mode, disable}}`.
    pub agents: Option<Value>,
    /// The `default_agent` value.
    pub default_agent: Option<String>,
    /// The managed layer's `permission` value, appended last to every agent.
    pub managed: Option<Value>,
}

/// Every agent and the default one.
#[derive(Clone, Debug)]
pub struct Agents {
    agents: Vec<Agent>,
    default: String,
}

fn rule(action: &str, resource: &str, effect: Effect, origin: Origin) -> Rule {
    Rule::new(action, resource, effect, origin)
}

fn glob_in(dir: &Path, tail: &str) -> String {
    format!(
        "{}/{tail}",
        dir.to_string_lossy().replace('\\', "/").trim_end_matches('/')
    )
}

/// The defaults every agent starts with (V2's table, plus V1's `doom_loop: ask`).
pub fn defaults(data_dir: &Path) -> Vec<Rule> {
    use Effect::*;
    let o = Origin::Defaults;
    vec![
        rule("*", "*", Allow, o),
        rule("doom_loop", "*", Ask, o),
        rule("external_directory", "*", Ask, o),
        rule("external_directory", &glob_in(data_dir, "tool-output/*"), Allow, o),
        rule("question", "*", Deny, o),
        rule("plan_enter", "*", Deny, o),
        rule("plan_exit", "*", Deny, o),
        rule("read", "*", Allow, o),
        rule("read", "*.env", Ask, o),
        rule("read", "*.env.*", Ask, o),
        rule("read", "*.env.example", Allow, o),
    ]
}

fn builtin(name: &str, data_dir: &Path) -> Option<(Mode, bool, &'static str, Vec<Rule>)> {
    use Effect::*;
    let o = Origin::Agent;
    let readonly_external = || {
        vec![
            rule("external_directory", "*", Ask, o),
            rule("external_directory", &glob_in(data_dir, "tool-output/*"), Allow, o),
        ]
    };
    Some(match name {
        "build" => (
            Mode::Primary,
            false,
            "The default agent: reads, edits and runs commands as the rules allow.",
            vec![rule("question", "*", Allow, o), rule("plan_enter", "*", Allow, o)],
        ),
        "plan" => (
            Mode::Primary,
            false,
            "Plans without editing: edits are denied except plan files.",
            vec![
                rule("question", "*", Allow, o),
                rule("plan_exit", "*", Allow, o),
                rule("external_directory", &glob_in(data_dir, "plans/*"), Allow, o),
                rule("edit", "*", Deny, o),
                rule("edit", ".opencode/plans/*.md", Allow, o),
                rule("edit", &glob_in(data_dir, "plans/*.md"), Allow, o),
            ],
        ),
        "general" => (
            Mode::Subagent,
            false,
            "A general-purpose subagent for multi-step tasks.",
            vec![rule("subagent", "*", Deny, o)],
        ),
        "explore" => {
            let mut rules = vec![rule("*", "*", Deny, o)];
            for action in ["grep", "glob", "webfetch", "websearch", "read"] {
                rules.push(rule(action, "*", Allow, o));
            }
            rules.push(rule("subagent", "*", Deny, o));
            rules.extend(readonly_external());
            (
                Mode::Subagent,
                false,
                "A read-only subagent that searches the code base.",
                rules,
            )
        }
        "compaction" | "title" | "summary" => (
            Mode::Primary,
            true,
            "An internal agent that uses no tools.",
            vec![rule("*", "*", Deny, o)],
        ),
        _ => return None,
    })
}

const BUILTIN_NAMES: [&str; 7] = ["build", "plan", "general", "explore", "compaction", "title", "summary"];

/// Why the agent set could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// A config value is malformed.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// `default_agent` names no agent.
    #[error("default agent \"{0}\" not found")]
    DefaultNotFound(String),
    /// `default_agent` names a subagent.
    #[error("default agent \"{0}\" is a subagent")]
    DefaultIsSubagent(String),
    /// `default_agent` names a hidden agent.
    #[error("default agent \"{0}\" is hidden")]
    DefaultIsHidden(String),
    /// No agent can be the default.
    #[error("no primary visible agent found")]
    NoPrimary,
}

impl Agents {
    /// Builds every agent from `settings`.
    ///
    /// Order of each agent's rules: defaults, the built-in agent's rules, the user's
    /// `permission` (custom agents: defaults, user, then their own), the agent's config
    /// block, the `<data>/tool-output/*` allowance, and the managed layer last.
    ///
    /// ```
    /// use toolgate_permission::{AgentSettings, Agents, Effect};
    /// let settings = AgentSettings {
    ///     permission: Some(serde_json::json!({"edit": "ask"})),
    ///     ..AgentSettings::default()
    /// };
    /// let agents = Agents::build(&settings).unwrap();
    /// assert_eq!(agents.default_agent().name, "build");
    /// let build = &agents.get("build").unwrap().rules;
    /// assert_eq!(build.evaluate("read", "src/.env").effect, Effect::Ask);
    /// assert_eq!(build.evaluate("edit", "src/main.rs").effect, Effect::Ask);
    /// ```
    pub fn build(settings: &AgentSettings) -> Result<Agents, AgentError> {
        let home = settings.home.as_deref();
        let data_dir = settings.data_dir.as_path();
        let user = match effective_permission(settings.permission.as_ref(), settings.tools.as_ref(), "permission")? {
            Some(value) => rules_from_config(&value, "permission", Origin::UserConfig, home)?,
            None => Vec::new(),
        };
        let managed = match &settings.managed {
            Some(value) => rules_from_config(value, "managed.permission", Origin::Managed, home)?,
            None => Vec::new(),
        };
        let configured = match &settings.agents {
            None | Some(Value::Null) => serde_json::Map::new(),
            Some(Value::Object(map)) => map.clone(),
            Some(other) => {
                return Err(ConfigError::new("agent", "an object of agent names", other).into());
            }
        };
        let tool_output = glob_in(data_dir, "tool-output/*");

        let mut names: Vec<String> = BUILTIN_NAMES.iter().map(|name| name.to_string()).collect();
        names.extend(
            configured
                .keys()
                .filter(|name| !BUILTIN_NAMES.contains(&name.as_str()))
                .cloned(),
        );

        let mut agents = Vec::new();
        for name in names {
            let block = configured.get(&name);
            let path = key_path("agent", &name);
            let block = match block {
                None | Some(Value::Null) => None,
                Some(Value::Object(map)) => Some(map),
                Some(other) => return Err(ConfigError::new(&path, "an object", other).into()),
            };
            let field = |key: &str| block.and_then(|map| map.get(key));
            if let Some(disable) = field("disable") {
                match disable.as_bool() {
                    Some(true) => continue,
                    Some(false) => {}
                    None => {
                        return Err(ConfigError::new(&format!("{path}.disable"), "true or false", disable).into());
                    }
                }
            }
            let mut rules = defaults(data_dir);
            let (mut mode, hidden, mut description) = match builtin(&name, data_dir) {
                Some((mode, hidden, description, own)) => {
                    rules.extend(own);
                    rules.extend(user.iter().cloned());
                    (mode, hidden, description.to_string())
                }
                None => {
                    rules.extend(user.iter().cloned());
                    (Mode::All, false, String::new())
                }
            };
            if let Some(value) = field("mode") {
                mode = value.as_str().and_then(Mode::parse).ok_or_else(|| {
                    ConfigError::new(&format!("{path}.mode"), "\"primary\", \"subagent\" or \"all\"", value)
                })?;
            }
            if let Some(value) = field("description") {
                description = value
                    .as_str()
                    .ok_or_else(|| ConfigError::new(&format!("{path}.description"), "a string", value))?
                    .to_string();
            }
            let own = effective_permission(field("permission"), field("tools"), &format!("{path}.permission"))?;
            if let Some(own) = own {
                rules.extend(rules_from_config(
                    &own,
                    &format!("{path}.permission"),
                    Origin::AgentConfig,
                    home,
                )?);
            }
            let denies_tool_output = rules
                .iter()
                .any(|r| r.action == "external_directory" && r.resource == tool_output && r.effect == Effect::Deny);
            if !denies_tool_output {
                rules.push(rule(
                    "external_directory",
                    &tool_output,
                    Effect::Allow,
                    Origin::Defaults,
                ));
            }
            rules.extend(managed.iter().cloned());
            agents.push(Agent {
                name,
                description,
                mode,
                hidden,
                rules: Ruleset::new(rules),
            });
        }

        let default = match &settings.default_agent {
            Some(name) => {
                let agent = agents
                    .iter()
                    .find(|agent| &agent.name == name)
                    .ok_or_else(|| AgentError::DefaultNotFound(name.clone()))?;
                if agent.mode == Mode::Subagent {
                    return Err(AgentError::DefaultIsSubagent(name.clone()));
                }
                if agent.hidden {
                    return Err(AgentError::DefaultIsHidden(name.clone()));
                }
                name.clone()
            }
            None => agents
                .iter()
                .find(|agent| agent.mode != Mode::Subagent && !agent.hidden)
                .map(|agent| agent.name.clone())
                .ok_or(AgentError::NoPrimary)?,
        };
        Ok(Agents { agents, default })
    }

    /// The agent called `name`.
    pub fn get(&self, name: &str) -> Option<&Agent> {
        self.agents.iter().find(|agent| agent.name == name)
    }

    /// The default agent.
    pub fn default_agent(&self) -> &Agent {
        // `build` guarantees the default names an agent of the list.
        self.get(&self.default).unwrap_or(&self.agents[0])
    }

    /// Every agent, built-ins first, then custom agents in config order.
    pub fn all(&self) -> &[Agent] {
        &self.agents
    }
}
