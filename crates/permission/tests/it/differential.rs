//! The indexed evaluation against the naive per-rule scan (spec §4.3), on rule
//! sets built to reach every path of the index: literal and `word *` patterns (hashed),
//! `*`, short wildcard patterns (chunked `RegexSet`s, several chunks past 512 rules),
//! long or wildcard-heavy patterns (matched one by one), absolute patterns (matched
//! against the absolute candidate), wildcard actions; inputs with multi-byte characters,
//! newlines, backslashes and regex metacharacters, many of them made from the patterns so
//! that rules do match. A small exact reference (a dynamic-programming matcher written
//! from spec §4.2) checks the naive scan itself on the smaller sets. Whatever the set, no
//! configured deny is ever answered allow.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use toolgate_permission::{Effect, Origin, Rule, Ruleset};

/// Spec §4.2 by dynamic programming (no backtracking blow-up on long patterns).
fn reference_match(input: &str, pattern: &str) -> bool {
    fn glob(input: &[char], pattern: &[char]) -> bool {
        // reach[j]: the first i input characters match the first j pattern characters.
        let mut reach = vec![false; pattern.len() + 1];
        reach[0] = true;
        for j in 0..pattern.len() {
            if pattern[j] == '*' {
                reach[j + 1] = reach[j];
            }
        }
        for &c in input {
            let mut next = vec![false; pattern.len() + 1];
            for j in 0..pattern.len() {
                next[j + 1] = match pattern[j] {
                    '*' => next[j] || reach[j + 1],
                    '?' => reach[j],
                    p => reach[j] && p == c,
                };
            }
            reach = next;
        }
        reach[pattern.len()]
    }
    let input: Vec<char> = input.replace('\\', "/").chars().collect();
    let pattern = pattern.replace('\\', "/");
    if glob(&input, &pattern.chars().collect::<Vec<_>>()) {
        return true;
    }
    match pattern.strip_suffix(" *") {
        Some(stem) => glob(&input, &stem.chars().collect::<Vec<_>>()),
        None => false,
    }
}

fn reference(rules: &[Rule], action: &str, resource: &str) -> Effect {
    rules
        .iter()
        .rev()
        .find(|rule| reference_match(action, &rule.action) && reference_match(resource, &rule.resource))
        .map_or(Effect::Ask, |rule| rule.effect)
}

const TOKENS: [&str; 20] = [
    "a", "b", "é", "日", "\n", " ", "/", "\\", ".", "(", "+", "$", "src/", "/p/", "git", ".env", "*", "?", " *", "**",
];

fn short_pattern() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS.to_vec()), 0..7).prop_map(|parts| parts.concat())
}

/// Patterns past the `RegexSet` thresholds: over 1,024 bytes, or over 32 wildcards.
fn long_pattern() -> impl Strategy<Value = String> {
    (short_pattern(), 35..110usize, prop::bool::ANY).prop_map(|(unit, times, starred)| {
        let unit = if starred {
            format!("{unit}*?")
        } else {
            format!("{unit}ab")
        };
        unit.repeat(times)
    })
}

fn pattern() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => short_pattern(),
        1 => Just("*".to_string()),
        1 => short_pattern().prop_map(|stem| format!("{}{stem} *", stem.replace(['*', '?'], ""))),
        1 => short_pattern().prop_map(|tail| format!("/p/{tail}")),
        1 => long_pattern(),
    ]
}

fn action() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["bash", "edit", "read", "*", "ed*", "?ead", "external_directory"])
        .prop_map(str::to_string)
}

fn effect() -> impl Strategy<Value = Effect> {
    prop::sample::select(vec![Effect::Allow, Effect::Ask, Effect::Deny])
}

fn rules(max: usize) -> impl Strategy<Value = Vec<Rule>> {
    prop::collection::vec((action(), pattern(), effect()), 0..max).prop_map(|list| {
        list.into_iter()
            .map(|(action, resource, effect)| Rule::new(action, resource, effect, Origin::UserConfig))
            .collect()
    })
}

/// An input for `rules`: random text, or a rule's pattern with its wildcards filled in
/// (`*` by `fill`, `?` by one character), so that some rules match and many nearly do.
fn inputs(rules: &[Rule], picks: &[(usize, String, bool)]) -> Vec<String> {
    picks
        .iter()
        .map(|(pick, fill, derived)| {
            if !*derived || rules.is_empty() {
                return fill.clone();
            }
            let pattern = &rules[pick % rules.len()].resource;
            let mut out = String::new();
            for ch in pattern.chars() {
                match ch {
                    '*' => out.push_str(fill),
                    '?' => out.push('日'),
                    ch => out.push(ch),
                }
            }
            out
        })
        .collect()
}

fn picks() -> impl Strategy<Value = Vec<(usize, String, bool)>> {
    prop::collection::vec((any::<usize>(), short_pattern(), prop::bool::weighted(0.7)), 1..12)
}

fn check(rules: &Ruleset, list: &[Rule], action: &str, resource: &str, exact: bool) -> Result<(), TestCaseError> {
    let indexed = rules.evaluate(action, resource);
    let naive = rules.evaluate_naive(action, resource);
    prop_assert_eq!(indexed.effect, naive.effect, "{} {:?}", action, resource);
    prop_assert_eq!(
        indexed.rule.map(|r| r as *const Rule),
        naive.rule.map(|r| r as *const Rule),
        "the same deciding rule for {} {:?}",
        action,
        resource
    );
    if exact {
        let expected = reference(list, action, resource);
        prop_assert_eq!(naive.effect, expected, "naive vs reference: {} {:?}", action, resource);
        if expected == Effect::Deny {
            prop_assert_eq!(indexed.effect, Effect::Deny, "a configured deny answered otherwise");
        }
    }
    Ok(())
}

const PROBE_ACTIONS: [&str; 5] = ["bash", "edit", "read", "external_directory", "webfetch"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Small and mid-size sets: indexed = naive = the exact reference.
    #[test]
    fn indexed_equals_naive_and_reference(list in rules(40), picks in picks()) {
        let rules = Ruleset::new(list.clone());
        for (n, resource) in inputs(&list, &picks).iter().enumerate() {
            check(&rules, &list, PROBE_ACTIONS[n % PROBE_ACTIONS.len()], resource, true)?;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]

    /// Large sets (several `RegexSet` chunks per action, long patterns among them):
    /// indexed = naive, deciding rule included.
    #[test]
    fn large_sets_indexed_equals_naive(
        list in prop::collection::vec(("edit|bash", short_pattern(), effect()), 600..1800)
            .prop_map(|list| list.into_iter().map(|(a, r, e)| Rule::new(a, r, e, Origin::UserConfig)).collect::<Vec<_>>()),
        extra in rules(30),
        picks in picks(),
    ) {
        let mut list = list;
        // Long and wildcard-action rules interleaved with the bulk, not only at the end.
        for (n, rule) in extra.into_iter().enumerate() {
            let at = (n * 97) % (list.len() + 1);
            list.insert(at, rule);
        }
        let rules = Ruleset::new(list.clone());
        for resource in inputs(&list, &picks) {
            for action in ["edit", "bash"] {
                check(&rules, &list, action, &resource, false)?;
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Absolute candidates (spec §4.3): indexed = naive, for one or two project roots.
    #[test]
    fn absolute_candidates_indexed_equals_naive(
        list in rules(40),
        relative in short_pattern().prop_map(|text| text.replace(['*', '?'], "x")),
        roots in prop::collection::vec(prop::sample::select(vec!["/p", "/p/a", "/q", "/"]), 0..3),
    ) {
        let rules = Ruleset::new(list);
        let absolutes: Vec<String> = roots
            .iter()
            .map(|root| format!("{}/{relative}", root.trim_end_matches('/')))
            .collect();
        for action in ["edit", "read", "external_directory"] {
            let indexed = rules.evaluate_path(action, &relative, &absolutes);
            let naive = rules.evaluate_path_naive(action, &relative, &absolutes);
            prop_assert_eq!(indexed.effect, naive.effect, "{} {:?} {:?}", action, relative, absolutes);
        }
    }
}
