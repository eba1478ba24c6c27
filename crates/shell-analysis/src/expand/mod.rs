//! Word expansion as bash does it, with holes where a value is only known at run time.
//!
//! A word becomes *fields*: brace expansion first (on unquoted text), then tilde
//! expansion, then parameters, substitutions and arithmetic (holes, unless their value is
//! known: `$HOME`, `~`, `$PWD`, a `for` variable over known words), then pathname patterns
//! (kept as pattern segments; the walker expands them against the filesystem), then quote
//! removal. A word made only of unquoted expansions may vanish; one with an unquoted
//! expansion may split into several fields.

use std::borrow::Cow;
use std::collections::HashMap;

use toolgate_core::{HoleClass, Resource};

use crate::syntax::{Part, Stop, Word};

mod brace;

/// The most fields one word may expand to: past it, the word is a hole.
pub(crate) const MAX_FIELDS: usize = 1024;

/// What a hole in a path may be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathHole {
    /// One path component (a glob match): no `/`, never `.` or `..`.
    Name,
    /// A path below the text before it (a file `find` found): never leaves it.
    Below,
    /// Anything.
    Any,
}

/// One piece of a field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Seg {
    /// Known text.
    Lit(String),
    /// An active pathname pattern character: `*`, `?` or a bracket expression.
    Glob(Glob),
    /// A value known only at run time (or known to the analysis: `value`).
    Hole {
        /// How it is shown.
        display: String,
        /// What it may be.
        class: PathHole,
        /// Its value when the analysis knows it (`$HOME`).
        value: Option<String>,
    },
}

/// An active pattern token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Glob {
    /// `*`
    Star,
    /// `?`
    One,
    /// `[…]`
    Class {
        /// The source text.
        text: String,
        /// `[!…]` / `[^…]`
        negated: bool,
        /// Members: single characters, ranges, named classes.
        items: Vec<ClassItem>,
    },
}

/// A member of a bracket expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ClassItem {
    /// One character.
    Char(char),
    /// `a-z`
    Range(char, char),
    /// `[:alpha:]` and friends.
    Named(String),
}

impl Glob {
    fn text(&self) -> &str {
        match self {
            Glob::Star => "*",
            Glob::One => "?",
            Glob::Class { text, .. } => text,
        }
    }

    /// Whether the token matches the character `c` (a single-character token).
    pub(crate) fn matches_char(&self, c: char) -> bool {
        match self {
            Glob::Star | Glob::One => true,
            Glob::Class { negated, items, .. } => {
                let hit = items.iter().any(|item| match item {
                    ClassItem::Char(x) => *x == c,
                    ClassItem::Range(a, b) => *a <= c && c <= *b,
                    ClassItem::Named(name) => named_class(name, c),
                });
                hit != *negated
            }
        }
    }
}

fn named_class(name: &str, c: char) -> bool {
    match name {
        "alpha" => c.is_alphabetic(),
        "digit" => c.is_ascii_digit(),
        "alnum" => c.is_alphanumeric(),
        "upper" => c.is_uppercase(),
        "lower" => c.is_lowercase(),
        "space" => c.is_whitespace(),
        "blank" => c == ' ' || c == '\t',
        "punct" => c.is_ascii_punctuation(),
        "xdigit" => c.is_ascii_hexdigit(),
        "cntrl" => c.is_control(),
        "print" => !c.is_control(),
        "graph" => !c.is_control() && !c.is_whitespace(),
        "word" => c.is_alphanumeric() || c == '_',
        // Unknown names match nothing in bash; matching everything is the safe side here.
        _ => true,
    }
}

/// One field of an expanded word.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Field {
    /// The pieces, in order.
    pub(crate) segs: Vec<Seg>,
}

impl Field {
    /// A field of known text.
    pub(crate) fn text(text: impl Into<String>) -> Field {
        Field {
            segs: vec![Seg::Lit(text.into())],
        }
    }

    /// A field about which nothing is known.
    pub(crate) fn unknown(display: impl Into<String>) -> Field {
        Field {
            segs: vec![Seg::Hole {
                display: display.into(),
                class: PathHole::Any,
                value: None,
            }],
        }
    }

    fn push_lit(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.segs.last_mut() {
            Some(Seg::Lit(last)) => last.push_str(text),
            _ => self.segs.push(Seg::Lit(text.to_string())),
        }
    }

    /// The value when fully known (known holes count, patterns do not).
    pub(crate) fn value(&self) -> Option<Cow<'_, str>> {
        // Most fields are one piece: borrowed, not copied.
        match self.segs.as_slice() {
            [Seg::Lit(text)] | [Seg::Hole { value: Some(text), .. }] => return Some(Cow::Borrowed(text)),
            _ => {}
        }
        let mut out = String::new();
        for seg in &self.segs {
            match seg {
                Seg::Lit(text) => out.push_str(text),
                Seg::Hole { value: Some(value), .. } => out.push_str(value),
                _ => return None,
            }
        }
        Some(Cow::Owned(out))
    }

    /// The value when it is literal text only (no hole at all, not even a known one).
    pub(crate) fn literal(&self) -> Option<Cow<'_, str>> {
        if let [Seg::Lit(text)] = self.segs.as_slice() {
            return Some(Cow::Borrowed(text));
        }
        let mut out = String::new();
        for seg in &self.segs {
            match seg {
                Seg::Lit(text) => out.push_str(text),
                _ => return None,
            }
        }
        Some(Cow::Owned(out))
    }

    /// How the field is shown.
    pub(crate) fn display(&self) -> String {
        let mut out = String::new();
        self.push_display(&mut out);
        out
    }

    /// How long [`Field::display`] is.
    pub(crate) fn display_len(&self) -> usize {
        self.segs
            .iter()
            .map(|seg| match seg {
                Seg::Lit(text) => text.len(),
                Seg::Glob(glob) => glob.text().len(),
                Seg::Hole { display, .. } => display.len(),
            })
            .sum()
    }

    /// Appends how the field is shown (what [`Field::push_resource`] shows).
    pub(crate) fn push_display(&self, out: &mut String) {
        for seg in &self.segs {
            match seg {
                Seg::Lit(text) => out.push_str(text),
                Seg::Glob(glob) => out.push_str(glob.text()),
                Seg::Hole { display, .. } => out.push_str(display),
            }
        }
    }

    /// True when the field has an active pattern.
    pub(crate) fn is_pattern(&self) -> bool {
        self.segs.iter().any(|seg| matches!(seg, Seg::Glob(_)))
    }

    /// The field as text with holes, the way a rule sees one command word: every unknown
    /// part a hole of any value (a pattern may expand to several words).
    pub(crate) fn push_resource(&self, out: &mut Resource) {
        for seg in &self.segs {
            match seg {
                Seg::Lit(text) => out.push_text(text),
                Seg::Glob(glob) => out.push_hole(glob.text(), HoleClass::Any),
                Seg::Hole { display, .. } => out.push_hole(display.clone(), HoleClass::Any),
            }
        }
    }

    /// The field starts with text (`prefix` is known text at its start).
    pub(crate) fn starts_with(&self, prefix: &str) -> bool {
        match self.segs.first() {
            Some(Seg::Lit(text)) => text.starts_with(prefix),
            _ => prefix.is_empty(),
        }
    }
}

/// An expanded word.
#[derive(Clone, Debug, Default)]
pub(crate) struct Expanded {
    /// The fields (after brace expansion; patterns not yet matched).
    pub(crate) fields: Vec<Field>,
    /// The word may expand to no field at all (only unquoted expansions, or `"$@"`).
    pub(crate) vanish: bool,
    /// The word may split into more fields than shown (an unquoted expansion).
    pub(crate) split: bool,
    /// The work its brace expansion did (tokens looked at and copied), which the walker
    /// counts against the line's budget.
    pub(crate) work: usize,
}

/// What the expansion may assume.
pub(crate) struct Ctx<'a> {
    /// `$HOME` and `~`, when the analysis knows them and the line never changes them.
    pub(crate) home: Option<&'a str>,
    /// `$PWD` and `~+`, when the working directory is known and unchanged by the line's text:
    /// the process's working directory and the directory relative to it (made absolute only
    /// when a word asks, which few do).
    pub(crate) pwd: Option<(&'a std::path::Path, &'a str)>,
    /// Variables bound to a known field (a `for` variable over known words).
    pub(crate) bindings: &'a HashMap<String, Field>,
    /// Brace expansion, tilde expansion after `=`/`:` of assignment-like words, patterns.
    pub(crate) mode: Mode,
}

impl Ctx<'_> {
    /// `$PWD` when it is known.
    fn pwd(&self) -> Option<String> {
        self.pwd.map(|(workdir, dir)| crate::path::absolute(workdir, dir))
    }
}

/// Which expansions apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A command word, a `for` word, an array element, a redirection target.
    Words,
    /// An assignment value: tilde at the start and after `:`; no braces, patterns or splitting.
    Assignment,
    /// A here-string, a `[[ ]]` operand, a case word or pattern: tilde at the start only.
    Value,
    /// A here-document body: nothing but parameters and substitutions.
    Body,
}

/// A word as expansion reads it: characters (with whether they are quoted), each
/// substitution as one, and where a pair of quotes held nothing.
#[derive(Clone, Debug)]
enum Tok<'w> {
    Char(char, bool),
    Exp(&'w Part),
    /// Empty quotes (`''`, `""`): no character, but what is around is not adjacent.
    Quote,
}

fn tokens(word: &Word) -> Vec<Tok<'_>> {
    let mut out = Vec::new();
    for part in &word.parts {
        match part {
            Part::Lit { text, quoted: true } if text.is_empty() => out.push(Tok::Quote),
            Part::Lit { text, quoted } => out.extend(text.chars().map(|c| Tok::Char(c, *quoted))),
            Part::Array(_) => {}
            other => out.push(Tok::Exp(other)),
        }
    }
    out
}

/// How a word of tokens is shown when it stays a hole: its text, cut short.
fn shown(toks: &[Tok<'_>]) -> String {
    const MAX_SHOWN: usize = 80;
    let mut out = String::new();
    for tok in toks {
        match tok {
            Tok::Char(c, _) => out.push(*c),
            Tok::Exp(
                Part::Param { text, .. }
                | Part::Command { text, .. }
                | Part::Arith { text, .. }
                | Part::Process { text, .. },
            ) => out.push_str(text),
            Tok::Exp(_) | Tok::Quote => {}
        }
        if out.len() > MAX_SHOWN {
            let cut = (0..=MAX_SHOWN).rev().find(|at| out.is_char_boundary(*at)).unwrap_or(0);
            out.truncate(cut);
            out.push('…');
            break;
        }
    }
    out
}

/// The text of a word that no expansion changes: literal parts only, not empty, and no
/// unquoted character that starts a brace, tilde or pattern expansion. Most words of a
/// line are like this; they skip the character-by-character walk below (which would give
/// the same one field).
pub(crate) fn plain_text(word: &Word) -> Option<String> {
    let active = |text: &str| text.bytes().any(|b| matches!(b, b'{' | b'~' | b'*' | b'?' | b'['));
    // One literal part (most words): its text as it is.
    if let [Part::Lit { text, quoted }] = word.parts.as_slice() {
        return (!text.is_empty() && (*quoted || !active(text))).then(|| text.clone());
    }
    let size = word
        .parts
        .iter()
        .map(|part| match part {
            Part::Lit { text, .. } => text.len(),
            _ => 0,
        })
        .sum();
    let mut out = String::with_capacity(size);
    for part in &word.parts {
        match part {
            Part::Lit { text, quoted } => {
                if !quoted && active(text) {
                    return None;
                }
                out.push_str(text);
            }
            _ => return None,
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Expands `word`.
pub(crate) fn expand(word: &Word, ctx: &Ctx<'_>) -> Result<Expanded, Stop> {
    if let Some(text) = plain_text(word) {
        return Ok(Expanded {
            fields: vec![Field::text(text)],
            vanish: false,
            split: false,
            work: 0,
        });
    }
    let toks = tokens(word);
    let mut vanish = !toks.is_empty();
    let mut split = false;
    let mut has_quoted = false;
    for tok in &toks {
        match tok {
            Tok::Char(_, quoted) => {
                vanish = false;
                has_quoted |= *quoted;
            }
            Tok::Exp(Part::Param { name, quoted, text, .. }) => {
                let all = name == "@" || text.contains("[@]");
                if *quoted && !all {
                    vanish = false;
                }
                let plain_binding = ctx.bindings.get(name).is_some_and(bound_is_plain);
                let known = match name.as_str() {
                    "HOME" => ctx.home.map(str::to_string),
                    "PWD" => ctx.pwd(),
                    _ => None,
                }
                .filter(|_| text == &format!("${name}") || text == &format!("${{{name}}}"))
                .is_some_and(|value| !value.is_empty() && !value.contains([' ', '\t', '\n', '*', '?', '[']));
                if (!*quoted || all) && !plain_binding && !known {
                    split = true;
                }
                if known {
                    vanish = false;
                }
                if ctx
                    .bindings
                    .get(name)
                    .is_some_and(|bound| bound.value().is_some_and(|v| !v.is_empty()))
                {
                    vanish = false;
                }
            }
            Tok::Exp(Part::Command { quoted, .. } | Part::Arith { quoted, .. }) => {
                if *quoted {
                    vanish = false;
                } else {
                    split = true;
                }
            }
            Tok::Exp(_) => vanish = false,
            Tok::Quote => {
                vanish = false;
                has_quoted = true;
            }
        }
    }
    if has_quoted {
        vanish = false;
    }
    if matches!(ctx.mode, Mode::Assignment | Mode::Value | Mode::Body) {
        vanish = false;
        split = false;
    }
    let mut work = 0;
    let sequences = if ctx.mode == Mode::Words && toks.iter().any(|tok| matches!(tok, Tok::Char('{', false))) {
        let mut budget = brace::Budget::for_word(toks.len());
        let expanded = brace::expand(&toks, &mut budget);
        work = budget.spent;
        match expanded {
            Ok(words) => words,
            // Too many words, too much work, or quoting the tokens do not keep: the word
            // stands for any words at all.
            Err(_) => {
                return Ok(Expanded {
                    fields: vec![Field::unknown(shown(&toks))],
                    vanish: true,
                    split: true,
                    work,
                });
            }
        }
    } else {
        vec![toks]
    };
    let mut fields = Vec::new();
    for seq in sequences {
        // An unquoted empty result of brace expansion is no word at all.
        if seq.is_empty() {
            continue;
        }
        fields.push(field(&seq, ctx));
    }
    if fields.is_empty() && ctx.mode == Mode::Words {
        vanish = true;
    }
    Ok(Expanded {
        fields,
        vanish,
        split,
        work,
    })
}

fn field(seq: &[Tok<'_>], ctx: &Ctx<'_>) -> Field {
    let mut out = Field::default();
    let assignment_like = ctx.mode == Mode::Assignment || (ctx.mode == Mode::Words && looks_like_assignment(seq));
    let mut i = 0;
    let mut at_tilde_point = ctx.mode != Mode::Body;
    while i < seq.len() {
        if at_tilde_point && matches!(seq[i], Tok::Char('~', false)) {
            // The tilde prefix: unquoted characters up to `/` (or `:` in assignments).
            let mut j = i + 1;
            let mut prefix = String::new();
            let mut plain = true;
            while j < seq.len() {
                match &seq[j] {
                    Tok::Char('/', _) => break,
                    Tok::Char(':', false) if assignment_like => break,
                    Tok::Char(c, false) => prefix.push(*c),
                    _ => {
                        plain = false;
                        break;
                    }
                }
                j += 1;
            }
            if plain {
                let value = match prefix.as_str() {
                    "" => ctx.home.map(str::to_string),
                    "+" => ctx.pwd(),
                    _ => None,
                };
                out.segs.push(Seg::Hole {
                    display: format!("~{prefix}"),
                    class: PathHole::Any,
                    value,
                });
                i = j;
                at_tilde_point = false;
                continue;
            }
        }
        at_tilde_point = false;
        match &seq[i] {
            Tok::Char(c, quoted) => {
                if !quoted && ctx.mode == Mode::Words {
                    match c {
                        '*' => {
                            out.segs.push(Seg::Glob(Glob::Star));
                            i += 1;
                            continue;
                        }
                        '?' => {
                            out.segs.push(Seg::Glob(Glob::One));
                            i += 1;
                            continue;
                        }
                        '[' => {
                            if let Some((glob, next)) = bracket(seq, i) {
                                out.segs.push(Seg::Glob(glob));
                                i = next;
                                continue;
                            }
                        }
                        _ => {}
                    }
                }
                let mut buffer = [0u8; 4];
                out.push_lit(c.encode_utf8(&mut buffer));
                if assignment_like && !quoted && (*c == ':' || (*c == '=' && first_equals(seq, i))) {
                    at_tilde_point = true;
                }
            }
            Tok::Exp(part) => expansion(&mut out, part, ctx),
            Tok::Quote => {}
        }
        i += 1;
    }
    out
}

/// Whether position `i` holds the first `=` of the sequence.
fn first_equals(seq: &[Tok<'_>], i: usize) -> bool {
    !seq[..i].iter().any(|tok| matches!(tok, Tok::Char('=', _)))
}

/// `NAME=…` with the name and `=` unquoted: bash expands `~` after `=` and `:` there.
fn looks_like_assignment(seq: &[Tok<'_>]) -> bool {
    let mut name = 0;
    for tok in seq {
        match tok {
            Tok::Char('=', false) => return name > 0,
            Tok::Char(c, false) if c.is_ascii_alphanumeric() || *c == '_' => {
                if name == 0 && c.is_ascii_digit() {
                    return false;
                }
                name += 1;
            }
            _ => return false,
        }
    }
    false
}

/// Whether an unquoted use of a variable bound to `field` is one word, unchanged.
fn bound_is_plain(field: &Field) -> bool {
    field
        .literal()
        .is_some_and(|value| !value.is_empty() && !value.contains([' ', '\t', '\n', '*', '?', '[']))
}

/// The pieces an expansion contributes to a field.
fn expansion(out: &mut Field, part: &Part, ctx: &Ctx<'_>) {
    let seg = match part {
        Part::Param {
            text,
            name,
            inner,
            quoted,
            ..
        } => {
            let simple = inner.is_empty() && (text == &format!("${name}") || text == &format!("${{{name}}}"));
            if simple && let Some(bound) = ctx.bindings.get(name) {
                if *quoted || bound_is_plain(bound) {
                    // A variable over known words: its value, holes and all.
                    for seg in &bound.segs {
                        match seg {
                            Seg::Lit(text) => out.push_lit(text),
                            other => out.segs.push(other.clone()),
                        }
                    }
                    return;
                }
                Seg::Hole {
                    display: text.clone(),
                    class: PathHole::Any,
                    value: None,
                }
            } else {
                let value = if simple {
                    match name.as_str() {
                        "HOME" => ctx.home.map(str::to_string),
                        "PWD" => ctx.pwd(),
                        _ => None,
                    }
                } else {
                    None
                };
                Seg::Hole {
                    display: text.clone(),
                    class: PathHole::Any,
                    value,
                }
            }
        }
        Part::Command { text, .. } | Part::Arith { text, .. } => Seg::Hole {
            display: text.clone(),
            class: PathHole::Any,
            value: None,
        },
        Part::Process { text, .. } => Seg::Hole {
            display: text.clone(),
            class: PathHole::Any,
            value: Some("/dev/fd/63".to_string()),
        },
        Part::Lit { text, .. } => Seg::Lit(text.clone()),
        Part::Array(_) => return,
    };
    out.segs.push(seg);
}

/// A bracket expression starting at `seq[i] == '['`, if it is one (else `[` is literal).
fn bracket(seq: &[Tok<'_>], i: usize) -> Option<(Glob, usize)> {
    let mut j = i + 1;
    let mut text = String::from("[");
    let mut negated = false;
    if let Some(Tok::Char(c @ ('!' | '^'), false)) = seq.get(j) {
        negated = true;
        text.push(*c);
        j += 1;
    }
    let mut items = Vec::new();
    let mut first = true;
    loop {
        let tok = seq.get(j)?;
        let c = match tok {
            Tok::Char(c, _) => *c,
            // An expansion inside a bracket: any character the analysis cannot name.
            Tok::Exp(_) => return None,
            // Empty quotes hold no character.
            Tok::Quote => {
                j += 1;
                continue;
            }
        };
        if c == ']' && !first {
            text.push(']');
            return Some((Glob::Class { text, negated, items }, j + 1));
        }
        first = false;
        if c == '['
            && let Some(Tok::Char(':', false)) = seq.get(j + 1)
        {
            let mut name = String::new();
            let mut k = j + 2;
            while let Some(Tok::Char(x, _)) = seq.get(k) {
                if *x == ':' {
                    break;
                }
                name.push(*x);
                k += 1;
            }
            if let (Some(Tok::Char(':', _)), Some(Tok::Char(']', _))) = (seq.get(k), seq.get(k + 1)) {
                text.push_str(&format!("[:{name}:]"));
                items.push(ClassItem::Named(name));
                j = k + 2;
                continue;
            }
        }
        text.push(c);
        if let (Some(Tok::Char('-', _)), Some(Tok::Char(end, _))) = (seq.get(j + 1), seq.get(j + 2))
            && *end != ']'
        {
            text.push('-');
            text.push(*end);
            items.push(ClassItem::Range(c, *end));
            j += 3;
            continue;
        }
        items.push(ClassItem::Char(c));
        j += 1;
    }
}

// --- pathname expansion -------------------------------------------------------------------

/// Whether a component pattern matches `name` (bash: a leading `.` must be matched by a
/// literal `.`; `.` and `..` never match).
pub(crate) fn component_matches(pattern: &[Seg], name: &str) -> bool {
    if name == "." || name == ".." {
        return false;
    }
    // The usual pattern, known text around one `*` (`*.rs`, `test_*`): its prefix and
    // suffix, not overlapping, are what the general matching below would find.
    if let Some((prefix, suffix)) = one_star(pattern) {
        if name.starts_with('.') && !prefix.starts_with('.') {
            return false;
        }
        return name.len() >= prefix.len() + suffix.len() && name.starts_with(prefix) && name.ends_with(suffix);
    }
    matches_in_general(pattern, name)
}

/// [`component_matches`] for any pattern.
fn matches_in_general(pattern: &[Seg], name: &str) -> bool {
    if name == "." || name == ".." {
        return false;
    }
    let mut kinds: Vec<Result<char, &Glob>> = Vec::new();
    for seg in pattern {
        match seg {
            Seg::Lit(text) => kinds.extend(text.chars().map(Ok)),
            Seg::Glob(glob) => kinds.push(Err(glob)),
            Seg::Hole { value: Some(value), .. } => kinds.extend(value.chars().map(Ok)),
            Seg::Hole { .. } => return false,
        }
    }
    let chars: Vec<char> = name.chars().collect();
    if chars.first() == Some(&'.') && !matches!(kinds.first(), Some(Ok('.'))) {
        return false;
    }
    // Dynamic programming over (pattern position, name position).
    let m = chars.len();
    let mut reach = vec![false; m + 1];
    reach[0] = true;
    // Two rows, swapped after each pattern position.
    let mut next = vec![false; m + 1];
    for kind in &kinds {
        next.fill(false);
        match kind {
            Err(Glob::Star) => {
                let mut on = false;
                for j in 0..=m {
                    on |= reach[j];
                    next[j] = on;
                }
            }
            Err(glob) => {
                for j in 0..m {
                    if reach[j] && glob.matches_char(chars[j]) {
                        next[j + 1] = true;
                    }
                }
            }
            Ok(c) => {
                for j in 0..m {
                    if reach[j] && chars[j] == *c {
                        next[j + 1] = true;
                    }
                }
            }
        }
        std::mem::swap(&mut reach, &mut next);
    }
    reach[m]
}

/// The text before and after the only `*` of a pattern of known text and one `*`.
fn one_star(pattern: &[Seg]) -> Option<(&str, &str)> {
    match pattern {
        [Seg::Glob(Glob::Star)] => Some(("", "")),
        [Seg::Lit(prefix), Seg::Glob(Glob::Star)] => Some((prefix, "")),
        [Seg::Glob(Glob::Star), Seg::Lit(suffix)] => Some(("", suffix)),
        [Seg::Lit(prefix), Seg::Glob(Glob::Star), Seg::Lit(suffix)] => Some((prefix, suffix)),
        _ => None,
    }
}

/// Splits a field into path components at literal `/`.
pub(crate) fn components(field: &Field) -> Vec<Vec<Seg>> {
    let mut out: Vec<Vec<Seg>> = vec![Vec::new()];
    for seg in &field.segs {
        match seg {
            Seg::Lit(text) => {
                let mut pieces = text.split('/');
                if let Some(first) = pieces.next()
                    && !first.is_empty()
                    && let Some(last) = out.last_mut()
                {
                    last.push(Seg::Lit(first.to_string()));
                }
                for piece in pieces {
                    out.push(Vec::new());
                    if !piece.is_empty()
                        && let Some(last) = out.last_mut()
                    {
                        last.push(Seg::Lit(piece.to_string()));
                    }
                }
            }
            other => {
                if let Some(last) = out.last_mut() {
                    last.push(other.clone());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::{Command, parse};

    fn words(line: &str) -> Vec<String> {
        let list = parse(line).unwrap();
        let Command::Simple(simple) = &list.items[0].and_or.first.commands[0] else {
            panic!("not simple")
        };
        let bindings = HashMap::new();
        let ctx = Ctx {
            home: Some("/home/u"),
            pwd: Some((std::path::Path::new("/w"), "")),
            bindings: &bindings,
            mode: Mode::Words,
        };
        let mut out = Vec::new();
        for word in &simple.words[1..] {
            for field in expand(word, &ctx).unwrap().fields {
                out.push(field.value().map_or_else(|| field.display(), Cow::into_owned));
            }
        }
        out
    }

    #[test]
    fn braces_as_bash_expands_them() {
        // Each expectation was taken from bash 5.2 (`printf '<%s>' …`).
        assert_eq!(words("echo {a,b}{c,d}"), ["ac", "ad", "bc", "bd"]);
        assert_eq!(words("echo {a} {} {,x}"), ["{a}", "{}", "x"]);
        assert_eq!(
            words("echo x{a..c} {1..3..2} {01..03}"),
            ["xa", "xb", "xc", "1", "3", "01", "02", "03"]
        );
        assert_eq!(
            words("echo {a,{b,c}} \"{a,b}\" \\{a,b} {a\\,b,c} {a..}"),
            ["a", "b", "c", "{a,b}", "{a,b}", "a,b", "c", "{a..}"]
        );
        assert_eq!(words("echo ${x}{a,b}"), ["${x}a", "${x}b"]);
        assert_eq!(
            words("echo {1..{2,3}} x{},a} {a.''.b} {{a,b}"),
            ["1..2", "1..3", "x}", "xa", "{a..b}", "{a", "{b"]
        );
        assert_eq!(
            words("echo {a}{b,c} {a,b{c} {a,{b}} {{a}} {a}b,c} {a..}"),
            ["{a}b", "{a}c", "{a,b{c}", "a", "{b}", "{{a}}", "a}b", "c", "{a..}"]
        );
        assert_eq!(
            words("echo {-05..3..4} {05..-1..3} {+1..3} {1..3..0} {z..x} {3..1..-1}"),
            [
                "-05", "-01", "003", "05", "02", "-1", "1", "2", "3", "1", "2", "3", "z", "y", "x", "3", "2", "1"
            ]
        );
        assert_eq!(
            words("echo {a,b}{} \"\"{},a} {1..2}{,x} {,} a{,}b {a,b\\}} {a,b}\\}"),
            [
                "a{}", "b{}", "}", "a", "1", "1x", "2", "2x", "ab", "ab", "a", "b}", "a}", "b}"
            ]
        );
    }

    /// Where the result depends on quoting the tokens do not keep, or on characters
    /// bash puts in words as they are, the word is a hole (shown as itself).
    #[test]
    fn braces_the_analysis_does_not_follow_are_holes() {
        for line in [
            "echo {a..b\",\"}",
            "echo {Z..a}",
            "echo x\\ {},a}",
            "echo {a..b$(echo ,)}",
        ] {
            let list = parse(line).unwrap();
            let Command::Simple(simple) = &list.items[0].and_or.first.commands[0] else {
                panic!("not simple")
            };
            let bindings = HashMap::new();
            let ctx = Ctx {
                home: None,
                pwd: None,
                bindings: &bindings,
                mode: Mode::Words,
            };
            let expanded = expand(&simple.words[1], &ctx).unwrap();
            assert!(expanded.split && expanded.vanish, "{line}");
            assert_eq!(expanded.fields.len(), 1, "{line}");
            assert!(expanded.fields[0].value().is_none(), "{line}");
        }
    }

    /// Brace expansion is bounded: a word that would make too many words, or take too
    /// much work, is a hole, after work linear in its length.
    #[test]
    fn pathological_braces_are_bounded() {
        let bindings = HashMap::new();
        let ctx = Ctx {
            home: None,
            pwd: None,
            bindings: &bindings,
            mode: Mode::Words,
        };
        let cases = [
            "{1..1000000}".to_string(),
            "{a,b}".repeat(30),
            "{".repeat(100_000) + &"}".repeat(100_000),
            "{".repeat(200_000),
            "{a}".repeat(100_000),
            "{1..1}".repeat(50_000),
            format!("{}x{}", "{a,".repeat(20_000), "}".repeat(20_000)),
            format!("{{a,b}}{}", "x".repeat(500_000)),
            "{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}{s,t}".to_string(),
        ];
        for word in cases {
            let line = format!("echo {word}");
            let list = parse(&line).unwrap();
            let Command::Simple(simple) = &list.items[0].and_or.first.commands[0] else {
                panic!("not simple")
            };
            let len = word.chars().count();
            let expanded = expand(&simple.words[1], &ctx).unwrap();
            // Every word's work is within its budget, so linear in its length.
            assert!(
                expanded.work <= 64 * 1024 + 16 * len,
                "{}…: {} units",
                &word[..20.min(word.len())],
                expanded.work
            );
            assert!(expanded.fields.len() <= MAX_FIELDS, "{}…", &word[..20.min(word.len())]);
        }
    }

    #[test]
    fn tilde_where_bash_expands_it() {
        assert_eq!(
            words("echo ~ ~/x a=~/x:~/y --o=~/x b:~/x \"~\" ~+/q"),
            [
                "/home/u",
                "/home/u/x",
                "a=/home/u/x:/home/u/y",
                "--o=~/x",
                "b:~/x",
                "~",
                "/w/q"
            ]
        );
    }

    #[test]
    fn components_and_matching() {
        let field = Field {
            segs: vec![Seg::Lit("src/".into()), Seg::Glob(Glob::Star), Seg::Lit(".rs".into())],
        };
        let parts = components(&field);
        assert_eq!(parts.len(), 2);
        assert!(component_matches(&parts[1], "lib.rs"));
        assert!(!component_matches(&parts[1], ".hidden.rs"));
        assert!(!component_matches(&parts[1], "lib.rsx"));
    }

    #[test]
    fn one_star_patterns_match_as_the_general_matching_does() {
        let patterns: Vec<Vec<Seg>> = vec![
            vec![Seg::Glob(Glob::Star)],
            vec![Seg::Lit("a".into()), Seg::Glob(Glob::Star)],
            vec![Seg::Glob(Glob::Star), Seg::Lit(".rs".into())],
            vec![Seg::Lit(".".into()), Seg::Glob(Glob::Star)],
            vec![Seg::Lit("ab".into()), Seg::Glob(Glob::Star), Seg::Lit("ba".into())],
            vec![Seg::Lit("é".into()), Seg::Glob(Glob::Star), Seg::Lit("ü".into())],
        ];
        let names = [
            "", ".", "..", "a", "ab", "aba", "abba", "ababa", "lib.rs", ".rs", ".hidden", "a.rs", "éü", "éxü", "ü", "é",
        ];
        for pattern in &patterns {
            assert!(one_star(pattern).is_some());
            for name in names {
                assert_eq!(
                    component_matches(pattern, name),
                    matches_in_general(pattern, name),
                    "{pattern:?} against {name:?}"
                );
            }
        }
    }
}
