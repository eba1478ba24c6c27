//! Running a command: own process group, merged output, bounded capture, and exactly one
//! result whatever the command does (hangs, floods, escapes the group, ignores TERM).

use std::collections::VecDeque;
use std::ffi::OsString;

use crate::env::is_toolgate_secret;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process_group};

#[cfg(target_os = "linux")]
pub(crate) use early::Early;
use tokio::io::AsyncReadExt;

/// Bytes kept from the start of the output when it overflows.
pub(crate) const HEAD_BYTES: usize = 512 * 1024;
/// Bytes kept from the end of the output when it overflows.
pub(crate) const TAIL_BYTES: usize = 512 * 1024;
/// Pipe capacity and read size.
const READ_CHUNK: usize = 128 * 1024;
/// How long a group gets between TERM and KILL.
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(3);
/// How long output is still read after the shell exits, for whatever it left behind.
pub(crate) const PIPE_GRACE: Duration = Duration::from_millis(200);

/// Output kept within 1 MiB: all of it, or its first and last 512 KiB.
#[derive(Debug, Default)]
pub(crate) struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl Capture {
    /// Appends a chunk.
    pub(crate) fn push(&mut self, mut chunk: &[u8]) {
        self.total += chunk.len() as u64;
        if self.head.len() < HEAD_BYTES {
            let take = chunk.len().min(HEAD_BYTES - self.head.len());
            self.head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        let overflow = (self.tail.len() + chunk.len()).saturating_sub(TAIL_BYTES);
        self.tail.drain(..overflow.min(self.tail.len()));
        self.tail.extend(&chunk[chunk.len().saturating_sub(TAIL_BYTES)..]);
    }

    /// Bytes seen in all.
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Bytes seen but not kept.
    pub(crate) fn dropped(&self) -> u64 {
        self.total - self.head.len() as u64 - self.tail.len() as u64
    }

    /// The kept text (invalid UTF-8 replaced), with a line saying how much was left out.
    pub(crate) fn text(&self) -> String {
        let head = String::from_utf8_lossy(&self.head);
        let (first, second) = self.tail.as_slices();
        let mut tail_bytes = Vec::with_capacity(self.tail.len());
        tail_bytes.extend_from_slice(first);
        tail_bytes.extend_from_slice(second);
        let tail = String::from_utf8_lossy(&tail_bytes);
        match self.dropped() {
            0 => format!("{head}{tail}"),
            dropped => format!(
                "{head}\n\n[... {dropped} bytes of output omitted: only the first {} KiB and the last {} KiB are kept ...]\n\n{tail}",
                HEAD_BYTES / 1024,
                TAIL_BYTES / 1024
            ),
        }
    }
}

/// How a run ended.
#[derive(Debug)]
pub(crate) struct Finished {
    /// The exit code (128 + signal when a signal ended it); `None` if it never ended.
    pub(crate) exit: Option<i32>,
    /// Whether the timeout fired.
    pub(crate) timed_out: bool,
    /// What it printed.
    pub(crate) capture: Capture,
    /// What exec-time enforcement refused, one line each (empty without it).
    pub(crate) refusals: Vec<String>,
}

/// Sends TERM to a process group when dropped (the call was cancelled or is done), and
/// KILL after [`KILL_GRACE`] from a helper thread, so nothing it started outlives it.
pub(crate) struct GroupGuard {
    pub(crate) pgid: Option<Pid>,
}

impl GroupGuard {
    /// TERMs the group now and KILLs it after [`KILL_GRACE`] (once).
    pub(crate) fn terminate(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            let _ = kill_process_group(pgid, Signal::TERM);
            // Only a group that still has members needs the follow-up KILL.
            if rustix::process::test_kill_process_group(pgid).is_err() {
                return;
            }
            std::thread::spawn(move || {
                std::thread::sleep(KILL_GRACE);
                let _ = kill_process_group(pgid, Signal::KILL);
            });
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.terminate();
    }
}

/// Bash, wherever the system has it: toolgate runs every line with bash (never `$SHELL`,
/// which may be zsh or fish), since bash is the shell the analysis reads. Without one,
/// `/bin/bash` (the call then fails, saying bash is missing).
pub(crate) fn default_shell() -> std::path::PathBuf {
    bash_from(|path| path.is_file())
}

/// [`default_shell`] with the file system as an argument, so it can be tried without one.
fn bash_from(exists: impl Fn(&std::path::Path) -> bool) -> std::path::PathBuf {
    ["/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash"]
        .into_iter()
        .map(std::path::PathBuf::from)
        .find(|bash| exists(bash))
        .unwrap_or_else(|| std::path::PathBuf::from("/bin/bash"))
}

/// How to start one command line.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Spawn<'a> {
    /// The shell, run as `shell -c command`.
    pub(crate) shell: &'a Path,
    /// The command line.
    pub(crate) command: &'a str,
    /// Where it starts.
    pub(crate) workdir: &'a Path,
    /// A program and its arguments to run `shell -c command` through (a sandbox
    /// trampoline); empty runs the shell itself.
    pub(crate) prefix: &'a [OsString],
    /// The whole environment of the command; `None` passes this process's on. Either way
    /// the variables of [`is_toolgate_secret`] are left out.
    pub(crate) env: Option<&'a [(OsString, OsString)]>,
    /// The background shell ID the command carries in its environment
    /// (`TOOLGATE_SHELL_ID`), by which toolgate knows its processes after they were
    /// orphaned; `None` for a foreground command.
    pub(crate) shell_id: Option<&'a str>,
    /// The cgroup the command joins (a background process's, see
    /// `background::cgroup`): the trampoline moves itself there before the command runs.
    pub(crate) cgroup: Option<&'a Path>,
}

/// Exec-time enforcement for a run: the prefix (a sandbox trampoline) installs the exec
/// guard and expects a Unix socket as its stdin; this says how to decide what it stops.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
pub(crate) type Guard = guard::GuardSetup;

/// Without Linux, there is no exec guard.
#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
pub(crate) struct Guard;

/// The `bash` parts the analysis predicted and the rules or a person approved, which the
/// exec guard lets start without a new question. Shared, because a line written later to
/// a background shell (`shell_write`) is analysed and approved like a new call: what it
/// runs was asked about already.
pub(crate) type Predicted = std::sync::Arc<std::sync::Mutex<Vec<toolgate_core::Resource>>>;

impl Guard {
    /// What the guard lets start as predicted (`None` without an exec guard).
    #[cfg(all(target_os = "linux", target_pointer_width = "64"))]
    pub(crate) fn predictions(&self) -> Option<Predicted> {
        Some(std::sync::Arc::clone(&self.predicted))
    }

    /// What the guard lets start as predicted (`None` without an exec guard).
    #[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
    pub(crate) fn predictions(&self) -> Option<Predicted> {
        None
    }
}

/// Runs `command` with `shell -c` in `workdir`, stdin closed, stdout and stderr merged.
#[cfg(test)]
pub(crate) async fn run(shell: &Path, command: &str, workdir: &Path, timeout: Duration) -> std::io::Result<Finished> {
    run_with(
        Spawn {
            shell,
            command,
            workdir,
            prefix: &[],
            env: None,
            shell_id: None,
            cgroup: None,
        },
        timeout,
        None,
    )
    .await
}

/// Where a started command's standard streams go.
pub(crate) struct Streams {
    /// Its stdout, and its stderr unless [`Streams::errors`] is given (the output is
    /// then merged).
    pub(crate) output: OwnedFd,
    /// Whether its stdin reads from that same file (a socket or a terminal, which both
    /// read and write); otherwise stdin is closed (`/dev/null`) unless [`Streams::stdin`]
    /// is given.
    pub(crate) input: bool,
    /// Its stdin, given (an attached command reads toolgate's own).
    pub(crate) stdin: Option<OwnedFd>,
    /// Its stderr, apart from the output.
    pub(crate) errors: Option<OwnedFd>,
    /// It stays in this process's group instead of leading its own: a command attached
    /// to the terminal this process reads from in the foreground must be in the
    /// terminal's foreground group too, or reading it stops the command (SIGTTIN). Its
    /// group is then not ended after it, and the terminal's own signals reach it directly.
    pub(crate) same_group: bool,
}

/// A started command line: its shell, the process group it leads (ended when this is
/// dropped), and the exec guard's supervisor of it.
pub(crate) struct Started {
    pub(crate) child: tokio::process::Child,
    pub(crate) group: GroupGuard,
    pub(crate) supervisor: Option<Supervisor>,
}

/// Starts `spawn` in its own process group with `streams`, under the exec guard when
/// `guard` is given. The one way every command line starts, foreground or background.
pub(crate) async fn start(spawn: Spawn<'_>, guard: Option<Guard>, streams: Streams) -> std::io::Result<Started> {
    let Spawn {
        shell,
        command,
        workdir,
        prefix,
        env,
        shell_id,
        cgroup,
    } = spawn;
    let Streams {
        output,
        input,
        stdin,
        errors,
        same_group,
    } = streams;
    let mut guard = guard;
    // The trampoline hands the guard's listener over its stdin and then puts there what
    // the supervisor sends back: a given stdin, else `/dev/null`, and then a command that
    // reads input gets it back from its output file (a socket or a terminal), by a
    // redirection that executes no program. Without the guard such a command starts with
    // `/dev/null` as well: bash started with a socket as its stdin and `SHLVL` below 2
    // takes itself for a remote shell and reads `~/.bashrc` (Debian builds it so), which
    // would make a background command run differently from a foreground one.
    let stdin = match (guard.as_mut(), stdin) {
        (Some(setup), Some(stdin)) => {
            set_guard_stdin(setup, stdin);
            None
        }
        (_, stdin) => stdin,
    };
    let line;
    let command = if input && (guard.is_some() || stdin.is_none()) {
        line = format!("exec 0<&1\n{command}");
        line.as_str()
    } else {
        command
    };
    let mut builder = match prefix.split_first() {
        Some((program, args)) => {
            let mut builder = tokio::process::Command::new(program);
            builder.args(args).arg(shell);
            builder
        }
        None => tokio::process::Command::new(shell),
    };
    builder.env_clear().envs(command_env(env, shell_id));
    // Only a trampoline reads it (and removes it); a shell started directly is moved
    // into the group by the caller once it runs.
    if let Some(dir) = cgroup
        && !prefix.is_empty()
    {
        builder.env(toolgate_sandbox::CGROUP_ENV, dir);
    }
    builder
        .arg("-c")
        .arg(command)
        .current_dir(workdir)
        .stdout(output.try_clone()?);
    if !same_group {
        builder.process_group(0);
    }
    // With the exec guard, stdin is the socket the trampoline sends its listener over
    // (it puts `/dev/null` in its place before the command runs).
    let channel = match (&guard, input) {
        (Some(_), _) => {
            let (mine, theirs) = std::os::unix::net::UnixStream::pair()?;
            builder.stdin(Stdio::from(OwnedFd::from(theirs)));
            Some(mine)
        }
        (None, _) if stdin.is_some() => {
            builder.stdin(Stdio::from(stdin.unwrap_or_else(|| unreachable!())));
            None
        }
        (None, _) => {
            builder.stdin(Stdio::null());
            None
        }
    };
    builder.stderr(errors.unwrap_or(output));
    // The builder holds the child's ends; dropping it here leaves only the child's.
    let child = builder.spawn()?;
    drop(builder);
    let group = GroupGuard {
        pgid: child
            .id()
            .filter(|_| !same_group)
            .and_then(|id| Pid::from_raw(id as i32)),
    };
    let supervisor = match (guard, channel, child.id()) {
        (Some(setup), Some(channel), Some(pid)) => start_guard(setup, channel, pid).await,
        _ => None,
    };
    Ok(Started {
        child,
        group,
        supervisor,
    })
}

/// The whole environment of a command: `env` (`None`: this process's) without
/// [`is_toolgate_secret`]'s variables, and the background shell ID.
fn command_env(env: Option<&[(OsString, OsString)]>, shell_id: Option<&str>) -> Vec<(OsString, OsString)> {
    let mut out: Vec<(OsString, OsString)> = match env {
        Some(env) => env
            .iter()
            .filter(|(name, _)| !is_toolgate_secret(name))
            .cloned()
            .collect(),
        None => std::env::vars_os()
            .filter(|(name, _)| !is_toolgate_secret(name))
            .collect(),
    };
    // Set after the filter, which leaves every `TOOLGATE_` variable out: only this one
    // is given, and only to a background command.
    if let Some(id) = shell_id {
        out.retain(|(name, _)| name != crate::background::SHELL_ID_ENV);
        out.push((crate::background::SHELL_ID_ENV.into(), id.into()));
    }
    out
}

/// [`run`] with everything a [`Spawn`] says, and the exec guard when `guard` is given.
pub(crate) async fn run_with(spawn: Spawn<'_>, timeout: Duration, guard: Option<Guard>) -> std::io::Result<Finished> {
    let (reader, writer) = std::io::pipe()?;
    // A larger pipe means fewer wake-ups for a chatty command; the kernel may refuse
    // (pipe-max-size), which only costs speed. Measured here for 1 GiB: 64 KiB 0.19 s,
    // 128 KiB 0.18 s, 1 MiB 0.39 s (a pipe larger than the cache thrashes it).
    let _ = rustix::pipe::fcntl_setpipe_size(&reader, READ_CHUNK);
    let streams = Streams {
        output: OwnedFd::from(writer),
        input: false,
        stdin: None,
        errors: None,
        same_group: false,
    };
    let Started {
        mut child,
        group: mut guard_group,
        supervisor,
    } = start(spawn, guard, streams).await?;
    let mut pipe = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
    let mut capture = Capture::default();
    let mut buffer = vec![0u8; READ_CHUNK];
    let started = tokio::time::Instant::now();
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut timed_out = false;
    let mut pipe_open = true;

    // Phase 1: until the shell exits or the timeout fires. Time a program spent waiting in
    // `execve` for a person's answer does not count against the timeout.
    let status = loop {
        tokio::select! {
            read = pipe.read(&mut buffer), if pipe_open => match read {
                Ok(0) | Err(_) => pipe_open = false,
                Ok(n) => capture.push(&buffer[..n]),
            },
            status = child.wait() => break Some(status?),
            () = &mut deadline, if !timed_out => {
                if let Some(moved) = asked_extension(supervisor.as_ref(), started + timeout) {
                    deadline.as_mut().reset(moved);
                    continue;
                }
                timed_out = true;
                break None;
            }
        }
    };
    let status = match status {
        Some(status) => status,
        None => {
            // Timed out: TERM the group, give it the grace, then KILL.
            if let Some(pgid) = guard_group.pgid {
                let _ = kill_process_group(pgid, Signal::TERM);
            }
            let waited = tokio::time::timeout(KILL_GRACE, async {
                loop {
                    tokio::select! {
                        read = pipe.read(&mut buffer), if pipe_open => match read {
                            Ok(0) | Err(_) => pipe_open = false,
                            Ok(n) => capture.push(&buffer[..n]),
                        },
                        status = child.wait() => return status,
                    }
                }
            })
            .await;
            match waited {
                Ok(status) => status?,
                Err(_) => {
                    if let Some(pgid) = guard_group.pgid {
                        let _ = kill_process_group(pgid, Signal::KILL);
                    }
                    child.wait().await?
                }
            }
        }
    };

    // Phase 2: the shell is gone; read what is left for a short grace, then end whatever
    // remains of its group and stop reading even if an escaped process holds the pipe.
    if pipe_open {
        let drained = tokio::time::timeout(PIPE_GRACE, drain(&mut pipe, &mut buffer, &mut capture)).await;
        if drained.is_err() {
            guard_group.terminate();
            let _ = tokio::time::timeout(PIPE_GRACE, drain(&mut pipe, &mut buffer, &mut capture)).await;
        }
    }
    guard_group.terminate();
    let exit = status.code().or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        status.signal().map(|signal| 128 + signal)
    });
    Ok(Finished {
        exit,
        timed_out,
        capture,
        refusals: finish_guard(supervisor),
    })
}

/// How an attached command ended: its exit code (128 + the signal that ended it) and
/// what exec-time enforcement refused.
pub(crate) struct AttachedEnd {
    pub(crate) exit: Option<i32>,
    pub(crate) refusals: Vec<String>,
}

/// Runs `spawn` on this process's own stdin, stdout and stderr (`toolgate exec`): nothing
/// is captured or bounded, and there is no timeout (whoever runs `toolgate exec` has
/// its own). SIGINT, SIGTERM and SIGHUP to this process are passed to the command's
/// group, which runs apart from this one; once the shell exited, what is left of the
/// group is ended, as for every foreground command.
pub(crate) async fn run_attached(spawn: Spawn<'_>, guard: Option<Guard>) -> std::io::Result<AttachedEnd> {
    use tokio::signal::unix::{SignalKind, signal};
    let copy = |fd: std::os::fd::BorrowedFd<'_>| rustix::io::fcntl_dupfd_cloexec(fd, 3).map_err(std::io::Error::from);
    // On a terminal where this process is in the foreground, the command must be too.
    let foreground =
        rustix::termios::tcgetpgrp(rustix::stdio::stdin()).is_ok_and(|pgrp| pgrp == rustix::process::getpgrp());
    let streams = Streams {
        output: copy(rustix::stdio::stdout())?,
        input: false,
        stdin: Some(copy(rustix::stdio::stdin())?),
        errors: Some(copy(rustix::stdio::stderr())?),
        same_group: foreground,
    };
    // Listening before the command starts: a signal in between must reach it, not end
    // this process alone (its default action) and leave the command running.
    let mut interrupt = signal(SignalKind::interrupt()).ok();
    let mut terminate = signal(SignalKind::terminate()).ok();
    let mut hangup = signal(SignalKind::hangup()).ok();
    let Started {
        mut child,
        mut group,
        supervisor,
    } = start(spawn, guard, streams).await?;
    // To its group; in this process's group, to the shell alone (the terminal's own
    // SIGINT reached it already, and this process must not signal itself).
    let shell = child.id().and_then(|id| Pid::from_raw(id as i32));
    let pass = |group: &GroupGuard, signal: Signal, from_terminal: bool| match (group.pgid, shell) {
        (Some(pgid), _) => {
            let _ = kill_process_group(pgid, signal);
        }
        (None, Some(shell)) if !from_terminal => {
            let _ = rustix::process::kill_process(shell, signal);
        }
        _ => {}
    };
    let status = loop {
        tokio::select! {
            status = child.wait() => break status?,
            () = received(interrupt.as_mut()) => pass(&group, Signal::INT, true),
            () = received(terminate.as_mut()) => pass(&group, Signal::TERM, false),
            () = received(hangup.as_mut()) => pass(&group, Signal::HUP, true),
        }
    };
    group.terminate();
    let exit = status.code().or_else(|| {
        use std::os::unix::process::ExitStatusExt;
        status.signal().map(|signal| 128 + signal)
    });
    let refusals = tokio::task::spawn_blocking(move || finish_guard(supervisor))
        .await
        .unwrap_or_default();
    Ok(AttachedEnd { exit, refusals })
}

/// The next delivery of `signal`; never, when it could not be listened for.
async fn received(signal: Option<&mut tokio::signal::unix::Signal>) {
    match signal {
        Some(signal) => {
            signal.recv().await;
        }
        None => std::future::pending::<()>().await,
    }
}

/// Gives the guard's supervisor `stdin` to send back to the trampoline.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn set_guard_stdin(setup: &mut Guard, stdin: OwnedFd) {
    setup.stdin = Some(stdin);
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn set_guard_stdin(_: &mut Guard, _: OwnedFd) {}

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
pub(crate) type Supervisor = guard::Supervisor;

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
pub(crate) struct Supervisor;

/// Starts supervising: the supervisor's thread receives the trampoline's listener itself
/// (off the async workers: it waits on a socket), with no hop between threads before the
/// shell's first `execve` is answered.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
async fn start_guard(setup: Guard, channel: std::os::unix::net::UnixStream, pid: u32) -> Option<Supervisor> {
    Some(guard::Supervisor::start(channel, pid, setup, GUARD_HANDSHAKE))
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
async fn start_guard(_: Guard, _: std::os::unix::net::UnixStream, _: u32) -> Option<Supervisor> {
    None
}

/// How long the trampoline may take to hand its exec guard over.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
const GUARD_HANDSHAKE: Duration = Duration::from_secs(30);

/// Where the deadline moves when it fires while programs waited, or wait, for a
/// person: time spent waiting in `execve` for an answer does not count.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn asked_extension(supervisor: Option<&Supervisor>, planned: tokio::time::Instant) -> Option<tokio::time::Instant> {
    let supervisor = supervisor?;
    let now = tokio::time::Instant::now();
    if supervisor.asking() > 0 {
        return Some(now + Duration::from_millis(500));
    }
    let moved = planned + supervisor.asked_for();
    (moved > now).then_some(moved)
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn asked_extension(_: Option<&Supervisor>, _: tokio::time::Instant) -> Option<tokio::time::Instant> {
    None
}

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
pub(crate) fn finish_guard(supervisor: Option<Supervisor>) -> Vec<String> {
    supervisor
        .map(|supervisor| supervisor.finish().notes)
        .unwrap_or_default()
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
pub(crate) fn finish_guard(_: Option<Supervisor>) -> Vec<String> {
    Vec::new()
}

async fn drain(pipe: &mut tokio::net::unix::pipe::Receiver, buffer: &mut [u8], capture: &mut Capture) {
    loop {
        match pipe.read(buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => capture.push(&buffer[..n]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn capture_keeps_head_and_tail_and_counts_the_rest() {
        let mut capture = Capture::default();
        for _ in 0..40 {
            capture.push(&[b'a'; 64 * 1024]);
        }
        capture.push(b"THE END");
        assert_eq!(capture.total(), 40 * 64 * 1024 + 7);
        assert_eq!(capture.dropped(), capture.total() - (HEAD_BYTES + TAIL_BYTES) as u64);
        let text = capture.text();
        assert!(text.ends_with("THE END"));
        assert!(text.contains(&format!("[... {} bytes of output omitted", capture.dropped())));
    }

    #[test]
    fn toolgate_secrets_are_recognised_in_any_case() {
        for name in [
            "TOOLGATE_SERVER_TOKEN",
            "TOOLGATE_X",
            "toolgate_server_token",
            "EXA_API_KEY",
            "Parallel_Api_Key",
        ] {
            assert!(is_toolgate_secret(OsStr::new(name)), "{name}");
        }
        for name in ["TOOLGATE", "PATH", "MY_TOOLGATE_X", "EXA_API_KEYS"] {
            assert!(!is_toolgate_secret(OsStr::new(name)), "{name}");
        }
    }

    #[test]
    fn small_output_is_kept_whole() {
        let mut capture = Capture::default();
        capture.push(b"hello ");
        capture.push(b"world");
        assert_eq!(capture.text(), "hello world");
        assert_eq!(capture.dropped(), 0);
    }
}

#[cfg(test)]
mod shell_tests {
    use std::path::{Path, PathBuf};

    use super::bash_from;

    #[test]
    fn bash_is_always_the_shell() {
        let has = |known: &'static [&'static str]| move |path: &Path| known.iter().any(|k| Path::new(k) == path);
        assert_eq!(bash_from(has(&["/bin/sh", "/bin/bash"])), PathBuf::from("/bin/bash"));
        assert_eq!(
            bash_from(has(&["/bin/sh", "/usr/bin/bash"])),
            PathBuf::from("/usr/bin/bash")
        );
        // Neither dash nor zsh stands in: without bash the call fails and says so.
        assert_eq!(bash_from(has(&["/bin/sh", "/bin/zsh"])), PathBuf::from("/bin/bash"));
    }
}

#[cfg(target_os = "linux")]
mod early;
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
pub(crate) mod guard;
mod names;
#[cfg(test)]
mod process;
