//! Saved "always" approvals in SQLite (spec §4.7), shared by every process using the file.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use crate::store::{Approval, ApprovalStore, StoreError, now_ms};

/// Migrations, in order; the schema version is the number applied.
const MIGRATIONS: &[&str] = &["CREATE TABLE IF NOT EXISTS permission (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL,
        action TEXT NOT NULL,
        resource TEXT NOT NULL,
        time_created INTEGER NOT NULL,
        time_updated INTEGER NOT NULL
    );
    CREATE UNIQUE INDEX IF NOT EXISTS permission_project_action_resource_idx ON permission (project_id, action, resource);",
    // The current streak of identical calls of each session (doom_loop, spec §4.11).
    "CREATE TABLE IF NOT EXISTS doom_loop (
        project_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        call_key TEXT NOT NULL,
        count INTEGER NOT NULL,
        time_updated INTEGER NOT NULL,
        PRIMARY KEY (project_id, session_id)
    );"];

/// Streaks not extended for this long are forgotten.
const STREAK_TTL_MS: i64 = 24 * 60 * 60 * 1000;

/// The approvals table of `toolgate.db`: an [`ApprovalStore`] shared by every process
/// using the file (feature `sqlite`).
///
/// ```
/// use toolgate_permission::{ApprovalStore, SqliteStore};
/// let dir = tempfile::tempdir().unwrap();
/// let store = SqliteStore::open(dir.path().join("toolgate.db")).unwrap();
/// store.add("/project", "bash", &["git log *".to_string()]).unwrap();
/// // Another process (here: another connection) sees it.
/// let other = SqliteStore::open(dir.path().join("toolgate.db")).unwrap();
/// assert_eq!(other.list("/project").unwrap()[0].resource, "git log *");
/// ```
#[derive(Debug)]
pub struct SqliteStore {
    path: PathBuf,
    /// Opened on first use: a decision no saved approval can change never opens it.
    connection: OnceLock<Mutex<Connection>>,
    /// Commits made through this connection: SQLite's `data_version` only counts other
    /// connections' commits.
    writes: AtomicU64,
}

impl SqliteStore {
    /// Opens (creating and migrating as needed) the database at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let store = SqliteStore::deferred(path);
        store.with(|_| Ok(()))?;
        Ok(store)
    }

    /// A store at `path` that opens (creates, migrates) the database on first use, and
    /// reports a failure to open then.
    pub fn deferred(path: impl AsRef<Path>) -> Self {
        SqliteStore {
            path: path.as_ref().to_path_buf(),
            connection: OnceLock::new(),
            writes: AtomicU64::new(0),
        }
    }

    fn connect(path: &Path) -> rusqlite::Result<Connection> {
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let mut connection = Connection::open(path)?;
        connection.busy_timeout(Duration::from_secs(5))?;
        connection.pragma_update(None, "journal_mode", "WAL")?;
        connection.pragma_update(None, "synchronous", "NORMAL")?;
        let transaction = connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        transaction
            .execute_batch("CREATE TABLE IF NOT EXISTS permission_schema_version (version INTEGER NOT NULL);")?;
        let version: Option<i64> = transaction
            .query_row("SELECT version FROM permission_schema_version", [], |row| row.get(0))
            .optional()?;
        let version = version.unwrap_or(0).max(0) as usize;
        for migration in MIGRATIONS.iter().skip(version) {
            transaction.execute_batch(migration)?;
        }
        if version < MIGRATIONS.len() {
            transaction.execute("DELETE FROM permission_schema_version", [])?;
            transaction.execute(
                "INSERT INTO permission_schema_version (version) VALUES (?1)",
                [MIGRATIONS.len() as i64],
            )?;
        }
        transaction.commit()?;
        Ok(connection)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn with<T>(&self, run: impl FnOnce(&mut Connection) -> rusqlite::Result<T>) -> Result<T, StoreError> {
        let fail = |source: rusqlite::Error| StoreError::new(self.path.display().to_string(), source);
        let connection = match self.connection.get() {
            Some(connection) => connection,
            None => {
                // A failed open is not kept: the next use tries again.
                let opened = Self::connect(&self.path).map_err(fail)?;
                self.connection.get_or_init(|| Mutex::new(opened))
            }
        };
        let mut connection = connection.lock().unwrap_or_else(|poison| poison.into_inner());
        run(&mut connection).map_err(fail)
    }

    fn wrote(&self) {
        self.writes.fetch_add(1, Ordering::SeqCst);
    }

    /// SQLite's `data_version`: changes whenever another connection commits, so a cache
    /// can tell when to reload.
    fn data_version(&self) -> Result<i64, StoreError> {
        self.with(|c| c.query_row("PRAGMA data_version", [], |row| row.get(0)))
    }
}

impl ApprovalStore for SqliteStore {
    /// The approvals of `project_id`, oldest first.
    fn list(&self, project_id: &str) -> Result<Vec<Approval>, StoreError> {
        self.with(|c| {
            let mut statement = c.prepare_cached(
                "SELECT id, project_id, action, resource, time_created FROM permission WHERE project_id = ?1 ORDER BY id",
            )?;
            let rows = statement.query_map([project_id], |row| {
                Ok(Approval {
                    id: row.get(0)?,
                    project_id: row.get(1)?,
                    action: row.get(2)?,
                    resource: row.get(3)?,
                    time_created: row.get(4)?,
                })
            })?;
            rows.collect()
        })
    }

    /// Saves `action` on each of `resources` for `project_id`; existing ones are kept as
    /// they are. Returns how many rows were new.
    fn add(&self, project_id: &str, action: &str, resources: &[String]) -> Result<usize, StoreError> {
        if resources.is_empty() {
            return Ok(0);
        }
        self.with(|c| {
            let transaction = c.transaction()?;
            let mut added = 0;
            {
                let mut statement = transaction.prepare_cached(
                    "INSERT OR IGNORE INTO permission (id, project_id, action, resource, time_created, time_updated)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
                )?;
                for resource in resources {
                    let id = toolgate_core::ascending_id("per");
                    added += statement.execute(params![id, project_id, action, resource, now_ms()])?;
                }
            }
            transaction.commit()?;
            Ok(added)
        })
        .inspect(|_| self.wrote())
    }

    /// Records a call with identity `call_key` in `message_id` of `session_id` of
    /// `project_id`; returns how many identical calls in a row the session has made in
    /// that message, this one included.
    fn record_call(
        &self,
        project_id: &str,
        session_id: &str,
        message_id: &str,
        call_key: &str,
    ) -> Result<Option<usize>, StoreError> {
        self.with(|c| {
            let transaction = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let now = now_ms();
            let previous: Option<(String, String, i64)> = transaction
                .query_row(
                    "SELECT message_id, call_key, count FROM doom_loop
                     WHERE project_id = ?1 AND session_id = ?2 AND time_updated > ?3",
                    params![project_id, session_id, now - STREAK_TTL_MS],
                    |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
                )
                .optional()?;
            let count = match previous {
                Some((message, key, count)) if message == message_id && key == call_key => count.saturating_add(1),
                _ => {
                    // A new streak: a good moment to forget stale ones.
                    transaction.execute("DELETE FROM doom_loop WHERE time_updated <= ?1", [now - STREAK_TTL_MS])?;
                    1
                }
            };
            transaction.execute(
                "INSERT INTO doom_loop (project_id, session_id, message_id, call_key, count, time_updated)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (project_id, session_id)
                 DO UPDATE SET message_id = ?3, call_key = ?4, count = ?5, time_updated = ?6",
                params![project_id, session_id, message_id, call_key, count, now],
            )?;
            transaction.commit()?;
            Ok(Some(count.max(0) as usize))
        })
    }

    /// Removes the approval `id` of `project_id`; returns whether it existed there. An id
    /// of another project is left alone: one project's server or CLI must not touch
    /// another's approvals.
    fn remove(&self, project_id: &str, id: &str) -> Result<bool, StoreError> {
        self.with(|c| {
            c.execute(
                "DELETE FROM permission WHERE id = ?1 AND project_id = ?2",
                [id, project_id],
            )
            .map(|n| n > 0)
        })
        .inspect(|_| self.wrote())
    }

    /// Removes every approval of `project_id`; returns how many.
    fn clear(&self, project_id: &str) -> Result<usize, StoreError> {
        self.with(|c| c.execute("DELETE FROM permission WHERE project_id = ?1", [project_id]))
            .inspect(|_| self.wrote())
    }

    /// `data_version` (other connections' commits) and this connection's own commits.
    fn version(&self) -> Result<Option<u64>, StoreError> {
        let theirs = self.data_version()? as u64;
        Ok(Some(theirs.wrapping_shl(32) ^ self.writes.load(Ordering::SeqCst)))
    }
}
