//! One answer per request id: a request whose id is the id of a request of the same
//! session still running is refused with `-32600`, never run.
//!
//! JSON-RPC 2.0 (§4) lets a client pick its ids, and names a response by its request's
//! id alone; two requests running under one id cannot both be answered. rmcp keys its
//! running requests by id, so a second request under a running id took the first's
//! place and the first answer was dropped. Over stdio the transport keeps the running
//! ids ([`InFlight`]); over streamable HTTP the session manager does ([`OneAnswerPerId`]).

use std::collections::HashSet;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;

use futures_util::Stream;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ErrorData, JsonRpcMessage, RequestId, ServerJsonRpcMessage,
};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{RestoreOutcome, ServerSseMessage, SessionId};

/// The ids of the requests that are running, by session (stdio has one session).
#[derive(Clone, Default)]
pub(crate) struct InFlight(Arc<Mutex<HashSet<(SessionId, RequestId)>>>);

impl InFlight {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<(SessionId, RequestId)>> {
        self.0.lock().unwrap_or_else(|poison| poison.into_inner())
    }

    /// Takes note of a message from the client of `session`: a request's id is taken
    /// (`Err` with the refusal to send back when it is already in use), a cancellation
    /// frees the id it names (rmcp sends no answer to a cancelled request).
    pub(crate) fn arrived(
        &self,
        session: &SessionId,
        message: &ClientJsonRpcMessage,
    ) -> Result<(), Box<ServerJsonRpcMessage>> {
        match message {
            JsonRpcMessage::Request(request) => {
                if self.lock().insert((Arc::clone(session), request.id.clone())) {
                    Ok(())
                } else {
                    Err(Box::new(in_use(&request.id)))
                }
            }
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) = &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    self.lock().remove(&(Arc::clone(session), id.clone()));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Takes note of a message to the client of `session`: an answer frees its id.
    pub(crate) fn sent(&self, session: &SessionId, message: &ServerJsonRpcMessage) {
        if let Some(id) = answer_id(message) {
            self.free(session, id);
        }
    }

    fn free(&self, session: &SessionId, id: &RequestId) {
        self.lock().remove(&(Arc::clone(session), id.clone()));
    }
}

/// The id a response or error answers.
fn answer_id(message: &ServerJsonRpcMessage) -> Option<&RequestId> {
    match message {
        JsonRpcMessage::Response(response) => Some(&response.id),
        JsonRpcMessage::Error(error) => error.id.as_ref(),
        _ => None,
    }
}

/// The refusal of a request whose id is in use.
fn in_use(id: &RequestId) -> ServerJsonRpcMessage {
    ServerJsonRpcMessage::error(
        ErrorData::invalid_request(
            format!("Invalid Request: request id {id} is already in use by a request that is still running"),
            None,
        ),
        Some(id.clone()),
    )
}

/// rmcp's in-memory session manager, refusing a request under an id in use.
#[derive(Default)]
pub(crate) struct OneAnswerPerId {
    inner: LocalSessionManager,
    running: InFlight,
}

/// The messages of one request's SSE stream; its id is free once the answer went
/// out or the stream is gone (the client no longer waits for it).
struct Answering<S> {
    inner: Pin<Box<S>>,
    running: InFlight,
    session: SessionId,
    id: Option<RequestId>,
}

impl<S> Drop for Answering<S> {
    fn drop(&mut self) {
        if let Some(id) = &self.id {
            self.running.free(&self.session, id);
        }
    }
}

impl<S: Stream<Item = ServerSseMessage>> Stream for Answering<S> {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, context: &mut std::task::Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.inner.as_mut().poll_next(context);
        if let Poll::Ready(Some(event)) = &polled
            && let Some(message) = &event.message
            && answer_id(message).is_some_and(|answered| self.id.as_ref() == Some(answered))
            && let Some(id) = self.id.take()
        {
            // Free now, not at the stream's end: the client may send its next request
            // under this id as soon as it has the answer.
            self.running.free(&self.session, &id);
        }
        polled
    }
}

impl SessionManager for OneAnswerPerId {
    type Error = <LocalSessionManager as SessionManager>::Error;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.running.lock().retain(|(session, _)| session != id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let request = match &message {
            JsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        if let Err(refusal) = self.running.arrived(id, &message) {
            let refused = futures_util::stream::iter([ServerSseMessage::from_message(*refusal)]);
            return Ok(futures_util::future::Either::Left(refused));
        }
        let answering = Answering {
            running: self.running.clone(),
            session: Arc::clone(id),
            id: request,
            inner: Box::pin(self.inner.create_stream(id, message).await?),
        };
        Ok(futures_util::future::Either::Right(answering))
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        // Only notifications and responses come here: a request's id is taken above.
        let _ = self.running.arrived(id, &message);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }

    async fn restore_session(&self, id: SessionId) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.inner.restore_session(id).await
    }

    fn event_store(&self) -> Option<Arc<dyn rmcp::transport::streamable_http_server::session::EventStore>> {
        self.inner.event_store()
    }
}
