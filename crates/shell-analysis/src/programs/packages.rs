//! Package managers and build tools: their global options, and the directories in
//! the home they write.

use super::getopt::{head, split_value};
use super::table::{GLOBAL_DIR_OPTIONS, GLOBAL_OPTIONS, GO_EXEC, HOME_WRITES, VERSION_QUERIES};
use super::{Ctx, Verdict};
use crate::arg::{Access, Arg};

/// The directories under the home directory that `name` writes its caches and logs to
/// (relative to the home), for any run but a bare version query: `npm --version` writes
/// nothing, `npm help` already logs.
pub(crate) fn home_writes(name: &str, args: &[Arg]) -> &'static [&'static str] {
    let Some((_, dirs)) = HOME_WRITES.iter().find(|(names, _)| names.contains(&name)) else {
        return &[];
    };
    match args.get(1..) {
        Some([only]) if only.literal().is_some_and(|text| VERSION_QUERIES.contains(&&*text)) => &[],
        _ => dirs,
    }
}

/// Multi-level commands with global options before the subcommand: also matched without
/// them (`npm --prefix x run build` is `npm run build` too).
pub(super) fn global_options(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let (flags, values): (&[&str], &[&str]) = GLOBAL_OPTIONS
        .iter()
        .find(|(names, _, _)| names.contains(&ctx.name))
        .map_or((&[], &[]), |(_, flags, values)| (*flags, *values));
    let args = ctx.args;
    let mut index = 0;
    let mut kept = vec![0];
    let mut stripped = false;
    while let Some(arg) = args.get(index) {
        let Some(text) = arg.literal() else { break };
        if ctx.name == "cargo" && text.starts_with('+') && index == 0 {
            stripped = true;
            index += 1;
            continue;
        }
        if ctx.name == "terraform" && text.starts_with("-chdir=") {
            verdict.effect(&split_value(arg, 7), Access::Dir, false);
            stripped = true;
            index += 1;
            continue;
        }
        if ctx.name == "cargo" && (text == "--config" || text.starts_with("--config=")) {
            verdict.opaque("`cargo --config` can set a program to run");
            return;
        }
        let (name, attached) = match text.split_once('=') {
            Some((name, _)) if name.starts_with("--") => (name.to_string(), true),
            _ => (text.to_string(), false),
        };
        if flags.contains(&name.as_str()) {
            stripped = true;
            index += 1;
            continue;
        }
        if values.contains(&name.as_str()) {
            let value = if attached {
                Some(split_value(arg, name.len() + 1))
            } else {
                args.get(index + 1).cloned()
            };
            if GLOBAL_DIR_OPTIONS.contains(&name.as_str())
                && let Some(value) = &value
            {
                verdict.effect(value, Access::Dir, false);
            }
            stripped = true;
            index += if attached { 1 } else { 2 };
            continue;
        }
        break;
    }
    if ctx.name == "go"
        && args
            .iter()
            .any(|arg| head(arg).split('=').next().is_some_and(|name| GO_EXEC.contains(&name)))
    {
        verdict.opaque("`go -exec/-toolexec` runs a program");
    }
    if stripped {
        kept.extend((index..args.len()).map(|i| i + 1));
        verdict.forms.push(kept);
    }
}
