//! A parser for the part of bash the analysis understands, and nothing else.
//!
//! It reads the line the way bash's own reader does: `\`-newline is removed wherever bash
//! removes it (everywhere except inside single quotes, `$'…'`, comments and the bodies of
//! quoted here-documents, and never right after an escaping backslash), blanks are only
//! space and tab (a CR is part of a word), here-document bodies are read after the newline
//! that ends their line and end at a line that is exactly the delimiter. Every byte of the
//! input is consumed by a construct of the grammar below; anything else — a construct the
//! analysis does not model, a syntax error, nesting deeper than [`MAX_DEPTH`] — stops the
//! parse with the reason, and the caller treats the whole line as opaque.
//!
//! The grammar: lists (`;`, `&`, newline), `&&`/`||`, pipelines (`|`, `|&`, `!`, `time
//! [-p]`), simple commands (assignments, words, redirections), `{ }`, `( )`, `if`, `while`,
//! `until`, `for NAME [in …]`, `case`, `[[ ]]` (without arithmetic on non-literals or
//! `-v`), function definitions, `coproc`; words with quotes, escapes, `$'…'`, parameters
//! (`$x`, `${x…}` with the operators whose words are data), `$( )`, backquotes,
//! `$(( ))` over constants, `<( )`/`>( )`; array assignments without subscripts.

use heredoc::PendingDoc;

mod ast;
mod heredoc;
mod parser;
mod word;

pub(crate) use ast::{
    AndOr, Assign, AssignValue, Command, Compound, List, Part, Pipeline, RedirOp, Redirect, Simple, Target, Word,
};
pub(crate) use word::is_identifier;

/// Nesting deeper than this stops the parse.
pub(crate) const MAX_DEPTH: usize = 64;

/// Why the parser stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stop(pub String);

type Parsed<T> = Result<T, Stop>;

fn stop<T>(reason: impl Into<String>) -> Parsed<T> {
    Err(Stop(reason.into()))
}

/// Parses `source` into a list.
pub(crate) fn parse(source: &str) -> Result<List, Stop> {
    let mut list = List::default();
    parse_each(source, &mut |chunk| list.items.extend(chunk.items))?;
    Ok(list)
}

/// Parses `source`, handing its top-level items to `each` in order, in pieces, as soon as
/// each piece is complete (its here-documents read). A long line is then never held whole
/// as a tree: the caller walks a piece and drops it. When the source does not parse, the
/// error comes after the pieces before it were handed over; the caller must then discard
/// what it learnt from them.
pub(crate) fn parse_each(source: &str, each: &mut dyn FnMut(List)) -> Result<(), Stop> {
    if source.contains('\0') {
        return stop("a NUL byte");
    }
    let mut parser = Parser {
        src: source.as_bytes().to_vec(),
        pos: 0,
        depth: 0,
        pending: Vec::new(),
        docs: Vec::new(),
        filled: 0,
        outer_pending: false,
    };
    let mut list = parser.parse_list_into(false, Some(each))?;
    parser.linebreak()?;
    if parser.peek().is_some() {
        return Err(parser.unexpected());
    }
    if !parser.pending.is_empty() {
        return stop("a here-document without its end line");
    }
    parser.fill_docs(&mut list)?;
    if !list.items.is_empty() {
        each(list);
    }
    Ok(())
}

struct Parser {
    src: Vec<u8>,
    pos: usize,
    depth: usize,
    pending: Vec<PendingDoc>,
    /// Bodies read so far, by slot; redirects hold their slot until `fill_docs`.
    docs: Vec<Option<Word>>,
    /// How many slots of `docs` existed at the last `fill_docs`: a piece parsed after it
    /// holds a placeholder only if a slot was added since.
    filled: usize,
    /// True while parsing a substitution on a line whose here-documents are still unread.
    outer_pending: bool,
}

const RESERVED_END: &[&str] = &["then", "else", "elif", "fi", "do", "done", "esac", "}"];

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn utf8_len(lead: u8) -> usize {
    match lead {
        0xf0..=0xff => 4,
        0xe0..=0xef => 3,
        0xc0..=0xdf => 2,
        _ => 1,
    }
}

/// Accumulates a word's parts, merging literal runs of the same quoting.
#[derive(Default)]
struct Builder {
    parts: Vec<Part>,
    lit: Vec<u8>,
    quoted: bool,
}

impl Builder {
    fn push(&mut self, bytes: &[u8], quoted: bool) -> Parsed<()> {
        if !self.lit.is_empty() && self.quoted != quoted {
            self.flush()?;
        }
        self.quoted = quoted;
        self.lit.extend_from_slice(bytes);
        Ok(())
    }

    /// Quotes that held nothing (`''`, `""`) still make a word, and still stand between
    /// what is around them: `a''b` is not `ab` to brace expansion (`{a.''.b}` is no
    /// sequence), nor is `''~` a tilde. They are kept as an empty quoted literal.
    fn mark_quoted_empty(&mut self, empty: bool) -> Parsed<()> {
        if empty {
            self.flush()?;
            self.push_part(Part::Lit {
                text: String::new(),
                quoted: true,
            });
        }
        Ok(())
    }

    /// How much the builder holds (to tell whether a pair of quotes added anything).
    fn size(&self) -> (usize, usize) {
        (self.parts.len(), self.lit.len())
    }

    fn flush(&mut self) -> Parsed<()> {
        if self.lit.is_empty() {
            return Ok(());
        }
        let bytes = std::mem::take(&mut self.lit);
        let text = String::from_utf8(bytes).map_err(|_| Stop("text that is not UTF-8".into()))?;
        match self.parts.last_mut() {
            Some(Part::Lit { text: last, quoted }) if *quoted == self.quoted => last.push_str(&text),
            _ => {
                let quoted = self.quoted;
                self.push_part(Part::Lit { text, quoted });
            }
        }
        Ok(())
    }

    fn part(&mut self, part: Part) -> Parsed<()> {
        self.flush()?;
        self.push_part(part);
        Ok(())
    }

    /// Most words are one part: the first gets room for itself only (a small block,
    /// cheap to free among the many a line's tree releases at once).
    fn push_part(&mut self, part: Part) {
        if self.parts.capacity() == 0 {
            self.parts.reserve_exact(1);
        }
        self.parts.push(part);
    }

    fn finish(mut self) -> Parsed<Vec<Part>> {
        self.flush()?;
        Ok(self.parts)
    }

    fn is_empty(&self) -> bool {
        self.parts.is_empty() && self.lit.is_empty()
    }
}
