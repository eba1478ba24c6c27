//! The ask/reply service (spec §4.4–4.7, V2 semantics).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value};
use tokio::sync::{broadcast, oneshot};
use toolgate_core::{
    BoxFuture, Context, PermissionRequest, Permissions, Refusal, Resource, ResourceKind, RuleDecision, Verdict,
};

use crate::agents::{Agent, Agents};
use crate::audit::{AuditLog, DecisionSource};

mod record;
use crate::config::PATH_ACTIONS;
use crate::doom::{DOOM_LOOP_THRESHOLD, DoomLoop, DoomMemory};
use crate::holed::{Match, evaluate_holed_with, evaluate_opaque_with, has_deny, match_holed};
use crate::rules::{Effect, Origin, Rule, Ruleset};
use crate::store::{ApprovalStore, StoreError};

/// A pending request taken out of the pending set, its answer, and what its asker gets:
/// settled (recorded, published, answered) once the service's lock is released.
type Settled = (Pending, Reply, Result<(), Refusal>);
use crate::wildcard::{Pattern, is_absolute_path};

/// Who answers asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AskMode {
    /// A person answers through [`PermissionService::reply`].
    Interactive,
    /// Every ask is answered "once" at once; denies still block.
    Auto,
    /// No one can answer: every ask is declined at once.
    Headless,
}

/// The action a changed or new MCP tool definition asks (`toolgate_mcp_client::PIN_ACTION`):
/// `--auto` never approves it.
const PERSON_ONLY: &str = "mcp_pin";

/// A reply to a pending request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reply {
    /// Allow this request only.
    Once,
    /// Allow it and save its patterns for the project.
    Always,
    /// Allow it and remember its patterns for this session only (in this process): the
    /// narrower "always" (spec §10.1, "make scope configurable"). Like a saved approval,
    /// it turns only an ask into allow, never a deny.
    Session,
    /// Refuse it (and every other pending request of the session).
    Reject,
}

/// Where a request comes from: the tool call that asked.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Source {
    /// Always `tool`.
    pub kind: &'static str,
    /// The assistant message.
    pub message_id: String,
    /// The tool call.
    pub call_id: String,
}

/// A pending request. Its wire form (HTTP, events) belongs to the servers.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// `per_…`, ascending.
    pub id: String,
    /// The asking session.
    pub session_id: String,
    /// The action.
    pub action: String,
    /// The resources.
    pub resources: Vec<String>,
    /// What "always" would save.
    pub save: Vec<String>,
    /// Details for the prompt.
    pub metadata: Map<String, Value>,
    /// Resources no saved approval may satisfy.
    pub unsaveable: Vec<String>,
    /// Resources a rule or saved approval already allows: shown as such, and their
    /// patterns are not among those "always" saves. Only the others are asked.
    pub allowed: Vec<String>,
    /// Resources with holes (each also in `resources`, by its display).
    pub holed: Vec<Resource>,
    /// Resources that stand for anything (also in `resources`).
    pub opaque: Vec<String>,
    /// The asking tool call.
    pub source: Source,
    /// The asking agent (used to re-evaluate).
    agent: String,
}

/// A decision before anyone is asked.
struct Decided {
    /// The combined effect.
    effect: Effect,
    /// Each resource's own effect, in the request's order.
    effects: Vec<Effect>,
    /// Resources asked about that no saved approval may satisfy, when a rule of the
    /// action denies something (empty otherwise): auto-approval declines these.
    blind: Vec<String>,
    /// Whether saved approvals could change the answer (some resource asks by the
    /// configured rules), so the store is worth a look.
    consults_saved: bool,
    /// Resources that are files defining the rules (or that git runs code from): asked
    /// every time, never saved, never auto-approved.
    guarded: Vec<String>,
}

/// What the service publishes. Its wire form (event names, field spellings) belongs to
/// the servers.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// A request is waiting for a reply.
    Asked(Box<Request>),
    /// A request was answered.
    Replied {
        /// Its session.
        session_id: String,
        /// Its id.
        request_id: String,
        /// The answer.
        reply: Reply,
    },
}

/// Why a reply was not taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplyError {
    /// No pending request has that id (answered already, or never asked).
    #[error("no pending permission request {0}")]
    NotFound(String),
    /// The request was allowed, but its "always" patterns could not be saved.
    #[error("allowed once, but the approval could not be saved: {0}")]
    Store(#[from] StoreError),
}

/// The decision for one resource, with the rule that made it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Explanation {
    /// The resource.
    pub resource: String,
    /// The effect.
    pub effect: Effect,
    /// The deciding rule (its origin says where it came from); `None` means the default ask.
    pub rule: Option<Rule>,
}

struct Pending {
    request: Request,
    resolve: oneshot::Sender<Result<(), Refusal>>,
}

/// The saved approvals this process knows: a cache of the store plus the answers of
/// this process the store does not hold (yet). Only ever changed under the lock; the
/// store is read and written outside it.
#[derive(Default)]
struct Saved {
    /// The store's version `loaded` reflects; `None` before the first load.
    version: Option<u64>,
    /// The reload that produced `loaded`: an older reload finishing late never replaces
    /// a newer one.
    ticket: u64,
    /// The approvals read from the store.
    loaded: Vec<Rule>,
    /// "Always" answers of this process that the store does not hold: being written, or
    /// their write failed (this process still honours them).
    local: Vec<Rule>,
    /// `loaded` then `local`, compiled.
    rules: Ruleset,
    /// When each loaded approval was saved, by id: the audit record of a decision a saved
    /// approval made names it.
    times: HashMap<String, i64>,
}

impl Saved {
    fn rebuild(&mut self) {
        self.rules = Ruleset::new(self.loaded.iter().chain(&self.local).cloned().collect());
    }

    fn knows(&self, action: &str, resource: &str) -> bool {
        self.loaded
            .iter()
            .chain(&self.local)
            .any(|rule| rule.action == action && rule.resource == resource)
    }

    /// Takes the store's approvals as read by reload `ticket` at `version`, unless a
    /// later reload got there first. Returns whether anything was taken.
    fn install(&mut self, ticket: u64, version: Option<u64>, loaded: Vec<Rule>, times: HashMap<String, i64>) -> bool {
        if ticket <= self.ticket {
            return false;
        }
        self.times = times;
        self.local.retain(|rule| {
            !loaded
                .iter()
                .any(|l| l.action == rule.action && l.resource == rule.resource)
        });
        self.ticket = ticket;
        self.version = version;
        self.loaded = loaded;
        self.rebuild();
        true
    }

    /// Forgets the local answers `written` once the store holds them: from now on the
    /// store says whether they stand (another process may remove them).
    fn written(&mut self, written: &[Rule]) {
        let before = self.local.len();
        self.local.retain(|rule| !written.contains(rule));
        if self.local.len() != before {
            // The next look at the store reloads: this process's own write changed it.
            self.version = None;
            self.rebuild();
        }
    }
}

#[derive(Default)]
struct State {
    pending: BTreeMap<String, Pending>,
    sessions: HashMap<String, Ruleset>,
    /// "Always for this session" answers, per session: allow rules that, like saved
    /// approvals, only turn an ask into allow.
    session_approvals: HashMap<String, Ruleset>,
    saved: Saved,
    closed: bool,
}

struct Inner {
    audit: Option<Arc<AuditLog>>,
    /// The shadow policy and its file (`--shadow-config`).
    shadow: Option<(PermissionService, String)>,
    /// The project directory's absolute spellings (`/` separators, no trailing slash):
    /// relative `read`/`edit`/`external_directory` resources are also matched there.
    roots: Vec<String>,
    /// Where doom_loop streaks are kept, and the streaks kept in this process.
    doom_memory: DoomMemory,
    streaks: DoomLoop,
    headless_note: String,
    agents: Agents,
    /// Each agent's rules with path patterns resolved through symlinks, for the agents
    /// whose rules name a path through one (see `spelled.rs`).
    resolved: HashMap<String, Ruleset>,
    /// Files and trees whose `edit` always asks (see [`PermissionServiceBuilder::protect`]).
    protected: Vec<(String, bool)>,
    project_id: String,
    store: Option<Arc<dyn ApprovalStore>>,
    /// Numbers reloads of saved approvals in the order they start.
    reloads: AtomicU64,
    /// Counts changes of the session rules: a decision remembered under one count holds
    /// while the count stays ([`Permissions::rules_version`]).
    session_changes: AtomicU64,
    mode: AskMode,
    state: Mutex<State>,
    events: broadcast::Sender<Event>,
}

/// The permission service of one location. Cheap to clone.
///
/// ```
/// # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// # rt.block_on(async {
/// use toolgate_permission::{AgentSettings, Agents, AskMode, PermissionService, Reply};
/// use toolgate_core::{Context, PermissionRequest};
///
/// let agents = Agents::build(&AgentSettings::default()).unwrap();
/// let service = PermissionService::builder(agents, "/project").mode(AskMode::Interactive).build();
/// let ctx = Context::new("ses_1", "build");
/// // Reading .env asks; answer it from another task.
/// let asking = {
///     let service = service.clone();
///     let ctx = ctx.clone();
///     tokio::spawn(async move { service.assert(&ctx, PermissionRequest::new("read").resources([".env"])).await })
/// };
/// while service.pending().is_empty() { tokio::task::yield_now().await; }
/// let id = service.pending()[0].id.clone();
/// service.reply(&id, Reply::Once, None).unwrap();
/// assert!(asking.await.unwrap().is_ok());
/// # });
/// ```
#[derive(Clone)]
pub struct PermissionService {
    inner: Arc<Inner>,
}

/// Configures a [`PermissionService`]; see [`PermissionService::builder`].
#[must_use = "a builder does nothing until `build`"]
pub struct PermissionServiceBuilder {
    agents: Agents,
    project_id: String,
    store: Option<Arc<dyn ApprovalStore>>,
    mode: AskMode,
    headless_note: String,
    audit: Option<Arc<AuditLog>>,
    roots: Vec<String>,
    doom_memory: DoomMemory,
    protected: Vec<(String, bool)>,
    shadow: Option<(PermissionService, String)>,
}

impl PermissionServiceBuilder {
    /// Records, next to each decision, what `shadow` (another policy, read from the file
    /// named `config`) would have decided; the shadow never changes a decision
    /// (`--shadow-config`).
    pub fn shadow(mut self, shadow: PermissionService, config: impl Into<String>) -> Self {
        self.shadow = Some((shadow, config.into()));
        self
    }

    /// Makes every `edit` of `path` (with `tree`, of anything beneath the directory
    /// `path`) ask a person, whatever a rule, a session rule or a saved approval says and
    /// with `--auto` too; only a deny still refuses at once, and "always" saves nothing.
    /// For the files that define the rules and those git runs code from, so that the
    /// agent cannot widen its own permissions (README, "Files that define the rules").
    /// The path is matched as given and as it really is (through symlinks).
    pub fn protect(mut self, path: impl AsRef<std::path::Path>, tree: bool) -> Self {
        let path = path.as_ref();
        let mut spellings = vec![path.to_path_buf()];
        if let Some(real) = crate::spelled::real_path(path) {
            spellings.push(real);
        }
        for spelling in spellings {
            let text = spelling.to_string_lossy().replace('\\', "/");
            let text = text.trim_end_matches('/').to_string();
            if !text.is_empty() && !self.protected.contains(&(text.clone(), tree)) {
                self.protected.push((text, tree));
            }
        }
        self
    }

    /// Saves "always" approvals in `store` and reads them back (default: in this
    /// service's memory only).
    pub fn store(mut self, store: Arc<dyn ApprovalStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Who answers asks (default [`AskMode::Headless`]: no one, every ask is declined).
    pub fn mode(mut self, mode: AskMode) -> Self {
        self.mode = mode;
        self
    }

    /// What the service says when it declines headlessly: the reason and what the user
    /// can do, in the program's words (the binary says "no terminal; use --auto to
    /// approve"). Default: "no one can answer".
    pub fn headless_note(mut self, note: impl Into<String>) -> Self {
        self.headless_note = note.into();
        self
    }

    /// Records every decision in `audit`.
    pub fn audit(mut self, audit: Arc<AuditLog>) -> Self {
        self.audit = Some(audit);
        self
    }

    /// Matches relative path resources (`read`, `edit`, `external_directory`) also as
    /// absolute paths under each of `roots` — the project directory, canonical and as
    /// given (spec §4.3 "absolute candidate", see [`Ruleset::evaluate_path`]).
    pub fn roots(mut self, roots: impl IntoIterator<Item = std::path::PathBuf>) -> Self {
        for root in roots {
            let root = root.to_string_lossy().replace('\\', "/");
            let root = match root.trim_end_matches('/') {
                "" => "/".to_string(),
                trimmed => trimmed.to_string(),
            };
            if !self.roots.contains(&root) {
                self.roots.push(root);
            }
        }
        self
    }

    /// Keeps doom_loop streaks (see [`PermissionService::doom_loop`]) in `memory`: with
    /// [`DoomMemory::Database`] they live in the approval database, so processes that
    /// each make one call (`toolgate call --session S`) see the streak. The default is
    /// [`DoomMemory::Process`].
    pub fn doom_memory(mut self, memory: DoomMemory) -> Self {
        self.doom_memory = memory;
        self
    }

    /// The service.
    pub fn build(self) -> PermissionService {
        let (events, _) = broadcast::channel(4096);
        // Relative patterns are read under the project as it really is.
        let project = self.roots.first().and_then(|root| std::fs::canonicalize(root).ok());
        let mut known = crate::spelled::RealPaths::new();
        let resolved = match &project {
            Some(project) => self
                .agents
                .all()
                .iter()
                .filter_map(|agent| {
                    crate::spelled::resolved_ruleset(&agent.rules, project, &mut known)
                        .map(|rules| (agent.name.clone(), rules))
                })
                .collect(),
            None => HashMap::new(),
        };
        PermissionService {
            inner: Arc::new(Inner {
                audit: self.audit,
                shadow: self.shadow,
                roots: self.roots,
                doom_memory: self.doom_memory,
                streaks: DoomLoop::new(DOOM_LOOP_THRESHOLD),
                headless_note: self.headless_note,
                agents: self.agents,
                resolved,
                protected: self.protected,
                project_id: self.project_id,
                store: self.store,
                reloads: AtomicU64::new(0),
                session_changes: AtomicU64::new(0),
                mode: self.mode,
                state: Mutex::new(State::default()),
                events,
            }),
        }
    }
}

impl PermissionService {
    /// A service over `agents` for the project `project_id` (what saved approvals are
    /// kept under, see [`project_id`](crate::project_id)); the builder sets the rest.
    pub fn builder(agents: Agents, project_id: impl Into<String>) -> PermissionServiceBuilder {
        PermissionServiceBuilder {
            agents,
            project_id: project_id.into(),
            store: None,
            mode: AskMode::Headless,
            headless_note: "no one can answer".to_string(),
            audit: None,
            roots: Vec::new(),
            doom_memory: DoomMemory::Process,
            protected: Vec::new(),
            shadow: None,
        }
    }

    /// The absolute spellings of `resource` under the project roots, when `action` is a
    /// path action and `resource` is relative; empty otherwise.
    fn absolutes(&self, action: &str, resource: &str) -> Vec<String> {
        if self.inner.roots.is_empty() || !PATH_ACTIONS.contains(&action) {
            return Vec::new();
        }
        let resource = resource.replace('\\', "/");
        if is_absolute_path(&resource) {
            return Vec::new();
        }
        let tail = resource.strip_prefix("./").unwrap_or(&resource);
        self.inner
            .roots
            .iter()
            .map(|root| match tail {
                "" | "." => root.clone(),
                tail if root == "/" => format!("/{tail}"),
                tail => format!("{root}/{tail}"),
            })
            .collect()
    }

    /// Whether `resource` of `action` is an edit of a protected file (see
    /// [`PermissionServiceBuilder::protect`]): by its absolute spellings `absolutes`, or
    /// itself when it is absolute.
    fn guarded(&self, action: &str, resource: &str, absolutes: &[String]) -> bool {
        if action != "edit" || self.inner.protected.is_empty() {
            return false;
        }
        let own = resource.replace('\\', "/");
        let candidates: Vec<&str> = if is_absolute_path(&own) {
            vec![own.as_str()]
        } else {
            absolutes.iter().map(String::as_str).collect()
        };
        candidates.iter().any(|candidate| {
            let candidate = candidate.trim_end_matches('/');
            self.inner.protected.iter().any(|(path, tree)| {
                candidate == path
                    || (*tree
                        && candidate
                            .strip_prefix(path.as_str())
                            .is_some_and(|rest| rest.starts_with('/') || path == "/"))
            })
        })
    }

    /// The audit log, when there is one.
    pub fn audit(&self) -> Option<&Arc<AuditLog>> {
        self.inner.audit.as_ref()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Each critical section leaves the state consistent before it can panic, so a
        // poisoned lock still guards valid data.
        self.inner.state.lock().unwrap_or_else(|poison| poison.into_inner())
    }

    /// The agents this service decides for.
    pub fn agents(&self) -> &Agents {
        &self.inner.agents
    }

    /// The project whose saved approvals apply.
    pub fn project_id(&self) -> &str {
        &self.inner.project_id
    }

    /// The approval store, when there is one.
    pub fn store(&self) -> Option<&dyn ApprovalStore> {
        self.inner.store.as_deref()
    }

    /// Subscribes to `permission.asked` / `permission.replied` events.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.inner.events.subscribe()
    }

    fn publish(&self, event: Event) {
        // No subscriber is fine: events are for whoever listens.
        let _ = self.inner.events.send(event);
    }

    /// Sets the rules of one session, evaluated after its agent's rules.
    pub fn set_session_rules(&self, session_id: &str, rules: Vec<Rule>) {
        self.lock().sessions.insert(session_id.to_string(), Ruleset::new(rules));
        self.inner.session_changes.fetch_add(1, Ordering::SeqCst);
    }

    /// The agent named `name`; an empty name means the default agent.
    fn agent(&self, name: &str) -> Option<&Agent> {
        if name.is_empty() {
            Some(self.inner.agents.default_agent())
        } else {
            self.inner.agents.get(name)
        }
    }

    /// The configured decision (agent rules, then session rules) for one resource.
    fn configured(
        agent: Option<&Agent>,
        resolved: Option<&Ruleset>,
        session: Option<&Ruleset>,
        action: &str,
        resource: &str,
        absolutes: &[String],
    ) -> (Effect, Option<Rule>) {
        if let Some(session) = session {
            let decision = session.evaluate_path(action, resource, absolutes);
            if let Some(rule) = decision.rule {
                return (decision.effect, Some(rule.clone()));
            }
        }
        match agent {
            Some(agent) => {
                let decision = agent.rules.evaluate_path(action, resource, absolutes);
                // The rules as resolved through symlinks decide too; the stricter holds.
                if let Some(resolved) = resolved.filter(|_| PATH_ACTIONS.contains(&action)) {
                    let through = resolved.evaluate_path(action, resource, absolutes);
                    if strictness(through.effect) > strictness(decision.effect) {
                        // Reported as the user wrote it: the resolved set keeps the order.
                        let written = through
                            .rule
                            .and_then(|rule| resolved.rules().iter().position(|r| std::ptr::eq(r, rule)))
                            .and_then(|index| agent.rules.rules().get(index))
                            .cloned();
                        return (through.effect, written.or_else(|| through.rule.cloned()));
                    }
                }
                (decision.effect, decision.rule.cloned())
            }
            // An unknown agent may do nothing.
            None => (Effect::Deny, Some(Rule::new("*", "*", Effect::Deny, Origin::Agent))),
        }
    }

    /// The saved approval that allows `resource`, if any.
    fn saved_match(saved: &Ruleset, action: &str, resource: &str, absolutes: &[String]) -> Option<Rule> {
        saved.evaluate_path(action, resource, absolutes).rule.cloned()
    }

    /// The configured decision for one resource of a request, whatever its kind: exact
    /// resources by the last matching rule, resources with holes by every value the holes
    /// could take, opaque ones as anything at all (at best ask).
    fn configured_kind(
        agent: Option<&Agent>,
        resolved: Option<&Ruleset>,
        session: Option<&Ruleset>,
        request: &PermissionRequest,
        resource: &str,
        absolutes: &[String],
    ) -> (Effect, Option<Rule>) {
        let action = request.action.as_str();
        let holed = match request.kind(resource) {
            ResourceKind::Exact(resource) => {
                return Self::configured(agent, resolved, session, action, resource, absolutes);
            }
            ResourceKind::Holed(holed) => Some(holed),
            ResourceKind::Opaque => None,
        };
        let Some(agent) = agent else {
            return (Effect::Deny, Some(Rule::new("*", "*", Effect::Deny, Origin::Agent)));
        };
        let mut chain = vec![&agent.rules];
        chain.extend(session);
        let decision = match holed {
            Some(holed) => evaluate_holed_with(&chain, action, holed, request.enforced),
            None => evaluate_opaque_with(&chain, action, request.enforced),
        };
        (decision.effect, decision.rule.cloned())
    }

    /// The saved approval that turns an ask on this resource into allow, if any: none for
    /// unsaveable and opaque resources; for resources with holes, one that matches every
    /// value of the holes.
    fn saved_for(saved: &Ruleset, request: &PermissionRequest, resource: &str, absolutes: &[String]) -> Option<Rule> {
        if request.is_unsaveable(resource) {
            return None;
        }
        match request.kind(resource) {
            ResourceKind::Exact(resource) => Self::saved_match(saved, &request.action, resource, absolutes),
            ResourceKind::Holed(holed) => saved
                .relevant(&request.action)
                .into_iter()
                .rev()
                .find(|rule| match_holed(&rule.resource, holed) == Match::Definite)
                .cloned(),
            ResourceKind::Opaque => None,
        }
    }

    /// True when a rule of the agent or the session denies something for `action`.
    fn action_has_deny(agent: Option<&Agent>, session: Option<&Ruleset>, action: &str) -> bool {
        let Some(agent) = agent else {
            return true;
        };
        let mut chain = vec![&agent.rules];
        chain.extend(session);
        has_deny(&chain, action)
    }

    /// Reloads the saved approvals when the store says they changed since `known` (the
    /// version memory held when the caller decided). Reads the store without the lock.
    /// Returns whether memory changed, so the caller decides again. A store that cannot
    /// be read leaves memory as it is: it never adds an approval.
    fn sync_saved(&self, known: Option<u64>) -> bool {
        let Some(store) = &self.inner.store else {
            return false;
        };
        let ticket = self.inner.reloads.fetch_add(1, Ordering::SeqCst) + 1;
        let Ok(version) = store.version() else {
            return false;
        };
        if version.is_some() && version == known {
            return false;
        }
        let Ok(approvals) = store.list(&self.inner.project_id) else {
            return false;
        };
        let times = approvals
            .iter()
            .map(|approval| (approval.id.clone(), approval.time_created))
            .collect();
        // A loaded approval's source is its id: the audit names the approval that decided.
        let loaded = approvals
            .into_iter()
            .map(|approval| {
                Rule::new(approval.action, approval.resource, Effect::Allow, Origin::SavedApproval)
                    .with_source(approval.id)
            })
            .collect();
        self.lock().saved.install(ticket, version, loaded, times)
    }

    /// Decides `request` from memory, first bringing the saved approvals up to date
    /// (outside the lock) when they could change the answer. `None` once the service has
    /// shut down.
    fn decide_fresh(
        &self,
        session_id: &str,
        agent: &str,
        request: &PermissionRequest,
    ) -> Option<Result<Decided, Refusal>> {
        let (decided, known) = {
            let state = self.lock();
            if state.closed {
                return None;
            }
            (self.decide(&state, session_id, agent, request), state.saved.version)
        };
        if !matches!(&decided, Ok(d) if d.consults_saved) || !self.sync_saved(known) {
            return Some(decided);
        }
        let state = self.lock();
        if state.closed {
            return None;
        }
        Some(self.decide(&state, session_id, agent, request))
    }

    /// Explains the decision for each resource of `request`, deciding rule included (a
    /// "check" command). Nothing is asked and nothing is recorded.
    pub fn explain(&self, session_id: &str, agent: &str, request: &PermissionRequest) -> Vec<Explanation> {
        let (explained, known) = {
            let state = self.lock();
            (self.explain_in(&state, session_id, agent, request), state.saved.version)
        };
        // Saved approvals only turn an ask into allow: without an ask the store is not
        // read.
        let (explained, consults_saved) = explained;
        if !consults_saved || !self.sync_saved(known) {
            return explained;
        }
        let state = self.lock();
        self.explain_in(&state, session_id, agent, request).0
    }

    /// [`PermissionService::explain`] from memory, and whether saved approvals could
    /// change it.
    fn explain_in(
        &self,
        state: &State,
        session_id: &str,
        agent: &str,
        request: &PermissionRequest,
    ) -> (Vec<Explanation>, bool) {
        let agent = self.agent(agent);
        let resolved = agent.and_then(|agent| self.inner.resolved.get(&agent.name));
        let action = request.action.as_str();
        let absolutes: Vec<Vec<String>> = request
            .resources
            .iter()
            .map(|resource| self.absolutes(action, resource))
            .collect();
        let configured: Vec<(Effect, Option<Rule>)> = {
            let session = state.sessions.get(session_id);
            request
                .resources
                .iter()
                .zip(&absolutes)
                .map(|(resource, spelled)| {
                    let (effect, rule) = Self::configured_kind(agent, resolved, session, request, resource, spelled);
                    if effect != Effect::Deny && self.guarded(action, resource, spelled) {
                        return (
                            Effect::Ask,
                            Some(Rule::new(action, resource.clone(), Effect::Ask, Origin::Protected)),
                        );
                    }
                    (effect, rule)
                })
                .collect()
        };
        let consults_saved = configured.iter().any(|(effect, _)| *effect == Effect::Ask);
        let explained = request
            .resources
            .iter()
            .zip(configured)
            .zip(&absolutes)
            .map(|((resource, (effect, rule)), absolutes)| {
                let protected = rule.as_ref().is_some_and(|rule| rule.origin == Origin::Protected);
                let saved = (effect == Effect::Ask && !protected)
                    .then(|| {
                        Self::saved_for(&state.saved.rules, request, resource, absolutes).or_else(|| {
                            state
                                .session_approvals
                                .get(session_id)
                                .and_then(|approvals| Self::saved_for(approvals, request, resource, absolutes))
                        })
                    })
                    .flatten();
                match saved {
                    Some(saved) => Explanation {
                        resource: resource.clone(),
                        effect: Effect::Allow,
                        rule: Some(saved),
                    },
                    None => Explanation {
                        resource: resource.clone(),
                        effect,
                        rule,
                    },
                }
            })
            .collect();
        (explained, consults_saved)
    }

    /// Decides `request` without asking: `Err(Blocked)` on deny, else the combined
    /// effect (allow or ask), each resource's own effect, and the asks about resources
    /// the asker could not see through.
    fn decide(
        &self,
        state: &State,
        session_id: &str,
        agent_name: &str,
        request: &PermissionRequest,
    ) -> Result<Decided, Refusal> {
        let agent = self.agent(agent_name);
        let resolved = agent.and_then(|agent| self.inner.resolved.get(&agent.name));
        let session = state.sessions.get(session_id);
        let mut effects = Vec::with_capacity(request.resources.len());
        let mut absolutes = Vec::with_capacity(request.resources.len());
        let mut guarded = Vec::new();
        for resource in &request.resources {
            let spelled = self.absolutes(&request.action, resource);
            let (mut effect, deciding) = Self::configured_kind(agent, resolved, session, request, resource, &spelled);
            if effect != Effect::Deny && self.guarded(&request.action, resource, &spelled) {
                // A file that defines the rules: asked whatever allows it.
                effect = Effect::Ask;
                guarded.push(resource.clone());
            }
            if effect == Effect::Deny {
                let mut rules: Vec<toolgate_core::RuleRef> = match agent {
                    Some(agent) => agent
                        .rules
                        .relevant(&request.action)
                        .into_iter()
                        .map(Rule::to_ref)
                        .collect(),
                    None => vec![Rule::new("*", "*", Effect::Deny, Origin::Agent).to_ref()],
                };
                if let Some(session) = session {
                    rules.extend(session.relevant(&request.action).into_iter().map(Rule::to_ref));
                }
                return Err(Refusal::Blocked {
                    action: request.action.clone(),
                    reason: None,
                    rules,
                    denied: deciding.map(|rule| Box::new((resource.clone(), rule.to_ref()))),
                });
            }
            effects.push(effect);
            absolutes.push(spelled);
        }
        // Saved approvals come last, so they turn an ask into allow but never touch a deny;
        // when nothing asks they cannot change the answer, and the database is left alone.
        if !effects.contains(&Effect::Ask) {
            return Ok(Decided {
                effect: crate::rules::combine(effects.iter().copied()),
                effects,
                blind: Vec::new(),
                consults_saved: false,
                guarded,
            });
        }
        let deny_exists = Self::action_has_deny(agent, session, &request.action);
        let saved = &state.saved.rules;
        let session_saved = state.session_approvals.get(session_id);
        let mut blind = Vec::new();
        let effects: Vec<Effect> = request
            .resources
            .iter()
            .zip(effects)
            .zip(&absolutes)
            .map(|((resource, effect), spelled)| {
                if effect == Effect::Ask
                    && !guarded.contains(resource)
                    && (Self::saved_for(saved, request, resource, spelled).is_some()
                        || session_saved
                            .is_some_and(|approvals| Self::saved_for(approvals, request, resource, spelled).is_some()))
                {
                    Effect::Allow
                } else {
                    if effect == Effect::Ask && request.is_unsaveable(resource) {
                        blind.push(resource.clone());
                    }
                    effect
                }
            })
            .collect();
        Ok(Decided {
            effect: crate::rules::combine(effects.iter().copied()),
            effects,
            // With the action checked again when it happens, --auto may approve what the
            // analysis could not see: a deny still holds when the program starts.
            blind: if deny_exists && !request.enforced {
                blind
            } else {
                Vec::new()
            },
            consults_saved: true,
            guarded,
        })
    }

    /// Passes one call through the doom_loop watch (spec §4.11), before it is settled:
    /// when it makes `threshold` identical calls (tool and input, key order significant)
    /// in a row in its session and assistant message (`ctx.assistant_message_id`),
    /// `doom_loop` is asserted on the tool's name like any other permission — the rules
    /// decide (`ask` by default), "always" saves the tool's name. `Ok` when the call may
    /// go ahead. A database that cannot record the call falls back to this process's
    /// streaks.
    pub async fn doom_loop(&self, ctx: &Context, threshold: usize, tool: &str, input: &Value) -> Result<(), Refusal> {
        let key = crate::doom::call_key(tool, input);
        let stored = match (self.inner.doom_memory, &self.inner.store) {
            (DoomMemory::Database, Some(store)) => store
                .record_call(&self.inner.project_id, &ctx.session_id, &ctx.assistant_message_id, &key)
                .ok()
                .flatten(),
            _ => None,
        };
        let streak = match stored {
            Some(count) => count,
            None => self
                .inner
                .streaks
                .observe_key(&ctx.session_id, &ctx.assistant_message_id, key),
        };
        if streak < threshold.max(1) {
            return Ok(());
        }
        let request = PermissionRequest::new("doom_loop")
            .resources([tool])
            .save([tool])
            .metadata("tool", tool)
            .metadata("input", input.clone());
        self.assert(ctx, request).await
    }

    /// Decides `request` without asking, recording or waiting: the strictest effect over
    /// its resources (configured rules, session rules, then saved approvals, which only
    /// turn an ask into allow), the rule behind it, and whether that rule is explicit — a
    /// rule a person wrote (config, agent config, managed layer, session) whose pattern is
    /// not the bare `*`. An unknown agent is denied, as by [`assert`](Self::assert).
    pub fn decide_now(&self, ctx: &Context, request: &PermissionRequest) -> RuleDecision {
        let rank = |effect: Effect| match effect {
            Effect::Allow => 0,
            Effect::Ask => 1,
            Effect::Deny => 2,
        };
        let explained = self.explain(&ctx.session_id, &ctx.agent, request);
        let Some(strictest) = explained.iter().max_by_key(|e| rank(e.effect)) else {
            return RuleDecision::new(Verdict::Allow, None, false);
        };
        let verdict = match strictest.effect {
            Effect::Allow => Verdict::Allow,
            Effect::Ask => Verdict::Ask,
            Effect::Deny => Verdict::Deny,
        };
        let explicit = strictest.rule.as_ref().is_some_and(|rule| {
            matches!(
                rule.origin,
                Origin::UserConfig | Origin::AgentConfig | Origin::Managed | Origin::Session
            ) && rule.resource != "*"
        });
        // An allow that a saved approval took part in names no rule: saved approvals can
        // be withdrawn by another process, so such an allow is never reused without
        // deciding again ([`Permissions::rules_version`]).
        let saved = verdict == Verdict::Allow
            && explained
                .iter()
                .any(|e| e.rule.as_ref().is_some_and(|rule| rule.origin == Origin::SavedApproval));
        let rule = strictest
            .rule
            .as_ref()
            .filter(|rule| rule.origin != Origin::SavedApproval && !saved)
            .map(Rule::to_ref);
        RuleDecision::new(verdict, rule, explicit)
    }

    /// The literal first words of the patterns of `action`'s deny rules and of the ask
    /// rules a person wrote (the rules [`decide_now`](Self::decide_now) calls explicit),
    /// for the agent of `ctx`, each once, in rule order ([`Permissions::strict_programs`]).
    pub fn strict_programs(&self, ctx: &Context, action: &str) -> Vec<String> {
        let Some(agent) = self.agent(&ctx.agent) else {
            return Vec::new();
        };
        let mut words: Vec<String> = Vec::new();
        for rule in agent.rules.relevant(action) {
            let written = matches!(
                rule.origin,
                Origin::UserConfig | Origin::AgentConfig | Origin::Managed | Origin::Session
            );
            if !(rule.effect == Effect::Deny || (rule.effect == Effect::Ask && written)) {
                continue;
            }
            let Some(first) = rule.resource.split_whitespace().next() else {
                continue;
            };
            if first.contains(['*', '?']) || words.iter().any(|known| known == first) {
                continue;
            }
            words.push(first.to_string());
        }
        words
    }

    /// Whether asserting `request` now would put a question to a person: the service is
    /// interactive and the rules neither allow nor deny it. Tools use it to prepare what
    /// only a prompt shows (a whole-file diff) and nothing else; the assertion itself
    /// decides again.
    pub fn would_ask(&self, ctx: &Context, request: &PermissionRequest) -> bool {
        if self.inner.mode != AskMode::Interactive {
            return false;
        }
        matches!(
            self.decide_fresh(&ctx.session_id, &ctx.agent, request),
            Some(Ok(d)) if d.effect == Effect::Ask
        )
    }

    /// Asserts `request` for the session and agent of `ctx` (spec §4.4).
    ///
    /// Deny → [`Refusal::Blocked`]; allow → `Ok`; ask → depends on the [`AskMode`]: a
    /// pending request and a `permission.asked` event, then the wait for a reply.
    /// Dropping the returned future withdraws the request.
    pub async fn assert(&self, ctx: &Context, request: PermissionRequest) -> Result<(), Refusal> {
        let Some(decided) = self.decide_fresh(&ctx.session_id, &ctx.agent, &request) else {
            return Err(Refusal::Declined {
                reason: Some("The permission service has shut down; the request was declined.".into()),
            });
        };
        // Auto-approval never approves what the asker could not see through while a deny rule
        // exists for the action: that deny might be exactly what the line would do.
        let auto_blind = self.inner.mode == AskMode::Auto
            && matches!(&decided, Ok(d) if d.effect == Effect::Ask && !d.blind.is_empty());
        // Nor an edit of a file that defines the rules: only a person approves that.
        let auto_guarded = self.inner.mode == AskMode::Auto
            && matches!(&decided, Ok(d) if d.effect == Effect::Ask && !d.guarded.is_empty());
        // Nor an MCP server's changed or new tool definition: the change is what a rug
        // pull makes, and only a person accepts it.
        let auto_pin = self.inner.mode == AskMode::Auto
            && request.action == PERSON_ONLY
            && matches!(&decided, Ok(d) if d.effect == Effect::Ask);
        match &decided {
            Ok(d) if d.effect == Effect::Allow => self.record(ctx, &request, Effect::Allow, None),
            Ok(d) if d.effect == Effect::Deny => self.record(ctx, &request, Effect::Deny, None),
            Err(_) => self.record(ctx, &request, Effect::Deny, None),
            Ok(_) => match self.inner.mode {
                AskMode::Auto if auto_blind || auto_guarded || auto_pin => {
                    self.record(ctx, &request, Effect::Ask, Some("auto-declined"))
                }
                AskMode::Auto => self.record(ctx, &request, Effect::Ask, Some("auto")),
                AskMode::Headless => self.record(ctx, &request, Effect::Ask, Some("headless")),
                AskMode::Interactive => {}
            },
        }
        let receiver = {
            let mut state = self.lock();
            // A shutdown between the decision and here must not leave a request behind.
            if state.closed {
                return Err(Refusal::declined());
            }
            let decided = decided?;
            let effects = match decided.effect {
                Effect::Allow => return Ok(()),
                Effect::Deny => {
                    return Err(Refusal::Blocked {
                        action: request.action,
                        reason: None,
                        rules: Vec::new(),
                        denied: None,
                    });
                }
                Effect::Ask => decided.effects,
            };
            let guarded = decided.guarded;
            match self.inner.mode {
                AskMode::Auto if auto_guarded => {
                    return Err(Refusal::Declined {
                        reason: Some(format!(
                            "permission requested: {} ({}); declined: {} defines the rules or runs code through \
                             git, so a person is asked every time and --auto never approves it",
                            request.action,
                            request.resources.join(", "),
                            guarded.join(", ")
                        )),
                    });
                }
                AskMode::Auto if auto_pin => {
                    return Err(Refusal::Declined {
                        reason: Some(format!(
                            "permission requested: {} ({}); declined: a changed or new MCP tool definition is \
                             approved by a person, never by --auto",
                            request.action,
                            request.resources.join(", ")
                        )),
                    });
                }
                AskMode::Auto if auto_blind => {
                    return Err(Refusal::Declined {
                        reason: Some(format!(
                            "permission requested: {} ({}); declined: this cannot be analysed and a rule denies some {} \
                             requests, so it is not approved automatically",
                            request.action,
                            decided.blind.join(", "),
                            request.action
                        )),
                    });
                }
                AskMode::Auto => return Ok(()),
                AskMode::Headless => {
                    return Err(Refusal::Declined {
                        reason: Some(format!(
                            "permission requested: {} ({}); declined ({})",
                            request.action,
                            request.resources.join(", "),
                            self.inner.headless_note
                        )),
                    });
                }
                AskMode::Interactive => {}
            }
            let allowed: Vec<String> = request
                .resources
                .iter()
                .zip(&effects)
                .filter(|(_, effect)| **effect == Effect::Allow)
                .map(|(resource, _)| resource.clone())
                .collect();
            // "Always" saves nothing for a protected file: it is asked every time.
            let save = if guarded.is_empty() {
                asked_save(&request.save, &request.resources, &allowed)
            } else {
                Vec::new()
            };
            let mut metadata = request.metadata;
            if !guarded.is_empty() {
                metadata.insert("protected".into(), Value::from(guarded.clone()));
            }
            let pending = Request {
                id: toolgate_core::ascending_id("per"),
                session_id: ctx.session_id.clone(),
                action: request.action,
                resources: request.resources,
                save,
                metadata,
                unsaveable: request.unsaveable,
                allowed,
                holed: request.holed,
                opaque: request.opaque,
                source: Source {
                    kind: "tool",
                    message_id: ctx.assistant_message_id.clone(),
                    call_id: ctx.tool_call_id.clone(),
                },
                agent: ctx.agent.clone(),
            };
            let (resolve, receiver) = oneshot::channel();
            let id = pending.id.clone();
            self.publish(Event::Asked(Box::new(pending.clone())));
            state.pending.insert(
                id.clone(),
                Pending {
                    request: pending,
                    resolve,
                },
            );
            (receiver, Withdraw { service: self, id })
        };
        let (receiver, _withdraw) = receiver;
        // A dropped sender means the request was withdrawn without an answer.
        receiver.await.unwrap_or_else(|_| Err(Refusal::declined()))
    }

    /// The pending requests, oldest first.
    pub fn pending(&self) -> Vec<Request> {
        self.lock()
            .pending
            .values()
            .map(|pending| pending.request.clone())
            .collect()
    }

    /// Records, publishes and answers requests taken out of the pending set. Called
    /// without the lock: the audit log is a file.
    fn settle(&self, settled: Vec<Settled>, by: &DecisionSource) {
        for (pending, reply, outcome) in settled {
            self.record_request(&pending.request, reply, by);
            self.publish(Event::Replied {
                session_id: pending.request.session_id.clone(),
                request_id: pending.request.id.clone(),
                reply,
            });
            // The asker may have gone away; there is no one left to tell then.
            let _ = pending.resolve.send(outcome);
        }
    }

    /// Answers the pending request `id` (spec §4.5).
    ///
    /// `once` resolves it; `always` also saves its patterns for the project and resolves
    /// every other pending request they now allow; `reject` declines it (with `message`,
    /// the model gets it as feedback) and every other pending request of its session.
    ///
    /// An "always" answer counts in this process at once; it is written to the store
    /// after the service's lock is released, so other sessions are not held up by it.
    pub fn reply(&self, id: &str, reply: Reply, message: Option<&str>) -> Result<(), ReplyError> {
        self.reply_by(
            id,
            reply,
            message,
            DecisionSource::Reply {
                front_end: "api".into(),
                person: None,
            },
        )
    }

    /// [`reply`](Self::reply), naming who answered for the audit log: a
    /// [`DecisionSource::Reply`] with the front end (`terminal`, `http`, `mcp`, `page`)
    /// and the person, when known.
    pub fn reply_by(
        &self,
        id: &str,
        reply: Reply,
        message: Option<&str>,
        by: DecisionSource,
    ) -> Result<(), ReplyError> {
        let by = &by;
        let mut state = self.lock();
        let target = state
            .pending
            .remove(id)
            .ok_or_else(|| ReplyError::NotFound(id.to_string()))?;
        match reply {
            Reply::Once => {
                drop(state);
                self.settle(vec![(target, Reply::Once, Ok(()))], by);
                Ok(())
            }
            Reply::Reject => {
                let session = target.request.session_id.clone();
                // Spec §4.5: a message that is non-empty as sent is a correction, even one
                // of spaces only; it reaches the model exactly as the person wrote it.
                let refusal = match message.filter(|text| !text.is_empty()) {
                    Some(feedback) => Refusal::Corrected {
                        feedback: feedback.to_string(),
                    },
                    None => Refusal::declined(),
                };
                let mut settled = vec![(target, Reply::Reject, Err(refusal))];
                settled.extend(Self::take_session(&mut state, &session));
                drop(state);
                self.settle(settled, by);
                Ok(())
            }
            Reply::Session if target.request.save.is_empty() => {
                drop(state);
                self.settle(vec![(target, Reply::Session, Ok(()))], by);
                Ok(())
            }
            Reply::Session => {
                let session = target.request.session_id.clone();
                let action = target.request.action.clone();
                let approvals = state.session_approvals.entry(session).or_default();
                let mut rules: Vec<Rule> = approvals.rules().to_vec();
                for resource in &target.request.save {
                    if !rules
                        .iter()
                        .any(|rule| rule.action == action && &rule.resource == resource)
                    {
                        // A saved approval in kind (never explicit, never over a deny),
                        // kept for this session only.
                        rules.push(
                            Rule::new(action.clone(), resource.clone(), Effect::Allow, Origin::SavedApproval)
                                .with_source(SESSION_APPROVAL),
                        );
                    }
                }
                *approvals = Ruleset::new(rules);
                let mut settled = vec![(target, Reply::Session, Ok(()))];
                settled.extend(self.cascade(&mut state));
                drop(state);
                self.settle(settled, by);
                Ok(())
            }
            Reply::Always if target.request.save.is_empty() => {
                drop(state);
                self.settle(vec![(target, Reply::Always, Ok(()))], by);
                Ok(())
            }
            Reply::Always => {
                let action = target.request.action.clone();
                let save = target.request.save.clone();
                // Remembered here first: whether or not the store takes it, this process
                // honours the approval from now on.
                let mut added: Vec<Rule> = Vec::new();
                for resource in &save {
                    if !state.saved.knows(&action, resource) && !added.iter().any(|rule| &rule.resource == resource) {
                        added.push(Rule::new(
                            action.clone(),
                            resource.clone(),
                            Effect::Allow,
                            Origin::SavedApproval,
                        ));
                    }
                }
                if !added.is_empty() {
                    state.saved.local.extend(added.iter().cloned());
                    state.saved.rebuild();
                }
                let mut settled = vec![(target, Reply::Always, Ok(()))];
                settled.extend(self.cascade(&mut state));
                drop(state);
                self.settle(settled, by);
                let Some(store) = &self.inner.store else {
                    return Ok(());
                };
                store.add(&self.inner.project_id, &action, &save)?;
                if !added.is_empty() {
                    self.lock().saved.written(&added);
                }
                Ok(())
            }
        }
    }

    /// Takes every pending request of `session` out, declined.
    fn take_session(state: &mut State, session: &str) -> Vec<Settled> {
        let ids: Vec<String> = state
            .pending
            .iter()
            .filter(|(_, pending)| pending.request.session_id == session)
            .map(|(id, _)| id.clone())
            .collect();
        ids.into_iter()
            .filter_map(|id| state.pending.remove(&id))
            .map(|pending| (pending, Reply::Reject, Err(Refusal::declined())))
            .collect()
    }

    /// Takes out every pending request that the rules in memory now allow.
    fn cascade(&self, state: &mut State) -> Vec<Settled> {
        let candidates: Vec<(String, String, String, PermissionRequest)> = state
            .pending
            .values()
            .map(|pending| {
                let request = &pending.request;
                (request.id.clone(), request.session_id.clone(), request.agent.clone(), {
                    let mut asked = PermissionRequest::new(request.action.clone());
                    asked.resources = request.resources.clone();
                    asked.unsaveable = request.unsaveable.clone();
                    asked.holed = request.holed.clone();
                    asked.opaque = request.opaque.clone();
                    asked
                })
            })
            .collect();
        let mut settled = Vec::new();
        for (id, session, agent, request) in candidates {
            if matches!(self.decide(state, &session, &agent, &request), Ok(d) if d.effect == Effect::Allow)
                && let Some(pending) = state.pending.remove(&id)
            {
                settled.push((pending, Reply::Always, Ok(())));
            }
        }
        settled
    }

    /// Declines the pending request `id` with `reason` as the message (no one could be
    /// asked), without touching the session's other requests.
    pub fn decline(&self, id: &str, reason: &str) -> Result<(), ReplyError> {
        let pending = self
            .lock()
            .pending
            .remove(id)
            .ok_or_else(|| ReplyError::NotFound(id.to_string()))?;
        let refusal = Refusal::Declined {
            reason: Some(reason.to_string()),
        };
        self.settle(vec![(pending, Reply::Reject, Err(refusal))], &DecisionSource::Headless);
        Ok(())
    }

    /// Declines every pending request of a cancelled session.
    pub fn cancel_session(&self, session_id: &str) {
        let settled = Self::take_session(&mut self.lock(), session_id);
        self.settle(settled, &DecisionSource::Headless);
    }

    /// Declines everything pending and every later ask.
    pub fn shutdown(&self) {
        let all = {
            let mut state = self.lock();
            state.closed = true;
            std::mem::take(&mut state.pending)
        };
        self.settle(
            all.into_values()
                .map(|pending| (pending, Reply::Reject, Err(Refusal::declined())))
                .collect(),
            &DecisionSource::Headless,
        );
    }

    /// The rule that hides tools asking as `action` from `agent` (spec §2.4, §4.8): the
    /// last rule whose action matches, when it denies `*`. `None` when nothing hides them.
    pub fn hidden_by(&self, agent: &str, action: &str) -> Option<toolgate_core::RuleRef> {
        let Some(agent) = self.agent(agent) else {
            return Some(Rule::new("*", "*", Effect::Deny, Origin::Agent).to_ref());
        };
        if !agent.rules.hides(action) {
            return None;
        }
        agent.rules.relevant(action).last().map(|rule| rule.to_ref())
    }

    /// Whether `agent` sees no tool asking as `action` (spec §2.4, §4.8).
    pub fn hides(&self, agent: &str, action: &str) -> bool {
        match self.agent(agent) {
            Some(agent) => agent.rules.hides(action),
            None => true,
        }
    }
}

/// The "always" patterns of a request once the resources rules already allow are left
/// out: a pattern goes when every resource it matches is allowed (a pattern that
/// matches no resource at all is kept, it says nothing about them).
///
/// ```
/// use toolgate_permission::asked_save;
/// let save = ["git status *".to_string(), "rm *".to_string()];
/// let resources = ["git status".to_string(), "rm -rf build".to_string()];
/// assert_eq!(asked_save(&save, &resources, &resources[..1]), ["rm *"]);
/// ```
pub fn asked_save(save: &[String], resources: &[String], allowed: &[String]) -> Vec<String> {
    if allowed.is_empty() {
        return save.to_vec();
    }
    save.iter()
        .filter(|pattern| {
            let compiled = Pattern::new(pattern);
            let covered: Vec<&String> = resources.iter().filter(|r| compiled.matches(r)).collect();
            covered.is_empty() || covered.iter().any(|resource| !allowed.contains(resource))
        })
        .cloned()
        .collect()
}

/// Removes a request from the pending set when its asker stops waiting.
struct Withdraw<'a> {
    service: &'a PermissionService,
    id: String,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.service.lock().pending.remove(&self.id);
    }
}

impl Permissions for PermissionService {
    fn assert<'a>(&'a self, ctx: &'a Context, request: PermissionRequest) -> BoxFuture<'a, Result<(), Refusal>> {
        Box::pin(PermissionService::assert(self, ctx, request))
    }

    fn would_ask(&self, ctx: &Context, request: &PermissionRequest) -> bool {
        PermissionService::would_ask(self, ctx, request)
    }

    fn decide(&self, ctx: &Context, request: &PermissionRequest) -> Option<RuleDecision> {
        Some(PermissionService::decide_now(self, ctx, request))
    }

    fn rules_version(&self) -> Option<u64> {
        // The agents' rules are fixed for the service's life; only session rules change.
        Some(self.inner.session_changes.load(Ordering::SeqCst))
    }

    fn strict_programs(&self, ctx: &Context, action: &str) -> Vec<String> {
        PermissionService::strict_programs(self, ctx, action)
    }

    fn record_enforced(&self, ctx: &Context, request: &PermissionRequest, verdict: Verdict) {
        PermissionService::record_enforced(self, ctx, request, verdict);
    }
}

/// The source a session approval's rule carries (one saved for the rest of a session).
const SESSION_APPROVAL: &str = "this session";

/// The stricter of two effects ranks higher: deny, then ask, then allow.
fn strictness(effect: Effect) -> u8 {
    match effect {
        Effect::Allow => 0,
        Effect::Ask => 1,
        Effect::Deny => 2,
    }
}
