//! The exec guard: every `execve`/`execveat` of a command and of everything it starts is
//! stopped by the kernel and put to a supervisor, which lets it go on or refuses it.
//!
//! The mechanism is seccomp user notification. The trampoline, single-threaded and right
//! before it executes the shell, installs a filter that returns `USER_NOTIF` for
//! `execve` and `execveat` (and refuses a `seccomp` call that would install a listener
//! of the command's own, which would take the notifications over), and hands the
//! filter's listener to the supervisor over the Unix socket it was given as stdin. The
//! filter is inherited by every child and survives every `exec`: nothing the command
//! starts is outside it. The supervisor ([`ExecListener`]) reads each stopped call's
//! program, argv and environment from the caller's memory, checks that the call is still
//! the one it read ([`notify_id_valid`]), and answers.
//!
//! What this mechanism cannot do (README "The bash tool" says it too): after the
//! supervisor lets a call go on, the kernel reads the arguments again from the caller's
//! memory, so a second thread of an already running program (or a process sharing its
//! memory) can change them in between. That program is one the rules already let run,
//! and it can do what the denied program would do by itself (system calls need no
//! `exec`): the race does not give it anything it did not have. The shell itself is
//! single-threaded and cannot race.

use std::ffi::{OsStr, OsString};
use std::io::{self, IoSlice, IoSliceMut, Read};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use libseccomp::{
    ScmpAction, ScmpArgCompare, ScmpCompareOp, ScmpFilterContext, ScmpNotifReq, ScmpNotifResp, ScmpNotifRespFlags,
    ScmpSyscall, notify_id_valid,
};
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fs::{AtFlags, Mode as FileMode, OFlags, ResolveFlags, StatxFlags};
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags,
};

use crate::SandboxError;

/// `SECCOMP_SET_MODE_FILTER`, the `seccomp(2)` operation that installs a filter.
const SET_MODE_FILTER: u64 = 1;
/// `SECCOMP_FILTER_FLAG_NEW_LISTENER`: the filter comes with a listener.
const FLAG_NEW_LISTENER: u64 = 1 << 3;
/// `AT_FDCWD` as the kernel passes it in a register.
const AT_FDCWD: i32 = -100;
/// `AT_EMPTY_PATH`: `execveat` of the descriptor itself.
const AT_EMPTY_PATH: u64 = 0x1000;
/// The longest argument or variable read (the kernel's own limit is 128 KiB).
const MAX_STRING: usize = 128 * 1024;
/// The most argv plus environment bytes read for one call.
const MAX_TOTAL: usize = 8 * 1024 * 1024;
/// The most argv plus environment strings read for one call.
const MAX_STRINGS: usize = 65_536;
/// The granule of the page cache over the caller's memory.
const PAGE: u64 = 4096;

fn failed(step: impl Into<String>) -> impl FnOnce(io::Error) -> SandboxError {
    let step = step.into();
    move |source| SandboxError::Step { step, source }
}

fn seccomp_failed(step: &str) -> impl FnOnce(libseccomp::error::SeccompError) -> SandboxError + '_ {
    // libseccomp reports a generic failure; the kernel's errno is still in errno.
    move |error| {
        let os = io::Error::last_os_error();
        SandboxError::Seccomp(format!("{step}: {error} ({os})"))
    }
}

// --- the trampoline's side ------------------------------------------------------------

/// The filter, loaded on the current process; returns its listener. Needs no privilege:
/// libseccomp sets `no_new_privs` first, which also means that a setuid or file-capability
/// program started under the guard gains no privilege.
fn load_filter() -> Result<OwnedFd, SandboxError> {
    rustix::thread::set_no_new_privs(true).map_err(|e| failed("cannot set no_new_privs")(e.into()))?;
    let mut ctx = ScmpFilterContext::new(ScmpAction::Allow).map_err(seccomp_failed("new filter"))?;
    // Another architecture's system calls (i386 `int 0x80`, x32) would carry other
    // numbers: they end the process instead of passing unseen.
    ctx.set_act_badarch(ScmpAction::KillProcess)
        .map_err(seccomp_failed("bad-arch action"))?;
    for name in ["execve", "execveat"] {
        let call = ScmpSyscall::from_name(name).map_err(seccomp_failed(name))?;
        ctx.add_rule(ScmpAction::Notify, call).map_err(seccomp_failed(name))?;
    }
    // The kernel takes `op` and `flags` as 32-bit values: compare the low 32 bits only, or
    // high bits set by the caller would slip past the rule.
    let seccomp = ScmpSyscall::from_name("seccomp").map_err(seccomp_failed("seccomp"))?;
    ctx.add_rule_conditional(
        ScmpAction::Errno(libc::EPERM),
        seccomp,
        &[
            ScmpArgCompare::new(0, ScmpCompareOp::MaskedEqual(0xffff_ffff), SET_MODE_FILTER),
            ScmpArgCompare::new(1, ScmpCompareOp::MaskedEqual(FLAG_NEW_LISTENER), FLAG_NEW_LISTENER),
        ],
    )
    .map_err(seccomp_failed("listener rule"))?;
    ctx.load().map_err(seccomp_failed("load"))?;
    let raw = ctx.get_notify_fd().map_err(seccomp_failed("listener"))?;
    // The listener belongs to libseccomp (a raw number); a duplicate through a pidfd of
    // this process is ours to send, without `unsafe`. It is close-on-exec, as is the
    // original: neither reaches the command.
    let me = rustix::process::pidfd_open(rustix::process::getpid(), rustix::process::PidfdFlags::empty())
        .map_err(|e| failed("pidfd_open")(e.into()))?;
    rustix::process::pidfd_getfd(&me, raw, rustix::process::PidfdGetfdFlags::empty())
        .map_err(|e| failed("pidfd_getfd")(e.into()))
}

/// In the trampoline: installs the guard, sends its listener over stdin (a Unix socket
/// from the supervisor), and puts on stdin what the supervisor sends back (or
/// `/dev/null`). Must run while the process is single-threaded, before the sandbox's own
/// seccomp filter (which refuses `pidfd_getfd`).
pub(crate) fn install_from_stdin() -> Result<(), SandboxError> {
    let channel = rustix::stdio::stdin();
    let listener = load_filter()?;
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds = [listener.as_fd()];
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(SandboxError::Seccomp("no room to send the listener".into()));
    }
    rustix::net::sendmsg(channel, &[IoSlice::new(b"L")], &mut control, SendFlags::empty())
        .map_err(|e| failed("cannot send the exec guard's listener")(e.into()))?;
    drop(listener);
    // The supervisor answers with one byte and, optionally, the descriptor to use as stdin.
    let mut byte = [0u8; 1];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let received = rustix::net::recvmsg(
        channel,
        &mut [IoSliceMut::new(&mut byte)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )
    .map_err(|e| failed("no answer from the exec guard's supervisor")(e.into()))?;
    if received.bytes == 0 {
        return Err(SandboxError::Seccomp("the exec guard's supervisor went away".into()));
    }
    let mut stdin: Option<OwnedFd> = None;
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = message {
            for fd in fds {
                stdin.get_or_insert(fd);
            }
        }
    }
    let stdin = match stdin {
        Some(fd) => fd,
        None => std::fs::File::open("/dev/null")
            .map_err(failed("cannot open /dev/null"))?
            .into(),
    };
    rustix::stdio::dup2_stdin(&stdin).map_err(|e| failed("cannot replace stdin")(e.into()))
}

/// In the support probe: whether the guard can be installed here (the kernel offers user
/// notification, libseccomp is recent enough, `pidfd_getfd` works). Installs it on the
/// calling process, which can start no program afterwards (there is no supervisor).
pub(crate) fn probe() -> Result<(), SandboxError> {
    load_filter().map(drop)
}

// --- the supervisor's side --------------------------------------------------------------

/// A file as the kernel will run it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct FileId {
    /// The device it is on.
    pub dev: u64,
    /// Its inode.
    pub ino: u64,
    /// Its mode bits (type, permissions, setuid and setgid).
    pub mode: u32,
    /// When its inode last changed (seconds and nanoseconds since the epoch): a file
    /// created or replaced after a moment cannot claim to have been there before it
    /// (`ctime` cannot be set back).
    pub changed: (i64, i64),
    /// Its size in bytes.
    pub size: u64,
}

impl FileId {
    /// The identity of the file `path` names (following links), in this process's view.
    pub fn of(path: &Path) -> Option<FileId> {
        let stat = rustix::fs::stat(path).ok()?;
        Some(FileId {
            dev: stat.st_dev,
            ino: stat.st_ino,
            mode: stat.st_mode,
            changed: (stat.st_ctime, stat.st_ctime_nsec as i64),
            size: stat.st_size as u64,
        })
    }

    /// True when it is the same file as `other` (device and inode).
    pub fn same_file(&self, other: &FileId) -> bool {
        self.dev == other.dev && self.ino == other.ino
    }

    /// True for a setuid or setgid file: under the guard it runs without those privileges.
    pub fn is_setid(&self) -> bool {
        self.mode & 0o6000 != 0
    }
}

/// A program file as a process would find it ([`ExecListener::identify`]).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Program {
    /// The file.
    pub file: FileId,
    /// Where it is, every link resolved as that process would resolve it.
    pub resolved: PathBuf,
    /// Its `#!` line, when it is a script.
    pub interpreter: Option<Vec<OsString>>,
    /// Whether it is an ELF program that names no interpreter ([`ExecCall::static_elf`]).
    pub static_elf: bool,
}

/// What a regular file's first bytes say about how the kernel runs it.
struct Head {
    /// Its `#!` line, when it is a script.
    interpreter: Option<Vec<OsString>>,
    /// An ELF program that names no interpreter ([`ExecCall::static_elf`]).
    static_elf: bool,
    /// An ELF program or a `#!` script ([`ExecCall::native`]); true for what is no
    /// regular file (the kernel refuses to run those itself).
    native: bool,
}

/// The process a stopped call came from, as `/proc` told it while the call waited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Caller {
    /// Its thread group (the process), in this process's pid namespace.
    pub tgid: u32,
    /// Its parent process.
    pub ppid: u32,
    /// When the process started (clock ticks since boot): with `tgid`, a process that a
    /// reused pid cannot be mistaken for.
    pub start: u64,
}

/// One stopped `execve`/`execveat`: what the kernel is about to run.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ExecCall {
    /// The notification's id (answer it with [`ExecListener::allow`] or
    /// [`ExecListener::refuse`]).
    pub id: u64,
    /// The calling thread, in this process's pid namespace.
    pub pid: u32,
    /// The program as an absolute path in the caller's view (its working directory or
    /// `execveat`'s directory joined to a relative path).
    pub program: PathBuf,
    /// The file that path names, when it exists and could be looked at.
    pub file: Option<FileId>,
    /// The caller's descriptor of the program when it was given as one (`fexecve`,
    /// `execveat` with `AT_EMPTY_PATH`): `program` is then only what that descriptor's
    /// link says, and the file is reached as `/proc/self/fd/<n>` of the caller.
    pub descriptor: Option<i32>,
    /// Where that file is, every link resolved as the caller would resolve it (`/bin/rm`
    /// and a symlink to it are `/usr/bin/rm`; `/dev/fd/3` is the file on the caller's
    /// descriptor 3, whatever its path).
    pub resolved: Option<PathBuf>,
    /// A script's `#!` line (interpreter and its optional argument), when the program is
    /// one: the kernel runs the interpreter with no `exec` of its own.
    pub interpreter: Option<Vec<OsString>>,
    /// Whether the file is a position-independent ELF program that names no interpreter
    /// (a static-pie program, or the dynamic loader itself under any name): it may map
    /// and run another program given in its arguments (`ld.so PROG`) with no `exec`.
    pub static_elf: bool,
    /// Whether the file is one the kernel runs by itself: an ELF program or a `#!`
    /// script. Anything else runs only through a `binfmt_misc` handler (a program the
    /// guard does not see), or fails with `ENOEXEC`.
    pub native: bool,
    /// The arguments, `argv[0]` included (which the caller chooses freely).
    pub argv: Vec<OsString>,
    /// The environment, as `NAME=value` strings.
    pub env: Vec<OsString>,
    /// The caller's working directory, when it could be read.
    pub cwd: Option<PathBuf>,
    /// The calling process, when `/proc` could tell it (read before the call was proven
    /// still waiting, so it is the caller's).
    pub caller: Option<Caller>,
}

/// What [`ExecListener::next`] found.
#[derive(Debug)]
#[non_exhaustive]
pub enum Stopped {
    /// A call, read whole.
    Exec(Box<ExecCall>),
    /// A call whose arguments could not be read (the caller's memory is not readable to
    /// this process, or its arguments are malformed or too large): refuse it.
    Unreadable {
        /// The notification's id.
        id: u64,
        /// The calling thread.
        pid: u32,
        /// Why.
        reason: String,
    },
    /// Nothing to answer: the caller went away before it could be read.
    Gone,
}

/// What [`ExecListener::wait`] saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// A call is waiting: [`ExecListener::next`] reads it.
    Ready,
    /// Nothing happened within the timeout.
    Idle,
    /// No process uses the filter any more: nothing more will come.
    Closed,
}

/// The supervisor's end of the exec guard.
#[derive(Debug)]
pub struct ExecListener {
    fd: OwnedFd,
    /// `execveat`'s number, looked up once (libseccomp finds a name by a linear search).
    execveat: Option<ScmpSyscall>,
}

/// A stopped call as the kernel announced it, before anything of it is read
/// ([`ExecListener::receive`]); [`ExecListener::read`] reads it.
#[derive(Clone, Copy, Debug)]
pub struct Notice {
    /// The notification's id.
    pub id: u64,
    /// The calling thread, in this process's pid namespace.
    pub pid: u32,
    is_at: bool,
    args: [u64; 6],
}

impl ExecListener {
    /// Does once, ahead of time, what the first [`receive`](Self::receive) of this process
    /// would otherwise do while a call waits: libseccomp's probe of what the kernel offers
    /// (a dozen `seccomp` calls). A supervisor calls it while the trampoline starts.
    pub fn warm_up() {
        let _ = libseccomp::get_api();
    }

    /// Receives the listener a trampoline sends over `channel` (the other end of the
    /// socket given to it as stdin), waiting at most `timeout`, then sends back `stdin`
    /// (what the command gets as its standard input; `None`: `/dev/null`). Fails if the
    /// trampoline exits or closes the socket first.
    pub fn accept(channel: BorrowedFd<'_>, stdin: Option<BorrowedFd<'_>>, timeout: Duration) -> io::Result<Self> {
        if !wait_for(channel, Some(timeout))? {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the sandbox trampoline sent no exec guard",
            ));
        }
        let mut byte = [0u8; 1];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let received = rustix::net::recvmsg(
            channel,
            &mut [IoSliceMut::new(&mut byte)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        )?;
        let mut listener = None;
        for message in control.drain() {
            if let RecvAncillaryMessage::ScmRights(fds) = message {
                for fd in fds {
                    listener.get_or_insert(fd);
                }
            }
        }
        let Some(fd) = listener.filter(|_| received.bytes == 1) else {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the sandbox trampoline exited before it sent its exec guard",
            ));
        };
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        let fds: Vec<BorrowedFd<'_>> = stdin.into_iter().collect();
        if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(&fds)) {
            return Err(io::Error::other("no room to send stdin"));
        }
        rustix::net::sendmsg(channel, &[IoSlice::new(b"S")], &mut control, SendFlags::empty())?;
        Ok(ExecListener {
            fd,
            execveat: ScmpSyscall::from_name("execveat").ok(),
        })
    }

    /// Waits at most `timeout` (`None`: without limit) for a stopped call.
    pub fn wait(&self, timeout: Option<Duration>) -> io::Result<Readiness> {
        let mut fds = [PollFd::new(&self.fd, PollFlags::IN)];
        let timespec = timeout.map(timespec);
        match rustix::event::poll(&mut fds, timespec.as_ref()) {
            Ok(0) => return Ok(Readiness::Idle),
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => return Ok(Readiness::Idle),
            Err(error) => return Err(error.into()),
        }
        let events = fds[0].revents();
        if events.contains(PollFlags::IN) {
            Ok(Readiness::Ready)
        } else if events.intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL) {
            Ok(Readiness::Closed)
        } else {
            Ok(Readiness::Idle)
        }
    }

    /// Receives the next stopped call and reads what it would run. Call it after
    /// [`wait`](Self::wait) said [`Readiness::Ready`]. The same as [`receive`](Self::receive)
    /// then [`read`](Self::read).
    pub fn next(&self) -> io::Result<Stopped> {
        Ok(match self.receive() {
            Some(notice) => self.read(notice),
            None => Stopped::Gone,
        })
    }

    /// Receives the next stopped call without reading anything of it (a call that needs
    /// no look, such as the trampoline's own start of the shell, is answered at once).
    /// `None`: the caller died between the poll and the receive.
    pub fn receive(&self) -> Option<Notice> {
        let request = ScmpNotifReq::receive(self.fd.as_raw_fd()).ok()?;
        Some(Notice {
            id: request.id,
            pid: request.pid,
            is_at: self.execveat == Some(request.data.syscall),
            args: request.data.args,
        })
    }

    /// Reads what the call `notice` would run: its program, argv, environment and
    /// working directory, from the caller's memory and `/proc`.
    pub fn read(&self, notice: Notice) -> Stopped {
        let fd = self.fd.as_raw_fd();
        let Notice { id, pid, is_at, args } = notice;
        let (dirfd, path_at, argv_at, envp_at, flags) = if is_at {
            (args[0] as i32, args[1], args[2], args[3], args[4])
        } else {
            (AT_FDCWD, args[0], args[1], args[2], 0)
        };
        // Every `/proc` look at the caller goes through one descriptor of its directory:
        // one lookup of the pid instead of one per file (the first look at a new pid's
        // directory is what costs), and nothing of another process with the same pid
        // can be read through it once the caller is gone.
        let dir = rustix::fs::open(
            format!("/proc/{pid}"),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            FileMode::empty(),
        );
        let read = (|| -> io::Result<(Vec<u8>, Vec<OsString>, Vec<OsString>)> {
            let dir = dir.as_ref().map_err(|error| io::Error::from(*error))?;
            let mut memory = Memory::open(dir)?;
            let path = memory.string(path_at)?;
            let argv = memory.strings(argv_at)?;
            let env = memory.strings(envp_at)?;
            Ok((path, argv, env))
        })();
        let (path, argv, env) = match read {
            Ok(read) => read,
            Err(error) => {
                return match notify_id_valid(fd, id) {
                    Ok(()) => Stopped::Unreadable {
                        id,
                        pid,
                        reason: format!("its arguments could not be read: {error}"),
                    },
                    Err(_) => Stopped::Gone,
                };
            }
        };
        let Ok(dir) = dir else {
            return Stopped::Gone;
        };
        // `/proc` prints the caller's directories as this process sees them; the caller
        // names files from its own root (`chroot`). Those paths are only for showing the
        // program: a relative one is looked up from the directory itself.
        let root = link_at(&dir, "root");
        let view = |path: Option<PathBuf>| caller_view(root.as_deref(), path?);
        let cwd = view(link_at(&dir, "cwd"));
        let empty = path.is_empty() && flags & AT_EMPTY_PATH != 0;
        let path = OsStr::from_bytes(&path);
        let program = if empty {
            link_at(&dir, &format!("fd/{dirfd}")).unwrap_or_default()
        } else if path.as_bytes().first() == Some(&b'/') {
            PathBuf::from(path)
        } else if dirfd == AT_FDCWD {
            cwd.clone().unwrap_or_default().join(path)
        } else {
            view(link_at(&dir, &format!("fd/{dirfd}")))
                .unwrap_or_default()
                .join(path)
        };
        let opened = if empty {
            let direct = PathBuf::from(format!("/proc/{pid}/fd/{dirfd}"));
            open_path(&direct, None).map(|fd| (fd, std::fs::read_link(&direct).unwrap_or_default()))
        } else if path.as_bytes().first() == Some(&b'/') {
            open_as_in(&dir, pid, Path::new(path))
        } else if dirfd == AT_FDCWD {
            open_from(&dir, pid, "cwd", Path::new(path))
        } else {
            open_from(&dir, pid, &format!("fd/{dirfd}"), Path::new(path))
        };
        let caller = caller_of(&dir, pid);
        let (file, interpreter, static_elf, native, resolved) = match opened {
            Some((opened, resolved)) => {
                let file = file_id(&opened);
                match file.map(|file| shebang(&opened, &file)) {
                    Some(Ok(Head {
                        interpreter,
                        static_elf,
                        native,
                    })) => (file, interpreter, static_elf && native, native, Some(resolved)),
                    // Executable but unreadable here: whether the kernel would run an
                    // interpreter is not known, so the file is not either.
                    Some(Err(HeadUnreadable)) | None => (None, None, false, false, Some(resolved)),
                }
            }
            None => (None, None, false, false, None),
        };
        // The pid may belong to another process by now if the caller died: only a call
        // still waiting proves that everything above was read from it.
        if notify_id_valid(fd, id).is_err() {
            return Stopped::Gone;
        }
        Stopped::Exec(Box::new(ExecCall {
            id,
            pid,
            program,
            file,
            descriptor: empty.then_some(dirfd),
            resolved,
            interpreter,
            static_elf,
            native,
            argv,
            env,
            cwd,
            caller,
        }))
    }

    /// The program `path` names in the view of process `pid` (its root, its
    /// `/proc/self`; relative to its working directory), e.g. the program a dynamic
    /// loader was asked to run or a script's interpreter.
    pub fn identify(&self, pid: u32, path: &Path) -> Option<Program> {
        let dir = rustix::fs::open(
            format!("/proc/{pid}"),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            FileMode::empty(),
        )
        .ok()?;
        let (fd, resolved) = open_relative(&dir, pid, path)?;
        let file = file_id(&fd)?;
        let head = shebang(&fd, &file).ok()?;
        Some(Program {
            file,
            resolved,
            interpreter: head.interpreter,
            static_elf: head.static_elf && head.native,
        })
    }

    /// The file `path` names in the view of process `pid`, found as
    /// [`identify`](Self::identify) finds it, opened for reading, and what it is; `None`
    /// when it cannot be found or read.
    pub fn open(&self, pid: u32, path: &Path) -> Option<(FileId, std::fs::File)> {
        let dir = rustix::fs::open(
            format!("/proc/{pid}"),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            FileMode::empty(),
        )
        .ok()?;
        let (fd, _) = open_relative(&dir, pid, path)?;
        let file = file_id(&fd)?;
        let opened = std::fs::File::open(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()?;
        // The same file, not one swapped in between.
        file_id(&OwnedFd::from(opened.try_clone().ok()?))
            .filter(|again| again.same_file(&file))
            .map(|_| (file, opened))
    }

    /// Lets the call go on: the kernel runs the program.
    pub fn allow(&self, id: u64) -> io::Result<()> {
        ScmpNotifResp::new_continue(id, ScmpNotifRespFlags::empty())
            .respond(self.fd.as_raw_fd())
            .map_err(|error| io::Error::other(error.to_string()))
    }

    /// Refuses the call: `execve` fails with `errno` (e.g. `EPERM`) in the caller.
    pub fn refuse(&self, id: u64, errno: i32) -> io::Result<()> {
        ScmpNotifResp::new_error(id, -errno.abs(), ScmpNotifRespFlags::empty())
            .respond(self.fd.as_raw_fd())
            .map_err(|error| io::Error::other(error.to_string()))
    }

    /// True while the call `id` still waits for an answer (its caller may have been
    /// interrupted by a signal or killed).
    pub fn is_waiting(&self, id: u64) -> bool {
        notify_id_valid(self.fd.as_raw_fd(), id).is_ok()
    }
}

fn timespec(duration: Duration) -> Timespec {
    Timespec {
        tv_sec: duration.as_secs().min(i64::MAX as u64) as i64,
        tv_nsec: i64::from(duration.subsec_nanos()),
    }
}

/// Whether `fd` becomes readable (or hung up) within `timeout`.
fn wait_for(fd: BorrowedFd<'_>, timeout: Option<Duration>) -> io::Result<bool> {
    let mut fds = [PollFd::new(&fd, PollFlags::IN)];
    let timespec = timeout.map(timespec);
    loop {
        match rustix::event::poll(&mut fds, timespec.as_ref()) {
            Ok(0) => return Ok(false),
            Ok(_) => return Ok(true),
            Err(rustix::io::Errno::INTR) => continue,
            Err(error) => return Err(error.into()),
        }
    }
}

/// `path` opened as process `pid` (whose `/proc` directory is `dir`) would open it: an
/// absolute path from its root, a relative one from its working directory itself.
fn open_relative(dir: &OwnedFd, pid: u32, path: &Path) -> Option<(OwnedFd, PathBuf)> {
    if path.is_absolute() {
        open_as_in(dir, pid, path)
    } else {
        open_from(dir, pid, "cwd", path)
    }
}

/// A path as this process sees it (what `/proc/<pid>/cwd` and `fd/<n>` print) in the
/// view of a process whose root is `root` (this process's view of it): the same path
/// when that root is this one's, else the part under that root; `None` when the root is
/// not known or the path is outside it. Only for showing a program: files are always
/// looked up from the directory objects themselves ([`open_from`]).
fn caller_view(root: Option<&Path>, path: PathBuf) -> Option<PathBuf> {
    let root = root?;
    if root == Path::new("/") {
        return Some(path);
    }
    let rest = path.strip_prefix(root).ok()?;
    Some(Path::new("/").join(rest))
}

/// `O_PATH` of `base` (joined with `rest`), following links as `exec` would.
fn open_path(base: &Path, rest: Option<&Path>) -> Option<OwnedFd> {
    let path = match rest {
        Some(rest) => base.join(rest),
        None => base.to_path_buf(),
    };
    rustix::fs::open(&path, OFlags::PATH | OFlags::CLOEXEC, FileMode::empty()).ok()
}

/// The most symbolic links one lookup follows (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// `absolute` opened as process `pid` would open it: in its root (absolute links staying
/// inside it), `/proc/self` and `/proc/thread-self` meaning that process and not this
/// one, and the links of `/proc/<pid>/` that point at objects rather than paths
/// (`fd/<n>`, `exe`, `cwd`, `root`, `map_files/…`) opened as what they point at. The
/// links are followed here one by one, since the kernel would resolve `self` as this
/// process and refuses those object links under `RESOLVE_IN_ROOT`. Also returns where
/// the file was found, every link resolved.
#[cfg(test)]
fn open_as(pid: u32, absolute: &Path) -> Option<(OwnedFd, PathBuf)> {
    let dir = rustix::fs::open(
        format!("/proc/{pid}"),
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        FileMode::empty(),
    )
    .ok()?;
    open_as_in(&dir, pid, absolute)
}

/// [`open_as`] with the caller's `/proc/<pid>` directory already open as `dir`.
fn open_as_in(dir: &OwnedFd, pid: u32, absolute: &Path) -> Option<(OwnedFd, PathBuf)> {
    walk(dir, pid, None, absolute)
}

/// `relative` opened as process `pid` would open it from its directory `link` (`cwd`,
/// `fd/<n>` of its `/proc` directory `dir`): from that directory itself, never from the
/// path `/proc` prints for it, which can name another file by now (a mount over it, a
/// `chroot` that left it outside the root, a detached mount after `pivot_root`).
fn open_from(dir: &OwnedFd, pid: u32, link: &str, relative: &Path) -> Option<(OwnedFd, PathBuf)> {
    let base = rustix::fs::openat(
        dir,
        link,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        FileMode::empty(),
    )
    .ok()?;
    let shown = link_at(dir, link).unwrap_or_default();
    walk(dir, pid, Some((base, shown)), relative)
}

/// Whether two directory descriptors are the same directory on the same mount.
fn same_dir(a: &OwnedFd, b: &OwnedFd) -> bool {
    let of = |fd: &OwnedFd| {
        rustix::fs::statx(fd, "", AtFlags::EMPTY_PATH, StatxFlags::INO | StatxFlags::MNT_ID)
            .ok()
            .map(|stat| (stat.stx_dev_major, stat.stx_dev_minor, stat.stx_ino, stat.stx_mnt_id))
    };
    matches!((of(a), of(b)), (Some(a), Some(b)) if a == b)
}

/// The lookup of [`open_as_in`] and [`open_from`]: from the caller's root (`base` `None`)
/// or from one of its directories (and how this process prints it), one part at a time.
/// `..` stops at the caller's root as in the kernel; above any other directory it goes
/// up from the directory itself.
fn walk(dir: &OwnedFd, pid: u32, base: Option<(OwnedFd, PathBuf)>, path: &Path) -> Option<(OwnedFd, PathBuf)> {
    // Needed only for `/proc/self`: read when met.
    let mut tgid: Option<u32> = None;
    let root = rustix::fs::openat(
        dir,
        "root",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        FileMode::empty(),
    )
    .ok()?;
    let mut base = base;
    let mut pending: std::collections::VecDeque<OsString> = parts(path.as_os_str().as_bytes()).collect();
    let mut done: Vec<OsString> = Vec::new();
    let mut links = 0;
    // At the start and after each link: the rest in one lookup, when it can be.
    let mut fresh = true;
    while let Some(part) = pending.pop_front() {
        if std::mem::take(&mut fresh) {
            pending.push_front(part);
            let found = match &base {
                None => at_once(&root, &done, &pending),
                Some((fd, shown)) => at_once_from(fd, shown, &done, &pending),
            };
            if let Some(found) = found {
                return Some(found);
            }
            continue;
        }
        match part.as_bytes() {
            b"" | b"." => continue,
            b".." => {
                if done.pop().is_none()
                    && let Some((fd, shown)) = &base
                {
                    if same_dir(fd, &root) {
                        base = None;
                    } else {
                        let parent = rustix::fs::openat(
                            fd,
                            "..",
                            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                            FileMode::empty(),
                        )
                        .ok()?;
                        let mut shown = shown.clone();
                        shown.pop();
                        base = Some((parent, shown));
                    }
                }
                continue;
            }
            _ => {}
        }
        if base.is_none() && done.len() == 1 && done[0] == "proc" {
            match part.as_bytes() {
                b"self" => {
                    let tgid = match tgid {
                        Some(tgid) => tgid,
                        None => *tgid.insert(thread_group(pid)?),
                    };
                    done.push(tgid.to_string().into());
                    continue;
                }
                b"thread-self" => {
                    let tgid = match tgid {
                        Some(tgid) => tgid,
                        None => *tgid.insert(thread_group(pid)?),
                    };
                    done.extend([tgid.to_string().into(), "task".into(), pid.to_string().into()]);
                    continue;
                }
                _ => {}
            }
        }
        done.push(part);
        if base.is_none() && is_object_link(&done) {
            // Opened from here, the link leads to the same object as in the caller.
            let direct = PathBuf::from("/").join(done.iter().collect::<PathBuf>());
            if pending.is_empty() {
                let fd = open_path(&direct, None)?;
                let resolved = std::fs::read_link(&direct).unwrap_or(direct);
                return Some((fd, resolved));
            }
            // A directory (`cwd/…`, `root/…`, a directory descriptor): go on from the
            // directory itself.
            links += 1;
            if links > MAX_LINKS {
                return None;
            }
            let fd = rustix::fs::open(
                &direct,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                FileMode::empty(),
            )
            .ok()?;
            let shown = std::fs::read_link(&direct).unwrap_or_default();
            base = Some((fd, shown));
            done.clear();
            fresh = true;
            continue;
        }
        let target = match &base {
            None => {
                if let [only] = done.as_slice() {
                    // A name right under the root (`bin` of `/bin/rm` on a merged
                    // `/usr`): one component has no link on its way to follow, so the
                    // link itself is read in one call (`EINVAL`: it is there and is no
                    // link).
                    match rustix::fs::readlinkat(&root, only.as_os_str(), Vec::new()) {
                        Ok(target) => Some(target),
                        Err(rustix::io::Errno::INVAL) => None,
                        Err(_) => return None,
                    }
                } else {
                    link_of(&root, &done, ResolveFlags::IN_ROOT)?
                }
            }
            Some((fd, _)) => link_of(fd, &done, ResolveFlags::BENEATH)?,
        };
        if let Some(target) = target {
            links += 1;
            if links > MAX_LINKS {
                return None;
            }
            let target = target.as_bytes();
            done.pop();
            if target.first() == Some(&b'/') {
                done.clear();
                base = None;
            }
            for part in parts(target).rev() {
                pending.push_front(part);
            }
            fresh = true;
        }
    }
    let relative: PathBuf = if done.is_empty() {
        PathBuf::from(".")
    } else {
        done.iter().collect()
    };
    let (anchor, how, shown) = match &base {
        None => (&root, ResolveFlags::IN_ROOT, PathBuf::from("/")),
        Some((fd, shown)) => (fd, ResolveFlags::BENEATH, shown.clone()),
    };
    let fd = rustix::fs::openat2(
        anchor,
        &relative,
        OFlags::PATH | OFlags::CLOEXEC,
        FileMode::empty(),
        how,
    )
    .ok()?;
    Some((fd, shown.join(relative)))
}

/// The target of the link `done` names under `anchor` (`None`: it is no link; the outer
/// `None`: it cannot be looked at). `done` has no `..` and no link before its last part.
#[allow(clippy::option_option)]
fn link_of(anchor: &OwnedFd, done: &[OsString], how: ResolveFlags) -> Option<Option<std::ffi::CString>> {
    let relative: PathBuf = done.iter().collect();
    let fd = rustix::fs::openat2(
        anchor,
        &relative,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        FileMode::empty(),
        how,
    )
    .ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    if stat.st_mode & 0o170000 == 0o120000 {
        Some(Some(rustix::fs::readlinkat(&fd, "", Vec::new()).ok()?))
    } else {
        Some(None)
    }
}

/// The rest of [`open_as`]'s lookup in one system call, when the walk could only end the
/// same way: nothing left of it is `.` or `..`, it is not under `/proc` (where `self` and
/// the object links need the walk), and the kernel meets no link on the way
/// (`RESOLVE_NO_SYMLINKS`, so no link can lead into `/proc` either). Then the walk would
/// have pushed every part as it is and opened the same path in the caller's root.
fn at_once(
    root: &OwnedFd,
    done: &[OsString],
    pending: &std::collections::VecDeque<OsString>,
) -> Option<(OwnedFd, PathBuf)> {
    let first = done.first().or(pending.front())?;
    if first == "proc" || pending.iter().any(|part| part == "." || part == "..") {
        return None;
    }
    let relative: PathBuf = done.iter().chain(pending.iter()).collect();
    let fd = rustix::fs::openat2(
        root,
        &relative,
        OFlags::PATH | OFlags::CLOEXEC,
        FileMode::empty(),
        ResolveFlags::IN_ROOT | ResolveFlags::NO_SYMLINKS,
    )
    .ok()?;
    Some((fd, PathBuf::from("/").join(relative)))
}

/// [`at_once`] from a directory of the caller (`shown` is how this process prints it):
/// nothing left is `.` or `..` and no link is met, so the lookup stays beneath it.
fn at_once_from(
    base: &OwnedFd,
    shown: &Path,
    done: &[OsString],
    pending: &std::collections::VecDeque<OsString>,
) -> Option<(OwnedFd, PathBuf)> {
    if pending.iter().any(|part| part == "." || part == "..") {
        return None;
    }
    let relative: PathBuf = done.iter().chain(pending.iter()).collect();
    let relative = if relative.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        relative
    };
    let fd = rustix::fs::openat2(
        base,
        &relative,
        OFlags::PATH | OFlags::CLOEXEC,
        FileMode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
    )
    .ok()?;
    Some((fd, shown.join(relative)))
}

/// The components of a path, as owned strings.
fn parts(path: &[u8]) -> impl DoubleEndedIterator<Item = OsString> + '_ {
    path.split(|byte| *byte == b'/')
        .filter(|part| !part.is_empty())
        .map(|part| OsString::from_vec(part.to_vec()))
}

/// Whether `/` + `parts` is a link of `/proc/<pid>/` (or of one of its threads) that
/// points at an object: `exe`, `cwd`, `root`, `fd/<n>`, `map_files/<range>`.
fn is_object_link(parts: &[OsString]) -> bool {
    let numeric = |part: &OsString| !part.is_empty() && part.as_bytes().iter().all(u8::is_ascii_digit);
    let rest = match parts {
        [proc, pid, rest @ ..] if proc == "proc" && numeric(pid) => rest,
        _ => return false,
    };
    let rest = match rest {
        [task, tid, rest @ ..] if task == "task" && numeric(tid) => rest,
        rest => rest,
    };
    match rest {
        [name] => name == "exe" || name == "cwd" || name == "root",
        [dir, _] => dir == "fd" || dir == "map_files",
        _ => false,
    }
}

/// Where the link `name` of a `/proc/<pid>` directory points (`cwd`, `fd/3`).
fn link_at(dir: &OwnedFd, name: &str) -> Option<PathBuf> {
    let target = rustix::fs::readlinkat(dir, name, Vec::new()).ok()?;
    Some(PathBuf::from(OsString::from_vec(target.into_bytes())))
}

/// The process of thread `pid` whose `/proc` directory is `dir`: one read of its `stat`
/// for a single-threaded process (its own group, the common case on the hot path); its
/// `status` and its leader's `stat` only for a thread of a larger one.
fn caller_of(dir: &OwnedFd, pid: u32) -> Option<Caller> {
    let mut buffer = [0u8; 4096];
    let stat = read_proc_at(dir, "stat", &mut buffer)?;
    // The fields after the parenthesised name: state is field 3, ppid 4, threads 20,
    // start time 22.
    let ppid = proc_field(stat, 1)?;
    let threads: u32 = proc_field(stat, 17)?;
    let start = proc_field(stat, 19)?;
    if threads <= 1 {
        return Some(Caller { tgid: pid, ppid, start });
    }
    let mut buffer = [0u8; 4096];
    let status = std::str::from_utf8(read_proc_at(dir, "status", &mut buffer)?).ok()?;
    let tgid: u32 = status
        .lines()
        .find_map(|line| line.strip_prefix("Tgid:"))
        .and_then(|value| value.trim().parse().ok())?;
    if tgid == pid {
        return Some(Caller { tgid, ppid, start });
    }
    let mut buffer = [0u8; 4096];
    let leader = read_proc(&format!("/proc/{tgid}/stat"), &mut buffer)?;
    let start = proc_field(leader, 19)?;
    Some(Caller { tgid, ppid, start })
}

/// [`read_proc`] of the file `name` of a `/proc/<pid>` directory.
fn read_proc_at<'a>(dir: &OwnedFd, name: &str, buffer: &'a mut [u8]) -> Option<&'a [u8]> {
    let fd = rustix::fs::openat(dir, name, OFlags::RDONLY | OFlags::CLOEXEC, FileMode::empty()).ok()?;
    let read = rustix::io::read(&fd, &mut *buffer).ok()?;
    (read < buffer.len()).then_some(&buffer[..read])
}

/// The thread group (process) of thread `pid`: its `stat` alone for a single-threaded
/// process (its own group, the common case on the hot path), `status` otherwise.
fn thread_group(pid: u32) -> Option<u32> {
    let mut buffer = [0u8; 4096];
    let stat = read_proc(&format!("/proc/{pid}/stat"), &mut buffer)?;
    // Field 20 (the thread count) is the 18th after the parenthesised name.
    let threads: u32 = proc_field(stat, 17)?;
    if threads <= 1 {
        return Some(pid);
    }
    let mut buffer = [0u8; 4096];
    let status = read_proc(&format!("/proc/{pid}/status"), &mut buffer)?;
    std::str::from_utf8(status)
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("Tgid:"))
        .and_then(|value| value.trim().parse().ok())
}

/// A small `/proc` file, read whole into `buffer`; `None` if it cannot be read or does
/// not fit. A `/proc` file made at once (`stat`, `status`) comes whole in the first
/// `read` when the buffer is larger than it, so a first read that leaves room ends it:
/// one system call instead of the growing reads and the `statx` of `read_to_string`.
pub fn read_proc<'a>(path: &str, buffer: &'a mut [u8]) -> Option<&'a [u8]> {
    let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::CLOEXEC, FileMode::empty()).ok()?;
    let read = rustix::io::read(&fd, &mut *buffer).ok()?;
    // A full buffer may hold only the start of the file.
    (read < buffer.len()).then_some(&buffer[..read])
}

/// Field `index` (from 0) after the parenthesised name of a `/proc/PID/stat` line (the
/// name may hold spaces and parentheses: the last `)` ends it).
pub fn proc_field<T: std::str::FromStr>(stat: &[u8], index: usize) -> Option<T> {
    let end = stat.iter().rposition(|b| *b == b')')?;
    let rest = std::str::from_utf8(&stat[end + 1..]).ok()?;
    rest.split_ascii_whitespace().nth(index)?.parse().ok()
}

fn file_id(fd: &OwnedFd) -> Option<FileId> {
    let stat = rustix::fs::fstat(fd).ok()?;
    Some(FileId {
        dev: stat.st_dev,
        ino: stat.st_ino,
        mode: stat.st_mode,
        changed: (stat.st_ctime, stat.st_ctime_nsec as i64),
        size: stat.st_size as u64,
    })
}

/// A regular file's `#!` line: the interpreter and its one optional argument, as the
/// kernel splits it (`file` is what `fd` is).
fn shebang(fd: &OwnedFd, file: &FileId) -> Result<Head, HeadUnreadable> {
    if file.mode & 0o170000 != 0o100000 {
        return Ok(Head {
            interpreter: None,
            static_elf: false,
            native: true,
        });
    }
    // The kernel reads a script's first line with execute permission alone (`chmod
    // 111`); a file this process cannot read is not known to be no script.
    let mut file = std::fs::File::open(format!("/proc/self/fd/{}", fd.as_raw_fd())).map_err(|_| HeadUnreadable)?;
    // Enough for an ELF header and its program headers; the kernel reads a `#!` line
    // from the first 256 bytes only (`BINPRM_BUF_SIZE`).
    let mut head = [0u8; 1024];
    let mut read = 0;
    while read < head.len() {
        match file.read(&mut head[read..]) {
            Ok(0) => break,
            Ok(n) => read += n,
            Err(_) => return Err(HeadUnreadable),
        }
    }
    let head = &head[..read];
    let interpreter = interpreter_line(&head[..head.len().min(256)]);
    let native = interpreter.is_some() || head.starts_with(b"\x7fELF");
    Ok(Head {
        interpreter,
        static_elf: static_elf(head),
        native,
    })
}

/// Whether `head` starts a 64-bit `ET_DYN` ELF file whose program headers (all within
/// `head`) name no `PT_INTERP`: the dynamic loader (under any name) or a static-pie
/// program.
fn static_elf(head: &[u8]) -> bool {
    let u16_at = |at: usize| head.get(at..at + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |at: usize| {
        head.get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let u64_at = |at: usize| {
        head.get(at..at + 8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_le_bytes)
    };
    // `\x7fELF`, 64-bit, little-endian, ET_DYN.
    if head.get(..6) != Some(b"\x7fELF\x02\x01") || u16_at(16) != Some(3) {
        return false;
    }
    let (Some(offset), Some(size), Some(count)) = (u64_at(32), u16_at(54), u16_at(56)) else {
        return false;
    };
    let (offset, size) = (usize::try_from(offset).unwrap_or(usize::MAX), usize::from(size));
    if size < 4 || count == 0 {
        return false;
    }
    (0..usize::from(count)).all(|index| {
        let at = offset.saturating_add(index.saturating_mul(size));
        // A header beyond what was read: not known to be static.
        u32_at(at).is_some_and(|kind| kind != 3)
    })
}

/// A file whose first bytes could not be read.
#[derive(Debug)]
struct HeadUnreadable;

/// The interpreter and its one argument of a file that starts with `head`, as the
/// kernel's `load_script` reads them; `None` when it is no script.
fn interpreter_line(head: &[u8]) -> Option<Vec<OsString>> {
    let line = head.strip_prefix(b"#!")?;
    let line = &line[..line.iter().position(|b| *b == b'\n').unwrap_or(line.len())];
    // The kernel's `load_script` ends the line at a NUL too: what follows is never read.
    let line = &line[..line.iter().position(|b| *b == 0).unwrap_or(line.len())];
    let trimmed: &[u8] = {
        let start = line.iter().position(|b| *b != b' ' && *b != b'\t')?;
        let end = line.iter().rposition(|b| *b != b' ' && *b != b'\t')? + 1;
        &line[start..end]
    };
    // The kernel passes everything after the interpreter as one argument.
    let mut words = Vec::new();
    match trimmed.iter().position(|b| *b == b' ' || *b == b'\t') {
        Some(at) => {
            words.push(OsString::from_vec(trimmed[..at].to_vec()));
            let rest = &trimmed[at..];
            let start = rest
                .iter()
                .position(|b| *b != b' ' && *b != b'\t')
                .unwrap_or(rest.len());
            if start < rest.len() {
                words.push(OsString::from_vec(rest[start..].to_vec()));
            }
        }
        None => words.push(OsString::from_vec(trimmed.to_vec())),
    }
    Some(words)
}

/// A caller's memory, read through `/proc/PID/mem` with a small page cache (argv and the
/// environment are usually on a few pages: a few reads instead of one per string).
struct Memory {
    file: OwnedFd,
    pages: Vec<(u64, Vec<u8>)>,
    total: usize,
}

impl Memory {
    /// The memory of the process whose `/proc/<pid>` directory is `dir`.
    fn open(dir: &OwnedFd) -> io::Result<Memory> {
        Ok(Memory {
            file: rustix::fs::openat(dir, "mem", OFlags::RDONLY | OFlags::CLOEXEC, FileMode::empty())?,
            pages: Vec::new(),
            total: 0,
        })
    }

    fn fault() -> io::Error {
        io::Error::from_raw_os_error(libc::EFAULT)
    }

    fn too_big() -> io::Error {
        io::Error::from_raw_os_error(libc::E2BIG)
    }

    /// The cached page at `base` (page-aligned), read on first use.
    fn page(&mut self, base: u64) -> io::Result<&[u8]> {
        let index = match self.pages.iter().position(|(at, _)| *at == base) {
            Some(index) => index,
            None => {
                let mut data = vec![0u8; PAGE as usize];
                let read = rustix::io::pread(&self.file, &mut data[..], base)?;
                if read == 0 {
                    return Err(Self::fault());
                }
                data.truncate(read);
                self.pages.push((base, data));
                self.pages.len() - 1
            }
        };
        Ok(&self.pages[index].1)
    }

    /// The bytes from `at` to the end of its page.
    fn chunk(&mut self, at: u64) -> io::Result<&[u8]> {
        let base = at - at % PAGE;
        let offset = (at - base) as usize;
        let page = self.page(base)?;
        page.get(offset..)
            .filter(|rest| !rest.is_empty())
            .ok_or_else(Self::fault)
    }

    /// The NUL-terminated string at `at`.
    fn string(&mut self, mut at: u64) -> io::Result<Vec<u8>> {
        if at == 0 {
            return Err(Self::fault());
        }
        let mut out = Vec::new();
        loop {
            let chunk = self.chunk(at)?;
            let len = chunk.len();
            // `CStr` finds the NUL with `memchr`: a whole environment is scanned per exec.
            if let Ok(string) = std::ffi::CStr::from_bytes_until_nul(chunk) {
                out.extend_from_slice(string.to_bytes());
                self.total += out.len() + 1;
                if self.total > MAX_TOTAL {
                    return Err(Self::too_big());
                }
                return Ok(out);
            }
            out.extend_from_slice(chunk);
            if out.len() > MAX_STRING {
                return Err(Self::too_big());
            }
            at = at.checked_add(len as u64).ok_or_else(Self::fault)?;
        }
    }

    /// The pointer-sized word at `at` (it may straddle two pages).
    fn word(&mut self, at: u64) -> io::Result<u64> {
        let mut word = [0u8; 8];
        let mut filled = 0;
        while filled < word.len() {
            let address = at.checked_add(filled as u64).ok_or_else(Self::fault)?;
            let chunk = self.chunk(address)?;
            let take = chunk.len().min(word.len() - filled);
            word[filled..filled + take].copy_from_slice(&chunk[..take]);
            filled += take;
        }
        Ok(u64::from_ne_bytes(word))
    }

    /// A NULL-terminated array of string pointers (argv, envp); NULL itself is empty.
    fn strings(&mut self, mut at: u64) -> io::Result<Vec<OsString>> {
        let mut out = Vec::new();
        if at == 0 {
            return Ok(out);
        }
        loop {
            let pointer = self.word(at)?;
            if pointer == 0 {
                return Ok(out);
            }
            if out.len() >= MAX_STRINGS {
                return Err(Self::too_big());
            }
            out.push(OsString::from_vec(self.string(pointer)?));
            at = at.checked_add(8).ok_or_else(Self::fault)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_links_of_proc_are_known() {
        let parts = |path: &str| -> Vec<OsString> { parts(path.as_bytes()).collect() };
        for link in [
            "/proc/1/exe",
            "/proc/12/cwd",
            "/proc/3/root",
            "/proc/4/fd/7",
            "/proc/4/task/5/fd/0",
        ] {
            assert!(is_object_link(&parts(link)), "{link}");
        }
        for path in [
            "/proc/self/fd/3",
            "/proc/1/status",
            "/proc/1/fd",
            "/usr/bin/rm",
            "/x/1/exe",
        ] {
            assert!(!is_object_link(&parts(path)), "{path}");
        }
    }

    #[test]
    fn a_path_is_resolved_as_the_process_sees_it() {
        // This process stands in for the caller: its descriptors, its `/proc/self`.
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = std::fs::canonicalize(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let target = dir.join("program");
        std::fs::write(&target, "#!/bin/sh\n").unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink(&target, dir.join("link")).unwrap_or_else(|e| panic!("{e}"));
        std::os::unix::fs::symlink("sub/../program", dir.join("relative")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir(dir.join("sub")).unwrap_or_else(|e| panic!("{e}"));
        let file = std::fs::File::open(&target).unwrap_or_else(|e| panic!("{e}"));
        let fd = file.as_raw_fd();
        let me = std::process::id();
        for spelled in [
            target.clone(),
            dir.join("link"),
            dir.join("relative"),
            dir.join("sub/../link"),
            PathBuf::from(format!("/dev/fd/{fd}")),
            PathBuf::from(format!("/proc/self/fd/{fd}")),
            PathBuf::from(format!("/proc/thread-self/fd/{fd}")),
            PathBuf::from(format!("/proc/self/root{}", target.display())),
        ] {
            let (opened, resolved) = open_as(me, &spelled).unwrap_or_else(|| panic!("{}", spelled.display()));
            assert_eq!(resolved, target, "{}", spelled.display());
            assert_eq!(
                file_id(&opened).map(|id| (id.dev, id.ino)),
                FileId::of(&target).map(|id| (id.dev, id.ino)),
                "{}",
                spelled.display()
            );
            let file = file_id(&opened).unwrap_or_else(|| panic!("{}", spelled.display()));
            assert_eq!(
                shebang(&opened, &file).ok().and_then(|head| head.interpreter),
                Some(vec![OsString::from("/bin/sh")])
            );
        }
    }
}
