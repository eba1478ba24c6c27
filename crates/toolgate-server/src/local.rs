//! The local door of `toolgate serve`: the same API on a Unix socket that only the user
//! who runs the server can open, for the terminal commands (`toolgate pending`, `approve`,
//! `reject`, `shells`).
//!
//! The terminal commands must find and answer a running server without the token being
//! written anywhere in the clear. The socket's directory and file are the user's alone
//! (0700 and 0600), and every connection's peer is checked with `SO_PEERCRED`: a process
//! of another user is closed before it sends a byte, whatever the file modes say. A
//! browser cannot reach a Unix socket, so neither the bearer token nor the Host rule
//! (which keeps rebinding pages out of the TCP port) applies to it.

use std::convert::Infallible;
use std::path::{Path, PathBuf};

use axum::Router;
use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::Value;
use tokio::net::{UnixListener, UnixStream};
use tower_service::Service;

/// Marks a request that came through the local socket from the server's own user.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LocalPeer;

/// The longest socket path the kernel takes (`sun_path` is 108 bytes with its NUL).
pub const MAX_SOCKET_PATH: usize = 107;

/// Why the local socket could not be opened or a request through it failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocalError {
    /// The path is longer than a Unix socket's address can be.
    #[error("{0}: longer than the {MAX_SOCKET_PATH} bytes a Unix socket path may have")]
    TooLong(PathBuf),
    /// Something else exists where the socket goes.
    #[error("{0}: exists and is not a socket")]
    NotASocket(PathBuf),
    /// Binding, connecting, reading or writing failed.
    #[error("{path}: {error}")]
    Io {
        /// The socket.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// The server answered something that is not HTTP/1.1 or not JSON.
    #[error("the server's answer could not be read: {0}")]
    Protocol(String),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> LocalError + '_ {
    move |error| LocalError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// Binds the socket at `path` (a stale socket there is replaced) with mode 0600, for
/// [`HttpOptions::local_socket`](crate::HttpOptions::local_socket).
///
/// # Errors
/// [`LocalError::TooLong`], [`LocalError::NotASocket`], or the system's error.
pub fn bind(path: &Path) -> Result<std::os::unix::net::UnixListener, LocalError> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    if path.as_os_str().len() > MAX_SOCKET_PATH {
        return Err(LocalError::TooLong(path.to_path_buf()));
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => std::fs::remove_file(path).map_err(io(path))?,
        Ok(_) => return Err(LocalError::NotASocket(path.to_path_buf())),
        Err(_) => {}
    }
    let listener = std::os::unix::net::UnixListener::bind(path).map_err(io(path))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io(path))?;
    listener.set_nonblocking(true).map_err(io(path))?;
    Ok(listener)
}

/// Whether the peer of `stream` runs as this process's effective user.
fn same_user(stream: &UnixStream) -> bool {
    rustix::net::sockopt::socket_peercred(stream).is_ok_and(|peer| peer.uid == rustix::process::geteuid())
}

/// Serves `router` on `listener` until `closing` turns true. Connections of other users
/// are closed at once.
pub(crate) async fn serve(listener: UnixListener, router: Router, mut closing: tokio::sync::watch::Receiver<bool>) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = closing.wait_for(|closed| *closed) => break,
        };
        let Ok((stream, _)) = accepted else {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            continue;
        };
        if !same_user(&stream) {
            continue;
        }
        let router = router.clone();
        let mut closing = closing.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
                request.extensions_mut().insert(LocalPeer);
                let mut router = router.clone();
                async move {
                    match router.call(request).await {
                        Ok(response) => Ok::<_, Infallible>(response),
                        Err(never) => match never {},
                    }
                }
            });
            let served = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            tokio::pin!(served);
            tokio::select! {
                _ = served.as_mut() => {}
                () = async { let _ = closing.wait_for(|closed| *closed).await; } => {
                    served.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), served).await;
                }
            }
        });
    }
}

/// One request to the server listening on `socket`: `method` on `path` with an optional
/// JSON body; the status and the JSON answer (`null` for an empty one).
///
/// # Errors
/// [`LocalError::Io`] when nothing listens there (no server, or a stale socket),
/// [`LocalError::Protocol`] for an answer that is not JSON.
pub async fn request(
    socket: &Path,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Result<(u16, Value), LocalError> {
    let stream = UnixStream::connect(socket).await.map_err(io(socket))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
        .await
        .map_err(|e| LocalError::Protocol(e.to_string()))?;
    tokio::spawn(connection);
    let bytes = body.map(|body| Bytes::from(body.to_string())).unwrap_or_default();
    let request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, "localhost")
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(bytes))
        .map_err(|e| LocalError::Protocol(e.to_string()))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| LocalError::Protocol(e.to_string()))?;
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| LocalError::Protocol(e.to_string()))?
        .to_bytes();
    if body.is_empty() {
        return Ok((status, Value::Null));
    }
    let value = serde_json::from_slice(&body).map_err(|e| LocalError::Protocol(e.to_string()))?;
    Ok((status, value))
}
