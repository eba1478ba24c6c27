//! The exec-time oracle: generated lines run through the real `toolgate call bash` with
//! exec-time enforcement on, under deny rules for the very programs they start, and the
//! kernel's own record says whether a denied program ever started.
//!
//! Per line, in a fresh copy of the fixture (`proj/` with `home/`, `outside/`, `tmp/`
//! beside it, as the analysis oracle lays it out):
//!
//! 1. **Observe.** The line runs with every bash command allowed, under
//!    `strace -ff -z -e trace=execve,execveat` of the whole toolgate process tree: every
//!    program the kernel really started (a successful `execve`), after the line's own
//!    shell. Each is identified by its file (device and inode), with the `#!`
//!    interpreters the kernel runs for a script and the program the dynamic loader is
//!    asked to run.
//! 2. **Deny.** Some of those programs (each with even odds, at least one) get deny rules,
//!    written the ways a person may write them: by name (`rm *`), by the path the line
//!    started it at, or by the path with every link resolved. Path rules are the ones the
//!    analysis cannot match (it sees `rm`, not `/usr/bin/rm`), so it lets the line run and
//!    the kernel has to stop the program. `--auto` approves whatever the analysis asks.
//!    The line runs again under strace; **no denied file may start**, by any path, as an
//!    interpreter or through the loader. A line the analysis refuses before it runs
//!    passes trivially and is counted.
//!
//! What this trusts: strace's record of successful `execve`s (the kernel's answer, not
//! toolgate's), and the file identity of what it names, resolved in the host's view
//! (the sandbox's mount namespace only hides files, it moves no programs). A relative
//! program path is resolved against the line's project directory; one that cannot be
//! found there is judged by its name. A copy of a program under another name is another
//! file (README "The bash tool"): the oracle only denies files it saw start.
//!
//! Lines alternate between `sandbox.mode: off` (the default, where the exec guard is the
//! only layer) and `workspace-write` where the kernel runs the sandbox.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::generate::Rng;
use super::{Case, OracleError, copy_tree, make_template, output, remove_tree};

/// A file as the kernel runs it.
pub type FileKey = (u64, u64);

/// One program the kernel started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Started {
    /// The path the `execve` named (joined to the project for a relative one).
    pub path: PathBuf,
    /// That path with every link resolved, when it could be found.
    pub resolved: Option<PathBuf>,
    /// The arguments.
    pub argv: Vec<String>,
    /// What really runs: the file itself, its `#!` interpreters, a program the loader
    /// is asked to run, each with where it was found.
    pub runs: Vec<(FileKey, PathBuf)>,
    /// Named through `/proc` or `/dev/fd` (`/dev/fd/3`, `/proc/self/exe`): what that was
    /// in the process that ran it cannot be told afterwards, so it is counted, not judged.
    pub unidentified: bool,
}

/// A program the deny run had rules for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denied {
    /// The file.
    pub file: FileKey,
    /// Where it was seen.
    pub path: PathBuf,
    /// The rules written for it.
    pub rules: Vec<String>,
}

/// What one line gave.
#[derive(Clone, Debug)]
pub struct ExecOutcome {
    /// The line.
    pub case: Case,
    /// Whether it ran with the sandbox on.
    pub sandboxed: bool,
    /// The programs it started with everything allowed.
    pub observed: Vec<Started>,
    /// The programs denied in the second run.
    pub denied: Vec<Denied>,
    /// Whether the second run got past the analysis (the line ran).
    pub ran: bool,
    /// How many refusals the second run's result reported ("toolgate refused to start").
    pub refusals: usize,
    /// Denied programs that started anyway: each one is a hole.
    pub violations: Vec<Started>,
    /// The second run's result (first 4 KiB).
    pub text: String,
    /// Why the line could not be checked.
    pub inconclusive: Option<String>,
}

/// How to run the exec oracle.
#[derive(Clone, Debug)]
pub struct ExecOptions {
    /// Parallel workers.
    pub workers: usize,
    /// The bash tool's timeout for one line.
    pub timeout: Duration,
    /// Whether the kernel sandbox is available (then every other line runs in it).
    pub sandbox: bool,
    /// Seed of the deny-rule choices.
    pub seed: u64,
}

/// The exec-time oracle.
pub struct ExecOracle {
    root: tempfile::TempDir,
    template: PathBuf,
    binary: PathBuf,
    options: ExecOptions,
    /// `PATH` of the lines (toolgate passes its own on).
    path: String,
}

/// How many lines of each run's result are kept.
const TEXT_BYTES: usize = 4096;

impl ExecOracle {
    /// Prepares the template; `binary` is the `toolgate` to run.
    pub fn new(binary: &Path, options: ExecOptions) -> Result<ExecOracle, OracleError> {
        if output("strace", &["-V"]).is_none() {
            return Err(OracleError(
                "the exec oracle needs strace (`.ci/run` installs it)".into(),
            ));
        }
        let root = tempfile::Builder::new()
            .prefix("toolgate-exec-oracle-")
            .tempdir()
            .map_err(|e| OracleError(format!("temp dir: {e}")))?;
        let base = std::fs::canonicalize(root.path()).map_err(|e| OracleError(format!("temp dir: {e}")))?;
        let template = base.join("template");
        make_template(&template)?;
        // One call now, so every line's copy finds the kernel probes' answers remembered
        // in its data directory instead of probing again.
        for sub in ["data", "config"] {
            std::fs::create_dir_all(template.join(sub)).map_err(|e| OracleError(format!("template: {e}")))?;
        }
        let warm = Command::new(binary)
            .args([
                "call",
                "bash",
                r#"{"command": "true"}"#,
                "--auto",
                "--sandbox",
                "workspace-write",
            ])
            .current_dir(template.join("proj"))
            .env("TOOLGATE_DATA_DIR", template.join("data"))
            .env("TOOLGATE_CONFIG_DIR", template.join("config"))
            .env("HOME", template.join("home"))
            .env("TMPDIR", template.join("tmp"))
            .stdin(Stdio::null())
            .output()
            .map_err(|e| OracleError(format!("{}: {e}", binary.display())))?;
        if !warm.status.success() {
            return Err(OracleError(format!(
                "toolgate call bash true failed: {}",
                String::from_utf8_lossy(&warm.stderr)
            )));
        }
        let _ = std::fs::remove_file(template.join("data/audit.jsonl"));
        Ok(ExecOracle {
            root,
            template,
            binary: binary.to_path_buf(),
            options,
            path: std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into()),
        })
    }

    /// Checks every case; outcomes in the same order.
    pub fn run(&self, cases: &[Case]) -> Vec<ExecOutcome> {
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<Option<ExecOutcome>>> = Mutex::new(vec![None; cases.len()]);
        std::thread::scope(|scope| {
            for _ in 0..self.options.workers.max(1) {
                scope.spawn(|| {
                    loop {
                        let at = next.fetch_add(1, Ordering::Relaxed);
                        let Some(case) = cases.get(at) else { break };
                        let outcome = self.check(at, case);
                        results.lock().unwrap_or_else(|e| e.into_inner())[at] = Some(outcome);
                    }
                });
            }
        });
        results
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .into_iter()
            .zip(cases)
            .map(|(outcome, case)| outcome.unwrap_or_else(|| inconclusive(case, false, "never run".into())))
            .collect()
    }

    /// Checks one case: observe, choose, deny.
    pub fn check(&self, index: usize, case: &Case) -> ExecOutcome {
        let sandboxed = self.options.sandbox && index % 2 == 1;
        let mut rng = Rng::new(self.options.seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let observed = match self.pass(index, "observe", case, sandboxed, &[]) {
            Ok(pass) => pass,
            Err(why) => return inconclusive(case, sandboxed, why),
        };
        let mut programs: BTreeMap<FileKey, &Started> = BTreeMap::new();
        for started in &observed.started {
            if let Some(((file, _), _)) = started.runs.first().map(|run| (run, ())) {
                programs.entry(*file).or_insert(started);
            }
        }
        let mut denied: Vec<Denied> = Vec::new();
        // A case tagged `deny-name:NAME` denies that program by name, and only it.
        let named: Vec<&str> = case
            .tags
            .iter()
            .filter_map(|tag| tag.strip_prefix("deny-name:"))
            .collect();
        for (file, started) in &programs {
            if !named.is_empty() {
                let name = started.path.file_name().map(|name| name.to_string_lossy().into_owned());
                if let Some(name) = name.filter(|name| named.contains(&name.as_str())) {
                    denied.push(Denied {
                        file: *file,
                        path: started.path.clone(),
                        rules: vec![format!("{name} *"), name],
                    });
                }
            } else if rng.chance(50) {
                denied.push(self.deny(*file, started, &mut rng));
            }
        }
        if !named.is_empty() {
            // Denied by name even when the first run did not start it.
            for name in &named {
                if !denied.iter().any(|d| d.rules.iter().any(|rule| rule == name)) {
                    let path = which(&self.path, name).unwrap_or_else(|| PathBuf::from(name));
                    if let Some(file) = key_of(&path) {
                        denied.push(Denied {
                            file,
                            path,
                            rules: vec![format!("{name} *"), name.to_string()],
                        });
                    }
                }
            }
        } else if denied.is_empty()
            && let Some((file, started)) = programs.iter().nth(rng.below(programs.len().max(1)))
        {
            denied.push(self.deny(*file, started, &mut rng));
        }
        // A program of the project (`./sub/ls`) was seen at the first run's copy of it: the
        // deny rule names the same file in the second run's copy.
        let (seen, run) = (format!("/{index}-observe/"), format!("/{index}-deny/"));
        let rules: Vec<String> = denied
            .iter()
            .flat_map(|d| d.rules.iter().map(|rule| rule.replace(&seen, &run)))
            .collect();
        let second = match self.pass(index, "deny", case, sandboxed, &rules) {
            Ok(pass) => pass,
            Err(why) => return inconclusive(case, sandboxed, why),
        };
        let files: BTreeSet<FileKey> = denied.iter().map(|d| d.file).collect();
        let violations = second
            .started
            .iter()
            .filter(|started| started.runs.iter().any(|(file, _)| files.contains(file)))
            .cloned()
            .collect();
        ExecOutcome {
            case: case.clone(),
            sandboxed,
            observed: observed.started,
            denied,
            ran: second.ran,
            refusals: second.text.matches("toolgate refused to start").count(),
            violations,
            text: second.text,
            inconclusive: None,
        }
    }

    /// The deny rules for one program: by name (when it is what its name resolves to in
    /// `PATH`), by the path it was started at, or by its resolved path.
    fn deny(&self, file: FileKey, started: &Started, rng: &mut Rng) -> Denied {
        let path = started.runs.first().map(|(_, path)| path.clone()).unwrap_or_default();
        let name = started
            .path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .filter(|name| which(&self.path, name).is_some_and(|found| key_of(&found) == Some(file)));
        let given = started.path.display().to_string();
        let resolved = path.display().to_string();
        let first = match (rng.below(10), &name) {
            (0..=2, Some(name)) => name.clone(),
            (3..=6, _) if started.path.is_absolute() => given,
            _ => resolved,
        };
        Denied {
            file,
            path,
            rules: vec![format!("{first} *"), first],
        }
    }

    /// Runs the line once through `toolgate call bash` under strace.
    fn pass(&self, index: usize, name: &str, case: &Case, sandboxed: bool, deny: &[String]) -> Result<Pass, String> {
        let base = std::fs::canonicalize(self.root.path()).map_err(|e| e.to_string())?;
        let dir = base.join(format!("{index}-{name}"));
        copy_tree(&self.template, &dir).map_err(|e| format!("copy: {e}"))?;
        let project = dir.join("proj");
        let mut rules = String::from("{\"*\": \"allow\"");
        for rule in deny {
            rules.push_str(&format!(", {}: \"deny\"", serde_json::Value::from(rule.as_str())));
        }
        rules.push('}');
        let mode = if sandboxed { "workspace-write" } else { "off" };
        let config = format!("{{\"permission\": {{\"bash\": {rules}}}, \"sandbox\": {{\"mode\": \"{mode}\"}}}}");
        std::fs::write(project.join("toolgate.json"), config).map_err(|e| format!("config: {e}"))?;
        let traces = dir.join("trace");
        std::fs::create_dir_all(&traces).map_err(|e| format!("trace dir: {e}"))?;
        let input = serde_json::json!({
            "command": case.line,
            "timeout": self.options.timeout.as_millis() as u64,
        })
        .to_string();
        let mut command = Command::new("strace");
        command
            .args(["-ff", "-z", "-qq", "-xx", "-s", "65535", "-y"])
            .args(["-e", "trace=execve,execveat", "-e", "signal=none", "-o"])
            .arg(traces.join("t"))
            .arg(&self.binary)
            .args(["call", "bash", &input, "--auto", "--json"])
            .current_dir(&project)
            .env("TOOLGATE_DATA_DIR", dir.join("data"))
            .env("TOOLGATE_CONFIG_DIR", dir.join("config"))
            .env("HOME", dir.join("home"))
            .env("TMPDIR", dir.join("tmp"))
            .env("PATH", &self.path)
            .env_remove("TOOLGATE_PERMISSION")
            .env_remove("BASH_ENV")
            .env_remove("ENV")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let limit = self.options.timeout + Duration::from_secs(20);
        let out = run_bounded(command, limit)?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let settled: serde_json::Value = serde_json::from_str(&stdout).unwrap_or(serde_json::Value::Null);
        let result = &settled["result"];
        let mut text = match (&result["value"], &result["error"]) {
            (serde_json::Value::String(text), _) => text.clone(),
            (_, serde_json::Value::String(error)) => error.clone(),
            _ => format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)),
        };
        // A call the analysis refused has no output structure: nothing ran.
        let ran = settled["output"]["structured"].is_object();
        let started = read_traces(&traces, &self.binary, &project)?;
        if text.len() > TEXT_BYTES {
            let mut cut = TEXT_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
        }
        let _ = remove_tree(&dir);
        Ok(Pass { started, ran, text })
    }
}

struct Pass {
    started: Vec<Started>,
    ran: bool,
    text: String,
}

fn inconclusive(case: &Case, sandboxed: bool, why: String) -> ExecOutcome {
    ExecOutcome {
        case: case.clone(),
        sandboxed,
        observed: Vec::new(),
        denied: Vec::new(),
        ran: false,
        refusals: 0,
        violations: Vec::new(),
        text: String::new(),
        inconclusive: Some(why),
    }
}

/// Runs `command`, killing it (it, not a group: strace ends its tracees) after `limit`.
fn run_bounded(mut command: Command, limit: Duration) -> Result<std::process::Output, String> {
    let mut child = command.spawn().map_err(|e| format!("strace: {e}"))?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("toolgate did not finish within {limit:?}"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(error) => return Err(format!("wait: {error}")),
        }
    }
    child.wait_with_output().map_err(|e| format!("output: {e}"))
}

/// The file a path names (links followed).
pub fn key_of(path: &Path) -> Option<FileKey> {
    std::fs::metadata(path).ok().map(|meta| (meta.dev(), meta.ino()))
}

/// Where `name` is found in `path` (an executable regular file), as `execvp` looks.
pub fn which(path: &str, name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path).map(|dir| dir.join(name)).find(|candidate| {
        std::fs::metadata(candidate).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    })
}

/// Every program started after the line's own shell, from one trace file per process.
fn read_traces(dir: &Path, binary: &Path, project: &Path) -> Result<Vec<Started>, String> {
    // The trampoline is toolgate's own small binary beside it when installed (the sandbox
    // prefers it), else `toolgate __sandbox-exec`.
    let trampoline = key_of(&binary.with_file_name("toolgate-sandbox-exec"));
    let binary = key_of(binary);
    let mut started = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("traces: {e}"))?
        .flatten()
        .map(|entry| entry.path())
        .collect();
    entries.sort();
    for file in entries {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let mut after_trampoline = false;
        for line in text.lines() {
            let Some(exec) = parse_exec(line) else { continue };
            let path = if exec.path.is_absolute() {
                exec.path.clone()
            } else {
                project.join(&exec.path)
            };
            // toolgate itself and its trampoline; then the line's shell, which the
            // trampoline becomes.
            let key = key_of(&path);
            if key.is_some() && key == trampoline {
                after_trampoline = true;
                continue;
            }
            if key.is_some_and(|key| Some(key) == binary) {
                after_trampoline = exec.argv.get(1).is_some_and(|arg| arg == "__sandbox-exec");
                continue;
            }
            if std::mem::take(&mut after_trampoline) {
                continue;
            }
            started.push(identify(&path, exec.argv));
        }
    }
    Ok(started)
}

/// A started program and everything the kernel runs for it.
fn identify(path: &Path, argv: Vec<String>) -> Started {
    if path.starts_with("/proc") || path.starts_with("/dev/fd") {
        return Started {
            path: path.to_path_buf(),
            resolved: None,
            argv,
            runs: Vec::new(),
            unidentified: true,
        };
    }
    let resolved = std::fs::canonicalize(path).ok();
    let mut runs = Vec::new();
    if let (Some(key), Some(resolved)) = (key_of(path), &resolved) {
        runs.push((key, resolved.clone()));
    }
    // `#!` interpreters, as deep as the kernel goes.
    let mut script = resolved.clone();
    for _ in 0..4 {
        let Some(line) = script.as_deref().and_then(shebang) else {
            break;
        };
        let interpreter = PathBuf::from(line);
        let found = std::fs::canonicalize(&interpreter).ok();
        if let (Some(key), Some(found)) = (key_of(&interpreter), &found) {
            runs.push((key, found.clone()));
        }
        script = found;
    }
    // The dynamic loader runs its first operand.
    let loader = resolved
        .as_deref()
        .and_then(Path::file_name)
        .is_some_and(|name| name.to_string_lossy().starts_with("ld-"));
    if loader
        && let Some(program) = argv.iter().skip(1).find(|arg| !arg.starts_with("--"))
        && let Ok(found) = std::fs::canonicalize(program)
        && let Some(key) = key_of(&found)
    {
        runs.push((key, found));
    }
    Started {
        path: path.to_path_buf(),
        resolved,
        argv,
        runs,
        unidentified: false,
    }
}

/// The interpreter of a `#!` script.
fn shebang(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let mut file = std::fs::File::open(path).ok()?;
    let read = file.read(&mut head).ok()?;
    let line = head[..read].strip_prefix(b"#!")?;
    let line = &line[..line.iter().position(|b| *b == b'\n').unwrap_or(line.len())];
    let text = String::from_utf8_lossy(line);
    text.split_whitespace().next().map(str::to_string)
}

/// One successful `execve`/`execveat` of an `strace -xx -y` line.
#[derive(Debug, PartialEq, Eq)]
struct Exec {
    path: PathBuf,
    argv: Vec<String>,
}

fn parse_exec(line: &str) -> Option<Exec> {
    if !line.trim_end().ends_with("= 0") {
        return None;
    }
    let (at, rest) = if let Some(rest) = line.strip_prefix("execve(") {
        (None, rest)
    } else if let Some(rest) = line.strip_prefix("execveat(") {
        // `N<path>, "rel", …` (AT_FDCWD prints as such).
        let (dirfd, rest) = rest.split_once(", ")?;
        let dir = dirfd.split_once('<').map(|(_, path)| path.trim_end_matches('>'));
        (Some(dir.map(unescape).unwrap_or_default()), rest)
    } else {
        return None;
    };
    let (path, rest) = quoted(rest)?;
    let path = match at {
        Some(dir) if path.is_empty() => PathBuf::from(dir),
        Some(dir) if !path.starts_with('/') && !dir.is_empty() => Path::new(&dir).join(&path),
        _ => PathBuf::from(path),
    };
    let mut argv = Vec::new();
    let mut rest = rest.trim_start_matches(", ").strip_prefix('[')?;
    while let Some((arg, after)) = quoted(rest) {
        argv.push(arg);
        rest = after.trim_start_matches(", ");
        if rest.starts_with(']') {
            break;
        }
    }
    Some(Exec { path, argv })
}

/// The leading `"…"` string of `text` and what follows it.
fn quoted(text: &str) -> Option<(String, &str)> {
    let body = text.strip_prefix('"')?;
    let bytes = body.as_bytes();
    let mut end = 0;
    while end < bytes.len() {
        match bytes[end] {
            b'\\' => end += 2,
            b'"' => break,
            _ => end += 1,
        }
    }
    let inner = body.get(..end)?;
    let after = body.get(end + 1..).unwrap_or_default();
    // strace marks a cut string with `...` after the quote.
    let after = after.strip_prefix("...").unwrap_or(after);
    Some((unescape(inner), after))
}

/// strace's escapes (`\xHH` with `-xx`, and the C ones).
fn unescape(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' || i + 1 >= bytes.len() {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        match bytes[i + 1] {
            b'x' if i + 3 < bytes.len() + 1 => {
                let hex = text.get(i + 2..i + 4).and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(byte) => {
                        out.push(byte);
                        i += 4;
                    }
                    None => {
                        out.push(b'x');
                        i += 2;
                    }
                }
            }
            b'n' => {
                out.push(b'\n');
                i += 2;
            }
            b't' => {
                out.push(b'\t');
                i += 2;
            }
            b'r' => {
                out.push(b'\r');
                i += 2;
            }
            b'v' => {
                out.push(0x0b);
                i += 2;
            }
            b'f' => {
                out.push(0x0c);
                i += 2;
            }
            digit @ b'0'..=b'7' => {
                let mut value = u32::from(digit - b'0');
                let mut j = i + 2;
                while j < bytes.len() && j < i + 4 && (b'0'..=b'7').contains(&bytes[j]) {
                    value = value * 8 + u32::from(bytes[j] - b'0');
                    j += 1;
                }
                out.push(value as u8);
                i = j;
            }
            other => {
                out.push(other);
                i += 2;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The figures of a run, one paragraph.
pub fn exec_summary(outcomes: &[ExecOutcome], seconds: f64) -> String {
    let lines = outcomes.len();
    let observed = outcomes.iter().filter(|o| !o.observed.is_empty()).count();
    let denied: usize = outcomes.iter().map(|o| o.denied.len()).sum();
    let programs: BTreeSet<&Path> = outcomes
        .iter()
        .flat_map(|o| o.denied.iter().map(|d| d.path.as_path()))
        .collect();
    let ran = outcomes.iter().filter(|o| o.ran).count();
    let refused: usize = outcomes.iter().map(|o| o.refusals).sum();
    let stopped = outcomes.iter().filter(|o| o.ran && o.refusals > 0).count();
    let sandboxed = outcomes.iter().filter(|o| o.sandboxed).count();
    let violations = outcomes.iter().filter(|o| !o.violations.is_empty()).count();
    let inconclusive = outcomes.iter().filter(|o| o.inconclusive.is_some()).count();
    let unidentified: usize = outcomes
        .iter()
        .map(|o| o.observed.iter().filter(|s| s.unidentified).count())
        .sum();
    format!(
        "{lines} lines ({sandboxed} in the sandbox) in {seconds:.1} s: {observed} started programs; {denied} deny \
         targets ({} distinct programs); {ran} ran past the analysis under their deny rules, {stopped} of them \
         stopped by the kernel ({refused} refusals); {violations} started a denied program; {inconclusive} \
         inconclusive; {unidentified} programs started through /proc or /dev/fd (not judged)",
        programs.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strace_lines_are_read_back() {
        let line =
            r#"execve("\x2f\x75\x73\x72\x2f\x62\x69\x6e\x2f\x72\x6d", ["\x72\x6d", "\x76"], 0x7ffd /* 3 vars */) = 0"#;
        assert_eq!(
            parse_exec(line),
            Some(Exec {
                path: PathBuf::from("/usr/bin/rm"),
                argv: vec!["rm".into(), "v".into()],
            })
        );
        let at = r#"execveat(3<\x2f\x75\x73\x72\x2f\x62\x69\x6e\x2f\x72\x6d>, "", ["\x72\x6d"], 0x7ffd /* 3 vars */, AT_EMPTY_PATH) = 0"#;
        assert_eq!(parse_exec(at).map(|e| e.path), Some(PathBuf::from("/usr/bin/rm")));
        let failed = r#"execve("\x2f\x78", ["\x78"], 0x7ffd /* 3 vars */) = -1 EPERM (Operation not permitted)"#;
        assert_eq!(parse_exec(failed), None);
        assert_eq!(unescape(r"a\nb\\c\101"), "a\nb\\cA");
    }
}
