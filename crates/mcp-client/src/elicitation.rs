//! Elicitation: a server asking the person for input in the middle of a call.
//!
//! The gateway passes each request to an [`Elicitor`], which the front end in use
//! supplies (a terminal prompt, an HTTP `question`, or elicitation to toolgate's own MCP
//! client). The helpers here turn a requested schema (flat primitive fields, per the MCP
//! spec) into fields a prompt can show, and answers back into typed values.

use serde_json::{Map, Value};
use toolgate_core::{BoxFuture, Context};

/// One elicitation request from a server.
#[derive(Clone, Debug, PartialEq)]
pub struct Elicitation {
    /// The configured server name.
    pub server: String,
    /// What the server says to the person.
    pub message: String,
    /// The requested schema: an object of flat primitive properties.
    pub schema: Value,
    /// The call it belongs to: the newest of the server's calls in flight, all of one
    /// session (the gateway declines an elicitation it cannot tie to one session).
    pub context: Option<Context>,
}

/// The person's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum ElicitationAnswer {
    /// Accepted with these values (defaults are filled in for omitted fields).
    Accept(Map<String, Value>),
    /// Explicitly refused.
    Decline,
    /// Dismissed without a choice, or no one could answer.
    Cancel,
}

/// Puts elicitation requests to a person.
pub trait Elicitor: Send + Sync {
    /// Asks, and resolves with the answer.
    fn elicit(&self, request: Elicitation) -> BoxFuture<'static, ElicitationAnswer>;
}

/// No one can answer: every request is declined.
pub struct DeclineAll;

impl Elicitor for DeclineAll {
    fn elicit(&self, _request: Elicitation) -> BoxFuture<'static, ElicitationAnswer> {
        Box::pin(async { ElicitationAnswer::Decline })
    }
}

/// `--auto`: accepts a request when the server's own defaults answer every required
/// field (nothing the person did not see is invented), else declines.
pub struct AcceptDefaults;

impl Elicitor for AcceptDefaults {
    fn elicit(&self, request: Elicitation) -> BoxFuture<'static, ElicitationAnswer> {
        let answer = match defaults_answer(&request.schema) {
            Some(values) => ElicitationAnswer::Accept(values),
            None => ElicitationAnswer::Decline,
        };
        Box::pin(async move { answer })
    }
}

/// What kind of value a field takes.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldKind {
    /// Free text.
    Text,
    /// A whole number.
    Integer,
    /// Any number.
    Number,
    /// Yes or no.
    Boolean,
    /// One of these `(value, label)` pairs.
    Choice(Vec<(String, String)>),
    /// Any of these `(value, label)` pairs.
    MultiChoice(Vec<(String, String)>),
}

/// One field of a requested schema.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// The property name.
    pub name: String,
    /// Its title, else its name.
    pub title: String,
    /// Its description, if any.
    pub description: Option<String>,
    /// What it takes.
    pub kind: FieldKind,
    /// True when listed in `required`.
    pub required: bool,
    /// The server's default (SEP-1034).
    pub default: Option<Value>,
}

fn options(schema: &Value) -> Vec<(String, String)> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let names = schema.get("enumNames").and_then(Value::as_array);
        return values
            .iter()
            .enumerate()
            .filter_map(|(index, value)| {
                let value = value.as_str()?.to_string();
                let label = names
                    .and_then(|n| n.get(index))
                    .and_then(Value::as_str)
                    .map_or_else(|| value.clone(), str::to_string);
                Some((value, label))
            })
            .collect();
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(choices) = schema.get(key).and_then(Value::as_array) {
            return choices
                .iter()
                .filter_map(|choice| {
                    let value = choice.get("const")?.as_str()?.to_string();
                    let label = choice
                        .get("title")
                        .and_then(Value::as_str)
                        .map_or_else(|| value.clone(), str::to_string);
                    Some((value, label))
                })
                .collect();
        }
    }
    Vec::new()
}

/// The fields of a requested schema, in its order.
pub fn fields(schema: &Value) -> Vec<Field> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let kind = match property.get("type").and_then(Value::as_str) {
                Some("integer") => FieldKind::Integer,
                Some("number") => FieldKind::Number,
                Some("boolean") => FieldKind::Boolean,
                Some("array") => FieldKind::MultiChoice(options(property.get("items").unwrap_or(&Value::Null))),
                _ => match options(property) {
                    choices if choices.is_empty() => FieldKind::Text,
                    choices => FieldKind::Choice(choices),
                },
            };
            Field {
                name: name.clone(),
                title: property
                    .get("title")
                    .and_then(Value::as_str)
                    .map_or_else(|| name.clone(), str::to_string),
                description: property.get("description").and_then(Value::as_str).map(str::to_string),
                kind,
                required: required.contains(&name.as_str()),
                default: property.get("default").cloned(),
            }
        })
        .collect()
}

/// Fills every omitted field that has a default (SEP-1034: the client applies them).
pub(crate) fn with_defaults(schema: &Value, mut values: Map<String, Value>) -> Map<String, Value> {
    for field in fields(schema) {
        if let (false, Some(default)) = (values.contains_key(&field.name), field.default) {
            values.insert(field.name, default);
        }
    }
    values
}

/// The answer made of the defaults alone, when they cover every required field.
pub(crate) fn defaults_answer(schema: &Value) -> Option<Map<String, Value>> {
    let fields = fields(schema);
    if fields.iter().any(|f| f.required && f.default.is_none()) {
        return None;
    }
    Some(with_defaults(schema, Map::new()))
}

/// A typed value for `field` from what a person typed or picked; `Ok(None)` when left
/// empty. Choices may be given by value or by label.
pub fn value_of(field: &Field, answer: &[String]) -> Result<Option<Value>, String> {
    let picked: Vec<&str> = answer.iter().map(|a| a.trim()).filter(|a| !a.is_empty()).collect();
    let Some(first) = picked.first().copied() else {
        return Ok(None);
    };
    let choose = |choices: &[(String, String)], text: &str| {
        choices
            .iter()
            .find(|(value, label)| value == text || label == text)
            .map(|(value, _)| Value::String(value.clone()))
            .ok_or_else(|| format!("{}: {text:?} is not one of the choices", field.title))
    };
    let value = match &field.kind {
        FieldKind::Text => Value::String(answer.join(", ")),
        FieldKind::Integer => first
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| format!("{}: {first:?} is not a whole number", field.title))?,
        FieldKind::Number => first
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .ok_or_else(|| format!("{}: {first:?} is not a number", field.title))?,
        FieldKind::Boolean => match first.to_ascii_lowercase().as_str() {
            "true" | "yes" | "y" => Value::Bool(true),
            "false" | "no" | "n" => Value::Bool(false),
            _ => return Err(format!("{}: answer yes or no", field.title)),
        },
        FieldKind::Choice(choices) => choose(choices, first)?,
        FieldKind::MultiChoice(choices) => Value::Array(
            picked
                .iter()
                .map(|text| choose(choices, text))
                .collect::<Result<Vec<_>, _>>()?,
        ),
    };
    Ok(Some(value))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "title": "Your name", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number"},
            "status": {"type": "string", "enum": ["active", "inactive"], "enumNames": ["Active", "Inactive"], "default": "active"},
            "colour": {"type": "string", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
            "verified": {"type": "boolean", "default": true}
        }, "required": ["name", "age"]})
    }

    #[test]
    fn fields_and_typed_values() {
        let fields = fields(&schema());
        let kinds: Vec<&FieldKind> = fields.iter().map(|f| &f.kind).collect();
        assert_eq!(kinds[0], &FieldKind::Text);
        assert_eq!(
            kinds[3],
            &FieldKind::Choice(vec![
                ("active".into(), "Active".into()),
                ("inactive".into(), "Inactive".into())
            ])
        );
        assert_eq!(
            kinds[4],
            &FieldKind::Choice(vec![("r".into(), "Red".into()), ("g".into(), "Green".into())])
        );
        assert_eq!(
            kinds[5],
            &FieldKind::MultiChoice(vec![("a".into(), "a".into()), ("b".into(), "b".into())])
        );
        assert_eq!(fields[0].title, "Your name");
        assert!(fields[0].required && !fields[2].required);
        let answer = |index: usize, text: &[&str]| {
            value_of(&fields[index], &text.iter().map(|t| t.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(answer(1, &["42"]).unwrap(), Some(json!(42)));
        assert!(answer(1, &["forty"]).unwrap_err().contains("not a whole number"));
        assert_eq!(answer(2, &["95.5"]).unwrap(), Some(json!(95.5)));
        assert!(answer(2, &["NaN"]).is_err());
        assert_eq!(answer(3, &["Inactive"]).unwrap(), Some(json!("inactive")));
        assert!(answer(3, &["deleted"]).is_err());
        assert_eq!(answer(5, &["a", "b"]).unwrap(), Some(json!(["a", "b"])));
        assert_eq!(answer(6, &["no"]).unwrap(), Some(json!(false)));
        assert_eq!(answer(0, &[" "]).unwrap(), None);
    }

    #[test]
    fn defaults_fill_omitted_fields_and_answer_alone_only_when_they_cover_the_required() {
        let mut given = Map::new();
        given.insert("age".into(), json!(7));
        let filled = with_defaults(&schema(), given);
        assert_eq!(
            Value::Object(filled),
            json!({"age": 7, "name": "John Doe", "status": "active", "verified": true})
        );
        assert_eq!(
            defaults_answer(&schema()).map(Value::Object),
            Some(json!({"name": "John Doe", "age": 30, "status": "active", "verified": true}))
        );
        let uncovered = json!({"type": "object", "properties": {"token": {"type": "string"}}, "required": ["token"]});
        assert_eq!(defaults_answer(&uncovered), None);
    }
}
