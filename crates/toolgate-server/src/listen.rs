//! The accept loop under the HTTP server: HTTP/1 connections with a header-read timeout,
//! an idle timeout, a paused-body timeout and a cap on open connections.
//!
//! `axum::serve` gives hyper no timer, so a client that sends half a request head is
//! held forever and a thousand such clients exhaust the file limit. Here every
//! connection has a watchdog: a head must arrive within [`Limits::header_read`] of its
//! first byte, a connection with no request in progress is closed after
//! [`Limits::idle`], and a request body may not pause longer than
//! [`Limits::body_pause`]. When the cap is reached, a new connection makes room by
//! closing the connection that matters least: first one that never authenticated, then
//! the authenticated one idle the longest; a request in progress on an authenticated
//! connection is never cut.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tower_service::Service;

/// The timeouts and the connection cap of the listener: [`Limits::default`], then
/// setters (more may come, hence `#[non_exhaustive]`).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Limits {
    /// How long a request head may take from its first byte (default 10 s).
    pub header_read: Duration,
    /// How long a connection may stay open with no request in progress (default 60 s).
    pub idle: Duration,
    /// How long a request body may pause between two chunks (default 10 s).
    pub body_pause: Duration,
    /// The most connections open at once; `None` derives it from the file limit
    /// (see [`connection_cap`]).
    pub max_connections: Option<usize>,
    /// How far, in bytes of events, an `/event` client may fall behind before the oldest
    /// events it has not read are dropped and it is told with `events.lagged` (default
    /// 32 MiB: about two seconds of the busiest load measured; the events are kept once
    /// for all clients, so this is also the most they hold).
    pub event_buffer: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            header_read: Duration::from_secs(10),
            idle: Duration::from_secs(60),
            body_pause: Duration::from_secs(10),
            max_connections: None,
            event_buffer: 32 << 20,
        }
    }
}

impl Limits {
    /// The same limits with another time a request head may take.
    pub fn header_read(mut self, timeout: Duration) -> Limits {
        self.header_read = timeout;
        self
    }

    /// The same limits with another time a connection may stay idle.
    pub fn idle(mut self, timeout: Duration) -> Limits {
        self.idle = timeout;
        self
    }

    /// The same limits with another time a request body may pause.
    pub fn body_pause(mut self, timeout: Duration) -> Limits {
        self.body_pause = timeout;
        self
    }

    /// The same limits with another connection cap (`None`: from the file limit).
    pub fn max_connections(mut self, cap: Option<usize>) -> Limits {
        self.max_connections = cap;
        self
    }

    /// The same limits with another event buffer (bytes an `/event` client may fall
    /// behind).
    pub fn event_buffer(mut self, bytes: usize) -> Limits {
        self.event_buffer = bytes;
        self
    }
}

/// File descriptors kept free for everything that is not a connection: the database,
/// the audit log, spill files, bash pipes, webfetch sockets.
const RESERVED_FDS: u64 = 256;

/// The most connections the listener allows by default: 4096, or fewer when the file
/// limit leaves less room (always keeping 256 descriptors free for the database, the
/// audit log, spill files and child pipes).
///
/// ```
/// assert_eq!(toolgate_server::connection_cap(1024), 768);
/// assert_eq!(toolgate_server::connection_cap(1_048_576), 4096);
/// ```
pub fn connection_cap(file_limit: u64) -> usize {
    file_limit.saturating_sub(RESERVED_FDS).clamp(32, 4096) as usize
}

/// Raises this process's soft limit of open files to its hard limit, where allowed;
/// returns the soft limit in force afterwards.
pub fn raise_file_limit() -> u64 {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let current = limit.current.unwrap_or(u64::MAX);
    if let Some(maximum) = limit.maximum
        && maximum > current
        && setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(maximum),
                maximum: Some(maximum),
            },
        )
        .is_ok()
    {
        return maximum;
    }
    current
}

/// Milliseconds since the first call: a cheap clock the connection state can keep in
/// atomics.
fn now_ms() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64
}

const NONE: u64 = u64::MAX;

/// One open connection, as request handlers see it (a request extension).
#[derive(Debug)]
pub struct Connection {
    /// Who is on the other end.
    pub peer: SocketAddr,
    id: u64,
    in_flight: AtomicUsize,
    /// When the last request ended (or the connection opened), in [`now_ms`].
    idle_since: AtomicU64,
    /// When the first byte of the next request head arrived; [`NONE`] when none did.
    head_started: AtomicU64,
    authenticated: AtomicBool,
    evict: tokio::sync::Notify,
    failures: Mutex<Bucket>,
}

/// A token bucket for failures: `burst` free, then refilled at `rate` a second; each
/// failure past that waits for its token (at most 30 s).
#[derive(Debug)]
pub(crate) struct Bucket {
    tokens: f64,
    burst: f64,
    rate: f64,
    refreshed: Instant,
    total: u64,
}

impl Bucket {
    /// A full bucket.
    pub(crate) fn new(burst: f64, rate: f64) -> Bucket {
        Bucket {
            tokens: burst,
            burst,
            rate,
            refreshed: Instant::now(),
            total: 0,
        }
    }

    /// Takes a token: how long to wait for it, and how many were taken in all.
    pub(crate) fn take(&mut self) -> (Duration, u64) {
        let now = Instant::now();
        let refill = now.duration_since(self.refreshed).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + refill).min(self.burst);
        self.refreshed = now;
        self.total += 1;
        self.tokens -= 1.0;
        let wait = if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64((-self.tokens / self.rate).min(30.0))
        };
        (wait, self.total)
    }
}

/// Failed authentications a connection may make at once before they are slowed to one
/// a second.
pub(crate) const FREE_FAILURES: f64 = 3.0;

impl Connection {
    fn new(id: u64, peer: SocketAddr) -> Connection {
        Connection {
            peer,
            id,
            in_flight: AtomicUsize::new(0),
            idle_since: AtomicU64::new(now_ms()),
            head_started: AtomicU64::new(NONE),
            authenticated: AtomicBool::new(false),
            evict: tokio::sync::Notify::new(),
            failures: Mutex::new(Bucket::new(FREE_FAILURES, 1.0)),
        }
    }

    /// Marks the connection as one that has sent a valid token: it is evicted last.
    pub fn authenticated(&self) {
        self.authenticated.store(true, Ordering::Relaxed);
    }

    /// Counts a failed authentication: how long to wait before answering it, and how
    /// many this connection has made.
    pub fn failed(&self) -> (Duration, u64) {
        self.failures.lock().unwrap_or_else(|poison| poison.into_inner()).take()
    }

    fn bytes_arrived(&self) {
        if self.in_flight.load(Ordering::Relaxed) == 0 {
            let _ = self
                .head_started
                .compare_exchange(NONE, now_ms(), Ordering::Relaxed, Ordering::Relaxed);
        }
    }

    /// Whether a timeout has passed: a head too slow, or too long without a request.
    fn expired(&self, limits: &Limits) -> bool {
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            return false;
        }
        let now = now_ms();
        let head = self.head_started.load(Ordering::Relaxed);
        if head != NONE {
            return now.saturating_sub(head) >= limits.header_read.as_millis() as u64;
        }
        now.saturating_sub(self.idle_since.load(Ordering::Relaxed)) >= limits.idle.as_millis() as u64
    }
}

/// A request in progress on a connection; it ends when the response body is dropped
/// (or the request is cancelled).
struct InFlight(Arc<Connection>);

impl InFlight {
    fn begin(connection: &Arc<Connection>) -> InFlight {
        connection.in_flight.fetch_add(1, Ordering::Relaxed);
        connection.head_started.store(NONE, Ordering::Relaxed);
        InFlight(Arc::clone(connection))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.0.idle_since.store(now_ms(), Ordering::Relaxed);
        }
    }
}

/// The open connections, and which one to close when there are too many.
struct Registry {
    open: Mutex<HashMap<u64, Arc<Connection>>>,
    next: AtomicU64,
    cap: usize,
    emptied: tokio::sync::Notify,
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Connection>>> {
        self.open.lock().unwrap_or_else(|poison| poison.into_inner())
    }

    /// Admits a new connection, closing another to stay under the cap; `None` when
    /// every open connection is an authenticated one with a request in progress.
    fn admit(&self, peer: SocketAddr) -> Option<Arc<Connection>> {
        let mut open = self.lock();
        while open.len() >= self.cap {
            let victim = Self::victim(&open)?;
            open.remove(&victim.id);
            victim.evict.notify_one();
        }
        let connection = Arc::new(Connection::new(self.next.fetch_add(1, Ordering::Relaxed), peer));
        open.insert(connection.id, Arc::clone(&connection));
        Some(connection)
    }

    /// Closes one connection to free a file descriptor (the accept call ran out).
    fn evict_one(&self) {
        let mut open = self.lock();
        if let Some(victim) = Self::victim(&open) {
            open.remove(&victim.id);
            victim.evict.notify_one();
        }
    }

    /// Never-authenticated connections first, oldest first; then authenticated idle
    /// ones, idle longest first.
    fn victim(open: &HashMap<u64, Arc<Connection>>) -> Option<Arc<Connection>> {
        open.values()
            .filter(|c| !c.authenticated.load(Ordering::Relaxed) || c.in_flight.load(Ordering::Relaxed) == 0)
            .min_by_key(|c| {
                (
                    c.authenticated.load(Ordering::Relaxed),
                    c.idle_since.load(Ordering::Relaxed),
                    c.id,
                )
            })
            .cloned()
    }

    fn remove(&self, id: u64) {
        let mut open = self.lock();
        open.remove(&id);
        if open.is_empty() {
            self.emptied.notify_waiters();
        }
    }

    fn len(&self) -> usize {
        self.lock().len()
    }
}

/// The socket, noting when a request head starts to arrive.
struct Watched {
    io: TcpStream,
    connection: Arc<Connection>,
}

impl AsyncRead for Watched {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.io).poll_read(cx, buf);
        if matches!(read, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.connection.bytes_arrived();
        }
        read
    }
}

impl AsyncWrite for Watched {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request body that fails when it pauses longer than its limit.
struct PausingBody {
    inner: Incoming,
    pause: Duration,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Body for PausingBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.timer = None;
                Poll::Ready(frame.map(|frame| frame.map_err(BoxError::from)))
            }
            Poll::Pending => {
                let pause = this.pause;
                let timer = this.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep(pause)));
                if timer.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Some(Err(format!(
                        "the request body paused for more than {} s",
                        pause.as_secs()
                    )
                    .into())));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A response body that ends its request when dropped.
struct Guarded {
    body: axum::body::Body,
    _request: InFlight,
}

impl Body for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

fn out_of_descriptors(error: &std::io::Error) -> bool {
    matches!(error.raw_os_error(), Some(code) if code == rustix::io::Errno::MFILE.raw_os_error() || code == rustix::io::Errno::NFILE.raw_os_error())
}

/// Serves `router` on `listener` until `closing` turns true; then stops accepting, lets
/// every connection finish its request, and returns when all are closed.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    mut closing: tokio::sync::watch::Receiver<bool>,
) -> std::io::Result<()> {
    let cap = limits
        .max_connections
        .unwrap_or_else(|| connection_cap(raise_file_limit()));
    let registry = Arc::new(Registry {
        open: Mutex::new(HashMap::new()),
        next: AtomicU64::new(0),
        cap: cap.max(1),
        emptied: tokio::sync::Notify::new(),
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    // The watchdog below owns every timeout; hyper has no timer to run its own.
    builder.header_read_timeout(None);
    let limits = Arc::new(limits);
    let mut warned = false;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = closing.wait_for(|closed| *closed) => break,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(error) => {
                if out_of_descriptors(&error) {
                    if !warned {
                        tracing::warn!("out of file descriptors: closing the least useful connection");
                        warned = true;
                    }
                    registry.evict_one();
                }
                // Whatever went wrong, do not spin on it.
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let Some(connection) = registry.admit(peer) else {
            // Every slot holds an authenticated request in progress: refuse this one.
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let limits = Arc::clone(&limits);
        let registry = Arc::clone(&registry);
        let builder = builder.clone();
        let closing = closing.clone();
        tokio::spawn(async move {
            let _registered = Registered {
                registry,
                id: connection.id,
            };
            run_connection(stream, connection, router, &limits, builder, closing).await;
        });
    }
    // Closed: wait for the open connections to finish their requests.
    while registry.len() > 0 {
        let emptied = registry.emptied.notified();
        tokio::pin!(emptied);
        emptied.as_mut().enable();
        if registry.len() == 0 {
            break;
        }
        emptied.await;
    }
    Ok(())
}

/// Removes the connection from the registry when its task ends, however it ends.
struct Registered {
    registry: Arc<Registry>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.registry.remove(self.id);
    }
}

async fn run_connection(
    stream: TcpStream,
    connection: Arc<Connection>,
    router: Router,
    limits: &Limits,
    builder: hyper::server::conn::http1::Builder,
    mut closing: tokio::sync::watch::Receiver<bool>,
) {
    let io = hyper_util::rt::TokioIo::new(Watched {
        io: stream,
        connection: Arc::clone(&connection),
    });
    let pause = limits.body_pause;
    let service = {
        let connection = Arc::clone(&connection);
        hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
            let in_flight = InFlight::begin(&connection);
            request.extensions_mut().insert(Arc::clone(&connection));
            let request = request.map(|inner| PausingBody {
                inner,
                pause,
                timer: None,
            });
            let mut router = router.clone();
            async move {
                let response = match router.call(request).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                };
                Ok::<_, Infallible>(response.map(|body| Guarded {
                    body,
                    _request: in_flight,
                }))
            }
        })
    };
    // Checked a few times per timeout (every second with the defaults).
    let tick = [Duration::from_secs(1), limits.header_read / 4, limits.idle / 4]
        .into_iter()
        .min()
        .unwrap_or(Duration::from_secs(1))
        .max(Duration::from_millis(10));
    let served = builder.serve_connection(io, service);
    tokio::pin!(served);
    let mut shutting_down = false;
    loop {
        tokio::select! {
            _ = served.as_mut() => break,
            () = connection.evict.notified() => break,
            _ = closing.wait_for(|closed| *closed), if !shutting_down => {
                shutting_down = true;
                served.as_mut().graceful_shutdown();
            }
            () = tokio::time::sleep(tick) => {
                if connection.expired(limits) {
                    break;
                }
            }
        }
    }
}
