//! The bash analysis oracle: tests that can find what nobody listed.
//!
//! Generate command lines ([`generate`]), run each in real `bash --norc --noprofile`
//! inside a throwaway sandbox ([`sandbox`]) while recording everything it does
//! ([`observe`]), and check that what ran never exceeds what the permission analysis
//! asked ([`soundness`], where the comparison is defined precisely).
//!
//! Per line, the host makes a fresh directory from a template — `proj/` (the fixture
//! project: `notes.txt`, `secrets/key`, `.env`, `a.env`, `sub/`, booby-trapped scripts,
//! a git repository), `home/` (`HOME`, with `.ssh/id_rsa`), `outside/` (a sibling with
//! secrets), `tmp/` (`TMPDIR`) — computes `plan()` for the line in `proj/` before anything
//! runs, hands the line to a worker, then turns the recordings into events and checks
//! them. Workers run in parallel (one per core by default).
//!
//! The recordings: `strace -f` of the whole sandbox (every `execve` with its arguments
//! and environment, every open/creat/rename/unlink/mkdir/link/symlink/chmod/truncate, with
//! directory descriptors and results decoded to paths), bash xtrace through
//! `BASH_XTRACEFD` (the expanded words of every simple command, so builtins too), a log
//! written by the stubs that replace `rm`, `curl`, `wget`, `nc`, `ssh`, `scp`, `rsync`,
//! `sudo`, `doas` (they record and do nothing), and `GIT_TRACE` (what git really ran
//! after aliases and global options). Everything else is the real program — `find -exec`,
//! `xargs`, `env`, `timeout`, `git` aliases, `python3`, `node` really run what they are
//! given — since the sandbox allows no write outside its directory and no network.
//!
//! Requirements: Linux with user namespaces, util-linux (`unshare`, `setpriv`), `strace`;
//! `.ci/run` installs strace when it is missing. Git, python3, node and perl are used
//! when installed.

pub mod builtins;
pub mod exec;
pub mod generate;
pub mod observe;
pub mod sandbox;
pub mod soundness;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use toolgate_core::{Location, PermissionRequest};
use toolgate_permission::{Effect, Ruleset};

use sandbox::{Harness, Links, Sandbox, Toolgate, Unshare, Worker};
use soundness::{Event, Sound, Unsound};

/// One line to check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// The command line.
    pub line: String,
    /// How it was made (generator tags, `table`, `corpus`).
    pub tags: Vec<String>,
}

impl Case {
    /// A case with tags.
    pub fn new(line: impl Into<String>, tags: &[&str]) -> Case {
        Case {
            line: line.into(),
            tags: tags.iter().map(|tag| tag.to_string()).collect(),
        }
    }
}

/// What checking a line gave.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Nothing ran beyond what the analysis asked.
    Sound(Sound),
    /// Something ran beyond it.
    Unsound(Unsound),
    /// The line could not be checked (the runner failed); never counted as sound.
    Inconclusive(String),
}

/// A checked line.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The line.
    pub case: Case,
    /// The verdict.
    pub verdict: Verdict,
    /// Everything it did, as the rules see it.
    pub events: Vec<Event>,
    /// What it printed (first 4 KiB).
    pub output: String,
    /// Whether the timeout ended it.
    pub timed_out: bool,
    /// Whether it ran (a line the analysis denies is not run unless asked for).
    pub ran: bool,
}

/// How to run.
#[derive(Clone)]
pub struct Options {
    /// Parallel workers.
    pub workers: usize,
    /// How long one line may run.
    pub timeout: Duration,
    /// The confinement.
    pub sandbox: Arc<dyn Sandbox>,
    /// Also run lines the analysis denies. They cannot be unsound (the tool refuses them,
    /// so nothing runs); running them only tells how much the analysis over-asks.
    pub run_denied: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            // Two per core: while one worker's line runs, the other's host side checks.
            workers: 2 * std::thread::available_parallelism().map_or(2, usize::from),
            timeout: Duration::from_secs(3),
            // toolgate's own sandbox where the kernel runs it, else util-linux's.
            sandbox: match built_toolgate().and_then(Toolgate::available) {
                Some(toolgate) => Arc::new(toolgate),
                None => Arc::new(Unshare),
            },
            run_denied: false,
        }
    }
}

/// The `toolgate` binary built next to this executable (tests in `target/<profile>/deps`,
/// examples in `target/<profile>/examples`), if it is there. Never builds it: an example
/// runs under `cargo run`, which holds the build lock a nested build would wait for.
fn built_toolgate() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let binary = exe.parent()?.parent()?.join("toolgate");
    binary.exists().then_some(binary)
}

/// Why the oracle could not run at all.
#[derive(Debug)]
pub struct OracleError(pub String);

impl std::fmt::Display for OracleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OracleError {}

/// What the analysis under test asks for a line in a project.
pub type Analysis = dyn Fn(&Location, &str) -> Vec<PermissionRequest> + Sync;

/// The analysis of toolgate: `toolgate_shell_analysis::plan` (what the bash tool asserts).
pub fn toolgate_analysis(location: &Location, line: &str) -> Vec<PermissionRequest> {
    // The shell runs with `HOME` next to the project (see `run_case`): the analysis must
    // know, or `~` would mean this process's home.
    let home = location
        .root()
        .parent()
        .map(|dir| dir.join("home").display().to_string());
    let shell_env = toolgate_shell_analysis::ShellEnv::inherited().with_home(home);
    match toolgate_shell_analysis::plan_with(location, line, None, None, &shell_env) {
        Ok(plan) => plan.requests,
        // The workdir is the project itself; a failure would refuse the call.
        Err(_) => vec![
            PermissionRequest::new("bash")
                .resources(["(plan failed)"])
                .unsaveable(["(plan failed)"]),
        ],
    }
}

/// The oracle: a sandbox root with a template, ready to check lines.
pub struct Oracle {
    root: tempfile::TempDir,
    template: PathBuf,
    options: Options,
    builtins: BTreeSet<String>,
    system: Vec<PathBuf>,
    git_exec_path: Option<PathBuf>,
    links: Links,
    rules: Ruleset,
    next_id: AtomicU64,
}

fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn error(what: &str) -> impl Fn(std::io::Error) -> OracleError + '_ {
    move |error| OracleError(format!("{what}: {error}"))
}

impl Oracle {
    /// Prepares the sandbox root and the template (fixture project, git repository).
    pub fn new(options: Options) -> Result<Oracle, OracleError> {
        for (program, args) in [
            ("strace", "-V"),
            ("unshare", "--version"),
            ("setpriv", "--version"),
            ("bash", "--version"),
        ] {
            if output(program, &[args]).is_none() {
                return Err(OracleError(format!(
                    "the oracle needs `{program}` (strace and util-linux; `.ci/run` installs strace)"
                )));
            }
        }
        // A memory file system when there is one: every line copies and removes a few
        // dozen files, which on a shared disk costs more than running the line.
        let shm = Path::new("/dev/shm");
        let builder = {
            let mut builder = tempfile::Builder::new();
            builder.prefix("toolgate-oracle-");
            builder
        };
        let root = match builder.tempdir_in(shm) {
            Ok(root) if shm.is_dir() => root,
            _ => builder.tempdir().map_err(error("sandbox root"))?,
        };
        let base = std::fs::canonicalize(root.path()).map_err(error("sandbox root"))?;
        let template = base.join("template");
        make_template(&template)?;
        let builtins: BTreeSet<String> = output("bash", &["--norc", "--noprofile", "-c", "compgen -b"])
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect();
        if !builtins.contains("eval") {
            return Err(OracleError("could not list bash's builtins".into()));
        }
        let mut system: Vec<PathBuf> = [
            "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/proc", "/sys", "/dev", "/run",
            "/var", "/opt", "/snap", "/nix",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        let mut links = Vec::new();
        if let Some(python) = output(
            "python3",
            &["-c", "import sys; print(sys.executable); print(sys.base_prefix)"],
        ) {
            let mut lines = python.lines();
            if let (Some(executable), Some(prefix)) = (lines.next(), lines.next()) {
                links.push(("python3".to_string(), PathBuf::from(executable)));
                links.push(("python".to_string(), PathBuf::from(executable)));
                system.push(PathBuf::from(prefix));
            }
        }
        let git_exec_path = output("git", &["--exec-path"]).map(PathBuf::from);
        Ok(Oracle {
            root,
            template,
            options,
            builtins,
            system,
            git_exec_path,
            links: Links { links },
            rules: soundness::issue_rules(),
            next_id: AtomicU64::new(1),
        })
    }

    /// The sandbox root (kept until the oracle is dropped).
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// Checks `cases` against toolgate's analysis; outcomes in the same order.
    pub fn run(&self, cases: &[Case]) -> Result<Vec<Outcome>, OracleError> {
        self.run_with(cases, &toolgate_analysis)
    }

    /// Checks `cases` against `analysis` (the oracle's own tests use a blind one).
    pub fn run_with(&self, cases: &[Case], analysis: &Analysis) -> Result<Vec<Outcome>, OracleError> {
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<Option<Outcome>>> = Mutex::new(vec![None; cases.len()]);
        let failure: Mutex<Option<OracleError>> = Mutex::new(None);
        let workers = self.options.workers.max(1).min(cases.len().max(1));
        let base = std::fs::canonicalize(self.root.path()).map_err(error("sandbox root"))?;
        std::thread::scope(|scope| {
            for index in 0..workers {
                let next = &next;
                let results = &results;
                let failure = &failure;
                let base = &base;
                scope.spawn(move || {
                    let harness = || Harness {
                        dir: base.join(format!("h{index}")),
                        lines: base.join(format!("w{index}")),
                    };
                    let start = || Worker::start(self.options.sandbox.as_ref(), base, harness(), &self.links);
                    let mut worker = match start() {
                        Ok(worker) => worker,
                        Err(error) => {
                            *failure.lock().unwrap_or_else(|e| e.into_inner()) =
                                Some(OracleError(format!("worker {index}: {error}")));
                            return;
                        }
                    };
                    let mut restarts = 0;
                    loop {
                        let at = next.fetch_add(1, Ordering::Relaxed);
                        let Some(case) = cases.get(at) else { break };
                        let outcome = self.check_one(&mut worker, case, analysis);
                        let broken = matches!(outcome.verdict, Verdict::Inconclusive(_));
                        results.lock().unwrap_or_else(|e| e.into_inner())[at] = Some(outcome);
                        if broken {
                            restarts += 1;
                            drop(worker);
                            match (restarts <= 5).then(start) {
                                Some(Ok(fresh)) => worker = fresh,
                                Some(Err(error)) => {
                                    *failure.lock().unwrap_or_else(|e| e.into_inner()) =
                                        Some(OracleError(format!("worker {index} restart: {error}")));
                                    return;
                                }
                                None => {
                                    *failure.lock().unwrap_or_else(|e| e.into_inner()) =
                                        Some(OracleError(format!("worker {index} kept failing")));
                                    return;
                                }
                            }
                        }
                    }
                });
            }
        });
        if let Some(error) = failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
            return Err(error);
        }
        Ok(results
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .into_iter()
            .zip(cases)
            .map(|(outcome, case)| {
                outcome.unwrap_or_else(|| Outcome {
                    case: case.clone(),
                    verdict: Verdict::Inconclusive("never run".into()),
                    events: Vec::new(),
                    output: String::new(),
                    timed_out: false,
                    ran: false,
                })
            })
            .collect())
    }

    fn check_one(&self, worker: &mut Worker, case: &Case, analysis: &Analysis) -> Outcome {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let dir = worker.harness().lines.join(id.to_string());
        let inconclusive = |why: String| Outcome {
            case: case.clone(),
            verdict: Verdict::Inconclusive(why),
            events: Vec::new(),
            output: String::new(),
            timed_out: false,
            ran: false,
        };
        if let Err(error) = copy_tree(&self.template, &dir).and_then(|()| std::fs::write(dir.join("line"), &case.line))
        {
            return inconclusive(format!("could not prepare {}: {error}", dir.display()));
        }
        let project = dir.join("proj");
        let requests = match Location::new(&project) {
            Ok(location) => analysis(&location, &case.line),
            Err(error) => return inconclusive(format!("project: {error}")),
        };
        if !self.options.run_denied && soundness::analysis_effect(&self.rules, None, &requests) == Effect::Deny {
            let _ = remove_tree(&dir);
            return Outcome {
                case: case.clone(),
                verdict: Verdict::Sound(Sound {
                    analysis: Effect::Deny,
                    ran: Effect::Allow,
                }),
                events: Vec::new(),
                output: "(not run: the analysis denies it)".into(),
                timed_out: false,
                ran: false,
            };
        }
        let ran = match worker.run(id, &dir, &case.line, self.options.timeout) {
            Ok(ran) => ran,
            Err(error) => {
                let _ = remove_tree(&dir);
                return inconclusive(error.0);
            }
        };
        let harness = worker.harness().dir.clone();
        let mut baseline: HashMap<String, String> = sandbox::base_env(&harness).into_iter().collect();
        baseline.insert("HOME".into(), dir.join("home").display().to_string());
        baseline.insert("TMPDIR".into(), dir.join("tmp").display().to_string());
        baseline.insert("BASH_XTRACEFD".into(), "9".into());
        let scene = observe::Scene {
            project: &project,
            line_dir: &dir,
            harness: &harness,
            system: &self.system,
            git_exec_path: self.git_exec_path.as_deref(),
            line: &case.line,
            builtins: &self.builtins,
            baseline: &baseline,
        };
        let mut events = Vec::new();
        observe::Tracer::new(&project).events(&ran.trace, ran.driver, &scene, &mut events);
        observe::builtin_events(&observe::xtrace_records(&ran.xtrace), &scene, &mut events);
        observe::stub_events(&ran.stubs, &mut events);
        observe::git_events(&ran.git, &mut events);
        // Where it was seen, without this run's pids and directories, so records compare.
        let dir_text = dir.display().to_string();
        let harness_text = harness.display().to_string();
        for event in &mut events {
            let mut via = event
                .via
                .replace(&dir_text, "/sandbox")
                .replace(&harness_text, "/harness");
            if let Some(at) = via.rfind(" (pid ") {
                via.truncate(at);
            }
            event.via = via;
        }
        events.sort();
        events.dedup_by(|a, b| a.action == b.action && a.forms == b.forms);
        let _ = remove_tree(&dir);
        // Events name the line's directory `/sandbox` (so records compare across runs); the
        // analysis ran on the real directory, so the check speaks of that one.
        let host_events: Vec<Event> = events
            .iter()
            .map(|event| Event {
                forms: event
                    .forms
                    .iter()
                    .map(|form| form.replace("/sandbox/", &format!("{dir_text}/")))
                    .collect(),
                ..event.clone()
            })
            .collect();
        let verdict = match soundness::check(&self.rules, &requests, &host_events) {
            Ok(sound) => Verdict::Sound(sound),
            Err(unsound) => Verdict::Unsound(unsound),
        };
        Outcome {
            case: case.clone(),
            verdict,
            events,
            output: ran.output,
            timed_out: ran.timed_out,
            ran: true,
        }
    }
}

/// The template every line's directory is copied from.
fn make_template(template: &Path) -> Result<(), OracleError> {
    let project = template.join("proj");
    std::fs::create_dir_all(&project).map_err(error("template"))?;
    soundness::write_fixture(&project).map_err(error("fixture"))?;
    for (path, contents) in soundness::OUTSIDE {
        let path = template.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(error("template"))?;
        }
        std::fs::write(&path, contents).map_err(error("template"))?;
    }
    std::fs::create_dir_all(template.join("tmp")).map_err(error("template"))?;
    if output("git", &["--version"]).is_some() {
        let git = |args: &[&str]| -> Result<(), OracleError> {
            let status = Command::new("git")
                .args(args)
                .current_dir(&project)
                .env("HOME", template)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_AUTHOR_NAME", "oracle")
                .env("GIT_AUTHOR_EMAIL", "oracle@localhost")
                .env("GIT_COMMITTER_NAME", "oracle")
                .env("GIT_COMMITTER_EMAIL", "oracle@localhost")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .map_err(error("git"))?;
            if status.success() {
                Ok(())
            } else {
                Err(OracleError(format!("git {args:?} failed in the template")))
            }
        };
        git(&["init", "-q", "--template=", "-b", "main"])?;
        let info = project.join(".git/info");
        std::fs::create_dir_all(&info).map_err(error("git info"))?;
        let mut exclude = String::new();
        for file in soundness::FIXTURE.iter().filter(|file| !file.committed) {
            exclude.push_str(&format!("/{}\n", file.path));
        }
        exclude.push_str("*.env\n.env\nsecrets/\n");
        std::fs::write(info.join("exclude"), exclude).map_err(error("git exclude"))?;
        git(&["add", "-A"])?;
        git(&["commit", "-q", "-m", "fixture"])?;
        // One pack instead of loose objects, no logs: fewer files to copy for every line.
        git(&["gc", "-q", "--prune=now"])?;
        let _ = std::fs::remove_dir_all(project.join(".git/logs"));
        let _ = std::fs::remove_file(project.join(".git/COMMIT_EDITMSG"));
    }
    Ok(())
}

/// Copies a tree, keeping symlinks and modes.
pub fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
        // Sockets, FIFOs and devices (the sandbox's mask socket in a data directory) are
        // not copied: nothing can be read from them.
    }
    Ok(())
}

/// Removes a tree a line may have made hard to remove (`chmod 000` directories).
pub fn remove_tree(dir: &Path) -> std::io::Result<()> {
    if std::fs::remove_dir_all(dir).is_ok() || !dir.exists() {
        return Ok(());
    }
    fn open_up(dir: &Path) {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        if let Ok(entries) = std::fs::read_dir(dir) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                    open_up(&entry.path());
                }
            }
        }
    }
    open_up(dir);
    std::fs::remove_dir_all(dir)
}

/// Counts by verdict, and the unsound outcomes grouped by tag.
pub fn summary(outcomes: &[Outcome]) -> String {
    let mut sound = 0;
    let mut unsound = Vec::new();
    let mut inconclusive = Vec::new();
    let mut stricter = 0;
    let not_run = outcomes.iter().filter(|outcome| !outcome.ran).count();
    for outcome in outcomes {
        match &outcome.verdict {
            Verdict::Sound(sound_line) => {
                sound += 1;
                if outcome.ran && soundness::rank(sound_line.analysis) > soundness::rank(sound_line.ran) {
                    stricter += 1;
                }
            }
            Verdict::Unsound(_) => unsound.push(outcome),
            Verdict::Inconclusive(why) => inconclusive.push((outcome, why)),
        }
    }
    let mut text = format!(
        "{} lines ({not_run} denied by the analysis, not run): {sound} sound ({stricter} of those run asked more than what ran), {} unsound, {} inconclusive\n",
        outcomes.len(),
        unsound.len(),
        inconclusive.len()
    );
    let mut by_tag: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for outcome in &unsound {
        for tag in &outcome.case.tags {
            if !tag.starts_with("sep:") {
                *by_tag.entry(tag.as_str()).or_default() += 1;
            }
        }
    }
    for (tag, count) in by_tag {
        text.push_str(&format!("  {count:5}  {tag}\n"));
    }
    for (outcome, why) in inconclusive.iter().take(10) {
        text.push_str(&format!("inconclusive: {:?}: {why}\n", outcome.case.line));
    }
    text
}

/// One corpus record for an unsound outcome. Only events the rules do not allow are
/// kept: an allowed event stays allowed under any saved approval, so it can never fail a
/// check.
pub fn record(outcome: &Outcome) -> Option<soundness::Record> {
    let Verdict::Unsound(unsound) = &outcome.verdict else {
        return None;
    };
    let rules = soundness::issue_rules();
    Some(soundness::Record {
        line: outcome.case.line.clone(),
        tags: outcome.case.tags.clone(),
        found: unsound.summary(),
        events: outcome
            .events
            .iter()
            .filter(|event| soundness::event_effect(&rules, None, event) != Effect::Allow)
            .cloned()
            .collect(),
    })
}
