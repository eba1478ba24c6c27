//! Tool registrations and the per-turn catalog.
//!
//! Two layers hold registrations: [`ApplicationTools`] for the whole process and a
//! [`ToolRegistry`] per location (working directory). Each `register` call returns a
//! [`Registration`] guard; dropping it removes exactly that registration and reveals the
//! one below. A location registration beats an application registration of the same name.
//!
//! Each turn calls [`ToolRegistry::materialize`]: it returns the catalog the model is
//! offered and captures which registration each name had. [`Materialized::settle`] then
//! refuses a call whose registration changed since ([`SettleError::Stale`], shown to a
//! model as `Stale tool call: NAME`) rather than run it on another implementation, and
//! passes every successful output through the [`OutputBound`].
//!
//! ```
//! use std::sync::Arc;
//! use toolgate_registry::{ApplicationTools, ToolRegistry};
//! use toolgate_core::{Bounded, BoundError, BoxFuture, Context, ModelResult, OutputBound, Tool, ToolFailure, ToolOutput};
//!
//! struct PassThrough;
//! impl OutputBound for PassThrough {
//!     fn bound<'a>(&'a self, _: &'a Context, output: ToolOutput) -> BoxFuture<'a, Result<Bounded, BoundError>> {
//!         Box::pin(async move { Ok(Bounded::new(output, Vec::new())) })
//!     }
//! }
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Echo { text: String }
//! let echo = Tool::builder("Echo.", |i: Echo, _: Context| async move { Ok::<_, ToolFailure>(i.text) }).build();
//!
//! let app = ApplicationTools::new();
//! let registry = ToolRegistry::new(&app, Arc::new(PassThrough));
//! let _guard = registry.register([("echo", echo)]).unwrap();
//!
//! let turn = registry.materialize(|_action| false);
//! assert_eq!(turn.definitions()[0].name, "echo");
//! # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! let settled = rt.block_on(turn.settle("echo", serde_json::json!({"text": "hi"}), Context::default())).unwrap();
//! assert_eq!(settled.result, ModelResult::Text("hi".into()));
//! ```

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use indexmap::IndexMap;
use serde_json::Value;

/// Every registration gets a fresh identity, even for the same tool value, so that a
/// re-registration makes calls captured before it stale.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// Why a registration was refused. Nothing is registered when this is returned.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistrationError {
    /// The name does not match `^[A-Za-z][A-Za-z0-9_-]{0,63}$`.
    #[error("Invalid tool name: {name}")]
    InvalidName {
        /// The rejected name.
        name: String,
    },
    /// The same name appears twice in one registration.
    #[error("Duplicate tool name in one registration: {name}")]
    Duplicate {
        /// The repeated name.
        name: String,
    },
}

/// Checks a tool name against `^[A-Za-z][A-Za-z0-9_-]{0,63}$` (spec §1.6).
fn valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    matches!(bytes.first(), Some(b) if b.is_ascii_alphabetic())
        && bytes.len() <= 64
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
}

#[derive(Clone)]
struct Entry {
    token: u64,
    identity: u64,
    tool: Tool,
}

/// One layer: per name, a stack of registrations, names in first-insertion order.
#[derive(Default)]
struct Layer {
    names: Mutex<IndexMap<String, Vec<Entry>>>,
    /// Ticks after every registration and unregistration, once the layer has changed.
    changes: AtomicU64,
}

impl Layer {
    fn lock(&self) -> MutexGuard<'_, IndexMap<String, Vec<Entry>>> {
        // A panic while holding this lock cannot leave a half-applied registration (each
        // critical section is a single push or retain), so the data stays usable.
        self.names.lock().unwrap_or_else(|poison| poison.into_inner())
    }

    fn top(&self, name: &str) -> Option<u64> {
        self.lock()
            .get(name)
            .and_then(|stack| stack.last())
            .map(|entry| entry.identity)
    }

    fn register<N: Into<String>>(
        self: &Arc<Self>,
        record: impl IntoIterator<Item = (N, Tool)>,
    ) -> Result<Registration, RegistrationError> {
        // Validate everything before touching the layer: a record registers whole or not at all.
        let mut entries: IndexMap<String, Tool> = IndexMap::new();
        for (name, tool) in record {
            let name = name.into();
            if !valid_name(&name) {
                return Err(RegistrationError::InvalidName { name });
            }
            if entries.contains_key(&name) {
                return Err(RegistrationError::Duplicate { name });
            }
            entries.insert(name, tool);
        }
        let token = next_id();
        let mut names = self.lock();
        for (name, tool) in &entries {
            names.entry(name.clone()).or_default().push(Entry {
                token,
                identity: next_id(),
                tool: tool.clone(),
            });
        }
        self.changes.fetch_add(1, Ordering::SeqCst);
        drop(names);
        Ok(Registration {
            layer: Arc::clone(self),
            token,
            names: entries.into_keys().collect(),
        })
    }
}

/// A live registration. Dropping it removes exactly the tools it registered and reveals
/// whatever was registered under those names before.
#[must_use = "dropping the registration unregisters its tools at once"]
pub struct Registration {
    layer: Arc<Layer>,
    token: u64,
    names: Vec<String>,
}

impl std::fmt::Debug for Registration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registration").field("names", &self.names).finish()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut names = self.layer.lock();
        for name in &self.names {
            if let Some(stack) = names.get_mut(name) {
                stack.retain(|entry| entry.token != self.token);
                if stack.is_empty() {
                    names.shift_remove(name);
                }
            }
        }
        self.layer.changes.fetch_add(1, Ordering::SeqCst);
    }
}

/// Process-level registrations, shared by every location. Cheap to clone.
#[derive(Clone, Default)]
pub struct ApplicationTools {
    layer: Arc<Layer>,
}

impl ApplicationTools {
    /// An empty application layer.
    pub fn new() -> Self {
        ApplicationTools::default()
    }

    /// Registers a record of name → tool; see [`ToolRegistry::register`].
    pub fn register<N: Into<String>>(
        &self,
        record: impl IntoIterator<Item = (N, Tool)>,
    ) -> Result<Registration, RegistrationError> {
        self.layer.register(record)
    }
}

/// The registry of one location, layered over the application tools. Cheap to clone.
#[derive(Clone)]
pub struct ToolRegistry {
    application: Arc<Layer>,
    location: Arc<Layer>,
    bound: Arc<dyn OutputBound>,
}

impl ToolRegistry {
    /// A location registry over `application`, bounding every output with `bound`.
    pub fn new(application: &ApplicationTools, bound: Arc<dyn OutputBound>) -> Self {
        ToolRegistry {
            application: Arc::clone(&application.layer),
            location: Arc::new(Layer::default()),
            bound,
        }
    }

    /// Registers a record of name → tool at this location.
    ///
    /// Every name is checked first; on any invalid name nothing is registered. The guard
    /// keeps the tools registered; drop it to remove them.
    pub fn register<N: Into<String>>(
        &self,
        record: impl IntoIterator<Item = (N, Tool)>,
    ) -> Result<Registration, RegistrationError> {
        self.location.register(record)
    }

    /// A counter that grows whenever a registration is added to or removed from this
    /// registry or the application layer under it: a catalog materialized when it read
    /// `n` offers exactly what a new one would for as long as it still reads `n` (given
    /// the same `hidden`), so front ends may keep it. A kept catalog is no less safe: its
    /// settle still refuses a call whose registration changed ([`SettleError::Stale`]).
    pub fn changes(&self) -> u64 {
        self.application.changes.load(Ordering::SeqCst) + self.location.changes.load(Ordering::SeqCst)
    }

    /// The catalog for one turn.
    ///
    /// `hidden(action)` answers "is this permission action wholly denied" (spec §2.4);
    /// hidden tools are left out of the catalog. This is visibility, not authorisation:
    /// the permission checks happen inside each tool.
    pub fn materialize(&self, hidden: impl Fn(&str) -> bool) -> Materialized {
        let mut effective: IndexMap<String, Entry> = IndexMap::new();
        for (name, stack) in self.location.lock().iter() {
            if let Some(top) = stack.last() {
                effective.insert(name.clone(), top.clone());
            }
        }
        for (name, stack) in self.application.lock().iter() {
            if let (false, Some(top)) = (effective.contains_key(name), stack.last()) {
                effective.insert(name.clone(), top.clone());
            }
        }
        let mut names = Vec::with_capacity(effective.len());
        let mut captured = HashMap::with_capacity(effective.len());
        let mut withheld = HashMap::new();
        for (name, entry) in effective {
            let action = entry.tool.permission_action(&name);
            if hidden(action) {
                withheld.insert(name.clone(), action.to_string());
                continue;
            }
            names.push(name.clone());
            captured.insert(name, (entry.identity, entry.tool));
        }
        Materialized {
            names,
            definitions: OnceLock::new(),
            captured,
            withheld,
            registry: self.clone(),
        }
    }

    fn current_identity(&self, name: &str) -> Option<u64> {
        self.location.top(name).or_else(|| self.application.top(name))
    }
}

/// What settling a call produced for the model.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Settlement {
    /// What the model sees.
    pub result: ModelResult,
    /// The bounded output, on success only.
    pub output: Option<ToolOutput>,
    /// Files holding output that was cut; empty when nothing was.
    pub output_paths: Vec<PathBuf>,
    /// The permission refusal behind a failed call, if that was the cause.
    pub refusal: Option<Refusal>,
    /// What the output bound redacted from what the model sees (kinds and counts).
    pub redactions: Vec<Redaction>,
}

impl Settlement {
    /// The settlement of a call that failed with `failure`: the model sees its message,
    /// and a permission refusal behind it is kept. For a caller that refuses a call
    /// before it reaches the registry (a doom-loop check) and reports it as the tool's
    /// answer.
    pub fn failed(failure: &ToolFailure) -> Self {
        Settlement {
            result: ModelResult::Error(failure.message().to_string()),
            output: None,
            output_paths: Vec::new(),
            refusal: failure.refusal().cloned(),
            redactions: Vec::new(),
        }
    }

    /// True when a person declined a permission during the call: stop the agent loop.
    pub fn is_declined(&self) -> bool {
        self.refusal.as_ref().is_some_and(Refusal::stops_loop)
    }
}

/// Why settle could not produce a settlement: the call never ran ([`SettleError::Unknown`],
/// [`SettleError::Stale`]; tell the model with the error's text), or it ran and something
/// that is not the tool's answer went wrong ([`SettleError::Defect`], [`SettleError::Bound`]).
///
/// Exhaustive on purpose: the gate maps each kind to its own error, and a new kind must
/// be handled there, not fall into a wildcard arm.
#[derive(Debug, thiserror::Error)]
pub enum SettleError {
    /// The name was not offered in this turn's catalog.
    #[error("Unknown tool: {name}")]
    Unknown {
        /// The name the model called.
        name: String,
    },
    /// The name's registration was removed or replaced since the catalog was made.
    #[error("Stale tool call: {name}")]
    Stale {
        /// The name the model called.
        name: String,
    },
    /// The executor panicked.
    #[error(transparent)]
    Defect(#[from] Defect),
    /// The output could not be bounded (a failed spill, oversized media).
    #[error(transparent)]
    Bound(#[from] BoundError),
}

/// One turn's catalog and the registrations it captured.
pub struct Materialized {
    names: Vec<String>,
    /// Built on first use: a call that only settles never builds a schema.
    definitions: OnceLock<Vec<ModelDefinition>>,
    captured: HashMap<String, (u64, Tool)>,
    /// Tools left out because their action is wholly denied: name → action.
    withheld: HashMap<String, String>,
    registry: ToolRegistry,
}

impl Materialized {
    /// The tools offered to the model, in registry order.
    pub fn definitions(&self) -> &[ModelDefinition] {
        self.definitions.get_or_init(|| {
            self.names
                .iter()
                .filter_map(|name| self.captured.get(name).map(|(_, tool)| tool.definition(name)))
                .collect()
        })
    }

    /// The names offered to the model, in registry order (no schema is built).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Whether `name` is offered in this catalog.
    pub fn offers(&self, name: &str) -> bool {
        self.captured.contains_key(name)
    }

    /// The permission action of `name` when it is registered but left out of this
    /// catalog because the rules wholly deny that action (spec §2.4): a call of it is
    /// denied, not unknown.
    pub fn hidden_action(&self, name: &str) -> Option<&str> {
        self.withheld.get(name).map(String::as_str)
    }

    /// Settles one call against this turn's catalog.
    ///
    /// [`SettleError::Unknown`] when the name was not offered; [`SettleError::Stale`] when
    /// its registration was removed or replaced since materialize. Once these checks
    /// pass, the call runs on the captured tool whatever happens to registrations
    /// meanwhile. Every successful output goes through the output bound.
    pub async fn settle(&self, name: &str, input: Value, ctx: Context) -> Result<Settlement, SettleError> {
        let Some((identity, tool)) = self.captured.get(name) else {
            return Err(SettleError::Unknown { name: name.to_string() });
        };
        if self.registry.current_identity(name) != Some(*identity) {
            return Err(SettleError::Stale { name: name.to_string() });
        }
        let tool = tool.clone();
        match tool.settle(input, ctx.clone()).await? {
            Err(failure) => {
                let mut settlement = Settlement::failed(&failure);
                // A failure's message reaches the model too: the same redaction.
                if let Some((message, redactions)) = self.registry.bound.redact_message(failure.message()) {
                    settlement.result = ModelResult::Error(message);
                    settlement.redactions = redactions;
                }
                Ok(settlement)
            }
            Ok(output) => {
                let bounded = self.registry.bound.bound(&ctx, output).await?;
                Ok(Settlement {
                    result: ModelResult::from_output(&bounded.output),
                    output: Some(bounded.output),
                    output_paths: bounded.output_paths,
                    refusal: None,
                    redactions: bounded.redactions,
                })
            }
        }
    }
}

// The items of other toolgate crates that this crate's signatures name, and those crates
// whole, so that this crate alone is a sufficient dependency (ARCHITECTURE.md, "Re-exports").
#[doc(no_inline)]
pub use toolgate_core;
pub use toolgate_core::{
    BoundError, Context, Defect, ModelDefinition, ModelResult, OutputBound, Redaction, Refusal, Tool, ToolFailure,
    ToolOutput,
};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
