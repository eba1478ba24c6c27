//! The `bash` tool: every sub-command asked for, no way around the rules, one result always.
//!
//! Before anything runs, [`toolgate_shell_analysis::plan`] works out what the command line
//! would do: every command it would execute (a `bash` resource each, saved as its arity
//! prefix + ` *`), the files it reads (`read`), the files it writes (`edit`), and the
//! directories outside the project it touches (`external_directory`). The tool asserts
//! those, then runs the line with bash in its own process group, captures at most 1 MiB
//! of merged output, and always returns exactly one result — on exit, on timeout (TERM,
//! then KILL after 3 s), and when the call is cancelled.
//!
//! By default bash is not sandboxed: the spawned shell runs with the host user's
//! filesystem, process, and network authority. The permission analysis decides what is
//! asked; it is not a sandbox. A [`Launcher`] given in [`BashOptions`] can start every
//! command line through one (the `toolgate` binary passes its kernel sandbox), and
//! [`BashOptions::env`] decides the environment the shell inherits; toolgate's own
//! secrets ([`is_toolgate_secret`]) never reach it either way.
//!
//! ```
//! use std::sync::Arc;
//! use toolgate_core::{BoxFuture, Context, Location, ModelResult, PermissionRequest, Permissions, Refusal};
//!
//! /// Allows everything but `rm`.
//! struct NoRm;
//! impl Permissions for NoRm {
//!     fn assert<'a>(&'a self, _: &'a Context, request: PermissionRequest) -> BoxFuture<'a, Result<(), Refusal>> {
//!         let rm = request.resources.iter().any(|r| r.starts_with("rm "));
//!         Box::pin(async move { if rm { Err(Refusal::declined()) } else { Ok(()) } })
//!     }
//! }
//!
//! let dir = tempfile::tempdir().unwrap();
//! let tool = toolgate_builtins_shell::bash_tool(Location::new(dir.path()).unwrap(), Arc::new(NoRm));
//! let ctx = Context::new("ses_1", "build");
//! # let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
//! let output = rt.block_on(tool.settle(serde_json::json!({"command": "echo hi"}), ctx.clone())).unwrap().unwrap();
//! assert_eq!(ModelResult::from_output(&output), ModelResult::Text("hi\n\n\nCommand exited with code 0.".into()));
//! let refused = rt.block_on(tool.settle(serde_json::json!({"command": "echo hi && rm -rf x"}), ctx)).unwrap();
//! assert!(refused.is_err());
//! ```

mod background;
mod env;
mod exec;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate_core::{Annotations, Content};
use toolgate_shell_analysis::plan_with;

pub use background::end_adopted;
pub use background::{
    DEFAULT_LOG_BYTES, DEFAULT_MAX_PER_SESSION, DEFAULT_MAX_TOTAL, DEFAULT_RING_BYTES, ShellEvent, ShellInfo,
    ShellLimits, ShellOutput, Shells, log_dir,
};
pub use env::{DEFAULT_EXCLUDE, EnvPolicyError, Inherit, ShellEnvPolicy, is_toolgate_secret};

/// Default timeout in milliseconds.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Largest timeout in milliseconds.
pub const MAX_TIMEOUT_MS: u64 = 600_000;

/// The tool's description, as the model sees it (without a sandbox).
pub const DESCRIPTION: &str = "Run a shell command in the project directory (or `workdir`) and return its combined \
stdout and stderr with the exit code. Every command in the line — after `;`, `&&`, `||`, `|`, inside `$( )`, \
subshells, `sh -c` strings and wrappers like `env`, `sudo`, `xargs` or `find -exec` — is checked against the \
permission rules, as are files it reads, files it writes through redirections or `tee`, and directories outside \
the project. `timeout` is in milliseconds (default 120000, at most 600000); stdin is closed. \
Bash is not sandboxed: the spawned shell runs with the host user's filesystem, process, and network authority.";

/// OpenCode's sentence, kept verbatim when there is no sandbox.
pub const NOT_SANDBOXED: &str =
    "Bash is not sandboxed: the spawned shell runs with the host user's filesystem, process, and network authority.";

/// The description with `sandbox` (a sentence saying what the sandbox allows) in place of
/// the "not sandboxed" sentence; [`DESCRIPTION`] itself without one.
pub fn description(sandbox: Option<&str>) -> String {
    match sandbox {
        Some(sentence) => DESCRIPTION.replace(NOT_SANDBOXED, sentence),
        None => DESCRIPTION.to_string(),
    }
}

/// Starts command lines through something other than the shell alone: a sandbox.
///
/// The bash tool calls [`prepare`](Launcher::prepare) once per command line, after every
/// permission was granted and off the async worker threads (it may walk the file system).
/// An error refuses the call with its message; the command does not run.
pub trait Launcher: Send + Sync {
    /// How to start one command line for the caller in `ctx`, as `line` describes it.
    fn prepare(&self, ctx: &Context, line: &LaunchLine<'_>) -> Result<Launch, ToolFailure>;

    /// Whether every command line it starts runs under the exec guard ([`Launch::exec_guard`]).
    /// The bash tool then asks, rather than refuses, the parts of a line the analysis
    /// cannot see through: a deny rule still holds when the program starts.
    fn enforces_exec(&self) -> bool {
        false
    }
}

/// What a [`Launcher`] is told about the command line it starts.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct LaunchLine<'a> {
    /// The directory it runs in.
    pub workdir: &'a Path,
    /// Files whose `read` was approved for this call (by a rule or a person): a sandbox
    /// that hides what the read rules ask for leaves these readable.
    pub approved_reads: &'a [PathBuf],
}

/// How one command line is started (see [`Launcher`]).
///
/// Start from [`Launch::default`] (the shell alone) and set what the launcher needs;
/// more may be added (`#[non_exhaustive]`).
#[derive(Default)]
#[non_exhaustive]
pub struct Launch {
    /// A program and its arguments that run `shell -c command` (the shell and its
    /// arguments are appended); empty runs the shell directly.
    pub prefix: Vec<OsString>,
    /// What the result reports as the sandbox (`workspace-write`, …), if any.
    pub sandbox: Option<String>,
    /// For a failed command: a note explaining what of its output the launcher refused.
    #[allow(clippy::type_complexity)]
    pub note: Option<Box<dyn Fn(&str) -> Option<String> + Send + Sync>>,
    /// Run once the command has ended (whatever its exit): what it returns is added to the
    /// result, one line each (a sandbox undoing what must not stay, and saying so).
    #[allow(clippy::type_complexity)]
    pub after: Option<Box<dyn FnOnce() -> Vec<String> + Send>>,
    /// Whether the prefix installs the exec guard (`toolgate_sandbox::Policy::exec_guard`):
    /// it then gets a Unix socket as stdin, hands the guard's listener over it, and the
    /// bash tool decides every program the command starts (exec-time enforcement).
    pub exec_guard: bool,
}

/// Everything about how the bash tool runs commands besides the rules.
///
/// Start from [`BashOptions::default`] and change what you need with the `with_…`
/// setters; more options may be added (`#[non_exhaustive]`).
#[derive(Clone)]
#[non_exhaustive]
pub struct BashOptions {
    /// The shell: bash (found in `/bin`, `/usr/bin`, `/usr/local/bin`), whatever `$SHELL`
    /// says, since bash is what the analysis reads.
    pub shell: PathBuf,
    /// The whole environment of each command; `None` passes toolgate's own on. Toolgate's
    /// secrets are left out either way. The analysis plans with this same environment
    /// ([`ShellEnvPolicy::analysis_env`]).
    pub env: Option<Arc<[(OsString, OsString)]>>,
    /// Starts commands through a sandbox.
    pub launcher: Option<Arc<dyn Launcher>>,
    /// Replaces the "not sandboxed" sentence of the description.
    pub sandbox_sentence: Option<String>,
    /// Where background processes live (`background: true`); without it, `bash` runs
    /// every command in the foreground and there are no `shell_*` tools.
    pub shells: Option<Shells>,
    /// Foreground commands use this process's own stdin, stdout and stderr, with no
    /// timeout unless the call gives one, instead of a captured, bounded output: for a
    /// front end that wraps one command (`toolgate exec`). The result then says only how
    /// the command ended and what exec-time enforcement refused.
    pub attached: bool,
}

impl Launch {
    /// Runs `prefix… shell -c command` instead of the shell alone.
    pub fn with_prefix(mut self, prefix: Vec<OsString>) -> Self {
        self.prefix = prefix;
        self
    }

    /// Reports `sandbox` (`workspace-write`, …) as the sandbox the command ran in.
    pub fn with_sandbox(mut self, sandbox: impl Into<String>) -> Self {
        self.sandbox = Some(sandbox.into());
        self
    }

    /// Runs `after` once the command has ended; its lines go into the result.
    pub fn with_after(mut self, after: impl FnOnce() -> Vec<String> + Send + 'static) -> Self {
        self.after = Some(Box::new(after));
        self
    }

    /// Says that the prefix installs the exec guard (see [`Launch::exec_guard`]).
    pub fn with_exec_guard(mut self, on: bool) -> Self {
        self.exec_guard = on;
        self
    }

    /// Explains, for a failed command, what of its output the launcher refused.
    pub fn with_note(mut self, note: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        self.note = Some(Box::new(note));
        self
    }
}

impl BashOptions {
    /// Runs commands with `shell` instead of the default one.
    pub fn with_shell(mut self, shell: impl Into<PathBuf>) -> Self {
        self.shell = shell.into();
        self
    }

    /// Gives each command exactly `env` as its environment (toolgate's secrets are still
    /// left out) instead of toolgate's own.
    pub fn with_env(mut self, env: impl Into<Arc<[(OsString, OsString)]>>) -> Self {
        self.env = Some(env.into());
        self
    }

    /// Gives each command the environment `policy` makes of toolgate's own.
    pub fn with_env_policy(self, policy: &ShellEnvPolicy) -> Self {
        self.with_env(policy.environment(std::env::vars_os()))
    }

    /// Starts every command line through `launcher` (a sandbox).
    pub fn with_launcher(mut self, launcher: Arc<dyn Launcher>) -> Self {
        self.launcher = Some(launcher);
        self
    }

    /// Lets `bash` start background processes in `shells` (see [`bash_tools`]).
    pub fn with_shells(mut self, shells: Shells) -> Self {
        self.shells = Some(shells);
        self
    }

    /// Replaces the "not sandboxed" sentence of the tool's description with `sentence`.
    pub fn with_sandbox_sentence(mut self, sentence: impl Into<String>) -> Self {
        self.sandbox_sentence = Some(sentence.into());
        self
    }

    /// Runs foreground commands attached to this process's streams
    /// ([`BashOptions::attached`]).
    pub fn with_attached(mut self, attached: bool) -> Self {
        self.attached = attached;
        self
    }
}

impl Default for BashOptions {
    fn default() -> Self {
        BashOptions {
            shell: exec::default_shell(),
            env: None,
            launcher: None,
            sandbox_sentence: None,
            shells: None,
            attached: false,
        }
    }
}

/// The input of `bash`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct BashInput {
    /// The command line to run.
    pub command: String,
    /// The directory to run it in, relative to the project (default: the project root).
    pub workdir: Option<String>,
    /// Timeout in milliseconds (default 120000, at most 600000; with `background`, 0 or
    /// none means no timeout).
    pub timeout: Option<u64>,
    /// A short description of what the command does, shown to the person approving it.
    pub description: Option<String>,
    /// Run it in the background: the call returns at once with the process's id, and
    /// `shell_output`, `shell_write`, `shell_kill` work with it.
    pub background: Option<bool>,
    /// With `background`: wait until the process is ready before returning.
    pub wait_for: Option<WaitFor>,
    /// With `background`: run it on a pseudo-terminal (REPLs, prompts), whose input
    /// `shell_write` types.
    pub tty: Option<bool>,
    /// With `tty`: the terminal's size (default 24 rows, 80 columns).
    pub tty_size: Option<TtySize>,
}

/// What "ready" means for a background process (`wait_for`).
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct WaitFor {
    /// Ready once a TCP connection to this port on loopback (127.0.0.1 or ::1) succeeds.
    pub port: Option<u16>,
    /// Ready once the output matches this regular expression (`^` and `$` match at
    /// every line).
    pub pattern: Option<String>,
    /// How long to wait at most, in milliseconds (default 30000, at most 600000).
    pub timeout_ms: Option<u64>,
}

/// A terminal's size.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[non_exhaustive]
pub struct TtySize {
    /// Rows.
    pub rows: u16,
    /// Columns.
    pub cols: u16,
}

/// The structured output of `bash`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct BashOutput {
    /// The exit code (128 + signal number when a signal ended it).
    pub exit: Option<i32>,
    /// Whether output was left out of the capture.
    pub truncated: bool,
    /// Whether the timeout ended the command.
    pub timeout: bool,
    /// How many bytes of output were left out.
    pub dropped_bytes: u64,
    /// The sandbox the command ran in (`workspace-write`, `read-only`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// The id of the background process (`background: true`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shell_id: Option<String>,
    /// The log file a background process's output streams to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_path: Option<PathBuf>,
    /// With `wait_for`: whether the process became ready in time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    /// The text the model reads.
    #[serde(skip)]
    pub text: String,
}

/// Builds the `bash` tool for `location`, asking `permissions` before anything runs.
pub fn bash_tool(location: Location, permissions: Arc<dyn Permissions>) -> Tool {
    bash_tool_with_shell(location, permissions, exec::default_shell())
}

/// [`bash_tool`] with an explicit shell.
pub fn bash_tool_with_shell(location: Location, permissions: Arc<dyn Permissions>, shell: PathBuf) -> Tool {
    bash_tool_with(location, permissions, BashOptions::default().with_shell(shell))
}

/// [`bash_tool`] with every option.
pub fn bash_tool_with(location: Location, permissions: Arc<dyn Permissions>, options: BashOptions) -> Tool {
    bash_of(Arc::new(Shared {
        location,
        permissions,
        options,
    }))
}

/// `bash` and, when `options` has [`Shells`] ([`BashOptions::with_shells`]), the tools
/// that work with its background processes: `shell_list`, `shell_output`, `shell_write`
/// and `shell_kill`, each with its name.
pub fn bash_tools(
    location: Location,
    permissions: Arc<dyn Permissions>,
    options: BashOptions,
) -> Vec<(&'static str, Tool)> {
    let shared = Arc::new(Shared {
        location,
        permissions,
        options,
    });
    let mut tools = vec![("bash", bash_of(Arc::clone(&shared)))];
    if let Some(shells) = shared.options.shells.clone() {
        tools.extend(background::tools::tools(shared, shells));
    }
    tools
}

/// What every tool of this crate runs with.
pub(crate) struct Shared {
    pub(crate) location: Location,
    pub(crate) permissions: Arc<dyn Permissions>,
    pub(crate) options: BashOptions,
}

fn bash_of(shared: Arc<Shared>) -> Tool {
    // The sandbox sentence stays last (the model reads what confines it at the end).
    let mut description = DESCRIPTION.to_string();
    if shared.options.shells.is_some() {
        description = description.replace(NOT_SANDBOXED, &format!("{BACKGROUND_SENTENCE} {NOT_SANDBOXED}"));
    }
    if let Some(sentence) = shared.options.sandbox_sentence.as_deref() {
        description = description.replace(NOT_SANDBOXED, sentence);
    }
    Tool::builder(description, move |input: BashInput, ctx: Context| {
        let shared = Arc::clone(&shared);
        async move { execute(&shared, input, ctx).await }
    })
    .project(|output: &BashOutput| vec![Content::text(output.text.clone())])
    .title("Run a shell command")
    .annotations(Annotations::destructive().open_world(true))
    .build()
}

/// What the description adds when background processes are available.
pub const BACKGROUND_SENTENCE: &str = "With `background: true` the command keeps running after the call returns (a dev \
server, a watcher, a REPL): the result gives its shell ID; `wait_for` ({\"port\": N} or {\"pattern\": \"REGEX\"}, \
with `timeout_ms`) waits until it is ready, `tty: true` runs it on a terminal. Read its output with shell_output, \
send input with shell_write, stop it with shell_kill, list them with shell_list; they end with the session.";

/// A command line planned and asserted: where it runs and what exec-time enforcement
/// lets start without a new question.
pub(crate) struct Authorized {
    pub(crate) workdir: PathBuf,
    pub(crate) predicted: Vec<toolgate_core::Resource>,
    pub(crate) approved_reads: Vec<PathBuf>,
}

/// Plans `command` with the analysis (with the environment the command will get) and
/// asserts every request of the plan: the one way a command line is authorised, whether
/// it is a call of `bash` or a line written to a background shell.
pub(crate) async fn authorize(
    shared: &Shared,
    command: &str,
    workdir: Option<&str>,
    description: Option<&str>,
    ctx: &Context,
) -> Result<Authorized, ToolFailure> {
    let Shared {
        location,
        permissions,
        options,
    } = shared;
    if command.trim().is_empty() {
        return Err(ToolFailure::new("The command is empty."));
    }
    // The analysis reads the filesystem (patterns) and may take a while on a huge line:
    // keep it off the async workers. It plans with the environment the command will get.
    let planned = {
        let location = location.clone();
        let command = command.to_string();
        let workdir = workdir.map(str::to_string);
        let description = description.map(str::to_string);
        let shell_env = match &options.env {
            Some(env) => ShellEnvPolicy::analysis_env(env),
            None => ShellEnv::inherited(),
        };
        tokio::task::spawn_blocking(move || {
            plan_with(
                &location,
                &command,
                workdir.as_deref(),
                description.as_deref(),
                &shell_env,
            )
        })
        .await
        .map_err(|error| ToolFailure::new(format!("The command could not be analysed: {error}")))?
    };
    let plan = planned.map_err(|error| ToolFailure::new(error.to_string()))?;
    let enforced = options
        .launcher
        .as_ref()
        .is_some_and(|launcher| launcher.enforces_exec());
    // Files whose read is approved once the assertions pass: a sandbox may leave them
    // readable although the read rules ask for them.
    let approved_reads: Vec<PathBuf> = plan
        .requests
        .iter()
        .filter(|request| request.action == "read")
        .flat_map(|request| {
            request
                .resources
                .iter()
                .filter_map(move |resource| match request.kind(resource) {
                    toolgate_core::ResourceKind::Exact(text) if Path::new(text).is_absolute() => {
                        Some(PathBuf::from(text))
                    }
                    toolgate_core::ResourceKind::Exact(text) => Some(location.root().join(text)),
                    _ => None,
                })
        })
        .collect();
    for request in plan.requests {
        let request = if request.action == "bash" {
            request.enforced_later(enforced)
        } else {
            request
        };
        permissions.assert(ctx, request).await?;
    }
    // What was predicted and approved: exec-time enforcement lets these start without a
    // new question. An opaque part stands for itself only (its own words), not for
    // whatever it may run.
    let predicted: Vec<toolgate_core::Resource> = plan
        .analysis
        .parts
        .iter()
        .map(|part| {
            if part.opaque {
                toolgate_core::Resource::exact(part.display())
            } else {
                part.resource.clone()
            }
        })
        .collect();
    Ok(Authorized {
        workdir: plan.workdir,
        predicted,
        approved_reads,
    })
}

async fn execute(shared: &Shared, input: BashInput, ctx: Context) -> Result<BashOutput, ToolFailure> {
    let Shared {
        location,
        permissions,
        options,
    } = shared;
    let background = input.background.unwrap_or(false);
    if !background && (input.wait_for.is_some() || input.tty.is_some_and(|tty| tty)) {
        return Err(ToolFailure::new("`wait_for` and `tty` need `background: true`."));
    }
    if background && options.shells.is_none() {
        return Err(ToolFailure::new(
            "Background processes are not available here: run the command in the foreground.",
        ));
    }
    let timeout = match (background, input.timeout) {
        (true, None | Some(0)) => None,
        (true, Some(ms)) => Some(ms),
        (false, ms) => {
            let ms = ms.unwrap_or(DEFAULT_TIMEOUT_MS);
            if ms == 0 || ms > MAX_TIMEOUT_MS {
                return Err(ToolFailure::new(format!(
                    "Invalid timeout value: {ms}. Timeout must be between 1 and {MAX_TIMEOUT_MS} milliseconds."
                )));
            }
            Some(ms)
        }
    };
    // Checked before anything is asked: a wrong `wait_for` is the model's to fix.
    let ready = match &input.wait_for {
        Some(wait) => Some(background::tools::Ready::parse(wait)?),
        None => None,
    };
    let authorized = authorize(
        shared,
        &input.command,
        input.workdir.as_deref(),
        input.description.as_deref(),
        &ctx,
    )
    .await?;
    if !options.shell.is_file() {
        return Err(ToolFailure::new(format!(
            "bash is not installed ({} not found): toolgate runs every command with bash, the shell its analysis reads",
            options.shell.display()
        )));
    }
    if !authorized.workdir.is_dir() {
        return Err(ToolFailure::new(format!(
            "Working directory is not a directory: {}",
            authorized.workdir.display()
        )));
    }
    let Authorized {
        workdir,
        predicted,
        approved_reads,
    } = authorized;
    let mut launch = match &options.launcher {
        Some(launcher) => {
            let launcher = Arc::clone(launcher);
            let (ctx, workdir) = (ctx.clone(), workdir.clone());
            tokio::task::spawn_blocking(move || {
                let line = LaunchLine {
                    workdir: &workdir,
                    approved_reads: &approved_reads,
                };
                launcher.prepare(&ctx, &line)
            })
            .await
            .map_err(|error| ToolFailure::new(format!("The sandbox could not be prepared: {error}")))??
        }
        None => Launch::default(),
    };
    let spawn = exec::Spawn {
        shell: &options.shell,
        command: &input.command,
        workdir: &workdir,
        prefix: &launch.prefix,
        env: options.env.as_deref(),
        shell_id: None,
        cgroup: None,
    };
    let guard = launch
        .exec_guard
        .then(|| exec_guard(location, permissions, options, &ctx, predicted));
    if let Some(shells) = options.shells.as_ref().filter(|_| background) {
        let tty = input.tty.unwrap_or(false).then(|| {
            let size = input.tty_size.unwrap_or(TtySize { rows: 24, cols: 80 });
            background::Size {
                rows: size.rows.max(1),
                cols: size.cols.max(1),
            }
        });
        let proc = shells
            .start(background::Start {
                ctx: &ctx,
                spawn,
                guard,
                tty,
                timeout: timeout.map(Duration::from_millis),
                after: launch.after.take(),
            })
            .await?;
        return Ok(background::tools::started(&proc, ready, launch.sandbox).await);
    }
    if options.attached {
        let (after, sandbox) = (launch.after.take(), launch.sandbox.clone());
        return attached(spawn, guard, after, sandbox, input.timeout).await;
    }
    let timeout = timeout.unwrap_or(DEFAULT_TIMEOUT_MS);
    let finished = exec::run_with(spawn, Duration::from_millis(timeout), guard)
        .await
        .map_err(|error| ToolFailure::new(format!("Unable to execute command: {}: {error}", input.command)))?;
    let dropped = finished.capture.dropped();
    let mut refusals = finished.refusals.clone();
    if let Some(after) = launch.after.take() {
        let notes = tokio::task::spawn_blocking(after).await.unwrap_or_default();
        refusals.extend(notes);
    }
    let mut text = if finished.capture.total() == 0 {
        "(no output)".to_string()
    } else {
        finished.capture.text()
    };
    text.push_str("\n\n");
    if finished.timed_out {
        text.push_str(&format!(
            "Command exceeded timeout of {timeout} ms. Retry with a larger timeout if the command is expected to take longer."
        ));
    } else {
        match finished.exit {
            Some(code) => text.push_str(&format!("Command exited with code {code}.")),
            None => text.push_str("Command ended without an exit code."),
        }
        if finished.exit != Some(0)
            && let Some(note) = launch.note.as_ref().and_then(|note| note(&finished.capture.text()))
        {
            text.push('\n');
            text.push_str(&note);
        }
    }
    // What exec-time enforcement refused, one line the model can act on each.
    for refusal in refusals {
        text.push('\n');
        text.push_str(&refusal);
    }
    Ok(BashOutput {
        exit: finished.exit,
        truncated: dropped > 0,
        timeout: finished.timed_out,
        dropped_bytes: dropped,
        sandbox: launch.sandbox,
        shell_id: None,
        output_path: None,
        ready: None,
        text,
    })
}

/// A foreground command on this process's own streams ([`BashOptions::attached`]):
/// what it printed went where it was printed, so the text says how it ended and what
/// exec-time enforcement refused. A timeout the call gives still holds.
async fn attached(
    spawn: exec::Spawn<'_>,
    guard: Option<exec::Guard>,
    after: Option<Box<dyn FnOnce() -> Vec<String> + Send>>,
    sandbox: Option<String>,
    timeout: Option<u64>,
) -> Result<BashOutput, ToolFailure> {
    let command = spawn.command.to_string();
    let run = exec::run_attached(spawn, guard);
    let ended = match timeout {
        Some(ms) => match tokio::time::timeout(Duration::from_millis(ms), run).await {
            Ok(ended) => ended,
            Err(_) => {
                return Err(ToolFailure::new(format!(
                    "Command exceeded timeout of {ms} ms: {command}"
                )));
            }
        },
        None => run.await,
    }
    .map_err(|error| ToolFailure::new(format!("Unable to execute command: {command}: {error}")))?;
    let mut refusals = ended.refusals;
    if let Some(after) = after {
        refusals.extend(tokio::task::spawn_blocking(after).await.unwrap_or_default());
    }
    let mut text = match ended.exit {
        Some(code) => format!("Command exited with code {code}."),
        None => "Command ended without an exit code.".to_string(),
    };
    for refusal in refusals {
        text.push('\n');
        text.push_str(&refusal);
    }
    Ok(BashOutput {
        exit: ended.exit,
        truncated: false,
        timeout: false,
        dropped_bytes: 0,
        sandbox,
        shell_id: None,
        output_path: None,
        ready: None,
        text,
    })
}

/// What the exec guard needs to decide the programs of one call.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn exec_guard(
    location: &Location,
    permissions: &Arc<dyn Permissions>,
    options: &BashOptions,
    ctx: &Context,
    predicted: Vec<toolgate_core::Resource>,
) -> exec::Guard {
    let env: Vec<(OsString, OsString)> = match &options.env {
        Some(env) => env
            .iter()
            .filter(|(name, _)| !is_toolgate_secret(name))
            .cloned()
            .collect(),
        None => std::env::vars_os()
            .filter(|(name, _)| !is_toolgate_secret(name))
            .collect(),
    };
    // Where the command can write: a program planted there is not trusted by name.
    let temp = std::env::temp_dir();
    let writable = [
        location.root().to_path_buf(),
        temp.clone(),
        std::fs::canonicalize(&temp).unwrap_or(temp),
    ]
    .into_iter()
    .chain(std::iter::once(PathBuf::from("/dev/shm")))
    .collect();
    exec::guard::GuardSetup {
        ctx: ctx.clone(),
        permissions: Arc::clone(permissions),
        predicted: Arc::new(std::sync::Mutex::new(predicted)),
        env,
        writable,
        stdin: None,
    }
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn exec_guard(
    _: &Location,
    _: &Arc<dyn Permissions>,
    _: &BashOptions,
    _: &Context,
    _: Vec<toolgate_core::Resource>,
) -> exec::Guard {
    exec::Guard
}

// The items of other toolgate crates that this crate's signatures name, and those crates
// whole, so that this crate alone is a sufficient dependency (ARCHITECTURE.md, "Re-exports").
#[doc(no_inline)]
pub use toolgate_core;
pub use toolgate_core::{Context, Location, Permissions, Tool, ToolFailure};
#[doc(no_inline)]
pub use toolgate_shell_analysis;
pub use toolgate_shell_analysis::ShellEnv;

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
