//! Trust of a project's config files over HTTP (`GET /trust`, `POST /trust`): the API a
//! page shows them through. A project file's rules apply as in OpenCode, but the parts
//! that start programs or weaken the sandbox apply only once the person has trusted that
//! file's exact content (README "Trusted project files"). The files and the records are
//! the front end's ([`ProjectTrust`]); this crate only serves them.

use serde::Serialize;
use serde_json::Value;

/// One part of a project file that applies only once the file is trusted.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TrustPart {
    /// Its key path (`mcp.calc`, `sandbox.mode`, `shell_env.set`).
    pub key: String,
    /// What trusting it changes, one line (`start mcp server "calc": {…}`).
    pub change: String,
    /// The value as written.
    pub value: Value,
}

impl TrustPart {
    /// A part at `key` whose trust would `change` something, written as `value`.
    pub fn new(key: impl Into<String>, change: impl Into<String>, value: Value) -> TrustPart {
        TrustPart {
            key: key.into(),
            change: change.into(),
            value,
        }
    }
}

/// A project config file with parts that need trust, as found now.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct TrustFile {
    /// The file (canonical).
    pub path: String,
    /// The SHA-256 of its content as read now (lowercase hex): what a trust names.
    pub sha256: String,
    /// Whether this very content is trusted.
    pub trusted: bool,
    /// The parts: until the file is trusted, each is ignored and the rest of the file
    /// (its rules) applies.
    pub parts: Vec<TrustPart>,
}

impl TrustFile {
    /// `path` with content `sha256`, trusted or not, and its `parts`.
    pub fn new(path: impl Into<String>, sha256: impl Into<String>, trusted: bool, parts: Vec<TrustPart>) -> TrustFile {
        TrustFile {
            path: path.into(),
            sha256: sha256.into(),
            trusted,
            parts,
        }
    }
}

/// Why a trust was not recorded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// The path is not a project config file that has parts needing trust here.
    #[error("{0} is not a project config file with parts that need trust")]
    NotFound(String),
    /// The file changed since it was shown: its content is no longer what was reviewed.
    #[error("{path} has changed since it was shown: its sha256 is now {current}, not {given}; review it again")]
    Stale {
        /// The file.
        path: String,
        /// The hash the request named.
        given: String,
        /// The hash of the file's content now.
        current: String,
    },
    /// The config could not be read, or the trust could not be recorded.
    #[error("{0}")]
    Failed(String),
}

/// What the trust routes need from the front end, which knows the config files and
/// where trust is recorded. Both calls read the files anew: a trust is given to the
/// content on disk at that moment, never to what an earlier listing showed.
pub trait ProjectTrust: Send + Sync {
    /// Every project config file whose parts need trust, trusted or not, in layer order.
    fn files(&self) -> Result<Vec<TrustFile>, TrustError>;
    /// Trusts `path` if and only if its content now has the SHA-256 `sha256`.
    fn trust(&self, path: &str, sha256: &str) -> Result<TrustFile, TrustError>;
}
