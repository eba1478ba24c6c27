//! The invocation context every tool call receives.

use serde::{Deserialize, Serialize};

/// Who is calling: exactly the four fields of spec §1.2, nothing more.
///
/// Tools use it as the permission source (which session and agent ask) and to label
/// anything they store. It is plain data so a caller can build it from any transport.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Context {
    /// The session the call belongs to.
    #[serde(rename = "sessionID")]
    pub session_id: String,
    /// The agent whose rules apply.
    pub agent: String,
    /// The assistant message that issued the call.
    #[serde(rename = "assistantMessageID")]
    pub assistant_message_id: String,
    /// The model's id for this call.
    #[serde(rename = "toolCallID")]
    pub tool_call_id: String,
}

impl Context {
    /// A context for `session` and `agent`, with message and call ids left empty.
    pub fn new(session_id: impl Into<String>, agent: impl Into<String>) -> Self {
        Context {
            session_id: session_id.into(),
            agent: agent.into(),
            ..Context::default()
        }
    }

    /// The same context with the given assistant message id and tool call id.
    pub fn with_call(mut self, assistant_message_id: impl Into<String>, tool_call_id: impl Into<String>) -> Self {
        self.assistant_message_id = assistant_message_id.into();
        self.tool_call_id = tool_call_id.into();
        self
    }
}
