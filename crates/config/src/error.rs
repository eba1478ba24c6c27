//! The one error type of configuration, and the warnings a load collects.

use std::fmt;

/// Why a configuration could not be read whole. Every variant names where (a file, or the
/// environment variable the value came from) and, when it is about one value, its key
/// path, so that the error is one line a person can act on (`toolgate` exits 2 with it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.line())]
pub struct ConfigError {
    /// Where: a file path, or the name of the environment variable (`$OPENCODE_CONFIG`).
    pub origin: String,
    /// The key path inside it (`permission.bash["rm *"]`), empty for the whole source.
    pub path: String,
    /// What is wrong, e.g. `expected "allow", "ask" or "deny", found "never"`.
    pub message: String,
    /// The kind of problem.
    pub kind: ErrorKind,
}

/// The kinds of [`ConfigError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The file (or directory) exists but could not be read, or a named file is missing.
    Read,
    /// Not valid JSONC (or, for a Markdown agent, not valid YAML front matter).
    Syntax,
    /// A value has the wrong shape or is out of range.
    Invalid,
    /// An unknown key that is a misspelling of a rules key (`permision`): its rules would
    /// be silently lost, so it is an error rather than a warning.
    Misspelt,
    /// An environment variable is set but unusable (not UTF-8, not JSON).
    Environment,
}

impl ConfigError {
    /// A problem with the value at `path` of `source`.
    pub fn invalid(source: impl Into<String>, path: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            origin: source.into(),
            path: path.into(),
            message: message.into(),
            kind: ErrorKind::Invalid,
        }
    }

    /// A problem with the whole of `source`.
    pub fn whole(kind: ErrorKind, source: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            origin: source.into(),
            path: String::new(),
            message: message.into(),
            kind,
        }
    }

    /// The same error found in `source` (errors from a value are made without one).
    pub(crate) fn in_source(mut self, source: &str) -> Self {
        self.origin = source.to_string();
        self
    }

    fn line(&self) -> String {
        let place = match self.kind {
            _ if self.origin.is_empty() => String::new(),
            ErrorKind::Environment => self.origin.clone(),
            _ => format!("config {}", self.origin),
        };
        // `config F is not valid JSONC: …`, `$X is not valid UTF-8`; a value's problem
        // follows its key path: `config F: permission.bash: expected …`.
        let sentence = matches!(self.kind, ErrorKind::Read | ErrorKind::Syntax | ErrorKind::Environment);
        match (place.is_empty(), self.path.is_empty()) {
            (true, true) => self.message.clone(),
            (true, false) => format!("{}: {}", self.path, self.message),
            (false, true) if sentence => format!("{place} {}", self.message),
            (false, true) => format!("{place}: {}", self.message),
            (false, false) => format!("{place}: {}: {}", self.path, self.message),
        }
    }
}

/// Something a load noticed but that does not stop it: an unknown key (ignored), or a value
/// toolgate reads differently from OpenCode. One line each: `config FILE: PATH: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// Where: a file path or an environment variable's name.
    pub source: String,
    /// The key path inside it.
    pub path: String,
    /// What was noticed.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "config {}: {}", self.source, self.message)
        } else {
            write!(f, "config {}: {}: {}", self.source, self.path, self.message)
        }
    }
}

/// `path` extended by `key`: `.key` for plain names, `["key"]` otherwise. A key longer
/// than 80 characters is shortened to its first 60 and `…`, so an error stays one line
/// a person can read.
pub fn key_path(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '$');
    let joined = |tail: String| {
        if path.is_empty() && plain {
            key.to_string()
        } else if path.is_empty() {
            tail
        } else {
            format!("{path}{tail}")
        }
    };
    if plain && key.len() <= 80 {
        joined(format!(".{key}"))
    } else if key.chars().count() > 80 {
        let head = serde_json::Value::String(key.chars().take(60).collect()).to_string();
        let inner = head
            .strip_prefix('"')
            .and_then(|h| h.strip_suffix('"'))
            .unwrap_or(&head);
        joined(format!("[\"{inner}…\"]"))
    } else {
        joined(format!("[{}]", serde_json::Value::String(key.to_string())))
    }
}

/// A value as an error shows it: its JSON, shortened to 60 characters.
pub(crate) fn shown(value: &serde_json::Value) -> String {
    let mut found = value.to_string();
    if found.len() > 60 {
        let mut cut = 57;
        while !found.is_char_boundary(cut) {
            cut -= 1;
        }
        found.truncate(cut);
        found.push_str("...");
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_paths_quote_what_is_not_a_plain_name() {
        assert_eq!(key_path("", "permission"), "permission");
        assert_eq!(key_path("permission", "bash"), "permission.bash");
        assert_eq!(key_path("permission.bash", "rm *"), "permission.bash[\"rm *\"]");
        assert_eq!(key_path("", "my key"), "[\"my key\"]");
        let long = "a*".repeat(50);
        assert!(key_path("p", &long).ends_with("…\"]"));
    }
}
