//! C compilers, the preprocessor, the assembler and the linker (`gcc`, `cc`, `clang`,
//! `cpp`, `as`, `ld`): what a compile reads, writes and runs.
//!
//! A compile reads files the command line does not name: `#include "/any/path"` and
//! `#include "../../x"` reach any file, so do `#embed`, `__has_include`, the assembler's
//! `.incbin "file"` and `.include`, and a linker script's `INPUT` and `INCLUDE`; `-I`
//! only adds places to look. Which ones only the sources say, and the analysis does not
//! preprocess them, so every compile reads an unknown set of files: the sound answer,
//! asked wherever a `read` rule denies or asks something (README "The bash tool": a read
//! of an unknown path).

use super::getopt::split_value;
use super::table::{
    COMPILER_DIRS, COMPILER_INFO, COMPILER_LINKER, COMPILER_OTHER_VALUES, COMPILER_PASS_THROUGH, COMPILER_READS,
    COMPILER_RUNS, COMPILER_RUNS_PREFIXES, COMPILER_WRITES,
};
use super::{Ctx, Role, Verdict, push_role};
use crate::arg::{Access, Arg};
use crate::expand::{Field, PathHole, Seg};

/// How the files a compile reads without naming them are shown.
const INCLUDED: &str = "(the files a compile includes)";
/// How the files a compile writes next to its output (objects, `a.out`, dependency files,
/// `-save-temps`, dumps) are shown.
const OUTPUTS: &str = "(compiler outputs)";

/// A compiler driver, `cpp` or `as`.
pub(super) fn compiler(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let args = ctx.args;
    // `gcc --version`, `cc -dumpmachine`: prints and compiles nothing.
    let info = |arg: &Arg| {
        arg.literal().is_some_and(|text| {
            COMPILER_INFO.contains(&&*text) || text.starts_with("-print-") || text.starts_with("--print-")
        })
    };
    if args.is_empty() || args.iter().all(info) {
        return;
    }
    let mut inputs: Vec<Arg> = Vec::new();
    let mut output: Option<Arg> = None;
    let mut reads: Vec<(Arg, bool)> = Vec::new();
    let mut writes: Vec<(Arg, bool)> = Vec::new();
    let mut index = 0;
    while let Some(arg) = args.get(index) {
        index += 1;
        let Some(text) = arg.literal() else {
            if arg.maybe_option() {
                verdict.opaque(format!("`{}` with an option only known when it runs", ctx.name));
            }
            inputs.push(arg.clone());
            continue;
        };
        if let Some(file) = text.strip_prefix('@')
            && !file.is_empty()
        {
            // A response file holds more options, any of which may run a program
            // (`-wrapper`, `-fplugin`): the analysis does not read it.
            reads.push((split_value(arg, 1), false));
            verdict.opaque(format!(
                "`{} @FILE` takes options from a file the analysis does not read",
                ctx.name
            ));
            continue;
        }
        if !text.starts_with('-') || text == "-" {
            inputs.push(arg.clone());
            continue;
        }
        // The option and its value: `-o out`, `-oout`, `--sysroot=dir`, `-I dir`, `-Idir`.
        let option = |names: &[&str]| -> Option<(String, Option<Arg>)> {
            let name = names
                .iter()
                .filter(|name| text.starts_with(**name))
                .max_by_key(|name| name.len())?;
            let rest = &text[name.len()..];
            if rest.is_empty() {
                return Some(((*name).to_string(), None));
            }
            let at = name.len() + usize::from(rest.starts_with('=') && name.starts_with("--"));
            Some(((*name).to_string(), Some(split_value(arg, at))))
        };
        let mut value = |attached: Option<Arg>| -> Option<Arg> {
            attached.or_else(|| {
                index += 1;
                args.get(index - 1).cloned()
            })
        };
        if let Some((name, attached)) = option(COMPILER_RUNS) {
            let _ = value(attached);
            verdict.opaque(format!("`{} {name}` runs a program the analysis cannot see", ctx.name));
        } else if COMPILER_RUNS_PREFIXES.iter().any(|prefix| text.starts_with(prefix))
            || (text.starts_with(COMPILER_LINKER) && text.contains('/'))
        {
            verdict.opaque(format!("`{} {text}` loads code the analysis cannot see", ctx.name));
        } else if let Some((name, attached)) = option(COMPILER_PASS_THROUGH) {
            // `-Wl,…`, `-Xlinker …`: options of the linker or assembler, which may name
            // any file (`-Map=`, `--script=`) or load a plugin.
            let passed = if name.ends_with(',') { attached } else { value(attached) };
            let passed = passed.and_then(|arg| arg.literal().map(|text| text.into_owned()));
            match passed {
                Some(passed) if !passed.contains("plugin") && !passed.contains("load") => {
                    writes.push((Arg::unknown("(files another tool's options name)"), true));
                }
                _ => verdict.opaque(format!("`{} {name}` may make another tool load code", ctx.name)),
            }
        } else if let Some((_, attached)) = option(COMPILER_DIRS) {
            if let Some(dir) = value(attached) {
                reads.push((dir, true));
            }
        } else if let Some((_, attached)) = option(COMPILER_READS) {
            if let Some(file) = value(attached) {
                reads.push((file, false));
            }
        } else if let Some((name, attached)) = option(COMPILER_WRITES) {
            if let Some(file) = value(attached) {
                if name == "-o" {
                    output = Some(file.clone());
                }
                writes.push((file, name == "-dumpdir"));
            }
        } else if let Some((_, attached)) = option(COMPILER_OTHER_VALUES) {
            let _ = value(attached);
        } else if let Some((_, path)) = text.split_once('=')
            && (path.starts_with('/') || path.starts_with('~') || path.contains(".."))
        {
            // `-fprofile-generate=/dir`, `-fopt-info-all=/file`: a path outside the
            // directory the outputs go to, read or written.
            let at = text.len() - path.len();
            reads.push((split_value(arg, at), true));
            writes.push((split_value(arg, at), true));
        }
    }
    // `cpp IN OUT`: the second operand is the output.
    if ctx.name == "cpp" && output.is_none() && inputs.len() == 2 {
        output = inputs.pop();
        if let Some(out) = &output {
            writes.push((out.clone(), false));
        }
    }
    for (file, tree) in &reads {
        push_role(verdict, file, Role::Read, *tree);
    }
    for input in &inputs {
        push_role(verdict, input, Role::Read, false);
    }
    verdict.effect(&Arg::unknown(INCLUDED), Access::Read, true);
    for (file, tree) in &writes {
        push_role(verdict, file, Role::Write, *tree);
    }
    // The outputs the command line does not name go to the current directory (`a.out`,
    // `x.o`, `-save-temps`) and next to `-o` (dependency files, `.su`, dumps).
    let outputs = Arg {
        field: Field {
            segs: vec![Seg::Hole {
                display: OUTPUTS.into(),
                class: PathHole::Below,
                value: None,
            }],
        },
        vanish: false,
        split: false,
    };
    verdict.effect(&outputs, Access::Write, true);
    if let Some(out) = &output {
        match out.literal() {
            Some(text) => {
                if let Some((dir, _)) = text.rsplit_once('/') {
                    let dir = if dir.is_empty() { "/" } else { dir };
                    if dir != "." {
                        verdict.effect_under(&outputs, Access::Write, true, Some(&Field::text(dir)));
                    }
                }
            }
            None => verdict.effect(&Arg::unknown(OUTPUTS), Access::Write, true),
        }
    }
}
