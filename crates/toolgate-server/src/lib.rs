//! The servers of the `toolgate` binary: the HTTP API with server-sent events and MCP
//! over streamable HTTP (`toolgate serve`), and MCP over stdio (`toolgate mcp`).
//!
//! They take ready-made [`Parts`] — a [`toolgate_gate::Gate`] over a registry with its
//! tools and the permission service, and the question service — and settle every call
//! through the gate, like any other front end. This crate depends on no tool crate:
//! editing a tool does not rebuild the axum router or the rmcp handler.
//!
//! The API: [`serve_http`] (with [`HttpOptions`], [`HostRule`] and the listener's
//! [`Limits`]), [`serve_stdio`] (with the [`ClientHandle`] through which a front end
//! elicits from the connected client), the token helpers, and [`serve_router`], the
//! accept loop with timeouts and a connection cap under any axum router.
//!
//! ```
//! use std::time::Duration;
//! use toolgate_server::{HostRule, HttpOptions, Limits, check_token, random_token};
//!
//! // 43 base62 characters (256 bits) from the system's CSPRNG.
//! let token = random_token().unwrap();
//! assert!(check_token(&token).is_ok());
//! assert!(check_token("short").is_err());
//!
//! // Bound to loopback: `localhost` and the address itself are admitted as `Host`.
//! let hosts = HostRule::new("127.0.0.1:4096".parse().unwrap(), &[]).unwrap();
//! let options = HttpOptions::new(token, hosts)
//!     .limits(Limits::default().idle(Duration::from_secs(30)).max_connections(Some(512)));
//! // `toolgate_server::serve_http(parts, listener, options)` then serves until shutdown.
//! # let _ = options;
//! ```

mod http;
mod hub;
mod listen;
mod mcp;
mod trust;
mod wire;

pub use http::{
    HostRule, MIN_TOKEN_CHARS, Options as HttpOptions, TokenError, check_token, random_token, serve as serve_http,
};
pub use listen::{Connection, Limits, connection_cap, raise_file_limit, serve as serve_router};
pub use mcp::{ClientHandle, Elicited, serve_stdio};
pub use trust::{ProjectTrust, TrustError, TrustFile, TrustPart};

/// What both servers serve.
#[derive(Clone)]
pub struct Parts {
    /// The call pipeline: registry, permission service, audit, events.
    pub gate: toolgate_gate::Gate,
    /// Pending questions.
    pub questions: toolgate_builtins_session::QuestionService,
    /// The default agent.
    pub agent: String,
    /// The project's config files that need trust (`GET /trust`, `POST /trust`); `None`:
    /// there is nothing to trust here (the routes list nothing and trust nothing).
    pub trust: Option<std::sync::Arc<dyn ProjectTrust>>,
}

// The items of other toolgate crates that this crate's signatures name, and those crates
// whole, so that this crate alone is a sufficient dependency (ARCHITECTURE.md, "Re-exports").
#[doc(no_inline)]
pub use toolgate_builtins_session;
pub use toolgate_builtins_session::QuestionService;
#[doc(no_inline)]
pub use toolgate_core;
#[doc(no_inline)]
pub use toolgate_gate;
pub use toolgate_gate::Gate;
#[doc(no_inline)]
pub use toolgate_permission;

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
