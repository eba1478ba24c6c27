//! Programs that run other code: wrappers (`env`, `sudo`, `timeout`…), shells,
//! interpreters, `make`.

use super::getopt::{Spec, getopt, head};
use super::table::NONE;
use super::text::strip_forms;
use super::{Ctx, Nested, Role, Verdict, push_role};
use crate::arg::{Access, Arg};

/// Wrappers: options of their own, then the command they run.
pub(super) fn wrapper(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let args = ctx.args;
    let (spec, positional): (Spec, usize) = match ctx.name {
        "env" => (
            Spec {
                flags: "0iv",
                values: "uCS",
                long: &[
                    "ignore-environment",
                    "null",
                    "debug",
                    "help",
                    "version",
                    "list-signal-handling",
                ],
                long_values: &["unset", "chdir", "split-string"],
                long_optional: &["block-signal", "default-signal", "ignore-signal"],
                posix: true,
                ..NONE
            },
            0,
        ),
        "sudo" => (
            Spec {
                flags: "AbEHiKklnPSsVv",
                values: "CDghpRrTUu",
                long: &[
                    "askpass",
                    "background",
                    "preserve-env",
                    "set-home",
                    "login",
                    "remove-timestamp",
                    "reset-timestamp",
                    "list",
                    "non-interactive",
                    "preserve-groups",
                    "stdin",
                    "shell",
                    "validate",
                    "version",
                    "help",
                    "edit",
                ],
                long_values: &[
                    "close-from",
                    "chdir",
                    "group",
                    "host",
                    "prompt",
                    "chroot",
                    "role",
                    "type",
                    "other-user",
                    "user",
                    "command-timeout",
                ],
                posix: true,
                ..NONE
            },
            0,
        ),
        "doas" => (
            Spec {
                flags: "nsL",
                values: "uC",
                posix: true,
                ..NONE
            },
            0,
        ),
        "nice" => (
            Spec {
                values: "n",
                long_values: &["adjustment"],
                long: &["help", "version"],
                numeric: true,
                posix: true,
                ..NONE
            },
            0,
        ),
        "timeout" => (
            Spec {
                flags: "v",
                values: "sk",
                long: &["foreground", "preserve-status", "verbose", "help", "version"],
                long_values: &["signal", "kill-after"],
                posix: true,
                ..NONE
            },
            1,
        ),
        "stdbuf" => (
            Spec {
                values: "ioe",
                long_values: &["input", "output", "error"],
                posix: true,
                ..NONE
            },
            0,
        ),
        "ionice" => (
            Spec {
                flags: "tx",
                values: "cnpPu",
                long_values: &["class", "classdata", "pid", "pgid", "uid"],
                long: &["ignore", "help", "version"],
                posix: true,
                ..NONE
            },
            0,
        ),
        "setsid" => (
            Spec {
                flags: "cfw",
                long: &["ctty", "fork", "wait", "help", "version"],
                posix: true,
                ..NONE
            },
            0,
        ),
        "time" => (
            Spec {
                flags: "apqv",
                values: "fo",
                long: &["append", "portability", "quiet", "verbose", "help", "version"],
                long_values: &["format", "output"],
                posix: true,
                ..NONE
            },
            0,
        ),
        "taskset" => (
            Spec {
                flags: "acp",
                long: &["all-tasks", "cpu-list", "pid", "help", "version"],
                posix: true,
                ..NONE
            },
            1,
        ),
        "chrt" => (
            Spec {
                flags: "abdfiormpRv",
                values: "TPD",
                posix: true,
                ..NONE
            },
            1,
        ),
        "flock" => (
            Spec {
                flags: "sxunoFeE",
                values: "wEc",
                long: &[
                    "shared",
                    "exclusive",
                    "unlock",
                    "nonblock",
                    "close",
                    "no-fork",
                    "verbose",
                    "help",
                    "version",
                ],
                long_values: &["timeout", "conflict-exit-code", "command"],
                posix: true,
                ..NONE
            },
            1,
        ),
        "strace" | "ltrace" => (
            Spec {
                flags: "cCdDfFhiqrtTvVwxyzZk",
                values: "abeEIoOpPsSuUX",
                posix: true,
                ..NONE
            },
            0,
        ),
        "numactl" | "prlimit" | "cgexec" | "runuser" | "firejail" | "torsocks" | "proxychains" | "proxychains4" => {
            verdict.opaque(format!(
                "`{}` runs a command with settings the analysis does not model",
                ctx.name
            ));
            return;
        }
        _ => (Spec { posix: true, ..NONE }, 0),
    };
    let parsed = getopt(&spec, args);
    if !parsed.unknown.is_empty() {
        verdict.opaque(format!(
            "`{}` with options the analysis does not know ({})",
            ctx.name,
            parsed.unknown.join(" ")
        ));
        return;
    }
    if matches!(ctx.name, "env") && parsed.has(&["-S", "--split-string"]) {
        verdict.opaque("`env -S` splits a string into a command");
        return;
    }
    if ctx.name == "sudo" && parsed.has(&["-s", "--shell", "-i", "--login", "-e", "--edit"]) {
        verdict.opaque("`sudo -s/-i/-e` runs a shell or an editor");
        return;
    }
    if ctx.name == "doas" && parsed.has(&["-s"]) {
        verdict.opaque("`doas -s` runs a shell");
        return;
    }
    if matches!(ctx.name, "sudo" | "doas") && parsed.has(&["-C", "-R", "--chroot", "-D", "--chdir"]) {
        verdict.opaque(format!("`{}` in another directory or root", ctx.name));
        return;
    }
    if matches!(ctx.name, "taskset" | "ionice") && parsed.has(&["-p", "--pid", "-P", "--pgid", "-u", "--uid"]) {
        return;
    }
    if ctx.name == "flock" && parsed.has(&["-c", "--command"]) {
        match parsed.values(&["-c", "--command"]).next().and_then(Arg::literal) {
            Some(script) => verdict.scripts.push(script.into_owned()),
            None => verdict.opaque("`flock -c` with a command only known when it runs"),
        }
        return;
    }
    for value in parsed.values(&["-o", "--output"]) {
        push_role(verdict, value, Role::Write, false);
    }
    let mut start = parsed.rest.min(args.len());
    let mut env = Vec::new();
    if matches!(ctx.name, "env" | "sudo") {
        while let Some(arg) = args.get(start) {
            let text = head(arg);
            match text.split_once('=') {
                Some((name, _)) if !name.is_empty() && !name.starts_with('-') => {
                    if !crate::syntax::is_identifier(name) {
                        verdict.opaque(format!("`{}` sets an environment variable named `{name}`", ctx.name));
                        return;
                    }
                    env.push(name.to_string());
                    start += 1;
                }
                _ => break,
            }
        }
    }
    start += positional;
    let chdir = parsed.values(&["-C", "--chdir"]).next().map(|arg| arg.field.clone());
    if ctx.name == "env"
        && chdir.is_some()
        && let Some(dir) = parsed.values(&["-C", "--chdir"]).next()
    {
        verdict.effect(dir, Access::Dir, false);
    }
    if start < args.len() {
        verdict.nested.push(Nested {
            args: args[start..].to_vec(),
            env,
            chdir,
            appended: false,
        });
    } else if !env.is_empty() {
        // `env NAME=value` alone prints the environment.
    }
}

/// `sh -c 'script'` is analysed as shell code; a shell reading a file or its input runs
/// code the analysis cannot see.
pub(super) fn shell(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let args = ctx.args;
    let mut index = 0;
    let mut command = false;
    while let Some(arg) = args.get(index) {
        let Some(text) = arg.literal() else {
            verdict.opaque(format!("`{}` with an argument only known when it runs", ctx.name));
            return;
        };
        if text == "--" || text == "-" {
            index += 1;
            break;
        }
        if text.starts_with("--") {
            if matches!(&*text, "--rcfile" | "--init-file") {
                verdict.opaque(format!("`{} {text}` runs a file", ctx.name));
                return;
            }
            if !matches!(
                &*text,
                "--norc"
                    | "--noprofile"
                    | "--login"
                    | "--posix"
                    | "--noediting"
                    | "--restricted"
                    | "--verbose"
                    | "--help"
                    | "--version"
            ) {
                verdict.opaque(format!("`{} {text}`", ctx.name));
                return;
            }
            index += 1;
            continue;
        }
        if let Some(flags) = text.strip_prefix('-').or_else(|| text.strip_prefix('+')) {
            for c in flags.chars() {
                match c {
                    'c' => command = true,
                    'e' | 'u' | 'x' | 'v' | 'l' | 'i' | 'r' | 'p' | 'h' | 'B' | 'E' | 'T' | 'C' | 'f' | 'a' | 'b'
                    | 'm' => {}
                    'o' | 'O' => {
                        let option = args.get(index + 1).and_then(Arg::literal).unwrap_or_default();
                        if !matches!(&*option, "pipefail" | "errexit" | "nounset" | "xtrace") {
                            verdict.opaque(format!("`{} -{c} {option}` changes how the script is read", ctx.name));
                            return;
                        }
                        index += 1;
                    }
                    's' => {
                        verdict.opaque(format!("`{} -s` runs commands from its input", ctx.name));
                        return;
                    }
                    'n' => return,
                    other => {
                        verdict.opaque(format!("`{} -{other}`", ctx.name));
                        return;
                    }
                }
            }
            if flags.contains('f') && command {
                // noglob changes what the script's words expand to.
                verdict.opaque(format!("`{} -f` turns off pathname expansion", ctx.name));
                return;
            }
            index += 1;
            continue;
        }
        break;
    }
    if command {
        match args.get(index).map(Arg::literal) {
            Some(Some(script)) => verdict.scripts.push(script.into_owned()),
            Some(None) => verdict.opaque(format!("`{} -c` with a script only known when it runs", ctx.name)),
            None => verdict.opaque(format!("`{} -c` without a script", ctx.name)),
        }
        return;
    }
    match args.get(index) {
        Some(_) => verdict.opaque(format!("`{}` runs a script file the analysis cannot see", ctx.name)),
        None => verdict.opaque(format!("`{}` runs commands from its input", ctx.name)),
    }
}

/// Interpreters: inline code (`-c`, `-e`, `--eval`) or code from input cannot be seen and
/// is never saved; a script file is the project's code.
pub(super) fn interpreter(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let (inline, with_value): (&[&str], &[&str]) = match ctx.name {
        "python" | "python2" | "python3" | "pypy" | "pypy3" => (&["-c"], &["-m", "-W", "-X", "-Q"]),
        "node" | "nodejs" | "ts-node" | "tsx" | "node-ts" => (
            &["-e", "--eval", "-p", "--print"],
            &[
                "-r",
                "--require",
                "--import",
                "--loader",
                "--input-type",
                "--experimental-loader",
                "--env-file",
                "--conditions",
                "-C",
            ],
        ),
        "perl" => (&["-e", "-E"], &["-M", "-m", "-I", "-x", "-d"]),
        "ruby" => (&["-e"], &["-r", "-I", "-C", "-E", "-F"]),
        "php" => (&["-r", "-R", "-B", "-E"], &["-f", "-c", "-d", "-z"]),
        "lua" | "luajit" => (&["-e"], &["-l"]),
        "deno" | "bun" => (&["-e", "--eval", "eval", "-p", "--print"], &[]),
        "Rscript" | "R" => (&["-e", "--expr"], &[]),
        "julia" => (&["-e", "-E", "--eval", "--print"], &[]),
        "osascript" => (&["-e"], &["-l"]),
        "pwsh" | "powershell" => (&["-c", "-Command", "-command", "-EncodedCommand", "-e"], &[]),
        "elixir" | "erl" | "escript" => (&["-e", "-eval"], &[]),
        _ => (&["-e", "-c"], &[]),
    };
    let args = ctx.args;
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        let Some(text) = arg.literal() else {
            verdict.opaque(format!("`{}` with an argument only known when it runs", ctx.name));
            return;
        };
        if inline.iter().any(|flag| {
            text == *flag || (flag.len() == 2 && text.starts_with(flag) && text.len() > 2 && !flag.starts_with("--"))
        }) {
            verdict.opaque(format!("`{}` runs code given inline", ctx.name));
            return;
        }
        if text.starts_with("--") && inline.iter().any(|flag| text.starts_with(&format!("{flag}="))) {
            verdict.opaque(format!("`{}` runs code given inline", ctx.name));
            return;
        }
        if ctx.name.starts_with("python") || ctx.name.starts_with("pypy") {
            // Clustered flags: `-Bc 'code'`.
            if text.starts_with('-')
                && !text.starts_with("--")
                && text[1..].contains('c')
                && !text[1..].starts_with(['W', 'X', 'm'])
            {
                verdict.opaque(format!("`{}` runs code given inline", ctx.name));
                return;
            }
            if text.starts_with('-') && !text.starts_with("--") && text.contains('i') {
                verdict.opaque(format!("`{} -i` reads code from its input", ctx.name));
                return;
            }
        }
        if matches!(ctx.name, "perl" | "ruby") && text.starts_with('-') && !text.starts_with("--") {
            if text[1..].contains(['e', 'E']) {
                verdict.opaque(format!("`{}` runs code given inline", ctx.name));
                return;
            }
            if text[1..].starts_with('i') || text[1..].contains('i') && text[1..].contains(['p', 'n']) {
                // In-place editing writes every file operand.
                for operand in args.iter().skip(index + 1).filter(|a| !head(a).starts_with('-')) {
                    push_role(verdict, operand, Role::Write, false);
                }
            }
        }
        if text == "-" {
            verdict.opaque(format!("`{} -` runs code from its input", ctx.name));
            return;
        }
        if ctx.name == "deno" || ctx.name == "bun" {
            if matches!(&*text, "eval" | "repl") {
                verdict.opaque(format!("`{} {text}` runs code given inline", ctx.name));
                return;
            }
            // `deno run file.ts`, `bun run script`, `bun install`: the project's code.
            return;
        }
        if text.starts_with('-') {
            if with_value.contains(&&*text) {
                if text == "-m" {
                    // `python -m module`: the module's code, like a script file.
                    return;
                }
                index += 2;
            } else {
                index += 1;
            }
            continue;
        }
        // A script file: the project's code. Its path is read.
        push_role(verdict, arg, Role::Read, false);
        return;
    }
    verdict.opaque(format!("`{}` without a script runs code from its input", ctx.name));
}

pub(super) fn always_opaque(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let reason = match ctx.name {
        "watch" => "`watch` runs its arguments as shell code, repeatedly",
        "parallel" => "`parallel` runs its arguments as shell code",
        "at" | "batch" | "crontab" => "it schedules commands to run later",
        "zsh" | "fish" | "csh" | "tcsh" | "xonsh" | "nu" | "elvish" => {
            "a shell whose language the analysis does not model"
        }
        "vim" | "vi" | "nvim" | "emacs" | "nano" | "ed" | "ex" => "an editor can run commands and write any file",
        "sqlite3" => "sqlite3 dot-commands can run programs and write files",
        _ => "it runs commands the analysis cannot see",
    };
    if ctx.name == "sqlite3" && ctx.args.len() <= 1 && !ctx.args.iter().any(|a| head(a).starts_with('-')) {
        // `sqlite3 db.sqlite` with SQL from input: still may hold dot-commands.
    }
    verdict.opaque(reason);
}

pub(super) fn make(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let spec = Spec {
        flags: "bBdeiknpqrRsStvwL",
        values: "CfIjlloOW",
        long: &[
            "always-make",
            "environment-overrides",
            "ignore-errors",
            "keep-going",
            "just-print",
            "dry-run",
            "recon",
            "print-data-base",
            "question",
            "no-builtin-rules",
            "no-builtin-variables",
            "silent",
            "quiet",
            "stop",
            "touch",
            "version",
            "print-directory",
            "no-print-directory",
            "warn-undefined-variables",
            "check-symlink-times",
            "trace",
            "help",
        ],
        long_values: &[
            "directory",
            "file",
            "makefile",
            "include-dir",
            "jobs",
            "load-average",
            "old-file",
            "assume-old",
            "what-if",
            "new-file",
            "assume-new",
            "eval",
            "output-sync",
            "debug",
        ],
        long_optional: &["jobs", "output-sync", "debug", "shuffle", "jobserver-style"],
        ..NONE
    };
    let parsed = getopt(&spec, ctx.args);
    if parsed.has(&["-E", "--eval"]) {
        verdict.opaque("`make --eval` runs given text as a makefile");
    }
    for file in parsed.values(&["-f", "--file", "--makefile"]) {
        if file.literal().as_deref() == Some("-") {
            verdict.opaque("`make -f -` reads a makefile from its input");
        } else {
            verdict.effect(file, Access::Read, false);
        }
    }
    for dir in parsed.values(&["-C", "--directory"]) {
        verdict.effect(dir, Access::Dir, false);
    }
    strip_forms(
        ctx,
        verdict,
        &[
            "-C",
            "--directory",
            "-f",
            "--file",
            "--makefile",
            "-j",
            "--jobs",
            "-s",
            "--silent",
            "-k",
            "--keep-going",
        ],
        &["-C", "-f", "-j", "-l", "-o", "-W", "-I", "-O"],
    );
}
