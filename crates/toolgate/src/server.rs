//! `toolgate serve`: builds the parts and hands them to `toolgate_server::http`.

use std::net::SocketAddr;

use builtins_session::QuestionService;
use permission::AskMode;

use crate::app::App;
use crate::check::Setup;
use crate::{Failure, Project};

/// `toolgate serve`.
pub(crate) fn serve(project: &Project, listen: Option<&str>) -> Result<(), Failure> {
    let address: SocketAddr = listen
        .unwrap_or("127.0.0.1:7777")
        .parse()
        .map_err(|e| Failure::usage(format!("--listen: not an address:port ({e})")))?;
    let setup = Setup::new(project, AskMode::Interactive)?;
    let questions = QuestionService::new(true);
    let app = App::new(&setup, questions.clone())?;
    let parts = toolgate_server::Parts {
        registry: app.registry.clone(),
        service: setup.service.clone(),
        questions,
        agent: setup.agent.clone(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::runtime(format!("could not start the runtime: {e}")))?;
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
        println!("toolgate: listening on http://{bound}");
        println!("toolgate: token {token}");
        use std::io::Write;
        let _ = std::io::stdout().flush();
        // The registrations live in `app` for as long as the server runs.
        let served = toolgate_server::http::serve(parts, listener, token).await;
        drop(app);
        served.map_err(|e| Failure::runtime(e.to_string()))
    })
}
