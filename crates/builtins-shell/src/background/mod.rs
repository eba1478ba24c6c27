//! Background processes: `bash` with `background: true` (spec §7.2, OpenCode's L2 shell)
//! starts a command line exactly as a foreground one starts (same analysis, same asks,
//! same launcher and exec guard: [`crate::exec::start`]) and returns at once; the
//! `shell_*` tools list, read, write to and end what it started.
//!
//! Every process belongs to the session that started it: another session neither sees
//! nor touches it. Its output is kept as a ring of [`ShellLimits::ring_bytes`] (the bytes
//! it drops are counted) and written to a log file under the data directory (up to
//! [`ShellLimits::log_bytes`]). Ending a process ends its whole tree: its process group,
//! every descendant that left the group (`setsid`), and every process it was seen to
//! have that still runs, and every member of the cgroup it gets where the system allows
//! one (`cgroup.rs`), TERM first and KILL after 3 s. A front end ends a session's
//! processes when the session ends ([`Shells::end_session`]) and all of them when it
//! stops ([`Shells::end_all`]).

mod cgroup;
mod io;
#[cfg(target_os = "linux")]
mod slot;
pub(crate) mod tools;
mod tree;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::process::Signal;
use serde::Serialize;
use serde_json::json;
use tokio::sync::{mpsc, watch};
use toolgate_core::{Context, ToolFailure};

pub(crate) use io::Size;
pub(crate) use tree::SHELL_ID_ENV;

use crate::exec::{self, KILL_GRACE, PIPE_GRACE, Started, Streams};

/// Live background processes a session may have at once, by default.
pub const DEFAULT_MAX_PER_SESSION: usize = 16;
/// Live background processes of all sessions at once, by default.
pub const DEFAULT_MAX_TOTAL: usize = 64;
/// Output kept in memory per process, by default (1 MiB).
pub const DEFAULT_RING_BYTES: usize = 1 << 20;
/// Output written to a process's log file at most, by default (64 MiB).
pub const DEFAULT_LOG_BYTES: u64 = 64 << 20;

/// At most one `shell.output` event per process in this time.
const OUTPUT_EVENT_EVERY: Duration = Duration::from_millis(250);
/// How often the trees of the live processes are looked at in `/proc`.
const TRACK_EVERY: Duration = Duration::from_secs(1);
/// Ended processes a session keeps in its list (the oldest go first).
const MAX_ENDED_PER_SESSION: usize = 32;

/// The limits of background processes (README "Background processes").
///
/// Start from [`ShellLimits::default`] and change what you need; more may be added
/// (`#[non_exhaustive]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShellLimits {
    /// Live processes per session ([`DEFAULT_MAX_PER_SESSION`]).
    pub per_session: usize,
    /// Live processes of all sessions ([`DEFAULT_MAX_TOTAL`]).
    pub total: usize,
    /// Output kept in memory per process ([`DEFAULT_RING_BYTES`]).
    pub ring_bytes: usize,
    /// Output written to each log file at most ([`DEFAULT_LOG_BYTES`]).
    pub log_bytes: u64,
}

impl Default for ShellLimits {
    fn default() -> Self {
        ShellLimits {
            per_session: DEFAULT_MAX_PER_SESSION,
            total: DEFAULT_MAX_TOTAL,
            ring_bytes: DEFAULT_RING_BYTES,
            log_bytes: DEFAULT_LOG_BYTES,
        }
    }
}

impl ShellLimits {
    /// At most `n` live processes per session.
    pub fn with_per_session(mut self, n: usize) -> Self {
        self.per_session = n;
        self
    }

    /// At most `n` live processes in all.
    pub fn with_total(mut self, n: usize) -> Self {
        self.total = n;
        self
    }

    /// Keeps the last `bytes` of each process's output in memory.
    pub fn with_ring_bytes(mut self, bytes: usize) -> Self {
        self.ring_bytes = bytes.max(1);
        self
    }

    /// Writes at most `bytes` of each process's output to its log file.
    pub fn with_log_bytes(mut self, bytes: u64) -> Self {
        self.log_bytes = bytes;
        self
    }
}

/// One event of a background process, for a front end to pass on: `shell.started`,
/// `shell.output` (at most one per process every 250 ms) or `shell.exited`, with its
/// properties (`sessionID`, `id`, …).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ShellEvent {
    /// `shell.started`, `shell.output` or `shell.exited`.
    pub kind: &'static str,
    /// The event's properties as JSON.
    pub properties: serde_json::Value,
}

type EventSink = Arc<dyn Fn(ShellEvent) + Send + Sync>;

/// The background processes of every session, shared by `bash` and the `shell_*` tools
/// of one front end. Cloning shares them.
#[derive(Clone)]
pub struct Shells {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Shells {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shells")
            .field("dir", &self.inner.dir)
            .field("limits", &self.inner.limits)
            .finish_non_exhaustive()
    }
}

struct Inner {
    /// Where the log files go.
    dir: PathBuf,
    limits: ShellLimits,
    table: Mutex<Table>,
    sink: Mutex<Option<EventSink>>,
    /// Whether the tracker task runs.
    tracking: AtomicBool,
    /// When old log files were last removed (seconds since the epoch; 0: never).
    swept: std::sync::atomic::AtomicU64,
    /// The next start, made ahead (`slot.rs`).
    #[cfg(target_os = "linux")]
    slot: Mutex<Option<slot::Slot>>,
}

#[derive(Default)]
struct Table {
    procs: BTreeMap<String, Arc<Proc>>,
    /// Live (or starting) processes in all, and per session.
    live: usize,
    live_by_session: HashMap<String, usize>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The last handle is gone (the front end stopped without ending them): nothing
        // may outlive it.
        let table = self.table.get_mut().unwrap_or_else(PoisonError::into_inner);
        for proc in table.procs.values() {
            if proc.running() {
                tree::signal_tree(
                    proc.pid,
                    proc.pid,
                    &proc.id,
                    &proc.known,
                    proc.group.as_deref(),
                    Signal::KILL,
                );
            }
        }
    }
}

/// What a front end is told about one process (`shell_list`, `toolgate shells`).
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[non_exhaustive]
pub struct ShellInfo {
    /// Its id.
    pub id: String,
    /// The session it belongs to.
    #[serde(rename = "sessionID")]
    pub session: String,
    /// The command line.
    pub command: String,
    /// The shell's process id.
    pub pid: u32,
    /// `running` or `exited`.
    pub state: &'static str,
    /// The exit code (128 + signal when a signal ended it), once it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
    /// When it started, in milliseconds since the Unix epoch.
    pub started: u64,
    /// Bytes of output it wrote.
    pub bytes: u64,
    /// Bytes of output no longer kept in memory (the log file has them, up to its limit).
    pub dropped: u64,
    /// Whether it runs on a pseudo-terminal.
    pub tty: bool,
    /// Its log file.
    pub output: PathBuf,
}

/// What a person read of one process's output ([`Shells::peek`]).
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[non_exhaustive]
pub struct ShellOutput {
    /// The process's id.
    pub id: String,
    /// The output read, at most 32 KiB shown (its first and last 16 KiB, with a line
    /// saying how much was left out).
    pub text: String,
    /// The byte offset it starts at.
    pub from: u64,
    /// The offset to read from next.
    pub next: u64,
    /// Bytes between the asked offset and `from` no longer kept in memory.
    pub dropped: u64,
    /// Bytes read but left out of `text`.
    pub left_out: u64,
    /// Whether it still runs.
    pub running: bool,
    /// Its exit code, once it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
}

/// What ended a process, when something did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    /// It ended by itself.
    Exited,
    /// Its timeout.
    Timeout,
    /// `shell_kill`, the end of its session or of the front end.
    Killed,
}

struct Out {
    ring: VecDeque<u8>,
    total: u64,
    /// Where the previous `shell_output` stopped.
    cursor: u64,
    running: bool,
    exit: Option<i32>,
    ending: Ending,
    /// What exec-time enforcement and the launcher said at the end.
    notes: Vec<String>,
}

/// Asks for the runner of a process.
enum Control {
    /// TERM the whole tree now, KILL after [`KILL_GRACE`].
    Terminate,
    /// Send this signal to the process group.
    Signal(Signal),
}

/// One background process.
pub(crate) struct Proc {
    pub(crate) id: String,
    pub(crate) session: String,
    pub(crate) command: String,
    pub(crate) workdir: PathBuf,
    pub(crate) pid: u32,
    pub(crate) started: u64,
    pub(crate) tty: bool,
    pub(crate) log: PathBuf,
    /// Whether its program is a shell: input written to it is a command line.
    pub(crate) shell_program: bool,
    /// Whether earlier input may have left the shell in a state the analysis of a new
    /// line cannot see (a function, an alias, an unfinished line): every later line is
    /// then also asked for as it is.
    pub(crate) stateful: AtomicBool,
    /// What its exec guard lets start as predicted: a line written to the shell and
    /// approved adds its parts, so its programs are not asked about a second time.
    predicted: Option<exec::Predicted>,
    writer: io::Writer,
    out: Mutex<Out>,
    /// Bumped whenever output arrives or the process ends.
    changed: watch::Sender<u64>,
    control: mpsc::UnboundedSender<Control>,
    /// Every process its tree was seen to have: `pid → start time`.
    known: Mutex<HashMap<u32, u64>>,
    /// Its cgroup, where the system lets toolgate make one: every process it ever
    /// started, whatever it did to its environment, PID or session.
    group: Option<Arc<cgroup::Group>>,
    ring_bytes: usize,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or_default()
}

/// How the start of a background process is asked for (by `bash`).
pub(crate) struct Start<'a> {
    pub(crate) ctx: &'a Context,
    pub(crate) spawn: exec::Spawn<'a>,
    pub(crate) guard: Option<exec::Guard>,
    pub(crate) tty: Option<Size>,
    pub(crate) timeout: Option<Duration>,
    /// What the launcher runs once the command ended.
    pub(crate) after: Option<Box<dyn FnOnce() -> Vec<String> + Send>>,
}

/// What a read of a process's output returned.
pub(crate) struct Read {
    pub(crate) text: String,
    /// The offset read from (after what the ring dropped).
    pub(crate) from: u64,
    /// The offset to read from next.
    pub(crate) next: u64,
    /// Bytes between the asked offset and `from` that the ring no longer had.
    pub(crate) dropped: u64,
    /// Bytes read but left out of `text` (its middle; the log file has them).
    pub(crate) left_out: u64,
    pub(crate) running: bool,
    pub(crate) exit: Option<i32>,
}

/// The most output one read shows: its first and last halves when there is more.
pub(crate) const MAX_READ: usize = 32 * 1024;

impl Shells {
    /// Background processes whose log files go to `dir` (the `toolgate` binary uses
    /// `<data>/shell`), with default limits.
    pub fn new(dir: impl Into<PathBuf>) -> Shells {
        Shells::with_limits(dir, ShellLimits::default())
    }

    /// [`Shells::new`] with `limits`.
    pub fn with_limits(dir: impl Into<PathBuf>, limits: ShellLimits) -> Shells {
        Shells {
            inner: Arc::new(Inner {
                dir: dir.into(),
                limits,
                table: Mutex::new(Table::default()),
                sink: Mutex::new(None),
                tracking: AtomicBool::new(false),
                swept: std::sync::atomic::AtomicU64::new(0),
                #[cfg(target_os = "linux")]
                slot: Mutex::new(None),
            }),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> ShellLimits {
        self.inner.limits
    }

    /// Passes every event to `sink` from now on (a front end's event stream).
    pub fn set_events(&self, sink: impl Fn(ShellEvent) + Send + Sync + 'static) {
        *lock(&self.inner.sink) = Some(Arc::new(sink));
    }

    /// The processes of `session` (every session's with `None`), oldest first.
    pub fn list(&self, session: Option<&str>) -> Vec<ShellInfo> {
        let table = lock(&self.inner.table);
        table
            .procs
            .values()
            .filter(|proc| session.is_none_or(|session| proc.session == session))
            .map(|proc| proc.info())
            .collect()
    }

    /// What a person reads of process `id` (any session's: `toolgate shells`, the page):
    /// the output from byte `since` (default: everything still kept), bounded as
    /// `shell_output` bounds it, without moving the model's read cursor.
    pub fn peek(&self, id: &str, since: Option<u64>) -> Option<ShellOutput> {
        let proc = lock(&self.inner.table).procs.get(id).cloned()?;
        let read = proc.read_from(Some(since.unwrap_or(0)), false);
        Some(ShellOutput {
            id: proc.id.clone(),
            text: read.text,
            from: read.from,
            next: read.next,
            dropped: read.dropped,
            left_out: read.left_out,
            running: read.running,
            exit: read.exit,
        })
    }

    /// Ends process `id` of any session (a person's **Kill**): its whole tree, TERM then
    /// KILL after 3 s. `None`: no such process; `Some(false)`: it had ended already.
    pub fn kill(&self, id: &str) -> Option<bool> {
        let proc = lock(&self.inner.table).procs.get(id).cloned()?;
        let running = proc.running();
        if running {
            proc.terminate();
        }
        Some(running)
    }

    /// Waits until no process runs (a `--detach`ed `toolgate call` holds its processes
    /// until then).
    pub async fn wait_idle(&self) {
        loop {
            let running: Vec<Arc<Proc>> = lock(&self.inner.table)
                .procs
                .values()
                .filter(|proc| proc.running())
                .cloned()
                .collect();
            let Some(first) = running.first() else { return };
            first.wait_end(Duration::from_secs(3600)).await;
        }
    }

    /// Ends every process of `session` (its whole tree, TERM then KILL after 3 s) and
    /// forgets them; returns how many were running.
    pub async fn end_session(&self, session: &str) -> usize {
        self.end(Some(session)).await
    }

    /// Ends every process of every session; returns how many were running.
    pub async fn end_all(&self) -> usize {
        self.end(None).await
    }

    async fn end(&self, session: Option<&str>) -> usize {
        let procs: Vec<Arc<Proc>> = {
            let table = lock(&self.inner.table);
            table
                .procs
                .values()
                .filter(|proc| session.is_none_or(|session| proc.session == session))
                .cloned()
                .collect()
        };
        let running: Vec<&Arc<Proc>> = procs.iter().filter(|proc| proc.running()).collect();
        for proc in &running {
            let _ = proc.control.send(Control::Terminate);
        }
        for proc in &running {
            proc.wait_end(KILL_GRACE + Duration::from_secs(5)).await;
        }
        let mut table = lock(&self.inner.table);
        table
            .procs
            .retain(|_, proc| session.is_some_and(|session| proc.session != session) || proc.running());
        running.len()
    }

    /// The process `id` if it belongs to the session of `ctx`: another session's is
    /// reported as missing, exactly as one that never was.
    pub(crate) fn get(&self, ctx: &Context, id: &str) -> Result<Arc<Proc>, ToolFailure> {
        let table = lock(&self.inner.table);
        table
            .procs
            .get(id)
            .filter(|proc| proc.session == ctx.session_id)
            .cloned()
            .ok_or_else(|| {
                ToolFailure::new(format!(
                    "No background process {id} in this session (shell_list lists them)."
                ))
            })
    }

    fn emit(&self, kind: &'static str, properties: serde_json::Value) {
        emit(&self.inner, kind, properties);
    }

    /// Starts one background process (its permissions were asserted by the caller).
    pub(crate) async fn start(&self, start: Start<'_>) -> Result<Arc<Proc>, ToolFailure> {
        let Start {
            ctx,
            spawn,
            guard,
            tty,
            timeout,
            after,
        } = start;
        let limits = self.inner.limits;
        {
            let mut table = lock(&self.inner.table);
            let mine = table.live_by_session.get(&ctx.session_id).copied().unwrap_or(0);
            if mine >= limits.per_session {
                return Err(ToolFailure::new(format!(
                    "Too many background processes: this session has {mine} running, the limit \
                     (shells.max_per_session). End one with shell_kill first."
                )));
            }
            if table.live >= limits.total {
                return Err(ToolFailure::new(format!(
                    "Too many background processes: {} are running in all, the limit (shells.max_total). \
                     End one with shell_kill first.",
                    table.live
                )));
            }
            table.live += 1;
            *table.live_by_session.entry(ctx.session_id.clone()).or_insert(0) += 1;
        }
        match self.spawn(ctx, spawn, guard, tty, timeout, after).await {
            Ok(proc) => Ok(proc),
            Err(error) => {
                release(&self.inner, &ctx.session_id);
                Err(error)
            }
        }
    }

    async fn spawn(
        &self,
        ctx: &Context,
        spawn: exec::Spawn<'_>,
        guard: Option<exec::Guard>,
        tty: Option<Size>,
        timeout: Option<Duration>,
        after: Option<Box<dyn FnOnce() -> Vec<String> + Send>>,
    ) -> Result<Arc<Proc>, ToolFailure> {
        let failed =
            |error: std::io::Error| ToolFailure::new(format!("Unable to execute command: {}: {error}", spawn.command));
        #[cfg(target_os = "linux")]
        let slot = self.take_slot(&spawn, guard.is_some(), tty.is_some());
        #[cfg(target_os = "linux")]
        let id = slot
            .as_ref()
            .map_or_else(|| toolgate_core::ascending_id("shell"), |slot| slot.id.clone());
        #[cfg(not(target_os = "linux"))]
        let id = toolgate_core::ascending_id("shell");
        // The user's alone: a command's output holds what it printed, secrets included.
        {
            use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
            let _ = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.inner.dir);
            let _ = std::fs::set_permissions(&self.inner.dir, std::fs::Permissions::from_mode(0o700));
        }
        std::fs::create_dir_all(&self.inner.dir).map_err(|error| {
            ToolFailure::new(format!(
                "Unable to create the output directory {}: {error}",
                self.inner.dir.display()
            ))
        })?;
        self.sweep();
        let log = self.inner.dir.join(format!("{id}.log"));
        let file = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&log)
                .map_err(failed)?
        };
        let predicted = guard.as_ref().and_then(exec::Guard::predictions);
        let guarded = guard.is_some();
        #[cfg(not(target_os = "linux"))]
        let slot: Option<std::convert::Infallible> = None;
        let (reader, writer, group, started) = match slot {
            #[cfg(target_os = "linux")]
            Some(slot) => self.start_in_slot(slot, spawn, guard).await.map_err(failed)?,
            #[cfg(not(target_os = "linux"))]
            Some(never) => match never {},
            None => {
                let (reader, writer, theirs) = io::open(tty).map_err(failed)?;
                let group = cgroup::Group::create(&id).map(Arc::new);
                let started = exec::start(
                    exec::Spawn {
                        shell_id: Some(&id),
                        cgroup: group.as_deref().map(cgroup::Group::dir),
                        ..spawn
                    },
                    guard,
                    Streams {
                        output: theirs,
                        input: true,
                        stdin: None,
                        errors: None,
                        same_group: false,
                    },
                )
                .await
                .map_err(failed)?;
                (reader, writer, group, started)
            }
        };
        let pid = started.child.id().unwrap_or_default();
        // A trampoline joined the group before the command ran (a second move would cost
        // the kernel another grace period); a shell started directly joins now (what it
        // forked meanwhile is still found in its tree).
        if let Some(group) = group.as_deref().filter(|_| spawn.prefix.is_empty()) {
            let _ = group.add(pid);
        }
        if tty.is_none() {
            self.prepare(spawn.prefix, guarded);
        }
        let (control, requests) = mpsc::unbounded_channel();
        let (changed, _) = watch::channel(0);
        let proc = Arc::new(Proc {
            id: id.clone(),
            session: ctx.session_id.clone(),
            command: spawn.command.to_string(),
            workdir: spawn.workdir.to_path_buf(),
            pid,
            started: now_ms(),
            tty: tty.is_some(),
            log: log.clone(),
            shell_program: is_shell_program(spawn.command),
            stateful: AtomicBool::new(false),
            predicted,
            writer,
            out: Mutex::new(Out {
                ring: VecDeque::new(),
                total: 0,
                cursor: 0,
                running: true,
                exit: None,
                ending: Ending::Exited,
                notes: Vec::new(),
            }),
            changed,
            control,
            known: Mutex::new(HashMap::new()),
            group,
            ring_bytes: self.inner.limits.ring_bytes,
        });
        lock(&self.inner.table).procs.insert(id.clone(), Arc::clone(&proc));
        self.emit(
            "shell.started",
            json!({"sessionID": proc.session, "id": id, "command": proc.command, "pid": pid, "tty": proc.tty, "output": log}),
        );
        tokio::spawn(run(
            Arc::clone(&proc),
            started,
            Runner {
                inner: Arc::downgrade(&self.inner),
                reader,
                requests,
                log: file,
                log_limit: self.inner.limits.log_bytes,
                timeout,
                after,
            },
        ));
        self.track();
        Ok(proc)
    }

    /// The slot made ahead, when it fits a start of `spawn` (see `slot.rs`); one that no
    /// longer fits is dropped (its trampoline exits unused).
    #[cfg(target_os = "linux")]
    fn take_slot(&self, spawn: &exec::Spawn<'_>, guarded: bool, tty: bool) -> Option<slot::Slot> {
        if tty {
            // Kept for the next start without a terminal.
            return None;
        }
        let mut slot = lock(&self.inner.slot).take()?;
        slot.early.fits(spawn.prefix, guarded).then_some(slot)
    }

    /// Starts `spawn` in the waiting trampoline of `slot`, whose stdin its message goes
    /// over.
    #[cfg(target_os = "linux")]
    async fn start_in_slot(
        &self,
        slot: slot::Slot,
        spawn: exec::Spawn<'_>,
        guard: Option<exec::Guard>,
    ) -> std::io::Result<(io::Reader, io::Writer, Option<Arc<cgroup::Group>>, Started)> {
        let slot::Slot {
            id,
            group,
            reader,
            writer,
            early,
        } = slot;
        let message = early
            .message(&exec::Spawn {
                shell_id: Some(&id),
                ..spawn
            })
            .encode();
        let started = early.finish(&message, guard).await?;
        Ok((reader, writer, Some(group), started))
    }

    /// Makes the next start's slot ahead, off this call, when there is none for `prefix`
    /// (a trampoline's command line) with the exec guard on or off alike: called after
    /// each background start, so every one but a server's first starts without a cgroup
    /// move.
    fn prepare(&self, prefix: &[OsString], guarded: bool) {
        #[cfg(target_os = "linux")]
        {
            if slot::trampoline(prefix).is_none() {
                return;
            }
            {
                let mut current = lock(&self.inner.slot);
                if current.as_mut().is_some_and(|slot| slot.early.fits(prefix, guarded)) {
                    return;
                }
                // Dropped now: its trampoline reads the end of its input and exits.
                *current = None;
            }
            let prefix = prefix.to_vec();
            let inner = Arc::downgrade(&self.inner);
            // Blocking work (a cgroup directory, a spawn), and the new trampoline's own
            // move into its group takes the grace period in that process, not here.
            tokio::task::spawn_blocking(move || {
                let Some(made) = slot::Slot::make(&prefix, guarded) else {
                    return;
                };
                if let Some(inner) = inner.upgrade() {
                    let mut current = lock(&inner.slot);
                    if current.is_none() {
                        *current = Some(made);
                    }
                }
            });
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (prefix, guarded);
    }

    /// Removes log files older than [`LOG_MAX_AGE`] that no listed process writes, at
    /// most once every [`SWEEP_EVERY`], off the async workers: the directory is shared by
    /// every front end of this data directory and would otherwise only grow.
    fn sweep(&self) {
        let now = now_ms() / 1000;
        let last = self.inner.swept.load(Ordering::Relaxed);
        if now.saturating_sub(last) < SWEEP_EVERY.as_secs()
            || self
                .inner
                .swept
                .compare_exchange(last, now, Ordering::SeqCst, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        let dir = self.inner.dir.clone();
        let keep: std::collections::HashSet<PathBuf> = lock(&self.inner.table)
            .procs
            .values()
            .map(|proc| proc.log.clone())
            .collect();
        tokio::task::spawn_blocking(move || sweep_logs(&dir, &keep, SystemTime::now()));
    }

    /// Starts the tracker unless it runs: once a second, while any process lives, every
    /// live process's tree is looked at in `/proc` (one pass over `/proc` for all of
    /// them), so a descendant whose parent ends before the kill is still known.
    fn track(&self) {
        if self.inner.tracking.swap(true, Ordering::SeqCst) {
            return;
        }
        let inner = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(TRACK_EVERY).await;
                let Some(inner) = inner.upgrade() else { return };
                let live: Vec<Arc<Proc>> = {
                    let table = lock(&inner.table);
                    table.procs.values().filter(|p| p.running()).cloned().collect()
                };
                if live.is_empty() {
                    inner.tracking.store(false, Ordering::SeqCst);
                    return;
                }
                let table = tokio::task::spawn_blocking(tree::table).await.unwrap_or_default();
                for proc in live {
                    let found = tree::members(&table, proc.pid, proc.pid, &proc.id, proc.group.as_deref());
                    let mut known = lock(&proc.known);
                    for (pid, start) in found {
                        if known.len() < tree::MAX_KNOWN {
                            known.insert(pid, start);
                        }
                    }
                    tree::reap(&table, &known, proc.pid, proc.group.as_deref());
                }
            }
        });
    }
}

fn emit(inner: &Inner, kind: &'static str, properties: serde_json::Value) {
    let sink = lock(&inner.sink).clone();
    if let Some(sink) = sink {
        sink(ShellEvent { kind, properties });
    }
}

/// Gives back the slot of one live process of `session`.
fn release(inner: &Inner, session: &str) {
    let mut table = lock(&inner.table);
    table.live = table.live.saturating_sub(1);
    if let Some(count) = table.live_by_session.get_mut(session) {
        *count = count.saturating_sub(1);
        if *count == 0 {
            table.live_by_session.remove(session);
        }
    }
    // A session keeps only its latest ended processes.
    let ended: Vec<String> = table
        .procs
        .values()
        .filter(|proc| proc.session == session && !proc.running())
        .map(|proc| proc.id.clone())
        .collect();
    if ended.len() > MAX_ENDED_PER_SESSION {
        for id in &ended[..ended.len() - MAX_ENDED_PER_SESSION] {
            // Forgotten, so nobody can read it through the tools: its log goes too, or
            // the logs would grow with every process started (64 MiB each at most).
            if let Some(proc) = table.procs.remove(id) {
                let _ = std::fs::remove_file(&proc.log);
            }
        }
    }
}

/// Whether `command` runs a shell somewhere in it (see the list below). Input written to
/// such a process is a command line, analysed as one.
fn is_shell_program(command: &str) -> bool {
    // Any word naming a shell, or something that runs its input as commands (`eval`,
    // `source`, `script`, which starts `$SHELL`), makes the input a command line: behind
    // `cat |`, `nice`, `timeout 9`, `stdbuf -oL`, `xargs … bash -c` a shell still reads it.
    // Taking too much for a shell costs an analysis; taking too little skipped the rules.
    const RUNS_INPUT: [&str; 12] = [
        "bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "fish", "eval", "source", ".", "script",
    ];
    command
        .split(|c: char| c.is_whitespace() || matches!(c, '|' | ';' | '&' | '(' | ')' | '`' | '"' | '\''))
        .filter(|word| !word.is_empty() && !word.contains('='))
        .map(|word| word.rsplit('/').next().unwrap_or(word))
        .any(|name| RUNS_INPUT.contains(&name))
}

/// Whether input to a shell may mean something other than its text once the shell has
/// it: terminal line editing (control bytes, a tab completing, `!` history), or a line
/// that defines what a later line runs (a function, an alias) or is not finished (a
/// trailing backslash). Such input is asked for as it is, besides its analysis.
pub(crate) fn input_beyond_its_text(input: &str, tty: bool) -> bool {
    let editing = tty && input.chars().any(|c| (c.is_control() && c != '\n') || c == '!');
    let defines = input.contains("()")
        || input
            .split_whitespace()
            .any(|word| matches!(word, "function" | "alias" | "source" | "." | "eval"));
    let unfinished = input.lines().any(|line| line.ends_with('\\')) || (!input.is_empty() && !input.ends_with('\n'));
    editing || defines || unfinished
}

impl Proc {
    pub(crate) fn running(&self) -> bool {
        lock(&self.out).running
    }

    fn known(&self) -> HashMap<u32, u64> {
        lock(&self.known).clone()
    }

    pub(crate) fn info(&self) -> ShellInfo {
        let out = lock(&self.out);
        ShellInfo {
            id: self.id.clone(),
            session: self.session.clone(),
            command: self.command.clone(),
            pid: self.pid,
            state: if out.running { "running" } else { "exited" },
            exit: out.exit,
            started: self.started,
            bytes: out.total,
            dropped: out.total - out.ring.len() as u64,
            tty: self.tty,
            output: self.log.clone(),
        }
    }

    fn push(&self, chunk: &[u8]) {
        {
            let mut out = lock(&self.out);
            out.total += chunk.len() as u64;
            let keep = &chunk[chunk.len().saturating_sub(self.ring_bytes)..];
            let overflow = (out.ring.len() + keep.len()).saturating_sub(self.ring_bytes);
            let overflow = overflow.min(out.ring.len());
            out.ring.drain(..overflow);
            out.ring.extend(keep);
        }
        self.changed.send_modify(|n| *n += 1);
    }

    /// The output from `since` (default: where the previous read stopped), at most
    /// [`MAX_READ`] bytes of it shown; moves the cursor to its end.
    pub(crate) fn read(&self, since: Option<u64>) -> Read {
        self.read_from(since, true)
    }

    /// [`Proc::read`], moving the cursor only when `advance`.
    pub(crate) fn read_from(&self, since: Option<u64>, advance: bool) -> Read {
        let mut out = lock(&self.out);
        let first = out.total - out.ring.len() as u64;
        let asked = since.unwrap_or(out.cursor).min(out.total);
        let from = asked.max(first);
        let skip = usize::try_from(from - first).unwrap_or(usize::MAX);
        let bytes: Vec<u8> = out.ring.iter().skip(skip).copied().collect();
        let (text, left_out) = if bytes.len() > MAX_READ {
            let half = MAX_READ / 2;
            let left_out = bytes.len() - 2 * half;
            (
                format!(
                    "{}\n\n[... {left_out} bytes left out: the whole output is in {} ...]\n\n{}",
                    String::from_utf8_lossy(&bytes[..half]),
                    self.log.display(),
                    String::from_utf8_lossy(&bytes[bytes.len() - half..])
                ),
                left_out as u64,
            )
        } else {
            (String::from_utf8_lossy(&bytes).into_owned(), 0)
        };
        if advance {
            out.cursor = out.total;
        }
        Read {
            text,
            from,
            next: out.total,
            dropped: from - asked,
            left_out,
            running: out.running,
            exit: out.exit,
        }
    }

    /// Where the previous read stopped.
    pub(crate) fn read_cursor(&self) -> u64 {
        lock(&self.out).cursor
    }

    /// Bytes written so far.
    pub(crate) fn total(&self) -> u64 {
        lock(&self.out).total
    }

    /// The exit code and what enforcement said, once it ended.
    pub(crate) fn ended(&self) -> Option<(Option<i32>, Vec<String>, &'static str)> {
        let out = lock(&self.out);
        if out.running {
            return None;
        }
        let how = match out.ending {
            Ending::Exited => "exited",
            Ending::Timeout => "timed out",
            Ending::Killed => "killed",
        };
        Some((out.exit, out.notes.clone(), how))
    }

    /// Waits at most `wait` until output beyond `seen` bytes arrives or the process ends.
    pub(crate) async fn wait_output(&self, seen: u64, wait: Duration) {
        let mut changes = self.changed.subscribe();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            {
                let out = lock(&self.out);
                if out.total > seen || !out.running {
                    return;
                }
            }
            if tokio::time::timeout_at(deadline, changes.changed()).await.is_err() {
                return;
            }
        }
    }

    /// Waits at most `wait` for the process to end; whether it did.
    pub(crate) async fn wait_end(&self, wait: Duration) -> bool {
        let mut changes = self.changed.subscribe();
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if !self.running() {
                return true;
            }
            if tokio::time::timeout_at(deadline, changes.changed()).await.is_err() {
                return !self.running();
            }
        }
    }

    /// Whether the kept output, as text, matches `pattern`.
    pub(crate) fn matches(&self, pattern: &regex::Regex) -> Option<String> {
        let out = lock(&self.out);
        let (a, b) = out.ring.as_slices();
        let mut bytes = Vec::with_capacity(a.len() + b.len());
        bytes.extend_from_slice(a);
        bytes.extend_from_slice(b);
        drop(out);
        let text = String::from_utf8_lossy(&bytes);
        pattern.find(&text).map(|found| {
            // The whole line the match is on.
            let start = text[..found.start()].rfind('\n').map_or(0, |at| at + 1);
            let end = text[found.end()..].find('\n').map_or(text.len(), |at| found.end() + at);
            text[start..end].trim_end_matches('\r').to_string()
        })
    }

    /// Writes `data` to the process's input (its terminal with `tty: true`).
    pub(crate) async fn write(&self, data: &[u8]) -> std::io::Result<()> {
        if !self.running() {
            return Err(std::io::Error::other("the process has ended"));
        }
        self.writer.write_all(data).await
    }

    /// Lets the exec guard start what an approved line written to the shell predicted.
    pub(crate) fn predict(&self, parts: Vec<toolgate_core::Resource>) {
        if let Some(predicted) = &self.predicted {
            lock(predicted).extend(parts);
        }
    }

    /// Sets the terminal size of a `tty: true` process.
    pub(crate) fn resize(&self, size: Size) -> std::io::Result<()> {
        self.writer.resize(size)
    }

    /// Ends the whole tree: TERM, KILL after [`KILL_GRACE`].
    pub(crate) fn terminate(&self) {
        let _ = self.control.send(Control::Terminate);
    }

    /// Sends `signal` to the process group (and the tree's other processes).
    pub(crate) fn signal(&self, signal: Signal) {
        let _ = self.control.send(Control::Signal(signal));
    }
}

/// What the runner of one process owns besides the process.
struct Runner {
    inner: Weak<Inner>,
    reader: io::Reader,
    requests: mpsc::UnboundedReceiver<Control>,
    log: std::fs::File,
    log_limit: u64,
    timeout: Option<Duration>,
    after: Option<Box<dyn FnOnce() -> Vec<String> + Send>>,
}

/// Runs one process to its end: reads its output into the ring and the log, announces
/// it, ends the tree on its timeout or when asked, and once the shell exited ends what
/// it left behind (as a foreground command's group is ended) before saying it exited.
async fn run(proc: Arc<Proc>, started: Started, mut runner: Runner) {
    let Started {
        mut child,
        mut group,
        supervisor,
    } = started;
    // The tree is ended here, not by the guard's own TERM-then-KILL thread.
    group.pgid = None;
    let mut logged: u64 = 0;
    let mut open = true;
    let mut pending: u64 = 0;
    let mut last_event = tokio::time::Instant::now();
    let far = tokio::time::Instant::now() + Duration::from_secs(86_400 * 365);
    let mut deadline = runner.timeout.map_or(far, |t| tokio::time::Instant::now() + t);
    let mut kill_at = far;
    let mut ending = Ending::Exited;
    let status = loop {
        tokio::select! {
            read = runner.reader.next(), if open => match read {
                None => open = false,
                Some(chunk) => {
                    proc.push(&chunk);
                    log_chunk(&mut runner, &mut logged, &chunk);
                    pending += chunk.len() as u64;
                    if last_event.elapsed() >= OUTPUT_EVENT_EVERY {
                        announce_output(&runner, &proc, &mut pending);
                        last_event = tokio::time::Instant::now();
                    }
                }
            },
            status = child.wait() => break status.ok(),
            () = tokio::time::sleep_until(deadline) => {
                ending = Ending::Timeout;
                tree::signal_tree(proc.pid, proc.pid, &proc.id, &proc.known, proc.group.as_deref(), Signal::TERM);
                deadline = far;
                kill_at = tokio::time::Instant::now() + KILL_GRACE;
            }
            () = tokio::time::sleep_until(kill_at) => {
                tree::signal_tree(proc.pid, proc.pid, &proc.id, &proc.known, proc.group.as_deref(), Signal::KILL);
                kill_at = far;
            }
            () = tokio::time::sleep_until(last_event + OUTPUT_EVENT_EVERY), if pending > 0 => {
                announce_output(&runner, &proc, &mut pending);
                last_event = tokio::time::Instant::now();
            }
            request = runner.requests.recv() => match request {
                Some(Control::Terminate) => {
                    if ending == Ending::Exited {
                        ending = Ending::Killed;
                    }
                    tree::signal_tree(proc.pid, proc.pid, &proc.id, &proc.known, proc.group.as_deref(), Signal::TERM);
                    kill_at = kill_at.min(tokio::time::Instant::now() + KILL_GRACE);
                }
                Some(Control::Signal(signal)) => {
                    tree::signal_tree(proc.pid, proc.pid, &proc.id, &proc.known, proc.group.as_deref(), signal);
                }
                // Every handle on the process is gone: it cannot be asked anything more.
                None => {}
            },
        }
    };
    // The shell is gone: read what is left, then end whatever of the tree remains and
    // stop reading even if an escaped process holds the channel.
    if open {
        let drained = tokio::time::timeout(PIPE_GRACE, drain(&proc, &mut runner, &mut logged)).await;
        open = drained.is_err();
    }
    end_tree(&proc).await;
    if open {
        let _ = tokio::time::timeout(PIPE_GRACE, drain(&proc, &mut runner, &mut logged)).await;
    }
    if logged >= runner.log_limit {
        let _ = writeln!(
            runner.log,
            "\n[toolgate: the log stopped at {} bytes (shells.log_bytes); shell_output keeps the last {} bytes]",
            runner.log_limit, proc.ring_bytes
        );
    }
    let mut notes = tokio::task::spawn_blocking(move || exec::finish_guard(supervisor))
        .await
        .unwrap_or_default();
    if let Some(after) = runner.after.take() {
        notes.extend(tokio::task::spawn_blocking(after).await.unwrap_or_default());
    }
    let exit = status.and_then(|status| {
        use std::os::unix::process::ExitStatusExt;
        status.code().or_else(|| status.signal().map(|signal| 128 + signal))
    });
    if pending > 0 {
        announce_output(&runner, &proc, &mut pending);
    }
    {
        let mut out = lock(&proc.out);
        out.running = false;
        out.exit = exit;
        out.ending = ending;
        out.notes = notes;
    }
    proc.changed.send_modify(|n| *n += 1);
    if let Some(inner) = runner.inner.upgrade() {
        release(&inner, &proc.session);
        emit(
            &inner,
            "shell.exited",
            json!({"sessionID": proc.session, "id": proc.id, "exit": exit, "timedOut": ending == Ending::Timeout, "killed": ending == Ending::Killed}),
        );
    }
}

fn log_chunk(runner: &mut Runner, logged: &mut u64, chunk: &[u8]) {
    if *logged >= runner.log_limit {
        return;
    }
    let room = usize::try_from(runner.log_limit - *logged).unwrap_or(usize::MAX);
    let part = &chunk[..chunk.len().min(room)];
    // A full disk costs the log, never the process or its ring.
    if runner.log.write_all(part).is_ok() {
        *logged += part.len() as u64;
    } else {
        *logged = runner.log_limit;
    }
}

fn announce_output(runner: &Runner, proc: &Proc, pending: &mut u64) {
    if let Some(inner) = runner.inner.upgrade() {
        emit(
            &inner,
            "shell.output",
            json!({"sessionID": proc.session, "id": proc.id, "bytes": *pending, "total": proc.total()}),
        );
    }
    *pending = 0;
}

async fn drain(proc: &Proc, runner: &mut Runner, logged: &mut u64) {
    while let Some(chunk) = runner.reader.next().await {
        proc.push(&chunk);
        log_chunk(runner, logged, &chunk);
    }
}

/// Ends what is left of the tree of a process whose shell exited: TERM, then KILL for
/// what is still there after [`KILL_GRACE`], until nothing is left.
async fn end_tree(proc: &Proc) {
    let (pid, pgrp) = (proc.pid, proc.pid);
    let left = || async {
        let (known, id, group) = (proc.known(), proc.id.clone(), proc.group.clone());
        tokio::task::spawn_blocking(move || tree::any_left(pid, pgrp, &id, &known, group.as_deref()))
            .await
            .unwrap_or(true)
    };
    if !left().await {
        return;
    }
    tree::signal_tree(pid, pgrp, &proc.id, &proc.known, proc.group.as_deref(), Signal::TERM);
    let deadline = tokio::time::Instant::now() + KILL_GRACE;
    while tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if !left().await {
            return;
        }
    }
    for _ in 0..10 {
        tree::signal_tree(pid, pgrp, &proc.id, &proc.known, proc.group.as_deref(), Signal::KILL);
        tokio::time::sleep(Duration::from_millis(50)).await;
        if !left().await {
            return;
        }
    }
}

/// Log files older than this go (a week, as the spill files of large outputs).
pub(crate) const LOG_MAX_AGE: Duration = Duration::from_secs(7 * 86_400);
/// How often old log files are looked for.
const SWEEP_EVERY: Duration = Duration::from_secs(3600);

/// Removes the `shell_*.log` files in `dir` last written more than [`LOG_MAX_AGE`] before
/// `now`, except `keep`; returns how many went. Only regular files of the names this
/// module writes are touched: a link or anything else someone put there stays.
pub(crate) fn sweep_logs(dir: &Path, keep: &std::collections::HashSet<PathBuf>, now: SystemTime) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with("shell_") && name.ends_with(".log")) || keep.contains(&path) {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        let old = meta
            .modified()
            .ok()
            .and_then(|modified| now.duration_since(modified).ok())
            .is_some_and(|age| age > LOG_MAX_AGE);
        if meta.file_type().is_file() && old && std::fs::remove_file(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// The log directory under a data directory.
pub fn log_dir(data: &Path) -> PathBuf {
    data.join("shell")
}

/// Ends what this process adopted and nothing else ends: every child still running once
/// the front end has ended everything it knows (its background processes, its MCP
/// servers). An orphan is adopted here because toolgate is the subreaper of what it
/// starts; one that shed every other mark (a command run as root without the sandbox can
/// leave its cgroup and clear its environment) is known only as this process's child, and
/// would otherwise outlive toolgate. Call it last, when nothing else of this process
/// waits for a child. Returns how many it ended.
pub fn end_adopted() -> usize {
    let me = std::process::id();
    let children: Vec<u32> = tree::table()
        .iter()
        .filter(|p| p.ppid == me && !p.zombie)
        .map(|p| p.pid)
        .collect();
    let pid = |pid: u32| rustix::process::Pid::from_raw(pid as i32);
    let ended = children
        .iter()
        .filter(|child| pid(**child).is_some_and(|child| rustix::process::kill_process(child, Signal::KILL).is_ok()))
        .count();
    // Reaped, for at most a second (a process in an uninterruptible sleep ends later).
    let mut left = children;
    for _ in 0..100 {
        left.retain(|child| {
            pid(*child).is_some_and(|child| {
                rustix::process::waitpid(Some(child), rustix::process::WaitOptions::NOHANG)
                    .is_ok_and(|status| status.is_none())
            })
        });
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    ended
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::{LOG_MAX_AGE, is_shell_program, sweep_logs};
    use std::time::{Duration, SystemTime};

    #[test]
    fn only_old_logs_of_ended_processes_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, "x").unwrap();
            path
        };
        let (old, live, other) = (write("shell_01.log"), write("shell_02.log"), write("notes.log"));
        let fresh = write("shell_03.log");
        std::os::unix::fs::symlink(&fresh, dir.path().join("shell_04.log")).unwrap();
        // A week and a minute from now, every file is old.
        let later = SystemTime::now() + LOG_MAX_AGE + Duration::from_secs(60);
        let keep = [live.clone()].into_iter().collect();
        assert_eq!(
            sweep_logs(dir.path(), &keep, SystemTime::now()),
            0,
            "nothing is old yet"
        );
        assert_eq!(sweep_logs(dir.path(), &keep, later), 2, "01 and 03");
        assert!(!old.exists() && !fresh.exists());
        assert!(
            live.exists() && other.exists(),
            "a live process's log and other files stay"
        );
        assert!(
            dir.path().join("shell_04.log").symlink_metadata().is_ok(),
            "a link stays"
        );
    }

    #[test]
    fn a_shell_program_is_known_by_its_first_word() {
        for command in ["bash", "bash -i", "/bin/sh", "exec zsh", "env FOO=1 bash --norc"] {
            assert!(is_shell_program(command), "{command}");
        }
        for command in [
            "cat | bash",
            "nice bash",
            "timeout 1000 bash",
            "stdbuf -oL bash",
            "script -q",
            "xargs -I{} bash -c {}",
            "while read l; do eval \"$l\"; done",
        ] {
            assert!(is_shell_program(command), "{command}");
        }
        for command in ["python3", "node", "bashful", "psql", "python3 -i repl.py"] {
            assert!(!is_shell_program(command), "{command}");
        }
    }
}
