//! The tools as an MCP server over stdio (`toolgate mcp`).
//!
//! `tools/list` is the catalog of one agent; `tools/call` settles through the same
//! registry, permission service and output bound as `toolgate call`. Permission asks are
//! put to the person through MCP elicitation when the client supports it (allow once,
//! allow always — naming the patterns it saves — or reject with feedback); otherwise they
//! are declined, unless `--auto` approves them once. stdout belongs to the protocol:
//! nothing else is ever written there.

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolgate_core::{Content, ModelResult};
use toolgate_gate::{Call, SettleError};
use toolgate_permission::{Event, PermissionService, Reply};

use crate::Parts;

/// What the person answers to a permission elicitation. Elicitation forms take flat,
/// primitive fields only: a plain string enum and a plain string.
#[derive(Debug, Deserialize, JsonSchema)]
struct Decision {
    /// once: allow this call; always: allow and save its patterns; reject: refuse.
    decision: Choice,
    /// Optional words for the model when rejecting.
    #[serde(default)]
    feedback: String,
}

// No doc comments on the variants: they would turn the enum into a `oneOf`, which an
// elicitation form cannot carry.
#[allow(missing_docs)]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
enum Choice {
    Once,
    Always,
    Reject,
}

rmcp::elicit_safe!(Decision);

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

    /// True once a client that declared the elicitation capability is connected.
    pub fn can_elicit(&self) -> bool {
        self.get()
            .as_ref()
            .and_then(|peer| peer.peer_info())
            .is_some_and(|info| info.capabilities.elicitation.is_some())
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

struct Mcp {
    parts: Parts,
    session: String,
    /// The client, once it has listed or called: asks are elicited through it.
    peer: ClientHandle,
    /// The registration tick the client's last `tools/list` saw.
    listed: Arc<std::sync::atomic::AtomicU64>,
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

impl ServerHandler for Mcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
            .with_server_info(rmcp::model::Implementation::new("toolgate", env!("CARGO_PKG_VERSION")))
            .with_instructions(
            "toolgate's tools (read, edit, bash, …) under its permission rules: a call may be refused by a rule or by the \
             person you are working with; a refusal's message says why.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.peer.set(&context.peer);
        self.parts.gate.prepare(None).await;
        if let Some(changes) = self.parts.gate.catalog_changes() {
            self.listed
                .store(*changes.borrow(), std::sync::atomic::Ordering::SeqCst);
        }
        let catalog = self.parts.gate.catalog(&self.parts.agent);
        let tools = catalog
            .definitions()
            .iter()
            .map(|definition| {
                let schema = match definition.input_schema.as_ref() {
                    Value::Object(map) => map.clone(),
                    _ => serde_json::Map::new(),
                };
                rmcp::model::Tool::new(
                    definition.name.clone(),
                    definition.description.to_string(),
                    Arc::new(schema),
                )
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.peer.set(&context.peer);
        self.parts.gate.prepare(Some(&request.name)).await;
        let input = request
            .arguments
            .map(Value::Object)
            .unwrap_or_else(|| Value::Object(Default::default()));
        let gate = &self.parts.gate;
        let catalog = gate.catalog(&self.parts.agent);
        // A client's `notifications/cancelled` only trips the token: dropping the call
        // future is what stops the call (a bash child, an upstream MCP request).
        // MCP has no assistant messages: the session is one message, so doom_loop counts
        // identical calls across it (spec §4.11).
        let one_message = Call::new(self.session.clone(), request.name, input).in_message(self.session.clone());
        let call = gate.call(&catalog, one_message);
        let settled = tokio::select! {
            settled = call => settled,
            () = context.ct.cancelled() => {
                return Err(ErrorData::internal_error("the call was cancelled by the client", None));
            }
        };
        let settled = match settled {
            Ok(settled) => settled.settlement,
            // The model called a name it was not offered (or no longer is): it is told, as
            // a tool error it can act on.
            Err(miss @ (SettleError::Unknown { .. } | SettleError::Stale { .. })) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(miss.to_string())]).into());
            }
            Err(failure) => return Err(ErrorData::internal_error(failure.to_string(), None)),
        };
        let result = match &settled.result {
            ModelResult::Error(message) => CallToolResult::error(vec![ContentBlock::text(message.clone())]),
            ModelResult::Text(text) => CallToolResult::success(vec![ContentBlock::text(text.clone())]),
            ModelResult::Content(parts) => CallToolResult::success(parts.iter().map(content_block).collect()),
            ModelResult::Json(value) => CallToolResult::success(vec![ContentBlock::text(value.to_string())]),
        };
        Ok(result.into())
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
    if request.save.is_empty() {
        text.push_str("\n\n`always` saves nothing here (same as once).");
    } else {
        text.push_str(&format!("\n\n`always` saves: {}", request.save.join(", ")));
    }
    text
}

/// Answers every permission request: through elicitation when the client can, else
/// declined (no one can answer).
async fn answer_asks(service: PermissionService, client: ClientHandle) {
    let mut events = service.subscribe();
    while let Ok(event) = events.recv().await {
        let Event::Asked(request) = event else { continue };
        let Some(peer) = client.get().filter(|_| client.can_elicit()) else {
            let reason = format!(
                "permission requested: {} ({}); declined (the MCP client cannot ask the user; start toolgate mcp with --auto to approve)",
                request.action,
                request.resources.join(", ")
            );
            let _ = service.decline(&request.id, &reason);
            continue;
        };
        let service = service.clone();
        tokio::spawn(async move {
            let answer = peer.elicit::<Decision>(message(&request)).await;
            if let Err(error) = &answer {
                eprintln!("toolgate: elicitation failed: {error}");
            }
            let _ = match answer {
                Ok(Some(Decision {
                    decision: Choice::Once, ..
                })) => service.reply(&request.id, Reply::Once, None),
                Ok(Some(Decision {
                    decision: Choice::Always,
                    ..
                })) => service.reply(&request.id, Reply::Always, None),
                Ok(Some(Decision {
                    decision: Choice::Reject,
                    feedback,
                })) => service.reply(
                    &request.id,
                    Reply::Reject,
                    // Non-empty as sent is a correction (spec §4.5), as over HTTP.
                    Some(feedback.as_str()).filter(|f| !f.is_empty()),
                ),
                // Dismissed, cancelled, timed out or unreadable: a refusal.
                _ => service.reply(&request.id, Reply::Reject, None),
            };
        });
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
    tokio::spawn(answer_asks(parts.gate.permissions().clone(), client.clone()));
    let listed = Arc::new(std::sync::atomic::AtomicU64::new(0));
    if let Some(changes) = parts.gate.catalog_changes() {
        tokio::spawn(announce_changes(changes, client.clone(), Arc::clone(&listed)));
    }
    let service = parts.gate.permissions().clone();
    let handler = Mcp {
        parts,
        session: toolgate_core::id::ascending("ses"),
        peer: client,
        listed,
    };
    let running = handler
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("MCP handshake failed: {e}"))?;
    let ended = running.waiting().await;
    service.shutdown();
    ended.map(|_| ()).map_err(|e| format!("MCP server stopped: {e}"))
}
