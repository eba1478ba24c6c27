//! The older HTTP+SSE transport (protocol 2024-11-05), for servers that do not speak
//! streamable HTTP: a GET opens an event stream whose first `endpoint` event names where
//! to POST messages; every server message arrives as a `message` event.

use std::time::Duration;

use futures_util::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;

/// Why the transport could not connect or send.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SseError {
    /// The HTTP exchange failed.
    #[error("{0}")]
    Http(String),
}

/// A connected HTTP+SSE transport.
pub(crate) struct LegacySse {
    client: reqwest::Client,
    endpoint: reqwest::Url,
    headers: HeaderMap,
    messages: mpsc::Receiver<RxJsonRpcMessage<RoleClient>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for LegacySse {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Opens the event stream at `url` and waits (up to `wait`) for its `endpoint` event.
pub(crate) async fn connect(
    client: reqwest::Client,
    url: &str,
    headers: HeaderMap,
    wait: Duration,
) -> Result<LegacySse, SseError> {
    let base = reqwest::Url::parse(url).map_err(|e| SseError::Http(format!("not a URL: {e}")))?;
    let response = client
        .get(base.clone())
        .headers(headers.clone())
        .header(ACCEPT, "text/event-stream")
        .send()
        .await
        .map_err(|e| SseError::Http(e.to_string()))?;
    let status = response.status();
    let is_stream = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !status.is_success() || !is_stream {
        return Err(SseError::Http(format!("GET answered {status}, not an event stream")));
    }
    let mut events = sse_stream::SseStream::from_bytes_stream(response.bytes_stream());
    let endpoint = tokio::time::timeout(wait, async {
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| SseError::Http(e.to_string()))?;
            if event.event.as_deref() == Some("endpoint") {
                let data = event.data.unwrap_or_default();
                return base
                    .join(data.trim())
                    .map_err(|e| SseError::Http(format!("bad endpoint {data:?}: {e}")));
            }
        }
        Err(SseError::Http(
            "the event stream ended before its endpoint event".into(),
        ))
    })
    .await
    .map_err(|_| SseError::Http("no endpoint event in time".into()))??;
    // Our headers may carry credentials: never send them to another origin.
    if endpoint.origin() != base.origin() {
        return Err(SseError::Http(format!(
            "the server named an endpoint on another origin ({endpoint}); refused"
        )));
    }
    let (sender, messages) = mpsc::channel(64);
    let reader = tokio::spawn(async move {
        while let Some(Ok(event)) = events.next().await {
            if !matches!(event.event.as_deref(), None | Some("message")) {
                continue;
            }
            let Some(data) = event.data else { continue };
            // A line that is not a message is skipped, as the SDKs do.
            if let Ok(message) = serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(&data)
                && sender.send(message).await.is_err()
            {
                return;
            }
        }
    });
    Ok(LegacySse {
        client,
        endpoint,
        headers,
        messages,
        reader,
    })
}

impl Transport<RoleClient> for LegacySse {
    type Error = SseError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .json(&item);
        async move {
            let response = request.send().await.map_err(|e| SseError::Http(e.to_string()))?;
            if response.status().is_success() {
                Ok(())
            } else {
                Err(SseError::Http(format!("POST answered {}", response.status())))
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.messages.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        Ok(())
    }
}
