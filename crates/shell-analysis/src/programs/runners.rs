//! Programs that run other code: wrappers (`env`, `sudo`, `timeout`…), shells,
//! interpreters, `make`.

use super::getopt::{getopt, head};
use super::table::{
    DENO_INLINE, DOAS_SHELL, ENV_SPLIT, FLOCK_COMMAND, INTERPRETER_DEFAULT_INLINE, INTERPRETERS, MAKE, MAKE_DIRECTORY,
    MAKE_EVAL, MAKE_FILE, MAKE_STRIPPED, MAKE_STRIPPED_VALUES, OPAQUE_REASON_DEFAULT, OPAQUE_REASONS, PROCESS_OPTIONS,
    SHELL_FLAGS, SHELL_LONG_FLAGS, SHELL_RC, SHELL_SET_OPTIONS, SUDO_ELSEWHERE, SUDO_SHELL, WRAPPER_CHDIR,
    WRAPPER_DEFAULT, WRAPPER_OUTPUT, WRAPPERS, WRAPPERS_UNMODELLED,
};
use super::text::strip_forms;
use super::{Ctx, Nested, Role, Verdict, push_role};
use crate::arg::{Access, Arg};

/// Wrappers: options of their own, then the command they run.
pub(super) fn wrapper(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let args = ctx.args;
    if WRAPPERS_UNMODELLED.contains(&ctx.name) {
        verdict.opaque(format!(
            "`{}` runs a command with settings the analysis does not model",
            ctx.name
        ));
        return;
    }
    let (spec, positional) = WRAPPERS
        .iter()
        .find(|(names, _, _)| names.contains(&ctx.name))
        .map_or((WRAPPER_DEFAULT, 0), |(_, spec, positional)| (*spec, *positional));
    let parsed = getopt(&spec, args);
    if !parsed.unknown.is_empty() {
        verdict.opaque(format!(
            "`{}` with options the analysis does not know ({})",
            ctx.name,
            parsed.unknown.join(" ")
        ));
        return;
    }
    if matches!(ctx.name, "env") && parsed.has(ENV_SPLIT) {
        verdict.opaque("`env -S` splits a string into a command");
        return;
    }
    if ctx.name == "sudo" && parsed.has(SUDO_SHELL) {
        verdict.opaque("`sudo -s/-i/-e` runs a shell or an editor");
        return;
    }
    if ctx.name == "doas" && parsed.has(DOAS_SHELL) {
        verdict.opaque("`doas -s` runs a shell");
        return;
    }
    if matches!(ctx.name, "sudo" | "doas") && parsed.has(SUDO_ELSEWHERE) {
        verdict.opaque(format!("`{}` in another directory or root", ctx.name));
        return;
    }
    if matches!(ctx.name, "taskset" | "ionice") && parsed.has(PROCESS_OPTIONS) {
        return;
    }
    if ctx.name == "flock" && parsed.has(FLOCK_COMMAND) {
        match parsed.values(FLOCK_COMMAND).next().and_then(Arg::literal) {
            Some(script) => verdict.scripts.push(script.into_owned()),
            None => verdict.opaque("`flock -c` with a command only known when it runs"),
        }
        return;
    }
    for value in parsed.values(WRAPPER_OUTPUT) {
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
    let chdir = parsed.values(WRAPPER_CHDIR).next().map(|arg| arg.field.clone());
    if ctx.name == "env"
        && chdir.is_some()
        && let Some(dir) = parsed.values(WRAPPER_CHDIR).next()
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
            if SHELL_RC.contains(&&*text) {
                verdict.opaque(format!("`{} {text}` runs a file", ctx.name));
                return;
            }
            if !SHELL_LONG_FLAGS.contains(&&*text) {
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
                    c if SHELL_FLAGS.contains(c) => {}
                    'o' | 'O' => {
                        let option = args.get(index + 1).and_then(Arg::literal).unwrap_or_default();
                        if !SHELL_SET_OPTIONS.contains(&&*option) {
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
    let (inline, with_value): (&[&str], &[&str]) = INTERPRETERS
        .iter()
        .find(|(names, _, _)| names.contains(&ctx.name))
        .map_or((INTERPRETER_DEFAULT_INLINE, &[]), |(_, inline, with_value)| {
            (*inline, *with_value)
        });
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
            if DENO_INLINE.contains(&&*text) {
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
    let reason = OPAQUE_REASONS
        .iter()
        .find(|(names, _)| names.contains(&ctx.name))
        .map_or(OPAQUE_REASON_DEFAULT, |(_, reason)| *reason);
    if ctx.name == "sqlite3" && ctx.args.len() <= 1 && !ctx.args.iter().any(|a| head(a).starts_with('-')) {
        // `sqlite3 db.sqlite` with SQL from input: still may hold dot-commands.
    }
    verdict.opaque(reason);
}

pub(super) fn make(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let parsed = getopt(&MAKE, ctx.args);
    if parsed.has(MAKE_EVAL) {
        verdict.opaque("`make --eval` runs given text as a makefile");
    }
    for file in parsed.values(MAKE_FILE) {
        if file.literal().as_deref() == Some("-") {
            verdict.opaque("`make -f -` reads a makefile from its input");
        } else {
            verdict.effect(file, Access::Read, false);
        }
    }
    for dir in parsed.values(MAKE_DIRECTORY) {
        verdict.effect(dir, Access::Dir, false);
    }
    strip_forms(ctx, verdict, MAKE_STRIPPED, MAKE_STRIPPED_VALUES);
}
