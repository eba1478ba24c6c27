//! A kernel sandbox for the commands toolgate runs, so that the permission rules hold even
//! against a command line the analysis misread.
//!
//! A [`Policy`] says what a command may do: where it may write (a few directories, nothing
//! else), which existing paths are read-only or hidden, and whether it may use the network.
//! The process that is about to run the command applies it to itself ([`apply`]) and then
//! executes the command, so the command and everything it starts — including processes
//! that leave its process group — stay inside. The mechanism, all unprivileged (and the
//! same when run as root):
//!
//! - a private mount namespace (in a user namespace that maps only the user, unless the
//!   user is root, who instead loses every capability a container's root would not
//!   have), where everything but the writable roots is remounted read-only (so modes,
//!   owners and times cannot change either), read-only paths inside the writable roots
//!   are bound read-only, hidden paths get an empty directory or an unopenable socket
//!   mounted over them, and the directories above those are pinned so that they cannot
//!   be renamed away;
//! - Landlock for writes: only the writable roots and a few devices (`/dev/null`, …); no
//!   signals to, or tracing of, processes outside the sandbox;
//! - seccomp for what Landlock does not cover: new namespaces, mounts, ptrace, the kernel
//!   keyring, io_uring, BPF, and (network off) every socket that is not a Unix socket.
//!
//! No `unsafe` here: the process applies the policy to itself between `exec`s. The binary
//! that uses this crate runs a hidden mode ([`TRAMPOLINE`]) that parses a policy from its
//! arguments, applies it and executes the rest of its command line ([`trampoline_main`]);
//! [`Policy::command_line`] builds that command line.
//!
//! ```
//! use toolgate_sandbox::{Mode, Policy};
//! let policy = Policy::new(Mode::WorkspaceWrite, "/src/app", false)
//!     .masked(["/src/app/.env"]);
//! let argv = policy.command_line("/usr/bin/toolgate", "/bin/sh", ["-c", "cat .env"]);
//! assert_eq!(argv[1], "__sandbox-exec");
//! let parsed = Policy::from_args(&argv[2..]).unwrap();
//! assert_eq!(parsed.0, policy);
//! assert_eq!(parsed.1, ["/bin/sh", "-c", "cat .env"]);
//! ```

mod explain;
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
mod guard;
#[cfg(target_os = "linux")]
mod late;
#[cfg(target_os = "linux")]
mod linux;
mod policy;
mod project;

use std::ffi::OsString;
use std::path::Path;

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
pub use guard::{Caller, ExecCall, ExecListener, FileId, Notice, Program, Readiness, Stopped, proc_field, read_proc};
#[cfg(target_os = "linux")]
pub use late::{LATE, LateError, LateStart};
pub use policy::{DEVICES, Mode, ParseError, Policy};
#[cfg(target_os = "linux")]
pub use project::mask_file;
pub use project::{GitWatch, git_code_paths};

/// The first argument that puts the binary into its sandbox trampoline mode.
pub const TRAMPOLINE: &str = "__sandbox-exec";

/// The exit code of a trampoline that could not set the sandbox up: the command never ran.
pub const EXIT_SETUP_FAILED: u8 = 125;

/// The variable that names a cgroup (v2) directory the trampoline moves itself into
/// before anything else, so the command and everything it ever forks is a member from
/// its first instruction (the launcher moves the process too, but only once it has
/// started). The trampoline leaves it out of the command's environment.
pub const CGROUP_ENV: &str = "TOOLGATE_CGROUP";

/// The environment variable that makes the support probe report a missing kernel feature.
/// It exists for tests of the fallback path; it can only weaken the sandbox of a process
/// whose environment the user controls anyway.
pub const SIMULATE_MISSING_ENV: &str = "TOOLGATE_TEST_SANDBOX_MISSING";

/// Why the sandbox could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// A system call of the setup failed.
    #[error("{step}: {source}")]
    Step {
        /// What was being done.
        step: String,
        /// The error the kernel returned.
        #[source]
        source: std::io::Error,
    },
    /// Landlock refused or is not available.
    #[error("Landlock: {0}")]
    Landlock(String),
    /// The seccomp filter could not be built or installed.
    #[error("seccomp: {0}")]
    Seccomp(String),
    /// This operating system has no such sandbox.
    #[error("the sandbox needs Linux (Landlock, user namespaces, seccomp)")]
    Unsupported,
}

/// What applying a policy established.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    /// The Landlock ABI version the kernel offered.
    pub landlock_abi: u32,
}

/// Applies `policy` to the current process, which must be single-threaded (a user
/// namespace cannot be entered otherwise). Irreversible: call it right before `exec`.
pub fn apply(policy: &Policy) -> Result<Applied, SandboxError> {
    #[cfg(target_os = "linux")]
    {
        linux::apply(policy)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = policy;
        Err(SandboxError::Unsupported)
    }
}

/// Whether this system can run the sandbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Support {
    /// Everything the sandbox needs works here.
    Available {
        /// The Landlock ABI version of the kernel.
        landlock_abi: u32,
    },
    /// Something is missing; the text names it.
    Missing(String),
}

impl Support {
    /// True when the sandbox can be used.
    pub fn is_available(&self) -> bool {
        matches!(self, Support::Available { .. })
    }
}

impl std::fmt::Display for Support {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Support::Available { landlock_abi } => {
                write!(f, "available (Landlock ABI {landlock_abi}, namespaces, seccomp)")
            }
            Support::Missing(what) => write!(f, "unavailable: {what}"),
        }
    }
}

/// Finds out whether the sandbox works here by running `exe` (a binary that calls
/// [`trampoline_main`] for [`TRAMPOLINE`]) in probe mode: the child sets up a
/// representative sandbox on itself and reports.
pub fn probe(exe: &Path) -> Support {
    let output = std::process::Command::new(exe)
        .args([TRAMPOLINE, "--probe"])
        .stdin(std::process::Stdio::null())
        .output();
    let output = match output {
        Ok(output) => output,
        Err(error) => return Support::Missing(format!("could not run the sandbox probe {}: {error}", exe.display())),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let abi = stdout
        .lines()
        .find_map(|line| line.strip_prefix("landlock-abi "))
        .and_then(|abi| abi.trim().parse().ok());
    match (output.status.success(), abi) {
        (true, Some(landlock_abi)) => Support::Available { landlock_abi },
        _ => {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let reason = stderr
                .lines()
                .rev()
                .find_map(|line| line.strip_prefix("toolgate: sandbox: "))
                .map(str::to_string)
                .unwrap_or_else(|| format!("the sandbox probe failed ({}): {}", output.status, stderr.trim()));
            Support::Missing(reason)
        }
    }
}

/// [`probe`], remembered in `cache` (a file) while nothing it depends on changes: the
/// boot, the user, the binary, and the kernel's user-namespace settings. Only a working
/// sandbox is remembered: a missing one is probed again by every process, so a fix is
/// seen at once (and a stale "available" only makes commands fail, never run unsandboxed).
pub fn probe_cached(exe: &Path, cache: &Path) -> Support {
    let key = cache_key(exe);
    if let Some(key) = &key
        && let Ok(text) = std::fs::read_to_string(cache)
        && let Some((stored, result)) = text.split_once('\n')
        && stored == key
        && let Some(landlock_abi) = result
            .trim()
            .strip_prefix("landlock-abi ")
            .and_then(|abi| abi.parse().ok())
    {
        return Support::Available { landlock_abi };
    }
    let support = probe(exe);
    if let (Some(key), Support::Available { landlock_abi }) = (&key, &support)
        && let Some(dir) = cache.parent()
        && std::fs::create_dir_all(dir).is_ok()
    {
        let temp = dir.join(format!(".support.{}", std::process::id()));
        if std::fs::write(&temp, format!("{key}\nlandlock-abi {landlock_abi}\n")).is_ok() {
            let _ = std::fs::rename(&temp, cache);
        }
        let _ = std::fs::remove_file(&temp);
    }
    support
}

fn cache_key(exe: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    if std::env::var_os(SIMULATE_MISSING_ENV).is_some() {
        return None;
    }
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let meta = std::fs::metadata(exe).ok()?;
    let mut key = format!(
        "v1 boot={} euid={} exe={}:{}:{}:{}.{}",
        boot.trim(),
        rustix_euid(),
        exe.display(),
        meta.ino(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec()
    );
    for knob in [
        "/proc/sys/user/max_user_namespaces",
        "/proc/sys/kernel/unprivileged_userns_clone",
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    ] {
        let value = std::fs::read_to_string(knob).unwrap_or_else(|_| "-".into());
        key.push_str(&format!(" {}", value.trim()));
    }
    Some(key.replace('\n', " "))
}

#[cfg(target_os = "linux")]
fn rustix_euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

#[cfg(not(target_os = "linux"))]
fn rustix_euid() -> u32 {
    0
}

/// How the trampoline ended when it did not become the command: the exit code and what
/// to say. This crate prints nothing; the binary writes `stdout` and `stderr` (one line
/// each, when there is one) and exits with `code`. [`probe`] reads both lines back.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct TrampolineExit {
    /// The exit code: [`EXIT_SETUP_FAILED`] when the command never ran, 126 or 127 when it
    /// could not be executed (as a shell says), 0 or 1 for the probe.
    pub code: u8,
    /// A line for standard output: the probe's report (`landlock-abi N`).
    pub stdout: Option<String>,
    /// A line for standard error: why the command did not run (`toolgate: sandbox: …`).
    pub stderr: Option<String>,
}

impl TrampolineExit {
    fn failed(code: u8, why: impl std::fmt::Display) -> TrampolineExit {
        TrampolineExit {
            code,
            stdout: None,
            stderr: Some(format!("toolgate: sandbox: {why}")),
        }
    }
}

/// The trampoline: `args` are the arguments after [`TRAMPOLINE`]. Parses the policy,
/// makes this process the subreaper of its descendants (on Linux), applies the policy
/// and executes the command; returns only on failure, with the exit code to
/// use ([`EXIT_SETUP_FAILED`] when the command never ran) and the line saying why.
///
/// `--probe` instead sets up a representative sandbox and returns its report
/// (`landlock-abi N` for standard output). [`LATE`] joins the cgroup of [`CGROUP_ENV`]
/// first and then reads the arguments, the environment and the working directory from
/// stdin ([`LateStart`]).
pub fn trampoline_main(args: Vec<OsString>) -> TrampolineExit {
    if args.first().is_some_and(|arg| arg == "--probe") {
        return probe_main();
    }
    if args.first().is_some_and(|arg| arg == "--probe-exec-guard") {
        return probe_guard_main();
    }
    #[cfg(target_os = "linux")]
    if args.first().is_some_and(|arg| arg == LATE) {
        return late_main();
    }
    join_group();
    run(&args, None, false)
}

/// Joins the process's cgroup while the hierarchy can still be written (the sandbox
/// takes that away). Failing is no error: the launcher moves the process as well.
fn join_group() {
    if let Some(group) = std::env::var_os(CGROUP_ENV).filter(|dir| !dir.is_empty()) {
        let _ = std::fs::write(Path::new(&group).join("cgroup.procs"), std::process::id().to_string());
    }
}

/// A [`LATE`] trampoline: joins its group now, then waits for its [`LateStart`] on stdin
/// and runs as a trampoline given those arguments, that environment and that directory.
#[cfg(target_os = "linux")]
fn late_main() -> TrampolineExit {
    join_group();
    let start = match LateStart::read_from(rustix::stdio::stdin()) {
        Ok(start) => start,
        // Discarded unused: nobody reads what it would say.
        Err(LateError::Closed) => {
            return TrampolineExit {
                code: EXIT_SETUP_FAILED,
                stdout: None,
                stderr: None,
            };
        }
        Err(error) => return TrampolineExit::failed(EXIT_SETUP_FAILED, error),
    };
    if let Err(error) = std::env::set_current_dir(&start.workdir) {
        return TrampolineExit::failed(
            EXIT_SETUP_FAILED,
            format!("cannot enter {}: {error}", start.workdir.display()),
        );
    }
    run(&start.args, Some(&start.env), true)
}

/// The trampoline once it is in its group: parses the policy, applies it and executes
/// the command with `env` (`None`: its own, without [`CGROUP_ENV`]). A `late` one read its
/// command from stdin; without the exec guard (whose hand-over replaces stdin), it puts
/// `/dev/null` there, as the launcher gives any command that did not get a stdin.
fn run(args: &[OsString], env: Option<&[(OsString, OsString)]>, late: bool) -> TrampolineExit {
    let (policy, command) = match Policy::from_args(args) {
        Ok(parsed) => parsed,
        Err(error) => return TrampolineExit::failed(EXIT_SETUP_FAILED, error),
    };
    #[cfg(target_os = "linux")]
    if late
        && !policy.exec_guard
        && let Err(error) = null_stdin()
    {
        return TrampolineExit::failed(EXIT_SETUP_FAILED, format!("cannot replace stdin: {error}"));
    }
    #[cfg(not(target_os = "linux"))]
    let _ = late;
    // The command's orphans stay its own: a process whose parent ends (a daemon's double
    // fork) is adopted by the command, not by init, so it stays in the command's tree
    // where toolgate finds and ends it. The attribute survives the exec; the kernel
    // refuses it nowhere a sandbox works, and without it only that tracking is weaker.
    #[cfg(target_os = "linux")]
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    if let Err(error) = apply(&policy) {
        return TrampolineExit::failed(EXIT_SETUP_FAILED, error);
    }
    let Some((program, rest)) = command.split_first() else {
        return TrampolineExit::failed(EXIT_SETUP_FAILED, "no command to run");
    };
    exec(program, rest, env)
}

#[cfg(target_os = "linux")]
fn null_stdin() -> std::io::Result<()> {
    use rustix::fs::{Mode, OFlags, open};
    let null = open("/dev/null", OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
    rustix::stdio::dup2_stdin(&null)?;
    Ok(())
}

#[cfg(unix)]
fn exec(program: &OsString, args: &[OsString], env: Option<&[(OsString, OsString)]>) -> TrampolineExit {
    use std::os::unix::process::CommandExt;
    // `exec` resets the signal dispositions the Rust runtime changed (SIGPIPE), so the
    // command starts like any child of a shell.
    let mut command = std::process::Command::new(program);
    command.args(args).env_remove(CGROUP_ENV);
    if let Some(env) = env {
        command
            .env_clear()
            .envs(env.iter().filter(|(name, _)| name != CGROUP_ENV).cloned());
    }
    let error = command.exec();
    let code = if error.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    };
    TrampolineExit::failed(code, format!("cannot run {}: {error}", Path::new(program).display()))
}

#[cfg(not(unix))]
fn exec(_: &OsString, _: &[OsString], _: Option<&[(OsString, OsString)]>) -> TrampolineExit {
    TrampolineExit::failed(EXIT_SETUP_FAILED, SandboxError::Unsupported)
}

/// The exit code and stdout line of a guard probe that worked.
const GUARD_OK: &str = "exec-guard ok";

fn probe_guard_main() -> TrampolineExit {
    if let Some(what) = std::env::var_os(SIMULATE_MISSING_GUARD_ENV).filter(|value| !value.is_empty()) {
        return TrampolineExit::failed(
            1,
            format!(
                "{} is missing (simulated by {SIMULATE_MISSING_GUARD_ENV})",
                what.to_string_lossy()
            ),
        );
    }
    match install_guard_probe() {
        Ok(()) => TrampolineExit {
            code: 0,
            stdout: Some(GUARD_OK.to_string()),
            stderr: None,
        },
        Err(error) => TrampolineExit::failed(1, error),
    }
}

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn install_guard_probe() -> Result<(), SandboxError> {
    guard::probe()
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn install_guard_probe() -> Result<(), SandboxError> {
    Err(SandboxError::Unsupported)
}

/// The environment variable that makes the exec guard's probe report it missing (tests of
/// the fallback path; like [`SIMULATE_MISSING_ENV`], it can only weaken what a process
/// whose environment the user controls anyway does).
pub const SIMULATE_MISSING_GUARD_ENV: &str = "TOOLGATE_TEST_EXEC_GUARD_MISSING";

/// Whether exec-time enforcement works here, found out by running `exe` (a binary that
/// calls [`trampoline_main`] for [`TRAMPOLINE`]) in its guard-probe mode: `Ok`, or what is
/// missing (an old kernel, a libseccomp older than 2.5, seccomp refused).
pub fn probe_exec_guard(exe: &Path) -> Result<(), String> {
    let output = std::process::Command::new(exe)
        .args([TRAMPOLINE, "--probe-exec-guard"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|error| format!("could not run the exec guard probe {}: {error}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if output.status.success() && stdout.lines().any(|line| line == GUARD_OK) {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Err(stderr
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("toolgate: sandbox: "))
        .map(str::to_string)
        .unwrap_or_else(|| format!("the exec guard probe failed ({}): {}", output.status, stderr.trim())))
}

/// [`probe_exec_guard`], remembered in `cache` while nothing it depends on changes (as
/// [`probe_cached`]); only a working guard is remembered.
pub fn probe_exec_guard_cached(exe: &Path, cache: &Path) -> Result<(), String> {
    let key = cache_key(exe).map(|key| format!("{key} guard"));
    if std::env::var_os(SIMULATE_MISSING_GUARD_ENV).is_none()
        && let Some(key) = &key
        && let Ok(text) = std::fs::read_to_string(cache)
        && text.lines().next() == Some(key.as_str())
    {
        return Ok(());
    }
    let result = probe_exec_guard(exe);
    if let (Some(key), Ok(())) = (&key, &result)
        && let Some(dir) = cache.parent()
        && std::fs::create_dir_all(dir).is_ok()
    {
        let temp = dir.join(format!(".guard.{}", std::process::id()));
        if std::fs::write(&temp, format!("{key}\n{GUARD_OK}\n")).is_ok() {
            let _ = std::fs::rename(&temp, cache);
        }
        let _ = std::fs::remove_file(&temp);
    }
    result
}

fn probe_main() -> TrampolineExit {
    if let Some(what) = std::env::var_os(SIMULATE_MISSING_ENV).filter(|value| !value.is_empty()) {
        return TrampolineExit::failed(
            1,
            format!(
                "{} is missing (simulated by {SIMULATE_MISSING_ENV})",
                what.to_string_lossy()
            ),
        );
    }
    let temp = std::env::temp_dir();
    let policy = Policy::new(Mode::WorkspaceWrite, &temp, false);
    match apply(&policy) {
        Ok(applied) => TrampolineExit {
            code: 0,
            stdout: Some(format!("landlock-abi {}", applied.landlock_abi)),
            stderr: None,
        },
        Err(error) => TrampolineExit::failed(1, error),
    }
}

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
