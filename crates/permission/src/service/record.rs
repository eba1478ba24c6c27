//! The audit records of the service's decisions: each with its source (the rule and
//! its file, a saved approval, a reply and its front end, `--auto`, no one, exec-time
//! enforcement) and, with a shadow policy, what that one would have decided.

use toolgate_core::{Context, PermissionRequest, Verdict};

use super::{PermissionService, Request, SESSION_APPROVAL, strictness};
use crate::audit::{Caller, DecisionRecord, DecisionSource, Shadow};
use crate::rules::{Effect, Origin};
use crate::service::Reply;

impl PermissionService {
    /// Records a decision on `request` when auditing: the effect, the rule that decided
    /// (the first resource whose effect is the combined one), its source, the reply, and
    /// what the shadow policy would have decided. Explains from memory (the decision just
    /// synced it); the record is queued for the log's writer after the lock is released.
    pub(super) fn record(&self, ctx: &Context, request: &PermissionRequest, effect: Effect, reply: Option<&str>) {
        self.record_as(ctx, request, effect, reply, None);
    }

    /// [`record`](Self::record), with the source given (else found from the rule and the
    /// reply).
    fn record_as(
        &self,
        ctx: &Context,
        request: &PermissionRequest,
        effect: Effect,
        reply: Option<&str>,
        source: Option<DecisionSource>,
    ) {
        let Some(audit) = &self.inner.audit else {
            return;
        };
        let (rule, saved_at) = {
            let state = self.lock();
            let (explained, _) = self.explain_in(&state, &ctx.session_id, &ctx.agent, request);
            let rule = explained.into_iter().find(|e| e.effect == effect).and_then(|e| e.rule);
            let saved_at = rule
                .as_ref()
                .and_then(|rule| rule.source.as_ref())
                .and_then(|id| state.saved.times.get(id))
                .copied();
            (rule, saved_at)
        };
        let source = source.unwrap_or_else(|| match (reply, &rule) {
            (Some("auto"), _) => DecisionSource::Auto,
            (Some(_), _) => DecisionSource::Headless,
            (None, Some(rule)) if rule.origin == Origin::SavedApproval => match rule.source.as_deref() {
                Some(SESSION_APPROVAL) => DecisionSource::SessionApproval,
                id => DecisionSource::Approval {
                    // An "always" of this process the store does not hold yet has no id.
                    id: id.unwrap_or("(not yet stored)").to_string(),
                    saved_at,
                },
            },
            (None, Some(rule)) if rule.origin == Origin::Session => DecisionSource::SessionRule,
            (None, _) => DecisionSource::Rule,
        });
        let shadow = self.inner.shadow.as_ref().map(|(shadow, config)| {
            let explained = shadow.explain(&ctx.session_id, &ctx.agent, request);
            let strictest = explained.into_iter().max_by_key(|e| strictness(e.effect));
            let (effect, rule) = match strictest {
                Some(e) => (e.effect, e.rule),
                None => (Effect::Allow, None),
            };
            Shadow {
                effect,
                rule,
                config: config.clone(),
            }
        });
        let caller = Caller {
            session: &ctx.session_id,
            agent: &ctx.agent,
            call: &ctx.tool_call_id,
            via: None,
        };
        audit.record(
            &caller,
            &DecisionRecord::new(&request.action, &request.resources, effect, source)
                .rule(rule.as_ref())
                .reply(reply)
                .shadow(shadow),
        );
    }

    /// Records a decision exec-time enforcement made by itself: a program a command
    /// started, refused at `execve` (or put to no one).
    pub fn record_enforced(&self, ctx: &Context, request: &PermissionRequest, verdict: Verdict) {
        let effect = match verdict {
            Verdict::Allow => Effect::Allow,
            Verdict::Ask => Effect::Ask,
            Verdict::Deny => Effect::Deny,
        };
        let reply = (effect == Effect::Ask).then_some("headless");
        self.record_as(ctx, request, effect, reply, Some(DecisionSource::Exec));
    }

    pub(super) fn record_request(&self, request: &Request, reply: Reply, by: &DecisionSource) {
        let Some(audit) = &self.inner.audit else {
            return;
        };
        let caller = Caller {
            session: &request.session_id,
            agent: &request.agent,
            call: &request.source.call_id,
            via: None,
        };
        let reply = match reply {
            Reply::Once => "once",
            Reply::Always => "always",
            Reply::Session => "session",
            Reply::Reject => "reject",
        };
        audit.record(
            &caller,
            &DecisionRecord::new(&request.action, &request.resources, Effect::Ask, by.clone()).reply(Some(reply)),
        );
    }
}
