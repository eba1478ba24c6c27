//! OpenCode's wildcard (spec §4.2), compiled once.
//!
//! `*` is any run of characters (including `/` and newlines), `?` exactly one character,
//! everything else literal; a pattern ending in space + `*` also matches the bare word
//! (`git *` matches `git`). Backslashes count as slashes on both sides. Anchored;
//! case-insensitive only on Windows.

use std::borrow::Cow;

/// A compiled wildcard pattern.
#[derive(Clone, Debug)]
pub struct Pattern {
    source: String,
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    /// `*`: matches everything.
    Any,
    /// No wildcard at all.
    Literal(String),
    /// `literal*`.
    Prefix(String),
    /// `literal *`: `literal` alone, or `literal ` followed by anything.
    Word(String),
    /// Anything else.
    Regex(regex::Regex),
}

fn slashed(text: &str) -> Cow<'_, str> {
    if text.contains('\\') {
        Cow::Owned(text.replace('\\', "/"))
    } else {
        Cow::Borrowed(text)
    }
}

/// The regular expression OpenCode builds for `pattern` (after `\` → `/`).
pub(crate) fn to_regex(pattern: &str) -> String {
    let pattern = slashed(pattern);
    let mut out = String::with_capacity(pattern.len() + 8);
    for ch in pattern.chars() {
        match ch {
            '*' => out.push_str(".*"),
            '?' => out.push('.'),
            '.' | '+' | '^' | '$' | '{' | '}' | '(' | ')' | '|' | '[' | ']' | '\\' => {
                out.push('\\');
                out.push(ch);
            }
            _ => out.push(ch),
        }
    }
    let body = match out.strip_suffix(" .*") {
        Some(stem) => format!("{stem}( .*)?"),
        None => out,
    };
    let flags = if cfg!(windows) { "(?si)" } else { "(?s)" };
    format!("{flags}^(?:{body})$")
}

impl Pattern {
    /// Compiles `pattern`.
    pub fn new(pattern: &str) -> Self {
        let source = pattern.to_string();
        let normal = slashed(pattern).into_owned();
        let wild = |text: &str| text.contains(['*', '?']);
        let kind = if cfg!(windows) {
            Kind::Regex(compile(&normal))
        } else if normal == "*" {
            Kind::Any
        } else if !wild(&normal) {
            Kind::Literal(normal)
        } else if let Some(stem) = normal.strip_suffix(" *").filter(|stem| !wild(stem)) {
            Kind::Word(stem.to_string())
        } else if let Some(stem) = normal.strip_suffix('*').filter(|stem| !wild(stem)) {
            Kind::Prefix(stem.to_string())
        } else {
            Kind::Regex(compile(&normal))
        };
        Pattern { source, kind }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// True for the pattern `*`.
    pub fn is_any(&self) -> bool {
        matches!(self.kind, Kind::Any)
    }

    /// True when the pattern has no wildcard (it matches one string only).
    pub fn literal(&self) -> Option<&str> {
        match &self.kind {
            Kind::Literal(text) => Some(text),
            _ => None,
        }
    }

    /// Whether `input` matches.
    pub fn matches(&self, input: &str) -> bool {
        let input = slashed(input);
        let input = input.as_ref();
        match &self.kind {
            Kind::Any => true,
            Kind::Literal(text) => input == text,
            Kind::Prefix(stem) => input.starts_with(stem.as_str()),
            Kind::Word(stem) => input
                .strip_prefix(stem.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(' ')),
            Kind::Regex(regex) => regex.is_match(input),
        }
    }
}

fn compile(pattern: &str) -> regex::Regex {
    // Every metacharacter is escaped, so the expression is always valid; the fallback is
    // a pattern that matches nothing rather than a panic.
    regex::Regex::new(&to_regex(pattern)).unwrap_or_else(|_| never())
}

pub(crate) fn never() -> regex::Regex {
    #[allow(clippy::unwrap_used)] // a constant expression that is known to compile
    regex::Regex::new("[^\\s\\S]").unwrap()
}

/// Matches `input` against `pattern` without compiling it for reuse.
///
/// ```
/// use toolgate_permission::wildcard::matches;
/// assert!(matches("git", "git *"));
/// assert!(matches("src/.env", "*.env"));
/// assert!(!matches("gitx", "git *"));
/// ```
pub fn matches(input: &str, pattern: &str) -> bool {
    Pattern::new(pattern).matches(input)
}
