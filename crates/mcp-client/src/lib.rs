//! toolgate's MCP client: the tools of external MCP servers as toolgate tools.
//!
//! A [`Gateway`] holds the servers a user configured under OpenCode's `mcp` key
//! ([`config`]). It starts them lazily and in parallel — local ones as child processes in
//! their own process group (stdio), remote ones over streamable HTTP with a fallback to
//! the older HTTP+SSE transport — and registers each of their tools through a
//! [`ToolSink`] as `<server>_<tool>` ([`names`]). Every such tool:
//! - validates its input against the server's JSON Schema before anything is sent
//!   (`Invalid tool input: …`);
//! - asks permission as its registered name on resource `*` ("always" saves `*`), the
//!   server's annotations shown in the ask but never deciding;
//! - maps the result ([`content`]): `isError` is a failure with the server's text,
//!   `structuredContent` the structured output;
//! - fails with the server's name and the timeout when the request timeout passes, and
//!   sends `notifications/cancelled` when the call is dropped.
//!
//! `notifications/tools/list_changed` re-lists and replaces the server's registrations
//! ([`Gateway::changes`] ticks); elicitation requests go to the [`Elicitor`] the front
//! end installs; a crashed stdio server is restarted once on the next call, then
//! reported. This crate depends on `toolgate-core` alone: the registry is reached
//! through the sink.

pub mod config;
pub mod content;
pub mod elicitation;
mod gateway;
pub mod names;
mod sse;

pub use config::{Launch, ServerConfig};
pub use elicitation::{AcceptDefaults, DeclineAll, Elicitation, ElicitationAnswer, Elicitor};
pub use gateway::{Gateway, Options, ServerReport, State, ToolReport, ToolSink};
