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
    /// The managed (administrator's) layers, in order: their rules are appended to every
    /// agent after everything else (after [`AgentSettings::managed`]), their agent blocks'
    /// rules after that, and what their blocks set (`disable`, `mode`, `description`)
    /// wins over every other layer.
    pub managed_layers: Vec<ConfigLayer>,
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
    /// Rules already read (by a config loader), after the layer's `tools` and
    /// `permission`; they take the layer's origin and source.
    pub rules: Vec<Rule>,
    /// Agent blocks already read, after the layer's `agent` object.
    pub blocks: Vec<AgentBlock>,
}

/// One agent's block in one layer, already read: the settings it sets and its rules.
///
/// Start from [`AgentBlock::new`] (`#[non_exhaustive]`).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct AgentBlock {
    /// The agent's name (a new name makes a custom agent).
    pub name: String,
    /// Its mode, when the block sets it.
    pub mode: Option<Mode>,
    /// Its description, when set.
    pub description: Option<String>,
    /// `Some(true)` removes the agent (the last block that sets it decides).
    pub disable: Option<bool>,
    /// Its rules, appended after every layer's global rules.
    pub rules: Vec<Rule>,
}

impl AgentBlock {
    /// An empty block for the agent `name`.
    pub fn new(name: impl Into<String>) -> Self {
        AgentBlock {
            name: name.into(),
            ..AgentBlock::default()
        }
    }

    /// Sets the mode.
    pub fn with_mode(mut self, mode: Mode) -> Self {
        self.mode = Some(mode);
        self
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets `disable`.
    pub fn with_disable(mut self, disable: bool) -> Self {
        self.disable = Some(disable);
        self
    }

    /// Sets the rules.
    pub fn with_rules(mut self, rules: Vec<Rule>) -> Self {
        self.rules = rules;
        self
    }
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

    /// Sets the rules already read (see [`ConfigLayer::rules`]).
    pub fn with_rules(mut self, rules: Vec<Rule>) -> Self {
        self.rules = rules;
        self
    }

    /// Appends an agent block already read.
    pub fn with_block(mut self, block: AgentBlock) -> Self {
        self.blocks.push(block);
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

    /// Appends a managed layer (see [`AgentSettings::managed_layers`]).
    pub fn with_managed_layer(mut self, layer: ConfigLayer) -> Self {
        self.managed_layers.push(layer);
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

/// `rules` read from the layer `source` with `origin`.
fn stamped(rules: &[Rule], origin: Origin, source: &str) -> Vec<Rule> {
    rules
        .iter()
        .map(|rule| Rule { origin, ..rule.clone() })
        .map(|rule| match rule.source {
            Some(_) => rule,
            None => rule.with_source(source),
        })
        .collect()
}

/// The plain agent blocks of `layer`, their rules stamped with `origin` and its source.
fn layer_blocks(layer: &ConfigLayer, origin: Origin) -> Vec<AgentBlock> {
    layer
        .blocks
        .iter()
        .map(|block| AgentBlock {
            rules: stamped(&block.rules, origin, &layer.source),
            ..block.clone()
        })
        .collect()
}

/// The blocks of an `agent` object given as JSON (`{name: {permission, tools, mode,
/// description, disable}}`), read from the layer `source` (empty: none).
fn value_blocks(agents: Option<&Value>, source: &str, home: Option<&Path>) -> Result<Vec<AgentBlock>, ConfigError> {
    let map = match agents {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(in_layer(
                ConfigError::new("agent", "an object of agent names", other),
                source,
            ));
        }
    };
    let mut blocks = Vec::new();
    for (name, block) in map {
        let path = key_path("agent", name);
        let block = match block {
            Value::Null => continue,
            Value::Object(block) => block,
            other => return Err(in_layer(ConfigError::new(&path, "an object", other), source)),
        };
        let mut own = AgentBlock::new(name);
        if let Some(value) = block.get("disable") {
            own.disable = Some(value.as_bool().ok_or_else(|| {
                in_layer(
                    ConfigError::new(&format!("{path}.disable"), "true or false", value),
                    source,
                )
            })?);
        }
        if let Some(value) = block.get("mode") {
            own.mode = Some(value.as_str().and_then(Mode::parse).ok_or_else(|| {
                let error = ConfigError::new(&format!("{path}.mode"), "\"primary\", \"subagent\" or \"all\"", value);
                in_layer(error, source)
            })?);
        }
        if let Some(value) = block.get("description") {
            let text = value.as_str().ok_or_else(|| {
                in_layer(
                    ConfigError::new(&format!("{path}.description"), "a string", value),
                    source,
                )
            })?;
            own.description = Some(text.to_string());
        }
        let rules = layer_rules(
            block.get("permission"),
            block.get("tools"),
            &format!("{path}.permission"),
            Origin::AgentConfig,
            home,
        )
        .map_err(|error| in_layer(error, source))?;
        own.rules = rules
            .into_iter()
            .map(|rule| match source {
                "" => rule,
                source => rule.with_source(source),
            })
            .collect();
        blocks.push(own);
    }
    Ok(blocks)
}

/// The pairs of action names OpenCode V1 and V2 spell differently (`bash`/`shell`,
/// `task`/`subagent`, spec §4.9): a rule written either way decides both.
const ALIASES: [(&str, &str); 2] = [("bash", "shell"), ("task", "subagent")];

/// `rules` with a twin after each rule whose action is one spelling of an alias pair, so
/// that a request under either spelling meets the same rules in the same order.
fn with_aliases(rules: Vec<Rule>) -> Vec<Rule> {
    let mut out = Vec::with_capacity(rules.len());
    for rule in rules {
        let twin = ALIASES.iter().find_map(|(a, b)| {
            if rule.action == *a {
                Some(*b)
            } else if rule.action == *b {
                Some(*a)
            } else {
                None
            }
        });
        let copy = twin.map(|action| Rule {
            action: action.to_string(),
            ..rule.clone()
        });
        out.push(rule);
        out.extend(copy);
    }
    out
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
        let homes = spellings(home);
        for cache in PACKAGE_CACHES {
            let dir = home.join(cache);
            for home in &homes {
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

/// The defaults every agent starts with (V1's table: `doom_loop: ask`, `mcp_pin: ask` —
/// an MCP server's changed or new tool definition waits for a person —, and
/// `external_directory` asking except for the spill files, the skill directories, the
/// package managers' caches and the temporary directory).
pub(crate) fn defaults(settings: &AgentSettings) -> Vec<Rule> {
    use Effect::*;
    let o = Origin::Defaults;
    let mut rules = vec![
        rule("*", "*", Allow, o),
        rule("doom_loop", "*", Ask, o),
        rule("mcp_pin", "*", Ask, o),
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
        let mut blocks = value_blocks(settings.agents.as_ref(), "", home)?;
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
            user.extend(stamped(&layer.rules, Origin::UserConfig, &layer.source));
            blocks.extend(value_blocks(layer.agent.as_ref(), &layer.source, home)?);
            blocks.extend(layer_blocks(layer, Origin::AgentConfig));
        }
        let mut managed = match &settings.managed {
            Some(value) => rules_from_config(value, "managed.permission", Origin::Managed, home)?,
            None => Vec::new(),
        };
        let mut managed_blocks = Vec::new();
        for layer in &settings.managed_layers {
            managed.extend(stamped(&layer.rules, Origin::Managed, &layer.source));
            managed_blocks.extend(
                value_blocks(layer.agent.as_ref(), &layer.source, home)?
                    .into_iter()
                    .map(|mut block| {
                        for rule in &mut block.rules {
                            rule.origin = Origin::Managed;
                        }
                        block
                    }),
            );
            managed_blocks.extend(layer_blocks(layer, Origin::Managed));
        }
        let tool_output = output_dir.map(|dir| glob_in(dir, "*"));

        let mut names: Vec<String> = BUILTIN_NAMES.iter().map(|name| name.to_string()).collect();
        for block in blocks.iter().chain(&managed_blocks) {
            if !names.contains(&block.name) {
                names.push(block.name.clone());
            }
        }

        // The same for every agent, and it looks paths up (each package cache's real
        // path): made once.
        let base = defaults(settings);
        let mut agents = Vec::new();
        for name in names {
            let own: Vec<&AgentBlock> = blocks.iter().filter(|block| block.name == name).collect();
            let administered: Vec<&AgentBlock> = managed_blocks.iter().filter(|block| block.name == name).collect();
            // The last block that sets a field decides it; a managed block's are last.
            let every = || own.iter().chain(&administered).rev();
            if every().find_map(|block| block.disable) == Some(true) {
                continue;
            }
            let mut rules = base.clone();
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
            if let Some(set) = every().find_map(|block| block.mode) {
                mode = set;
            }
            if let Some(set) = every().find_map(|block| block.description.clone()) {
                description = set;
            }
            for block in &own {
                rules.extend(block.rules.iter().cloned());
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
            for block in &administered {
                rules.extend(block.rules.iter().cloned());
            }
            agents.push(Agent {
                name,
                description,
                mode,
                hidden,
                rules: Ruleset::new(with_aliases(rules)),
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
