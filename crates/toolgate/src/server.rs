//! `toolgate serve`: builds the parts and hands them to `toolgate_server::http`.

use std::net::SocketAddr;

use toolgate_permission::AskMode;

use crate::app::{server_parts, server_runtime};
use crate::{Failure, Project};

/// `toolgate serve`.
pub(crate) fn serve(
    project: &Project,
    listen: Option<&str>,
    sandbox: Option<toolgate_sandbox::Mode>,
) -> Result<(), Failure> {
    let address: SocketAddr = listen
        .unwrap_or("127.0.0.1:7777")
        .parse()
        .map_err(|e| Failure::usage(format!("--listen: not an address:port ({e})")))?;
    crate::app::hide_environment();
    let (parts, gateway) = server_parts(project, AskMode::Interactive, true, sandbox)?;
    let runtime = server_runtime()?;
    runtime.block_on(async {
        let token = std::env::var("TOOLGATE_SERVER_TOKEN")
            .ok()
            .filter(|t| !t.is_empty())
            .unwrap_or_else(toolgate_server::http::random_token);
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|e| Failure::runtime(format!("cannot listen on {address}: {e}")))?;
        let bound = listener.local_addr().map_err(Failure::runtime)?;
        if !bound.ip().is_loopback() {
            eprintln!("toolgate: warning: listening on {bound}, reachable from other machines; keep the token secret");
        }
        // Written, not println!'d: a server must not die because whoever started it
        // closed its stdout after reading the address.
        {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "toolgate: listening on http://{bound}");
            let _ = writeln!(out, "toolgate: token {token}");
            let _ = out.flush();
        }
        let served = toolgate_server::http::serve(parts, listener, token)
            .await
            .map_err(|e| Failure::runtime(e.to_string()));
        if let Some(gateway) = &gateway {
            gateway.shutdown().await;
        }
        served
    })
}
