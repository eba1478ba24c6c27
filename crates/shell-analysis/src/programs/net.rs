//! Network clients: `curl`, `wget`, `ssh` — the files they send or write.

use std::borrow::Cow;

use super::getopt::{getopt, head, split_value};
use super::table::{
    CURL_CONFIG, CURL_DATA, CURL_OUTPUT_DIR, CURL_READ, CURL_REMOTE_NAME, CURL_WITH_VALUE, CURL_WRITE, NETCAT,
    NETCAT_RUNS, SSH_COPY, SSH_IDENTITY, SSH_RISKY_WORDS, SSH_RUNS, WGET, WGET_DOCUMENT, WGET_EXECUTE, WGET_PREFIX,
    WGET_READ, WGET_WRITE,
};
use super::{Ctx, Role, Verdict, push_role};
use crate::arg::{Access, Arg};
use crate::expand::{Field, PathHole, Seg};

pub(super) fn curl(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let args = ctx.args;
    let mut index = 0;
    let mut output_dir: Option<Field> = None;
    while let Some(arg) = args.get(index) {
        let text = head(arg);
        let (name, attached) = match text.split_once('=') {
            Some((name, _)) if name.starts_with("--") => (name.to_string(), Some(split_value(arg, name.len() + 1))),
            _ => (text.clone(), None),
        };
        let short_attached = (!name.starts_with("--") && name.len() > 2 && name.starts_with('-'))
            .then(|| (name[..2].to_string(), split_value(arg, 2)));
        let (name, attached) = match short_attached {
            Some((short, value))
                if CURL_WRITE.contains(&short.as_str())
                    || CURL_READ.contains(&short.as_str())
                    || CURL_DATA.contains(&short.as_str())
                    || CURL_CONFIG.contains(&short.as_str())
                    || CURL_WITH_VALUE.contains(&short.as_str()) =>
            {
                (short, Some(value))
            }
            _ => (name, attached),
        };
        let takes = CURL_WRITE.contains(&name.as_str())
            || CURL_READ.contains(&name.as_str())
            || CURL_DATA.contains(&name.as_str())
            || CURL_CONFIG.contains(&name.as_str())
            || CURL_WITH_VALUE.contains(&name.as_str());
        let value = if takes {
            match attached {
                Some(value) => Some(value),
                None => {
                    index += 1;
                    args.get(index).cloned()
                }
            }
        } else {
            None
        };
        if let Some(value) = &value {
            if CURL_WRITE.contains(&name.as_str()) {
                verdict.effect_under(value, Access::Write, false, output_dir.as_ref());
            } else if CURL_READ.contains(&name.as_str()) {
                push_role(verdict, value, Role::Read, false);
            } else if CURL_CONFIG.contains(&name.as_str()) {
                push_role(verdict, value, Role::Read, false);
                verdict.opaque("`curl --config` reads options from a file");
            } else if name == CURL_OUTPUT_DIR {
                output_dir = Some(value.field.clone());
            } else if CURL_DATA.contains(&name.as_str()) {
                data_file(verdict, value);
            }
        }
        if CURL_REMOTE_NAME.contains(&name.as_str()) {
            let target = Arg {
                field: Field {
                    segs: vec![Seg::Hole {
                        display: "(remote name)".into(),
                        class: PathHole::Name,
                        value: None,
                    }],
                },
                vanish: false,
                split: false,
            };
            verdict.effect_under(&target, Access::Write, false, output_dir.as_ref());
        }
        if arg.maybe_option() {
            verdict.effect(&Arg::unknown(&arg.field.display()), Access::Read, false);
        }
        index += 1;
    }
}

/// `@file` and `<file` in curl data and form values read the file.
pub(super) fn data_file(verdict: &mut Verdict, value: &Arg) {
    let text = head(value);
    let at = text
        .find('@')
        .filter(|_| !text.starts_with("http"))
        .or_else(|| text.find('<'));
    if let Some(at) = at {
        let file = split_value(value, at + 1);
        let end = head(&file).find(';').unwrap_or(usize::MAX);
        let file = if end == usize::MAX {
            file
        } else {
            Arg::text(head(&file)[..end].to_string())
        };
        if file.literal().as_deref() != Some("-") {
            verdict.effect(&file, Access::Read, false);
        }
    } else if value.value().is_none() {
        verdict.effect(&Arg::unknown(&value.field.display()), Access::Read, false);
    }
}

pub(super) fn wget(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let parsed = getopt(&WGET, ctx.args);
    if parsed.has(WGET_EXECUTE) {
        verdict.opaque("`wget --execute/--config` runs wgetrc commands");
    }
    let prefix = parsed.values(WGET_PREFIX).next().map(|arg| arg.field.clone());
    for value in parsed.values(WGET_WRITE) {
        push_role(verdict, value, Role::Write, false);
    }
    for value in parsed.values(WGET_READ) {
        push_role(verdict, value, Role::Read, false);
    }
    let documents: Vec<&Arg> = parsed.values(WGET_DOCUMENT).collect();
    if documents.is_empty() {
        let target = Arg {
            field: Field {
                segs: vec![Seg::Hole {
                    display: "(downloaded files)".into(),
                    class: PathHole::Below,
                    value: None,
                }],
            },
            vanish: false,
            split: false,
        };
        verdict.effect_under(&target, Access::Write, true, prefix.as_ref());
    }
    for document in documents {
        verdict.effect_under(document, Access::Write, false, prefix.as_ref());
    }
}

pub(super) fn ssh(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let args = ctx.args;
    for (index, arg) in args.iter().enumerate() {
        let text = head(arg);
        let option = |name: &str| text == name || (text.starts_with(name) && text.len() > name.len());
        if SSH_RUNS.iter().any(|name| option(name))
            || (NETCAT_RUNS.iter().any(|name| option(name)) && NETCAT.contains(&ctx.name))
        {
            let value = if text.len() > 2 {
                head(arg)[2..].to_string()
            } else {
                args.get(index + 1)
                    .and_then(Arg::literal)
                    .map(Cow::into_owned)
                    .unwrap_or_default()
            };
            let lower = value.to_ascii_lowercase();
            if !option("-o") || SSH_RISKY_WORDS.iter().any(|word| lower.contains(word)) {
                verdict.opaque(format!("`{} {text}` can run a local program", ctx.name));
            }
        }
        if option(SSH_IDENTITY)
            && let Some(key) = if text.len() > 2 {
                Some(split_value(arg, 2))
            } else {
                args.get(index + 1).cloned()
            }
        {
            push_role(verdict, &key, Role::Read, false);
        }
    }
    if SSH_COPY.contains(&ctx.name) {
        let operands: Vec<&Arg> = args.iter().filter(|arg| !head(arg).starts_with('-')).collect();
        let last = operands.len().saturating_sub(1);
        for (i, operand) in operands.iter().enumerate() {
            let text = operand.literal().unwrap_or_default();
            let remote = text.split('/').next().is_some_and(|first| first.contains(':'));
            if remote {
                continue;
            }
            push_role(
                verdict,
                operand,
                if i == last && operands.len() > 1 {
                    Role::Write
                } else {
                    Role::Read
                },
                true,
            );
        }
    }
}
