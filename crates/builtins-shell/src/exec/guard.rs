//! Exec-time enforcement's policy: every program a command line starts, decided against
//! the `bash` rules on what the kernel is really about to run.
//!
//! The mechanism ([`toolgate_sandbox::ExecListener`]) stops each `execve`; this module
//! decides it, on the listener's own thread (a hop to another thread costs more than the
//! decision), and hands only the rare question for a person to the async runtime.
//!
//! What a program is called: its rule name (`git`) only when its path is the file that
//! name resolves to in the trusted `PATH` (the command's starting `PATH` without the
//! directories the command can write: the project and the temp directories), or a hard
//! link to one; otherwise its absolute path, so a `./tools/ls` is not `ls`. Names that
//! are not trusted for the file (its own file name; its trusted name when the file
//! changed since the command started) are checked for deny and explicit ask rules only:
//! they can refuse a program, never let one run. So are the names of the programs the
//! refusing rules name when this file is one of them ([`Permissions::strict_programs`]:
//! the same file or the same bytes, under any name) and the name the caller gives it
//! (`argv[0]`). The words a
//! rule sees are that name and `argv[1..]` (`argv[0]` is the caller's to choose), with
//! the variables that make a program run code it was not given (`LD_PRELOAD`,
//! `BASH_ENV`, `NODE_OPTIONS`, …) in front when the command changed them. A script's
//! `#!` interpreter and a program run through the dynamic loader are decided too.
//!
//! How a program is decided (README "The bash tool" states the same):
//! - a deny rule that matches → refused (`EPERM`), and the result says by which rule;
//! - an explicit ask rule (one a person wrote whose pattern is not the bare `*`) that
//!   matches → allowed only if the analysis predicted this command and it was approved
//!   before the line ran; otherwise the program waits in `execve` while the person is
//!   asked, with the real command line;
//! - an ask that no explicit rule gives (a catch-all `*` ask, or no rule): allowed when
//!   predicted and approved, or when the program is run by a program that was allowed
//!   (cargo's rustc, make's cc inherit the approval); run by the line's own shell and not
//!   predicted, it is a misreading of the analysis, and the person is asked;
//! - allowed by the rules → allowed.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use toolgate_core::{Context, PermissionRequest, Permissions, Resource, RuleDecision, Verdict};
use toolgate_sandbox::{Caller, ExecCall, ExecListener, FileId, Readiness, Stopped, proc_field, read_proc};

use super::names::{MAX_OPERANDS, StrictFiles, TrustedPath, is_elf, is_emulator, is_interpreter};

/// How many `#!` interpreters deep the guard follows: more than the kernel does (five
/// rewrites since Linux 5.8, four before); a chain still going after that is refused.
const MAX_INTERPRETERS: usize = 8;
use toolgate_shell_analysis::spellings;

/// How often the listener's thread looks whether the call is over.
const TICK: Duration = Duration::from_millis(50);
/// How many refusal lines the result carries at most.
const MAX_NOTES: usize = 20;
/// How far up the process tree a new process's lineage is looked for.
const MAX_DEPTH: usize = 64;
/// How many allowed programs a line remembers (then it starts over).
const MAX_REMEMBERED: usize = 4096;

/// Variables that make a program run code it was not given on its command line, without
/// an `exec` the guard would see: the dynamic loader's, the shells' start-up files, the
/// interpreters' options and module paths.
const CODE_VARIABLES: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONINSPECT",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "PERL5DB",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
];

/// Prefixes of such variables.
const CODE_PREFIXES: &[&str] = &["LD_", "DYLD_", "BASH_FUNC_"];

fn runs_code(name: &[u8]) -> bool {
    CODE_VARIABLES.iter().any(|known| known.as_bytes() == name)
        || CODE_PREFIXES.iter().any(|prefix| name.starts_with(prefix.as_bytes()))
}

/// What the bash tool knows before the line runs, for the guard.
pub(crate) struct GuardSetup {
    /// The call's context (session, agent) for the rules and the questions.
    pub(crate) ctx: Context,
    /// The permission service.
    pub(crate) permissions: Arc<dyn Permissions>,
    /// The `bash` parts the analysis predicted and the rules or the person approved
    /// (a background shell's later lines add theirs).
    pub(crate) predicted: super::Predicted,
    /// The environment the command starts with.
    pub(crate) env: Vec<(OsString, OsString)>,
    /// Directories the command can write (a `PATH` entry under one is not trusted).
    pub(crate) writable: Vec<PathBuf>,
    /// What the command gets as its stdin once the trampoline handed its listener over
    /// (`None`: `/dev/null`).
    pub(crate) stdin: Option<std::os::fd::OwnedFd>,
}

/// Where a process stands: still the line's own shell (a subshell that has not run a
/// program yet), or inside a program that was allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Lineage {
    Line,
    Under(String),
}

/// A process: thread-group id and start time (pids are reused, the pair is not).
type ProcessKey = (u32, u64);

/// How one program is to be decided: the spellings a rule may match, how it is shown,
/// what "always" saves.
#[derive(Clone, Debug)]
struct Exec {
    /// The spellings every rule is checked against (strictest wins).
    forms: Vec<String>,
    /// How it is shown (its rule name when it has one).
    display: String,
    /// What "always" saves; `None`: unsaveable.
    save: Option<String>,
    /// Spellings the analysis could have predicted (the line as written).
    predictable: Vec<String>,
    /// Other spellings of the same program that a rule may be written in — `argv[0]` when
    /// it names the file by a path, the path relative to the working directory, `~/…` —
    /// checked for deny and explicit ask rules only (they can make a decision stricter,
    /// never looser, so a caller choosing `argv[0]` gains nothing).
    aliases: Vec<String>,
    /// The same spellings without the code-running variables in front, when the command
    /// changed some: a rule for the bare program may deny it or ask, never allow it (with
    /// `LD_PRELOAD=…` it is not the program the rule allowed).
    plain: Vec<String>,
    /// Names the file has without being trusted under them: its own file name, and its
    /// name in the trusted `PATH` when it changed since the command started (a hard link
    /// made to it, by this command or any other, changes it). A deny rule or an explicit
    /// ask for such a name holds (a `./tools/rm` is refused by `rm *`: deny); an allow
    /// never does (a `./tools/ls` is not `ls`).
    untrusted: Vec<String>,
    /// The spellings of the rules' programs this file is under another name
    /// ([`StrictFiles`]), and of a rule's program given to this interpreter as its script:
    /// a deny rule for one holds; an explicit ask holds only for what the line's own shell
    /// starts.
    same_program: Vec<String>,
}

/// What the result says about the guard's work.
#[derive(Default)]
pub(crate) struct Report {
    /// One line per refused program (at most [`MAX_NOTES`], then a count).
    pub(crate) notes: Vec<String>,
    /// How many programs were refused.
    pub(crate) refused: usize,
}

/// State shared by the listener's thread and the questions in flight.
struct Shared {
    processes: HashMap<ProcessKey, Lineage>,
    /// The last process seen under each thread-group id.
    pids: HashMap<u32, ProcessKey>,
    /// Questions in flight, by what is asked: notifications of the same exec (restarted by
    /// a signal) wait for the one answer.
    asking: HashMap<String, Vec<u64>>,
    report: Report,
    /// Programs already answered "yes" by a person in this call.
    approved: Vec<String>,
}

/// The running supervisor of one command line.
pub(crate) struct Supervisor {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    shared: Arc<Mutex<Shared>>,
    asks: Arc<AtomicUsize>,
    asked_for: Arc<Mutex<Duration>>,
}

impl Supervisor {
    /// Starts supervising the command whose trampoline is `shell_pid`: on its own thread,
    /// which gets ready (the trusted `PATH`, libseccomp's probe of the kernel) while the
    /// trampoline starts, then receives the trampoline's listener over `channel` (waiting
    /// at most `handshake`) and decides every program from then on, so the shell's own
    /// `execve` waits for no thread to start. A trampoline that fails before it sends its
    /// listener exits with its own error, which the output shows; there is nothing to
    /// supervise then.
    pub(crate) fn start(
        channel: std::os::unix::net::UnixStream,
        shell_pid: u32,
        setup: GuardSetup,
        handshake: Duration,
    ) -> Supervisor {
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Mutex::new(Shared {
            processes: HashMap::new(),
            pids: HashMap::new(),
            asking: HashMap::new(),
            report: Report::default(),
            approved: Vec::new(),
        }));
        let asks = Arc::new(AtomicUsize::new(0));
        let asked_for = Arc::new(Mutex::new(Duration::ZERO));
        let runtime = tokio::runtime::Handle::try_current().ok();
        let (worker_shared, worker_stop) = (Arc::clone(&shared), Arc::clone(&stop));
        let (worker_asks, worker_asked_for) = (Arc::clone(&asks), Arc::clone(&asked_for));
        let ready = move || {
            ExecListener::warm_up();
            let trusted = TrustedPath::new(
                setup
                    .env
                    .iter()
                    .rev()
                    .find(|(name, _)| name == "PATH")
                    .map(|(_, value)| value.as_os_str()),
                &setup.writable,
            );
            let strict = StrictFiles::new(setup.permissions.strict_programs(&setup.ctx, "bash"), &trusted.dirs);
            let base = setup
                .env
                .iter()
                .filter(|(name, _)| runs_code(name.as_bytes()))
                .cloned()
                .collect();
            let home = setup
                .env
                .iter()
                .rev()
                .find(|(name, _)| name == "HOME")
                .map(|(_, value)| PathBuf::from(value))
                .filter(|home| home.is_absolute() && home != Path::new("/"));
            let listener = {
                use std::os::fd::AsFd;
                ExecListener::accept(channel.as_fd(), setup.stdin.as_ref().map(AsFd::as_fd), handshake).ok()?
            };
            Some(Worker {
                listener: Arc::new(listener),
                shell_pid,
                shell_seen: false,
                trusted,
                strict,
                base,
                home,
                setup,
                shared: worker_shared,
                stop: worker_stop,
                asks: worker_asks,
                asked_for: worker_asked_for,
                runtime,
                tasks: Vec::new(),
                allowed: HashMap::new(),
            })
        };
        let thread = std::thread::Builder::new()
            .name("toolgate-exec-guard".into())
            .spawn(move || {
                if let Some(mut worker) = ready() {
                    worker.run();
                }
            })
            .ok();
        Supervisor {
            stop,
            thread,
            shared,
            asks,
            asked_for,
        }
    }

    /// How many programs wait for a person right now.
    pub(crate) fn asking(&self) -> usize {
        self.asks.load(Ordering::SeqCst)
    }

    /// How long programs have waited for a person in all (so the timeout can leave it out).
    pub(crate) fn asked_for(&self) -> Duration {
        self.asked_for.lock().map(|total| *total).unwrap_or_default()
    }

    /// Stops supervising (programs the command left behind can start nothing more: their
    /// `execve` fails) and returns what the result should say.
    pub(crate) fn finish(mut self) -> Report {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let mut shared = lock(&self.shared);
        std::mem::take(&mut shared.report)
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The listener's thread.
struct Worker {
    listener: Arc<ExecListener>,
    shell_pid: u32,
    shell_seen: bool,
    trusted: TrustedPath,
    strict: StrictFiles,
    /// The code-running variables the command started with (changing one is what counts).
    base: Vec<(OsString, OsString)>,
    /// The command's starting `HOME` (for `~/…` spellings).
    home: Option<PathBuf>,
    setup: GuardSetup,
    shared: Arc<Mutex<Shared>>,
    stop: Arc<AtomicBool>,
    asks: Arc<AtomicUsize>,
    asked_for: Arc<Mutex<Duration>>,
    runtime: Option<tokio::runtime::Handle>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    /// Programs a configured rule allowed in this line, with the rules' version then and
    /// how they were shown.
    allowed: HashMap<AllowKey, (u64, String)>,
}

/// Everything an allow by the rules was decided on ([`Worker::exec_of`] reads nothing
/// else): the program as named and as found, its words, the code-running variables the
/// command changed, and the working directory (for the relative spellings).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct AllowKey {
    program: PathBuf,
    file: FileId,
    resolved: Option<PathBuf>,
    argv: Vec<OsString>,
    prefix: String,
    cwd: Option<PathBuf>,
}

impl AllowKey {
    /// The key of `call`; `None` for a script or a loader, which more than one program
    /// decides.
    fn of(call: &ExecCall, prefix: String) -> Option<AllowKey> {
        if call.interpreter.is_some() || is_loader(&call.program) || call.resolved.as_deref().is_some_and(is_loader) {
            return None;
        }
        Some(AllowKey {
            program: call.program.clone(),
            file: call.file?,
            resolved: call.resolved.clone(),
            argv: call.argv.clone(),
            prefix,
            cwd: call.cwd.clone(),
        })
    }
}

impl Worker {
    fn run(&mut self) {
        while !self.stop.load(Ordering::SeqCst) {
            match self.listener.wait(Some(TICK)) {
                Ok(Readiness::Ready) => {}
                Ok(Readiness::Idle) => continue,
                Ok(Readiness::Closed) | Err(_) => break,
            }
            let Some(notice) = self.listener.receive() else {
                continue;
            };
            // The trampoline's own start of the shell: allowed without a look (nothing of
            // it needs reading), the shell's process recorded as the line's own.
            if !self.shell_seen && notice.pid == self.shell_pid {
                self.shell_seen = true;
                if let Some(key) = identity(notice.pid).map(|p| p.key()) {
                    let mut shared = lock(&self.shared);
                    shared.processes.insert(key, Lineage::Line);
                    shared.pids.insert(key.0, key);
                }
                let _ = self.listener.allow(notice.id);
                continue;
            }
            match self.listener.read(notice) {
                Stopped::Exec(call) => self.decide(*call),
                Stopped::Unreadable { id, pid, reason } => {
                    let _ = self.listener.refuse(id, libc_eperm());
                    self.note(format!(
                        "toolgate refused to start a program (process {pid}): {reason}; the rules cannot be checked"
                    ));
                }
                // `Stopped::Gone`: the caller went away.
                _ => {}
            }
        }
        // Questions still open end with the call: dropping them withdraws them.
        for task in self.tasks.drain(..) {
            task.abort();
        }
    }

    fn note(&self, line: String) {
        let mut shared = lock(&self.shared);
        shared.report.refused += 1;
        if shared.report.notes.len() < MAX_NOTES {
            if !shared.report.notes.contains(&line) {
                shared.report.notes.push(line);
            }
        } else if shared.report.notes.len() == MAX_NOTES {
            shared
                .report
                .notes
                .push("toolgate refused more programs than this result lists".to_string());
        }
    }

    fn decide(&mut self, call: ExecCall) {
        // A file the guard cannot find as the caller would (it does not exist, or it is
        // named in a way the guard cannot follow: a working directory too deep to read,
        // one outside the caller's root) is not run: the caller gets what a missing file
        // gives (so `execvp` goes on to the next `PATH` entry), and no rule is ever
        // checked against a name that is not the file's.
        if call.file.is_none() {
            if call.resolved.is_some() {
                // It is there, but what it would run cannot be read (a script with execute
                // permission only).
                let _ = self.listener.refuse(call.id, rustix::io::Errno::ACCESS.raw_os_error());
                self.note(format!(
                    "toolgate refused to start `{}`: it cannot read the file to check what it runs",
                    call.program.display()
                ));
                return;
            }
            let _ = self.listener.refuse(call.id, libc_enoent());
            return;
        }
        // Neither an ELF program nor a `#!` script: without `binfmt_misc` the kernel
        // fails with `ENOEXEC` (and bash then reads the file as a script itself); with
        // it, a handler the guard does not see would run. Refused as the plain kernel
        // refuses it.
        if !call.native {
            let _ = self.listener.refuse(call.id, rustix::io::Errno::NOEXEC.raw_os_error());
            return;
        }
        let (lineage, key) = self.lineage(call.pid, call.caller);
        // The same program with the same words, variables and directory, allowed by a
        // configured rule before in this line (a loop, `xargs`): allowed again under
        // the same rules without deciding every spelling again.
        let version = self.setup.permissions.rules_version();
        let remembered = version.and_then(|version| {
            let cache_key = AllowKey::of(&call, self.changed_code_variables(&call.env))?;
            Some((version, cache_key))
        });
        if let Some((version, cache_key)) = &remembered
            && let Some((allowed_at, display)) = self.allowed.get(cache_key)
            && allowed_at == version
        {
            let display = display.clone();
            self.allow(&call, key, &lineage, &display);
            return;
        }
        let cwd = call.cwd.clone();
        let cwd = cwd.as_deref();
        // A program given as a descriptor is read through it.
        let given = call.descriptor.map(|fd| PathBuf::from(format!("/proc/self/fd/{fd}")));
        let mut execs = vec![self.exec_of(
            (call.pid, given.as_deref().unwrap_or(&call.program)),
            &call.program,
            call.file.as_ref(),
            call.resolved.as_deref(),
            &call.argv,
            &call.env,
            cwd,
        )];
        // A script: the kernel runs its interpreter with the script's path and arguments,
        // and the interpreter's interpreter when it is a script too. Each is found as the
        // caller would find it (`#!/dev/fd/3` is its descriptor 3).
        let mut script = call.program.clone().into_os_string();
        let mut argv_rest: Vec<OsString> = call.argv.iter().skip(1).cloned().collect();
        let mut interpreter = call.interpreter.clone();
        for _ in 0..MAX_INTERPRETERS {
            let Some(line) = interpreter.take() else { break };
            let Some(first) = line.first() else { break };
            let path = PathBuf::from(first);
            let found = self.listener.identify(call.pid, &path);
            if found.is_none() {
                // The kernel would fail too ("bad interpreter"), unless the guard cannot
                // see the file it would run: either way nothing runs.
                let _ = self.listener.refuse(call.id, libc_enoent());
                return;
            }
            let mut argv: Vec<OsString> = line.clone();
            argv.push(script);
            argv.extend(argv_rest);
            execs.push(self.exec_of(
                (call.pid, &path),
                &path,
                found.as_ref().map(|found| &found.file),
                found.as_ref().map(|found| found.resolved.as_path()),
                &argv,
                &call.env,
                cwd,
            ));
            // The dynamic loader as the interpreter (`#!/lib64/ld-linux-x86-64.so.2
            // /usr/bin/rm`): the program it is given is what runs.
            let static_elf = found.as_ref().is_some_and(|found| found.static_elf);
            let resolved = found.as_ref().map(|found| found.resolved.clone());
            match self.loaded(
                call.pid,
                (&path, resolved.as_deref()),
                static_elf,
                &argv,
                &call.env,
                cwd,
            ) {
                Ok(loaded) => execs.extend(loaded),
                Err(()) => {
                    let _ = self.listener.refuse(call.id, libc_enoent());
                    self.note(format!(
                        "toolgate refused to start `{}`: what it is given to run cannot be found or followed",
                        call.program.display()
                    ));
                    return;
                }
            }
            interpreter = found.and_then(|found| found.interpreter);
            script = path.into_os_string();
            argv_rest = argv.into_iter().skip(1).collect();
        }
        if interpreter.is_some() {
            let _ = self.listener.refuse(call.id, rustix::io::Errno::LOOP.raw_os_error());
            self.note(format!(
                "toolgate refused to start `{}`: its `#!` interpreters go deeper than {MAX_INTERPRETERS}",
                call.program.display()
            ));
            return;
        }
        // The dynamic loader asked to run a program: that program is what runs.
        let named = (call.program.as_path(), call.resolved.as_deref());
        match self.loaded(call.pid, named, call.static_elf, &call.argv, &call.env, cwd) {
            Ok(loaded) => execs.extend(loaded),
            Err(()) => {
                let _ = self.listener.refuse(call.id, libc_enoent());
                self.note(format!(
                    "toolgate refused to start `{}`: what it is given to run cannot be found or followed",
                    call.program.display()
                ));
                return;
            }
        }
        let display = execs.first().map(|exec| exec.display.clone()).unwrap_or_default();
        // Each program (the file, its interpreters, a loader's program) must be allowed:
        // the strictest of them decides.
        let mut deciding: Vec<String> = Vec::new();
        let decision = execs
            .iter()
            .map(|exec| {
                let spelled: Vec<String> = exec.forms.iter().chain(&exec.aliases).cloned().collect();
                let (mut decision, forms) = self.decide_spellings(&spelled, &display);
                deciding.extend(forms);
                // Spellings that may only make the decision stricter. Under a program that
                // was allowed, another name of the same program only refuses: one file
                // behind many names (rustup's `rustc` and `cargo`) must not ask for each
                // `rustc` an approved `cargo build` runs.
                let line = lineage == Lineage::Line;
                for (stricter, asks) in [(&exec.plain, true), (&exec.untrusted, true), (&exec.same_program, line)] {
                    if stricter.is_empty() {
                        continue;
                    }
                    let (bare, forms) = self.decide_spellings(stricter, &display);
                    let holds =
                        bare.verdict == Verdict::Deny || (asks && bare.verdict == Verdict::Ask && bare.explicit);
                    if holds && rank(bare.verdict) > rank(decision.verdict) {
                        deciding.extend(forms);
                        decision = bare;
                    }
                }
                decision
            })
            .reduce(|a, b| if rank(b.verdict) > rank(a.verdict) { b } else { a })
            .unwrap_or_else(|| RuleDecision::new(Verdict::Ask, None, false));
        // What the line named is what was predicted; a script's interpreter and a loader's
        // program are decided by the rules alone. For an explicit ask, only a prediction a
        // person approved counts: one the rules allowed before the line ran never met
        // the rule that asks now (written in another spelling, or matching only once the
        // words are known).
        let predicted = match execs.first().and_then(|exec| self.predicted_by(exec)) {
            Some(_) if !decision.explicit => true,
            Some(part) => self.was_asked(&part),
            None => false,
        };
        let approved_before = lock(&self.shared).approved.contains(&display);
        let allow = match decision.verdict {
            Verdict::Deny => {
                let _ = self.listener.refuse(call.id, libc_eperm());
                self.record_refusal(&deciding, &display, Verdict::Deny);
                let by = match &decision.rule {
                    Some(rule) => format!("by rule {} \"{}\" {}", rule.action, rule.resource, rule.effect),
                    None => "by a deny rule".to_string(),
                };
                self.note(format!("toolgate refused to start `{display}` {by}"));
                return;
            }
            Verdict::Allow => true,
            Verdict::Ask if predicted || approved_before => true,
            Verdict::Ask if !decision.explicit && matches!(lineage, Lineage::Under(_)) => true,
            Verdict::Ask => false,
        };
        if allow {
            // Only an allow by a configured rule is remembered: an allow by a prediction,
            // an approval or the lineage depends on more than the program and its words,
            // and saved approvals can be withdrawn by another process.
            if decision.verdict == Verdict::Allow
                && decision.rule.is_some()
                && execs.len() == 1
                && let Some((version, cache_key)) = remembered
            {
                if self.allowed.len() >= MAX_REMEMBERED {
                    self.allowed.clear();
                }
                self.allowed.insert(cache_key, (version, display.clone()));
            }
            self.allow(&call, key, &lineage, &display);
            return;
        }
        self.ask(call, lineage, execs, display, deciding);
    }

    /// Puts a refusal made here, at `execve`, in the audit log: the spellings that decided.
    fn record_refusal(&self, deciding: &[String], display: &str, verdict: Verdict) {
        let resources = deciding
            .iter()
            .cloned()
            .chain(deciding.is_empty().then(|| display.to_string()));
        let request = PermissionRequest::new("bash")
            .resources(resources)
            .metadata("command", display);
        let (permissions, ctx) = (&self.setup.permissions, &self.setup.ctx);
        permissions.record_enforced(ctx, &request, verdict);
    }

    /// The program a loader runs: `ld.so PROG` (the loader named `program`, at its path
    /// or where its links lead, or a copy of it under any name, known by what it is: an
    /// ELF program that names no interpreter, `static_elf`) runs `PROG` with no `exec`.
    /// A static-pie program looks the same, so its first operand is decided too when
    /// that is a program (it can only make the decision stricter). `Err` when a named
    /// loader's program cannot be found: nothing is to run then.
    fn loaded(
        &mut self,
        pid: u32,
        (program, resolved): (&Path, Option<&Path>),
        static_elf: bool,
        argv: &[OsString],
        env: &[OsString],
        cwd: Option<&Path>,
    ) -> Result<Option<Exec>, ()> {
        let named = is_loader(program) || resolved.is_some_and(is_loader);
        // valgrind's tool is started with these set (a copy of a tool needs them too).
        let valgrind = env.iter().any(|entry| {
            entry.as_bytes().starts_with(b"VALGRIND_LAUNCHER=") || entry.as_bytes().starts_with(b"VALGRIND_LIB=")
        });
        let emulator = valgrind || [Some(program), resolved].into_iter().flatten().any(is_emulator);
        if emulator {
            return self.emulated(pid, argv, env, cwd);
        }
        if !named && !static_elf {
            return Ok(None);
        }
        let Some(given) = loader_program(argv) else {
            return Ok(None);
        };
        let found = self.listener.identify(pid, Path::new(&given));
        let Some(found) = found else {
            return if named { Err(()) } else { Ok(None) };
        };
        let executable = found.file.mode & 0o170000 == 0o100000 && found.file.mode & 0o111 != 0;
        if !named && !executable {
            return Ok(None);
        }
        let path = match (cwd, Path::new(&given).is_absolute()) {
            (Some(cwd), false) => cwd.join(&given),
            _ => PathBuf::from(&given),
        };
        let at = argv.iter().position(|arg| *arg == given).unwrap_or(0);
        Ok(Some(self.exec_of(
            (pid, &path),
            &path,
            Some(&found.file),
            Some(found.resolved.as_path()),
            &argv[at..],
            env,
            cwd,
        )))
    }

    /// The program an emulator runs with no `exec` of its own (`valgrind rm x`, `qemu-x86_64
    /// /usr/bin/rm x`): its first operand that is a program, a bare name found in the
    /// command's `PATH` as the emulator finds it.
    /// `Err` when that program is a script or a loader: what the emulator then runs from it
    /// is not known, so nothing is.
    fn emulated(
        &mut self,
        pid: u32,
        argv: &[OsString],
        env: &[OsString],
        cwd: Option<&Path>,
    ) -> Result<Option<Exec>, ()> {
        let path_dirs: Vec<PathBuf> = env
            .iter()
            .rev()
            .find_map(|entry| entry.as_bytes().strip_prefix(b"PATH="))
            .map(|value| std::env::split_paths(OsStr::from_bytes(value)).collect())
            .unwrap_or_default();
        for (at, arg) in argv.iter().enumerate().skip(1).take(MAX_OPERANDS) {
            if arg.as_bytes().starts_with(b"-") || arg.is_empty() {
                continue;
            }
            let candidates: Vec<PathBuf> = if arg.as_bytes().contains(&b'/') {
                vec![PathBuf::from(arg)]
            } else {
                path_dirs.iter().map(|dir| dir.join(arg)).collect()
            };
            for candidate in candidates {
                let Some(found) = self.listener.identify(pid, &candidate) else {
                    continue;
                };
                if found.file.mode & 0o170000 != 0o100000 || found.file.mode & 0o111 == 0 {
                    continue;
                }
                if found.interpreter.is_some() || found.static_elf {
                    return Err(());
                }
                let path = match cwd {
                    Some(cwd) if candidate.is_relative() => cwd.join(&candidate),
                    _ => candidate,
                };
                return Ok(Some(self.exec_of(
                    (pid, &path),
                    &path,
                    Some(&found.file),
                    Some(found.resolved.as_path()),
                    &argv[at..],
                    env,
                    cwd,
                )));
            }
        }
        Ok(None)
    }

    /// Lets `call` go on as `display`, recording where its process now stands.
    fn allow(&self, call: &ExecCall, key: Option<ProcessKey>, lineage: &Lineage, display: &str) {
        self.started(key, lineage, display);
        if call.file.is_some_and(|file| file.is_setid()) && !rustix::process::geteuid().is_root() {
            lock(&self.shared).report.notes.push(format!(
                "`{display}` is setuid: toolgate starts commands with no_new_privs (exec-time enforcement), so it runs \
                 without its privileges; ask the user to run it themselves"
            ));
        }
        let _ = self.listener.allow(call.id);
    }

    /// One program decided by all its spellings (its rule name, its paths). A rule a
    /// person wrote for one of them (`ls *`, `/usr/bin/rm *`) or a saved approval of one
    /// decides over the catch-all `*` that the others only meet: under
    /// `{"*": "deny", "ls *": "allow"}` the path `/usr/bin/ls` must not refuse `ls`, and
    /// under `{"*": "allow", "/usr/bin/rm *": "deny"}` the name `rm` must not allow it.
    /// Among those, or when none has one, the strictest wins. Also returns the spellings
    /// that decided (a question is put with those).
    fn decide_spellings(&self, forms: &[String], display: &str) -> (RuleDecision, Vec<String>) {
        let decide = |resources: &[String]| {
            let request = PermissionRequest::new("bash")
                .resources(resources.iter().cloned())
                .metadata("command", display.to_string());
            self.setup
                .permissions
                .decide(&self.setup.ctx, &request)
                .unwrap_or_else(|| RuleDecision::new(Verdict::Ask, None, false))
        };
        // The common case in one decision: every spelling allowed.
        let all = decide(forms);
        if all.verdict == Verdict::Allow {
            return (all, forms.to_vec());
        }
        let decisions: Vec<RuleDecision> = forms.iter().map(|form| decide(std::slice::from_ref(form))).collect();
        let specific = |d: &RuleDecision| d.explicit || (d.rule.is_none() && d.verdict == Verdict::Allow);
        let any_specific = decisions.iter().any(specific);
        let pool: Vec<(&String, &RuleDecision)> = forms
            .iter()
            .zip(&decisions)
            .filter(|(_, d)| !any_specific || specific(d))
            .collect();
        let decision = pool
            .iter()
            .map(|(_, d)| *d)
            .reduce(|a, b| if rank(b.verdict) > rank(a.verdict) { b } else { a })
            .cloned()
            .unwrap_or_else(|| RuleDecision::new(Verdict::Ask, None, false));
        (decision, pool.into_iter().map(|(form, _)| form.clone()).collect())
    }

    /// The spellings of one program about to run: its rule name when it has one, then
    /// its absolute paths (as given, with every link resolved, and the trusted `PATH`'s
    /// path of its name), so a rule written against any of them holds. `reach` is where
    /// process `pid` reaches the file, to compare its bytes with a rule's program.
    #[allow(clippy::too_many_arguments)]
    fn exec_of(
        &mut self,
        (pid, reach): (u32, &Path),
        program: &Path,
        file: Option<&FileId>,
        resolved: Option<&Path>,
        argv: &[OsString],
        env: &[OsString],
        cwd: Option<&Path>,
    ) -> Exec {
        let absolute = program.to_string_lossy().into_owned();
        let base = program.file_name().unwrap_or_default();
        let mut untrusted_names = vec![base.to_string_lossy().into_owned()];
        let name = match file {
            Some(file)
                if self
                    .trusted
                    .lookup(base)
                    .is_some_and(|(found, _)| found.same_file(file)) =>
            {
                Some(base.to_string_lossy().into_owned())
            }
            Some(file) => match self.trusted.name_of(file) {
                Some((name, true)) => Some(name),
                Some((name, false)) => {
                    untrusted_names.push(name);
                    None
                }
                None => None,
            },
            None => None,
        };
        // The names of the rules' programs this file is (`sh` for `dash`; a hard link or
        // a copy of `rm` under any name), and the name the caller gave it (`argv[0]`:
        // `xz` run as `unxz` is `unxz`): a rule refusing one of those holds for it.
        // Not for a file run by a trusted name of its own: one file behind many names
        // (pyenv's shims, rustup's `cargo` and `rustc`, `xz` and `unxz`) reads the name
        // it is run by, and is that program.
        let own_name = name.as_deref() == base.to_str();
        let mut same_names: Vec<String> = Vec::new();
        if let Some(file) = file.filter(|_| !own_name) {
            let listener = &self.listener;
            let opened = || {
                listener
                    .open(pid, reach)
                    .filter(|(found, _)| found.same_file(file))
                    .map(|(_, opened)| opened)
            };
            same_names.extend(self.strict.names_of(file, opened));
        }
        if let Some(called) = argv.first().and_then(|first| Path::new(first).file_name()) {
            untrusted_names.push(called.to_string_lossy().into_owned());
        }
        // The name of the file its links resolve to, when that name is trusted for it too
        // (`sh` → `dash`, `python3` → `python3.11`): a rule for either name holds.
        let resolved_name = resolved
            .and_then(Path::file_name)
            .filter(|resolved| Some(*resolved) != Some(base))
            .filter(|resolved| {
                file.is_some_and(|file| {
                    self.trusted
                        .lookup(resolved)
                        .is_some_and(|(found, _)| found.same_file(file))
                })
            })
            .map(|resolved| resolved.to_string_lossy().into_owned());
        let mut paths = vec![absolute.clone()];
        paths.extend(resolved_name);
        if let Some(resolved) = resolved {
            paths.push(resolved.to_string_lossy().into_owned());
        }
        if let Some(name) = &name
            && let Some((_, trusted)) = self.trusted.lookup(OsStr::new(name))
        {
            paths.push(trusted.to_string_lossy().into_owned());
        }
        paths.dedup();
        let args: Vec<String> = argv
            .iter()
            .skip(1)
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        let prefix = self.changed_code_variables(env);
        let spelled = |first: &str| {
            let mut words = vec![first.to_string()];
            words.extend(args.iter().cloned());
            spellings(&words)
        };
        let mut forms = Vec::new();
        let mut stricter_forms: Vec<String> = Vec::new();
        let mut save = None;
        let mut display = None;
        for first in name.iter().chain(paths.iter()) {
            let spelled = spelled(first);
            if display.is_none() {
                display = spelled.forms.first().cloned();
                save = spelled.save.clone();
            }
            for form in spelled.forms {
                let form = format!("{prefix}{form}");
                if !forms.contains(&form) {
                    forms.push(form);
                }
            }
            stricter_forms.extend(spelled.stricter);
        }
        // Other spellings of the same file: as the caller named it, relative to its
        // working directory, under the home.
        let mut others: Vec<String> = Vec::new();
        if let Some(first) = argv.first()
            && first.as_bytes().contains(&b'/')
        {
            others.push(first.to_string_lossy().into_owned());
        }
        if let Some(relative) = cwd.and_then(|cwd| program.strip_prefix(cwd).ok()) {
            others.push(format!("./{}", relative.display()));
            others.push(relative.display().to_string());
        }
        if let Some(home) = &self.home
            && let Ok(rest) = program.strip_prefix(home)
        {
            others.push(format!("~/{}", rest.display()));
            others.push(format!("$HOME/{}", rest.display()));
        }
        let mut aliases = Vec::new();
        for first in &others {
            for form in spelled(first).forms {
                let form = format!("{prefix}{form}");
                if !forms.contains(&form) && !aliases.contains(&form) {
                    aliases.push(form);
                }
            }
        }
        let plain: Vec<String> = if prefix.is_empty() {
            Vec::new()
        } else {
            forms
                .iter()
                .chain(&aliases)
                .filter_map(|form| form.strip_prefix(prefix.as_str()).map(str::to_string))
                .collect()
        };
        let mut untrusted = Vec::new();
        for first in untrusted_names.iter().filter(|first| Some(*first) != name.as_ref()) {
            let spelled = spelled(first);
            for form in spelled.forms.into_iter().chain(spelled.stricter) {
                if !forms.contains(&form) && !untrusted.contains(&form) {
                    untrusted.push(form);
                }
            }
        }
        // A program that picks its subcommand from the name it is run by (`git-push`, a
        // link to git, or git run with `argv[0]` `git-push`): the command it will be.
        let own_names: Vec<String> = name
            .iter()
            .cloned()
            .chain(untrusted_names.iter().skip(1).cloned())
            .chain(same_names.iter().cloned())
            .chain(
                resolved
                    .and_then(Path::file_name)
                    .map(|n| n.to_string_lossy().into_owned()),
            )
            .collect();
        let called = argv
            .first()
            .and_then(|first| Path::new(first).file_name())
            .map(|n| n.to_string_lossy().into_owned());
        for dashed in std::iter::once(base.to_string_lossy().into_owned()).chain(called) {
            if let Some((head, tail)) = dashed.split_once('-')
                && !tail.is_empty()
                && own_names.iter().any(|own| own == head)
            {
                let mut words = vec![head.to_string(), tail.to_string()];
                words.extend(args.iter().cloned());
                stricter_forms.extend(spellings(&words).forms);
            }
        }
        // An interpreter given a rule's program as its script (`node` with the file
        // `npm` resolves to): that program is what runs.
        let mut same_forms: Vec<String> = Vec::new();
        for first in same_names.iter().filter(|first| Some(*first) != name.as_ref()) {
            let spelled = spelled(first);
            same_forms.extend(spelled.forms.into_iter().chain(spelled.stricter));
        }
        if self.strict.scripts
            && let Some(file) = file
        {
            let by_name = name
                .iter()
                .map(String::as_str)
                .chain(resolved.and_then(Path::file_name).and_then(OsStr::to_str))
                .any(is_interpreter);
            let listener = &self.listener;
            let opened = || {
                listener
                    .open(pid, reach)
                    .filter(|(found, _)| found.same_file(file))
                    .map(|(_, opened)| opened)
            };
            // A program trusted under its name is an interpreter by that name alone; only
            // an untrusted file (a copy) is looked at for the bytes of one.
            if by_name || (name.is_none() && self.strict.is_interpreter(file, &self.trusted.dirs, opened)) {
                same_forms.extend(self.scripts_of(pid, argv));
            }
        }
        for form in stricter_forms {
            if !forms.contains(&form) && !untrusted.contains(&form) {
                untrusted.push(form);
            }
        }
        let mut same_program: Vec<String> = Vec::new();
        for form in same_forms {
            if !forms.contains(&form) && !untrusted.contains(&form) && !same_program.contains(&form) {
                same_program.push(form);
            }
        }
        // The line as written may have named the program by any of these spellings.
        let predictable: Vec<String> = if prefix.is_empty() {
            forms.iter().chain(&aliases).cloned().collect()
        } else {
            Vec::new()
        };
        Exec {
            display: format!("{prefix}{}", display.unwrap_or(absolute)),
            save: if prefix.is_empty() { save } else { None },
            forms,
            predictable,
            aliases,
            plain,
            untrusted,
            same_program,
        }
    }

    /// The spellings of the rules' programs an interpreter is given as a script: any
    /// operand, an option's value (`--require=FILE`) or its standard input that is the
    /// file of one (a script, never an ELF program, which no interpreter runs), with the
    /// words after it.
    fn scripts_of(&mut self, pid: u32, argv: &[OsString]) -> Vec<String> {
        let mut forms = Vec::new();
        let candidates = argv
            .iter()
            .enumerate()
            .skip(1)
            .take(MAX_OPERANDS)
            .map(|(at, arg)| {
                let bytes = arg.as_bytes();
                let value = match bytes.iter().position(|b| *b == b'=') {
                    Some(eq) if bytes.starts_with(b"-") => &bytes[eq + 1..],
                    _ => bytes,
                };
                (at, file_url_path(value))
            })
            .filter(|(_, value)| !value.is_empty() && !value.as_bytes().starts_with(b"-"))
            .chain(std::iter::once((0, OsString::from("/proc/self/fd/0"))));
        for (at, candidate) in candidates {
            let candidate = candidate.as_os_str();
            let Some((found, mut opened)) = self.listener.open(pid, Path::new(candidate)) else {
                continue;
            };
            if found.mode & 0o170000 != 0o100000 || is_elf(&mut opened) {
                continue;
            }
            // A script named by a trusted name of its own is the program of that name only
            // (a `#!` script's interpreter is given the script itself: rustup-like `rustc`
            // is not `cargo`).
            let own = Path::new(candidate)
                .file_name()
                .filter(|name| {
                    self.trusted
                        .lookup(name)
                        .is_some_and(|(trusted, _)| trusted.same_file(&found))
                })
                .map(|name| name.to_string_lossy().into_owned());
            // What comes after it is what the script sees, wherever it starts (an
            // option's value may come first: `-r FILE /dev/null publish`): each tail.
            let from = at + 1;
            let words = self.strict.names_of(&found, || Some(opened));
            for word in words
                .into_iter()
                .filter(|word| own.as_ref().is_none_or(|own| own == word))
            {
                for tail in from..argv.len() + 1 {
                    let mut words = vec![word.clone()];
                    words.extend(
                        argv[tail.min(argv.len())..]
                            .iter()
                            .map(|arg| arg.to_string_lossy().into_owned()),
                    );
                    forms.extend(spellings(&words).forms);
                }
            }
        }
        forms
    }

    /// `NAME=value ` for each code-running variable the command set or changed.
    fn changed_code_variables(&self, env: &[OsString]) -> String {
        let mut prefix = String::new();
        for entry in env {
            let bytes = entry.as_bytes();
            let Some(eq) = bytes.iter().position(|b| *b == b'=') else {
                continue;
            };
            let (name, value) = (&bytes[..eq], &bytes[eq + 1..]);
            if !runs_code(name) {
                continue;
            }
            let unchanged = self
                .base
                .iter()
                .any(|(known, was)| known.as_bytes() == name && was.as_bytes() == value);
            if !unchanged {
                prefix.push_str(&String::from_utf8_lossy(bytes));
                prefix.push(' ');
            }
        }
        prefix
    }

    /// The predicted part that admits one of this program's spellings, if any.
    fn predicted_by(&self, exec: &Exec) -> Option<Resource> {
        self.setup
            .predicted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .find(|part| exec.predictable.iter().any(|form| part.admits(form)))
            .cloned()
    }

    /// Whether the rules asked for `part` before the line ran (so a person, or `--auto`,
    /// approved it: the assertion succeeded).
    fn was_asked(&self, part: &Resource) -> bool {
        let request = PermissionRequest::new("bash")
            .holed([part.clone()])
            .enforced_later(true);
        self.setup
            .permissions
            .decide(&self.setup.ctx, &request)
            .is_none_or(|decision| decision.verdict == Verdict::Ask)
    }

    /// Records that the process `key` now runs an allowed program.
    fn started(&self, key: Option<ProcessKey>, lineage: &Lineage, display: &str) {
        if let Some(key) = key {
            let now = match lineage {
                Lineage::Line => Lineage::Under(display.to_string()),
                under => under.clone(),
            };
            let mut shared = lock(&self.shared);
            shared.processes.insert(key, now);
            shared.pids.insert(key.0, key);
        }
    }

    /// Where process `pid` stands: its own record, else its nearest known ancestor's; a
    /// process whose ancestry cannot be followed is taken as the line's own (asked).
    fn lineage(&self, pid: u32, caller: Option<Caller>) -> (Lineage, Option<ProcessKey>) {
        let known = caller.map(|caller| Process {
            tgid: caller.tgid,
            ppid: caller.ppid,
            start: caller.start,
        });
        let Some(me) = known.or_else(|| identity(pid)) else {
            return (Lineage::Line, None);
        };
        (self.lineage_of(&me), Some(me.key()))
    }

    fn lineage_of(&self, me: &Process) -> Lineage {
        let mut shared = lock(&self.shared);
        if let Some(known) = shared.processes.get(&me.key()) {
            return known.clone();
        }
        // The parent of a living process is the one its `PPid` names now (a parent that
        // dies leaves its children to another), so a parent known by pid needs no read.
        if let Some(known) = shared
            .pids
            .get(&me.ppid)
            .and_then(|key| shared.processes.get(key))
            .cloned()
        {
            shared.processes.insert(me.key(), known.clone());
            shared.pids.insert(me.tgid, me.key());
            return known;
        }
        let mut parent = me.ppid;
        for _ in 0..MAX_DEPTH {
            let Some(up) = identity(parent) else { break };
            if let Some(known) = shared.processes.get(&up.key()).cloned() {
                shared.processes.insert(me.key(), known.clone());
                shared.pids.insert(me.tgid, me.key());
                return known;
            }
            if up.ppid == 0 || up.ppid == parent {
                break;
            }
            parent = up.ppid;
        }
        Lineage::Line
    }

    /// Puts the program to the person (it waits in `execve` meanwhile).
    fn ask(&mut self, call: ExecCall, lineage: Lineage, execs: Vec<Exec>, display: String, deciding: Vec<String>) {
        let Some(runtime) = self.runtime.clone() else {
            let _ = self.listener.refuse(call.id, libc_eperm());
            self.record_refusal(&deciding, &display, Verdict::Ask);
            self.note(format!(
                "toolgate refused to start `{display}`: no one can be asked here"
            ));
            return;
        };
        {
            let mut shared = lock(&self.shared);
            if let Some(waiting) = shared.asking.get_mut(&display) {
                // The same program again (a signal restarted its `execve`): one question.
                waiting.push(call.id);
                return;
            }
            shared.asking.insert(display.clone(), vec![call.id]);
        }
        let started_by = match &lineage {
            Lineage::Line => "the command line itself, where the analysis did not see it".to_string(),
            Lineage::Under(parent) => format!("`{parent}`"),
        };
        let save = execs.first().and_then(|exec| exec.save.clone());
        // The spellings the decision was made on: asked with its rule name alone, a rule
        // written against the path (`/usr/bin/touch *: ask`) would not see the question
        // and the rules would answer it.
        let mut forms: Vec<String> = Vec::new();
        for form in deciding {
            if !forms.contains(&form) {
                forms.push(form);
            }
        }
        if forms.is_empty() {
            forms.push(display.clone());
        }
        let mut request = PermissionRequest::new("bash")
            .resources(forms.iter().cloned())
            .metadata("command", display.clone())
            .metadata("started_by", started_by)
            .metadata("exec", call.program.to_string_lossy().into_owned());
        request = match save {
            // "Always" saves the name's prefix and each asked spelling's (a rule written
            // for the path, `/usr/bin/touch *: ask`, is met by the saved `/usr/bin/touch *`).
            Some(save) => {
                let mut saves = vec![save];
                for form in &forms {
                    let words: Vec<&str> = form.split(' ').collect();
                    if let Some(pattern) = spellings(&words).save
                        && !saves.contains(&pattern)
                    {
                        saves.push(pattern);
                    }
                }
                request.save(saves)
            }
            None => request.unsaveable(forms),
        };
        let permissions = Arc::clone(&self.setup.permissions);
        let ctx = self.setup.ctx.clone();
        let listener = Arc::clone(&self.listener);
        let shared = Arc::clone(&self.shared);
        let asks = Arc::clone(&self.asks);
        let asked_for = Arc::clone(&self.asked_for);
        let pid = call.pid;
        asks.fetch_add(1, Ordering::SeqCst);
        let task = runtime.spawn(async move {
            let began = Instant::now();
            let answer = permissions.assert(&ctx, request).await;
            asks.fetch_sub(1, Ordering::SeqCst);
            if let Ok(mut total) = asked_for.lock() {
                *total += began.elapsed();
            }
            let mut shared = lock(&shared);
            let ids = shared.asking.remove(&display).unwrap_or_default();
            match answer {
                Ok(()) => {
                    shared.approved.push(display.clone());
                    if let Some(key) = identity(pid).map(|p| p.key()) {
                        let now = match lineage {
                            Lineage::Line => Lineage::Under(display.clone()),
                            under => under,
                        };
                        shared.processes.insert(key, now);
                    }
                    for id in ids {
                        let _ = listener.allow(id);
                    }
                }
                Err(refusal) => {
                    for id in ids {
                        let _ = listener.refuse(id, libc_eperm());
                    }
                    shared.report.refused += 1;
                    if shared.report.notes.len() < MAX_NOTES {
                        shared.report.notes.push(format!(
                            "toolgate refused to start `{display}` when it started: {refusal}"
                        ));
                    }
                }
            }
        });
        self.tasks.retain(|task| !task.is_finished());
        self.tasks.push(task);
    }
}

/// How strict a verdict is.
fn rank(verdict: Verdict) -> u8 {
    match verdict {
        Verdict::Allow => 0,
        Verdict::Ask => 1,
        Verdict::Deny => 2,
    }
}

fn libc_eperm() -> i32 {
    rustix::io::Errno::PERM.raw_os_error()
}

fn libc_enoent() -> i32 {
    rustix::io::Errno::NOENT.raw_os_error()
}

/// A process as `/proc` tells it.
struct Process {
    tgid: u32,
    ppid: u32,
    start: u64,
}

impl Process {
    fn key(&self) -> ProcessKey {
        (self.tgid, self.start)
    }
}

/// The thread group, parent and start time of thread `pid`: one read of its `stat` (an
/// exec is on the hot path) for a single-threaded process, which is its own group; the
/// `status` file and the leader's `stat` only for a thread of a larger one.
fn identity(pid: u32) -> Option<Process> {
    let mut buffer = [0u8; 4096];
    let stat = read_proc(&format!("/proc/{pid}/stat"), &mut buffer)?;
    // The fields after the parenthesised name: state is field 3, ppid 4, threads 20,
    // start time 22.
    let ppid = proc_field(stat, 1)?;
    let threads: u32 = proc_field(stat, 17)?;
    let start = proc_field(stat, 19)?;
    if threads <= 1 {
        return Some(Process { tgid: pid, ppid, start });
    }
    let mut buffer = [0u8; 4096];
    let status = std::str::from_utf8(read_proc(&format!("/proc/{pid}/status"), &mut buffer)?).ok()?;
    let tgid: u32 = status
        .lines()
        .find_map(|line| line.strip_prefix("Tgid:"))
        .and_then(|value| value.trim().parse().ok())?;
    if tgid == pid {
        return Some(Process { tgid, ppid, start });
    }
    let mut buffer = [0u8; 4096];
    let leader = read_proc(&format!("/proc/{tgid}/stat"), &mut buffer)?;
    let start = proc_field(leader, 19)?;
    Some(Process { tgid, ppid, start })
}

/// An argument as the path it names: a `file://` URL's path, `%XX` escapes decoded
/// (`node --import=file:///…`); anything else as it is.
fn file_url_path(value: &[u8]) -> OsString {
    let Some(rest) = value.strip_prefix(b"file://") else {
        return OsStr::from_bytes(value).to_os_string();
    };
    let rest = rest.strip_prefix(b"localhost").unwrap_or(rest);
    let mut path = Vec::with_capacity(rest.len());
    let mut at = 0;
    while at < rest.len() {
        let decoded = (rest[at] == b'%')
            .then(|| rest.get(at + 1..at + 3))
            .flatten()
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match decoded {
            Some(byte) => {
                path.push(byte);
                at += 3;
            }
            None => {
                path.push(rest[at]);
                at += 1;
            }
        }
    }
    OsString::from_vec(path)
}

/// True for the dynamic loader's name (`ld-linux-x86-64.so.2`, `ld-musl-*.so.1`,
/// `ld.so`); the caller checks the path as given and as resolved.
fn is_loader(program: &Path) -> bool {
    let name = program.file_name().and_then(OsStr::to_str).unwrap_or_default();
    name == "ld.so" || (name.starts_with("ld-") && name.contains(".so"))
}

/// The program a dynamic loader's arguments ask it to run (after its own options).
fn loader_program(argv: &[OsString]) -> Option<OsString> {
    const WITH_VALUE: &[&str] = &[
        "--library-path",
        "--inhibit-rpath",
        "--audit",
        "--preload",
        "--argv0",
        "--glibc-hwcaps-prepend",
        "--glibc-hwcaps-mask",
    ];
    let mut args = argv.iter().skip(1);
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy();
        if WITH_VALUE.contains(&text.as_ref()) {
            args.next();
            continue;
        }
        if text.starts_with("--") {
            continue;
        }
        return Some(arg.clone());
    }
    None
}

#[cfg(test)]
mod tests;
