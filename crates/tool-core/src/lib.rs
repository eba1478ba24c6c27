//! The tool contract every toolgate crate speaks.
//!
//! A tool is one opaque handle built from a description, an input type, an output type
//! and an async `execute` closure ([`Tool::builder`]) — or, for tools whose schema is
//! known only at run time (an MCP server's), from a JSON Schema and a validator
//! ([`Tool::from_schema`]). Every call is settled in one fixed
//! order — decode input, execute, encode output, project to model content — so invalid
//! input never runs the tool and an output that cannot be encoded is never a success.
//!
//! This crate also holds the traits that cross crate boundaries, so that the registry and
//! the builtins depend on it alone:
//! - [`Permissions`]: what a tool calls to ask before it acts ([`AllowAll`] and [`DenyAll`]
//!   for embedders and tests that decide nothing);
//! - [`OutputBound`]: what the registry calls on every successful output;
//! - [`Location`]: the directory a call runs in and the one resolution of a model's path;
//! - [`ascending_id`]: the ids (`per_…`, `tool_…`) the crates stamp on what they record.
//!
//! ```
//! use toolgate_core::{Context, ModelResult, Tool, ToolFailure};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add { a: i64, b: i64 }
//!
//! let add = Tool::builder("Add two numbers.", |input: Add, _ctx: Context| async move {
//!     Ok::<_, ToolFailure>(format!("{}", input.a + input.b))
//! })
//! .build();
//!
//! let ctx = Context::new("ses_1", "build");
//! let run = add.settle(serde_json::json!({"a": 2, "b": 3}), ctx.clone());
//! let output = block_on(run).unwrap().unwrap();
//! assert_eq!(ModelResult::from_output(&output), ModelResult::Text("5".into()));
//!
//! // Invalid input never reaches the executor.
//! let bad = block_on(add.settle(serde_json::json!({"a": 2}), ctx)).unwrap();
//! assert_eq!(bad.unwrap_err().message(), "Invalid tool input: missing field `b`");
//! # fn block_on<F: std::future::Future>(f: F) -> F::Output {
//! #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
//! # }
//! ```

mod bound;
mod content;
mod context;
mod future;
mod id;
mod location;
mod permissions;
mod resource;
mod schema;
mod tool;

pub use bound::{BoundError, Bounded, OutputBound, Redaction};
pub use content::{Content, ModelResult, ToolOutput};
pub use context::Context;
pub use future::BoxFuture;
pub use id::ascending_id;
pub use location::{ExternalDirectory, Location, PathError, PathKind, ResolvedPath};
pub use permissions::{
    AllowAll, DenyAll, PermissionRequest, Permissions, Refusal, ResourceKind, RuleDecision, RuleRef, Verdict,
};
pub use resource::{Hole, HoleClass, Resource, Segment};
pub use tool::{Annotations, Defect, ModelDefinition, Outcome, SchemaToolBuilder, Tool, ToolBuilder, ToolFailure};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
