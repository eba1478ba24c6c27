//! Default rules, the built-in agents and custom agents from config (spec §4.10).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::{ConfigError, key_path, layer_rules, rules_from_config};
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
#[non_exhaustive]
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
///
/// Start from [`AgentSettings::default`] and set the fields you have; more may be added
/// (`#[non_exhaustive]`), so it cannot be built with a struct literal outside this crate.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct AgentSettings {
    /// The directory spilled tool output is kept in (the binary passes its
    /// `<data>/tool-output`): `external_directory` allows `<output_dir>/*` by default, so
    /// the model can read what was cut from a result, unless a rule denies exactly that
    /// pattern. `None`: no such allowance.
    pub output_dir: Option<PathBuf>,
    /// The directory of plan files (the binary passes its `<data>/plans`): the `plan`
    /// agent may reach it and edit `*.md` files there. `None`: no such allowance.
    pub plans_dir: Option<PathBuf>,
    /// The home directory for `~` expansion, and where the package managers' caches
    /// ([`PACKAGE_CACHES`]) are: `external_directory` allows `<home>/<cache>/*` for each
    /// by default.
    pub home: Option<PathBuf>,
    /// The temporary directory commands write scratch files to (the binary passes
    /// [`std::env::temp_dir`], what the shell gets as `$TMPDIR` or `/tmp`):
    /// `external_directory` allows `<temp_dir>/*` by default. `None`: no such allowance.
    pub temp_dir: Option<PathBuf>,
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
    /// Further configuration layers, in order, after `permission`, `tools` and `agents`
    /// above: each layer's rules are appended after the previous layer's (see
    /// [`rules_from_config`](crate::rules_from_config), the legacy `tools` map before
    /// the `permission` value), and an agent's `mode`, `description` and
    /// `disable` are taken from the last layer that sets them.
    pub layers: Vec<ConfigLayer>,
    /// Directories outside the project whose files the `skill` tool offers:
    /// `external_directory` allows `<dir>/*` for each by default (spec §4.10), so what
    /// `skill` lists can be read. Give only directories the user controls (the global
    /// ones): a project's own skill directory could be a symlink to anywhere. The
    /// file-system root is never allowed this way.
    pub skill_dirs: Vec<PathBuf>,
}

/// One configuration layer (a file, or `$TOOLGATE_PERMISSION`): its blocks as written.
///
/// Start from [`ConfigLayer::new`] and set the blocks the layer has (`#[non_exhaustive]`).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ConfigLayer {
    /// Where the layer comes from; rules read from it carry it as their source.
    pub source: String,
    /// The layer's `permission` value.
    pub permission: Option<Value>,
    /// The layer's legacy `tools` value.
    pub tools: Option<Value>,
    /// The layer's `agent` object.
    pub agent: Option<Value>,
}

impl ConfigLayer {
    /// An empty layer from `source` (a file path, or the name of where it came from).
    pub fn new(source: impl Into<String>) -> Self {
        ConfigLayer {
            source: source.into(),
            ..ConfigLayer::default()
        }
    }

    /// Sets the layer's `permission` value.
    pub fn with_permission(mut self, permission: Value) -> Self {
        self.permission = Some(permission);
        self
    }

    /// Sets the layer's legacy `tools` value.
    pub fn with_tools(mut self, tools: Value) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Sets the layer's `agent` object.
    pub fn with_agent(mut self, agent: Value) -> Self {
        self.agent = Some(agent);
        self
    }
}

impl AgentSettings {
    /// Sets [`AgentSettings::permission`], the user's `permission` value.
    pub fn with_permission(mut self, permission: Value) -> Self {
        self.permission = Some(permission);
        self
    }

    /// Sets [`AgentSettings::tools`], the user's legacy `tools` value.
    pub fn with_tools(mut self, tools: Value) -> Self {
        self.tools = Some(tools);
        self
    }

    /// Sets [`AgentSettings::agents`], the `agent` object.
    pub fn with_agents(mut self, agents: Value) -> Self {
        self.agents = Some(agents);
        self
    }

    /// Sets [`AgentSettings::default_agent`].
    pub fn with_default_agent(mut self, name: impl Into<String>) -> Self {
        self.default_agent = Some(name.into());
        self
    }

    /// Sets [`AgentSettings::managed`], the managed layer's `permission` value.
    pub fn with_managed(mut self, managed: Value) -> Self {
        self.managed = Some(managed);
        self
    }

    /// Appends a configuration layer (see [`AgentSettings::layers`]).
    pub fn with_layer(mut self, layer: ConfigLayer) -> Self {
        self.layers.push(layer);
        self
    }

    /// Sets [`AgentSettings::home`], the home directory for `~` expansion.
    pub fn with_home(mut self, home: impl Into<PathBuf>) -> Self {
        self.home = Some(home.into());
        self
    }

    /// Sets [`AgentSettings::temp_dir`], the temporary directory commands write to.
    pub fn with_temp_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.temp_dir = Some(dir.into());
        self
    }

    /// Sets [`AgentSettings::output_dir`], where spilled tool output is kept.
    pub fn with_output_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.output_dir = Some(dir.into());
        self
    }

    /// Sets [`AgentSettings::plans_dir`], where plan files are kept.
    pub fn with_plans_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.plans_dir = Some(dir.into());
        self
    }

    /// Appends a global skill directory (see [`AgentSettings::skill_dirs`]).
    pub fn with_skill_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.skill_dirs.push(dir.into());
        self
    }
}

/// `error` as found in the layer `source`.
fn in_layer(error: ConfigError, source: &str) -> ConfigError {
    if source.is_empty() {
        return error;
    }
    ConfigError {
        path: format!("{source}: {}", error.path),
        ..error
    }
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

/// The package managers' and build tools' own directories in the home, where they keep
/// their caches, logs and installed tools and write on almost every run (`npm` logs to
/// `~/.npm/_logs`, `cargo` locks `~/.cargo/registry`). `external_directory` allows each
/// (`<home>/<dir>/*`) by default, like the spill directory, so `npm test` or `cargo
/// build` do not ask for them; a user rule that matches one (`"~/.cargo/*": "deny"`, or a
/// catch-all `"*": "ask"`) comes later and wins. The bash analysis asks for exactly these
/// directories when one of these programs runs (README "The bash tool").
pub const PACKAGE_CACHES: &[&str] = &[
    ".npm",
    ".cargo",
    ".rustup",
    ".cache/pip",
    ".cache/uv",
    ".local/share/uv",
    ".cache/pypoetry",
    ".cache/yarn",
    ".yarn",
    ".cache/pnpm",
    ".local/share/pnpm",
    ".bun",
    "go",
    ".cache/go-build",
];

/// A directory as given and, when it resolves elsewhere (a symlinked home), canonical: the
/// analysis asks for canonical paths, a rule written by a person names the given one.
fn spellings(dir: &Path) -> Vec<PathBuf> {
    let mut spellings = vec![dir.to_path_buf()];
    if let Ok(canonical) = std::fs::canonicalize(dir)
        && canonical != dir
    {
        spellings.push(canonical);
    }
    spellings
}

/// The `external_directory` allowances of the home's package caches and the temporary
/// directory (see [`PACKAGE_CACHES`], [`AgentSettings::temp_dir`]). The file-system root
/// is never allowed this way.
fn work_dirs(home: Option<&Path>, temp_dir: Option<&Path>) -> Vec<String> {
    let mut globs = Vec::new();
    let mut push = |dir: &Path| {
        if dir.parent().is_some() {
            let glob = glob_in(dir, "*");
            if !globs.contains(&glob) {
                globs.push(glob);
            }
        }
    };
    if let Some(home) = home {
        for cache in PACKAGE_CACHES {
            let dir = home.join(cache);
            for home in spellings(home) {
                push(&home.join(cache));
            }
            // The cache itself may be a symlink to another disk.
            for spelling in spellings(&dir) {
                push(&spelling);
            }
        }
    }
    if let Some(temp_dir) = temp_dir {
        for spelling in spellings(temp_dir) {
            push(&spelling);
        }
    }
    globs
}

/// The directories `external_directory` allows by default: the spill files and each
/// skill directory, as given and (when it resolves elsewhere) canonical, since the file
/// tools ask for the canonical path.
fn whitelisted(output_dir: Option<&Path>, skill_dirs: &[PathBuf]) -> Vec<String> {
    let mut globs: Vec<String> = output_dir.map(|dir| glob_in(dir, "*")).into_iter().collect();
    for dir in skill_dirs {
        let mut spellings = vec![dir.clone()];
        if let Ok(canonical) = std::fs::canonicalize(dir)
            && &canonical != dir
        {
            spellings.push(canonical);
        }
        for spelling in spellings {
            // A directory that is (or resolves to) the file-system root would allow
            // every outside path: never a skill directory's allowance.
            if spelling.parent().is_none() {
                continue;
            }
            let glob = glob_in(&spelling, "*");
            if !globs.contains(&glob) {
                globs.push(glob);
            }
        }
    }
    globs
}

/// The defaults every agent starts with (V1's table: `doom_loop: ask`, and
/// `external_directory` asking except for the spill files, the skill directories, the
/// package managers' caches and the temporary directory).
pub(crate) fn defaults(settings: &AgentSettings) -> Vec<Rule> {
    use Effect::*;
    let o = Origin::Defaults;
    let mut rules = vec![
        rule("*", "*", Allow, o),
        rule("doom_loop", "*", Ask, o),
        rule("external_directory", "*", Ask, o),
    ];
    let mut globs = whitelisted(settings.output_dir.as_deref(), &settings.skill_dirs);
    for glob in work_dirs(settings.home.as_deref(), settings.temp_dir.as_deref()) {
        if !globs.contains(&glob) {
            globs.push(glob);
        }
    }
    for glob in globs {
        rules.push(rule("external_directory", &glob, Allow, o));
    }
    rules.extend([
        rule("question", "*", Deny, o),
        rule("plan_enter", "*", Deny, o),
        rule("plan_exit", "*", Deny, o),
        rule("read", "*", Allow, o),
        rule("read", "*.env", Ask, o),
        rule("read", "*.env.*", Ask, o),
        rule("read", "*.env.example", Allow, o),
    ]);
    rules
}

fn builtin(
    name: &str,
    output_dir: Option<&Path>,
    plans_dir: Option<&Path>,
    skill_dirs: &[PathBuf],
) -> Option<(Mode, bool, &'static str, Vec<Rule>)> {
    use Effect::*;
    let o = Origin::Agent;
    let readonly_external = || {
        let mut rules = vec![rule("external_directory", "*", Ask, o)];
        for glob in whitelisted(output_dir, skill_dirs) {
            rules.push(rule("external_directory", &glob, Allow, o));
        }
        rules
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
            [
                Some(rule("question", "*", Allow, o)),
                Some(rule("plan_exit", "*", Allow, o)),
                plans_dir.map(|dir| rule("external_directory", &glob_in(dir, "*"), Allow, o)),
                Some(rule("edit", "*", Deny, o)),
                Some(rule("edit", ".opencode/plans/*.md", Allow, o)),
                plans_dir.map(|dir| rule("edit", &glob_in(dir, "*.md"), Allow, o)),
            ]
            .into_iter()
            .flatten()
            .collect(),
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
#[non_exhaustive]
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
    /// block, the spilled-output allowance ([`AgentSettings::output_dir`]), and the managed
    /// layer last.
    ///
    /// ```
    /// use toolgate_permission::{AgentSettings, Agents, Effect};
    /// let settings = AgentSettings::default().with_permission(serde_json::json!({"edit": "ask"}));
    /// let agents = Agents::build(&settings).unwrap();
    /// assert_eq!(agents.default_agent().name, "build");
    /// let build = &agents.get("build").unwrap().rules;
    /// assert_eq!(build.evaluate("read", "src/.env").effect, Effect::Ask);
    /// assert_eq!(build.evaluate("edit", "src/main.rs").effect, Effect::Ask);
    /// ```
    pub fn build(settings: &AgentSettings) -> Result<Agents, AgentError> {
        let home = settings.home.as_deref();
        let output_dir = settings.output_dir.as_deref();
        let plans_dir = settings.plans_dir.as_deref();
        let skill_dirs = settings.skill_dirs.as_slice();
        // Every layer is read as rules first, then the layers are concatenated: no form
        // (string, list, object) replaces another's rules.
        let mut user = layer_rules(
            settings.permission.as_ref(),
            settings.tools.as_ref(),
            "permission",
            Origin::UserConfig,
            home,
        )?;
        for layer in &settings.layers {
            let rules = layer_rules(
                layer.permission.as_ref(),
                layer.tools.as_ref(),
                "permission",
                Origin::UserConfig,
                home,
            )
            .map_err(|error| in_layer(error, &layer.source))?;
            user.extend(rules.into_iter().map(|rule| rule.with_source(layer.source.clone())));
        }
        let managed = match &settings.managed {
            Some(value) => rules_from_config(value, "managed.permission", Origin::Managed, home)?,
            None => Vec::new(),
        };
        // The `agent` objects of every layer, in order: (source, object).
        let mut blocks_by_layer: Vec<(&str, &serde_json::Map<String, Value>)> = Vec::new();
        let sources = std::iter::once(("", settings.agents.as_ref())).chain(
            settings
                .layers
                .iter()
                .map(|layer| (layer.source.as_str(), layer.agent.as_ref())),
        );
        for (source, agents) in sources {
            match agents {
                None | Some(Value::Null) => {}
                Some(Value::Object(map)) => blocks_by_layer.push((source, map)),
                Some(other) => {
                    let error = ConfigError::new("agent", "an object of agent names", other);
                    return Err(in_layer(error, source).into());
                }
            }
        }
        let tool_output = output_dir.map(|dir| glob_in(dir, "*"));

        let mut names: Vec<String> = BUILTIN_NAMES.iter().map(|name| name.to_string()).collect();
        for (_, map) in &blocks_by_layer {
            for name in map.keys() {
                if !names.contains(name) {
                    names.push(name.clone());
                }
            }
        }

        let mut agents = Vec::new();
        'agents: for name in names {
            let path = key_path("agent", &name);
            let mut blocks = Vec::new();
            for (source, map) in &blocks_by_layer {
                match map.get(&name) {
                    None | Some(Value::Null) => {}
                    Some(Value::Object(block)) => blocks.push((*source, block)),
                    Some(other) => return Err(in_layer(ConfigError::new(&path, "an object", other), source).into()),
                }
            }
            // The last layer that sets a field decides it.
            let field = |key: &str| {
                blocks
                    .iter()
                    .rev()
                    .find_map(|(source, block)| block.get(key).map(|value| (*source, value)))
            };
            if let Some((source, disable)) = field("disable") {
                match disable.as_bool() {
                    Some(true) => continue 'agents,
                    Some(false) => {}
                    None => {
                        let error = ConfigError::new(&format!("{path}.disable"), "true or false", disable);
                        return Err(in_layer(error, source).into());
                    }
                }
            }
            let mut rules = defaults(settings);
            let (mut mode, hidden, mut description) = match builtin(&name, output_dir, plans_dir, skill_dirs) {
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
            if let Some((source, value)) = field("mode") {
                mode = value.as_str().and_then(Mode::parse).ok_or_else(|| {
                    let error =
                        ConfigError::new(&format!("{path}.mode"), "\"primary\", \"subagent\" or \"all\"", value);
                    in_layer(error, source)
                })?;
            }
            if let Some((source, value)) = field("description") {
                description = value
                    .as_str()
                    .ok_or_else(|| {
                        in_layer(
                            ConfigError::new(&format!("{path}.description"), "a string", value),
                            source,
                        )
                    })?
                    .to_string();
            }
            for (source, block) in &blocks {
                let own = layer_rules(
                    block.get("permission"),
                    block.get("tools"),
                    &format!("{path}.permission"),
                    Origin::AgentConfig,
                    home,
                )
                .map_err(|error| in_layer(error, source))?;
                rules.extend(own.into_iter().map(|rule| match *source {
                    "" => rule,
                    source => rule.with_source(source),
                }));
            }
            if let Some(tool_output) = &tool_output {
                let denies_tool_output = rules.iter().any(|r| {
                    r.action == "external_directory" && &r.resource == tool_output && r.effect == Effect::Deny
                });
                if !denies_tool_output {
                    rules.push(rule("external_directory", tool_output, Effect::Allow, Origin::Defaults));
                }
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
