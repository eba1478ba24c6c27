//! Bash's builtins: which ones change what later commands run, read or where they run,
//! and the walk of each.

use std::borrow::Cow;
use std::rc::Rc;

use super::options::{Effect, options, set_letter_effect, set_name_effect, shopt_effect};
use super::{Cwd, Outcome, State, Walker};
use crate::arg::{Access, Arg, Cmd};
use crate::expand::Seg;
use crate::path::{absolute, join, normalize};
use crate::syntax;

/// `base/path` as an absolute path, `base` being relative to the working directory (or
/// absolute).
fn absolute_of(workdir: &std::path::Path, base: &str, path: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(absolute(workdir, &join(base, path)))
}

/// Names that, assigned anywhere in a line, change what later commands run or read.
pub(super) const DANGEROUS_NAMES: &[&str] = &[
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
    "NODE_REPL_EXTERNAL_MODULE",
    "NODE_EXTRA_CA_CERTS",
    "NODE_ICU_DATA",
    "NODE_REDIRECT_WARNINGS",
    "NODE_REPL_HISTORY",
    "NODE_V8_COVERAGE",
    "NODE_COMPILE_CACHE",
    "NODE_PRESERVE_SYMLINKS",
    "NODE_PRESERVE_SYMLINKS_MAIN",
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
    "RUSTDOCFLAGS",
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
    // `$"…"` is translated through the message catalog these name.
    "TEXTDOMAIN",
    "TEXTDOMAINDIR",
];

/// Prefixes of such names (`GIT_*` alone has dozens that run programs or write files).
pub(super) const DANGEROUS_PREFIXES: &[&str] = &[
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
    "MALLOC_",
    "BASH_FUNC_",
    "SSH_",
    "GPG_",
    "RSYNC_",
    "LESS",
    "HG",
];

/// Names under those prefixes that only change output, timing or metadata: they run and
/// read nothing else.
pub(super) const HARMLESS_NAMES: &[&str] = &[
    "PYTHONUNBUFFERED",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONHASHSEED",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "PYTHONFAULTHANDLER",
    "PYTHONDEVMODE",
    "PYTHONNOUSERSITE",
    "CARGO_TERM_COLOR",
    "CARGO_TERM_VERBOSE",
    "CARGO_TERM_QUIET",
    "CARGO_TERM_PROGRESS_WHEN",
    "CARGO_INCREMENTAL",
    "CARGO_BUILD_JOBS",
    "CARGO_NET_OFFLINE",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_TERMINAL_PROMPT",
];

/// Whether assigning to `name` (anywhere in a line, or in a command's environment) may
/// change what later commands run or read.
pub(crate) fn dangerous_name(name: &str) -> bool {
    DANGEROUS_NAMES.contains(&name)
        || (DANGEROUS_PREFIXES.iter().any(|prefix| name.starts_with(prefix)) && !HARMLESS_NAMES.contains(&name))
}

/// [`dangerous_name`] for an assignment whose value is known when it is: `RUSTFLAGS` and
/// `RUSTDOCFLAGS` made only of lint levels and `--cfg` settings (`-D warnings`) cannot
/// make the compiler run or write anything (a `-C linker=…` can).
pub(crate) fn dangerous_assignment(name: &str, value: Option<&str>) -> bool {
    if !dangerous_name(name) {
        return false;
    }
    match (name, value) {
        ("RUSTFLAGS" | "RUSTDOCFLAGS", Some(value)) => !lint_flags_only(value),
        _ => true,
    }
}

/// Whether rustc flags are lint levels (`-D x`, `-Wx`, `--allow=x`, `--cap-lints x`) and
/// `--cfg` settings only.
fn lint_flags_only(value: &str) -> bool {
    const WITH_VALUE: &[&str] = &[
        "-D",
        "-W",
        "-A",
        "-F",
        "--deny",
        "--warn",
        "--allow",
        "--forbid",
        "--force-warn",
        "--cap-lints",
        "--cfg",
    ];
    let plain = |word: &str| {
        !word.is_empty()
            && word
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ':' | '=' | '"' | '.'))
    };
    let mut words = value.split_ascii_whitespace();
    while let Some(word) = words.next() {
        if WITH_VALUE.contains(&word) {
            match words.next() {
                Some(value) if plain(value) && !value.starts_with('-') => continue,
                _ => return false,
            }
        }
        let attached = WITH_VALUE.iter().any(|flag| {
            word.strip_prefix(flag).is_some_and(|rest| {
                let rest = rest.strip_prefix('=').unwrap_or(rest);
                // `-Dwarnings`, `--deny=warnings`; not `-Dx` of a longer option.
                (flag.len() == 2 || word.as_bytes().get(flag.len()) == Some(&b'=')) && plain(rest)
            })
        });
        if !attached {
            return false;
        }
    }
    true
}

/// bash's reserved words and the handler it calls by name: with [`BUILTIN_NAMES`], the
/// names a function cannot take without changing what the line means.
pub(super) const RESERVED: &[&str] = &[
    "case",
    "command_not_found_handle",
    "coproc",
    "do",
    "done",
    "elif",
    "else",
    "esac",
    "fi",
    "for",
    "function",
    "if",
    "in",
    "select",
    "then",
    "time",
    "until",
    "while",
];

/// bash 5.2's builtins (`compgen -b`): each is modelled by [`Walker::builtin`], option by
/// option from the manual ("SHELL BUILTIN COMMANDS"), and none is run as a program of
/// that name.
pub(super) const BUILTIN_NAMES: &[&str] = &[
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
];

/// The most a script file run by `source` or a shell may hold for the analysis to read it.
const MAX_SCRIPT_FILE: u64 = 64 * 1024;

impl Walker<'_> {
    /// The model of the bash builtin `name` (one of [`BUILTIN_NAMES`]; `None` for any
    /// other name). Builtins that only change the shell's own state (`cd`, `set`, `read`,
    /// `export`, `trap`, `shopt`…) are not asked for as commands (spec §7.3 asks none for
    /// `cd`; §9.10 S3: declarations are not commands); what they change is modelled, and
    /// what the analysis cannot follow makes the line opaque. Builtins that print (`echo`,
    /// `printf`, `kill`, `pwd`, `ulimit`, `umask`) are asked for as any command.
    pub(super) fn builtin(&mut self, name: &str, cmd: &Cmd, state: &State) -> Option<Outcome> {
        let args: &[Arg] = cmd.args.get(1..).unwrap_or_default();
        let same = || Some(Outcome::same(state.clone()));
        match name {
            // Nothing beyond their words' expansion; control flow the walk already takes
            // both ways; job control; help and listings.
            ":" | "true" | "false" | "break" | "continue" | "return" | "exit" | "logout" | "shift" | "times"
            | "caller" | "help" | "suspend" | "dirs" | "disown" | "fg" | "bg" | "type" => same(),
            // Completion specifications are only used by an interactive shell's readline.
            "complete" | "compopt" | "unalias" => same(),
            "echo" | "printf" | "kill" | "pwd" | "ulimit" | "umask" => {
                if name == "printf" {
                    let opts = options(name, args, "", "v");
                    if let Some(problem) = opts.problem {
                        self.refuse(format!("{problem} (it may assign a variable)"));
                        return same();
                    }
                    for var in opts.values('v') {
                        self.assigned(name, var);
                    }
                }
                let verdict = Self::verdict(name, &cmd.args);
                Some(self.apply(cmd.clone(), state.clone(), verdict))
            }
            "cd" => Some(self.change_directory(name, args, state)),
            "pushd" => {
                if args.iter().any(|arg| arg.is_literal("-n")) {
                    // The stack changes, the directory does not.
                    return same();
                }
                Some(self.change_directory(name, args, state))
            }
            "popd" => {
                if args.iter().any(|arg| arg.is_literal("-n")) {
                    return same();
                }
                Some(Outcome::same(State {
                    cwd: Cwd::Unknown,
                    ..state.clone()
                }))
            }
            "command" => Some(self.command_builtin(cmd, args, state)),
            "builtin" => {
                if args.is_empty() {
                    return same();
                }
                self.emit(cmd, None);
                Some(self.run(Self::inner(cmd, args), state.clone()))
            }
            "exec" => {
                let opts = options(name, args, "cl", "a");
                if let Some(problem) = opts.problem {
                    self.opaque_part(cmd, &problem);
                    return same();
                }
                if opts.rest >= args.len() {
                    // Only redirections: they take effect in this shell (already recorded).
                    return same();
                }
                self.emit(cmd, None);
                Some(self.run(Self::inner(cmd, &args[opts.rest..]), state.clone()))
            }
            "eval" => {
                let words: Option<Vec<String>> = args.iter().map(|arg| arg.literal().map(Cow::into_owned)).collect();
                let Some(words) = words else {
                    self.opaque_part(cmd, "`eval` of text only known when it runs");
                    return Some(Outcome::same(State {
                        cwd: Cwd::Unknown,
                        ..state.clone()
                    }));
                };
                self.emit(cmd, Some("`eval` runs its text as commands".into()));
                Some(self.script(&words.join(" "), state.clone(), false))
            }
            "source" | "." => Some(self.source(cmd, args, state)),
            "trap" => {
                self.trap(cmd, args);
                same()
            }
            "jobs" => {
                // `jobs -x command args` runs the command (job specifications replaced).
                let at = args
                    .iter()
                    .take_while(|arg| arg.literal().is_some_and(|text| text.starts_with('-')))
                    .position(|arg| arg.literal().is_some_and(|text| text.contains('x')));
                match at {
                    Some(at) if at + 1 < args.len() => Some(self.run(Self::inner(cmd, &args[at + 1..]), state.clone())),
                    _ => same(),
                }
            }
            "wait" => {
                let opts = options(name, args, "fn", "p");
                if let Some(problem) = &opts.problem {
                    self.refuse(problem.clone());
                }
                for var in opts.values('p') {
                    self.assigned(name, var);
                }
                same()
            }
            "export" | "declare" | "typeset" | "local" | "readonly" => Some(self.declaration(name, args, state)),
            "unset" => Some(self.unset(args, state)),
            "read" => {
                let opts = options(name, args, "ers", "adinNptu");
                if let Some(problem) = opts.problem {
                    self.refuse(problem);
                    return same();
                }
                for var in opts.values('a').chain(&args[opts.rest..]) {
                    self.assigned(name, var);
                }
                same()
            }
            "mapfile" | "readarray" => Some(self.mapfile(name, args, state)),
            "getopts" => {
                // `getopts optstring name [arg …]`: the name is assigned (and OPTARG, OPTIND).
                if let Some(var) = args.get(1) {
                    self.assigned(name, var);
                }
                same()
            }
            "set" => {
                self.set(args);
                same()
            }
            "shopt" => {
                self.shopt(args);
                same()
            }
            "test" | "[" => {
                // `-v` and `-R` evaluate a subscript of the name they are given.
                if args
                    .iter()
                    .any(|arg| matches!(arg.literal().as_deref(), Some("-v" | "-R")))
                {
                    self.refuse("`test -v` evaluates a subscript");
                }
                same()
            }
            "let" => {
                // Arithmetic over constants only: a name's value would be evaluated as an
                // expression in turn (data as code).
                let constant = args.iter().all(|arg| {
                    arg.literal().is_some_and(|text| {
                        text.chars()
                            .all(|c| c.is_ascii_digit() || "+-*/%<>=!&|^~?:() ".contains(c))
                    })
                });
                if !constant {
                    self.refuse("`let` evaluates its arguments as arithmetic (data as code)");
                    return same();
                }
                self.emit(cmd, None);
                same()
            }
            "alias" => {
                // Listing is harmless; a definition may be expanded by a later line.
                if args
                    .iter()
                    .any(|arg| arg.literal().is_none_or(|text| text.contains('=')))
                {
                    self.refuse("`alias` defines an alias a later line may expand");
                }
                same()
            }
            "hash" => {
                let opts = options(name, args, "lrdt", "p");
                if opts.problem.is_some() || opts.has('p') {
                    self.refuse("`hash -p` makes a name run another file");
                }
                same()
            }
            "enable" => {
                let opts = options(name, args, "adnps", "f");
                if let Some(problem) = opts.problem {
                    self.refuse(problem);
                } else if opts.has('n') {
                    self.refuse("`enable -n` turns a builtin into the program of that name");
                } else if opts.has('f') {
                    self.opaque_part(cmd, "`enable -f` loads a builtin from a shared object");
                } else if !opts.has('d')
                    && args[opts.rest..]
                        .iter()
                        .any(|arg| arg.literal().is_none_or(|text| !BUILTIN_NAMES.contains(&&*text)))
                {
                    self.opaque_part(cmd, "`enable` of a name that is not a builtin loads a shared object");
                }
                same()
            }
            "bind" => {
                let opts = options(name, args, "lpsvPSVX", "mqurfx");
                if opts.problem.is_some() || opts.has('x') {
                    self.opaque_part(cmd, "`bind -x` binds a key to shell code");
                }
                for file in opts.values('f') {
                    self.file(file, Access::Read, state, false, None);
                }
                same()
            }
            "fc" => {
                let opts = options(name, args, "lnrs", "e");
                if opts.problem.is_some() || !opts.has('l') || opts.has('s') || opts.has('e') {
                    self.opaque_part(cmd, "`fc` runs commands from the history");
                } else {
                    self.emit(cmd, None);
                }
                same()
            }
            "compgen" => {
                let opts = options(name, args, "abcdefgjksuvDEI", "oAGWFCXPS");
                let runs = opts.has('F') || opts.has('C');
                // Users, groups and host names come from the system's databases (NSS:
                // `/etc/passwd`, `/etc/group`, `/etc/hosts` or a service): reads outside
                // the project the analysis cannot name.
                let databases = opts.has('u')
                    || opts.has('g')
                    || opts.values('A').any(|action| {
                        action
                            .literal()
                            .is_none_or(|text| matches!(&*text, "user" | "group" | "hostname" | "service"))
                    });
                if databases {
                    self.opaque_part(
                        cmd,
                        "`compgen -u/-g/-A user|group|hostname` reads the system's databases",
                    );
                    return same();
                }
                let expands = opts
                    .values('W')
                    .any(|words| words.literal().is_none_or(|text| text.contains(['$', '`'])));
                if opts.problem.is_some() || runs || expands {
                    self.opaque_part(cmd, "`compgen -F/-C/-W` runs or expands code");
                    return same();
                }
                for pattern in opts.values('G') {
                    if let Some(text) = pattern.literal() {
                        self.file(&Arg::text(text), Access::Dir, state, false, None);
                    }
                }
                self.emit(cmd, None);
                same()
            }
            "history" => {
                let opts = options(name, args, "canrwps", "d");
                let file = args
                    .get(opts.rest)
                    .cloned()
                    .unwrap_or_else(|| Arg::unknown("$HISTFILE"));
                if opts.has('a') || opts.has('w') {
                    self.file(&file, Access::Write, state, false, None);
                }
                // Writing or reading a history file also reads the shell's own one
                // (`$HISTFILE`, seen by strace: bash reads it back to keep its size).
                if opts.has('a') || opts.has('w') || opts.has('r') || opts.has('n') {
                    self.file(&Arg::unknown("$HISTFILE"), Access::Read, state, false, None);
                }
                if opts.has('r') || opts.has('n') {
                    self.file(&file, Access::Read, state, false, None);
                }
                same()
            }
            _ => None,
        }
    }

    /// A builtin's operand as a command of its own (`builtin cd x`, `exec rm x`), looked up
    /// past functions.
    fn inner<'c>(cmd: &Cmd<'c>, args: &[Arg]) -> Cmd<'c> {
        Cmd {
            args: args.to_vec(),
            raw: None,
            env: cmd.env.clone(),
            chdir: None,
            external: true,
        }
    }

    /// A builtin assigns the variable its argument names (`read x`, `printf -v x`): a
    /// subscript would be evaluated, a dangerous name changes what later commands run.
    fn assigned(&mut self, builtin: &str, var: &Arg) {
        match var.literal() {
            Some(name) if syntax::is_identifier(&name) => {
                if dangerous_name(&name) {
                    self.refuse(format!(
                        "`{builtin}` assigns {name}, which changes what later commands run or read"
                    ));
                }
            }
            Some(name) => self.refuse(format!("`{builtin}` into `{name}` (a subscript is evaluated)")),
            None => self.refuse(format!("`{builtin}` into a variable only known when it runs")),
        }
    }

    /// `command [-pVv] command [arg …]`: runs the command past functions; `-v`/`-V` only
    /// look it up.
    fn command_builtin(&mut self, cmd: &Cmd, args: &[Arg], state: &State) -> Outcome {
        let opts = options("command", args, "pvV", "");
        if let Some(problem) = opts.problem {
            self.opaque_part(cmd, &problem);
            return Outcome::same(state.clone());
        }
        if opts.has('v') || opts.has('V') || opts.rest >= args.len() {
            return Outcome::same(state.clone());
        }
        self.emit(cmd, None);
        self.run(Self::inner(cmd, &args[opts.rest..]), state.clone())
    }

    /// `. file [args]`, `source file [args]`: the file's commands run in this shell. A file
    /// the analysis can read (a regular file of at most [`MAX_SCRIPT_FILE`], found as bash
    /// finds it: a name without `/` in `PATH` first) that nothing before it in the line
    /// may have changed is read (`read`) and walked in the current state, whose changes
    /// stay; any other is code the analysis cannot see.
    fn source(&mut self, cmd: &Cmd, args: &[Arg], state: &State) -> Outcome {
        let operands = match args.first() {
            Some(first) if first.is_literal("--") => &args[1..],
            _ => args,
        };
        let unknown = |walker: &mut Self, why: &str| {
            walker.opaque_part(cmd, why);
            Outcome::same(State {
                cwd: Cwd::Unknown,
                ..state.clone()
            })
        };
        let Some(file) = operands.first() else {
            return Outcome::same(state.clone());
        };
        let Some(name) = file.value().map(Cow::into_owned) else {
            return unknown(self, "`source` of a file only known when it runs");
        };
        let path = if name.contains('/') {
            Some(name.clone())
        } else {
            // `sourcepath`: `PATH` first, then the working directory.
            let in_path = self
                .env
                .path
                .as_deref()
                .unwrap_or("")
                .split(':')
                .filter(|dir| !dir.is_empty())
                .map(|dir| format!("{}/{name}", dir.trim_end_matches('/')))
                .find(|candidate| std::path::Path::new(candidate).is_file());
            in_path.or_else(|| Some(name.clone()))
        };
        let Some(path) = path else {
            return unknown(self, "`source` runs a script file the analysis cannot see");
        };
        self.file(&Arg::text(path.clone()), Access::Read, state, false, None);
        match self.script_text(&path, state) {
            Some(text) => {
                self.emit(cmd, None);
                self.script(&text, state.clone(), false)
            }
            None => unknown(self, "`source` runs a script file the analysis cannot see"),
        }
    }

    /// The text of a script file a command runs (`source`, `bash file`), when the analysis
    /// can trust it to be what will run: a regular file, found in the one working
    /// directory, of at most [`MAX_SCRIPT_FILE`] of UTF-8, before any program of the line
    /// ran (one could have written it) and not a file the line wrote so far.
    pub(super) fn script_text(&mut self, path: &str, state: &State) -> Option<String> {
        if self.programs_ran || path.starts_with("/dev/") || path.starts_with("/proc/") {
            return None;
        }
        let absolute = if path.starts_with('/') {
            std::path::PathBuf::from(path)
        } else {
            match &state.cwd {
                Cwd::Known(dirs) if dirs.len() == 1 => {
                    std::path::PathBuf::from(absolute(&self.env.workdir, &join(&dirs[0], path)))
                }
                _ => return None,
            }
        };
        let real = std::fs::canonicalize(&absolute).ok()?;
        let written = self.out.writes.iter().any(|write| {
            write.literal().is_none_or(|literal| {
                let joined = match &write.base {
                    Some(base) => absolute_of(&self.env.workdir, base, &literal),
                    None => return true,
                };
                std::fs::canonicalize(&joined).map_or(joined == absolute, |other| other == real)
            })
        });
        if written {
            return None;
        }
        let meta = std::fs::metadata(&real).ok()?;
        if !meta.is_file() || meta.len() > MAX_SCRIPT_FILE {
            return None;
        }
        std::fs::read_to_string(&real).ok()
    }

    /// `trap [-lp] [[code] signal …]`: code is kept and walked when the line is over, in
    /// every directory the line was in and with every function it defined (a trap runs
    /// on a signal, at exit or before commands: any time).
    fn trap(&mut self, cmd: &Cmd, args: &[Arg]) {
        let operands = match args.first() {
            Some(first) if first.is_literal("--") => &args[1..],
            Some(first)
                if first
                    .literal()
                    .is_some_and(|text| text.starts_with('-') && text.len() > 1) =>
            {
                // `-l`, `-p`: listings.
                return;
            }
            _ => args,
        };
        match operands {
            // Listing, or resetting one signal (`trap SIG`).
            [] | [_] => {}
            [code, ..] => match code.literal() {
                Some(text) if text.is_empty() || text == "-" => {}
                Some(text) => {
                    let text = text.into_owned();
                    if !self.traps.contains(&text) {
                        self.traps.push(text);
                    }
                }
                None => self.opaque_part(cmd, "`trap` with code only known when it runs"),
            },
        }
    }

    /// `mapfile`/`readarray [-d delim] [-n count] [-O origin] [-s count] [-t] [-u fd] [-C
    /// callback] [-c quantum] [array]`: the array is assigned; the callback runs in this
    /// shell with two more arguments, any number of times.
    fn mapfile(&mut self, name: &str, args: &[Arg], state: &State) -> Outcome {
        let opts = options(name, args, "t", "dnOsuCc");
        if let Some(problem) = opts.problem {
            self.refuse(problem);
            return Outcome::same(state.clone());
        }
        if let Some(array) = args.get(opts.rest) {
            self.assigned(name, array);
        }
        let mut after = state.clone();
        for callback in opts.values('C').cloned().collect::<Vec<_>>() {
            match callback.literal() {
                Some(text) => {
                    let ran = self.script(&format!("{text} \"$1\" \"$2\""), state.clone(), false);
                    after = after.union(&ran.either());
                }
                None => self.refuse(format!("`{name} -C` with a callback only known when it runs")),
            }
        }
        Outcome::same(after)
    }

    /// `set [-abefhkmnptuvxBCEHPT] [-o name] [--] [-] [arg …]` (and `+`): options, then
    /// positional parameters (data).
    fn set(&mut self, args: &[Arg]) {
        let mut index = 0;
        while let Some(arg) = args.get(index) {
            if arg.maybe_option() {
                self.refuse("`set` with an option only known when it runs");
                return;
            }
            let Some(text) = arg.value() else { return };
            if text == "--" || text == "-" || !(text.starts_with('-') || text.starts_with('+')) || text.len() < 2 {
                // The rest are positional parameters.
                return;
            }
            let on = text.starts_with('-');
            for letter in text.chars().skip(1) {
                let effect = if letter == 'o' {
                    // `-o name` takes the next word, wherever `o` is in the cluster.
                    index += 1;
                    match args.get(index).map(Arg::literal) {
                        // `set -o` alone lists the options.
                        None => Some(Effect::Harmless),
                        Some(Some(name)) => set_name_effect(&name, on),
                        Some(None) => None,
                    }
                } else {
                    set_letter_effect(letter, on)
                };
                match effect {
                    Some(Effect::Harmless) => {}
                    Some(Effect::Changes) | None => {
                        self.refuse(format!("`set {text}` changes how later lines are read or expanded"));
                        return;
                    }
                }
            }
            index += 1;
        }
    }

    /// `shopt [-pqsu] [-o] [name …]`: setting or unsetting shell options; listing otherwise.
    fn shopt(&mut self, args: &[Arg]) {
        let opts = options("shopt", args, "pqsuo", "");
        if let Some(problem) = opts.problem {
            self.refuse(problem);
            return;
        }
        if !opts.has('s') && !opts.has('u') {
            return;
        }
        let on = opts.has('s');
        for arg in &args[opts.rest..] {
            let effect = match arg.literal() {
                Some(name) if opts.has('o') => set_name_effect(&name, on),
                Some(name) => shopt_effect(&name, on),
                None => None,
            };
            if effect != Some(Effect::Harmless) {
                let shown = arg.field.display();
                self.refuse(format!("`shopt {shown}` changes how later lines are read or expanded"));
                return;
            }
        }
    }

    /// `unset [-fv] [-n] [name …]`: a variable (a dangerous one changes what later
    /// commands run), or a function of that name, which may then be missing.
    fn unset(&mut self, args: &[Arg], state: &State) -> Outcome {
        let opts = options("unset", args, "fvn", "");
        if let Some(problem) = opts.problem {
            self.refuse(problem);
            return Outcome::same(state.clone());
        }
        let mut funcs = (*state.funcs).clone();
        for arg in &args[opts.rest..] {
            match arg.literal() {
                Some(name) if syntax::is_identifier(&name) => {
                    if !opts.has('f') && dangerous_name(&name) {
                        self.refuse(format!("`unset {name}` changes what later commands run or read"));
                    }
                    if let Some(func) = funcs.get_mut(&*name) {
                        func.maybe_missing = true;
                    }
                }
                Some(name) if opts.has('f') && !name.contains(['[', '$', '`']) => {
                    // Function names may hold more than identifier characters.
                    if let Some(func) = funcs.get_mut(&*name) {
                        func.maybe_missing = true;
                    }
                }
                _ => {
                    self.refuse("`unset` of something other than a plain name (a subscript is evaluated)");
                }
            }
        }
        Outcome::same(State {
            funcs: Rc::new(funcs),
            ..state.clone()
        })
    }

    /// `declare`/`typeset`/`local [-aAfFgiIlnrtux] [-p] [name[=value] …]`, `export [-fn]
    /// [-p] [name[=value] …]`, `readonly [-aAf] [-p] [name[=value] …]`: attributes and
    /// assignments. `-i` makes later assignments evaluate arithmetic and `-n` makes a name
    /// stand for another (data as code); exporting a function changes what child shells
    /// run; a dangerous name assigned (or unexported) changes what later commands run.
    pub(super) fn declaration(&mut self, name: &str, args: &[Arg], state: &State) -> Outcome {
        let letters = match name {
            "export" => "fnp",
            "readonly" => "aAfp",
            _ => "aAfFgiIlnprtux",
        };
        let mut options_done = false;
        let mut function = false;
        let mut export = name == "export";
        let mut unexport = false;
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
                let on = text.starts_with('-');
                for letter in text.chars().skip(1) {
                    if !letters.contains(letter) {
                        self.refuse(format!("`{name} {text}`, an option the analysis does not model"));
                        return Outcome::same(state.clone());
                    }
                    match (letter, on) {
                        ('i' | 'n', true) if name != "export" => {
                            self.refuse(format!("`{name} {text}` makes later assignments evaluate their value"));
                            return Outcome::same(state.clone());
                        }
                        ('n', true) => unexport = true,
                        ('f' | 'F', _) => function = true,
                        ('x', true) => export = true,
                        _ => {}
                    }
                }
                if function && export && on && (name == "export" || text.contains('x')) {
                    self.refuse("exporting a function changes what child shells run");
                    break;
                }
                continue;
            }
            options_done = true;
            if function {
                // Names of functions to list or mark: nothing is assigned.
                continue;
            }
            let var = text.split(['=', '+']).next().unwrap_or("");
            if !syntax::is_identifier(var) {
                self.refuse(format!("`{name} {text}` (a subscript or an odd name)"));
                break;
            }
            let value = arg
                .literal()
                .and_then(|text| text.split_once('=').map(|(_, value)| value.to_string()));
            let dangerous = if text.contains('=') {
                dangerous_assignment(var, value.as_deref())
            } else {
                dangerous_name(var) && (name != "export" || unexport)
            };
            if dangerous {
                self.refuse(format!(
                    "`{name}` assigns {var}, which changes what later commands run or read"
                ));
                break;
            }
        }
        Outcome::same(state.clone())
    }

    pub(super) fn change_directory(&mut self, name: &str, args: &[Arg], state: &State) -> Outcome {
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
}
