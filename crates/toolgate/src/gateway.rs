//! The MCP gateway in the binary: the registry as the gateway's tool sink, and the
//! elicitors that put servers' questions to the person through the front end in use.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Map;
use toolgate_builtins_session::{Prompt, QuestionOption, QuestionService};
use toolgate_core::BoxFuture;
use toolgate_mcp_client::{Elicitation, ElicitationAnswer, Elicitor, ToolSink};
use toolgate_mcp_client::{Field, FieldKind, fields, value_of};
use toolgate_registry::{Registration, ToolRegistry};

/// Registers the gateway's tools at the project's location, one registration per name.
pub(crate) struct RegistrySink {
    registry: ToolRegistry,
    held: Mutex<HashMap<String, Registration>>,
}

impl RegistrySink {
    pub(crate) fn new(registry: ToolRegistry) -> Self {
        RegistrySink {
            registry,
            held: Mutex::new(HashMap::new()),
        }
    }
}

impl ToolSink for RegistrySink {
    fn register(&self, name: &str, tool: toolgate_core::Tool) -> Result<(), String> {
        let registration = self
            .registry
            .register([(name.to_string(), tool)])
            .map_err(|error| error.to_string())?;
        // The new registration is on top before the old one goes: the name is never missing.
        let old = self
            .held
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_string(), registration);
        drop(old);
        Ok(())
    }

    fn unregister(&self, name: &str) {
        let old = self.held.lock().unwrap_or_else(|p| p.into_inner()).remove(name);
        drop(old);
    }
}

fn short(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max - 1).collect::<String>())
    }
}

/// One question per requested field.
fn prompt(request: &Elicitation, field: &Field, only: bool) -> Prompt {
    let mut question = format!("[MCP server {}] {}", request.server, request.message);
    if !only {
        question.push_str(&format!("\n{}", field.title));
    }
    if let Some(description) = &field.description {
        question.push_str(&format!(" — {description}"));
    }
    if let Some(default) = &field.default {
        question.push_str(&format!(" (Enter for the default: {default})"));
    } else if !field.required {
        question.push_str(" (optional)");
    }
    let options = match &field.kind {
        FieldKind::Choice(choices) | FieldKind::MultiChoice(choices) => choices
            .iter()
            .map(|(value, label)| QuestionOption {
                label: label.clone(),
                description: value.clone(),
            })
            .collect(),
        FieldKind::Boolean => ["yes", "no"]
            .iter()
            .map(|answer| QuestionOption {
                label: answer.to_string(),
                description: String::new(),
            })
            .collect(),
        FieldKind::Text | FieldKind::Integer | FieldKind::Number => Vec::new(),
    };
    Prompt {
        question,
        header: short(&field.title, 30),
        options,
        multiple: matches!(field.kind, FieldKind::MultiChoice(_)),
    }
}

/// Puts elicitations to the person as questions: the terminal prompt of `call`, or the
/// HTTP `question` routes of `serve`.
pub(crate) struct QuestionElicitor {
    pub(crate) questions: QuestionService,
    /// The session when the request cannot be tied to a call.
    pub(crate) fallback_session: String,
}

impl Elicitor for QuestionElicitor {
    fn elicit(&self, request: Elicitation) -> BoxFuture<'static, ElicitationAnswer> {
        let questions = self.questions.clone();
        let session = request
            .context
            .as_ref()
            .map_or_else(|| self.fallback_session.clone(), |ctx| ctx.session_id.clone());
        Box::pin(async move {
            let fields = fields(&request.schema);
            let prompts: Vec<Prompt> = fields
                .iter()
                .map(|field| prompt(&request, field, fields.len() == 1))
                .collect();
            if prompts.is_empty() {
                // Nothing to fill in: a confirmation.
                let confirm = Prompt {
                    question: format!("[MCP server {}] {}", request.server, request.message),
                    header: short(&request.server, 30),
                    options: vec![
                        QuestionOption {
                            label: "accept".into(),
                            description: String::new(),
                        },
                        QuestionOption {
                            label: "decline".into(),
                            description: String::new(),
                        },
                    ],
                    multiple: false,
                };
                return match questions.ask(&session, vec![confirm]).await {
                    Some(answers) if answers.first().is_some_and(|a| a.iter().any(|x| x == "accept")) => {
                        ElicitationAnswer::Accept(Map::new())
                    }
                    _ => ElicitationAnswer::Decline,
                };
            }
            let Some(answers) = questions.ask(&session, prompts).await else {
                return ElicitationAnswer::Decline;
            };
            let mut values = Map::new();
            for (field, answer) in fields.iter().zip(answers.iter()) {
                match value_of(field, answer) {
                    Ok(Some(value)) => {
                        values.insert(field.name.clone(), value);
                    }
                    Ok(None) => {}
                    Err(reason) => {
                        eprintln!("toolgate: elicitation from {} declined: {reason}", request.server);
                        return ElicitationAnswer::Decline;
                    }
                }
            }
            ElicitationAnswer::Accept(values)
        })
    }
}

/// Passes elicitations to the MCP client of `toolgate mcp`, schema and all.
pub(crate) struct ClientElicitor(pub(crate) toolgate_server::ClientHandle);

impl Elicitor for ClientElicitor {
    fn elicit(&self, request: Elicitation) -> BoxFuture<'static, ElicitationAnswer> {
        let client = self.0.clone();
        Box::pin(async move {
            let message = format!("[MCP server {}] {}", request.server, request.message);
            match client.elicit(message, request.schema).await {
                Ok(toolgate_server::Elicited::Accept(values)) => ElicitationAnswer::Accept(values),
                Ok(toolgate_server::Elicited::Decline) => ElicitationAnswer::Decline,
                Ok(toolgate_server::Elicited::Cancel) => ElicitationAnswer::Cancel,
                Err(reason) => {
                    eprintln!("toolgate: elicitation from {} not passed on: {reason}", request.server);
                    ElicitationAnswer::Decline
                }
            }
        })
    }
}
