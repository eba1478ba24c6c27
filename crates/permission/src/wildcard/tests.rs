//! Wildcard vectors W1–W18 (spec §9.1) and a proptest against a naive matcher.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::{Pattern, matches};
use proptest::prelude::*;

#[test]
fn w01_question_mark_is_one_character() {
    assert!(matches("file1.txt", "file?.txt"));
}
#[test]
fn w02_question_mark_is_not_two() {
    assert!(!matches("file12.txt", "file?.txt"));
}
#[test]
fn w03_regex_metacharacters_are_literal() {
    assert!(matches("foo+bar", "foo+bar"));
    assert!(matches("a.b(c)[d]{e}|^$", "a.b(c)[d]{e}|^$"));
    assert!(!matches("aXb", "a.b"));
}
#[test]
fn w04_trailing_space_star_matches_bare_word() {
    assert!(matches("ls", "ls *"));
}
#[test]
fn w05_trailing_space_star_matches_arguments() {
    assert!(matches("ls -la", "ls *"));
}
#[test]
fn w06_trailing_space_star_matches_many_arguments() {
    assert!(matches("ls foo bar", "ls *"));
}
#[test]
fn w07_star_matches_empty() {
    assert!(matches("ls", "ls*"));
}
#[test]
fn w08_star_without_space_matches_longer_words() {
    assert!(matches("lstmeval", "ls*"));
}
#[test]
fn w09_space_star_needs_a_word_boundary() {
    assert!(!matches("lstmeval", "ls *"));
}
#[test]
fn w10_git_subcommand() {
    assert!(matches("git status", "git *"));
}
#[test]
fn w11_git_bare() {
    assert!(matches("git", "git *"));
}
#[test]
fn w12_git_long_command() {
    assert!(matches("git commit -m foo", "git *"));
}
#[test]
fn w13_backslashes_in_input_are_slashes() {
    assert!(matches("C:\\Windows\\System32\\*", "C:/Windows/System32/*"));
}
#[test]
fn w14_backslashes_in_pattern_are_slashes() {
    assert!(matches("C:/Windows/System32/drivers", "C:\\Windows\\System32\\*"));
}
#[test]
#[cfg(not(windows))]
fn w15_case_sensitive_off_windows() {
    assert!(!matches("/users/test/file", "/Users/test/*"));
}
#[test]
#[cfg(windows)]
fn w16_case_insensitive_on_windows() {
    assert!(matches("c:/windows/system32/hosts", "C:\\Windows\\System32\\*"));
}
#[test]
fn w17_star_crosses_slashes() {
    assert!(matches("src/.env", "*.env"));
}
#[test]
fn w18_question_mark_matches_a_slash() {
    assert!(matches("a/b", "a?b"));
}

#[test]
fn anchored_and_empty() {
    assert!(matches("", ""));
    assert!(!matches("a", ""));
    assert!(matches("", "*"));
    assert!(!matches("xgit status", "git *"));
    assert!(matches("line one\nline two", "line*"));
    assert!(matches("a/b/c", "a/**"));
    assert_eq!(Pattern::new("git *").as_str(), "git *");
}

/// A backtracking matcher written straight from the spec, for comparison.
fn naive(input: &str, pattern: &str) -> bool {
    let input: Vec<char> = input.replace('\\', "/").chars().collect();
    let pattern = pattern.replace('\\', "/");
    if let Some(stem) = pattern.strip_suffix(" *") {
        let stem: Vec<char> = stem.chars().collect();
        return glob(&input, &stem)
            || (0..=input.len()).any(|split| glob(&input[..split], &stem) && input.get(split) == Some(&' '));
    }
    glob(&input, &pattern.chars().collect::<Vec<_>>())
}

fn glob(input: &[char], pattern: &[char]) -> bool {
    match pattern.split_first() {
        None => input.is_empty(),
        Some(('*', rest)) => (0..=input.len()).any(|skip| glob(&input[skip..], rest)),
        Some(('?', rest)) => !input.is_empty() && glob(&input[1..], rest),
        Some((c, rest)) => input.first() == Some(c) && glob(&input[1..], rest),
    }
}

fn text(alphabet: &'static [&'static str], max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(alphabet.to_vec()), 0..max).prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn compiled_matcher_equals_the_naive_reference(
        input in text(&["a", "b", " ", "/", "\\", ".", "+", "(", "é", "\n"], 8),
        pattern in text(&["a", "b", " ", "/", "\\", ".", "*", "?", "+", "(", "é", " *"], 6),
    ) {
        prop_assert_eq!(matches(&input, &pattern), naive(&input, &pattern), "input {:?} pattern {:?}", input, pattern);
    }
}
