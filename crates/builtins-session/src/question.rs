//! `question` (spec §8.3): ask the user, through the same channel as permission requests.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, oneshot};
use toolgate_core::{Annotations, Content, Context, PermissionRequest, Permissions, Refusal, Tool, ToolFailure};

/// One choice.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct QuestionOption {
    /// The answer as it is reported back.
    pub label: String,
    /// What choosing it means.
    pub description: String,
}

/// One question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Prompt {
    /// The question.
    pub question: String,
    /// A short title (30 characters or fewer).
    pub header: String,
    /// The choices.
    pub options: Vec<QuestionOption>,
    /// Whether several options may be chosen.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub multiple: bool,
}

/// The input of `question`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct QuestionInput {
    /// The questions, answered together.
    pub questions: Vec<Prompt>,
}

/// The output of `question`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct QuestionOutput {
    /// Per question, the chosen labels (or free text); empty when unanswered.
    pub answers: Vec<Vec<String>>,
    /// The text the model reads.
    #[serde(skip)]
    pub text: String,
}

/// A pending question request. Its wire form (`sessionID`, …) belongs to the server that
/// shows it, not to this crate.
#[derive(Clone, Debug, PartialEq)]
pub struct QuestionRequest {
    /// `que_…`, ascending.
    pub id: String,
    /// The asking session.
    pub session_id: String,
    /// The questions.
    pub questions: Vec<Prompt>,
}

/// What the question service publishes (event names and field spellings on a wire are
/// the server's: `toolgate-server` shows these as `question.asked`, …).
#[derive(Clone, Debug, PartialEq)]
pub enum QuestionEvent {
    /// Questions are waiting for answers.
    Asked(QuestionRequest),
    /// They were answered.
    Replied {
        /// The session.
        session_id: String,
        /// The request.
        request_id: String,
        /// The answers.
        answers: Vec<Vec<String>>,
    },
    /// They were dismissed.
    Rejected {
        /// The session.
        session_id: String,
        /// The request.
        request_id: String,
    },
}

/// Why a reply to a question was not taken.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuestionError {
    /// No pending question has that id.
    #[error("no pending question {0}")]
    NotFound(String),
    /// The answers do not fit the questions.
    #[error("expected {expected} answer lists (one per question), got {got}")]
    WrongCount {
        /// Questions asked.
        expected: usize,
        /// Answer lists given.
        got: usize,
    },
}

struct Pending {
    request: QuestionRequest,
    resolve: oneshot::Sender<Option<Vec<Vec<String>>>>,
}

struct Inner {
    answerable: bool,
    pending: Mutex<BTreeMap<String, Pending>>,
    events: broadcast::Sender<QuestionEvent>,
}

/// Pending questions and their answers. Cheap to clone.
#[derive(Clone)]
pub struct QuestionService {
    inner: Arc<Inner>,
}

impl QuestionService {
    /// A service; with `answerable` false (no one can answer) every question is dismissed at once.
    pub fn new(answerable: bool) -> QuestionService {
        let (events, _) = broadcast::channel(1024);
        QuestionService {
            inner: Arc::new(Inner {
                answerable,
                pending: Mutex::new(BTreeMap::new()),
                events,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Pending>> {
        self.inner.pending.lock().unwrap_or_else(|poison| poison.into_inner())
    }

    /// Subscribes to question events.
    pub fn subscribe(&self) -> broadcast::Receiver<QuestionEvent> {
        self.inner.events.subscribe()
    }

    /// The pending questions, oldest first.
    pub fn pending(&self) -> Vec<QuestionRequest> {
        self.lock().values().map(|p| p.request.clone()).collect()
    }

    /// Asks `questions` for `session_id`; `None` when they were dismissed.
    pub async fn ask(&self, session_id: &str, questions: Vec<Prompt>) -> Option<Vec<Vec<String>>> {
        if !self.inner.answerable {
            return None;
        }
        let request = QuestionRequest {
            id: toolgate_core::ascending_id("que"),
            session_id: session_id.to_string(),
            questions,
        };
        let (resolve, receiver) = oneshot::channel();
        let id = request.id.clone();
        {
            let mut pending = self.lock();
            let _ = self.inner.events.send(QuestionEvent::Asked(request.clone()));
            pending.insert(id.clone(), Pending { request, resolve });
        }
        let withdraw = Withdraw { service: self, id };
        let answer = receiver.await.ok().flatten();
        drop(withdraw);
        answer
    }

    /// Answers the pending question `id`: one list of labels (or free text) per question.
    pub fn reply(&self, id: &str, answers: Vec<Vec<String>>) -> Result<(), QuestionError> {
        let mut pending = self.lock();
        let expected = pending
            .get(id)
            .map(|p| p.request.questions.len())
            .ok_or_else(|| QuestionError::NotFound(id.to_string()))?;
        if answers.len() != expected {
            return Err(QuestionError::WrongCount {
                expected,
                got: answers.len(),
            });
        }
        let Some(entry) = pending.remove(id) else {
            return Err(QuestionError::NotFound(id.to_string()));
        };
        let _ = self.inner.events.send(QuestionEvent::Replied {
            session_id: entry.request.session_id.clone(),
            request_id: id.to_string(),
            answers: answers.clone(),
        });
        let _ = entry.resolve.send(Some(answers));
        Ok(())
    }

    /// Dismisses the pending question `id`.
    pub fn reject(&self, id: &str) -> Result<(), QuestionError> {
        let entry = self
            .lock()
            .remove(id)
            .ok_or_else(|| QuestionError::NotFound(id.to_string()))?;
        let _ = self.inner.events.send(QuestionEvent::Rejected {
            session_id: entry.request.session_id.clone(),
            request_id: id.to_string(),
        });
        let _ = entry.resolve.send(None);
        Ok(())
    }

    /// Dismisses everything pending (shutdown).
    pub fn reject_all(&self) {
        let ids: Vec<String> = self.lock().keys().cloned().collect();
        for id in ids {
            let _ = self.reject(&id);
        }
    }
}

struct Withdraw<'a> {
    service: &'a QuestionService,
    id: String,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.service.lock().remove(&self.id);
    }
}

/// The model-facing text for answered questions (spec §8.3).
pub fn answer_text(questions: &[Prompt], answers: &[Vec<String>]) -> String {
    let parts: Vec<String> = questions
        .iter()
        .enumerate()
        .map(|(index, prompt)| {
            let answer = answers
                .get(index)
                .filter(|a| !a.is_empty())
                .map_or_else(|| "Unanswered".to_string(), |a| a.join(", "));
            format!("\"{}\"=\"{}\"", prompt.question, answer)
        })
        .collect();
    format!(
        "User has answered your questions: {}. You can now continue with the user's answers in mind.",
        parts.join(", ")
    )
}

/// The tool's description.
pub(crate) const QUESTION_DESCRIPTION: &str = "Ask the user one or more questions and wait for the answers. Give each \
question a short header (30 characters or fewer) and the options to choose from, each with a label and a description; \
set `multiple` when several may be chosen. The user may also answer in their own words, or dismiss the questions.";

/// Builds `question` over `service`, asking `permissions` (`question` on `*`) first.
pub fn question_tool(service: QuestionService, permissions: Arc<dyn Permissions>) -> Tool {
    let shared = Arc::new((service, permissions));
    Tool::builder(QUESTION_DESCRIPTION, move |input: QuestionInput, ctx: Context| {
        let shared = Arc::clone(&shared);
        async move {
            let (service, permissions) = &*shared;
            if input.questions.is_empty() {
                return Err(ToolFailure::new("Provide at least one question."));
            }
            let request = PermissionRequest::new("question").resources(["*"]);
            if let Err(refusal) = permissions.assert(&ctx, request).await {
                return Err(match refusal {
                    Refusal::Blocked { .. } => ToolFailure::from(refusal).with_message("Permission denied: question"),
                    other => ToolFailure::from(other),
                });
            }
            match service.ask(&ctx.session_id, input.questions.clone()).await {
                Some(answers) => Ok(QuestionOutput {
                    text: answer_text(&input.questions, &answers),
                    answers,
                }),
                // A dismissal stops the loop like a declined permission.
                None => Err(ToolFailure::from(Refusal::Declined {
                    reason: Some("The user dismissed the questions.".into()),
                })),
            }
        }
    })
    .project(|output: &QuestionOutput| vec![Content::text(output.text.clone())])
    .title("Ask the user")
    .annotations(Annotations::read_only())
    .build()
}
