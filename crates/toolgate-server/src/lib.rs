//! The servers of the `toolgate` binary: the HTTP API with server-sent events, and MCP
//! over stdio.
//!
//! They take ready-made [`Parts`] — a registry with its tools, the permission service,
//! the question service — so this crate depends on no tool crate: editing a tool does not
//! rebuild the axum router or the rmcp handler.
//!
//! ```
//! let token = toolgate_server::http::random_token();
//! assert_eq!(token.len(), 28);
//! ```

pub mod http;
pub mod mcp;

/// What both servers serve.
#[derive(Clone)]
pub struct Parts {
    /// The registry, with every tool registered.
    pub registry: toolgate_registry::ToolRegistry,
    /// Decides and asks.
    pub service: toolgate_permission::PermissionService,
    /// Pending questions.
    pub questions: toolgate_builtins_session::QuestionService,
    /// The default agent.
    pub agent: String,
}
