//! `toolgate mcp`: builds the parts and hands them to `toolgate_server::mcp`.

use builtins_session::QuestionService;
use permission::AskMode;

use crate::app::App;
use crate::check::Setup;
use crate::{Failure, Project};

/// `toolgate mcp`.
pub(crate) fn serve_stdio(project: &Project, auto: bool) -> Result<(), Failure> {
    let mode = if auto { AskMode::Auto } else { AskMode::Interactive };
    let setup = Setup::new(project, mode)?;
    // Questions cannot be put through this channel yet: they are dismissed.
    let questions = QuestionService::new(false);
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
    let served = runtime.block_on(toolgate_server::mcp::serve_stdio(parts));
    drop(app);
    served.map_err(Failure::runtime)
}
