//! A local server's process: started in its own process group without toolgate's own
//! variables, under the prefix its config gives (the sandbox trampoline), its stderr
//! copied into a bounded, rotated log.
//!
//! A server's stderr used to be appended to its log file directly, so a server writing
//! without pause filled the disk. Now toolgate reads the pipe and writes the log itself:
//! past [`LogLimits::max_bytes`] the file is rotated (`<server>.log` → `<server>.log.1`
//! → … up to [`LogLimits::keep`] old files), and the last lines stay in memory for the
//! reason a failed start gives.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;

/// How big a server's stderr log may grow (see [`crate::Options::log_limits`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogLimits {
    /// The size at which the current file is rotated.
    pub max_bytes: u64,
    /// How many rotated files are kept (`.1` is the newest).
    pub keep: u32,
}

impl Default for LogLimits {
    /// 1 MiB per file, two old files kept: at most 3 MiB per server.
    fn default() -> Self {
        LogLimits {
            max_bytes: 1 << 20,
            keep: 2,
        }
    }
}

/// How much of the newest stderr is kept in memory for a failed start's reason.
const TAIL_BYTES: usize = 4096;

/// The stderr of one running server: the copier's tail and its end.
pub(crate) struct Stderr {
    tail: Arc<Mutex<VecDeque<u8>>>,
    done: tokio::sync::watch::Receiver<bool>,
}

impl Stderr {
    /// The last lines the server wrote (up to three), on one line; waits up to `within`
    /// for the copier to reach the pipe's end (a dying server's last words).
    pub(crate) async fn last_words(&mut self, within: Duration) -> String {
        let _ = tokio::time::timeout(within, self.done.wait_for(|done| *done)).await;
        let bytes: Vec<u8> = self
            .tail
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .iter()
            .copied()
            .collect();
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
        let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
        let (clean, _) = crate::sanitize::clean(&tail);
        clean.chars().take(500).collect()
    }
}

/// The log file being written, rotated past its limit.
struct RotatingLog {
    path: PathBuf,
    file: Option<std::fs::File>,
    size: u64,
    limits: LogLimits,
}

impl RotatingLog {
    fn open(path: &Path, limits: LogLimits) -> RotatingLog {
        let mut log = RotatingLog {
            path: path.to_path_buf(),
            file: None,
            size: 0,
            limits,
        };
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        log.size = std::fs::metadata(path).map_or(0, |meta| meta.len());
        if log.size >= limits.max_bytes {
            log.rotate();
        }
        log.file = Self::append(path);
        log
    }

    fn append(path: &Path) -> Option<std::fs::File> {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
            .ok()
    }

    fn rotated(&self, n: u32) -> PathBuf {
        let mut name = self.path.clone().into_os_string();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    }

    /// `.keep` is dropped, each `.n` becomes `.n+1`, the current file `.1`.
    fn rotate(&mut self) {
        self.file = None;
        if self.limits.keep == 0 {
            let _ = std::fs::remove_file(&self.path);
        } else {
            let _ = std::fs::remove_file(self.rotated(self.limits.keep));
            for n in (1..self.limits.keep).rev() {
                let _ = std::fs::rename(self.rotated(n), self.rotated(n + 1));
            }
            let _ = std::fs::rename(&self.path, self.rotated(1));
        }
        self.size = 0;
        self.file = Self::append(&self.path);
    }

    fn write(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let room = usize::try_from(self.limits.max_bytes.saturating_sub(self.size)).unwrap_or(usize::MAX);
            if room == 0 {
                self.rotate();
                continue;
            }
            let (now, later) = bytes.split_at(bytes.len().min(room));
            if let Some(file) = &mut self.file {
                // A log that cannot be written loses lines, never the server.
                let _ = file.write_all(now);
            }
            self.size += now.len() as u64;
            bytes = later;
        }
    }
}

/// Copies `stderr` into the rotated log at `log` until the pipe ends.
fn copy(mut stderr: tokio::process::ChildStderr, log: &Path, limits: LogLimits) -> Stderr {
    let tail = Arc::new(Mutex::new(VecDeque::with_capacity(TAIL_BYTES)));
    let (done_tx, done) = tokio::sync::watch::channel(false);
    let mut file = RotatingLog::open(log, limits);
    let kept = Arc::clone(&tail);
    tokio::spawn(async move {
        let mut buffer = vec![0u8; 16 * 1024];
        loop {
            match stderr.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    file.write(&buffer[..n]);
                    let mut tail = kept.lock().unwrap_or_else(|poison| poison.into_inner());
                    tail.extend(&buffer[..n]);
                    let excess = tail.len().saturating_sub(TAIL_BYTES);
                    tail.drain(..excess);
                }
            }
        }
        let _ = done_tx.send(true);
    });
    Stderr { tail, done }
}

/// What starts one local server.
pub(crate) struct Spawn<'a> {
    pub(crate) command: &'a [String],
    pub(crate) environment: &'a [(String, String)],
    pub(crate) cwd: &'a Path,
    pub(crate) log: &'a Path,
    pub(crate) limits: LogLimits,
    /// Run the command under this prefix (the sandbox trampoline and its policy).
    pub(crate) wrapper: &'a [String],
}

/// Starts a local server in its own process group, without toolgate's own variables,
/// its stderr copied into its log.
pub(crate) fn spawn(how: &Spawn<'_>) -> Result<(tokio::process::Child, Stderr), String> {
    let (program, args) = how.command.split_first().ok_or("the command is empty")?;
    let (runner, before) = match how.wrapper.split_first() {
        Some((runner, before)) => (runner, before),
        None => (program, &[][..]),
    };
    let mut child = tokio::process::Command::new(runner);
    if !how.wrapper.is_empty() {
        child.args(before).arg(program);
    }
    child
        .args(args)
        .current_dir(how.cwd)
        .env_clear()
        .envs(std::env::vars_os().filter(|(key, _)| !is_toolgate_secret(key)))
        .envs(how.environment.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = child.spawn().map_err(|e| format!("could not start `{program}`: {e}"))?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| "the server's stderr could not be opened".to_string())?;
    let stderr = copy(stderr, how.log, how.limits);
    Ok((child, stderr))
}

/// toolgate's own variables (`TOOLGATE_*`, the server token among them) and the websearch
/// keys: a server inherits neither (its config's `environment` may still name them).
fn is_toolgate_secret(name: &std::ffi::OsStr) -> bool {
    let name = name.as_encoded_bytes();
    name.len() >= 9 && name[..9].eq_ignore_ascii_case(b"TOOLGATE_")
        || [&b"EXA_API_KEY"[..], b"PARALLEL_API_KEY"]
            .iter()
            .any(|key| name.eq_ignore_ascii_case(key))
}

/// Kills the process group of `child` (a server given up on) at once.
pub(crate) fn kill_group(child: &tokio::process::Child) {
    if let Some(pid) = child.id()
        && let Some(pgid) = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap_or(0))
    {
        let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_log_rotates_and_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.log");
        let limits = LogLimits {
            max_bytes: 100,
            keep: 2,
        };
        let mut log = RotatingLog::open(&path, limits);
        for _ in 0..50 {
            log.write(&[b'x'; 33]);
        }
        log.write(b"last");
        drop(log);
        let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
        assert!(size(&path) <= 100);
        assert_eq!(size(&dir.path().join("s.log.1")), 100);
        assert_eq!(size(&dir.path().join("s.log.2")), 100);
        assert!(!dir.path().join("s.log.3").exists());
        assert!(std::fs::read_to_string(&path).unwrap().ends_with("last"));
        // A file over the limit from before is rotated when the server starts again.
        std::fs::write(&path, vec![b'y'; 150]).unwrap();
        let log = RotatingLog::open(&path, limits);
        drop(log);
        assert_eq!(size(&path), 0);
        assert_eq!(size(&dir.path().join("s.log.1")), 150);
    }
}
