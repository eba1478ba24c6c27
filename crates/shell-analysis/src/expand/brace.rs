//! Brace expansion, bash's algorithm (braces.c of bash 5.2: `brace_expand`,
//! `expand_amble`, `brace_gobbler`, `expand_seqterm`) over a word's tokens, within a
//! budget: the work (tokens looked at and copied) is bounded by [`Budget`], so a word is
//! expanded in time and memory linear in its length, or not at all — past the budget, or
//! where the quoting bash would see cannot be told from the tokens, the word is a hole.
//!
//! The text bash expands still holds its quotes; the tokens hold characters marked as
//! quoted, substitutions as one token each, and [`Tok::Quote`] where an empty pair of
//! quotes stood. What bash decides by looking at a quote character (a `\,` is not a
//! comma to its first scan, a `","` is) cannot always be told apart: then the word is
//! [`Over::Unsure`].

use super::Tok;
use crate::syntax::Part;

/// The most words one word may expand to.
pub(crate) const MAX_WORDS: usize = super::MAX_FIELDS;
/// How deep brace expressions may nest (or follow one another) in one word.
const MAX_DEPTH: usize = 256;

/// Why a word was not expanded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Over {
    /// More work than the budget allows: more than [`MAX_WORDS`] words, or too long a
    /// scan, or too deep.
    Budget,
    /// The expansion depends on quoting the tokens do not keep.
    Unsure,
}

/// The work a word's brace expansion may do.
pub(crate) struct Budget {
    left: usize,
    /// The work done so far.
    pub(crate) spent: usize,
}

impl Budget {
    /// A budget for a word of `len` tokens: a fixed allowance plus a multiple of its
    /// length (a word of many braces may be expanded, a long word once).
    pub(crate) fn for_word(len: usize) -> Budget {
        Budget {
            left: 64 * 1024 + 16 * len,
            spent: 0,
        }
    }

    fn spend(&mut self, units: usize) -> Result<(), Over> {
        if units > self.left {
            self.spent += self.left;
            self.left = 0;
            return Err(Over::Budget);
        }
        self.left -= units;
        self.spent += units;
        Ok(())
    }
}

/// What `brace_gobbler` looks for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Satisfy {
    /// The `{` that may start a brace expression.
    Open,
    /// Its `}`, after a `,` or `..` at its own level.
    Close,
    /// A `,` at the amble's own level.
    Comma,
}

impl Satisfy {
    fn char(self) -> char {
        match self {
            Satisfy::Open => '{',
            Satisfy::Close => '}',
            Satisfy::Comma => ',',
        }
    }
}

fn is_char(tok: Option<&Tok<'_>>, c: char) -> bool {
    matches!(tok, Some(Tok::Char(x, false)) if *x == c)
}

/// `brace_gobbler`: the index of the first token from `start` that satisfies `satisfy`
/// at level 0, quotes and substitutions skipped.
fn gobble(toks: &[Tok<'_>], start: usize, satisfy: Satisfy, budget: &mut Budget) -> Result<Option<usize>, Over> {
    let mut level = 0usize;
    let mut commas = usize::from(satisfy != Satisfy::Close);
    let mut i = start;
    while let Some(tok) = toks.get(i) {
        budget.spend(1)?;
        let Tok::Char(c, false) = tok else {
            i += 1;
            continue;
        };
        let c = *c;
        if c == satisfy.char() && level == 0 && commas > 0 {
            // An open brace at the start (or after a blank) followed by `}` starts
            // nothing: `{}` (and `find -exec … {} +`).
            if satisfy == Satisfy::Open && is_char(toks.get(i + 1), '}') {
                match i.checked_sub(1).map(|prev| &toks[prev]) {
                    None => {
                        i += 1;
                        continue;
                    }
                    // A quoted blank before it: `\ ` counts as a blank to bash, `" "`
                    // does not, and the tokens are the same.
                    Some(Tok::Char(prev, true)) if prev.is_whitespace() => return Err(Over::Unsure),
                    Some(_) => {}
                }
            }
            return Ok(Some(i));
        }
        if c == '{' {
            level += 1;
        } else if c == '}' && level > 0 {
            level -= 1;
        } else if satisfy == Satisfy::Close
            && level == 0
            && (c == ',' || (c == '.' && is_char(toks.get(i + 1), '.') && !is_char(toks.get(i + 2), '}')))
        {
            commas += 1;
        }
        i += 1;
    }
    Ok(None)
}

/// Whether a substitution's own text holds a comma (bash's first scan of the amble looks
/// at the text, quotes and all).
fn holds_comma(tok: &Tok<'_>) -> bool {
    match tok {
        Tok::Exp(
            Part::Param { text, .. }
            | Part::Command { text, .. }
            | Part::Arith { text, .. }
            | Part::Process { text, .. },
        ) => text.contains(','),
        _ => false,
    }
}

/// The words of `toks` after brace expansion, or why there are none.
pub(crate) fn expand<'w>(toks: &[Tok<'w>], budget: &mut Budget) -> Result<Vec<Vec<Tok<'w>>>, Over> {
    brace_expand(toks, budget, 0)
}

/// `brace_expand`: the preamble, the first brace expression's words, then the postamble's
/// expansion, each product in order.
fn brace_expand<'w>(text: &[Tok<'w>], budget: &mut Budget, depth: usize) -> Result<Vec<Vec<Tok<'w>>>, Over> {
    if depth > MAX_DEPTH {
        return Err(Over::Budget);
    }
    // The first `{` that has its `}`.
    let mut i = 0;
    let (open, close) = loop {
        match gobble(text, i, Satisfy::Open, budget)? {
            None => {
                budget.spend(text.len())?;
                return Ok(vec![text.to_vec()]);
            }
            Some(open) => {
                if let Some(close) = gobble(text, open + 1, Satisfy::Close, budget)? {
                    break (open, close);
                }
                i = open + 1;
            }
        }
    };
    let preamble = &text[..open];
    let amble = &text[open + 1..close];
    let postamble = &text[close + 1..];
    // bash's scan for a comma skips backslash escapes only: a comma in quotes counts.
    let unquoted_comma = amble.iter().any(|tok| matches!(tok, Tok::Char(',', false)));
    if !unquoted_comma
        && amble
            .iter()
            .any(|tok| matches!(tok, Tok::Char(',', true)) || holds_comma(tok))
    {
        return Err(Over::Unsure);
    }
    budget.spend(amble.len())?;
    let tack = if unquoted_comma {
        expand_amble(amble, budget, depth + 1)?
    } else {
        match sequence(amble)? {
            Some(words) => words,
            // Not a sequence: the braces stay, the postamble is still expanded.
            None if !postamble.is_empty() => vec![text[open..=close].to_vec()],
            None => {
                budget.spend(text.len())?;
                return Ok(vec![text.to_vec()]);
            }
        }
    };
    let mut result = product(vec![preamble.to_vec()], tack, budget)?;
    if !postamble.is_empty() {
        let tail = brace_expand(postamble, budget, depth + 1)?;
        result = product(result, tail, budget)?;
    }
    Ok(result)
}

/// `expand_amble`: the amble split at its own commas, each part expanded in turn.
fn expand_amble<'w>(text: &[Tok<'w>], budget: &mut Budget, depth: usize) -> Result<Vec<Vec<Tok<'w>>>, Over> {
    let mut result = Vec::new();
    let mut start = 0;
    loop {
        let comma = gobble(text, start, Satisfy::Comma, budget)?;
        let end = comma.unwrap_or(text.len());
        let words = brace_expand(&text[start..end], budget, depth)?;
        if result.len() + words.len() > MAX_WORDS {
            return Err(Over::Budget);
        }
        result.extend(words);
        match comma {
            Some(comma) => start = comma + 1,
            None => return Ok(result),
        }
    }
}

/// `array_concat`: every word of `left` followed by every word of `right`.
fn product<'w>(
    left: Vec<Vec<Tok<'w>>>,
    right: Vec<Vec<Tok<'w>>>,
    budget: &mut Budget,
) -> Result<Vec<Vec<Tok<'w>>>, Over> {
    if left.len().saturating_mul(right.len()) > MAX_WORDS {
        return Err(Over::Budget);
    }
    if matches!(left.as_slice(), [only] if only.is_empty()) {
        return Ok(right);
    }
    if matches!(right.as_slice(), [only] if only.is_empty()) {
        return Ok(left);
    }
    let mut out = Vec::with_capacity(left.len() * right.len());
    for head in &left {
        for tail in &right {
            budget.spend(head.len() + tail.len() + 1)?;
            let mut word = head.clone();
            word.extend_from_slice(tail);
            out.push(word);
        }
    }
    Ok(out)
}

/// `expand_seqterm`: `{x..y[..incr]}` over integers or single letters; `None` when the
/// amble is not one (or bash would not make it: an overflow).
fn sequence<'w>(amble: &[Tok<'w>]) -> Result<Option<Vec<Vec<Tok<'w>>>>, Over> {
    let mut text = String::new();
    for tok in amble {
        match tok {
            Tok::Char(c, false) => text.push(*c),
            // A quote, an escape or a substitution makes either end no number or letter.
            _ => return Ok(None),
        }
    }
    let Some((words, quoted)) = sequence_words(&text)? else {
        return Ok(None);
    };
    Ok(Some(
        words
            .into_iter()
            .map(|word| word.chars().map(|c| Tok::Char(c, quoted)).collect())
            .collect(),
    ))
}

/// The words of a sequence expression, and whether they are quoted (letters are, so that
/// no word of a sequence is taken for a pattern); `None` when the text is not one.
pub(crate) fn sequence_words(text: &str) -> Result<Option<(Vec<String>, bool)>, Over> {
    let Some((lhs, rest)) = text.split_once("..") else {
        return Ok(None);
    };
    if lhs.is_empty() || rest.is_empty() {
        return Ok(None);
    }
    let (rhs, incr) = match rest.split_once("..") {
        Some((rhs, incr)) if !incr.is_empty() => (rhs, Some(incr)),
        Some(_) => return Ok(None),
        None => (rest, None),
    };
    let incr = match incr {
        Some(incr) => match incr.parse::<i64>() {
            Ok(incr) => incr,
            Err(_) => return Ok(None),
        },
        None => 1,
    };
    let letter = |s: &str| {
        let mut chars = s.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) if c.is_ascii_alphabetic() => Some(c),
            _ => None,
        }
    };
    if let (Some(a), Some(b)) = (letter(lhs), letter(rhs)) {
        let (a, b) = (i64::from(u32::from(a)), i64::from(u32::from(b)));
        let mut words = Vec::new();
        for n in steps(a, b, incr)? {
            let c = u32::try_from(n).ok().and_then(char::from_u32).ok_or(Over::Unsure)?;
            // Between `Z` and `a` come `[`, `\`, `]`, `^`, `_` and a backquote, which bash
            // puts in the word as they are; the analysis does not follow that.
            if !c.is_ascii_alphabetic() {
                return Err(Over::Unsure);
            }
            words.push(c.to_string());
        }
        return Ok(Some((words, true)));
    }
    let integer = |s: &str| {
        let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
        (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<i64>().ok())
            .flatten()
    };
    let (Some(a), Some(b)) = (integer(lhs), integer(rhs)) else {
        return Ok(None);
    };
    // Zero-padded when either end is written with a leading zero, to the longer end.
    let padded = |s: &str| {
        let digits = s.strip_prefix('-').unwrap_or(s);
        digits.len() > 1 && digits.starts_with('0')
    };
    let width = if padded(lhs) || padded(rhs) {
        lhs.len().max(rhs.len())
    } else {
        0
    };
    let words = steps(a, b, incr)?
        .map(|n| {
            if width == 0 {
                n.to_string()
            } else if n < 0 {
                format!("-{:0>w$}", n.unsigned_abs(), w = width.saturating_sub(1))
            } else {
                format!("{n:0>width$}")
            }
        })
        .collect();
    Ok(Some((words, false)))
}

/// The values from `a` to `b` by `incr` (its sign follows the direction; 0 is 1), at most
/// [`MAX_WORDS`] of them.
fn steps(a: i64, b: i64, incr: i64) -> Result<impl Iterator<Item = i64>, Over> {
    let step = incr.unsigned_abs().max(1);
    let count = a.abs_diff(b) / step + 1;
    if count > MAX_WORDS as u64 {
        return Err(Over::Budget);
    }
    let up = a <= b;
    Ok((0..count).map(move |k| {
        let offset = i128::from(k) * i128::from(step);
        let n = if up {
            i128::from(a) + offset
        } else {
            i128::from(a) - offset
        };
        i64::try_from(n).unwrap_or(b)
    }))
}
