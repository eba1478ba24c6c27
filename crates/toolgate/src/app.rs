//! The runtime every tool-running command shares: the gate over a registry with every
//! builtin, the output store and the permission service.

use std::sync::Arc;

use toolgate_builtins_session::{QuestionService, TodoStore};
use toolgate_core::{Location, Permissions};
use toolgate_gate::Gate;
use toolgate_output_store::{Limits, OutputStore};
use toolgate_registry::{ApplicationTools, ToolRegistry};

use crate::Failure;
use crate::setup::Setup;

/// Secrets this process holds that are not in its environment (the `serve` token,
/// possibly a random one, read before the variable is blanked), each with the name its
/// redaction marker shows.
static HELD_SECRETS: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

/// Adds a secret every output has redacted from now on (call before [`App::new`]).
pub(crate) fn hold_secret(name: &str, value: &str) {
    HELD_SECRETS
        .lock()
        .unwrap_or_else(|poison| poison.into_inner())
        .push((name.to_string(), value.to_string()));
}

/// The output redactor (README "Redaction"): the values of the variables `shell_env`
/// holds back (the server token and the websearch keys always), of `{env:…}` and
/// `{file:…}` in MCP entries, of [`hold_secret`]'s, and, unless
/// `redaction.credential_formats` is false, the well-known credential formats.
fn redactor(setup: &Setup) -> Result<Option<toolgate_output_store::Redactor>, Failure> {
    let policy = crate::sandbox::shell_policy(&setup.config);
    let mut builder = toolgate_output_store::Redactor::builder().credential_formats(
        setup
            .config
            .settings
            .redaction
            .and_then(|r| r.credential_formats)
            .is_none_or(|on| on.0),
    );
    for (name, value) in std::env::vars_os() {
        let (Some(name), Some(value)) = (name.to_str(), value.to_str()) else {
            continue;
        };
        if policy.excludes(name) {
            let kind = match name.to_ascii_uppercase().as_str() {
                "TOOLGATE_SERVER_TOKEN" => "server-token".to_string(),
                "EXA_API_KEY" | "PARALLEL_API_KEY" => "websearch-key".to_string(),
                _ => format!("env:{name}"),
            };
            builder = builder.secret(kind, value);
        }
    }
    for layer in setup.config.loaded.all() {
        for value in &layer.mcp_secrets {
            builder = builder.secret("mcp-config", value.as_str());
        }
    }
    for (name, value) in HELD_SECRETS.lock().unwrap_or_else(|poison| poison.into_inner()).iter() {
        builder = builder.secret(name.as_str(), value.as_str());
    }
    // The remote servers' OAuth tokens: those stored now, and (the redactor extendable)
    // those a refresh brings later (`oauth_tokens`).
    if setup
        .config
        .loaded
        .mcp()
        .iter()
        .any(|entry| matches!(entry.launch, toolgate_config::McpLaunch::Remote { .. }))
    {
        for value in crate::mcp::token_store(&setup.dirs).secrets() {
            builder = builder.secret(OAUTH_SECRET, value);
        }
        builder = builder.extendable(true);
    }
    builder
        .build()
        .map_err(|error| Failure::runtime(format!("redaction: {error}")))
}

/// The name OAuth tokens' redaction markers show.
const OAUTH_SECRET: &str = "mcp-oauth-token";

/// The token store of the gateway: every token it loads or saves is redacted from every
/// output from then on.
fn oauth_tokens(setup: &Setup, redactor: Option<toolgate_output_store::Redactor>) -> toolgate_mcp_client::TokenStore {
    let store = crate::mcp::token_store(&setup.dirs);
    match redactor {
        Some(redactor) => store.watch(Arc::new(move |value: &str| {
            if let Err(error) = redactor.add_secret(OAUTH_SECRET, value) {
                tracing::warn!(%error, "an OAuth token could not be added to the redaction patterns");
            }
        })),
        None => store,
    }
}

/// The gate over every builtin, registered for the project, and over the configured MCP
/// servers' tools once they are needed.
pub(crate) struct App {
    pub(crate) gate: Gate,
    /// The MCP gateway, when servers are configured.
    pub(crate) gateway: Option<toolgate_mcp_client::Gateway>,
    /// The output store the gate bounds with (for the daily cleanup of `call`).
    pub(crate) spills: OutputStore,
    /// The background processes of every session (README "Background processes").
    pub(crate) shells: toolgate_builtins_shell::Shells,
}

impl App {
    pub(crate) fn new(setup: &Setup, questions: QuestionService) -> Result<App, Failure> {
        let mut limits = Limits::default();
        let (max_lines, max_bytes) = setup.config.tool_output();
        if let Some(lines) = max_lines {
            limits.max_lines = usize::try_from(lines).unwrap_or(usize::MAX);
        }
        if let Some(bytes) = max_bytes {
            limits.max_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        }
        let store = OutputStore::new(&setup.dirs.data)
            .with_limits(limits)
            .with_redactor(redactor(setup)?);
        let application = ApplicationTools::new();
        let registry = ToolRegistry::new(&application, Arc::new(store.clone()));
        let location =
            Location::new(&setup.dir).map_err(|error| Failure::usage(format!("{}: {error}", setup.dir.display())))?;
        let permissions: Arc<dyn Permissions> = Arc::new(setup.service.clone());
        let todos = TodoStore::deferred(setup.dirs.data.join("toolgate.db"));
        // `read` pages to fit the store's bound whole (spec §3.5).
        let services = toolgate_builtins_fs::Services::new(location.clone(), Arc::clone(&permissions))
            .with_output_bound(limits.max_lines, limits.max_bytes);
        let skill_dirs = toolgate_builtins_fs::skill_dirs(&setup.dir, Some(&setup.dirs.config));
        let mut builtins = toolgate_builtins_fs::tools(services, skill_dirs);
        let shells = toolgate_builtins_shell::Shells::with_limits(
            toolgate_builtins_shell::log_dir(&setup.dirs.data),
            setup.config.shell_limits(),
        );
        builtins.push((
            "webfetch",
            toolgate_builtins_net::webfetch_tool(setup.config.fetch_config(), Arc::clone(&permissions)),
        ));
        // Built without the `websearch` feature, the tool is not there at all.
        #[cfg(feature = "websearch")]
        builtins.push((
            "websearch",
            toolgate_builtins_net::websearch_tool(setup.config.search_config(), Arc::clone(&permissions)),
        ));
        builtins.extend(crate::sandbox::bash_tools(
            &setup.sandbox_parts(),
            location,
            Arc::clone(&permissions),
            shells.clone(),
        ));
        builtins.extend([
            (
                "todowrite",
                toolgate_builtins_session::todowrite_tool(todos, Arc::clone(&permissions)),
            ),
            (
                "question",
                toolgate_builtins_session::question_tool(questions, Arc::clone(&permissions)),
            ),
        ]);
        if setup.prompt_tool {
            builtins.push((
                "approval_prompt",
                crate::hook::approval_prompt_tool(crate::check::Analysis::of(setup), Arc::clone(&permissions)),
            ));
        }
        // OpenCode V2's `"websearch": false` turns the tool off.
        if !setup.config.websearch_on() {
            builtins.retain(|(name, _)| *name != "websearch");
        }
        let reserved: Vec<String> = builtins.iter().map(|(name, _)| name.to_string()).collect();
        let registration = registry
            .register(builtins)
            .map_err(|error| Failure::runtime(format!("could not register the builtins: {error}")))?;
        let parts = setup.sandbox_parts();
        let servers = setup.config.mcp_servers(&setup.dir, |section, cwd| {
            crate::sandbox::server_wrapper(&parts, section, cwd)
        });
        let gateway = (!servers.is_empty()).then(|| {
            toolgate_mcp_client::Gateway::new(
                toolgate_mcp_client::Options::new(&setup.dir, setup.dirs.data.join("log").join("mcp"))
                    .servers(servers)
                    .reserved(reserved)
                    .pins(crate::mcp::pin_store(&setup.dirs))
                    .tokens(oauth_tokens(setup, store.redactor().cloned())),
                Arc::clone(&permissions),
                Arc::new(crate::gateway::RegistrySink::new(registry.clone())),
            )
        });
        let mut gate = Gate::builder(registry, setup.service.clone());
        if let Some(gateway) = &gateway {
            // Servers start on first need: a whole catalog starts them all (in parallel),
            // a call only those that may own the tool.
            let starter = gateway.clone();
            gate = gate
                .prepare(Arc::new(move |tool: Option<String>| {
                    let gateway = starter.clone();
                    Box::pin(async move {
                        match tool {
                            Some(name) => gateway.start_for(&name).await,
                            None => gateway.start_all().await,
                        }
                    })
                }))
                .catalog_changes(gateway.changes());
        }
        if let Some(threshold) = setup.config.doom_loop_threshold() {
            gate = gate.doom_loop_threshold(usize::try_from(threshold).unwrap_or(usize::MAX));
        }
        let spills_store = store.clone();
        let gate = gate.hold(registration).spills(store).build();
        Ok(App {
            gate,
            gateway,
            spills: spills_store,
            shells,
        })
    }

    /// Ends every background process and every MCP server with its process group. (A
    /// foreground command's own leftovers are not ended here: they stay confined by the
    /// sandbox and the exec guard, README "The sandbox"; the servers end what they
    /// adopted as their last step.)
    pub(crate) async fn shutdown(&self) {
        self.shells.end_all().await;
        if let Some(gateway) = &self.gateway {
            gateway.shutdown().await;
        }
    }

    /// Prints every MCP server error on stderr (they do not stop the other tools).
    pub(crate) fn report_mcp_errors(&self, failed_only: bool) {
        let Some(gateway) = &self.gateway else { return };
        for server in gateway.report() {
            if failed_only && server.state != toolgate_mcp_client::State::Failed {
                continue;
            }
            for error in &server.errors {
                eprintln!("toolgate: MCP server {}: {error}", server.name);
            }
        }
    }
}

/// Everything the servers run, built for `project`, and the MCP gateway (to end its
/// servers when the server stops).
pub(crate) fn server_parts(
    project: &crate::Project,
    mode: toolgate_permission::AskMode,
    questions_answerable: bool,
    sandbox: Option<toolgate_sandbox::Mode>,
) -> Result<(toolgate_server::Parts, Option<toolgate_mcp_client::Gateway>), Failure> {
    server_parts_notified(project, mode, questions_answerable, sandbox, true)
        .map(|(parts, gateway, _)| (parts, gateway))
}

/// [`server_parts`], and the config's `notify` webhooks (`toolgate serve` sends them);
/// `prompt_tool`: whether the tools include `approval_prompt` (`toolgate mcp`'s).
pub(crate) fn server_parts_notified(
    project: &crate::Project,
    mode: toolgate_permission::AskMode,
    questions_answerable: bool,
    sandbox: Option<toolgate_sandbox::Mode>,
    prompt_tool: bool,
) -> Result<
    (
        toolgate_server::Parts,
        Option<toolgate_mcp_client::Gateway>,
        Vec<toolgate_config::NotifyTarget>,
    ),
    Failure,
> {
    let mut setup = Setup::new(project, mode)?;
    setup.sandbox = setup.sandbox.clone().with_cli(sandbox);
    setup.prompt_tool = prompt_tool;
    let questions = QuestionService::new(questions_answerable);
    let app = App::new(&setup, questions.clone())?;
    if let Some(gateway) = &app.gateway {
        // Elicitations become questions (HTTP `question`); `toolgate mcp` replaces this
        // with passing them to its own client.
        gateway.set_elicitor(Arc::new(crate::gateway::QuestionElicitor {
            questions: questions.clone(),
            fallback_session: toolgate_core::ascending_id("ses"),
        }));
    }
    let (_, dir) = crate::setup::project_dir(project)?;
    let trust = crate::trust::ServedTrust::new(crate::config::Dirs::discover(), dir, project.config.clone());
    // Background processes' events go to `/event` and to their session's MCP client.
    let (events, _) = tokio::sync::broadcast::channel(1024);
    let sender: tokio::sync::broadcast::Sender<toolgate_server::ServerEvent> = events;
    let to_server = sender.clone();
    app.shells.set_events(move |event| {
        let _ = to_server.send(toolgate_server::ServerEvent::new(event.kind, event.properties));
    });
    let parts = toolgate_server::Parts {
        gate: app.gate,
        questions,
        agent: setup.agent.clone(),
        trust: Some(Arc::new(trust)),
        sessions: Some(Arc::new(SessionShells(app.shells.clone()))),
        events: Some(sender),
    };
    let notify = setup.config.settings.notify.clone().unwrap_or_default();
    Ok((parts, app.gateway, notify))
}

/// The servers end a session's background processes through this.
struct SessionShells(toolgate_builtins_shell::Shells);

impl toolgate_server::SessionEnd for SessionShells {
    fn end_session<'a>(&'a self, session: &'a str) -> toolgate_core::BoxFuture<'a, usize> {
        Box::pin(self.0.end_session(session))
    }

    fn end_all(&self) -> toolgate_core::BoxFuture<'_, usize> {
        Box::pin(self.0.end_all())
    }

    fn list(&self) -> Vec<serde_json::Value> {
        self.0
            .list(None)
            .iter()
            .filter_map(|info| serde_json::to_value(info).ok())
            .collect()
    }

    fn output(&self, id: &str, since: Option<u64>) -> Option<serde_json::Value> {
        self.0.peek(id, since).and_then(|read| serde_json::to_value(read).ok())
    }

    fn kill(&self, id: &str) -> Option<bool> {
        self.0.kill(id)
    }
}

/// A multi-threaded runtime for the servers.
pub(crate) fn server_runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::runtime(format!("could not start the runtime: {e}")))
}

/// The runtime of `toolgate mcp` over stdio: one thread. Its client sends one message at
/// a time down one pipe, and each call is a chain of hand-offs (client pipe, gate, upstream
/// server pipe, back): on one thread none of them wakes another worker, which on a busy
/// machine costs more than the call itself. Blocking work still leaves the thread
/// (file tools and output spills use the blocking pool), and calls still run
/// concurrently as tasks.
pub(crate) fn stdio_runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::runtime(format!("could not start the runtime: {e}")))
}

/// Makes this long-lived process non-dumpable, so that a command running as the same user
/// cannot read its environment (the server token) or memory through `/proc/<pid>/`.
pub(crate) fn hide_environment() {
    let _ = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable);
}

/// Blanks the value of `name` in this process's original environment block, the memory
/// `/proc/<pid>/environ` shows. Non-dumpable keeps other users out of that file, but not
/// root (CI runners, containers), and a command that toolgate runs as root could read the
/// server token there. Read the value before: afterwards the variable is empty. Returns
/// whether a value was blanked; where `/proc/self/mem` cannot be written the block stays
/// as it was (and the error says why).
pub(crate) fn blank_in_environment_block(name: &str) -> std::io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // Fields after the command name (which may hold spaces): field 3 is the first;
    // env_start and env_end are fields 50 and 51 (proc(5)).
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<u64>().ok());
    let (Some(start), Some(end)) = (field(50), field(51)) else {
        return Err(std::io::Error::other("/proc/self/stat has no environment bounds"));
    };
    if end <= start || end - start > 16 << 20 {
        return Err(std::io::Error::other("implausible environment bounds"));
    }
    let mut memory = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/proc/self/mem")?;
    memory.seek(SeekFrom::Start(start))?;
    let mut block = vec![0u8; (end - start) as usize];
    memory.read_exact(&mut block)?;
    let prefix = format!("{name}=");
    let mut blanked = false;
    let mut offset = 0;
    for entry in block.split(|b| *b == 0) {
        if entry.starts_with(prefix.as_bytes()) && entry.len() > prefix.len() {
            let value_at = start + (offset + prefix.len()) as u64;
            memory.seek(SeekFrom::Start(value_at))?;
            memory.write_all(&vec![0u8; entry.len() - prefix.len()])?;
            blanked = true;
        }
        offset += entry.len() + 1;
    }
    Ok(blanked)
}
