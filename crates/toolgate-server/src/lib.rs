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
//! elicits from the connected client) and [`serve_stdio_rooted`] (its parts built for
//! the project the client's MCP roots name, [`PartsFor`]), the token helpers, and [`serve_router`], the
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

mod answers;
mod http;
mod hub;
mod listen;
pub mod local;
mod mcp;
mod trust;
mod web;
mod wire;

pub use http::{
    HostRule, MIN_TOKEN_CHARS, Options as HttpOptions, TokenError, check_token, random_token, serve as serve_http,
};
pub use listen::{Connection, Limits, connection_cap, raise_file_limit, serve as serve_router};
pub use mcp::{ClientHandle, Elicited, PartsFor, serve_stdio, serve_stdio_rooted};
pub use trust::{ProjectTrust, TrustError, TrustFile, TrustPart};
pub use web::AskLinks;

/// What a session owns beyond its calls (background processes): the servers end it when
/// the session ends (`DELETE /session/{id}`, an MCP client gone) and all of it when they
/// stop (SIGINT, SIGTERM, stdin closed).
pub trait SessionEnd: Send + Sync {
    /// Ends what `session` owns; how many things were running.
    fn end_session<'a>(&'a self, session: &'a str) -> toolgate_core::BoxFuture<'a, usize>;
    /// Ends what every session owns; how many things were running.
    fn end_all(&self) -> toolgate_core::BoxFuture<'_, usize>;
    /// What every session owns, for a person (`GET /shell`, `toolgate shells`): one JSON
    /// object each, with `id` and `sessionID`. None by default.
    fn list(&self) -> Vec<serde_json::Value> {
        Vec::new()
    }
    /// What a person reads of thing `id` from byte `since` (`GET /shell/{id}/output`);
    /// `None`: no such thing.
    fn output(&self, id: &str, since: Option<u64>) -> Option<serde_json::Value> {
        let _ = (id, since);
        None
    }
    /// Ends thing `id` of any session for a person (`POST /shell/{id}/kill`): `None`: no
    /// such thing; `Some(false)`: it had ended already.
    fn kill(&self, id: &str) -> Option<bool> {
        let _ = id;
        None
    }
}

/// An event from outside the call pipeline (a background process started, wrote, ended)
/// for `/event` and the MCP clients of its session (`properties.sessionID`).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServerEvent {
    /// Its type (`shell.started`, …).
    pub kind: &'static str,
    /// Its properties.
    pub properties: serde_json::Value,
}

impl ServerEvent {
    /// An event of type `kind` with `properties`.
    pub fn new(kind: &'static str, properties: serde_json::Value) -> ServerEvent {
        ServerEvent { kind, properties }
    }

    /// The session it belongs to (`properties.sessionID`).
    pub fn session(&self) -> Option<&str> {
        self.properties.get("sessionID").and_then(serde_json::Value::as_str)
    }
}

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
    /// What sessions own beyond their calls, ended with them; `None`: nothing.
    pub sessions: Option<std::sync::Arc<dyn SessionEnd>>,
    /// Events from outside the call pipeline, passed on to `/event` and to MCP clients.
    pub events: Option<tokio::sync::broadcast::Sender<ServerEvent>>,
}

impl Parts {
    /// Ends what every session owns (a server stops).
    pub(crate) async fn end_sessions(&self) {
        if let Some(sessions) = &self.sessions {
            sessions.end_all().await;
        }
    }
}

/// Resolves on SIGINT or SIGTERM.
pub(crate) async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = interrupt => {}
        _ = async { match terminate.as_mut() { Some(signal) => { signal.recv().await; } None => std::future::pending::<()>().await } } => {}
    }
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
