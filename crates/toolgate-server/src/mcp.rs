//! The tools as an MCP server: over stdio (`toolgate mcp`) and over streamable HTTP at
//! `/mcp` (`toolgate serve`).
//!
//! `tools/list` is the catalog of one agent; `tools/call` settles through the gate, like
//! `toolgate call`. Permission asks are put to the person through MCP elicitation when
//! the client supports it (allow once, for this session or always for the project — both
//! naming the patterns they save, the ones `toolgate check` shows — or reject with
//! feedback; an edit of a file that defines the rules is offered once or reject only), and so are the `question` tool's questions (one form per
//! question: its options as an enum, an array of them when several may be chosen, and a
//! free-text field). A client that cannot elicit is not offered `question`; its asks are
//! declined over stdio (unless `--auto` approves them once) and wait for the HTTP API
//! (`/permission/{id}/reply`) under `toolgate serve`. While a call waits for a person,
//! a client that asked for progress gets `notifications/progress` naming what is asked
//! and where it can be answered, so it can keep waiting. Tools are listed with their
//! titles, annotations and (for object outputs) output schemas, and answer
//! `structuredContent`. stdout belongs to the protocol: nothing else is ever written there.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams, ElicitationAction,
    ElicitationSchema, ErrorData, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Value, json};
use toolgate_builtins_session::{QuestionEvent, QuestionRequest, QuestionService};
use toolgate_core::{Content, ModelResult};
use toolgate_gate::{Call, GateError};
use toolgate_permission::{Event, PermissionService, Reply};

use crate::Parts;

mod ids;
mod rooted;
pub(crate) mod stdio;

pub use rooted::PartsFor;

/// The client of `toolgate mcp`, once it has listed or called: permission asks and the
/// elicitations of upstream MCP servers are put to the person through it. Cheap to clone.
#[derive(Clone, Default)]
pub struct ClientHandle(Arc<Mutex<Option<Peer<RoleServer>>>>);

/// A client's answer to an elicitation passed on to it.
#[derive(Clone, Debug, PartialEq)]
pub enum Elicited {
    /// Accepted with these values.
    Accept(serde_json::Map<String, Value>),
    /// Declined.
    Decline,
    /// Dismissed.
    Cancel,
}

impl ClientHandle {
    fn set(&self, peer: &Peer<RoleServer>) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(peer.clone());
        }
    }

    fn get(&self) -> Option<Peer<RoleServer>> {
        self.0.lock().ok().and_then(|peer| peer.clone())
    }

    /// True once a client that declared form elicitation is connected.
    pub fn can_elicit(&self) -> bool {
        self.get().as_ref().is_some_and(elicits)
    }

    /// Passes a form elicitation (message and requested schema, as a server sent them)
    /// to the client.
    pub async fn elicit(&self, message: String, schema: Value) -> Result<Elicited, String> {
        let peer = self
            .get()
            .filter(|_| self.can_elicit())
            .ok_or("the MCP client cannot ask the user (no elicitation capability)")?;
        let requested_schema: rmcp::model::ElicitationSchema = serde_json::from_value(schema)
            .map_err(|e| format!("the requested schema is not an elicitation schema: {e}"))?;
        let result = peer
            .create_elicitation(rmcp::model::ElicitRequestParams::FormElicitationParams {
                meta: None,
                message,
                requested_schema,
            })
            .await
            .map_err(|e| e.to_string())?;
        Ok(match result.action {
            rmcp::model::ElicitationAction::Accept => match result.content {
                Some(Value::Object(values)) => Elicited::Accept(values),
                _ => Elicited::Accept(serde_json::Map::new()),
            },
            rmcp::model::ElicitationAction::Decline => Elicited::Decline,
            _ => Elicited::Cancel,
        })
    }
}

/// What happens to an ask or question no MCP client can answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unanswerable {
    /// Over stdio no one else can answer: decline it.
    Decline,
    /// Under `toolgate serve` the HTTP API may answer it: leave it pending.
    Leave,
}

/// The connected clients by session, so a session's asks and questions go to its own
/// client (one over stdio, one per `Mcp-Session-Id` over HTTP).
#[derive(Clone, Default)]
struct Clients {
    by_session: Arc<Mutex<HashMap<String, ClientHandle>>>,
}

impl Clients {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, ClientHandle>> {
        self.by_session.lock().unwrap_or_else(|poison| poison.into_inner())
    }

    fn insert(&self, session: &str, client: ClientHandle) {
        self.lock().insert(session.to_string(), client);
    }

    /// The session's client, when it is connected.
    fn get(&self, session: &str) -> Option<Peer<RoleServer>> {
        self.lock().get(session).and_then(ClientHandle::get)
    }

    fn remove(&self, session: &str) {
        self.lock().remove(session);
    }
}

/// Whether the client on `peer` said it can show forms, on a session that lets the
/// server ask (MCP before 2026-07-28: the stateless core has no server-to-client
/// requests, so its clients are treated as clients that cannot show forms).
fn elicits(peer: &Peer<RoleServer>) -> bool {
    let asks = peer
        .peer_info()
        .is_some_and(|info| info.protocol_version.has_initialize());
    asks && peer
        .supported_elicitation_modes()
        .contains(&rmcp::service::ElicitationMode::Form)
}

/// The notifications a `subscriptions/listen` stream of toolgate can carry (MCP
/// 2026-07-28, SEP-2575): `tools/list_changed` alone, when it was asked for.
fn accepted_filter(requested: &rmcp::model::SubscriptionFilter) -> Option<rmcp::model::SubscriptionFilter> {
    let tools = rmcp::model::SubscriptionFilter::builder().tools_list_changed().build();
    Some(requested.intersection(&tools))
}

/// Sends `tools/list_changed` on a 2026-07-28 client's `subscriptions/listen` stream at
/// every change of the registrations, until the client ends the stream: what the
/// session's notification does for older clients.
async fn listen_for_changes(
    changes: Option<tokio::sync::watch::Receiver<u64>>,
    subscription: rmcp::service::SubscriptionContext,
) {
    let Some(mut changes) = changes.filter(|_| subscription.accepted().tools_list_changed == Some(true)) else {
        subscription.cancelled().await;
        return;
    };
    changes.borrow_and_update();
    loop {
        tokio::select! {
            () = subscription.cancelled() => return,
            changed = changes.changed() => {
                if changed.is_err() {
                    subscription.cancelled().await;
                    return;
                }
                let notification = rmcp::model::ServerNotification::ToolListChangedNotification(Default::default());
                if subscription.sink().send(notification).await.is_err() {
                    return;
                }
            }
        }
    }
}

struct Mcp {
    parts: Parts,
    session: String,
    /// The client, once it has listed or called: asks are elicited through it.
    peer: ClientHandle,
    /// Every session's client, this one's included (removed when the session ends).
    clients: Clients,
    /// The registration tick the client's last `tools/list` saw.
    listed: Arc<std::sync::atomic::AtomicU64>,
    /// Tasks that live as long as the session (the `tools/list_changed` announcer).
    tasks: Vec<tokio::task::AbortHandle>,
    /// Who answers what this session's client cannot (named in progress messages).
    unanswerable: Unanswerable,
}

impl Drop for Mcp {
    fn drop(&mut self) {
        // The session is over: nothing can be elicited through its client any more.
        self.clients.remove(&self.session);
        for task in &self.tasks {
            task.abort();
        }
        // The client is gone: what its session started in the background ends too.
        if let (Some(sessions), Ok(runtime)) = (&self.parts.sessions, tokio::runtime::Handle::try_current()) {
            let (sessions, session) = (std::sync::Arc::clone(sessions), self.session.clone());
            runtime.spawn(async move {
                sessions.end_session(&session).await;
            });
        }
    }
}

impl Mcp {
    fn new(parts: Parts, peer: ClientHandle, clients: Clients, unanswerable: Unanswerable) -> Mcp {
        let session = toolgate_core::ascending_id("ses");
        clients.insert(&session, peer.clone());
        let listed = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let mut tasks = Vec::new();
        if let Some(changes) = parts.gate.catalog_changes() {
            let announcer = tokio::spawn(announce_changes(changes, peer.clone(), Arc::clone(&listed)));
            tasks.push(announcer.abort_handle());
        }
        if let Some(events) = &parts.events {
            let notifier = tokio::spawn(notify_events(events.subscribe(), peer.clone(), session.clone()));
            tasks.push(notifier.abort_handle());
        }
        Mcp {
            parts,
            session,
            peer,
            clients,
            listed,
            tasks,
            unanswerable,
        }
    }

    /// Whether `tool` is listed with an output schema (see [`output_schema`]), so its
    /// results carry `structuredContent`.
    fn has_output_schema(&self, tool: &str) -> bool {
        self.parts
            .gate
            .catalog(&self.parts.agent)
            .definitions()
            .iter()
            .find(|definition| definition.name == tool)
            .is_some_and(|definition| output_schema(definition).is_some())
    }

    /// Whether this client may be offered `name` at all: `question` only to a client that
    /// can show its forms (the catalog decides the rest).
    fn suits_client(name: &str, peer: &Peer<RoleServer>) -> bool {
        name != "question" || elicits(peer)
    }
}

fn content_block(part: &Content) -> ContentBlock {
    match part {
        Content::Text { text } => ContentBlock::text(text.clone()),
        Content::Media { mime, data, .. } if mime.starts_with("image/") => {
            ContentBlock::image(data.clone(), mime.clone())
        }
        Content::Media { mime, name, .. } => ContentBlock::text(format!(
            "[{mime} attachment{} omitted]",
            name.as_deref().map(|n| format!(" {n}")).unwrap_or_default()
        )),
    }
}

/// What toolgate says of itself at `initialize`.
#[allow(deprecated)]
fn server_info() -> ServerConfig {
    ServerConfig::new(
        ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            // Logging notifications carry the session's background-process events
            // (deprecated by SEP-2577, but what clients show today).
            .enable_logging()
            .build(),
    )
    .with_server_info(rmcp::model::Implementation::new("toolgate", env!("CARGO_PKG_VERSION")))
    .with_instructions(
        "toolgate's tools (read, edit, bash, …) under its permission rules: a call may be refused by a rule or by the \
         person you are working with; a refusal's message says why.",
    )
}

impl ServerHandler for Mcp {
    fn get_info(&self) -> ServerConfig {
        server_info()
    }

    /// The level is accepted: toolgate sends only its background-process events (info),
    /// whatever the level.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.peer.set(&context.peer);
    }

    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        accepted_filter(requested)
    }

    async fn listen(&self, subscription: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        listen_for_changes(self.parts.gate.catalog_changes(), subscription).await;
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.peer.set(&context.peer);
        let catalog = self.parts.gate.prepared_catalog(&self.parts.agent).await;
        if let Some(changes) = self.parts.gate.catalog_changes() {
            self.listed
                .store(*changes.borrow(), std::sync::atomic::Ordering::SeqCst);
        }
        let tools = catalog
            .definitions()
            .iter()
            .filter(|definition| Self::suits_client(&definition.name, &context.peer))
            .map(mcp_tool)
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.peer.set(&context.peer);
        let tool_name = request.name.to_string();
        let input = request
            .arguments
            .map(Value::Object)
            .unwrap_or_else(|| Value::Object(Default::default()));
        if !Self::suits_client(&request.name, &context.peer) {
            // Not offered to this client, as a name no catalog has: MCP makes a tool the
            // server does not offer a protocol error (-32602).
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {}", request.name),
                None,
            ));
        }
        // A client's `notifications/cancelled` only trips the token: dropping the call
        // future is what stops the call (a bash child, an upstream MCP request).
        // MCP has no assistant messages: the session is one message, so doom_loop counts
        // identical calls across it (spec §4.11).
        let one_message = Call::new(self.session.clone(), request.name, input).in_message(self.session.clone());
        let waits = Waits {
            parts: self.parts.clone(),
            call_id: one_message.id.clone(),
            session: self.session.clone(),
            unanswerable: self.unanswerable,
        };
        let call = self.parts.gate.run(&self.parts.agent, one_message);
        // While the call waits for a person, its client is told so (MCP progress), when
        // it asked for progress: a client that resets its timeout on progress then waits
        // as long as the person takes.
        let progress = async {
            if let Some(token) = context.meta.get_progress_token() {
                waits.report(&context.peer, token).await;
            }
            std::future::pending::<std::convert::Infallible>().await
        };
        let settled = tokio::select! {
            settled = call => settled,
            never = progress => match never {},
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("the call was cancelled by the client", None));
            }
        };
        let settled = match settled {
            Ok(settled) => settled.settlement,
            // MCP: a tool the server does not offer is a protocol error (-32602).
            Err(unknown @ GateError::Unknown { .. }) => {
                return Err(ErrorData::invalid_params(unknown.to_string(), None));
            }
            // Registered again since the catalog was made: the model is told, as a tool
            // error it can act on (list the tools and call again).
            Err(stale @ GateError::Stale { .. }) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(stale.to_string())]).into());
            }
            Err(failure) => return Err(ErrorData::internal_error(failure.to_string(), None)),
        };
        let mut result = match &settled.result {
            ModelResult::Error(message) => CallToolResult::error(vec![ContentBlock::text(message.clone())]),
            ModelResult::Text(text) => CallToolResult::success(vec![ContentBlock::text(text.clone())]),
            ModelResult::Content(parts) => CallToolResult::success(parts.iter().map(content_block).collect()),
            ModelResult::Json(value) => CallToolResult::success(vec![ContentBlock::text(value.to_string())]),
        };
        // A tool with an output schema (one listed with `outputSchema`) answers with its
        // structured value too; a client checks it against the schema.
        if !settled.result.is_error()
            && self.has_output_schema(&tool_name)
            && let Some(Value::Object(structured)) = settled.output.as_ref().map(|output| &output.structured)
        {
            let mut structured = Value::Object(structured.clone());
            drop_nulls(&mut structured);
            result.structured_content = Some(structured);
        }
        Ok(result.into())
    }
}

/// A tool as MCP lists it: its name, title, description and input schema, its
/// annotations (hints the tool gives about itself, [`toolgate_core::Annotations`]) and,
/// when its output is an object, its output schema.
fn mcp_tool(definition: &toolgate_core::ModelDefinition) -> rmcp::model::Tool {
    let schema = match definition.input_schema.as_ref() {
        Value::Object(map) => map.clone(),
        _ => serde_json::Map::new(),
    };
    let mut tool = rmcp::model::Tool::new(
        definition.name.clone(),
        definition.description.to_string(),
        Arc::new(schema),
    );
    if let Some(title) = &definition.title {
        tool = tool.with_title(title.to_string());
    }
    let hints = definition.annotations;
    if !hints.is_empty() {
        tool = tool.with_annotations(rmcp::model::ToolAnnotations::from_raw(
            None,
            hints.read_only,
            hints.destructive,
            hints.idempotent,
            hints.open_world,
        ));
    }
    if let Some(output) = output_schema(definition) {
        tool = tool.with_raw_output_schema(Arc::new(output));
    }
    tool
}

/// The output schema MCP lists for a tool whose output is an object (MCP wants an
/// object schema there; a tool answering plain text has none). Every member is
/// optional: a result whose text was cut to a file, or that carries media, keeps no
/// structured value but `{}` (the output store's bound, spec §3.5), and a client
/// checks `structuredContent` against this schema.
fn output_schema(definition: &toolgate_core::ModelDefinition) -> Option<serde_json::Map<String, Value>> {
    let Value::Object(schema) = definition.output_schema.as_ref() else {
        return None;
    };
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    let mut schema = schema.clone();
    schema.remove("required");
    Some(schema)
}

/// Removes members whose value is `null`, at every depth: the schemas describe an
/// absent optional member as absent, never as null (as the input schemas do).
fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(members) => {
            members.retain(|_, member| !member.is_null());
            members.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// How often a call waiting for a person says so to its client: well inside the
/// shortest timeouts clients put on a request (some give up after 5 s).
const WAIT_PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(3);

/// What one call may wait for: a permission ask of its own, or (for `question`) a
/// question of its session.
struct Waits {
    parts: Parts,
    call_id: String,
    session: String,
    unanswerable: Unanswerable,
}

impl Waits {
    /// Sends `notifications/progress` with `token` every [`WAIT_PROGRESS_EVERY`] while
    /// the call waits for a person, naming what is asked and where it can be answered.
    /// Never returns; dropped with the call.
    async fn report(&self, peer: &Peer<RoleServer>, token: rmcp::model::ProgressToken) {
        let mut ticks = tokio::time::interval(WAIT_PROGRESS_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut sent = 0u32;
        loop {
            ticks.tick().await;
            let Some(message) = self.waiting(elicits(peer)) else {
                continue;
            };
            sent = sent.saturating_add(1);
            // The value only has to grow (MCP); there is no total to wait for.
            let progress =
                rmcp::model::ProgressNotificationParam::new(token.clone(), f64::from(sent)).with_message(message);
            if peer.notify_progress(progress).await.is_err() {
                return;
            }
        }
    }

    /// What the call waits for now, as a sentence; `None` when it waits for no one.
    fn waiting(&self, elicited: bool) -> Option<String> {
        if let Some(request) = self
            .parts
            .gate
            .permissions()
            .pending()
            .into_iter()
            .find(|request| request.source.call_id == self.call_id)
        {
            let asked: Vec<&str> = request
                .resources
                .iter()
                .filter(|resource| !request.allowed.contains(resource))
                .map(String::as_str)
                .collect();
            let what = shorten(&format!("{}: {}", request.action, asked.join(", ")), 160);
            let how = self.how(
                elicited,
                Some(&format!("`toolgate approve {}`", request.id)),
                &format!("POST /permission/{}/reply", request.id),
            );
            return Some(format!(
                "waiting for a person to answer a permission ask ({what}) {how}"
            ));
        }
        let question = self
            .parts
            .questions
            .pending()
            .into_iter()
            .find(|question| question.session_id == self.session)?;
        let first = question
            .questions
            .first()
            .map(|prompt| prompt.question.as_str())
            .unwrap_or("");
        let how = self.how(elicited, None, &format!("POST /question/{}/reply", question.id));
        Some(format!(
            "waiting for a person to answer a question ({}) {how}",
            shorten(first, 160)
        ))
    }

    /// Where the person answers: the client's form, else `toolgate serve`'s page, the
    /// terminal or its HTTP API.
    fn how(&self, elicited: bool, terminal: Option<&str>, route: &str) -> String {
        match (elicited, self.unanswerable, terminal) {
            (true, _, _) => "via elicitation (a form in this MCP client)".to_string(),
            (false, Unanswerable::Leave, Some(terminal)) => {
                format!("in toolgate serve's page, on the terminal ({terminal}) or with {route}")
            }
            (false, Unanswerable::Leave, None) => format!("in toolgate serve's page or with {route}"),
            (false, Unanswerable::Decline, _) => "by no one (this client cannot show forms)".to_string(),
        }
    }
}

/// `text` cut to `limit` characters, with an ellipsis when cut.
fn shorten(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The elicitation text for one request.
fn message(request: &toolgate_permission::Request) -> String {
    let mut text = format!("toolgate: allow {}?", request.action);
    if let Some(command) = request.metadata.get("command").and_then(Value::as_str)
        && request.action == "bash"
    {
        text.push_str(&format!("\n$ {command}"));
    }
    // What the terminal prompt shows under the action: for an MCP server's tool, the
    // server, the hints it gives and the arguments (the gateway writes them there).
    if let Some(description) = request.metadata.get("description").and_then(Value::as_str) {
        text.push_str(&format!("\n{description}"));
    }
    for resource in &request.resources {
        if request.allowed.contains(resource) {
            text.push_str(&format!("\n✓ {resource} (already allowed by a rule)"));
        } else {
            text.push_str(&format!("\n• {resource}"));
        }
    }
    if let Some(diff) = request.metadata.get("diff").and_then(Value::as_str) {
        text.push_str(&format!("\n\n{diff}"));
    }
    // The terminal prompt's scopes (spec §10.1), naming exactly what `toolgate check`
    // shows as "always would save".
    if let Some(protected) = request.metadata.get("protected").and_then(Value::as_array) {
        let names: Vec<&str> = protected.iter().filter_map(Value::as_str).collect();
        text.push_str(&format!(
            "\n\n{} defines the rules or runs code through git: asked every time, never saved (once or reject).",
            names.join(", ")
        ));
    } else if request.save.is_empty() {
        text.push_str("\n\nNothing to save here: once or reject.");
    } else {
        let patterns = request.save.join(", ");
        text.push_str(&format!(
            "\n\n`session` allows for this session: {patterns}\n`always` saves for the project: {patterns}"
        ));
    }
    text
}

/// The choices offered for `request`: once, this session, always for the project, reject
/// — the last two scopes only when the request has patterns to save (a protected file's
/// edit never has: it is asked every time, README "Files that define the rules").
fn choices(request: &toolgate_permission::Request) -> &'static [&'static str] {
    if request.save.is_empty() {
        &["once", "reject"]
    } else {
        &["once", "session", "always", "reject"]
    }
}

/// The permission form: a plain string enum of [`choices`] and a free-text feedback
/// (elicitation forms take flat, primitive fields only).
fn decision_form(request: &toolgate_permission::Request) -> Value {
    json!({
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "description": "once: allow this call; session: allow its patterns for this session; always: save them for the project; reject: refuse",
                "enum": choices(request),
            },
            "feedback": {"type": "string", "title": "Optional words for the model when rejecting"},
        },
        "required": ["decision"],
    })
}

/// Puts `request` to the person; the reply and feedback, or `None` when no answer came.
async fn elicit_decision(
    peer: &Peer<RoleServer>,
    request: &toolgate_permission::Request,
) -> Option<(Reply, Option<String>)> {
    let Value::Object(form) = decision_form(request) else {
        return None;
    };
    let schema = ElicitationSchema::from_json_schema(form)
        .map_err(|error| tracing::warn!("permission form rejected: {error}"))
        .ok()?;
    let result = peer
        .create_elicitation(ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message(request),
            requested_schema: schema,
        })
        .await
        .map_err(|error| tracing::warn!("elicitation failed: {error}"))
        .ok()?;
    if !matches!(result.action, ElicitationAction::Accept) {
        return None;
    }
    let content = result.content.unwrap_or(Value::Null);
    let decision = content["decision"].as_str()?;
    // Only what was offered counts: a client may send anything.
    if !choices(request).contains(&decision) {
        return None;
    }
    let feedback = content["feedback"].as_str().map(str::trim).filter(|f| !f.is_empty());
    Some(match decision {
        "once" => (Reply::Once, None),
        "session" => (Reply::Session, None),
        "always" => (Reply::Always, None),
        // Non-empty as sent is a correction (spec §4.5), as over HTTP.
        _ => (Reply::Reject, feedback.map(str::to_string)),
    })
}

/// Answers every permission request of an MCP session through its client's
/// elicitation; what no client can answer is declined or left pending.
async fn answer_asks(service: PermissionService, clients: Clients, unanswerable: Unanswerable) {
    let mut events = service.subscribe();
    while let Ok(event) = events.recv().await {
        let Event::Asked(request) = event else { continue };
        let peer = clients.get(&request.session_id);
        let Some(peer) = peer.filter(elicits) else {
            if unanswerable == Unanswerable::Decline {
                let reason = format!(
                    "permission requested: {} ({}); declined (the MCP client cannot ask the user; start toolgate mcp with --auto to approve)",
                    request.action,
                    request.resources.join(", ")
                );
                let _ = service.decline(&request.id, &reason);
            }
            continue;
        };
        let service = service.clone();
        tokio::spawn(async move {
            // Dismissed, cancelled, timed out or unreadable: a refusal.
            let (reply, feedback) = elicit_decision(&peer, &request).await.unwrap_or((Reply::Reject, None));
            // The MCP client's person answered through its elicitation form.
            let by = toolgate_permission::DecisionSource::Reply {
                front_end: "mcp".into(),
                person: None,
            };
            let _ = service.reply_by(&request.id, reply, feedback.as_deref(), by);
        });
    }
}

/// The form for one question: its options as an enum (an array of them when several
/// may be chosen), and a free-text field for an answer in the person's own words.
pub(crate) fn question_form(prompt: &toolgate_builtins_session::Prompt) -> Value {
    let labels: Vec<&str> = prompt.options.iter().map(|o| o.label.as_str()).collect();
    let mut properties = serde_json::Map::new();
    if !labels.is_empty() {
        let choice = if prompt.multiple {
            json!({"type": "array", "title": prompt.header, "description": "Choose any of the options",
                   "items": {"type": "string", "enum": labels}})
        } else {
            json!({"type": "string", "title": prompt.header, "description": "Choose one option", "enum": labels})
        };
        properties.insert("answer".into(), choice);
    }
    properties.insert(
        "other".into(),
        json!({"type": "string", "title": "Or answer in your own words"}),
    );
    json!({"type": "object", "properties": properties})
}

fn question_message(prompt: &toolgate_builtins_session::Prompt) -> String {
    let mut text = format!("[{}] {}", prompt.header, prompt.question);
    for option in &prompt.options {
        text.push_str(&format!("\n• {} — {}", option.label, option.description));
    }
    text
}

/// Puts each question of `request` to the person, one form per question; `None` when
/// they cancelled (the questions are dismissed).
async fn elicit_questions(peer: &Peer<RoleServer>, request: &QuestionRequest) -> Option<Vec<Vec<String>>> {
    let mut answers = Vec::with_capacity(request.questions.len());
    for prompt in &request.questions {
        let Value::Object(form) = question_form(prompt) else {
            return None;
        };
        let schema = match ElicitationSchema::from_json_schema(form) {
            Ok(schema) => schema,
            Err(error) => {
                tracing::warn!("question form rejected: {error}");
                return None;
            }
        };
        let asked = peer
            .create_elicitation(ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: question_message(prompt),
                requested_schema: schema,
            })
            .await;
        let result = match asked {
            Ok(result) => result,
            Err(error) => {
                tracing::warn!("elicitation failed: {error}");
                return None;
            }
        };
        match result.action {
            ElicitationAction::Accept => {
                let content = result.content.unwrap_or(Value::Null);
                // Only the offered labels count as choices: a client may send anything.
                let offered = |label: &str| prompt.options.iter().any(|o| o.label == label);
                let mut answer: Vec<String> = match &content["answer"] {
                    Value::String(label) => vec![label.clone()],
                    Value::Array(labels) => labels.iter().filter_map(Value::as_str).map(str::to_string).collect(),
                    _ => Vec::new(),
                };
                answer.retain(|label| offered(label));
                if !prompt.multiple {
                    answer.truncate(1);
                }
                if let Some(own) = content["other"].as_str().map(str::trim).filter(|t| !t.is_empty()) {
                    answer.push(own.to_string());
                }
                answers.push(answer);
            }
            // Declined: this question stays unanswered; the others are still asked.
            ElicitationAction::Decline => answers.push(Vec::new()),
            // Cancelled (or an action this version does not know): all are dismissed.
            _ => return None,
        }
    }
    Some(answers)
}

/// Puts the questions of every MCP session to its client; what no client can answer is
/// dismissed or left pending.
async fn answer_questions(questions: QuestionService, clients: Clients, unanswerable: Unanswerable) {
    let mut events = questions.subscribe();
    while let Ok(event) = events.recv().await {
        let QuestionEvent::Asked(request) = event else { continue };
        let Some(peer) = clients.get(&request.session_id).filter(elicits) else {
            if unanswerable == Unanswerable::Decline {
                let _ = questions.reject(&request.id);
            }
            continue;
        };
        let questions = questions.clone();
        tokio::spawn(async move {
            let _ = match elicit_questions(&peer, &request).await {
                Some(answers) => questions.reply(&request.id, answers),
                None => questions.reject(&request.id),
            };
        });
    }
}

/// Passes the events of `session` (its background processes started, wrote, ended) to its
/// client as logging notifications, so it can tell the model without polling. MCP's
/// logging is deprecated (SEP-2577) with nothing yet in its place that clients show.
#[allow(deprecated)]
async fn notify_events(
    mut events: tokio::sync::broadcast::Receiver<crate::ServerEvent>,
    client: ClientHandle,
    session: String,
) {
    loop {
        let event = match events.recv().await {
            Ok(event) => event,
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        };
        if event.session() != Some(session.as_str()) {
            continue;
        }
        if let Some(peer) = client.get() {
            let data = serde_json::json!({"type": event.kind, "properties": event.properties});
            let message = rmcp::model::LoggingMessageNotificationParam::new(rmcp::model::LoggingLevel::Info, data)
                .with_logger("toolgate");
            let _ = peer.notify_logging_message(message).await;
        }
    }
}

/// Tells the client whenever registrations change after its last `tools/list`.
async fn announce_changes(
    mut changes: tokio::sync::watch::Receiver<u64>,
    client: ClientHandle,
    listed: Arc<std::sync::atomic::AtomicU64>,
) {
    while changes.changed().await.is_ok() {
        let tick = *changes.borrow_and_update();
        if tick <= listed.load(std::sync::atomic::Ordering::SeqCst) {
            continue;
        }
        if let Some(peer) = client.get() {
            let _ = peer.notify_tool_list_changed().await;
        }
    }
}

/// Serves `parts` over MCP on stdin/stdout until the client closes stdin. `client` is
/// filled in once the client is known, so others (the MCP gateway) can elicit through it.
pub async fn serve_stdio(parts: Parts, client: ClientHandle) -> Result<(), String> {
    serve_lazily(rooted::Lazy::built(parts, client)).await
}

/// Serves MCP on stdin/stdout like [`serve_stdio`], with parts built by `build` once
/// the client is initialized: from the client's first `file://` root when it declares
/// the `roots` capability (`toolgate mcp` without `--dir`), else for the directory the
/// command line names.
pub async fn serve_stdio_rooted(build: PartsFor, client: ClientHandle) -> Result<(), String> {
    serve_lazily(rooted::Lazy::deferred(build, client)).await
}

async fn serve_lazily(handler: rooted::Lazy) -> Result<(), String> {
    let built = handler.watch();
    let (input, output) = rmcp::transport::stdio_pipes();
    let running = handler
        .serve(stdio::LineTransport::new(input, output))
        .await
        .map_err(|e| format!("MCP handshake failed: {e}"))?;
    // SIGINT or SIGTERM ends the session as a closed stdin does: nothing it started may
    // outlive the server.
    let token = running.cancellation_token();
    let signalled = tokio::spawn(async move {
        crate::shutdown_signal().await;
        token.cancel();
    });
    let ended = running.waiting().await;
    signalled.abort();
    let ready = match built.borrow().as_ref() {
        Some(Ok(ready)) => Some(Arc::clone(ready)),
        _ => None,
    };
    if let Some(ready) = ready {
        ready.mcp.parts.gate.permissions().shutdown();
        for task in &ready.tasks {
            task.abort();
        }
        ready.mcp.parts.end_sessions().await;
    }
    ended.map(|_| ()).map_err(|e| format!("MCP server stopped: {e}"))
}

/// The MCP streamable HTTP service for `/mcp` (sessions with `Mcp-Session-Id`, SSE
/// streams for elicitation), and a function that ends every session (shutdown).
///
/// The caller guards it: `Host`, `Origin` and the bearer token are checked before a
/// request gets here.
pub(crate) fn streamable_http(parts: Parts) -> (McpHttp, Box<dyn Fn() + Send + Sync>) {
    let clients = Clients::default();
    tokio::spawn(answer_asks(
        parts.gate.permissions().clone(),
        clients.clone(),
        Unanswerable::Leave,
    ));
    tokio::spawn(answer_questions(
        parts.questions.clone(),
        clients.clone(),
        Unanswerable::Leave,
    ));
    // Host and Origin are checked by the router's guard, with the user's allow-list;
    // rmcp's own loopback-only check would refuse names the user allowed.
    let config = rmcp::transport::StreamableHttpServerConfig::default().disable_allowed_hosts();
    let cancel = config.cancellation_token.clone();
    let service = rmcp::transport::StreamableHttpService::new(
        move || {
            Ok(Mcp::new(
                parts.clone(),
                ClientHandle::default(),
                clients.clone(),
                Unanswerable::Leave,
            ))
        },
        Arc::new(ids::OneAnswerPerId::default()),
        config,
    );
    (McpHttp(service), Box::new(move || cancel.cancel()))
}

/// `/mcp`: rmcp's streamable HTTP service, with `DELETE` (a client ending its
/// session) answered `204 No Content` — what the SDKs expect of a session ended —
/// where rmcp answers `202 Accepted`.
#[derive(Clone)]
pub(crate) struct McpHttp(rmcp::transport::StreamableHttpService<Mcp, ids::OneAnswerPerId>);

impl tower_service::Service<axum::extract::Request> for McpHttp {
    type Response = axum::response::Response;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _context: &mut std::task::Context<'_>) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: axum::extract::Request) -> Self::Future {
        let ending = request.method() == axum::http::Method::DELETE;
        let answer = self.0.call(request);
        Box::pin(async move {
            let mut response = answer.await?.map(axum::body::Body::new);
            if ending && response.status() == axum::http::StatusCode::ACCEPTED {
                *response.status_mut() = axum::http::StatusCode::NO_CONTENT;
            }
            Ok(response)
        })
    }
}
