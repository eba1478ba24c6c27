//! `toolgate import claude-code|codex|gemini [--write]`: the rules a person already has in
//! another agent, as toolgate rules (README "Importing rules from other agents").
//!
//! Each agent's module reads its files into one [`Imported`]: rules in the order that gives
//! toolgate's last-match-wins (spec §4.9) the agent's own effect, MCP servers in toolgate's
//! `mcp` form, and notes on everything that could not be expressed. What is unclear never
//! becomes an allow: it is left out (an allow) or widened (an ask or a deny), and noted.
//!
//! The rules go into the V2 list form, `permissions`, which a file reads after its
//! `permission` object: an ordered list keeps duplicates and order exactly, and the
//! imported block, appended after the file's own rules, decides wherever it matches.

mod claude;
mod codex;
mod gemini;
mod merge;
mod starlark;

use std::path::{Path, PathBuf};

use crate::{Failure, Project};

/// The agents whose rules can be imported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Agent {
    /// Claude Code: `settings.json` permissions and `.mcp.json`.
    ClaudeCode,
    /// Codex: `config.toml` MCP servers and `.rules` prefix rules.
    Codex,
    /// Gemini CLI: policy TOML files and `settings.json`.
    Gemini,
}

impl Agent {
    fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
        }
    }
}

/// An effect, ordered by strictness: a later effect in toolgate's order is the stricter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Effect {
    Allow,
    Ask,
    Deny,
}

impl Effect {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Effect::Allow => "allow",
            Effect::Ask => "ask",
            Effect::Deny => "deny",
        }
    }
}

/// One imported rule, with what it came from (shown as a comment beside it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Rule {
    pub(crate) action: String,
    pub(crate) resource: String,
    pub(crate) effect: Effect,
    pub(crate) why: String,
    /// Whether it is the agent's baseline (what it does where no rule matches), which a
    /// file whose own rules decide the action does without.
    pub(crate) baseline: bool,
}

impl Rule {
    pub(crate) fn new(action: &str, resource: &str, effect: Effect, why: impl Into<String>) -> Rule {
        Rule {
            action: action.to_string(),
            resource: resource.to_string(),
            effect,
            why: why.into(),
            baseline: false,
        }
    }

    /// The agent's baseline for `action`: `effect` on every resource.
    pub(crate) fn baseline(action: &str, effect: Effect, why: impl Into<String>) -> Rule {
        Rule {
            baseline: true,
            ..Rule::new(action, "*", effect, why)
        }
    }
}

/// Whether `text` matches the wildcard `pattern` (`*` any run, `?` one character), as
/// toolgate reads an action pattern.
fn wildcard(pattern: &str, text: &str) -> bool {
    let (pattern, text): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(c) if *c == '?' || *c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

/// The action patterns the file's own rules name (its `permission` object, legacy
/// `tools`, and the items of its `permissions` list that are not imported rules, so an
/// earlier run of the same import does not count): where they decide an action, the
/// person already chose what happens when nothing imported matches.
fn own_actions(old: &str, imported: &Imported) -> Vec<String> {
    let Ok(value) = jsonc_parser::parse_to_serde_value::<serde_json::Value>(old, &Default::default()) else {
        return Vec::new();
    };
    let mut actions = Vec::new();
    match value.get("permission") {
        Some(serde_json::Value::String(_)) => actions.push("*".to_string()),
        Some(serde_json::Value::Object(map)) => actions.extend(map.keys().cloned()),
        _ => {}
    }
    if let Some(serde_json::Value::Object(map)) = value.get("tools") {
        actions.extend(map.keys().cloned());
    }
    if let Some(serde_json::Value::Array(list)) = value.get("permissions") {
        for item in list {
            let field = |name: &str| item.get(name).and_then(serde_json::Value::as_str).unwrap_or_default();
            let (action, resource, effect) = (field("action"), field("resource"), field("effect"));
            let ours = imported
                .rules
                .iter()
                .any(|rule| rule.action == action && rule.resource == resource && rule.effect.as_str() == effect);
            if !action.is_empty() && !ours {
                actions.push(action.to_string());
            }
        }
    }
    actions
}

/// Leaves out the baseline rules of the actions the file's own rules decide, each with a
/// note: appended after those rules, a baseline would overrule every allow the person
/// already has (a `cargo *` allowed, asked again after a Codex import).
fn keep_own_fallbacks(old: &str, imported: &mut Imported) {
    let own = own_actions(old, imported);
    let mut dropped = Vec::new();
    imported.rules.retain(|rule| {
        let decided = rule.baseline && own.iter().any(|pattern| wildcard(pattern, &rule.action));
        if decided {
            dropped.push(format!(
                "baseline `{} *: {}` left out: the file's own `{}` rules decide where no imported rule matches",
                rule.action,
                rule.effect.as_str(),
                rule.action
            ));
        }
        !decided
    });
    for note in dropped {
        imported.note(note);
    }
}

/// One imported MCP server, in toolgate's `mcp` form.
#[derive(Clone, Debug)]
pub(crate) struct Server {
    pub(crate) name: String,
    pub(crate) value: serde_json::Value,
    pub(crate) why: String,
}

/// What one agent's files become.
#[derive(Debug, Default)]
pub(crate) struct Imported {
    /// The files read, in the order read.
    pub(crate) sources: Vec<PathBuf>,
    /// The rules, in toolgate's order (the last matching one decides).
    pub(crate) rules: Vec<Rule>,
    pub(crate) servers: Vec<Server>,
    /// What could not be expressed, or was expressed more strictly than the agent has it.
    pub(crate) notes: Vec<String>,
}

impl Imported {
    pub(crate) fn note(&mut self, note: impl Into<String>) {
        let note = note.into();
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }
}

/// Where an agent's files are looked for: the project, the home directory, and the
/// agent's own variables (`CODEX_HOME`).
pub(crate) struct Places {
    pub(crate) dir: PathBuf,
    pub(crate) home: Option<PathBuf>,
}

impl Places {
    /// `home`/`rest`, when the home directory is known.
    pub(crate) fn in_home(&self, rest: &str) -> Option<PathBuf> {
        self.home.as_ref().map(|home| home.join(rest))
    }
}

/// Reads a file as UTF-8 text, naming it in the error.
pub(crate) fn read_text(path: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(path).map_err(|error| Failure::usage(format!("{}: {error}", path.display())))
}

/// The `*.toml` (or other `ext`) files of a directory, sorted by name (as the agents load
/// them); none when it does not exist.
pub(crate) fn files_in(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_file() && path.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    files
}

/// Whether a pattern element may stand in a toolgate wildcard as itself: `*` and `?` are
/// wildcards there and cannot be escaped.
pub(crate) fn literal_safe(text: &str) -> bool {
    !text.contains(['*', '?'])
}

/// Loads `text` as toolgate would load the project's file (from a file beside it, as
/// `--config`): a merge that toolgate could not load is refused before anything is
/// written (an MCP server's URL it cannot use, a value of the wrong shape).
fn check_loads(dir: &Path, target: &Path, text: &str) -> Result<(), Failure> {
    // Beside the file, so what it reads relative to itself (`{file:…}`) is found; in the
    // temporary directory when the project cannot be written (a look without --write).
    let name = format!(".toolgate-import-{}.json", std::process::id());
    let beside = target.parent().unwrap_or(dir).join(&name);
    let probe = match std::fs::write(&beside, text) {
        Ok(()) => beside,
        Err(_) => {
            let elsewhere = std::env::temp_dir().join(&name);
            std::fs::write(&elsewhere, text)
                .map_err(|error| Failure::runtime(format!("{}: {error}", elsewhere.display())))?;
            elsewhere
        }
    };
    let loaded = crate::config::Config::load(
        &crate::config::Dirs::discover(),
        dir,
        Some(&probe),
        crate::trust::Policy::Stored,
    );
    let _ = std::fs::remove_file(&probe);
    loaded.map(|_| ()).map_err(|error| {
        let message = error
            .to_string()
            .replace(&probe.display().to_string(), &target.display().to_string());
        Failure::usage(format!(
            "the imported rules would not load, nothing is written: {message}"
        ))
    })
}

/// `toolgate import AGENT [--from FILE]… [--write]`.
pub(crate) fn run(project: &Project, agent: Agent, from: &[PathBuf], write: bool) -> Result<(), Failure> {
    let (_, dir) = crate::setup::project_dir(project)?;
    let places = Places {
        dir: dir.clone(),
        home: etcetera::home_dir().ok(),
    };
    let mut imported = match agent {
        Agent::ClaudeCode => claude::import(&places, from)?,
        Agent::Codex => codex::import(&places, from)?,
        Agent::Gemini => gemini::import(&places, from)?,
    };
    if imported.sources.is_empty() {
        return Err(Failure::usage(format!(
            "no {} configuration found (looked in {}); name files with --from FILE",
            agent.name(),
            match agent {
                Agent::ClaudeCode => claude::LOOKED,
                Agent::Codex => codex::LOOKED,
                Agent::Gemini => gemini::LOOKED,
            }
        )));
    }
    let target = merge::target(&dir);
    let old = match std::fs::read_to_string(&target) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(error) => return Err(Failure::usage(format!("{}: {error}", target.display()))),
    };
    keep_own_fallbacks(&old, &mut imported);
    let merged = merge::merge(&old, &imported, agent.name())
        .map_err(|error| Failure::usage(format!("{}: {error}", target.display())))?;
    check_loads(&dir, &target, &merged.text)?;
    for note in &merged.skipped {
        eprintln!("toolgate: warning: import: {note}");
    }
    for note in &imported.notes {
        eprintln!("toolgate: note: import: {note}");
    }
    let shown = target.display().to_string();
    let diff = similar::TextDiff::from_lines(old.as_str(), merged.text.as_str())
        .unified_diff()
        .context_radius(3)
        .header(&shown, &shown)
        .to_string();
    if write {
        if diff.is_empty() {
            outln!("{shown}: unchanged");
            return Ok(());
        }
        merge::write_atomic(&target, &merged.text)
            .map_err(|error| Failure::runtime(format!("cannot write {shown}: {error}")))?;
        outln!("{}", diff.trim_end());
        outln!(
            "wrote {shown}: {} rules and {} MCP servers imported from {}",
            imported.rules.len(),
            merged.servers,
            agent.name()
        );
    } else {
        outln!("// The toolgate rules imported from {}:", agent.name());
        outln!("{}", merge::document(&imported, agent.name()).trim_end());
        if diff.is_empty() {
            outln!("// {shown} would not change");
        } else {
            outln!("// The change to {shown} (apply it with --write):");
            outln!("{}", diff.trim_end());
        }
    }
    Ok(())
}
