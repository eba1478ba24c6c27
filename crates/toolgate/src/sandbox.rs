//! The bash sandbox and the shell's environment: the `sandbox` and `shell_env` config
//! keys, `--sandbox MODE`, the deny rules turned into hidden and read-only paths, and the
//! launcher that starts every command line through `toolgate __sandbox-exec`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};
use toolgate_builtins_shell::{BashOptions, Launch, LaunchLine, Launcher, ShellEnvPolicy};
use toolgate_core::{Context, Location, Permissions, Tool, ToolFailure};
use toolgate_permission::{Effect, PermissionService, Ruleset, WALK_BUDGET, denied_paths, withheld_paths};
use toolgate_sandbox::{Mode, Policy, Support};

use crate::config::{Config, Dirs};

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
    /// Whether exec-time enforcement is on (`sandbox.enforce_exec`, default true; a
    /// managed `true` holds).
    pub(crate) enforce_exec: bool,
    /// The managed layer's mode: `--sandbox` and the other layers can only be stricter.
    managed_floor: Mode,
    /// Where the mode came from, for `toolgate config`.
    pub(crate) mode_origin: &'static str,
}

impl Settings {
    /// The settings of the merged config and the managed layer.
    pub(crate) fn from_config(config: &Config, dirs: &Dirs, project: &Path) -> Settings {
        let section = config.settings.sandbox.clone().unwrap_or_default();
        let managed = config.managed_sandbox.clone().unwrap_or_default();
        let user_mode = section.mode.map(mode_of);
        let managed_floor = managed.mode.map(mode_of).unwrap_or(Mode::Off);
        let mode = user_mode.unwrap_or(Mode::Off).stricter(managed_floor);
        let mode_origin = if managed_floor > user_mode.unwrap_or(Mode::Off) {
            "managed"
        } else if user_mode.is_some() {
            "config"
        } else {
            "default"
        };
        let flag = |flag: Option<toolgate_config::Flag>| flag.map(|flag| flag.0);
        let network = flag(section.network).unwrap_or(false) && flag(managed.network).unwrap_or(true);
        let required = flag(section.required).unwrap_or(false) || flag(managed.required).unwrap_or(false);
        let enforce_exec = flag(section.enforce_exec).unwrap_or(true) || flag(managed.enforce_exec).unwrap_or(false);
        // An administrator's list replaces the user's.
        let writable = managed
            .writable
            .or(section.writable)
            .map(|list| list.0)
            .unwrap_or_default()
            .iter()
            .map(|path| {
                let expanded = toolgate_config::expand_home(path, dirs.home.as_deref());
                project.join(expanded)
            })
            .collect();
        Settings {
            mode,
            network,
            writable,
            required,
            enforce_exec,
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

/// The sandbox crate's mode for the config's.
fn mode_of(mode: toolgate_config::SandboxMode) -> Mode {
    match mode {
        toolgate_config::SandboxMode::Off => Mode::Off,
        toolgate_config::SandboxMode::WorkspaceWrite => Mode::WorkspaceWrite,
        toolgate_config::SandboxMode::ReadOnly => Mode::ReadOnly,
    }
}

/// The shell crate's environment policy for one `shell_env` block.
pub(crate) fn policy_of(section: &toolgate_config::ShellEnv) -> ShellEnvPolicy {
    use toolgate_builtins_shell::Inherit;
    let inherit = match section.inherit {
        None | Some(toolgate_config::Inherit::All) => Inherit::All,
        Some(toolgate_config::Inherit::Core) => Inherit::Core,
        Some(toolgate_config::Inherit::None) => Inherit::None,
    };
    let set = section
        .set
        .iter()
        .flatten()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    ShellEnvPolicy::new(inherit, section.exclude.clone(), set)
}

/// The merged `shell_env` settings (each file's were checked when it was read).
pub(crate) fn shell_policy(config: &Config) -> ShellEnvPolicy {
    config.settings.shell_env.as_ref().map(policy_of).unwrap_or_default()
}

/// The environment a command gets under `shell_env`, from toolgate's own.
pub(crate) fn shell_environment(config: &Config) -> Vec<(OsString, OsString)> {
    shell_policy(config).environment(std::env::vars_os())
}

/// This binary, as the trampoline to run.
/// The trampoline every sandboxed or guarded command starts through: the small
/// `toolgate-sandbox-exec` installed beside this binary (it starts in a fraction of the
/// time), else this binary itself (`toolgate __sandbox-exec` does the same).
fn exe() -> &'static Option<PathBuf> {
    static EXE: OnceLock<Option<PathBuf>> = OnceLock::new();
    EXE.get_or_init(|| {
        let this = std::env::current_exe().ok()?;
        let small = this.with_file_name("toolgate-sandbox-exec");
        let runnable = std::fs::metadata(&small).is_ok_and(|meta| {
            use std::os::unix::fs::PermissionsExt;
            meta.is_file() && meta.permissions().mode() & 0o111 != 0
        });
        Some(if runnable { small } else { this })
    })
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

/// Whether exec-time enforcement holds for bash commands under `settings`.
pub(crate) fn enforces_exec(settings: &Settings, dirs: &Dirs) -> bool {
    settings.enforce_exec && exe().is_some() && guard_support(dirs).is_ok()
}

/// Whether exec-time enforcement works here: probed once per process, or remembered in
/// `<data>/sandbox/exec-guard` while nothing it depends on changed.
pub(crate) fn guard_support(dirs: &Dirs) -> &'static Result<(), String> {
    static SUPPORT: OnceLock<Result<(), String>> = OnceLock::new();
    SUPPORT.get_or_init(|| match exe() {
        Some(exe) => toolgate_sandbox::probe_exec_guard_cached(exe, &dirs.data.join("sandbox").join("exec-guard")),
        None => Err("cannot find the toolgate binary to run the exec guard with".into()),
    })
}

/// The sentence the bash tool's description adds when every program is checked as it starts.
const GUARD_SENTENCE: &str = "Every program the command starts (scripts, build tools and their children included) is checked against the rules when it starts: a refused one fails with \"Operation not permitted\" and the result names the rule; do not retry it another way, ask the user.";

/// What the bash tool and its sandbox are made from: a command's setup, in parts (so
/// this file needs nothing of the setup's own file).
pub(crate) struct Parts<'a> {
    pub(crate) dir: &'a Path,
    pub(crate) dirs: &'a Dirs,
    pub(crate) config: &'a Config,
    pub(crate) sandbox: &'a Settings,
    pub(crate) service: &'a PermissionService,
    /// Whether bash runs on this process's own streams (`toolgate exec`).
    pub(crate) attached: bool,
}

/// The bash tool as `setup` configures it: its environment, its sandbox when on, and
/// exec-time enforcement where the kernel supports it (with the sandbox off too).
/// `bash` and the `shell_*` tools over `shells`, started through the sandbox settings.
pub(crate) fn bash_tools(
    setup: &Parts<'_>,
    location: Location,
    permissions: Arc<dyn Permissions>,
    shells: toolgate_builtins_shell::Shells,
) -> Vec<(&'static str, Tool)> {
    let env: Arc<[(OsString, OsString)]> = shell_environment(setup.config).into();
    let mut options = BashOptions::default()
        .with_env(env)
        .with_shells(shells)
        .with_attached(setup.attached);
    let settings = &setup.sandbox;
    let guard = if settings.enforce_exec {
        match (guard_support(setup.dirs), exe()) {
            (Ok(()), Some(_)) => true,
            (Err(why), _) if settings.required => {
                options.sandbox_sentence = Some(format!(
                    "Bash is disabled: exec-time enforcement is required here (sandbox.required) but {why}."
                ));
                options.launcher = Some(Arc::new(Refuse(format!(
                    "bash is disabled: the configuration requires the sandbox (sandbox.required), but exec-time \
                     enforcement is unavailable: {why}; set sandbox.enforce_exec to false to run without it"
                ))));
                return toolgate_builtins_shell::bash_tools(location, permissions, options);
            }
            (Err(why), _) => {
                warn_unguarded(why);
                false
            }
            _ => false,
        }
    } else {
        false
    };
    if (settings.mode == Mode::Off || !support(setup.dirs).is_available())
        && let (true, Some(exe)) = (guard, exe())
    {
        options.launcher = Some(Arc::new(GuardLauncher {
            exe: exe.clone(),
            project: setup.dir.to_path_buf(),
        }));
        options.sandbox_sentence = Some(format!("{} {GUARD_SENTENCE}", toolgate_builtins_shell::NOT_SANDBOXED));
    }
    if settings.mode != Mode::Off {
        let support = support(setup.dirs);
        match (support, exe()) {
            (Support::Available { .. }, Some(exe)) => {
                let sentence = settings.sentence();
                options.sandbox_sentence = Some(if guard {
                    format!("{sentence} {GUARD_SENTENCE}")
                } else {
                    sentence
                });
                options.launcher = Some(Arc::new(SandboxLauncher::new(setup, exe.clone(), guard)));
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
    toolgate_builtins_shell::bash_tools(location, permissions, options)
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

/// Once per process: exec-time enforcement is on but this kernel cannot hold it.
fn warn_unguarded(why: &str) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::SeqCst) {
        eprintln!(
            "toolgate: warning: exec-time enforcement is unavailable ({why}); programs a command starts are not \
             checked as they start (set sandbox.required to refuse instead)"
        );
    }
}

/// Starts each command line through `toolgate __sandbox-exec` with the exec guard alone
/// (no sandbox): every program the command starts is decided as it starts.
struct GuardLauncher {
    exe: PathBuf,
    project: PathBuf,
}

impl Launcher for GuardLauncher {
    fn prepare(&self, _: &Context, line: &LaunchLine<'_>) -> Result<Launch, ToolFailure> {
        let workdir = line.workdir;
        let policy = Policy::new(Mode::Off, &self.project, true)
            .workdir(workdir)
            .exec_guard(true);
        let mut prefix = policy.command_line(&self.exe, "", Vec::<OsString>::new());
        prefix.pop();
        Ok(Launch::default().with_prefix(prefix).with_exec_guard(true))
    }

    fn enforces_exec(&self) -> bool {
        true
    }
}

/// A launcher that refuses every command (the sandbox is required and missing).
struct Refuse(String);

impl Launcher for Refuse {
    fn prepare(&self, _: &Context, _: &LaunchLine<'_>) -> Result<Launch, ToolFailure> {
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
    /// toolgate's own files: its config (in the project and global, OpenCode's included:
    /// every file read, `.opencode/`, OpenCode's global directory) and its data.
    protected: Vec<PathBuf>,
    data: PathBuf,
    /// Whether the exec guard is installed too.
    guard: bool,
}

/// toolgate's own files: its config (in the project and global, OpenCode's included:
/// every file read, `.opencode/`, OpenCode's global directory) and its data.
fn protected_paths(setup: &Parts<'_>) -> Vec<PathBuf> {
    let mut protected: Vec<PathBuf> = [
        "toolgate.json",
        "toolgate.jsonc",
        "opencode.json",
        "opencode.jsonc",
        ".opencode",
        ".toolgate",
    ]
    .iter()
    .map(|name| setup.dir.join(name))
    .collect();
    protected.push(setup.dirs.config.clone());
    protected.extend(setup.dirs.opencode.clone());
    protected.push(setup.dirs.data.clone());
    protected.extend(setup.config.files());
    protected
}

impl SandboxLauncher {
    fn new(setup: &Parts<'_>, exe: PathBuf, guard: bool) -> SandboxLauncher {
        SandboxLauncher {
            settings: setup.sandbox.clone(),
            project: setup.dir.to_path_buf(),
            exe,
            service: setup.service.clone(),
            protected: protected_paths(setup),
            data: setup.dirs.data.clone(),
            guard,
        }
    }

    fn policy(&self, ctx: &Context, workdir: &Path, approved_reads: &[PathBuf]) -> Result<Policy, String> {
        let writable: Vec<PathBuf> = self
            .settings
            .writable
            .iter()
            .filter_map(|path| std::fs::canonicalize(path).ok())
            .collect();
        let mut policy = Policy::new(self.settings.mode, &self.project, self.settings.network)
            .writable(writable)
            .workdir(workdir)
            .exec_guard(self.guard);
        let agents = self.service.agents();
        let agent = agents.get(&ctx.agent).unwrap_or_else(|| agents.default_agent());
        let mut budget = WALK_BUDGET;
        // No one can be asked from inside the kernel: what the read rules ask for is hidden
        // like what they deny, unless this call's reads were approved for it.
        let approved: Vec<PathBuf> = approved_reads
            .iter()
            .map(|path| std::fs::canonicalize(path).unwrap_or_else(|_| path.clone()))
            .collect();
        let masked: Vec<PathBuf> = withheld_paths(&agent.rules, "read", &self.project, &mut budget)
            .map_err(|e| e.to_string())?
            .into_iter()
            .filter(|path| {
                let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.clone());
                // A denied path stays hidden whatever was approved (nothing approves a deny).
                !approved.contains(&real) || denied(&agent.rules, &self.project, &real)
            })
            .collect();
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
    fn prepare(&self, ctx: &Context, line: &LaunchLine<'_>) -> Result<Launch, ToolFailure> {
        let policy = self
            .policy(ctx, line.workdir, line.approved_reads)
            .map_err(|error| ToolFailure::new(format!("The sandbox could not be prepared: {error}")))?;
        let mut prefix = policy.command_line(&self.exe, "", Vec::<OsString>::new());
        // `command_line` ends with the program (here empty); the shell comes after it.
        prefix.pop();
        let sandbox = policy.mode.to_string();
        // What git would follow to code and a command may create (not protected by a
        // read-only mount: it did not exist) is moved aside once the command has ended.
        let watch = (policy.mode == Mode::WorkspaceWrite).then(|| toolgate_sandbox::GitWatch::before(&self.project));
        let launch = Launch::default();
        let launch = match watch {
            Some(watch) => launch.with_after(move || watch.after()),
            None => launch,
        };
        Ok(launch
            .with_prefix(prefix)
            .with_sandbox(sandbox)
            .with_exec_guard(policy.exec_guard)
            .with_note(move |output: &str| policy.explain(output)))
    }

    fn enforces_exec(&self) -> bool {
        self.guard
    }
}

fn canonical_existing(paths: &[PathBuf]) -> Vec<PathBuf> {
    paths
        .iter()
        .filter_map(|path| std::fs::canonicalize(path).ok())
        .collect()
}

/// Whether the read rules deny `path` (absolute) outright, project-relative or absolute.
fn denied(rules: &Ruleset, project: &Path, path: &Path) -> bool {
    let absolute = path.to_string_lossy();
    let relative = path
        .strip_prefix(project)
        .ok()
        .map(|rel| rel.to_string_lossy().into_owned());
    rules.evaluate("read", &absolute).effect == Effect::Deny
        || relative.is_some_and(|rel| rules.evaluate("read", &rel).effect == Effect::Deny)
}

/// `sandbox` as `toolgate config` and `toolgate check bash` report it.
pub(crate) fn report(setup: &Parts<'_>) -> (String, Value) {
    let settings = &setup.sandbox;
    let env = shell_environment(setup.config);
    let inherit = shell_policy(setup.config).inherit.as_str();
    let (guard_text, guard_value) = if !settings.enforce_exec {
        (
            "exec checks: off (sandbox.enforce_exec)".to_string(),
            json!({"on": false, "available": guard_support(setup.dirs).is_ok()}),
        )
    } else {
        match guard_support(setup.dirs) {
            Ok(()) => (
                "exec checks: on (every program a command starts is checked against the bash rules as it starts)"
                    .to_string(),
                json!({"on": true, "available": true}),
            ),
            Err(why) => (
                format!(
                    "exec checks: unavailable ({why}){}",
                    if settings.required {
                        ": bash refuses to run (sandbox.required)"
                    } else {
                        ""
                    }
                ),
                json!({"on": false, "available": false, "support": why}),
            ),
        }
    };
    if settings.mode == Mode::Off {
        let text = format!(
            "sandbox: off ({}): bash is not sandboxed; {guard_text}; shell_env: inherit {inherit}, {} variables",
            settings.mode_origin,
            env.len()
        );
        let value = json!({"mode": "off", "origin": settings.mode_origin, "sandboxed": false,
            "execEnforcement": guard_value,
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
        "sandbox: {} ({}), network {}, writable: project, temp dir{}{}, required {} — {state}; {guard_text}; shell_env: inherit {inherit}, {} variables",
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
        "execEnforcement": guard_value,
        "shellEnv": {"inherit": inherit, "variables": env.len()},
    });
    (text, value)
}

/// The prefix a local MCP server's command runs under: the trampoline with the policy of
/// the server's `sandbox` (else `mcp_sandbox`), or nothing when that is off. The server
/// may write only under its working directory, the temp directory and `writable`
/// (`workspace-write`; nothing in `read-only`), never toolgate's own files; what the
/// default agent's read rules deny or ask is hidden; the network is off unless `network`
/// is true. The exec guard is not installed: the server's stdin is the protocol.
/// A sandbox the kernel cannot give makes the trampoline fail, so the server does not
/// start (fail closed; `toolgate mcp list` shows why).
pub(crate) fn server_wrapper(
    setup: &Parts<'_>,
    section: Option<&toolgate_config::Sandbox>,
    cwd: &Path,
) -> Result<Vec<String>, String> {
    let section = section.or(setup.config.settings.mcp_sandbox.as_ref());
    let Some(section) = section else {
        return Ok(Vec::new());
    };
    let mode = section.mode.map_or(Mode::Off, mode_of);
    if mode == Mode::Off {
        return Ok(Vec::new());
    }
    let exe = exe()
        .as_ref()
        .ok_or("cannot find the toolgate binary to run the sandbox with")?;
    let network = section.network.is_some_and(|flag| flag.0);
    let cwd = std::fs::canonicalize(cwd).map_err(|e| format!("its working directory {}: {e}", cwd.display()))?;
    let writable: Vec<PathBuf> = section
        .writable
        .as_ref()
        .map(|list| list.0.clone())
        .unwrap_or_default()
        .iter()
        .map(|path| {
            setup
                .dir
                .join(toolgate_config::expand_home(path, setup.dirs.home.as_deref()))
        })
        .filter_map(|path| std::fs::canonicalize(path).ok())
        .collect();
    let mut policy = Policy::new(mode, &cwd, network).writable(writable).workdir(&cwd);
    let agents = setup.service.agents();
    let agent = agents.default_agent();
    let mut budget = WALK_BUDGET;
    let masked: Vec<PathBuf> =
        withheld_paths(&agent.rules, "read", setup.dir, &mut budget).map_err(|e| e.to_string())?;
    let mut read_only = canonical_existing(&protected_paths(setup));
    read_only.retain(|path| policy.is_writable(path));
    if masked.len() + read_only.len() > MOUNT_BUDGET {
        return Err(format!(
            "the read rules name {} existing paths, more than the sandbox mounts ({MOUNT_BUDGET})",
            masked.len() + read_only.len()
        ));
    }
    if masked.iter().any(|path| !path.is_dir()) {
        policy = policy.mask_file(toolgate_sandbox::mask_file(&setup.dirs.data).map_err(|e| e.to_string())?);
    }
    let policy = policy.masked(masked).read_only(read_only);
    let mut line = policy.command_line(exe, "", Vec::<OsString>::new());
    // `command_line` ends with the program (here empty): the server's command comes after.
    line.pop();
    line.into_iter()
        .map(|arg| {
            arg.into_string()
                .map_err(|arg| format!("the sandbox's command line has a path that is not UTF-8: {arg:?}"))
        })
        .collect()
}
