//! The listener over real sockets, with short limits: a slow head, an idle connection and
//! a paused body are closed in time, and at the cap a new connection makes room by
//! closing an unauthenticated one, never an authenticated request in progress.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use toolgate_server::{Connection, Limits};

/// Requests with `x-auth: yes` count as authenticated.
async fn auth(request: Request, next: Next) -> Response {
    if request.headers().contains_key("x-auth")
        && let Some(connection) = request.extensions().get::<Arc<Connection>>()
    {
        connection.authenticated();
    }
    next.run(request).await
}

/// Answers at once with the head and `sl`, and 800 ms later with `ow`: a client that
/// has read the head knows its request is in progress.
async fn slow() -> Response {
    let chunks = futures_util::stream::unfold(0, |step| async move {
        match step {
            0 => Some((Ok::<_, std::convert::Infallible>(Bytes::from_static(b"sl")), 1)),
            1 => {
                tokio::time::sleep(Duration::from_millis(800)).await;
                Some((Ok(Bytes::from_static(b"ow")), 2))
            }
            _ => None,
        }
    });
    Response::new(axum::body::Body::from_stream(chunks))
}

/// Reads until the answer's head has arrived.
async fn until_head(stream: &mut TcpStream) -> String {
    let mut seen = Vec::new();
    let mut buffer = [0u8; 1024];
    while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buffer))
            .await
            .expect("no answer within 5 s")
            .unwrap();
        assert!(n > 0, "closed before the head");
        seen.extend_from_slice(&buffer[..n]);
    }
    String::from_utf8_lossy(&seen).into_owned()
}

async fn start(limits: Limits) -> (SocketAddr, tokio::sync::watch::Sender<bool>) {
    let router = Router::new()
        .route("/ok", get(|| async { "ok" }))
        .route("/slow", get(slow))
        .route("/echo", post(|body: Bytes| async move { body.len().to_string() }))
        .layer(middleware::from_fn(auth));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(toolgate_server::serve_router(listener, router, limits, stopped));
    (address, stop)
}

fn short(max_connections: usize) -> Limits {
    Limits::default()
        .header_read(Duration::from_millis(300))
        .idle(Duration::from_millis(600))
        .body_pause(Duration::from_millis(300))
        .max_connections(Some(max_connections))
}

/// Reads until the peer closes; returns what came and how long it took.
async fn until_closed(stream: &mut TcpStream, within: Duration) -> (String, Duration) {
    let started = Instant::now();
    let mut seen = Vec::new();
    let mut buffer = [0u8; 1024];
    loop {
        match tokio::time::timeout(within, stream.read(&mut buffer)).await {
            Err(_) => panic!("still open after {within:?}; got {:?}", String::from_utf8_lossy(&seen)),
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&seen).into_owned(), started.elapsed()),
            Ok(Ok(n)) => seen.extend_from_slice(&buffer[..n]),
        }
    }
}

async fn get_ok(address: SocketAddr, auth: bool) -> String {
    let mut stream = TcpStream::connect(address).await.unwrap();
    let auth = if auth { "x-auth: yes\r\n" } else { "" };
    stream
        .write_all(format!("GET /ok HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    until_closed(&mut stream, Duration::from_secs(5)).await.0
}

#[tokio::test]
async fn a_slow_head_is_closed_after_the_header_timeout() {
    let (address, _stop) = start(short(16)).await;
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream.write_all(b"GET /ok HTTP/1.1\r\nHo").await.unwrap();
    let (seen, took) = until_closed(&mut stream, Duration::from_secs(5)).await;
    assert_eq!(seen, "");
    assert!(
        took >= Duration::from_millis(250) && took < Duration::from_millis(1500),
        "{took:?}"
    );
}

#[tokio::test]
async fn an_idle_connection_is_closed_after_the_idle_timeout_and_a_busy_one_is_not() {
    let (address, _stop) = start(short(16)).await;
    let mut idle = TcpStream::connect(address).await.unwrap();
    let (seen, took) = until_closed(&mut idle, Duration::from_secs(5)).await;
    assert_eq!(seen, "");
    assert!(
        took >= Duration::from_millis(550) && took < Duration::from_millis(2000),
        "{took:?}"
    );
    // A request that takes longer than both timeouts is answered in full.
    let mut busy = TcpStream::connect(address).await.unwrap();
    busy.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let (seen, _) = until_closed(&mut busy, Duration::from_secs(5)).await;
    assert!(seen.starts_with("HTTP/1.1 200") && seen.contains("ow"), "{seen}");
    // Keep-alive: between two requests the idle clock starts again.
    let mut kept = TcpStream::connect(address).await.unwrap();
    kept.write_all(b"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut buffer = [0u8; 512];
    let n = kept.read(&mut buffer).await.unwrap();
    assert!(String::from_utf8_lossy(&buffer[..n]).starts_with("HTTP/1.1 200"));
    let (_, took) = until_closed(&mut kept, Duration::from_secs(5)).await;
    assert!(took >= Duration::from_millis(550), "{took:?}");
}

#[tokio::test]
async fn a_paused_body_fails_the_request() {
    let (address, _stop) = start(short(16)).await;
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream
        .write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab")
        .await
        .unwrap();
    let (seen, took) = until_closed(&mut stream, Duration::from_secs(5)).await;
    assert!(seen.starts_with("HTTP/1.1 400"), "{seen}");
    assert!(took < Duration::from_millis(1500), "{took:?}");
    // A body that keeps coming is read whole.
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream
        .write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nConnection: close\r\n\r\nab")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    stream.write_all(b"cd").await.unwrap();
    let (seen, _) = until_closed(&mut stream, Duration::from_secs(5)).await;
    assert!(seen.starts_with("HTTP/1.1 200") && seen.ends_with('4'), "{seen}");
}

#[tokio::test]
async fn at_the_cap_a_new_connection_closes_the_oldest_unauthenticated_one() {
    let limits = short(3)
        .idle(Duration::from_secs(30))
        .header_read(Duration::from_secs(30));
    let (address, _stop) = start(limits).await;
    // An authenticated keep-alive connection, idle between requests.
    let mut trusted = TcpStream::connect(address).await.unwrap();
    trusted
        .write_all(b"GET /ok HTTP/1.1\r\nHost: x\r\nx-auth: yes\r\n\r\n")
        .await
        .unwrap();
    let mut buffer = [0u8; 512];
    assert!(trusted.read(&mut buffer).await.unwrap() > 0);
    let mut first = TcpStream::connect(address).await.unwrap();
    first.write_all(b"GET /ok HTT").await.unwrap();
    // Accepted in order: the listen queue is first in, first out.
    let _second = TcpStream::connect(address).await.unwrap();
    // The cap is reached: this one is served, and the oldest attacker is gone.
    assert!(get_ok(address, false).await.starts_with("HTTP/1.1 200"));
    let (seen, took) = until_closed(&mut first, Duration::from_secs(2)).await;
    assert_eq!(seen, "");
    assert!(took < Duration::from_millis(500), "{took:?}");
    // The authenticated connection survived all of it.
    trusted
        .write_all(b"GET /ok HTTP/1.1\r\nHost: x\r\nx-auth: yes\r\n\r\n")
        .await
        .unwrap();
    let n = trusted.read(&mut buffer).await.unwrap();
    assert!(String::from_utf8_lossy(&buffer[..n]).starts_with("HTTP/1.1 200"));
}

#[tokio::test]
async fn an_authenticated_request_in_progress_is_never_cut_to_make_room() {
    let limits = short(1)
        .idle(Duration::from_secs(30))
        .header_read(Duration::from_secs(30));
    let (address, _stop) = start(limits).await;
    let mut working = TcpStream::connect(address).await.unwrap();
    working
        .write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\nx-auth: yes\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let head = until_head(&mut working).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // No room, and nothing that may be closed: the newcomer is turned away.
    let mut late = TcpStream::connect(address).await.unwrap();
    let (seen, took) = until_closed(&mut late, Duration::from_secs(2)).await;
    assert_eq!(seen, "");
    assert!(took < Duration::from_millis(500), "{took:?}");
    let (rest, _) = until_closed(&mut working, Duration::from_secs(5)).await;
    assert!(rest.contains("ow"), "the request was cut: {head}{rest}");
}

#[tokio::test]
async fn closing_lets_requests_finish_and_then_returns() {
    let limits = short(8);
    let router = Router::new().route("/slow", get(slow));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let served = tokio::spawn(toolgate_server::serve_router(listener, router, limits, stopped));
    let mut working = TcpStream::connect(address).await.unwrap();
    working
        .write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let head = until_head(&mut working).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    stop.send(true).unwrap();
    let (rest, _) = until_closed(&mut working, Duration::from_secs(5)).await;
    assert!(rest.contains("ow"), "the request was cut: {head}{rest}");
    tokio::time::timeout(Duration::from_secs(5), served)
        .await
        .expect("serve did not return after closing")
        .unwrap()
        .unwrap();
}
