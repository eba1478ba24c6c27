//! toolgate's MCP client: the tools of external MCP servers as toolgate tools.
//!
//! A [`Gateway`] holds the servers a user configured under OpenCode's `mcp` key (read by
//! `toolgate-config`; each is a [`ServerConfig`]). It starts them lazily and in parallel — local ones as child processes in
//! their own process group (stdio), remote ones over streamable HTTP with a fallback to
//! the older HTTP+SSE transport; each connection agrees on its MCP version, 2026-07-28
//! through `server/discover` or an older one through `initialize` — and registers each of
//! their tools through a
//! [`ToolSink`] as `<server>_<tool>` ([`tool_name`]). Every such tool:
//! - validates its input against the server's JSON Schema before anything is sent
//!   (`Invalid tool input: …`);
//! - asks permission as its registered name on resource `*` ("always" saves `*`), the
//!   server's annotations shown in the ask but never deciding;
//! - maps the result: `isError` is a failure with the server's text,
//!   `structuredContent` the structured output;
//! - fails with the server's name and the timeout when the request timeout passes, and
//!   sends `notifications/cancelled` when the call is dropped.
//!
//! `notifications/tools/list_changed` re-lists and replaces the server's registrations
//! ([`Gateway::changes`] ticks); elicitation requests go to the [`Elicitor`] the front
//! end installs; a crashed stdio server is restarted once on the next call, then
//! reported. This crate depends on `toolgate-core` alone: the registry is reached
//! through the sink.
//!
//! ```
//! # let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
//! # rt.block_on(async {
//! use std::sync::{Arc, Mutex};
//! use toolgate_mcp_client::toolgate_core::AllowAll;
//! use toolgate_mcp_client::{Gateway, Launch, Options, ServerConfig, State, Tool, ToolSink};
//!
//! // Where the tools go: a consumer's registry; here a list of names.
//! #[derive(Default)]
//! struct Names(Mutex<Vec<String>>);
//! impl ToolSink for Names {
//!     fn register(&self, name: &str, _: Tool) -> Result<(), String> {
//!         self.0.lock().unwrap().push(name.to_string());
//!         Ok(())
//!     }
//!     fn unregister(&self, name: &str) {
//!         self.0.lock().unwrap().retain(|n| n != name);
//!     }
//! }
//!
//! let project = tempfile::tempdir().unwrap();
//! let calc = Launch::Local { command: vec!["/nonexistent/calc-server".into()], environment: vec![], cwd: None };
//! let docs = Launch::Remote { url: "https://docs.example.com/mcp".into(), headers: vec![] };
//! let servers = vec![ServerConfig::new("calc", calc), ServerConfig::new("docs", docs).enabled(false)];
//! let options = Options::new(project.path(), project.path().join("logs"))
//!     .servers(servers)
//!     .reserved(vec!["read".into()]);
//! let gateway = Gateway::new(options, Arc::new(AllowAll), Arc::new(Names::default()));
//! gateway.start_all().await;
//! // A server that cannot start is reported, never fatal; a disabled one is not started.
//! let states: Vec<State> = gateway.report().iter().map(|server| server.state).collect();
//! assert_eq!(states, [State::Failed, State::Disabled]);
//! gateway.shutdown().await;
//! # });
//! ```

mod child;
mod config;
mod content;
mod elicitation;
mod gateway;
mod http;
mod names;
mod oauth;
mod pins;
mod sanitize;
mod schema;
mod sse;
mod stdio;

pub use child::LogLimits;
pub use config::{DEFAULT_REQUEST_TIMEOUT, DEFAULT_STARTUP_TIMEOUT, Launch, OAuth, ServerConfig};
pub use elicitation::{
    AcceptDefaults, DeclineAll, Elicitation, ElicitationAnswer, Elicitor, Field, FieldKind, fields, value_of,
};
pub use gateway::{Gateway, Options, PIN_ACTION, ServerReport, State, ToolReport, ToolSink};
pub use names::{NameError, tool_name};
pub use oauth::{DEFAULT_LOGIN_TIMEOUT, Login, LoginPrompt, OAuthError, SecretWatcher, TokenStore, login};
pub use pins::{PinError, PinStore, Pinned, ServerPins};

// The items of other toolgate crates that this crate's signatures name, and those crates
// whole, so that this crate alone is a sufficient dependency (ARCHITECTURE.md, "Re-exports").
#[doc(no_inline)]
pub use toolgate_core;
pub use toolgate_core::{BoxFuture, Context, Permissions, Tool};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
