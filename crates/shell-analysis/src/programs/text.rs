//! Text tools that take a program or patterns: `grep`, `rg`, `jq`, `sed` scripts, `awk`
//! programs.

use std::borrow::Cow;

use super::getopt::head;
use super::table::{
    AWK_PROGRAM_FILES, AWK_RISKY_WORDS, AWK_SOURCE, GREP_PATTERN_OPTIONS, GREP_RECURSIVE, JQ_FILTER_FILE, JQ_LAYOUT,
    JQ_NAMED_FILES, JQ_NAMED_VALUES, JQ_POSITIONAL, RG_PATTERN_OPTIONS, SED_EXPRESSION, SED_IN_PLACE, SED_SANDBOX,
    SED_SCRIPT_FILE, SED_SCRIPT_OPTIONS, SED_STREAMS,
};
use super::{Ctx, Role, Verdict, push_role};
use crate::arg::{Access, Arg};

pub(super) fn grep(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let recursive = ctx.parsed.has(GREP_RECURSIVE);
    let skip = usize::from(!ctx.parsed.has(GREP_PATTERN_OPTIONS));
    if recursive && ctx.operands().count() <= skip {
        verdict.effect(&Arg::text("."), Access::Read, true);
    }
}

pub(super) fn ripgrep(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let skip = usize::from(!ctx.parsed.has(RG_PATTERN_OPTIONS));
    // rg searches directories recursively, the current one when none is given.
    for effect in verdict.effects.iter_mut() {
        if effect.access == Access::Read {
            effect.tree = true;
        }
    }
    if ctx.operands().count() <= skip {
        verdict.effect(&Arg::text("."), Access::Read, true);
    }
}

pub(super) fn jq(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let args = ctx.args;
    let mut index = 0;
    let mut filter_given = false;
    let mut operands = Vec::new();
    let mut positional_args = false;
    while let Some(arg) = args.get(index) {
        let text = head(arg);
        if positional_args {
            index += 1;
            continue;
        }
        match text.as_str() {
            t if JQ_FILTER_FILE.contains(&t) => {
                if let Some(file) = args.get(index + 1) {
                    push_role(verdict, file, Role::Read, false);
                }
                filter_given = true;
                index += 2;
            }
            t if JQ_NAMED_VALUES.contains(&t) => index += 3,
            t if JQ_NAMED_FILES.contains(&t) => {
                if let Some(file) = args.get(index + 2) {
                    push_role(verdict, file, Role::Read, false);
                }
                index += 3;
            }
            t if JQ_LAYOUT.contains(&t) => index += if text == "--tab" { 1 } else { 2 },
            t if JQ_POSITIONAL.contains(&t) => {
                positional_args = true;
                index += 1;
            }
            _ if text.starts_with('-') && text.len() > 1 => index += 1,
            _ => {
                operands.push(arg.clone());
                index += 1;
            }
        }
    }
    for operand in operands.iter().skip(usize::from(!filter_given)) {
        push_role(verdict, operand, Role::Read, false);
    }
}

/// Adds the form of the command without the given leading options (and their values).
pub(super) fn strip_forms(ctx: &Ctx<'_>, verdict: &mut Verdict, options: &[&str], with_value: &[&str]) {
    let args = ctx.args;
    let mut index = 0;
    let mut kept = vec![0];
    let mut stripped = false;
    while let Some(arg) = args.get(index) {
        let Some(text) = arg.literal() else { break };
        let name = text.split('=').next().unwrap_or("");
        if options.contains(&name) || (text.len() > 2 && with_value.contains(&&text[..2])) {
            stripped = true;
            let attached = text.contains('=') || (text.len() > 2 && !text.starts_with("--"));
            index += if with_value.contains(&name) && !attached { 2 } else { 1 };
            continue;
        }
        break;
    }
    if stripped {
        kept.extend((index..args.len()).map(|i| i + 1));
        verdict.forms.push(kept);
    }
}

pub(super) fn sed(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    let in_place = ctx.parsed.has(SED_IN_PLACE);
    let sandbox = ctx.parsed.has(SED_SANDBOX);
    let mut scripts: Vec<Option<Cow<'_, str>>> = ctx.parsed.values(SED_EXPRESSION).map(Arg::literal).collect();
    if ctx.parsed.has(SED_SCRIPT_FILE) {
        verdict.opaque("`sed -f` runs a script file the analysis cannot see");
    }
    let explicit = ctx.parsed.has(SED_SCRIPT_OPTIONS);
    if !explicit {
        scripts.push(ctx.operand(0).and_then(Arg::literal));
    }
    let files: Vec<&Arg> = ctx.operands().skip(usize::from(!explicit)).collect();
    if in_place {
        for file in &files {
            push_role(verdict, file, Role::Write, false);
        }
    }
    let script = if scripts.iter().all(Option::is_some) {
        Some(scripts.into_iter().flatten().collect::<Vec<_>>().join("\n"))
    } else {
        None
    };
    let Some(script) = script else {
        verdict.opaque("`sed` with a script only known when it runs");
        return;
    };
    match sed_effects(&script) {
        Ok(effects) => {
            if sandbox {
                return;
            }
            for (access, file) in effects.files {
                if SED_STREAMS.contains(&file.as_str()) {
                    continue;
                }
                let role = if access == Access::Write {
                    Role::Write
                } else {
                    Role::Read
                };
                push_role(verdict, &Arg::text(file), role, false);
            }
            if effects.executes {
                verdict.opaque("the `sed` script runs shell commands (`e`)");
            }
        }
        Err(reason) => verdict.opaque(format!("a `sed` script the analysis does not read ({reason})")),
    }
}

pub(crate) struct SedEffects {
    pub(crate) files: Vec<(Access, String)>,
    pub(crate) executes: bool,
}

/// Reads a GNU sed script far enough to find the commands that run programs (`e`, the `e`
/// flag of `s`) and the files it reads (`r`, `R`) or writes (`w`, `W`, the `w` flag).
pub(crate) fn sed_effects(script: &str) -> Result<SedEffects, String> {
    let chars: Vec<char> = script.chars().collect();
    let mut effects = SedEffects {
        files: Vec::new(),
        executes: false,
    };
    let mut i = 0;
    let skip_blank = |i: &mut usize| {
        while *i < chars.len() && matches!(chars[*i], ' ' | '\t' | ';' | '\n') {
            *i += 1;
        }
    };
    let rest_of_line = |i: &mut usize| -> String {
        let start = *i;
        while *i < chars.len() && chars[*i] != '\n' {
            *i += 1;
        }
        chars[start..*i].iter().collect::<String>()
    };
    // A regex or replacement delimited by `delim`; backslashes escape.
    let delimited = |i: &mut usize, delim: char| -> Result<(), String> {
        while *i < chars.len() {
            let c = chars[*i];
            if c == '\\' {
                *i += 2;
                continue;
            }
            if c == '\n' && delim != '\n' {
                return Err("a newline inside a regex".into());
            }
            if c == delim {
                *i += 1;
                return Ok(());
            }
            if c == '[' && delim != '[' {
                // A bracket expression may hold the delimiter.
                let mut j = *i + 1;
                if j < chars.len() && chars[j] == '^' {
                    j += 1;
                }
                if j < chars.len() && chars[j] == ']' {
                    j += 1;
                }
                while j < chars.len() && chars[j] != ']' {
                    if chars[j] == '\n' {
                        return Err("an unterminated bracket".into());
                    }
                    j += 1;
                }
                *i = j + 1;
                continue;
            }
            *i += 1;
        }
        Err("an unterminated regex".into())
    };
    loop {
        skip_blank(&mut i);
        if i >= chars.len() {
            break;
        }
        // Addresses.
        for _ in 0..2 {
            skip_blank_spaces(&chars, &mut i);
            if i >= chars.len() {
                break;
            }
            match chars[i] {
                '0'..='9' => {
                    while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '~') {
                        i += 1;
                    }
                }
                '$' => i += 1,
                '/' => {
                    i += 1;
                    delimited(&mut i, '/')?;
                    while i < chars.len() && matches!(chars[i], 'I' | 'M') {
                        i += 1;
                    }
                }
                '\\' => {
                    let delim = *chars.get(i + 1).ok_or("an address without a delimiter")?;
                    i += 2;
                    delimited(&mut i, delim)?;
                    while i < chars.len() && matches!(chars[i], 'I' | 'M') {
                        i += 1;
                    }
                }
                '+' | '~' => {
                    i += 1;
                    while i < chars.len() && chars[i].is_ascii_digit() {
                        i += 1;
                    }
                }
                _ => break,
            }
            skip_blank_spaces(&chars, &mut i);
            if i < chars.len() && chars[i] == ',' {
                i += 1;
                continue;
            }
            break;
        }
        skip_blank_spaces(&chars, &mut i);
        while i < chars.len() && chars[i] == '!' {
            i += 1;
            skip_blank_spaces(&chars, &mut i);
        }
        if i >= chars.len() {
            return Err("an address without a command".into());
        }
        let command = chars[i];
        i += 1;
        match command {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z' | 'F' => {}
            '#' => {
                let _ = rest_of_line(&mut i);
            }
            ':' => {
                let label = rest_of_line(&mut i);
                if label.contains(';') {
                    // GNU sed ends a label at `;` too: fine, the rest is another command.
                }
            }
            'b' | 't' | 'T' => {
                while i < chars.len() && !matches!(chars[i], ';' | '\n' | '}') {
                    i += 1;
                }
            }
            'q' | 'Q' | 'l' | 'L' => {
                skip_blank_spaces(&chars, &mut i);
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
            'a' | 'i' | 'c' => {
                // Text to the end of the line (a trailing backslash continues it).
                loop {
                    let line = rest_of_line(&mut i);
                    if line.ends_with('\\') && i < chars.len() {
                        i += 1;
                        continue;
                    }
                    break;
                }
            }
            'e' => {
                effects.executes = true;
                let _ = rest_of_line(&mut i);
            }
            'r' | 'R' | 'w' | 'W' => {
                skip_blank_spaces(&chars, &mut i);
                let file = rest_of_line(&mut i);
                let access = if matches!(command, 'r' | 'R') {
                    Access::Read
                } else {
                    Access::Write
                };
                effects.files.push((access, file));
            }
            'v' => {
                while i < chars.len() && !matches!(chars[i], ';' | '\n' | '}') {
                    i += 1;
                }
            }
            's' | 'y' => {
                let delim = *chars.get(i).ok_or("`s` without a delimiter")?;
                if delim == '\n' || delim == '\\' {
                    return Err("an odd `s` delimiter".into());
                }
                i += 1;
                delimited(&mut i, delim)?;
                // The replacement: may contain newlines escaped by a backslash.
                loop {
                    if i >= chars.len() {
                        return Err("an unterminated replacement".into());
                    }
                    let c = chars[i];
                    if c == '\\' {
                        i += 2;
                        continue;
                    }
                    i += 1;
                    if c == delim {
                        break;
                    }
                }
                if command == 's' {
                    while i < chars.len() {
                        match chars[i] {
                            'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => i += 1,
                            'e' => {
                                effects.executes = true;
                                i += 1;
                            }
                            'w' => {
                                i += 1;
                                skip_blank_spaces(&chars, &mut i);
                                let file = rest_of_line(&mut i);
                                effects.files.push((Access::Write, file));
                            }
                            _ => break,
                        }
                    }
                }
            }
            other => return Err(format!("the command `{other}`")),
        }
        skip_blank_spaces(&chars, &mut i);
        if command != '{' && i < chars.len() && !matches!(chars[i], ';' | '\n' | '}' | '#') {
            return Err(format!("text after a command near `{}`", chars[i]));
        }
    }
    Ok(effects)
}

pub(super) fn skip_blank_spaces(chars: &[char], i: &mut usize) {
    while *i < chars.len() && matches!(chars[*i], ' ' | '\t') {
        *i += 1;
    }
}

pub(super) fn awk(ctx: &Ctx<'_>, verdict: &mut Verdict) {
    if ctx.parsed.has(AWK_PROGRAM_FILES) {
        verdict.opaque("`awk` runs a program file or extension the analysis cannot see");
        return;
    }
    let inline: Vec<Option<Cow<'_, str>>> = ctx.parsed.values(AWK_SOURCE).map(Arg::literal).collect();
    let (programs, skip) = if inline.is_empty() {
        (vec![ctx.operand(0).and_then(Arg::literal)], 1)
    } else {
        (inline, 0)
    };
    let mut dangerous = false;
    for program in &programs {
        match program {
            None => {
                verdict.opaque("`awk` with a program only known when it runs");
                return;
            }
            Some(program) => dangerous |= awk_may_run_or_write(program),
        }
    }
    if dangerous {
        verdict.opaque("the `awk` program may run commands or write files (system, pipes, redirection, getline)");
    }
    for operand in ctx.operands().skip(skip) {
        // `var=value` operands are assignments, not files.
        let text = head(operand);
        if text
            .split_once('=')
            .is_some_and(|(name, _)| crate::syntax::is_identifier(name))
        {
            continue;
        }
        push_role(verdict, operand, Role::Read, false);
    }
}

/// Conservative: any `system`, `|`, `>`, `getline`, `close`, `fflush`, `printf`/`print`
/// followed by redirection, or an `ENVIRON`/`PROCINFO` use counts.
pub(super) fn awk_may_run_or_write(program: &str) -> bool {
    let mut in_string = false;
    let mut in_regex = false;
    let mut escaped = false;
    let mut outside = String::new();
    let mut previous_significant = ' ';
    for c in program.chars() {
        if escaped {
            escaped = false;
            continue;
        }
        if c == '\\' && (in_string || in_regex) {
            escaped = true;
            continue;
        }
        if in_string {
            if c == '"' {
                in_string = false;
            }
            continue;
        }
        if in_regex {
            if c == '/' {
                in_regex = false;
            }
            continue;
        }
        if c == '"' {
            in_string = true;
            continue;
        }
        if c == '/'
            && matches!(
                previous_significant,
                ' ' | '(' | ',' | '{' | ';' | '!' | '~' | '&' | '|' | '\n'
            )
        {
            in_regex = true;
            continue;
        }
        outside.push(c);
        if !c.is_whitespace() {
            previous_significant = c;
        }
    }
    outside.contains('|') || outside.contains('>') || AWK_RISKY_WORDS.iter().any(|word| outside.contains(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sed_scripts() {
        assert!(!sed_effects("s/a/b/g").unwrap().executes);
        assert!(sed_effects("s/a/b/e").unwrap().executes);
        assert!(sed_effects("1e rm x").unwrap().executes);
        assert!(sed_effects("/x/ { e id\n}").unwrap().executes);
        assert_eq!(
            sed_effects("w out.txt").unwrap().files,
            [(Access::Write, "out.txt".to_string())]
        );
        assert_eq!(
            sed_effects("s/a/b/w out").unwrap().files,
            [(Access::Write, "out".to_string())]
        );
        assert_eq!(
            sed_effects("1r secrets/key").unwrap().files,
            [(Access::Read, "secrets/key".to_string())]
        );
        assert!(!sed_effects("s/e/E/; /e/d; y/abc/xyz/").unwrap().executes);
        assert!(!sed_effects("$!N; s/\\n/ /; P; D").unwrap().executes);
    }

    #[test]
    fn awk_programs() {
        assert!(!awk_may_run_or_write("{print $1}"));
        assert!(!awk_may_run_or_write("/x|y/ {print \"a|b\"}"));
        assert!(awk_may_run_or_write("BEGIN{system(\"rm x\")}"));
        assert!(awk_may_run_or_write("{print > \"out\"}"));
        assert!(awk_may_run_or_write("{ \"date\" | getline d }"));
    }
}
