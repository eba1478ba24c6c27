//! `toolgate mcp` whose project comes from the client: MCP roots.
//!
//! An editor starts `toolgate mcp` in a directory of its own choosing and names the
//! workspace as its roots (MCP `roots/list`). Without `--dir`, the parts are built once
//! the client is initialized: when it declares the `roots` capability it is asked for
//! them, and its first `file://` root is the project; otherwise (or when it has none,
//! or the root is no directory) the current directory is. Requests that come before
//! the parts are ready wait for them.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorData, ListToolsResult, PaginatedRequestParams, ServerConfig,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer};

use super::{
    ClientHandle, Clients, Mcp, Unanswerable, accepted_filter, answer_asks, answer_questions, listen_for_changes,
    server_info,
};
use crate::Parts;

/// Builds the parts of `toolgate mcp` for a project directory: the client's root, or
/// `None` for the directory the command line names (`--dir`, else the current one).
pub type PartsFor = Box<dyn FnOnce(Option<PathBuf>) -> Result<Parts, String> + Send>;

/// How long the client has to answer `roots/list` before the current directory is used.
const ROOTS_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The session once its parts are built: the handler, and the tasks that answer asks
/// and questions through the client.
pub(super) struct Ready {
    pub(super) mcp: Mcp,
    pub(super) tasks: Vec<tokio::task::AbortHandle>,
}

pub(super) type Slot = Option<Result<Arc<Ready>, String>>;

/// The MCP handler of `toolgate mcp`: [`Mcp`] once the parts are built.
pub(super) struct Lazy {
    ready: tokio::sync::watch::Sender<Slot>,
    /// Taken when the client is initialized; `None` once built (or built from the start).
    build: Mutex<Option<PartsFor>>,
    client: ClientHandle,
    clients: Clients,
}

impl Lazy {
    /// A handler whose parts are built when the client is initialized, from its roots
    /// when it declares them.
    pub(super) fn deferred(build: PartsFor, client: ClientHandle) -> Lazy {
        Lazy {
            ready: tokio::sync::watch::Sender::new(None),
            build: Mutex::new(Some(build)),
            client,
            clients: Clients::default(),
        }
    }

    /// A handler over `parts`, ready at once.
    pub(super) fn built(parts: Parts, client: ClientHandle) -> Lazy {
        let lazy = Lazy {
            ready: tokio::sync::watch::Sender::new(None),
            build: Mutex::new(None),
            client,
            clients: Clients::default(),
        };
        lazy.start(parts);
        lazy
    }

    fn start(&self, parts: Parts) {
        // Spill files older than 7 days go now and every hour, called or not.
        parts.gate.start_upkeep();
        let asks = tokio::spawn(answer_asks(
            parts.gate.permissions().clone(),
            self.clients.clone(),
            Unanswerable::Decline,
        ));
        let questions = tokio::spawn(answer_questions(
            parts.questions.clone(),
            self.clients.clone(),
            Unanswerable::Decline,
        ));
        let mcp = Mcp::new(parts, self.client.clone(), self.clients.clone(), Unanswerable::Decline);
        let ready = Ready {
            mcp,
            tasks: vec![asks.abort_handle(), questions.abort_handle()],
        };
        self.ready.send_replace(Some(Ok(Arc::new(ready))));
    }

    /// The session, once built; a request that comes first waits for it. A request of
    /// MCP 2026-07-28 comes with no `initialize` before it (and no way to ask for roots):
    /// the parts are built for the directory the command line names.
    async fn mcp(&self, context: Option<&RequestContext<RoleServer>>) -> Result<Arc<Ready>, ErrorData> {
        let stateless = context
            .and_then(RequestContext::protocol_version)
            .is_some_and(|version| !version.has_initialize());
        if stateless {
            self.build(None).await;
        }
        let mut ready = self.ready.subscribe();
        let slot = ready
            .wait_for(Option::is_some)
            .await
            .map_err(|_| ErrorData::internal_error("toolgate mcp is shutting down", None))?;
        match slot.as_ref() {
            Some(Ok(ready)) => Ok(Arc::clone(ready)),
            Some(Err(failure)) => Err(ErrorData::internal_error(failure.clone(), None)),
            None => Err(ErrorData::internal_error("toolgate mcp is not ready", None)),
        }
    }

    /// Builds the parts for `root` (the current directory when `None`) unless they are
    /// built or being built.
    async fn build(&self, root: Option<PathBuf>) {
        let Some(build) = self.build.lock().ok().and_then(|mut build| build.take()) else {
            return;
        };
        // Building reads config files and opens the databases: off the runtime.
        match tokio::task::spawn_blocking(move || build(root)).await {
            Ok(Ok(parts)) => self.start(parts),
            Ok(Err(failure)) => {
                tracing::error!("{failure}");
                self.ready.send_replace(Some(Err(failure)));
            }
            Err(panicked) => {
                let failure = format!("building the tools failed: {panicked}");
                tracing::error!("{failure}");
                self.ready.send_replace(Some(Err(failure)));
            }
        }
    }

    /// The session as it is built (read at shutdown, after the handler is gone).
    pub(super) fn watch(&self) -> tokio::sync::watch::Receiver<Slot> {
        self.ready.subscribe()
    }
}

/// The project the client names: its first `file://` root that is a directory, when it
/// declared roots and answers `roots/list` in time.
#[allow(deprecated)]
async fn root_of(peer: &Peer<RoleServer>) -> Option<PathBuf> {
    let declared = peer.peer_info().is_some_and(|info| info.capabilities.roots.is_some());
    if !declared {
        return None;
    }
    let listed = match tokio::time::timeout(ROOTS_WAIT, peer.list_roots()).await {
        Ok(Ok(listed)) => listed,
        Ok(Err(error)) => {
            tracing::warn!("the client's roots/list failed ({error}); the project is the current directory");
            return None;
        }
        Err(_) => {
            tracing::warn!("the client did not answer roots/list; the project is the current directory");
            return None;
        }
    };
    let first = listed.roots.iter().find_map(|root| file_path(&root.uri))?;
    if first.is_dir() {
        Some(first)
    } else {
        tracing::warn!(
            "the client's root {} is not a directory; the project is the current directory",
            first.display()
        );
        None
    }
}

/// The local path of a `file://` URL (RFC 8089: no host, or `localhost`), its
/// percent-escapes decoded; `None` for any other URL.
pub(crate) fn file_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    if !path.starts_with('/') {
        return None;
    }
    let bytes = path.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(at + 1..at + 3)?).ok()?;
                decoded.push(u8::from_str_radix(hex, 16).ok()?);
                at += 3;
            }
            // A query or fragment is no part of a file's path.
            b'?' | b'#' => break,
            byte => {
                decoded.push(byte);
                at += 1;
            }
        }
    }
    use std::os::unix::ffi::OsStringExt;
    Some(PathBuf::from(std::ffi::OsString::from_vec(decoded)))
}

impl ServerHandler for Lazy {
    fn get_info(&self) -> ServerConfig {
        server_info()
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.mcp(Some(&context)).await?.mcp.set_level(request, context).await
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let pending = self.build.lock().is_ok_and(|build| build.is_some());
        if pending {
            let root = root_of(&context.peer).await;
            if let Some(root) = &root {
                tracing::info!("the project is the client's root {}", root.display());
            }
            self.build(root).await;
        }
        if let Ok(ready) = self.mcp(None).await {
            ready.mcp.on_initialized(context).await;
        }
    }

    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        accepted_filter(requested)
    }

    async fn listen(&self, subscription: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        let ready = self.mcp(Some(subscription.request_context())).await?;
        listen_for_changes(ready.mcp.parts.gate.catalog_changes(), subscription).await;
        Ok(())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.mcp(Some(&context)).await?.mcp.list_tools(request, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.mcp(Some(&context)).await?.mcp.call_tool(request, context).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_urls_are_local_paths_with_escapes_decoded() {
        assert_eq!(
            file_path("file:///home/ada/my%20project"),
            Some(PathBuf::from("/home/ada/my project"))
        );
        assert_eq!(file_path("file://localhost/srv/app"), Some(PathBuf::from("/srv/app")));
        assert_eq!(file_path("file:///srv/app?x=1#top"), Some(PathBuf::from("/srv/app")));
        assert_eq!(file_path("file://server/share"), None);
        assert_eq!(file_path("https://example.com/x"), None);
        assert_eq!(file_path("file:///bad%2"), None);
    }
}
