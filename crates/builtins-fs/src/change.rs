//! Changing files so that nothing reported as applied is lost.
//!
//! - **One writer at a time, across processes.** The lock is `flock(2)` on the file itself
//!   — the inode the path names — so every toolgate process honours it whatever its data
//!   directory, any user who can read the file can take it, hard links to one inode share
//!   it, and nothing is ever created on disk for it (no lock files to accumulate or to
//!   fail to create). A replacement renames a new inode over the path: a writer that was
//!   waiting on the old inode sees that the path has moved on and locks the new one. The
//!   new inode is locked before it is renamed into place, so the hand-over has no gap.
//!   Paths with nothing there are created with a no-clobber rename, which fails when
//!   anyone created the file in the meantime.
//! - **Compare and swap.** A change is computed from the content read under the lock; just
//!   before the rename the file is checked again (inode, size, mtime, ctime) and the path
//!   must still name it, so a writer that does not take the lock is never overwritten.
//!   After the rename the replaced inode is checked once more: bytes an outside program
//!   appended through a descriptor it opened just before the rename are copied over, and
//!   any other late change undoes the whole call.
//! - **Only regular files.** A path is looked at with `lstat` and opened with
//!   `O_NONBLOCK | O_NOFOLLOW`, then checked with `fstat`, so a FIFO, a device or a socket
//!   is refused without being opened in a way that can block or have an effect.
//! - **Like an editor.** New files get `0666 & ~umask`; a replaced file keeps its mode and,
//!   where the process may, its owner and group; a file the caller may not write is refused
//!   with the OS error; a file with several hard links is rewritten in place under the lock,
//!   so every name keeps seeing the same content (see [`rewrite_in_place`]: bytes another
//!   program appends meanwhile are kept after the new content, never overwritten or cut).
//! - **A size limit.** A change reads the file whole, so a file over [`MAX_CHANGE_BYTES`]
//!   is refused before anything is read (`TooLarge`): a 2 GiB file would otherwise take
//!   the process (a server and every session in it) down when memory runs out.

use std::cell::{Cell, OnceCell, RefCell};
use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write as _};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rustix::fs::{Access, AtFlags, FlockOperation, OFlags};

/// How long a change waits for another writer's lock before giving up.
const LOCK_WAIT: Duration = Duration::from_secs(60);
/// How long a replacement waits for programs still writing to the file it replaced.
const WRITER_WAIT: Duration = Duration::from_secs(2);
/// The largest file `edit`, `write` and `apply_patch` read whole (32 MiB). The spec's
/// tools read the whole file (§5.3–§5.5) and name no limit; without one a 2 GiB file is
/// read into memory — several copies of it, for an edit — and a server runs out of memory.
/// A change of a larger file is refused before it is read, with what to do instead.
pub(crate) const MAX_CHANGE_BYTES: u64 = 32 << 20;

/// Why a change was not made.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ChangeError {
    /// A FIFO, device, socket or other non-regular file.
    #[error("not a regular file")]
    NotRegular,
    /// A directory where a file was expected.
    #[error("it is a directory")]
    Directory,
    /// The file is not what the change was computed from.
    #[error("{} changed since it was read", .0.display())]
    Changed(PathBuf),
    /// Two paths of one call name the same file (hard links).
    #[error("{0} and {1} are the same file")]
    SameFile(PathBuf, PathBuf),
    /// Another process kept the lock.
    #[error("it stayed locked by another process for {} s", LOCK_WAIT.as_secs())]
    Busy,
    /// The caller went away before anything was written.
    #[error("the call was cancelled")]
    Cancelled,
    /// The file is larger than a change reads whole ([`MAX_CHANGE_BYTES`]).
    #[error("the file is {}, larger than the {} a change reads whole", human_size(*.0), human_size(MAX_CHANGE_BYTES))]
    TooLarge(u64),
    /// The OS refused.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Set when the call that started a change is dropped: a change that has not been
/// written yet is then abandoned rather than applied behind the caller's back.
#[derive(Clone, Debug, Default)]
pub(crate) struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A guard that cancels when dropped before [`CancelGuard::disarm`].
    pub(crate) fn guard(&self) -> CancelGuard {
        CancelGuard(Some(self.clone()))
    }

    fn check(&self) -> Result<(), ChangeError> {
        if self.0.load(Ordering::SeqCst) {
            Err(ChangeError::Cancelled)
        } else {
            Ok(())
        }
    }
}

/// Cancels its [`Cancel`] on drop unless disarmed.
pub(crate) struct CancelGuard(Option<Cancel>);

impl CancelGuard {
    /// The call finished: dropping the guard no longer cancels anything.
    pub(crate) fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if let Some(cancel) = &self.0 {
            cancel.0.store(true, Ordering::SeqCst);
        }
    }
}

/// What identifies one state of a file: which inode, and its size and times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

/// A file's stamp plus what a replacement keeps.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Meta {
    stamp: Stamp,
    mode: u32,
    uid: u32,
    gid: u32,
    nlink: u64,
}

impl Meta {
    fn of(meta: &std::fs::Metadata) -> Meta {
        Meta {
            stamp: Stamp {
                dev: meta.dev(),
                ino: meta.ino(),
                size: meta.size(),
                mtime: (meta.mtime(), meta.mtime_nsec()),
                ctime: (meta.ctime(), meta.ctime_nsec()),
            },
            mode: meta.mode(),
            uid: meta.uid(),
            gid: meta.gid(),
            nlink: meta.nlink(),
        }
    }

    fn key(&self) -> (u64, u64) {
        (self.stamp.dev, self.stamp.ino)
    }
}

/// Flags for every open of a target: never block (FIFOs), never become a controlling
/// terminal (ttys), never follow a link swapped in after the path was resolved.
fn open_flags() -> i32 {
    (OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::NOFOLLOW).bits() as i32
}

/// What `path` is now: `None` when nothing is there. Directories and special files are
/// refused here, before anything opens them.
pub(crate) fn inspect(path: &Path) -> Result<Option<std::fs::Metadata>, ChangeError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => Err(ChangeError::Directory),
        Ok(meta) if meta.is_file() => Ok(Some(meta)),
        // The path was resolved through its links: a link here appeared since.
        Ok(_) => Err(ChangeError::NotRegular),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// Opens a regular file for reading without blocking and checks what was opened.
fn open_regular(path: &Path, write: bool) -> Result<(File, std::fs::Metadata), ChangeError> {
    let file = OpenOptions::new()
        .read(true)
        .write(write)
        .custom_flags(open_flags())
        .open(path)
        .map_err(|error| match error.raw_os_error() {
            // O_NOFOLLOW on a link.
            Some(code) if code == rustix::io::Errno::LOOP.raw_os_error() => ChangeError::NotRegular,
            _ => ChangeError::Io(error),
        })?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(ChangeError::Directory);
    }
    if !meta.is_file() {
        return Err(ChangeError::NotRegular);
    }
    Ok((file, meta))
}

/// Reads a regular file (or says it is absent) without taking the lock: for computing a
/// change before approval. FIFOs and devices are refused unopened.
pub(crate) fn read_regular(path: &Path) -> Result<Option<Vec<u8>>, ChangeError> {
    if inspect(path)?.is_none() {
        return Ok(None);
    }
    let (mut file, meta) = match open_regular(path, false) {
        Ok(opened) => opened,
        Err(ChangeError::Io(error)) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    };
    if meta.len() > MAX_CHANGE_BYTES {
        return Err(ChangeError::TooLarge(meta.len()));
    }
    // A hard-linked file is rewritten in place (not replaced by a rename), so a reader
    // could see it half rewritten: wait for the writer's lock, shared, as a reader.
    if meta.nlink() > 1 {
        flock_shared(&file, Instant::now() + LOCK_WAIT);
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    (&mut file).take(MAX_CHANGE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_CHANGE_BYTES {
        return Err(ChangeError::TooLarge(bytes.len() as u64));
    }
    Ok(Some(bytes))
}

/// A size for a person: `2.0 GiB`, `32 MiB`, `512 KiB`, `100 bytes`.
pub(crate) fn human_size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if bytes >= size {
            return if bytes.is_multiple_of(size) {
                format!("{} {unit}", bytes / size)
            } else {
                format!("{:.1} {unit}", bytes as f64 / size as f64)
            };
        }
    }
    format!("{bytes} bytes")
}

/// Takes a shared `flock` on `file` — a reader's — waiting at most until `deadline`; a
/// lock still held then (a program that keeps it) is read past rather than waited on.
pub(crate) fn flock_shared(file: &File, deadline: Instant) {
    let mut pause = Duration::from_micros(50);
    loop {
        match rustix::fs::flock(file, FlockOperation::NonBlockingLockShared) {
            Err(rustix::io::Errno::WOULDBLOCK) | Err(rustix::io::Errno::INTR) => {}
            _ => return,
        }
        if Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(1));
    }
}

/// The in-process side of the lock: threads of one process queue here (the next one woken
/// the moment the holder is done) rather than polling `flock`.
struct Gate {
    key: Option<(u64, u64)>,
}

/// One inode some thread of this process holds: how many threads wait for it, and where
/// they wait. Each inode has its own queue and a release wakes one waiter, so twenty
/// threads editing one file do not all wake for every hand-over.
struct Turn {
    held: bool,
    waiting: usize,
    signal: Arc<Condvar>,
}

fn gates() -> &'static Mutex<HashMap<(u64, u64), Turn>> {
    static GATES: OnceLock<Mutex<HashMap<(u64, u64), Turn>>> = OnceLock::new();
    GATES.get_or_init(|| Mutex::new(HashMap::new()))
}

impl Gate {
    fn enter(key: (u64, u64), deadline: Instant, cancel: &Cancel) -> Result<Gate, ChangeError> {
        let mut turns = gates().lock().unwrap_or_else(|poison| poison.into_inner());
        let signal = match turns.get_mut(&key) {
            None => {
                turns.insert(
                    key,
                    Turn {
                        held: true,
                        waiting: 0,
                        signal: Arc::new(Condvar::new()),
                    },
                );
                return Ok(Gate { key: Some(key) });
            }
            Some(turn) if !turn.held => {
                turn.held = true;
                return Ok(Gate { key: Some(key) });
            }
            Some(turn) => {
                turn.waiting += 1;
                turn.signal.clone()
            }
        };
        let outcome = loop {
            if let Err(error) = cancel.check() {
                break Err(error);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break Err(ChangeError::Busy);
            }
            turns = signal
                .wait_timeout(turns, left.min(Duration::from_millis(50)))
                .unwrap_or_else(|poison| poison.into_inner())
                .0;
            // The entry stays while anyone waits for it.
            if let Some(turn) = turns.get_mut(&key)
                && !turn.held
            {
                turn.held = true;
                break Ok(());
            }
        };
        if let Some(turn) = turns.get_mut(&key) {
            turn.waiting -= 1;
            // A waiter that gives up may have been the one woken: pass the turn on.
            if outcome.is_err() && !turn.held {
                if turn.waiting == 0 {
                    turns.remove(&key);
                } else {
                    turn.signal.notify_one();
                }
            }
        }
        outcome.map(|()| Gate { key: Some(key) })
    }

    /// Lets the next thread in (once).
    fn release(&mut self) {
        let Some(key) = self.key.take() else { return };
        let mut turns = gates().lock().unwrap_or_else(|poison| poison.into_inner());
        if let Some(turn) = turns.get_mut(&key) {
            if turn.waiting == 0 {
                turns.remove(&key);
            } else {
                turn.held = false;
                turn.signal.notify_one();
            }
        }
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.release();
    }
}

/// Takes the exclusive `flock` on `file`, polling so that a lock held elsewhere for too
/// long becomes an error rather than a hang, and a cancelled call stops waiting.
fn flock(file: &File, deadline: Instant, cancel: &Cancel) -> Result<(), ChangeError> {
    let mut pause = Duration::from_micros(50);
    loop {
        match rustix::fs::flock(file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::WOULDBLOCK) | Err(rustix::io::Errno::INTR) => {}
            Err(error) => return Err(ChangeError::Io(error.into())),
        }
        cancel.check()?;
        if Instant::now() >= deadline {
            return Err(ChangeError::Busy);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(1));
    }
}

/// A locked inode and what it was when locked. Dropping it unlocks the `flock` before the
/// in-process gate opens.
struct Locked {
    file: File,
    meta: Meta,
    content: OnceCell<Vec<u8>>,
    /// The state a change accepts: the locked one, moved on by outside appends carried over.
    seen: Cell<Stamp>,
    /// Bytes other programs appended since the lock, carried into the change.
    appended: RefCell<Vec<u8>>,
    gate: Gate,
}

impl Drop for Locked {
    fn drop(&mut self) {
        // Unlock and let the next writer in first; then the fields go: closing the last
        // descriptor of a replaced inode frees its pages, and the content is freed, while
        // the next change already runs.
        let _ = rustix::fs::flock(&self.file, FlockOperation::Unlock);
        self.gate.release();
    }
}

impl Locked {
    /// What the file held before the change: the locked content plus carried appends.
    fn before(&self) -> Option<Vec<u8>> {
        let mut before = self.content.get()?.clone();
        before.extend_from_slice(&self.appended.borrow());
        Some(before)
    }
}

/// One path of a change, locked: the inode it names (locked), or nothing there.
pub(crate) struct Held {
    path: PathBuf,
    locked: Option<Locked>,
}

impl Held {
    /// The path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a file was there when it was locked.
    pub(crate) fn exists(&self) -> bool {
        self.locked.is_some()
    }

    /// The content under the lock (read once; `None` when nothing is there).
    pub(crate) fn content(&self) -> Result<Option<&[u8]>, ChangeError> {
        let Some(locked) = &self.locked else {
            return Ok(None);
        };
        if let Some(content) = locked.content.get() {
            return Ok(Some(content));
        }
        if locked.meta.stamp.size > MAX_CHANGE_BYTES {
            return Err(ChangeError::TooLarge(locked.meta.stamp.size));
        }
        let bytes = read_all_at(&locked.file, locked.meta.stamp.size)?;
        Ok(Some(locked.content.get_or_init(|| bytes).as_slice()))
    }

    /// Whether the locked file begins with `prefix`, read without reading the rest (for a
    /// file too large to read whole, [`MAX_CHANGE_BYTES`]).
    pub(crate) fn starts_with(&self, prefix: &[u8]) -> Result<bool, ChangeError> {
        let Some(locked) = &self.locked else {
            return Ok(false);
        };
        if let Some(content) = locked.content.get() {
            return Ok(content.starts_with(prefix));
        }
        Ok(read_range(&locked.file, 0, prefix.len() as u64)? == prefix)
    }

    /// Whether the file is still exactly what was locked (or still absent), and the path
    /// still names it.
    fn unchanged(&self) -> Result<(), ChangeError> {
        match &self.locked {
            None => match std::fs::symlink_metadata(&self.path) {
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
                _ => Err(ChangeError::Changed(self.path.clone())),
            },
            Some(locked) => {
                let now = Meta::of(&locked.file.metadata()?);
                if now.stamp != locked.seen.get() {
                    return Err(ChangeError::Changed(self.path.clone()));
                }
                match std::fs::symlink_metadata(&self.path) {
                    Ok(meta) if (meta.dev(), meta.ino()) == locked.meta.key() => Ok(()),
                    _ => Err(ChangeError::Changed(self.path.clone())),
                }
            }
        }
    }
}

impl Held {
    /// When another program has only appended to the file since it was locked (same
    /// inode, same bytes, more of them), takes the new bytes into the change: returns them
    /// so they can be appended to the new content too. Any other change is `Changed`.
    fn carry_append(&self) -> Result<Option<Vec<u8>>, ChangeError> {
        let Some(locked) = &self.locked else {
            return Ok(None);
        };
        let now = Meta::of(&locked.file.metadata()?);
        let seen = locked.seen.get();
        if now.stamp == seen {
            return Ok(None);
        }
        let changed = || ChangeError::Changed(self.path.clone());
        let Some(before) = locked.before() else {
            return Err(changed());
        };
        if now.stamp.size <= seen.size || before.len() as u64 != seen.size {
            return Err(changed());
        }
        let current = read_all_at(&locked.file, now.stamp.size)?;
        if !current.starts_with(&before) {
            return Err(changed());
        }
        let tail = current[before.len()..].to_vec();
        locked.appended.borrow_mut().extend_from_slice(&tail);
        locked.seen.set(Stamp {
            size: current.len() as u64,
            ..now.stamp
        });
        Ok(Some(tail))
    }
}

/// Reads a whole file through `file` from offset 0 — at most [`MAX_CHANGE_BYTES`]: a file
/// that grew past it meanwhile is `TooLarge`, never read on into memory.
fn read_all_at(file: &File, size_hint: u64) -> Result<Vec<u8>, ChangeError> {
    let cap = MAX_CHANGE_BYTES as usize + 1;
    let mut bytes = vec![0u8; (size_hint as usize + 1).min(cap)];
    let mut filled = 0usize;
    loop {
        if filled == bytes.len() {
            if bytes.len() >= cap {
                return Err(ChangeError::TooLarge(file.metadata()?.len().max(filled as u64)));
            }
            bytes.resize((bytes.len() * 2 + 4096).min(cap), 0);
        }
        match file.read_at(&mut bytes[filled..], filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error.into()),
        }
    }
    bytes.truncate(filled);
    Ok(bytes)
}

/// Locks every path of a change. Existing inodes are locked in (device, inode) order —
/// the same order in every process, so two calls never wait on each other in a cycle —
/// and each is checked to still be what its path names once locked; if one moved on,
/// everything is let go and taken again.
pub(crate) fn lock_all(paths: &[PathBuf], cancel: &Cancel) -> Result<Vec<Held>, ChangeError> {
    let deadline = Instant::now() + LOCK_WAIT;
    'again: loop {
        cancel.check()?;
        let mut found: Vec<(usize, (u64, u64))> = Vec::new();
        for (index, path) in paths.iter().enumerate() {
            if let Some(meta) = inspect(path)? {
                found.push((index, (meta.dev(), meta.ino())));
            }
        }
        found.sort_by_key(|(_, key)| *key);
        for pair in found.windows(2) {
            if pair[0].1 == pair[1].1 {
                return Err(ChangeError::SameFile(
                    paths[pair[0].0].clone(),
                    paths[pair[1].0].clone(),
                ));
            }
        }
        let mut locked: Vec<Option<Locked>> = paths.iter().map(|_| None).collect();
        for (index, key) in found {
            let gate = Gate::enter(key, deadline, cancel)?;
            let path = &paths[index];
            let (file, meta) = match open_regular(path, false) {
                Ok(opened) => opened,
                Err(ChangeError::Io(error)) if error.kind() == std::io::ErrorKind::NotFound => continue 'again,
                Err(error) => return Err(error),
            };
            if (meta.dev(), meta.ino()) != key {
                continue 'again;
            }
            flock(&file, deadline, cancel)?;
            // Locked: but is it still the file the path names (not replaced while we waited)?
            let meta = file.metadata()?;
            match std::fs::symlink_metadata(path) {
                Ok(now) if (now.dev(), now.ino()) == key && meta.nlink() > 0 => {}
                _ => continue 'again,
            }
            let meta = Meta::of(&meta);
            locked[index] = Some(Locked {
                file,
                meta,
                content: OnceCell::new(),
                seen: Cell::new(meta.stamp),
                appended: RefCell::new(Vec::new()),
                gate,
            });
        }
        return Ok(paths
            .iter()
            .zip(locked)
            .map(|(path, locked)| Held {
                path: path.clone(),
                locked,
            })
            .collect());
    }
}

/// One path's new state in a [`transact`].
pub(crate) struct Write {
    /// Index into the held paths.
    pub(crate) index: usize,
    /// The new content; `None` removes the file.
    pub(crate) content: Option<Vec<u8>>,
    /// Whose mode and owner a new file takes (a move's source); by default the file's own,
    /// or `0666 & ~umask` for a new one.
    pub(crate) like: Option<usize>,
}

/// A new inode written beside its target, locked, waiting to be renamed into place.
struct Staged {
    temp: tempfile::NamedTempFile,
    gate: Gate,
}

/// What a staged inode is filled from: bytes in memory, or (putting back a file too large
/// to hold, [`MAX_CHANGE_BYTES`]) another open file, copied a piece at a time.
enum Source<'a> {
    Bytes(&'a [u8]),
    File(&'a File),
}

fn stage(path: &Path, content: Source<'_>, like: Option<&Meta>) -> Result<Staged, ChangeError> {
    let parent = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)?;
    // The mode goes to open(2), so the umask applies to it: 0666 & ~umask, as an editor.
    let mut temp = tempfile::Builder::new()
        .prefix(".toolgate-")
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(parent)?;
    match content {
        Source::Bytes(bytes) => temp.write_all(bytes)?,
        Source::File(file) => copy_at(file, temp.as_file_mut())?,
    }
    if let Some(meta) = like {
        let file = temp.as_file();
        // Owner first: chown clears set-id bits, which the mode then puts back. A process
        // that may not give the file away still keeps the group when it is one of its own.
        if std::os::unix::fs::fchown(file, Some(meta.uid), Some(meta.gid)).is_err() {
            let _ = std::os::unix::fs::fchown(file, None, Some(meta.gid));
        }
        file.set_permissions(std::fs::Permissions::from_mode(meta.mode & 0o7777))?;
    }
    let file_meta = temp.as_file().metadata()?;
    // Nobody else can know this inode yet: taking its locks cannot wait.
    let gate = Gate::enter(
        (file_meta.dev(), file_meta.ino()),
        Instant::now() + LOCK_WAIT,
        &Cancel::default(),
    )?;
    rustix::fs::flock(temp.as_file(), FlockOperation::NonBlockingLockExclusive)
        .map_err(|error| ChangeError::Io(error.into()))?;
    Ok(Staged { temp, gate })
}

/// Copies all of `from` (from offset 0, whatever its own offset) to `to`, 1 MiB at a time.
fn copy_at(from: &File, to: &mut File) -> std::io::Result<()> {
    let mut buffer = vec![0u8; 1 << 20];
    let mut offset = 0u64;
    loop {
        match from.read_at(&mut buffer, offset) {
            Ok(0) => return Ok(()),
            Ok(n) => {
                to.write_all(&buffer[..n])?;
                offset += n as u64;
            }
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
}

/// What one install did, to check afterwards and to undo.
enum Done {
    /// Renamed over an existing file; `file` is the new inode (locked).
    Replaced {
        index: usize,
        file: File,
        length: u64,
        _gate: Gate,
    },
    /// Created where nothing was; the new inode stays locked until the call is done.
    Created { index: usize, _file: File, _gate: Gate },
    /// Rewritten in place (hard-linked): the first `written` bytes are the new content,
    /// `before` is what they replaced.
    InPlace {
        index: usize,
        before: Vec<u8>,
        written: u64,
    },
    /// Removed.
    Deleted { index: usize },
}

/// What each write will do once checked.
enum Step {
    Stage(Staged),
    InPlace(Vec<u8>),
    Delete,
}

/// Applies `writes` to the `held` paths: every one or none. Nothing is written unless
/// every held file is still exactly what was locked; a failure part-way puts back every
/// file already changed.
pub(crate) fn transact(held: &[Held], writes: &[Write], cancel: &Cancel) -> Result<(), ChangeError> {
    // Prepare every new inode first, so the window between the check and the renames
    // holds no I/O but the renames.
    let mut steps = Vec::with_capacity(writes.len());
    for write in writes {
        let target = &held[write.index];
        let own = target.locked.as_ref().map(|locked| locked.meta);
        steps.push(match &write.content {
            None => Step::Delete,
            Some(content) => {
                if target.exists() {
                    // The OS decides who may write a file (mode, ACLs, read-only mounts,
                    // the immutable flag): a file the caller may not write is refused,
                    // not replaced behind its mode.
                    rustix::fs::accessat(rustix::fs::CWD, target.path(), Access::WRITE_OK, AtFlags::EACCESS)
                        .map_err(|error| ChangeError::Io(error.into()))?;
                }
                match own {
                    // In place, the old content must be at hand to put back on failure.
                    Some(meta) if meta.nlink > 1 && meta.stamp.size > MAX_CHANGE_BYTES => {
                        return Err(ChangeError::TooLarge(meta.stamp.size));
                    }
                    Some(meta) if meta.nlink > 1 => Step::InPlace(content.clone()),
                    _ => {
                        let like = write
                            .like
                            .and_then(|source| held[source].locked.as_ref().map(|locked| locked.meta))
                            .or(own);
                        Step::Stage(stage(target.path(), Source::Bytes(content), like.as_ref())?)
                    }
                }
            }
        });
    }
    cancel.check()?;
    // Lines another program appended meanwhile are not a conflict: they go into the new
    // content too (a few rounds, for a program that keeps appending). An append between
    // the last round and the check is carried by another round; any other change fails.
    let mut checks = 0;
    loop {
        carry_appends(held, writes, &mut steps)?;
        match held.iter().try_for_each(Held::unchanged) {
            Ok(()) => break,
            Err(ChangeError::Changed(_)) if checks < 16 => checks += 1,
            Err(error) => return Err(error),
        }
    }
    let mut done: Vec<Done> = Vec::with_capacity(writes.len());
    for (write, step) in writes.iter().zip(steps) {
        match install(held, write.index, step) {
            Ok(Some(record)) => done.push(record),
            Ok(None) => {}
            Err(error) => {
                undo(held, done, None);
                return Err(error);
            }
        }
    }
    // A program that opened a replaced file just before the rename may write to the old
    // inode after it: wait until nobody has the old inode open for writing (it has no name
    // any more, so nobody new can open it), then carry an append over, or undo everything
    // for any other change.
    let mut late: Option<(usize, Option<Vec<u8>>)> = None;
    // One scan of /proc for every replaced inode at once.
    let replaced: HashSet<(u64, u64)> = done
        .iter()
        .filter_map(|record| match record {
            Done::Replaced { index, .. } | Done::Deleted { index } => {
                held[*index].locked.as_ref().map(|locked| locked.meta.key())
            }
            _ => None,
        })
        .collect();
    wait_for_writers(&replaced, Instant::now() + WRITER_WAIT);
    for record in &done {
        let (index, length) = match record {
            Done::Replaced { index, length, .. } => (*index, Some(*length)),
            Done::Deleted { index } => (*index, None),
            _ => continue,
        };
        let Some(locked) = &held[index].locked else { continue };
        // Not the ctime: the rename itself changes it (the old inode lost its name).
        let now = Meta::of(&locked.file.metadata()?);
        let seen = locked.seen.get();
        if now.stamp.size == seen.size && now.stamp.mtime == seen.mtime {
            continue;
        }
        // A file too large to hold was never read: any late change of it undoes the call
        // (it is put back from the replaced inode itself, a piece at a time).
        if locked.content.get().is_none() || now.stamp.size > MAX_CHANGE_BYTES {
            late = Some((index, None));
            break;
        }
        let orphan = read_all_at(&locked.file, now.stamp.size)?;
        let before = locked.before();
        if before.as_ref().is_some_and(|before| *before == orphan) {
            continue;
        }
        let appended = match (before.as_deref(), length) {
            (Some(before), Some(_)) if orphan.len() > before.len() && orphan.starts_with(before) => {
                Some(&orphan[before.len()..])
            }
            _ => None,
        };
        match appended {
            Some(tail) => append(&held[index].path, record, tail)?,
            None => {
                late = Some((index, Some(orphan)));
                break;
            }
        }
    }
    if let Some(late) = late {
        let path = held[late.0].path.clone();
        undo(held, done, Some(late));
        return Err(ChangeError::Changed(path));
    }
    Ok(())
}

/// Carries what other programs appended since the lock into every write (a few rounds,
/// for a program that keeps appending): into a staged inode's content, or — rewritten in
/// place — left where it is, only checked to be an append.
fn carry_appends(held: &[Held], writes: &[Write], steps: &mut [Step]) -> Result<(), ChangeError> {
    for _ in 0..16 {
        let mut carried = false;
        for (write, step) in writes.iter().zip(steps.iter_mut()) {
            match step {
                Step::Stage(staged) => {
                    if let Some(tail) = held[write.index].carry_append()? {
                        staged.temp.write_all(&tail)?;
                        carried = true;
                    }
                }
                // The appended bytes stay after the new content (`rewrite_in_place`).
                Step::InPlace(_) => carried |= held[write.index].carry_append()?.is_some(),
                Step::Delete => {}
            }
        }
        if !carried {
            break;
        }
    }
    Ok(())
}

/// Waits until no process this one can see has one of the inodes `keys` open for writing, or the
/// deadline passes. `/proc/<pid>/fd` shows every descriptor of the processes of this user
/// (of every user, for root); a replaced inode shows there as `… (deleted)`.
fn wait_for_writers(keys: &HashSet<(u64, u64)>, deadline: Instant) {
    if keys.is_empty() {
        return;
    }
    let mut pause = Duration::from_micros(100);
    while writer_exists(keys) && Instant::now() < deadline {
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(2));
    }
}

/// Whether some visible process has one of the (replaced, nameless) inodes `keys` open for
/// writing. Every lookup is relative to an open directory and no name is built: the scan
/// costs about one `fstatat` per descriptor on the machine, which adds up with the number
/// of processes. The permission bits of a `/proc/<pid>/fd/<n>` link are the descriptor's
/// open mode (`S_IWUSR`: writable), so only writable descriptors are followed to their
/// inode. An inode number cannot be reused while this process keeps the inode open, as it
/// does until the change is done.
fn writer_exists(keys: &HashSet<(u64, u64)>) -> bool {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let Ok(processes) = rustix::fs::open("/proc", flags, rustix::fs::Mode::empty()) else {
        return false;
    };
    let Ok(listing) = rustix::fs::Dir::read_from(&processes) else {
        return false;
    };
    let mut fd_path = Vec::with_capacity(32);
    for process in listing.flatten() {
        let pid = process.file_name().to_bytes();
        if pid.is_empty() || !pid.iter().all(u8::is_ascii_digit) {
            continue;
        }
        fd_path.clear();
        fd_path.extend_from_slice(pid);
        fd_path.extend_from_slice(b"/fd");
        let Ok(descriptors) = rustix::fs::openat(&processes, fd_path.as_slice(), flags, rustix::fs::Mode::empty())
        else {
            continue;
        };
        let Ok(mut entries) = rustix::fs::Dir::new(descriptors) else {
            continue;
        };
        while let Some(Ok(descriptor)) = entries.read() {
            let name = descriptor.file_name();
            let Ok(directory) = entries.fd() else { break };
            if name.to_bytes().starts_with(b".") {
                continue;
            }
            let writable = rustix::fs::statat(directory, name, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|link| link.st_mode & 0o200 != 0);
            if writable
                && rustix::fs::statat(directory, name, AtFlags::empty())
                    .is_ok_and(|target| keys.contains(&(target.st_dev, target.st_ino)))
            {
                return true;
            }
        }
    }
    false
}

/// Appends `tail` to the inode `record` put at `path` (`O_APPEND`, so bytes other
/// programs append meanwhile are never overwritten).
fn append(path: &Path, record: &Done, tail: &[u8]) -> Result<(), ChangeError> {
    let Done::Replaced { file, .. } = record else {
        return Ok(());
    };
    let mut out = OpenOptions::new().append(true).custom_flags(open_flags()).open(path)?;
    let ours = file.metadata()?;
    let opened = out.metadata()?;
    if (ours.dev(), ours.ino()) != (opened.dev(), opened.ino()) {
        return Err(ChangeError::Changed(path.to_path_buf()));
    }
    out.write_all(tail)?;
    Ok(())
}

fn install(held: &[Held], index: usize, step: Step) -> Result<Option<Done>, ChangeError> {
    let target = &held[index];
    match step {
        Step::Stage(Staged { temp, gate }) => {
            let length = temp.as_file().metadata()?.len();
            if target.exists() {
                let file = temp.persist(target.path()).map_err(|error| error.error)?;
                Ok(Some(Done::Replaced {
                    index,
                    file,
                    length,
                    _gate: gate,
                }))
            } else {
                let file = temp.persist_noclobber(target.path()).map_err(|error| {
                    if error.error.kind() == std::io::ErrorKind::AlreadyExists {
                        ChangeError::Changed(target.path.clone())
                    } else {
                        ChangeError::Io(error.error)
                    }
                })?;
                Ok(Some(Done::Created {
                    index,
                    _file: file,
                    _gate: gate,
                }))
            }
        }
        Step::InPlace(content) => {
            let Some(locked) = &target.locked else {
                return Ok(None);
            };
            // What the file holds now, as far as this change knows: the locked content and
            // the appends carried since; the new content takes their place, and the
            // appended bytes stay after it.
            let Some(before) = locked.before() else {
                return Err(ChangeError::Changed(target.path.clone()));
            };
            let mut new = content;
            new.extend_from_slice(&locked.appended.borrow());
            rewrite_in_place(target.path(), locked.meta.key(), before.len() as u64, &new)?;
            Ok(Some(Done::InPlace {
                index,
                before,
                written: new.len() as u64,
            }))
        }
        Step::Delete => {
            if !target.exists() {
                return Ok(None);
            }
            target.unchanged()?;
            std::fs::remove_file(target.path())?;
            Ok(Some(Done::Deleted { index }))
        }
    }
}

/// Replaces the first `known` bytes of the inode `key` at `path` (a hard-linked file,
/// locked) with `new`, keeping every byte after them — and every byte another program
/// appends while this runs — after `new`, in the order they were written.
///
/// Another program that appends (`O_APPEND`, a shell's `>>`) writes at the end of the
/// file, whatever this one does; it does not take the lock. So this never writes past an
/// end it has seen except by appending itself, and never cuts the file:
/// - bytes are overwritten only below an end this has read up to (`fstat`, then read what
///   lies between), where no append can land;
/// - the file grows only by this process appending ([`place_tail`]); where an outside
///   append landed first, the two are swapped back into order within the known region;
/// - it shrinks only by `FALLOCATE_FL_COLLAPSE_RANGE` (ext4, XFS), which the kernel runs
///   under the inode's lock, ordered with every append. Where the file system cannot
///   collapse, the unwanted bytes are moved out and the file is cut right after a look
///   at its size: an append landing between that look and the cut (one system call) is
///   the one thing not kept — documented in README.md.
fn rewrite_in_place(path: &Path, key: (u64, u64), known: u64, new: &[u8]) -> Result<(), ChangeError> {
    let (file, meta) = open_regular(path, true)?;
    if (meta.dev(), meta.ino()) != key {
        return Err(ChangeError::Changed(path.to_path_buf()));
    }
    let appender = OpenOptions::new().append(true).custom_flags(open_flags()).open(path)?;
    if (appender.metadata()?.dev(), appender.metadata()?.ino()) != key {
        return Err(ChangeError::Changed(path.to_path_buf()));
    }
    let length = new.len() as u64;
    if length >= known {
        // Grow (or keep the size): overwrite what is known, append the rest.
        file.write_all_at(&new[..known as usize], 0)?;
        return place_tail(&file, &appender, known, new[known as usize..].to_vec());
    }
    // Shrink by `gap` bytes. The collapsed range must start and end on blocks: the new
    // content is laid out as [new[..at]] [gap rounded up to blocks] [new[at..]] [appends],
    // with `at` on a block and `new[at..]` not empty (a collapse may not reach the end).
    let block = meta.blksize().clamp(512, 1 << 20);
    let gap = known - length;
    let span = gap.div_ceil(block) * block;
    let at = if length == 0 { 0 } else { (length - 1) / block * block };
    let mut rest = vec![b'\n'; span as usize];
    rest.extend_from_slice(&new[at as usize..]);
    // `rest` goes at `at`: below `known` by overwriting, past it by appending.
    let below = (known - at) as usize;
    file.write_all_at(&new[..at as usize], 0)?;
    file.write_all_at(&rest[..below.min(rest.len())], at)?;
    place_tail(&file, &appender, known, rest[below.min(rest.len())..].to_vec())?;
    if length > 0 {
        match rustix::fs::fallocate(&file, rustix::fs::FallocateFlags::COLLAPSE_RANGE, at, span) {
            Ok(()) => return Ok(()),
            Err(rustix::io::Errno::OPNOTSUPP | rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {}
            Err(error) => return Err(ChangeError::Io(error.into())),
        }
    }
    // No collapse here: move everything after the range down over it, then cut.
    loop {
        let end = file.metadata()?.len();
        let after = read_range(&file, at + span, end)?;
        file.write_all_at(&after, at)?;
        if file.metadata()?.len() == end {
            file.set_len(end - span)?;
            return Ok(());
        }
    }
}

/// Appends `ours` to `file` (open at `appender` with `O_APPEND`) so that it lands at
/// `at`, before anything another program appends after `at` — which it may have done
/// already, or do at any moment. Only bytes below an end already read are overwritten.
fn place_tail(file: &File, appender: &File, mut at: u64, mut ours: Vec<u8>) -> Result<(), ChangeError> {
    use std::io::Seek as _;
    let mut appender = appender;
    loop {
        // Outside appends already past `at`: ours go before them. Swap within what is
        // known; what remains to append is the tail of (ours, theirs).
        let end = file.metadata()?.len();
        if end > at {
            let theirs = read_range(file, at, end)?;
            let mut both = std::mem::take(&mut ours);
            both.extend_from_slice(&theirs);
            let known = (end - at) as usize;
            file.write_all_at(&both[..known], at)?;
            ours = both.split_off(known);
            at = end;
        }
        if ours.is_empty() {
            return Ok(());
        }
        let written = appender.write(&ours)?;
        let landed_end = appender.stream_position()?;
        let landed = landed_end - written as u64;
        if landed > at {
            // Someone appended between the look and the write: theirs are at
            // [at, landed), ours after. Put ours first; both are known now.
            let theirs = read_range(file, at, landed)?;
            let mut both = ours[..written].to_vec();
            both.extend_from_slice(&theirs);
            file.write_all_at(&both, at)?;
        }
        at = landed_end;
        ours.drain(..written);
    }
}

/// The bytes of `file` in `[from, to)` (fewer if it is shorter).
fn read_range(file: &File, from: u64, to: u64) -> Result<Vec<u8>, ChangeError> {
    let mut bytes = vec![0u8; to.saturating_sub(from) as usize];
    let mut filled = 0usize;
    while filled < bytes.len() {
        match file.read_at(&mut bytes[filled..], from + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error.into()),
        }
    }
    bytes.truncate(filled);
    Ok(bytes)
}

/// Puts back every file in `done`, newest first. `late` is a file whose replaced inode
/// an outside program changed after the check: what goes back there is its content now
/// (`None`: copied from that inode itself, too large to hold).
fn undo(held: &[Held], done: Vec<Done>, late: Option<(usize, Option<Vec<u8>>)>) {
    for record in done.into_iter().rev() {
        let index = match &record {
            Done::Replaced { index, .. }
            | Done::Created { index, .. }
            | Done::InPlace { index, .. }
            | Done::Deleted { index } => *index,
        };
        let target = &held[index];
        let previous = || -> Option<Result<Staged, ChangeError>> {
            let locked = target.locked.as_ref()?;
            let like = Some(&locked.meta);
            if let Some((late_index, content)) = &late
                && *late_index == index
            {
                return Some(match content {
                    Some(content) => stage(target.path(), Source::Bytes(content), like),
                    None => stage(target.path(), Source::File(&locked.file), like),
                });
            }
            Some(match locked.before() {
                Some(content) => stage(target.path(), Source::Bytes(&content), like),
                // Never read (too large to hold): the replaced inode still has it.
                None => stage(target.path(), Source::File(&locked.file), like),
            })
        };
        let meta = target.locked.as_ref().map(|locked| locked.meta);
        let _ = match record {
            Done::Created { .. } => std::fs::remove_file(target.path()).map_err(ChangeError::Io),
            Done::InPlace { before, written, .. } => match meta {
                Some(meta) => rewrite_in_place(target.path(), meta.key(), written, &before),
                None => Ok(()),
            },
            Done::Replaced { .. } => match previous() {
                Some(staged) => staged
                    .and_then(|staged| staged.temp.persist(target.path()).map_err(|error| error.error.into()))
                    .map(drop),
                None => Ok(()),
            },
            Done::Deleted { .. } => match previous() {
                Some(staged) => staged
                    .and_then(|staged| {
                        staged
                            .temp
                            .persist_noclobber(target.path())
                            .map_err(|error| error.error.into())
                    })
                    .map(drop),
                None => Ok(()),
            },
        };
    }
}
