//! `find` expressions and `xargs`: the commands they run and the files they touch.

use std::borrow::Cow;

use super::getopt::head;
use super::table::{
    FIND_EXEC, FIND_EXEC_END, FIND_EXPRESSION_START, FIND_FILE_VALUE, FIND_FLAGS, FIND_GLOBAL, FIND_VALUE, FIND_WRITE,
    XARGS_ARG_FILE, XARGS_REPLACE,
};
use super::{Ctx, LISTED_FILES, Nested, Role, Verdict, push_role};
use crate::arg::{Access, Arg};
use crate::expand::{Field, PathHole, Seg};

/// `find`: start paths, then an expression whose actions may delete, write or run.
pub(super) fn find(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let args = ctx.args;
    let mut index = 0;
    while let Some(text) = args.get(index).and_then(Arg::literal) {
        match &*text {
            t if FIND_GLOBAL.contains(&t) => index += 1,
            "-D" => index += 2,
            t if t.starts_with("-O") || (t.starts_with("-D") && t.len() > 2) => index += 1,
            _ => break,
        }
    }
    let mut starts: Vec<&Arg> = Vec::new();
    while let Some(arg) = args.get(index) {
        let text = head(arg);
        if text.starts_with('-') || FIND_EXPRESSION_START.contains(&text.as_str()) {
            break;
        }
        if arg.maybe_option() {
            verdict.opaque("`find` with an argument only known when it runs");
        }
        starts.push(arg);
        index += 1;
    }
    // `-files0-from LIST` takes the start paths from LIST (or the input): which ones
    // only the list knows, so its actions may touch any file.
    let listed = args[index..].iter().any(|arg| arg.is_literal("-files0-from"));
    let starts: Vec<Arg> = if listed {
        starts
            .into_iter()
            .cloned()
            .chain([Arg::unknown(LISTED_FILES)])
            .collect()
    } else if starts.is_empty() {
        vec![Arg::text(".")]
    } else {
        starts.into_iter().cloned().collect()
    };
    for start in &starts {
        verdict.effect(start, Access::Dir, false);
    }
    let found = below;
    while let Some(arg) = args.get(index) {
        let Some(text) = arg.literal() else {
            verdict.opaque("`find` with an expression only known when it runs");
            return;
        };
        index += 1;
        match &*text {
            t if FIND_FLAGS.contains(&t) => {}
            t if FIND_VALUE.contains(&t) => index += 1,
            t if FIND_FILE_VALUE.contains(&t) || t.starts_with("-newer") => {
                if let Some(value) = args.get(index) {
                    push_role(verdict, value, Role::Read, false);
                }
                index += 1;
            }
            "-delete" => {
                for start in &starts {
                    verdict.effect(&found(start), Access::Write, true);
                }
            }
            t if FIND_WRITE.contains(&t) => {
                if let Some(value) = args.get(index) {
                    push_role(verdict, value, Role::Write, false);
                }
                index += 1;
            }
            "-fprintf" => {
                if let Some(value) = args.get(index) {
                    push_role(verdict, value, Role::Write, false);
                }
                index += 2;
            }
            t if FIND_EXEC.contains(&t) => {
                let begin = index;
                while let Some(arg) = args.get(index) {
                    if arg.literal().is_some_and(|text| FIND_EXEC_END.contains(&&*text)) {
                        break;
                    }
                    index += 1;
                }
                let command: Vec<Arg> = args[begin..index.min(args.len())]
                    .iter()
                    .map(|arg| replace_braces(arg, &starts, &found))
                    .collect();
                index += 1;
                if !command.is_empty() {
                    verdict.nested.push(Nested {
                        args: command,
                        ..Nested::default()
                    });
                }
            }
            other => {
                verdict.opaque(format!("`find {other}` (an expression the analysis does not know)"));
                return;
            }
        }
    }
}

/// A path `find` finds below `start` (`START/{}`), as its `-exec` commands and the words
/// of its output get it.
pub(crate) fn below(start: &Arg) -> Arg {
    let mut field = start.field.clone();
    field.segs.push(Seg::Lit("/".into()));
    field.segs.push(Seg::Hole {
        display: "{}".into(),
        class: PathHole::Below,
        value: None,
    });
    Arg {
        field,
        vanish: false,
        split: start.split,
    }
}

/// `{}` in a `find -exec` command: a path below a start path.
pub(super) fn replace_braces(arg: &Arg, starts: &[Arg], found: &dyn Fn(&Arg) -> Arg) -> Arg {
    let Some(text) = arg.literal() else { return arg.clone() };
    if !text.contains("{}") {
        return arg.clone();
    }
    if text == "{}" && starts.len() == 1 {
        return found(&starts[0]);
    }
    let mut field = Field::default();
    for (i, piece) in text.split("{}").enumerate() {
        if i > 0 {
            field.segs.push(Seg::Hole {
                display: "{}".into(),
                class: PathHole::Any,
                value: None,
            });
        }
        if !piece.is_empty() {
            field.segs.push(Seg::Lit(piece.to_string()));
        }
    }
    Arg {
        field,
        vanish: false,
        split: false,
    }
}

pub(super) fn xargs(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    for value in ctx.parsed.values(XARGS_ARG_FILE) {
        push_role(verdict, value, Role::Read, false);
    }
    let replace: Option<String> = ctx
        .parsed
        .opts
        .iter()
        .find(|opt| XARGS_REPLACE.contains(&&*opt.name))
        .map(|opt| {
            opt.value
                .as_ref()
                .and_then(Arg::literal)
                .map_or_else(|| "{}".to_string(), Cow::into_owned)
        });
    let rest: Vec<Arg> = ctx.args[ctx.parsed.rest.min(ctx.args.len())..].to_vec();
    let command = if rest.is_empty() { vec![Arg::text("echo")] } else { rest };
    let (command, appended) = match &replace {
        Some(token) => (
            command
                .iter()
                .map(|arg| match arg.literal() {
                    Some(text) if text.contains(token.as_str()) => Arg::unknown(&text),
                    _ => arg.clone(),
                })
                .collect(),
            false,
        ),
        None => (command, true),
    };
    verdict.nested.push(Nested {
        args: command,
        appended,
        ..Nested::default()
    });
}
