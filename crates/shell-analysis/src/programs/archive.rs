//! Archivers: `tar` and the others, their members and where they extract to.

use super::getopt::{getopt, head, split_value};
use super::table::{
    COMPRESS_LISTS, COMPRESS_LISTS_OPTIONAL, COMPRESS_READ, PATCH_INPUT, PATCH_OUTPUT, TAR, TAR_ABSOLUTE, TAR_ARCHIVE,
    TAR_CREATE, TAR_DELETE, TAR_DIRECTORY, TAR_EXTRACT, TAR_FILE_LISTS, TAR_NAME_FILES, TAR_REMOVE, TAR_RUNS,
    TAR_WRITE_FILES, UNZIP_DIRECTORY, ZIP_MOVE, ZIP_NAMES_STDIN, ZIP_RUNS, ZIP_VALUES, ZIP_WRITE,
};
use super::{ARCHIVE_MEMBERS, Ctx, LISTED_FILES, Role, Verdict, listed_files, push_role};
use crate::arg::{Access, Arg};
use crate::expand::{Field, PathHole, Seg};

pub(super) fn tar(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    // Old style: the first argument's letters are options, their values follow in order.
    let mut args: Vec<Arg> = ctx.args.to_vec();
    if let Some(first) = args.first().and_then(Arg::literal)
        && !first.starts_with('-')
        && !first.is_empty()
        && first.chars().all(|c| c.is_ascii_alphabetic())
    {
        let mut rebuilt = Vec::new();
        let mut values: Vec<Arg> = args[1..].to_vec();
        let mut taken = 0;
        for c in first.chars() {
            rebuilt.push(Arg::text(format!("-{c}")));
            if TAR.values.contains(c) && taken < values.len() {
                rebuilt.push(values[taken].clone());
                taken += 1;
            }
        }
        rebuilt.extend(values.drain(taken..));
        args = rebuilt;
    }
    let parsed = getopt(&TAR, &args);
    for opt in &parsed.opts {
        if TAR_RUNS.contains(&&*opt.name) {
            verdict.opaque(format!("`tar {}` runs a program", opt.name));
        }
    }
    if !parsed.unknown.is_empty() {
        verdict.opaque(format!(
            "`tar` with options the analysis does not know ({})",
            parsed.unknown.join(" ")
        ));
    }
    let dir = parsed.values(TAR_DIRECTORY).last().map(|arg| arg.field.clone());
    let archives: Vec<Arg> = parsed.values(TAR_ARCHIVE).cloned().collect();
    let create = parsed.has(TAR_CREATE);
    let extract = parsed.has(TAR_EXTRACT);
    let delete = parsed.has(TAR_DELETE);
    for archive in &archives {
        if create || delete {
            push_role(verdict, archive, Role::Write, false);
        }
        push_role(verdict, archive, Role::Read, false);
    }
    for value in parsed.values(TAR_NAME_FILES) {
        push_role(verdict, value, Role::Read, false);
    }
    // Members named in a list file: read, and which ones only the list knows.
    if create && parsed.has(TAR_FILE_LISTS) {
        verdict.effect_under(&Arg::unknown(LISTED_FILES), Access::Read, true, dir.as_ref());
    }
    for value in parsed.values(TAR_WRITE_FILES) {
        push_role(verdict, value, Role::Write, false);
    }
    let operands: Vec<Arg> = parsed.operands.iter().filter_map(|i| args.get(*i).cloned()).collect();
    if create {
        for operand in &operands {
            verdict.effect_under(operand, Access::Read, true, dir.as_ref());
        }
    }
    if extract {
        let absolute = parsed.has(TAR_ABSOLUTE);
        let target = if absolute {
            Arg::unknown(ARCHIVE_MEMBERS)
        } else {
            Arg {
                field: Field {
                    segs: vec![Seg::Hole {
                        display: ARCHIVE_MEMBERS.into(),
                        class: PathHole::Below,
                        value: None,
                    }],
                },
                vanish: false,
                split: false,
            }
        };
        verdict.effect_under(&target, Access::Write, true, dir.as_ref());
        if parsed.has(TAR_REMOVE) {
            verdict.opaque("`tar --remove-files`");
        }
    }
    if create && parsed.has(TAR_REMOVE) {
        for operand in &operands {
            verdict.effect_under(operand, Access::Write, true, dir.as_ref());
        }
    }
}

pub(super) fn archive(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let operands: Vec<&Arg> = ctx
        .args
        .iter()
        .filter(|arg| !head(arg).starts_with('-') || arg.maybe_option())
        .collect();
    let below = |display: &str| Arg {
        field: Field {
            segs: vec![Seg::Hole {
                display: display.into(),
                class: PathHole::Below,
                value: None,
            }],
        },
        vanish: false,
        split: false,
    };
    match ctx.name {
        "unzip" | "7z" => {
            for operand in &operands {
                push_role(verdict, operand, Role::Read, false);
            }
            if ctx.name == "7z" {
                name_lists(ctx, verdict);
            }
            let dir = ctx
                .args
                .windows(2)
                .find(|pair| head(&pair[0]) == UNZIP_DIRECTORY)
                .map(|pair| pair[1].field.clone());
            verdict.effect_under(&below(ARCHIVE_MEMBERS), Access::Write, true, dir.as_ref());
        }
        "zip" => zip(ctx, verdict),
        "patch" => {
            verdict.effect(&below("(patched files)"), Access::Write, true);
            for (i, operand) in operands.iter().enumerate() {
                push_role(verdict, operand, if i == 0 { Role::Write } else { Role::Read }, false);
            }
            for pair in ctx.args.windows(2) {
                let option = head(&pair[0]);
                if PATCH_INPUT.contains(&option.as_str()) {
                    push_role(verdict, &pair[1], Role::Read, false);
                } else if PATCH_OUTPUT.contains(&option.as_str()) {
                    push_role(verdict, &pair[1], Role::Write, false);
                }
            }
        }
        _ => {
            // `xz --files=LIST`, `zstd --filelist LIST`: the files LIST (or the input)
            // names are compressed too, each replaced like an operand.
            let mut listed = false;
            let mut values = Vec::new();
            for (i, arg) in ctx.args.iter().enumerate() {
                let text = head(arg);
                let (name, attached) = match text.split_once('=') {
                    Some((name, _)) => (name, true),
                    None => (text.as_str(), false),
                };
                let value = || {
                    if attached {
                        Some(split_value(arg, name.len() + 1))
                    } else {
                        ctx.args.get(i + 1).cloned()
                    }
                };
                if COMPRESS_LISTS_OPTIONAL.contains(&name) {
                    listed = true;
                    if attached && let Some(list) = value() {
                        push_role(verdict, &list, Role::Read, false);
                    }
                } else if COMPRESS_LISTS.contains(&name) {
                    listed = true;
                    if let Some(list) = value() {
                        push_role(verdict, &list, Role::Read, false);
                    }
                    if !attached {
                        values.push(i + 1);
                    }
                } else if COMPRESS_READ.contains(&name)
                    && let Some(file) = value()
                {
                    push_role(verdict, &file, Role::Read, false);
                }
            }
            if listed {
                listed_files(verdict, Access::Read);
                listed_files(verdict, Access::Write);
            }
            // Compressors replace each file by its compressed (or plain) version.
            let operands = ctx
                .args
                .iter()
                .enumerate()
                .filter(|(i, arg)| !values.contains(i) && operands.iter().any(|operand| std::ptr::eq(*operand, *arg)))
                .map(|(_, arg)| arg);
            for operand in operands {
                push_role(verdict, operand, Role::Read, false);
                push_role(verdict, operand, Role::Write, false);
                let mut sibling = (*operand).clone();
                sibling.field.segs.push(Seg::Hole {
                    display: "(.suffix)".into(),
                    class: PathHole::Name,
                    value: None,
                });
                push_role(verdict, &sibling, Role::Write, false);
                if let Some(text) = operand.literal()
                    && let Some(stem) = text.rsplit_once('.').map(|(stem, _)| stem.to_string())
                {
                    push_role(verdict, &Arg::text(stem), Role::Write, false);
                }
            }
        }
    }
}

/// `zip`: the archive (the first operand) is written and the other operands read (whole
/// trees: `-r` is common and cheap to assume); names from the input (`-@`), include and
/// exclude lists (`-i@LIST`, `--exclude @LIST`), the options that write elsewhere, run a
/// command (`-TT`) or delete the files archived (`-m`).
fn zip(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let mut operands = Vec::new();
    let mut moved = false;
    let mut index = 0;
    while let Some(arg) = ctx.args.get(index) {
        index += 1;
        let text = head(arg);
        if !text.starts_with('-') || arg.maybe_option() {
            // A list of patterns after `-i`/`-x` (a file named so elsewhere, read too).
            if let Some(list) = text.strip_prefix('@')
                && !list.is_empty()
            {
                push_role(verdict, &split_value(arg, 1), Role::Read, false);
            }
            // A lone `@` ends an include or exclude list.
            if text != "@" {
                operands.push(arg);
            }
            continue;
        }
        let (name, attached) = match text.split_once('=') {
            Some((name, _)) if name.starts_with("--") => (name, true),
            _ => (text.as_str(), false),
        };
        let value = if attached {
            Some(split_value(arg, name.len() + 1))
        } else if ZIP_VALUES.contains(&name) {
            index += 1;
            ctx.args.get(index - 1).cloned()
        } else {
            None
        };
        let short = !name.starts_with("--");
        if ZIP_RUNS.contains(&name) {
            verdict.opaque(format!("`zip {name}` runs a command"));
        } else if ZIP_WRITE.contains(&name) {
            if let Some(value) = &value {
                push_role(verdict, value, Role::Write, true);
            }
        } else if ZIP_NAMES_STDIN.contains(&name) || (short && name.ends_with('@')) {
            // `-@` (alone or last of a group, `-r@`): the names come from the input.
            listed_files(verdict, Access::Read);
        } else if let Some((_, list)) = text.split_once('@')
            && !list.is_empty()
        {
            // `-i@LIST`, `--include=@LIST`: a list of patterns, read.
            let at = text.len() - list.len();
            push_role(verdict, &split_value(arg, at), Role::Read, false);
        }
        // `-m` may be grouped with other one-letter options (`-rm`).
        if ZIP_MOVE.contains(&name) || (short && value.is_none() && !name.contains('@') && name.contains('m')) {
            moved = true;
        }
    }
    for (i, operand) in operands.iter().enumerate() {
        push_role(verdict, operand, if i == 0 { Role::Write } else { Role::Read }, true);
    }
    if moved {
        for operand in operands.iter().skip(1) {
            push_role(verdict, operand, Role::Write, true);
        }
    }
}

/// `7z`: `@LIST` names files to archive (which ones only the list knows), and
/// `-i@LIST`/`-x@LIST` (also `-ir@LIST`…) read lists of names.
fn name_lists(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    for arg in ctx.args {
        let text = head(arg);
        let Some((before, list)) = text.split_once('@') else {
            continue;
        };
        if list.is_empty() {
            continue;
        }
        push_role(verdict, &split_value(arg, before.len() + 1), Role::Read, false);
        if before.is_empty() {
            listed_files(verdict, Access::Read);
        }
    }
}
