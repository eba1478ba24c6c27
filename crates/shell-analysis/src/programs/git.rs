//! `git`: subcommands, the options that run code or write files, safe `-c` keys.

use std::borrow::Cow;

use super::getopt::{head, split_value};
use super::table::{
    GIT_CONFIG_WRITES, GIT_EXEC, GIT_EXEC_SUBCOMMANDS, GIT_GLOBAL_DIRS, GIT_GLOBAL_FLAGS, GIT_GLOBAL_VALUES, GIT_INFO,
    GIT_MESSAGE_FILE, GIT_MESSAGE_FILE_SUBCOMMANDS, GIT_MESSAGE_SUBCOMMANDS, GIT_OUTPUT, GIT_OUTPUT_SUBCOMMANDS,
    GIT_PATH_SUBCOMMANDS, GIT_PATH_WRITERS, GIT_PATHSPEC_FROM_FILE, GIT_PATHSPEC_FROM_FILE_SHORTEST, GIT_PATHSPEC_ONLY,
    GIT_PATHSPEC_WRITERS, GIT_RUNNING_SUBCOMMANDS, GIT_RUNS, GIT_SAFE_KEYS, GIT_SAFE_SECTIONS, GIT_STDIN_PATHS,
    GIT_UPLOAD, GIT_UPLOAD_SUBCOMMANDS,
};
use super::{Ctx, Nested, Role, Verdict, listed_files, push_role};
use crate::arg::{Access, Arg};

/// `git`: global options (also matched without them), `-c` keys that run programs, and
/// subcommand options that write, read or run.
pub(super) fn git(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let args = ctx.args;
    let mut index = 0;
    let mut kept = vec![0];
    let mut stripped = false;
    while let Some(arg) = args.get(index) {
        let Some(text) = arg.literal() else {
            if arg.maybe_option() {
                verdict.opaque("`git` with an option only known when it runs");
                return;
            }
            break;
        };
        if !text.starts_with('-') {
            break;
        }
        let (name, attached) = match text.split_once('=') {
            Some((name, _)) if name.starts_with("--") => (name.to_string(), true),
            _ => (text.to_string(), false),
        };
        let value = |offset: usize| -> Option<Arg> {
            if attached {
                Some(split_value(arg, name.len() + 1))
            } else {
                args.get(index + offset).cloned()
            }
        };
        match name.as_str() {
            "-C" => {
                if let Some(dir) = value(1) {
                    verdict.effect(&dir, Access::Dir, false);
                }
                index += 2;
            }
            "-c" => {
                let Some(setting) = value(1).and_then(|arg| arg.literal().map(Cow::into_owned)) else {
                    verdict.opaque("`git -c` with a setting only known when it runs");
                    return;
                };
                if !git_safe_key(setting.split('=').next().unwrap_or("")) {
                    verdict.opaque(format!("`git -c {setting}` can make git run a program"));
                    return;
                }
                index += 2;
            }
            n if GIT_GLOBAL_VALUES.contains(&n) => {
                if GIT_GLOBAL_DIRS.contains(&n)
                    && let Some(dir) = value(1)
                {
                    verdict.effect(&dir, Access::Dir, false);
                }
                index += if attached { 1 } else { 2 };
            }
            "--exec-path" if attached => {
                verdict.opaque("`git --exec-path=…` runs git programs from another directory");
                return;
            }
            "--config-env" => {
                verdict.opaque("`git --config-env` takes settings from the environment");
                return;
            }
            n if GIT_GLOBAL_FLAGS.contains(&n) => index += 1,
            n if GIT_INFO.contains(&n) => return,
            _ => {
                verdict.opaque(format!("`git {name}` (a global option the analysis does not know)"));
                return;
            }
        }
        stripped = true;
    }
    if stripped {
        kept.extend((index..args.len()).map(|i| i + 1));
        verdict.forms.push(kept);
    }
    let Some(sub) = args.get(index) else { return };
    let Some(sub) = sub.literal() else {
        verdict.opaque("a `git` subcommand only known when it runs");
        return;
    };
    let rest = &args[index + 1..];
    for (i, arg) in rest.iter().enumerate() {
        let Some(text) = arg.literal() else {
            if arg.maybe_option() && !GIT_MESSAGE_SUBCOMMANDS.contains(&&*sub) {
                verdict.opaque(format!("`git {sub}` with an option only known when it runs"));
                return;
            }
            continue;
        };
        if text == "--" {
            break;
        }
        let name = text.split('=').next().unwrap_or("");
        let takes_next = !text.contains('=');
        let value = || {
            if takes_next {
                rest.get(i + 1).cloned()
            } else {
                Some(split_value(arg, name.len() + 1))
            }
        };
        // `--pathspec-from-file=LIST` (any unique prefix, `-` for the input): the files
        // LIST names are read, and changed by the subcommands that write their paths.
        if abbreviates(name, GIT_PATHSPEC_FROM_FILE, GIT_PATHSPEC_FROM_FILE_SHORTEST) {
            if let Some(list) = value() {
                push_role(verdict, &list, Role::Read, false);
            }
            listed_files(verdict, Access::Read);
            if GIT_PATHSPEC_WRITERS.contains(&&*sub) {
                listed_files(verdict, Access::Write);
            }
        }
        // `git update-index --stdin`, `git hash-object --stdin-paths`: paths from the input.
        if let Some((_, option, shortest)) = GIT_STDIN_PATHS.iter().find(|(subs, _, _)| subs.contains(&&*sub))
            && abbreviates(name, option, *shortest)
        {
            listed_files(verdict, Access::Read);
            if GIT_PATH_WRITERS.contains(&&*sub) {
                listed_files(verdict, Access::Write);
            }
        }
        // `git commit -F FILE`: the message is read from FILE (`-` for the input).
        if GIT_MESSAGE_FILE_SUBCOMMANDS.contains(&&*sub) && GIT_MESSAGE_FILE.contains(&name) {
            if let Some(file) = value() {
                push_role(verdict, &file, Role::Read, false);
            }
        } else if GIT_MESSAGE_FILE_SUBCOMMANDS.contains(&&*sub) && text.len() > 2 && text.starts_with("-F") {
            push_role(verdict, &split_value(arg, 2), Role::Read, false);
        }
        match name {
            n if GIT_OUTPUT.contains(&n) && (GIT_OUTPUT_SUBCOMMANDS.contains(&&*sub) || n == "--output") => {
                let value = if takes_next {
                    rest.get(i + 1).cloned()
                } else {
                    Some(split_value(arg, name.len() + 1))
                };
                if let Some(value) = value {
                    let tree = sub == "format-patch";
                    verdict.effect(&value, Access::Write, tree);
                }
            }
            n if GIT_EXEC.contains(&n) && (GIT_EXEC_SUBCOMMANDS.contains(&&*sub) || n == "--exec") => {
                verdict.opaque(format!("`git {sub} {name}` runs a command"));
                return;
            }
            n if GIT_UPLOAD.contains(&n) && (n != "-u" || GIT_UPLOAD_SUBCOMMANDS.contains(&&*sub)) => {
                verdict.opaque(format!("`git {sub} {name}` runs a program"));
                return;
            }
            n if GIT_RUNS.contains(&n) && (n != "-O" || sub == "grep") => {
                verdict.opaque(format!("`git {sub} {name}` runs a program"));
                return;
            }
            _ => {}
        }
    }
    match &*sub {
        "config" => {
            let operands: Vec<&Arg> = rest.iter().filter(|arg| !head(arg).starts_with('-')).collect();
            let writes = rest.iter().any(|arg| GIT_CONFIG_WRITES.contains(&head(arg).as_str())) || operands.len() >= 2;
            let key = operands.first().and_then(|arg| arg.literal()).unwrap_or_default();
            if writes && !git_safe_key(&key) {
                verdict.opaque(format!(
                    "`git config` sets {key}, which can make git run a program later"
                ));
            }
        }
        "submodule" if rest.iter().any(|arg| head(arg) == "foreach") => {
            verdict.opaque("`git submodule foreach` runs a command");
        }
        s if GIT_RUNNING_SUBCOMMANDS.contains(&s) => {
            verdict.opaque(format!("`git {sub}` runs commands"));
        }
        "bisect" if rest.first().and_then(Arg::literal).as_deref() == Some("run") && rest.len() > 1 => {
            verdict.nested.push(Nested {
                args: rest[1..].to_vec(),
                ..Nested::default()
            });
        }
        s if GIT_PATH_SUBCOMMANDS.contains(&s) => {
            // `REV:path` reads a file from the repository; paths after `--` or that look
            // like paths are read (`git show HEAD:.env`, `git diff -- .env`).
            let mut after_dashes = false;
            let mut first_operand = true;
            for arg in rest {
                let text = arg.literal();
                if text.as_deref() == Some("--") {
                    after_dashes = true;
                    continue;
                }
                if !after_dashes && head(arg).starts_with('-') {
                    continue;
                }
                let Some(text) = text else {
                    verdict.effect(&Arg::unknown(&arg.field.display()), Access::Read, false);
                    continue;
                };
                if sub == "grep" && first_operand && !after_dashes {
                    first_operand = false;
                    continue;
                }
                first_operand = false;
                if let Some((_, path)) = text
                    .split_once(':')
                    .filter(|(rev, _)| !rev.contains('/') || rev.is_empty())
                {
                    if !path.is_empty() {
                        verdict.effect(&Arg::text(path.trim_start_matches("./")), Access::Read, false);
                    }
                    continue;
                }
                let looks = after_dashes
                    || GIT_PATHSPEC_ONLY.contains(&&*sub)
                    || text.contains('/')
                    || text.starts_with('.')
                    || text.contains('*');
                if looks {
                    let access = if GIT_PATH_WRITERS.contains(&&*sub) {
                        Access::Write
                    } else {
                        Access::Read
                    };
                    verdict.effect(arg, access, false);
                }
            }
        }
        _ => {}
    }
}

/// `git -c` / `git config` keys that never make git run a program or read another config.
pub(super) fn git_safe_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    GIT_SAFE_KEYS.contains(&key.as_str()) || GIT_SAFE_SECTIONS.iter().any(|section| key.starts_with(section))
}

/// Whether `name` is `option` or a prefix of it git accepts for it (git's options take
/// unique prefixes): at least `shortest` long, so that it names no other option.
fn abbreviates(name: &str, option: &str, shortest: usize) -> bool {
    name.len() >= shortest && option.starts_with(name)
}
