//! The wire form of what the libraries hand over as types: the names of events and the
//! spellings of their fields, as the HTTP API and its event stream show them
//! (OpenCode's shapes: `sessionID`, `permission.asked`).

use serde_json::{Value, json};
use toolgate_builtins_session::{QuestionEvent, QuestionRequest};
use toolgate_permission::{Event, Request};

/// A pending permission request: `{id, sessionID, action, resources, save, metadata,
/// unsaveable?, allowed?, source: {type, messageID, callID}}` (`allowed`: the resources a
/// rule already allows, shown but not asked).
pub(crate) fn request(request: &Request) -> Value {
    let mut value = json!({
        "id": request.id,
        "sessionID": request.session_id,
        "action": request.action,
        "resources": request.resources,
        "save": request.save,
        "metadata": request.metadata,
        "source": {"type": request.source.kind, "messageID": request.source.message_id, "callID": request.source.call_id},
    });
    if !request.unsaveable.is_empty()
        && let Some(map) = value.as_object_mut()
    {
        map.insert("unsaveable".into(), json!(request.unsaveable));
    }
    if !request.allowed.is_empty()
        && let Some(map) = value.as_object_mut()
    {
        map.insert("allowed".into(), json!(request.allowed));
    }
    value
}

/// A permission event: its name and `{type, properties}`.
pub(crate) fn permission_event(event: &Event) -> Option<(&'static str, Value)> {
    let (kind, properties) = match event {
        Event::Asked(asked) => ("permission.asked", request(asked)),
        Event::Replied {
            session_id,
            request_id,
            reply,
        } => (
            "permission.replied",
            json!({"sessionID": session_id, "requestID": request_id, "reply": reply}),
        ),
        #[allow(unreachable_patterns)]
        _ => return None,
    };
    Some((kind, json!({"type": kind, "properties": properties})))
}

/// A pending question request: `{id, sessionID, questions}`.
pub(crate) fn question_request(request: &QuestionRequest) -> Value {
    json!({"id": request.id, "sessionID": request.session_id, "questions": request.questions})
}

/// A question event: its name and `{type, properties}`.
pub(crate) fn question_event(event: &QuestionEvent) -> (&'static str, Value) {
    let (kind, properties) = match event {
        QuestionEvent::Asked(asked) => ("question.asked", question_request(asked)),
        QuestionEvent::Replied {
            session_id,
            request_id,
            answers,
        } => (
            "question.replied",
            json!({"sessionID": session_id, "requestID": request_id, "answers": answers}),
        ),
        QuestionEvent::Rejected { session_id, request_id } => (
            "question.rejected",
            json!({"sessionID": session_id, "requestID": request_id}),
        ),
    };
    (kind, json!({"type": kind, "properties": properties}))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn permission_events_in_opencode_shape() {
        use toolgate_core::{Context, PermissionRequest};
        use toolgate_permission::{AgentSettings, Agents, AskMode, PermissionService, Reply};
        let agents = Agents::build(&AgentSettings::default().with_permission(json!({"bash": "ask"}))).unwrap();
        let service = PermissionService::builder(agents, "/p")
            .mode(AskMode::Interactive)
            .build();
        let mut events = service.subscribe();
        let ctx = Context::new("s1", "build").with_call("msg_1", "call_1");
        let asking = {
            let service = service.clone();
            tokio::spawn(async move {
                let request = PermissionRequest::new("bash")
                    .resources(["ls"])
                    .save(["ls *"])
                    .metadata("command", "ls");
                service.assert(&ctx, request).await
            })
        };
        let asked = events.recv().await.unwrap();
        let Event::Asked(request_of) = &asked else {
            panic!("asked first")
        };
        let id = request_of.id.clone();
        assert_eq!(
            permission_event(&asked).unwrap(),
            (
                "permission.asked",
                json!({"type": "permission.asked", "properties": {
                    "id": id, "sessionID": "s1", "action": "bash", "resources": ["ls"], "save": ["ls *"],
                    "metadata": {"command": "ls"}, "source": {"type": "tool", "messageID": "msg_1", "callID": "call_1"}
                }})
            )
        );
        service.reply(&id, Reply::Once, None).unwrap();
        asking.await.unwrap().unwrap();
        let replied = events.recv().await.unwrap();
        assert_eq!(
            permission_event(&replied).unwrap().1,
            json!({"type": "permission.replied", "properties": {"sessionID": "s1", "requestID": id, "reply": "once"}})
        );
    }

    #[tokio::test]
    async fn question_events_in_opencode_shape() {
        use toolgate_builtins_session::{Prompt, QuestionOption, QuestionService};
        let service = QuestionService::new(true);
        let mut events = service.subscribe();
        let prompt = Prompt {
            question: "Which database?".into(),
            header: "DB".into(),
            options: vec![QuestionOption {
                label: "SQLite".into(),
                description: "embedded".into(),
            }],
            multiple: false,
        };
        let asking = {
            let service = service.clone();
            tokio::spawn(async move { service.ask("s1", vec![prompt]).await })
        };
        let asked = events.recv().await.unwrap();
        let QuestionEvent::Asked(request_of) = &asked else {
            panic!("asked first")
        };
        let id = request_of.id.clone();
        let questions = json!([{"question": "Which database?", "header": "DB", "options": [{"label": "SQLite", "description": "embedded"}]}]);
        assert_eq!(
            question_event(&asked),
            (
                "question.asked",
                json!({"type": "question.asked", "properties": {"id": id, "sessionID": "s1", "questions": questions}})
            )
        );
        assert_eq!(
            question_request(request_of),
            json!({"id": id, "sessionID": "s1", "questions": questions})
        );
        service.reply(&id, vec![vec!["SQLite".into()]]).unwrap();
        assert_eq!(asking.await.unwrap(), Some(vec![vec!["SQLite".to_string()]]));
        assert_eq!(
            question_event(&events.recv().await.unwrap()),
            (
                "question.replied",
                json!({"type": "question.replied", "properties": {"sessionID": "s1", "requestID": id, "answers": [["SQLite"]]}})
            )
        );
        let dismissed = {
            let service = service.clone();
            tokio::spawn(async move { service.ask("s1", Vec::new()).await })
        };
        let QuestionEvent::Asked(second) = events.recv().await.unwrap() else {
            panic!("asked again")
        };
        service.reject(&second.id).unwrap();
        assert_eq!(dismissed.await.unwrap(), None);
        assert_eq!(
            question_event(&events.recv().await.unwrap()).1,
            json!({"type": "question.rejected", "properties": {"sessionID": "s1", "requestID": second.id}})
        );
    }
}
