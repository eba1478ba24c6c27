//! What a tool hands back: content parts for the model and the structured output.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One part of what the model sees.
///
/// Serialised in OpenCode's shape: `{"type":"text","text":…}` or
/// `{"type":"file","mime":…,"data":<base64>,"name"?:…}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Content {
    /// Plain text.
    Text {
        /// The text itself.
        text: String,
    },
    /// Media (an image, a PDF) carried inline as base64.
    #[serde(rename = "file")]
    Media {
        /// MIME type, e.g. `image/png`.
        mime: String,
        /// The bytes, base64-encoded (standard alphabet, padded).
        data: String,
        /// An optional file name shown next to the media.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
}

impl Content {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into() }
    }

    /// A media part from a MIME type and base64 data.
    pub fn media(mime: impl Into<String>, data: impl Into<String>) -> Self {
        Content::Media {
            mime: mime.into(),
            data: data.into(),
            name: None,
        }
    }

    /// The text of a text part, `None` for media.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text { text } => Some(text),
            Content::Media { .. } => None,
        }
    }

    /// True for media parts.
    pub fn is_media(&self) -> bool {
        matches!(self, Content::Media { .. })
    }
}

/// The successful result of one tool call, after encoding.
///
/// `structured` is the tool's output encoded as JSON; `content` is what the model reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolOutput {
    /// The encoded output value.
    pub structured: Value,
    /// The model-facing parts.
    pub content: Vec<Content>,
    /// How many escapes and invisible characters the tool already stripped from what it
    /// got (an MCP server's result, say): the output boundary reports them with its own
    /// redactions, so the audit log counts them. Never sent anywhere.
    #[serde(skip)]
    pub stripped: usize,
}

impl ToolOutput {
    /// An output from its encoded value and its model-facing parts.
    pub fn new(structured: Value, content: Vec<Content>) -> Self {
        ToolOutput {
            structured,
            content,
            stripped: 0,
        }
    }

    /// The same output, recording that `count` escapes and invisible characters were
    /// stripped from it before it was made.
    pub fn with_stripped(mut self, count: usize) -> Self {
        self.stripped = count;
        self
    }

    /// An output whose only model content is `text` and whose structured value is the same string.
    pub fn text(text: impl Into<String>) -> Self {
        let text = text.into();
        ToolOutput {
            structured: Value::String(text.clone()),
            content: vec![Content::text(text)],
            stripped: 0,
        }
    }
}

/// The value handed back to the model for one call (spec §1.5).
#[derive(Clone, Debug, PartialEq)]
pub enum ModelResult {
    /// Exactly one text part.
    Text(String),
    /// Several parts, or any media.
    Content(Vec<Content>),
    /// No content at all: the model sees the structured output.
    Json(Value),
    /// The call failed; the model sees the message.
    Error(String),
}

impl ModelResult {
    /// The model-facing value of a successful output.
    ///
    /// One text part is plain text; no content falls back to the structured value so the
    /// model never receives an empty answer; anything else is the list of parts.
    pub fn from_output(output: &ToolOutput) -> Self {
        match output.content.as_slice() {
            [] => ModelResult::Json(output.structured.clone()),
            [Content::Text { text }] => ModelResult::Text(text.clone()),
            parts => ModelResult::Content(parts.to_vec()),
        }
    }

    /// True for [`ModelResult::Error`].
    pub fn is_error(&self) -> bool {
        matches!(self, ModelResult::Error(_))
    }

    /// The JSON shape OpenCode's providers receive: `{type:"text"|"content"|"json"|"error", value}`.
    ///
    /// Media parts become `{type:"file", uri:"data:<mime>;base64,<data>", mime, name?}`.
    pub fn to_json(&self) -> Value {
        match self {
            ModelResult::Text(text) => serde_json::json!({"type": "text", "value": text}),
            ModelResult::Error(message) => serde_json::json!({"type": "error", "value": message}),
            ModelResult::Json(value) => serde_json::json!({"type": "json", "value": value}),
            ModelResult::Content(parts) => {
                let value: Vec<Value> = parts
                    .iter()
                    .map(|part| match part {
                        Content::Text { text } => serde_json::json!({"type": "text", "text": text}),
                        Content::Media { mime, data, name } => {
                            let mut file = serde_json::json!({
                                "type": "file",
                                "uri": format!("data:{mime};base64,{data}"),
                                "mime": mime,
                            });
                            if let (Some(name), Some(map)) = (name, file.as_object_mut()) {
                                map.insert("name".into(), Value::String(name.clone()));
                            }
                            file
                        }
                    })
                    .collect();
                serde_json::json!({"type": "content", "value": value})
            }
        }
    }
}
