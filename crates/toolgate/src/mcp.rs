//! `toolgate mcp`: builds the parts and hands them to `toolgate_server::mcp`;
//! `toolgate mcp list`: the configured MCP servers; `toolgate mcp pins`: their pinned
//! definitions.

use std::sync::{Arc, Mutex};

use toolgate_builtins_session::QuestionService;
use toolgate_permission::AskMode;

use crate::app::{App, server_parts, server_runtime};
use crate::setup::Setup;
use crate::{Failure, Project};

/// `toolgate mcp`. Without `--dir`, the project is the client's first `file://` root
/// when it declares the `roots` capability (README "MCP roots"), else the current
/// directory: the tools are built once the client is initialized.
pub(crate) fn serve_stdio(
    project: &Project,
    auto: bool,
    sandbox: Option<toolgate_sandbox::Mode>,
) -> Result<(), Failure> {
    // Questions go to the client through elicitation (and `question` is offered only to
    // clients that can show forms).
    crate::app::hide_environment();
    let client = toolgate_server::ClientHandle::default();
    let gateway: Arc<Mutex<Option<toolgate_mcp_client::Gateway>>> = Arc::default();
    let build = {
        let (project, client, gateway) = (project.clone(), client.clone(), Arc::clone(&gateway));
        move |root: Option<std::path::PathBuf>| -> Result<toolgate_server::Parts, String> {
            let mut project = project;
            if root.is_some() {
                project.dir = root;
            }
            let (parts, built) = stdio_parts(&project, auto, sandbox, &client).map_err(|f| f.message)?;
            if let Ok(mut slot) = gateway.lock() {
                *slot = built;
            }
            Ok(parts)
        }
    };
    let runtime = crate::app::stdio_runtime()?;
    let served = if project.dir.is_some() {
        // The project is given: built now, so a config error stops the command at once.
        let parts = build(None).map_err(Failure::runtime)?;
        runtime.block_on(toolgate_server::serve_stdio(parts, client))
    } else {
        runtime.block_on(toolgate_server::serve_stdio_rooted(Box::new(build), client))
    };
    let gateway = gateway.lock().ok().and_then(|mut slot| slot.take());
    if let Some(gateway) = gateway {
        runtime.block_on(gateway.shutdown());
    }
    // Last: what was adopted and is known no other way (see `end_adopted`).
    toolgate_builtins_shell::end_adopted();
    served.map_err(Failure::runtime)
}

/// The parts of `toolgate mcp` for `project`, and its MCP gateway (upstream
/// elicitations go to this server's own client, schema and all).
fn stdio_parts(
    project: &Project,
    auto: bool,
    sandbox: Option<toolgate_sandbox::Mode>,
    client: &toolgate_server::ClientHandle,
) -> Result<(toolgate_server::Parts, Option<toolgate_mcp_client::Gateway>), Failure> {
    let mode = if auto { AskMode::Auto } else { AskMode::Interactive };
    let (parts, gateway) = server_parts(project, mode, true, sandbox)?;
    if let Some(gateway) = &gateway {
        let elicitor: Arc<dyn toolgate_mcp_client::Elicitor> = if auto {
            Arc::new(toolgate_mcp_client::AcceptDefaults)
        } else {
            Arc::new(crate::gateway::ClientElicitor(client.clone()))
        };
        gateway.set_elicitor(elicitor);
    }
    Ok((parts, gateway))
}

/// `toolgate mcp list`: starts every configured server and shows what came of it.
pub(crate) fn list(project: &Project, json: bool) -> Result<(), Failure> {
    let setup = Setup::new(project, AskMode::Headless)?;
    let app = App::new(&setup, QuestionService::new(false))?;
    let runtime = server_runtime()?;
    let reports = runtime.block_on(async {
        let Some(gateway) = &app.gateway else {
            return Vec::new();
        };
        gateway.start_all().await;
        let reports = gateway.report();
        app.shutdown().await;
        reports
    });
    if json {
        outln!("{}", serde_json::to_string_pretty(&reports).map_err(Failure::runtime)?);
        return Ok(());
    }
    if reports.is_empty() {
        outln!("no MCP servers configured (add them under `mcp` in toolgate.json or opencode.json)");
    }
    for server in &reports {
        let state = serde_json::to_value(server.state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let mut about = server.server.as_deref().map(|s| format!(" — {s}")).unwrap_or_default();
        if let Some(protocol) = &server.protocol {
            about.push_str(&format!(" (MCP {protocol})"));
        }
        outln!("{} ({}, {state}){about}", server.name, server.transport);
        for tool in &server.tools {
            let hints = if tool.hints.is_empty() {
                String::new()
            } else {
                format!(" [{}]", tool.hints.join(", "))
            };
            outln!("  {:<32} {}{hints}", tool.name, tool.tool);
        }
        for error in &server.errors {
            outln!("  error: {error}");
        }
        if let (Some(log), false) = (&server.log, server.errors.is_empty()) {
            outln!("  log: {}", log.display());
        }
    }
    Ok(())
}

/// Where the MCP servers' definitions are pinned (README "Pinned tool definitions").
pub(crate) fn pin_store(dirs: &crate::config::Dirs) -> toolgate_mcp_client::PinStore {
    toolgate_mcp_client::PinStore::at(dirs.data.join("mcp").join("pins.json"))
}

/// `toolgate mcp pins [--reset NAME]`.
pub(crate) fn pins(_project: &Project, reset: Option<&str>, json: bool) -> Result<(), Failure> {
    let dirs = crate::config::Dirs::discover();
    let store = pin_store(&dirs);
    if let Some(name) = reset {
        let forgotten = store.reset(name).map_err(Failure::runtime)?;
        if forgotten == 0 {
            return Err(Failure::usage(format!(
                "no MCP server named `{name}` is pinned (see `toolgate mcp pins`)"
            )));
        }
        outln!(
            "forgot the pins of `{name}` ({forgotten} identit{}); its next start pins it again",
            if forgotten == 1 { "y" } else { "ies" }
        );
        return Ok(());
    }
    let servers = store.list().map_err(Failure::runtime)?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&servers).map_err(Failure::runtime)?);
        return Ok(());
    }
    if servers.is_empty() {
        outln!("no MCP server is pinned yet (a server is pinned the first time it starts)");
    }
    for server in &servers {
        outln!(
            "{} — {} (first used {}, changed {})",
            server.name,
            server.identity,
            toolgate_permission::rfc3339(server.first_seen),
            toolgate_permission::rfc3339(server.updated)
        );
        if let Some(instructions) = &server.instructions {
            outln!("  {:<32} {}", "(instructions)", instructions.hash);
        }
        for (tool, pin) in &server.tools {
            outln!("  {tool:<32} {}", pin.hash);
        }
    }
    Ok(())
}

/// Where the remote MCP servers' OAuth tokens are kept (README "OAuth").
pub(crate) fn token_store(dirs: &crate::config::Dirs) -> toolgate_mcp_client::TokenStore {
    toolgate_mcp_client::TokenStore::at(dirs.data.join("mcp").join("oauth.json"))
}

/// Shows the authorization URL, and opens it in `$BROWSER` when one is set.
struct TerminalPrompt {
    server: String,
}

impl toolgate_mcp_client::LoginPrompt for TerminalPrompt {
    fn open(&self, url: &str) {
        // The URL is the person's to open: printed whole, on its own line.
        let _ = crate::write_stdout_line(format_args!(
            "To log in to MCP server `{}`, open this URL in a browser:\n\n  {url}\n\nWaiting for the browser to come back…",
            self.server
        ));
        if let Some(browser) = std::env::var_os("BROWSER").filter(|b| !b.is_empty()) {
            let started = std::process::Command::new(&browser)
                .arg(url)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn();
            if let Err(error) = started {
                tracing::warn!(browser = %browser.to_string_lossy(), %error, "could not start $BROWSER");
            }
        }
    }
}

/// `toolgate mcp auth NAME [--logout]`: logs in to a remote server (OAuth), or forgets
/// its tokens.
pub(crate) fn auth(project: &Project, name: &str, logout: bool) -> Result<(), Failure> {
    let setup = Setup::new(project, AskMode::Headless)?;
    let store = token_store(&setup.dirs);
    if logout {
        let forgotten = store.forget(name).map_err(Failure::runtime)?;
        if forgotten == 0 {
            outln!("`{name}` was not logged in");
        } else {
            outln!("logged out of `{name}`: its OAuth tokens are forgotten");
        }
        return Ok(());
    }
    let servers = setup.config.mcp_servers(&setup.dir, |_, _| Ok(Vec::new()));
    let Some(server) = servers.into_iter().find(|server| server.name == name) else {
        return Err(Failure::usage(format!(
            "no MCP server named `{name}` is configured (see `toolgate mcp list`)"
        )));
    };
    let prompt = TerminalPrompt {
        server: name.to_string(),
    };
    let runtime = server_runtime()?;
    let login = runtime
        .block_on(toolgate_mcp_client::login(
            &server,
            &store,
            &prompt,
            toolgate_mcp_client::DEFAULT_LOGIN_TIMEOUT,
        ))
        .map_err(Failure::runtime)?;
    let scopes = if login.scopes.is_empty() {
        String::new()
    } else {
        format!(", scopes: {}", login.scopes.join(" "))
    };
    let registered = if login.registered {
        " (registered as a client)"
    } else {
        ""
    };
    outln!(
        "logged in to `{name}` through {}{registered}{scopes}; the tokens are in {}",
        login.authorization_server,
        store.path().map(|p| p.display().to_string()).unwrap_or_default()
    );
    Ok(())
}
