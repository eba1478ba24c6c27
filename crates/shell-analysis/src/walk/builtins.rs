//! Bash's builtins: which ones change what later commands run, read or where they run,
//! and the walk of each.

use std::borrow::Cow;
use std::rc::Rc;

use super::{Cwd, Outcome, State, Walker};
use crate::arg::{Access, Arg, Cmd};
use crate::expand::Seg;
use crate::path::{join, normalize};
use crate::syntax;

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

/// bash's builtins and reserved words: a function with one of these names changes what
/// the line means.
pub(super) const BUILTINS: &[&str] = &[
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

impl Walker<'_> {
    /// Builtins that change the shell's state or run code; `None` for the rest.
    pub(super) fn builtin(&mut self, name: &str, cmd: &Cmd, state: &State) -> Option<Outcome> {
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

    pub(super) fn declaration(&mut self, name: &str, cmd: &Cmd, args: &[Arg], state: &State) -> Outcome {
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
            let value = arg
                .literal()
                .and_then(|text| text.split_once('=').map(|(_, value)| value.to_string()));
            let dangerous = if text.contains('=') {
                dangerous_assignment(var, value.as_deref())
            } else {
                dangerous_name(var) && name != "export"
            };
            if dangerous {
                self.refuse(format!(
                    "`{name}` assigns {var}, which changes what later commands run or read"
                ));
                break;
            }
        }
        let _ = cmd;
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
