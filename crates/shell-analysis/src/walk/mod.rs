//! What a command line would run, and what it touches (permission analysis).
//!
//! The line is parsed by [`crate::syntax`] (a parser for the subset of bash whose meaning
//! the analysis knows exactly); anything outside it makes the whole line *opaque*. The
//! walker then follows bash's order of evaluation with a small state — the working
//! directory (one of a few known directories, or unknown), the functions defined so far,
//! and `for` variables over known words — and turns every simple command into words after
//! expansion (text with holes where a value is only known at run time). Builtins that
//! change the shell's state are modelled here; programs are modelled by the table in
//! `programs/`: which operands and options read, write, delete or run code.
//!
//! Every command that would run becomes [`Part`]s (its words; its source text; its name
//! without a path; its words without known global options). Files read, written, and
//! directories used become [`PathRef`]s for `read`, `edit` and `external_directory`.
//! Code the analysis cannot see (an interpreter's inline code, `eval` of a variable, a
//! shell reading a script) becomes an opaque part: every rule could apply, never saved.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use toolgate_core::Resource;

use crate::analysis::{Analysis, Env, Part, PathRef};
use crate::arg::{Arg, Cmd};
use crate::expand::{self, Ctx, Expanded, Field, Mode};
use crate::programs;
use crate::syntax::{
    self, AndOr, Assign, AssignValue, Command, Compound, List, Part as WordPart, Pipeline, Simple, Stop, Word,
};

mod builtins;
mod emit;
mod options;
mod paths;
mod piped;

use builtins::{BUILTIN_NAMES, RESERVED, dangerous_assignment, dangerous_name};
use paths::{hole_patterns, pieces, push_pieces_display};

/// Input larger than this is not analysed (the whole line is opaque).
pub(crate) const MAX_INPUT: usize = 1024 * 1024;

/// Analyses a command line run in this process's working directory.
///
/// ```
/// let analysis = toolgate_shell_analysis::analyze("git status; FOO=1 rm -rf build > log.txt");
/// let resources: Vec<String> = analysis.parts.iter().map(|p| p.display()).collect();
/// assert_eq!(resources, ["git status", "rm -rf build", "rm -rf build > log.txt"]);
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
        traps: Vec::new(),
        all_funcs: HashMap::new(),
        cwds_seen: None,
        programs_ran: false,
        piped: None,
        piped_settled: false,
        extracted: Vec::new(),
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
    walker.run_traps();
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

/// A function call walked in one state, and the directory it left.
struct Walked {
    funcs: Rc<HashMap<String, Func>>,
    bindings: Rc<HashMap<String, Field>>,
    programs_ran: bool,
    after: Cwd,
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
    /// Whether the paths pushed now are [`PathRef::settled`]: the walker says so.
    settled: bool,
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
                    created: false,
                    settled: false,
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
        key.push(if self.settled { 's' } else { 'u' });
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

    fn push_path(&mut self, kind: u8, mut path: PathRef) {
        path.settled = self.settled;
        match kind {
            0 => self.reads.push(path),
            1 => self.writes.push(path),
            _ => self.paths.push(path),
        }
    }
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
    /// Calls of a function already walked: by name and directory, each with the state it
    /// was walked in (the functions and variables, kept alive so that their identity is
    /// theirs, and whether a program had run) and the directory it left. A call in the
    /// same state leaves the same parts; any other is walked again.
    memo: HashMap<(String, Cwd), Vec<Walked>>,
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
    /// The code `trap` set, walked when the line is over (`run_traps`).
    traps: Vec<String>,
    /// Every body each function name had anywhere in the line: what a trap may call.
    all_funcs: HashMap<String, Func>,
    /// Every working directory a command of the line ran in: where a trap may run.
    cwds_seen: Option<Cwd>,
    /// Whether a program (not a builtin) ran already: from then on a script file may have
    /// been written by it.
    programs_ran: bool,
    /// The words the `xargs` at hand appends, when the `find` before it in the pipeline
    /// says what they are (piped.rs); taken by the first command that appends words.
    piped: Option<Arg>,
    /// The `xargs` at hand runs in a pipeline that piped.rs found changes no file.
    piped_settled: bool,
    /// Directories (absolute) an extractor wrote members into earlier in the line: a
    /// member may be a link to any file, so what is read below them is not known.
    extracted: Vec<String>,
}

impl Walker<'_> {
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

    /// Walks the code `trap` set, once each, after the line: a trap may run at any time
    /// (a signal, `EXIT`, `ERR`, `DEBUG` before every command), so it runs in every
    /// directory the line was in, with every body each function ever had and no variable
    /// known.
    fn run_traps(&mut self) {
        let mut done = 0;
        while done < self.traps.len() && !self.stopped() {
            let code = self.traps[done].clone();
            done += 1;
            let funcs: HashMap<String, Func> = self
                .all_funcs
                .iter()
                .map(|(name, func)| {
                    let mut func = func.clone();
                    func.maybe_missing = true;
                    (name.clone(), func)
                })
                .collect();
            let state = State {
                cwd: self.cwds_seen.clone().unwrap_or(Cwd::Unknown),
                funcs: Rc::new(funcs),
                bindings: Rc::new(HashMap::new()),
            };
            let _ = self.script(&code, state, false);
        }
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
                let ran_before = self.programs_ran;
                // Each command of a pipeline runs in a subshell.
                for (index, command) in many.iter().enumerate() {
                    if self.stopped() {
                        break;
                    }
                    let piped = match index.checked_sub(1) {
                        Some(before) => self.piped_paths(&many[before], command, &state, ran_before),
                        None => None,
                    };
                    self.piped_settled = piped.is_some();
                    self.piped = piped;
                    let _ = self.command(command, state.clone());
                    self.piped = None;
                    self.piped_settled = false;
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
        // A command's state is copied and merged with others around it: the work grows
        // with the functions and variables it holds.
        if !self.spend(1 + state.funcs.len() + state.bindings.len()) {
            return Outcome::same(state);
        }
        self.cwds_seen = Some(match &self.cwds_seen {
            Some(seen) => seen.union(&state.cwd),
            None => state.cwd.clone(),
        });
        match command {
            Command::Simple(simple) => self.simple(simple, state),
            Command::Compound(compound, redirects) => {
                self.redirects(redirects, &state);
                self.compound(compound, state)
            }
            Command::Function { name, body } => {
                let body = Rc::new((**body).clone());
                let every = self.all_funcs.entry(name.clone()).or_insert_with(|| Func {
                    bodies: Vec::new(),
                    maybe_missing: true,
                });
                if !every.bodies.iter().any(|known| Rc::ptr_eq(known, &body)) {
                    every.bodies.push(Rc::clone(&body));
                }
                let mut funcs = (*state.funcs).clone();
                funcs.insert(
                    name.clone(),
                    Func {
                        bodies: vec![body],
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
            Ok(expanded) => self.spend(expanded.work).then_some(expanded),
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
        // The command's text as a rule written on text sees it, without the assignments in
        // front: none of them is one that changes what runs (`assignment` made the line
        // opaque for those), so `RUST_BACKTRACE=1 cargo test` is `cargo test` to a rule.
        let raw = if simple.assigns.is_empty() {
            Some(simple.raw.as_str())
        } else {
            simple.raw.get(simple.words_at..)
        };
        let cmd = Cmd {
            args,
            raw,
            env: Vec::new(),
            chdir: None,
            external: false,
        };
        self.run(cmd, state)
    }

    fn assignment(&mut self, assign: &Assign, state: &State) {
        let value = match &assign.value {
            AssignValue::Scalar(word) => word.literal(),
            AssignValue::Array(_) => None,
        };
        if dangerous_assignment(&assign.name, value.as_deref()) {
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
        for (name, value) in &cmd.env {
            if dangerous_assignment(name, value.as_deref()) {
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
        if BUILTIN_NAMES.contains(&&*name)
            && let Some(outcome) = self.builtin(&name, &cmd, &state)
        {
            return outcome;
        }
        // The name is borrowed from `cmd` until the verdict is made; then `cmd` moves on.
        let mut verdict = Self::verdict(&name, &cmd.args);
        let homes = self.home_writes(&name, &cmd.args, &mut verdict);
        let outcome = self.apply(cmd, state, verdict);
        for path in homes {
            self.out.path(2, path);
        }
        // What a program writes is not all known: a script file read after it may be its.
        self.programs_ran = true;
        outcome
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
        let walked = self.memo.get(&key).and_then(|walked| {
            walked
                .iter()
                .find(|walked| {
                    Rc::ptr_eq(&walked.funcs, &state.funcs)
                        && Rc::ptr_eq(&walked.bindings, &state.bindings)
                        && walked.programs_ran == self.programs_ran
                })
                .map(|walked| walked.after.clone())
        });
        let mut after = match walked {
            Some(cwd) => State { cwd, ..state.clone() },
            None => {
                let programs_ran = self.programs_ran;
                self.calls.push(name.to_string());
                let mut merged: Option<State> = None;
                for body in &func.bodies {
                    // Positional parameters inside are holes; the body runs in this shell,
                    // with the functions and variables of this call.
                    let result = self.command(body, state.clone()).either();
                    merged = Some(match merged {
                        Some(m) => m.union(&result),
                        None => result,
                    });
                }
                self.calls.pop();
                let after = merged.unwrap_or_else(|| state.clone());
                if Rc::ptr_eq(&after.funcs, &state.funcs) {
                    self.memo.entry(key).or_default().push(Walked {
                        funcs: Rc::clone(&state.funcs),
                        bindings: Rc::clone(&state.bindings),
                        programs_ran,
                        after: after.cwd.clone(),
                    });
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
        if name.contains('/') || BUILTIN_NAMES.contains(&name) || RESERVED.contains(&name) || programs::known(name) {
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
