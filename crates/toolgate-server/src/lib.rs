//! The servers of the `toolgate` binary: the HTTP API with server-sent events and MCP
//! over streamable HTTP (`toolgate serve`), and MCP over stdio (`toolgate mcp`).
//!
//! They take ready-made [`Parts`] — a [`toolgate_gate::Gate`] over a registry with its
//! tools and the permission service, and the question service — and settle every call
//! through the gate, like any other front end. This crate depends on no tool crate:
//! editing a tool does not rebuild the axum router or the rmcp handler.
//!
//! ```
//! let token = toolgate_server::http::random_token().unwrap();
//! assert_eq!(token.len(), 43);
//! ```

pub mod http;
pub mod listen;
pub mod mcp;
mod wire;

/// What both servers serve.
#[derive(Clone)]
pub struct Parts {
    /// The call pipeline: registry, permission service, audit, events.
    pub gate: toolgate_gate::Gate,
    /// Pending questions.
    pub questions: toolgate_builtins_session::QuestionService,
    /// The default agent.
    pub agent: String,
}

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
