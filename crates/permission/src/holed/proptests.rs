//! Resources with holes (design.md "Resources with holes"): its examples, and
//! proptests that the holed evaluation agrees with the exact one where it must and is
//! never less restrictive than any value the holes could take.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::{Match, evaluate_holed, evaluate_holed_with, evaluate_opaque, evaluate_opaque_with, match_holed, stricter};
use crate::{Effect, Origin, Rule, Ruleset};
use proptest::prelude::*;
use toolgate_core::{HoleClass, Resource, Segment};

fn ruleset(list: &[(&str, &str)]) -> Ruleset {
    Ruleset::new(
        list.iter()
            .map(|(resource, effect)| Rule::new("bash", *resource, Effect::parse(effect).unwrap(), Origin::UserConfig))
            .collect(),
    )
}

fn sample() -> Ruleset {
    ruleset(&[
        ("*", "ask"),
        ("echo *", "allow"),
        ("ls *", "allow"),
        ("git status *", "allow"),
        ("rm *", "deny"),
        ("curl *", "deny"),
        ("git push *", "deny"),
    ])
}

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

#[test]
fn a_hole_gets_the_strictest_effect_of_the_rules_it_could_match() {
    let rules = sample();
    let echo_home = holed(&[("echo ", None), ("$HOME", Some(HoleClass::Any))]);
    assert_eq!(evaluate_holed(&[&rules], "bash", &echo_home).effect, Effect::Allow);
    let cmd = holed(&[("$CMD", Some(HoleClass::Any)), (" x", None)]);
    let decision = evaluate_holed(&[&rules], "bash", &cmd);
    assert_eq!(decision.effect, Effect::Deny);
    assert!(decision.rule.is_some_and(|rule| rule.effect == Effect::Deny));
    let read = Ruleset::new(vec![
        Rule::new("read", "*", Effect::Allow, Origin::UserConfig),
        Rule::new("read", "*.env", Effect::Deny, Origin::UserConfig),
    ]);
    let unknown = Resource::unknown("$FILE");
    assert_eq!(evaluate_holed(&[&read], "read", &unknown).effect, Effect::Deny);
    let rust = holed(&[("src/", None), ("*", Some(HoleClass::Name)), (".rs", None)]);
    assert_eq!(evaluate_holed(&[&read], "read", &rust).effect, Effect::Allow);
}

#[test]
fn opaque_is_at_best_ask_and_denied_when_any_rule_denies() {
    let allow_all = ruleset(&[("*", "allow")]);
    assert_eq!(evaluate_opaque(&[&allow_all], "bash").effect, Effect::Ask);
    assert_eq!(evaluate_opaque(&[&sample()], "bash").effect, Effect::Deny);
    // Rules of other actions do not count.
    assert_eq!(evaluate_opaque(&[&sample()], "read").effect, Effect::Ask);
}

/// With exec-time enforcement, what the analysis cannot see is asked, not refused: the
/// deny still holds when the program starts. A deny whatever the holes hold, and rules
/// that deny everything, still refuse before anything runs.
#[test]
fn enforced_requests_ask_where_a_deny_only_possibly_matches() {
    let rules = sample();
    assert_eq!(evaluate_opaque_with(&[&rules], "bash", true).effect, Effect::Ask);
    let cmd = holed(&[("$CMD", Some(HoleClass::Any)), (" x", None)]);
    assert_eq!(evaluate_holed_with(&[&rules], "bash", &cmd, true).effect, Effect::Ask);
    let rm = holed(&[("rm ", None), ("$X", Some(HoleClass::Any))]);
    assert_eq!(evaluate_holed_with(&[&rules], "bash", &rm, true).effect, Effect::Deny);
    let deny_all = ruleset(&[("*", "deny")]);
    assert_eq!(evaluate_opaque_with(&[&deny_all], "bash", true).effect, Effect::Deny);
    assert_eq!(
        evaluate_holed_with(&[&deny_all], "bash", &cmd, true).effect,
        Effect::Deny
    );
    // Not enforced: as before.
    assert_eq!(evaluate_holed_with(&[&rules], "bash", &cmd, false).effect, Effect::Deny);
}

#[test]
fn later_rule_sets_are_scanned_first() {
    let agent = ruleset(&[("rm *", "deny")]);
    let session = ruleset(&[("*", "allow")]);
    let echo = holed(&[("echo ", None), ("$X", Some(HoleClass::Any))]);
    // The session's `*` definitely matches and ends the scan before the agent's deny.
    assert_eq!(evaluate_holed(&[&agent, &session], "bash", &echo).effect, Effect::Allow);
    let cmd = Resource::unknown("$CMD");
    // `*` definitely matches an unknown too, so the agent deny is never reached.
    assert_eq!(evaluate_holed(&[&agent, &session], "bash", &cmd).effect, Effect::Allow);
    assert_eq!(evaluate_holed(&[&session, &agent], "bash", &cmd).effect, Effect::Deny);
}

// --- proptests -------------------------------------------------------------------------

const ALPHABET: &[char] = &['a', 'b', ' ', '/', '.', '\\'];

fn pattern_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            4 => prop::sample::select(ALPHABET.to_vec()).prop_map(|c| c.to_string()),
            2 => Just("*".to_string()),
            1 => Just("?".to_string()),
            1 => Just(" *".to_string()),
        ],
        0..7,
    )
    .prop_map(|parts| parts.concat())
}

fn effect_strategy() -> impl Strategy<Value = Effect> {
    prop::sample::select(vec![Effect::Allow, Effect::Ask, Effect::Deny])
}

fn rules_strategy() -> impl Strategy<Value = Vec<Rule>> {
    prop::collection::vec(
        (
            prop::sample::select(vec!["bash", "bash", "read", "*", "b*"]),
            pattern_strategy(),
            effect_strategy(),
        )
            .prop_map(|(action, resource, effect)| Rule::new(action, resource, effect, Origin::UserConfig)),
        0..12,
    )
}

#[derive(Clone, Debug)]
enum Piece {
    Text(String),
    Hole(HoleClass),
}

fn resource_strategy() -> impl Strategy<Value = Vec<Piece>> {
    prop::collection::vec(
        prop_oneof![
            3 => prop::collection::vec(prop::sample::select(ALPHABET.to_vec()), 0..4)
                .prop_map(|chars| Piece::Text(chars.into_iter().collect())),
            1 => Just(Piece::Hole(HoleClass::Any)),
            1 => Just(Piece::Hole(HoleClass::Name)),
        ],
        0..5,
    )
}

fn build(pieces: &[Piece]) -> Resource {
    let mut resource = Resource::default();
    for piece in pieces {
        match piece {
            Piece::Text(text) => resource.push_text(text),
            Piece::Hole(class) => resource.push_hole("?", *class),
        }
    }
    resource
}

/// A value for a hole of `class`, drawn from `chars` (which may hold `/`).
fn value(class: HoleClass, chars: &[char]) -> String {
    chars
        .iter()
        .filter(|c| class == HoleClass::Any || (**c != '/' && **c != '\\'))
        .collect()
}

fn substitute(resource: &Resource, values: &[Vec<char>]) -> String {
    let mut out = String::new();
    let mut index = 0;
    for segment in resource.segments() {
        match segment {
            Segment::Text { text } => out.push_str(text),
            Segment::Hole(hole) => {
                out.push_str(&value(hole.class, values.get(index).map_or(&[][..], |v| v)));
                index += 1;
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// With no hole, the holed evaluation is the exact evaluation.
    #[test]
    fn holed_evaluation_of_an_exact_resource_is_the_exact_evaluation(
        rules in rules_strategy(),
        action in prop::sample::select(vec!["bash", "read", "edit"]),
        text in prop::collection::vec(prop::sample::select(ALPHABET.to_vec()), 0..8),
    ) {
        let text: String = text.into_iter().collect();
        let set = Ruleset::new(rules);
        let exact = set.evaluate(action, &text);
        let holed = evaluate_holed(&[&set], action, &Resource::exact(text.clone()));
        prop_assert_eq!(holed.effect, exact.effect);
        prop_assert_eq!(holed.rule.map(|r| r as *const Rule), exact.rule.map(|r| r as *const Rule));
    }

    /// Whatever the holes turn out to be, the exact decision is never more restrictive
    /// than the holed one.
    #[test]
    fn no_value_of_the_holes_is_more_restrictive_than_the_holed_decision(
        rules in rules_strategy(),
        split in 0usize..12,
        action in prop::sample::select(vec!["bash", "read"]),
        pieces in resource_strategy(),
        values in prop::collection::vec(prop::collection::vec(prop::sample::select(ALPHABET.to_vec()), 0..5), 5),
    ) {
        let resource = build(&pieces);
        let split = split.min(rules.len());
        let first = Ruleset::new(rules[..split].to_vec());
        let second = Ruleset::new(rules[split..].to_vec());
        let holed = evaluate_holed(&[&first, &second], action, &resource).effect;
        let concrete = substitute(&resource, &values);
        let all = Ruleset::new([first.rules(), second.rules()].concat());
        let exact = all.evaluate(action, &concrete).effect;
        prop_assert_eq!(stricter(exact, holed), holed, "{:?} as {:?}: exact {} holed {}", resource, concrete, exact, holed);
    }

    /// The matcher itself: a value that matches means at least "possible"; a value that
    /// does not match rules out "definite".
    #[test]
    fn possible_and_definite_agree_with_concrete_values(
        pattern in pattern_strategy(),
        pieces in resource_strategy(),
        values in prop::collection::vec(prop::collection::vec(prop::sample::select(ALPHABET.to_vec()), 0..5), 5),
    ) {
        let resource = build(&pieces);
        let concrete = substitute(&resource, &values);
        let matched = crate::wildcard::matches(&concrete, &pattern);
        let kind = match_holed(&pattern, &resource);
        if matched {
            prop_assert_ne!(kind, Match::No, "{:?} ~ {:?} via {:?}", pattern, resource, concrete);
        } else {
            prop_assert_ne!(kind, Match::Definite, "{:?} ~ {:?} via {:?}", pattern, resource, concrete);
        }
    }
}
