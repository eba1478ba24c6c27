//! Config glue: `toolgate-config` finds, reads and layers the files (README
//! "Configuration"); this module turns what it read into each crate's own options.

use std::path::{Path, PathBuf};

use toolgate_config::{Document, Effect, Layer, Loaded, McpLaunch, SourceKind};
use toolgate_permission::{AgentBlock, AgentSettings, ConfigLayer, Mode, Origin, Rule};

pub(crate) use toolgate_config::ConfigError;

/// Where toolgate keeps its data and finds its global config.
#[derive(Clone, Debug)]
pub(crate) struct Dirs {
    pub(crate) data: PathBuf,
    pub(crate) config: PathBuf,
    /// OpenCode's global config directory (`$XDG_CONFIG_HOME/opencode`, `~/.config/opencode`).
    pub(crate) opencode: Option<PathBuf>,
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
        let opencode = toolgate_config::opencode_global_dir(home.as_deref());
        Dirs {
            data,
            config,
            opencode,
            home,
        }
    }
}

/// The effective configuration and the layers it came from.
#[derive(Clone, Debug, Default)]
pub(crate) struct Config {
    /// Every layer read, in order.
    pub(crate) loaded: Loaded,
    /// Every setting except rules, deep-merged (later layers win).
    pub(crate) settings: Document,
    /// The managed layers' `sandbox` block (its mode is a floor, see `sandbox::Settings`).
    pub(crate) managed_sandbox: Option<toolgate_config::Sandbox>,
    /// Each project file with parts that need trust, and whether they apply.
    pub(crate) trust: Vec<crate::trust::FileTrust>,
    /// Every file and directory that defines rules for this project, read or not yet
    /// there (`toolgate_config::rule_paths`): their edits always ask.
    pub(crate) rule_paths: Vec<toolgate_config::RulePath>,
}

fn effect(effect: Effect) -> toolgate_permission::Effect {
    match effect {
        Effect::Allow => toolgate_permission::Effect::Allow,
        Effect::Ask => toolgate_permission::Effect::Ask,
        Effect::Deny => toolgate_permission::Effect::Deny,
        // An allow that flags its decisions (the rule says so, see `permission_layer`).
        Effect::Audit => toolgate_permission::Effect::Allow,
    }
}

fn mode(mode: toolgate_config::AgentMode) -> Mode {
    match mode {
        toolgate_config::AgentMode::Primary => Mode::Primary,
        toolgate_config::AgentMode::Subagent => Mode::Subagent,
        toolgate_config::AgentMode::All => Mode::All,
    }
}

/// One layer as the permission crate takes it: its rules and agent blocks, plain.
fn permission_layer(layer: &Layer, origin: Origin) -> ConfigLayer {
    let rules = |specs: &[toolgate_config::RuleSpec], origin: Origin| -> Vec<Rule> {
        specs
            .iter()
            .map(|spec| {
                let rule =
                    Rule::new(&spec.action, &spec.resource, effect(spec.effect), origin).with_source(&layer.source);
                if spec.effect == Effect::Audit {
                    rule.flagged()
                } else {
                    rule
                }
            })
            .collect()
    };
    let mut out = ConfigLayer::new(&layer.source).with_rules(rules(&layer.rules, origin));
    for agent in &layer.agents {
        let mut block = AgentBlock::new(&agent.name).with_rules(rules(&agent.rules, Origin::AgentConfig));
        block.mode = agent.mode.map(mode);
        block.description = agent.description.clone();
        block.disable = agent.disable;
        out = out.with_block(block);
    }
    out
}

impl Config {
    /// Loads every layer for the project at `dir`, and prints each warning on stderr. A
    /// project file's parts that need trust apply as `policy` says
    /// ([`crate::trust::apply`]); the others are withheld before anything is merged.
    pub(crate) fn load(
        dirs: &Dirs,
        dir: &Path,
        explicit: Option<&Path>,
        policy: crate::trust::Policy,
    ) -> Result<Config, ConfigError> {
        // The directories `Dirs` found (its fallback for a missing config directory too).
        let inputs = toolgate_config::Inputs::from_process(dir)?
            .toolgate_dir(&dirs.config)
            .data_dir(&dirs.data)
            .opencode_dir(dirs.opencode.clone())
            .home(dirs.home.clone())
            .explicit(explicit.map(Path::to_path_buf));
        let mut loaded = toolgate_config::load(&inputs)?;
        let mut rule_paths = toolgate_config::rule_paths(&inputs);
        // The files a config's `{file:…}` read define its values: their edits ask too.
        rule_paths.extend(
            loaded
                .all()
                .flat_map(|layer| layer.references.iter().cloned().map(toolgate_config::RulePath::file)),
        );
        for layer in loaded.all() {
            if let Some(shell_env) = &layer.document.shell_env {
                crate::sandbox::policy_of(shell_env).validate().map_err(|error| {
                    let text = error.to_string();
                    let (sub, message) = text.split_once(": ").unwrap_or(("", &text));
                    let path = if sub.is_empty() {
                        "shell_env".to_string()
                    } else {
                        format!("shell_env.{sub}")
                    };
                    ConfigError::invalid(&layer.source, path, message)
                })?;
            }
        }
        for warning in &loaded.warnings {
            eprintln!("toolgate: warning: {warning}");
        }
        let trust = crate::trust::apply(&mut loaded, &crate::trust::Store::new(&dirs.data), policy)?;
        let settings = loaded.settings()?;
        let managed_sandbox = loaded.managed_sandbox()?;
        Ok(Config {
            loaded,
            settings,
            managed_sandbox,
            trust,
            rule_paths,
        })
    }

    /// Every file read, in order (the sandbox keeps them read-only).
    pub(crate) fn files(&self) -> Vec<PathBuf> {
        self.loaded.all().filter_map(|layer| layer.path.clone()).collect()
    }

    /// Every layer read, in order: (kind, file or variable).
    pub(crate) fn sources(&self) -> Vec<(SourceKind, String)> {
        self.loaded
            .all()
            .map(|layer| (layer.kind, layer.source.clone()))
            .collect()
    }

    /// The configured MCP servers (`{env:VAR}` was substituted when each file was read),
    /// relative `cwd`s under `project`.
    /// The configured MCP servers, each local one run under what `wrap` gives for its
    /// `sandbox` entry and working directory (its error fails that server's start).
    pub(crate) fn mcp_servers(
        &self,
        project: &Path,
        wrap: impl Fn(Option<&toolgate_config::Sandbox>, &Path) -> Result<Vec<String>, String>,
    ) -> Vec<toolgate_mcp_client::ServerConfig> {
        use toolgate_mcp_client::{Launch, ServerConfig};
        let pairs = |list: &[(String, String)]| -> Vec<(String, String)> { list.to_vec() };
        self.loaded
            .mcp()
            .into_iter()
            .filter_map(|entry| {
                let launch = match &entry.launch {
                    McpLaunch::Local {
                        command,
                        environment,
                        cwd,
                    } => Launch::Local {
                        command: command.clone(),
                        environment: pairs(environment),
                        cwd: cwd.as_ref().map(|dir| project.join(dir)),
                    },
                    McpLaunch::Remote { url, headers } => Launch::Remote {
                        url: url.clone(),
                        headers: pairs(headers),
                    },
                    McpLaunch::Off => return None,
                };
                let mut server = ServerConfig::new(&entry.name, launch).enabled(entry.enabled);
                let oauth = &entry.oauth;
                let mut settings = if oauth.enabled {
                    toolgate_mcp_client::OAuth::default()
                } else {
                    toolgate_mcp_client::OAuth::disabled()
                };
                if let Some(id) = &oauth.client_id {
                    settings = settings.client(id.clone(), oauth.client_secret.clone());
                }
                if let Some(scope) = &oauth.scope {
                    settings = settings.scope(scope.clone());
                }
                server = server.oauth(settings);
                if let Some(ms) = entry.startup_ms {
                    server = server.startup_timeout(std::time::Duration::from_millis(ms));
                }
                if let Some(ms) = entry.request_ms {
                    server = server.request_timeout(std::time::Duration::from_millis(ms));
                }
                if let Launch::Local { cwd, .. } = &server.launch {
                    let dir = cwd.clone().unwrap_or_else(|| project.to_path_buf());
                    match wrap(entry.sandbox.as_ref(), &dir) {
                        Ok(prefix) => server = server.run_under(prefix),
                        // Nothing runs unsandboxed that was meant to be sandboxed: the
                        // server's start fails with the reason.
                        Err(reason) => {
                            server = server.run_under(vec![
                                "/bin/sh".into(),
                                "-c".into(),
                                "echo \"the sandbox could not be prepared: $0\" >&2; exit 125".into(),
                                reason,
                            ]);
                        }
                    }
                }
                Some(server)
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
        settings.default_agent = self.settings.default_agent.clone();
        for layer in &self.loaded.layers {
            settings = settings.with_layer(permission_layer(layer, Origin::UserConfig));
        }
        for layer in &self.loaded.managed {
            settings = settings.with_managed_layer(permission_layer(layer, Origin::Managed));
        }
        settings.skill_dirs = skill_dirs;
        settings
    }

    /// The webfetch settings: `webfetch.allow_private_network`, `webfetch.allowed_hosts`.
    pub(crate) fn fetch_config(&self) -> toolgate_builtins_net::FetchConfig {
        let section = self.settings.webfetch.clone().unwrap_or_default();
        toolgate_builtins_net::FetchConfig::default()
            .allow_private_network(section.allow_private_network.is_some_and(|flag| flag.0))
            .allowed_hosts(section.allowed_hosts.map(|hosts| hosts.0).unwrap_or_default())
    }

    /// Whether the websearch tool is offered (`"websearch": false` turns it off).
    pub(crate) fn websearch_on(&self) -> bool {
        !matches!(self.settings.websearch, Some(toolgate_config::Websearch::Off(_)))
    }

    /// The websearch settings: provider and keys from the environment, endpoints and a
    /// fixed provider from `websearch.{provider, exa_url, parallel_url}`.
    #[cfg(feature = "websearch")]
    pub(crate) fn search_config(&self) -> toolgate_builtins_net::SearchConfig {
        use toolgate_builtins_net::{Provider, SearchConfig};
        let key = |name: &str| std::env::var(name).ok().filter(|k| !k.is_empty());
        let provider = |name: Option<&str>| match name {
            Some("exa") => Some(Provider::Exa),
            Some("parallel") => Some(Provider::Parallel),
            _ => None,
        };
        let section = match &self.settings.websearch {
            Some(toolgate_config::Websearch::Settings(settings)) => settings.clone(),
            _ => toolgate_config::WebsearchSettings::default(),
        };
        // The environment's provider wins over the config's.
        let chosen = provider(std::env::var("TOOLGATE_WEBSEARCH_PROVIDER").ok().as_deref())
            .or_else(|| provider(section.provider.as_deref()));
        let mut config = SearchConfig::default()
            .provider(chosen)
            .exa_key(key("EXA_API_KEY"))
            .parallel_key(key("PARALLEL_API_KEY"));
        if let Some(url) = section.exa_url {
            config = config.exa_url(url.0);
        }
        if let Some(url) = section.parallel_url {
            config = config.parallel_url(url.0);
        }
        config
    }

    /// `tool_output.max_lines` and `tool_output.max_bytes`, when set.
    pub(crate) fn tool_output(&self) -> (Option<u64>, Option<u64>) {
        let section = self.settings.tool_output.unwrap_or_default();
        (section.max_lines.map(|n| n.get()), section.max_bytes.map(|n| n.get()))
    }

    /// `shells.*`: the limits of background processes.
    pub(crate) fn shell_limits(&self) -> toolgate_builtins_shell::ShellLimits {
        let section = self.settings.shells.unwrap_or_default();
        let size = |n: toolgate_config::PositiveInt| usize::try_from(n.get()).unwrap_or(usize::MAX);
        let mut limits = toolgate_builtins_shell::ShellLimits::default();
        if let Some(n) = section.max_per_session {
            limits = limits.with_per_session(size(n));
        }
        if let Some(n) = section.max_total {
            limits = limits.with_total(size(n));
        }
        if let Some(n) = section.output_bytes {
            limits = limits.with_ring_bytes(size(n));
        }
        if let Some(n) = section.log_bytes {
            limits = limits.with_log_bytes(n.get());
        }
        limits
    }

    /// `doom_loop_threshold`, when set.
    pub(crate) fn doom_loop_threshold(&self) -> Option<u64> {
        self.settings.doom_loop_threshold.map(|n| n.get())
    }
}
