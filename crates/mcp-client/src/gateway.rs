//! The gateway: configured servers, their connections, and their tools as toolgate tools.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, Weak};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, ErrorData, Implementation, InputRequest, InputResponses, ProtocolVersion,
    SubscriptionFilter,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, Peer, RequestContext, RoleClient, RunningService,
    ServiceError,
};
use rmcp::{ClientHandler, ServiceExt};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::watch;
use toolgate_core::{Annotations, Context, PermissionRequest, Permissions, Tool, ToolFailure, ToolOutput};

use crate::child::{LogLimits, Spawn, Stderr};
use crate::config::{Launch, ServerConfig};
use crate::elicitation::{DeclineAll, Elicitation, ElicitationAnswer, Elicitor, with_defaults};
use crate::names::{MAX_NAME, sanitize, tool_name};
use crate::oauth::TokenStore;
use crate::pins::{PinStore, Pinned, Standing};
use crate::sanitize::{clean, clean_schema, clean_value, escaped};
use crate::schema::Schema;
use crate::{content, pins, sse};

/// The action a changed or new tool of a server asks before its first call (spec §4.4's
/// ask, like any other): its resource is `<server>:<tool>@<hash>`, "always" saves that
/// resource and makes the new definition the pin. The permission service's defaults ask
/// it, and `--auto` never approves it (only a person may accept a new definition).
pub const PIN_ACTION: &str = "mcp_pin";

/// Where the gateway registers tools: the binary's registry. Registering a name this
/// sink already holds replaces it (the new registration first, so no call ever finds the
/// name missing); the registry's stale rule then refuses calls captured before.
pub trait ToolSink: Send + Sync {
    /// Registers `tool` as `name`, replacing this sink's previous registration of it.
    fn register(&self, name: &str, tool: Tool) -> Result<(), String>;
    /// Removes this sink's registration of `name`.
    fn unregister(&self, name: &str);
}

/// What the gateway runs, and where ([`Options::new`], then setters; more may come,
/// hence `#[non_exhaustive]`).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// The servers, in config order (which decides who keeps a contested name).
    pub servers: Vec<ServerConfig>,
    /// The project directory: a local server's default working directory.
    pub project: PathBuf,
    /// Where each local server's stderr goes (`<log_dir>/<server>.log`).
    pub log_dir: PathBuf,
    /// Names already taken (the builtins): an MCP tool never shadows them.
    pub reserved: Vec<String>,
    /// Where the servers' definitions are pinned (trust on first use).
    pub pins: PinStore,
    /// How big each server's stderr log may grow.
    pub log_limits: LogLimits,
    /// Where remote servers' OAuth tokens are kept (`toolgate mcp auth NAME` puts them there).
    pub tokens: TokenStore,
}

impl Options {
    /// No server yet; local servers start in `project`; their stderr goes to
    /// `<log_dir>/<server>.log`; no name is reserved.
    pub fn new(project: impl Into<PathBuf>, log_dir: impl Into<PathBuf>) -> Options {
        Options {
            servers: Vec::new(),
            project: project.into(),
            log_dir: log_dir.into(),
            reserved: Vec::new(),
            pins: PinStore::memory(),
            log_limits: LogLimits::default(),
            tokens: TokenStore::memory(),
        }
    }

    /// The same options reading remote servers' OAuth tokens from `tokens` (default: in
    /// memory, none).
    pub fn tokens(mut self, tokens: TokenStore) -> Options {
        self.tokens = tokens;
        self
    }

    /// The same options pinning definitions in `pins` (default: in memory, for this
    /// process only).
    pub fn pins(mut self, pins: PinStore) -> Options {
        self.pins = pins;
        self
    }

    /// The same options bounding each server's stderr log by `limits`.
    pub fn log_limits(mut self, limits: LogLimits) -> Options {
        self.log_limits = limits;
        self
    }

    /// The same options running `servers` (in config order: the first keeps a contested
    /// name).
    pub fn servers(mut self, servers: Vec<ServerConfig>) -> Options {
        self.servers = servers;
        self
    }

    /// The same options with `names` reserved: no MCP tool is registered under them.
    pub fn reserved(mut self, names: Vec<String>) -> Options {
        self.reserved = names;
        self
    }
}

/// A server's state, as `toolgate mcp list` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Disabled in the config.
    Disabled,
    /// Not needed yet (servers start on first need).
    NotStarted,
    /// Up, its tools registered.
    Connected,
    /// Could not start, or crashed again after its one restart.
    Failed,
    /// Stopped unexpectedly; the next call restarts it once.
    Crashed,
}

/// One registered tool of a server.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ToolReport {
    /// The registered name (the permission action).
    pub name: String,
    /// The server's own name for it.
    pub tool: String,
    /// `readOnlyHint` / `destructiveHint`, when the server gives them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hints: Vec<String>,
    /// The hash of its definition as the server gives it now.
    pub pin: String,
    /// False while that definition differs from the pinned one (or the tool is new):
    /// its calls ask `mcp_pin` first.
    pub approved: bool,
}

/// One server, as `toolgate mcp list` shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[non_exhaustive]
pub struct ServerReport {
    /// The configured name.
    pub name: String,
    /// `stdio`, `streamable HTTP` or `HTTP+SSE` once connected; `stdio` or `http` before.
    pub transport: String,
    /// Where it stands.
    pub state: State,
    /// The server's own name and version, once connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The MCP version agreed with it, once connected: `2026-07-28` (stateless, no
    /// `initialize`) when it speaks that, else what `initialize` settled on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Its registered tools.
    pub tools: Vec<ToolReport>,
    /// Why it failed, and every tool that could not be registered, with the reason.
    pub errors: Vec<String>,
    /// How often it was restarted after a crash.
    pub restarts: u32,
    /// Its stderr (local servers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<PathBuf>,
}

/// A live connection to one server.
struct Connection {
    peer: Peer<RoleClient>,
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    child: Mutex<Option<tokio::process::Child>>,
    server_info: String,
    /// The MCP version agreed with the server.
    protocol: ProtocolVersion,
    /// The `subscriptions/listen` stream that carries `tools/list_changed` from a
    /// 2026-07-28 server (older ones send it on their session); ended with the connection.
    listener: Mutex<Option<tokio::task::AbortHandle>>,
}

impl Connection {
    fn closed(&self) -> bool {
        self.peer.is_transport_closed()
            || lock(&self.service).as_ref().is_none_or(RunningService::is_closed)
            || lock(&self.child)
                .as_mut()
                .is_some_and(|child| child.try_wait().ok().flatten().is_some())
    }

    /// How the child ended, when it has.
    fn exit(&self) -> Option<String> {
        let mut child = lock(&self.child);
        let status = child.as_mut()?.try_wait().ok().flatten()?;
        Some(
            match (status.code(), std::os::unix::process::ExitStatusExt::signal(&status)) {
                (Some(code), _) => format!("exited with status {code}"),
                (None, Some(signal)) => format!("killed by signal {signal}"),
                _ => "exited".to_string(),
            },
        )
    }

    fn pgid(&self) -> Option<rustix::process::Pid> {
        let child = lock(&self.child);
        let id = child.as_ref()?.id()?;
        rustix::process::Pid::from_raw(i32::try_from(id).ok()?)
    }

    /// Ends the session and the server's whole process group.
    async fn end(&self) {
        if let Some(listener) = lock(&self.listener).take() {
            listener.abort();
        }
        let service = lock(&self.service).take();
        if let Some(mut service) = service {
            let _ = service.close_with_timeout(Duration::from_millis(500)).await;
        }
        let Some(pgid) = self.pgid() else { return };
        // Closing stdin asks politely; then SIGTERM, then SIGKILL for what is left.
        if !self.wait_exit(Duration::from_millis(300)).await {
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::TERM);
            self.wait_exit(Duration::from_millis(1000)).await;
        }
        let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
    }

    async fn wait_exit(&self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let exited = lock(&self.child)
                .as_mut()
                .is_none_or(|child| child.try_wait().ok().flatten().is_some());
            if exited {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// At process exit without an async runtime: kill the group at once.
    fn kill_now(&self) {
        if let Some(pgid) = self.pgid() {
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
    }
}

enum Slot {
    Idle,
    Up(Arc<Connection>),
    Down(String),
}

/// What one server has registered: name → (upstream name, fingerprint of its definition).
#[derive(Default)]
struct View {
    state: Option<State>,
    transport: Option<&'static str>,
    server_info: Option<String>,
    protocol: Option<String>,
    tools: Vec<ToolReport>,
    error: Option<String>,
    problems: Vec<String>,
    restarts: u32,
    registered: HashMap<String, String>,
    connection: Option<Arc<Connection>>,
    /// The server's instructions as it gave them (pinned with its tools).
    instructions: Option<Pinned>,
    /// Each upstream tool's pin and standing, as of the last listing.
    standings: HashMap<String, (Pinned, Standing)>,
    /// The last listing, to register again once a new definition is approved.
    listed: Vec<rmcp::model::Tool>,
}

struct Server {
    config: ServerConfig,
    /// What the registered names of its tools start with (the sanitized server name and
    /// `_`, as far as the name rule lets it into a name).
    prefix: String,
    slot: tokio::sync::Mutex<Slot>,
    view: Mutex<View>,
    /// The calls in flight, newest last: an elicitation is put to the newest one's session.
    active: Mutex<Vec<(u64, Context)>>,
    generation: AtomicU64,
}

impl Server {
    /// True when there is nothing to start: disabled, or a start was attempted (the
    /// slot never goes back to idle; crashes are the calls' business). A slot busy with
    /// a start counts as not tried: the caller waits for it.
    fn tried(&self) -> bool {
        !self.config.enabled || self.slot.try_lock().is_ok_and(|slot| !matches!(*slot, Slot::Idle))
    }
}

struct Inner {
    servers: Vec<Server>,
    options: Options,
    sink: Arc<dyn ToolSink>,
    permissions: Arc<dyn Permissions>,
    elicitor: RwLock<Arc<dyn Elicitor>>,
    /// Registered name → the server holding it.
    names: Mutex<HashMap<String, usize>>,
    changes: watch::Sender<u64>,
    next_call: AtomicU64,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for server in &self.servers {
            if let Some(connection) = lock(&server.view).connection.take() {
                connection.kill_now();
            }
        }
    }
}

/// A lock whose data stays usable after a panic elsewhere: every critical section here
/// is a few assignments.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poison| poison.into_inner())
}

fn seconds(duration: Duration) -> String {
    let ms = duration.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    }
}

/// External MCP servers and their tools. Cheap to clone.
///
/// Servers start lazily ([`Gateway::start_all`], [`Gateway::start_for`]), in parallel;
/// each tool is registered through the [`ToolSink`] as `<server>_<tool>` and asks
/// permission as that name (resource `*`) before anything is sent.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

impl Gateway {
    /// A gateway over the servers of `options`, asking `permissions` before each call and
    /// registering the servers' tools through `sink`.
    pub fn new(mut options: Options, permissions: Arc<dyn Permissions>, sink: Arc<dyn ToolSink>) -> Gateway {
        let (changes, _) = watch::channel(0);
        let servers = std::mem::take(&mut options.servers)
            .into_iter()
            .map(|config| Server {
                view: Mutex::new(View {
                    state: Some(if config.enabled {
                        State::NotStarted
                    } else {
                        State::Disabled
                    }),
                    ..View::default()
                }),
                prefix: {
                    let prefix = format!("{}_", sanitize(&config.name));
                    let cut = prefix.len().min(MAX_NAME - 9);
                    prefix[..cut].to_string()
                },
                config,
                slot: tokio::sync::Mutex::new(Slot::Idle),
                active: Mutex::new(Vec::new()),
                generation: AtomicU64::new(0),
            })
            .collect();
        Gateway {
            inner: Arc::new(Inner {
                servers,
                options,
                sink,
                permissions,
                elicitor: RwLock::new(Arc::new(DeclineAll)),
                names: Mutex::new(HashMap::new()),
                changes,
                next_call: AtomicU64::new(1),
            }),
        }
    }

    /// True when no server is configured.
    pub fn is_empty(&self) -> bool {
        self.inner.servers.is_empty()
    }

    /// Who answers servers' elicitation requests from now on (default: declined).
    pub fn set_elicitor(&self, elicitor: Arc<dyn Elicitor>) {
        *self.inner.elicitor.write().unwrap_or_else(|p| p.into_inner()) = elicitor;
    }

    /// Ticks whenever the registered tools change (a server started, a `list_changed`).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    /// Starts every enabled server not started yet, in parallel, and registers their tools.
    pub async fn start_all(&self) {
        let wanted: Vec<usize> = (0..self.inner.servers.len()).collect();
        self.inner.start(&wanted).await;
    }

    /// Starts only the servers that may own `name` (their sanitized name is its prefix):
    /// what a call to one tool needs.
    pub async fn start_for(&self, name: &str) {
        let wanted: Vec<usize> = self
            .inner
            .servers
            .iter()
            .enumerate()
            .filter(|(_, server)| name.starts_with(&server.prefix))
            .map(|(index, _)| index)
            .collect();
        self.inner.start(&wanted).await;
    }

    /// Every server with its state, tools and errors, in config order.
    pub fn report(&self) -> Vec<ServerReport> {
        self.inner
            .servers
            .iter()
            .map(|server| {
                let view = lock(&server.view);
                let mut state = view.state.unwrap_or(State::NotStarted);
                if state == State::Connected && view.connection.as_ref().is_some_and(|c| c.closed()) {
                    state = State::Crashed;
                }
                let mut errors: Vec<String> = view.error.iter().cloned().collect();
                errors.extend(view.problems.iter().cloned());
                let kind = match server.config.launch {
                    Launch::Local { .. } => "stdio",
                    Launch::Remote { .. } => "http",
                };
                ServerReport {
                    name: server.config.name.clone(),
                    transport: view.transport.unwrap_or(kind).to_string(),
                    state,
                    server: view.server_info.clone(),
                    protocol: view.protocol.clone(),
                    tools: view.tools.clone(),
                    errors,
                    restarts: view.restarts,
                    log: matches!(server.config.launch, Launch::Local { .. })
                        .then(|| self.inner.log_path(&server.config.name)),
                }
            })
            .collect()
    }

    /// Ends every server (stdio ones with their whole process group).
    pub async fn shutdown(&self) {
        let connections: Vec<Arc<Connection>> = self
            .inner
            .servers
            .iter()
            .filter_map(|server| lock(&server.view).connection.take())
            .collect();
        futures_util::future::join_all(connections.iter().map(|c| c.end())).await;
    }
}

impl Inner {
    fn log_path(&self, server: &str) -> PathBuf {
        self.options.log_dir.join(format!("{}.log", sanitize(server)))
    }

    fn bump(&self) {
        self.changes.send_modify(|tick| *tick += 1);
    }

    async fn start(self: &Arc<Self>, wanted: &[usize]) {
        // Every call asks first: servers tried already (up, or failed for good) are
        // passed over without waiting on anything.
        let wanted: Vec<usize> = wanted
            .iter()
            .copied()
            .filter(|&index| !self.servers[index].tried())
            .collect();
        if wanted.is_empty() {
            return;
        }
        let wanted = wanted.as_slice();
        let started = futures_util::future::join_all(wanted.iter().map(|&index| self.start_one(index))).await;
        // Registered in config order whatever order they came up in, so the same config
        // always gives contested names to the same server.
        let mut changed = false;
        for (index, tools) in wanted.iter().zip(started) {
            if let Some(tools) = tools {
                changed |= self.apply(*index, tools);
            }
        }
        if changed {
            self.bump();
        }
    }

    /// Connects server `index` if it is enabled and idle; its tools when it came up.
    async fn start_one(self: &Arc<Self>, index: usize) -> Option<Vec<rmcp::model::Tool>> {
        let server = &self.servers[index];
        if !server.config.enabled {
            return None;
        }
        let mut slot = server.slot.lock().await;
        if !matches!(*slot, Slot::Idle) {
            return None;
        }
        match self.connect(index).await {
            Ok((connection, tools)) => {
                *slot = Slot::Up(connection);
                Some(tools)
            }
            Err(reason) => {
                let mut view = lock(&server.view);
                view.state = Some(State::Failed);
                view.error = Some(reason.clone());
                *slot = Slot::Down(reason);
                None
            }
        }
    }

    /// Starts the server, initializes, lists its tools; all within the startup timeout.
    async fn connect(self: &Arc<Self>, index: usize) -> Result<(Arc<Connection>, Vec<rmcp::model::Tool>), String> {
        let server = &self.servers[index];
        let config = &server.config;
        let generation = server.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let handler = Handler {
            inner: Arc::downgrade(self),
            index,
            generation,
        };
        let mut child_slot: Option<tokio::process::Child> = None;
        let mut stderr_slot: Option<Stderr> = None;
        let log = self.log_path(&config.name);
        let attempt = async {
            let (service, transport) = match &config.launch {
                Launch::Local {
                    command,
                    environment,
                    cwd,
                } => {
                    let (mut child, stderr) = crate::child::spawn(&Spawn {
                        command,
                        environment,
                        cwd: cwd.as_ref().unwrap_or(&self.options.project),
                        log: &log,
                        limits: self.options.log_limits,
                        wrapper: &config.wrapper,
                    })?;
                    stderr_slot = Some(stderr);
                    let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                        return Err("the server's stdio could not be opened".to_string());
                    };
                    child_slot = Some(child);
                    let negotiated = handler
                        .clone()
                        .serve_with_lifecycle(crate::stdio::LineTransport::new(stdout, stdin), negotiate())
                        .await;
                    let service = match negotiated {
                        Ok(service) => service,
                        Err(probe) => {
                            // A server older than 2026-07-28 may end the session at a first
                            // request that is not `initialize` (`server/discover`): it is
                            // started again and spoken to as before, `initialize` first.
                            tracing::info!(
                                server = %config.name,
                                "server/discover failed ({probe}); starting it again with initialize"
                            );
                            if let Some(old) = child_slot.take() {
                                crate::child::kill_group(&old);
                            }
                            let (mut child, stderr) = crate::child::spawn(&Spawn {
                                command,
                                environment,
                                cwd: cwd.as_ref().unwrap_or(&self.options.project),
                                log: &log,
                                limits: self.options.log_limits,
                                wrapper: &config.wrapper,
                            })?;
                            stderr_slot = Some(stderr);
                            let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                                return Err("the server's stdio could not be opened".to_string());
                            };
                            child_slot = Some(child);
                            handler
                                .serve(crate::stdio::LineTransport::new(stdout, stdin))
                                .await
                                .map_err(|e| format!("initialize failed: {e}"))?
                        }
                    };
                    (service, "stdio")
                }
                Launch::Remote { url, headers } => {
                    connect_remote(handler, config, url, headers, &self.options.tokens).await?
                }
            };
            let tools = service
                .peer()
                .list_all_tools()
                .await
                .map_err(|e| format!("tools/list failed: {e}"))?;
            Ok::<_, String>((service, transport, tools))
        };
        let outcome = tokio::time::timeout(config.startup_timeout, attempt).await;
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(_) => Err(format!(
                "did not start within {} (startup timeout)",
                seconds(config.startup_timeout)
            )),
        };
        let (service, transport, tools) = match outcome {
            Ok(up) => up,
            Err(reason) => {
                if let Some(pid) = child_slot.as_ref().and_then(tokio::process::Child::id)
                    && let Some(pgid) = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap_or(0))
                {
                    let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
                }
                let words = match &mut stderr_slot {
                    Some(stderr) => stderr.last_words(Duration::from_millis(500)).await,
                    None => String::new(),
                };
                return Err(if words.is_empty() {
                    reason
                } else {
                    format!("{reason}; stderr: {words}")
                });
            }
        };
        let instructions = service
            .peer_info()
            .and_then(|info| info.instructions.clone())
            .map(|text| Pinned::of(&Value::String(text)));
        let server_info = service
            .peer_info()
            .and_then(|info| info.server_info.as_ref().map(|i| format!("{} {}", i.name, i.version)))
            .unwrap_or_default();
        let protocol = service
            .peer_info()
            .map(|info| info.protocol_version.clone())
            .unwrap_or(ProtocolVersion::LATEST_WITH_INITIALIZE);
        let connection = Arc::new(Connection {
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            child: Mutex::new(child_slot),
            server_info,
            protocol,
            listener: Mutex::new(None),
        });
        if !connection.protocol.has_initialize() {
            let listener = tokio::spawn(listen_for_changes(
                connection.peer.clone(),
                Arc::downgrade(self),
                index,
                generation,
            ));
            *lock(&connection.listener) = Some(listener.abort_handle());
        }
        let mut view = lock(&server.view);
        view.state = Some(State::Connected);
        view.error = None;
        view.transport = Some(transport);
        view.protocol = Some(connection.protocol.to_string());
        view.server_info = Some(connection.server_info.clone()).filter(|s| !s.is_empty());
        view.connection = Some(Arc::clone(&connection));
        view.instructions = instructions;
        Ok((connection, tools))
    }

    /// Replaces server `index`'s registrations with `tools`; true when any changed.
    fn apply(self: &Arc<Self>, index: usize, tools: Vec<rmcp::model::Tool>) -> bool {
        let server = &self.servers[index];
        let mut names = lock(&self.names);
        let mut view = lock(&server.view);
        let mut problems = Vec::new();
        let mut wanted: Vec<(String, rmcp::model::Tool, String)> = Vec::new();
        let mut seen: HashMap<String, String> = HashMap::new();
        view.listed = tools.clone();
        for tool in tools {
            let upstream = tool.name.to_string();
            let name = match tool_name(&server.config.name, &upstream) {
                Ok(name) => name,
                Err(error) => {
                    problems.push(format!("tool `{upstream}` not registered: {error}"));
                    continue;
                }
            };
            if self.options.reserved.contains(&name) {
                problems.push(format!(
                    "tool `{upstream}` not registered: its name `{name}` is a builtin tool's"
                ));
                continue;
            }
            if let Some(holder) = names.get(&name).filter(|&&holder| holder != index) {
                problems.push(format!(
                    "tool `{upstream}` not registered: its name `{name}` is taken by server `{}`",
                    self.servers[*holder].config.name
                ));
                continue;
            }
            if let Some(first) = seen.get(&name) {
                problems.push(format!(
                    "tool `{upstream}` not registered: its name `{name}` is taken by this server's `{first}`"
                ));
                continue;
            }
            let fingerprint = serde_json::to_string(&tool).unwrap_or_default();
            seen.insert(name.clone(), upstream);
            wanted.push((name, tool, fingerprint));
        }
        // Trust on first use: every definition is compared with its pin (all pinned the
        // first time); a pin file that cannot be read leaves every tool unapproved.
        let pinned: Vec<(String, Pinned)> = wanted
            .iter()
            .map(|(_, tool, _)| (tool.name.to_string(), Pinned::of(&pins::definition(tool))))
            .collect();
        let standings = self
            .options
            .pins
            .check(
                &server.config.name,
                &server.config.identity(),
                view.instructions.as_ref(),
                &pinned,
            )
            .unwrap_or_else(|error| {
                problems.push(format!("{error}; every tool of this server asks before it runs"));
                vec![
                    Standing::Unapproved {
                        previous: pins::Previous::Absent,
                        instructions: None,
                    };
                    pinned.len()
                ]
            });
        view.standings = pinned
            .iter()
            .cloned()
            .zip(standings)
            .map(|((tool, pin), standing)| (tool, (pin, standing)))
            .collect();
        for (_, tool, fingerprint) in &mut wanted {
            let approved = view
                .standings
                .get(tool.name.as_ref())
                .is_some_and(|(_, standing)| *standing == Standing::Pinned);
            fingerprint.push_str(if approved { "|approved" } else { "|unapproved" });
        }
        let mut changed = false;
        let keep: HashSet<&String> = wanted.iter().map(|(name, _, _)| name).collect();
        let gone: Vec<String> = view.registered.keys().filter(|n| !keep.contains(n)).cloned().collect();
        for name in gone {
            self.sink.unregister(&name);
            names.remove(&name);
            view.registered.remove(&name);
            changed = true;
        }
        let mut reports = Vec::new();
        for (name, tool, fingerprint) in wanted {
            let upstream = tool.name.to_string();
            let (pin, approved) = match view.standings.get(&upstream) {
                Some((pin, standing)) => (pin.clone(), *standing == Standing::Pinned),
                None => (Pinned::of(&pins::definition(&tool)), false),
            };
            if view.registered.get(&name) != Some(&fingerprint) {
                let built = match build_tool(Arc::downgrade(self), index, &name, &tool, &pin, approved) {
                    Ok(built) => built,
                    Err(reason) => {
                        problems.push(format!("tool `{upstream}` not registered: {reason}"));
                        if view.registered.remove(&name).is_some() {
                            self.sink.unregister(&name);
                            names.remove(&name);
                            changed = true;
                        }
                        continue;
                    }
                };
                if let Err(reason) = self.sink.register(&name, built) {
                    problems.push(format!("tool `{upstream}` not registered: {reason}"));
                    continue;
                }
                names.insert(name.clone(), index);
                view.registered.insert(name.clone(), fingerprint);
                changed = true;
            }
            reports.push(ToolReport {
                name,
                tool: upstream,
                hints: hints(&tool),
                pin: pin.hash.clone(),
                approved,
            });
        }
        view.tools = reports;
        view.problems = problems;
        changed
    }

    /// The connection a call uses: the live one, else (once per server) a restart.
    async fn connection_for_call(self: &Arc<Self>, index: usize) -> Result<Arc<Connection>, String> {
        let server = &self.servers[index];
        let name = &server.config.name;
        let mut slot = server.slot.lock().await;
        let crashed = match &*slot {
            Slot::Up(connection) if !connection.closed() => return Ok(Arc::clone(connection)),
            Slot::Up(connection) => Some(connection.exit().unwrap_or_else(|| "closed the connection".into())),
            Slot::Down(reason) => return Err(format!("MCP server `{name}` is not available: {reason}")),
            Slot::Idle => None,
        };
        if let Some(how) = &crashed {
            let restarts = lock(&server.view).restarts;
            if restarts >= 1 {
                let reason = format!("it {how} again after a restart; not restarting (see `toolgate mcp list`)");
                let mut view = lock(&server.view);
                view.state = Some(State::Failed);
                view.error = Some(reason.clone());
                *slot = Slot::Down(reason.clone());
                return Err(format!("MCP server `{name}` is not available: {reason}"));
            }
            lock(&server.view).restarts += 1;
        }
        match self.connect(index).await {
            Ok((connection, tools)) => {
                *slot = Slot::Up(Arc::clone(&connection));
                drop(slot);
                if self.apply(index, tools) {
                    self.bump();
                }
                Ok(connection)
            }
            Err(reason) => {
                let mut view = lock(&server.view);
                view.state = Some(State::Failed);
                let reason = match &crashed {
                    Some(how) => format!("it {how}, and the restart failed: {reason}"),
                    None => reason,
                };
                view.error = Some(reason.clone());
                *slot = Slot::Down(reason.clone());
                Err(format!("MCP server `{name}` is not available: {reason}"))
            }
        }
    }

    /// Before a call of `upstream` built from `pin`: nothing when the definition is the
    /// pinned one, else the `mcp_pin` ask with the difference. Allowed by a saved approval
    /// (the person's "always") or a rule, the new definition becomes the pin and the tool
    /// is registered again with its own description; allowed once, it keeps asking.
    async fn approve_pin(
        self: &Arc<Self>,
        index: usize,
        upstream: &str,
        pin: &Pinned,
        ctx: &Context,
    ) -> Result<(), ToolFailure> {
        let server = &self.servers[index];
        let (standing, instructions) = {
            let view = lock(&server.view);
            let standing = match view.standings.get(upstream) {
                // Listed again since this registration was built: the newest standing
                // decides only when it is about the same definition.
                Some((current, standing)) if current.hash == pin.hash => standing.clone(),
                _ => Standing::Unapproved {
                    previous: pins::Previous::Absent,
                    instructions: None,
                },
            };
            (standing, view.instructions.clone())
        };
        if standing == Standing::Pinned {
            return Ok(());
        }
        let name = &server.config.name;
        let resource = format!("{}:{}@{}", sanitize(name), sanitize(upstream), pin.hash);
        let request = PermissionRequest::new(PIN_ACTION)
            .resources([resource.clone()])
            .save([resource])
            .metadata(
                "description",
                pins::change_text(name, &escaped(upstream), &standing, pin),
            )
            .metadata(
                "mcp",
                json!({"server": name, "tool": upstream, "pin": pin.hash,
                       "previous": match &standing {
                           Standing::Unapproved { previous: pins::Previous::Changed(old), .. } => Value::from(old.hash.clone()),
                           _ => Value::Null,
                       }}),
            );
        self.permissions
            .assert(ctx, request.clone())
            .await
            .map_err(ToolFailure::from)?;
        // "always" saved it for the project: it allows in any session, this one's own
        // approvals aside (a "session" answer keeps asking in the others).
        let mut elsewhere = ctx.clone();
        elsewhere.session_id = format!("{}/mcp-pin-check", ctx.session_id);
        let kept = self
            .permissions
            .decide(&elsewhere, &request)
            .is_some_and(|decision| decision.verdict == toolgate_core::Verdict::Allow);
        if kept {
            let identity = server.config.identity();
            if let Err(error) = self
                .options
                .pins
                .keep(name, &identity, instructions.as_ref(), upstream, pin)
            {
                lock(&server.view).problems.push(error.to_string());
                return Ok(());
            }
            let listed = lock(&server.view).listed.clone();
            if self.apply(index, listed) {
                self.bump();
            }
        }
        Ok(())
    }

    /// Re-lists server `index`'s tools after `notifications/tools/list_changed`.
    async fn relist(self: Arc<Self>, index: usize, generation: u64) {
        let server = &self.servers[index];
        if server.generation.load(Ordering::SeqCst) != generation {
            return;
        }
        let peer = match &*server.slot.lock().await {
            Slot::Up(connection) => connection.peer.clone(),
            _ => return,
        };
        match tokio::time::timeout(server.config.request_timeout, peer.list_all_tools()).await {
            Ok(Ok(tools)) => {
                if server.generation.load(Ordering::SeqCst) == generation && self.apply(index, tools) {
                    self.bump();
                }
            }
            Ok(Err(error)) => lock(&server.view).error = Some(format!("tools/list after list_changed failed: {error}")),
            Err(_) => lock(&server.view).error = Some("tools/list after list_changed timed out".to_string()),
        }
    }
}

/// The part of a pin's hash a tool's saved approval names: 128 bits, enough that no
/// server can make another definition with the same digest.
fn pin_digest(hash: &str) -> &str {
    let hex = hash.strip_prefix("sha256:").unwrap_or(hash);
    &hex[..hex.len().min(32)]
}

/// Human-readable hints for the ask; they inform and never decide.
fn hints(tool: &rmcp::model::Tool) -> Vec<String> {
    let Some(annotations) = &tool.annotations else {
        return Vec::new();
    };
    let mut hints = Vec::new();
    match annotations.read_only_hint {
        Some(true) => hints.push("read-only".to_string()),
        Some(false) => hints.push("may modify".to_string()),
        None => {}
    }
    match annotations.destructive_hint {
        Some(true) => hints.push("destructive".to_string()),
        Some(false) => hints.push("not destructive".to_string()),
        None => {}
    }
    hints
}

/// Compiles a JSON Schema into a validator whose errors read like `/a: "x" is not of type "integer"`.
fn validator(schema: &Value) -> Result<impl Fn(&Value) -> Result<(), String> + Send + Sync + 'static, String> {
    let compiled = Schema::compile(schema).map_err(|e| format!("its schema is not valid JSON Schema: {e}"))?;
    Ok(move |value: &Value| {
        let errors: Vec<String> = compiled
            .errors(value, 3)
            .into_iter()
            .map(|error| {
                if error.instance_path.is_empty() {
                    error.message
                } else {
                    format!("{}: {}", error.instance_path, error.message)
                }
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    })
}

/// The toolgate tool for one server tool. What the model sees of it is cleaned of
/// escapes and invisible characters; while its definition is not approved, the model
/// sees none of the server's words (a rug pull's payload is its description), only that
/// the tool waits for a person.
fn build_tool(
    inner: Weak<Inner>,
    index: usize,
    name: &str,
    tool: &rmcp::model::Tool,
    pin: &Pinned,
    approved: bool,
) -> Result<Tool, String> {
    let input_schema = Value::Object(tool.input_schema.as_ref().clone());
    let check_input = validator(&input_schema)?;
    let mut shown_schema = input_schema.clone();
    clean_schema(&mut shown_schema);
    let server = inner
        .upgrade()
        .map(|inner| inner.servers[index].config.name.clone())
        .unwrap_or_default();
    let description = if approved {
        let text = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or("An MCP tool without a description.");
        clean(text).0.into_owned()
    } else {
        format!(
            "A tool of MCP server `{server}` whose definition is not approved yet (it changed since it was \
             approved, or it is new). Calling it asks the person to approve the new definition first; its \
             own description is shown once they have."
        )
    };
    let call = Arc::new(Call {
        inner,
        index,
        name: name.to_string(),
        upstream: tool.name.to_string(),
        hints: hints(tool),
        pin: pin.clone(),
    });
    let builder = Tool::from_schema(
        description,
        shown_schema,
        move |input| {
            if !input.is_object() {
                return Err("expected an object of arguments".to_string());
            }
            check_input(input)
        },
        move |input, ctx| Arc::clone(&call).run(input, ctx),
    );
    // The server's title and hints pass on as it gave them (MCP: `title`, else the
    // annotations' `title`), for toolgate's own MCP clients to show.
    let title = tool
        .title
        .clone()
        .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()))
        .filter(|_| approved)
        .map(|title| clean(&title).0.into_owned());
    let builder = match title {
        Some(title) => builder.title(title),
        None => builder,
    };
    let builder = match &tool.annotations {
        Some(a) => builder.annotations(Annotations::from_hints(
            a.read_only_hint,
            a.destructive_hint,
            a.idempotent_hint,
            a.open_world_hint,
        )),
        None => builder,
    };
    Ok(match &tool.output_schema {
        Some(schema) => {
            let schema = Value::Object(schema.as_ref().clone());
            let check = validator(&schema).map_err(|e| format!("output {e}"))?;
            let mut shown = schema;
            clean_schema(&mut shown);
            builder.output_schema(shown, check)
        }
        None => builder,
    }
    .build())
}

/// One server tool's executor.
struct Call {
    inner: Weak<Inner>,
    index: usize,
    name: String,
    upstream: String,
    hints: Vec<String>,
    /// The definition this registration was built from.
    pin: Pinned,
}

/// Removes a call from its server's in-flight list when it ends or is dropped.
struct Active<'a> {
    server: &'a Server,
    id: u64,
}

impl Drop for Active<'_> {
    fn drop(&mut self) {
        lock(&self.server.active).retain(|(id, _)| *id != self.id);
    }
}

impl Call {
    async fn run(self: Arc<Self>, input: Value, ctx: Context) -> Result<ToolOutput, ToolFailure> {
        let inner = self
            .inner
            .upgrade()
            .ok_or_else(|| ToolFailure::new("toolgate is shutting down; the MCP server is gone"))?;
        let server = &inner.servers[self.index];
        let server_name = &server.config.name;
        let mut description = format!("MCP tool `{}` of server `{server_name}`", escaped(&self.upstream));
        if !self.hints.is_empty() {
            description.push_str(&format!(" (server says: {})", self.hints.join(", ")));
        }
        let arguments = input.to_string();
        let shown: String = arguments.chars().take(2000).collect();
        description.push_str(&format!("\narguments: {shown}"));
        if shown.len() < arguments.len() {
            description.push('…');
        }
        inner.approve_pin(self.index, &self.upstream, &self.pin, &ctx).await?;
        // The tool's own permission is bound to its definition: "always" saves this
        // definition's pin, and lapses when the definition changes.
        let bound = format!("pin:{}", pin_digest(&self.pin.hash));
        let request = PermissionRequest::new(self.name.clone())
            .resources([bound.clone()])
            .save([bound])
            .metadata("description", description)
            .metadata(
                "mcp",
                json!({"server": server_name, "tool": self.upstream, "hints": self.hints, "arguments": input}),
            );
        inner
            .permissions
            .assert(&ctx, request)
            .await
            .map_err(ToolFailure::from)?;
        let connection = inner.connection_for_call(self.index).await.map_err(ToolFailure::new)?;
        let id = inner.next_call.fetch_add(1, Ordering::Relaxed);
        lock(&server.active).push((id, ctx.clone()));
        let _active = Active { server, id };
        let Value::Object(arguments) = input else {
            return Err(ToolFailure::new("Invalid tool input: expected an object of arguments"));
        };
        let params = CallToolRequestParams::new(self.upstream.clone()).with_arguments(arguments);
        let timeout = server.config.request_timeout;
        // Dropping the request future (timeout, or the caller cancelling) makes rmcp send
        // `notifications/cancelled` upstream.
        let answer = tokio::time::timeout(
            timeout,
            call_with_input(&inner, self.index, &connection.peer, params, &ctx),
        )
        .await;
        let result = match answer {
            Err(_) => {
                return Err(ToolFailure::new(format!(
                    "MCP server `{server_name}` did not answer `{}` within {} (its request timeout); the call was cancelled",
                    self.upstream,
                    seconds(timeout)
                )));
            }
            Ok(Err(ServiceError::McpError(error))) => {
                return Err(ToolFailure::new(format!(
                    "MCP server `{server_name}` refused `{}`: {}",
                    self.upstream, error.message
                )));
            }
            Ok(Err(error)) => {
                let how = if connection.closed() {
                    // Give a child that is dying a moment to be reaped, for the message.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    connection.exit().unwrap_or_else(|| "closed the connection".into())
                } else {
                    error.to_string()
                };
                return Err(ToolFailure::new(format!(
                    "MCP server `{server_name}` failed during `{}`: {how}",
                    self.upstream
                )));
            }
            Ok(Ok(Ok(result))) => result,
            Ok(Ok(Err(unsupported))) => {
                return Err(ToolFailure::new(format!(
                    "MCP server `{server_name}` answered `{}` with {unsupported}",
                    self.upstream
                )));
            }
        };
        let mut result = serde_json::to_value(&result).unwrap_or(Value::Null);
        // What goes back to the model carries no escapes and no invisible characters.
        let stripped = clean_value(&mut result);
        if stripped > 0 {
            tracing::info!(
                server = %server_name,
                tool = %self.upstream,
                stripped,
                "stripped escapes and invisible characters from an MCP result"
            );
        }
        content::tool_result(&result, server_name, &self.upstream).map(|output| output.with_stripped(stripped))
    }
}

type Started = (RunningService<RoleClient, Handler>, &'static str);

/// How a connection agrees on its MCP version, per server: `server/discover` offering
/// 2026-07-28 (the stateless core: no `initialize`, every request carries its own
/// `_meta`) then 2025-11-25; a server that answers it with a JSON-RPC error, or not at
/// all within 10 s, is an older one and gets `initialize` with 2025-11-25 on the same
/// connection (the 2026-07-28 spec's backward-compatibility procedure). `initialize`
/// settles on 2025-06-18 or older with a server that offers only those.
fn negotiate() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28, ProtocolVersion::V_2025_11_25],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    }
}

/// A 2026-07-28 server announces `tools/list_changed` only on a `subscriptions/listen`
/// stream the client opens: this holds one open for the connection's life and re-lists
/// at each announcement, as the session's notification does for older servers.
async fn listen_for_changes(peer: Peer<RoleClient>, inner: Weak<Inner>, index: usize, generation: u64) {
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let mut subscription = match peer.listen(filter).await {
        Ok(subscription) => subscription,
        Err(error) => {
            // A server without list changes has nothing to announce.
            tracing::debug!("subscriptions/listen refused: {error}");
            return;
        }
    };
    while let Ok(Some(notification)) = subscription.next().await {
        if matches!(
            notification,
            rmcp::model::ServerNotification::ToolListChangedNotification(_)
        ) {
            let Some(inner) = inner.upgrade() else { return };
            tokio::spawn(inner.relist(index, generation));
        }
    }
}

/// Streamable HTTP first; when that fails, the older HTTP+SSE transport (the MCP spec's
/// backwards-compatibility procedure). A server with OAuth tokens gets the access token,
/// refreshed when it has expired or is refused (once); a `401` without one says how to
/// log in, and is not retried over the older transport.
async fn connect_remote(
    handler: Handler,
    config: &ServerConfig,
    url: &str,
    headers: &[(String, String)],
    tokens: &TokenStore,
) -> Result<Started, String> {
    use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let startup = config.startup_timeout;
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(format!("{url:?} is not an http:// or https:// URL"));
    }
    let mut map = HeaderMap::new();
    for (key, value) in headers {
        let name = HeaderName::from_bytes(key.as_bytes()).map_err(|e| format!("header {key:?}: {e}"))?;
        let value = HeaderValue::from_str(value).map_err(|e| format!("header {key:?}: {e}"))?;
        map.insert(name, value);
    }
    let client = crate::http::http_client(startup)?;
    let transport_config = StreamableHttpClientTransportConfig::with_uri(url)
        .custom_headers(map.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
    let manager = crate::oauth::connection_manager(config, tokens)
        .await
        .map_err(|error| error.to_string())?;
    let logged_in = manager.is_some();
    let (streamable, auth) = match manager {
        Some(manager) => {
            let auth = rmcp::transport::auth::AuthClient::new(client.clone(), manager);
            match serve_streamable(&handler, auth.clone(), transport_config, url).await {
                Ok(service) => return Ok((service, "streamable HTTP")),
                Err(error) => (error, Some(auth)),
            }
        }
        None => match serve_streamable(&handler, client.clone(), transport_config, url).await {
            Ok(service) => return Ok((service, "streamable HTTP")),
            Err(error) => (error, None),
        },
    };
    if crate::http::needs_login(&streamable) {
        let name = &config.name;
        return Err(if !config.oauth.enabled {
            "the server answered 401 (authorization required), and its OAuth is off (`\"oauth\": false`): give credentials in its `headers`".to_string()
        } else if logged_in {
            format!(
                "the server refused its OAuth token and it could not be refreshed: run `toolgate mcp auth {name}` to log in again"
            )
        } else {
            format!("the server requires authorization (OAuth): run `toolgate mcp auth {name}` to log in")
        });
    }
    let streamable = streamable.to_string();
    // The older transport gets the current access token as a header (no refresh there).
    if let Some(auth) = auth
        && let Ok(token) = auth.get_access_token().await
        && let Ok(value) = HeaderValue::from_str(&format!("Bearer {token}"))
    {
        map.insert(reqwest::header::AUTHORIZATION, value);
    }
    match sse::connect(client, url, map, startup).await {
        Ok(transport) => match handler.serve(transport).await {
            Ok(service) => Ok((service, "HTTP+SSE")),
            Err(error) => Err(format!("streamable HTTP: {streamable}; HTTP+SSE: {error}")),
        },
        Err(error) => Err(format!("streamable HTTP: {streamable}; HTTP+SSE: {error}")),
    }
}

/// Streamable HTTP over `client`: `server/discover` first ([`negotiate`]); a server
/// older than 2026-07-28 may refuse a first POST that is not `initialize` outright (HTTP
/// 400, no JSON-RPC answer to tell it by), so it is spoken to again with `initialize` —
/// unless it asked for authorization, which a second try would not change.
async fn serve_streamable<C>(
    handler: &Handler,
    client: C,
    config: rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig,
    url: &str,
) -> Result<RunningService<RoleClient, Handler>, rmcp::service::ClientInitializeError>
where
    C: rmcp::transport::streamable_http_client::StreamableHttpClient + Clone + Send + Sync + 'static,
{
    use rmcp::transport::StreamableHttpClientTransport;
    let transport = StreamableHttpClientTransport::with_client(client.clone(), config.clone());
    let probe = match handler.clone().serve_with_lifecycle(transport, negotiate()).await {
        Ok(service) => return Ok(service),
        Err(error) if crate::http::needs_login(&error) => return Err(error),
        Err(error) => error.to_string(),
    };
    tracing::info!(url, "server/discover failed ({probe}); trying initialize");
    let transport = StreamableHttpClientTransport::with_client(client, config);
    handler.clone().serve(transport).await
}

/// The client side of one connection: elicitation and `list_changed`.
#[derive(Clone)]
struct Handler {
    inner: Weak<Inner>,
    index: usize,
    generation: u64,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // Elicitation is passed through to the person; sampling is not offered (toolgate
        // has no model) and so not declared.
        let capabilities = ClientCapabilities::builder().enable_elicitation().build();
        ClientConfig::new(capabilities, Implementation::new("toolgate", env!("CARGO_PKG_VERSION")))
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let Some(inner) = self.inner.upgrade() else {
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        let server = &inner.servers[self.index];
        // MCP before 2026-07-28 ties a server's request to the call it serves on no
        // transport toolgate can rely on (over stdio, not at all). So it goes to the
        // session of the calls in flight when they are all of one session, and to no one
        // otherwise: a question must never reach a session whose call did not cause it.
        let context = {
            let active = lock(&server.active);
            let newest = active.last().map(|(_, ctx)| ctx.clone());
            match newest {
                Some(ctx) if active.iter().all(|(_, other)| other.session_id == ctx.session_id) => Some(ctx),
                _ => None,
            }
        };
        let Some(context) = context else {
            tracing::warn!(
                server = %server.config.name,
                "declined an elicitation: no call in flight, or calls of several sessions, could have caused it"
            );
            return Ok(ElicitResult::new(ElicitationAction::Decline));
        };
        Ok(self.answer(&inner, request, context).await)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Some(inner) = self.inner.upgrade() {
            tokio::spawn(inner.relist(self.index, self.generation));
        }
    }
}

impl Handler {
    /// Puts a server's form to the person of `context`'s session through the elicitor;
    /// an answer the form's own schema rejects, or a URL elicitation, is a decline.
    async fn answer(&self, inner: &Inner, request: ElicitRequestParams, context: Context) -> ElicitResult {
        let decline = || ElicitResult::new(ElicitationAction::Decline);
        let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        else {
            // URL elicitation (open a page) is not something toolgate does on anyone's behalf.
            return decline();
        };
        let server = &inner.servers[self.index];
        let schema = serde_json::to_value(&requested_schema).unwrap_or(Value::Null);
        let context = Some(context);
        let elicitor = Arc::clone(&inner.elicitor.read().unwrap_or_else(|p| p.into_inner()));
        let asked = Elicitation {
            server: server.config.name.clone(),
            message,
            schema: schema.clone(),
            context,
        };
        match elicitor.elicit(asked).await {
            ElicitationAnswer::Accept(values) => {
                let values = Value::Object(with_defaults(&schema, values));
                match Schema::compile(&schema) {
                    Ok(check) if check.is_valid(&values) => {
                        ElicitResult::new(ElicitationAction::Accept).with_content(values)
                    }
                    // Never hand a server an answer its own schema rejects.
                    _ => ElicitResult::new(ElicitationAction::Decline),
                }
            }
            ElicitationAnswer::Decline => decline(),
            ElicitationAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        }
    }
}

/// The most input rounds one call may take (a 2026-07-28 server asking, the person
/// answering, the call sent again): a server that never finishes is given up on.
const MAX_INPUT_ROUNDS: usize = 16;

/// Sends `tools/call`, answering a 2026-07-28 server's input rounds (`InputRequiredResult`,
/// SEP-2322): its forms go to the person of the call's own session, which caused them,
/// and the call is sent again with the answers and the server's `requestState`.
async fn call_with_input(
    inner: &Arc<Inner>,
    index: usize,
    peer: &Peer<RoleClient>,
    mut params: CallToolRequestParams,
    ctx: &Context,
) -> Result<Result<CallToolResult, String>, ServiceError> {
    let handler = Handler {
        inner: Arc::downgrade(inner),
        index,
        generation: inner.servers[index].generation.load(Ordering::SeqCst),
    };
    for _ in 0..MAX_INPUT_ROUNDS {
        let round = match peer.call_tool_once(params.clone()).await? {
            CallToolResponse::Complete(result) => return Ok(Ok(result)),
            CallToolResponse::InputRequired(round) => round,
            _ => return Ok(Err("a task, which toolgate does not support".to_string())),
        };
        let mut answers = InputResponses::new();
        for (key, request) in round.input_requests.unwrap_or_default() {
            let InputRequest::Elicitation(request) = request else {
                // toolgate declares neither sampling nor roots to a server.
                return Ok(Err(
                    "an input request for sampling or roots, which toolgate does not declare".to_string(),
                ));
            };
            let answer = handler.answer(inner, request.params, ctx.clone()).await;
            answers.insert(key, serde_json::to_value(answer).unwrap_or(Value::Null));
        }
        params.input_responses = (!answers.is_empty()).then_some(answers);
        params.request_state = round.request_state;
    }
    Ok(Err(format!("more than {MAX_INPUT_ROUNDS} input rounds")))
}
