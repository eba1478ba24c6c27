//! todowrite (spec §8.2) and question (§8.3) through their tools.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use toolgate_builtins_session::*;
use toolgate_core::{BoxFuture, Context, ModelResult, PermissionRequest, Permissions, Refusal};

type Answer = Box<dyn Fn(&PermissionRequest) -> Result<(), Refusal> + Send + Sync>;

struct Fake {
    asked: Mutex<Vec<PermissionRequest>>,
    answer: Answer,
}

impl Fake {
    fn new(answer: impl Fn(&PermissionRequest) -> Result<(), Refusal> + Send + Sync + 'static) -> Arc<Fake> {
        Arc::new(Fake {
            asked: Mutex::new(Vec::new()),
            answer: Box::new(answer),
        })
    }
}

impl Permissions for Fake {
    fn assert<'a>(&'a self, _: &'a Context, request: PermissionRequest) -> BoxFuture<'a, Result<(), Refusal>> {
        let answer = (self.answer)(&request);
        self.asked.lock().unwrap().push(request);
        Box::pin(async move { answer })
    }
}

fn ctx() -> Context {
    Context::new("ses_1", "build")
}

#[tokio::test]
async fn todowrite_replaces_the_list_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = TodoStore::open(dir.path().join("toolgate.db")).unwrap();
    let permissions = Fake::new(|_| Ok(()));
    let tool = todowrite_tool(store.clone(), permissions.clone());
    let todos = json!({"todos": [
        {"content": "write tests", "status": "in_progress", "priority": "high"},
        {"content": "ship", "status": "pending", "priority": "low"}
    ]});
    let output = tool.settle(todos.clone(), ctx()).await.unwrap().unwrap();
    assert_eq!(
        ModelResult::from_output(&output),
        ModelResult::Text(serde_json::to_string_pretty(&todos["todos"]).unwrap())
    );
    assert_eq!(store.list("ses_1").unwrap().len(), 2);
    let one = json!({"todos": [{"content": "ship", "status": "completed", "priority": "low"}]});
    tool.settle(one, ctx()).await.unwrap().unwrap();
    let list = store.list("ses_1").unwrap();
    assert_eq!(
        list,
        [Todo {
            content: "ship".into(),
            status: Status::Completed,
            priority: Priority::Low
        }]
    );
    assert!(store.list("other").unwrap().is_empty(), "lists are per session");
    let asked = permissions.asked.lock().unwrap();
    assert_eq!(
        (
            asked[0].action.as_str(),
            asked[0].resources.clone(),
            asked[0].save.clone()
        ),
        ("todowrite", vec!["*".to_string()], vec!["*".to_string()])
    );
}

#[tokio::test]
async fn todowrite_refused_or_failing() {
    let dir = tempfile::tempdir().unwrap();
    let store = TodoStore::open(dir.path().join("toolgate.db")).unwrap();
    let denied = todowrite_tool(store.clone(), Fake::new(|_| Err(Refusal::declined())));
    let failure = denied.settle(json!({"todos": []}), ctx()).await.unwrap().unwrap_err();
    assert!(failure.is_declined());
    let bad = todowrite_tool(store, Fake::new(|_| Ok(())))
        .settle(
            json!({"todos": [{"content": "x", "status": "someday", "priority": "low"}]}),
            ctx(),
        )
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        bad.message()
            .starts_with("Invalid tool input: unknown variant `someday`"),
        "{}",
        bad.message()
    );
}

fn two_questions() -> serde_json::Value {
    json!({"questions": [
        {"question": "Which database?", "header": "DB", "options": [{"label": "SQLite", "description": "embedded"}, {"label": "Postgres", "description": "server"}]},
        {"question": "Extras?", "header": "Extras", "options": [{"label": "cache", "description": ""}], "multiple": true}
    ]})
}

#[tokio::test]
async fn question_answered_through_the_service() {
    let service = QuestionService::new(true);
    let tool = question_tool(service.clone(), Fake::new(|_| Ok(())));
    let mut events = service.subscribe();
    let call = tokio::spawn(async move { tool.settle(two_questions(), ctx()).await });
    let QuestionEvent::Asked(request) = events.recv().await.unwrap() else {
        panic!()
    };
    assert_eq!(request.questions.len(), 2);
    assert_eq!(
        service.reply(&request.id, vec![vec!["SQLite".into()]]).unwrap_err(),
        QuestionError::WrongCount { expected: 2, got: 1 }
    );
    service.reply(&request.id, vec![vec!["SQLite".into()], vec![]]).unwrap();
    let output = call.await.unwrap().unwrap().unwrap();
    assert_eq!(
        ModelResult::from_output(&output),
        ModelResult::Text("User has answered your questions: \"Which database?\"=\"SQLite\", \"Extras?\"=\"Unanswered\". You can now continue with the user's answers in mind.".into())
    );
    assert_eq!(
        events.recv().await.unwrap(),
        QuestionEvent::Replied {
            session_id: request.session_id.clone(),
            request_id: request.id.clone(),
            answers: vec![vec!["SQLite".into()], vec![]],
        }
    );
    assert_eq!(
        service.reply(&request.id, vec![]).unwrap_err(),
        QuestionError::NotFound(request.id.clone())
    );
}

#[tokio::test]
async fn a_dismissal_is_a_declined_permission() {
    let service = QuestionService::new(true);
    let tool = question_tool(service.clone(), Fake::new(|_| Ok(())));
    let call = tokio::spawn(async move { tool.settle(two_questions(), ctx()).await });
    let mut pending = Vec::new();
    for _ in 0..100 {
        pending = service.pending();
        if !pending.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    service.reject(&pending[0].id).unwrap();
    let failure = call.await.unwrap().unwrap().unwrap_err();
    assert!(failure.is_declined());
    assert_eq!(failure.message(), "The user dismissed the questions.");
}

#[tokio::test]
async fn denied_by_rule_and_unanswerable() {
    let blocked = Refusal::Blocked {
        action: "question".into(),
        reason: None,
        rules: vec![],
        denied: None,
    };
    let tool = question_tool(QuestionService::new(true), Fake::new(move |_| Err(blocked.clone())));
    let failure = tool.settle(two_questions(), ctx()).await.unwrap().unwrap_err();
    assert_eq!(failure.message(), "Permission denied: question");
    assert!(!failure.is_declined());
    let headless = question_tool(QuestionService::new(false), Fake::new(|_| Ok(())));
    let failure = headless.settle(two_questions(), ctx()).await.unwrap().unwrap_err();
    assert!(failure.is_declined(), "no one can answer: dismissed");
}
