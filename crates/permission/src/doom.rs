//! doom_loop detection (spec §4.11): the same call, again and again, in one assistant
//! message of one session.
//!
//! The gate passes each call through [`crate::PermissionService::doom_loop`] before
//! settling it; the streaks live here (one process) or in the approval database (one call
//! per process, as `toolgate call` makes). A front end that knows no assistant messages
//! uses the session as its one message.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use serde_json::Value;

/// The default number of identical calls that make a loop.
pub const DOOM_LOOP_THRESHOLD: usize = 3;

/// Where the recent calls of a session are remembered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DoomMemory {
    /// In this process: right for a server that sees every call of its sessions.
    Process,
    /// In the approval database (`toolgate.db`), shared by every process using it: right
    /// when each process makes one call. Falls back to the process when the database
    /// cannot be written.
    Database,
}

/// The identity of a call: the tool and its input exactly as sent. Key order counts, as
/// in OpenCode's `JSON.stringify` comparison, so `{"a":1,"b":2}` and `{"b":2,"a":1}`
/// are different calls.
pub(crate) fn call_key(tool: &str, input: &Value) -> String {
    let text = input.to_string();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    tool.hash(&mut hasher);
    text.hash(&mut hasher);
    format!("{}:{}:{:016x}", tool.len(), text.len(), hasher.finish())
}

#[derive(Debug)]
struct Streak {
    message: String,
    key: String,
    count: usize,
    /// When it last grew (an ever-increasing counter), for eviction.
    seen: u64,
}

/// How many sessions the process keeps streaks for; the least recently seen half goes
/// when there are more.
const MAX_SESSIONS: usize = 10_000;

/// Counts identical calls in a row, per session and assistant message.
///
/// ```
/// use toolgate_permission::DoomLoop;
/// let watch = DoomLoop::new(3);
/// let input = serde_json::json!({"path": "a", "limit": 10});
/// let reordered = serde_json::json!({"limit": 10, "path": "a"});
/// assert!(!watch.observe("ses_1", "msg_1", "read", &input));
/// assert!(!watch.observe("ses_1", "msg_1", "read", &input));
/// assert!(watch.observe("ses_1", "msg_1", "read", &input), "the third identical call");
/// assert!(!watch.observe("ses_2", "msg_1", "read", &input), "another session starts afresh");
/// assert!(!watch.observe("ses_1", "msg_1", "read", &reordered), "key order counts: a new streak");
/// assert!(!watch.observe("ses_1", "msg_2", "read", &reordered), "so does a new message");
/// ```
#[derive(Debug)]
pub struct DoomLoop {
    threshold: usize,
    streaks: Mutex<(u64, HashMap<String, Streak>)>,
}

impl DoomLoop {
    /// A detector that fires on `threshold` identical calls in a row (at least 1).
    pub fn new(threshold: usize) -> Self {
        DoomLoop {
            threshold: threshold.max(1),
            streaks: Mutex::new((0, HashMap::new())),
        }
    }

    /// Records a call of `tool` with `input` in `message` of `session`; true when it
    /// makes `threshold` identical calls in a row there.
    pub fn observe(&self, session: &str, message: &str, tool: &str, input: &Value) -> bool {
        self.observe_key(session, message, call_key(tool, input)) >= self.threshold
    }

    /// Records a call by its key; returns the length of the streak it belongs to.
    pub(crate) fn observe_key(&self, session: &str, message: &str, key: String) -> usize {
        let mut guard = self.streaks.lock().unwrap_or_else(|poison| poison.into_inner());
        let (clock, streaks) = &mut *guard;
        *clock += 1;
        let now = *clock;
        if streaks.len() >= MAX_SESSIONS && !streaks.contains_key(session) {
            let mut seen: Vec<u64> = streaks.values().map(|streak| streak.seen).collect();
            seen.sort_unstable();
            let cut = seen[seen.len() / 2];
            streaks.retain(|_, streak| streak.seen > cut);
        }
        let streak = streaks.entry(session.to_string()).or_insert(Streak {
            message: String::new(),
            key: String::new(),
            count: 0,
            seen: now,
        });
        if streak.key == key && streak.message == message {
            streak.count += 1;
        } else {
            streak.message = message.to_string();
            streak.key = key;
            streak.count = 1;
        }
        streak.seen = now;
        streak.count
    }
}
