//! The gate: prepare, catalog, doom_loop, settle, audit, events, spill cleanup.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;
use tokio::sync::{broadcast, watch};
use toolgate_core::{BoundError, Context, Defect, ModelResult, ToolFailure};
use toolgate_output_store::{CleanupTask, OutputStore};
use toolgate_permission::Caller;
use toolgate_permission::{DOOM_LOOP_THRESHOLD, PermissionService};
use toolgate_registry::{Materialized, Registration, SettleError, Settlement, ToolRegistry};

/// What the gate publishes about calls, for whoever listens (server-sent events, logs).
///
/// Every call that enters [`Gate::call`] with an offered tool publishes `Started` and
/// then exactly one of `Settled`, `Failed` or `Cancelled`.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum GateEvent {
    /// A call began.
    Started {
        /// Its session.
        session: String,
        /// Its call id.
        call: String,
        /// The tool called.
        tool: String,
    },
    /// A call settled: the tool answered, or refused, or failed in a way the model sees.
    Settled {
        /// Its session.
        session: String,
        /// Its call id.
        call: String,
        /// The tool called.
        tool: String,
        /// What the model sees.
        result: ModelResult,
        /// Files holding output that was cut.
        output_paths: Vec<PathBuf>,
        /// True when a person declined a permission during the call.
        declined: bool,
    },
    /// A call ended without a settlement: its registration changed since the catalog was
    /// made (stale), the tool panicked, or its output could not be bounded.
    Failed {
        /// Its session.
        session: String,
        /// Its call id.
        call: String,
        /// The tool called.
        tool: String,
        /// What went wrong.
        error: String,
    },
    /// A call was cancelled (its future dropped) before it settled.
    Cancelled {
        /// Its session.
        session: String,
        /// Its call id.
        call: String,
        /// The tool called.
        tool: String,
    },
}

/// Why a call through the gate has no settlement: it never ran ([`GateError::Unknown`],
/// [`GateError::Stale`]: tell the model with the error's text), or it ran and something
/// that is not the tool's answer went wrong ([`GateError::Defect`], [`GateError::Bound`]).
/// Whatever the variant, the audit log has the call's one record.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GateError {
    /// The agent's catalog does not offer the tool: no tool has that name
    /// (`Unknown tool: NAME`), or the agent's rules wholly deny it (`denied` names the
    /// rule: `Permission denied: tool bash for agent plan by rule bash "*" deny (…)`).
    #[error("{}", unknown_message(.tool, .agent, .denied.as_ref()))]
    Unknown {
        /// The name called.
        tool: String,
        /// The agent whose catalog was asked.
        agent: String,
        /// What that catalog offers, in registry order (for "available: …").
        offered: Vec<String>,
        /// The rule that hides the tool, when one does (spec §2.4, §4.8).
        denied: Option<toolgate_core::RuleRef>,
    },
    /// The tool's registration was removed or replaced since the catalog was made (an MCP
    /// server's `list_changed`): list the tools again and call again.
    #[error("Stale tool call: {tool}")]
    Stale {
        /// The name called.
        tool: String,
    },
    /// The tool panicked.
    #[error(transparent)]
    Defect(#[from] Defect),
    /// The output could not be bounded (a failed spill, oversized media).
    #[error(transparent)]
    Bound(#[from] BoundError),
}

fn unknown_message(tool: &str, agent: &str, denied: Option<&toolgate_core::RuleRef>) -> String {
    match denied {
        Some(rule) => format!("Permission denied: tool {tool} for agent {agent} by rule {rule}"),
        None => format!("Unknown tool: {tool}"),
    }
}

impl GateError {
    /// True when the call never ran: the model called a name it was not offered, or one
    /// registered again since. It is the model's to correct; the other variants are ours.
    pub fn never_ran(&self) -> bool {
        matches!(self, GateError::Unknown { .. } | GateError::Stale { .. })
    }

    fn from_settle(error: SettleError, catalog: &Catalog) -> GateError {
        match error {
            SettleError::Unknown { name } => GateError::Unknown {
                tool: name,
                agent: catalog.agent.clone(),
                offered: catalog.names().to_vec(),
                denied: None,
            },
            SettleError::Stale { name } => GateError::Stale { tool: name },
            SettleError::Defect(defect) => GateError::Defect(defect),
            SettleError::Bound(bound) => GateError::Bound(bound),
        }
    }
}

/// One call as a model issued it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Call {
    /// The session it belongs to.
    pub session: String,
    /// The assistant message that issued it (doom loops are counted per message).
    pub message: String,
    /// The model's id for the call.
    pub id: String,
    /// The tool's name.
    pub tool: String,
    /// The input, as the model wrote it.
    pub input: Value,
}

impl Call {
    /// A call of `tool` with `input` in `session`, with fresh message and call ids.
    pub fn new(session: impl Into<String>, tool: impl Into<String>, input: Value) -> Self {
        Call {
            session: session.into(),
            message: toolgate_core::ascending_id("msg"),
            id: toolgate_core::ascending_id("call"),
            tool: tool.into(),
            input,
        }
    }

    /// The same call issued by the assistant message `message`.
    pub fn in_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    /// The same call under the model's call id `id`.
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }
}

/// A settled call: who called, what, and the settlement.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Settled {
    /// The context the tool ran with (session, agent, message and call ids).
    pub context: Context,
    /// The tool called.
    pub tool: String,
    /// What the call produced.
    pub settlement: Settlement,
}

/// One agent's catalog for one turn.
pub struct Catalog {
    agent: String,
    turn: Arc<Materialized>,
}

impl Catalog {
    /// The offered names, in registry order (no schema is built).
    pub fn names(&self) -> &[String] {
        self.turn.names()
    }

    /// The definitions the model is shown.
    pub fn definitions(&self) -> &[toolgate_core::ModelDefinition] {
        self.turn.definitions()
    }

    /// Whether `name` is offered.
    pub fn offers(&self, name: &str) -> bool {
        self.turn.offers(name)
    }
}

/// Starts what a catalog needs before it is built, given the tool about to be called (or
/// `None` for a whole catalog): tools that register lazily (an MCP server's) are
/// registered by the time it resolves.
pub type Prepare = Arc<dyn Fn(Option<String>) -> toolgate_core::BoxFuture<'static, ()> + Send + Sync>;

struct Inner {
    prepare: Option<Prepare>,
    changes: Option<watch::Receiver<u64>>,
    registry: ToolRegistry,
    permissions: PermissionService,
    _registrations: Vec<Registration>,
    doom_threshold: usize,
    events: broadcast::Sender<GateEvent>,
    spills: Option<OutputStore>,
    /// The spill cleanup, started by the first call made inside a tokio runtime.
    cleanup: OnceLock<Option<CleanupTask>>,
    /// The last catalog made for each agent, with the registry's change count it was
    /// made at: materializing one per call was a twentieth of a served call's time.
    catalogs: Mutex<HashMap<String, (u64, Arc<Materialized>)>>,
}

/// More agents than this in the catalog cache empty it (agents come from the config; a
/// front end that passes unchecked names must not grow it without end).
const MAX_CACHED_CATALOGS: usize = 64;

/// The pipeline every front end calls tools through. Cheap to clone.
#[derive(Clone)]
pub struct Gate {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("doom_threshold", &self.inner.doom_threshold)
            .finish_non_exhaustive()
    }
}

/// Configures a [`Gate`]; see [`Gate::builder`].
pub struct GateBuilder {
    prepare: Option<Prepare>,
    changes: Option<watch::Receiver<u64>>,
    registry: ToolRegistry,
    permissions: PermissionService,
    registrations: Vec<Registration>,
    doom_threshold: usize,
    spills: Option<OutputStore>,
}

impl GateBuilder {
    /// Keeps `registration` alive as long as the gate: its tools stay registered.
    pub fn hold(mut self, registration: Registration) -> Self {
        self.registrations.push(registration);
        self
    }

    /// How many identical calls in a row, in one assistant message, ask `doom_loop`
    /// (default [`DOOM_LOOP_THRESHOLD`]; at least 1).
    pub fn doom_loop_threshold(mut self, threshold: usize) -> Self {
        self.doom_threshold = threshold.max(1);
        self
    }

    /// Removes old spill files of `store` (older than 7 days) when the first call is
    /// made, then every hour, for as long as the gate lives.
    pub fn spills(mut self, store: OutputStore) -> Self {
        self.spills = Some(store);
        self
    }

    /// Runs `prepare` before [`Gate::run`] and [`Gate::prepared_catalog`] build a
    /// catalog (with the tool's name, or `None` for a whole catalog): what registers
    /// tools lazily (the MCP gateway) plugs in here.
    pub fn prepare(mut self, prepare: Prepare) -> Self {
        self.prepare = Some(prepare);
        self
    }

    /// A counter that ticks whenever registrations change after start (an MCP server's
    /// `list_changed`), for front ends that tell their clients ([`Gate::catalog_changes`]).
    pub fn catalog_changes(mut self, changes: watch::Receiver<u64>) -> Self {
        self.changes = Some(changes);
        self
    }

    /// The gate.
    pub fn build(self) -> Gate {
        let (events, _) = broadcast::channel(4096);
        Gate {
            inner: Arc::new(Inner {
                prepare: self.prepare,
                changes: self.changes,
                registry: self.registry,
                permissions: self.permissions,
                _registrations: self.registrations,
                doom_threshold: self.doom_threshold,
                events,
                spills: self.spills,
                cleanup: OnceLock::new(),
                catalogs: Mutex::new(HashMap::new()),
            }),
        }
    }
}

/// Records a call that is dropped before it settles as cancelled.
struct InFlight<'a> {
    gate: &'a Gate,
    context: &'a Context,
    tool: &'a str,
    finished: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        if let Some(audit) = self.gate.inner.permissions.audit() {
            audit.cancelled(&caller(self.context), self.tool);
        }
        self.gate.publish(GateEvent::Cancelled {
            session: self.context.session_id.clone(),
            call: self.context.tool_call_id.clone(),
            tool: self.tool.to_string(),
        });
    }
}

fn caller(context: &Context) -> Caller<'_> {
    Caller::new(&context.session_id, &context.agent, &context.tool_call_id)
}

impl Gate {
    /// A gate over `registry`, deciding visibility and permissions with `permissions`
    /// (and recording in its audit log, when it has one).
    pub fn builder(registry: ToolRegistry, permissions: PermissionService) -> GateBuilder {
        GateBuilder {
            prepare: None,
            changes: None,
            registry,
            permissions,
            registrations: Vec::new(),
            doom_threshold: DOOM_LOOP_THRESHOLD,
            spills: None,
        }
    }

    /// The permission service the gate decides with.
    pub fn permissions(&self) -> &PermissionService {
        &self.inner.permissions
    }

    /// The registry the gate settles with.
    pub fn registry(&self) -> &ToolRegistry {
        &self.inner.registry
    }

    /// Subscribes to the call events.
    pub fn subscribe(&self) -> broadcast::Receiver<GateEvent> {
        self.inner.events.subscribe()
    }

    fn publish(&self, event: GateEvent) {
        // No subscriber is fine: events are for whoever listens.
        let _ = self.inner.events.send(event);
    }

    /// Registers what is registered lazily (see [`GateBuilder::prepare`]) before a
    /// catalog: all of it for `None`, or what may own `tool`. Without a prepare hook it
    /// does nothing.
    async fn prepare(&self, tool: Option<&str>) {
        if let Some(prepare) = &self.inner.prepare {
            prepare(tool.map(str::to_string)).await;
        }
    }

    /// The whole catalog `agent` is offered, with every lazily registered tool up first
    /// (the MCP gateway starts its servers): what a front end lists (`toolgate tools`,
    /// `GET /tool`, MCP `tools/list`). [`Gate::catalog`] is the same without preparing.
    pub async fn prepared_catalog(&self, agent: &str) -> Catalog {
        self.prepare(None).await;
        self.catalog(agent)
    }

    /// One call, start to end, for a front end that has no catalog of its own: prepares
    /// what may own the tool (an MCP server starts), makes `agent`'s catalog, and settles
    /// the call against it as [`Gate::call`] does.
    ///
    /// `Err` when the call never ran ([`GateError::Unknown`] with what the agent is
    /// offered, [`GateError::Stale`]) or ended without a settlement
    /// ([`GateError::Defect`], [`GateError::Bound`]); every outcome is in the audit log.
    /// Dropping the future cancels the call.
    pub async fn run(&self, agent: &str, call: Call) -> Result<Settled, GateError> {
        self.prepare(Some(&call.tool)).await;
        let catalog = self.catalog(agent);
        self.call(&catalog, call).await
    }

    /// Ticks when registrations change after start; `None` when nothing can change them.
    pub fn catalog_changes(&self) -> Option<watch::Receiver<u64>> {
        self.inner.changes.clone()
    }

    /// The catalog `agent` is offered this turn: tools whose action the agent's rules
    /// wholly deny are hidden (visibility only; every call is still checked).
    ///
    /// The catalog is made again only when registrations changed since the last one for
    /// this agent (an agent's rules are fixed for the gate's life); a call against an
    /// older catalog whose tool was re-registered meanwhile is still refused as stale.
    pub fn catalog(&self, agent: &str) -> Catalog {
        // Read before materializing: a change racing with it leaves the cached catalog
        // under the older count, so the next call makes a new one.
        let changes = self.inner.registry.changes();
        let cached = self
            .inner
            .catalogs
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .get(agent)
            .filter(|(made_at, _)| *made_at == changes)
            .map(|(_, turn)| Arc::clone(turn));
        let turn = match cached {
            Some(turn) => turn,
            None => {
                let permissions = self.inner.permissions.clone();
                let rules_of = agent.to_string();
                let turn = Arc::new(
                    self.inner
                        .registry
                        .materialize(move |action| permissions.hides(&rules_of, action)),
                );
                let mut catalogs = self.inner.catalogs.lock().unwrap_or_else(|poison| poison.into_inner());
                if catalogs.len() >= MAX_CACHED_CATALOGS && !catalogs.contains_key(agent) {
                    catalogs.clear();
                }
                catalogs.insert(agent.to_string(), (changes, Arc::clone(&turn)));
                turn
            }
        };
        Catalog {
            agent: agent.to_string(),
            turn,
        }
    }

    /// Starts the spill cleanup (old spill files removed now, then every hour) on the
    /// current tokio runtime, once per gate; later calls do nothing. The first call
    /// starts it anyway: long-running front ends (servers) call this at start, so a
    /// server that is never called still cleans up.
    pub fn start_upkeep(&self) {
        self.inner.cleanup.get_or_init(|| {
            let store = self.inner.spills.as_ref()?;
            let runtime = tokio::runtime::Handle::try_current().ok()?;
            Some(store.spawn_cleanup(&runtime))
        });
    }

    /// Settles `call` against `catalog` (the one the model was shown this turn),
    /// recording it from start to end; [`Gate::run`] makes the catalog itself.
    ///
    /// `Err` when the call never ran ([`GateError::Unknown`], [`GateError::Stale`])
    /// or ended without a settlement ([`GateError::Defect`], [`GateError::Bound`]);
    /// every outcome is in the audit log. Dropping the future cancels the call and
    /// records it as cancelled.
    pub async fn call(&self, catalog: &Catalog, call: Call) -> Result<Settled, GateError> {
        self.start_upkeep();
        let context = Context::new(call.session.clone(), catalog.agent.clone()).with_call(&call.message, &call.id);
        let audit = self.inner.permissions.audit();
        if !catalog.offers(&call.tool) {
            let mut error = GateError::from_settle(
                SettleError::Unknown {
                    name: call.tool.clone(),
                },
                catalog,
            );
            // A tool the rules hide is denied, not unknown: say which rule hides it.
            if let (Some(action), GateError::Unknown { denied, .. }) =
                (catalog.turn.hidden_action(&call.tool), &mut error)
            {
                *denied = self.inner.permissions.hidden_by(&catalog.agent, action).or_else(|| {
                    Some(toolgate_core::RuleRef {
                        action: action.to_string(),
                        resource: "*".into(),
                        effect: "deny".into(),
                        source: None,
                    })
                });
            }
            // Nothing ran: the refusal is the whole record.
            if let Some(audit) = audit {
                audit.settled(&caller(&context), &call.tool, Some(&error.to_string()), &[]);
            }
            return Err(error);
        }
        if let Some(audit) = audit {
            audit.begin_call(&context.tool_call_id, &call.tool);
        }
        self.publish(GateEvent::Started {
            session: context.session_id.clone(),
            call: context.tool_call_id.clone(),
            tool: call.tool.clone(),
        });
        let mut in_flight = InFlight {
            gate: self,
            context: &context,
            tool: &call.tool,
            finished: false,
        };
        // The same tool with the same input, again and again in one message, asks
        // `doom_loop` first (spec §4.11); the permission service keeps the streaks.
        let doom = self
            .inner
            .permissions
            .doom_loop(&context, self.inner.doom_threshold, &call.tool, &call.input)
            .await;
        let settled = match doom {
            Ok(()) => catalog.turn.settle(&call.tool, call.input, context.clone()).await,
            Err(refusal) => Ok(Settlement::failed(&ToolFailure::from(refusal))),
        };
        in_flight.finished = true;
        match &settled {
            Ok(settlement) => {
                let error = match &settlement.result {
                    ModelResult::Error(message) => Some(message.as_str()),
                    _ => None,
                };
                if let Some(audit) = audit {
                    audit.settled_redacted(
                        &caller(&context),
                        &call.tool,
                        error,
                        &settlement.output_paths,
                        &settlement.redactions,
                    );
                }
                self.publish(GateEvent::Settled {
                    session: context.session_id.clone(),
                    call: context.tool_call_id.clone(),
                    tool: call.tool.clone(),
                    result: settlement.result.clone(),
                    output_paths: settlement.output_paths.clone(),
                    declined: settlement.is_declined(),
                });
            }
            Err(error) => {
                let text = error.to_string();
                if let Some(audit) = audit {
                    audit.settled(&caller(&context), &call.tool, Some(&text), &[]);
                }
                self.publish(GateEvent::Failed {
                    session: context.session_id.clone(),
                    call: context.tool_call_id.clone(),
                    tool: call.tool.clone(),
                    error: text,
                });
            }
        }
        drop(in_flight);
        let settlement = settled.map_err(|error| GateError::from_settle(error, catalog))?;
        Ok(Settled {
            context,
            tool: call.tool,
            settlement,
        })
    }
}
