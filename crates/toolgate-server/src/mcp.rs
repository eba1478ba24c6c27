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

struct Mcp {
    parts: Parts,
    session: String,
    /// The client, once it has called: asks are elicited through it.
    peer: Arc<Mutex<Option<Peer<RoleServer>>>>,
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
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(rmcp::model::Implementation::new("toolgate", env!("CARGO_PKG_VERSION")))
            .with_instructions(
            "toolgate's tools (read, edit, bash, …) under its permission rules: a call may be refused by a rule or by the \
             person you are working with; a refusal's message says why.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
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
        if let Ok(mut peer) = self.peer.lock() {
            *peer = Some(context.peer.clone());
        }
        let input = request
            .arguments
            .map(Value::Object)
            .unwrap_or_else(|| Value::Object(Default::default()));
        let gate = &self.parts.gate;
        let catalog = gate.catalog(&self.parts.agent);
        let settled = match gate
            .call(&catalog, Call::new(self.session.clone(), request.name, input))
            .await
        {
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
        text.push_str(&format!("\n• {resource}"));
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
async fn answer_asks(service: PermissionService, peer: Arc<Mutex<Option<Peer<RoleServer>>>>) {
    let mut events = service.subscribe();
    while let Ok(event) = events.recv().await {
        let Event::Asked(request) = event else { continue };
        let peer = peer.lock().ok().and_then(|peer| peer.clone());
        let elicits = peer
            .as_ref()
            .and_then(|peer| peer.peer_info())
            .is_some_and(|info| info.capabilities.elicitation.is_some());
        let Some(peer) = peer.filter(|_| elicits) else {
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
                    Some(feedback.as_str()).filter(|f| !f.trim().is_empty()),
                ),
                // Dismissed, cancelled, timed out or unreadable: a refusal.
                _ => service.reply(&request.id, Reply::Reject, None),
            };
        });
    }
}

/// Serves `parts` over MCP on stdin/stdout until the client closes stdin.
pub async fn serve_stdio(parts: Parts) -> Result<(), String> {
    let peer = Arc::new(Mutex::new(None));
    tokio::spawn(answer_asks(parts.gate.permissions().clone(), Arc::clone(&peer)));
    let service = parts.gate.permissions().clone();
    let handler = Mcp {
        parts,
        session: toolgate_core::id::ascending("ses"),
        peer,
    };
    let running = handler
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("MCP handshake failed: {e}"))?;
    let ended = running.waiting().await;
    service.shutdown();
    ended.map(|_| ()).map_err(|e| format!("MCP server stopped: {e}"))
}
