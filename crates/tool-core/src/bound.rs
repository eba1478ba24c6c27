//! The `OutputBound` trait: the single place tool output is bounded.

use std::path::PathBuf;

use crate::{BoxFuture, Context, ToolOutput};

/// An output after bounding: what the model may see, plus any files holding the full text.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Bounded {
    /// The output to hand on (possibly a preview of the original).
    pub output: ToolOutput,
    /// Files that hold what was cut; empty when nothing was.
    pub output_paths: Vec<PathBuf>,
    /// What the bound redacted (kinds and counts, never values); empty when nothing.
    pub redactions: Vec<Redaction>,
}

impl Bounded {
    /// A bounded output and the files holding what was cut (none when nothing was).
    pub fn new(output: ToolOutput, output_paths: Vec<PathBuf>) -> Self {
        Bounded {
            output,
            output_paths,
            redactions: Vec::new(),
        }
    }

    /// The same output, recording what was redacted in it.
    pub fn with_redactions(mut self, redactions: Vec<Redaction>) -> Self {
        self.redactions = redactions;
        self
    }
}

/// What was redacted from one output at the boundary: a kind (`aws-access-key-id`, or the
/// name a known secret is shown under, `env:GITHUB_TOKEN`) and how many times. Never the
/// value: this is what the audit log records.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Redaction {
    /// What was redacted, as the marker `[REDACTED:<kind>]` names it.
    pub kind: String,
    /// How many occurrences were replaced.
    pub count: usize,
}

impl Redaction {
    /// `count` occurrences of `kind`.
    pub fn new(kind: impl Into<String>, count: usize) -> Self {
        Redaction {
            kind: kind.into(),
            count,
        }
    }
}

/// Why an output could not be bounded. Any of these fails the call: output is never
/// silently lost or passed through unbounded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BoundError {
    /// An inline media part is larger than the limit.
    #[error(
        "inline media ({mime}) is {bytes} bytes of base64, over the {limit}-byte limit; return a smaller image or save it to a file"
    )]
    MediaLimit {
        /// The part's MIME type.
        mime: String,
        /// Its base64 length in bytes.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The structured output could not be encoded.
    #[error("could not encode the tool output: {0}")]
    Encode(String),
    /// Writing the spill file failed.
    #[error("could not {operation} the full tool output at {path}: {source}")]
    Storage {
        /// What was being done (`write`, `create directory`).
        operation: &'static str,
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// Bounds every successful tool output before it reaches the model.
pub trait OutputBound: Send + Sync {
    /// Bounds `output` of the call described by `ctx`.
    fn bound<'a>(&'a self, ctx: &'a Context, output: ToolOutput) -> BoxFuture<'a, Result<Bounded, BoundError>>;

    /// A failed call's message as the model may see it: with secrets redacted, and what
    /// was redacted (`None` when nothing was; the default redacts nothing). Failures
    /// reach the model too, so a bound that redacts outputs redacts these as well.
    fn redact_message(&self, _message: &str) -> Option<(String, Vec<Redaction>)> {
        None
    }
}
