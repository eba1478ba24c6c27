//! The stdio transport to a local server: one JSON-RPC message per line, as rmcp's own
//! (`AsyncRwTransport`), with one difference: the answer to a `tools/call` is decoded
//! straight into its result.
//!
//! rmcp reads every incoming message through an untagged union of every result type a
//! server may send, trying them in turn until one fits; a `tools/call` result is the
//! sixteenth, and the tries cost more than anything else the gateway does per call.
//! This transport remembers the ids of the `tools/call` requests it sent and reads an
//! answer to one of them as that result directly. Everything else — and an answer that
//! does not read as a `tools/call` result (a task, an input round, an error) — goes
//! through rmcp's own codec, so it reads exactly as before.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolResult, ClientJsonRpcMessage, ClientRequest, ErrorData, JsonRpcMessage, JsonRpcVersion2_0, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::RoleClient;
use rmcp::transport::async_rw::{JsonRpcMessageCodec, JsonRpcMessageCodecError};
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_util::codec::Decoder;

/// How many unanswered `tools/call` ids are remembered: calls whose answer never comes
/// (cancelled ones) must not make the list grow for ever. An answer whose id was
/// forgotten still arrives, through rmcp's codec.
const REMEMBERED_CALLS: usize = 1024;

type Output = Arc<tokio::sync::Mutex<Option<Box<dyn AsyncWrite + Send + Unpin>>>>;

/// A `tools/call` answer, read directly. Unknown top-level members make it fall back
/// to rmcp's reading, which decides what such a message is.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallAnswer {
    #[allow(dead_code)]
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    result: CallToolResult,
}

/// The client side of a local server's stdin and stdout.
pub(crate) struct LineTransport<R> {
    input: BufReader<R>,
    output: Output,
    /// The bytes of the line being read: a read cancelled half-way resumes here.
    line: Vec<u8>,
    /// Ids of `tools/call` requests sent and not answered yet, oldest first.
    calls: Arc<Mutex<VecDeque<RequestId>>>,
    /// rmcp's reading of every other message.
    codec: JsonRpcMessageCodec<ServerJsonRpcMessage>,
    /// A message that did not read as JSON-RPC waits for its `Invalid request` answer.
    owe_error: bool,
}

impl<R: AsyncRead + Send + Unpin> LineTransport<R> {
    pub(crate) fn new(input: R, output: impl AsyncWrite + Send + Unpin + 'static) -> Self {
        LineTransport {
            input: BufReader::with_capacity(64 * 1024, input),
            output: Arc::new(tokio::sync::Mutex::new(Some(Box::new(output)))),
            line: Vec::new(),
            calls: Arc::new(Mutex::new(VecDeque::new())),
            codec: JsonRpcMessageCodec::default(),
            owe_error: false,
        }
    }

    /// Whether `id` is an unanswered `tools/call`; forgets it when it is.
    fn answers_call(&self, id: &RequestId) -> bool {
        let mut calls = self.calls.lock().unwrap_or_else(|poison| poison.into_inner());
        match calls.iter().position(|call| call == id) {
            Some(at) => {
                calls.remove(at);
                true
            }
            None => false,
        }
    }

    fn forget(&self, id: &RequestId) {
        let mut calls = self.calls.lock().unwrap_or_else(|poison| poison.into_inner());
        calls.retain(|call| call != id);
    }

    /// One line (without its end) as a message: `Ok(None)` for what is skipped.
    fn decode(&mut self, line: &[u8]) -> Result<Option<ServerJsonRpcMessage>, JsonRpcMessageCodecError> {
        let bytes = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        if let Ok(answer) = serde_json::from_slice::<CallAnswer>(bytes)
            && self.answers_call(&answer.id)
        {
            return Ok(Some(JsonRpcMessage::response(
                ServerResult::CallToolResult(answer.result),
                answer.id,
            )));
        }
        let mut framed = bytes::BytesMut::with_capacity(line.len() + 1);
        framed.extend_from_slice(line);
        framed.extend_from_slice(b"\n");
        let message = self.codec.decode(&mut framed)?;
        match &message {
            Some(JsonRpcMessage::Response(response)) => self.forget(&response.id),
            Some(JsonRpcMessage::Error(error)) => {
                if let Some(id) = &error.id {
                    self.forget(id);
                }
            }
            _ => {}
        }
        Ok(message)
    }
}

async fn write_line(output: &Output, line: &[u8]) -> std::io::Result<()> {
    let mut output = output.lock().await;
    let Some(output) = output.as_mut() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotConnected,
            "Transport is closed",
        ));
    };
    output.write_all(line).await?;
    output.flush().await
}

impl<R: AsyncRead + Send + Unpin> rmcp::transport::Transport<RoleClient> for LineTransport<R> {
    type Error = std::io::Error;

    fn send(&mut self, item: ClientJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &item
            && matches!(request.request, ClientRequest::CallToolRequest(_))
        {
            let mut calls = self.calls.lock().unwrap_or_else(|poison| poison.into_inner());
            if calls.len() >= REMEMBERED_CALLS {
                calls.pop_front();
            }
            calls.push_back(request.id.clone());
        }
        let output = Arc::clone(&self.output);
        async move {
            // One write per message: a line written in pieces wakes the reader per piece.
            let mut line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            line.push(b'\n');
            write_line(&output, &line).await
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        loop {
            if self.owe_error {
                let answer: ClientJsonRpcMessage =
                    JsonRpcMessage::error(ErrorData::invalid_request("Invalid request", None), None);
                let mut line = serde_json::to_vec(&answer).ok()?;
                line.push(b'\n');
                write_line(&self.output, &line).await.ok()?;
                self.owe_error = false;
            }
            // `receive` is polled inside a `select!`: a read dropped half-way leaves its
            // bytes in `self.line`, and the next call goes on with the same line.
            match self.input.read_until(b'\n', &mut self.line).await {
                Ok(0) => return None,
                Ok(_) if self.line.last() != Some(&b'\n') => return None,
                Ok(_) => {}
                Err(_) => return None,
            }
            let mut line = std::mem::take(&mut self.line);
            line.pop();
            let trimmed = line.strip_suffix(b"\r").unwrap_or(&line);
            let decoded = if trimmed.is_empty() {
                Ok(None)
            } else {
                self.decode(trimmed)
            };
            line.clear();
            self.line = line;
            match decoded {
                Ok(Some(message)) => return Some(message),
                Ok(None) => continue,
                Err(JsonRpcMessageCodecError::Serde(error)) => match error.classify() {
                    // Not JSON: nothing to answer (answering could echo for ever).
                    serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {}
                    // JSON but not a message: a protocol error, answered.
                    serde_json::error::Category::Data | serde_json::error::Category::Io => self.owe_error = true,
                },
                Err(_) => return None,
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.output.lock().await.take());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use rmcp::transport::Transport;
    use serde_json::json;

    /// What rmcp's own codec makes of `line` (the variant and every field).
    fn rmcp_reading(line: &str) -> String {
        let mut framed = bytes::BytesMut::from(format!("{line}\n").as_bytes());
        let message = JsonRpcMessageCodec::<ServerJsonRpcMessage>::default()
            .decode(&mut framed)
            .unwrap();
        format!("{message:?}")
    }

    fn call(id: i64) -> ClientJsonRpcMessage {
        let params = rmcp::model::CallToolRequestParams::new("echo")
            .with_arguments(json!({"text": "x"}).as_object().unwrap().clone());
        JsonRpcMessage::request(
            ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params)),
            RequestId::Number(id),
        )
    }

    /// Every answer reads as rmcp reads it, whether or not it answers a `tools/call`.
    #[tokio::test]
    async fn answers_read_as_rmcp_reads_them() {
        let lines = [
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ping"}],"isError":false}}"#,
            r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"x"}],"structuredContent":{"a":1},"_meta":{"k":"v"}}}"#,
            r#"{"id":3,"result":{"isError":true,"content":[{"type":"text","text":"boom"}]},"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":4,"result":{"resultType":"task","task":{"taskId":"t","status":"working","createdAt":"2025-01-01T00:00:00Z","lastUpdatedAt":"2025-01-01T00:00:00Z","ttl":null}}}"#,
            r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32602,"message":"Unknown tool"}}"#,
            r#"{"jsonrpc":"2.0","id":6,"result":{"content":[{"type":"image","data":"iVBO","mimeType":"image/png"}]},"extra":1}"#,
            r#"{"jsonrpc":"2.0","id":99,"result":{"tools":[]}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
            r#"{"jsonrpc":"2.0","id":"s1","method":"ping"}"#,
        ];
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (reader, _writer) = tokio::io::split(theirs);
        let (_their_reader, mut their_writer) = tokio::io::split(ours);
        let mut transport = LineTransport::new(reader, tokio::io::sink());
        for id in 1..=6 {
            transport.send(call(id)).await.unwrap();
        }
        for line in lines {
            their_writer.write_all(format!("{line}\r\n").as_bytes()).await.unwrap();
            let read = format!("{:?}", transport.receive().await);
            assert_eq!(read, rmcp_reading(line), "{line}");
        }
        // Every call was answered: none is left to match a later answer.
        assert!(transport.calls.lock().unwrap().is_empty());
    }

    /// Only an answer to a `tools/call` is read as its result: the same shape answering
    /// another request is left to rmcp.
    #[tokio::test]
    async fn only_call_ids_take_the_direct_reading() {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (reader, _writer) = tokio::io::split(theirs);
        let (_their_reader, mut their_writer) = tokio::io::split(ours);
        let mut transport = LineTransport::new(reader, tokio::io::sink());
        transport.send(call(7)).await.unwrap();
        let line = r#"{"jsonrpc":"2.0","id":8,"result":{"content":[]}}"#;
        their_writer.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        let read = format!("{:?}", transport.receive().await);
        assert_eq!(read, rmcp_reading(line));
        assert_eq!(transport.calls.lock().unwrap().len(), 1, "call 7 is still awaited");
    }
}
