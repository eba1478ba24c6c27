//! Config loading: files, precedence, JSONC, validation with key paths.
//!
//! Layers, in order: the global `toolgate.json[c]` in the platform config directory, the
//! project's `toolgate.json[c]` (or, when it has none, its `opencode.json[c]`),
//! `--config FILE`, then `$TOOLGATE_PERMISSION` (a `permission` value). Rules are never
//! deep-merged: every layer's `permission` and `tools` (and each `agent.<name>` block's)
//! are read as rules on their own — a string is `{"*": effect}`, the list form is its
//! rules — and the layers' rules are concatenated in order, so the last matching rule
//! wins and no form replaces another. Other settings deep-merge, later wins.
//! `managed.json` in the global config directory is the managed layer.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use toolgate_permission::{AgentSettings, ConfigLayer, Origin};
use toolgate_permission::{deep_merge, key_path, rules_from_config};

/// A config problem, reported as one line naming the file and the key path.
#[derive(Debug)]
pub(crate) struct ConfigError(pub(crate) String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Where toolgate keeps its data and finds its global config.
#[derive(Clone, Debug)]
pub(crate) struct Dirs {
    pub(crate) data: PathBuf,
    pub(crate) config: PathBuf,
    pub(crate) home: Option<PathBuf>,
}

impl Dirs {
    /// `$TOOLGATE_DATA_DIR` or the platform data dir; `$TOOLGATE_CONFIG_DIR` or the platform
    /// config dir (both XDG on Linux and macOS, like OpenCode).
    pub(crate) fn discover() -> Dirs {
        use etcetera::BaseStrategy;
        let base = etcetera::choose_base_strategy().ok();
        let home = base.as_ref().map(|b| b.home_dir().to_path_buf());
        let fallback = || std::env::temp_dir().join("toolgate");
        let data = std::env::var_os("TOOLGATE_DATA_DIR")
            .map(PathBuf::from)
            .or_else(|| base.as_ref().map(|b| b.data_dir().join("toolgate")))
            .unwrap_or_else(fallback);
        let config = std::env::var_os("TOOLGATE_CONFIG_DIR")
            .map(PathBuf::from)
            .or_else(|| base.as_ref().map(|b| b.config_dir().join("toolgate")))
            .unwrap_or_else(fallback);
        Dirs { data, config, home }
    }
}

/// The effective configuration and the files it came from.
#[derive(Clone, Debug, Default)]
pub(crate) struct Config {
    /// Every setting except rules, deep-merged (later layers win).
    pub(crate) merged: Map<String, Value>,
    /// The `mcp` servers of every layer, merged by name: a higher layer's entry replaces
    /// the whole server object (a deep merge would mix two servers' settings).
    pub(crate) mcp: Vec<toolgate_mcp_client::Entry>,
    /// Each layer's rule blocks (`permission`, `tools`, `agent`), in order.
    pub(crate) layers: Vec<ConfigLayer>,
    pub(crate) managed: Option<Value>,
    /// The managed layer's `sandbox` block (its mode is a floor, see `sandbox::Settings`).
    pub(crate) managed_sandbox: Option<Value>,
    pub(crate) sources: Vec<PathBuf>,
}

/// Splits one file's value into its rule blocks (a layer) and the rest (deep-merged).
fn split_layer(mut value: Value, source: String) -> (ConfigLayer, Value) {
    let mut layer = ConfigLayer::new(source);
    if let Value::Object(map) = &mut value {
        layer.permission = map.shift_remove("permission");
        layer.tools = map.shift_remove("tools");
        if let Some(Value::Object(agents)) = map.get_mut("agent") {
            let mut rules = Map::new();
            for (name, block) in agents.iter_mut() {
                let mut own = Map::new();
                if let Value::Object(block) = block {
                    for key in ["permission", "tools", "mode", "description", "disable"] {
                        if let Some(field) = block.shift_remove(key) {
                            own.insert(key.to_string(), field);
                        }
                    }
                }
                rules.insert(name.clone(), Value::Object(own));
            }
            layer.agent = Some(Value::Object(rules));
        }
    }
    (layer, value)
}

impl Config {
    /// Loads every layer for the project at `dir`.
    pub(crate) fn load(dirs: &Dirs, dir: &Path, explicit: Option<&Path>) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        let mut merged = Value::Object(Map::new());
        let global = first_existing(&dirs.config, &["toolgate.json", "toolgate.jsonc"]);
        let project = first_existing(dir, &["toolgate.json", "toolgate.jsonc"])
            .or_else(|| first_existing(dir, &["opencode.json", "opencode.jsonc"]));
        let mut files: Vec<PathBuf> = [global, project].into_iter().flatten().collect();
        if let Some(file) = explicit {
            if !file.is_file() {
                return Err(ConfigError(format!("config file {} does not exist", file.display())));
            }
            files.push(file.to_path_buf());
        }
        for file in files {
            let value = read(&file)?;
            let (layer, rest) = split_layer(value, file.display().to_string());
            config.merge_mcp(&rest);
            deep_merge(&mut merged, &rest);
            config.layers.push(layer);
            config.sources.push(file);
        }
        // Set but unreadable is an error, never "unset": dropping the layer would drop its denies.
        let env = match std::env::var("TOOLGATE_PERMISSION") {
            Ok(text) => Some(text),
            Err(std::env::VarError::NotPresent) => None,
            Err(std::env::VarError::NotUnicode(_)) => {
                return Err(ConfigError("$TOOLGATE_PERMISSION is not valid UTF-8".into()));
            }
        };
        if let Some(text) = env {
            let value: Value = serde_json::from_str(&text)
                .map_err(|error| ConfigError(format!("$TOOLGATE_PERMISSION is not valid JSON: {error}")))?;
            validate_permission(&value, "$TOOLGATE_PERMISSION", dirs)?;
            config
                .layers
                .push(ConfigLayer::new("$TOOLGATE_PERMISSION").with_permission(value));
        }
        if let Some(file) = first_existing(&dirs.config, &["managed.json"]) {
            let value = read(&file)?;
            let permission = value.get("permission").cloned();
            if let Some(permission) = &permission {
                validate_permission(permission, &file.display().to_string(), dirs)?;
            }
            config.managed = permission;
            config.managed_sandbox = value.get("sandbox").cloned();
            config.sources.push(file);
        }
        config.merged = match merged {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        Ok(config)
    }

    /// Adds one layer's `mcp` servers (already validated by `read`), replacing by name.
    fn merge_mcp(&mut self, layer: &Value) {
        let Some(mcp) = layer.get("mcp") else { return };
        for entry in toolgate_mcp_client::entries(mcp).unwrap_or_default() {
            match self.mcp.iter_mut().find(|known| known.name == entry.name) {
                Some(known) => *known = entry,
                None => self.mcp.push(entry),
            }
        }
    }

    /// The configured MCP servers, `{env:VAR}` substituted, relative `cwd`s under `project`.
    pub(crate) fn mcp_servers(&self, project: &Path) -> Vec<toolgate_mcp_client::ServerConfig> {
        self.mcp
            .iter()
            .filter_map(|entry| {
                // Every entry passed validation when its file was read.
                toolgate_mcp_client::parse(entry, |name| std::env::var(name).ok(), project).ok()
            })
            .collect()
    }

    /// What the permission crate builds agents from; `skill_dirs` are the directories
    /// the `skill` tool lists files from.
    pub(crate) fn agent_settings(&self, dirs: &Dirs, skill_dirs: Vec<PathBuf>) -> AgentSettings {
        // Where `OutputStore::new(&dirs.data)` spills cut output, and the plan files.
        let mut settings = AgentSettings::default()
            .with_output_dir(dirs.data.join("tool-output"))
            .with_plans_dir(dirs.data.join("plans"))
            // Where commands write scratch files (the shell's `$TMPDIR`, else `/tmp`).
            .with_temp_dir(std::env::temp_dir());
        settings.home = dirs.home.clone();
        settings.default_agent = self
            .merged
            .get("default_agent")
            .and_then(Value::as_str)
            .map(str::to_string);
        settings.managed = self.managed.clone();
        settings.layers = self.layers.clone();
        settings.skill_dirs = skill_dirs;
        settings
    }

    /// The webfetch settings: `webfetch.allow_private_network`, `webfetch.allowed_hosts`.
    pub(crate) fn fetch_config(&self) -> toolgate_builtins_net::FetchConfig {
        let section = self.merged.get("webfetch");
        toolgate_builtins_net::FetchConfig::default()
            .allow_private_network(
                section
                    .and_then(|w| w.get("allow_private_network"))
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            )
            .allowed_hosts(
                section
                    .and_then(|w| w.get("allowed_hosts"))
                    .and_then(Value::as_array)
                    .map(|hosts| {
                        hosts
                            .iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default(),
            )
    }

    /// The websearch settings: provider and keys from the environment, endpoints and a
    /// fixed provider from `websearch.{provider, exa_url, parallel_url}`.
    pub(crate) fn search_config(&self) -> toolgate_builtins_net::SearchConfig {
        use toolgate_builtins_net::{Provider, SearchConfig};
        let key = |name: &str| std::env::var(name).ok().filter(|k| !k.is_empty());
        let provider = |name: Option<&str>| match name {
            Some("exa") => Some(Provider::Exa),
            Some("parallel") => Some(Provider::Parallel),
            _ => None,
        };
        let section = self.merged.get("websearch");
        let text = |key: &str| {
            section
                .and_then(|w| w.get(key))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        // The environment's provider wins over the config's.
        let chosen = provider(std::env::var("TOOLGATE_WEBSEARCH_PROVIDER").ok().as_deref())
            .or_else(|| provider(text("provider").as_deref()));
        let mut config = SearchConfig::default()
            .provider(chosen)
            .exa_key(key("EXA_API_KEY"))
            .parallel_key(key("PARALLEL_API_KEY"));
        if let Some(url) = text("exa_url") {
            config = config.exa_url(url);
        }
        if let Some(url) = text("parallel_url") {
            config = config.parallel_url(url);
        }
        config
    }

    /// A positive integer setting such as `tool_output.max_lines`.
    pub(crate) fn positive(&self, section: &str, key: &str) -> Option<u64> {
        self.merged.get(section)?.get(key)?.as_u64()
    }
}

fn first_existing(dir: &Path, names: &[&str]) -> Option<PathBuf> {
    names.iter().map(|name| dir.join(name)).find(|path| path.is_file())
}

/// Reads and validates one config file.
fn read(file: &Path) -> Result<Value, ConfigError> {
    let text = std::fs::read_to_string(file)
        .map_err(|error| ConfigError(format!("cannot read config {}: {error}", file.display())))?;
    let options = jsonc_parser::ParseOptions::default();
    let value: Value = jsonc_parser::parse_to_serde_value(&text, &options)
        .map_err(|error| ConfigError(format!("config {} is not valid JSONC: {error}", file.display())))?;
    let name = file.display().to_string();
    if !value.is_object() {
        return Err(ConfigError(format!(
            "config {name}: expected an object at the top level"
        )));
    }
    validate(&value, &name)?;
    crate::sandbox::validate(&value, &name)?;
    Ok(value)
}

fn fail(file: &str, path: &str, expected: &str, found: &Value) -> ConfigError {
    ConfigError(format!("config {file}: {path}: expected {expected}, found {found}"))
}

fn validate_permission(value: &Value, file: &str, dirs: &Dirs) -> Result<(), ConfigError> {
    rules_from_config(value, "permission", Origin::UserConfig, dirs.home.as_deref())
        .map(|_| ())
        .map_err(|error| ConfigError(format!("config {file}: {error}")))
}

/// Checks the keys toolgate reads; other keys (an OpenCode config has many) are ignored.
fn validate(value: &Value, file: &str) -> Result<(), ConfigError> {
    let check_permission = |value: &Value, path: &str| {
        rules_from_config(value, path, Origin::UserConfig, None)
            .map(|_| ())
            .map_err(|error| ConfigError(format!("config {file}: {error}")))
    };
    let check_tools = |value: &Value, path: &str| -> Result<(), ConfigError> {
        let Value::Object(map) = value else {
            return Err(fail(file, path, "an object of tool names to true or false", value));
        };
        for (name, enabled) in map {
            if !enabled.is_boolean() {
                return Err(fail(file, &key_path(path, name), "true or false", enabled));
            }
        }
        Ok(())
    };
    if let Some(permission) = value.get("permission") {
        check_permission(permission, "permission")?;
    }
    if let Some(tools) = value.get("tools") {
        check_tools(tools, "tools")?;
    }
    if let Some(mcp) = value.get("mcp") {
        toolgate_mcp_client::validate(mcp).map_err(|error| ConfigError(format!("config {file}: {error}")))?;
    }
    if let Some(default) = value.get("default_agent")
        && !default.is_string()
    {
        return Err(fail(file, "default_agent", "a string", default));
    }
    if let Some(agents) = value.get("agent") {
        let Value::Object(agents) = agents else {
            return Err(fail(file, "agent", "an object of agent names", agents));
        };
        for (name, block) in agents {
            let path = key_path("agent", name);
            let Value::Object(block) = block else {
                return Err(fail(file, &path, "an object", block));
            };
            if let Some(permission) = block.get("permission") {
                check_permission(permission, &format!("{path}.permission"))?;
            }
            if let Some(tools) = block.get("tools") {
                check_tools(tools, &format!("{path}.tools"))?;
            }
            for key in ["description", "mode"] {
                if let Some(field) = block.get(key)
                    && !field.is_string()
                {
                    return Err(fail(file, &format!("{path}.{key}"), "a string", field));
                }
            }
            if let Some(field) = block.get("mode")
                && !matches!(field.as_str(), Some("primary" | "subagent" | "all"))
            {
                return Err(fail(
                    file,
                    &format!("{path}.mode"),
                    "\"primary\", \"subagent\" or \"all\"",
                    field,
                ));
            }
            if let Some(field) = block.get("disable")
                && !field.is_boolean()
            {
                return Err(fail(file, &format!("{path}.disable"), "true or false", field));
            }
        }
    }
    for (section, key) in [("tool_output", "max_lines"), ("tool_output", "max_bytes")] {
        if let Some(field) = value.get(section).and_then(|s| s.get(key))
            && field.as_u64().is_none_or(|n| n == 0)
        {
            return Err(fail(file, &format!("{section}.{key}"), "a positive integer", field));
        }
    }
    if let Some(field) = value.get("doom_loop_threshold")
        && field.as_u64().is_none_or(|n| n == 0)
    {
        return Err(fail(file, "doom_loop_threshold", "a positive integer", field));
    }
    if let Some(field) = value.get("webfetch").and_then(|w| w.get("allow_private_network"))
        && !field.is_boolean()
    {
        return Err(fail(file, "webfetch.allow_private_network", "true or false", field));
    }
    if let Some(field) = value.get("webfetch").and_then(|w| w.get("allowed_hosts"))
        && !field.as_array().is_some_and(|hosts| hosts.iter().all(Value::is_string))
    {
        return Err(fail(file, "webfetch.allowed_hosts", "a list of host names", field));
    }
    for key in ["exa_url", "parallel_url"] {
        if let Some(field) = value.get("websearch").and_then(|w| w.get(key))
            && !field
                .as_str()
                .is_some_and(|url| url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(fail(
                file,
                &format!("websearch.{key}"),
                "an http:// or https:// URL",
                field,
            ));
        }
    }
    if let Some(field) = value.get("websearch").and_then(|w| w.get("provider"))
        && !matches!(field.as_str(), Some("exa" | "parallel"))
    {
        return Err(fail(file, "websearch.provider", "\"exa\" or \"parallel\"", field));
    }
    Ok(())
}
