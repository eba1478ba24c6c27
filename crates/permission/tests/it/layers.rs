//! Configuration layers and evaluation against references written from the spec
//! (spec §4.9): random rule sets — small, huge, and mixing string, list and object
//! layers — give the same answer through the indexed evaluation, the naive scan, and a
//! reference that normalises every layer to rules and then concatenates them; and no
//! configured deny is ever answered allow.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolgate_permission::{AgentSettings, Agents, ConfigLayer, Effect, Ruleset};

/// A backtracking matcher written straight from spec §4.2.
fn reference_match(input: &str, pattern: &str) -> bool {
    fn glob(input: &[char], pattern: &[char]) -> bool {
        match pattern.split_first() {
            None => input.is_empty(),
            Some(('*', rest)) => (0..=input.len()).any(|skip| glob(&input[skip..], rest)),
            Some(('?', rest)) => !input.is_empty() && glob(&input[1..], rest),
            Some((c, rest)) => input.first() == Some(c) && glob(&input[1..], rest),
        }
    }
    let input: Vec<char> = input.replace('\\', "/").chars().collect();
    let pattern = pattern.replace('\\', "/");
    let full: Vec<char> = pattern.chars().collect();
    if glob(&input, &full) {
        return true;
    }
    match pattern.strip_suffix(" *") {
        Some(stem) => glob(&input, &stem.chars().collect::<Vec<_>>()),
        None => false,
    }
}

type Triple = (String, String, Effect);

/// One layer, normalised by hand: a string is `{"*": effect}`, an action's string is
/// `{action: {"*": effect}}`, the list form is its rules; `tools` first.
fn reference_rules(layer: &ConfigLayer) -> Vec<Triple> {
    let effect = |value: &Value| Effect::parse(value.as_str().unwrap()).unwrap();
    let mut out = Vec::new();
    if let Some(Value::Object(tools)) = &layer.tools {
        for (name, enabled) in tools {
            let action = if ["write", "edit", "patch", "multiedit"].contains(&name.as_str()) {
                "edit"
            } else {
                name
            };
            let effect = if enabled.as_bool().unwrap() {
                Effect::Allow
            } else {
                Effect::Deny
            };
            out.push((action.to_string(), "*".to_string(), effect));
        }
    }
    match &layer.permission {
        None => {}
        Some(value @ Value::String(_)) => out.push(("*".into(), "*".into(), effect(value))),
        Some(Value::Object(map)) => {
            for (action, entry) in map {
                match entry {
                    Value::Object(patterns) => {
                        for (pattern, value) in patterns {
                            out.push((action.clone(), pattern.clone(), effect(value)));
                        }
                    }
                    value => out.push((action.clone(), "*".into(), effect(value))),
                }
            }
        }
        Some(Value::Array(items)) => {
            for item in items {
                out.push((
                    item["action"].as_str().unwrap().to_string(),
                    item["resource"].as_str().unwrap().to_string(),
                    effect(&item["effect"]),
                ));
            }
        }
        Some(other) => panic!("not a permission value: {other}"),
    }
    out
}

fn reference_evaluate(rules: &[Triple], action: &str, resource: &str) -> Effect {
    rules
        .iter()
        .rev()
        .find(|(a, r, _)| reference_match(action, a) && reference_match(resource, r))
        .map_or(Effect::Ask, |(_, _, effect)| *effect)
}

/// The build agent's rules for `layers`, and the reference list: the agent's own rules
/// with every layer's normalised rules in the place user rules go (before the final
/// spilled-output allowance).
fn build_and_reference(layers: Vec<ConfigLayer>) -> (Ruleset, Vec<Triple>) {
    let output_dir = Some(std::path::PathBuf::from("/data/tool-output"));
    let base = Agents::build(&{
        let mut settings = AgentSettings::default();
        settings.output_dir = output_dir.clone();
        settings
    })
    .unwrap();
    let base_rules = base.get("build").unwrap().rules.rules().to_vec();
    let (last, head) = base_rules.split_last().unwrap();
    assert_eq!(
        (last.action.as_str(), last.effect),
        ("external_directory", Effect::Allow)
    );
    let mut reference: Vec<Triple> = head
        .iter()
        .map(|r| (r.action.clone(), r.resource.clone(), r.effect))
        .collect();
    for layer in &layers {
        reference.extend(reference_rules(layer));
    }
    reference.push((last.action.clone(), last.resource.clone(), last.effect));
    let settings = {
        let mut settings = AgentSettings::default();
        settings.layers = layers;
        settings.output_dir = output_dir;
        settings
    };
    let agents = Agents::build(&settings).unwrap();
    (agents.get("build").unwrap().rules.clone(), reference)
}

const ACTIONS: [&str; 8] = [
    "bash",
    "edit",
    "read",
    "webfetch",
    "*",
    "ed*",
    "b?sh",
    "external_directory",
];

fn effect_strategy() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["allow", "ask", "deny"])
}

fn pattern_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!["src/", "a", "b", "*", "?", " *", ".env", "git", " ", "/p/", "\\"]),
        0..5,
    )
    .prop_map(|parts| parts.concat())
}

fn resource_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!["src/", "a", "b", ".env", "git", " ", "/p/", "x", "\\"]),
        0..6,
    )
    .prop_map(|parts| parts.concat())
}

fn object_layer(max: usize) -> impl Strategy<Value = Value> {
    let entry = prop_oneof![
        effect_strategy().prop_map(|e| json!(e)),
        prop::collection::vec((pattern_strategy(), effect_strategy()), 0..max).prop_map(|pairs| {
            let mut map = Map::new();
            for (pattern, effect) in pairs {
                map.insert(pattern, json!(effect));
            }
            Value::Object(map)
        }),
    ];
    prop::collection::vec((prop::sample::select(ACTIONS.to_vec()), entry), 0..6).prop_map(|entries| {
        let mut map = Map::new();
        for (action, entry) in entries {
            map.insert(action.to_string(), entry);
        }
        Value::Object(map)
    })
}

fn list_layer(max: usize) -> impl Strategy<Value = Value> {
    prop::collection::vec(
        (
            prop::sample::select(ACTIONS.to_vec()),
            pattern_strategy(),
            effect_strategy(),
        ),
        0..max,
    )
    .prop_map(|rules| {
        Value::Array(
            rules
                .into_iter()
                .map(|(action, resource, effect)| json!({"action": action, "resource": resource, "effect": effect}))
                .collect(),
        )
    })
}

fn tools_strategy() -> impl Strategy<Value = Option<Value>> {
    prop::option::of(
        prop::collection::vec(
            (
                prop::sample::select(vec!["bash", "write", "edit", "webfetch", "read"]),
                any::<bool>(),
            ),
            0..3,
        )
        .prop_map(|entries| {
            let mut map = Map::new();
            for (name, enabled) in entries {
                map.insert(name.to_string(), json!(enabled));
            }
            Value::Object(map)
        }),
    )
}

fn layer_strategy(max: usize) -> impl Strategy<Value = ConfigLayer> {
    let permission = prop_oneof![
        Just(None),
        effect_strategy().prop_map(|e| Some(json!(e))),
        object_layer(max).prop_map(Some),
        list_layer(max).prop_map(Some),
    ];
    (permission, tools_strategy(), 0..1000u32).prop_map(|(permission, tools, n)| {
        let mut layer = ConfigLayer::new(format!("layer{n}.json"));
        layer.permission = permission;
        layer.tools = tools;
        layer
    })
}

fn check(rules: &Ruleset, reference: &[Triple], action: &str, resource: &str) -> Result<(), TestCaseError> {
    let indexed = rules.evaluate(action, resource);
    let naive = rules.evaluate_naive(action, resource);
    let expected = reference_evaluate(reference, action, resource);
    prop_assert_eq!(
        indexed.effect,
        naive.effect,
        "indexed vs naive: {} {:?}",
        action,
        resource
    );
    prop_assert_eq!(
        indexed.rule.map(|r| r as *const _),
        naive.rule.map(|r| r as *const _),
        "same deciding rule"
    );
    prop_assert_eq!(indexed.effect, expected, "vs reference: {} {:?}", action, resource);
    if expected == Effect::Deny {
        prop_assert_ne!(indexed.effect, Effect::Allow, "a configured deny answered allow");
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn layers_mixing_forms_agree_with_the_reference(
        layers in prop::collection::vec(layer_strategy(6), 0..5),
        probes in prop::collection::vec((prop::sample::select(vec!["bash", "edit", "read", "webfetch", "bsh", "external_directory", "doom_loop"]), resource_strategy()), 1..8),
    ) {
        let (rules, reference) = build_and_reference(layers);
        for (action, resource) in &probes {
            check(&rules, &reference, action, resource)?;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn huge_layers_agree_with_the_reference(
        layers in prop::collection::vec(
            prop_oneof![
                list_layer(1500).prop_map(|permission| ConfigLayer::new("list").with_permission(permission)),
                layer_strategy(400),
            ],
            1..4,
        ),
        probes in prop::collection::vec((prop::sample::select(vec!["bash", "edit", "read", "webfetch", "bsh"]), resource_strategy()), 1..30),
    ) {
        let (rules, reference) = build_and_reference(layers);
        for (action, resource) in &probes {
            check(&rules, &reference, action, resource)?;
        }
    }
}

/// The absolute candidate (spec §4.3): a rule with an absolute pattern sees the absolute
/// spelling, every other rule the relative path; several spellings → the strictest.
fn reference_path(rules: &[Triple], action: &str, relative: &str, absolutes: &[String]) -> Effect {
    let strict = |e: Effect| match e {
        Effect::Allow => 0,
        Effect::Ask => 1,
        Effect::Deny => 2,
    };
    absolutes
        .iter()
        .map(|absolute| {
            rules
                .iter()
                .rev()
                .find(|(a, r, _)| {
                    let input = if r.replace('\\', "/").starts_with('/') {
                        absolute.as_str()
                    } else {
                        relative
                    };
                    reference_match(action, a) && reference_match(input, r)
                })
                .map_or(Effect::Ask, |(_, _, effect)| *effect)
        })
        .max_by_key(|e| strict(*e))
        .unwrap_or_else(|| reference_evaluate(rules, action, relative))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn absolute_candidates_agree_with_the_reference(
        layers in prop::collection::vec(layer_strategy(6), 0..4),
        relative in resource_strategy(),
        roots in prop::collection::vec(prop::sample::select(vec!["/p", "/p/a", "/q"]), 0..3),
        action in prop::sample::select(vec!["edit", "read", "external_directory"]),
    ) {
        let (rules, reference) = build_and_reference(layers);
        let absolutes: Vec<String> = roots.iter().map(|root| format!("{root}/{relative}")).collect();
        let indexed = rules.evaluate_path(action, &relative, &absolutes);
        let naive = rules.evaluate_path_naive(action, &relative, &absolutes);
        let expected = reference_path(&reference, action, &relative, &absolutes);
        prop_assert_eq!(indexed.effect, naive.effect);
        prop_assert_eq!(indexed.effect, expected);
    }
}

#[test]
fn a_string_layer_is_not_replaced_by_an_object_layer() {
    // A string layer is rules too (spec §4.9): project `"deny"` plus `--config` `{"read": "allow"}`.
    let (rules, _) = build_and_reference(vec![
        ConfigLayer::new("project/toolgate.json").with_permission(json!("deny")),
        ConfigLayer::new("extra.json").with_permission(json!({"read": "allow"})),
    ]);
    assert_eq!(rules.evaluate("webfetch", "https://example.com").effect, Effect::Deny);
    assert_eq!(rules.evaluate("read", "src/a.rs").effect, Effect::Allow);
    let decided = rules.evaluate("webfetch", "https://example.com").rule.unwrap().clone();
    assert_eq!(decided.source.as_deref(), Some("project/toolgate.json"));
    // An action's string in one layer and patterns for it in a later one.
    let (rules, _) = build_and_reference(vec![
        ConfigLayer::new("global").with_permission(json!({"bash": "deny"})),
        ConfigLayer::new("project").with_permission(json!({"bash": {"git status *": "allow"}})),
    ]);
    assert_eq!(rules.evaluate("bash", "rm -rf /").effect, Effect::Deny);
    assert_eq!(rules.evaluate("bash", "git status").effect, Effect::Allow);
    // A list layer, then an object layer, then a string layer: in that order.
    let (rules, _) = build_and_reference(vec![
        ConfigLayer::new("list").with_permission(json!([{"action": "edit", "resource": "secret/*", "effect": "deny"}])),
        ConfigLayer::new("object").with_permission(json!({"bash": "allow"})),
    ]);
    assert_eq!(rules.evaluate("edit", "secret/key").effect, Effect::Deny);
    assert_eq!(rules.evaluate("bash", "ls").effect, Effect::Allow);
}

#[test]
fn tools_and_permission_of_one_layer_keep_both() {
    // The old deep merge let `permission.edit` (an object) replace `tools.edit: false`.
    let (rules, _) = build_and_reference(vec![
        ConfigLayer::new("project")
            .with_permission(json!({"edit": {"docs/*": "allow"}}))
            .with_tools(json!({"write": false})),
    ]);
    assert_eq!(rules.evaluate("edit", "src/main.rs").effect, Effect::Deny);
    assert_eq!(rules.evaluate("edit", "docs/a.md").effect, Effect::Allow);
}

#[test]
fn list_form_expands_home_only_for_path_actions() {
    let settings = AgentSettings::default()
        .with_home("/home/me")
        .with_layer(ConfigLayer::new("list").with_permission(json!([
            {"action": "read", "resource": "~/secrets/*", "effect": "deny"},
            {"action": "edit", "resource": "$HOME/notes/*", "effect": "deny"},
            {"action": "external_directory", "resource": "~/scratch/*", "effect": "allow"},
            {"action": "bash", "resource": "~/bin/tool *", "effect": "deny"},
            {"action": "webfetch", "resource": "$HOME*", "effect": "deny"},
        ])));
    let agents = Agents::build(&settings).unwrap();
    let rules = &agents.get("build").unwrap().rules;
    let resources: Vec<(&str, &str)> = rules
        .rules()
        .iter()
        .filter(|r| r.source.as_deref() == Some("list"))
        .map(|r| (r.action.as_str(), r.resource.as_str()))
        .collect();
    assert_eq!(
        resources,
        [
            ("read", "/home/me/secrets/*"),
            ("edit", "/home/me/notes/*"),
            ("external_directory", "/home/me/scratch/*"),
            ("bash", "~/bin/tool *"),
            // Its twin: a rule written for `bash` decides `shell` too (spec §4.9).
            ("shell", "~/bin/tool *"),
            ("webfetch", "$HOME*"),
        ]
    );
    assert_eq!(rules.evaluate("bash", "~/bin/tool x").effect, Effect::Deny);
    assert_eq!(rules.evaluate("bash", "/home/me/bin/tool x").effect, Effect::Allow);
    // The object form keeps V1's expansion for every action.
    let settings = AgentSettings::default()
        .with_home("/home/me")
        .with_permission(json!({"bash": {"~/bin/tool *": "deny"}}));
    let agents = Agents::build(&settings).unwrap();
    let rules = &agents.get("build").unwrap().rules;
    assert_eq!(rules.evaluate("bash", "/home/me/bin/tool x").effect, Effect::Deny);
}

#[test]
fn skill_directories_are_allowed_outside_the_project() {
    let skills = tempfile::tempdir().unwrap();
    let settings = AgentSettings::default().with_skill_dir(skills.path().to_path_buf());
    let agents = Agents::build(&settings).unwrap();
    let canonical = std::fs::canonicalize(skills.path()).unwrap();
    let resource = format!("{}/review/*", canonical.display());
    for agent in ["build", "plan", "explore", "general"] {
        let rules = &agents.get(agent).unwrap().rules;
        assert_eq!(
            rules.evaluate("external_directory", &resource).effect,
            Effect::Allow,
            "{agent}"
        );
        assert_eq!(
            rules.evaluate("external_directory", "/elsewhere/*").effect,
            Effect::Ask,
            "{agent}"
        );
    }
}

#[test]
fn a_skill_directory_at_the_root_allows_nothing_outside() {
    let settings = AgentSettings::default().with_skill_dir(std::path::PathBuf::from("/"));
    let agents = Agents::build(&settings).unwrap();
    let rules = &agents.get("build").unwrap().rules;
    assert!(
        !rules
            .rules()
            .iter()
            .any(|r| r.action == "external_directory" && r.resource == "/*" && r.effect == Effect::Allow),
        "no `/*` allowance"
    );
    assert_eq!(rules.evaluate("external_directory", "/etc/*").effect, Effect::Ask);
}

/// OpenCode V2 spells `bash` `shell` and `task` `subagent` (spec §4.9): a rule written
/// either way decides a request made either way, in its place among the other rules.
#[test]
fn v1_and_v2_action_names_decide_each_other() {
    let settings = AgentSettings::default().with_layer(ConfigLayer::new("v2").with_permission(json!([
        {"action": "shell", "resource": "*", "effect": "allow"},
        {"action": "shell", "resource": "git push *", "effect": "deny"},
        {"action": "bash", "resource": "git push --dry-run *", "effect": "ask"},
        {"action": "task", "resource": "reviewer", "effect": "deny"},
    ])));
    let agents = Agents::build(&settings).unwrap();
    let rules = &agents.get("build").unwrap().rules;
    for action in ["bash", "shell"] {
        assert_eq!(
            rules.evaluate(action, "git push origin main").effect,
            Effect::Deny,
            "{action}"
        );
        assert_eq!(
            rules.evaluate(action, "git push --dry-run x").effect,
            Effect::Ask,
            "{action}"
        );
        assert_eq!(rules.evaluate(action, "ls").effect, Effect::Allow, "{action}");
    }
    assert_eq!(rules.evaluate("subagent", "reviewer").effect, Effect::Deny);
    assert_eq!(rules.evaluate("task", "reviewer").effect, Effect::Deny);
    // The built-in `general` agent denies `subagent`: `task` too.
    let general = &agents.get("general").unwrap().rules;
    assert_eq!(general.evaluate("task", "explore").effect, Effect::Deny);
}

/// Layers a loader has already read (plain rules and agent blocks) take their place
/// among the JSON ones, and a managed layer's blocks win over every other.
#[test]
fn plain_layers_and_managed_blocks() {
    use toolgate_permission::{AgentBlock, Mode, Origin, Rule};
    let deny = |action: &str, resource: &str| Rule::new(action, resource, Effect::Deny, Origin::UserConfig);
    let allow = |action: &str, resource: &str| Rule::new(action, resource, Effect::Allow, Origin::UserConfig);
    let settings = AgentSettings::default()
        .with_layer(ConfigLayer::new("global").with_rules(vec![deny("bash", "rm *")]))
        .with_layer(
            ConfigLayer::new("project")
                .with_rules(vec![allow("bash", "rm -i *")])
                .with_block(
                    AgentBlock::new("reviewer")
                        .with_mode(Mode::Subagent)
                        .with_rules(vec![deny("edit", "*")]),
                ),
        )
        .with_managed_layer(
            ConfigLayer::new("managed.json")
                .with_rules(vec![deny("bash", "rm -i /*")])
                .with_block(AgentBlock::new("plan").with_disable(true)),
        );
    let agents = Agents::build(&settings).unwrap();
    let build = &agents.get("build").unwrap().rules;
    assert_eq!(build.evaluate("bash", "rm -rf x").effect, Effect::Deny);
    assert_eq!(build.evaluate("bash", "rm -i x").effect, Effect::Allow);
    assert_eq!(build.evaluate("bash", "rm -i /etc").effect, Effect::Deny);
    let decided = build.evaluate("bash", "rm -i /etc");
    assert_eq!(
        decided.rule.map(|r| (r.origin, r.source.clone())),
        Some((Origin::Managed, Some("managed.json".into())))
    );
    let reviewer = agents.get("reviewer").unwrap();
    assert_eq!(reviewer.mode, Mode::Subagent);
    assert_eq!(reviewer.rules.evaluate("edit", "a.rs").effect, Effect::Deny);
    assert!(agents.get("plan").is_none(), "the managed block removes it");
}
