//! The `Permissions` trait: how a tool asks before it acts.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{BoxFuture, Context, Resource};

/// The message of a user's plain rejection (spec §4.6).
const DECLINED_MESSAGE: &str = "The user rejected permission to use this specific tool call.";

/// What a tool asks permission for: one action on one or more resources.
///
/// `save` lists the patterns that an "always" answer stores; `metadata` is shown to
/// whoever answers (a diff, a command line) and never affects the decision.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PermissionRequest {
    /// The action, e.g. `read`, `edit`, `bash`, `external_directory`.
    pub action: String,
    /// What the action touches, e.g. paths relative to the location or command texts.
    pub resources: Vec<String>,
    /// Patterns persisted when the user answers "always".
    pub save: Vec<String>,
    /// Free-form details for the prompt.
    pub metadata: Map<String, Value>,
    /// Resources that no saved approval may satisfy: the asker could not see what they
    /// do (an unparsable or dynamic shell command), so only a configured rule or a person
    /// may allow them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsaveable: Vec<String>,
    /// Resources only partly known before the action runs: each one's
    /// [`Resource::display`] is also in `resources`, and the permission service decides it
    /// by every value its holes could take (the most restrictive effect a rule could give).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub holed: Vec<Resource>,
    /// Resources that stand for anything at all: the asker could not see what would
    /// happen (shell code it cannot analyse). Also in `resources`. Every rule of the
    /// action could apply, the effect is at best ask, and no saved approval satisfies them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub opaque: Vec<String>,
    /// True when what the request stands for is checked again when it really happens
    /// (exec-time enforcement decides every program a command line starts): a resource
    /// with holes that only *possibly* matches a deny rule, or an opaque one, is then asked
    /// rather than refused before anything runs — the deny still holds when the program
    /// starts. A deny that matches whatever the holes hold still refuses at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub enforced: bool,
}

impl PermissionRequest {
    /// A request for `action` with no resources yet.
    pub fn new(action: impl Into<String>) -> Self {
        PermissionRequest {
            action: action.into(),
            ..PermissionRequest::default()
        }
    }

    /// Adds the resources the action touches.
    pub fn resources<S: Into<String>>(mut self, resources: impl IntoIterator<Item = S>) -> Self {
        self.resources.extend(resources.into_iter().map(Into::into));
        self
    }

    /// Adds the patterns an "always" answer saves.
    pub fn save<S: Into<String>>(mut self, patterns: impl IntoIterator<Item = S>) -> Self {
        self.save.extend(patterns.into_iter().map(Into::into));
        self
    }

    /// Marks resources (also added to the resources) that no saved approval may satisfy.
    pub fn unsaveable<S: Into<String>>(mut self, resources: impl IntoIterator<Item = S>) -> Self {
        for resource in resources {
            let resource = resource.into();
            if !self.resources.contains(&resource) {
                self.resources.push(resource.clone());
            }
            self.unsaveable.push(resource);
        }
        self
    }

    /// Adds resources that may have holes; exact ones are added as plain resources.
    pub fn holed(mut self, resources: impl IntoIterator<Item = Resource>) -> Self {
        for resource in resources {
            let display = resource.display();
            if !self.resources.contains(&display) {
                self.resources.push(display);
            }
            if !resource.is_exact() && !self.holed.contains(&resource) {
                self.holed.push(resource);
            }
        }
        self
    }

    /// Adds resources that stand for anything (shown as given); they are never saveable.
    pub fn opaque<S: Into<String>>(mut self, resources: impl IntoIterator<Item = S>) -> Self {
        for resource in resources {
            let resource = resource.into();
            if !self.resources.contains(&resource) {
                self.resources.push(resource.clone());
            }
            if !self.opaque.contains(&resource) {
                self.opaque.push(resource);
            }
        }
        self
    }

    /// How the resource shown as `display` is to be decided.
    ///
    /// ```
    /// use toolgate_core::{HoleClass, PermissionRequest, Resource, ResourceKind};
    /// let mut holed = Resource::exact("echo ");
    /// holed.push_hole("$HOME", HoleClass::Any);
    /// let request = PermissionRequest::new("bash")
    ///     .resources(["ls"])
    ///     .holed([holed.clone()])
    ///     .opaque(["eval \"$X\""]);
    /// assert_eq!(request.kind("ls"), ResourceKind::Exact("ls"));
    /// assert_eq!(request.kind("echo $HOME"), ResourceKind::Holed(&holed));
    /// assert_eq!(request.kind("eval \"$X\""), ResourceKind::Opaque);
    /// ```
    pub fn kind<'a>(&'a self, display: &'a str) -> ResourceKind<'a> {
        if self.opaque.iter().any(|resource| resource == display) {
            return ResourceKind::Opaque;
        }
        match self.holed.iter().find(|resource| resource.display() == display) {
            Some(resource) => ResourceKind::Holed(resource),
            None => ResourceKind::Exact(display),
        }
    }

    /// True when no saved approval may satisfy the resource shown as `display`.
    pub fn is_unsaveable(&self, display: &str) -> bool {
        self.unsaveable.iter().any(|resource| resource == display)
            || self.opaque.iter().any(|resource| resource == display)
    }

    /// Marks the request as checked again when it happens (see [`Self::enforced`]).
    pub fn enforced_later(mut self, enforced: bool) -> Self {
        self.enforced = enforced;
        self
    }

    /// Adds one metadata entry for the prompt.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }
}

/// How one resource of a request is decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceKind<'a> {
    /// Known exactly: the last matching rule decides.
    Exact(&'a str),
    /// Partly known: decided over every value its holes could take.
    Holed(&'a Resource),
    /// Unknown: every rule of the action could apply, and the effect is at best ask.
    Opaque,
}

/// A rule as the permission service reports it when it blocks a call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleRef {
    /// The action pattern.
    pub action: String,
    /// The resource pattern.
    pub resource: String,
    /// `allow`, `ask` or `deny`.
    pub effect: String,
    /// Where the rule was written: its config file, or what else made it (`defaults`,
    /// `managed`, `session`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl std::fmt::Display for RuleRef {
    /// `bash "rm *" deny (toolgate.json)`: how a refusal names the rule.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} \"{}\" {}", self.action, self.resource, self.effect)?;
        if let Some(source) = &self.source {
            write!(f, " ({source})")?;
        }
        Ok(())
    }
}

/// What the rules give a request, decided without asking anyone (see
/// [`Permissions::decide`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A rule or a saved approval allows it.
    Allow,
    /// Nothing allows or denies it: asserting it would ask a person.
    Ask,
    /// A rule denies it.
    Deny,
}

/// A decision made without asking: the verdict, the rule behind it, and whether that rule
/// names what it decides (see [`RuleDecision::explicit`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RuleDecision {
    /// The verdict.
    pub verdict: Verdict,
    /// The deciding rule; `None` when no rule matched (the default ask) or a saved
    /// approval decided.
    pub rule: Option<RuleRef>,
    /// True when the deciding rule was written by a person (a config, the managed layer,
    /// a session) for this resource rather than for everything: any pattern but the bare
    /// `*`. The built-in defaults and a catch-all `*` rule are not explicit.
    pub explicit: bool,
}

impl RuleDecision {
    /// A decision with `verdict` by `rule`.
    pub fn new(verdict: Verdict, rule: Option<RuleRef>, explicit: bool) -> RuleDecision {
        RuleDecision {
            verdict,
            rule,
            explicit,
        }
    }
}

/// Why a permission assertion did not allow the call.
///
/// [`Refusal::Declined`] means a person said no (or no one could answer): a caller
/// running an agent loop should stop. The other two let the loop continue with the
/// message as the tool's error.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Refusal {
    /// A configured rule denies the action.
    #[error("{}", blocked_message(.action, .reason.as_deref(), .denied.as_deref()))]
    Blocked {
        /// The action that was asked for.
        action: String,
        /// The rule's own reason, when it has one.
        reason: Option<String>,
        /// The rules whose action pattern matches the action, in order.
        rules: Vec<RuleRef>,
        /// The resource that was denied and the rule that denied it, when known: the
        /// message names both (`Permission denied: bash "rm -rf build" by rule bash
        /// "rm *" deny (toolgate.json)`).
        denied: Option<Box<(String, RuleRef)>>,
    },
    /// The user (or the absence of one) declined.
    #[error("{}", .reason.as_deref().unwrap_or(DECLINED_MESSAGE))]
    Declined {
        /// Replaces the standard message, e.g. when no one could be asked.
        reason: Option<String>,
    },
    /// The user declined and told the model what to do instead.
    #[error("The user rejected permission to use this specific tool call with the following feedback: {feedback}")]
    Corrected {
        /// The user's words.
        feedback: String,
    },
}

fn blocked_message(action: &str, reason: Option<&str>, denied: Option<&(String, RuleRef)>) -> String {
    match (reason, denied) {
        (Some(reason), _) => reason.to_string(),
        (None, Some((resource, rule))) => format!("Permission denied: {action} \"{resource}\" by rule {rule}"),
        (None, None) => format!("Permission denied: {action}"),
    }
}

impl Refusal {
    /// A plain user rejection.
    pub fn declined() -> Self {
        Refusal::Declined { reason: None }
    }

    /// True when the agent loop should stop: a person declined, with no feedback.
    pub fn stops_loop(&self) -> bool {
        matches!(self, Refusal::Declined { .. })
    }
}

/// The permission service as a tool sees it.
///
/// Implemented by the `permission` crate; tests use a recording fake. An assertion
/// resolves only when the call may proceed (`Ok`) or is refused (`Err`); an ask that
/// waits for a person simply takes longer.
pub trait Permissions: Send + Sync {
    /// Asserts `request` for the session and agent of `ctx`.
    fn assert<'a>(&'a self, ctx: &'a Context, request: PermissionRequest) -> BoxFuture<'a, Result<(), Refusal>>;

    /// Whether asserting `request` now would put it to a person (no rule allows or
    /// denies it, and someone can answer). A tool may use it to prepare details only a
    /// prompt shows — a whole-file diff, which means reading the file before the
    /// assertion — and skip that work otherwise; it never authorises anything. The
    /// default, `false`, suits an implementation that never shows prompts: nothing is
    /// read for one.
    fn would_ask(&self, ctx: &Context, request: &PermissionRequest) -> bool {
        let _ = (ctx, request);
        false
    }

    /// Decides `request` (exact resources) for the session and agent of `ctx` without
    /// asking, recording or waiting: the strictest verdict over its resources and the
    /// rule behind it. Exec-time enforcement calls it for every program a command starts,
    /// so it must be fast and must not block. `None` (the default) means this
    /// implementation cannot decide without asserting: the caller then asserts.
    fn decide(&self, ctx: &Context, request: &PermissionRequest) -> Option<RuleDecision> {
        let _ = (ctx, request);
        None
    }

    /// A number that changes whenever a configured rule that [`decide`](Self::decide)
    /// reads may have changed (saved approvals aside, which only turn an ask into allow
    /// and are never part of an allow a caller may remember): while it stays the same, an
    /// allow by a configured rule stays an allow, so exec-time enforcement may reuse it
    /// for the same program and words. `None` (the default): nothing may be reused.
    fn rules_version(&self) -> Option<u64> {
        None
    }

    /// The literal programs that rules refusing `action` begin with, for the agent of
    /// `ctx`: the first word of every deny rule's pattern and of every ask rule a person
    /// wrote (`rm` of `rm *`, `/usr/bin/rm` of `/usr/bin/rm -rf *`), never a word with a
    /// wildcard in it. Exec-time enforcement learns from them which files these programs
    /// are, so that the same program run under another of its names (`dash` for `sh`, a
    /// hard link or a copy of `rm`) is refused too. The default, empty, means none are
    /// known: only the names a program is run by are checked.
    fn strict_programs(&self, ctx: &Context, action: &str) -> Vec<String> {
        let _ = (ctx, action);
        Vec::new()
    }

    /// Records a decision exec-time enforcement made by itself, without asserting: a
    /// program a command started that it refused at `execve` (`Deny`), or one it could put
    /// to no one (`Ask`). The default records nothing: an implementation without an audit
    /// log has nowhere to put it.
    fn record_enforced(&self, ctx: &Context, request: &PermissionRequest, verdict: Verdict) {
        let _ = (ctx, request, verdict);
    }
}

/// [`Permissions`] that allow every request: for embedders whose tools need no asking
/// (a trusted batch job, a sandboxed agent) and for tests of a tool's own behaviour.
///
/// ```
/// use std::sync::Arc;
/// use toolgate_core::{AllowAll, Context, PermissionRequest, Permissions};
/// let permissions: Arc<dyn Permissions> = Arc::new(AllowAll);
/// let ctx = Context::new("ses_1", "build");
/// let asked = permissions.assert(&ctx, PermissionRequest::new("bash").resources(["rm -rf build"]));
/// # let asked = tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(asked);
/// assert_eq!(asked, Ok(()));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AllowAll;

impl Permissions for AllowAll {
    fn assert<'a>(&'a self, _: &'a Context, _: PermissionRequest) -> BoxFuture<'a, Result<(), Refusal>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// [`Permissions`] that refuse every request as [`Refusal::Blocked`] (`Permission denied:
/// ACTION`, no rule named), before anything is read or run: for a dry run of an agent
/// loop, and for tests that a tool asks before it acts.
///
/// ```
/// use toolgate_core::{Context, DenyAll, PermissionRequest, Permissions, Refusal};
/// let ctx = Context::new("ses_1", "build");
/// let asked = DenyAll.assert(&ctx, PermissionRequest::new("read").resources([".env"]));
/// # let asked = tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(asked);
/// let refusal = asked.unwrap_err();
/// assert_eq!(refusal.to_string(), "Permission denied: read");
/// assert!(matches!(refusal, Refusal::Blocked { .. }) && !refusal.stops_loop());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DenyAll;

impl Permissions for DenyAll {
    fn assert<'a>(&'a self, _: &'a Context, request: PermissionRequest) -> BoxFuture<'a, Result<(), Refusal>> {
        Box::pin(std::future::ready(Err(Refusal::Blocked {
            action: request.action,
            reason: None,
            rules: Vec::new(),
            denied: None,
        })))
    }
}
