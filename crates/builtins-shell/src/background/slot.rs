//! The next background process's start, made ahead: a trampoline already waiting in a
//! cgroup of its own ([`exec::Early`]), with the socket its output will come through.
//!
//! Why: a process moved into a cgroup waits for the kernel's RCU grace period (10 to
//! 20 ms on an idle machine); one that waits in its group before its command is known
//! pays that while nothing waits on it. A slot is made after each background start, for
//! the trampoline it used; a start that finds none that fits (a server's first, a `tty:
//! true` one, another trampoline, the exec guard on or off unlike the slot) starts as
//! before, moving the process as it starts.

use std::ffi::OsString;
use std::sync::Arc;

use super::cgroup::Group;
use super::io;
use crate::exec;

/// A waiting trampoline, its group and the two ends its output and input go through.
pub(super) struct Slot {
    /// The shell ID the process will have (its group is named by it).
    pub(super) id: String,
    pub(super) group: Arc<Group>,
    pub(super) reader: io::Reader,
    pub(super) writer: io::Writer,
    pub(super) early: exec::Early,
}

impl Slot {
    /// A slot for commands started through `prefix` (a sandbox trampoline's command line),
    /// with the exec guard or without; `None` where there is no trampoline or the system
    /// lets toolgate make no cgroup (then a start has no move to save).
    pub(super) fn make(prefix: &[OsString], guarded: bool) -> Option<Slot> {
        let program = trampoline(prefix)?;
        let id = toolgate_core::ascending_id("shell");
        let group = Arc::new(Group::create(&id)?);
        let (reader, writer, theirs) = io::open(None).ok()?;
        let early = exec::Early::spawn(program, group.dir(), &theirs, guarded).ok()?;
        Some(Slot {
            id,
            group,
            reader,
            writer,
            early,
        })
    }
}

/// The trampoline program of `prefix`, when it is one (`PROGRAM __sandbox-exec …`).
pub(super) fn trampoline(prefix: &[OsString]) -> Option<&OsString> {
    match prefix {
        [program, mode, ..] if mode == toolgate_sandbox::TRAMPOLINE => Some(program),
        _ => None,
    }
}
