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
}

impl Bounded {
    /// A bounded output and the files holding what was cut (none when nothing was).
    pub fn new(output: ToolOutput, output_paths: Vec<PathBuf>) -> Self {
        Bounded { output, output_paths }
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
}
