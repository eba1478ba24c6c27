//! Rules, rule sets and evaluation (spec §4.3): last match wins, no match means ask.

use std::collections::HashMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::wildcard::{Pattern, to_regex};

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
}

impl Rule {
    /// A rule with the given origin.
    pub fn new(action: impl Into<String>, resource: impl Into<String>, effect: Effect, origin: Origin) -> Self {
        Rule {
            action: action.into(),
            resource: resource.into(),
            effect,
            origin,
        }
    }

    /// The rule as tool-core reports it in a refusal.
    pub fn to_ref(&self) -> toolgate_core::RuleRef {
        toolgate_core::RuleRef {
            action: self.action.clone(),
            resource: self.resource.clone(),
            effect: self.effect.as_str().to_string(),
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

/// Rules sharing one literal action, matched in one pass of a `RegexSet`.
#[derive(Debug)]
struct Group {
    /// Rule indices, ascending.
    indices: Vec<usize>,
    /// Compiled when the action is first evaluated: a process deciding one action (a
    /// single `toolgate call`) compiles one set, not every agent's every action.
    set: std::sync::OnceLock<regex::RegexSet>,
}

/// An ordered rule set, compiled once for fast last-match-wins evaluation.
///
/// Rules whose action is a literal are grouped by action and their resource patterns
/// matched together; the few rules whose action is itself a pattern are checked one by one
/// from the end. The result is exactly that of scanning the rules from the end
/// ([`Ruleset::evaluate_naive`], kept as the reference).
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
#[derive(Debug)]
pub struct Ruleset {
    rules: Vec<Rule>,
    actions: Vec<Pattern>,
    resources: Vec<Pattern>,
    groups: HashMap<String, Group>,
    /// Indices of rules whose action has a wildcard, ascending.
    wild_actions: Vec<usize>,
}

impl Default for Ruleset {
    fn default() -> Self {
        Ruleset::new(Vec::new())
    }
}

impl Clone for Ruleset {
    fn clone(&self) -> Self {
        Ruleset::new(self.rules.clone())
    }
}

impl Ruleset {
    /// Compiles `rules` (in order: later rules win).
    pub fn new(rules: Vec<Rule>) -> Self {
        let actions: Vec<Pattern> = rules.iter().map(|rule| Pattern::new(&rule.action)).collect();
        let resources: Vec<Pattern> = rules.iter().map(|rule| Pattern::new(&rule.resource)).collect();
        let mut by_action: HashMap<String, Vec<usize>> = HashMap::new();
        let mut wild_actions = Vec::new();
        for (index, action) in actions.iter().enumerate() {
            match action.literal() {
                Some(literal) => by_action.entry(literal.to_string()).or_default().push(index),
                None => wild_actions.push(index),
            }
        }
        let groups = by_action
            .into_iter()
            .map(|(action, indices)| {
                (
                    action,
                    Group {
                        indices,
                        set: std::sync::OnceLock::new(),
                    },
                )
            })
            .collect();
        Ruleset {
            rules,
            actions,
            resources,
            groups,
            wild_actions,
        }
    }

    /// The rules, in order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// True when there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// This set followed by `more` (merge is concatenation).
    pub fn merged(&self, more: &[Rule]) -> Ruleset {
        let mut rules = self.rules.clone();
        rules.extend_from_slice(more);
        Ruleset::new(rules)
    }

    /// The index of the last rule matching `action` and `resource`.
    pub fn last_match(&self, action: &str, resource: &str) -> Option<usize> {
        let mut best = self.groups.get(action).and_then(|group| {
            let normal = resource.replace('\\', "/");
            group
                .set
                .get_or_init(|| {
                    regex::RegexSet::new(group.indices.iter().map(|&index| to_regex(&self.rules[index].resource)))
                        .unwrap_or_else(|_| regex::RegexSet::empty())
                })
                .matches(&normal)
                .iter()
                .next_back()
                .map(|found| group.indices[found])
        });
        for &index in self.wild_actions.iter().rev() {
            if best.is_some_and(|best| best > index) {
                break;
            }
            if self.actions[index].matches(action) && self.resources[index].matches(resource) {
                best = Some(index);
                break;
            }
        }
        best
    }

    /// The decision for one resource: the last matching rule, else ask.
    pub fn evaluate(&self, action: &str, resource: &str) -> Decision<'_> {
        match self.last_match(action, resource) {
            Some(index) => Decision {
                effect: self.rules[index].effect,
                rule: Some(&self.rules[index]),
            },
            None => Decision {
                effect: Effect::Ask,
                rule: None,
            },
        }
    }

    /// The reference: scan from the end, one pattern at a time.
    pub fn evaluate_naive(&self, action: &str, resource: &str) -> Decision<'_> {
        for (index, rule) in self.rules.iter().enumerate().rev() {
            if self.actions[index].matches(action) && self.resources[index].matches(resource) {
                return Decision {
                    effect: rule.effect,
                    rule: Some(rule),
                };
            }
        }
        Decision {
            effect: Effect::Ask,
            rule: None,
        }
    }

    /// Several resources: any deny → deny, else any ask → ask, else allow (none → allow).
    pub fn evaluate_all<S: AsRef<str>>(&self, action: &str, resources: &[S]) -> Effect {
        combine(
            resources
                .iter()
                .map(|resource| self.evaluate(action, resource.as_ref()).effect),
        )
    }

    /// The rules whose action pattern matches `action`, in order (what a refusal reports).
    pub fn relevant(&self, action: &str) -> Vec<&Rule> {
        self.rules
            .iter()
            .zip(&self.actions)
            .filter(|(_, pattern)| pattern.matches(action))
            .map(|(rule, _)| rule)
            .collect()
    }

    /// Whether a tool with permission action `action` is wholly denied (spec §2.4, §4.8):
    /// the last rule whose action matches has resource `*` and effect deny.
    pub fn hides(&self, action: &str) -> bool {
        self.rules
            .iter()
            .zip(&self.actions)
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
