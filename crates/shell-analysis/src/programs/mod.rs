//! Side effects are data: what each program does with its operands and options.
//!
//! Every program the analysis knows has a [`Model`] in [`MODELS`]: its options (GNU
//! `getopt_long` rules: clustered short options, `--long=value`, unique prefixes of long
//! options, options after operands, `--`), what its operands do (read, write, delete,
//! name a directory), which options name files read or written, which make it recurse,
//! and which make it run code — shell code the analysis cannot see (the part becomes
//! opaque) or another language's inline code (the part can never be saved). A program may
//! add a special step for what a table cannot say (`find` expressions, `sed` scripts,
//! `git` subcommands, wrappers that run another command).
//!
//! An option the model does not know, or an argument whose value is only known at run
//! time where an option could be, is assumed to do the worst the program can do
//! ([`Model::unknown`]). A program without a model reads every operand that looks like a
//! path.

use crate::arg::{Access, Arg};
use crate::expand::Field;
use getopt::{Parsed, Spec, getopt, split_value};
use table::MODELS;

mod archive;
mod compile;
mod files;
mod find;
mod getopt;
mod git;
mod net;
mod packages;
mod runners;
// The table is data laid out by hand: one entry a line, long ones wrapped.
#[rustfmt::skip]
mod table;
mod text;

pub(crate) use find::below;
pub(crate) use packages::home_writes;

#[cfg(test)]
mod tests;

/// A path effect of a command.
#[derive(Clone, Debug)]
pub(crate) struct Effect {
    pub(crate) arg: Arg,
    pub(crate) access: Access,
    pub(crate) tree: bool,
    /// The directory the path is relative to, when not the current one (`tar -C dir`).
    pub(crate) under: Option<Field>,
}

/// A command run by another (`sudo cmd`, `find -exec cmd`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Nested {
    pub(crate) args: Vec<Arg>,
    /// Variables it sets for the command (`env NAME=value`), with their values when known.
    pub(crate) env: Vec<(String, Option<String>)>,
    pub(crate) chdir: Option<Field>,
    /// More arguments come from input at run time (`xargs`).
    pub(crate) appended: bool,
}

/// What the analysis concludes about one command.
#[derive(Clone, Debug, Default)]
pub(crate) struct Verdict {
    pub(crate) effects: Vec<Effect>,
    pub(crate) nested: Vec<Nested>,
    /// Shell code a child shell runs (`sh -c '…'`).
    pub(crate) scripts: Vec<String>,
    /// Script files a child shell runs (`bash script.sh`): their path is read, and the
    /// walker reads their commands when it can trust the file.
    pub(crate) script_files: Vec<Arg>,
    /// The command runs code of another language given inline: never saved.
    pub(crate) code: Option<String>,
    /// The command runs shell code the analysis cannot see: an opaque part.
    pub(crate) opaque: Option<String>,
    /// The whole line cannot be analysed.
    pub(crate) refuse: Option<String>,
    /// Other spellings to match too, as argument indices (without global options).
    pub(crate) forms: Vec<Vec<usize>>,
}

impl Verdict {
    fn effect(&mut self, arg: &Arg, access: Access, tree: bool) {
        self.effects.push(Effect {
            arg: arg.clone(),
            access,
            tree,
            under: None,
        });
    }

    fn effect_under(&mut self, arg: &Arg, access: Access, tree: bool, under: Option<&Field>) {
        self.effects.push(Effect {
            arg: arg.clone(),
            access,
            tree,
            under: under.cloned(),
        });
    }

    fn opaque(&mut self, reason: impl Into<String>) {
        if self.opaque.is_none() {
            self.opaque = Some(reason.into());
        }
    }
}

/// What a program's operands do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Nothing the rules speak about (data, names, numbers).
    None,
    /// Files read.
    Read,
    /// Files written, created or changed.
    Write,
    /// Paths looked at (listed, stat'ed): only checked to be inside the project.
    Dir,
}

/// The worst an unknown option of a program can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unknown {
    /// Nothing beyond what its operands do.
    Harmless,
    /// Read any file.
    Reads,
    /// Write any file.
    Writes,
    /// Run code.
    Code,
}

/// A program's model.
pub(crate) struct Model {
    pub(crate) names: &'static [&'static str],
    pub(crate) spec: Spec,
    /// What operands do.
    pub(crate) operands: Role,
    /// The first operand is a pattern or program, not a file, unless one of these options
    /// was given.
    pub(crate) pattern_first: Option<&'static [&'static str]>,
    /// Options whose value is a file, and what is done with it.
    pub(crate) files: &'static [(&'static str, Role)],
    /// Options that make operands whole trees.
    pub(crate) recursive: &'static [&'static str],
    /// Options that run shell code the analysis cannot see.
    pub(crate) opaque: &'static [&'static str],
    /// The worst an unknown option does.
    pub(crate) unknown: Unknown,
    /// A step for what the table cannot say.
    pub(crate) special: Option<Special>,
    /// False when the special step reads the arguments itself (the table's options,
    /// operands and unknown-option rule do not apply).
    pub(crate) generic: bool,
}

/// The special steps, by the family file that holds each; an entry of the table names its
/// step by one of these, and [`run_special`] runs it (so the table depends on no code).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Special {
    /// `xxd`: input, then output (files.rs).
    Xxd,
    /// `uniq`: input, then output (files.rs).
    Uniq,
    /// `chmod`-likes: a mode or owner, then files changed (files.rs).
    Chmod,
    /// `cp`, `mv`, `ln`, `install`: sources and the destination (files.rs).
    Copy,
    /// `dd`: `if=` and `of=` (files.rs).
    Dd,
    /// `tar` (archive.rs).
    Tar,
    /// Compressors, `zip`, `unzip`, `7z`, `patch` (archive.rs).
    Archive,
    /// `find` expressions (find.rs).
    Find,
    /// `xargs` and the command it runs (find.rs).
    Xargs,
    /// `git` global options and subcommands (git.rs).
    Git,
    /// `curl` (net.rs).
    Curl,
    /// `wget` (net.rs).
    Wget,
    /// `ssh`, `scp`, `nc` (net.rs).
    Ssh,
    /// Package managers' and build tools' global options (packages.rs).
    GlobalOptions,
    /// Wrappers that run a command: `env`, `sudo`, `timeout`… (runners.rs).
    Wrapper,
    /// `sh -c` and other shells (runners.rs).
    Shell,
    /// Interpreters of other languages (runners.rs).
    Interpreter,
    /// Programs that always run what the analysis cannot see (runners.rs).
    AlwaysOpaque,
    /// `make` (runners.rs).
    Make,
    /// `grep` recursion (text.rs).
    Grep,
    /// `rg`: trees, the current directory by default (text.rs).
    Ripgrep,
    /// `sed` scripts (text.rs).
    Sed,
    /// `awk` programs (text.rs).
    Awk,
    /// `jq` filters and files (text.rs).
    Jq,
    /// C compilers, `cpp`, `as` (compile.rs).
    Compiler,
}

/// Runs the special step `special` of the program `ctx` names.
fn run_special(special: Special, ctx: &Ctx<'_>, verdict: &mut Verdict) {
    match special {
        Special::Xxd => files::xxd(ctx, verdict),
        Special::Uniq => files::uniq(ctx, verdict),
        Special::Chmod => files::chmod(ctx, verdict),
        Special::Copy => files::copy(ctx, verdict),
        Special::Dd => files::dd(ctx, verdict),
        Special::Tar => archive::tar(ctx, verdict),
        Special::Archive => archive::archive(ctx, verdict),
        Special::Find => find::find(ctx, verdict),
        Special::Xargs => find::xargs(ctx, verdict),
        Special::Git => git::git(ctx, verdict),
        Special::Curl => net::curl(ctx, verdict),
        Special::Wget => net::wget(ctx, verdict),
        Special::Ssh => net::ssh(ctx, verdict),
        Special::GlobalOptions => packages::global_options(ctx, verdict),
        Special::Wrapper => runners::wrapper(ctx, verdict),
        Special::Shell => runners::shell(ctx, verdict),
        Special::Interpreter => runners::interpreter(ctx, verdict),
        Special::AlwaysOpaque => runners::always_opaque(ctx, verdict),
        Special::Make => runners::make(ctx, verdict),
        Special::Grep => text::grep(ctx, verdict),
        Special::Ripgrep => text::ripgrep(ctx, verdict),
        Special::Sed => text::sed(ctx, verdict),
        Special::Awk => text::awk(ctx, verdict),
        Special::Jq => text::jq(ctx, verdict),
        Special::Compiler => compile::compiler(ctx, verdict),
    }
}

/// What a special step sees.
pub(crate) struct Ctx<'c> {
    pub(crate) name: &'c str,
    /// The arguments after the program name.
    pub(crate) args: &'c [Arg],
    pub(crate) parsed: &'c Parsed,
}

impl Ctx<'_> {
    fn operand(&self, i: usize) -> Option<&Arg> {
        self.parsed.operands.get(i).and_then(|index| self.args.get(*index))
    }

    fn operands(&self) -> impl Iterator<Item = &Arg> {
        self.parsed.operands.iter().filter_map(|index| self.args.get(*index))
    }
}

/// Whether the analysis models `name`.
pub(crate) fn known(name: &str) -> bool {
    find_model(name).is_some()
}

/// The first model naming `name`, through an index built once (every command a line runs
/// looks its program up): every name with its model's position, sorted by name.
pub(crate) fn find_model(name: &str) -> Option<&'static Model> {
    type Index = std::collections::HashMap<&'static str, usize, std::hash::BuildHasherDefault<Fnv>>;
    static INDEX: std::sync::OnceLock<Index> = std::sync::OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut index = Index::default();
        for (position, model) in MODELS.iter().enumerate() {
            for name in model.names {
                // The first model that names a program is the one a scan would find.
                index.entry(*name).or_insert(position);
            }
        }
        index
    });
    index.get(name).and_then(|position| MODELS.get(*position))
}

/// The compiler a name like `x86_64-linux-gnu-gcc-12` or `clang-17` is installed as:
/// a name of the compilers' entry with a target before it, a version after it, or both.
fn compiler_name(name: &str) -> Option<&'static str> {
    if find_model(name).is_some() {
        return None;
    }
    let unversioned = match name.rsplit_once('-') {
        Some((stem, version)) if !version.is_empty() && version.chars().all(|c| c.is_ascii_digit() || c == '.') => stem,
        _ => name,
    };
    let base = unversioned.rsplit('-').next().unwrap_or(unversioned);
    table::COMPILER_NAMES.iter().copied().find(|compiler| *compiler == base)
}

/// FNV-1a: a fast hash for the fixed table of program names. The keys are the table's own,
/// so a line cannot fill it with colliding names (what a keyed hash guards against).
#[derive(Default)]
pub(crate) struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for byte in bytes {
            hash ^= u64::from(*byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = hash;
    }
}

/// The verdict for a program the analysis knows by `name` (its base name).
pub(crate) fn model_for(name: &str, args: &[Arg]) -> Verdict {
    let name = if let Some(version) = name.strip_prefix("python") {
        if version.chars().all(|c| c.is_ascii_digit() || c == '.') {
            "python3"
        } else {
            name
        }
    } else {
        name
    };
    let name = compiler_name(name).unwrap_or(name);
    let Some(model) = find_model(name) else {
        return unknown_program(args);
    };
    let rest = &args[1..];
    let parsed = getopt(&model.spec, rest);
    let mut verdict = Verdict::default();
    let ctx = Ctx {
        name,
        args: rest,
        parsed: &parsed,
    };
    if !model.generic {
        if let Some(special) = model.special {
            run_special(special, &ctx, &mut verdict);
        }
        return verdict;
    }
    for opt in &parsed.opts {
        if model.opaque.contains(&&*opt.name) {
            verdict.opaque(format!("`{name} {}` runs a program the analysis cannot see", opt.name));
        }
        if let Some((_, role)) = model.files.iter().find(|(option, _)| *option == opt.name)
            && let Some(value) = &opt.value
        {
            push_role(&mut verdict, value, *role, false);
        }
        // A list of files to read (`wc --files0-from=LIST`): the files it names are read
        // too, and which ones only the list knows.
        if table::FILE_LISTS.contains(&&*opt.name) {
            listed_files(&mut verdict, Access::Read);
        }
    }
    // `md5sum -c SUMS` reads the files SUMS names.
    if let Some((_, options)) = table::LIST_OPTIONS.iter().find(|(names, _)| names.contains(&name))
        && parsed.has(options)
    {
        listed_files(&mut verdict, Access::Read);
    }
    // `strings @FILE`: binutils read more arguments from a response file (a file named
    // `@FILE` when there is none), so the files they name are unknown too.
    if table::RESPONSE_FILES.contains(&name) {
        for arg in ctx.operands() {
            if let Some(text) = arg.literal()
                && let Some(file) = text.strip_prefix('@')
                && !file.is_empty()
            {
                verdict.effect(&split_value(arg, 1), Access::Read, false);
                listed_files(&mut verdict, Access::Read);
            }
        }
    }
    if !parsed.unknown.is_empty() {
        let what = parsed.unknown.join(" ");
        match model.unknown {
            Unknown::Harmless => {}
            // A pattern that matches a file named like an option reads names of this
            // directory only, which the pattern's own path already covers.
            Unknown::Reads if !parsed.dynamic => {}
            Unknown::Reads => verdict.effect(&Arg::unknown(&what), Access::Read, true),
            Unknown::Writes => verdict.effect(&Arg::unknown(&what), Access::Write, true),
            Unknown::Code => verdict.opaque(format!("`{name}` with an option the analysis does not know ({what})")),
        }
    }
    if model.operands != Role::None {
        let tree = parsed.has(model.recursive);
        let skip = match model.pattern_first {
            Some(options) if !parsed.has(options) => 1,
            _ => 0,
        };
        for arg in ctx.operands().skip(skip) {
            push_role(&mut verdict, arg, model.operands, tree);
        }
    }
    if let Some(special) = model.special {
        run_special(special, &ctx, &mut verdict);
    }
    verdict
}

/// The files a list names (`--files0-from=LIST`, names on the input, a response file):
/// read or written, and which ones only the list knows, so anywhere.
pub(crate) fn listed_files(verdict: &mut Verdict, access: Access) {
    verdict.effect(&Arg::unknown(LISTED_FILES), access, true);
}

/// How [`listed_files`] shows the files a list names.
pub(crate) const LISTED_FILES: &str = "(the files a list names)";

/// How the members an extractor writes are shown (`tar -x`, `unzip`): which files, and
/// whether some are links to any file at all, only the archive knows.
pub(crate) const ARCHIVE_MEMBERS: &str = "(archive members)";

pub(crate) fn push_role(verdict: &mut Verdict, arg: &Arg, role: Role, tree: bool) {
    match role {
        Role::None => {}
        Role::Read => {
            if !arg.is_literal("-") {
                verdict.effect(arg, Access::Read, tree);
            }
        }
        Role::Write => {
            if !arg.is_literal("-") {
                verdict.effect(arg, Access::Write, tree);
            }
        }
        Role::Dir => verdict.effect(arg, Access::Dir, tree),
    }
}

/// A program the analysis does not know: operands that look like paths are read.
pub(crate) fn unknown_program(args: &[Arg]) -> Verdict {
    let mut verdict = Verdict::default();
    for arg in args.iter().skip(1) {
        if let Some(path) = path_like(arg) {
            verdict.effect(&path, Access::Read, false);
        }
    }
    verdict
}

/// The path an argument names, if it looks like one: text with a `/`, starting with `.`
/// or `~`, a value only known at run time, or `--opt=path`.
pub(crate) fn path_like(arg: &Arg) -> Option<Arg> {
    if arg.value().is_none() || arg.field.is_pattern() {
        return Some(arg.clone());
    }
    let value = arg.value()?;
    if let Some((option, rest)) = value.split_once('=')
        && option.starts_with('-')
    {
        let looks = rest.contains('/') || rest.starts_with('.') || rest.starts_with('~');
        return looks.then(|| Arg::text(rest));
    }
    if value.starts_with('-') {
        return None;
    }
    let looks = value.contains('/') || value.starts_with('.') || value.starts_with('~') || value.contains(".env");
    looks.then(|| arg.clone())
}
