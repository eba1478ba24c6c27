//! The audit log: one JSON line per permission decision and per settled call.
//!
//! `<data>/audit.jsonl`, rotated to `audit.jsonl.1` when it passes 10 MiB. Each decision
//! records who asked (session, agent, tool, call), what (action, resources), the effect,
//! the deciding rule and its origin, and how an ask was answered (once, always, reject,
//! auto, headless). Writing is best effort: a full disk must not stop the tools.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::rules::{Effect, Rule};

/// The size at which the log is rotated.
pub const ROTATE_BYTES: u64 = 10 * 1024 * 1024;

/// Milliseconds since the epoch as RFC 3339 UTC (`2026-11-29T20:40:07.123Z`).
///
/// ```
/// assert_eq!(toolgate_permission::audit::rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
/// ```
pub fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis() as i64)
        .unwrap_or(0)
}

/// Who a decision was for.
#[derive(Clone, Debug, Default)]
pub struct Caller<'a> {
    /// The session.
    pub session: &'a str,
    /// The agent.
    pub agent: &'a str,
    /// The tool call id.
    pub call: &'a str,
}

/// A refused authentication, as [`AuditLog::auth_failed`] records it.
#[derive(Clone, Debug, Default)]
pub struct AuthFailure<'a> {
    /// The client's address.
    pub peer: &'a str,
    /// The request method.
    pub method: &'a str,
    /// The request path (without the query).
    pub path: &'a str,
    /// Why it was refused: missing header, wrong scheme, wrong token.
    pub reason: &'a str,
    /// Failures on the same connection so far.
    pub connection_failures: u64,
    /// Failures since the server started.
    pub total_failures: u64,
    /// Failures since the last recorded one that were not recorded (the log takes a
    /// few per second, so a flood cannot rotate real decisions away).
    pub suppressed: u64,
}

/// The append-only audit log.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    /// The open log and its inode: opened once per process, reopened when the file at
    /// `path` is another one (rotated here or by another process).
    file: Mutex<Option<(std::fs::File, u64)>>,
    calls: Mutex<HashMap<String, String>>,
}

impl AuditLog {
    /// A log at `path` (created on first write).
    pub fn new(path: impl AsRef<Path>) -> AuditLog {
        AuditLog {
            path: path.as_ref().to_path_buf(),
            file: Mutex::new(None),
            calls: Mutex::new(HashMap::new()),
        }
    }

    /// The log file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Remembers that call `call_id` is of `tool`, so its decisions name the tool.
    pub fn begin_call(&self, call_id: &str, tool: &str) {
        self.calls
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .insert(call_id.to_string(), tool.to_string());
    }

    fn tool_of(&self, call_id: &str) -> Option<String> {
        self.calls
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .get(call_id)
            .cloned()
    }

    /// Records one decision.
    pub fn decision(
        &self,
        caller: &Caller<'_>,
        action: &str,
        resources: &[String],
        effect: Effect,
        rule: Option<&Rule>,
        reply: Option<&str>,
    ) {
        let entry = json!({
            "time": rfc3339(now_ms()),
            "kind": "decision",
            "session": caller.session,
            "agent": caller.agent,
            "tool": self.tool_of(caller.call),
            "call": caller.call,
            "action": action,
            "resources": resources,
            "effect": effect,
            "rule": rule.map(|r| json!({"action": r.action, "resource": r.resource, "effect": r.effect, "origin": r.origin})),
            "reply": reply,
        });
        self.append(&entry);
    }

    /// Records a call that was cancelled before it settled (its caller went away): the
    /// call is forgotten and its entry says `cancelled`.
    pub fn cancelled(&self, caller: &Caller<'_>, tool: &str) {
        self.calls
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .remove(caller.call);
        let entry = json!({
            "time": rfc3339(now_ms()),
            "kind": "cancelled",
            "session": caller.session,
            "agent": caller.agent,
            "tool": tool,
            "call": caller.call,
        });
        self.append(&entry);
    }

    /// How many calls have begun and neither settled nor been cancelled.
    pub fn open_calls(&self) -> usize {
        self.calls.lock().unwrap_or_else(|poison| poison.into_inner()).len()
    }

    /// Records a settled call: whether it failed, and where cut output was spilled.
    pub fn settled(&self, caller: &Caller<'_>, tool: &str, error: Option<&str>, output_paths: &[PathBuf]) {
        self.calls
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .remove(caller.call);
        let entry = json!({
            "time": rfc3339(now_ms()),
            "kind": "settled",
            "session": caller.session,
            "agent": caller.agent,
            "tool": tool,
            "call": caller.call,
            "error": error,
            "truncated": !output_paths.is_empty(),
            "outputPaths": output_paths,
        });
        self.append(&entry);
    }

    /// Records a refused authentication on the HTTP server: who tried, what, why, and
    /// how often; never the credentials that were sent.
    pub fn auth_failed(&self, failure: &AuthFailure<'_>) {
        let entry = json!({
            "time": rfc3339(now_ms()),
            "kind": "auth_failed",
            "peer": failure.peer,
            "method": failure.method,
            "path": failure.path,
            "reason": failure.reason,
            "connectionFailures": failure.connection_failures,
            "totalFailures": failure.total_failures,
            "suppressed": failure.suppressed,
        });
        self.append(&entry);
    }

    fn append(&self, entry: &Value) {
        use std::os::unix::fs::MetadataExt;
        let mut file = self.file.lock().unwrap_or_else(|poison| poison.into_inner());
        // One stat per entry: the file at `path` may have been rotated by another process.
        let current = std::fs::metadata(&self.path).ok();
        if let Some(meta) = &current
            && meta.len() >= ROTATE_BYTES
        {
            let _ = std::fs::rename(&self.path, rotated(&self.path));
            *file = None;
        } else if file.as_ref().map(|(_, inode)| *inode) != current.as_ref().map(MetadataExt::ino) {
            *file = None;
        }
        if file.is_none() {
            if let Some(parent) = self.path.parent() {
                let _ = std::fs::create_dir_all(parent);
            }
            *file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .ok()
                .and_then(|opened| opened.metadata().ok().map(|meta| (opened, meta.ino())));
        }
        let line = format!("{entry}\n");
        // One write call per line with O_APPEND keeps lines whole across processes.
        if let Some((opened, _)) = file.as_mut() {
            let _ = opened.write_all(line.as_bytes());
        }
    }

    /// The last `count` entries, oldest first (reading the rotated file too when needed).
    pub fn tail(&self, count: usize) -> Vec<Value> {
        let mut lines: Vec<String> = Vec::new();
        for path in [self.path.clone(), rotated(&self.path)] {
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let mut older: Vec<String> = text.lines().map(str::to_string).collect();
            older.append(&mut lines);
            lines = older;
            if lines.len() >= count {
                break;
            }
        }
        let start = lines.len().saturating_sub(count);
        lines[start..]
            .iter()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }
}

fn rotated(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".1");
    PathBuf::from(name)
}
