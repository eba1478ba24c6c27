//! Programs that run other code: wrappers (`env`, `sudo`, `timeout`…), shells,
//! interpreters, `make`.

use super::getopt::{getopt, head};
use super::table::{
    DENO_INLINE, DOAS_SHELL, ENV_SPLIT, FLOCK_COMMAND, INTERPRETER_DEFAULT_INLINE, INTERPRETER_INFO, INTERPRETERS,
    MAKE, MAKE_DEFAULT_FILES, MAKE_DIRECTORY, MAKE_EVAL, MAKE_FILE, MAKE_STRIPPED, MAKE_STRIPPED_VALUES,
    OPAQUE_REASON_DEFAULT, OPAQUE_REASONS, PROCESS_OPTIONS, SHELL_FLAGS, SHELL_LONG_FLAGS, SHELL_RC, SHELL_SET_OPTIONS,
    SUDO_ELSEWHERE, SUDO_SHELL, WRAPPER_CHDIR, WRAPPER_DEFAULT, WRAPPER_OUTPUT, WRAPPERS, WRAPPERS_UNMODELLED,
};
use super::text::strip_forms;
use super::{Ctx, Nested, Role, Verdict, push_role};
use crate::arg::{Access, Arg};
use crate::expand::Field;

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
                    let value = arg
                        .literal()
                        .and_then(|text| text.split_once('=').map(|(_, value)| value.to_string()));
                    env.push((name.to_string(), value));
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
        // A script file, like `./script.sh` or `python3 script.py`: the project's code. Its
        // path is read; the walker reads its commands too when it can.
        Some(file)
            if file
                .literal()
                .is_some_and(|text| !text.starts_with("/dev/") && !text.starts_with("/proc/")) =>
        {
            push_role(verdict, file, Role::Read, false);
            verdict.script_files.push(file.clone());
        }
        Some(_) => verdict.opaque(format!("`{}` runs a script file the analysis cannot see", ctx.name)),
        None => verdict.opaque(format!("`{}` runs commands from its input", ctx.name)),
    }
}

/// Interpreters: inline code (`-c`, `-e`, `--eval`) or code from input cannot be seen and
/// is never saved; a script file is the project's code.
pub(super) fn interpreter(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    if ctx.name == "perl" && perl_substitution(ctx, verdict) {
        return;
    }
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
        if INTERPRETER_INFO
            .iter()
            .any(|(names, info)| names.contains(&ctx.name) && info.contains(&&*text))
        {
            // It prints its version or help and exits before reading any code.
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

/// `perl -pi -e 's/old/new/g' FILE…`, perl used as a `sed -i` that knows its regular
/// expressions: when every `-e` program is one substitution that runs no code, the line is
/// its files, read (and written with `-i`). Returns whether it was; any other perl program
/// is inline code (the caller makes it opaque).
///
/// A substitution runs code where the pattern embeds it (`(?{…})`, `(??{…})`), where the
/// replacement interpolates an expression (`@{[…]}`, `${\…}`, a method call on an
/// object), where the `e` flag evaluates it, and through a variable holding any of those:
/// so the pattern may hold no `$`, `@` or `(?`, the replacement only `$1`…`$9` and `$&`,
/// and the flags only `g`, `i`, `m`, `s`, `x`. Switches are the ones that only choose the
/// loop and the line ends (`-p`, `-n`, `-l`, `-a`, `-w`, `-0`, `-i`); a module (`-M`),
/// a debugger (`-d`) or any other switch keeps the program inline code.
fn perl_substitution(ctx: &Ctx<'_>, verdict: &mut Verdict) -> bool {
    let mut programs = Vec::new();
    let mut in_place = false;
    let mut files = Vec::new();
    let mut options = true;
    let mut index = 0;
    while let Some(arg) = ctx.args.get(index) {
        index += 1;
        let Some(text) = arg.literal() else { return false };
        if options && text == "--" {
            options = false;
            continue;
        }
        let Some(cluster) = text.strip_prefix('-').filter(|rest| options && !rest.is_empty()) else {
            options = false;
            files.push(arg);
            continue;
        };
        for (at, c) in cluster.char_indices() {
            match c {
                'p' | 'n' | 'a' | 'w' => {}
                // `-l[octal]`, `-0[octal or x hex]`: the rest of the digits is the value.
                'l' | '0' => {
                    if !cluster[at + 1..].chars().all(|d| d.is_ascii_hexdigit() || d == 'x') {
                        return false;
                    }
                    break;
                }
                // `-i[extension]`: the rest of the word is the backup's suffix.
                'i' => {
                    in_place = true;
                    break;
                }
                'e' | 'E' => {
                    let rest = &cluster[at + 1..];
                    let program = if rest.is_empty() {
                        let Some(next) = ctx.args.get(index).and_then(Arg::literal) else {
                            return false;
                        };
                        index += 1;
                        next.into_owned()
                    } else {
                        rest.to_string()
                    };
                    programs.push(program);
                    break;
                }
                _ => return false,
            }
        }
    }
    if programs.is_empty() || !programs.iter().all(|program| inert_substitution(program)) {
        return false;
    }
    for file in files {
        push_role(verdict, file, Role::Read, false);
        if in_place {
            push_role(verdict, file, Role::Write, false);
        }
    }
    true
}

/// Whether `program` is one `s/pattern/replacement/flags` that runs no code (see
/// [`perl_substitution`]), with a delimiter that is punctuation and not a bracket.
fn inert_substitution(program: &str) -> bool {
    let program = program.trim().trim_end_matches(';').trim_end();
    let Some(rest) = program.strip_prefix('s') else {
        return false;
    };
    let mut chars = rest.chars();
    let Some(delimiter) = chars.next() else { return false };
    if !delimiter.is_ascii_punctuation() || "([{<\\".contains(delimiter) {
        return false;
    }
    // The three pieces between the delimiters; a backslash keeps the next character.
    let mut pieces = vec![String::new()];
    let mut escaped = false;
    for c in chars {
        let piece = pieces.last_mut().map(|piece| {
            if escaped {
                escaped = false;
                piece.push(c);
                false
            } else if c == '\\' {
                escaped = true;
                piece.push(c);
                false
            } else if c == delimiter {
                true
            } else {
                piece.push(c);
                false
            }
        });
        if piece == Some(true) {
            pieces.push(String::new());
        }
        if pieces.len() > 3 {
            return false;
        }
    }
    let [pattern, replacement, flags] = pieces.as_slice() else {
        return false;
    };
    // A `$` ends the pattern as an anchor only at its end.
    let anchored = pattern.strip_suffix('$').unwrap_or(pattern);
    if escaped || anchored.contains(['$', '@']) || pattern.contains("(?") {
        return false;
    }
    if replacement.contains('@') {
        return false;
    }
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$'
            && !chars
                .next()
                .is_some_and(|next| ('1'..='9').contains(&next) || next == '&')
        {
            return false;
        }
        // `$12` is a variable too, `$1x` the first group then text: one digit and on.
        if c == '$' && chars.peek().is_some_and(|next| next.is_ascii_digit()) {
            return false;
        }
    }
    flags.chars().all(|flag| "gimsx".contains(flag))
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
    // Make changes to the `-C` directories (each relative to the one before) before it
    // reads its makefiles, so a relative `-f` is read there. The makefile is the program
    // make runs, like an interpreter's script: read, and its recipes are decided when
    // they run (README "The bash tool"); what make itself reads while it runs
    // (`include`, `$(file <…)`) the analysis does not see, as for any interpreter.
    let dirs: Vec<&Arg> = parsed.values(MAKE_DIRECTORY).collect();
    let dir = make_directory(&dirs);
    let mut makefiles = 0;
    for file in parsed.values(MAKE_FILE) {
        makefiles += 1;
        if file.literal().as_deref() == Some("-") {
            verdict.opaque("`make -f -` reads a makefile from its input");
        } else {
            verdict.effect_under(file, Access::Read, false, dir.as_ref());
        }
    }
    if makefiles == 0 {
        for name in MAKE_DEFAULT_FILES {
            verdict.effect_under(&Arg::text(*name), Access::Read, false, dir.as_ref());
        }
    }
    for dir in dirs {
        verdict.effect(dir, Access::Dir, false);
    }
    strip_forms(ctx, verdict, MAKE_STRIPPED, MAKE_STRIPPED_VALUES);
}

/// The directory `make -C A -C B` works in (`A/B`, or `B` when absolute), when known.
fn make_directory(dirs: &[&Arg]) -> Option<Field> {
    let (last, before) = dirs.split_last()?;
    if before.is_empty() {
        return Some(last.field.clone());
    }
    let mut path = String::new();
    for dir in dirs {
        let Some(text) = dir.literal() else {
            return Some(Field::unknown("(a directory of make -C)"));
        };
        if text.starts_with('/') || path.is_empty() {
            path = text.into_owned();
        } else {
            path = format!("{}/{text}", path.trim_end_matches('/'));
        }
    }
    Some(Field::text(path))
}
