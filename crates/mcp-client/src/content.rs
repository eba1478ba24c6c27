//! An MCP `tools/call` result as a toolgate output or failure.
//!
//! Works on the result's JSON so every content type a server may send — including ones
//! newer than this client — has a defined outcome: text stays text, images and audio
//! stay media, embedded resources and resource links become text references (an
//! embedded text resource keeps its text), anything unknown becomes a short note.

use serde_json::Value;
use toolgate_core::{Content, ToolFailure, ToolOutput};

fn text_of<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// One MCP content block as toolgate content.
pub(crate) fn content_part(block: &Value) -> Content {
    let kind = text_of(block, "type").unwrap_or("");
    match kind {
        "text" => Content::text(text_of(block, "text").unwrap_or("")),
        "image" | "audio" => match (text_of(block, "mimeType"), text_of(block, "data")) {
            (Some(mime), Some(data)) => Content::media(mime, data),
            _ => Content::text(format!("[{kind} without data or MIME type]")),
        },
        "resource" => {
            let resource = block.get("resource").unwrap_or(&Value::Null);
            let uri = text_of(resource, "uri").unwrap_or("?");
            let mime = text_of(resource, "mimeType")
                .map(|m| format!(" ({m})"))
                .unwrap_or_default();
            match (text_of(resource, "text"), text_of(resource, "blob")) {
                (Some(text), _) => Content::text(format!("[resource {uri}{mime}]\n{text}")),
                (None, Some(blob)) => Content::text(format!(
                    "[resource {uri}{mime}: {} bytes of base64 not shown]",
                    blob.len()
                )),
                (None, None) => Content::text(format!("[resource {uri}{mime}]")),
            }
        }
        "resource_link" => {
            let uri = text_of(block, "uri").unwrap_or("?");
            let mut text = format!("[resource link {uri}");
            if let Some(name) = text_of(block, "name") {
                text.push_str(&format!(" \"{name}\""));
            }
            if let Some(mime) = text_of(block, "mimeType") {
                text.push_str(&format!(" ({mime})"));
            }
            text.push(']');
            if let Some(description) = text_of(block, "description") {
                text.push_str(&format!(" {description}"));
            }
            Content::text(text)
        }
        other => Content::text(format!("[unsupported MCP content type {other:?}]")),
    }
}

/// A `tools/call` result (its JSON) as what settle returns.
///
/// `isError` makes a failure carrying the server's text; otherwise `structuredContent`
/// is the structured output and the blocks are the model content. Without structured
/// content, one text block is the structured value too (as a builtin's string output
/// is), and anything else is the list of parts.
pub(crate) fn tool_result(result: &Value, server: &str, tool: &str) -> Result<ToolOutput, ToolFailure> {
    let blocks: &[Value] = result
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let content: Vec<Content> = blocks.iter().map(content_part).collect();
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let texts: Vec<&str> = content.iter().filter_map(Content::as_text).collect();
        let message = if texts.is_empty() {
            format!("MCP server `{server}` reported an error for `{tool}` without a message")
        } else {
            texts.join("\n")
        };
        return Err(ToolFailure::new(message));
    }
    let structured = match result.get("structuredContent") {
        Some(value) => value.clone(),
        None => match content.as_slice() {
            [Content::Text { text }] => Value::String(text.clone()),
            [] => Value::String(String::new()),
            parts => serde_json::to_value(parts).unwrap_or(Value::Null),
        },
    };
    Ok(ToolOutput::new(structured, content))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn every_content_type_has_an_outcome() {
        let result = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "file:///notes.md", "mimeType": "text/markdown", "text": "# Notes"}},
            {"type": "resource", "resource": {"uri": "file:///a.bin", "blob": "AAAA"}},
            {"type": "resource_link", "uri": "file:///big.log", "name": "big.log", "mimeType": "text/plain", "description": "the log"},
            {"type": "hologram"},
            {"type": "image"}
        ]});
        let output = tool_result(&result, "s", "t").unwrap();
        assert_eq!(
            output.content,
            vec![
                Content::text("hello"),
                Content::media("image/png", "iVBORw0KGgo="),
                Content::media("audio/wav", "UklGRg=="),
                Content::text("[resource file:///notes.md (text/markdown)]\n# Notes"),
                Content::text("[resource file:///a.bin: 4 bytes of base64 not shown]"),
                Content::text("[resource link file:///big.log \"big.log\" (text/plain)] the log"),
                Content::text("[unsupported MCP content type \"hologram\"]"),
                Content::text("[image without data or MIME type]"),
            ]
        );
        assert!(output.structured.is_array());
    }

    #[test]
    fn errors_carry_the_server_text_and_structured_content_wins() {
        let failed = tool_result(
            &json!({"isError": true, "content": [{"type": "text", "text": "boom"}, {"type": "text", "text": "again"}]}),
            "s",
            "t",
        );
        assert_eq!(failed.unwrap_err().message(), "boom\nagain");
        let silent = tool_result(&json!({"isError": true, "content": []}), "calc", "div");
        assert_eq!(
            silent.unwrap_err().message(),
            "MCP server `calc` reported an error for `div` without a message"
        );
        let structured = tool_result(
            &json!({"content": [{"type": "text", "text": "{\"sum\":3}"}], "structuredContent": {"sum": 3}}),
            "s",
            "t",
        )
        .unwrap();
        assert_eq!(structured.structured, json!({"sum": 3}));
        let text = tool_result(&json!({"content": [{"type": "text", "text": "3"}]}), "s", "t").unwrap();
        assert_eq!(text.structured, json!("3"));
        let empty = tool_result(&json!({}), "s", "t").unwrap();
        assert_eq!((empty.structured, empty.content), (json!(""), vec![]));
    }
}
