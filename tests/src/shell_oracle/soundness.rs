//! The soundness check of the bash analysis: what the analysis asked against
//! what bash really did, under one fixed rule set.
//!
//! This module is shared: the oracle (`e2e::shell_oracle`) uses it on what it observed in
//! the sandbox, and `crates/shell-analysis/tests/it/main.rs` includes it by path to
//! replay the recorded failures without a sandbox. It only names crates both can see
//! (`toolgate-core`, `toolgate-permission`, `toolgate-shell-analysis`, `serde`, `serde_json`).
//!
//! # The comparison, precisely
//!
//! Effects are ordered `allow < ask < deny`.
//!
//! **What the analysis asks.** `plan()` of the line in the fixture project gives requests
//! (`external_directory`, `bash`, `read`, `edit`). Each resource is evaluated against
//! [`issue_rules`] (last matching rule wins, none → ask, as `Ruleset::evaluate`); the
//! line's effect `E` is the most restrictive of all of them (deny > ask > allow) — exactly
//! what the tool's sequence of assertions amounts to.
//!
//! **What ran.** The oracle records *events*: every program executed (`execve`, any
//! process of the line), every builtin bash ran (xtrace), every command git ran after
//! alias expansion (`GIT_TRACE`), every file opened for reading or writing, created,
//! renamed, deleted or re-moded. Each event has an action (`bash`, `read`, `edit`,
//! `external_directory`) and one or more *forms* — spellings of the same thing (`/bin/rm
//! x` and `rm x`; `git -C . push` and `git push`; a path as named and as resolved) — and
//! its effect `R` is the most restrictive effect the rules give to any of its forms.
//!
//! **Check "once"** (the person approves the ask once): if `E` is deny nothing ran, so the
//! line passes. Otherwise every event must have `R ≤ E`: a denied command or a denied read
//! that ran while the analysis said allow or ask fails; an asked-for command (or an
//! outside path) that ran while the analysis said allow fails.
//!
//! **Check "always"** (the person answers "always" to every ask): the save patterns of
//! every request that asks become saved approvals, which — as in
//! `PermissionService::decide` — turn an `ask` into `allow` for any resource they match,
//! never a deny, and never a resource the analysis marked unsaveable. Under those saved
//! approvals the line's effect `E′` and the events' effects `R′` are computed the same
//! way, and again every `R′ ≤ E′` unless `E′` is deny. This is what fails when "always" is
//! offered for code the analysis cannot see: the next run of the same line would be
//! allowed while it runs things nobody was asked about.

use std::path::Path;

use serde::{Deserialize, Serialize};
use toolgate_core::PermissionRequest;
use toolgate_permission::decide_resource;
use toolgate_permission::rules_from_config;
use toolgate_permission::{Effect, Origin, Rule, Ruleset};

/// The corpus file, relative to the workspace root.
pub const CORPUS: &str = "crates/shell-analysis/tests/corpus/oracle-failures.jsonl";

/// The analysis crate's integration tests, relative to the workspace root: their sources
/// and their snapshots (`snapshots/`) hold the table cases, as `("line", Effect)` rows.
pub const TABLE_TESTS: &str = "crates/shell-analysis/tests/it";

/// The rules every line is checked under, as a configuration value: bash asks by default,
/// a few programs are allowed, `rm`, `curl` and `git push` denied; reads and edits allowed
/// except `.env` files and `secrets/`.
pub fn issue_rules_config() -> serde_json::Value {
    serde_json::json!({
        "bash": {
            "*": "ask",
            "echo *": "allow",
            "ls *": "allow",
            "git status *": "allow",
            "rm *": "deny",
            "curl *": "deny",
            "git push *": "deny"
        },
        "read": {"*": "allow", "*.env": "deny", "secrets/*": "deny"},
        "edit": {"*": "allow", "*.env": "deny", "secrets/*": "deny"},
        "external_directory": {"*": "ask"}
    })
}

/// The rules every line is checked under.
pub fn issue_rules() -> Ruleset {
    let rules = rules_from_config(&issue_rules_config(), "permission", Origin::UserConfig, None).unwrap_or_default();
    Ruleset::new(rules)
}

/// `allow` 0, `ask` 1, `deny` 2.
pub fn rank(effect: Effect) -> u8 {
    match effect {
        Effect::Allow => 0,
        Effect::Ask => 1,
        Effect::Deny => 2,
    }
}

/// The more restrictive of two effects.
pub fn stricter(a: Effect, b: Effect) -> Effect {
    if rank(b) > rank(a) { b } else { a }
}

/// One thing the line did, as the rules see it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Event {
    /// `bash`, `read`, `edit` or `external_directory`.
    pub action: String,
    /// The resources it amounts to; the strictest one counts.
    pub forms: Vec<String>,
    /// Where it was seen (`execve /usr/bin/rm`, `xtrace`, `openat O_RDONLY`, …).
    pub via: String,
}

/// Builtins that only change the shell's own state or do nothing a rule is about, which
/// the analysis therefore does not ask for: OpenCode does not ask for `cd` (spec §7.3),
/// declarations and `unset` are not commands (§9.10 S3); `true`, `:`, `test`, `read`,
/// `set`, `wait`, loop control and the like run nothing and touch no file (the analysis
/// models what they could do to later commands: `set -f`, `read` into `PATH`, `test -v`
/// make the line opaque instead). `command -v`/`-V` only looks a name up.
pub const STATE_BUILTINS: &[&str] = &[
    "cd",
    "pushd",
    "popd",
    "dirs",
    "export",
    "declare",
    "typeset",
    "local",
    "readonly",
    "unset",
    "true",
    "false",
    ":",
    "wait",
    "break",
    "continue",
    "return",
    "exit",
    "shift",
    "read",
    "getopts",
    "mapfile",
    "readarray",
    "set",
    "test",
    "[",
    "type",
    "jobs",
    "disown",
    "fg",
    "bg",
    "times",
    "help",
    "caller",
    "history",
    "suspend",
    "logout",
];

/// `command -v name` and `command -V name`: a lookup that runs nothing.
fn is_lookup<S: AsRef<str>>(words: &[S]) -> bool {
    words.first().is_some_and(|first| first.as_ref() == "command")
        && words
            .iter()
            .skip(1)
            .take_while(|word| word.as_ref().starts_with('-'))
            .any(|word| word.as_ref().contains('v') || word.as_ref().contains('V'))
}

/// Whether a builtin bash ran (its words) is one the analysis does not ask for.
pub fn analysis_exempt<S: AsRef<str>>(words: &[S]) -> bool {
    words
        .first()
        .is_some_and(|first| STATE_BUILTINS.contains(&first.as_ref()))
        || is_lookup(words)
}

/// The saved approvals an "always" answer to every asking request would store.
pub fn always_saves(rules: &Ruleset, requests: &[PermissionRequest]) -> Ruleset {
    let mut saved = Vec::new();
    for request in requests {
        let asks = request
            .resources
            .iter()
            .any(|resource| decide_resource(&[rules], None, request, resource).0 == Effect::Ask);
        if asks {
            for pattern in &request.save {
                saved.push(Rule::new(
                    &request.action,
                    pattern,
                    Effect::Allow,
                    Origin::SavedApproval,
                ));
            }
        }
    }
    Ruleset::new(saved)
}

/// The effect of one resource, with saved approvals as `PermissionService::decide` applies
/// them: they only turn an ask into allow, and never for an unsaveable resource.
pub fn resource_effect(
    rules: &Ruleset,
    saved: Option<&Ruleset>,
    action: &str,
    resource: &str,
    unsaveable: bool,
) -> Effect {
    let configured = rules.evaluate(action, resource).effect;
    match saved {
        Some(saved) if configured == Effect::Ask && !unsaveable && saved.last_match(action, resource).is_some() => {
            Effect::Allow
        }
        _ => configured,
    }
}

/// The line's effect: the most restrictive over every resource of every request, each
/// decided as the permission service decides it (exact, with holes, or opaque; saved
/// approvals as `PermissionService::decide` applies them).
pub fn analysis_effect(rules: &Ruleset, saved: Option<&Ruleset>, requests: &[PermissionRequest]) -> Effect {
    let mut effect = Effect::Allow;
    for request in requests {
        for resource in &request.resources {
            effect = stricter(effect, decide_resource(&[rules], saved, request, resource).0);
        }
    }
    effect
}

/// An event's effect: the most restrictive over its forms.
pub fn event_effect(rules: &Ruleset, saved: Option<&Ruleset>, event: &Event) -> Effect {
    event.forms.iter().fold(Effect::Allow, |effect, form| {
        stricter(effect, resource_effect(rules, saved, &event.action, form, false))
    })
}

/// Which check failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Check {
    /// Approved once.
    Once,
    /// Approved with "always".
    Always,
}

/// A soundness failure: what the analysis asked and what ran beyond it.
#[derive(Clone, Debug, PartialEq)]
pub struct Unsound {
    /// The check that failed.
    pub check: Check,
    /// The analysis' effect under that check.
    pub analysis: Effect,
    /// The events stricter than the analysis, with their effects.
    pub beyond: Vec<(Event, Effect)>,
}

impl Unsound {
    /// One line of text: `once: analysis allow; ran bash "rm x" (deny) via execve …`.
    pub fn summary(&self) -> String {
        let check = match self.check {
            Check::Once => "once",
            Check::Always => "always",
        };
        let beyond: Vec<String> = self
            .beyond
            .iter()
            .map(|(event, effect)| {
                format!(
                    "{} {:?} ({effect}) via {}",
                    event.action,
                    event.forms.first().map(String::as_str).unwrap_or(""),
                    event.via
                )
            })
            .collect();
        format!("{check}: analysis {}; ran {}", self.analysis, beyond.join("; "))
    }
}

/// What a passing line amounted to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sound {
    /// The analysis' effect (approved once).
    pub analysis: Effect,
    /// The strictest effect of anything that ran.
    pub ran: Effect,
}

/// Both checks for one line. Builtins the analysis does not ask for
/// ([`analysis_exempt`]) are left out, also from events recorded before the list grew.
pub fn check(rules: &Ruleset, requests: &[PermissionRequest], events: &[Event]) -> Result<Sound, Unsound> {
    let kept: Vec<Event> = events
        .iter()
        .filter(|event| {
            event.via != "xtrace builtin"
                || !event
                    .forms
                    .first()
                    .is_some_and(|form| analysis_exempt(&form.split(' ').collect::<Vec<_>>()))
        })
        .cloned()
        .collect();
    let events = kept.as_slice();
    let analysis = analysis_effect(rules, None, requests);
    let ran = events.iter().fold(Effect::Allow, |effect, event| {
        stricter(effect, event_effect(rules, None, event))
    });
    if analysis == Effect::Deny {
        return Ok(Sound { analysis, ran });
    }
    let beyond = |saved: Option<&Ruleset>, limit: Effect| -> Vec<(Event, Effect)> {
        events
            .iter()
            .map(|event| (event.clone(), event_effect(rules, saved, event)))
            .filter(|(_, effect)| rank(*effect) > rank(limit))
            .map(|(mut event, effect)| {
                // The strictest form first: it is the one that fails.
                event.forms.sort_by_key(|form| {
                    std::cmp::Reverse(rank(resource_effect(rules, saved, &event.action, form, false)))
                });
                (event, effect)
            })
            .collect()
    };
    let once = beyond(None, analysis);
    if !once.is_empty() {
        return Err(Unsound {
            check: Check::Once,
            analysis,
            beyond: once,
        });
    }
    if analysis == Effect::Ask {
        let saved = always_saves(rules, requests);
        let again = analysis_effect(rules, Some(&saved), requests);
        if again != Effect::Deny {
            let always = beyond(Some(&saved), again);
            if !always.is_empty() {
                return Err(Unsound {
                    check: Check::Always,
                    analysis: again,
                    beyond: always,
                });
            }
        }
    }
    Ok(Sound { analysis, ran })
}

/// One file of the fixture project every line runs in.
pub struct FixtureFile {
    /// Path relative to the project.
    pub path: &'static str,
    /// Contents; for a symlink, its target.
    pub contents: &'static str,
    /// Executable.
    pub executable: bool,
    /// A symlink to `contents`.
    pub symlink: bool,
    /// Committed to the fixture's git repository (secrets never are, so `git status`
    /// has no reason to open them).
    pub committed: bool,
}

const fn file(path: &'static str, contents: &'static str) -> FixtureFile {
    FixtureFile {
        path,
        contents,
        executable: false,
        symlink: false,
        committed: true,
    }
}

/// The project every line runs in. `victim` is what the booby-trapped scripts try to
/// delete; `sub/ls` shadows `ls` for a line that puts `sub` first on `PATH`; `evil.sh` is
/// code a line can source, run or load through `BASH_ENV`; `key-link` leads to the secret.
pub const FIXTURE: &[FixtureFile] = &[
    file("notes.txt", "some notes\nKEY=not-a-secret\n"),
    file("victim", "delete me\n"),
    file("x", "x\n"),
    file("list", "victim\nx\n"),
    file("sub/inner.txt", "inner\n"),
    FixtureFile {
        executable: true,
        ..file("sub/ls", "#!/bin/sh\nrm -f victim\n")
    },
    FixtureFile {
        executable: true,
        ..file("evil.sh", "rm -f victim\n")
    },
    FixtureFile {
        committed: false,
        ..file("secrets/key", "SECRET-KEY\n")
    },
    FixtureFile {
        committed: false,
        ..file(".env", "TOKEN=secret-token\n")
    },
    FixtureFile {
        committed: false,
        ..file("a.env", "A=secret-a\n")
    },
    FixtureFile {
        symlink: true,
        committed: false,
        ..file("key-link", "secrets/key")
    },
];

/// Files next to the project (in the line's directory, outside the project).
pub const OUTSIDE: &[(&str, &str)] = &[
    ("outside/secret.txt", "outside secret\n"),
    ("outside/b.env", "B=outside\n"),
    ("home/.ssh/id_rsa", "PRIVATE KEY\n"),
    ("home/notes.txt", "home notes\n"),
];

/// Writes the fixture project into `dir` (which must exist).
pub fn write_fixture(dir: &Path) -> std::io::Result<()> {
    for entry in FIXTURE {
        let path = dir.join(entry.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        if entry.symlink {
            std::os::unix::fs::symlink(entry.contents, &path)?;
            continue;
        }
        std::fs::write(&path, entry.contents)?;
        if entry.executable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        }
    }
    Ok(())
}

/// One recorded failure: the line, what ran, and how the generator built it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The command line, exactly.
    pub line: String,
    /// The generator's tags (`carrier:…`, `payload:…`, `spelling:…`), or `table`.
    #[serde(default)]
    pub tags: Vec<String>,
    /// What the failure looked like when it was found (informative only).
    #[serde(default)]
    pub found: String,
    /// Every event the line produced in the sandbox (paths of the line's directory are
    /// written as `/sandbox/…`, project paths relative).
    pub events: Vec<Event>,
}

/// Reads a corpus file (one JSON record a line; blank lines and `#` comments skipped).
pub fn read_corpus(path: &Path) -> Result<Vec<Record>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(format!("{}: {error}", path.display())),
    };
    let mut records = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let record: Record =
            serde_json::from_str(line).map_err(|error| format!("{}:{}: {error}", path.display(), number + 1))?;
        records.push(record);
    }
    Ok(records)
}

/// One record as a corpus line.
pub fn corpus_line(record: &Record) -> String {
    serde_json::to_string(record).unwrap_or_default()
}

/// Every `("…", Allow|Ask|Deny)` row of a Rust test table (the table test's command
/// lines), string escapes decoded. Reading the source keeps the table the one place those
/// cases are written.
pub fn table_rows(source: &str) -> Vec<String> {
    let mut rows = Vec::new();
    let mut at = 0;
    loop {
        let rest = &source[at..];
        let offset = match (rest.find("(\""), rest.find("(r")) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => break,
        };
        let start = at + offset + 1;
        at = start;
        let Some((text, end)) = rust_string(source, start) else {
            continue;
        };
        let rest = source[end..].trim_start();
        let Some(rest) = rest.strip_prefix(',') else {
            continue;
        };
        let rest = rest.trim_start();
        let effect = ["Allow", "Ask", "Deny"]
            .iter()
            .find(|name| rest.starts_with(**name) && rest[name.len()..].trim_start().starts_with(')'));
        if effect.is_some() {
            rows.push(text);
            at = end;
        }
    }
    rows
}

/// Decodes the Rust string literal starting at `start` (`"…"`, `r"…"`, `r#"…"#`); returns
/// the text and the index just past it.
fn rust_string(source: &str, start: usize) -> Option<(String, usize)> {
    let rest = &source[start..];
    if let Some(raw) = rest.strip_prefix('r') {
        let hashes = raw.chars().take_while(|c| *c == '#').count();
        let body_start = start + 1 + hashes + 1;
        if !raw[hashes..].starts_with('"') {
            return None;
        }
        let terminator = format!("\"{}", "#".repeat(hashes));
        let end = source[body_start..].find(&terminator)? + body_start;
        return Some((source[body_start..end].to_string(), end + terminator.len()));
    }
    let mut chars = rest.char_indices();
    if chars.next()?.1 != '"' {
        return None;
    }
    let mut text = String::new();
    while let Some((index, c)) = chars.next() {
        match c {
            '"' => return Some((text, start + index + 1)),
            '\\' => {
                let (_, escape) = chars.next()?;
                match escape {
                    'n' => text.push('\n'),
                    't' => text.push('\t'),
                    'r' => text.push('\r'),
                    '0' => text.push('\0'),
                    '\\' => text.push('\\'),
                    '"' => text.push('"'),
                    '\'' => text.push('\''),
                    'x' => {
                        let hex: String = (0..2).filter_map(|_| chars.next().map(|(_, c)| c)).collect();
                        text.push(char::from(u8::from_str_radix(&hex, 16).ok()?));
                    }
                    'u' => {
                        let mut hex = String::new();
                        for (_, c) in chars.by_ref() {
                            match c {
                                '{' => {}
                                '}' => break,
                                c => hex.push(c),
                            }
                        }
                        text.push(char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?);
                    }
                    '\n' => {
                        // A line continuation inside the literal: skip the leading blanks.
                        let skip: Vec<(usize, char)> = chars.clone().take_while(|(_, c)| c.is_whitespace()).collect();
                        for _ in 0..skip.len() {
                            chars.next();
                        }
                    }
                    _ => return None,
                }
            }
            c => text.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_rows_are_read_with_their_escapes() {
        let source = r#"const T: &[(&str, Effect)] = &[("ls", Allow), ("echo \"a\\nb\"\n", Ask), (r"x\y", Deny), ("no", Maybe)];"#;
        assert_eq!(table_rows(source), ["ls", "echo \"a\\nb\"\n", "x\\y"]);
    }
}
