//! The HTTP API and its server-sent events, and MCP over streamable HTTP at `/mcp`
//! (`toolgate serve`).
//!
//! Every route needs `Authorization: Bearer <token>` (or the person's page's session
//! cookie, with its CSRF token on what changes state: `web.rs`), and a `Host` (and, when sent, an
//! `Origin`) naming this server: `localhost`, `127.0.0.1`, `[::1]` or the listen address,
//! with its port, or a name allowed with `--allow-host`; a web page that rebinds its DNS
//! name to 127.0.0.1 is refused before the token is even looked at. Calls settle through
//! the same registry, permission service and output bound as `toolgate call`; a call
//! that asks waits until a client answers on `/permission/{id}/reply` (or, on `/mcp`,
//! through elicitation). A client that goes away cancels its call (a running bash is
//! killed with its process group).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Extension, Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use subtle::ConstantTimeEq;
use tokio::sync::broadcast;
use toolgate_gate::{Call, GateError, GateEvent};
use toolgate_permission::{Reply, ReplyError};

use crate::Parts;
use crate::hub::{Hub, Next as HubNext};
use crate::listen::{Bucket, Connection, Limits};

/// The fewest characters a token given in `$TOOLGATE_SERVER_TOKEN` may have.
pub const MIN_TOKEN_CHARS: usize = 32;

/// Everything a request handler needs.
pub(crate) struct Server {
    parts: Parts,
    token: String,
    hosts: HostRule,
    /// Every event as `(type, JSON)`, for `/event`.
    events: Arc<Hub>,
    /// Set on shutdown: event streams end so the server can stop.
    closing: tokio::sync::watch::Sender<bool>,
    /// Failed authentications since start, slowed to a few a second over all
    /// connections (a valid token never waits).
    auth_failures: Mutex<Bucket>,
    /// How many refusals the audit log took this second, and how many it did not.
    audit_budget: Mutex<AuditBudget>,
    /// Ends the `/mcp` sessions on shutdown.
    end_mcp: Box<dyn Fn() + Send + Sync>,
    // --- the person's page (web.rs, answers.rs) ---
    /// The page's logins: the printed code, signed ask links, browser sessions.
    logins: crate::web::Logins,
    /// What was asked and how it was answered, by whom.
    answers: Arc<crate::answers::Answers>,
}

struct AuditBudget {
    window: Instant,
    written: u32,
    suppressed: u64,
}

/// Failed authentications the whole server answers at once, and a second after that:
/// guessing a 256-bit token at 10 a second is hopeless, and a flood of guesses from
/// many connections is slowed as much as one from a single connection.
const SERVER_FREE_FAILURES: f64 = 30.0;
const SERVER_FAILURES_PER_SECOND: f64 = 10.0;

/// Refused authentications the audit log takes per second; the rest are counted.
const AUDITED_FAILURES_PER_SECOND: u32 = 10;

type Shared = Arc<Server>;

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({"error": message.into()}))).into_response()
}

/// A request the server refuses: a status and a message for the client.
struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        error(self.0, self.1)
    }
}

/// A token that cannot be used: why, in words for the person who set it.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Empty or only whitespace.
    #[error(
        "TOOLGATE_SERVER_TOKEN is blank; unset it to get a random token, or set at least {MIN_TOKEN_CHARS} characters"
    )]
    Blank,
    /// Too short to resist guessing.
    #[error(
        "TOOLGATE_SERVER_TOKEN has {0} characters; it needs at least {MIN_TOKEN_CHARS} (unset it to get a random one)"
    )]
    TooShort(usize),
    /// Has characters a bearer token cannot carry (spaces, controls, non-ASCII).
    #[error("TOOLGATE_SERVER_TOKEN may only contain visible ASCII characters (no spaces)")]
    BadCharacter,
    /// The system's random source failed.
    #[error("could not draw a random token: {0}")]
    Random(String),
}

/// Checks a token given by the user: at least [`MIN_TOKEN_CHARS`] visible ASCII
/// characters.
///
/// ```
/// use toolgate_server::{check_token, TokenError};
/// assert_eq!(check_token("   "), Err(TokenError::Blank));
/// assert_eq!(check_token("a"), Err(TokenError::TooShort(1)));
/// assert!(check_token("0123456789abcdef0123456789abcdef").is_ok());
/// ```
pub fn check_token(token: &str) -> Result<(), TokenError> {
    if token.trim().is_empty() {
        return Err(TokenError::Blank);
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(TokenError::BadCharacter);
    }
    if token.len() < MIN_TOKEN_CHARS {
        return Err(TokenError::TooShort(token.len()));
    }
    Ok(())
}

/// A fresh bearer token: 43 base62 characters (256 bits) from the system's CSPRNG.
///
/// ```
/// let token = toolgate_server::random_token().unwrap();
/// assert_eq!(token.len(), 43);
/// assert!(toolgate_server::check_token(&token).is_ok());
/// ```
pub fn random_token() -> Result<String, TokenError> {
    const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut token = String::with_capacity(43);
    let mut bytes = [0u8; 64];
    while token.len() < 43 {
        getrandom::fill(&mut bytes).map_err(|e| TokenError::Random(e.to_string()))?;
        // 248 = 4 × 62: rejecting the rest keeps every character equally likely.
        for byte in bytes.iter().filter(|&&b| b < 248) {
            if token.len() == 43 {
                break;
            }
            token.push(char::from(ALPHABET[usize::from(byte % 62)]));
        }
    }
    Ok(token)
}

/// The `Host` values (and `Origin` hosts) a request may name: loopback names and the
/// listen address with the listen port, plus names allowed by the user.
#[derive(Clone, Debug)]
pub struct HostRule {
    allowed: Vec<(String, u16)>,
}

/// `host[:port]` split and normalised (lower case; `[v6]` keeps its brackets).
fn authority(text: &str, default_port: u16) -> Option<(String, u16)> {
    let authority: axum::http::uri::Authority = text.trim().parse().ok()?;
    if authority.as_str().contains('@') {
        return None;
    }
    Some((
        authority.host().to_ascii_lowercase(),
        authority.port_u16().unwrap_or(default_port),
    ))
}

impl HostRule {
    /// The rule for a server bound to `bound`: `localhost`, `127.0.0.1`, `[::1]` and
    /// the bound address (unless unspecified) on its port, and each of `extra`
    /// (`NAME` on the bound port, or `NAME:PORT`). An `extra` entry that is not a host
    /// name is an error.
    pub fn new(bound: SocketAddr, extra: &[String]) -> Result<HostRule, String> {
        let port = bound.port();
        let mut allowed: Vec<(String, u16)> = ["localhost", "127.0.0.1", "[::1]"]
            .iter()
            .map(|host| (host.to_string(), port))
            .collect();
        if !bound.ip().is_unspecified() {
            let host = match bound {
                SocketAddr::V4(v4) => v4.ip().to_string(),
                SocketAddr::V6(v6) => format!("[{}]", v6.ip()),
            };
            allowed.push((host, port));
        }
        for entry in extra {
            let parsed = authority(entry, port)
                .filter(|(host, _)| !host.is_empty())
                .ok_or_else(|| format!("--allow-host {entry:?}: not a host name or host:port"))?;
            allowed.push(parsed);
        }
        Ok(HostRule { allowed })
    }

    fn allows(&self, host: &(String, u16)) -> bool {
        self.allowed.iter().any(|allowed| allowed == host)
    }

    /// Refuses a request whose `Host`, absolute URI or `Origin` names another server.
    fn check(&self, headers: &HeaderMap, uri: &axum::http::Uri) -> Result<(), String> {
        let shown = |value: &[u8]| {
            let text = String::from_utf8_lossy(value);
            let text: String = text.chars().take(80).collect();
            format!("{text:?}")
        };
        let mut hosts = headers.get_all(header::HOST).iter();
        let host = match (hosts.next(), hosts.next()) {
            (Some(host), None) => host,
            (None, _) => return Err("a request needs a Host header".into()),
            (Some(_), Some(_)) => return Err("a request may carry only one Host header".into()),
        };
        let named = host.to_str().ok().and_then(|text| authority(text, 80));
        if !named.as_ref().is_some_and(|named| self.allows(named)) {
            return Err(format!(
                "Host {} is not this server: toolgate serve answers only localhost, 127.0.0.1, [::1] or its listen address with its port (others with --allow-host); this protects against DNS rebinding",
                shown(host.as_bytes())
            ));
        }
        if let Some(target) = uri.authority()
            && !authority(target.as_str(), 80).is_some_and(|named| self.allows(&named))
        {
            return Err(format!(
                "request target {} is not this server",
                shown(target.as_str().as_bytes())
            ));
        }
        for origin in headers.get_all(header::ORIGIN) {
            let parsed = origin.to_str().ok().and_then(|text| {
                let uri: axum::http::Uri = text.trim().parse().ok()?;
                let default = match uri.scheme_str()? {
                    "http" => 80,
                    "https" => 443,
                    _ => return None,
                };
                if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
                    return None;
                }
                authority(uri.authority()?.as_str(), default)
            });
            if !parsed.as_ref().is_some_and(|named| self.allows(named)) {
                return Err(format!(
                    "Origin {} is not this server: web pages of other sites may not call toolgate",
                    shown(origin.as_bytes())
                ));
            }
        }
        Ok(())
    }
}

/// Why a request's credentials were refused (never the credentials themselves).
fn credentials(headers: &HeaderMap, token: &str) -> Result<(), &'static str> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let value = match (values.next(), values.next()) {
        (Some(value), None) => value.as_bytes(),
        (None, _) => return Err("no Authorization header"),
        (Some(_), Some(_)) => return Err("several Authorization headers"),
    };
    let split = value.iter().position(|b| *b == b' ' || *b == b'\t');
    let (scheme, rest) = match split {
        Some(at) => (&value[..at], &value[at..]),
        None => (value, &value[value.len()..]),
    };
    // RFC 7235 §2.1: the scheme is case-insensitive.
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return Err("not the Bearer scheme");
    }
    let given = rest.trim_ascii();
    if bool::from(given.ct_eq(token.as_bytes())) {
        Ok(())
    } else {
        Err("wrong token")
    }
}

impl Server {
    /// Counts, records (a few a second) and answers a refused authentication, after a
    /// pause once the connection has failed more than a few times in a row.
    async fn refuse(&self, request: Request, reason: &'static str) -> Response {
        let (parts, _body) = request.into_parts();
        self.pause_refused(&parts, reason).await;
        let mut response = error(
            StatusCode::UNAUTHORIZED,
            format!(
                "missing or wrong credentials ({reason}): send `Authorization: Bearer <token>` as printed by `toolgate serve`, or log in on its page"
            ),
        );
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, header::HeaderValue::from_static("Bearer"));
        response
    }

    /// Counts, records (a few a second) and waits out a refused authentication (a
    /// token, a login code or link).
    async fn pause_refused(&self, parts: &axum::http::request::Parts, reason: &'static str) {
        let (server_wait, total) = self
            .auth_failures
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .take();
        let connection = parts.extensions.get::<Arc<Connection>>().cloned();
        let (wait, on_connection) = connection.as_ref().map_or((Duration::ZERO, 1), |c| c.failed());
        let wait = wait.max(server_wait);
        let peer = connection.map_or_else(|| "unknown".to_string(), |c| c.peer.to_string());
        let recorded = {
            let mut budget = self.audit_budget.lock().unwrap_or_else(|poison| poison.into_inner());
            if budget.window.elapsed() >= Duration::from_secs(1) {
                budget.window = Instant::now();
                budget.written = 0;
            }
            if budget.written < AUDITED_FAILURES_PER_SECOND {
                budget.written += 1;
                Some(std::mem::take(&mut budget.suppressed))
            } else {
                budget.suppressed += 1;
                None
            }
        };
        if let (Some(suppressed), Some(audit)) = (recorded, self.service().audit()) {
            let path: String = parts.uri.path().chars().take(200).collect();
            audit.auth_failed(
                &toolgate_permission::AuthFailure::new(reason)
                    .peer(&peer)
                    .request(parts.method.as_str(), &path)
                    .counts(on_connection, total, suppressed),
            );
        }
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

/// Host and Origin first (a rebinding page never gets as far as the token), then the
/// credentials: the bearer token, or (without an `Authorization` header) the page's
/// session cookie, with its CSRF token and an `Origin` for what changes state. The
/// page's own files and its login need neither. Every answer carries the page's
/// security headers.
async fn guard(State(server): State<Shared>, request: Request, next: Next) -> Response {
    let mut response = authorize(server, request, next).await;
    let headers = response.headers_mut();
    for (name, value) in [
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, header::HeaderValue::from_static(value));
    }
    if !headers.contains_key(header::REFERRER_POLICY) {
        headers.insert(header::REFERRER_POLICY, header::HeaderValue::from_static("no-referrer"));
    }
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            header::HeaderValue::from_static(crate::web::CONTENT_SECURITY_POLICY),
        );
    }
    response
}

async fn authorize(server: Shared, mut request: Request, next: Next) -> Response {
    use crate::web::{Caller, Scope};
    // The local socket's peer was checked to be the server's own user (`local`).
    if request.extensions().get::<crate::local::LocalPeer>().is_some() {
        request.extensions_mut().insert(Caller::Local);
        return next.run(request).await;
    }
    if let Err(refusal) = server.hosts.check(request.headers(), request.uri()) {
        return error(StatusCode::FORBIDDEN, refusal);
    }
    if crate::web::is_public(request.method(), request.uri().path()) {
        return next.run(request).await;
    }
    let by_cookie =
        !request.headers().contains_key(header::AUTHORIZATION) && crate::web::has_session_cookie(request.headers());
    let caller = if by_cookie {
        let Some((scope, csrf)) = server.logins.session(request.headers()) else {
            return server.refuse(request, "unknown or expired session cookie").await;
        };
        if crate::web::changes_state(request.method()) {
            // A cookie rides along with any request the browser makes: what changes
            // state must prove it comes from the page (its CSRF token) and name its
            // origin (checked above against this server).
            if !request.headers().contains_key(header::ORIGIN) {
                return error(
                    StatusCode::FORBIDDEN,
                    "a request authenticated by the page's cookie that changes state needs an Origin header",
                );
            }
            if !crate::web::csrf_matches(request.headers(), &csrf) {
                return error(
                    StatusCode::FORBIDDEN,
                    "missing or wrong X-Toolgate-CSRF header: a request authenticated by the page's cookie that changes state must carry the token GET /whoami gives",
                );
            }
        }
        if let Scope::Ask(ask) = &scope
            && !crate::web::ask_scope_allows(ask, request.method(), request.uri().path())
        {
            return error(
                StatusCode::FORBIDDEN,
                format!("this login is for permission request {ask} only; log in with the token for the rest"),
            );
        }
        Caller::Page { scope, csrf }
    } else {
        if let Err(reason) = credentials(request.headers(), &server.token) {
            return server.refuse(request, reason).await;
        }
        Caller::Bearer
    };
    if let Some(connection) = request.extensions().get::<Arc<Connection>>() {
        connection.authenticated();
    }
    request.extensions_mut().insert(caller);
    next.run(request).await
}

#[derive(Deserialize)]
struct AgentQuery {
    agent: Option<String>,
}

impl Server {
    fn agent(&self, requested: Option<&str>) -> Result<String, ApiError> {
        match requested {
            None => Ok(self.parts.agent.clone()),
            Some(name) if self.parts.gate.permissions().agents().get(name).is_some() => Ok(name.to_string()),
            Some(name) => Err(ApiError(StatusCode::BAD_REQUEST, format!("unknown agent {name:?}"))),
        }
    }

    fn service(&self) -> &toolgate_permission::PermissionService {
        self.parts.gate.permissions()
    }
}

/// The wire form of a gate event: its SSE name and `{type, properties}` payload.
fn call_event(event: &GateEvent) -> Option<(&'static str, Value)> {
    let (kind, properties) = match event {
        GateEvent::Started { session, call, tool } => (
            "tool.started",
            json!({"sessionID": session, "callID": call, "tool": tool}),
        ),
        GateEvent::Settled {
            session,
            call,
            tool,
            result,
            output_paths,
            declined,
        } => (
            "tool.settled",
            json!({"sessionID": session, "callID": call, "tool": tool, "result": result.to_json(), "outputPaths": output_paths, "declined": declined}),
        ),
        GateEvent::Failed {
            session,
            call,
            tool,
            error,
        } => (
            "tool.failed",
            json!({"sessionID": session, "callID": call, "tool": tool, "error": error}),
        ),
        GateEvent::Cancelled { session, call, tool } => (
            "tool.cancelled",
            json!({"sessionID": session, "callID": call, "tool": tool}),
        ),
        _ => return None,
    };
    Some((kind, json!({"type": kind, "properties": properties})))
}

async fn tools(State(server): State<Shared>, Query(query): Query<AgentQuery>) -> Response {
    let agent = match server.agent(query.agent.as_deref()) {
        Ok(agent) => agent,
        Err(refused) => return refused.into_response(),
    };
    let list: Vec<Value> = server
        .parts
        .gate
        .prepared_catalog(&agent)
        .await
        .definitions()
        .iter()
        .map(|d| json!({"name": d.name, "description": d.description, "inputSchema": d.input_schema}))
        .collect();
    axum::Json(list).into_response()
}

fn parse<T: serde::de::DeserializeOwned>(body: &Bytes) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError(StatusCode::BAD_REQUEST, format!("invalid request body: {e}")))
}

#[derive(Deserialize)]
struct CallBody {
    tool: String,
    #[serde(default)]
    input: Value,
    agent: Option<String>,
    /// The assistant message the call belongs to, when the client knows it: doom_loop
    /// counts identical calls per message (spec §4.11); without it the session is one.
    message: Option<String>,
}

async fn call(State(server): State<Shared>, Path(session): Path<String>, body: Bytes) -> Response {
    let body: CallBody = match parse(&body) {
        Ok(body) => body,
        Err(refused) => return refused.into_response(),
    };
    let agent = match server.agent(body.agent.as_deref()) {
        Ok(agent) => agent,
        Err(refused) => return refused.into_response(),
    };
    let input = if body.input.is_null() { json!({}) } else { body.input };
    let gate = &server.parts.gate;
    let message = body.message.unwrap_or_else(|| session.clone());
    match gate
        .run(&agent, Call::new(session, body.tool, input).in_message(message))
        .await
    {
        Ok(settled) => {
            let settlement = settled.settlement;
            axum::Json(json!({
                "result": settlement.result.to_json(),
                "output": settlement.output,
                "outputPaths": settlement.output_paths,
                "declined": settlement.is_declined(),
            }))
            .into_response()
        }
        Err(denied @ GateError::Unknown { denied: Some(_), .. }) => error(StatusCode::BAD_REQUEST, denied.to_string()),
        Err(GateError::Unknown { tool, agent, .. }) => error(
            StatusCode::BAD_REQUEST,
            format!("unknown tool {tool:?} for agent {agent}"),
        ),
        Err(stale @ GateError::Stale { .. }) => error(StatusCode::CONFLICT, stale.to_string()),
        Err(failure) => error(StatusCode::INTERNAL_SERVER_ERROR, failure.to_string()),
    }
}

/// `DELETE /session/{id}`: the session is over; what it started in the background ends.
async fn end_session(State(server): State<Shared>, Path(session): Path<String>) -> Response {
    // What the session still waits on is declined first: an ask answered after the
    // session ended would start something nobody owns any more.
    server.service().cancel_session(&session);
    let ended = match &server.parts.sessions {
        Some(sessions) => sessions.end_session(&session).await,
        None => 0,
    };
    axum::Json(json!({"ended": ended})).into_response()
}

/// `GET /shell`: every session's background processes, for a person.
async fn shells(State(server): State<Shared>) -> Response {
    let list = server
        .parts
        .sessions
        .as_ref()
        .map(|sessions| sessions.list())
        .unwrap_or_default();
    axum::Json(list).into_response()
}

#[derive(Deserialize)]
struct SinceQuery {
    since: Option<u64>,
}

/// `GET /shell/{id}/output?since=N`: what a person reads of one process's output; the
/// model's own read position does not move.
async fn shell_output(
    State(server): State<Shared>,
    Path(id): Path<String>,
    Query(query): Query<SinceQuery>,
) -> Response {
    match server
        .parts
        .sessions
        .as_ref()
        .and_then(|sessions| sessions.output(&id, query.since))
    {
        Some(read) => axum::Json(read).into_response(),
        None => error(StatusCode::NOT_FOUND, format!("no background process {id}")),
    }
}

/// `POST /shell/{id}/kill`: a person ends one process's whole tree (TERM, KILL 3 s later).
async fn shell_kill(State(server): State<Shared>, Path(id): Path<String>) -> Response {
    match server.parts.sessions.as_ref().and_then(|sessions| sessions.kill(&id)) {
        Some(running) => axum::Json(json!({"killed": running})).into_response(),
        None => error(StatusCode::NOT_FOUND, format!("no background process {id}")),
    }
}

async fn permissions(State(server): State<Shared>, Extension(caller): Extension<crate::web::Caller>) -> Response {
    let only = caller.only_ask();
    let pending: Vec<Value> = server
        .service()
        .pending()
        .iter()
        .filter(|request| only.is_none_or(|id| request.id == id))
        .map(crate::wire::request)
        .collect();
    axum::Json(pending).into_response()
}

#[derive(Deserialize)]
struct ReplyBody {
    reply: Reply,
    message: Option<String>,
}

async fn reply(
    State(server): State<Shared>,
    Extension(caller): Extension<crate::web::Caller>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let body: ReplyBody = match parse(&body) {
        Ok(body) => body,
        Err(refused) => return refused.into_response(),
    };
    let reply = serde_json::to_value(body.reply)
        .ok()
        .and_then(|value| value.as_str().map(str::to_string))
        .unwrap_or_default();
    let by = toolgate_permission::DecisionSource::Reply {
        front_end: caller.front_end().into(),
        person: None,
    };
    match server.service().reply_by(&id, body.reply, body.message.as_deref(), by) {
        Ok(()) => {
            server
                .answers
                .answered(&id, &reply, caller.by(), body.message.as_deref());
            axum::Json(true).into_response()
        }
        Err(ReplyError::NotFound(_)) => gone(&server, "permission request", &id),
        Err(other) => error(StatusCode::INTERNAL_SERVER_ERROR, other.to_string()),
    }
}

/// The answer to a reply for an ask that is not pending: 409 when it was asked (answered
/// already, or its call ended), 404 when it never was.
fn gone(server: &Server, what: &str, id: &str) -> Response {
    match server.answers.gone(id) {
        crate::answers::Gone::Answered(reply, by) => error(
            StatusCode::CONFLICT,
            format!("{what} {id} was answered already ({reply}, by {by}); this reply was not taken"),
        ),
        crate::answers::Gone::Ended => error(
            StatusCode::CONFLICT,
            format!("{what} {id} is no longer pending: its call ended before an answer came; this reply was not taken"),
        ),
        crate::answers::Gone::Unknown => error(StatusCode::NOT_FOUND, format!("no pending {what} {id}")),
    }
}

async fn list_questions(State(server): State<Shared>) -> Response {
    let pending: Vec<Value> = server
        .parts
        .questions
        .pending()
        .iter()
        .map(crate::wire::question_request)
        .collect();
    axum::Json(pending).into_response()
}

#[derive(Deserialize)]
struct AnswerBody {
    answers: Vec<Vec<String>>,
}

async fn answer(
    State(server): State<Shared>,
    Extension(caller): Extension<crate::web::Caller>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let body: AnswerBody = match parse(&body) {
        Ok(body) => body,
        Err(refused) => return refused.into_response(),
    };
    let text = body
        .answers
        .iter()
        .map(|labels| labels.join(", "))
        .collect::<Vec<_>>()
        .join("; ");
    match server.parts.questions.reply(&id, body.answers) {
        Ok(()) => {
            server
                .answers
                .answered(&id, &format!("answered: {text}"), caller.by(), None);
            axum::Json(true).into_response()
        }
        Err(toolgate_builtins_session::QuestionError::NotFound(_)) => gone(&server, "question", &id),
        Err(other) => error(StatusCode::BAD_REQUEST, other.to_string()),
    }
}

async fn dismiss(
    State(server): State<Shared>,
    Extension(caller): Extension<crate::web::Caller>,
    Path(id): Path<String>,
) -> Response {
    match server.parts.questions.reject(&id) {
        Ok(()) => {
            server.answers.answered(&id, "dismissed", caller.by(), None);
            axum::Json(true).into_response()
        }
        Err(_) => gone(&server, "question", &id),
    }
}

async fn approvals(State(server): State<Shared>) -> Response {
    let Some(store) = server.service().store() else {
        return axum::Json(Vec::<Value>::new()).into_response();
    };
    match store.list(server.service().project_id()) {
        Ok(list) => axum::Json(list).into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn remove_approval(State(server): State<Shared>, Path(id): Path<String>) -> Response {
    let project = server.service().project_id();
    match server.service().store().map(|store| store.remove(project, &id)) {
        Some(Ok(true)) => axum::Json(true).into_response(),
        Some(Ok(false)) | None => error(StatusCode::NOT_FOUND, format!("no saved approval {id}")),
        Some(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

// --- the person's page: its files, logins, whoami, answers, audit (web.rs, answers.rs) ---

fn page_file(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// `GET /`: the page.
async fn page() -> Response {
    page_file("text/html; charset=utf-8", crate::web::INDEX_HTML)
}

async fn page_script() -> Response {
    page_file("text/javascript; charset=utf-8", crate::web::APP_JS)
}

async fn page_style() -> Response {
    page_file("text/css; charset=utf-8", crate::web::STYLE_CSS)
}

/// The port a request named in its `Host` (checked by the guard): the cookie's name.
fn request_port(headers: &HeaderMap) -> u16 {
    headers
        .get(header::HOST)
        .and_then(|host| host.to_str().ok())
        .and_then(|host| authority(host, 80))
        .map_or(80, |(_, port)| port)
}

fn with_cookie(mut response: Response, cookie: Option<header::HeaderValue>) -> Response {
    if let Some(cookie) = cookie {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
}

/// `GET /login?code=…` (the link `serve` prints) or `?ask=…&exp=…&sig=…` (a signed
/// link to one ask): a page with one **Log in** button that posts them to
/// `/login/link`; opening the link uses nothing up.
async fn login_page(Query(query): Query<std::collections::HashMap<String, String>>) -> Response {
    match crate::web::login_form(&query) {
        // `same-origin`, not `no-referrer`: under `no-referrer` a browser posts the form
        // with `Origin: null`, which the Origin check refuses; the referrer (with the
        // code) goes to this server only.
        Some(html) => (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::REFERRER_POLICY, "same-origin"),
            ],
            html,
        )
            .into_response(),
        None => (
            StatusCode::BAD_REQUEST,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("toolgate: {}\n", crate::web::LoginError::Malformed),
        )
            .into_response(),
    }
}

/// `POST /login/link` (the form of a login link's page): a session cookie and back to
/// the page, once per code or link.
async fn login_link(State(server): State<Shared>, request: axum::http::request::Parts, body: Bytes) -> Response {
    let query = crate::web::form_fields(&body);
    match server.logins.login_with_query(&query) {
        Ok((session, scope)) => {
            let target = match scope {
                crate::web::Scope::All => "/".to_string(),
                crate::web::Scope::Ask(id) => format!("/#ask={id}"),
            };
            let response = (
                StatusCode::SEE_OTHER,
                [(header::LOCATION, target)],
                "logged in; the page is at /",
            )
                .into_response();
            with_cookie(
                response,
                crate::web::set_cookie(request_port(&request.headers), &session.cookie),
            )
        }
        Err(refusal) => {
            let reason = match refusal {
                crate::web::LoginError::Code => "used, expired or unknown login code",
                crate::web::LoginError::Link => "used, expired or forged ask link",
                crate::web::LoginError::Malformed => "malformed login",
                crate::web::LoginError::Random(_) => "no random source",
            };
            server.pause_refused(&request, reason).await;
            (
                StatusCode::FORBIDDEN,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                format!("toolgate: {refusal}\n"),
            )
                .into_response()
        }
    }
}

#[derive(Deserialize)]
struct LoginBody {
    token: String,
}

/// `POST /login {token}`: the page's form trades the bearer token for a session cookie
/// and answers the session's CSRF token.
async fn login_token(State(server): State<Shared>, request: axum::http::request::Parts, body: Bytes) -> Response {
    let body: LoginBody = match parse(&body) {
        Ok(body) => body,
        Err(refused) => return refused.into_response(),
    };
    if !bool::from(body.token.trim().as_bytes().ct_eq(server.token.as_bytes())) {
        server.pause_refused(&request, "wrong token at login").await;
        return error(
            StatusCode::UNAUTHORIZED,
            "wrong token: use the one `toolgate serve` printed (or $TOOLGATE_SERVER_TOKEN)",
        );
    }
    match server.logins.open(crate::web::Scope::All) {
        Ok(session) => with_cookie(
            axum::Json(json!({"csrf": session.csrf, "ask": null})).into_response(),
            crate::web::set_cookie(request_port(&request.headers), &session.cookie),
        ),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// `POST /logout`: ends the page's session.
async fn logout(State(server): State<Shared>, headers: HeaderMap) -> Response {
    server.logins.close(&headers);
    with_cookie(
        axum::Json(true).into_response(),
        crate::web::clear_cookie(request_port(&headers)),
    )
}

/// `GET /whoami`: how this request was authenticated, the CSRF token of a page session,
/// and the one ask a link's login may see.
async fn whoami(State(server): State<Shared>, Extension(caller): Extension<crate::web::Caller>) -> Response {
    let (via, csrf) = match &caller {
        crate::web::Caller::Bearer => ("bearer", None),
        crate::web::Caller::Local => ("local", None),
        crate::web::Caller::Page { csrf, .. } => ("page", Some(csrf.clone())),
    };
    axum::Json(json!({
        "via": via,
        "csrf": csrf,
        "ask": caller.only_ask(),
        "project": server.service().project_id(),
    }))
    .into_response()
}

/// `GET /answers`: what was answered, how and by whom, oldest first.
async fn answers(State(server): State<Shared>, Extension(caller): Extension<crate::web::Caller>) -> Response {
    axum::Json(server.answers.list(caller.only_ask())).into_response()
}

#[derive(Deserialize)]
struct AuditParams {
    session: Option<String>,
    tool: Option<String>,
    effect: Option<String>,
    limit: Option<usize>,
}

/// Entries `GET /audit` gives when no `limit` is asked, and at most.
const AUDIT_DEFAULT_LIMIT: usize = 200;
const AUDIT_MAX_LIMIT: usize = 5000;

/// `GET /audit?session=&tool=&effect=&limit=`: the newest audit entries that match,
/// oldest first.
async fn audit(State(server): State<Shared>, Query(params): Query<AuditParams>) -> Response {
    let Some(log) = server.service().audit().cloned() else {
        return axum::Json(Vec::<Value>::new()).into_response();
    };
    let mut query =
        toolgate_permission::AuditQuery::last(params.limit.unwrap_or(AUDIT_DEFAULT_LIMIT).min(AUDIT_MAX_LIMIT));
    let given = |value: Option<String>| value.filter(|value| !value.is_empty());
    if let Some(session) = given(params.session) {
        query = query.session(session);
    }
    if let Some(tool) = given(params.tool) {
        query = query.tool(tool);
    }
    if let Some(effect) = given(params.effect) {
        query = query.effect(effect);
    }
    // It reads the log file: off the runtime's threads.
    match tokio::task::spawn_blocking(move || log.query(&query)).await {
        Ok(entries) => axum::Json(entries).into_response(),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

// --- end of the person's page ---

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TrustBody {
    path: String,
    sha256: String,
}

/// `GET /trust`: the project's config files whose parts need trust and are not trusted
/// (README "Trusted project files"), each with what trusting it would change — the parts
/// ignored until then.
async fn untrusted(State(server): State<Shared>) -> Response {
    let Some(trust) = server.parts.trust.clone() else {
        return axum::Json(Vec::<Value>::new()).into_response();
    };
    // It reads the config files: off the runtime's threads.
    match tokio::task::spawn_blocking(move || trust.files()).await {
        Ok(Ok(files)) => {
            let files: Vec<crate::TrustFile> = files.into_iter().filter(|file| !file.trusted).collect();
            axum::Json(files).into_response()
        }
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// `POST /trust {path, sha256}`: trusts that file if its content now has that hash (409
/// when it changed since it was shown), and says so on the event stream (`trust.changed`).
async fn trust_file(State(server): State<Shared>, body: Bytes) -> Response {
    let body: TrustBody = match parse(&body) {
        Ok(body) => body,
        Err(refused) => return refused.into_response(),
    };
    let Some(trust) = server.parts.trust.clone() else {
        return error(
            StatusCode::NOT_FOUND,
            crate::TrustError::NotFound(body.path).to_string(),
        );
    };
    let result = tokio::task::spawn_blocking(move || trust.trust(&body.path, &body.sha256)).await;
    match result {
        Ok(Ok(file)) => {
            let data = json!({"path": file.path, "sha256": file.sha256, "trusted": true});
            server.events.publish("trust.changed", data.to_string());
            axum::Json(file).into_response()
        }
        Ok(Err(e @ crate::TrustError::NotFound(_))) => error(StatusCode::NOT_FOUND, e.to_string()),
        Ok(Err(e @ crate::TrustError::Stale { .. })) => error(StatusCode::CONFLICT, e.to_string()),
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn event_stream(
    State(server): State<Shared>,
    Extension(caller): Extension<crate::web::Caller>,
) -> Sse<impl futures_util::Stream<Item = Result<SseEvent, std::convert::Infallible>>> {
    let subscriber = server.events.subscribe();
    let closing = server.closing.subscribe();
    // A login for one ask sees the events that name it, and nothing else.
    let only = caller.only_ask().map(|id| format!("{:?}", id));
    let stream = futures_util::stream::unfold((subscriber, closing), move |(mut subscriber, mut closing)| {
        let only = only.clone();
        async move {
            let next = loop {
                let next = tokio::select! {
                    next = subscriber.next() => next,
                    _ = closing.wait_for(|closed| *closed) => return None,
                };
                match (&next, &only) {
                    (HubNext::Event(entry), Some(id)) if !entry.data.contains(id.as_str()) => continue,
                    (HubNext::Lagged(_), Some(_)) => continue,
                    _ => break next,
                }
            };
            let event = match next {
                HubNext::Event(entry) => SseEvent::default().event(&entry.kind).data(&entry.data),
                // A client too slow for the event buffer misses the oldest events rather
                // than stalling everyone or holding unbounded memory; it is told so.
                HubNext::Lagged(missed) => SseEvent::default()
                    .event("events.lagged")
                    .data(json!({"missed": missed}).to_string()),
            };
            Some((Ok(event), (subscriber, closing)))
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

async fn doc() -> Response {
    axum::Json(openapi()).into_response()
}

/// The OpenAPI document of every route.
fn openapi() -> Value {
    let error = json!({"description": "error", "content": {"application/json": {"schema": {"type": "object", "properties": {"error": {"type": "string"}}}}}});
    let ok = |description: &str| json!({"description": description, "content": {"application/json": {"schema": {}}}});
    let id = |name: &str| json!([{"name": name, "in": "path", "required": true, "schema": {"type": "string"}}]);
    let body = |schema: Value| json!({"required": true, "content": {"application/json": {"schema": schema}}});
    let mut document = json!({
        "openapi": "3.1.0",
        "info": {"title": "toolgate", "version": env!("CARGO_PKG_VERSION"), "description": "Tools for AI coding agents, and the rules that decide what they may do. Every route needs `Authorization: Bearer <token>`, or the page's session cookie (with `X-Toolgate-CSRF` and `Origin` on what changes state)."},
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{"bearer": []}],
        "paths": {
            "/tool": {"get": {"summary": "The catalog an agent is offered", "parameters": [{"name": "agent", "in": "query", "schema": {"type": "string"}}], "responses": {"200": ok("[{name, description, inputSchema}]"), "400": error, "401": error}}},
            "/session/{id}": {"delete": {"summary": "End a session: every background process it started ends (its whole process tree)", "parameters": id("id"), "responses": {"200": ok("{ended: number of processes that were running}"), "401": error}}},
            "/session/{id}/call": {"post": {"summary": "Settle one tool call (waits while a permission or question is pending)", "parameters": id("id"),
                "requestBody": body(json!({"type": "object", "required": ["tool"], "properties": {"tool": {"type": "string"}, "input": {"type": "object"}, "agent": {"type": "string"}, "message": {"type": "string", "description": "the assistant message the call belongs to (doom_loop counts per message; default: the session)"}}})),
                "responses": {"200": ok("{result, output, outputPaths, declined}"), "400": error, "401": error}}},
            "/permission": {"get": {"summary": "Pending permission requests", "responses": {"200": ok("[Request]"), "401": error}}},
            "/permission/{requestID}/reply": {"post": {"summary": "Answer a permission request", "parameters": id("requestID"),
                "requestBody": body(json!({"type": "object", "required": ["reply"], "properties": {"reply": {"enum": ["once", "always", "session", "reject"]}, "message": {"type": "string"}}})),
                "responses": {"200": ok("true"), "400": error, "401": error, "404": error, "409": error}}},
            "/question": {"get": {"summary": "Pending questions", "responses": {"200": ok("[QuestionRequest]"), "401": error}}},
            "/question/{id}/reply": {"post": {"summary": "Answer questions: one list of labels per question", "parameters": id("id"),
                "requestBody": body(json!({"type": "object", "required": ["answers"], "properties": {"answers": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}}})),
                "responses": {"200": ok("true"), "400": error, "401": error, "404": error}}},
            "/question/{id}/reject": {"post": {"summary": "Dismiss questions", "parameters": id("id"), "responses": {"200": ok("true"), "401": error, "404": error}}},
            "/shell": {"get": {"summary": "Every session's background processes: id, sessionID, command, pid, state, exit, started, bytes, dropped, tty, output (the log file)", "responses": {"200": ok("[ShellInfo]"), "401": error}}},
            "/shell/{id}/output": {"get": {"summary": "A background process's output from byte `since` (default 0: all still kept), at most 32 KiB shown; the model's read position does not move", "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}, {"name": "since", "in": "query", "schema": {"type": "integer"}}], "responses": {"200": ok("{id, text, from, next, dropped, left_out, running, exit}"), "401": error, "404": error}}},
            "/shell/{id}/kill": {"post": {"summary": "End a background process's whole tree (TERM, KILL 3 s later)", "parameters": id("id"), "responses": {"200": ok("{killed: whether it was running}"), "401": error, "404": error}}},
            "/approvals": {"get": {"summary": "Saved approvals of the project", "responses": {"200": ok("[Approval]"), "401": error}}},
            "/approvals/{id}": {"delete": {"summary": "Remove a saved approval", "parameters": id("id"), "responses": {"200": ok("true"), "401": error, "404": error}}},
            "/trust": {"get": {"summary": "The project's config files whose parts need trust and are not trusted: path, sha256, and the parts (ignored until trusted) with what each would change", "responses": {"200": ok("[{path, sha256, trusted, parts: [{key, change, value}]}]"), "401": error}},
                "post": {"summary": "Trust one file's exact content (applies from the next load of the config: a restart of serve, the next call)",
                    "requestBody": body(json!({"type": "object", "required": ["path", "sha256"], "properties": {"path": {"type": "string"}, "sha256": {"type": "string"}}})),
                    "responses": {"200": ok("{path, sha256, trusted, parts}"), "400": error, "401": error, "404": error, "409": error}}},
            "/event": {"get": {"summary": "Server-sent events: permission.asked, permission.replied, question.asked, question.replied, question.rejected, tool.started, tool.settled, tool.failed, tool.cancelled, trust.changed, shell.started, shell.output, shell.exited", "responses": {"200": {"description": "text/event-stream"}, "401": error}}},
            "/doc": {"get": {"summary": "This document", "responses": {"200": ok("OpenAPI 3.1"), "401": error}}}
        }
    });
    // The person's page (web.rs), in a second literal: one would pass json!'s recursion limit.
    let page = json!({
            "/": {"get": {"summary": "The person's page (no credentials needed to load it; it logs in)", "security": [], "responses": {"200": {"description": "text/html"}}}},
            "/login": {"get": {"summary": "The page of a login link: the one-time code `serve` printed (?code=) or a signed link to one ask (?ask=&exp=&sig=), with one Log in button that posts them to /login/link (opening the link uses nothing up)", "security": [],
                    "responses": {"200": {"description": "text/html"}, "400": {"description": "not a login link"}}},
                "post": {"summary": "Log the browser in with the token: a session cookie", "security": [],
                    "requestBody": body(json!({"type": "object", "required": ["token"], "properties": {"token": {"type": "string"}}})),
                    "responses": {"200": ok("{csrf, ask}"), "401": error}}},
            "/login/link": {"post": {"summary": "Log the browser in with a login link's fields (form-encoded code, or ask, exp and sig): a session cookie and a redirect to the page, once per code or link", "security": [],
                    "responses": {"303": {"description": "logged in"}, "403": {"description": "used, expired or unknown code or link"}}}},
            "/logout": {"post": {"summary": "End the page's session", "responses": {"200": ok("true"), "401": error}}},
            "/whoami": {"get": {"summary": "How this request was authenticated; a page session's CSRF token (send it as X-Toolgate-CSRF with what changes state) and the one ask a link's login may see", "responses": {"200": ok("{via, csrf, ask, project}"), "401": error}}},
            "/answers": {"get": {"summary": "What was answered, how and by whom (the newest 200)", "responses": {"200": ok("[{kind, id, sessionID, action, resources, reply, by, time, message?}]"), "401": error}}},
            "/audit": {"get": {"summary": "The newest audit entries that match, oldest first", "parameters": [
                    {"name": "session", "in": "query", "schema": {"type": "string"}}, {"name": "tool", "in": "query", "schema": {"type": "string"}},
                    {"name": "effect", "in": "query", "schema": {"enum": ["allow", "deny", "ask"]}}, {"name": "limit", "in": "query", "schema": {"type": "integer", "default": 200, "maximum": 5000}}],
                "responses": {"200": ok("[entry]"), "401": error}}}
    });
    if let (Some(paths), Value::Object(page)) = (document.get_mut("paths").and_then(Value::as_object_mut), page) {
        paths.extend(page);
    }
    document
}

/// How [`serve`](crate::serve_http) guards the server: [`Options::new`], then setters
/// (more may come, hence `#[non_exhaustive]`).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// The bearer token every request must carry.
    pub token: String,
    /// Which `Host` and `Origin` values requests may name.
    pub hosts: HostRule,
    /// Timeouts and the connection cap.
    pub limits: Limits,
    /// The one-time code of the page's login link that `serve` prints (`/login?code=…`).
    pub login_code: Option<String>,
    /// What signs links to one ask (the webhooks'); `None`: a secret of the server's own,
    /// and nobody outside signs links.
    pub ask_links: Option<crate::web::AskLinks>,
    /// The local socket for the terminal commands, bound by [`crate::local::bind`]
    /// (`None`: no socket).
    pub local: Option<Arc<std::os::unix::net::UnixListener>>,
}

impl Options {
    /// Requests must carry `token` and name a host `hosts` admits; default [`Limits`].
    pub fn new(token: impl Into<String>, hosts: HostRule) -> Options {
        Options {
            token: token.into(),
            hosts,
            limits: Limits::default(),
            login_code: None,
            ask_links: None,
            local: None,
        }
    }

    /// The same options with a one-time login code for the page, usable for ten minutes.
    pub fn login_code(mut self, code: impl Into<String>) -> Options {
        self.login_code = Some(code.into());
        self
    }

    /// The same options checking ask links signed by `links`.
    pub fn ask_links(mut self, links: crate::web::AskLinks) -> Options {
        self.ask_links = Some(links);
        self
    }

    /// The same options, also serving the API on `listener` (from
    /// [`crate::local::bind`]), a Unix socket only this user can use, without the token
    /// (for `toolgate pending`, `approve`, `shells`).
    pub fn local_socket(mut self, listener: std::os::unix::net::UnixListener) -> Options {
        self.local = Some(Arc::new(listener));
        self
    }

    /// The same options with other timeouts and connection cap.
    pub fn limits(mut self, limits: Limits) -> Options {
        self.limits = limits;
        self
    }
}

/// Forwards one source's events into the event stream until the source closes. If the
/// forwarder falls behind the source (`missed` events dropped before it saw them), every
/// client is told with an `events.lagged` notice naming the source, in the shape a slow
/// client's own lag takes: a gap is never silent.
async fn forward<E: Clone>(
    mut from: broadcast::Receiver<E>,
    to: Arc<Hub>,
    source: &'static str,
    shape: impl Fn(&E) -> Option<(&'static str, Value)>,
) {
    loop {
        match from.recv().await {
            // Shaping serializes what the model saw: not worth doing for nobody.
            Ok(event) if to.is_listened() => {
                if let Some((kind, value)) = shape(&event) {
                    to.publish(kind, value.to_string());
                }
            }
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                let data = json!({"missed": missed, "source": source}).to_string();
                to.publish("events.lagged", data);
            }
            Err(broadcast::error::RecvError::Closed) => break,
        }
    }
}

/// The router over `parts` (the HTTP API and `/mcp`), guarded by `options`, and the
/// shared server state (for shutdown).
pub(crate) fn router(parts: Parts, options: &Options) -> (Router, Arc<Server>) {
    let events = Hub::new(options.limits.event_buffer);
    let (closing, _) = tokio::sync::watch::channel(false);
    let (mcp, end_mcp) = crate::mcp::streamable_http(parts.clone());
    let server = Arc::new(Server {
        parts,
        token: options.token.clone(),
        hosts: options.hosts.clone(),
        events,
        closing,
        auth_failures: Mutex::new(Bucket::new(SERVER_FREE_FAILURES, SERVER_FAILURES_PER_SECOND)),
        audit_budget: Mutex::new(AuditBudget {
            window: Instant::now(),
            written: 0,
            suppressed: 0,
        }),
        end_mcp,
        logins: crate::web::Logins::new(
            options.ask_links.clone().or_else(|| crate::web::AskLinks::new().ok()),
            options.login_code.as_deref(),
        ),
        answers: Arc::new(crate::answers::Answers::default()),
    });
    // What was asked and answered, for `GET /answers` and 409s: every event, listened to
    // or not.
    {
        let answers = Arc::clone(&server.answers);
        let mut permissions = server.service().subscribe();
        tokio::spawn(async move {
            loop {
                match permissions.recv().await {
                    Ok(event) => answers.permission(&event),
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => break,
                }
            }
        });
        let answers = Arc::clone(&server.answers);
        let mut questions = server.parts.questions.subscribe();
        tokio::spawn(async move {
            loop {
                match questions.recv().await {
                    Ok(event) => answers.question(&event),
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => break,
                }
            }
        });
    }
    // Forward call, permission and question events into the one event stream.
    tokio::spawn(forward(
        server.parts.gate.subscribe(),
        server.events.clone(),
        "calls",
        call_event,
    ));
    tokio::spawn(forward(
        server.service().subscribe(),
        server.events.clone(),
        "permissions",
        crate::wire::permission_event,
    ));
    tokio::spawn(forward(
        server.parts.questions.subscribe(),
        server.events.clone(),
        "questions",
        |event| Some(crate::wire::question_event(event)),
    ));
    if let Some(events) = &server.parts.events {
        tokio::spawn(forward(events.subscribe(), server.events.clone(), "shells", |event| {
            Some((event.kind, json!({"type": event.kind, "properties": event.properties})))
        }));
    }
    let router = Router::new()
        .route("/tool", get(tools))
        .route("/session/{id}", delete(end_session))
        .route("/session/{id}/call", post(call))
        .route("/permission", get(permissions))
        .route("/permission/{id}/reply", post(reply))
        .route("/question", get(list_questions))
        .route("/question/{id}/reply", post(answer))
        .route("/question/{id}/reject", post(dismiss))
        .route("/shell", get(shells))
        .route("/shell/{id}/output", get(shell_output))
        .route("/shell/{id}/kill", post(shell_kill))
        .route("/approvals", get(approvals))
        .route("/approvals/{id}", delete(remove_approval))
        .route("/trust", get(untrusted).post(trust_file))
        .route("/event", get(event_stream))
        .route("/doc", get(doc))
        // The person's page and its logins (web.rs).
        .route("/", get(page))
        .route("/app.js", get(page_script))
        .route("/style.css", get(page_style))
        .route("/login", get(login_page).post(login_token))
        .route("/login/link", post(login_link))
        .route("/logout", post(logout))
        .route("/whoami", get(whoami))
        .route("/answers", get(answers))
        .route("/audit", get(audit))
        .route_service("/mcp", mcp)
        .fallback(|| async { error(StatusCode::NOT_FOUND, "no such route; GET /doc lists them") })
        .layer(middleware::from_fn_with_state(Arc::clone(&server), guard))
        .with_state(Arc::clone(&server));
    (router, server)
}

/// Serves `parts` on `listener` until SIGINT or SIGTERM: then every pending ask and
/// question is declined, event streams and MCP sessions end, running calls get 5 s to
/// finish, and the rest are cancelled (their processes end with them).
pub async fn serve(parts: Parts, listener: tokio::net::TcpListener, options: Options) -> std::io::Result<()> {
    // Spill files older than 7 days go now and every hour, called or not.
    parts.gate.start_upkeep();
    let (router, server) = router(parts, &options);
    let (stop, stopped) = tokio::sync::watch::channel(false);
    if let Some(local) = &options.local {
        let listener = local
            .try_clone()
            .and_then(|listener| tokio::net::UnixListener::from_std(listener));
        match listener {
            Ok(listener) => {
                tokio::spawn(crate::local::serve(listener, router.clone(), stopped.clone()));
            }
            // The HTTP API still works; only the terminal commands cannot reach it.
            Err(error) => tracing::warn!("the local socket for the terminal commands: {error}"),
        }
    }
    let served = crate::listen::serve(listener, router, options.limits.clone(), stopped);
    tokio::pin!(served);
    tokio::select! {
        result = served.as_mut() => return result,
        () = crate::shutdown_signal() => {}
    }
    // Nobody will answer now: decline what waits, so its calls finish.
    server.service().shutdown();
    server.parts.questions.reject_all();
    let _ = server.closing.send(true);
    (server.end_mcp)();
    let _ = stop.send(true);
    let result = match tokio::time::timeout(Duration::from_secs(5), served).await {
        Ok(result) => result,
        Err(_) => Ok(()),
    };
    // Whatever the sessions started ends with the server.
    server.parts.end_sessions().await;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn a_forwarder_with_no_client_listening_shapes_nothing_and_one_that_comes_sees_the_rest() {
        let (source, receiver) = broadcast::channel::<u32>(16);
        let to = Hub::new(1 << 20);
        let shaped = std::sync::atomic::AtomicUsize::new(0);
        let forwarder = forward(receiver, Arc::clone(&to), "calls", |n| {
            shaped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Some(("tool.settled", json!({"n": n})))
        });
        tokio::pin!(forwarder);
        source.send(1).unwrap();
        source.send(2).unwrap();
        // Run the forwarder until it has taken both events and waits for more.
        assert!(futures_util::poll!(forwarder.as_mut()).is_pending());
        assert_eq!(shaped.load(std::sync::atomic::Ordering::Relaxed), 0);
        let mut client = to.subscribe();
        source.send(3).unwrap();
        drop(source);
        forwarder.await;
        assert_eq!(shaped.load(std::sync::atomic::Ordering::Relaxed), 1);
        let HubNext::Event(entry) = client.next().await else {
            panic!("the client lagged");
        };
        assert_eq!(entry.data, r#"{"n":3}"#);
        assert!(client.try_next().is_none());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_forwarder_that_falls_behind_tells_every_client_how_much_was_lost() {
        let (source, receiver) = broadcast::channel::<u32>(16);
        let to = Hub::new(1 << 20);
        let mut client = to.subscribe();
        // 20 events before the forwarder runs: the first 4 are gone when it starts.
        for n in 0..20 {
            source.send(n).unwrap();
        }
        drop(source);
        forward(receiver, Arc::clone(&to), "calls", |n| {
            Some(("tool.settled", json!({"n": n})))
        })
        .await;
        let HubNext::Event(lagged) = client.next().await else {
            panic!("the client lagged itself");
        };
        assert_eq!(lagged.kind, "events.lagged");
        assert_eq!(
            serde_json::from_str::<Value>(&lagged.data).unwrap(),
            json!({"missed": 4, "source": "calls"})
        );
        let mut seen = Vec::new();
        while let Some(HubNext::Event(entry)) = client.try_next() {
            assert_eq!(entry.kind, "tool.settled");
            seen.push(
                serde_json::from_str::<Value>(&entry.data).unwrap()["n"]
                    .as_u64()
                    .unwrap(),
            );
        }
        assert_eq!(seen, (4..20).collect::<Vec<u64>>(), "the rest arrive, in order");
    }
}
