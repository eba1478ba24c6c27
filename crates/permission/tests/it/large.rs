//! Large rule sets and over-large patterns never fail open (spec §4.3): every
//! rule is checked however many there are and however long a pattern is.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Map, Value, json};
use toolgate_permission::{AgentSettings, Agents, Effect, Origin, Rule, Ruleset};

/// `count` edit rules that need a regex each (a wildcard in the middle), then `secret/*: deny`.
fn many_edit_rules(count: usize) -> Map<String, Value> {
    let mut edit = Map::new();
    edit.insert("*".into(), json!("allow"));
    for n in 0..count {
        let effect = ["allow", "ask"][n % 2];
        edit.insert(format!("src/module{n}/*/mod?{n}.rs"), json!(effect));
    }
    edit.insert("secret/*".into(), json!("deny"));
    edit
}

#[test]
fn ten_thousand_rules_keep_the_last_deny() {
    let settings = AgentSettings::default().with_permission(json!({ "edit": many_edit_rules(10_000) }));
    let agents = Agents::build(&settings).unwrap();
    let rules = &agents.get("build").unwrap().rules;
    assert!(rules.rules().len() > 10_000);
    let decision = rules.evaluate("edit", "secret/key");
    assert_eq!(decision.effect, Effect::Deny, "the deny after 10,000 rules holds");
    assert_eq!(decision.rule.unwrap().resource, "secret/*");
    assert_eq!(
        rules.evaluate("edit", "src/module9998/x/mod_9998.rs").effect,
        Effect::Allow
    );
    assert_eq!(
        rules.evaluate("edit", "src/module9999/x/mod_9999.rs").effect,
        Effect::Ask
    );
    assert_eq!(
        rules.evaluate("edit", "src/module9999/x/mod_9998.rs").effect,
        Effect::Allow,
        "falls to `*`"
    );
    for resource in ["secret/key", "src/module4321/a/b/modX4321.rs", "README.md"] {
        assert_eq!(
            rules.evaluate("edit", resource),
            rules.evaluate_naive("edit", resource),
            "{resource}"
        );
    }
}

#[test]
fn five_thousand_rules_then_a_deny_in_one_set() {
    let mut list = vec![Rule::new("*", "*", Effect::Allow, Origin::Defaults)];
    for n in 0..5_000 {
        list.push(Rule::new(
            "edit",
            format!("*/{n}*x?{n}*"),
            Effect::Allow,
            Origin::UserConfig,
        ));
    }
    list.push(Rule::new("edit", "secret/*", Effect::Deny, Origin::UserConfig));
    let rules = Ruleset::new(list);
    assert_eq!(rules.evaluate("edit", "secret/key").effect, Effect::Deny);
    assert_eq!(rules.evaluate("edit", "a/17x_17").effect, Effect::Allow);
}

/// A 20,000-character pattern: 5,000 times `ab?*` — one `?` and one `*` in every four.
fn long_pattern() -> String {
    "ab?*".repeat(5_000)
}

#[test]
fn a_twenty_thousand_character_pattern_still_matches() {
    let pattern = long_pattern();
    assert_eq!(pattern.len(), 20_000);
    let rules = Ruleset::new(vec![
        Rule::new("*", "*", Effect::Allow, Origin::Defaults),
        Rule::new("bash", pattern.as_str(), Effect::Deny, Origin::UserConfig),
    ]);
    let matching = "abX-".repeat(5_000);
    assert_eq!(rules.evaluate("bash", &matching).effect, Effect::Deny);
    assert_eq!(rules.evaluate_naive("bash", &matching).effect, Effect::Deny);
    let short = "abX-".repeat(4_999);
    assert_eq!(rules.evaluate("bash", &short).effect, Effect::Allow);
    assert_eq!(rules.evaluate_naive("bash", &short).effect, Effect::Allow);
    // The same pattern among thousands of others: the set that holds it is split or
    // scanned, never dropped.
    let mut list = vec![Rule::new("*", "*", Effect::Allow, Origin::Defaults)];
    list.push(Rule::new("bash", pattern.as_str(), Effect::Deny, Origin::UserConfig));
    for n in 0..2_000 {
        list.push(Rule::new(
            "bash",
            format!("tool{n}*x?"),
            Effect::Allow,
            Origin::UserConfig,
        ));
    }
    let rules = Ruleset::new(list);
    assert_eq!(rules.evaluate("bash", &matching).effect, Effect::Deny);
    assert_eq!(rules.evaluate("bash", "tool7 yx!").effect, Effect::Allow);
}

#[test]
fn a_pattern_over_the_limit_is_refused_with_its_key_path() {
    let pattern = "a*".repeat(40_000);
    let settings =
        AgentSettings::default().with_permission(json!({ "bash": { "*": "allow", pattern.clone(): "deny" } }));
    let error = Agents::build(&settings).unwrap_err().to_string();
    assert!(error.starts_with("permission.bash[\"a*a*a*"), "{error}");
    assert!(error.contains("at most 65536 bytes"), "{error}");
    // The 20,000-character pattern is within it.
    let settings =
        AgentSettings::default().with_permission(json!({ "bash": { "*": "allow", long_pattern(): "deny" } }));
    assert!(Agents::build(&settings).is_ok());
}
