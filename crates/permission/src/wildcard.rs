//! OpenCode's wildcard (spec §4.2), compiled once.
//!
//! `*` is any run of characters (including `/` and newlines), `?` exactly one character,
//! everything else literal; a pattern ending in space + `*` also matches the bare word
//! (`git *` matches `git`). Backslashes count as slashes on both sides. Anchored;
//! case-insensitive only on Windows.
//!
//! A single pattern is matched by a small segment matcher, not a regular expression, so
//! every pattern compiles whatever its length: nothing can turn a rule into one that
//! never matches. Rule sets additionally build [`regex::RegexSet`]s from `to_regex` to
//! match many patterns in one pass (see [`crate::Ruleset`]); the two implementations are
//! checked against each other by proptests.

use std::borrow::Cow;

/// A compiled wildcard pattern.
#[derive(Clone, Debug)]
pub(crate) struct Pattern {
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
    /// Anything else: the pattern, and (for a pattern ending in ` *`) its stem.
    Glob { full: Glob, stem: Option<Glob> },
}

/// A run of a segment: literal text or a number of single characters (`?`).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Text(String),
    Any(usize),
}

/// The text between two `*`: pieces of literal text and `?`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Segment {
    pieces: Vec<Piece>,
}

/// A pattern split at its stars: `first*middle*…*last`, or one segment without a star.
#[derive(Clone, Debug)]
struct Glob {
    segments: Vec<Segment>,
    starred: bool,
}

fn slashed(text: &str) -> Cow<'_, str> {
    if text.contains('\\') {
        Cow::Owned(text.replace('\\', "/"))
    } else {
        Cow::Borrowed(text)
    }
}

/// What a pattern and an input are compared as: slashes for backslashes, and lower case
/// on Windows.
fn normal(text: &str) -> Cow<'_, str> {
    let text = slashed(text);
    if cfg!(windows) {
        Cow::Owned(text.to_lowercase())
    } else {
        text
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

impl Segment {
    fn parse(text: &str) -> Segment {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        for ch in text.chars() {
            if ch == '?' {
                if !literal.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut literal)));
                }
                match pieces.last_mut() {
                    Some(Piece::Any(count)) => *count += 1,
                    _ => pieces.push(Piece::Any(1)),
                }
            } else {
                literal.push(ch);
            }
        }
        if !literal.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Segment { pieces }
    }

    /// The end of this segment matched at byte `at` of `input`, if it matches there.
    fn match_at(&self, input: &str, mut at: usize) -> Option<usize> {
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => {
                    if !input.get(at..)?.starts_with(text.as_str()) {
                        return None;
                    }
                    at += text.len();
                }
                Piece::Any(count) => {
                    let mut chars = input.get(at..)?.char_indices();
                    for _ in 0..*count {
                        chars.next()?;
                    }
                    at = chars.next().map_or(input.len(), |(offset, _)| at + offset);
                }
            }
        }
        Some(at)
    }

    /// The start of this segment when it ends exactly at the end of `input`.
    fn match_end(&self, input: &str) -> Option<usize> {
        let mut end = input.len();
        for piece in self.pieces.iter().rev() {
            match piece {
                Piece::Text(text) => {
                    if !input.get(..end)?.ends_with(text.as_str()) {
                        return None;
                    }
                    end -= text.len();
                }
                Piece::Any(count) => {
                    let mut chars = input.get(..end)?.char_indices().rev();
                    for _ in 0..*count {
                        end = chars.next()?.0;
                    }
                }
            }
        }
        Some(end)
    }

    /// The leftmost match at or after byte `from`: (start, end).
    fn find(&self, input: &str, from: usize) -> Option<(usize, usize)> {
        // A leading literal lets the search jump between its occurrences.
        if let Some(Piece::Text(text)) = self.pieces.first() {
            let mut at = from;
            loop {
                let start = at + input.get(at..)?.find(text.as_str())?;
                if let Some(end) = self.match_at(input, start) {
                    return Some((start, end));
                }
                at = start + input.get(start..)?.chars().next()?.len_utf8();
            }
        }
        let mut at = from;
        loop {
            if let Some(end) = self.match_at(input, at) {
                return Some((at, end));
            }
            at += input.get(at..)?.chars().next()?.len_utf8();
        }
    }
}

impl Glob {
    fn parse(pattern: &str) -> Glob {
        let parts: Vec<&str> = pattern.split('*').collect();
        Glob {
            starred: parts.len() > 1,
            segments: parts.into_iter().map(Segment::parse).collect(),
        }
    }

    /// Whether `input` matches: the first segment at the start, the last at the end, and
    /// every middle one leftmost in order between them (leftmost is always safe for
    /// star-separated segments: it leaves the most room for the rest).
    fn matches(&self, input: &str) -> bool {
        let Some((first, rest)) = self.segments.split_first() else {
            return input.is_empty();
        };
        if !self.starred {
            return first.match_at(input, 0) == Some(input.len());
        }
        let Some(mut cursor) = first.match_at(input, 0) else {
            return false;
        };
        let Some((last, middle)) = rest.split_last() else {
            return false;
        };
        for segment in middle {
            match segment.find(input, cursor) {
                Some((_, end)) => cursor = end,
                None => return false,
            }
        }
        last.match_end(input).is_some_and(|start| start >= cursor)
    }
}

impl Pattern {
    /// Compiles `pattern`. Every pattern compiles, whatever its length.
    pub(crate) fn new(pattern: &str) -> Self {
        let source = pattern.to_string();
        let normal = normal(pattern).into_owned();
        let wild = |text: &str| text.contains(['*', '?']);
        let kind = if normal == "*" {
            Kind::Any
        } else if !wild(&normal) {
            Kind::Literal(normal)
        } else if let Some(stem) = normal.strip_suffix(" *").filter(|stem| !wild(stem)) {
            Kind::Word(stem.to_string())
        } else if let Some(stem) = normal.strip_suffix('*').filter(|stem| !wild(stem)) {
            Kind::Prefix(stem.to_string())
        } else {
            Kind::Glob {
                full: Glob::parse(&normal),
                stem: normal.strip_suffix(" *").map(Glob::parse),
            }
        };
        Pattern { source, kind }
    }

    /// The pattern as written.
    pub(crate) fn as_str(&self) -> &str {
        &self.source
    }

    /// True for the pattern `*`.
    pub(crate) fn is_any(&self) -> bool {
        matches!(self.kind, Kind::Any)
    }

    /// The one string the pattern matches when it has no wildcard (as compared: slashes
    /// for backslashes, lower case on Windows).
    pub(crate) fn literal(&self) -> Option<&str> {
        match &self.kind {
            Kind::Literal(text) => Some(text),
            _ => None,
        }
    }

    /// For `stem *` with a wildcard-free stem: the stem.
    pub(crate) fn word(&self) -> Option<&str> {
        match &self.kind {
            Kind::Word(stem) => Some(stem),
            _ => None,
        }
    }

    /// Whether the pattern (after `\` → `/`) is an absolute path: `/…` or `C:/…`.
    pub(crate) fn is_absolute(&self) -> bool {
        is_absolute_path(&slashed(&self.source))
    }

    /// Whether `input` matches.
    pub(crate) fn matches(&self, input: &str) -> bool {
        let input = normal(input);
        self.matches_normal(&input)
    }

    /// [`Pattern::matches`] for an input already normalised (see [`normalise`]).
    pub(crate) fn matches_normal(&self, input: &str) -> bool {
        match &self.kind {
            Kind::Any => true,
            Kind::Literal(text) => input == text,
            Kind::Prefix(stem) => input.starts_with(stem.as_str()),
            Kind::Word(stem) => input
                .strip_prefix(stem.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(' ')),
            Kind::Glob { full, stem } => full.matches(input) || stem.as_ref().is_some_and(|stem| stem.matches(input)),
        }
    }
}

/// An input as patterns compare it: slashes for backslashes, lower case on Windows.
pub(crate) fn normalise(input: &str) -> Cow<'_, str> {
    normal(input)
}

/// Whether `path` (with `/` separators) is absolute: `/…`, or a drive `C:/…`.
pub(crate) fn is_absolute_path(path: &str) -> bool {
    let bytes = path.as_bytes();
    path.starts_with('/')
        || (bytes.len() >= 3 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' && bytes[2] == b'/')
}

/// Matches `input` against `pattern` without compiling it for reuse.
#[cfg(test)]
pub(crate) fn matches(input: &str, pattern: &str) -> bool {
    Pattern::new(pattern).matches(input)
}

#[cfg(test)]
mod tests;
