//! The terminal commands that answer a running `toolgate serve`: `pending`, `approve`,
//! `reject` and `shells`.
//!
//! `serve` writes a runtime file for its project (`<data>/run/<project>.json`, the user's
//! alone) naming its address and its local socket; the commands read it and talk to the
//! server through that socket, which only the same user can open (see
//! `toolgate_server::local`). The token is never written there: whoever can open the
//! socket is already the user the server runs as.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::config::Dirs;
use crate::{Failure, Project};

/// What a running `serve` says about itself in its runtime file.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Runtime {
    /// The server's process id.
    pub(crate) pid: u32,
    /// `http://ADDR:PORT`.
    pub(crate) address: String,
    /// The local socket.
    pub(crate) socket: PathBuf,
    /// The project directory it serves.
    pub(crate) dir: PathBuf,
}

/// A stable short name for a project id (its worktree's path): FNV-1a, 64 bits, in hex.
/// Stable across builds, unlike the standard hasher, so a newer CLI finds an older server.
fn key(project_id: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in project_id.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

fn run_dir(data: &Path) -> PathBuf {
    data.join("run")
}

/// The runtime file and socket paths of the project in `dir`.
pub(crate) fn paths(data: &Path, dir: &Path) -> (PathBuf, PathBuf) {
    let key = key(&toolgate_permission::project_id(dir));
    let run = run_dir(data);
    (run.join(format!("{key}.json")), run.join(format!("{key}.sock")))
}

/// The runtime file of a running `serve`, removed when it is dropped (if it is still ours:
/// a later `serve` of the same project may have replaced it).
pub(crate) struct RuntimeFile {
    path: PathBuf,
    socket: PathBuf,
    pid: u32,
}

impl RuntimeFile {
    /// Writes the runtime file of the project in `dir` for a server at `address`; returns
    /// it and the socket path to serve on. The directory is made the user's alone.
    pub(crate) fn write(data: &Path, dir: &Path, address: &str) -> std::io::Result<RuntimeFile> {
        use std::io::Write;
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
        let (path, socket) = paths(data, dir);
        let run = run_dir(data);
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&run)?;
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700))?;
        let runtime = Runtime {
            pid: std::process::id(),
            address: address.to_string(),
            socket: socket.clone(),
            dir: dir.to_path_buf(),
        };
        let text = serde_json::to_string_pretty(&runtime).map_err(std::io::Error::other)?;
        // Written aside and renamed: a reader never sees half a file.
        let partial = run.join(format!(".{}.{}", std::process::id(), "partial"));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&partial)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&partial, &path)?;
        Ok(RuntimeFile {
            path,
            socket,
            pid: runtime.pid,
        })
    }

    /// Where the local socket goes.
    pub(crate) fn socket(&self) -> &Path {
        &self.socket
    }
}

impl Drop for RuntimeFile {
    fn drop(&mut self) {
        let ours = std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|text| serde_json::from_str::<Runtime>(&text).ok())
            .is_some_and(|runtime| runtime.pid == self.pid);
        if ours {
            let _ = std::fs::remove_file(&self.path);
            let _ = std::fs::remove_file(&self.socket);
        }
    }
}

/// The running server of `project`, or a failure saying how to start one.
fn find(project: &Project) -> Result<Runtime, Failure> {
    let (_, dir) = crate::setup::project_dir(project)?;
    let dirs = Dirs::discover();
    let (path, _) = paths(&dirs.data, &dir);
    let not_running = || {
        Failure::runtime(format!(
            "no running `toolgate serve` for {} (start one with `toolgate serve --dir {}`)",
            dir.display(),
            dir.display()
        ))
    };
    let text = std::fs::read_to_string(&path).map_err(|_| not_running())?;
    serde_json::from_str(&text)
        .map_err(|e| Failure::runtime(format!("{}: not a runtime file ({e}); remove it", path.display())))
}

/// One request to the project's server; the answer's JSON, or a failure in one line.
fn call(project: &Project, method: &str, path: &str, body: Option<&Value>) -> Result<Value, Failure> {
    let runtime = find(project)?;
    let threads = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::runtime(format!("could not start the runtime: {e}")))?;
    let answer = threads.block_on(toolgate_server::local::request(&runtime.socket, method, path, body));
    let (status, value) = answer.map_err(|error| match error {
        toolgate_server::local::LocalError::Io { .. } => Failure::runtime(format!(
            "`toolgate serve` (pid {}, {}) does not answer on {}: it stopped or is another version ({error})",
            runtime.pid,
            runtime.address,
            runtime.socket.display()
        )),
        other => Failure::runtime(other),
    })?;
    if (200..300).contains(&status) {
        return Ok(value);
    }
    let message = value
        .get("error")
        .and_then(Value::as_str)
        .map_or_else(|| value.to_string(), str::to_string);
    Err(Failure::runtime(message))
}

fn text(value: &Value, key: &str) -> String {
    value.get(key).and_then(Value::as_str).unwrap_or_default().to_string()
}

fn list(value: &Value, key: &str) -> Vec<String> {
    value
        .get(key)
        .and_then(Value::as_array)
        .map(|items| items.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// `toolgate pending`: the asks waiting for a person.
pub(crate) fn pending(project: &Project, as_json: bool) -> Result<(), Failure> {
    let asks = call(project, "GET", "/permission", None)?;
    if as_json {
        {
            outln!("{}", serde_json::to_string_pretty(&asks).map_err(Failure::runtime)?);
            return Ok(());
        }
    }
    let asks = asks.as_array().cloned().unwrap_or_default();
    if asks.is_empty() {
        {
            outln!("nothing is waiting for an answer");
            return Ok(());
        }
    }
    for ask in &asks {
        outln!(
            "{}  {}  {}  {}",
            text(ask, "id"),
            text(ask, "sessionID"),
            text(ask, "action"),
            list(ask, "resources").join("  ")
        );
        let save = list(ask, "save");
        if !save.is_empty() {
            outln!("    --always would save: {}", save.join(", "));
        }
    }
    outln!("answer with `toolgate approve ID [--always]` or `toolgate reject ID [--message M]`");
    Ok(())
}

/// `toolgate approve ID [--always]` and `toolgate reject ID [--message M]`.
pub(crate) fn answer(project: &Project, id: &str, reply: &str, message: Option<&str>) -> Result<(), Failure> {
    let mut body = json!({"reply": reply});
    if let Some(message) = message {
        body["message"] = json!(message);
    }
    let path = format!("/permission/{}/reply", percent(id));
    call(project, "POST", &path, Some(&body)).map_err(|failure| {
        if failure.message.starts_with("no pending permission request") {
            Failure::runtime(format!(
                "{}: answered already, or never asked (`toolgate pending` lists what waits)",
                failure.message
            ))
        } else {
            failure
        }
    })?;
    let done = match reply {
        "always" => "allowed, and saved",
        "once" => "allowed once",
        _ => "rejected",
    };
    outln!("{id}: {done}");
    Ok(())
}

/// `toolgate shells`: every session's background processes; `--output ID` prints one's
/// output, `--kill ID` ends it.
pub(crate) fn shells(
    project: &Project,
    as_json: bool,
    output: Option<&str>,
    kill: Option<&str>,
) -> Result<(), Failure> {
    if let Some(id) = kill {
        let killed = call(project, "POST", &format!("/shell/{}/kill", percent(id)), None)?;
        let running = killed.get("killed").and_then(Value::as_bool).unwrap_or(false);
        {
            outln!(
                "{id}: {}",
                if running {
                    "ending (TERM, KILL in 3 s)"
                } else {
                    "had ended already"
                }
            );
            return Ok(());
        }
    }
    if let Some(id) = output {
        let read = call(project, "GET", &format!("/shell/{}/output", percent(id)), None)?;
        if as_json {
            {
                outln!("{}", serde_json::to_string_pretty(&read).map_err(Failure::runtime)?);
                return Ok(());
            }
        }
        let body = text(&read, "text");
        {
            outln!("{}", body.trim_end_matches('\n'));
            return Ok(());
        }
    }
    let procs = call(project, "GET", "/shell", None)?;
    if as_json {
        {
            outln!("{}", serde_json::to_string_pretty(&procs).map_err(Failure::runtime)?);
            return Ok(());
        }
    }
    let procs = procs.as_array().cloned().unwrap_or_default();
    if procs.is_empty() {
        {
            outln!("no background processes");
            return Ok(());
        }
    }
    outln!(
        "{:<14} {:<20} {:>8} {:<10} {:>10}  COMMAND",
        "ID",
        "SESSION",
        "PID",
        "STATE",
        "BYTES"
    );
    for proc in &procs {
        let state = match proc.get("exit").and_then(Value::as_i64) {
            Some(code) => format!("exit {code}"),
            None => text(proc, "state"),
        };
        outln!(
            "{:<14} {:<20} {:>8} {:<10} {:>10}  {}",
            text(proc, "id"),
            text(proc, "sessionID"),
            proc.get("pid").and_then(Value::as_u64).unwrap_or_default(),
            state,
            proc.get("bytes").and_then(Value::as_u64).unwrap_or_default(),
            text(proc, "command").replace('\n', " ")
        );
    }
    Ok(())
}

/// `id` as one path segment: ids are `[A-Za-z0-9_]`, anything else is escaped.
fn percent(id: &str) -> String {
    id.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{key, percent};

    #[test]
    fn keys_are_stable_and_ids_stay_one_segment() {
        // FNV-1a's published test vector for the empty input.
        assert_eq!(key(""), "cbf29ce484222325");
        assert_ne!(key("/a"), key("/b"));
        assert_eq!(percent("per_0aZ"), "per_0aZ");
        assert_eq!(percent("../x y"), "%2E%2E%2Fx%20y");
    }
}
