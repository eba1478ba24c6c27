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
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

use crate::rules::{Effect, Origin, Rule};

/// The size at which the log is rotated.
pub(crate) const ROTATE_BYTES: u64 = 10 * 1024 * 1024;

/// How long the log trusts its own count of the file's size before it looks at the file
/// at its path again: another process writing the same log (a `toolgate call` next to a
/// server) may have grown or rotated it meanwhile. Looking at every entry cost a `stat`
/// per line on the hot path of every call.
const RECHECK: Duration = Duration::from_secs(1);

/// Milliseconds since the epoch as RFC 3339 UTC (`2026-11-29T20:40:07.123Z`).
///
/// ```
/// assert_eq!(toolgate_permission::rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
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
#[non_exhaustive]
pub struct Caller<'a> {
    /// The session.
    pub session: &'a str,
    /// The agent.
    pub agent: &'a str,
    /// The tool call id.
    pub call: &'a str,
    /// The other agent whose own tool asked through a hook (`toolgate hook claude-code`):
    /// recorded as `via`, so the log tells a hook's decisions from toolgate's own calls.
    pub via: Option<&'a str>,
}

impl<'a> Caller<'a> {
    /// The caller of tool call `call` by `agent` in `session`.
    pub fn new(session: &'a str, agent: &'a str, call: &'a str) -> Self {
        Caller {
            session,
            agent,
            call,
            via: None,
        }
    }

    /// The same caller, asking for another agent's tool (`claude-code`, `codex`, `gemini`).
    pub fn via(mut self, via: &'a str) -> Self {
        self.via = Some(via);
        self
    }
}

/// A refused authentication, as [`AuditLog::auth_failed`] records it: [`AuthFailure::new`],
/// then [`AuthFailure::peer`], [`AuthFailure::request`] and [`AuthFailure::counts`] (more
/// fields may come, hence `#[non_exhaustive]`).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
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

impl<'a> AuthFailure<'a> {
    /// A refusal for `reason` (missing header, wrong scheme, wrong token); no peer or
    /// request yet, every count zero.
    pub fn new(reason: &'a str) -> AuthFailure<'a> {
        AuthFailure {
            reason,
            ..AuthFailure::default()
        }
    }

    /// The same refusal of a request from `peer` (the client's address).
    pub fn peer(mut self, peer: &'a str) -> AuthFailure<'a> {
        self.peer = peer;
        self
    }

    /// The same refusal of the request `method path` (the path without its query).
    pub fn request(mut self, method: &'a str, path: &'a str) -> AuthFailure<'a> {
        self.method = method;
        self.path = path;
        self
    }

    /// The same refusal with its counts: failures on its connection, since the server
    /// started, and not recorded since the last recorded one.
    pub fn counts(mut self, connection: u64, total: u64, suppressed: u64) -> AuthFailure<'a> {
        self.connection_failures = connection;
        self.total_failures = total;
        self.suppressed = suppressed;
        self
    }
}

/// The append-only audit log: one JSON line per permission decision and per settled
/// call, rotated to `<path>.1` when it passes 10 MiB. Writing is best effort: a full
/// disk must not stop the tools.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    file: Mutex<Writer>,
    calls: Mutex<HashMap<String, String>>,
}

/// The open log: opened once per process, reopened when the file at `path` is another
/// one (rotated here or by another process).
#[derive(Debug, Default)]
struct Writer {
    /// The open file and its inode.
    open: Option<(std::fs::File, u64)>,
    /// The file's size when it was last looked at, plus every byte written here since.
    size: u64,
    /// When the file at the path was last looked at.
    checked: Option<Instant>,
}

/// A rule as a decision entry names it.
#[derive(Serialize)]
struct RuleEntry<'a> {
    action: &'a str,
    resource: &'a str,
    effect: Effect,
    origin: Origin,
}

/// One line of the log; `None` fields are written as `null` (every kind has its fixed
/// set of keys, in this order).
#[derive(Serialize)]
struct DecisionEntry<'a> {
    time: &'a str,
    kind: &'static str,
    session: &'a str,
    agent: &'a str,
    tool: Option<&'a str>,
    call: &'a str,
    action: &'a str,
    resources: &'a [String],
    effect: Effect,
    rule: Option<RuleEntry<'a>>,
    reply: Option<&'a str>,
    /// Only in the entries of a hook's decisions (the agent that asked).
    #[serde(skip_serializing_if = "Option::is_none")]
    via: Option<&'a str>,
}

#[derive(Serialize)]
struct CancelledEntry<'a> {
    time: &'a str,
    kind: &'static str,
    session: &'a str,
    agent: &'a str,
    tool: &'a str,
    call: &'a str,
}

#[derive(Serialize)]
struct SettledEntry<'a> {
    time: &'a str,
    kind: &'static str,
    session: &'a str,
    agent: &'a str,
    tool: &'a str,
    call: &'a str,
    error: Option<&'a str>,
    truncated: bool,
    #[serde(rename = "outputPaths", serialize_with = "lossy_paths")]
    output_paths: &'a [PathBuf],
    /// What the output boundary redacted (kind and count each, never a value); only
    /// when something was.
    #[serde(skip_serializing_if = "<[_]>::is_empty", serialize_with = "redaction_entries")]
    redacted: &'a [toolgate_core::Redaction],
}

/// Redactions as `{"kind", "count"}` objects.
fn redaction_entries<S: serde::Serializer>(
    redactions: &&[toolgate_core::Redaction],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Entry<'a> {
        kind: &'a str,
        count: usize,
    }
    serializer.collect_seq(redactions.iter().map(|r| Entry {
        kind: &r.kind,
        count: r.count,
    }))
}

/// Paths as text, a name that is not UTF-8 shown with replacement characters: the entry
/// is written either way.
fn lossy_paths<S: serde::Serializer>(paths: &&[PathBuf], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(paths.iter().map(|path| path.to_string_lossy()))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AuthFailedEntry<'a> {
    time: &'a str,
    kind: &'static str,
    peer: &'a str,
    method: &'a str,
    path: &'a str,
    reason: &'a str,
    connection_failures: u64,
    total_failures: u64,
    suppressed: u64,
}

impl AuditLog {
    /// A log at `path` (created on first write).
    pub fn new(path: impl AsRef<Path>) -> AuditLog {
        AuditLog {
            path: path.as_ref().to_path_buf(),
            file: Mutex::new(Writer::default()),
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
        let tool = self.tool_of(caller.call);
        let time = rfc3339(now_ms());
        self.append(&DecisionEntry {
            time: &time,
            kind: "decision",
            session: caller.session,
            agent: caller.agent,
            tool: tool.as_deref(),
            call: caller.call,
            action,
            resources,
            effect,
            rule: rule.map(|r| RuleEntry {
                action: &r.action,
                resource: &r.resource,
                effect: r.effect,
                origin: r.origin,
            }),
            reply,
            via: caller.via,
        });
    }

    /// Records a call that was cancelled before it settled (its caller went away): the
    /// call is forgotten and its entry says `cancelled`.
    pub fn cancelled(&self, caller: &Caller<'_>, tool: &str) {
        self.calls
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .remove(caller.call);
        let time = rfc3339(now_ms());
        self.append(&CancelledEntry {
            time: &time,
            kind: "cancelled",
            session: caller.session,
            agent: caller.agent,
            tool,
            call: caller.call,
        });
    }

    /// How many calls have begun and neither settled nor been cancelled.
    pub fn open_calls(&self) -> usize {
        self.calls.lock().unwrap_or_else(|poison| poison.into_inner()).len()
    }

    /// Records a settled call: whether it failed, and where cut output was spilled.
    pub fn settled(&self, caller: &Caller<'_>, tool: &str, error: Option<&str>, output_paths: &[PathBuf]) {
        self.settled_redacted(caller, tool, error, output_paths, &[]);
    }

    /// [`AuditLog::settled`], also recording what the output boundary redacted from the
    /// call's output (`redacted`: kinds and counts; the values never reach the log).
    pub fn settled_redacted(
        &self,
        caller: &Caller<'_>,
        tool: &str,
        error: Option<&str>,
        output_paths: &[PathBuf],
        redacted: &[toolgate_core::Redaction],
    ) {
        self.calls
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .remove(caller.call);
        let time = rfc3339(now_ms());
        self.append(&SettledEntry {
            time: &time,
            kind: "settled",
            session: caller.session,
            agent: caller.agent,
            tool,
            call: caller.call,
            error,
            truncated: !output_paths.is_empty(),
            output_paths,
            redacted,
        });
    }

    /// Records a refused authentication on the HTTP server: who tried, what, why, and
    /// how often; never the credentials that were sent.
    pub fn auth_failed(&self, failure: &AuthFailure<'_>) {
        let time = rfc3339(now_ms());
        self.append(&AuthFailedEntry {
            time: &time,
            kind: "auth_failed",
            peer: failure.peer,
            method: failure.method,
            path: failure.path,
            reason: failure.reason,
            connection_failures: failure.connection_failures,
            total_failures: failure.total_failures,
            suppressed: failure.suppressed,
        });
    }

    fn append(&self, entry: &impl Serialize) {
        use std::os::unix::fs::MetadataExt;
        let mut line = Vec::with_capacity(256);
        if serde_json::to_writer(&mut line, entry).is_err() {
            return;
        }
        line.push(b'\n');
        let mut writer = self.file.lock().unwrap_or_else(|poison| poison.into_inner());
        // The file at `path` is looked at when this process's own count says it may be
        // due for rotation, when it is not open yet, and at least every `RECHECK` (another
        // process may have written or rotated it).
        let now = Instant::now();
        let due = writer.open.is_none()
            || writer.size >= ROTATE_BYTES
            || writer
                .checked
                .is_none_or(|checked| now.duration_since(checked) >= RECHECK);
        if due {
            let current = std::fs::metadata(&self.path).ok();
            writer.checked = Some(now);
            if let Some(meta) = &current
                && meta.len() >= ROTATE_BYTES
            {
                let _ = std::fs::rename(&self.path, rotated(&self.path));
                writer.open = None;
            } else if writer.open.as_ref().map(|(_, inode)| *inode) != current.as_ref().map(MetadataExt::ino) {
                writer.open = None;
            } else if let Some(meta) = &current {
                writer.size = meta.len();
            }
        }
        if writer.open.is_none() {
            if let Some(parent) = self.path.parent() {
                let _ = std::fs::create_dir_all(parent);
            }
            let opened = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .ok()
                .and_then(|opened| opened.metadata().ok().map(|meta| (opened, meta)));
            match opened {
                Some((opened, meta)) => {
                    writer.size = meta.len();
                    writer.open = Some((opened, meta.ino()));
                }
                None => return,
            }
        }
        // One write call per line with O_APPEND keeps lines whole across processes.
        if let Some((opened, _)) = writer.open.as_mut()
            && opened.write_all(&line).is_ok()
        {
            writer.size += line.len() as u64;
        }
    }

    /// The last `count` entries, oldest first (reading the rotated file too when needed).
    pub fn tail(&self, count: usize) -> Vec<Value> {
        self.query(&AuditQuery::last(count))
    }

    /// The last `query.limit` entries that match `query`, oldest first, from this file and
    /// the rotated one (read only when this one has fewer matches). `toolgate audit tail`
    /// and the server's `GET /audit` both read the log through this.
    pub fn query(&self, query: &AuditQuery) -> Vec<Value> {
        let mut found: Vec<Value> = Vec::new();
        for path in [self.path.clone(), rotated(&self.path)] {
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let mut older: Vec<Value> = text
                .lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .filter(|entry| query.matches(entry))
                .collect();
            older.append(&mut found);
            found = older;
            if found.len() >= query.limit {
                break;
            }
        }
        let start = found.len().saturating_sub(query.limit);
        found.split_off(start)
    }
}

/// Which audit entries [`AuditLog::query`] returns: the newest `limit` whose `session`,
/// `tool` and `effect` fields equal the ones given (a filter not given matches every
/// entry; an entry without the field never matches a filter on it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuditQuery {
    /// The session, exactly.
    pub session: Option<String>,
    /// The tool, exactly.
    pub tool: Option<String>,
    /// The decision's effect (`allow`, `deny`, `ask`), exactly.
    pub effect: Option<String>,
    /// At most this many entries, the newest.
    pub limit: usize,
}

impl AuditQuery {
    /// The newest `limit` entries, unfiltered.
    pub fn last(limit: usize) -> AuditQuery {
        AuditQuery {
            limit,
            ..AuditQuery::default()
        }
    }

    /// Only entries of `session`.
    pub fn session(mut self, session: impl Into<String>) -> AuditQuery {
        self.session = Some(session.into());
        self
    }

    /// Only entries of `tool`.
    pub fn tool(mut self, tool: impl Into<String>) -> AuditQuery {
        self.tool = Some(tool.into());
        self
    }

    /// Only decisions of `effect`.
    pub fn effect(mut self, effect: impl Into<String>) -> AuditQuery {
        self.effect = Some(effect.into());
        self
    }

    fn matches(&self, entry: &Value) -> bool {
        let field = |key: &str, wanted: &Option<String>| {
            wanted
                .as_deref()
                .is_none_or(|wanted| entry.get(key).and_then(Value::as_str) == Some(wanted))
        };
        field("session", &self.session) && field("tool", &self.tool) && field("effect", &self.effect)
    }
}

fn rotated(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".1");
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_query_filters_by_session_tool_and_effect_and_keeps_the_newest_across_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let line = |n: u32, session: &str, tool: &str, effect: Option<&str>| {
            let mut entry = serde_json::json!({"n": n, "session": session, "tool": tool});
            if let Some(effect) = effect {
                entry["effect"] = effect.into();
            }
            entry.to_string() + "\n"
        };
        // The rotated file holds the older entries.
        std::fs::write(
            rotated(&path),
            [line(1, "a", "bash", Some("allow")), line(2, "b", "bash", Some("deny"))].concat(),
        )
        .unwrap();
        std::fs::write(
            &path,
            [
                line(3, "a", "read", Some("allow")),
                line(4, "a", "bash", None),
                "not json\n".to_string(),
                line(5, "a", "bash", Some("allow")),
            ]
            .concat(),
        )
        .unwrap();
        let log = AuditLog::new(&path);
        let numbers =
            |query: AuditQuery| -> Vec<u64> { log.query(&query).iter().map(|e| e["n"].as_u64().unwrap()).collect() };
        assert_eq!(numbers(AuditQuery::last(10)), [1, 2, 3, 4, 5]);
        assert_eq!(numbers(AuditQuery::last(2)), [4, 5]);
        assert_eq!(numbers(AuditQuery::last(10).session("a").tool("bash")), [1, 4, 5]);
        assert_eq!(numbers(AuditQuery::last(10).effect("allow")), [1, 3, 5]);
        assert_eq!(numbers(AuditQuery::last(1).effect("deny")), [2]);
        assert_eq!(numbers(AuditQuery::last(10).session("c")), Vec::<u64>::new());
        assert_eq!(log.tail(3).len(), 3);
    }
}
