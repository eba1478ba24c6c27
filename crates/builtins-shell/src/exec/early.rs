//! A trampoline started before its command ([`toolgate_sandbox::LATE`]), so that it is in
//! its cgroup before the command is known and the start pays no cgroup move (see
//! `toolgate_sandbox`'s `late` module for why a move is slow).

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Stdio;

use rustix::process::Pid;
use toolgate_sandbox::LateStart;

use super::{GroupGuard, Guard, Spawn, Started, command_env, start_guard};

/// A trampoline waiting for its command, already in its group. Dropped unused, it reads
/// the end of its stdin (this side's end of the channel goes with it) and exits without
/// running anything.
pub(crate) struct Early {
    child: tokio::process::Child,
    /// Its stdin: the message goes there, then, with the exec guard, the guard's listener
    /// comes back (without it, the trampoline puts `/dev/null` there once it has read
    /// the message, as the guard's hand-over does).
    channel: Option<std::os::unix::net::UnixStream>,
    /// Whether the command is to run under the exec guard.
    guarded: bool,
    /// The trampoline program it runs as.
    program: OsString,
}

impl Early {
    /// Starts `program` (a binary with the sandbox trampoline) waiting in `cgroup`, with
    /// `output` as its stdout and stderr, in a process group of its own, as
    /// [`super::start`] starts a background command.
    pub(crate) fn spawn(program: &OsStr, cgroup: &Path, output: &OwnedFd, guarded: bool) -> std::io::Result<Early> {
        let (mine, theirs) = std::os::unix::net::UnixStream::pair()?;
        let mut builder = tokio::process::Command::new(program);
        builder
            .args([toolgate_sandbox::TRAMPOLINE, toolgate_sandbox::LATE])
            .env_clear()
            .env(toolgate_sandbox::CGROUP_ENV, cgroup)
            // Holds no directory busy while it waits; the message says where to run.
            .current_dir("/")
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(output.try_clone()?)
            .stderr(output.try_clone()?)
            .process_group(0);
        let child = builder.spawn()?;
        Ok(Early {
            child,
            channel: Some(mine),
            guarded,
            program: program.to_os_string(),
        })
    }

    /// Whether it can run a command with `prefix` (the same trampoline program, and the
    /// exec guard used or not alike) and is still waiting.
    pub(crate) fn fits(&mut self, prefix: &[OsString], guarded: bool) -> bool {
        prefix.first() == Some(&self.program)
            && prefix.get(1).is_some_and(|arg| arg == toolgate_sandbox::TRAMPOLINE)
            && self.guarded == guarded
            && self.channel.is_some()
            && matches!(self.child.try_wait(), Ok(None))
    }

    /// What it is to run for `spawn` (a background command: its input comes back from
    /// its output socket, as [`super::start`] arranges with `input`).
    pub(crate) fn message(&self, spawn: &Spawn<'_>) -> LateStart {
        let command = format!("exec 0<&1\n{}", spawn.command);
        let mut args: Vec<OsString> = spawn.prefix.iter().skip(2).cloned().collect();
        args.extend([spawn.shell.as_os_str().to_os_string(), "-c".into(), command.into()]);
        LateStart {
            args,
            env: command_env(spawn.env, spawn.shell_id),
            workdir: spawn.workdir.to_path_buf(),
        }
    }

    /// Hands `message` over and supervises the command as [`super::start`] does.
    pub(crate) async fn finish(mut self, message: &[u8], guard: Option<Guard>) -> std::io::Result<Started> {
        let pid = self.child.id();
        let mut channel = self
            .channel
            .take()
            .ok_or_else(|| std::io::Error::other("the waiting trampoline was used already"))?;
        channel.write_all(message)?;
        let supervisor = match (guard, pid) {
            (Some(setup), Some(pid)) if self.guarded => start_guard(setup, channel, pid).await,
            (None, _) if !self.guarded => None,
            _ => return Err(std::io::Error::other("the waiting trampoline does not fit the command")),
        };
        Ok(Started {
            child: self.child,
            group: GroupGuard {
                pgid: pid.and_then(|id| Pid::from_raw(id as i32)),
            },
            supervisor,
        })
    }
}
