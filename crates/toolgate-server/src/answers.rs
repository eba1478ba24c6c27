//! What was asked and how it was answered, by whom: the page's list of answers
//! (`GET /answers`), and what tells a late reply to an ask already answered, or whose
//! call has ended, from a reply to an id never asked (409, not 404).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use serde_json::{Value, json};
use toolgate_builtins_session::QuestionEvent;
use toolgate_permission::Event;

/// Asks remembered (the newest); older ones are forgotten and answered as unknown.
const REMEMBERED: usize = 4096;
/// Answers listed by `GET /answers` (the newest).
const LISTED: usize = 200;

/// One ask, as remembered.
struct Asked {
    /// `permission` or `question`.
    kind: &'static str,
    session: String,
    action: Option<String>,
    resources: Vec<String>,
    /// How it was answered: the reply and by whom.
    answered: Option<(String, String)>,
}

/// What became of an ask that a reply found no longer pending.
pub(crate) enum Gone {
    /// Answered already: the reply and by whom.
    Answered(String, String),
    /// Asked, never answered here: its call ended (cancelled, the server shutting down).
    Ended,
    /// Never asked (or long forgotten).
    Unknown,
}

#[derive(Default)]
struct Inner {
    asked: HashMap<String, Asked>,
    order: VecDeque<String>,
    answers: VecDeque<Value>,
}

/// The ledger of asks and answers.
#[derive(Default)]
pub(crate) struct Answers {
    inner: Mutex<Inner>,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
}

impl Answers {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|poison| poison.into_inner())
    }

    fn asked(&self, id: &str, asked: Asked) {
        let mut inner = self.lock();
        if inner.asked.insert(id.to_string(), asked).is_none() {
            inner.order.push_back(id.to_string());
        }
        while inner.order.len() > REMEMBERED {
            if let Some(old) = inner.order.pop_front() {
                inner.asked.remove(&old);
            }
        }
    }

    /// Records that `id` was answered with `reply` by `by`: a new entry in the list, or
    /// (when the event came first) the one the event made, now naming who.
    pub(crate) fn answered(&self, id: &str, reply: &str, by: &str, message: Option<&str>) {
        let mut inner = self.lock();
        let (kind, session, action, resources) = match inner.asked.get_mut(id) {
            Some(asked) => {
                asked.answered = Some((reply.to_string(), by.to_string()));
                (
                    asked.kind,
                    asked.session.clone(),
                    asked.action.clone(),
                    asked.resources.clone(),
                )
            }
            None => ("permission", String::new(), None, Vec::new()),
        };
        if let Some(entry) = inner.answers.iter_mut().rev().find(|entry| entry["id"] == id) {
            entry["by"] = json!(by);
            if let Some(message) = message {
                entry["message"] = json!(message);
            }
            return;
        }
        let mut entry = json!({
            "kind": kind, "id": id, "sessionID": session, "action": action, "resources": resources,
            "reply": reply, "by": by, "time": toolgate_permission::rfc3339(now_ms()),
        });
        if let Some(message) = message {
            entry["message"] = json!(message);
        }
        inner.answers.push_back(entry);
        while inner.answers.len() > LISTED {
            inner.answers.pop_front();
        }
    }

    /// What became of `id`, which is not pending.
    pub(crate) fn gone(&self, id: &str) -> Gone {
        match self.lock().asked.get(id) {
            Some(Asked {
                answered: Some((reply, by)),
                ..
            }) => Gone::Answered(reply.clone(), by.clone()),
            Some(_) => Gone::Ended,
            None => Gone::Unknown,
        }
    }

    /// The answers, oldest first (only those of `only`, when given).
    pub(crate) fn list(&self, only: Option<&str>) -> Vec<Value> {
        self.lock()
            .answers
            .iter()
            .filter(|entry| only.is_none_or(|id| entry["id"] == id))
            .cloned()
            .collect()
    }

    /// Takes in a permission event.
    pub(crate) fn permission(&self, event: &Event) {
        match event {
            Event::Asked(request) => self.asked(
                &request.id,
                Asked {
                    kind: "permission",
                    session: request.session_id.clone(),
                    action: Some(request.action.clone()),
                    resources: request.resources.clone(),
                    answered: None,
                },
            ),
            Event::Replied { request_id, reply, .. } => {
                let reply = serde_json::to_value(reply)
                    .ok()
                    .and_then(|value| value.as_str().map(str::to_string))
                    .unwrap_or_default();
                let known = self
                    .lock()
                    .asked
                    .get(request_id)
                    .and_then(|asked| asked.answered.clone());
                // Replies through the HTTP API are recorded with who answered before or
                // after their event; the others came from elsewhere.
                let by = known.map_or_else(
                    || "elsewhere (an MCP client, the terminal, or the server declining at shutdown)".to_string(),
                    |(_, by)| by,
                );
                self.answered(request_id, &reply, &by, None);
            }
            #[allow(unreachable_patterns)]
            _ => {}
        }
    }

    /// Takes in a question event.
    pub(crate) fn question(&self, event: &QuestionEvent) {
        match event {
            QuestionEvent::Asked(request) => self.asked(
                &request.id,
                Asked {
                    kind: "question",
                    session: request.session_id.clone(),
                    action: None,
                    resources: request.questions.iter().map(|q| q.question.clone()).collect(),
                    answered: None,
                },
            ),
            QuestionEvent::Replied {
                request_id, answers, ..
            } => {
                let text = answers
                    .iter()
                    .map(|labels| labels.join(", "))
                    .collect::<Vec<_>>()
                    .join("; ");
                let by = self.by_or_elsewhere(request_id);
                self.answered(request_id, &format!("answered: {text}"), &by, None);
            }
            QuestionEvent::Rejected { request_id, .. } => {
                let by = self.by_or_elsewhere(request_id);
                self.answered(request_id, "dismissed", &by, None);
            }
        }
    }

    fn by_or_elsewhere(&self, id: &str) -> String {
        self.lock()
            .asked
            .get(id)
            .and_then(|asked| asked.answered.as_ref().map(|(_, by)| by.clone()))
            .unwrap_or_else(|| "elsewhere (an MCP client or the server at shutdown)".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ask_answered_once_is_told_apart_from_one_never_asked() {
        let answers = Answers::default();
        answers.asked(
            "per_1",
            Asked {
                kind: "permission",
                session: "s".into(),
                action: Some("bash".into()),
                resources: vec!["ls".into()],
                answered: None,
            },
        );
        assert!(matches!(answers.gone("per_1"), Gone::Ended));
        assert!(matches!(answers.gone("per_2"), Gone::Unknown));
        answers.answered("per_1", "once", "the page", None);
        // The service's event after the handler's record keeps who answered.
        answers.permission(&Event::Replied {
            session_id: "s".into(),
            request_id: "per_1".into(),
            reply: toolgate_permission::Reply::Once,
        });
        let Gone::Answered(reply, by) = answers.gone("per_1") else {
            panic!("answered");
        };
        assert_eq!((reply.as_str(), by.as_str()), ("once", "the page"));
        let list = answers.list(None);
        assert_eq!(list.len(), 1);
        assert_eq!(list[0]["by"], "the page");
        assert_eq!(list[0]["action"], "bash");
    }
}
