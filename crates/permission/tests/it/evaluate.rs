//! Evaluation, merge, config and visibility vectors: E1–E23, F1–F14, M1–M3 (spec §9.2),
//! D1–D10 (§9.3), and proptests against the naive reference.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use proptest::prelude::*;
use serde_json::json;
use toolgate_permission::{Effect, Origin, Rule, Ruleset, combine};
use toolgate_permission::{expand_home, rules_from_config};

fn rules(list: &[(&str, &str, &str)]) -> Vec<Rule> {
    list.iter()
        .map(|(action, resource, effect)| {
            Rule::new(*action, *resource, Effect::parse(effect).unwrap(), Origin::UserConfig)
        })
        .collect()
}

fn eval(action: &str, resource: &str, list: &[(&str, &str, &str)]) -> Effect {
    let set = Ruleset::new(rules(list));
    let fast = set.evaluate(action, resource).effect;
    assert_eq!(fast, set.evaluate_naive(action, resource).effect);
    fast
}

use Effect::{Allow, Ask, Deny};

#[test]
fn e01_to_e23_last_match_wins() {
    assert_eq!(eval("bash", "rm", &[("bash", "rm", "deny")]), Deny, "E1");
    assert_eq!(eval("bash", "rm", &[("bash", "*", "allow")]), Allow, "E2");
    assert_eq!(
        eval("bash", "rm", &[("bash", "*", "allow"), ("bash", "rm", "deny")]),
        Deny,
        "E3"
    );
    assert_eq!(
        eval("bash", "rm", &[("bash", "rm", "deny"), ("bash", "*", "allow")]),
        Allow,
        "E4"
    );
    assert_eq!(eval("edit", "src/foo.ts", &[("edit", "src/*", "allow")]), Allow, "E5");
    let button = "src/components/Button.tsx";
    assert_eq!(
        eval(
            "edit",
            button,
            &[("edit", "src/*", "deny"), ("edit", "src/components/*", "allow")]
        ),
        Allow,
        "E6"
    );
    assert_eq!(
        eval(
            "edit",
            button,
            &[("edit", "src/components/*", "allow"), ("edit", "src/*", "deny")]
        ),
        Deny,
        "E7"
    );
    assert_eq!(eval("unknown_tool", "anything", &[("bash", "*", "allow")]), Ask, "E8");
    assert_eq!(eval("bash", "rm", &[]), Ask, "E9");
    assert_eq!(eval("edit", "etc/passwd", &[("edit", "src/*", "allow")]), Ask, "E10");
    let e11 = [
        ("edit", "*", "ask"),
        ("edit", "src/*", "allow"),
        ("edit", "src/secret.ts", "deny"),
    ];
    assert_eq!(eval("edit", "src/secret.ts", &e11), Deny, "E11");
    let e12 = [
        ("edit", "*", "ask"),
        ("edit", "test/*", "deny"),
        ("edit", "src/*", "allow"),
    ];
    assert_eq!(eval("edit", "src/foo.ts", &e12), Allow, "E12");
    assert_eq!(
        eval(
            "bash",
            "/bin/rm",
            &[("bash", "*", "allow"), ("bash", "/bin/rm", "deny")]
        ),
        Deny,
        "E13"
    );
    assert_eq!(
        eval(
            "bash",
            "/bin/rm",
            &[("bash", "/bin/rm", "deny"), ("bash", "*", "allow")]
        ),
        Allow,
        "E14"
    );
    assert_eq!(eval("bash", "rm", &[("*", "*", "deny")]), Deny, "E15");
    assert_eq!(eval("bash", "rm", &[("*", "rm", "deny")]), Deny, "E16");
    assert_eq!(eval("mcp_server_tool", "x", &[("mcp_*", "*", "allow")]), Allow, "E17");
    assert_eq!(
        eval("bash", "rm", &[("*", "*", "deny"), ("bash", "*", "allow")]),
        Allow,
        "E18"
    );
    assert_eq!(
        eval("edit", "src/foo.ts", &[("*", "*", "deny"), ("edit", "src/*", "allow")]),
        Allow,
        "E19"
    );
    let e20 = [
        ("*", "*", "ask"),
        ("mcp_*", "*", "allow"),
        ("mcp_dangerous", "*", "deny"),
    ];
    assert_eq!(eval("mcp_dangerous", "x", &e20), Deny, "E20");
    assert_eq!(
        eval("unknown_tool", "x", &[("*", "*", "ask"), ("bash", "*", "allow")]),
        Ask,
        "E21"
    );
    assert_eq!(
        eval("bash", "rm", &[("bash", "*", "allow"), ("*", "*", "deny")]),
        Deny,
        "E22"
    );
    // E23: two rule sets evaluate as their concatenation.
    let merged = Ruleset::new([rules(&[("bash", "*", "allow")]), rules(&[("bash", "rm", "deny")])].concat());
    assert_eq!(merged.evaluate("bash", "rm").effect, Deny, "E23");
}

fn from_config(value: serde_json::Value) -> Vec<(String, String, Effect)> {
    rules_from_config(&value, "permission", Origin::UserConfig, Some(Path::new("/home/me")))
        .unwrap()
        .into_iter()
        .map(|rule| (rule.action, rule.resource, rule.effect))
        .collect()
}

fn triple(action: &str, resource: &str, effect: Effect) -> (String, String, Effect) {
    (action.into(), resource.into(), effect)
}

#[test]
fn f01_to_f09_config_to_rules() {
    assert_eq!(
        from_config(json!({"bash": "allow"})),
        [triple("bash", "*", Allow)],
        "F1"
    );
    assert_eq!(
        from_config(json!({"bash": {"*": "allow", "rm": "deny"}})),
        [triple("bash", "*", Allow), triple("bash", "rm", Deny)],
        "F2"
    );
    assert_eq!(
        from_config(json!({"bash": {"*": "allow"}, "edit": "allow", "webfetch": "ask"})),
        [
            triple("bash", "*", Allow),
            triple("edit", "*", Allow),
            triple("webfetch", "*", Ask)
        ],
        "F3"
    );
    assert!(from_config(json!({})).is_empty(), "F4");
    assert_eq!(
        from_config(json!({"external_directory": {"~/projects/*": "allow"}})),
        [triple("external_directory", "/home/me/projects/*", Allow)],
        "F5"
    );
    let home = Some(Path::new("/home/me"));
    assert_eq!(expand_home("$HOME/projects/*", home), "/home/me/projects/*", "F6");
    assert_eq!(expand_home("$HOME", home), "/home/me", "F7");
    assert_eq!(expand_home("/some/~/path", home), "/some/~/path", "F8");
    assert_eq!(expand_home("~", home), "/home/me", "F9");
}

fn config_set(value: serde_json::Value) -> Ruleset {
    Ruleset::new(rules_from_config(&value, "permission", Origin::UserConfig, None).unwrap())
}

#[test]
fn f10_to_f14_key_order_is_precedence() {
    assert_eq!(
        config_set(json!({"*": "deny", "bash": "allow"}))
            .evaluate("bash", "ls")
            .effect,
        Allow,
        "F10"
    );
    assert_eq!(
        config_set(json!({"bash": "allow", "*": "deny"}))
            .evaluate("bash", "ls")
            .effect,
        Deny,
        "F10 reversed"
    );
    let f11 = config_set(json!({"*": "ask", "bash": "allow"}));
    assert_eq!(f11.evaluate("edit", "foo.ts").effect, Ask, "F11");
    assert_eq!(f11.evaluate("bash", "ls").effect, Allow, "F11");
    let order: Vec<String> = from_config(json!({"bash": "allow", "*": "ask", "edit": "deny", "mcp_*": "allow"}))
        .into_iter()
        .map(|(action, _, _)| action)
        .collect();
    assert_eq!(order, ["bash", "*", "edit", "mcp_*"], "F12");
    let f13 = config_set(json!({"bash": {"*": "deny", "git *": "allow"}}));
    assert_eq!(f13.evaluate("bash", "rm foo").effect, Deny, "F13");
    assert_eq!(f13.evaluate("bash", "git status").effect, Allow, "F13");
    let f14 = config_set(json!({"*": "ask", "bash": "allow", "edit": "deny"}));
    assert_eq!(f14.evaluate("bash", "ls").effect, Allow, "F14");
    assert_eq!(f14.evaluate("edit", "foo.ts").effect, Deny, "F14");
    assert_eq!(f14.evaluate("read", "foo.ts").effect, Ask, "F14");
}

#[test]
fn config_errors_name_the_key_path() {
    let error = |value| {
        rules_from_config(&value, "permission", Origin::UserConfig, None)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        error(json!({"bash": {"rm *": "never"}})),
        "permission.bash[\"rm *\"]: expected \"allow\", \"ask\", \"deny\" or \"audit\", found \"never\""
    );
    assert_eq!(
        error(json!({"edit": 3})),
        "permission.edit: expected \"allow\", \"ask\", \"deny\" or \"audit\", found 3"
    );
    assert!(error(json!(true)).starts_with("permission: expected"));
    assert_eq!(
        error(json!([{"action": "bash", "resource": "*"}])),
        "permission[0].effect: expected \"allow\", \"ask\", \"deny\" or \"audit\", found null"
    );
}

#[test]
fn v2_list_form_and_single_effect() {
    assert_eq!(
        from_config(json!([{"action": "bash", "resource": "git *", "effect": "allow"}])),
        [triple("bash", "git *", Allow)]
    );
    assert_eq!(from_config(json!("deny")), [triple("*", "*", Deny)]);
}

#[test]
fn m01_to_m03_merge_is_concatenation() {
    let merged = Ruleset::new([rules(&[("bash", "*", "allow")]), rules(&[("bash", "*", "deny")])].concat());
    assert_eq!(merged.rules().len(), 2, "M1");
    assert_eq!(merged.rules()[1].effect, Deny, "M1");
    let m2 = Ruleset::new([rules(&[("*", "*", "ask")]), rules(&[("bash", "*", "allow")])].concat());
    assert_eq!(m2.evaluate("bash", "ls").effect, Allow, "M2");
    assert_eq!(m2.evaluate("edit", "foo.ts").effect, Ask, "M2");
    let m3 = Ruleset::new([rules(&[("bash", "*", "allow")]), rules(&[("bash", "*", "ask")])].concat());
    assert_eq!(m3.evaluate("bash", "ls").effect, Ask, "M3");
}

fn hidden(tools: &[&str], list: &[(&str, &str, &str)]) -> Vec<String> {
    let set = Ruleset::new(rules(list));
    tools
        .iter()
        .filter(|tool| {
            let action = if matches!(**tool, "write" | "apply_patch" | "multiedit") {
                "edit"
            } else {
                tool
            };
            set.hides(action)
        })
        .map(|tool| tool.to_string())
        .collect()
}

#[test]
fn d01_to_d10_visibility() {
    let three = ["bash", "edit", "read"];
    assert!(hidden(&three, &[("*", "*", "allow")]).is_empty(), "D1");
    assert_eq!(
        hidden(&three, &[("*", "*", "allow"), ("bash", "*", "deny")]),
        ["bash"],
        "D2"
    );
    assert_eq!(
        hidden(
            &["edit", "write", "apply_patch", "bash"],
            &[("*", "*", "allow"), ("edit", "*", "deny")]
        ),
        ["edit", "write", "apply_patch"],
        "D3"
    );
    assert!(
        hidden(&["bash"], &[("bash", "*", "allow"), ("bash", "rm *", "deny")]).is_empty(),
        "D4"
    );
    assert!(hidden(&["bash", "edit"], &[("*", "*", "ask")]).is_empty(), "D5");
    assert!(
        hidden(&["bash"], &[("bash", "*", "deny"), ("bash", "echo *", "allow")]).is_empty(),
        "D6"
    );
    assert!(
        hidden(&["bash"], &[("bash", "rm *", "deny"), ("bash", "*", "allow")]).is_empty(),
        "D7"
    );
    assert_eq!(
        hidden(
            &["bash", "edit", "webfetch"],
            &[("bash", "*", "deny"), ("edit", "*", "deny"), ("webfetch", "*", "deny")]
        ),
        ["bash", "edit", "webfetch"],
        "D8"
    );
    assert_eq!(hidden(&three, &[("*", "*", "deny")]), three, "D9");
    assert_eq!(
        hidden(&three, &[("*", "*", "deny"), ("bash", "*", "allow")]),
        ["edit", "read"],
        "D10"
    );
}

#[test]
fn several_resources_combine_deny_then_ask() {
    let set = Ruleset::new(rules(&[
        ("bash", "*", "allow"),
        ("bash", "rm *", "deny"),
        ("bash", "curl *", "ask"),
    ]));
    let all = |resources: &[&str]| combine(resources.iter().map(|resource| set.evaluate("bash", resource).effect));
    assert_eq!(all(&["ls", "rm -rf /", "curl x"]), Deny);
    assert_eq!(all(&["ls", "curl x"]), Ask);
    assert_eq!(all(&["ls"]), Allow);
    assert_eq!(all(&[]), Allow);
}

fn rule_strategy() -> impl Strategy<Value = Rule> {
    let action = prop::sample::select(vec![
        "bash",
        "edit",
        "read",
        "*",
        "b*",
        "mcp_*",
        "?dit",
        "external_directory",
    ]);
    let resource = prop::sample::select(vec![
        "*",
        "git *",
        "git status*",
        "rm *",
        "src/*",
        "*.env",
        "src/a.rs",
        "ls",
        "a?c",
        "/bin/rm",
        "*/x/*",
    ]);
    let effect = prop::sample::select(vec![Allow, Ask, Deny]);
    (action, resource, effect).prop_map(|(a, r, e)| Rule::new(a, r, e, Origin::UserConfig))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn indexed_evaluation_equals_the_naive_scan(
        list in prop::collection::vec(rule_strategy(), 0..40),
        action in prop::sample::select(vec!["bash", "edit", "read", "bx", "mcp_a", "external_directory", "other"]),
        resource in prop::sample::select(vec!["git status", "git", "rm -rf /", "src/a.rs", "src/.env", "ls", "abc", "/bin/rm", "q/x/y", ""]),
    ) {
        let set = Ruleset::new(list);
        let fast = set.evaluate(action, resource);
        let naive = set.evaluate_naive(action, resource);
        prop_assert_eq!(fast.effect, naive.effect);
        prop_assert_eq!(fast.rule.map(|r| r as *const Rule), naive.rule.map(|r| r as *const Rule));
    }
}
