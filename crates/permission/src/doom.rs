//! doom_loop detection (spec §4.11): the same call, again and again, in one message.

use serde_json::Value;

/// The default number of identical calls that make a loop.
pub const DOOM_LOOP_THRESHOLD: usize = 3;

/// Watches the tool calls of the current assistant message.
///
/// Feed it every call with [`DoomLoop::observe`]; when it returns true, assert
/// `doom_loop` on the tool name before running the call.
///
/// ```
/// use toolgate_permission::DoomLoop;
/// let mut watch = DoomLoop::new(3);
/// let input = serde_json::json!({"path": "a", "limit": 10});
/// let same = serde_json::json!({"limit": 10, "path": "a"});
/// assert!(!watch.observe("msg_1", "read", &input));
/// assert!(!watch.observe("msg_1", "read", &same));
/// assert!(watch.observe("msg_1", "read", &input));
/// assert!(!watch.observe("msg_2", "read", &input), "a new message starts afresh");
/// ```
#[derive(Clone, Debug)]
pub struct DoomLoop {
    threshold: usize,
    message: String,
    calls: Vec<(String, String)>,
}

impl DoomLoop {
    /// A detector that fires on `threshold` identical calls in a row (at least 1).
    pub fn new(threshold: usize) -> Self {
        DoomLoop {
            threshold: threshold.max(1),
            message: String::new(),
            calls: Vec::new(),
        }
    }

    /// Records a call of `tool` with `input` in `message_id`; true when the last
    /// `threshold` calls of this message are this same tool with the same input (JSON
    /// compared with key order ignored).
    pub fn observe(&mut self, message_id: &str, tool: &str, input: &Value) -> bool {
        if self.message != message_id {
            self.message = message_id.to_string();
            self.calls.clear();
        }
        let key = canonical(input);
        self.calls.push((tool.to_string(), key));
        let Some(last) = self.calls.last() else {
            return false;
        };
        let start = self.calls.len().saturating_sub(self.threshold);
        self.calls.len() >= self.threshold && self.calls[start..].iter().all(|call| call == last)
    }
}

/// JSON text with object keys sorted at every level.
fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                Value::Object(entries.into_iter().map(|(k, v)| (k.clone(), sorted(v))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}
