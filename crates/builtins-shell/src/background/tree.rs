//! A background process's whole tree, found in `/proc` and ended there: its process group,
//! every descendant (`setsid` ones, which left the group, included), every process it
//! was ever seen to have that still runs (one whose parent ended before the kill), and
//! every process toolgate adopted that carries its shell ID ([`SHELL_ID_ENV`]).
//!
//! Why adoption matters: a daemon forks twice and its middle process exits, so the last
//! one is orphaned. The sandbox trampoline makes each command the subreaper of its
//! descendants, so while the command runs an orphan stays inside its tree; the front ends
//! that keep background processes are subreapers too, so an orphan whose command ended
//! is adopted by toolgate (not by init), where its shell ID says whose it is.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, PoisonError};

use rustix::process::{Pid, Signal, kill_process, kill_process_group};

use super::cgroup::Group;

/// Processes of a tree remembered at most (then no more are added).
pub(crate) const MAX_KNOWN: usize = 4096;

/// One line of `/proc/<pid>/stat`, the fields that matter here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    pub(crate) pid: u32,
    pub(crate) ppid: u32,
    pub(crate) pgrp: u32,
    /// Start time in clock ticks since boot: with the PID, names one process for good (a
    /// PID is reused; the pair is not).
    pub(crate) start: u64,
    /// Whether it has ended and waits to be reaped (a zombie runs nothing).
    pub(crate) zombie: bool,
}

/// Parses `/proc/<pid>/stat` (proc(5)): the command name is in parentheses and may hold
/// spaces and parentheses itself, so fields are counted after the last `)`.
pub(crate) fn parse_stat(pid: u32, text: &str) -> Option<Stat> {
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state).
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    Some(Stat {
        pid,
        zombie: fields.first().is_some_and(|state| *state == "Z" || *state == "X"),
        ppid: u32::try_from(field(4)?).ok()?,
        pgrp: u32::try_from(field(5)?).ok()?,
        start: field(22)?,
    })
}

/// The stat of process `pid`, if it exists.
pub(crate) fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &text)
}

/// Every process of the system (those this user may see).
pub(crate) fn table() -> Vec<Stat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(stat)
        .collect()
}

/// The processes of `table` that descend from `root` (not `root` itself), or belong to
/// process group `pgrp`: `(pid, start)` each, zombies left out.
pub(crate) fn tree(table: &[Stat], root: u32, pgrp: u32) -> Vec<(u32, u64)> {
    let mut children: HashMap<u32, Vec<&Stat>> = HashMap::new();
    for process in table {
        children.entry(process.ppid).or_default().push(process);
    }
    let mut found: HashSet<u32> = HashSet::new();
    let mut out = Vec::new();
    let mut next: Vec<u32> = vec![root];
    // Group members first: their descendants are the tree's too.
    for process in table.iter().filter(|p| p.pgrp == pgrp && p.pid != root) {
        next.push(process.pid);
        if found.insert(process.pid) && !process.zombie {
            out.push((process.pid, process.start));
        }
    }
    while let Some(parent) = next.pop() {
        for child in children.get(&parent).map(Vec::as_slice).unwrap_or_default() {
            if found.insert(child.pid) {
                next.push(child.pid);
                if !child.zombie {
                    out.push((child.pid, child.start));
                }
            }
        }
        // A cycle cannot happen in a PID tree, but a table read while processes come and
        // go may be inconsistent: bounded all the same.
        if found.len() > 1 << 16 {
            break;
        }
    }
    out
}

/// The variable every background process starts with: its shell ID.
pub(crate) const SHELL_ID_ENV: &str = "TOOLGATE_SHELL_ID";

/// The running processes of `table` that this process (`me`) adopted and whose
/// environment names shell `id`, `root` (the shell, a child of `me` by birth) left out.
pub(crate) fn adopted(table: &[Stat], me: u32, root: u32, id: &str) -> Vec<u32> {
    let wanted = format!("{SHELL_ID_ENV}={id}");
    table
        .iter()
        .filter(|p| p.ppid == me && p.pid != root && !p.zombie)
        .filter(|p| {
            // Only the user's own processes can be read; a process whose exec cleared its
            // environment is no longer known by it (while its command runs it is still in
            // the command's tree, the command being its subreaper).
            std::fs::read(format!("/proc/{}/environ", p.pid))
                .is_ok_and(|environ| environ.split(|b| *b == 0).any(|var| var == wanted.as_bytes()))
        })
        .map(|p| p.pid)
        .collect()
}

/// The tree of shell `id` (process `root`, group `pgrp`): [`tree`], each process
/// toolgate adopted that carries the shell's ID, with its own tree, and every member of
/// its cgroup (`group`).
pub(crate) fn members(table: &[Stat], root: u32, pgrp: u32, id: &str, group: Option<&Group>) -> Vec<(u32, u64)> {
    let mut out = tree(table, root, pgrp);
    for pid in group.map(Group::pids).unwrap_or_default() {
        if pid != root
            && let Some(process) = table.iter().find(|p| p.pid == pid && !p.zombie)
        {
            out.push((pid, process.start));
        }
    }
    for pid in adopted(table, std::process::id(), root, id) {
        if let Some(process) = table.iter().find(|p| p.pid == pid) {
            out.push((pid, process.start));
        }
        out.extend(tree(table, pid, pid));
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Reaps the processes of shell `root` that ended as toolgate's adopted children (zombies
/// whose parent is this process): the `known` ones and those its cgroup (`group`) held.
/// They were the tree's own, so they are no child another part of toolgate waits for
/// (the shell itself, which tokio waits for, is left out), and nobody else would reap them.
pub(crate) fn reap(table: &[Stat], known: &HashMap<u32, u64>, root: u32, group: Option<&Group>) {
    let me = std::process::id();
    for process in table.iter().filter(|p| p.zombie && p.ppid == me && p.pid != root) {
        let ours =
            known.get(&process.pid) == Some(&process.start) || group.is_some_and(|group| group.held(process.pid));
        if ours && let Some(pid) = Pid::from_raw(process.pid as i32) {
            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG);
        }
    }
}

/// Sends `signal` to every process of the tree of `root` (read before anything is
/// signalled: a descendant whose parent dies of the signal is reparented and would be
/// lost), to the group `pgrp`, and to every process in `known` that still is the one that
/// was seen (same start time), and every member of its cgroup (`group`: KILL reaches
/// them all at once there, so a process that keeps forking new PIDs cannot outrun it);
/// what it found joins `known` for the next round. Returns how many processes other than
/// the shell it reached.
pub(crate) fn signal_tree(
    root: u32,
    pgrp: u32,
    id: &str,
    known: &Mutex<HashMap<u32, u64>>,
    group: Option<&Group>,
    signal: Signal,
) -> usize {
    let table = table();
    let targets: Vec<(u32, u64)> = {
        let mut known = known.lock().unwrap_or_else(PoisonError::into_inner);
        for (pid, start) in members(&table, root, pgrp, id, group) {
            if known.len() < MAX_KNOWN {
                known.insert(pid, start);
            }
        }
        known
            .iter()
            .filter(|&(&pid, &start)| table.iter().any(|p| p.pid == pid && p.start == start && !p.zombie))
            .map(|(&pid, &start)| (pid, start))
            .collect()
    };
    // The cgroup first: KILL there reaches what was forked since the table was read.
    let mut reached = group.map_or(0, |group| group.signal(signal));
    if let Some(group) = Pid::from_raw(pgrp as i32) {
        let _ = kill_process_group(group, signal);
    }
    for (pid, _) in targets {
        if let Some(process) = Pid::from_raw(pid as i32)
            && kill_process(process, signal).is_ok()
        {
            reached += 1;
        }
    }
    if let Some(shell) = Pid::from_raw(root as i32) {
        let _ = kill_process(shell, signal);
    }
    reached
}

/// Whether anything of the tree is left: a process of group `pgrp`, a descendant of
/// `root`, one toolgate adopted with shell ID `id`, or a `known` process still running
/// (those that ended as toolgate's own children are reaped first).
pub(crate) fn any_left(root: u32, pgrp: u32, id: &str, known: &HashMap<u32, u64>, group: Option<&Group>) -> bool {
    if group.is_some_and(Group::populated) {
        return true;
    }
    let table = table();
    reap(&table, known, root, group);
    if table.iter().any(|p| p.pid == root && !p.zombie) {
        return true;
    }
    if !members(&table, root, pgrp, id, None).is_empty() {
        return true;
    }
    known
        .iter()
        .any(|(&pid, &start)| table.iter().any(|p| p.pid == pid && p.start == start && !p.zombie))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_stat_line_with_parentheses_in_the_name_is_read_after_the_last_one() {
        let line = "4242 (a (weird) name) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100";
        let stat = parse_stat(4242, line).unwrap();
        assert_eq!(
            stat,
            Stat {
                pid: 4242,
                ppid: 17,
                pgrp: 4242,
                start: 987654,
                zombie: false
            }
        );
    }

    #[test]
    fn the_tree_holds_descendants_that_left_the_group_and_group_members_whose_parent_ended() {
        let stat = |pid, ppid, pgrp| Stat {
            pid,
            ppid,
            pgrp,
            start: u64::from(pid) * 10,
            zombie: false,
        };
        let table = [
            stat(1, 0, 1),
            stat(100, 1, 100),   // the shell
            stat(101, 100, 100), // a job
            stat(102, 100, 102), // setsid: left the group
            stat(103, 102, 102), // its child
            stat(104, 1, 100),   // a group member whose parent ended (now init's)
            stat(105, 104, 105), // and its setsid child
            stat(200, 1, 200),   // someone else
        ];
        let mut found: Vec<u32> = tree(&table, 100, 100).into_iter().map(|(pid, _)| pid).collect();
        found.sort_unstable();
        assert_eq!(found, [101, 102, 103, 104, 105]);
    }
}
