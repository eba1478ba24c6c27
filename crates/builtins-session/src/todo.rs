//! `todowrite` (spec §8.2): the session's todo list, replaced whole in one transaction.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rusqlite::{Connection, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate_core::{Annotations, Content, Context, PermissionRequest, Permissions, Tool, ToolFailure};

/// Where a todo stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Not started.
    Pending,
    /// Being worked on (one at a time).
    InProgress,
    /// Done.
    Completed,
    /// No longer needed.
    Cancelled,
}

/// How much a todo matters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Do first.
    High,
    /// Normal.
    Medium,
    /// When there is time.
    Low,
}

/// One item of the list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Todo {
    /// What to do.
    pub content: String,
    /// Where it stands.
    pub status: Status,
    /// How much it matters.
    pub priority: Priority,
}

/// The input of `todowrite`: the whole new list.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct TodoInput {
    /// The complete, ordered list; it replaces the previous one.
    pub todos: Vec<Todo>,
}

/// The output of `todowrite`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct TodoOutput {
    /// The list as stored.
    pub todos: Vec<Todo>,
}

/// A todo store problem.
#[derive(Debug, thiserror::Error)]
#[error("todo database {path}: {source}")]
pub struct TodoError {
    /// The database file.
    pub path: PathBuf,
    /// The SQLite error.
    #[source]
    pub source: rusqlite::Error,
}

/// The todo lists of every session, in `toolgate.db`.
#[derive(Clone, Debug)]
pub struct TodoStore {
    path: PathBuf,
    /// Opened on first use: a process that never writes a todo never opens the database.
    connection: Arc<OnceLock<Mutex<Connection>>>,
}

impl TodoStore {
    /// Opens (creating as needed) the `todo` table in the database at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<TodoStore, TodoError> {
        let store = TodoStore::deferred(path);
        store.with(|_| Ok(()))?;
        Ok(store)
    }

    /// A store at `path` that opens the database on first use (and reports a failure to
    /// open then).
    pub fn deferred(path: impl AsRef<Path>) -> TodoStore {
        TodoStore {
            path: path.as_ref().to_path_buf(),
            connection: Arc::new(OnceLock::new()),
        }
    }

    fn connect(path: &Path) -> rusqlite::Result<Connection> {
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let connection = Connection::open(path)?;
        connection.busy_timeout(Duration::from_secs(5))?;
        connection.pragma_update(None, "journal_mode", "WAL")?;
        connection.execute_batch(
            "CREATE TABLE IF NOT EXISTS todo (
                session_id TEXT NOT NULL,
                position INTEGER NOT NULL,
                content TEXT NOT NULL,
                status TEXT NOT NULL,
                priority TEXT NOT NULL,
                PRIMARY KEY (session_id, position)
            );",
        )?;
        Ok(connection)
    }

    fn with<T>(&self, run: impl FnOnce(&mut Connection) -> rusqlite::Result<T>) -> Result<T, TodoError> {
        let fail = |source| TodoError {
            path: self.path.clone(),
            source,
        };
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

    /// Replaces the list of `session_id` with `todos`, in one transaction.
    pub fn replace(&self, session_id: &str, todos: &[Todo]) -> Result<(), TodoError> {
        self.with(|c| {
            let transaction = c.transaction()?;
            transaction.execute("DELETE FROM todo WHERE session_id = ?1", [session_id])?;
            {
                let mut insert = transaction.prepare_cached(
                    "INSERT INTO todo (session_id, position, content, status, priority) VALUES (?1, ?2, ?3, ?4, ?5)",
                )?;
                for (position, todo) in todos.iter().enumerate() {
                    insert.execute(params![
                        session_id,
                        position as i64,
                        todo.content,
                        enum_text(&todo.status),
                        enum_text(&todo.priority)
                    ])?;
                }
            }
            transaction.commit()
        })
    }

    /// The list of `session_id`, in order.
    pub fn list(&self, session_id: &str) -> Result<Vec<Todo>, TodoError> {
        self.with(|c| {
            let mut statement =
                c.prepare_cached("SELECT content, status, priority FROM todo WHERE session_id = ?1 ORDER BY position")?;
            let rows = statement.query_map([session_id], |row| {
                let status: String = row.get(1)?;
                let priority: String = row.get(2)?;
                Ok(Todo {
                    content: row.get(0)?,
                    status: serde_json::from_value(serde_json::Value::String(status)).unwrap_or(Status::Pending),
                    priority: serde_json::from_value(serde_json::Value::String(priority)).unwrap_or(Priority::Medium),
                })
            })?;
            rows.collect()
        })
    }
}

fn enum_text<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The tool's description.
pub(crate) const TODOWRITE_DESCRIPTION: &str = "Replace this session's todo list with `todos` (the whole list, in order). \
Use it to plan multi-step work and to show progress: keep exactly one item `in_progress`, mark items `completed` \
as soon as they are done. Status: pending, in_progress, completed, cancelled. Priority: high, medium, low.";

/// Builds `todowrite` over `store`, asking `permissions` (`todowrite` on `*`).
pub fn todowrite_tool(store: TodoStore, permissions: Arc<dyn Permissions>) -> Tool {
    let shared = Arc::new((store, permissions));
    Tool::builder(TODOWRITE_DESCRIPTION, move |input: TodoInput, ctx: Context| {
        let shared = Arc::clone(&shared);
        async move {
            let (store, permissions) = &*shared;
            let request = PermissionRequest::new("todowrite").resources(["*"]).save(["*"]);
            permissions.assert(&ctx, request).await?;
            store
                .replace(&ctx.session_id, &input.todos)
                .map_err(|_| ToolFailure::new("Unable to update todos"))?;
            Ok(TodoOutput { todos: input.todos })
        }
    })
    .project(|output: &TodoOutput| {
        vec![Content::text(
            serde_json::to_string_pretty(&output.todos).unwrap_or_default(),
        )]
    })
    .title("Write the todo list")
    .annotations(Annotations::additive().idempotent(true))
    .build()
}
