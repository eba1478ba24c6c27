//! What a prompt shows for `edit` and `write` (spec §4.4, §5.3, §5.4): the whole file's
//! diff, prepared only when a person will be asked, never by reading a special file.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use support::{Project, call};
use toolgate_core::{BoxFuture, Context, Location, PermissionRequest, Permissions, Refusal};

/// A permission service that says a person will be asked (or not), records what it is
/// asked, and answers with `allow`.
struct Prompting {
    asks: bool,
    allow: bool,
    asked: Mutex<Vec<PermissionRequest>>,
}

impl Prompting {
    fn new(asks: bool, allow: bool) -> Arc<Prompting> {
        Arc::new(Prompting {
            asks,
            allow,
            asked: Mutex::new(Vec::new()),
        })
    }

    fn diff(&self) -> String {
        let asked = self.asked.lock().unwrap();
        let edit = asked.iter().find(|r| r.action == "edit").expect("an edit ask");
        edit.metadata["diff"].as_str().unwrap().to_string()
    }
}

impl Permissions for Prompting {
    fn assert<'a>(&'a self, _: &'a Context, request: PermissionRequest) -> BoxFuture<'a, Result<(), Refusal>> {
        self.asked.lock().unwrap().push(request);
        let allow = self.allow;
        Box::pin(async move { if allow { Ok(()) } else { Err(Refusal::declined()) } })
    }

    fn would_ask(&self, _: &Context, _: &PermissionRequest) -> bool {
        self.asks
    }
}

fn services(project: &Project, permissions: Arc<Prompting>) -> toolgate_builtins_fs::Services {
    toolgate_builtins_fs::Services::new(Location::new(project.dir.path()).unwrap(), permissions)
}

fn numbered(count: usize) -> String {
    (1..=count).map(|n| format!("line {n}\n")).collect()
}

#[tokio::test]
async fn edit_shows_the_whole_file_diff_with_its_line_numbers() {
    let project = Project::new();
    project.write("src/a.txt", &numbered(30));
    let permissions = Prompting::new(true, true);
    let tool = toolgate_builtins_fs::edit_tool(services(&project, permissions.clone()));
    let result = call(
        &tool,
        json!({"path": "src/a.txt", "oldString": "line 15", "newString": "line fifteen"}),
    )
    .await;
    assert!(result.is_ok(), "{result:?}");
    let diff = permissions.diff();
    assert_eq!(
        diff,
        "--- src/a.txt\n+++ src/a.txt\n@@ -12,7 +12,7 @@\n line 12\n line 13\n line 14\n-line 15\n+line fifteen\n line 16\n line 17\n line 18\n"
    );
}

#[tokio::test]
async fn write_over_a_file_shows_what_is_overwritten() {
    let project = Project::new();
    project.write("notes.md", "keep\nold words\n");
    let permissions = Prompting::new(true, false);
    let tool = toolgate_builtins_fs::write_tool(services(&project, permissions.clone()));
    let result = call(&tool, json!({"path": "notes.md", "content": "keep\nnew words\n"})).await;
    assert_eq!(result.unwrap_err(), "Unable to write notes.md");
    assert_eq!(
        permissions.diff(),
        "--- notes.md\n+++ notes.md\n@@ -1,2 +1,2 @@\n keep\n-old words\n+new words\n"
    );
    assert_eq!(project.read("notes.md"), "keep\nold words\n", "refused: unchanged");
}

#[tokio::test]
async fn without_a_person_to_ask_the_file_is_not_read_for_a_diff() {
    let project = Project::new();
    project.write("a.txt", &numbered(30));
    let permissions = Prompting::new(false, true);
    let tool = toolgate_builtins_fs::edit_tool(services(&project, permissions.clone()));
    call(
        &tool,
        json!({"path": "a.txt", "oldString": "line 15", "newString": "line fifteen"}),
    )
    .await
    .unwrap();
    // The change as requested, not the file's lines.
    assert_eq!(
        permissions.diff(),
        "--- a.txt\n+++ a.txt\n@@ -1 +1 @@\n-line 15\n\\ No newline at end of file\n+line fifteen\n\\ No newline at end of file\n"
    );
}

#[tokio::test]
async fn a_change_that_cannot_be_worked_out_shows_as_requested_and_reveals_nothing() {
    let project = Project::new();
    project.write("a.txt", "alpha\n");
    let permissions = Prompting::new(true, false);
    let tool = toolgate_builtins_fs::edit_tool(services(&project, permissions.clone()));
    let missing = call(
        &tool,
        json!({"path": "a.txt", "oldString": "nowhere", "newString": "x"}),
    )
    .await;
    let found = call(&tool, json!({"path": "a.txt", "oldString": "alpha", "newString": "x"})).await;
    assert_eq!(missing.unwrap_err(), "Unable to edit a.txt");
    assert_eq!(found.unwrap_err(), "Unable to edit a.txt", "the same answer either way");
    let asked = permissions.asked.lock().unwrap();
    assert_eq!(
        asked[0].metadata["diff"],
        "--- a.txt\n+++ a.txt\n@@ -1 +1 @@\n-nowhere\n\\ No newline at end of file\n+x\n\\ No newline at end of file\n",
        "no match: the request's own change"
    );
}

#[tokio::test]
async fn a_fifo_is_never_opened_in_a_way_that_blocks() {
    let project = Project::new();
    let fifo = project.dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success() && fifo.exists(), "precondition: the FIFO exists");
    let permissions = Prompting::new(true, false);
    let tool = toolgate_builtins_fs::write_tool(services(&project, permissions.clone()));
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        call(&tool, json!({"path": "pipe", "content": "x"})),
    )
    .await
    .expect("the prompt's preview must not wait for a writer");
    assert_eq!(result.unwrap_err(), "Unable to write pipe");
    assert_eq!(
        permissions.diff(),
        "--- pipe\n+++ pipe\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n"
    );
}

#[tokio::test]
async fn a_large_file_shows_the_change_as_requested() {
    let project = Project::new();
    let mut big = "x".repeat(9 << 20);
    big.push_str("\nneedle\n");
    project.write("big.txt", &big);
    let permissions = Prompting::new(true, false);
    let tool = toolgate_builtins_fs::edit_tool(services(&project, permissions.clone()));
    let _ = call(
        &tool,
        json!({"path": "big.txt", "oldString": "needle", "newString": "pin"}),
    )
    .await;
    assert_eq!(
        permissions.diff(),
        "--- big.txt\n+++ big.txt\n@@ -1 +1 @@\n-needle\n\\ No newline at end of file\n+pin\n\\ No newline at end of file\n"
    );
}
