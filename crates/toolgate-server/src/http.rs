//! The HTTP API and its server-sent events (`toolgate serve`).
//!
//! Every route needs `Authorization: Bearer <token>`. Calls settle through the same
//! registry, permission service and output bound as `toolgate call`; a call that asks
//! waits until a client answers on `/permission/{id}/reply`. A client that goes away
//! cancels its call (a running bash is killed with its process group).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use toolgate_builtins_session::QuestionEvent;
use toolgate_gate::{Call, GateEvent, SettleError};
use toolgate_permission::{Reply, ReplyError};

use crate::Parts;

/// Everything a request handler needs.
pub struct Server {
    parts: Parts,
    token: String,
    /// Every event as `(type, JSON)`, for `/event`.
    events: broadcast::Sender<(String, String)>,
    /// Set on shutdown: event streams end so the server can stop.
    closing: tokio::sync::watch::Sender<bool>,
}

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

async fn authorize(State(server): State<Shared>, request: Request, next: Next) -> Response {
    let expected = format!("Bearer {}", server.token);
    let given = request.headers().get("authorization").and_then(|v| v.to_str().ok());
    if given != Some(expected.as_str()) {
        return error(
            StatusCode::UNAUTHORIZED,
            "missing or wrong bearer token: send `Authorization: Bearer <token>` as printed by `toolgate serve`",
        );
    }
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
    server.parts.gate.prepare(None).await;
    let list: Vec<Value> = server
        .parts
        .gate
        .catalog(&agent)
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
    gate.prepare(Some(&body.tool)).await;
    let catalog = gate.catalog(&agent);
    let message = body.message.unwrap_or_else(|| session.clone());
    match gate
        .call(&catalog, Call::new(session, body.tool, input).in_message(message))
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
        Err(SettleError::Unknown { name }) => error(
            StatusCode::BAD_REQUEST,
            format!("unknown tool {name:?} for agent {agent}"),
        ),
        Err(stale @ SettleError::Stale { .. }) => error(StatusCode::CONFLICT, stale.to_string()),
        Err(failure) => error(StatusCode::INTERNAL_SERVER_ERROR, failure.to_string()),
    }
}

async fn permissions(State(server): State<Shared>) -> Response {
    let pending: Vec<Value> = server.service().pending().iter().map(crate::wire::request).collect();
    axum::Json(pending).into_response()
}

#[derive(Deserialize)]
struct ReplyBody {
    reply: Reply,
    message: Option<String>,
}

async fn reply(State(server): State<Shared>, Path(id): Path<String>, body: Bytes) -> Response {
    let body: ReplyBody = match parse(&body) {
        Ok(body) => body,
        Err(refused) => return refused.into_response(),
    };
    match server.service().reply(&id, body.reply, body.message.as_deref()) {
        Ok(()) => axum::Json(true).into_response(),
        Err(ReplyError::NotFound(_)) => error(StatusCode::NOT_FOUND, format!("no pending permission request {id}")),
        Err(other) => error(StatusCode::INTERNAL_SERVER_ERROR, other.to_string()),
    }
}

async fn list_questions(State(server): State<Shared>) -> Response {
    axum::Json(server.parts.questions.pending()).into_response()
}

#[derive(Deserialize)]
struct AnswerBody {
    answers: Vec<Vec<String>>,
}

async fn answer(State(server): State<Shared>, Path(id): Path<String>, body: Bytes) -> Response {
    let body: AnswerBody = match parse(&body) {
        Ok(body) => body,
        Err(refused) => return refused.into_response(),
    };
    match server.parts.questions.reply(&id, body.answers) {
        Ok(()) => axum::Json(true).into_response(),
        Err(toolgate_builtins_session::QuestionError::NotFound(_)) => {
            error(StatusCode::NOT_FOUND, format!("no pending question {id}"))
        }
        Err(other) => error(StatusCode::BAD_REQUEST, other.to_string()),
    }
}

async fn dismiss(State(server): State<Shared>, Path(id): Path<String>) -> Response {
    match server.parts.questions.reject(&id) {
        Ok(()) => axum::Json(true).into_response(),
        Err(_) => error(StatusCode::NOT_FOUND, format!("no pending question {id}")),
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
    match server.service().store().map(|store| store.remove(&id)) {
        Some(Ok(true)) => axum::Json(true).into_response(),
        Some(Ok(false)) | None => error(StatusCode::NOT_FOUND, format!("no saved approval {id}")),
        Some(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn event_stream(
    State(server): State<Shared>,
) -> Sse<impl futures_util::Stream<Item = Result<SseEvent, std::convert::Infallible>>> {
    let receiver = server.events.subscribe();
    let closing = server.closing.subscribe();
    let stream = futures_util::stream::unfold((receiver, closing), |(mut receiver, mut closing)| async move {
        let next = tokio::select! {
            next = receiver.recv() => next,
            _ = closing.wait_for(|closed| *closed) => return None,
        };
        let event = match next {
            Ok((kind, data)) => SseEvent::default().event(kind).data(data),
            // A slow client misses events rather than stalling everyone; it is told so.
            Err(broadcast::error::RecvError::Lagged(missed)) => SseEvent::default()
                .event("events.lagged")
                .data(json!({"missed": missed}).to_string()),
            Err(broadcast::error::RecvError::Closed) => return None,
        };
        Some((Ok(event), (receiver, closing)))
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
    json!({
        "openapi": "3.1.0",
        "info": {"title": "toolgate", "version": env!("CARGO_PKG_VERSION"), "description": "Tools for AI coding agents, and the rules that decide what they may do. Every route needs `Authorization: Bearer <token>`."},
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{"bearer": []}],
        "paths": {
            "/tool": {"get": {"summary": "The catalog an agent is offered", "parameters": [{"name": "agent", "in": "query", "schema": {"type": "string"}}], "responses": {"200": ok("[{name, description, inputSchema}]"), "400": error, "401": error}}},
            "/session/{id}/call": {"post": {"summary": "Settle one tool call (waits while a permission or question is pending)", "parameters": id("id"),
                "requestBody": body(json!({"type": "object", "required": ["tool"], "properties": {"tool": {"type": "string"}, "input": {"type": "object"}, "agent": {"type": "string"}, "message": {"type": "string", "description": "the assistant message the call belongs to (doom_loop counts per message; default: the session)"}}})),
                "responses": {"200": ok("{result, output, outputPaths, declined}"), "400": error, "401": error}}},
            "/permission": {"get": {"summary": "Pending permission requests", "responses": {"200": ok("[Request]"), "401": error}}},
            "/permission/{requestID}/reply": {"post": {"summary": "Answer a permission request", "parameters": id("requestID"),
                "requestBody": body(json!({"type": "object", "required": ["reply"], "properties": {"reply": {"enum": ["once", "always", "reject"]}, "message": {"type": "string"}}})),
                "responses": {"200": ok("true"), "400": error, "401": error, "404": error}}},
            "/question": {"get": {"summary": "Pending questions", "responses": {"200": ok("[QuestionRequest]"), "401": error}}},
            "/question/{id}/reply": {"post": {"summary": "Answer questions: one list of labels per question", "parameters": id("id"),
                "requestBody": body(json!({"type": "object", "required": ["answers"], "properties": {"answers": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}}})),
                "responses": {"200": ok("true"), "400": error, "401": error, "404": error}}},
            "/question/{id}/reject": {"post": {"summary": "Dismiss questions", "parameters": id("id"), "responses": {"200": ok("true"), "401": error, "404": error}}},
            "/approvals": {"get": {"summary": "Saved approvals of the project", "responses": {"200": ok("[Approval]"), "401": error}}},
            "/approvals/{id}": {"delete": {"summary": "Remove a saved approval", "parameters": id("id"), "responses": {"200": ok("true"), "401": error, "404": error}}},
            "/event": {"get": {"summary": "Server-sent events: permission.asked, permission.replied, question.asked, question.replied, question.rejected, tool.started, tool.settled, tool.failed, tool.cancelled", "responses": {"200": {"description": "text/event-stream"}, "401": error}}},
            "/doc": {"get": {"summary": "This document", "responses": {"200": ok("OpenAPI 3.1"), "401": error}}}
        }
    })
}

/// The router over `parts`, guarded by `token`, and the shared server state (for shutdown).
pub fn router(parts: Parts, token: String) -> (Router, Arc<Server>) {
    let (events, _) = broadcast::channel(4096);
    let (closing, _) = tokio::sync::watch::channel(false);
    let server = Arc::new(Server {
        parts,
        token,
        events,
        closing,
    });
    // Forward call, permission and question events into the one event stream.
    let mut call_events = server.parts.gate.subscribe();
    let forward = Arc::clone(&server);
    tokio::spawn(async move {
        loop {
            match call_events.recv().await {
                Ok(event) => {
                    if let Some((kind, value)) = call_event(&event) {
                        let _ = forward.events.send((kind.to_string(), value.to_string()));
                    }
                }
                // A lag here would be a lost event for every client: keep forwarding.
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => break,
            }
        }
    });
    let mut permission_events = server.service().subscribe();
    let forward = Arc::clone(&server);
    tokio::spawn(async move {
        loop {
            match permission_events.recv().await {
                Ok(event) => {
                    if let Some((kind, value)) = crate::wire::permission_event(&event) {
                        let _ = forward.events.send((kind.to_string(), value.to_string()));
                    }
                }
                // A lag here would be a lost event for every client: keep forwarding.
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => break,
            }
        }
    });
    let mut question_events = server.parts.questions.subscribe();
    let forward = Arc::clone(&server);
    tokio::spawn(async move {
        while let Ok(event) = question_events.recv().await {
            let kind = match &event {
                QuestionEvent::Asked(_) => "question.asked",
                QuestionEvent::Replied { .. } => "question.replied",
                QuestionEvent::Rejected { .. } => "question.rejected",
            };
            if let Ok(value) = serde_json::to_value(&event) {
                let _ = forward.events.send((kind.to_string(), value.to_string()));
            }
        }
    });
    let router = Router::new()
        .route("/tool", get(tools))
        .route("/session/{id}/call", post(call))
        .route("/permission", get(permissions))
        .route("/permission/{id}/reply", post(reply))
        .route("/question", get(list_questions))
        .route("/question/{id}/reply", post(answer))
        .route("/question/{id}/reject", post(dismiss))
        .route("/approvals", get(approvals))
        .route("/approvals/{id}", delete(remove_approval))
        .route("/event", get(event_stream))
        .route("/doc", get(doc))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "no such route; GET /doc lists them") })
        .layer(middleware::from_fn_with_state(Arc::clone(&server), authorize))
        .with_state(Arc::clone(&server));
    (router, server)
}

/// A fresh bearer token: 28 base62 characters from freshly keyed hashers.
pub fn random_token() -> String {
    let a = toolgate_core::id::ascending("t");
    let b = toolgate_core::id::ascending("t");
    format!("{}{}", &a[a.len() - 14..], &b[b.len() - 14..])
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = interrupt => {}
        _ = async { match terminate.as_mut() { Some(signal) => { signal.recv().await; } None => std::future::pending::<()>().await } } => {}
    }
}

/// Serves `parts` on `listener` until SIGINT or SIGTERM: then every pending ask and
/// question is declined, event streams end, running calls get 5 s to finish, and the
/// rest are cancelled (their processes end with them).
pub async fn serve(parts: Parts, listener: tokio::net::TcpListener, token: String) -> std::io::Result<()> {
    let (router, server) = router(parts, token);
    let graceful = axum::serve(listener, router).with_graceful_shutdown(async move {
        shutdown_signal().await;
        // Nobody will answer now: decline what waits, so its calls finish.
        server.service().shutdown();
        server.parts.questions.reject_all();
        let _ = server.closing.send(true);
    });
    tokio::select! {
        result = graceful => result,
        () = async { shutdown_signal().await; tokio::time::sleep(Duration::from_secs(5)).await } => Ok(()),
    }
}
