//! Archivers: `tar` and the others, their members and where they extract to.

use super::getopt::{getopt, head};
use super::table::{
    PATCH_INPUT, PATCH_OUTPUT, TAR, TAR_ABSOLUTE, TAR_ARCHIVE, TAR_CREATE, TAR_DELETE, TAR_DIRECTORY, TAR_EXTRACT,
    TAR_FILE_LISTS, TAR_NAME_FILES, TAR_REMOVE, TAR_RUNS, TAR_WRITE_FILES, UNZIP_DIRECTORY,
};
use super::{Ctx, Role, Verdict, push_role};
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
        verdict.effect_under(
            &Arg::unknown("(the files a list names)"),
            Access::Read,
            true,
            dir.as_ref(),
        );
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
            Arg::unknown("(archive members)")
        } else {
            Arg {
                field: Field {
                    segs: vec![Seg::Hole {
                        display: "(archive members)".into(),
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
            let dir = ctx
                .args
                .windows(2)
                .find(|pair| head(&pair[0]) == UNZIP_DIRECTORY)
                .map(|pair| pair[1].field.clone());
            verdict.effect_under(&below("(archive members)"), Access::Write, true, dir.as_ref());
        }
        "zip" => {
            for (i, operand) in operands.iter().enumerate() {
                push_role(verdict, operand, if i == 0 { Role::Write } else { Role::Read }, true);
            }
        }
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
            // Compressors replace each file by its compressed (or plain) version.
            for operand in &operands {
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
