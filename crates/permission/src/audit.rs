//! The audit log: one JSON line per permission decision and per settled call.
//!
//! `<data>/audit.jsonl`, rotated by [`Retention`] (60 MiB over 6 files, 90 days, by
//! default). Each decision records who asked (session, agent, tool, call), what (action,
//! resources, bounded), the effect, its source (a rule with its layer and file, a saved
//! approval, a person's reply and the front end it came through, `--auto`, a hook,
//! exec-time enforcement) and, with a shadow policy, what that one would have decided.
//! Every record carries `seq` and the SHA-256 of the line before it (`prev`), across
//! rotations and processes, so [`verify_audit`] finds a line changed, removed or put in.
//! Writing is best effort: a full disk must not stop the tools.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;

use crate::rules::{Effect, Origin, Rule};

mod verify;
mod writer;

pub use verify::{Broken, Verified, verify_audit};
use writer::Job;

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

/// How much history the log keeps: at most `max_bytes` in all, over `files` files (the
/// log and its rotated copies `<log>.1` … `<log>.<files-1>`, each rotated at
/// `max_bytes / files`), and no rotated file older than `max_age`. A record is bounded
/// too (a long resource or error is kept as an excerpt with its length and hash), so a
/// model's own calls cannot push the history out with a few large inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Retention {
    /// The most bytes kept over every file.
    pub max_bytes: u64,
    /// How many files: the log and its rotated copies (at least 2).
    pub files: usize,
    /// Rotated files older than this are removed at the next rotation.
    pub max_age: Option<Duration>,
}

impl Default for Retention {
    /// 60 MiB over 6 files (10 MiB each), 90 days.
    fn default() -> Self {
        Retention {
            max_bytes: 60 * 1024 * 1024,
            files: 6,
            max_age: Some(Duration::from_secs(90 * 24 * 60 * 60)),
        }
    }
}

impl Retention {
    /// `max_bytes` over `files` files (at least 2), none older than `max_age`.
    pub fn new(max_bytes: u64, files: usize, max_age: Option<Duration>) -> Retention {
        Retention {
            max_bytes,
            files: files.max(2),
            max_age,
        }
    }

    /// The size at which the log is rotated.
    pub fn file_bytes(&self) -> u64 {
        (self.max_bytes / self.files.max(2) as u64).max(16 * 1024)
    }
}

/// Who or what decided: every decision record names its source (`toolgate audit why`
/// prints them). A rule's own details (pattern, effect, layer, file) are in the record's
/// `rule`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecisionSource {
    /// A configured rule (or the built-in defaults, `rule.origin` says which layer).
    Rule,
    /// A rule set on the session.
    SessionRule,
    /// A saved "always" approval: its id and when it was saved (ms since the epoch).
    Approval {
        /// The approval's id (`per_…`).
        id: String,
        /// When it was saved.
        saved_at: Option<i64>,
    },
    /// An approval a person gave for the rest of the session.
    SessionApproval,
    /// A person's reply to an ask: the front end it came through (`terminal`, `http`,
    /// `mcp`, `page`) and who answered, when known.
    Reply {
        /// The front end.
        front_end: String,
        /// The person, when the front end knows who answered.
        person: Option<String>,
    },
    /// `--auto` answered the ask.
    Auto,
    /// No one could answer: the ask was declined.
    Headless,
    /// Another agent's hook asked (`toolgate hook …`); that agent's own prompt answers.
    Hook,
    /// Exec-time enforcement: a program the command started was refused at `execve`.
    Exec,
}

impl DecisionSource {
    fn kind(&self) -> &'static str {
        match self {
            DecisionSource::Rule => "rule",
            DecisionSource::SessionRule => "session_rule",
            DecisionSource::Approval { .. } => "approval",
            DecisionSource::SessionApproval => "session_approval",
            DecisionSource::Reply { .. } => "reply",
            DecisionSource::Auto => "auto",
            DecisionSource::Headless => "headless",
            DecisionSource::Hook => "hook",
            DecisionSource::Exec => "exec",
        }
    }
}

impl Serialize for DecisionSource {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("kind", self.kind())?;
        match self {
            DecisionSource::Approval { id, saved_at } => {
                map.serialize_entry("id", id)?;
                if let Some(ms) = saved_at {
                    map.serialize_entry("saved_at", &rfc3339(*ms))?;
                }
            }
            DecisionSource::Reply { front_end, person } => {
                map.serialize_entry("front_end", front_end)?;
                if let Some(person) = person {
                    map.serialize_entry("person", person)?;
                }
            }
            _ => {}
        }
        map.end()
    }
}

/// What another policy would have decided (`--shadow-config`): recorded next to the real
/// decision, which it never changes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Shadow {
    /// The shadow policy's effect.
    pub effect: Effect,
    /// Its deciding rule, when one did.
    pub rule: Option<Rule>,
    /// The file the shadow policy was read from.
    pub config: String,
}

/// One decision as [`AuditLog::record`] writes it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct DecisionRecord<'a> {
    /// The action asserted.
    pub action: &'a str,
    /// Its resources (bounded when written).
    pub resources: &'a [String],
    /// The effect.
    pub effect: Effect,
    /// The deciding rule, when one did.
    pub rule: Option<&'a Rule>,
    /// How an ask was answered (`once`, `always`, `session`, `reject`, `auto`, …).
    pub reply: Option<&'a str>,
    /// Who or what decided.
    pub source: DecisionSource,
    /// Allowed by a rule whose effect is `audit`: allowed, and flagged for review.
    pub flagged: bool,
    /// What the shadow policy would have decided, when one is set.
    pub shadow: Option<Shadow>,
}

impl<'a> DecisionRecord<'a> {
    /// A decision of `effect` on `action` over `resources` by `source`; no rule, reply,
    /// flag or shadow yet.
    pub fn new(action: &'a str, resources: &'a [String], effect: Effect, source: DecisionSource) -> Self {
        DecisionRecord {
            action,
            resources,
            effect,
            rule: None,
            reply: None,
            source,
            flagged: false,
            shadow: None,
        }
    }

    /// The same record, decided by `rule` (flagged when the rule's effect is `audit`).
    pub fn rule(mut self, rule: Option<&'a Rule>) -> Self {
        self.flagged = rule.is_some_and(|rule| rule.flag);
        self.rule = rule;
        self
    }

    /// The same record, with how the ask was answered.
    pub fn reply(mut self, reply: Option<&'a str>) -> Self {
        self.reply = reply;
        self
    }

    /// The same record, with what the shadow policy would have decided.
    pub fn shadow(mut self, shadow: Option<Shadow>) -> Self {
        self.shadow = shadow;
        self
    }
}

/// The append-only audit log: one JSON line per permission decision and per settled
/// call, each chained to the one before by its hash (`seq`, `prev`; see
/// [`verify`](crate::verify_audit)), written by one thread per log so a caller only
/// queues its record, and rotated by [`Retention`]. Writing is best effort: a full disk
/// must not stop the tools, but records that could not be written are counted
/// ([`AuditLog::failed`]).
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    queue: Option<SyncSender<Job>>,
    writer: Option<std::thread::JoinHandle<()>>,
    failed: Arc<AtomicU64>,
    calls: Mutex<HashMap<String, String>>,
}

/// How long dropping the log waits for its writer to write what is queued: a stuck disk
/// must not keep a finished command from exiting.
const DROP_WAIT: Duration = Duration::from_secs(5);

impl Drop for AuditLog {
    /// Every queued record is written before the log goes away, unless the writer is
    /// stuck for longer than 5 s (then the process does not wait for it).
    fn drop(&mut self) {
        let Some(queue) = self.queue.take() else {
            return;
        };
        let deadline = std::time::Instant::now() + DROP_WAIT;
        let (done, written) = std::sync::mpsc::sync_channel(1);
        let mut job = Job::Flush(done);
        loop {
            match queue.try_send(job) {
                Ok(()) => {
                    let _ = written.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()));
                    break;
                }
                Err(std::sync::mpsc::TrySendError::Full(again)) if std::time::Instant::now() < deadline => {
                    job = again;
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(_) => break,
            }
        }
        drop(queue);
        // The writer ends once it sees the queue closed; it is joined only when it has.
        if let Some(writer) = self.writer.take()
            && writer.is_finished()
        {
            let _ = writer.join();
        }
    }
}

/// A rule as a decision entry names it: its pattern, effect, layer and file.
#[derive(Serialize)]
struct RuleEntry<'a> {
    action: &'a str,
    resource: &'a str,
    effect: &'static str,
    origin: Origin,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
}

impl<'a> RuleEntry<'a> {
    fn of(rule: &'a Rule) -> RuleEntry<'a> {
        RuleEntry {
            action: &rule.action,
            resource: &rule.resource,
            effect: if rule.flag { "audit" } else { rule.effect.as_str() },
            origin: rule.origin,
            // A saved approval's `source` is its id, named by the record's source.
            file: rule.source.as_deref().filter(|_| rule.origin != Origin::SavedApproval),
        }
    }
}

/// What the shadow policy would have decided, as a record names it.
#[derive(Serialize)]
struct ShadowEntry<'a> {
    effect: Effect,
    rule: Option<RuleEntry<'a>>,
    config: &'a str,
    /// Whether it differs from the real decision.
    differs: bool,
}

/// The longest text a record keeps of one resource or error; past it, an excerpt with
/// the full length and hash.
pub const MAX_FIELD_BYTES: usize = 1024;

/// The most bytes of resources one record keeps; past it, a count and the hash of the
/// rest.
pub const MAX_RESOURCE_BYTES: usize = 8 * 1024;

/// `text`, or an excerpt of it with its length and hash when it is longer than
/// [`MAX_FIELD_BYTES`].
fn bounded(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_FIELD_BYTES {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut cut = MAX_FIELD_BYTES / 2;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    std::borrow::Cow::Owned(format!(
        "{}… [{} bytes, sha256:{}]",
        &text[..cut],
        text.len(),
        writer::sha256_hex(text.as_bytes())
    ))
}

/// The resources as a record keeps them: each bounded, and at most
/// [`MAX_RESOURCE_BYTES`] in all, the rest counted and hashed.
fn bounded_resources(resources: &[String]) -> Vec<std::borrow::Cow<'_, str>> {
    let mut kept = Vec::with_capacity(resources.len().min(64));
    let mut used = 0;
    for (index, resource) in resources.iter().enumerate() {
        let one = bounded(resource);
        if used + one.len() > MAX_RESOURCE_BYTES {
            let rest = &resources[index..];
            let mut hasher = Vec::new();
            for resource in rest {
                hasher.extend_from_slice(resource.as_bytes());
                hasher.push(0);
            }
            kept.push(std::borrow::Cow::Owned(format!(
                "… [{} more resources, sha256:{}]",
                rest.len(),
                writer::sha256_hex(&hasher)
            )));
            break;
        }
        used += one.len();
        kept.push(one);
    }
    kept
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
    resources: Vec<std::borrow::Cow<'a, str>>,
    effect: Effect,
    rule: Option<RuleEntry<'a>>,
    reply: Option<&'a str>,
    source: &'a DecisionSource,
    /// Only when a rule whose effect is `audit` allowed it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    flagged: bool,
    /// Only with `--shadow-config`.
    #[serde(skip_serializing_if = "Option::is_none")]
    shadow: Option<ShadowEntry<'a>>,
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
    error: Option<std::borrow::Cow<'a, str>>,
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
    /// A log at `path` (created on first write), kept by the default [`Retention`].
    pub fn new(path: impl AsRef<Path>) -> AuditLog {
        AuditLog::with_retention(path, Retention::default())
    }

    /// A log at `path` kept by `retention`.
    pub fn with_retention(path: impl AsRef<Path>, retention: Retention) -> AuditLog {
        let path = path.as_ref().to_path_buf();
        let failed = Arc::new(AtomicU64::new(0));
        let (queue, jobs) = std::sync::mpsc::sync_channel(writer::QUEUE);
        let writer = {
            let path = path.clone();
            let failed = Arc::clone(&failed);
            std::thread::Builder::new()
                .name("toolgate-audit".into())
                .spawn(move || writer::run(path, retention, jobs, failed))
                .ok()
        };
        AuditLog {
            path,
            // Without its thread the log cannot write: every record counts as failed.
            queue: writer.as_ref().map(|_| queue),
            writer,
            failed,
            calls: Mutex::new(HashMap::new()),
        }
    }

    /// The log file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many records could not be written (a full disk, a removed directory).
    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }

    /// Waits until every record queued so far is written.
    pub fn flush(&self) {
        let Some(queue) = &self.queue else {
            return;
        };
        let (done, written) = std::sync::mpsc::sync_channel(1);
        if queue.send(Job::Flush(done)).is_ok() {
            let _ = written.recv();
        }
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

    /// Records one decision, its source guessed from the rule and the reply (`auto`,
    /// `headless`, `agent` for a hook's own prompt, else a reply through an unnamed front
    /// end). [`AuditLog::record`] names the source exactly.
    pub fn decision(
        &self,
        caller: &Caller<'_>,
        action: &str,
        resources: &[String],
        effect: Effect,
        rule: Option<&Rule>,
        reply: Option<&str>,
    ) {
        let source = match (reply, rule) {
            (Some("auto"), _) => DecisionSource::Auto,
            (Some("headless" | "auto-declined"), _) => DecisionSource::Headless,
            (Some("agent"), _) => DecisionSource::Hook,
            (Some(_), _) => DecisionSource::Reply {
                front_end: "api".into(),
                person: None,
            },
            (None, Some(rule)) if rule.origin == Origin::Session => DecisionSource::SessionRule,
            (None, _) => DecisionSource::Rule,
        };
        let source = if caller.via.is_some() {
            DecisionSource::Hook
        } else {
            source
        };
        self.record(
            caller,
            &DecisionRecord::new(action, resources, effect, source)
                .rule(rule)
                .reply(reply),
        );
    }

    /// Records one decision with its source.
    pub fn record(&self, caller: &Caller<'_>, record: &DecisionRecord<'_>) {
        let tool = self.tool_of(caller.call);
        let time = rfc3339(now_ms());
        let shadow = record.shadow.as_ref().map(|shadow| ShadowEntry {
            effect: shadow.effect,
            rule: shadow.rule.as_ref().map(RuleEntry::of),
            config: &shadow.config,
            differs: shadow.effect != record.effect,
        });
        self.append(&DecisionEntry {
            time: &time,
            kind: "decision",
            session: caller.session,
            agent: caller.agent,
            tool: tool.as_deref(),
            call: caller.call,
            action: record.action,
            resources: bounded_resources(record.resources),
            effect: record.effect,
            rule: record.rule.map(RuleEntry::of),
            reply: record.reply,
            source: &record.source,
            flagged: record.flagged,
            shadow,
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
            error: error.map(bounded),
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

    /// Serialises `entry` here and queues it for the writer, which chains and writes it.
    fn append(&self, entry: &impl Serialize) {
        let mut line = Vec::with_capacity(256);
        if serde_json::to_writer(&mut line, entry).is_err() {
            return;
        }
        let queued = self
            .queue
            .as_ref()
            .is_some_and(|queue| queue.send(Job::Line(line)).is_ok());
        if !queued {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The last `count` entries, oldest first (reading the rotated file too when needed).
    pub fn tail(&self, count: usize) -> Vec<Value> {
        self.query(&AuditQuery::last(count))
    }

    /// The last `query.limit` entries that match `query`, oldest first, from this file and
    /// the rotated ones (each read only when the newer ones have fewer matches). `toolgate audit tail`
    /// and the server's `GET /audit` both read the log through this.
    pub fn query(&self, query: &AuditQuery) -> Vec<Value> {
        // What this process queued is read back too.
        self.flush();
        let mut found: Vec<Value> = Vec::new();
        let files = std::iter::once(self.path.clone()).chain((1..).map(|n| writer::rotated(&self.path, n)));
        for path in files.take_while(|path| path.exists()) {
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
    /// The tool call, exactly.
    pub call: Option<String>,
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

    /// Only entries of the tool call `call`.
    pub fn call(mut self, call: impl Into<String>) -> AuditQuery {
        self.call = Some(call.into());
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
        field("session", &self.session)
            && field("tool", &self.tool)
            && field("effect", &self.effect)
            && field("call", &self.call)
    }
}

#[cfg(test)]
fn rotated(path: &Path) -> PathBuf {
    writer::rotated(path, 1)
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
