//! From what the sandbox recorded to [`Event`]s: strace lines (programs executed, files
//! opened, written, created, renamed, deleted), bash's xtrace (builtins), the stubs' log
//! and git's `GIT_TRACE` (the command git really ran, after aliases and global options).
//!
//! Paths are classified by where they are: the project (a `read`/`edit` of the path
//! relative to it), the harness (ignored), the system (reads ignored: every program
//! loads libraries and locale files), or outside (`external_directory` of its directory,
//! plus `read`/`edit` of the absolute path). Reads outside the project count only outside
//! the system directories; writes count everywhere but the harmless sinks (`/dev/null`,
//! pipes, a terminal).

use std::collections::{BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};

use super::soundness::{Event, analysis_exempt};

/// What the observation of one line needs to know about where it ran.
pub struct Scene<'a> {
    /// The project directory (canonical).
    pub project: &'a Path,
    /// The line's directory: the project's parent, with `home/`, `outside/`, `tmp/`.
    pub line_dir: &'a Path,
    /// The harness directory of the worker (stubs, logs).
    pub harness: &'a Path,
    /// Directories whose reads are the system's business (libraries, interpreters).
    pub system: &'a [PathBuf],
    /// Git's own exec path (its helpers are git).
    pub git_exec_path: Option<&'a Path>,
    /// The line, to recognise the shell the driver started for it.
    pub line: &'a str,
    /// Bash's builtins (`compgen -b`).
    pub builtins: &'a BTreeSet<String>,
    /// Environment values the harness sets (`GIT_TRACE`, `HOME`, …): not an
    /// attack when a program sees them.
    pub baseline: &'a HashMap<String, String>,
}

/// One decoded strace call.
#[derive(Clone, Debug, PartialEq)]
struct Call {
    pid: u32,
    name: String,
    args: Vec<Value>,
    ret: i64,
    ret_path: Option<String>,
}

/// A strace argument.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    /// A quoted string, decoded.
    Str(String),
    /// An array of values.
    Array(Vec<Value>),
    /// Anything else, as printed; `path` is its `<…>` decoration.
    Other { text: String, path: Option<String> },
}

impl Value {
    fn str(&self) -> Option<&str> {
        match self {
            Value::Str(text) => Some(text),
            _ => None,
        }
    }

    fn text(&self) -> &str {
        match self {
            Value::Other { text, .. } => text,
            _ => "",
        }
    }

    fn path(&self) -> Option<&str> {
        match self {
            Value::Other { path, .. } => path.as_deref(),
            _ => None,
        }
    }

    fn strings(&self) -> Vec<String> {
        match self {
            Value::Array(items) => items.iter().filter_map(|item| item.str().map(str::to_string)).collect(),
            _ => Vec::new(),
        }
    }
}

/// The state of a strace log across its lines: calls split by another process's line
/// (`<unfinished ...>` … `<... resumed>`) and each process's directory.
///
/// Forks are not traced (in a pid namespace strace reports the child's pid in the
/// parent's numbering, and translating costs more than the rest of the trace): a
/// process's directory comes from the `AT_FDCWD</dir>` decoration of its calls (every
/// program's loader makes one before `main`) and its `chdir`s; a relative path of a
/// process whose directory is still unknown is taken relative to the project.
#[derive(Default)]
pub struct Tracer {
    pending: HashMap<u32, String>,
    cwd: HashMap<u32, PathBuf>,
    project: PathBuf,
    /// Each process's last program (the path as passed to `execve`, the file, its argv):
    /// an `env` shebang's interpreter is a second `execve` of the same process.
    programs: HashMap<u32, (String, PathBuf, Vec<String>)>,
}

/// The pid and the marker name when `line` is the driver's open of a marker file
/// (`…/mark/begin.17`).
pub fn marker(line: &[u8]) -> Option<(u32, String)> {
    let text = std::str::from_utf8(line).ok()?;
    let at = text.find("/mark/")?;
    let rest = &text[at + 6..];
    let end = rest.find('"')?;
    let pid = text.split_whitespace().next()?.parse().ok()?;
    Some((pid, rest[..end].to_string()))
}

impl Tracer {
    /// A tracer for a line run in `project`.
    pub fn new(project: &Path) -> Tracer {
        Tracer {
            project: project.to_path_buf(),
            ..Tracer::default()
        }
    }

    /// Decodes one line of `strace -f -y` output; `None` for lines that are not a
    /// finished call (a call split by another process, a signal, an exit).
    fn call(&mut self, line: &str) -> Option<Call> {
        let line = line.trim_end_matches(['\n', '\r']);
        let (pid, rest) = line.trim_start().split_once(' ')?;
        let pid: u32 = pid.parse().ok()?;
        let rest = rest.trim_start();
        if rest.starts_with("+++") || rest.starts_with("---") {
            return None;
        }
        let full = if let Some(resumed) = rest.strip_prefix("<... ") {
            let (_, tail) = resumed.split_once(" resumed>")?;
            let head = self.pending.remove(&pid)?;
            format!("{head}{tail}")
        } else if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            self.pending.insert(pid, head.to_string());
            return None;
        } else {
            rest.to_string()
        };
        parse_call(pid, &full)
    }

    /// The events of one line's strace lines (between its marks), the driver's own
    /// calls (`driver`) and the shell it starts for the line left out.
    pub fn events(&mut self, lines: &[Vec<u8>], driver: u32, scene: &Scene<'_>, events: &mut Vec<Event>) {
        let mut shell_seen = false;
        for raw in lines {
            let text = String::from_utf8_lossy(raw);
            let Some(call) = self.call(&text) else {
                continue;
            };
            self.note_cwd(&call);
            if call.pid == driver {
                continue;
            }
            // The subshell the driver forks becomes the line's shell; before that it only
            // touches the harness (its trace and output files), which no zone counts.
            if !shell_seen && call.name == "execve" && call.ret == 0 {
                let argv = call.args.get(1).map(Value::strings).unwrap_or_default();
                if argv.len() == 5 && argv[..4] == ["bash", "--norc", "--noprofile", "-c"] && argv[4] == scene.line {
                    shell_seen = true;
                    continue;
                }
            }
            self.observe(&call, scene, events);
        }
    }

    fn note_cwd(&mut self, call: &Call) {
        for arg in &call.args {
            if let Value::Other { text, path: Some(path) } = arg
                && text == "AT_FDCWD"
            {
                self.cwd.insert(call.pid, PathBuf::from(path));
            }
        }
        if call.ret == 0 {
            match call.name.as_str() {
                "chdir" => {
                    if let Some(path) = call.args.first().and_then(Value::str) {
                        let next = self.absolute(call.pid, path);
                        self.cwd.insert(call.pid, next);
                    }
                }
                "fchdir" => {
                    if let Some(path) = call.args.first().and_then(Value::path) {
                        self.cwd.insert(call.pid, PathBuf::from(path));
                    }
                }
                _ => {}
            }
        }
    }

    fn absolute(&self, pid: u32, path: &str) -> PathBuf {
        let path = Path::new(path);
        if path.is_absolute() {
            return normalize(path);
        }
        match self.cwd.get(&pid) {
            Some(cwd) => normalize(&cwd.join(path)),
            None => normalize(&self.project.join(path)),
        }
    }

    /// A path argument of an `…at` call: relative to its directory descriptor.
    fn at_path(&self, pid: u32, dirfd: Option<&Value>, path: &str) -> PathBuf {
        if Path::new(path).is_absolute() {
            return normalize(Path::new(path));
        }
        match dirfd.and_then(Value::path) {
            Some(dir) if !dir.contains(":[") => normalize(&Path::new(dir).join(path)),
            _ => self.absolute(pid, path),
        }
    }

    fn observe(&mut self, call: &Call, scene: &Scene<'_>, events: &mut Vec<Event>) {
        let args = &call.args;
        let string = |index: usize| args.get(index).and_then(Value::str);
        let via = |what: &str| format!("{} {what} (pid {})", call.name, call.pid);
        match call.name.as_str() {
            "execve" | "execveat" if call.ret == 0 => {
                let (path, argv, env) = if call.name == "execve" {
                    (string(0), args.get(1), args.get(2))
                } else {
                    (string(1), args.get(2), args.get(3))
                };
                let Some(path) = path else { return };
                let argv = argv.map(Value::strings).unwrap_or_default();
                let env = env.map(Value::strings).unwrap_or_default();
                let executable = self.absolute(call.pid, path);
                let previous = self
                    .programs
                    .insert(call.pid, (path.to_string(), executable.clone(), argv.clone()));
                if let Some((script_path, script, script_argv)) = previous
                    && runs_script(&script_path, &script, &script_argv, &executable, &argv)
                {
                    // The interpreter of the script just run: the same command, already an event.
                    return;
                }
                if let Some(event) = exec_event(&executable, &argv, &env, scene, via(path).as_str()) {
                    events.push(event);
                }
            }
            "openat" | "openat2" | "open" | "creat" => {
                let (dirfd, path, flags) = match call.name.as_str() {
                    "openat" => (args.first(), string(1), args.get(2).map(Value::text).unwrap_or("")),
                    "openat2" => (
                        args.first(),
                        string(1),
                        args.get(2)
                            .map(|value| match value {
                                Value::Other { text, .. } => text.as_str(),
                                _ => "",
                            })
                            .unwrap_or(""),
                    ),
                    "creat" => (None, string(0), "O_WRONLY|O_CREAT|O_TRUNC"),
                    _ => (None, string(0), args.get(1).map(Value::text).unwrap_or("")),
                };
                let Some(path) = path else { return };
                let named = self.at_path(call.pid, dirfd, path);
                let resolved = call.ret_path.as_deref().map(PathBuf::from);
                let writes = ["O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"]
                    .iter()
                    .any(|flag| flags.contains(flag));
                let reads = !flags.contains("O_WRONLY");
                let directory = flags.contains("O_DIRECTORY");
                let what = via(&format!("{path} {flags}"));
                if reads {
                    file_event(
                        Access::Read,
                        &named,
                        resolved.as_deref(),
                        directory,
                        scene,
                        &what,
                        events,
                    );
                }
                if writes {
                    file_event(
                        Access::Write,
                        &named,
                        resolved.as_deref(),
                        directory,
                        scene,
                        &what,
                        events,
                    );
                }
            }
            "unlink" | "rmdir" | "mkdir" | "truncate" | "chmod" | "chown" | "lchown" => {
                if let Some(path) = string(0) {
                    let named = self.absolute(call.pid, path);
                    let cache = call.name == "mkdir" && is_package_cache(&named, scene);
                    file_event(Access::Write, &named, None, cache, scene, &via(path), events);
                }
            }
            "unlinkat" | "mkdirat" | "fchmodat" | "fchownat" | "utimensat" | "mknodat" => {
                if let Some(path) = string(1) {
                    let named = self.at_path(call.pid, args.first(), path);
                    let cache = call.name == "mkdirat" && is_package_cache(&named, scene);
                    file_event(Access::Write, &named, None, cache, scene, &via(path), events);
                }
            }
            "rename" | "link" => {
                if let (Some(old), Some(new)) = (string(0), string(1)) {
                    let old_path = self.absolute(call.pid, old);
                    let new_path = self.absolute(call.pid, new);
                    let access = if call.name == "rename" {
                        Access::Write
                    } else {
                        Access::Read
                    };
                    file_event(access, &old_path, None, false, scene, &via(old), events);
                    file_event(Access::Write, &new_path, None, false, scene, &via(new), events);
                }
            }
            "renameat" | "renameat2" | "linkat" => {
                if let (Some(old), Some(new)) = (string(1), string(3)) {
                    let old_path = self.at_path(call.pid, args.first(), old);
                    let new_path = self.at_path(call.pid, args.get(2), new);
                    let access = if call.name == "linkat" {
                        Access::Read
                    } else {
                        Access::Write
                    };
                    file_event(access, &old_path, None, false, scene, &via(old), events);
                    file_event(Access::Write, &new_path, None, false, scene, &via(new), events);
                }
            }
            "symlink" => {
                if let Some(new) = string(1) {
                    let new_path = self.absolute(call.pid, new);
                    file_event(Access::Write, &new_path, None, false, scene, &via(new), events);
                }
            }
            "symlinkat" => {
                if let Some(new) = string(2) {
                    let new_path = self.at_path(call.pid, args.get(1), new);
                    file_event(Access::Write, &new_path, None, false, scene, &via(new), events);
                }
            }
            _ => {}
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

/// Lexical normalisation: `.` dropped, `..` pops (symlinks are the resolved form's job).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Where a path is, as far as the rules go.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Zone {
    /// Inside the project: the resource relative to it.
    Project(String),
    /// Outside: the display path and the `external_directory` resource.
    Outside(String, String),
    /// Nothing the rules are about.
    Ignored,
}

const SINKS: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/random",
    "/dev/urandom",
];

/// Files under `home/` that programs read on their own (configuration, caches).
const HOME_CONFIG: &[&str] = &[
    ".gitconfig",
    ".config",
    ".local",
    ".cache",
    ".python_history",
    ".node_repl_history",
    ".npmrc",
    ".inputrc",
    ".terminfo",
    ".pyenv",
];

fn display(path: &Path, scene: &Scene<'_>) -> String {
    match path.strip_prefix(scene.line_dir) {
        Ok(rest) => format!("/sandbox/{}", rest.to_string_lossy()),
        Err(_) => path.to_string_lossy().into_owned(),
    }
}

fn classify(path: &Path, access: Access, directory: bool, scene: &Scene<'_>) -> Zone {
    let text = path.to_string_lossy();
    if text.contains(":[") || text.starts_with("anon_inode:") {
        return Zone::Ignored;
    }
    if let Ok(rest) = path.strip_prefix(scene.project) {
        let rest = rest.to_string_lossy().replace('\\', "/");
        return Zone::Project(if rest.is_empty() { ".".into() } else { rest });
    }
    if path.starts_with(scene.harness) {
        return Zone::Ignored;
    }
    if SINKS.contains(&text.as_ref())
        || text.starts_with("/dev/fd/")
        || text.starts_with("/dev/pts/")
        || text.starts_with("/proc/self/fd/")
        || (text.starts_with("/proc/") && text.contains("/fd/"))
    {
        return Zone::Ignored;
    }
    if let Ok(rest) = path.strip_prefix(scene.line_dir) {
        let mut parts = rest.components();
        let first = parts.next().map(|c| c.as_os_str().to_string_lossy().into_owned());
        let second = parts.next().map(|c| c.as_os_str().to_string_lossy().into_owned());
        match (first.as_deref(), second.as_deref()) {
            // Bash's own heredoc files.
            (Some("tmp"), Some(name)) if name.starts_with("sh-thd") => return Zone::Ignored,
            (Some("home"), Some(name)) if access == Access::Read && HOME_CONFIG.contains(&name) => {
                return Zone::Ignored;
            }
            _ => {}
        }
    } else if access == Access::Read && scene.system.iter().any(|system| path.starts_with(system)) {
        return Zone::Ignored;
    }
    let dir = if directory {
        path.to_path_buf()
    } else {
        path.parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| path.to_path_buf())
    };
    let dir = display(&dir, scene);
    Zone::Outside(display(path, scene), format!("{}/*", dir.trim_end_matches('/')))
}

/// One file access as events: `read`/`edit` of every form (named and resolved, and the
/// named path with its directory resolved on the host), and `external_directory` of every
/// outside form.
fn file_event(
    access: Access,
    named: &Path,
    resolved: Option<&Path>,
    directory: bool,
    scene: &Scene<'_>,
    via: &str,
    events: &mut Vec<Event>,
) {
    let mut paths = vec![named.to_path_buf()];
    if let Some(resolved) = resolved {
        paths.push(resolved.to_path_buf());
    }
    if named.starts_with(scene.line_dir)
        && let (Some(parent), Some(name)) = (named.parent(), named.file_name())
        && let Ok(real) = std::fs::canonicalize(parent)
    {
        paths.push(real.join(name));
    }
    let mut forms = Vec::new();
    let mut outside = Vec::new();
    for path in &paths {
        match classify(path, access, directory, scene) {
            Zone::Project(resource) => forms.push(resource),
            Zone::Outside(path, dir) => {
                forms.push(path);
                outside.push(dir);
            }
            Zone::Ignored => {}
        }
    }
    dedup(&mut forms);
    dedup(&mut outside);
    let action = match access {
        Access::Read => "read",
        Access::Write => "edit",
    };
    if !forms.is_empty() {
        events.push(Event {
            action: action.into(),
            forms,
            via: via.to_string(),
        });
    }
    if !outside.is_empty() {
        events.push(Event {
            action: "external_directory".into(),
            forms: outside,
            via: via.to_string(),
        });
    }
}

/// Whether `path` is a package manager's cache in the line's home
/// (`toolgate_permission::PACKAGE_CACHES`): creating one is working in it, the way the
/// analysis asks for it (README "The bash tool"), not in the home, since the program names
/// the new entry and touches nothing else of the home.
fn is_package_cache(path: &Path, scene: &Scene<'_>) -> bool {
    let home = scene.line_dir.join("home");
    path.strip_prefix(&home).is_ok_and(|rest| {
        toolgate_permission::PACKAGE_CACHES
            .iter()
            .any(|cache| rest == Path::new(cache))
    })
}

fn dedup(items: &mut Vec<String>) {
    let mut seen = BTreeSet::new();
    items.retain(|item| seen.insert(item.clone()));
}

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Git's options before the subcommand: with a value, and without.
const GIT_OPTIONS_WITH_VALUE: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--config-env",
    "--attr-source",
    "--list-cmds",
];
const GIT_FLAGS: &[&str] = &[
    "-p",
    "-P",
    "--paginate",
    "--no-pager",
    "--bare",
    "--no-replace-objects",
    "--literal-pathspecs",
    "--glob-pathspecs",
    "--noglob-pathspecs",
    "--icase-pathspecs",
    "--no-optional-locks",
    "--no-lazy-fetch",
    "--no-advice",
];

/// `git <global options> sub args` → `sub args` (what the rules mean by `git push`).
pub fn git_without_global_options(args: &[String]) -> Vec<String> {
    let mut index = 0;
    while index < args.len() {
        let arg = args[index].as_str();
        if GIT_FLAGS.contains(&arg) || arg.starts_with("--exec-path") {
            index += 1;
        } else if GIT_OPTIONS_WITH_VALUE.contains(&arg) {
            index += 2;
        } else if let Some((name, _)) = arg.split_once('=')
            && GIT_OPTIONS_WITH_VALUE.contains(&name)
        {
            index += 1;
        } else {
            break;
        }
    }
    args[index.min(args.len())..].to_vec()
}

/// Environment variables that make a program run other code or write elsewhere, by
/// program: the prefix form of an exec names them, so only a rule for that exact text (or
/// `*`) covers it. (`SHELLOPTS` is not among them: the oracle exports it itself to trace
/// every shell, and no shell option runs code.)
fn dangerous(program: &str, name: &str) -> bool {
    if name.starts_with("LD_") {
        return true;
    }
    match program {
        "git" => name.starts_with("GIT_") || matches!(name, "EDITOR" | "VISUAL" | "PAGER" | "HOME" | "XDG_CONFIG_HOME"),
        "bash" | "sh" | "dash" => {
            name.starts_with("BASH_FUNC_")
                || matches!(name, "BASH_ENV" | "ENV" | "BASHOPTS" | "PS4" | "PROMPT_COMMAND" | "IFS")
        }
        _ if program.starts_with("python") => name.starts_with("PYTHON"),
        "node" => name.starts_with("NODE_"),
        "perl" => name.starts_with("PERL"),
        _ => false,
    }
}

/// Whether the `execve` of `executable` with `argv` is how a script's `#!` line runs it:
/// the script (`script`, run as `script_path` with `script_argv`) starts with
/// `#!/usr/bin/env NAME` (or `#!/path/NAME`, with at most one argument), and this call
/// runs that interpreter on that script with the script's own arguments. Then it is the
/// script's command, not another one (`npm run build` runs `node /usr/bin/npm run build`
/// through `env`). Anything else — another program, other arguments, `env -S`, a file
/// that cannot be read — stays a command of its own.
fn runs_script(script_path: &str, script: &Path, script_argv: &[String], executable: &Path, argv: &[String]) -> bool {
    let Some(line) = shebang(script) else {
        return false;
    };
    // The kernel splits a `#!` line once: the interpreter, then the rest as one argument.
    let line = line.trim();
    let (interpreter, optional) = match line.split_once([' ', '\t']) {
        Some((interpreter, rest)) => (interpreter, Some(rest.trim())),
        None => (line, None),
    };
    let (program, options): (&str, Vec<&str>) = if basename(interpreter) == "env" {
        // `env` gets that one argument and runs it as a program name: one plain word.
        match optional {
            Some(name) if !name.is_empty() && !name.starts_with('-') && !name.contains(['=', ' ', '\t']) => {
                (name, Vec::new())
            }
            _ => return false,
        }
    } else {
        (
            interpreter,
            optional.into_iter().filter(|rest| !rest.is_empty()).collect(),
        )
    };
    let runs_it = if program.contains('/') {
        executable == Path::new(program)
    } else {
        basename(&executable.to_string_lossy()) == program
    };
    let mut expected = options;
    expected.push(script_path);
    expected.extend(script_argv.iter().skip(1).map(String::as_str));
    runs_it && argv.len() == expected.len() + 1 && argv[1..].iter().zip(&expected).all(|(a, b)| a == b)
}

/// The `#!` line of a file, without `#!`, when it has one.
fn shebang(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let mut file = std::fs::File::open(path).ok()?;
    let read = file.read(&mut head).ok()?;
    let head = &head[..read];
    let rest = head.strip_prefix(b"#!")?;
    let end = rest.iter().position(|b| *b == b'\n')?;
    String::from_utf8(rest[..end].to_vec()).ok()
}

fn exec_event(executable: &Path, argv: &[String], env: &[String], scene: &Scene<'_>, via: &str) -> Option<Event> {
    if let Some(exec_path) = scene.git_exec_path
        && executable.starts_with(exec_path)
    {
        return None;
    }
    let path_text = executable.to_string_lossy();
    let program = basename(&path_text).to_string();
    let args: &[String] = if argv.is_empty() { &[] } else { &argv[1..] };
    let join = |name: &str, rest: &[String]| {
        let mut text = name.to_string();
        for arg in rest {
            text.push(' ');
            text.push_str(arg);
        }
        text
    };
    // A program in the line's own directories (the project, the home next to it) is not
    // the program of that name on `PATH`: it is named by its path only, as exec-time
    // enforcement names it (a rule on `test.sh` is not about `./scripts/test.sh`).
    let writable = path_text.starts_with(&*scene.line_dir.to_string_lossy());
    let mut forms = Vec::new();
    if !writable {
        forms.push(join(&program, args));
    }
    if let Some(first) = argv.first() {
        forms.push(join(first, args));
        if !writable {
            forms.push(join(basename(first), args));
        }
    }
    if writable {
        forms.push(join(&display(executable, scene), args));
    }
    if program == "git" {
        forms.push(join("git", &git_without_global_options(args)));
    }
    let mut prefix = String::new();
    for entry in env {
        let Some((name, value)) = entry.split_once('=') else {
            continue;
        };
        if dangerous(&program, name) && scene.baseline.get(name).map(String::as_str) != Some(value) {
            prefix.push_str(entry);
            prefix.push(' ');
        }
    }
    if !prefix.is_empty() {
        forms.push(format!("{prefix}{}", join(&program, args)));
    }
    dedup(&mut forms);
    Some(Event {
        action: "bash".into(),
        forms,
        via: format!("execve {via}"),
    })
}

// ------------------------------------------------------------------ strace syntax

fn parse_call(pid: u32, text: &str) -> Option<Call> {
    let open = text.find('(')?;
    let name = text[..open].to_string();
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return None;
    }
    let bytes = text.as_bytes();
    let mut at = open + 1;
    let mut args = Vec::new();
    loop {
        skip_blanks(bytes, &mut at);
        if bytes.get(at) == Some(&b')') {
            at += 1;
            break;
        }
        let value = parse_value(text, &mut at)?;
        args.push(value);
        skip_blanks(bytes, &mut at);
        match bytes.get(at) {
            Some(b',') => at += 1,
            Some(b')') => {
                at += 1;
                break;
            }
            _ => return None,
        }
    }
    let rest = text[at..].trim_start();
    let rest = rest.strip_prefix('=')?.trim_start();
    let number_end = rest
        .char_indices()
        .find(|(index, c)| !(c.is_ascii_digit() || (*index == 0 && *c == '-')))
        .map_or(rest.len(), |(index, _)| index);
    let ret: i64 = rest[..number_end].parse().ok()?;
    let mut ret_path = None;
    if rest[number_end..].starts_with('<') {
        let mut at = number_end;
        ret_path = decoration(rest, &mut at);
    }
    Some(Call {
        pid,
        name,
        args,
        ret,
        ret_path,
    })
}

fn skip_blanks(bytes: &[u8], at: &mut usize) {
    while bytes.get(*at).is_some_and(|b| *b == b' ') {
        *at += 1;
    }
}

fn parse_value(text: &str, at: &mut usize) -> Option<Value> {
    let bytes = text.as_bytes();
    match bytes.get(*at)? {
        b'"' => {
            let decoded = quoted(text, at)?;
            // A string cut at `-s` is followed by `...`.
            if text[*at..].starts_with("...") {
                *at += 3;
            }
            Some(Value::Str(decoded))
        }
        b'[' => {
            *at += 1;
            let mut items = Vec::new();
            loop {
                skip_blanks(bytes, at);
                match bytes.get(*at)? {
                    b']' => {
                        *at += 1;
                        break;
                    }
                    b',' => *at += 1,
                    _ => items.push(parse_value(text, at)?),
                }
            }
            Some(Value::Array(items))
        }
        b'{' => {
            let start = *at;
            let mut depth = 0usize;
            while let Some(b) = bytes.get(*at) {
                match b {
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            *at += 1;
                            break;
                        }
                    }
                    b'"' => {
                        quoted(text, at)?;
                        continue;
                    }
                    _ => {}
                }
                *at += 1;
            }
            Some(Value::Other {
                text: text[start..*at].to_string(),
                path: None,
            })
        }
        _ => {
            let start = *at;
            let mut path = None;
            let mut end = None;
            while let Some(b) = bytes.get(*at) {
                match b {
                    b',' | b')' | b']' => break,
                    b'<' => {
                        end.get_or_insert(*at);
                        path = decoration(text, at);
                        continue;
                    }
                    b'"' => {
                        quoted(text, at)?;
                        continue;
                    }
                    b'(' => {
                        // `makedev(0x1, 0x3)` and friends.
                        while let Some(b) = bytes.get(*at) {
                            *at += 1;
                            if *b == b')' {
                                break;
                            }
                        }
                        continue;
                    }
                    _ => {}
                }
                *at += 1;
            }
            let end = end.unwrap_or(*at);
            Some(Value::Other {
                text: text[start..end].trim().to_string(),
                path,
            })
        }
    }
}

/// A `<…>` decoration starting at `at` (`<` included), decoded.
fn decoration(text: &str, at: &mut usize) -> Option<String> {
    let bytes = text.as_bytes();
    if bytes.get(*at) != Some(&b'<') {
        return None;
    }
    *at += 1;
    let mut out = Vec::new();
    while let Some(&b) = bytes.get(*at) {
        match b {
            b'>' => {
                *at += 1;
                return Some(String::from_utf8_lossy(&out).into_owned());
            }
            b'\\' => {
                *at += 1;
                escape(bytes, at, &mut out)?;
            }
            _ => {
                out.push(b);
                *at += 1;
            }
        }
    }
    None
}

/// A `"…"` string starting at `at`, decoded.
fn quoted(text: &str, at: &mut usize) -> Option<String> {
    let bytes = text.as_bytes();
    if bytes.get(*at) != Some(&b'"') {
        return None;
    }
    *at += 1;
    let mut out = Vec::new();
    while let Some(&b) = bytes.get(*at) {
        match b {
            b'"' => {
                *at += 1;
                return Some(String::from_utf8_lossy(&out).into_owned());
            }
            b'\\' => {
                *at += 1;
                escape(bytes, at, &mut out)?;
            }
            _ => {
                out.push(b);
                *at += 1;
            }
        }
    }
    None
}

/// One escape after its backslash: `\n \t \r \v \f \" \\`, octal `\NNN`, hex `\xHH`.
fn escape(bytes: &[u8], at: &mut usize, out: &mut Vec<u8>) -> Option<()> {
    let b = *bytes.get(*at)?;
    *at += 1;
    match b {
        b'n' => out.push(b'\n'),
        b't' => out.push(b'\t'),
        b'r' => out.push(b'\r'),
        b'v' => out.push(0x0b),
        b'f' => out.push(0x0c),
        b'a' => out.push(0x07),
        b'b' => out.push(0x08),
        b'x' => {
            let hex = std::str::from_utf8(bytes.get(*at..*at + 2)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            *at += 2;
        }
        b'0'..=b'7' => {
            let mut value = u32::from(b - b'0');
            for _ in 0..2 {
                match bytes.get(*at) {
                    Some(d @ b'0'..=b'7') => {
                        value = value * 8 + u32::from(d - b'0');
                        *at += 1;
                    }
                    _ => break,
                }
            }
            out.push(value as u8);
        }
        other => out.push(other),
    }
    Some(())
}

// ------------------------------------------------------------------ xtrace, stubs, git

/// The words of bash xtrace output: records start a line with `+` (one more per level
/// of nesting) and a blank, then the words quoted the way bash quotes them (`'…'`,
/// `$'…'`, `\x`), a quoted word possibly spanning lines.
pub fn xtrace_records(text: &[u8]) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let mut at = 0;
    while at < text.len() {
        if text[at] != b'+' {
            // Not a record (a line wrote to the trace descriptor, or changed PS4): skip it.
            at = text[at..]
                .iter()
                .position(|b| *b == b'\n')
                .map_or(text.len(), |p| at + p + 1);
            continue;
        }
        while text.get(at) == Some(&b'+') {
            at += 1;
        }
        if text.get(at) == Some(&b' ') {
            at += 1;
        }
        let (words, next) = shell_words(text, at);
        at = next;
        records.push(words);
    }
    records
}

/// Splits shell-quoted words up to an unquoted newline; returns them and where it stopped.
pub fn shell_words(text: &[u8], mut at: usize) -> (Vec<String>, usize) {
    let mut words = Vec::new();
    let mut word: Vec<u8> = Vec::new();
    let mut in_word = false;
    while let Some(&b) = text.get(at) {
        match b {
            b'\n' => {
                at += 1;
                break;
            }
            b' ' | b'\t' => {
                if in_word {
                    words.push(String::from_utf8_lossy(&word).into_owned());
                    word.clear();
                    in_word = false;
                }
                at += 1;
            }
            b'\'' => {
                in_word = true;
                at += 1;
                while let Some(&c) = text.get(at) {
                    at += 1;
                    if c == b'\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            b'$' if text.get(at + 1) == Some(&b'\'') => {
                in_word = true;
                at += 2;
                while let Some(&c) = text.get(at) {
                    at += 1;
                    match c {
                        b'\'' => break,
                        b'\\' => {
                            if text.get(at) == Some(&b'e') || text.get(at) == Some(&b'E') {
                                word.push(0x1b);
                                at += 1;
                            } else if text.get(at) == Some(&b'\'') {
                                word.push(b'\'');
                                at += 1;
                            } else if escape(text, &mut at, &mut word).is_none() {
                                break;
                            }
                        }
                        _ => word.push(c),
                    }
                }
            }
            b'\\' => {
                in_word = true;
                if let Some(&c) = text.get(at + 1) {
                    word.push(c);
                }
                at += 2;
            }
            _ => {
                in_word = true;
                word.push(b);
                at += 1;
            }
        }
    }
    if in_word {
        words.push(String::from_utf8_lossy(&word).into_owned());
    }
    (words, at)
}

fn is_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else {
        return false;
    };
    let name = name.strip_suffix('+').unwrap_or(name);
    let name = name.split('[').next().unwrap_or(name);
    !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !name.as_bytes()[0].is_ascii_digit()
}

/// Builtins from xtrace records (programs come from `execve`, functions are their bodies).
/// The driver's own two records (`export SHELLOPTS`, `exec bash … -c LINE`) come first
/// and are left out.
pub fn builtin_events(records: &[Vec<String>], scene: &Scene<'_>, events: &mut Vec<Event>) {
    let own = |words: &Vec<String>| {
        words == &["export", "SHELLOPTS"]
            || (words.len() >= 5 && words[..5] == ["exec", "bash", "--norc", "--noprofile", "-c"])
    };
    let skip = records.iter().take(2).take_while(|words| own(words)).count();
    for words in &records[skip..] {
        let words: Vec<&String> = words.iter().skip_while(|word| is_assignment(word)).collect();
        let Some(first) = words.first() else {
            continue;
        };
        if !scene.builtins.contains(first.as_str()) || analysis_exempt(&words) {
            continue;
        }
        let text: Vec<&str> = words.iter().map(|word| word.as_str()).collect();
        events.push(Event {
            action: "bash".into(),
            forms: vec![text.join(" ")],
            via: "xtrace builtin".into(),
        });
    }
}

/// The stubs' log: `name\x1farg\x1farg\x1e` records.
pub fn stub_events(log: &[u8], events: &mut Vec<Event>) {
    for record in log.split(|b| *b == 0x1e) {
        if record.is_empty() {
            continue;
        }
        let words: Vec<String> = record
            .split(|b| *b == 0x1f)
            .map(|word| String::from_utf8_lossy(word).into_owned())
            .collect();
        events.push(Event {
            action: "bash".into(),
            forms: vec![words.join(" ")],
            via: "stub".into(),
        });
    }
}

/// `GIT_TRACE` lines `trace: built-in: git push origin` → the command git ran.
pub fn git_events(trace: &[u8], events: &mut Vec<Event>) {
    for line in trace.split(|b| *b == b'\n') {
        let text = String::from_utf8_lossy(line);
        let Some(at) = text.find("trace: built-in: ") else {
            continue;
        };
        let rest = text[at + "trace: built-in: ".len()..].as_bytes().to_vec();
        let (words, _) = shell_words(&rest, 0);
        if words.first().map(String::as_str) == Some("git") {
            events.push(Event {
                action: "bash".into(),
                forms: vec![words.join(" ")],
                via: "git trace".into(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strace_lines_are_decoded() {
        let call = parse_call(
            7,
            r#"openat(AT_FDCWD</tmp/p>, "we ird/a>b\"c\303\251", O_RDONLY) = 3</tmp/p/we ird/a\76b"c\303\251>"#,
        )
        .unwrap();
        assert_eq!(call.name, "openat");
        assert_eq!(call.args[0].path(), Some("/tmp/p"));
        assert_eq!(call.args[1].str(), Some("we ird/a>b\"cé"));
        assert_eq!(call.args[2].text(), "O_RDONLY");
        assert_eq!(call.ret_path.as_deref(), Some("/tmp/p/we ird/a>b\"cé"));
        let call = parse_call(
            7,
            r#"execve("/bin/rm", ["rm", "-f", "a\nb"], ["PATH=/bin", "X=1"]) = 0"#,
        )
        .unwrap();
        assert_eq!(call.args[1].strings(), ["rm", "-f", "a\nb"]);
        assert_eq!(call.args[2].strings(), ["PATH=/bin", "X=1"]);
        let call = parse_call(
            7,
            "openat(AT_FDCWD</x>, \"nope\", O_RDONLY) = -1 ENOENT (No such file or directory)",
        )
        .unwrap();
        assert_eq!(call.ret, -1);
        let call = parse_call(
            7,
            "clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD, child_tidptr=0x7f) = 9208",
        )
        .unwrap();
        assert_eq!(call.ret, 9208);
        let mut tracer = Tracer::default();
        assert_eq!(
            tracer.call("5 openat(AT_FDCWD</x>, \"a\", O_RDONLY <unfinished ...>"),
            None
        );
        let call = tracer.call("5 <... openat resumed>) = 3</x/a>").unwrap();
        assert_eq!(call.args[1].str(), Some("a"));
        assert_eq!(call.ret_path.as_deref(), Some("/x/a"));
    }

    /// The `bash` events of a trace of exec calls (one per line, `PID execve(…) = 0`).
    fn commands(trace: &[String]) -> Vec<Vec<String>> {
        let dir = std::path::Path::new("/nonexistent-project");
        let builtins = BTreeSet::new();
        let baseline = HashMap::new();
        let scene = Scene {
            project: dir,
            line_dir: dir,
            harness: dir,
            system: &[],
            git_exec_path: None,
            line: "x",
            builtins: &builtins,
            baseline: &baseline,
        };
        let lines: Vec<Vec<u8>> = trace.iter().map(|line| line.clone().into_bytes()).collect();
        let mut events = Vec::new();
        Tracer::new(dir).events(&lines, 1, &scene, &mut events);
        events
            .into_iter()
            .filter(|event| event.action == "bash")
            .map(|event| event.forms)
            .collect()
    }

    #[test]
    fn an_env_shebang_interpreter_is_the_scripts_own_command() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("tool");
        std::fs::write(&script, "#!/usr/bin/env node\nconsole.log(1)\n").unwrap();
        let script = script.to_str().unwrap();
        let exec = |pid: u32, path: &str, argv: &[&str]| {
            let argv: Vec<String> = argv.iter().map(|a| format!("{a:?}")).collect();
            format!("{pid} execve({path:?}, [{}], []) = 0", argv.join(", "))
        };
        // What the kernel and `env` do for `tool run build`: one command.
        let run = commands(&[
            exec(7, script, &["tool", "run", "build"]),
            exec(7, "/usr/bin/node", &["node", script, "run", "build"]),
        ]);
        assert_eq!(run.len(), 1, "{run:?}");
        assert!(run[0].contains(&"tool run build".to_string()), "{run:?}");
        // The script running node on other arguments, another program, or another
        // process running node: each its own command.
        for second in [
            exec(7, "/usr/bin/node", &["node", script, "run", "evil"]),
            exec(7, "/usr/bin/node", &["node", "-e", "x", script, "run", "build"]),
            exec(7, "/bin/rm", &["rm", script, "run", "build"]),
            exec(8, "/usr/bin/node", &["node", script, "run", "build"]),
        ] {
            let run = commands(&[exec(7, script, &["tool", "run", "build"]), second.clone()]);
            assert_eq!(run.len(), 2, "{second}: {run:?}");
        }
        // `env node x` typed in the line: env is no script, node is a command.
        let run = commands(&[
            exec(7, "/usr/bin/env", &["env", "node", script]),
            exec(7, "/usr/bin/node", &["node", script]),
        ]);
        assert_eq!(run.len(), 2, "{run:?}");
        // `#!/usr/bin/env -S node --flag` splits its own words: not folded.
        std::fs::write(dir.path().join("tool"), "#!/usr/bin/env -S node --flag\n").unwrap();
        let run = commands(&[
            exec(7, script, &["tool"]),
            exec(7, "/usr/bin/node", &["node", "--flag", script]),
        ]);
        assert_eq!(run.len(), 2, "{run:?}");
    }

    #[test]
    fn xtrace_words_are_unquoted() {
        let text = b"+ echo 'a\nb' $'\\001' 'it'\\''s'\nnoise\n++ x=y\n";
        let records = xtrace_records(text);
        assert_eq!(records[0], ["echo", "a\nb", "\u{1}", "it's"]);
        assert_eq!(records[1], ["x=y"]);
    }

    #[test]
    fn git_global_options_are_dropped() {
        let args: Vec<String> = ["-C", ".", "--no-pager", "-c", "a=b", "--git-dir=.git", "push", "-f"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(git_without_global_options(&args), ["push", "-f"]);
    }
}
