//! The runtime every tool-running command shares: registry, output store, builtins.

use std::sync::Arc;

use toolgate_builtins_session::{QuestionService, TodoStore};
use toolgate_core::{Location, Permissions};
use toolgate_output_store::{Limits, OutputStore};
use toolgate_registry::{ApplicationTools, Materialized, Registration, ToolRegistry};

use crate::Failure;
use crate::check::Setup;

/// A registry with every builtin that exists registered for the project.
pub(crate) struct App {
    pub(crate) registry: ToolRegistry,
    _registrations: Vec<Registration>,
}

impl App {
    pub(crate) fn new(setup: &Setup, questions: QuestionService) -> Result<App, Failure> {
        let mut limits = Limits::default();
        if let Some(lines) = setup.config.positive("tool_output", "max_lines") {
            limits.max_lines = lines as usize;
        }
        if let Some(bytes) = setup.config.positive("tool_output", "max_bytes") {
            limits.max_bytes = bytes as usize;
        }
        let store = OutputStore::new(&setup.dirs.data).with_limits(limits);
        let application = ApplicationTools::new();
        let registry = ToolRegistry::new(&application, Arc::new(store));
        let location =
            Location::new(&setup.dir).map_err(|error| Failure::usage(format!("{}: {error}", setup.dir.display())))?;
        let permissions: Arc<dyn Permissions> = Arc::new(setup.service.clone());
        let todos = TodoStore::open(setup.dirs.data.join("toolgate.db")).map_err(Failure::runtime)?;
        let services = toolgate_builtins_fs::Services::new(location.clone(), Arc::clone(&permissions));
        let skill_dirs = toolgate_builtins_fs::skill::skill_dirs(&setup.dir, Some(&setup.dirs.config));
        let mut builtins = toolgate_builtins_fs::tools(services, skill_dirs);
        builtins.extend([
            (
                "webfetch",
                toolgate_builtins_net::webfetch_tool(setup.config.fetch_config(), Arc::clone(&permissions)),
            ),
            (
                "websearch",
                toolgate_builtins_net::websearch_tool(setup.config.search_config(), Arc::clone(&permissions)),
            ),
            (
                "bash",
                toolgate_builtins_shell::bash_tool(location, Arc::clone(&permissions)),
            ),
            (
                "todowrite",
                toolgate_builtins_session::todowrite_tool(todos, Arc::clone(&permissions)),
            ),
            (
                "question",
                toolgate_builtins_session::question_tool(questions, Arc::clone(&permissions)),
            ),
        ]);
        let registration = registry
            .register(builtins)
            .map_err(|error| Failure::runtime(format!("could not register the builtins: {error}")))?;
        Ok(App {
            registry,
            _registrations: vec![registration],
        })
    }

    /// The catalog the agent of `setup` is offered (wholly denied tools hidden).
    pub(crate) fn catalog(&self, setup: &Setup) -> Materialized {
        let service = setup.service.clone();
        let agent = setup.agent.clone();
        self.registry.materialize(move |action| service.hides(&agent, action))
    }
}

/// Everything the servers run, built for `project`, and the registrations that keep the
/// tools registered (hold it as long as the server runs).
pub(crate) fn server_parts(
    project: &crate::Project,
    mode: toolgate_permission::AskMode,
    questions_answerable: bool,
) -> Result<(toolgate_server::Parts, App), Failure> {
    let setup = Setup::new(project, mode)?;
    let questions = QuestionService::new(questions_answerable);
    let app = App::new(&setup, questions.clone())?;
    let parts = toolgate_server::Parts {
        registry: app.registry.clone(),
        service: setup.service.clone(),
        questions,
        agent: setup.agent.clone(),
    };
    Ok((parts, app))
}

/// A multi-threaded runtime for the servers.
pub(crate) fn server_runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::runtime(format!("could not start the runtime: {e}")))
}
