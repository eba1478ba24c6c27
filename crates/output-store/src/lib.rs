//! The one place tool output is bounded.
//!
//! Every successful output passes through [`OutputStore`] (it implements
//! [`toolgate_core::OutputBound`]). What is counted is what the model would read: the text
//! content of the output or, when it has none, its structured value as pretty JSON. When
//! that exceeds the limits (2000 lines / 50 KB by default), the full text is written to
//! `<data>/tool-output/tool_<ascending id>` and the model gets the head, the tail and a
//! marker naming the file. A failed write fails the call: output is never silently lost.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let data = tempfile::tempdir()?;
//! let store = toolgate_output_store::OutputStore::new(data.path())
//!     .with_limits(toolgate_output_store::Limits::default().max_lines(10).max_bytes(400));
//! let long: String = (1..=100).map(|n| format!("line {n}\n")).collect();
//! let cut = store.truncate(&long, None)?;
//! assert!(cut.truncated);
//! assert!(cut.content.starts_with("line 1\n"));
//! assert!(cut.content.contains("... output truncated"));
//! assert_eq!(std::fs::read_to_string(cut.output_path.unwrap())?, long);
//! # Ok(()) }
//! ```

mod preview;
mod redact;

use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use toolgate_core::Content;

pub use preview::bounded_preview;
pub use redact::{MIN_SECRET_BYTES, RedactError, Redactor, RedactorBuilder, credential_kinds};

/// Default line limit.
pub const MAX_LINES: usize = 2000;
/// Default byte limit (50 KiB).
pub const MAX_BYTES: usize = 51_200;
/// Largest inline media part, counted as base64 bytes (5 MiB).
pub const MAX_INLINE_MEDIA_BYTES: usize = 5 * 1024 * 1024;
/// Spill files older than this are removed by [`OutputStore::cleanup`].
pub const RETENTION: Duration = Duration::from_secs(7 * 24 * 60 * 60);
/// How often the background cleanup runs.
pub const CLEANUP_INTERVAL: Duration = Duration::from_secs(60 * 60);
/// How often [`OutputStore::cleanup_if_due`] scans: short-lived processes (one `toolgate
/// call` each) clean at most once a day between them.
pub const CLEANUP_DUE: Duration = Duration::from_secs(24 * 60 * 60);
/// The file in the spill directory whose modification time is the last cleanup's
/// (not a spill: its name does not start with `tool_`).
pub const CLEANUP_MARKER: &str = ".last-cleanup";
/// The kind under which a call's audit record counts the ANSI escapes, bidi controls and
/// invisible characters the tool stripped from its output (an MCP server's result).
pub const STRIPPED_KIND: &str = "stripped-invisible";

/// Line and byte limits (config `tool_output.{max_lines,max_bytes}`): [`Limits::default`],
/// then setters (more may come, hence `#[non_exhaustive]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// At most this many `\n`-separated lines.
    pub max_lines: usize,
    /// At most this many UTF-8 bytes.
    pub max_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_lines: MAX_LINES,
            max_bytes: MAX_BYTES,
        }
    }
}

impl Limits {
    /// The same limits with another line limit.
    pub fn max_lines(mut self, lines: usize) -> Limits {
        self.max_lines = lines;
        self
    }

    /// The same limits with another byte limit.
    pub fn max_bytes(mut self, bytes: usize) -> Limits {
        self.max_bytes = bytes;
        self
    }

    fn admits(&self, text: &str) -> bool {
        // Short-circuit: a text over the byte limit is not scanned for lines here.
        text.len() <= self.max_bytes && preview::line_count(text) <= self.max_lines
    }
}

/// The result of [`OutputStore::truncate`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Truncated {
    /// The content to show: the original, or a bounded preview.
    pub content: String,
    /// True when the content was cut.
    pub truncated: bool,
    /// The file holding the full content, when it was cut.
    pub output_path: Option<PathBuf>,
}

/// Bounds tool output and keeps the full text of what it cuts.
#[derive(Clone, Debug)]
pub struct OutputStore {
    dir: PathBuf,
    limits: Limits,
    redactor: Option<Redactor>,
}

impl OutputStore {
    /// A store whose spill files live in `<data_dir>/tool-output`, with default limits.
    ///
    /// A relative `data_dir` is taken from the current directory now, so every path the
    /// store reports is absolute.
    pub fn new(data_dir: impl AsRef<Path>) -> Self {
        let data_dir = data_dir.as_ref();
        let data_dir = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
        OutputStore {
            dir: data_dir.join("tool-output"),
            limits: Limits::default(),
            redactor: None,
        }
    }

    /// The same store redacting secrets with `redactor` before anything is counted,
    /// spilled or shown (README "Redaction"): the spill file holds the redacted text too,
    /// since the model may read it. `None` (the default) redacts nothing.
    pub fn with_redactor(mut self, redactor: Option<Redactor>) -> Self {
        self.redactor = redactor;
        self
    }

    /// The redactor, when one is set.
    pub fn redactor(&self) -> Option<&Redactor> {
        self.redactor.as_ref()
    }

    /// The same store with other limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The configured limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The spill directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `content` to a new spill file and returns its absolute path.
    ///
    /// The file is written under a temporary name and moved into place without replacing
    /// anything, so a half-written spill is never visible under a `tool_<id>` name.
    pub fn write(&self, content: &str) -> Result<PathBuf, BoundError> {
        let storage = |operation, path: &Path| {
            let path = path.to_path_buf();
            move |source| BoundError::Storage {
                operation,
                path,
                source,
            }
        };
        std::fs::create_dir_all(&self.dir).map_err(storage("create directory", &self.dir))?;
        let mut file = tempfile::Builder::new()
            .prefix("tool_")
            .suffix(".partial")
            .tempfile_in(&self.dir)
            .map_err(storage("create a file in", &self.dir))?;
        file.write_all(content.as_bytes())
            .and_then(|()| file.flush())
            .map_err(storage("write", file.path()))?;
        let path = self.dir.join(toolgate_core::ascending_id("tool"));
        file.persist_noclobber(&path).map_err(|error| BoundError::Storage {
            operation: "write",
            path: path.clone(),
            source: error.error,
        })?;
        Ok(path)
    }

    /// Bounds plain text (spec §3.3): unchanged when within the limits (per-call
    /// `limits` override the store's), else spilled and replaced by a preview.
    pub fn truncate(&self, content: &str, limits: Option<Limits>) -> Result<Truncated, BoundError> {
        let limits = limits.unwrap_or(self.limits);
        if limits.admits(content) {
            return Ok(Truncated {
                content: content.to_string(),
                truncated: false,
                output_path: None,
            });
        }
        let path = self.write(content)?;
        Ok(Truncated {
            content: preview::with_marker(content, &path, limits),
            truncated: true,
            output_path: Some(path),
        })
    }

    /// Removes spill files (`tool_*`) last modified more than [`RETENTION`] ago and
    /// nothing else (spec §3.6), and records when ([`CLEANUP_MARKER`]). Errors are
    /// ignored: cleanup is best effort. Returns how many it removed.
    pub fn cleanup(&self) -> usize {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return 0;
        };
        self.mark_cleaned();
        let cutoff = SystemTime::now()
            .checked_sub(RETENTION)
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let mut removed = 0;
        for entry in entries.flatten() {
            if !entry.file_name().to_string_lossy().starts_with("tool_") {
                continue;
            }
            let modified = entry
                .metadata()
                .and_then(|meta| meta.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            if modified < cutoff && std::fs::remove_file(entry.path()).is_ok() {
                removed += 1;
            }
        }
        removed
    }

    /// Runs [`OutputStore::cleanup`] when none ran for [`CLEANUP_DUE`] (a day), in any
    /// process: `None` when it was not due. For front ends that live for one call, which
    /// would never reach [`OutputStore::spawn_cleanup`]'s first pass or the spec's hourly
    /// one (§3.1, §3.6); a call costs one `stat` of the marker on the days it is not due.
    pub fn cleanup_if_due(&self) -> Option<usize> {
        self.cleanup_unless_within(CLEANUP_DUE)
    }

    /// [`OutputStore::cleanup`] unless one ran less than `age` ago.
    fn cleanup_unless_within(&self, age: Duration) -> Option<usize> {
        let last = std::fs::metadata(self.dir.join(CLEANUP_MARKER)).and_then(|meta| meta.modified());
        if let Ok(last) = last
            && last.elapsed().is_ok_and(|elapsed| elapsed < age)
        {
            return None;
        }
        Some(self.cleanup())
    }

    /// Sets the marker's time to now (creating it): the next [`CLEANUP_DUE`] passes
    /// without a scan. Taken first, so processes starting together scan once.
    fn mark_cleaned(&self) {
        let marker = self.dir.join(CLEANUP_MARKER);
        if let Ok(file) = std::fs::OpenOptions::new().create(true).append(true).open(&marker) {
            let _ = file.set_modified(SystemTime::now());
        }
    }

    /// Runs [`OutputStore::cleanup`] now and then every hour on `runtime`, until the
    /// returned task is dropped. Start one per process. The first pass is skipped when
    /// any process cleaned within the hour ([`CLEANUP_MARKER`]): the spec's one scanner an
    /// hour (§3.1), however many processes start.
    pub fn spawn_cleanup(&self, runtime: &tokio::runtime::Handle) -> CleanupTask {
        let store = self.clone();
        let handle = runtime.spawn(async move {
            let mut first = true;
            loop {
                let pass = store.clone();
                let within = if first { CLEANUP_INTERVAL } else { Duration::ZERO };
                first = false;
                // Directory scans block; keep them off the async workers.
                let _ = tokio::task::spawn_blocking(move || pass.cleanup_unless_within(within)).await;
                tokio::time::sleep(CLEANUP_INTERVAL).await;
            }
        });
        CleanupTask { handle }
    }

    /// The synchronous bound (spec §3.5, with our counting rule).
    pub fn bound_now(&self, mut output: ToolOutput) -> Result<Bounded, BoundError> {
        let mut redactions = match &self.redactor {
            Some(redactor) => redact_output(redactor, &mut output),
            None => Vec::new(),
        };
        // What the tool stripped itself is counted with what the boundary redacted: the
        // audit record of the call says both (kinds and counts, never the characters).
        if output.stripped > 0 {
            redactions.push(Redaction::new(STRIPPED_KIND, output.stripped));
        }
        self.bound_redacted(output)
            .map(|bounded| bounded.with_redactions(redactions))
    }

    fn bound_redacted(&self, output: ToolOutput) -> Result<Bounded, BoundError> {
        for part in &output.content {
            if let Content::Media { mime, data, .. } = part
                && data.len() > MAX_INLINE_MEDIA_BYTES
            {
                return Err(BoundError::MediaLimit {
                    mime: mime.clone(),
                    bytes: data.len(),
                    limit: MAX_INLINE_MEDIA_BYTES,
                });
            }
        }
        let has_media = output.content.iter().any(Content::is_media);
        let preview = {
            let counted = counted_text(&output)?;
            if self.limits.admits(&counted) {
                None
            } else {
                let path = self.write(&counted)?;
                Some((preview::with_marker(&counted, &path, self.limits), path))
            }
        };
        let ToolOutput {
            structured, content, ..
        } = output;
        match preview {
            // Media and structured data would describe the same thing twice.
            None => Ok(Bounded::new(
                ToolOutput::new(if has_media { empty_object() } else { structured }, content),
                Vec::new(),
            )),
            Some((text, path)) => {
                let mut parts = vec![Content::text(text)];
                parts.extend(content.into_iter().filter(Content::is_media));
                Ok(Bounded::new(ToolOutput::new(empty_object(), parts), vec![path]))
            }
        }
    }
}

/// Redacts the text parts and the structured value of `output` in place (media is left:
/// base64 is not what the model reads as text).
fn redact_output(redactor: &Redactor, output: &mut ToolOutput) -> Vec<Redaction> {
    let mut found = Vec::new();
    for part in &mut output.content {
        if let Content::Text { text, .. } = part
            && let Some((new, more)) = redactor.redact(text)
        {
            *text = new;
            redact::merge(&mut found, more);
        }
    }
    redactor.redact_json(&mut output.structured, &mut found);
    found
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(serde_json::Map::new())
}

/// What the model would read: the text parts (joined by newlines), or the structured
/// value as pretty JSON when there is no text.
fn counted_text(output: &ToolOutput) -> Result<Cow<'_, str>, BoundError> {
    let mut texts = output.content.iter().filter_map(Content::as_text);
    match (texts.next(), texts.next()) {
        (None, _) => serde_json::to_string_pretty(&output.structured)
            .map(Cow::Owned)
            .map_err(|error| BoundError::Encode(error.to_string())),
        (Some(only), None) => Ok(Cow::Borrowed(only)),
        (Some(_), Some(_)) => {
            let all: Vec<&str> = output.content.iter().filter_map(Content::as_text).collect();
            Ok(Cow::Owned(all.join("\n")))
        }
    }
}

impl OutputBound for OutputStore {
    fn bound<'a>(&'a self, _ctx: &'a Context, output: ToolOutput) -> BoxFuture<'a, Result<Bounded, BoundError>> {
        Box::pin(async move {
            let text_bytes: usize = output.content.iter().filter_map(Content::as_text).map(str::len).sum();
            // Small outputs are bounded in place; a large one means scanning and writing
            // megabytes, which must not stall an async worker.
            let runtime = tokio::runtime::Handle::try_current();
            match runtime {
                Ok(runtime) if text_bytes > self.limits.max_bytes => {
                    let store = self.clone();
                    runtime
                        .spawn_blocking(move || store.bound_now(output))
                        .await
                        .map_err(|error| BoundError::Storage {
                            operation: "write",
                            path: self.dir.clone(),
                            source: std::io::Error::other(error.to_string()),
                        })?
                }
                _ => self.bound_now(output),
            }
        })
    }

    fn redact_message(&self, message: &str) -> Option<(String, Vec<Redaction>)> {
        self.redactor.as_ref().and_then(|redactor| redactor.redact(message))
    }
}

/// The background cleanup started by [`OutputStore::spawn_cleanup`]; dropping it stops it.
#[derive(Debug)]
pub struct CleanupTask {
    handle: tokio::task::JoinHandle<()>,
}

impl Drop for CleanupTask {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

// The items of other toolgate crates that this crate's signatures name, and those crates
// whole, so that this crate alone is a sufficient dependency (ARCHITECTURE.md, "Re-exports").
#[doc(no_inline)]
pub use toolgate_core;
pub use toolgate_core::{BoundError, Bounded, BoxFuture, Context, OutputBound, Redaction, ToolOutput};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
