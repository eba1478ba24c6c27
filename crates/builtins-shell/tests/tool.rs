//! The bash tool through the registry, with a recording permission fake: what is asked,
//! in which order, and that nothing runs when a permission is refused.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolgate_builtins_shell::bash_tool_with_shell;
use toolgate_core::{
    BoundError, Bounded, BoxFuture, Context, Location, ModelResult, OutputBound, PermissionRequest, Permissions,
    Refusal, ToolOutput,
};
use toolgate_registry::{ApplicationTools, ToolRegistry};
use toolgate_shell_analysis::plan;

#[path = "tool/background.rs"]
mod background;

/// Records every request; refuses the ones `deny` picks.
struct Recording {
    asked: Mutex<Vec<PermissionRequest>>,
    deny: Box<dyn Fn(&PermissionRequest) -> bool + Send + Sync>,
}

impl Recording {
    fn new(deny: impl Fn(&PermissionRequest) -> bool + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(Recording {
            asked: Mutex::new(Vec::new()),
            deny: Box::new(deny),
        })
    }

    fn asked(&self) -> Vec<(String, Vec<String>)> {
        self.asked
            .lock()
            .unwrap()
            .iter()
            .map(|r| (r.action.clone(), r.resources.clone()))
            .collect()
    }
}

impl Permissions for Recording {
    fn assert<'a>(&'a self, _: &'a Context, request: PermissionRequest) -> BoxFuture<'a, Result<(), Refusal>> {
        let denied = (self.deny)(&request);
        self.asked.lock().unwrap().push(request);
        Box::pin(async move { if denied { Err(Refusal::declined()) } else { Ok(()) } })
    }
}

struct PassThrough;

impl OutputBound for PassThrough {
    fn bound<'a>(&'a self, _: &'a Context, output: ToolOutput) -> BoxFuture<'a, Result<Bounded, BoundError>> {
        Box::pin(async move { Ok(Bounded::new(output, Vec::new())) })
    }
}

struct Fixture {
    dir: tempfile::TempDir,
    registry: ToolRegistry,
    _guard: toolgate_registry::Registration,
}

fn fixture(permissions: Arc<Recording>) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let location = Location::new(dir.path()).unwrap();
    let app = ApplicationTools::new();
    let registry = ToolRegistry::new(&app, Arc::new(PassThrough));
    let tool = bash_tool_with_shell(location, permissions, "/bin/sh".into());
    let guard = registry.register([("bash", tool)]).unwrap();
    Fixture {
        dir,
        registry,
        _guard: guard,
    }
}

async fn call(fixture: &Fixture, input: Value) -> toolgate_registry::Settlement {
    fixture
        .registry
        .materialize(|_| false)
        .settle("bash", input, Context::new("ses_1", "build"))
        .await
        .unwrap()
}

fn text(settled: &toolgate_registry::Settlement) -> String {
    match &settled.result {
        ModelResult::Text(text) | ModelResult::Error(text) => text.clone(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn runs_and_reports_the_exit_code() {
    let permissions = Recording::new(|_| false);
    let fixture = fixture(Arc::clone(&permissions));
    let settled = call(&fixture, json!({"command": "echo hello; exit 2"})).await;
    assert_eq!(text(&settled), "hello\n\n\nCommand exited with code 2.");
    assert_eq!(
        settled.output.unwrap().structured,
        json!({"exit": 2, "truncated": false, "timeout": false, "droppedBytes": 0})
    );
    assert_eq!(
        permissions.asked(),
        [("bash".to_string(), vec!["echo hello".to_string()])]
    );
}

#[tokio::test]
async fn asks_bash_then_read_then_edit_for_what_it_touches() {
    let permissions = Recording::new(|_| false);
    let fixture = fixture(Arc::clone(&permissions));
    std::fs::write(fixture.dir.path().join(".env"), "KEY=1").unwrap();
    let settled = call(&fixture, json!({"command": "cat .env > copy.txt"})).await;
    assert!(text(&settled).ends_with("Command exited with code 0."));
    assert_eq!(
        permissions.asked(),
        [
            (
                "bash".to_string(),
                vec!["cat .env".to_string(), "cat .env > copy.txt".to_string()]
            ),
            ("read".to_string(), vec![".env".to_string()]),
            ("edit".to_string(), vec!["copy.txt".to_string()]),
        ]
    );
    assert_eq!(
        std::fs::read_to_string(fixture.dir.path().join("copy.txt")).unwrap(),
        "KEY=1"
    );
}

#[tokio::test]
async fn a_refused_permission_runs_nothing() {
    let permissions = Recording::new(|request| request.resources.iter().any(|r| r.starts_with("rm ")));
    let fixture = fixture(Arc::clone(&permissions));
    let settled = call(&fixture, json!({"command": "touch made && rm -rf sub"})).await;
    assert!(settled.is_declined());
    assert!(
        !fixture.dir.path().join("made").exists(),
        "the allowed part must not run either"
    );
    assert!(fixture.dir.path().join("sub").exists());
}

#[tokio::test]
async fn a_refused_read_runs_nothing() {
    let permissions = Recording::new(|request| request.action == "read");
    let fixture = fixture(Arc::clone(&permissions));
    std::fs::write(fixture.dir.path().join(".env"), "KEY=1").unwrap();
    let settled = call(&fixture, json!({"command": "cat .env > leaked.txt"})).await;
    assert!(settled.result.is_error());
    assert!(!fixture.dir.path().join("leaked.txt").exists());
}

#[tokio::test]
async fn outside_paths_ask_external_directory_first() {
    let permissions = Recording::new(|_| false);
    let fixture = fixture(Arc::clone(&permissions));
    let outside = tempfile::tempdir().unwrap();
    let outside_path = std::fs::canonicalize(outside.path()).unwrap();
    let command = format!("ls {0} && cat {0}/notes.txt", outside_path.display());
    let _ = call(&fixture, json!({"command": command})).await;
    let asked = permissions.asked();
    assert_eq!(asked[0].0, "external_directory");
    assert_eq!(asked[0].1, [format!("{}/*", outside_path.display())]);
    assert_eq!(asked[1].0, "bash");
    assert_eq!(
        asked[2],
        (
            "read".to_string(),
            vec![format!("{}/notes.txt", outside_path.display())]
        )
    );
}

#[tokio::test]
async fn workdir_is_resolved_and_checked() {
    let permissions = Recording::new(|_| false);
    let fixture = fixture(Arc::clone(&permissions));
    let settled = call(&fixture, json!({"command": "pwd", "workdir": "sub"})).await;
    let real = std::fs::canonicalize(fixture.dir.path().join("sub")).unwrap();
    assert!(text(&settled).starts_with(&real.display().to_string()));
    let escape = call(&fixture, json!({"command": "pwd", "workdir": "../.."})).await;
    assert!(text(&escape).starts_with("Working directory is not usable: Path escapes the working directory"));
    let missing = call(&fixture, json!({"command": "pwd", "workdir": "nope"})).await;
    assert!(
        text(&missing).starts_with("Working directory is not a directory:"),
        "{}",
        text(&missing)
    );
}

#[tokio::test]
async fn timeout_is_validated_and_enforced() {
    let permissions = Recording::new(|_| false);
    let fixture = fixture(Arc::clone(&permissions));
    let invalid = call(&fixture, json!({"command": "ls", "timeout": 600_001})).await;
    assert_eq!(
        text(&invalid),
        "Invalid timeout value: 600001. Timeout must be between 1 and 600000 milliseconds."
    );
    let slow = call(&fixture, json!({"command": "echo started; sleep 30", "timeout": 300})).await;
    let slow_text = text(&slow);
    assert!(slow_text.starts_with("started"));
    assert!(slow_text.ends_with(
        "Command exceeded timeout of 300 ms. Retry with a larger timeout if the command is expected to take longer."
    ));
    assert_eq!(slow.output.unwrap().structured["timeout"], json!(true));
}

#[tokio::test]
async fn unsaveable_parts_are_marked_for_the_permission_service() {
    let permissions = Recording::new(|_| true);
    let fixture = fixture(Arc::clone(&permissions));
    let _ = call(&fixture, json!({"command": "ls | sh"})).await;
    let asked = permissions.asked.lock().unwrap();
    // A shell reading its input runs code no one can see: it stands for any command.
    assert_eq!(asked[0].opaque, ["sh"]);
    assert_eq!(asked[0].save, ["ls *"]);
}

#[test]
fn plan_lists_every_assertion_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let location = Location::new(dir.path()).unwrap();
    let plan = plan(
        &location,
        "cd /etc && cat passwd | tee out.txt",
        None,
        Some("read passwd"),
    )
    .unwrap();
    let actions: Vec<&str> = plan.requests.iter().map(|r| r.action.as_str()).collect();
    assert_eq!(actions, ["external_directory", "bash", "read", "edit"]);
    assert_eq!(plan.requests[0].resources, ["/etc/*"]);
    assert_eq!(plan.requests[2].resources, ["/etc/passwd"]);
    assert_eq!(plan.requests[3].resources, ["/etc/out.txt"], "tee writes where cd went");
    assert_eq!(plan.bash_request().unwrap().metadata["description"], "read passwd");
}
