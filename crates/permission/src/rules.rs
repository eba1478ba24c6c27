//! Rules, rule sets and evaluation (spec §4.3): last match wins, no match means ask.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use crate::wildcard::{Pattern, normalise, to_regex};

/// What a rule decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    /// Run without asking.
    Allow,
    /// Ask a person.
    Ask,
    /// Refuse.
    Deny,
}

impl Effect {
    /// `allow`, `ask` or `deny`.
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Allow => "allow",
            Effect::Ask => "ask",
            Effect::Deny => "deny",
        }
    }

    /// Parses `allow`, `ask` or `deny`.
    pub fn parse(text: &str) -> Option<Effect> {
        match text {
            "allow" => Some(Effect::Allow),
            "ask" => Some(Effect::Ask),
            "deny" => Some(Effect::Deny),
            _ => None,
        }
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a rule came from, for `toolgate check` and audits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The built-in defaults every agent starts with.
    Defaults,
    /// The built-in rules of an agent.
    Agent,
    /// The user's `permission` config.
    UserConfig,
    /// An `agent.<name>.permission` config block.
    AgentConfig,
    /// The managed (administrator) layer, appended last.
    Managed,
    /// Rules set on one session.
    Session,
    /// An "always" approval saved in the database.
    SavedApproval,
    /// toolgate's own floor: an edit of a file that defines the rules (or that git runs
    /// code from) always asks, whatever allows it.
    Protected,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::Defaults => "defaults",
            Origin::Agent => "agent",
            Origin::UserConfig => "user config",
            Origin::AgentConfig => "agent config",
            Origin::Managed => "managed",
            Origin::Session => "session",
            Origin::SavedApproval => "saved approval",
            Origin::Protected => "protected file",
        })
    }
}

/// One rule: `effect` for `action` on `resource` (both wildcard patterns).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    /// The action pattern, e.g. `bash` or `*`.
    pub action: String,
    /// The resource pattern, e.g. `git *`.
    pub resource: String,
    /// What the rule decides.
    pub effect: Effect,
    /// Where it came from.
    pub origin: Origin,
    /// The configuration layer it was read from (a file, `$TOOLGATE_PERMISSION`), when
    /// it came from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Written with the effect `audit`: an allow that flags each decision it makes in the
    /// audit log, for a person to review.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flag: bool,
}

impl Rule {
    /// A rule with the given origin.
    pub fn new(action: impl Into<String>, resource: impl Into<String>, effect: Effect, origin: Origin) -> Self {
        Rule {
            action: action.into(),
            resource: resource.into(),
            effect,
            origin,
            source: None,
            flag: false,
        }
    }

    /// The same rule, flagging its decisions in the audit log (the effect `audit`: an
    /// allow a person reviews later).
    pub fn flagged(mut self) -> Self {
        self.flag = true;
        self
    }

    /// The same rule, read from the configuration layer `source`.
    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// The rule as tool-core reports it in a refusal.
    pub(crate) fn to_ref(&self) -> toolgate_core::RuleRef {
        toolgate_core::RuleRef {
            action: self.action.clone(),
            resource: self.resource.clone(),
            effect: self.effect.as_str().to_string(),
            source: Some(self.source.clone().unwrap_or_else(|| self.origin.to_string())),
        }
    }
}

/// The outcome of evaluating one resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision<'a> {
    /// The effect.
    pub effect: Effect,
    /// The deciding rule; `None` when no rule matched (the default ask).
    pub rule: Option<&'a Rule>,
}

/// How many patterns go into one `RegexSet` at most. Larger sets compile slowly and
/// thrash the lazy DFA; several smaller passes are faster and never hit a size limit.
const CHUNK: usize = 512;

/// The compiled-program size a chunk may reach (the `regex` default is 10 MiB). A chunk
/// that does not fit is split; a single pattern that does not fit is scanned instead.
const SIZE_LIMIT: usize = 32 << 20;

/// The lazy DFA cache of one chunk.
const DFA_LIMIT: usize = 8 << 20;

/// Patterns longer than this (in bytes), or with more wildcards than [`SET_WILDCARDS`],
/// are matched on their own: in a `RegexSet` they would blow up its automaton and
/// every decision, while the segment matcher stays linear.
const SET_BYTES: usize = 1024;

/// See [`SET_BYTES`].
const SET_WILDCARDS: usize = 32;

/// Part of an [`Index`]'s regex rules: matched in one `RegexSet` pass, or (when no set
/// could be built) pattern by pattern. Either way every rule is checked: nothing fails open.
#[derive(Debug)]
struct Chunk {
    /// Positions in [`Index::rest`].
    range: std::ops::Range<usize>,
    set: Option<regex::RegexSet>,
}

/// The rules of one literal action whose resource patterns are all relative, or all
/// absolute: literal and `word *` patterns by hash, `*` by its last index, the rest by
/// chunked `RegexSet`s compiled on first use.
#[derive(Debug, Default)]
struct Index {
    /// Literal pattern → its last rule index.
    literals: HashMap<String, usize>,
    /// `stem *` → its last rule index.
    words: HashMap<String, usize>,
    /// The longest stem in `words`, in bytes.
    word_max: usize,
    /// The last `*` rule.
    any: Option<usize>,
    /// Every other rule that suits a `RegexSet`, ascending.
    rest: Vec<usize>,
    /// Long or wildcard-heavy patterns, matched one by one, ascending.
    scan: Vec<usize>,
    chunks: OnceLock<Vec<Chunk>>,
}

impl Index {
    fn add(&mut self, index: usize, pattern: &Pattern) {
        if pattern.is_any() {
            self.any = Some(index);
        } else if let Some(literal) = pattern.literal().filter(|_| !cfg!(windows)) {
            self.literals.insert(literal.to_string(), index);
        } else if let Some(stem) = pattern.word().filter(|_| !cfg!(windows)) {
            self.word_max = self.word_max.max(stem.len());
            self.words.insert(stem.to_string(), index);
        } else if pattern.as_str().len() > SET_BYTES || pattern.as_str().matches(['*', '?']).count() > SET_WILDCARDS {
            self.scan.push(index);
        } else {
            self.rest.push(index);
        }
    }

    fn chunks(&self, rules: &[Rule], size_limit: usize) -> &[Chunk] {
        self.chunks.get_or_init(|| {
            let mut chunks = Vec::new();
            let mut start = 0;
            while start < self.rest.len() {
                let end = (start + CHUNK).min(self.rest.len());
                build_chunks(&self.rest, rules, start..end, size_limit, &mut chunks);
                start = end;
            }
            chunks
        })
    }

    /// The last rule of this index matching `input` (normalised), if any is above `floor`.
    fn last_match(&self, input: &str, compiled: &Compiled, floor: Option<usize>) -> Option<usize> {
        let (rules, resources) = (&compiled.rules, &compiled.resources);
        // `None` orders below every index, so `max` keeps the later rule.
        let mut best = floor.max(self.any).max(self.literals.get(input).copied());
        if !self.words.is_empty() {
            best = best.max(self.words.get(input).copied());
            for (at, _) in input.match_indices(' ') {
                if at > self.word_max {
                    break;
                }
                best = best.max(self.words.get(&input[..at]).copied());
            }
        }
        if !self.rest.is_empty() {
            for chunk in self.chunks(rules, compiled.size_limit).iter().rev() {
                let positions = &self.rest[chunk.range.clone()];
                if positions.last().copied() < best {
                    break;
                }
                let found = match &chunk.set {
                    Some(set) => set.matches(input).iter().next_back().map(|found| positions[found]),
                    None => positions
                        .iter()
                        .rev()
                        .copied()
                        .find(|&index| resources[index].matches_normal(input)),
                };
                if found.is_some() {
                    best = best.max(found);
                    break;
                }
            }
        }
        for &index in self.scan.iter().rev() {
            if Some(index) < best {
                break;
            }
            if resources[index].matches_normal(input) {
                best = Some(index);
                break;
            }
        }
        best
    }
}

/// Builds sets for `rest[range]`, splitting what does not compile; a single pattern that
/// cannot go into a set is scanned with its own matcher.
fn build_chunks(
    rest: &[usize],
    rules: &[Rule],
    range: std::ops::Range<usize>,
    size_limit: usize,
    out: &mut Vec<Chunk>,
) {
    let built = regex::RegexSetBuilder::new(
        rest[range.clone()]
            .iter()
            .map(|&index| to_regex(&rules[index].resource)),
    )
    .size_limit(size_limit)
    .dfa_size_limit(DFA_LIMIT)
    .build();
    match built {
        Ok(set) => out.push(Chunk { range, set: Some(set) }),
        Err(_) if range.len() <= 1 => out.push(Chunk { range, set: None }),
        Err(_) => {
            let middle = range.start + range.len() / 2;
            build_chunks(rest, rules, range.start..middle, size_limit, out);
            build_chunks(rest, rules, middle..range.end, size_limit, out);
        }
    }
}

/// Rules sharing one literal action.
#[derive(Debug, Default)]
struct Group {
    /// Rules whose resource pattern is relative (or not a path at all).
    relative: Index,
    /// Rules whose resource pattern is an absolute path.
    absolute: Index,
}

#[derive(Debug)]
struct Compiled {
    rules: Vec<Rule>,
    actions: Vec<Pattern>,
    resources: Vec<Pattern>,
    /// Per rule: its resource pattern is an absolute path.
    absolute: Vec<bool>,
    groups: HashMap<String, Group>,
    /// Indices of rules whose action has a wildcard, ascending.
    wild_actions: Vec<usize>,
    /// The compiled-size limit of one `RegexSet` ([`SIZE_LIMIT`]; lower in tests).
    size_limit: usize,
}

/// An ordered rule set, compiled once for fast last-match-wins evaluation.
///
/// Rules whose action is a literal are grouped by action: literal and `word *` resource
/// patterns are looked up by hash, the others matched in `RegexSet` passes of at most
/// 512 patterns, compiled on first use; a set that cannot be compiled is split, and a
/// pattern that fits no set is matched on its own, so no rule set, however large, ever
/// loses a rule. The few rules whose action is itself a pattern are checked one by one
/// from the end. The result is exactly that of scanning the rules from the end
/// ([`Ruleset::evaluate_naive`], kept as the reference). Clones share the compiled form.
///
/// ```
/// use toolgate_permission::{Effect, Origin, Rule, Ruleset};
/// let rules = Ruleset::new(vec![
///     Rule::new("bash", "*", Effect::Allow, Origin::UserConfig),
///     Rule::new("bash", "rm *", Effect::Deny, Origin::UserConfig),
/// ]);
/// assert_eq!(rules.evaluate("bash", "rm -rf /").effect, Effect::Deny);
/// assert_eq!(rules.evaluate("bash", "ls").effect, Effect::Allow);
/// assert_eq!(rules.evaluate("edit", "a.rs").effect, Effect::Ask);
/// ```
#[derive(Clone, Debug)]
pub struct Ruleset {
    inner: Arc<Compiled>,
}

impl Default for Ruleset {
    fn default() -> Self {
        Ruleset::new(Vec::new())
    }
}

/// The stricter of two effects: deny, then ask, then allow.
fn strictness(effect: Effect) -> u8 {
    match effect {
        Effect::Allow => 0,
        Effect::Ask => 1,
        Effect::Deny => 2,
    }
}

impl Ruleset {
    /// Compiles `rules` (in order: later rules win).
    pub fn new(rules: Vec<Rule>) -> Self {
        Ruleset::with_size_limit(rules, SIZE_LIMIT)
    }

    fn with_size_limit(rules: Vec<Rule>, size_limit: usize) -> Self {
        let actions: Vec<Pattern> = rules.iter().map(|rule| Pattern::new(&rule.action)).collect();
        let resources: Vec<Pattern> = rules.iter().map(|rule| Pattern::new(&rule.resource)).collect();
        let absolute: Vec<bool> = resources.iter().map(Pattern::is_absolute).collect();
        let mut groups: HashMap<String, Group> = HashMap::new();
        let mut wild_actions = Vec::new();
        for (index, action) in actions.iter().enumerate() {
            match action.literal() {
                Some(literal) => {
                    let group = groups.entry(literal.to_string()).or_default();
                    let index_of = if absolute[index] {
                        &mut group.absolute
                    } else {
                        &mut group.relative
                    };
                    index_of.add(index, &resources[index]);
                }
                None => wild_actions.push(index),
            }
        }
        Ruleset {
            inner: Arc::new(Compiled {
                rules,
                actions,
                resources,
                absolute,
                groups,
                wild_actions,
                size_limit,
            }),
        }
    }

    /// The rules, in order.
    pub fn rules(&self) -> &[Rule] {
        &self.inner.rules
    }

    /// True when there are no rules.
    pub fn is_empty(&self) -> bool {
        self.inner.rules.is_empty()
    }

    /// The index of the last rule matching `action` and `resource`.
    pub fn last_match(&self, action: &str, resource: &str) -> Option<usize> {
        let input = normalise(resource);
        self.last_match_with(action, &input, None)
    }

    /// The last matching rule when rules with a relative pattern see `relative` and rules
    /// with an absolute pattern see `absolute` (`None`: every rule sees `relative`).
    fn last_match_with(&self, action: &str, relative: &str, absolute: Option<&str>) -> Option<usize> {
        let compiled = &*self.inner;
        let action_key = normalise(action);
        let mut best = None;
        if let Some(group) = compiled.groups.get(action_key.as_ref()) {
            best = group.relative.last_match(relative, compiled, best);
            best = group.absolute.last_match(absolute.unwrap_or(relative), compiled, best);
        }
        for &index in compiled.wild_actions.iter().rev() {
            if best.is_some_and(|best| best > index) {
                break;
            }
            let input = match absolute {
                Some(absolute) if compiled.absolute[index] => absolute,
                _ => relative,
            };
            if compiled.actions[index].matches(action) && compiled.resources[index].matches_normal(input) {
                best = Some(index);
                break;
            }
        }
        best
    }

    fn decision(&self, index: Option<usize>) -> Decision<'_> {
        match index {
            Some(index) => Decision {
                effect: self.inner.rules[index].effect,
                rule: Some(&self.inner.rules[index]),
            },
            None => Decision {
                effect: Effect::Ask,
                rule: None,
            },
        }
    }

    /// The decision for one resource: the last matching rule, else ask.
    pub fn evaluate(&self, action: &str, resource: &str) -> Decision<'_> {
        self.decision(self.last_match(action, resource))
    }

    /// The decision for a project-relative path `relative` whose absolute spellings are
    /// `absolutes` (spec §4.3 "absolute candidate"): a rule whose pattern is an absolute
    /// path is matched against the absolute spelling, every other rule against the
    /// relative path; with several spellings (a project reached through a symlink) the
    /// strictest decision holds. With no spelling this is [`Ruleset::evaluate`].
    ///
    /// ```
    /// use toolgate_permission::{Effect, Origin, Rule, Ruleset};
    /// let rules = Ruleset::new(vec![
    ///     Rule::new("*", "*", Effect::Allow, Origin::Defaults),
    ///     Rule::new("edit", "/work/app/src/*", Effect::Deny, Origin::UserConfig),
    /// ]);
    /// let absolute = ["/work/app/src/y.rs".to_string()];
    /// assert_eq!(rules.evaluate_path("edit", "src/y.rs", &absolute).effect, Effect::Deny);
    /// assert_eq!(rules.evaluate("edit", "src/y.rs").effect, Effect::Allow);
    /// ```
    pub fn evaluate_path(&self, action: &str, relative: &str, absolutes: &[String]) -> Decision<'_> {
        let relative_input = normalise(relative);
        let mut chosen: Option<Decision<'_>> = None;
        for absolute in absolutes {
            let absolute = normalise(absolute);
            let decision = self.decision(self.last_match_with(action, &relative_input, Some(&absolute)));
            if chosen
                .as_ref()
                .is_none_or(|chosen| strictness(decision.effect) > strictness(chosen.effect))
            {
                chosen = Some(decision);
            }
        }
        chosen.unwrap_or_else(|| self.decision(self.last_match_with(action, &relative_input, None)))
    }

    /// The reference implementation of [`Ruleset::evaluate_path`]: every rule tried from
    /// the end, no index. Public for differential tests and benchmarks that compare the
    /// indexed evaluation against it; a caller deciding permissions uses
    /// [`Ruleset::evaluate_path`].
    pub fn evaluate_path_naive(&self, action: &str, relative: &str, absolutes: &[String]) -> Decision<'_> {
        if absolutes.is_empty() {
            return self.evaluate_naive(action, relative);
        }
        let compiled = &*self.inner;
        let mut chosen: Option<Decision<'_>> = None;
        for absolute in absolutes {
            let found = (0..compiled.rules.len()).rev().find(|&index| {
                let input = if compiled.absolute[index] {
                    absolute.as_str()
                } else {
                    relative
                };
                compiled.actions[index].matches(action) && compiled.resources[index].matches(input)
            });
            let decision = self.decision(found);
            if chosen
                .as_ref()
                .is_none_or(|chosen| strictness(decision.effect) > strictness(chosen.effect))
            {
                chosen = Some(decision);
            }
        }
        chosen.unwrap_or_else(|| self.evaluate_naive(action, relative))
    }

    /// The reference implementation of [`Ruleset::evaluate`]: scan from the end, one
    /// pattern at a time, no index. Public for differential tests and benchmarks that
    /// compare the indexed evaluation against it; a caller deciding permissions uses
    /// [`Ruleset::evaluate`].
    pub fn evaluate_naive(&self, action: &str, resource: &str) -> Decision<'_> {
        let compiled = &*self.inner;
        let found = (0..compiled.rules.len())
            .rev()
            .find(|&index| compiled.actions[index].matches(action) && compiled.resources[index].matches(resource));
        self.decision(found)
    }

    /// The rules whose action pattern matches `action`, in order (what a refusal reports).
    pub fn relevant(&self, action: &str) -> Vec<&Rule> {
        self.inner
            .rules
            .iter()
            .zip(&self.inner.actions)
            .filter(|(_, pattern)| pattern.matches(action))
            .map(|(rule, _)| rule)
            .collect()
    }

    /// Whether a tool with permission action `action` is wholly denied (spec §2.4, §4.8):
    /// the last rule whose action matches has resource `*` and effect deny.
    pub fn hides(&self, action: &str) -> bool {
        self.inner
            .rules
            .iter()
            .zip(&self.inner.actions)
            .rev()
            .find(|(_, pattern)| pattern.matches(action))
            .is_some_and(|(rule, _)| rule.resource == "*" && rule.effect == Effect::Deny)
    }
}

/// Combines per-resource effects: any deny → deny, else any ask → ask, else allow.
pub fn combine(effects: impl IntoIterator<Item = Effect>) -> Effect {
    let mut result = Effect::Allow;
    for effect in effects {
        match effect {
            Effect::Deny => return Effect::Deny,
            Effect::Ask => result = Effect::Ask,
            Effect::Allow => {}
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With a size limit no set can meet, every chunk is split down to single patterns
    /// that are scanned: the answers stay those of the naive scan.
    #[test]
    fn sets_that_do_not_compile_are_split_and_scanned() {
        let effects = [Effect::Allow, Effect::Ask, Effect::Deny];
        let rules: Vec<Rule> = (0..300)
            .map(|n| {
                Rule::new(
                    "edit",
                    format!("dir{n}/*/f?{}", n % 7),
                    effects[n % 3],
                    Origin::UserConfig,
                )
            })
            .collect();
        let tiny = Ruleset::with_size_limit(rules.clone(), 64);
        let roomy = Ruleset::new(rules);
        for n in 0..300 {
            for resource in [format!("dir{n}/a/fx{}", n % 7), format!("dir{n}/a/fx{}", (n + 1) % 7)] {
                let naive = tiny.evaluate_naive("edit", &resource);
                assert_eq!(tiny.evaluate("edit", &resource), naive, "{resource}");
                assert_eq!(roomy.evaluate("edit", &resource).effect, naive.effect, "{resource}");
            }
        }
        let group = &tiny.inner.groups["edit"].relative;
        let chunks = group.chunks.get().map(Vec::as_slice).unwrap_or_default();
        assert_eq!(chunks.len(), 300, "split down to single patterns");
        assert!(chunks.iter().all(|chunk| chunk.set.is_none()), "none fits: all scanned");
        let roomy_chunks = roomy.inner.groups["edit"].relative.chunks.get().map(Vec::len);
        assert_eq!(roomy_chunks, Some(1), "with the real limit one set holds them");
    }
}
