//! File programs whose operands a table cannot sort alone: `cp`/`mv`/`ln`/`install`,
//! `chmod`-likes, `dd`, `xxd`, `uniq`.

use super::getopt::{head, split_value};
use super::table::{
    CHMOD_MODE_CHARS, COPY_RECURSIVE, COPY_SYMBOLIC, COPY_TARGET, DD_FILES, DD_INFO, INSTALL_DIRECTORY, INSTALL_RUNS,
};
use super::{Ctx, Role, Verdict, push_role};
use crate::arg::{Access, Arg};
use crate::expand::{PathHole, Seg};

pub(super) fn uniq(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    if let Some(input) = ctx.operand(0) {
        push_role(verdict, input, Role::Read, false);
    }
    if let Some(output) = ctx.operand(1) {
        push_role(verdict, output, Role::Write, false);
    }
}

pub(super) fn copy(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let operands: Vec<&Arg> = ctx.operands().collect();
    let recursive = ctx.parsed.has(COPY_RECURSIVE);
    let symbolic = ctx.parsed.has(COPY_SYMBOLIC);
    if ctx.name == "install" && ctx.parsed.has(INSTALL_DIRECTORY) {
        for arg in &operands {
            push_role(verdict, arg, Role::Write, false);
        }
        return;
    }
    if ctx.name == "install" && ctx.parsed.has(INSTALL_RUNS) {
        verdict.opaque("`install --strip-program` runs a program");
    }
    let target = ctx.parsed.values(COPY_TARGET).next().cloned();
    let (sources, dest): (Vec<&Arg>, Option<Arg>) = match &target {
        Some(dir) => (operands.clone(), Some(dir.clone())),
        None if operands.len() >= 2 => (
            operands[..operands.len() - 1].to_vec(),
            operands.last().map(|a| (*a).clone()),
        ),
        None if matches!(ctx.name, "ln" | "link") && operands.len() == 1 => (operands.clone(), Some(Arg::text("."))),
        None => (operands.clone(), None),
    };
    for source in &sources {
        // A link exposes its target to later reads; a move deletes its source.
        if symbolic {
            verdict.effect(source, Access::Read, false);
        } else {
            push_role(verdict, source, Role::Read, recursive);
        }
        if ctx.name == "mv" {
            push_role(verdict, source, Role::Write, true);
        }
    }
    let Some(dest) = dest else { return };
    push_role(verdict, &dest, Role::Write, recursive);
    for source in &sources {
        // When the destination is a directory, each source lands inside it.
        let mut inside = dest.clone();
        inside.field.segs.push(Seg::Lit("/".into()));
        match source.literal() {
            Some(name) if !source.split => {
                let base = name
                    .trim_end_matches('/')
                    .rsplit('/')
                    .next()
                    .unwrap_or(&name)
                    .to_string();
                inside.field.segs.push(Seg::Lit(base));
            }
            _ => inside.field.segs.push(Seg::Hole {
                display: source.field.display(),
                class: PathHole::Name,
                value: None,
            }),
        }
        push_role(verdict, &inside, Role::Write, recursive);
    }
}

/// `chmod`-like: the first operand is a mode or owner (a mode may look like an option:
/// `chmod -x file`), the rest are files changed.
pub(super) fn chmod(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let mut reference = false;
    let mut tree = false;
    let mut first = true;
    let mut done = false;
    let mut index = 0;
    while let Some(arg) = ctx.args.get(index) {
        index += 1;
        let text = head(arg);
        if !done && arg.literal().is_some() {
            if text == "--" {
                done = true;
                continue;
            }
            if let Some(value) = text.strip_prefix("--reference=") {
                reference = true;
                push_role(verdict, &Arg::text(value), Role::Read, false);
                continue;
            }
            if text == "--reference" {
                reference = true;
                if let Some(value) = ctx.args.get(index) {
                    push_role(verdict, value, Role::Read, false);
                }
                index += 1;
                continue;
            }
            if text.starts_with("--") {
                tree |= text == "--recursive";
                continue;
            }
            let mode_like = ctx.name == "chmod" && text[1..].chars().all(|c| CHMOD_MODE_CHARS.contains(c));
            if text.starts_with('-') && text.len() > 1 && !(first && mode_like && !reference) {
                tree |= text.contains('R');
                continue;
            }
        }
        if first && !reference && ctx.name != "chattr" {
            first = false;
            continue;
        }
        first = false;
        push_role(verdict, arg, Role::Write, tree);
    }
}

pub(super) fn xxd(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    if let Some(input) = ctx.operand(0) {
        push_role(verdict, input, Role::Read, false);
    }
    if let Some(output) = ctx.operand(1) {
        push_role(verdict, output, Role::Write, false);
    }
}

pub(super) fn dd(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    for arg in ctx.args {
        let text = head(arg);
        if let Some(eq) = text.find('=') {
            let key = &text[..eq];
            let value = split_value(arg, eq + 1);
            if let Some((_, role)) = DD_FILES.iter().find(|(name, _)| *name == key) {
                push_role(verdict, &value, *role, false);
            }
        } else if !arg.literal().is_some_and(|text| DD_INFO.contains(&&*text)) {
            verdict.opaque(format!("`dd {}`", arg.field.display()));
        }
    }
}
