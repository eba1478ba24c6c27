//! `git`: subcommands, the options that run code or write files, safe `-c` keys.

use std::borrow::Cow;

use super::getopt::{head, split_value};
use super::{Ctx, Nested, Verdict};
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
            "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix" | "--attr-source" | "--list-cmds" => {
                if matches!(name.as_str(), "--git-dir" | "--work-tree")
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
            "--no-pager"
            | "-P"
            | "-p"
            | "--paginate"
            | "--bare"
            | "--no-replace-objects"
            | "--literal-pathspecs"
            | "--glob-pathspecs"
            | "--noglob-pathspecs"
            | "--icase-pathspecs"
            | "--no-optional-locks"
            | "--exec-path"
            | "--html-path"
            | "--man-path"
            | "--info-path"
            | "--no-lazy-fetch"
            | "--no-advice" => index += 1,
            "--version" | "--help" | "-h" | "-v" => return,
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
            if arg.maybe_option() && !matches!(&*sub, "commit" | "tag") {
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
        match name {
            "--output" | "-o"
                if matches!(
                    &*sub,
                    "log"
                        | "show"
                        | "diff"
                        | "format-patch"
                        | "whatchanged"
                        | "diff-tree"
                        | "diff-files"
                        | "diff-index"
                        | "range-diff"
                        | "blame"
                        | "shortlog"
                ) || name == "--output" =>
            {
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
            "--exec" | "-x" if matches!(&*sub, "rebase" | "archive") || name == "--exec" => {
                verdict.opaque(format!("`git {sub} {name}` runs a command"));
                return;
            }
            "--upload-pack" | "--receive-pack" | "-u"
                if name != "-u" || matches!(&*sub, "fetch" | "pull" | "clone" | "ls-remote" | "archive") =>
            {
                verdict.opaque(format!("`git {sub} {name}` runs a program"));
                return;
            }
            "--extcmd" | "--open-files-in-pager" | "-O" | "--template" | "--tool" if name != "-O" || sub == "grep" => {
                verdict.opaque(format!("`git {sub} {name}` runs a program"));
                return;
            }
            _ => {}
        }
    }
    match &*sub {
        "config" => {
            let operands: Vec<&Arg> = rest.iter().filter(|arg| !head(arg).starts_with('-')).collect();
            let writes = rest.iter().any(|arg| {
                matches!(
                    head(arg).as_str(),
                    "--add"
                        | "--unset"
                        | "--unset-all"
                        | "--replace-all"
                        | "--rename-section"
                        | "--remove-section"
                        | "-e"
                        | "--edit"
                        | "set"
                        | "unset"
                        | "edit"
                )
            }) || operands.len() >= 2;
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
        "filter-branch" | "filter-repo" | "difftool" | "mergetool" | "instaweb" | "web--browse" => {
            verdict.opaque(format!("`git {sub}` runs commands"));
        }
        "bisect" if rest.first().and_then(Arg::literal).as_deref() == Some("run") && rest.len() > 1 => {
            verdict.nested.push(Nested {
                args: rest[1..].to_vec(),
                ..Nested::default()
            });
        }
        "show" | "cat-file" | "archive" | "grep" | "diff" | "log" | "blame" | "annotate" | "add" | "checkout"
        | "restore" | "rm" => {
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
                let looks = after_dashes || text.contains('/') || text.starts_with('.') || text.contains('*');
                if looks {
                    let access = if matches!(&*sub, "checkout" | "restore" | "rm") {
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
    let exact = [
        "user.name",
        "user.email",
        "core.quotepath",
        "core.autocrlf",
        "core.safecrlf",
        "core.eol",
        "core.filemode",
        "core.ignorecase",
        "core.abbrev",
        "init.defaultbranch",
        "column.ui",
        "log.showsignature",
        "log.decorate",
        "log.abbrevcommit",
        "log.date",
        "pull.rebase",
        "pull.ff",
        "merge.ff",
        "push.default",
        "fetch.prune",
        "diff.renames",
        "diff.algorithm",
        "diff.colormoved",
        "status.short",
        "status.branch",
        "status.showuntrackedfiles",
        "format.pretty",
        "commit.gpgsign",
        "tag.gpgsign",
        "rebase.autosquash",
        "rebase.autostash",
        "branch.sort",
        "tag.sort",
        "core.longpaths",
        "gc.auto",
        "maintenance.auto",
        "advice.detachedhead",
        "protocol.version",
    ];
    exact.contains(&key.as_str()) || key.starts_with("color.") || key.starts_with("advice.")
}
