//! The runtime every tool-running command shares: the gate over a registry with every
//! builtin, the output store and the permission service.

use std::sync::Arc;

use toolgate_builtins_session::{QuestionService, TodoStore};
use toolgate_core::{Location, Permissions};
use toolgate_gate::Gate;
use toolgate_output_store::{Limits, OutputStore};
use toolgate_registry::{ApplicationTools, ToolRegistry};

use crate::Failure;
use crate::check::Setup;

/// The gate over every builtin, registered for the project.
pub(crate) struct App {
    pub(crate) gate: Gate,
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
        let registry = ToolRegistry::new(&application, Arc::new(store.clone()));
        let location =
            Location::new(&setup.dir).map_err(|error| Failure::usage(format!("{}: {error}", setup.dir.display())))?;
        let permissions: Arc<dyn Permissions> = Arc::new(setup.service.clone());
        let todos = TodoStore::deferred(setup.dirs.data.join("toolgate.db"));
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
        let mut gate = Gate::builder(registry, setup.service.clone());
        if let Some(threshold) = setup
            .config
            .merged
            .get("doom_loop_threshold")
            .and_then(serde_json::Value::as_u64)
        {
            gate = gate.doom_loop_threshold(usize::try_from(threshold).unwrap_or(usize::MAX));
        }
        let gate = gate.hold(registration).spills(store).build();
        Ok(App { gate })
    }
}

/// Everything the servers run, built for `project`.
pub(crate) fn server_parts(
    project: &crate::Project,
    mode: toolgate_permission::AskMode,
    questions_answerable: bool,
) -> Result<toolgate_server::Parts, Failure> {
    let setup = Setup::new(project, mode)?;
    let questions = QuestionService::new(questions_answerable);
    let app = App::new(&setup, questions.clone())?;
    Ok(toolgate_server::Parts {
        gate: app.gate,
        questions,
        agent: setup.agent.clone(),
    })
}

/// A multi-threaded runtime for the servers.
pub(crate) fn server_runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::runtime(format!("could not start the runtime: {e}")))
}
