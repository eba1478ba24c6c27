//! One pipeline for every tool call, whatever the front end.
//!
//! A [`Gate`] owns a call from the catalog to its settled record:
//!
//! 1. [`Gate::catalog`] materializes the agent's catalog for this turn (tools whose
//!    action the agent's rules wholly deny are hidden);
//! 2. [`Gate::call`] records the start (audit, [`GateEvent::Started`]), checks for a
//!    doom loop (the same call repeated in one assistant message asks `doom_loop`),
//!    settles the call with the registry (decode, permissions, execute, output bound),
//!    and records the end (audit `settled`, [`GateEvent::Settled`] or
//!    [`GateEvent::Failed`]);
//! 3. a call whose future is dropped before it settles is recorded as `cancelled`
//!    (audit and [`GateEvent::Cancelled`]): nothing it began is left behind;
//! 4. the first call starts the spill cleanup of the process (old spill files removed at
//!    once, then every hour), when the gate was given the output store.
//!
//! A front end without a catalog of its own (a CLI call, an HTTP request, an MCP
//! `tools/call`) calls [`Gate::run`]: it prepares what may own the tool (an MCP server
//! starts), makes the agent's catalog and settles, in one step. A name the catalog does
//! not offer, or whose registration changed since, comes back as [`GateError::Unknown`]
//! (with what the agent is offered) / [`GateError::Stale`]: typed, so a front end decides
//! how to say it (a usage error, a 400, a message to the model).
//!
//! ```
//! use std::sync::Arc;
//! use toolgate_core::{Context, ModelResult, Tool, ToolFailure};
//! use toolgate_gate::{Call, Gate};
//! use toolgate_permission::{AgentSettings, Agents, AskMode, PermissionService};
//! use toolgate_registry::{ApplicationTools, ToolRegistry};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Echo { text: String }
//!
//! # let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
//! # rt.block_on(async {
//! let data = tempfile::tempdir().unwrap();
//! let store = toolgate_output_store::OutputStore::new(data.path());
//! let registry = ToolRegistry::new(&ApplicationTools::new(), Arc::new(store.clone()));
//! let echo = Tool::builder("Echo.", |i: Echo, _: Context| async move { Ok::<_, ToolFailure>(i.text) }).build();
//! let registration = registry.register([("echo", echo)]).unwrap();
//!
//! let agents = Agents::build(&AgentSettings::default()).unwrap();
//! let permissions = PermissionService::builder(agents, "/project").mode(AskMode::Headless).build();
//! let gate = Gate::builder(registry, permissions).hold(registration).spills(store).build();
//!
//! let catalog = gate.catalog("build");
//! assert_eq!(catalog.names(), ["echo"]);
//! let settled = gate.call(&catalog, Call::new("ses_1", "echo", serde_json::json!({"text": "hi"}))).await.unwrap();
//! assert_eq!(settled.settlement.result, ModelResult::Text("hi".into()));
//!
//! let unknown = gate.call(&catalog, Call::new("ses_1", "nope", serde_json::json!({}))).await.unwrap_err();
//! assert_eq!(unknown.to_string(), "Unknown tool: nope");
//! # });
//! ```

mod gate;

pub use gate::{Call, Catalog, Gate, GateBuilder, GateError, GateEvent, Prepare, Settled};

// The items of other toolgate crates that this crate's signatures name, and those crates
// whole, so that this crate alone is a sufficient dependency (ARCHITECTURE.md, "Re-exports").
#[doc(no_inline)]
pub use toolgate_core;
pub use toolgate_core::{BoundError, BoxFuture, Context, Defect, ModelDefinition, ModelResult};
#[doc(no_inline)]
pub use toolgate_output_store;
pub use toolgate_output_store::OutputStore;
#[doc(no_inline)]
pub use toolgate_permission;
pub use toolgate_permission::PermissionService;
#[doc(no_inline)]
pub use toolgate_registry;
pub use toolgate_registry::{Registration, Settlement, ToolRegistry};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
