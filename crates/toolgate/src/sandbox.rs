//! The bash sandbox and the shell's environment: the `sandbox` and `shell_env` config
//! keys, `--sandbox MODE`, the deny rules turned into hidden and read-only paths, and the
//! launcher that starts every command line through `toolgate __sandbox-exec`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};
use toolgate_builtins_shell::{BashOptions, Launch, Launcher, ShellEnvPolicy};
use toolgate_core::{Context, Location, Permissions, Tool, ToolFailure};
use toolgate_permission::{PermissionService, WALK_BUDGET, denied_paths};
use toolgate_sandbox::{Mode, Policy, Support};

use crate::config::{Config, ConfigError, Dirs};

/// How many paths the sandbox may mount (hidden plus read-only) per command.
const MOUNT_BUDGET: usize = 4096;

/// The effective `sandbox` settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) mode: Mode,
    pub(crate) network: bool,
    /// `writable` as configured (`~` expanded, relative to the project).
    pub(crate) writable: Vec<PathBuf>,
    pub(crate) required: bool,
    /// The managed layer's mode: `--sandbox` and the other layers can only be stricter.
    managed_floor: Mode,
    /// Where the mode came from, for `toolgate config`.
    pub(crate) mode_origin: &'static str,
}

impl Settings {
    /// The settings of the merged config and the managed layer.
    pub(crate) fn from_config(config: &Config, dirs: &Dirs, project: &Path) -> Settings {
        let section = config.merged.get("sandbox");
        let managed = config.managed_sandbox.as_ref();
        let get = |value: Option<&Value>, key: &str| value.and_then(|v| v.get(key)).cloned();
        let mode_of = |value: Option<&Value>| {
            get(value, "mode")
                .as_ref()
                .and_then(Value::as_str)
                .and_then(Mode::parse)
        };
        let user_mode = mode_of(section);
        let managed_floor = mode_of(managed).unwrap_or(Mode::Off);
        let mode = user_mode.unwrap_or(Mode::Off).stricter(managed_floor);
        let mode_origin = if managed_floor > user_mode.unwrap_or(Mode::Off) {
            "managed"
        } else if user_mode.is_some() {
            "config"
        } else {
            "default"
        };
        let network = get(section, "network").and_then(|v| v.as_bool()).unwrap_or(false)
            && get(managed, "network").and_then(|v| v.as_bool()).unwrap_or(true);
        let required = get(section, "required").and_then(|v| v.as_bool()).unwrap_or(false)
            || get(managed, "required").and_then(|v| v.as_bool()).unwrap_or(false);
        // An administrator's list replaces the user's.
        let writable = get(managed, "writable")
            .or_else(|| get(section, "writable"))
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(Value::as_str)
            .map(|path| {
                let expanded = toolgate_permission::expand_home(path, dirs.home.as_deref());
                project.join(expanded)
            })
            .collect();
        Settings {
            mode,
            network,
            writable,
            required,
            managed_floor,
            mode_origin,
        }
    }

    /// Applies `--sandbox MODE` (never below the managed layer's mode).
    pub(crate) fn with_cli(mut self, mode: Option<Mode>) -> Settings {
        if let Some(mode) = mode {
            self.mode = mode.stricter(self.managed_floor);
            self.mode_origin = if self.managed_floor > mode {
                "managed"
            } else {
                "--sandbox"
            };
        }
        self
    }

    /// The description's sentence for a sandbox that is on.
    fn sentence(&self) -> String {
        let network = if self.network {
            "the network is the host's"
        } else {
            "the network is off (no TCP or UDP, not even to this machine)"
        };
        match self.mode {
            Mode::ReadOnly => format!(
                "Bash runs in a read-only sandbox: the command and everything it starts can write nothing \
                 (except /dev/null-like devices), files that the read rules deny are hidden, and {network}."
            ),
            _ => {
                let mut places = vec!["the project directory".to_string(), "the temp directory".to_string()];
                places.extend(self.writable.iter().map(|p| p.display().to_string()));
                format!(
                    "Bash runs in a sandbox: the command and everything it starts can write only under {}, files \
                     that the read rules deny are hidden, files that the edit rules deny are read-only, and {network}.",
                    places.join(", ")
                )
            }
        }
    }
}

/// Checks the `sandbox` and `shell_env` keys of one config file.
pub(crate) fn validate(value: &Value, file: &str) -> Result<(), ConfigError> {
    let fail = |path: &str, expected: &str, found: &Value| {
        ConfigError(format!("config {file}: {path}: expected {expected}, found {found}"))
    };
    if let Some(section) = value.get("sandbox") {
        let Value::Object(map) = section else {
            return Err(fail("sandbox", "an object", section));
        };
        for (key, field) in map {
            let path = format!("sandbox.{key}");
            match key.as_str() {
                "mode" if field.as_str().and_then(Mode::parse).is_none() => {
                    return Err(fail(&path, "\"off\", \"read-only\" or \"workspace-write\"", field));
                }
                "network" | "required" if !field.is_boolean() => return Err(fail(&path, "true or false", field)),
                "writable" if !field.as_array().is_some_and(|list| list.iter().all(Value::is_string)) => {
                    return Err(fail(&path, "a list of directories", field));
                }
                "mode" | "network" | "required" | "writable" => {}
                _ => {
                    return Err(ConfigError(format!(
                        "config {file}: {path}: unknown key (mode, network, writable, required)"
                    )));
                }
            }
        }
    }
    if let Some(section) = value.get("shell_env") {
        let policy: ShellEnvPolicy = serde_json::from_value(section.clone())
            .map_err(|error| ConfigError(format!("config {file}: shell_env: {error}")))?;
        policy
            .validate()
            .map_err(|error| ConfigError(format!("config {file}: shell_env.{error}")))?;
    }
    Ok(())
}

/// The merged `shell_env` settings (each file's were checked when it was read).
pub(crate) fn shell_policy(config: &Config) -> ShellEnvPolicy {
    config
        .merged
        .get("shell_env")
        .and_then(|section| serde_json::from_value(section.clone()).ok())
        .unwrap_or_default()
}

/// The environment a command gets under `shell_env`, from toolgate's own.
pub(crate) fn shell_environment(config: &Config) -> Vec<(OsString, OsString)> {
    shell_policy(config).environment(std::env::vars_os())
}

/// This binary, as the trampoline to run.
fn exe() -> &'static Option<PathBuf> {
    static EXE: OnceLock<Option<PathBuf>> = OnceLock::new();
    EXE.get_or_init(|| std::env::current_exe().ok())
}

/// Whether the sandbox works here: probed once per process, or remembered in
/// `<data>/sandbox/support` from an earlier probe while nothing it depends on changed.
pub(crate) fn support(dirs: &Dirs) -> &'static Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(|| match exe() {
        Some(exe) => toolgate_sandbox::probe_cached(exe, &dirs.data.join("sandbox").join("support")),
        None => Support::Missing("cannot find the toolgate binary to run the sandbox with".into()),
    })
}

/// What the bash tool and its sandbox are made from: a command's setup, in parts (so
/// this file needs nothing of the setup's own file).
pub(crate) struct Parts<'a> {
    pub(crate) dir: &'a Path,
    pub(crate) dirs: &'a Dirs,
    pub(crate) config: &'a Config,
    pub(crate) sandbox: &'a Settings,
    pub(crate) service: &'a PermissionService,
}

/// The bash tool as `setup` configures it: its environment, and its sandbox when on.
pub(crate) fn bash_tool(setup: &Parts<'_>, location: Location, permissions: Arc<dyn Permissions>) -> Tool {
    let env: Arc<[(OsString, OsString)]> = shell_environment(setup.config).into();
    let mut options = BashOptions::default().with_env(env);
    let settings = &setup.sandbox;
    if settings.mode != Mode::Off {
        let support = support(setup.dirs);
        match (support, exe()) {
            (Support::Available { .. }, Some(exe)) => {
                options.sandbox_sentence = Some(settings.sentence());
                options.launcher = Some(Arc::new(SandboxLauncher::new(setup, exe.clone())));
            }
            _ if settings.required => {
                options.sandbox_sentence = Some(format!(
                    "Bash is disabled: the sandbox is required here but {}.",
                    missing(support)
                ));
                options.launcher = Some(Arc::new(Refuse(format!(
                    "bash is disabled: the configuration requires the sandbox (sandbox.required), but it is {}",
                    support
                ))));
            }
            _ => warn_unsandboxed(support),
        }
    }
    toolgate_builtins_shell::bash_tool_with(location, permissions, options)
}

fn missing(support: &Support) -> String {
    match support {
        Support::Missing(what) => what.clone(),
        Support::Available { .. } => "this binary cannot be found".to_string(),
    }
}

/// Once per process: the sandbox was asked for and cannot be had.
fn warn_unsandboxed(support: &Support) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::SeqCst) {
        eprintln!(
            "toolgate: warning: the bash sandbox is {support}; bash runs unsandboxed (set sandbox.required to refuse instead)"
        );
    }
}

/// A launcher that refuses every command (the sandbox is required and missing).
struct Refuse(String);

impl Launcher for Refuse {
    fn prepare(&self, _: &Context, _: &Path) -> Result<Launch, ToolFailure> {
        Err(ToolFailure::new(self.0.clone()))
    }
}

/// Starts each command line through `toolgate __sandbox-exec` with a policy made from the
/// settings and the caller's deny rules as they stand when the command starts.
struct SandboxLauncher {
    settings: Settings,
    project: PathBuf,
    exe: PathBuf,
    service: PermissionService,
    /// toolgate's own files: its config (in the project and global) and its data.
    protected: Vec<PathBuf>,
    data: PathBuf,
}

impl SandboxLauncher {
    fn new(setup: &Parts<'_>, exe: PathBuf) -> SandboxLauncher {
        let mut protected: Vec<PathBuf> = [
            "toolgate.json",
            "toolgate.jsonc",
            "opencode.json",
            "opencode.jsonc",
            ".toolgate",
        ]
        .iter()
        .map(|name| setup.dir.join(name))
        .collect();
        protected.push(setup.dirs.config.clone());
        protected.push(setup.dirs.data.clone());
        protected.extend(setup.config.sources.iter().cloned());
        SandboxLauncher {
            settings: setup.sandbox.clone(),
            project: setup.dir.to_path_buf(),
            exe,
            service: setup.service.clone(),
            protected,
            data: setup.dirs.data.clone(),
        }
    }

    fn policy(&self, ctx: &Context, workdir: &Path) -> Result<Policy, String> {
        let writable: Vec<PathBuf> = self
            .settings
            .writable
            .iter()
            .filter_map(|path| std::fs::canonicalize(path).ok())
            .collect();
        let mut policy = Policy::new(self.settings.mode, &self.project, self.settings.network)
            .writable(writable)
            .workdir(workdir);
        let agents = self.service.agents();
        let agent = agents.get(&ctx.agent).unwrap_or_else(|| agents.default_agent());
        let mut budget = WALK_BUDGET;
        let masked = denied_paths(&agent.rules, "read", &self.project, &mut budget).map_err(|e| e.to_string())?;
        let mut read_only: Vec<PathBuf> = canonical_existing(&self.protected);
        read_only.extend(canonical_existing(&toolgate_sandbox::git_code_paths(&self.project)));
        if self.settings.mode == Mode::WorkspaceWrite {
            read_only
                .extend(denied_paths(&agent.rules, "edit", &self.project, &mut budget).map_err(|e| e.to_string())?);
        }
        // Only paths where writing is possible need a mount.
        read_only.retain(|path| policy.is_writable(path));
        if masked.len() + read_only.len() > MOUNT_BUDGET {
            return Err(format!(
                "the deny rules name {} existing paths, more than the sandbox mounts ({MOUNT_BUDGET}); name directories instead (`secrets/*`)",
                masked.len() + read_only.len()
            ));
        }
        if masked.iter().any(|path| !path.is_dir()) {
            policy = policy.mask_file(toolgate_sandbox::mask_file(&self.data).map_err(|e| e.to_string())?);
        }
        Ok(policy.masked(masked).read_only(read_only))
    }
}

impl Launcher for SandboxLauncher {
    fn prepare(&self, ctx: &Context, workdir: &Path) -> Result<Launch, ToolFailure> {
        let policy = self
            .policy(ctx, workdir)
            .map_err(|error| ToolFailure::new(format!("The sandbox could not be prepared: {error}")))?;
        let mut prefix = policy.command_line(&self.exe, "", Vec::<OsString>::new());
        // `command_line` ends with the program (here empty); the shell comes after it.
        prefix.pop();
        let sandbox = policy.mode.to_string();
        Ok(Launch::default()
            .with_prefix(prefix)
            .with_sandbox(sandbox)
            .with_note(move |output: &str| policy.explain(output)))
    }
}

fn canonical_existing(paths: &[PathBuf]) -> Vec<PathBuf> {
    paths
        .iter()
        .filter_map(|path| std::fs::canonicalize(path).ok())
        .collect()
}

/// `sandbox` as `toolgate config` and `toolgate check bash` report it.
pub(crate) fn report(setup: &Parts<'_>) -> (String, Value) {
    let settings = &setup.sandbox;
    let env = shell_environment(setup.config);
    let inherit = shell_policy(setup.config).inherit.as_str();
    if settings.mode == Mode::Off {
        let text = format!(
            "sandbox: off ({}): bash is not sandboxed; shell_env: inherit {inherit}, {} variables",
            settings.mode_origin,
            env.len()
        );
        let value = json!({"mode": "off", "origin": settings.mode_origin, "sandboxed": false,
            "shellEnv": {"inherit": inherit, "variables": env.len()}});
        return (text, value);
    }
    let support = support(setup.dirs);
    let writable: Vec<String> = settings.writable.iter().map(|p| p.display().to_string()).collect();
    let state = match (support.is_available(), settings.required) {
        (true, _) => format!("{support}"),
        (false, true) => format!("{support}: bash refuses to run (sandbox.required)"),
        (false, false) => format!("{support}: bash runs UNSANDBOXED"),
    };
    let text = format!(
        "sandbox: {} ({}), network {}, writable: project, temp dir{}{}, required {} — {state}; shell_env: inherit {inherit}, {} variables",
        settings.mode,
        settings.mode_origin,
        if settings.network { "on" } else { "off" },
        if writable.is_empty() { "" } else { ", " },
        writable.join(", "),
        settings.required,
        env.len()
    );
    let value = json!({
        "mode": settings.mode.as_str(),
        "origin": settings.mode_origin,
        "network": settings.network,
        "writable": writable,
        "required": settings.required,
        "available": support.is_available(),
        "support": support.to_string(),
        "sandboxed": support.is_available(),
        "shellEnv": {"inherit": inherit, "variables": env.len()},
    });
    (text, value)
}
