//! The audit log's writer: one thread per log that appends the lines the callers queue,
//! chained by hash, under a lock shared by every process writing the same log.
//!
//! Callers only serialise their record and queue it (a bounded queue: a writer that
//! falls behind slows the callers down rather than dropping records), so a decision on
//! the serving thread costs no file system call. The writer takes whatever is queued,
//! then, holding `<log>.lock` (an advisory lock every toolgate process takes), finds the
//! chain's head (the last record it wrote itself when the file is as it left it, else the
//! last line of the file or of the newest rotated one), gives each line its `seq` and the
//! hash of the line before it (`prev`), rotates when the file is full, and writes the
//! batch with one `write` call.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use super::Retention;

/// How many records may wait for the writer before callers wait for it.
pub(crate) const QUEUE: usize = 8192;

/// The hash the first record of a log chains to.
pub(crate) const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// What the writer is asked to do.
pub(crate) enum Job {
    /// Append one record: its JSON object, without `seq` and `prev` (the writer adds them).
    Line(Vec<u8>),
    /// Answer once every record queued before this one is written.
    Flush(SyncSender<()>),
}

/// The lowercase hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for byte in digest.iter() {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// `<path>.<n>`: the `n`-th rotated file (1 is the newest).
pub(crate) fn rotated(path: &Path, n: usize) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

/// The lock file every process writing `path` takes: never renamed, so a rotation by one
/// process cannot let another write to the old file unlocked.
fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".lock");
    PathBuf::from(name)
}

/// The end of the chain: the last record's `seq` and hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Head {
    pub(crate) seq: u64,
    pub(crate) hash: String,
}

impl Head {
    fn genesis() -> Head {
        Head {
            seq: 0,
            hash: GENESIS.to_string(),
        }
    }
}

/// The writer thread's state.
struct Writer {
    path: PathBuf,
    retention: Retention,
    /// The lock file, once opened.
    lock: Option<File>,
    /// The log as this writer left it: its inode and size, and the chain's head then.
    known: Option<(u64, u64, Head)>,
    /// The open log and its inode.
    open: Option<(File, u64)>,
}

/// Runs the writer for `path` until every sender is gone; records that cannot be written
/// are counted in `failed` (a full disk must not stop the tools, but it is not hidden:
/// `toolgate audit verify` and the log's own `failed` counter tell).
pub(crate) fn run(
    path: PathBuf,
    retention: Retention,
    jobs: Receiver<Job>,
    failed: std::sync::Arc<std::sync::atomic::AtomicU64>,
) {
    let mut writer = Writer {
        path,
        retention,
        lock: None,
        known: None,
        open: None,
    };
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let mut flushes: Vec<SyncSender<()>> = Vec::new();
    loop {
        let first = match jobs.recv_timeout(Duration::from_secs(60)) {
            Ok(job) => job,
            Err(RecvTimeoutError::Timeout) => {
                // An idle writer lets go of the file: it may be rotated or removed.
                writer.open = None;
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => return,
        };
        take(first, &mut lines, &mut flushes);
        // Whatever else is queued goes in the same batch: one lock, one write.
        while lines.len() < 1024 {
            match jobs.try_recv() {
                Ok(job) => take(job, &mut lines, &mut flushes),
                Err(_) => break,
            }
        }
        if !lines.is_empty() {
            let count = lines.len() as u64;
            if writer.append(&lines).is_err() {
                failed.fetch_add(count, std::sync::atomic::Ordering::Relaxed);
                writer.open = None;
                writer.known = None;
            }
            lines.clear();
        }
        for done in flushes.drain(..) {
            let _ = done.send(());
        }
    }
}

/// Sorts one job into the batch's lines or its flushes.
fn take(job: Job, lines: &mut Vec<Vec<u8>>, flushes: &mut Vec<SyncSender<()>>) {
    match job {
        Job::Line(line) => lines.push(line),
        Job::Flush(done) => flushes.push(done),
    }
}

impl Writer {
    fn append(&mut self, lines: &[Vec<u8>]) -> std::io::Result<()> {
        if let Some(parent) = self.path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        if self.lock.is_none() {
            let lock = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(lock_path(&self.path))?;
            self.lock = Some(lock);
        }
        let Some(lock) = self.lock.as_ref() else {
            return Err(std::io::Error::other("the audit lock file is not open"));
        };
        lock.lock()?;
        let result = self.append_locked(lines);
        if let Some(lock) = self.lock.as_ref() {
            let _ = lock.unlock();
        }
        result
    }

    fn append_locked(&mut self, lines: &[Vec<u8>]) -> std::io::Result<()> {
        let current = std::fs::metadata(&self.path).ok();
        let mut head = match (&self.known, &current) {
            (Some((ino, size, head)), Some(meta)) if meta.ino() == *ino && meta.len() == *size => head.clone(),
            _ => read_head(&self.path)?,
        };
        let mut size = current.as_ref().map_or(0, |meta| meta.len());
        if size >= self.retention.file_bytes() {
            self.rotate()?;
            size = 0;
        }
        let reopen = match (&self.open, std::fs::metadata(&self.path).ok()) {
            (Some((_, ino)), Some(meta)) => meta.ino() != *ino,
            _ => true,
        };
        if reopen {
            let file = std::fs::OpenOptions::new().create(true).append(true).open(&self.path)?;
            let meta = file.metadata()?;
            size = meta.len();
            self.open = Some((file, meta.ino()));
        }
        let mut batch = Vec::with_capacity(lines.iter().map(|line| line.len() + 96).sum());
        for line in lines {
            let seq = head.seq + 1;
            let start = batch.len();
            batch.extend_from_slice(format!("{{\"seq\":{seq},\"prev\":\"{}\"", head.hash).as_bytes());
            // `line` is a JSON object: `{` then its fields, or `{}`.
            match line.get(1..) {
                Some(b"}") | None => batch.push(b'}'),
                Some(rest) => {
                    batch.push(b',');
                    batch.extend_from_slice(rest);
                }
            }
            head = Head {
                seq,
                hash: sha256_hex(&batch[start..]),
            };
            batch.push(b'\n');
        }
        let Some((file, ino)) = self.open.as_mut() else {
            return Err(std::io::Error::other("the audit log is not open"));
        };
        // One write call for the batch with O_APPEND: lines stay whole.
        file.write_all(&batch)?;
        self.known = Some((*ino, size + batch.len() as u64, head));
        Ok(())
    }

    /// Moves `path` to `.1`, each `.n` to `.n+1`, drops what is past the retention's
    /// file count, and removes rotated files older than its age.
    fn rotate(&mut self) -> std::io::Result<()> {
        let keep = self.retention.files.saturating_sub(1).max(1);
        let _ = std::fs::remove_file(rotated(&self.path, keep));
        for n in (1..keep).rev() {
            let from = rotated(&self.path, n);
            if from.exists() {
                std::fs::rename(&from, rotated(&self.path, n + 1))?;
            }
        }
        std::fs::rename(&self.path, rotated(&self.path, 1))?;
        self.open = None;
        if let Some(max_age) = self.retention.max_age {
            let now = SystemTime::now();
            for n in 2..=keep {
                let file = rotated(&self.path, n);
                let old = std::fs::metadata(&file)
                    .and_then(|meta| meta.modified())
                    .ok()
                    .and_then(|modified| now.duration_since(modified).ok())
                    .is_some_and(|age| age > max_age);
                if old {
                    let _ = std::fs::remove_file(file);
                }
            }
        }
        Ok(())
    }
}

/// The chain's head as the files say: the last record of the log, or of its newest
/// rotated file when the log is empty or missing, or the genesis.
pub(crate) fn read_head(path: &Path) -> std::io::Result<Head> {
    for file in [path.to_path_buf(), rotated(path, 1)] {
        if let Some(head) = last_record(&file)? {
            return Ok(head);
        }
    }
    Ok(Head::genesis())
}

/// The `seq` and hash of the last whole line of `file`, when it has one that names a
/// `seq` (a log written before the chain existed has none: the chain starts afresh).
fn last_record(file: &Path) -> std::io::Result<Option<Head>> {
    // Only a regular file is read back: opening a pipe or a device could wait forever.
    match std::fs::metadata(file) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return Ok(None),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    }
    let mut opened = match File::open(file) {
        Ok(opened) => opened,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    };
    let len = opened.metadata()?.len();
    // A record is bounded (see `bound`), so its line fits in the last 256 KiB.
    let from = len.saturating_sub(256 * 1024);
    opened.seek(SeekFrom::Start(from))?;
    let mut tail = Vec::new();
    opened.read_to_end(&mut tail)?;
    let body = match tail.strip_suffix(b"\n") {
        Some(body) => body,
        // A line cut short (a crash mid-write) is not a record: the one before is.
        None => match tail.iter().rposition(|b| *b == b'\n') {
            Some(end) => &tail[..end],
            None => return Ok(None),
        },
    };
    let line = match body.iter().rposition(|b| *b == b'\n') {
        Some(start) => &body[start + 1..],
        None if from == 0 => body,
        None => return Ok(None),
    };
    let seq = serde_json::from_slice::<serde_json::Value>(line)
        .ok()
        .and_then(|value| value.get("seq").and_then(serde_json::Value::as_u64));
    Ok(seq.map(|seq| Head {
        seq,
        hash: sha256_hex(line),
    }))
}
