//! `toolgate serve`: builds the parts and hands them to `toolgate_server::http`.

use std::net::SocketAddr;

use toolgate_permission::AskMode;

use crate::app::{server_parts_notified, server_runtime};
use crate::{Failure, Project};

/// Where the server's token came from.
enum Token {
    /// Made at start: printed once, since nobody else knows it.
    Random(String),
    /// `$TOOLGATE_SERVER_TOKEN`: whoever set it knows it; printing it again would only put
    /// it in logs and terminal scrollback.
    FromEnvironment(String),
}

/// The token of `$TOOLGATE_SERVER_TOKEN`, checked, or a fresh random one. A set but
/// unusable token (blank, short, with spaces) is a usage error: a server must not run
/// with a guessable token because of a typo.
fn token() -> Result<Token, Failure> {
    match std::env::var_os("TOOLGATE_SERVER_TOKEN") {
        None => toolgate_server::random_token()
            .map(Token::Random)
            .map_err(Failure::runtime),
        Some(value) => {
            let token = value
                .into_string()
                .map_err(|_| Failure::usage("TOOLGATE_SERVER_TOKEN is not valid UTF-8"))?;
            toolgate_server::check_token(&token).map_err(Failure::usage)?;
            Ok(Token::FromEnvironment(token))
        }
    }
}

/// `toolgate serve`.
pub(crate) fn serve(
    project: &Project,
    listen: Option<&str>,
    allow_hosts: &[String],
    sandbox: Option<toolgate_sandbox::Mode>,
) -> Result<(), Failure> {
    let address: SocketAddr = listen
        .unwrap_or("127.0.0.1:7777")
        .parse()
        .map_err(|e| Failure::usage(format!("--listen: not an address:port ({e})")))?;
    let token = token()?;
    let (Token::Random(value) | Token::FromEnvironment(value)) = &token;
    crate::app::hold_secret("server-token", value);
    // Each connection is a file: take all the room the system allows, before anything
    // is opened, and size the connection cap to it.
    let files = toolgate_server::raise_file_limit();
    let limits = toolgate_server::Limits::default().max_connections(Some(toolgate_server::connection_cap(files)));
    crate::app::hide_environment();
    // Root reads /proc/<pid>/environ of a non-dumpable process too: blank the token there.
    if let Err(error) = crate::app::blank_in_environment_block("TOOLGATE_SERVER_TOKEN") {
        eprintln!("toolgate: warning: could not hide $TOOLGATE_SERVER_TOKEN from /proc ({error})");
    }
    let (parts, gateway, notify) = server_parts_notified(project, AskMode::Interactive, true, sandbox, false)?;
    // The page's one-time login link, and what signs the webhooks' links to one ask.
    let login_code = toolgate_server::random_token().map_err(Failure::runtime)?;
    let links = toolgate_server::AskLinks::new().map_err(Failure::runtime)?;
    let data = crate::config::Dirs::discover().data;
    let (_, dir) = crate::setup::project_dir(project)?;
    let runtime = server_runtime()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|e| Failure::runtime(format!("cannot listen on {address}: {e}")))?;
        let bound = listener.local_addr().map_err(Failure::runtime)?;
        let hosts = toolgate_server::HostRule::new(bound, allow_hosts).map_err(Failure::usage)?;
        // Links name an address a browser can open: loopback for a wildcard bind.
        let page = if bound.ip().is_unspecified() {
            let loopback = if bound.is_ipv4() {
                "127.0.0.1".to_string()
            } else {
                "[::1]".to_string()
            };
            format!("http://{loopback}:{}", bound.port())
        } else {
            format!("http://{bound}")
        };
        for warning in crate::notify::start(&notify, parts.gate.permissions(), links.clone(), page.clone()) {
            eprintln!("toolgate: warning: {warning}");
        }
        if !bound.ip().is_loopback() {
            eprintln!("toolgate: warning: listening on {bound}, reachable from other machines; keep the token secret");
        }
        // The terminal commands (`pending`, `approve`, `shells`) find this server through
        // the runtime file and its socket, both ready before the address is printed.
        let (runtime_file, local) = local_door(&data, &dir, &format!("http://{bound}"));
        // Written, not println!'d: a server must not die because whoever started it
        // closed its stdout after reading the address.
        {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "toolgate: listening on http://{bound}");
            match &token {
                Token::Random(token) => {
                    let _ = writeln!(out, "toolgate: token {token}");
                }
                // Spaces cannot be in a token: a reader of this line cannot take it for one.
                Token::FromEnvironment(_) => {
                    let _ = writeln!(out, "toolgate: token from $TOOLGATE_SERVER_TOKEN (not shown)");
                }
            }
            let _ = writeln!(out, "toolgate: MCP (streamable HTTP) at http://{bound}/mcp");
            // One use, ten minutes: whoever opens it first gets the page's session.
            let _ = writeln!(out, "toolgate: page {page}/login?code={login_code}");
            let _ = out.flush();
        }
        let token = match token {
            Token::Random(token) | Token::FromEnvironment(token) => token,
        };
        let mut options = toolgate_server::HttpOptions::new(token, hosts)
            .limits(limits)
            .login_code(login_code)
            .ask_links(links);
        if let Some(local) = local {
            options = options.local_socket(local);
        }
        tokio::spawn(announce_asks(parts.gate.permissions().subscribe()));
        let served = toolgate_server::serve_http(parts, listener, options)
            .await
            .map_err(|e| Failure::runtime(e.to_string()));
        if let Some(gateway) = &gateway {
            gateway.shutdown().await;
        }
        // Last: what was adopted and is known no other way (see `end_adopted`).
        let _ = tokio::task::spawn_blocking(toolgate_builtins_shell::end_adopted).await;
        drop(runtime_file);
        served
    })
}

/// One line on stderr per ask that waits for a person, so whoever runs `serve` in a
/// terminal sees it and can answer with `toolgate approve` (or the page, or the API).
async fn announce_asks(mut events: tokio::sync::broadcast::Receiver<toolgate_permission::Event>) {
    use tokio::sync::broadcast::error::RecvError;
    loop {
        match events.recv().await {
            Ok(toolgate_permission::Event::Asked(request)) => {
                let resources: Vec<String> = request
                    .resources
                    .iter()
                    .map(|resource| crate::remote::one_line(resource))
                    .collect();
                eprintln!(
                    "toolgate: ask {} ({} in session {}): {} — `toolgate approve {}` [--always] or `toolgate reject {}`",
                    request.id,
                    request.action,
                    request.session_id,
                    resources.join(", "),
                    request.id,
                    request.id
                );
            }
            Ok(_) | Err(RecvError::Lagged(_)) => {}
            Err(RecvError::Closed) => break,
        }
    }
}

/// The runtime file and the bound local socket, or a warning saying why the terminal
/// commands will not find this server (it serves on regardless).
fn local_door(
    data: &std::path::Path,
    dir: &std::path::Path,
    address: &str,
) -> (
    Option<crate::remote::RuntimeFile>,
    Option<std::os::unix::net::UnixListener>,
) {
    let file = match crate::remote::RuntimeFile::write(data, dir, address) {
        Ok(file) => file,
        Err(error) => {
            eprintln!(
                "toolgate: warning: no runtime file under {} ({error}): `toolgate pending` and `approve` cannot find this server",
                data.display()
            );
            return (None, None);
        }
    };
    match toolgate_server::local::bind(file.socket()) {
        Ok(listener) => (Some(file), Some(listener)),
        Err(error) => {
            eprintln!(
                "toolgate: warning: {error}: `toolgate pending` and `approve` cannot reach this server (a shorter TOOLGATE_DATA_DIR helps when the path is too long)"
            );
            (None, None)
        }
    }
}
