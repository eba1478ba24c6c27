//! Redaction of secrets at the output boundary: the values of secrets toolgate knows
//! (given by the caller, each with the name it is shown under) and, when switched on,
//! well-known credential formats (cloud keys, tokens, private key blocks).
//!
//! One pass finds whether anything matches at all ([`RegexSet`] over cheap detectors,
//! whose literal prefixes let the regex engine skip through text with a SIMD prefilter);
//! only the patterns that matched are run again to find and replace each occurrence. An
//! output with no secret costs that one pass.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use toolgate_output_store::Redactor;
//! let redactor = Redactor::builder()
//!     .secret("server-token", "s3cr3t-t0ken-value")
//!     .credential_formats(true)
//!     .build()?
//!     .ok_or("nothing to redact")?;
//! let (text, found) = redactor
//!     .redact("token s3cr3t-t0ken-value and AKIAIOSFODNN7EXAMPLE")
//!     .ok_or("nothing found")?;
//! assert_eq!(text, "token [REDACTED:server-token] and [REDACTED:aws-access-key-id]");
//! assert_eq!(found.len(), 2);
//! assert!(redactor.redact("nothing here").is_none());
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use regex::{Regex, RegexSet};
use toolgate_core::Redaction;

/// Known values shorter than this are not redacted: a variable holding `1` or `true`
/// would otherwise turn every output into markers.
pub const MIN_SECRET_BYTES: usize = 8;

/// One well-known credential format: its name, a cheap detector (for the set pass) and
/// the full pattern. With `group`, only capture group 1 is replaced (the value after a
/// key name that gives the context).
struct Format {
    kind: &'static str,
    detect: &'static str,
    full: &'static str,
    group: bool,
}

/// ASCII word boundaries (`(?-u:\b)`): Unicode ones would make the lazy DFA give up on
/// the first non-ASCII byte.
const FORMATS: &[Format] = &[
    Format {
        kind: "private-key",
        detect: r"-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY",
        full: r"(?s)-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY( BLOCK)?-----.*?(?:-----END[A-Z0-9 ]{0,40} PRIVATE KEY( BLOCK)?-----|\z)",
        group: false,
    },
    Format {
        kind: "aws-access-key-id",
        detect: r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?-u:\b)",
        full: r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?-u:\b)",
        group: false,
    },
    Format {
        kind: "aws-secret-access-key",
        detect: r#"(?:aws_secret_access_key|AWS_SECRET_ACCESS_KEY|SecretAccessKey|secretAccessKey|aws_secret_key|AWS_SECRET_KEY)["']?\s*[:=]"#,
        full: r#"(?:aws_secret_access_key|AWS_SECRET_ACCESS_KEY|SecretAccessKey|secretAccessKey|aws_secret_key|AWS_SECRET_KEY)["']?\s*[:=]\s*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|\z)"#,
        group: true,
    },
    Format {
        kind: "aws-session-token",
        detect: r#"(?:aws_session_token|AWS_SESSION_TOKEN|SessionToken|sessionToken)["']?\s*[:=]"#,
        full: r#"(?:aws_session_token|AWS_SESSION_TOKEN|SessionToken|sessionToken)["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{100,})"#,
        group: true,
    },
    Format {
        kind: "github-token",
        detect: r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{22})",
        full: r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})",
        group: false,
    },
    Format {
        kind: "gitlab-token",
        detect: r"(?-u:\b)glpat-[A-Za-z0-9_-]{20}",
        full: r"(?-u:\b)glpat-[A-Za-z0-9_-]{20,}",
        group: false,
    },
    Format {
        kind: "slack-token",
        detect: r"(?-u:\b)xox[abeoprs]-[A-Za-z0-9-]{10}",
        full: r"(?-u:\b)xox[abeoprs]-[A-Za-z0-9-]{10,}",
        group: false,
    },
    Format {
        kind: "slack-webhook",
        detect: r"hooks\.slack\.com/services/T",
        full: r"https://hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]+",
        group: false,
    },
    Format {
        kind: "google-api-key",
        detect: r"(?-u:\b)AIza[0-9A-Za-z_-]{35}",
        full: r"(?-u:\b)AIza[0-9A-Za-z_-]{35}",
        group: false,
    },
    // Before OpenAI's: `sk-ant-` keys would match `sk-` too (the earlier format wins a tie).
    Format {
        kind: "anthropic-api-key",
        detect: r"(?-u:\b)sk-ant-[A-Za-z0-9_-]{20}",
        full: r"(?-u:\b)sk-ant-[A-Za-z0-9_-]{20,}",
        group: false,
    },
    Format {
        kind: "openai-api-key",
        detect: r"(?-u:\b)sk-[A-Za-z0-9_-]{20}",
        full: r"(?-u:\b)sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}",
        group: false,
    },
    Format {
        kind: "stripe-key",
        detect: r"(?-u:\b)[rs]k_(?:live|test)_[A-Za-z0-9]{16}",
        full: r"(?-u:\b)[rs]k_(?:live|test)_[A-Za-z0-9]{16,}",
        group: false,
    },
    Format {
        kind: "npm-token",
        detect: r"(?-u:\b)npm_[A-Za-z0-9]{36}",
        full: r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)",
        group: false,
    },
    Format {
        kind: "jwt",
        detect: r"(?-u:\b)eyJ[A-Za-z0-9_-]{10,}\.eyJ",
        full: r"(?-u:\b)eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*",
        group: false,
    },
];

/// The kinds of credential format redacted when formats are on, in the order they are
/// tried (README "Redaction").
pub fn credential_kinds() -> impl Iterator<Item = &'static str> {
    FORMATS.iter().map(|format| format.kind)
}

/// Why a [`Redactor`] could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedactError {
    /// The patterns (the known values among them) could not be compiled (too many or
    /// too long values for the regex engine's size limit).
    #[error("could not build the redaction patterns: {0}")]
    Compile(String),
}

/// Builds a [`Redactor`]: [`Redactor::builder`], then the secrets and the formats switch.
#[derive(Debug, Default, Clone)]
pub struct RedactorBuilder {
    secrets: Vec<(String, String)>,
    formats: bool,
    extendable: bool,
}

impl RedactorBuilder {
    /// Redacts `value` wherever it appears, as `[REDACTED:<name>]` (`name` says what it
    /// is, never the value). Values shorter than [`MIN_SECRET_BYTES`] are left out.
    pub fn secret(mut self, name: impl Into<String>, value: impl Into<String>) -> RedactorBuilder {
        let value = value.into();
        if value.len() >= MIN_SECRET_BYTES {
            self.secrets.push((name.into(), value));
        }
        self
    }

    /// Whether well-known credential formats are redacted too (off unless set: the
    /// library's choice; the binary's setting `redaction.credential_formats` is on by
    /// default).
    pub fn credential_formats(mut self, on: bool) -> RedactorBuilder {
        self.formats = on;
        self
    }

    /// Whether [`build`](Self::build) gives a redactor even with nothing to redact yet, for
    /// secrets that come later ([`Redactor::add_secret`]: tokens a process obtains).
    pub fn extendable(mut self, on: bool) -> RedactorBuilder {
        self.extendable = on;
        self
    }

    /// The redactor; `None` when there is nothing to redact (no secret, formats off) and
    /// it is not [`extendable`](Self::extendable).
    pub fn build(self) -> Result<Option<Redactor>, RedactError> {
        let Some(inner) = self.compile()? else {
            return Ok(None);
        };
        Ok(Some(Redactor {
            inner: Arc::new(RwLock::new(Arc::new(inner))),
            source: Arc::new(Mutex::new(self)),
        }))
    }

    /// The compiled patterns; `None` when there is nothing to redact and the builder is
    /// not extendable.
    fn compile(&self) -> Result<Option<Inner>, RedactError> {
        let compile = |error: regex::Error| RedactError::Compile(error.to_string());
        let mut detectors: Vec<String> = Vec::new();
        let mut patterns: Vec<Pattern> = Vec::new();
        let mut names: HashMap<String, String> = HashMap::new();
        if !self.secrets.is_empty() {
            // Longest first, so a value that contains another is replaced whole.
            let mut secrets = self.secrets.clone();
            secrets.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.1.cmp(&b.1)));
            secrets.dedup_by(|a, b| a.1 == b.1);
            let alternation = secrets
                .iter()
                .map(|(_, value)| regex::escape(value))
                .collect::<Vec<_>>()
                .join("|");
            detectors.push(alternation.clone());
            patterns.push(Pattern {
                kind: Kind::Known,
                regex: Regex::new(&alternation).map_err(compile)?,
                group: false,
            });
            names = secrets.into_iter().map(|(name, value)| (value, name)).collect();
        }
        if self.formats {
            for format in FORMATS {
                detectors.push(format.detect.to_string());
                patterns.push(Pattern {
                    kind: Kind::Format(format.kind),
                    regex: Regex::new(format.full).map_err(compile)?,
                    group: format.group,
                });
            }
        }
        if patterns.is_empty() && !self.extendable {
            return Ok(None);
        }
        let set = RegexSet::new(&detectors).map_err(compile)?;
        Ok(Some(Inner { set, patterns, names }))
    }
}

#[derive(Clone, Copy)]
enum Kind {
    /// One of the known values (its name is looked up by the matched text).
    Known,
    Format(&'static str),
}

struct Pattern {
    kind: Kind,
    regex: Regex,
    group: bool,
}

struct Inner {
    set: RegexSet,
    patterns: Vec<Pattern>,
    /// Known value → the name its marker shows.
    names: HashMap<String, String>,
}

/// Replaces secrets in text with `[REDACTED:<kind>]` markers. Cheap to clone; clones
/// share the secrets [`add_secret`](Self::add_secret) adds.
#[derive(Clone)]
pub struct Redactor {
    /// The compiled patterns, replaced whole when a secret is added.
    inner: Arc<RwLock<Arc<Inner>>>,
    /// What they were compiled from.
    source: Arc<Mutex<RedactorBuilder>>,
}

impl std::fmt::Debug for Redactor {
    // Never the values.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.current();
        f.debug_struct("Redactor")
            .field("known_values", &inner.names.len())
            .field("patterns", &inner.patterns.len())
            .finish()
    }
}

impl Redactor {
    /// A builder with no secret and formats off.
    pub fn builder() -> RedactorBuilder {
        RedactorBuilder::default()
    }

    fn current(&self) -> Arc<Inner> {
        Arc::clone(&self.inner.read().unwrap_or_else(|poison| poison.into_inner()))
    }

    /// Redacts `value` from now on too, as `[REDACTED:<name>]` (a secret this process
    /// obtained after the redactor was built: a refreshed OAuth token). True when it was
    /// added; false when it was known already or shorter than [`MIN_SECRET_BYTES`].
    pub fn add_secret(&self, name: &str, value: &str) -> Result<bool, RedactError> {
        if value.len() < MIN_SECRET_BYTES {
            return Ok(false);
        }
        let mut source = self.source.lock().unwrap_or_else(|poison| poison.into_inner());
        if source.secrets.iter().any(|(_, known)| known == value) {
            return Ok(false);
        }
        let mut next = source.clone();
        next.secrets.push((name.to_string(), value.to_string()));
        next.extendable = true;
        if let Some(inner) = next.compile()? {
            *self.inner.write().unwrap_or_else(|poison| poison.into_inner()) = Arc::new(inner);
        }
        *source = next;
        Ok(true)
    }

    /// `text` with every secret replaced and what was replaced (kinds in order of first
    /// appearance), or `None` when there was nothing to replace.
    pub fn redact(&self, text: &str) -> Option<(String, Vec<Redaction>)> {
        let inner = self.current();
        let matched = inner.set.matches(text);
        if !matched.matched_any() {
            return None;
        }
        // (start, end, pattern index): every occurrence of every pattern that matched.
        let mut spans: Vec<(usize, usize, usize)> = Vec::new();
        for index in matched.iter() {
            let pattern = &inner.patterns[index];
            if pattern.group {
                for captures in pattern.regex.captures_iter(text) {
                    if let Some(value) = captures.get(1) {
                        spans.push((value.start(), value.end(), index));
                    }
                }
            } else {
                spans.extend(pattern.regex.find_iter(text).map(|m| (m.start(), m.end(), index)));
            }
        }
        if spans.is_empty() {
            return None;
        }
        // The earliest wins, then the longest, then the earlier pattern; overlaps go.
        spans.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
        let mut out = String::with_capacity(text.len());
        let mut found: Vec<Redaction> = Vec::new();
        let mut at = 0;
        for (start, end, index) in spans {
            if start < at || start == end {
                continue;
            }
            let kind = match inner.patterns[index].kind {
                Kind::Format(kind) => kind,
                Kind::Known => inner.names.get(&text[start..end]).map_or("secret", String::as_str),
            };
            out.push_str(&text[at..start]);
            out.push_str("[REDACTED:");
            out.push_str(kind);
            out.push(']');
            at = end;
            match found.iter_mut().find(|r| r.kind == kind) {
                Some(redaction) => redaction.count += 1,
                None => found.push(Redaction::new(kind, 1)),
            }
        }
        out.push_str(&text[at..]);
        Some((out, found))
    }

    /// Redacts every string of `value` in place (object keys too), adding to `found`.
    pub fn redact_json(&self, value: &mut serde_json::Value, found: &mut Vec<Redaction>) {
        use serde_json::Value;
        match value {
            Value::String(text) => {
                if let Some((new, more)) = self.redact(text) {
                    *text = new;
                    merge(found, more);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.redact_json(item, found)),
            Value::Object(map) => {
                let set = &self.current().set;
                let needs_keys = map.keys().any(|key| set.is_match(key));
                if needs_keys {
                    let old = std::mem::take(map);
                    for (key, mut item) in old {
                        let key = match self.redact(&key) {
                            Some((new, more)) => {
                                merge(found, more);
                                new
                            }
                            None => key,
                        };
                        self.redact_json(&mut item, found);
                        map.insert(key, item);
                    }
                } else {
                    map.values_mut().for_each(|item| self.redact_json(item, found));
                }
            }
            _ => {}
        }
    }
}

/// Adds `more` to `found`, summing the counts of a kind already there.
pub(crate) fn merge(found: &mut Vec<Redaction>, more: Vec<Redaction>) {
    for redaction in more {
        match found.iter_mut().find(|r| r.kind == redaction.kind) {
            Some(existing) => existing.count += redaction.count,
            None => found.push(redaction),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn formats() -> Redactor {
        Redactor::builder().credential_formats(true).build().unwrap().unwrap()
    }

    #[test]
    fn a_secret_added_later_is_redacted_by_every_clone() {
        assert!(Redactor::builder().build().unwrap().is_none());
        let redactor = Redactor::builder().extendable(true).build().unwrap().unwrap();
        let clone = redactor.clone();
        assert_eq!(clone.redact("token tok_1234567890abcdef here"), None);
        assert!(redactor.add_secret("mcp-oauth", "tok_1234567890abcdef").unwrap());
        assert!(!redactor.add_secret("mcp-oauth", "tok_1234567890abcdef").unwrap());
        assert!(!redactor.add_secret("mcp-oauth", "short").unwrap());
        let (text, found) = clone.redact("token tok_1234567890abcdef here").unwrap();
        assert_eq!(text, "token [REDACTED:mcp-oauth] here");
        assert_eq!(found, [Redaction::new("mcp-oauth", 1)]);
    }

    #[test]
    fn each_format_is_found_and_named() {
        let pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----";
        let cases = [
            ("id AKIAIOSFODNN7EXAMPLE.", "aws-access-key-id"),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
                "aws-secret-access-key",
            ),
            (
                r#"{"SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}"#,
                "aws-secret-access-key",
            ),
            ("ghp_0123456789abcdefghijABCDEFGHIJ012345", "github-token"),
            ("gho_0123456789abcdefghijABCDEFGHIJ012345", "github-token"),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
                "github-token",
            ),
            ("xoxb-1234567890-abcdefghij", "slack-token"),
            ("AIzaSyA1234567890abcdefghijklmnopqrstuv", "google-api-key"),
            ("sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "anthropic-api-key"),
            ("sk-proj-abcdefghijklmnopqrstuvwxyz012345", "openai-api-key"),
            (
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
                "jwt",
            ),
            (pem, "private-key"),
            ("glpat-abcdefghij0123456789", "gitlab-token"),
            ("npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm-token"),
        ];
        let redactor = formats();
        for (text, kind) in cases {
            let (out, found) = redactor
                .redact(text)
                .unwrap_or_else(|| panic!("{kind} not found in {text}"));
            assert!(out.contains(&format!("[REDACTED:{kind}]")), "{kind}: {out}");
            assert_eq!(found, vec![Redaction::new(kind, 1)], "{text}");
        }
    }

    #[test]
    fn context_formats_replace_only_the_value() {
        let (out, _) = formats()
            .redact("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nnext")
            .unwrap();
        assert_eq!(out, "AWS_SECRET_ACCESS_KEY=[REDACTED:aws-secret-access-key]\nnext");
    }

    #[test]
    fn near_misses_are_left_alone() {
        let redactor = formats();
        for text in [
            "AKIA1234",                                     // too short
            "XAKIAIOSFODNN7EXAMPLE",                        // no word boundary
            "task-abcdefghijklmnopqrstuvwxyz",              // not `sk-` at a boundary
            "the secret is 40 chars long: aaaaaaaaaaaaaaa", // no key name
            "eyJhbGciOiJIUzI1NiJ9 only a header",
            "-----BEGIN PUBLIC KEY-----\nabc\n-----END PUBLIC KEY-----",
            "Grüße, ghp_ kurz",
        ] {
            assert!(redactor.redact(text).is_none(), "{text}");
        }
    }

    #[test]
    fn known_values_are_named_and_counted_longest_first() {
        let redactor = Redactor::builder()
            .secret("env:SHORT", "abcdefgh")
            .secret("env:LONG", "abcdefgh-ijkl")
            .secret("env:TINY", "abc")
            .build()
            .unwrap()
            .unwrap();
        let (out, found) = redactor.redact("abcdefgh-ijkl abcdefgh abc abcdefgh").unwrap();
        assert_eq!(out, "[REDACTED:env:LONG] [REDACTED:env:SHORT] abc [REDACTED:env:SHORT]");
        assert_eq!(
            found,
            vec![Redaction::new("env:LONG", 1), Redaction::new("env:SHORT", 2)]
        );
        // Regex metacharacters in a value are literal.
        let redactor = Redactor::builder().secret("t", "a.b*c+d?e").build().unwrap().unwrap();
        assert!(redactor.redact("aXbbbcdde").is_none());
        assert_eq!(redactor.redact("[a.b*c+d?e]").unwrap().0, "[[REDACTED:t]]");
    }

    #[test]
    fn nothing_to_redact_builds_nothing() {
        assert!(Redactor::builder().build().unwrap().is_none());
        assert!(Redactor::builder().secret("x", "short").build().unwrap().is_none());
    }

    #[test]
    fn an_unterminated_private_key_is_redacted_to_the_end() {
        let (out, _) = formats()
            .redact("before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow...")
            .unwrap();
        assert_eq!(out, "before\n[REDACTED:private-key]");
    }

    #[test]
    fn json_strings_and_keys_are_redacted() {
        let mut value = serde_json::json!({"a": ["x AKIAIOSFODNN7EXAMPLE"], "AKIAIOSFODNN7EXAMPLE": 1});
        let mut found = Vec::new();
        formats().redact_json(&mut value, &mut found);
        assert_eq!(
            value,
            serde_json::json!({"a": ["x [REDACTED:aws-access-key-id]"], "[REDACTED:aws-access-key-id]": 1})
        );
        assert_eq!(found[0].count, 2);
    }
}
