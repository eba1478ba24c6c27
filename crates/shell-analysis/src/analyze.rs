//! What a command line would run, and what it touches (permission analysis).
//!
//! The line is parsed by [`crate::syntax`] (a parser for the subset of bash whose meaning
//! the analysis knows exactly); anything outside it makes the whole line *opaque*. The
//! walker then follows bash's order of evaluation with a small state — the working
//! directory (one of a few known directories, or unknown), the functions defined so far,
//! and `for` variables over known words — and turns every simple command into words after
//! expansion (text with holes where a value is only known at run time). Builtins that
//! change the shell's state are modelled here; programs are modelled by the table in
//! `models.rs`: which operands and options read, write, delete or run code.
//!
//! Every command that would run becomes [`Part`]s (its words; its source text; its name
//! without a path; its words without known global options). Files read, written, and
//! directories used become [`PathRef`]s for `read`, `edit` and `external_directory`.
//! Code the analysis cannot see (an interpreter's inline code, `eval` of a variable, a
//! shell reading a script) becomes an opaque part: every rule could apply, never saved.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use toolgate_core::{HoleClass, Resource};

use crate::expand::{self, Ctx, Expanded, Field, Glob, Mode, PathHole, Seg};
use crate::models::{self, Verdict};
use crate::syntax::{
    self, AndOr, Assign, AssignValue, Command, Compound, List, Part as WordPart, Pipeline, RedirOp, Redirect, Simple,
    Stop, Target, Word,
};

/// Input larger than this is not analysed (the whole line is opaque).
pub(crate) const MAX_INPUT: usize = 1024 * 1024;

/// One resource the line asserts for `bash`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Part {
    /// The resource: a command's words (holes where values are only known at run time),
    /// its source text, or — for an opaque part — a single hole standing for anything.
    pub resource: Resource,
    /// The "always" pattern; `None` when no saved approval may satisfy this part.
    pub save: Option<String>,
    /// True when the part stands for code the analysis cannot see: every rule of the
    /// action could apply to it, and the effect is at best ask.
    pub opaque: bool,
    /// Why the part is opaque or cannot be saved.
    pub why: Option<String>,
}

impl Part {
    /// How the part is shown (and the resource string the request carries).
    pub fn display(&self) -> String {
        self.resource.display()
    }
}

/// A piece of a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// Known text.
    Text(String),
    /// A part known only at run time.
    Hole {
        /// How it is shown.
        display: String,
        /// What it may be.
        class: PathHole,
    },
}

/// A path the line refers to.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PathRef {
    /// The path as bash would see it after expansion, with holes.
    pub pieces: Vec<Piece>,
    /// The directory it is relative to: relative to the working directory (`""` is the
    /// working directory itself) or absolute; `None` when the directory is unknown.
    pub base: Option<String>,
    /// True when everything below the path is touched too (`rm -r`, `grep -r`).
    pub tree: bool,
}

impl PathRef {
    /// The path when it has no hole.
    pub fn literal(&self) -> Option<String> {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Hole { .. } => return None,
            }
        }
        Some(out)
    }

    /// How the path is shown.
    pub fn display(&self) -> String {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Hole { display, .. } => out.push_str(display),
            }
        }
        out
    }

    /// The path joined to its base, as shown (`sub/x`, `/tmp/x`, `$X/x`).
    pub fn joined(&self) -> String {
        let path = self.display();
        match &self.base {
            _ if path.starts_with('/') => path,
            Some(base) if base.is_empty() => path,
            Some(base) => format!("{}/{path}", base.trim_end_matches('/')),
            None => format!("(unknown directory)/{path}"),
        }
    }
}

/// Everything the permission checks need to know about one command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Analysis {
    /// The `bash` resources, in order of appearance, without repeats.
    pub parts: Vec<Part>,
    /// Files read (`cat` operands, `< file`, …).
    pub reads: Vec<PathRef>,
    /// Files written, created or deleted (`>`, `tee`, `cp` targets, `rm` operands, …).
    pub writes: Vec<PathRef>,
    /// Directories and paths that must be inside the project or approved (`cd` targets,
    /// `-C` directories, operands of file commands).
    pub paths: Vec<PathRef>,
    /// Why the whole line is opaque, when it is: nothing of it could be analysed.
    pub opaque: Option<String>,
}

/// What the analysis knows about the world the line will run in.
#[derive(Clone, Debug)]
pub(crate) struct Env {
    /// The working directory (absolute): patterns are matched against it.
    pub(crate) workdir: PathBuf,
    /// `$HOME` as the shell will see it.
    pub(crate) home: Option<String>,
    /// `$PATH` as the shell will see it (to know which names are commands).
    pub(crate) path: Option<String>,
    /// Whether `$CDPATH` is set (then `cd name` may go anywhere).
    pub(crate) cdpath: bool,
}

impl Env {
    /// The environment this process would give the shell, running in `workdir`.
    pub(crate) fn inherited(workdir: impl Into<PathBuf>) -> Env {
        Env {
            workdir: workdir.into(),
            home: std::env::var("HOME").ok().filter(|home| home.starts_with('/')),
            path: std::env::var("PATH").ok(),
            cdpath: std::env::var_os("CDPATH").is_some_and(|value| !value.is_empty()),
        }
    }
}

/// Analyses a command line run in this process's working directory.
///
/// ```
/// let analysis = toolgate_shell_analysis::analyze("git status; FOO=1 rm -rf build > log.txt");
/// let resources: Vec<String> = analysis.parts.iter().map(|p| p.display()).collect();
/// assert_eq!(resources, ["git status", "rm -rf build", "FOO=1 rm -rf build > log.txt"]);
/// assert_eq!(analysis.parts[1].save.as_deref(), Some("rm *"));
/// assert_eq!(analysis.writes[0].display(), "log.txt");
/// ```
pub fn analyze(command: &str) -> Analysis {
    let workdir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    analyze_in(command, &Env::inherited(workdir))
}

/// Stack for the analysis thread: nesting is bounded by [`syntax::MAX_DEPTH`], and this
/// leaves room for it in unoptimised builds too.
const STACK: usize = 64 * 1024 * 1024;

/// Analyses `command` as bash would run it in `env`.
pub(crate) fn analyze_in(command: &str, env: &Env) -> Analysis {
    if command.len() > MAX_INPUT {
        return opaque_line(command, format!("the line is longer than {} KiB", MAX_INPUT / 1024));
    }
    let run = || analyze_now(command, env);
    let result = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("bash-analysis".into())
            .stack_size(STACK)
            .spawn_scoped(scope, run)
            .map(|handle| handle.join())
    });
    match result {
        Ok(Ok(analysis)) => analysis,
        // A thread that cannot start, or a bug that panicked: nothing is known.
        _ => opaque_line(command, "the analysis could not run".to_string()),
    }
}

fn opaque_line(command: &str, reason: String) -> Analysis {
    Analysis {
        parts: vec![Part {
            resource: Resource::unknown(command),
            save: None,
            opaque: true,
            why: Some(reason.clone()),
        }],
        opaque: Some(reason),
        ..Analysis::default()
    }
}

fn analyze_now(command: &str, env: &Env) -> Analysis {
    let mut walker = Walker {
        env,
        out: Out::default(),
        fs: FsView::default(),
        budget: 200_000 + 20 * command.len(),
        calls: Vec::new(),
        memo: HashMap::new(),
        redirect_only: false,
        scripts: 0,
        parsed_scripts: HashMap::new(),
        parsed_bytes: 0,
        display: String::new(),
        home_done: Vec::new(),
    };
    let state = State {
        cwd: Cwd::Known(Rc::new(vec![String::new()])),
        funcs: Rc::new(HashMap::new()),
        bindings: Rc::new(HashMap::new()),
    };
    // The line is walked piece by piece as it parses (a long line is never held whole);
    // a line that does not parse is opaque whatever its first pieces showed.
    let mut outcome = Some(Outcome::same(state));
    let parsed = syntax::parse_each(command, &mut |piece| {
        if let Some(before) = outcome.take() {
            outcome = Some(walker.list_from(&piece, before));
        }
    });
    if let Err(Stop(reason)) = parsed {
        return opaque_line(command, reason);
    }
    if let Some(reason) = walker.out.opaque.take() {
        return opaque_line(command, reason);
    }
    let mut analysis = Analysis {
        parts: walker.out.parts,
        reads: walker.out.reads,
        writes: walker.out.writes,
        paths: walker.out.paths,
        opaque: None,
    };
    if analysis.parts.is_empty() && walker.redirect_only {
        // Nothing runs (a bare `> file`): ask for the text rather than let an empty list
        // of commands evaluate to allow (spec §7.2).
        analysis.parts.push(Part {
            resource: Resource::exact(command),
            save: None,
            opaque: false,
            why: Some("no command runs; the redirection alone is asked".into()),
        });
    }
    analysis
}

// --- state ---------------------------------------------------------------------------------

/// The working directory: one of a few known directories, or unknown. Shared: every
/// command's state starts as a copy of the one before.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Cwd {
    Known(Rc<Vec<String>>),
    Unknown,
}

/// More candidates than this and the directory is unknown.
const MAX_CWDS: usize = 4;

impl Cwd {
    fn union(&self, other: &Cwd) -> Cwd {
        match (self, other) {
            (Cwd::Known(a), Cwd::Known(b)) if (Rc::ptr_eq(a, b) || a == b) && a.len() <= MAX_CWDS => {
                Cwd::Known(Rc::clone(a))
            }
            (Cwd::Known(a), Cwd::Known(b)) => {
                let mut out = (**a).clone();
                for dir in b.iter() {
                    if !out.contains(dir) {
                        out.push(dir.clone());
                    }
                }
                if out.len() > MAX_CWDS {
                    Cwd::Unknown
                } else {
                    Cwd::Known(Rc::new(out))
                }
            }
            _ => Cwd::Unknown,
        }
    }

    fn bases(&self) -> Vec<Option<String>> {
        match self {
            Cwd::Known(dirs) => dirs.iter().cloned().map(Some).collect(),
            Cwd::Unknown => vec![None],
        }
    }
}

#[derive(Clone)]
struct Func {
    bodies: Vec<Rc<Command>>,
    /// The function may not be defined when called (defined in one branch only).
    maybe_missing: bool,
}

#[derive(Clone)]
struct State {
    cwd: Cwd,
    funcs: Rc<HashMap<String, Func>>,
    /// Variables bound to known fields (quoted uses expand to them).
    bindings: Rc<HashMap<String, Field>>,
}

impl State {
    fn union(&self, other: &State) -> State {
        let cwd = self.cwd.union(&other.cwd);
        let funcs = if Rc::ptr_eq(&self.funcs, &other.funcs) {
            Rc::clone(&self.funcs)
        } else {
            let mut merged: HashMap<String, Func> = HashMap::new();
            for (name, func) in self.funcs.iter() {
                let mut func = func.clone();
                if !other.funcs.contains_key(name) {
                    func.maybe_missing = true;
                }
                merged.insert(name.clone(), func);
            }
            for (name, func) in other.funcs.iter() {
                match merged.get_mut(name) {
                    Some(existing) => {
                        for body in &func.bodies {
                            if !existing.bodies.iter().any(|b| Rc::ptr_eq(b, body)) {
                                existing.bodies.push(Rc::clone(body));
                            }
                        }
                        existing.maybe_missing |= func.maybe_missing;
                    }
                    None => {
                        let mut func = func.clone();
                        func.maybe_missing = true;
                        merged.insert(name.clone(), func);
                    }
                }
            }
            Rc::new(merged)
        };
        let bindings = if Rc::ptr_eq(&self.bindings, &other.bindings) {
            Rc::clone(&self.bindings)
        } else {
            Rc::new(
                self.bindings
                    .iter()
                    .filter(|(name, field)| other.bindings.get(*name) == Some(field))
                    .map(|(name, field)| (name.clone(), field.clone()))
                    .collect(),
            )
        };
        State { cwd, funcs, bindings }
    }
}

/// The states after a command succeeded and after it failed.
struct Outcome {
    ok: State,
    fail: State,
}

impl Outcome {
    fn same(state: State) -> Self {
        Outcome {
            ok: state.clone(),
            fail: state,
        }
    }

    fn either(&self) -> State {
        self.ok.union(&self.fail)
    }
}

// --- output ----------------------------------------------------------------------------------

#[derive(Default)]
struct Out {
    parts: Vec<Part>,
    /// The displays of the parts so far: of plain parts, of opaque parts.
    seen_parts: [HashSet<String>; 2],
    reads: Vec<PathRef>,
    writes: Vec<PathRef>,
    paths: Vec<PathRef>,
    /// The paths so far, each as [`Out::is_new_path`] keys it.
    seen_paths: HashSet<String>,
    /// Where the key of the path at hand is built (a repeat then costs no allocation).
    key: String,
    opaque: Option<String>,
}

impl Out {
    fn part(&mut self, part: Part) {
        let key = part.display();
        if self.seen_parts[usize::from(part.opaque)].insert(key) {
            self.parts.push(part);
        }
    }

    /// Whether a plain part shown as `display` is already there (a repeat adds nothing).
    fn has_plain(&self, display: &str) -> bool {
        self.seen_parts[0].contains(display)
    }

    fn path(&mut self, kind: u8, path: PathRef) {
        if self.is_new_path(kind, path.base.as_deref(), path.tree, |key| {
            key.push_str(&path.display())
        }) {
            self.push_path(kind, path);
        }
    }

    /// The path of `field` relative to `base`: built only when it is not there yet.
    fn field_path(&mut self, kind: u8, field: &Field, base: Option<&str>, tree: bool) {
        if self.is_new_path(kind, base, tree, |key| push_pieces_display(field, key)) {
            self.push_path(
                kind,
                PathRef {
                    pieces: pieces(field),
                    base: base.map(str::to_string),
                    tree,
                },
            );
        }
    }

    /// Whether the path (`display` writes how [`PathRef::display`] shows it) is not there
    /// yet; it is from now on. The key holds every part of the path's identity: the kind,
    /// the tree flag, whether the base is known, the base and the display (no path holds a
    /// NUL, so the separator is unambiguous). It is built in a buffer kept for the next
    /// one: a repeat costs no allocation.
    fn is_new_path(&mut self, kind: u8, base: Option<&str>, tree: bool, display: impl FnOnce(&mut String)) -> bool {
        let mut key = std::mem::take(&mut self.key);
        key.clear();
        key.push(char::from(b'0' + kind));
        key.push(if tree { 't' } else { 'f' });
        match base {
            Some(base) => {
                key.push('b');
                key.push_str(base);
            }
            None => key.push('n'),
        }
        key.push('\u{0}');
        display(&mut key);
        let new = !self.seen_paths.contains(key.as_str());
        if new {
            self.seen_paths.insert(key.clone());
        }
        self.key = key;
        new
    }

    fn push_path(&mut self, kind: u8, path: PathRef) {
        match kind {
            0 => self.reads.push(path),
            1 => self.writes.push(path),
            _ => self.paths.push(path),
        }
    }
}

/// What a path effect does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
    Dir,
}

/// One argument of a command: a field and how its word expanded.
#[derive(Clone, Debug)]
pub(crate) struct Arg {
    pub(crate) field: Field,
    /// The word may vanish.
    pub(crate) vanish: bool,
    /// The word may split into several arguments.
    pub(crate) split: bool,
}

impl Arg {
    pub(crate) fn literal(&self) -> Option<Cow<'_, str>> {
        if self.split { None } else { self.field.literal() }
    }

    /// The value when the analysis knows it (known holes included).
    pub(crate) fn value(&self) -> Option<Cow<'_, str>> {
        if self.split { None } else { self.field.value() }
    }

    /// Whether the argument is exactly the literal text `text` (without copying it).
    pub(crate) fn is_literal(&self, text: &str) -> bool {
        self.literal().is_some_and(|literal| literal == text)
    }

    /// True when the argument could start with `-` although its text does not show it.
    pub(crate) fn maybe_option(&self) -> bool {
        match self.field.segs.first() {
            Some(Seg::Lit(text)) => text.starts_with('-') && self.value().is_none(),
            Some(Seg::Hole { value: Some(value), .. }) => value.starts_with('-') && self.split,
            None => false,
            _ => true,
        }
    }

    pub(crate) fn text(text: impl Into<String>) -> Arg {
        Arg {
            field: Field::text(text),
            vanish: false,
            split: false,
        }
    }
}

/// A command ready to be modelled: its arguments after expansion.
#[derive(Clone, Debug)]
pub(crate) struct Cmd<'t> {
    pub(crate) args: Vec<Arg>,
    /// The source text, for the top-level command of a simple command (borrowed from the
    /// tree being walked).
    pub(crate) raw: Option<&'t str>,
    /// Names assigned in its environment (`NAME=value cmd`, `env NAME=value cmd`).
    pub(crate) env: Vec<String>,
    /// Runs in this directory (relative to the current one) instead (`env -C`).
    pub(crate) chdir: Option<Field>,
    /// Bypass functions (`command x`, `exec x`, wrappers that exec).
    pub(crate) external: bool,
}

// --- the walker -----------------------------------------------------------------------------

/// The filesystem as the analysis saw it: each directory listed and each path looked at
/// once per line. The analysis judges the files as they are before the line runs; a line
/// that names the same directory a thousand times sees one snapshot of it, not a thousand.
#[derive(Default)]
struct FsView {
    /// Names in a directory (UTF-8 ones, sorted); `None` when it cannot be read.
    lists: HashMap<PathBuf, Option<Rc<Vec<String>>>>,
    /// Whether a path exists (without following a last symlink).
    exists: HashMap<PathBuf, bool>,
    /// Whether a path is a directory (following symlinks).
    dirs: HashMap<PathBuf, bool>,
}

impl FsView {
    fn list(&mut self, dir: &Path) -> Option<Rc<Vec<String>>> {
        if let Some(listing) = self.lists.get(dir) {
            return listing.clone();
        }
        let listing = std::fs::read_dir(dir).ok().map(|entries| {
            let mut names: Vec<String> = entries
                .filter_map(Result::ok)
                .filter_map(|entry| entry.file_name().into_string().ok())
                .collect();
            names.sort();
            Rc::new(names)
        });
        self.lists.insert(dir.to_path_buf(), listing.clone());
        listing
    }

    fn exists(&mut self, path: &Path) -> bool {
        *self
            .exists
            .entry(path.to_path_buf())
            .or_insert_with(|| path.symlink_metadata().is_ok())
    }

    fn is_dir(&mut self, path: &Path) -> bool {
        *self.dirs.entry(path.to_path_buf()).or_insert_with(|| path.is_dir())
    }
}

struct Walker<'a> {
    env: &'a Env,
    fs: FsView,
    out: Out,
    budget: usize,
    calls: Vec<String>,
    memo: HashMap<(String, Cwd), Cwd>,
    redirect_only: bool,
    /// How many `eval`/`sh -c` scripts are being walked inside each other.
    scripts: usize,
    /// Scripts parsed so far, by their text: a line that runs the same `sh -c '…'` many
    /// times parses it once (parsing depends on the text alone; the walk still runs each
    /// time, from the state of that time). At most [`MAX_INPUT`] bytes of text are kept.
    parsed_scripts: HashMap<String, Rc<List>>,
    /// The bytes of text in `parsed_scripts`.
    parsed_bytes: usize,
    /// Where `emit` builds a command's display (kept for the next command).
    display: String,
    /// The home directories `home_writes` reported already: the same absolute directory
    /// asks the same question, so a line of many `npm` runs reports it once.
    home_done: Vec<&'static str>,
}

/// Names that, assigned anywhere in a line, change what later commands run or read.
const DANGEROUS_NAMES: &[&str] = &[
    "PATH",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "IFS",
    "HOME",
    "PWD",
    "OLDPWD",
    "CDPATH",
    "GLOBIGNORE",
    "EXECIGNORE",
    "BASH_XTRACEFD",
    "BASH_CMDS",
    "BASH_ALIASES",
    "BASH_LOADABLES_PATH",
    "TMPDIR",
    "SHELL",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "MANPAGER",
    "BROWSER",
    "LESSOPEN",
    "LESSCLOSE",
    "LESSKEY",
    "INPUTRC",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONUSERBASE",
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
    "CLASSPATH",
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CONFIG_DIRS",
    // Where package managers put their caches (see `home_writes`).
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "GOCACHE",
    "GOMODCACHE",
    "ZDOTDIR",
    "SUDO_ASKPASS",
    "SSH_ASKPASS",
    "RUSTC_WRAPPER",
    "RUSTC",
    "RUSTDOC",
    "RUSTFLAGS",
    "CC",
    "CXX",
    "LD",
    "AR",
    "MAKEFLAGS",
    "MFLAGS",
    "MAKE",
    "GOFLAGS",
    "GOENV",
    "GOROOT",
    "GOPATH",
    "LOCPATH",
    "NLSPATH",
    "HOSTALIASES",
    "SSLKEYLOGFILE",
    "CURL_HOME",
    "WGETRC",
    "GNUPGHOME",
    "AWKPATH",
    "AWKLIBPATH",
    "GREP_OPTIONS",
    "TAR_OPTIONS",
    "RSYNC_RSH",
    "RSYNC_CONNECT_PROG",
    "BZIP2",
    "GZIP",
    "XZ_OPT",
    "ZSTD_CLEVEL",
    "TERMINFO",
    "MAGIC",
    "KUBECONFIG",
    "DOCKER_HOST",
    "DOCKER_CONFIG",
    "COMPOSER_HOME",
    "BUNDLE_GEMFILE",
];

/// Prefixes of such names (`GIT_*` alone has dozens that run programs or write files).
const DANGEROUS_PREFIXES: &[&str] = &[
    "LD_",
    "DYLD_",
    "GIT_",
    "CARGO_",
    "NPM_CONFIG_",
    "npm_config_",
    "YARN_",
    "PNPM_",
    "BUNDLE_",
    "GEM_",
    "PIP_",
    "UV_",
    "POETRY_",
    "BUN_",
    "PYTHON",
    "RUBY",
    "PERL",
    "NODE_",
    "MALLOC_",
    "BASH_FUNC_",
    "SSH_",
    "GPG_",
    "RSYNC_",
    "LESS",
    "HG",
];

pub(crate) fn dangerous_name(name: &str) -> bool {
    DANGEROUS_NAMES.contains(&name) || DANGEROUS_PREFIXES.iter().any(|prefix| name.starts_with(prefix))
}

/// bash's builtins and reserved words: a function with one of these names changes what
/// the line means.
const BUILTINS: &[&str] = &[
    ".",
    ":",
    "[",
    "alias",
    "bg",
    "bind",
    "break",
    "builtin",
    "caller",
    "cd",
    "command",
    "compgen",
    "complete",
    "compopt",
    "continue",
    "declare",
    "dirs",
    "disown",
    "echo",
    "enable",
    "eval",
    "exec",
    "exit",
    "export",
    "false",
    "fc",
    "fg",
    "getopts",
    "hash",
    "help",
    "history",
    "jobs",
    "kill",
    "let",
    "local",
    "logout",
    "mapfile",
    "popd",
    "printf",
    "pushd",
    "pwd",
    "read",
    "readarray",
    "readonly",
    "return",
    "set",
    "shift",
    "shopt",
    "source",
    "suspend",
    "test",
    "times",
    "trap",
    "true",
    "type",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "wait",
    "if",
    "then",
    "else",
    "elif",
    "fi",
    "case",
    "esac",
    "for",
    "select",
    "while",
    "until",
    "do",
    "done",
    "in",
    "function",
    "time",
    "coproc",
    "command_not_found_handle",
];

/// Devices that are neither read nor written in a way the rules speak about.
fn is_device(path: &str) -> bool {
    matches!(
        path,
        "/dev/null"
            | "/dev/zero"
            | "/dev/full"
            | "/dev/random"
            | "/dev/urandom"
            | "/dev/tty"
            | "/dev/stdin"
            | "/dev/stdout"
            | "/dev/stderr"
    ) || path
        .strip_prefix("/dev/fd/")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

impl<'a> Walker<'a> {
    fn stopped(&self) -> bool {
        self.out.opaque.is_some()
    }

    fn refuse(&mut self, reason: impl Into<String>) {
        if self.out.opaque.is_none() {
            self.out.opaque = Some(reason.into());
        }
    }

    fn spend(&mut self, cost: usize) -> bool {
        if self.budget < cost {
            self.refuse("the line takes too much work to analyse");
            return false;
        }
        self.budget -= cost;
        true
    }

    // --- lists ----------------------------------------------------------------------------

    fn list(&mut self, list: &List, state: State) -> Outcome {
        self.list_from(list, Outcome::same(state))
    }

    /// The items of `list`, after items that ended in `outcome`.
    fn list_from(&mut self, list: &List, mut outcome: Outcome) -> Outcome {
        for item in &list.items {
            if self.stopped() {
                break;
            }
            let entry = outcome.either();
            if item.background {
                // `&` runs the list in a subshell: nothing it changes comes back.
                let _ = self.and_or(&item.and_or, entry.clone());
                outcome = Outcome::same(entry);
            } else {
                outcome = self.and_or(&item.and_or, entry);
            }
        }
        outcome
    }

    fn and_or(&mut self, and_or: &AndOr, state: State) -> Outcome {
        let mut outcome = self.pipeline(&and_or.first, state);
        for (and, pipeline) in &and_or.rest {
            if self.stopped() {
                break;
            }
            if *and {
                let next = self.pipeline(pipeline, outcome.ok.clone());
                outcome = Outcome {
                    ok: next.ok,
                    fail: next.fail.union(&outcome.fail),
                };
            } else {
                let next = self.pipeline(pipeline, outcome.fail.clone());
                outcome = Outcome {
                    ok: outcome.ok.union(&next.ok),
                    fail: next.fail,
                };
            }
        }
        outcome
    }

    fn pipeline(&mut self, pipeline: &Pipeline, state: State) -> Outcome {
        let outcome = match pipeline.commands.as_slice() {
            [] => Outcome::same(state),
            [only] => self.command(only, state),
            many => {
                // Each command of a pipeline runs in a subshell.
                for command in many {
                    if self.stopped() {
                        break;
                    }
                    let _ = self.command(command, state.clone());
                }
                Outcome::same(state)
            }
        };
        if pipeline.negated {
            Outcome {
                ok: outcome.fail,
                fail: outcome.ok,
            }
        } else {
            outcome
        }
    }

    fn command(&mut self, command: &Command, state: State) -> Outcome {
        if !self.spend(1) {
            return Outcome::same(state);
        }
        match command {
            Command::Simple(simple) => self.simple(simple, state),
            Command::Compound(compound, redirects) => {
                self.redirects(redirects, &state);
                self.compound(compound, state)
            }
            Command::Function { name, body } => {
                let mut funcs = (*state.funcs).clone();
                funcs.insert(
                    name.clone(),
                    Func {
                        bodies: vec![Rc::new((**body).clone())],
                        maybe_missing: false,
                    },
                );
                Outcome::same(State {
                    funcs: Rc::new(funcs),
                    ..state
                })
            }
            Command::Coproc(inner) => {
                let _ = self.command(inner, state.clone());
                Outcome::same(state)
            }
        }
    }

    fn compound(&mut self, compound: &Compound, state: State) -> Outcome {
        match compound {
            Compound::Brace(list) => self.list(list, state),
            Compound::Subshell(list) => {
                let _ = self.list(list, state.clone());
                Outcome::same(state)
            }
            Compound::If { branches, otherwise } => {
                let mut results: Vec<State> = Vec::new();
                let mut current = state;
                for (cond, body) in branches {
                    let tested = self.list(cond, current);
                    let taken = self.list(body, tested.ok);
                    results.push(taken.either());
                    current = tested.fail;
                }
                match otherwise {
                    Some(list) => results.push(self.list(list, current).either()),
                    None => results.push(current),
                }
                let mut merged = results[0].clone();
                for result in &results[1..] {
                    merged = merged.union(result);
                }
                Outcome::same(merged)
            }
            Compound::Loop { cond, body } => self.repeat(state, |walker, state| {
                let tested = walker.list(cond, state);
                let ran = walker.list(body, tested.ok);
                (ran.either(), tested.fail)
            }),
            Compound::For { var, words, body, raw } => {
                if dangerous_name(var) {
                    self.refuse(format!("a `for` loop assigns {var}"));
                    return Outcome::same(state);
                }
                let mut values: Vec<Field> = Vec::new();
                let mut known = true;
                if let Some(words) = words {
                    for word in words {
                        self.nested_in_word(word, &state);
                        match self.expand(word, &state, Mode::Words) {
                            Some(expanded) => {
                                if expanded.split {
                                    known = false;
                                }
                                for field in expanded.fields {
                                    if field.is_pattern() {
                                        // What the pattern matches now, and what it may
                                        // match when the loop runs.
                                        for base in state.cwd.bases().into_iter().flatten() {
                                            for matched in self.glob(&field, &base) {
                                                values.push(Field::text(matched));
                                            }
                                        }
                                    }
                                    values.push(hole_patterns(&field));
                                }
                            }
                            None => return Outcome::same(state),
                        }
                    }
                } else {
                    known = false;
                }
                let rebinds = mentions_bare(raw, var);
                if known && !rebinds && !values.is_empty() && values.len() <= 8 {
                    // Each value in turn, each iteration starting where the last one may
                    // have left the shell.
                    let mut entry = state.clone();
                    let mut merged = state.clone();
                    for value in values {
                        let mut bindings = (*entry.bindings).clone();
                        bindings.insert(var.clone(), value);
                        let bound = State {
                            bindings: Rc::new(bindings),
                            ..entry.clone()
                        };
                        let mut after = self.list(body, bound).either();
                        let mut bindings = (*after.bindings).clone();
                        bindings.remove(var);
                        after.bindings = Rc::new(bindings);
                        merged = merged.union(&after);
                        entry = entry.union(&after);
                    }
                    Outcome::same(merged)
                } else {
                    let mut bindings = (*state.bindings).clone();
                    bindings.remove(var);
                    let unbound = State {
                        bindings: Rc::new(bindings),
                        ..state
                    };
                    self.repeat(unbound, |walker, state| {
                        let ran = walker.list(body, state.clone());
                        (ran.either(), state)
                    })
                }
            }
            Compound::Case { word, arms } => {
                self.nested_in_word(word, &state);
                let _ = self.expand(word, &state, Mode::Value);
                let mut merged = state.clone();
                let mut previous: Option<State> = None;
                for (patterns, body) in arms {
                    for pattern in patterns {
                        self.nested_in_word(pattern, &state);
                        let _ = self.expand(pattern, &state, Mode::Value);
                    }
                    let entry = match &previous {
                        Some(prev) => state.union(prev),
                        None => state.clone(),
                    };
                    let after = self.list(body, entry).either();
                    merged = merged.union(&after);
                    previous = Some(after);
                }
                Outcome::same(merged)
            }
            Compound::Cond(words) => {
                for word in words {
                    self.nested_in_word(word, &state);
                    let _ = self.expand(word, &state, Mode::Value);
                }
                Outcome::same(state)
            }
        }
    }

    /// A loop: the body is walked until the state it leaves is the state it starts from
    /// (at most three times; then the directory is unknown). Returns the state after the
    /// loop whether it ran or not.
    fn repeat(&mut self, state: State, mut body: impl FnMut(&mut Self, State) -> (State, State)) -> Outcome {
        let mut entry = state;
        for round in 0..3 {
            let (after_body, exit) = body(self, entry.clone());
            if self.stopped() {
                return Outcome::same(entry);
            }
            let widened = entry.union(&after_body);
            if widened.cwd == entry.cwd && widened.funcs.len() == entry.funcs.len() {
                return Outcome::same(entry.union(&exit));
            }
            entry = if round == 1 {
                State {
                    cwd: Cwd::Unknown,
                    ..widened
                }
            } else {
                widened
            };
        }
        Outcome::same(State {
            cwd: Cwd::Unknown,
            ..entry
        })
    }

    // --- words ----------------------------------------------------------------------------

    /// Walks the commands inside a word (substitutions run in subshells).
    fn nested_in_word(&mut self, word: &Word, state: &State) {
        for part in &word.parts {
            if self.stopped() {
                return;
            }
            match part {
                WordPart::Command { list, .. } | WordPart::Process { list, .. } => {
                    let _ = self.list(list, state.clone());
                }
                WordPart::Param {
                    inner, name, assigns, ..
                } => {
                    if *assigns && dangerous_name(name) {
                        self.refuse(format!("`${{{name}:=…}}` assigns {name}"));
                        return;
                    }
                    for word in inner {
                        self.nested_in_word(word, state);
                    }
                }
                WordPart::Array(words) => {
                    for word in words {
                        self.nested_in_word(word, state);
                    }
                }
                WordPart::Lit { .. } | WordPart::Arith { .. } => {}
            }
        }
    }

    fn ctx<'s>(&'s self, state: &'s State, mode: Mode) -> Ctx<'s> {
        let pwd = match &state.cwd {
            Cwd::Known(dirs) if dirs.len() == 1 => Some((self.env.workdir.as_path(), dirs[0].as_str())),
            _ => None,
        };
        Ctx {
            home: self.env.home.as_deref(),
            pwd,
            bindings: &state.bindings,
            mode,
        }
    }

    fn expand(&mut self, word: &Word, state: &State, mode: Mode) -> Option<Expanded> {
        if !self.spend(1) {
            return None;
        }
        match expand::expand(word, &self.ctx(state, mode)) {
            Ok(expanded) => Some(expanded),
            Err(Stop(reason)) => {
                self.refuse(reason);
                None
            }
        }
    }

    fn args(&mut self, words: &[Word], state: &State) -> Option<Vec<Arg>> {
        let mut args = Vec::with_capacity(words.len());
        for word in words {
            // A word no expansion changes is one field of its text (what `expand` gives
            // it), without the list of fields around it.
            if let Some(text) = expand::plain_text(word) {
                if !self.spend(1) {
                    return None;
                }
                args.push(Arg::text(text));
                continue;
            }
            let expanded = self.expand(word, state, Mode::Words)?;
            for field in expanded.fields {
                args.push(Arg {
                    field,
                    vanish: expanded.vanish,
                    split: expanded.split,
                });
            }
        }
        Some(args)
    }

    // --- redirections ----------------------------------------------------------------------

    fn redirects(&mut self, redirects: &[Redirect], state: &State) {
        for redirect in redirects {
            if self.stopped() {
                return;
            }
            match &redirect.target {
                Target::HereDoc(body) => {
                    self.nested_in_word(body, state);
                }
                Target::Word(word) => {
                    self.nested_in_word(word, state);
                    let mode = if redirect.op == RedirOp::HereString {
                        Mode::Value
                    } else {
                        Mode::Words
                    };
                    let Some(expanded) = self.expand(word, state, mode) else {
                        return;
                    };
                    let access = match redirect.op {
                        RedirOp::In => Some(Access::Read),
                        RedirOp::Out | RedirOp::Append | RedirOp::Clobber | RedirOp::OutErr | RedirOp::AppendErr => {
                            Some(Access::Write)
                        }
                        RedirOp::ReadWrite => {
                            self.file_args(&expanded, Access::Read, state, false);
                            Some(Access::Write)
                        }
                        RedirOp::Dup | RedirOp::HereString | RedirOp::HereDoc => None,
                    };
                    if let Some(access) = access {
                        self.file_args(&expanded, access, state, false);
                    }
                }
            }
        }
    }

    /// Records the fields of an expanded word as paths.
    fn file_args(&mut self, expanded: &Expanded, access: Access, state: &State, tree: bool) {
        for field in &expanded.fields {
            let arg = Arg {
                field: field.clone(),
                vanish: expanded.vanish,
                split: expanded.split,
            };
            self.file(&arg, access, state, tree, None);
        }
    }

    /// Records one path effect: the field relative to the current directory (or `under`).
    pub(crate) fn file(&mut self, arg: &Arg, access: Access, state: &State, tree: bool, under: Option<&Field>) {
        let kind = match access {
            Access::Read => 0,
            Access::Write => 1,
            Access::Dir => 2,
        };
        // The value, worked out once (`arg.value()`: none when the word may split).
        let value = arg.value();
        if let Some(value) = &value
            && (value.starts_with("/dev/tcp/") || value.starts_with("/dev/udp/"))
        {
            self.refuse("a network connection through /dev/tcp or /dev/udp");
            return;
        }
        if arg.split {
            // The value may be several paths, anywhere.
            self.out.path(
                kind,
                PathRef {
                    pieces: vec![Piece::Hole {
                        display: arg.field.display(),
                        class: PathHole::Any,
                    }],
                    base: None,
                    tree,
                },
            );
            return;
        }
        let field = &arg.field;
        if let Some(value) = &value
            && is_device(value)
        {
            return;
        }
        if let Some(value) = value
            && (value.starts_with("/proc/") || value.starts_with("/dev/fd/") || value == "/proc")
        {
            // `/dev/fd/../…` and `/proc/self/…` name files by the process that opens them.
            self.out.path(
                kind,
                PathRef {
                    pieces: vec![Piece::Hole {
                        display: value.into_owned(),
                        class: PathHole::Any,
                    }],
                    base: None,
                    tree,
                },
            );
            return;
        }
        for base in Self::bases(state, under) {
            let base = base.as_deref();
            if field.is_pattern()
                && let Some(base_dir) = base
            {
                for matched in self.glob(field, base_dir) {
                    self.out.path(
                        kind,
                        PathRef {
                            pieces: vec![Piece::Text(matched)],
                            base: Some(base_dir.to_string()),
                            tree,
                        },
                    );
                }
            }
            self.out.field_path(kind, field, base, tree);
        }
    }

    /// The directories a relative path may be relative to (borrowed from the state when
    /// they are its working directories).
    fn bases<'s>(state: &'s State, under: Option<&Field>) -> Vec<Option<Cow<'s, str>>> {
        let bases = || -> Vec<Option<Cow<'s, str>>> {
            match &state.cwd {
                Cwd::Known(dirs) => dirs.iter().map(|dir| Some(Cow::Borrowed(dir.as_str()))).collect(),
                Cwd::Unknown => vec![None],
            }
        };
        match under {
            None => bases(),
            Some(dir) => match dir.value() {
                Some(dir) if dir.starts_with('/') => vec![Some(Cow::Owned(dir.into_owned()))],
                Some(dir) => bases()
                    .into_iter()
                    .map(|base| base.map(|base| Cow::Owned(join(&base, &dir))))
                    .collect(),
                None => vec![None],
            },
        }
    }

    /// Matches a pattern field against the filesystem from `base` (relative to the
    /// working directory, or absolute), as bash would.
    fn glob(&mut self, field: &Field, base: &str) -> Vec<String> {
        let components = expand::components(field);
        let absolute_pattern = field.starts_with("/");
        let root = if absolute_pattern {
            PathBuf::from("/")
        } else {
            PathBuf::from(absolute(&self.env.workdir, base))
        };
        let mut current: Vec<(PathBuf, String)> =
            vec![(root, if absolute_pattern { "/".into() } else { String::new() })];
        let count = components.len();
        for (index, component) in components.iter().enumerate() {
            if component.is_empty() {
                if index == 0 {
                    continue;
                }
                for (_, shown) in current.iter_mut() {
                    if !shown.ends_with('/') {
                        shown.push('/');
                    }
                }
                continue;
            }
            let active = component.iter().any(|seg| matches!(seg, Seg::Glob(_)));
            let mut next = Vec::new();
            for (dir, shown) in &current {
                let prefix = if shown.is_empty() || shown.ends_with('/') {
                    shown.clone()
                } else {
                    format!("{shown}/")
                };
                if active {
                    if !self.spend(10) {
                        return Vec::new();
                    }
                    let Some(listing) = self.fs.list(dir) else { continue };
                    let names: Vec<&String> = listing
                        .iter()
                        .filter(|name| expand::component_matches(component, name))
                        .collect();
                    for name in names {
                        let path = dir.join(name);
                        if index + 1 < count && !self.fs.is_dir(&path) {
                            continue;
                        }
                        next.push((path, format!("{prefix}{name}")));
                    }
                } else {
                    let name: String = component
                        .iter()
                        .map(|seg| match seg {
                            Seg::Lit(text) => text.clone(),
                            Seg::Hole { value: Some(value), .. } => value.clone(),
                            _ => String::new(),
                        })
                        .collect();
                    let path = dir.join(&name);
                    if self.fs.exists(&path) {
                        next.push((path, format!("{prefix}{name}")));
                    }
                }
                if next.len() > 1000 {
                    return Vec::new();
                }
            }
            current = next;
        }
        current.into_iter().map(|(_, shown)| shown).collect()
    }

    // --- simple commands --------------------------------------------------------------------

    fn simple(&mut self, simple: &Simple, state: State) -> Outcome {
        for assign in &simple.assigns {
            self.assignment(assign, &state);
        }
        for word in &simple.words {
            self.nested_in_word(word, &state);
        }
        if self.stopped() {
            return Outcome::same(state);
        }
        self.redirects(&simple.redirects, &state);
        let Some(args) = self.args(&simple.words, &state) else {
            return Outcome::same(state);
        };
        if args.is_empty() {
            if simple.words.is_empty() && !simple.redirects.is_empty() {
                self.redirect_only = true;
            }
            return Outcome::same(state);
        }
        let cmd = Cmd {
            args,
            raw: Some(simple.raw.as_str()),
            env: simple.assigns.iter().map(|assign| assign.name.clone()).collect(),
            chdir: None,
            external: false,
        };
        self.run(cmd, state)
    }

    fn assignment(&mut self, assign: &Assign, state: &State) {
        if dangerous_name(&assign.name) {
            self.refuse(format!(
                "assigns {}, which changes what later commands run or read",
                assign.name
            ));
            return;
        }
        match &assign.value {
            AssignValue::Scalar(word) => {
                self.nested_in_word(word, state);
                let _ = self.expand(word, state, Mode::Assignment);
            }
            AssignValue::Array(words) => {
                for word in words {
                    self.nested_in_word(word, state);
                    let _ = self.expand(word, state, Mode::Words);
                }
            }
        }
    }

    /// Runs one command given as its arguments.
    fn run(&mut self, cmd: Cmd, state: State) -> Outcome {
        if self.stopped() || cmd.args.is_empty() {
            return Outcome::same(state);
        }
        if !self.spend(cmd.args.len()) {
            return Outcome::same(state);
        }
        for name in &cmd.env {
            if dangerous_name(name) {
                self.refuse(format!(
                    "runs a command with {name} set, which changes what it runs or reads"
                ));
                return Outcome::same(state);
            }
        }
        let first = &cmd.args[0];
        if first.vanish {
            // `$EMPTY rm x` runs `rm x`.
            let rest = Cmd {
                args: cmd.args[1..].to_vec(),
                raw: None,
                env: cmd.env.clone(),
                chdir: cmd.chdir.clone(),
                external: cmd.external,
            };
            let _ = self.run(rest, state.clone());
        }
        let first = &cmd.args[0];
        let Some(name) = first.value() else {
            self.opaque_part(&cmd, "the command name is only known when it runs");
            return Outcome::same(State {
                cwd: Cwd::Unknown,
                ..state
            });
        };
        if !cmd.external
            && let Some(func) = state.funcs.get(&*name).cloned()
        {
            let name = name.into_owned();
            return self.call(&name, &func, cmd, state);
        }
        if !name.contains('/')
            && let Some(outcome) = self.builtin(&name, &cmd, &state)
        {
            return outcome;
        }
        // The name is borrowed from `cmd` until the verdict is made; then `cmd` moves on.
        let mut verdict = Self::verdict(&name, &cmd.args);
        self.home_writes(&name, &cmd.args, &mut verdict);
        self.apply(cmd, state, verdict)
    }

    fn call(&mut self, name: &str, func: &Func, cmd: Cmd, state: State) -> Outcome {
        if self.shadows(name) {
            self.refuse(format!("a function named `{name}` replaces a command or builtin"));
            return Outcome::same(state);
        }
        if self.calls.iter().any(|call| call == name) {
            self.refuse(format!("the function `{name}` calls itself"));
            return Outcome::same(state);
        }
        if self.calls.len() >= 16 {
            self.refuse("functions nested more than 16 calls deep");
            return Outcome::same(state);
        }
        let key = (name.to_string(), state.cwd.clone());
        let mut after = match self.memo.get(&key) {
            Some(cwd) => State {
                cwd: cwd.clone(),
                ..state.clone()
            },
            None => {
                self.calls.push(name.to_string());
                let mut merged: Option<State> = None;
                for body in &func.bodies {
                    // Positional parameters inside are holes; the body runs in this shell.
                    let result = self.command(body, state.clone()).either();
                    merged = Some(match merged {
                        Some(m) => m.union(&result),
                        None => result,
                    });
                }
                self.calls.pop();
                let after = merged.unwrap_or_else(|| state.clone());
                if Rc::ptr_eq(&after.funcs, &state.funcs) {
                    self.memo.insert(key, after.cwd.clone());
                }
                after
            }
        };
        if func.maybe_missing {
            let external = Cmd { external: true, ..cmd };
            after = after.union(&self.run(external, state).either());
        }
        Outcome::same(after)
    }

    /// Whether a function of this name would change what the line means.
    fn shadows(&self, name: &str) -> bool {
        if name.contains('/') || BUILTINS.contains(&name) || models::known(name) {
            return true;
        }
        if crate::arity::ARITY.iter().any(|(key, _)| *key == name) {
            return true;
        }
        let Some(path) = &self.env.path else { return false };
        path.split(':')
            .filter(|dir| !dir.is_empty())
            .any(|dir| Path::new(dir).join(name).is_file())
    }

    /// Builtins that change the shell's state or run code; `None` for the rest.
    fn builtin(&mut self, name: &str, cmd: &Cmd, state: &State) -> Option<Outcome> {
        let args: &[Arg] = cmd.args.get(1..).unwrap_or_default();
        let literal = || -> Option<Vec<String>> { args.iter().map(|arg| arg.literal().map(Cow::into_owned)).collect() };
        match name {
            "cd" | "pushd" => Some(self.change_directory(name, args, state)),
            "popd" => Some(Outcome::same(State {
                cwd: Cwd::Unknown,
                ..state.clone()
            })),
            "true" | "false" | ":" | "shift" | "return" | "exit" | "break" | "continue" | "wait" | "dirs" | "jobs"
            | "disown" | "fg" | "bg" | "times" | "help" | "caller" | "history" | "suspend" | "logout" => {
                Some(Outcome::same(state.clone()))
            }
            "command" => {
                let mut index = 0;
                let mut lookup = false;
                while let Some(arg) = args.get(index) {
                    match arg.literal().as_deref() {
                        Some("-v" | "-V" | "-vV" | "-Vv" | "-pv" | "-pV") => lookup = true,
                        Some("-p") => {}
                        Some("--") => {
                            index += 1;
                            break;
                        }
                        Some(option) if option.starts_with('-') && option.len() > 1 => {
                            self.opaque_part(cmd, "`command` with an option the analysis does not know");
                            return Some(Outcome::same(state.clone()));
                        }
                        _ if arg.maybe_option() => {
                            self.opaque_part(cmd, "`command` with an option only known when it runs");
                            return Some(Outcome::same(state.clone()));
                        }
                        _ => break,
                    }
                    index += 1;
                }
                if lookup || index >= args.len() {
                    // `command -v name` looks a name up and runs nothing.
                    return Some(Outcome::same(state.clone()));
                }
                self.emit(cmd, None);
                let inner = Cmd {
                    args: args[index..].to_vec(),
                    raw: None,
                    env: cmd.env.clone(),
                    chdir: None,
                    external: true,
                };
                Some(self.run(inner, state.clone()))
            }
            "builtin" => {
                if args.is_empty() {
                    return Some(Outcome::same(state.clone()));
                }
                self.emit(cmd, None);
                let inner = Cmd {
                    args: args.to_vec(),
                    raw: None,
                    env: cmd.env.clone(),
                    chdir: None,
                    external: true,
                };
                Some(self.run(inner, state.clone()))
            }
            "type" => Some(Outcome::same(state.clone())),
            "eval" => {
                let Some(words) = literal() else {
                    self.opaque_part(cmd, "`eval` of text only known when it runs");
                    return Some(Outcome::same(State {
                        cwd: Cwd::Unknown,
                        ..state.clone()
                    }));
                };
                self.emit(cmd, Some("`eval` runs its text as commands".into()));
                Some(self.script(&words.join(" "), state.clone(), false))
            }
            "source" | "." => {
                self.opaque_part(cmd, "`source` runs a script file the analysis cannot see");
                Some(Outcome::same(State {
                    cwd: Cwd::Unknown,
                    ..state.clone()
                }))
            }
            "trap" => {
                let Some(words) = literal() else {
                    self.opaque_part(cmd, "`trap` with code only known when it runs");
                    return Some(Outcome::same(state.clone()));
                };
                let mut rest: &[String] = &words;
                if rest.first().map(String::as_str) == Some("--") {
                    rest = &rest[1..];
                }
                match rest.first().map(String::as_str) {
                    None | Some("-p" | "-l" | "-" | "") => Some(Outcome::same(state.clone())),
                    Some(_) if rest.len() == 1 => Some(Outcome::same(state.clone())),
                    Some(_) => {
                        self.opaque_part(cmd, "`trap` runs its code later, when a signal or exit comes");
                        Some(Outcome::same(state.clone()))
                    }
                }
            }
            "exec" => {
                let mut index = 0;
                while let Some(arg) = args.get(index) {
                    match arg.literal().as_deref() {
                        Some("-c" | "-l" | "-cl" | "-lc") => index += 1,
                        Some("-a") => index += 2,
                        Some("--") => {
                            index += 1;
                            break;
                        }
                        _ => break,
                    }
                }
                if index >= args.len() {
                    return Some(Outcome::same(state.clone()));
                }
                self.emit(cmd, None);
                let inner = Cmd {
                    args: args[index..].to_vec(),
                    raw: None,
                    env: cmd.env.clone(),
                    chdir: None,
                    external: true,
                };
                Some(self.run(inner, state.clone()))
            }
            "export" | "declare" | "typeset" | "local" | "readonly" => Some(self.declaration(name, cmd, args, state)),
            "unset" => {
                let mut functions = false;
                let mut funcs = (*state.funcs).clone();
                for arg in args {
                    match arg.literal() {
                        Some(flag) if flag == "-f" => functions = true,
                        Some(flag) if flag == "-v" || flag == "-n" || flag == "--" => {}
                        Some(name) if syntax::is_identifier(&name) => {
                            if dangerous_name(&name) {
                                self.refuse(format!("`unset {name}` changes what later commands run or read"));
                            }
                            if let Some(func) = funcs.get_mut(&*name) {
                                func.maybe_missing = true;
                            }
                        }
                        _ => {
                            self.refuse("`unset` of something other than a plain name (a subscript is evaluated)");
                        }
                    }
                }
                let _ = functions;
                Some(Outcome::same(State {
                    funcs: Rc::new(funcs),
                    ..state.clone()
                }))
            }
            "read" | "getopts" | "mapfile" | "readarray" => {
                let mut expects_value = false;
                for arg in args {
                    let Some(text) = arg.literal() else {
                        self.refuse(format!("`{name}` into a variable only known when it runs"));
                        break;
                    };
                    if expects_value {
                        expects_value = false;
                        continue;
                    }
                    if let Some(option) = text.strip_prefix('-') {
                        if option.contains('C') && matches!(name, "mapfile" | "readarray") {
                            self.refuse("`mapfile -C` runs a callback");
                        }
                        // Options with a value: read -a -d -i -n -N -p -t -u; mapfile -d -n -O -s -t -u -c.
                        expects_value = option.len() == 1 && "adinNptuOsc".contains(option);
                        continue;
                    }
                    if name == "getopts" && !syntax::is_identifier(&text) {
                        continue;
                    }
                    if !syntax::is_identifier(&text) {
                        if name != "getopts" {
                            self.refuse(format!("`{name}` into `{text}` (a subscript is evaluated)"));
                        }
                    } else if dangerous_name(&text) {
                        self.refuse(format!("`{name}` assigns {text}"));
                    }
                }
                Some(Outcome::same(state.clone()))
            }
            "printf" => {
                if let Some(index) = args.iter().position(|arg| arg.literal().as_deref() == Some("-v")) {
                    match args.get(index + 1).and_then(Arg::literal) {
                        Some(var) if syntax::is_identifier(&var) && !dangerous_name(&var) => {}
                        _ => self.refuse("`printf -v` into something other than a plain, harmless name"),
                    }
                }
                None
            }
            "set" => {
                for arg in args {
                    let Some(text) = arg.literal() else {
                        self.refuse("`set` with an option only known when it runs");
                        break;
                    };
                    if text == "--" || text == "-" {
                        break;
                    }
                    if text == "-o" || text == "+o" {
                        continue;
                    }
                    let allowed_option = matches!(
                        &*text,
                        "pipefail"
                            | "errexit"
                            | "nounset"
                            | "xtrace"
                            | "verbose"
                            | "noclobber"
                            | "errtrace"
                            | "functrace"
                    );
                    let allowed_flags = (text.starts_with('-') || text.starts_with('+'))
                        && text.len() > 1
                        && text[1..].chars().all(|c| "euxvCETbh".contains(c));
                    if !(allowed_option || allowed_flags) {
                        if text.starts_with('-') || text.starts_with('+') {
                            self.refuse(format!("`set {text}` changes how later lines are read or expanded"));
                        }
                        break;
                    }
                }
                Some(Outcome::same(state.clone()))
            }
            "test" | "[" => {
                if args
                    .iter()
                    .any(|arg| matches!(arg.literal().as_deref(), Some("-v" | "-R")))
                {
                    self.refuse("`test -v` evaluates a subscript");
                }
                Some(Outcome::same(state.clone()))
            }
            "let" => {
                self.refuse("`let` evaluates its arguments as arithmetic (data as code)");
                Some(Outcome::same(state.clone()))
            }
            "shopt" | "enable" | "alias" | "unalias" | "bind" | "fc" | "compgen" | "complete" | "compopt" | "hash" => {
                if name == "hash" && !args.iter().any(|arg| arg.literal().is_none_or(|t| t.starts_with("-p"))) {
                    return Some(Outcome::same(state.clone()));
                }
                self.refuse(format!("`{name}` changes how bash reads, expands or finds commands"));
                Some(Outcome::same(state.clone()))
            }
            _ => None,
        }
    }

    fn declaration(&mut self, name: &str, cmd: &Cmd, args: &[Arg], state: &State) -> Outcome {
        let mut options_done = false;
        for arg in args {
            let Some(text) = arg.literal().or_else(|| {
                // `export A=$(…)`: the name is known even when the value is not.
                let first = match arg.field.segs.first() {
                    Some(Seg::Lit(text)) => Cow::Borrowed(text.as_str()),
                    _ => return None,
                };
                first.contains('=').then_some(first)
            }) else {
                self.refuse(format!("`{name}` of a name only known when it runs"));
                break;
            };
            if !options_done && (text.starts_with('-') || text.starts_with('+')) && !text.contains('=') {
                if text == "--" {
                    options_done = true;
                    continue;
                }
                let flags = &text[1..];
                if flags.contains(['i', 'n']) {
                    self.refuse(format!("`{name} {text}` makes later assignments evaluate their value"));
                    break;
                }
                if flags.contains('f') && (text.starts_with('-') && (flags.contains('x') || name == "export")) {
                    self.refuse("exporting a function changes what child shells run");
                    break;
                }
                if !flags.chars().all(|c| "xrgaAlutpfF".contains(c)) {
                    self.refuse(format!("`{name} {text}`"));
                    break;
                }
                continue;
            }
            let var = text.split(['=', '+']).next().unwrap_or("");
            if !syntax::is_identifier(var) {
                self.refuse(format!("`{name} {text}` (a subscript or an odd name)"));
                break;
            }
            if dangerous_name(var) && (text.contains('=') || name != "export") {
                self.refuse(format!(
                    "`{name}` assigns {var}, which changes what later commands run or read"
                ));
                break;
            }
        }
        let _ = cmd;
        Outcome::same(state.clone())
    }

    fn change_directory(&mut self, name: &str, args: &[Arg], state: &State) -> Outcome {
        let mut operands = Vec::new();
        let mut options_done = false;
        for arg in args {
            match arg.literal().as_deref() {
                Some("--") if !options_done => options_done = true,
                Some(option) if !options_done && option.starts_with('-') && option.len() > 1 => {
                    if !option[1..].chars().all(|c| "LPe@".contains(c)) {
                        return Outcome {
                            ok: State {
                                cwd: Cwd::Unknown,
                                ..state.clone()
                            },
                            fail: state.clone(),
                        };
                    }
                }
                _ => operands.push(arg.clone()),
            }
        }
        let target = match operands.as_slice() {
            [] if name == "cd" => self.env.home.clone(),
            [one] => one
                .value()
                .filter(|value| value != "-" && !value.starts_with('+'))
                .map(Cow::into_owned),
            _ => None,
        };
        let Some(target) = target else {
            return Outcome {
                ok: State {
                    cwd: Cwd::Unknown,
                    ..state.clone()
                },
                fail: state.clone(),
            };
        };
        if let Some(arg) = operands.first() {
            self.file(arg, Access::Dir, state, false, None);
        }
        let relative_search = self.env.cdpath && !target.starts_with('/') && !target.starts_with('.');
        let cwd = match (&state.cwd, relative_search) {
            (_, true) | (Cwd::Unknown, _) if !target.starts_with('/') => Cwd::Unknown,
            (_, _) if target.starts_with('/') => Cwd::Known(Rc::new(vec![normalize(&target)])),
            (Cwd::Known(dirs), _) => Cwd::Known(Rc::new(dirs.iter().map(|dir| join(dir, &target)).collect())),
            (Cwd::Unknown, _) => Cwd::Unknown,
        };
        Outcome {
            ok: State { cwd, ..state.clone() },
            fail: state.clone(),
        }
    }

    /// Parses and walks shell code given as text (`eval`, `sh -c`): in this shell, or in a
    /// child shell (`fresh`: no functions, and nothing comes back).
    fn script(&mut self, text: &str, state: State, fresh: bool) -> Outcome {
        let list = match self.parsed_scripts.get(text) {
            Some(list) => Rc::clone(list),
            None => match syntax::parse(text) {
                Ok(list) => {
                    let list = Rc::new(list);
                    if self.parsed_bytes + text.len() <= MAX_INPUT {
                        self.parsed_bytes += text.len();
                        self.parsed_scripts.insert(text.to_string(), Rc::clone(&list));
                    }
                    list
                }
                Err(Stop(reason)) => {
                    self.refuse(format!("code run by `eval` or a shell could not be analysed: {reason}"));
                    return Outcome::same(state);
                }
            },
        };
        if self.calls.len() + self.scripts >= 16 {
            self.refuse("code run by `eval` or a shell nested more than 16 deep");
            return Outcome::same(state);
        }
        self.scripts += 1;
        let outcome = if fresh {
            let child = State {
                funcs: Rc::new(HashMap::new()),
                bindings: Rc::new(HashMap::new()),
                ..state.clone()
            };
            let _ = self.list(&list, child);
            Outcome::same(state)
        } else {
            self.list(&list, state)
        };
        self.scripts -= 1;
        outcome
    }

    // --- programs -----------------------------------------------------------------------------

    /// What the program `name` (the first argument's value) does with `args`.
    fn verdict(name: &str, args: &[Arg]) -> Verdict {
        let base = name.rsplit('/').next().unwrap_or(name);
        let system = !name.contains('/') || is_system_dir(name);
        if system {
            models::model_for(base, args)
        } else {
            models::unknown_program(args)
        }
    }

    /// Package managers and build tools write their caches and logs under the home
    /// directory on almost every run (`npm run build` logs to `~/.npm/_logs`): outside the
    /// project, so `external_directory` is asked for that directory (`~/.npm/*`; the whole
    /// home only while `~/.npm` does not exist yet, since creating it writes there). It is
    /// reported as a directory the command works in, not as `edit` of the names inside:
    /// those are the tool's own (hashes, dated logs), and a file-name rule such as
    /// `*.env: deny` says nothing about them. Without a known home the directory may be
    /// anywhere: asked, never saved.
    fn home_writes(&mut self, name: &str, args: &[Arg], verdict: &mut Verdict) {
        let base = name.rsplit('/').next().unwrap_or(name);
        if name.contains('/') && !is_system_dir(name) {
            return;
        }
        for dir in models::home_writes(base, args) {
            if self.home_done.contains(dir) {
                continue;
            }
            self.home_done.push(*dir);
            let arg = match self.env.home.clone() {
                Some(home) => {
                    // A missing directory is created in the nearest one that exists: that
                    // one is written to (`mkdir ~/.npm` writes `~`).
                    let home = PathBuf::from(home);
                    let mut target = home.join(dir);
                    while !self.fs.exists(&target)
                        && target != home
                        && let Some(parent) = target.parent()
                    {
                        target = parent.to_path_buf();
                    }
                    Arg::text(target.to_string_lossy())
                }
                None => Arg {
                    field: Field::unknown(format!("$HOME/{dir}")),
                    vanish: false,
                    split: true,
                },
            };
            verdict.effects.push(models::Effect {
                arg,
                access: Access::Dir,
                tree: false,
                under: None,
            });
        }
    }

    fn apply(&mut self, cmd: Cmd, state: State, verdict: Verdict) -> Outcome {
        if let Some(reason) = verdict.refuse {
            self.refuse(reason);
            return Outcome::same(state);
        }
        if let Some(reason) = &verdict.opaque {
            self.opaque_part(&cmd, reason);
        } else {
            self.emit(&cmd, verdict.code.clone());
            for form in &verdict.forms {
                let args: Vec<Arg> = form.iter().filter_map(|i| cmd.args.get(*i).cloned()).collect();
                let alt = Cmd {
                    args,
                    raw: None,
                    env: cmd.env.clone(),
                    chdir: cmd.chdir.clone(),
                    external: cmd.external,
                };
                self.emit(&alt, verdict.code.clone());
            }
        }
        let under = cmd.chdir.clone();
        for effect in &verdict.effects {
            let dir = effect.under.clone().or_else(|| under.clone());
            // A directory given relative to `under` is relative to it in turn.
            let dir = match (&under, &effect.under) {
                (Some(outer), Some(inner)) if !inner.starts_with("/") => {
                    let mut joined = outer.clone();
                    joined.segs.push(Seg::Lit("/".into()));
                    joined.segs.extend(inner.segs.clone());
                    Some(joined)
                }
                _ => dir,
            };
            self.file(&effect.arg, effect.access, &state, effect.tree, dir.as_ref());
        }
        for nested in verdict.nested {
            if self.stopped() {
                break;
            }
            let mut args = nested.args;
            if args.is_empty() {
                continue;
            }
            if nested.appended {
                args.push(Arg {
                    field: Field::unknown("…"),
                    vanish: true,
                    split: true,
                });
            }
            let chdir = match (&cmd.chdir, nested.chdir) {
                (Some(outer), Some(inner)) => {
                    let mut joined = outer.clone();
                    joined.segs.push(Seg::Lit("/".into()));
                    joined.segs.extend(inner.segs);
                    Some(joined)
                }
                (outer, inner) => inner.or_else(|| outer.clone()),
            };
            let inner = Cmd {
                args,
                raw: None,
                env: nested.env,
                chdir,
                external: true,
            };
            let _ = self.run(inner, state.clone());
        }
        for script in verdict.scripts {
            if self.stopped() {
                break;
            }
            let _ = self.script(&script, state.clone(), true);
        }
        Outcome::same(state)
    }

    // --- parts ------------------------------------------------------------------------------------

    /// The resource of a command's words, joined by one space. `absent` marks words that
    /// vanished (an unquoted expansion of nothing).
    fn words_resource(args: &[Arg], absent: &[usize]) -> Resource {
        let mut resource = Resource::default();
        let mut first = true;
        for (index, arg) in args.iter().enumerate() {
            if absent.contains(&index) {
                continue;
            }
            if !first {
                resource.push_text(" ");
            }
            first = false;
            arg.field.push_resource(&mut resource);
        }
        resource
    }

    /// Which words may vanish: each combination is a command bash may run. More than three
    /// such words and one hole takes them all.
    fn vanishing(args: &[Arg]) -> Vec<usize> {
        args.iter()
            .enumerate()
            .skip(1)
            .filter(|(_, arg)| arg.vanish && arg.field.value().is_none_or(|value| value.is_empty()))
            .map(|(index, _)| index)
            .collect()
    }

    /// The "always" pattern of a command, when every word of its arity prefix is known.
    fn save_for(args: &[Arg]) -> Option<String> {
        const HOLE: &str = "\u{0}";
        // Words past the arity table's reach never change the prefix.
        let tokens: Vec<String> = args
            .iter()
            .take(crate::arity::reach())
            .map(|arg| match arg.literal() {
                Some(text) if !arg.vanish => text.into_owned(),
                _ => HOLE.to_string(),
            })
            .collect();
        let prefix = crate::arity::prefix(&tokens);
        if prefix.is_empty() || prefix.contains(&HOLE) {
            return None;
        }
        Some(format!("{} *", prefix.join(" ")))
    }

    /// How [`Self::words_resource`] of the same words is shown, without building it.
    fn words_display(args: &[Arg], absent: &[usize]) -> String {
        let size = args.iter().map(|arg| arg.field.display_len() + 1).sum();
        let mut out = String::with_capacity(size);
        Self::push_words_display(args, absent, &mut out);
        out
    }

    /// Appends [`Self::words_display`] of the words to `out`.
    fn push_words_display(args: &[Arg], absent: &[usize], out: &mut String) {
        let mut first = true;
        for (index, arg) in args.iter().enumerate() {
            if absent.contains(&index) {
                continue;
            }
            if !first {
                out.push(' ');
            }
            first = false;
            arg.field.push_display(out);
        }
    }

    /// Emits the parts of a command: its words (every way its vanishing words may go), its
    /// source text, its name without a path. A part already emitted (same display) is not
    /// built again: the first one stands.
    fn emit(&mut self, cmd: &Cmd, code: Option<String>) {
        let vanishing = Self::vanishing(&cmd.args);
        // Built where the last command's display was (a repeated command, the common case,
        // then allocates nothing here).
        let mut display = std::mem::take(&mut self.display);
        display.clear();
        Self::push_words_display(&cmd.args, &[], &mut display);
        self.emit_parts(cmd, code, &vanishing, &display);
        self.display = display;
    }

    fn emit_parts(&mut self, cmd: &Cmd, code: Option<String>, vanishing: &[usize], display: &str) {
        // The words as they are first, then each way the vanishing ones may go (no list is
        // built when none may).
        let none_absent: Vec<usize> = Vec::new();
        let mut vanished: Vec<Vec<usize>> = Vec::new();
        if vanishing.len() <= 3 {
            for mask in 1..(1usize << vanishing.len()) {
                vanished.push(
                    vanishing
                        .iter()
                        .enumerate()
                        .filter(|(bit, _)| mask & (1 << bit) != 0)
                        .map(|(_, index)| *index)
                        .collect(),
                );
            }
        }
        let raw = cmd.raw.filter(|raw| *raw != display);
        let plain = cmd
            .args
            .first()
            // Only a name with a `/` has a plain form: no copy of the others.
            .filter(|arg| {
                arg.field
                    .segs
                    .iter()
                    .any(|seg| matches!(seg, Seg::Lit(text) if text.contains('/')))
            })
            .and_then(Arg::literal)
            .filter(|name| name.contains('/'))
            .and_then(|name| {
                name.rsplit('/')
                    .next()
                    .filter(|plain| !plain.is_empty())
                    .map(str::to_string)
            });
        // The save pattern and the reason are only needed by a part that is new.
        let needed = vanishing.len() > 3
            || !self.out.has_plain(display)
            || raw.is_some_and(|raw| !self.out.has_plain(raw))
            || plain.is_some();
        if !needed && vanished.is_empty() {
            return;
        }
        let save = if code.is_some() || !needed {
            None
        } else {
            Self::save_for(&cmd.args)
        };
        let why = code.clone().or_else(|| {
            save.is_none()
                .then(|| "a word of its name is only known when it runs".to_string())
        });
        if vanishing.len() > 3 {
            // Too many combinations: one hole of any value stands for all the words that
            // may vanish, separators included.
            let mut resource = Resource::default();
            let mut need_space = false;
            for arg in &cmd.args {
                if arg.vanish {
                    resource.push_hole(arg.field.display(), HoleClass::Any);
                    need_space = false;
                    continue;
                }
                if need_space {
                    resource.push_text(" ");
                }
                arg.field.push_resource(&mut resource);
                need_space = true;
            }
            self.out.part(Part {
                resource,
                save: None,
                opaque: false,
                why: why.clone(),
            });
        }
        for (index, absent) in std::iter::once(&none_absent).chain(&vanished).enumerate() {
            if index == 0 && self.out.has_plain(display) {
                continue;
            }
            if index > 0 && self.out.has_plain(&Self::words_display(&cmd.args, absent)) {
                continue;
            }
            let resource = Self::words_resource(&cmd.args, absent);
            self.out.part(Part {
                resource,
                save: if index == 0 { save.clone() } else { None },
                opaque: false,
                why: if index == 0 {
                    why.clone()
                } else {
                    Some("the same command when its empty expansions vanish".into())
                },
            });
        }
        if let Some(raw) = raw
            && !self.out.has_plain(raw)
        {
            self.out.part(Part {
                resource: Resource::exact(raw),
                save: save.clone(),
                opaque: false,
                why: why.clone(),
            });
        }
        if let Some(plain) = plain {
            let mut args = cmd.args.clone();
            args[0] = Arg::text(plain);
            let resource = Self::words_resource(&args, &[]);
            let save = if code.is_some() { None } else { Self::save_for(&args) };
            self.out.part(Part {
                resource,
                save,
                opaque: false,
                why,
            });
        }
    }

    /// Emits a part that stands for anything: the command runs code the analysis cannot see.
    fn opaque_part(&mut self, cmd: &Cmd, why: &str) {
        let display = Self::words_resource(&cmd.args, &[]).display();
        self.out.part(Part {
            resource: Resource::unknown(display),
            save: None,
            opaque: true,
            why: Some(why.to_string()),
        });
    }
}

/// A path's pieces for the permission checks: patterns become one-component holes.
fn pieces(field: &Field) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    let push_text = |out: &mut Vec<Piece>, text: &str| match out.last_mut() {
        Some(Piece::Text(last)) => last.push_str(text),
        _ => out.push(Piece::Text(text.to_string())),
    };
    for seg in &field.segs {
        match seg {
            Seg::Lit(text) => push_text(&mut out, text),
            Seg::Hole { value: Some(value), .. } => push_text(&mut out, value),
            Seg::Hole { display, class, .. } => out.push(Piece::Hole {
                display: display.clone(),
                class: *class,
            }),
            Seg::Glob(glob) => {
                let display = match glob {
                    Glob::Star => "*".to_string(),
                    Glob::One => "?".to_string(),
                    Glob::Class { text, .. } => text.clone(),
                };
                match out.last_mut() {
                    Some(Piece::Hole {
                        display: last,
                        class: PathHole::Name,
                    }) => last.push_str(&display),
                    _ => out.push(Piece::Hole {
                        display,
                        class: PathHole::Name,
                    }),
                }
            }
        }
    }
    out
}

/// Appends how the [`pieces`] of `field` are shown (what [`PathRef::display`] of them gives).
fn push_pieces_display(field: &Field, out: &mut String) {
    for seg in &field.segs {
        match seg {
            Seg::Lit(text) | Seg::Hole { value: Some(text), .. } => out.push_str(text),
            Seg::Hole { display, .. } => out.push_str(display),
            Seg::Glob(glob) => match glob {
                Glob::Star => out.push('*'),
                Glob::One => out.push('?'),
                Glob::Class { text, .. } => out.push_str(text),
            },
        }
    }
}

/// A value field whose patterns are already matched (a `for` variable): patterns become
/// one-component holes that are no longer active.
fn hole_patterns(field: &Field) -> Field {
    Field {
        segs: field
            .segs
            .iter()
            .map(|seg| match seg {
                Seg::Glob(glob) => Seg::Hole {
                    display: match glob {
                        Glob::Star => "*".into(),
                        Glob::One => "?".into(),
                        Glob::Class { text, .. } => text.clone(),
                    },
                    class: PathHole::Name,
                    value: None,
                },
                other => other.clone(),
            })
            .collect(),
    }
}

/// Whether `text` names `var` other than as `$var` / `${var}` more than once (the loop
/// header is the once): then the body may assign it.
fn mentions_bare(text: &str, var: &str) -> bool {
    let bytes = text.as_bytes();
    let mut count = 0;
    let mut start = 0;
    while let Some(found) = text[start..].find(var) {
        let at = start + found;
        let end = at + var.len();
        let before = if at == 0 { b' ' } else { bytes[at - 1] };
        let after = bytes.get(end).copied().unwrap_or(b' ');
        let word_edge =
            !(after.is_ascii_alphanumeric() || after == b'_' || before.is_ascii_alphanumeric() || before == b'_');
        if word_edge && before != b'$' && !(before == b'{' && at >= 2 && bytes[at - 2] == b'$') {
            count += 1;
        }
        start = end;
    }
    count > 1
}

fn is_system_dir(path: &str) -> bool {
    let dir = path.rsplit_once('/').map_or("", |(dir, _)| dir);
    matches!(
        dir,
        "/bin" | "/usr/bin" | "/usr/local/bin" | "/sbin" | "/usr/sbin" | "/usr/local/sbin"
    )
}

/// `dir` (relative to the working directory, or absolute) joined with `path`.
pub(crate) fn join(dir: &str, path: &str) -> String {
    if path.starts_with('/') {
        return normalize(path);
    }
    if dir.is_empty() {
        return normalize(path);
    }
    normalize(&format!("{}/{path}", dir.trim_end_matches('/')))
}

/// Removes `.` components and duplicate slashes (`..` stays: only the filesystem knows
/// what it leads to).
fn normalize(path: &str) -> String {
    let absolute = path.starts_with('/');
    let parts: Vec<&str> = path
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    let joined = parts.join("/");
    if absolute { format!("/{joined}") } else { joined }
}

pub(crate) fn absolute(workdir: &Path, dir: &str) -> String {
    if dir.starts_with('/') {
        dir.to_string()
    } else if dir.is_empty() {
        workdir.to_string_lossy().into_owned()
    } else {
        workdir.join(dir).to_string_lossy().into_owned()
    }
}
