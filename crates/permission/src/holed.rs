//! Evaluating resources with holes (design.md "Resources with holes").
//!
//! A rule's wildcard and a resource with holes are both small automata: the wildcard over
//! characters (`*` any run, `?` one character, the trailing ` *` rule of spec §4.2), the
//! resource over its known text and holes (a hole is any run of characters of its class).
//! A rule *possibly* matches when some value of the holes makes the wildcard match (the two
//! languages intersect), and *definitely* matches when every value does (inclusion).
//!
//! Evaluation scans from the last rule: a possible match contributes its effect, a
//! definite match contributes and ends the scan, and no definite match at all contributes
//! the default ask. The result is the most restrictive contribution (deny > ask > allow).
//! For a resource without holes this is exactly last-match-wins; for any value of the
//! holes, the exact decision of that value is never more restrictive than the holed one
//! (both properties are tested with proptest in `holed/proptests.rs`).

use std::collections::{HashMap, VecDeque};

use toolgate_core::{HoleClass, PermissionRequest, Resource, ResourceKind, Segment};

use crate::rules::{Effect, Rule, Ruleset};

/// How a rule's resource pattern relates to a resource with holes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Match {
    /// No value of the holes matches.
    No,
    /// Some values match, perhaps not all.
    Possible,
    /// Every value matches.
    Definite,
}

/// The outcome of evaluating a resource with holes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HoledDecision<'a> {
    /// The most restrictive effect contributed.
    pub(crate) effect: Effect,
    /// The rule that contributed it; `None` for the default ask.
    pub(crate) rule: Option<&'a Rule>,
    /// True when a definite match ended the scan (false: the default ask contributed too).
    pub(crate) definite: bool,
}

/// How many subset states the inclusion check explores before it gives up and answers
/// "not definite" (which only makes the evaluation more restrictive).
const STATE_LIMIT: usize = 20_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum P {
    Lit(char),
    One,
    Star,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum R {
    Lit(char),
    Hole(HoleClass),
}

fn fold(c: char) -> char {
    let c = if c == '\\' { '/' } else { c };
    if cfg!(windows) { c.to_ascii_lowercase() } else { c }
}

/// A wildcard as tokens, and the positions where it accepts.
struct Wild {
    tokens: Vec<P>,
    /// The end of the stem when the pattern ends in ` *` (it then also matches the stem).
    stem_end: Option<usize>,
}

impl Wild {
    fn new(pattern: &str) -> Wild {
        let tokens: Vec<P> = pattern
            .chars()
            .map(|c| match c {
                '*' => P::Star,
                '?' => P::One,
                other => P::Lit(fold(other)),
            })
            .collect();
        let n = tokens.len();
        let stem_end = (n >= 2 && tokens[n - 1] == P::Star && tokens[n - 2] == P::Lit(' ')).then(|| n - 2);
        Wild { tokens, stem_end }
    }

    fn accepts(&self, position: usize) -> bool {
        position == self.tokens.len() || Some(position) == self.stem_end
    }

    /// Adds `position` and every position reachable by skipping stars.
    fn close(&self, mut position: usize, set: &mut [bool]) {
        loop {
            if set[position] {
                return;
            }
            set[position] = true;
            if position < self.tokens.len() && self.tokens[position] == P::Star {
                position += 1;
            } else {
                return;
            }
        }
    }

    fn step(&self, set: &[bool], c: char) -> Vec<bool> {
        let mut next = vec![false; self.tokens.len() + 1];
        for (position, on) in set.iter().enumerate() {
            if !on || position == self.tokens.len() {
                continue;
            }
            match self.tokens[position] {
                P::Lit(l) if l == c => self.close(position + 1, &mut next),
                P::Lit(_) => {}
                P::One => self.close(position + 1, &mut next),
                P::Star => self.close(position, &mut next),
            }
        }
        next
    }

    /// One representative character of every class the wildcard distinguishes within
    /// `class`: each literal it names, and one character it names nowhere.
    fn alphabet(&self, class: HoleClass) -> Vec<char> {
        let mut out: Vec<char> = Vec::new();
        for token in &self.tokens {
            if let P::Lit(c) = token
                && allowed(class, *c)
                && !out.contains(c)
            {
                out.push(*c);
            }
        }
        // One character the wildcard names nowhere stands for all the others.
        let mut other = '\u{e000}';
        while self.tokens.contains(&P::Lit(other)) {
            other = char::from_u32(other as u32 + 1).unwrap_or('\u{f8ff}');
        }
        out.push(other);
        out
    }
}

fn allowed(class: HoleClass, c: char) -> bool {
    match class {
        HoleClass::Any => true,
        HoleClass::Name => c != '/' && c != '\\',
    }
}

fn tokens(resource: &Resource) -> Vec<R> {
    let mut out = Vec::new();
    for segment in resource.segments() {
        match segment {
            Segment::Text { text } => out.extend(text.chars().map(|c| R::Lit(fold(c)))),
            Segment::Hole(hole) => out.push(R::Hole(hole.class)),
        }
    }
    out
}

/// Whether some value of the holes makes `wild` match: a search of the product automaton.
fn possible(wild: &Wild, resource: &[R]) -> bool {
    let n = wild.tokens.len();
    let m = resource.len();
    let index = |i: usize, j: usize| i * (m + 1) + j;
    let mut seen = vec![false; (n + 1) * (m + 1)];
    let mut queue = VecDeque::new();
    seen[index(0, 0)] = true;
    queue.push_back((0usize, 0usize));
    while let Some((i, j)) = queue.pop_front() {
        if j == m && wild.accepts(i) {
            return true;
        }
        let mut push = |a: usize, b: usize, queue: &mut VecDeque<(usize, usize)>| {
            if !seen[index(a, b)] {
                seen[index(a, b)] = true;
                queue.push_back((a, b));
            }
        };
        let p = wild.tokens.get(i).copied();
        let r = resource.get(j).copied();
        // Empty moves: a star or a hole may take nothing.
        if p == Some(P::Star) {
            push(i + 1, j, &mut queue);
        }
        if let Some(R::Hole(_)) = r {
            push(i, j + 1, &mut queue);
        }
        match (p, r) {
            (Some(P::Lit(a)), Some(R::Lit(b))) if a == b => push(i + 1, j + 1, &mut queue),
            (Some(P::One), Some(R::Lit(_))) => push(i + 1, j + 1, &mut queue),
            (Some(P::Star), Some(R::Lit(_))) => push(i, j + 1, &mut queue),
            (Some(P::Lit(a)), Some(R::Hole(class))) if allowed(class, a) => push(i + 1, j, &mut queue),
            (Some(P::One), Some(R::Hole(_))) => push(i + 1, j, &mut queue),
            _ => {}
        }
    }
    false
}

/// Whether every value of the holes makes `wild` match: the resource automaton against
/// the subset construction of the wildcard, looking for a value that ends outside the
/// accepting positions. Gives up (false) after [`STATE_LIMIT`] states.
fn definite(wild: &Wild, resource: &[R]) -> bool {
    let n = wild.tokens.len();
    let mut start = vec![false; n + 1];
    wild.close(0, &mut start);
    let mut seen: HashMap<(usize, Vec<bool>), ()> = HashMap::new();
    let mut queue = VecDeque::new();
    seen.insert((0, start.clone()), ());
    queue.push_back((0usize, start));
    let alphabets = [wild.alphabet(HoleClass::Any), wild.alphabet(HoleClass::Name)];
    while let Some((j, set)) = queue.pop_front() {
        if seen.len() > STATE_LIMIT {
            return false;
        }
        let mut push = |state: (usize, Vec<bool>), queue: &mut VecDeque<(usize, Vec<bool>)>| {
            if !seen.contains_key(&state) {
                seen.insert(state.clone(), ());
                queue.push_back(state);
            }
        };
        match resource.get(j) {
            None => {
                if !set
                    .iter()
                    .enumerate()
                    .any(|(position, on)| *on && wild.accepts(position))
                {
                    return false;
                }
            }
            Some(R::Lit(c)) => push((j + 1, wild.step(&set, *c)), &mut queue),
            Some(R::Hole(class)) => {
                push((j + 1, set.clone()), &mut queue);
                let alphabet = match class {
                    HoleClass::Any => &alphabets[0],
                    HoleClass::Name => &alphabets[1],
                };
                for c in alphabet {
                    push((j, wild.step(&set, *c)), &mut queue);
                }
            }
        }
    }
    true
}

/// How the wildcard `pattern` relates to `resource`.
pub(crate) fn match_holed(pattern: &str, resource: &Resource) -> Match {
    let wild = Wild::new(pattern);
    let resource = tokens(resource);
    if !possible(&wild, &resource) {
        Match::No
    } else if definite(&wild, &resource) {
        Match::Definite
    } else {
        Match::Possible
    }
}

fn severity(effect: Effect) -> u8 {
    match effect {
        Effect::Allow => 0,
        Effect::Ask => 1,
        Effect::Deny => 2,
    }
}

/// The most restrictive of two effects.
#[cfg(test)]
pub(crate) fn stricter(a: Effect, b: Effect) -> Effect {
    if severity(b) > severity(a) { b } else { a }
}

/// Evaluates `resource` against rule sets applied in order (later sets, and later rules,
/// win): possible matches contribute, a definite match ends the scan.
#[cfg(test)]
pub(crate) fn evaluate_holed<'a>(chain: &[&'a Ruleset], action: &str, resource: &Resource) -> HoledDecision<'a> {
    evaluate_holed_with(chain, action, resource, false)
}

/// [`evaluate_holed`]; with `enforced` (the action is checked again when it happens), a
/// deny that only possibly matches contributes ask: only a definite deny refuses now.
pub(crate) fn evaluate_holed_with<'a>(
    chain: &[&'a Ruleset],
    action: &str,
    resource: &Resource,
    enforced: bool,
) -> HoledDecision<'a> {
    let mut best: Option<(Effect, Option<&'a Rule>)> = None;
    let mut contribute = |effect: Effect, rule: Option<&'a Rule>| match &best {
        Some((current, _)) if severity(*current) >= severity(effect) => {}
        _ => best = Some((effect, rule)),
    };
    let mut definite_match = false;
    'scan: for ruleset in chain.iter().rev() {
        for rule in ruleset.relevant(action).into_iter().rev() {
            match match_holed(&rule.resource, resource) {
                Match::No => {}
                Match::Possible if enforced && rule.effect == Effect::Deny => contribute(Effect::Ask, Some(rule)),
                Match::Possible => contribute(rule.effect, Some(rule)),
                Match::Definite => {
                    contribute(rule.effect, Some(rule));
                    definite_match = true;
                    break 'scan;
                }
            }
        }
    }
    if !definite_match {
        contribute(Effect::Ask, None);
    }
    let (effect, rule) = best.unwrap_or((Effect::Ask, None));
    HoledDecision {
        effect,
        rule,
        definite: definite_match,
    }
}

/// Evaluates a resource that stands for anything: every rule of the action possibly
/// matches it, and the effect is at least ask.
#[cfg(test)]
pub(crate) fn evaluate_opaque<'a>(chain: &[&'a Ruleset], action: &str) -> HoledDecision<'a> {
    evaluate_opaque_with(chain, action, false)
}

/// [`evaluate_opaque`], softened like [`evaluate_holed_with`] when `enforced`.
pub(crate) fn evaluate_opaque_with<'a>(chain: &[&'a Ruleset], action: &str, enforced: bool) -> HoledDecision<'a> {
    let decision = evaluate_holed_with(chain, action, &Resource::unknown("…"), enforced);
    if decision.effect == Effect::Allow {
        HoledDecision {
            effect: Effect::Ask,
            rule: None,
            definite: decision.definite,
        }
    } else {
        decision
    }
}

/// Decides one resource of `request` the way the permission service does before anyone
/// is asked: the configured rule sets `chain` (later sets and rules win) by the
/// resource's kind — exact, with holes, or opaque — then `saved` approvals, which turn an
/// ask into allow but never for an unsaveable or opaque resource, and for a resource with
/// holes only when they match every value of them.
///
/// ```
/// use toolgate_core::{HoleClass, PermissionRequest, Resource};
/// use toolgate_permission::{Effect, Origin, Rule, Ruleset, decide_resource};
/// let rules = Ruleset::new(vec![
///     Rule::new("bash", "*", Effect::Ask, Origin::UserConfig),
///     Rule::new("bash", "rm *", Effect::Deny, Origin::UserConfig),
/// ]);
/// let saved = Ruleset::new(vec![Rule::new("bash", "echo *", Effect::Allow, Origin::SavedApproval)]);
/// let mut echo = Resource::exact("echo ");
/// echo.push_hole("$X", HoleClass::Any);
/// let request = PermissionRequest::new("bash").holed([echo]).opaque(["eval \"$X\""]);
/// assert_eq!(decide_resource(&[&rules], Some(&saved), &request, "echo $X").0, Effect::Allow);
/// assert_eq!(decide_resource(&[&rules], Some(&saved), &request, "eval \"$X\"").0, Effect::Deny);
/// ```
pub fn decide_resource<'a>(
    chain: &[&'a Ruleset],
    saved: Option<&'a Ruleset>,
    request: &PermissionRequest,
    resource: &str,
) -> (Effect, Option<&'a Rule>) {
    let action = request.action.as_str();
    let kind = request.kind(resource);
    let (effect, rule) = match kind {
        ResourceKind::Exact(text) => chain
            .iter()
            .rev()
            .find_map(|set| set.last_match(action, text).map(|index| &set.rules()[index]))
            .map_or((Effect::Ask, None), |rule| (rule.effect, Some(rule))),
        ResourceKind::Holed(holed) => {
            let decision = evaluate_holed_with(chain, action, holed, request.enforced);
            (decision.effect, decision.rule)
        }
        ResourceKind::Opaque => {
            let decision = evaluate_opaque_with(chain, action, request.enforced);
            (decision.effect, decision.rule)
        }
    };
    if effect != Effect::Ask || request.is_unsaveable(resource) {
        return (effect, rule);
    }
    let approval = saved.and_then(|saved| match kind {
        ResourceKind::Exact(text) => saved.last_match(action, text).map(|index| &saved.rules()[index]),
        ResourceKind::Holed(holed) => saved
            .relevant(action)
            .into_iter()
            .rev()
            .find(|rule| match_holed(&rule.resource, holed) == Match::Definite),
        ResourceKind::Opaque => None,
    });
    match approval {
        Some(approval) => (Effect::Allow, Some(approval)),
        None => (effect, rule),
    }
}

/// True when a rule of `action` in any of the sets denies something.
pub(crate) fn has_deny(chain: &[&Ruleset], action: &str) -> bool {
    chain
        .iter()
        .any(|ruleset| ruleset.relevant(action).iter().any(|rule| rule.effect == Effect::Deny))
}

#[cfg(test)]
mod proptests;

#[cfg(test)]
mod tests {
    use super::*;

    fn holed(parts: &[(&str, Option<HoleClass>)]) -> Resource {
        let mut resource = Resource::default();
        for (text, class) in parts {
            match class {
                None => resource.push_text(text),
                Some(class) => resource.push_hole(*text, *class),
            }
        }
        resource
    }

    const ANY: Option<HoleClass> = Some(HoleClass::Any);
    const NAME: Option<HoleClass> = Some(HoleClass::Name);

    #[test]
    fn a_leading_hole_possibly_matches_every_star_pattern() {
        let resource = holed(&[("$CMD", ANY), (" x", None)]);
        assert_eq!(match_holed("rm *", &resource), Match::Possible);
        assert_eq!(match_holed("*", &resource), Match::Definite);
        assert_eq!(match_holed("rm x", &resource), Match::Possible);
        assert_eq!(match_holed("rm y", &resource), Match::No);
        assert_eq!(match_holed("* x", &resource), Match::Definite);
    }

    #[test]
    fn the_trailing_space_star_rule_applies_to_holes() {
        let resource = holed(&[("git", None), ("$X", ANY)]);
        // `git *` matches `git` and `git …` but not `gitx`, so only possibly.
        assert_eq!(match_holed("git *", &resource), Match::Possible);
        assert_eq!(match_holed("git*", &resource), Match::Definite);
        let resource = holed(&[("git ", None), ("$X", ANY)]);
        assert_eq!(match_holed("git *", &resource), Match::Definite);
    }

    #[test]
    fn name_holes_never_contain_a_slash() {
        let resource = holed(&[("src/", None), ("*", NAME), (".rs", None)]);
        assert_eq!(match_holed("secrets/*", &resource), Match::No);
        assert_eq!(match_holed("*.env", &resource), Match::No);
        assert_eq!(match_holed("src/*", &resource), Match::Definite);
        assert_eq!(match_holed("src/*/x.rs", &resource), Match::No);
        let any = holed(&[("src/", None), ("$X", ANY), (".rs", None)]);
        assert_eq!(match_holed("src/*/x.rs", &any), Match::Possible);
    }

    #[test]
    fn question_marks_need_exactly_one_character() {
        let resource = holed(&[("a", None), ("$X", ANY)]);
        assert_eq!(match_holed("a?", &resource), Match::Possible);
        assert_eq!(match_holed("a", &resource), Match::Possible);
        assert_eq!(match_holed("a*", &resource), Match::Definite);
        assert_eq!(match_holed("a?*", &resource), Match::Possible);
    }

    #[test]
    fn backslashes_count_as_slashes_on_both_sides() {
        let resource = holed(&[("secrets\\", None), ("*", NAME)]);
        assert_eq!(match_holed("secrets/*", &resource), Match::Definite);
    }
}
