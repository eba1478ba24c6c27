//! Permission rules and the ask/reply service.
//!
//! A rule is `(action, resource, effect)`; rule sets are ordered and the **last** matching
//! rule wins; no match means ask. Patterns use OpenCode's wildcard (`*` any run, `?` one
//! character, `git *` also matches `git`) and are compiled once when rules load. [`Agents`] builds each agent's rule set from the
//! defaults, the built-in agent rules, the user's config, the agent's own config and the
//! managed layer. [`PermissionService`] implements [`toolgate_core::Permissions`]: it blocks
//! what a configured rule denies, allows what rules or saved approvals allow, and asks a
//! person (or auto-approves, or declines when no one can answer) for the rest. "Always"
//! answers are saved in an [`ApprovalStore`] — SQLite (`SqliteStore`, feature `sqlite`, on
//! by default) or memory ([`MemoryStore`]) — and can never override a configured deny.
//!
//! ```
//! use toolgate_permission::{AgentSettings, Agents, Effect};
//!
//! let settings = AgentSettings::default()
//!     .with_permission(serde_json::json!({"bash": {"*": "ask", "git status*": "allow", "rm *": "deny"}}));
//! let agents = Agents::build(&settings).unwrap();
//! let build = &agents.get("build").unwrap().rules;
//! assert_eq!(build.evaluate("bash", "git status --short").effect, Effect::Allow);
//! assert_eq!(build.evaluate("bash", "rm -rf /").effect, Effect::Deny);
//! assert_eq!(build.evaluate("bash", "cargo build").effect, Effect::Ask);
//! ```

mod agents;
mod audit;
mod config;
mod denied;
mod doom;
mod holed;
mod rules;
mod service;
mod spelled;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;
mod wildcard;

pub use agents::{Agent, AgentBlock, AgentError, AgentSettings, Agents, ConfigLayer, Mode, PACKAGE_CACHES};
pub use audit::{
    AuditLog, AuditQuery, AuthFailure, Broken, Caller, DecisionRecord, DecisionSource, MAX_FIELD_BYTES,
    MAX_RESOURCE_BYTES, Retention, Shadow, Verified, rfc3339, verify_audit,
};
pub use config::{ConfigError, deep_merge, expand_home, key_path, rules_from_config};
pub use denied::{WALK_BUDGET, WalkBudgetExceeded, denied_paths, withheld_paths};
pub use doom::{DOOM_LOOP_THRESHOLD, DoomLoop, DoomMemory};
pub use holed::decide_resource;
pub use rules::{Decision, Effect, Origin, Rule, Ruleset, combine};
pub use service::{
    AskMode, Event, Explanation, PermissionService, PermissionServiceBuilder, Reply, ReplyError, Request, Source,
    asked_save,
};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;
pub use store::{Approval, ApprovalStore, MemoryStore, StoreError, project_id};

// The items of other toolgate crates that this crate's signatures name, and those crates
// whole, so that this crate alone is a sufficient dependency (ARCHITECTURE.md, "Re-exports").
#[doc(no_inline)]
pub use toolgate_core;
pub use toolgate_core::{BoxFuture, Context, PermissionRequest, Permissions, Refusal, Resource};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
