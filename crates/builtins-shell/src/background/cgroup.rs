//! A cgroup (v2) of its own for each background process, where the system lets toolgate
//! make one: the one attribution a process cannot shed.
//!
//! Why: the process tree, the process group and the shell ID in the environment all
//! describe a process by what it may change. A process that clears its environment and
//! then hops PIDs (fork, the parent exits, `setsid`, again) leaves each of them behind
//! faster than `/proc` can be read. A cgroup is kept across `fork`, `setsid` and `exec`,
//! and leaving it takes write access to the cgroup tree, which a sandboxed command lacks;
//! `cgroup.kill` ends every member at once (kernel 5.14 and later), so there is no race
//! to lose.
//!
//! Where: a directory `toolgate-<pid>` beside nothing else but under toolgate's own
//! cgroup (read from `/proc/self/cgroup` and the `cgroup2` mount in
//! `/proc/self/mountinfo`), and in it one directory per background process, named by its
//! shell ID. Where the hierarchy is not writable (an unprivileged user outside a
//! delegated subtree, a cgroup v1 only system, a read-only `/sys/fs/cgroup`), there is
//! no group and the `/proc` tree alone tracks the process, as README "Background
//! processes" says.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rustix::process::{Pid, Signal, kill_process};

/// How deep nested groups are walked (a toolgate run inside a background process makes
/// its own groups under that process's).
const MAX_DEPTH: usize = 8;

/// How many milliseconds a freeze is waited for at most (it takes microseconds unless a
/// member is in an uninterruptible sleep).
const FREEZE_POLLS: usize = 50;

/// One background process's cgroup. Removed (with whatever empty groups a nested
/// toolgate left in it) when dropped.
#[derive(Debug)]
pub(crate) struct Group {
    dir: PathBuf,
    /// Its path in the hierarchy, as `/proc/<pid>/cgroup` names it.
    path: String,
}

impl Group {
    /// A new group for shell `id`, or `None` where the system lets toolgate make none.
    pub(crate) fn create(id: &str) -> Option<Group> {
        let (base, path) = base()?;
        let dir = base.join(id);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            // The last group of this process went and took the directory of groups with
            // it: made again.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir(base).ok()?;
                std::fs::create_dir(&dir).ok()?;
            }
            Err(_) => return None,
        }
        Some(Group {
            dir,
            path: format!("{path}/{id}"),
        })
    }

    /// The group's directory (the trampoline writes its own PID to its `cgroup.procs`).
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Moves process `pid` into the group. Done for the shell right after it started,
    /// whether or not a trampoline joined already (writing a member again is no error).
    pub(crate) fn add(&self, pid: u32) -> std::io::Result<()> {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string())
    }

    /// Every process in the group and in the groups nested in it.
    pub(crate) fn pids(&self) -> Vec<u32> {
        let mut out = Vec::new();
        collect(&self.dir, 0, &mut out);
        out
    }

    /// Whether process `pid` is (or, a zombie now, was when it ended) in the group or a
    /// nested one: an ended process keeps naming its cgroup until it is reaped.
    pub(crate) fn held(&self, pid: u32) -> bool {
        let Ok(membership) = std::fs::read_to_string(format!("/proc/{pid}/cgroup")) else {
            return false;
        };
        membership
            .lines()
            .filter_map(|line| line.strip_prefix("0::"))
            .any(|path| {
                path == self.path
                    || path
                        .strip_prefix(self.path.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            })
    }

    /// Whether any process is left in the group or a nested one (`cgroup.events`'
    /// `populated`, which counts nested groups; zombies are no members).
    pub(crate) fn populated(&self) -> bool {
        match std::fs::read_to_string(self.dir.join("cgroup.events")) {
            Ok(events) => events.lines().any(|line| line.trim() == "populated 1"),
            Err(_) => !self.pids().is_empty(),
        }
    }

    /// Sends `signal` to every member; for KILL, through `cgroup.kill` first, which the
    /// kernel applies to every member and to any process they fork meanwhile. Returns how
    /// many members were signalled one by one.
    pub(crate) fn signal(&self, signal: Signal) -> usize {
        if signal == Signal::KILL {
            let _ = std::fs::write(self.dir.join("cgroup.kill"), "1");
        }
        // Frozen, no member can fork a process the list below would miss; the signal is
        // delivered as soon as they thaw.
        let frozen = signal != Signal::KILL && self.freeze(true);
        let mut reached = 0;
        for pid in self.pids() {
            if let Some(process) = Pid::from_raw(pid as i32)
                && kill_process(process, signal).is_ok()
            {
                reached += 1;
            }
        }
        if frozen {
            self.freeze(false);
        }
        reached
    }

    /// Freezes (or thaws) the group, waiting a little for the kernel to say it is frozen;
    /// whether it was asked to freeze.
    fn freeze(&self, frozen: bool) -> bool {
        if std::fs::write(self.dir.join("cgroup.freeze"), if frozen { "1" } else { "0" }).is_err() {
            return false;
        }
        if frozen {
            for _ in 0..FREEZE_POLLS {
                let events = std::fs::read_to_string(self.dir.join("cgroup.events")).unwrap_or_default();
                if events.lines().any(|line| line.trim() == "frozen 1") {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        true
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        remove(&self.dir, 0);
        // The directory of groups goes with its last group (the kernel refuses while
        // another is there), so none is left behind when this process ends.
        if let Some(base) = self.dir.parent() {
            let _ = std::fs::remove_dir(base);
        }
    }
}

/// Reads the PIDs of `dir`'s `cgroup.procs` and of the groups under it.
fn collect(dir: &Path, depth: usize, out: &mut Vec<u32>) {
    if let Ok(procs) = std::fs::read_to_string(dir.join("cgroup.procs")) {
        out.extend(procs.lines().filter_map(|line| line.trim().parse::<u32>().ok()));
    }
    if depth >= MAX_DEPTH {
        return;
    }
    for sub in subgroups(dir) {
        collect(&sub, depth + 1, out);
    }
}

/// The groups directly under `dir`.
fn subgroups(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .map(|entry| entry.path())
        .collect()
}

/// Removes `dir` and the groups under it, deepest first; a group that still has members
/// stays (the kernel refuses), which is only a leftover directory.
fn remove(dir: &Path, depth: usize) {
    if depth < MAX_DEPTH {
        for sub in subgroups(dir) {
            remove(&sub, depth + 1);
        }
    }
    let _ = std::fs::remove_dir(dir);
}

/// This process's directory of groups, made once, and its path in the hierarchy; `None`
/// where it cannot be.
fn base() -> Option<(&'static Path, &'static str)> {
    static BASE: OnceLock<Option<(PathBuf, String)>> = OnceLock::new();
    BASE.get_or_init(|| {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let own = own_dir(&mountinfo, &membership)?;
        let own_path = membership.lines().find_map(|line| line.strip_prefix("0::"))?.trim();
        sweep(&own);
        let name = format!("toolgate-{}", std::process::id());
        let base = own.join(&name);
        let path = format!("{}/{name}", own_path.trim_end_matches('/'));
        match std::fs::create_dir(&base) {
            Ok(()) => Some((base, path)),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Some((base, path)),
            Err(_) => None,
        }
    })
    .as_ref()
    .map(|(base, path)| (base.as_path(), path.as_str()))
}

/// The directory of this process's own cgroup v2: under the `cgroup2` mount whose root
/// holds it (a container may see a subtree mounted), the path of the `0::` line of
/// `/proc/self/cgroup` below that root.
pub(crate) fn own_dir(mountinfo: &str, membership: &str) -> Option<PathBuf> {
    let path = membership.lines().find_map(|line| line.strip_prefix("0::"))?.trim();
    if !path.starts_with('/') || path.split('/').any(|part| part == "..") {
        return None;
    }
    mountinfo.lines().find_map(|line| {
        // proc(5): "id parent major:minor root mount-point options [optional…] - type source super"
        let (before, after) = line.split_once(" - ")?;
        if after.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let fields: Vec<&str> = before.split_whitespace().collect();
        let root = unescape(fields.get(3)?);
        let point = PathBuf::from(unescape(fields.get(4)?));
        let below = if root == "/" {
            path
        } else {
            let rest = path.strip_prefix(root.as_str())?;
            if !rest.is_empty() && !rest.starts_with('/') {
                return None;
            }
            rest
        };
        Some(point.join(below.trim_start_matches('/')))
    })
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && let Some(code) = field
                .get(i + 1..i + 4)
                .and_then(|octal| u8::from_str_radix(octal, 8).ok())
        {
            out.push(code);
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Removes the empty groups toolgate processes that are gone left behind (one killed
/// before it could remove its own).
fn sweep(own: &Path) {
    let Ok(entries) = std::fs::read_dir(own) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|name| name.strip_prefix("toolgate-")) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            remove(&entry.path(), 0);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const MOUNTINFO: &str = "\
24 1 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
30 24 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
33 24 0:29 / /sys/fs/cgroup/unified rw,nosuid shared:9 - cgroup2 cgroup2 rw
";

    #[test]
    fn the_own_group_is_the_v2_line_under_the_cgroup2_mount() {
        let membership = "4:memory:/x\n0::/user.slice/app.scope\n";
        assert_eq!(
            own_dir(MOUNTINFO, membership).unwrap(),
            PathBuf::from("/sys/fs/cgroup/unified/user.slice/app.scope")
        );
        assert_eq!(
            own_dir(MOUNTINFO, "0::/\n").unwrap(),
            PathBuf::from("/sys/fs/cgroup/unified")
        );
    }

    #[test]
    fn no_group_without_a_v2_line_a_v2_mount_or_a_plain_path() {
        assert_eq!(own_dir(MOUNTINFO, "4:memory:/x\n"), None);
        assert_eq!(
            own_dir("30 24 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw\n", "0::/\n"),
            None
        );
        assert_eq!(own_dir(MOUNTINFO, "0::/../../etc\n"), None);
        // A mount of a subtree (a container's view) holds only the groups below its root.
        let subtree = "33 24 0:29 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";
        assert_eq!(own_dir(subtree, "0::/\n"), None);
        assert_eq!(own_dir(subtree, "0::/docker/abcd\n"), None);
        assert_eq!(
            own_dir(subtree, "0::/docker/abc/app\n").unwrap(),
            PathBuf::from("/sys/fs/cgroup/app")
        );
    }

    #[test]
    fn an_escaped_mount_point_is_read_as_its_path() {
        let info = "33 24 0:29 / /mnt/cgroup\\040two rw - cgroup2 cgroup2 rw\n";
        assert_eq!(own_dir(info, "0::/a\n").unwrap(), PathBuf::from("/mnt/cgroup two/a"));
    }
}
