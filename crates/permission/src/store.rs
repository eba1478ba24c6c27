//! Saved "always" approvals (spec §4.7): the store trait the service reads and writes,
//! and the in-memory store. The SQLite store ([`crate::SqliteStore`], feature `sqlite`)
//! shares approvals between every process using one database file.

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// A store problem: where (a database file, a service) and what went wrong.
#[derive(Debug, thiserror::Error)]
#[error("permission database {location}: {source}")]
pub struct StoreError {
    /// The store it concerns (the database file for SQLite).
    pub location: String,
    /// What went wrong.
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

impl StoreError {
    /// A failure of the store at `location`.
    pub fn new(location: impl Into<String>, source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        StoreError {
            location: location.into(),
            source: source.into(),
        }
    }
}

/// One saved approval.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Approval {
    /// Its id (`per_…`).
    pub id: String,
    /// The project it applies to.
    pub project_id: String,
    /// The action.
    pub action: String,
    /// The resource pattern.
    pub resource: String,
    /// When it was saved (milliseconds since the epoch).
    pub time_created: i64,
}

/// Where "always" answers are kept, per project.
///
/// [`crate::PermissionService`] never calls a store while it holds its own lock: a slow
/// or blocked store delays the ask or reply that needs it, not every other session. The
/// service keeps the approvals it has seen in memory and reloads them ([`list`]) only
/// when an ask could be turned into allow and [`version`] says they may have changed.
///
/// [`list`]: ApprovalStore::list
/// [`version`]: ApprovalStore::version
pub trait ApprovalStore: Send + Sync + std::fmt::Debug {
    /// The approvals of `project_id`, oldest first.
    fn list(&self, project_id: &str) -> Result<Vec<Approval>, StoreError>;

    /// Saves `action` on each of `resources` for `project_id`; existing ones are kept as
    /// they are. Returns how many were new.
    fn add(&self, project_id: &str, action: &str, resources: &[String]) -> Result<usize, StoreError>;

    /// Removes the approval `id` of `project_id`; returns whether it existed there. An id
    /// of another project is left alone.
    fn remove(&self, project_id: &str, id: &str) -> Result<bool, StoreError>;

    /// Removes every approval of `project_id`; returns how many.
    fn clear(&self, project_id: &str) -> Result<usize, StoreError>;

    /// A cheap token that changes whenever the approvals may have changed, by this
    /// process or another; `None` when the store cannot tell (the service then reloads
    /// before every ask that an approval could answer).
    fn version(&self) -> Result<Option<u64>, StoreError> {
        Ok(None)
    }

    /// Records a call with identity `call_key` in `message_id` of `session_id` and
    /// returns the length of the session's streak of identical calls in that message,
    /// this one included — for stores shared by processes that each make one call
    /// (doom_loop, spec §4.11). `None` (the default) leaves the streaks to the process.
    fn record_call(
        &self,
        project_id: &str,
        session_id: &str,
        message_id: &str,
        call_key: &str,
    ) -> Result<Option<usize>, StoreError> {
        let _ = (project_id, session_id, message_id, call_key);
        Ok(None)
    }
}

/// Approvals kept in this process only: nothing survives it. The store when no database
/// is wanted, or when the crate is built without the `sqlite` feature.
///
/// ```
/// use toolgate_permission::{ApprovalStore, MemoryStore};
/// let store = MemoryStore::new();
/// assert_eq!(store.add("/project", "bash", &["git log *".to_string()]).unwrap(), 1);
/// assert_eq!(store.list("/project").unwrap()[0].resource, "git log *");
/// assert!(store.list("/elsewhere").unwrap().is_empty());
/// ```
#[derive(Debug, Default)]
pub struct MemoryStore {
    approvals: Mutex<Vec<Approval>>,
    /// Bumped by every change, so [`ApprovalStore::version`] can tell.
    writes: AtomicU64,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    fn approvals(&self) -> std::sync::MutexGuard<'_, Vec<Approval>> {
        // Every change is a single push or retain: a poisoned lock still holds a valid list.
        self.approvals.lock().unwrap_or_else(|poison| poison.into_inner())
    }
}

impl ApprovalStore for MemoryStore {
    fn list(&self, project_id: &str) -> Result<Vec<Approval>, StoreError> {
        Ok(self
            .approvals()
            .iter()
            .filter(|approval| approval.project_id == project_id)
            .cloned()
            .collect())
    }

    fn add(&self, project_id: &str, action: &str, resources: &[String]) -> Result<usize, StoreError> {
        let mut approvals = self.approvals();
        let mut added = 0;
        for resource in resources {
            let known = approvals
                .iter()
                .any(|a| a.project_id == project_id && a.action == action && &a.resource == resource);
            if !known {
                approvals.push(Approval {
                    id: toolgate_core::ascending_id("per"),
                    project_id: project_id.to_string(),
                    action: action.to_string(),
                    resource: resource.clone(),
                    time_created: now_ms(),
                });
                added += 1;
            }
        }
        if added > 0 {
            self.writes.fetch_add(1, Ordering::SeqCst);
        }
        Ok(added)
    }

    fn remove(&self, project_id: &str, id: &str) -> Result<bool, StoreError> {
        let mut approvals = self.approvals();
        let before = approvals.len();
        approvals.retain(|a| !(a.id == id && a.project_id == project_id));
        let removed = approvals.len() != before;
        if removed {
            self.writes.fetch_add(1, Ordering::SeqCst);
        }
        Ok(removed)
    }

    fn clear(&self, project_id: &str) -> Result<usize, StoreError> {
        let mut approvals = self.approvals();
        let before = approvals.len();
        approvals.retain(|a| a.project_id != project_id);
        let removed = before - approvals.len();
        if removed > 0 {
            self.writes.fetch_add(1, Ordering::SeqCst);
        }
        Ok(removed)
    }

    fn version(&self) -> Result<Option<u64>, StoreError> {
        Ok(Some(self.writes.load(Ordering::SeqCst)))
    }
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_millis() as i64)
        .unwrap_or(0)
}

/// The project identity of `dir`: the canonical git work tree root containing it, else
/// its own canonical path.
pub fn project_id(dir: &Path) -> String {
    let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let root = canonical
        .ancestors()
        .find(|ancestor| ancestor.join(".git").exists())
        .unwrap_or(&canonical);
    root.to_string_lossy().replace('\\', "/")
}
