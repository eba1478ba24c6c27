//! MCP over stdio: one JSON-RPC message per line, read with a stated size limit.
//!
//! rmcp's own line codec drops what it cannot parse and drops lines over its limit
//! without a word, so a client waits forever for the answer to a request it sent. This
//! transport answers instead: a line that is not JSON gets `-32700 Parse error`, JSON
//! that is not a JSON-RPC message gets `-32600 Invalid Request`, and a line longer than
//! [`MAX_MESSAGE_BYTES`] gets `-32600` naming the limit, with the request's id when it
//! can be read from the start or the end of the line. Notifications and responses are
//! never answered (an answer to an answer could echo forever).

use std::sync::Arc;

use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, mpsc};

/// The largest message `toolgate mcp` reads: 16 MiB.
pub(crate) const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;

/// How much of the start and of the end of an oversized line is kept to find its id.
const KEPT_HEAD: usize = 64 * 1024;
const KEPT_TAIL: usize = 4 * 1024;

type Output = Arc<Mutex<Box<dyn AsyncWrite + Send + Unpin>>>;

/// The stdio transport: a reader task that answers malformed input itself, and a
/// writer shared with it so lines never interleave.
pub(crate) struct LineTransport {
    incoming: mpsc::Receiver<RxJsonRpcMessage<RoleServer>>,
    output: Output,
    reader: tokio::task::JoinHandle<()>,
    /// The ids of the requests running (one answer per id, [`super::ids`]).
    running: Running,
}

/// The running requests' ids of the one stdio session.
#[derive(Clone)]
struct Running {
    ids: super::ids::InFlight,
    session: rmcp::transport::streamable_http_server::SessionId,
}

impl LineTransport {
    /// A transport reading messages from `input` and writing them to `output`.
    pub(crate) fn new(
        input: impl AsyncRead + Send + Unpin + 'static,
        output: impl AsyncWrite + Send + Unpin + 'static,
    ) -> LineTransport {
        let output: Output = Arc::new(Mutex::new(Box::new(output)));
        let (deliver, incoming) = mpsc::channel(64);
        let running = Running {
            ids: super::ids::InFlight::default(),
            session: Arc::from("stdio"),
        };
        let reader = tokio::spawn(read_lines(input, deliver, Arc::clone(&output), running.clone()));
        LineTransport {
            incoming,
            output,
            reader,
            running,
        }
    }
}

impl Drop for LineTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

async fn write_line(output: &Output, mut line: Vec<u8>) -> std::io::Result<()> {
    line.push(b'\n');
    let mut output = output.lock().await;
    output.write_all(&line).await?;
    output.flush().await
}

impl rmcp::transport::Transport<RoleServer> for LineTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let output = Arc::clone(&self.output);
        self.running.ids.sent(&self.running.session, &item);
        async move {
            let line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            write_line(&output, line).await
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        self.incoming.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.incoming.close();
        Ok(())
    }
}

/// One line as it came in: whole, or too long (its start and end kept).
enum Line {
    Whole(Vec<u8>),
    Oversized {
        head: Vec<u8>,
        tail: Vec<u8>,
        length: usize,
    },
}

/// Reads lines until end of input (or until nobody receives), handing messages on and
/// answering what cannot be handed on.
async fn read_lines(
    input: impl AsyncRead + Unpin,
    deliver: mpsc::Sender<RxJsonRpcMessage<RoleServer>>,
    output: Output,
    running: Running,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, input);
    let mut line: Vec<u8> = Vec::new();
    let mut tail: Vec<u8> = Vec::new();
    let mut length = 0usize;
    loop {
        let (consumed, complete, eof) = match reader.fill_buf().await {
            Ok([]) => (0, !line.is_empty() || length > 0, true),
            Ok(available) => {
                let (chunk, complete) = match memchr(available) {
                    Some(at) => (&available[..at], true),
                    None => (available, false),
                };
                length += chunk.len();
                if length <= MAX_MESSAGE_BYTES {
                    line.extend_from_slice(chunk);
                } else {
                    if line.len() > KEPT_HEAD {
                        line.truncate(KEPT_HEAD);
                    } else if line.len() < KEPT_HEAD {
                        let room = KEPT_HEAD - line.len();
                        line.extend_from_slice(&chunk[..room.min(chunk.len())]);
                    }
                    tail.extend_from_slice(chunk);
                    if tail.len() > KEPT_TAIL {
                        tail.drain(..tail.len() - KEPT_TAIL);
                    }
                }
                (chunk.len() + usize::from(complete), complete, false)
            }
            Err(error) => {
                tracing::error!("reading stdin failed: {error}");
                return;
            }
        };
        reader.consume(consumed);
        if complete {
            let whole = if length > MAX_MESSAGE_BYTES {
                Line::Oversized {
                    head: std::mem::take(&mut line),
                    tail: std::mem::take(&mut tail),
                    length,
                }
            } else {
                Line::Whole(std::mem::take(&mut line))
            };
            length = 0;
            let answer = match whole {
                Line::Whole(bytes) => match parse(&bytes) {
                    Parsed::Message(message) => match running.ids.arrived(&running.session, &message) {
                        Ok(()) => {
                            if deliver.send(*message).await.is_err() {
                                return;
                            }
                            None
                        }
                        Err(refusal) => serde_json::to_vec(&refusal).ok(),
                    },
                    Parsed::Answer(answer) => Some(answer),
                    Parsed::Nothing => None,
                },
                Line::Oversized { head, tail, length } => {
                    let id = id_from_head(&head).or_else(|| id_from_tail(&tail));
                    tracing::warn!("refused a {length}-byte message (the limit is {MAX_MESSAGE_BYTES} bytes)");
                    Some(error(
                        id,
                        -32600,
                        &format!(
                            "Invalid Request: the message is {length} bytes; toolgate mcp reads messages of at most \
                             {MAX_MESSAGE_BYTES} bytes (16 MiB)"
                        ),
                    ))
                }
            };
            if let Some(answer) = answer
                && write_line(&output, answer).await.is_err()
            {
                return;
            }
        }
        if eof {
            return;
        }
    }
}

fn memchr(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

enum Parsed {
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// An error response to write back.
    Answer(Vec<u8>),
    /// Blank lines, and notifications or responses that cannot be used.
    Nothing,
}

fn error(id: Option<Value>, code: i64, message: &str) -> Vec<u8> {
    let id = id
        .filter(|id| id.is_string() || id.is_i64() || id.is_u64())
        .unwrap_or(Value::Null);
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        .to_string()
        .into_bytes()
}

fn parse(bytes: &[u8]) -> Parsed {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Parsed::Nothing;
    }
    if let Some(call) = call_request(bytes) {
        return Parsed::Message(Box::new(call));
    }
    // Well-formed messages (nearly all of them) are decoded once, straight from the
    // bytes; only a line that fails is read again as a plain value to tell a parse error
    // from an invalid request and to find its id.
    if let Ok(message) = serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(bytes) {
        return Parsed::Message(Box::new(message));
    }
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(value) => value,
        Err(failure) => {
            return Parsed::Answer(error(None, -32700, &format!("Parse error: {failure}")));
        }
    };
    match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value.clone()) {
        Ok(message) => Parsed::Message(Box::new(message)),
        Err(failure) => {
            let has = |key: &str| value.get(key).is_some();
            // A notification is never answered (JSON-RPC), and neither is a response:
            // an answer to an answer could echo back and forth forever.
            if has("method") && !has("id") || !has("method") && (has("result") || has("error")) {
                return Parsed::Nothing;
            }
            Parsed::Answer(error(
                value.get("id").cloned(),
                -32600,
                &format!("Invalid Request: not a JSON-RPC 2.0 request ({failure})"),
            ))
        }
    }
}

/// A member whose presence counts, whatever its value (`null` included).
struct Present;

impl<'de> serde::Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Present, D::Error> {
        <IgnoredAny as serde::Deserialize>::deserialize(deserializer)?;
        Ok(Present)
    }
}

fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Present>, D::Error> {
    <Present as serde::Deserialize>::deserialize(deserializer).map(Some)
}

/// A `tools/call` request as rmcp reads it, without trying every other request type
/// first (rmcp's message is an untagged union: the request is matched against each
/// kind of request in turn, and `tools/call` is the fourteenth).
#[derive(serde::Deserialize)]
struct CallRequest {
    jsonrpc: rmcp::model::JsonRpcVersion2_0,
    id: rmcp::model::RequestId,
    /// A request has no `result` or `error` (rmcp refuses such a message).
    #[serde(default, deserialize_with = "present")]
    result: Option<Present>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Present>,
    /// `method` (which must be `tools/call`) and `params`, read by rmcp's own request.
    #[serde(flatten)]
    request: rmcp::model::CallToolRequest,
}

/// The message of a line holding a `tools/call` request; `None` for any other line,
/// which goes the general way (and reads exactly as it did).
fn call_request(bytes: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
    let call: CallRequest = serde_json::from_slice(bytes).ok()?;
    if call.result.is_some() || call.error.is_some() {
        return None;
    }
    Some(rmcp::model::JsonRpcMessage::Request(rmcp::model::JsonRpcRequest {
        jsonrpc: call.jsonrpc,
        id: call.id,
        request: rmcp::model::ClientRequest::CallToolRequest(call.request),
    }))
}

/// The top-level `id` of a message whose start is `head`, when it comes before the
/// cut (Python clients write `jsonrpc`, `id`, `method`, `params`, in that order).
fn id_from_head(head: &[u8]) -> Option<Value> {
    struct FindId<'a>(&'a mut Option<Value>);
    impl<'de> DeserializeSeed<'de> for FindId<'_> {
        type Value = ();
        fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
            deserializer.deserialize_map(self)
        }
    }
    impl<'de> Visitor<'de> for FindId<'_> {
        type Value = ();
        fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            formatter.write_str("a JSON-RPC message")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<String>()? {
                if key == "id" {
                    *self.0 = Some(map.next_value()?);
                    return Ok(());
                }
                map.next_value::<IgnoredAny>()?;
            }
            Ok(())
        }
    }
    let mut id = None;
    // The cut makes the document end early: what was read before it still counts.
    let _ = FindId(&mut id).deserialize(&mut serde_json::Deserializer::from_slice(head));
    id
}

/// The top-level `id` of a message whose end is `tail`, when it is the last member
/// (TypeScript clients write `method`, `params`, `jsonrpc`, `id`).
fn id_from_tail(tail: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(tail);
    let text = text.trim_end();
    let body = text.strip_suffix('}')?;
    let mut search = body.len();
    while let Some(at) = body[..search].rfind("\"id\"") {
        search = at;
        let before = body[..at].trim_end();
        if !(before.ends_with(',') || before.ends_with('{')) {
            continue;
        }
        let Some(rest) = body[at + 4..].trim_start().strip_prefix(':') else {
            continue;
        };
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        if let Some(Ok(value)) = values.next()
            && rest[values.byte_offset()..].trim().is_empty()
        {
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A `tools/call` reads as rmcp reads it (every field, `_meta` included), and what
    /// rmcp refuses or reads as something else is left to the general way.
    #[test]
    fn tool_calls_read_as_rmcp_reads_them() {
        let calls = [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"py_echo","arguments":{"text":"ping 1"}}}"#,
            r#"{"method":"tools/call","params":{"_meta":{"progressToken":3},"name":"x","arguments":{"a":[1,{"b":null}]}},"jsonrpc":"2.0","id":"abc"}"#,
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"x"},"extra":true}"#,
        ];
        for line in calls {
            let rmcp: RxJsonRpcMessage<RoleServer> = serde_json::from_slice(line.as_bytes()).unwrap();
            let ours = call_request(line.as_bytes());
            assert_eq!(format!("{ours:?}"), format!("{:?}", Some(rmcp)), "{line}");
        }
        let others = [
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"x"},"result":null}"#,
            r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"x"},"error":{}}"#,
            r#"{"jsonrpc":"1.0","id":12,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":13,"method":"tools/call"}"#,
        ];
        for line in others {
            assert!(call_request(line.as_bytes()).is_none(), "{line}");
        }
        // The ones rmcp refuses are still refused, with an answer (a call without
        // `params` is not one: rmcp reads it as a custom request).
        for line in &others[2..5] {
            assert!(matches!(parse(line.as_bytes()), Parsed::Answer(_)), "{line}");
        }
    }

    #[test]
    fn ids_are_found_at_either_end_and_only_at_the_top() {
        assert_eq!(
            id_from_head(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"content":"xxxx"#),
            Some(json!(7))
        );
        assert_eq!(id_from_head(br#"{"jsonrpc":"2.0","params":{"id":9,"x":"xxxxx"#), None);
        assert_eq!(
            id_from_tail(br#"xxxxxxx"}},"jsonrpc":"2.0","id":"abc"}"#),
            Some(json!("abc"))
        );
        assert_eq!(id_from_tail(br#"xxxxxxx","id":3}},"jsonrpc":"2.0"}"#), None);
        assert_eq!(id_from_tail(br#"xx "id": 4}}"#), None);
    }
}
