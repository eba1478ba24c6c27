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

/// Nesting deeper than this stops the parse.
pub(crate) const MAX_DEPTH: usize = 64;

/// Why the parser stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stop(pub String);

type Parsed<T> = Result<T, Stop>;

fn stop<T>(reason: impl Into<String>) -> Parsed<T> {
    Err(Stop(reason.into()))
}

/// A list of and-or lists, each run in the foreground or the background.
#[derive(Clone, Debug, Default)]
pub(crate) struct List {
    /// The items in order.
    pub(crate) items: Vec<Item>,
}

/// One and-or list and how it is terminated.
#[derive(Clone, Debug)]
pub(crate) struct Item {
    /// The and-or list.
    pub(crate) and_or: AndOr,
    /// True when it ends with `&`.
    pub(crate) background: bool,
}

/// Pipelines joined by `&&` and `||`.
#[derive(Clone, Debug)]
pub(crate) struct AndOr {
    /// The first pipeline.
    pub(crate) first: Pipeline,
    /// The others, with the operator before each (`true` for `&&`).
    pub(crate) rest: Vec<(bool, Pipeline)>,
}

/// Commands joined by `|`.
#[derive(Clone, Debug)]
pub(crate) struct Pipeline {
    /// `!` before it (an odd number of times).
    pub(crate) negated: bool,
    /// The commands; empty for a bare `time`.
    pub(crate) commands: Vec<Command>,
}

/// One command of a pipeline.
#[derive(Clone, Debug)]
pub(crate) enum Command {
    /// Assignments, words and redirections.
    Simple(Simple),
    /// A compound command and the redirections after it.
    Compound(Compound, Vec<Redirect>),
    /// `name () body` or `function name body`.
    Function {
        /// The name as written.
        name: String,
        /// The body (a compound command).
        body: Box<Command>,
    },
    /// `coproc [NAME] command`.
    Coproc(Box<Command>),
}

/// A simple command.
#[derive(Clone, Debug, Default)]
pub(crate) struct Simple {
    /// `NAME=value` before the command name.
    pub(crate) assigns: Vec<Assign>,
    /// The words, the first being the command name.
    pub(crate) words: Vec<Word>,
    /// The redirections, in order.
    pub(crate) redirects: Vec<Redirect>,
    /// The source text of the whole command.
    pub(crate) raw: String,
}

/// A compound command.
#[derive(Clone, Debug)]
pub(crate) enum Compound {
    /// `{ list; }`
    Brace(List),
    /// `( list )`
    Subshell(List),
    /// `if … then … [elif … then …] [else …] fi`
    If {
        /// Each condition with its body.
        branches: Vec<(List, List)>,
        /// The `else` body.
        otherwise: Option<List>,
    },
    /// `while`/`until cond; do body; done`
    Loop {
        /// The condition.
        cond: List,
        /// The body.
        body: List,
    },
    /// `for NAME [in words]; do body; done`
    For {
        /// The variable.
        var: String,
        /// The words (`None`: the positional parameters).
        words: Option<Vec<Word>>,
        /// The body.
        body: List,
        /// The source text of the whole loop.
        raw: String,
    },
    /// `case word in pattern) list ;; … esac`
    Case {
        /// The word.
        word: Word,
        /// Each arm: its patterns and its list.
        arms: Vec<(Vec<Word>, List)>,
    },
    /// `[[ … ]]`: its words (operators are checked when parsing).
    Cond(Vec<Word>),
}

/// An assignment `NAME=value`, `NAME+=value` or `NAME=(words)`.
#[derive(Clone, Debug)]
pub(crate) struct Assign {
    /// The variable.
    pub(crate) name: String,
    /// The value.
    pub(crate) value: AssignValue,
}

/// The value of an assignment.
#[derive(Clone, Debug)]
pub(crate) enum AssignValue {
    /// A word (expanded without splitting or globbing).
    Scalar(Word),
    /// `( words )`
    Array(Vec<Word>),
}

/// A redirection.
#[derive(Clone, Debug)]
pub(crate) struct Redirect {
    /// The operator.
    pub(crate) op: RedirOp,
    /// Its target.
    pub(crate) target: Target,
}

/// Redirection operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RedirOp {
    /// `<`
    In,
    /// `>`
    Out,
    /// `>>`
    Append,
    /// `>|`
    Clobber,
    /// `<>`
    ReadWrite,
    /// `&>`, or `>&` to a file
    OutErr,
    /// `&>>`
    AppendErr,
    /// `>&N`, `<&N`, `>&-`: no file
    Dup,
    /// `<<<`
    HereString,
    /// `<<`, `<<-`
    HereDoc,
}

/// What a redirection refers to.
#[derive(Clone, Debug)]
pub(crate) enum Target {
    /// A word (file name, fd number, here-string).
    Word(Word),
    /// A here-document: the body as a word (one literal when its delimiter was quoted).
    HereDoc(Word),
}

/// A word: its parts in order. (Its source text is only looked at while parsing, so the
/// tree does not keep a copy of it per word.)
#[derive(Clone, Debug, Default)]
pub(crate) struct Word {
    /// The parts.
    pub(crate) parts: Vec<Part>,
}

/// A piece of a word.
#[derive(Clone, Debug)]
pub(crate) enum Part {
    /// Literal text; `quoted` when it came from quotes or an escape (no globbing, braces or
    /// tilde).
    Lit {
        /// The text after quote removal.
        text: String,
        /// Whether it was quoted.
        quoted: bool,
    },
    /// A parameter expansion: `$x`, `${x}`, `${x:-word}` …; its value is a hole.
    Param {
        /// The source text.
        text: String,
        /// The parameter name (`HOME`, `1`, `@`).
        name: String,
        /// Inside double quotes.
        quoted: bool,
        /// The words inside (`word` of `${x:-word}`, patterns): their substitutions run.
        inner: Vec<Word>,
        /// True when the expansion may assign (`${x:=word}`).
        assigns: bool,
    },
    /// `$( … )` or backquotes.
    Command {
        /// The source text.
        text: String,
        /// Inside double quotes.
        quoted: bool,
        /// What runs.
        list: List,
    },
    /// `$(( … ))` over constants.
    Arith {
        /// The source text.
        text: String,
        /// Inside double quotes.
        quoted: bool,
    },
    /// `<( … )` or `>( … )`: a `/dev/fd/N` path.
    Process {
        /// The source text.
        text: String,
        /// What runs.
        list: List,
    },
    /// `( words )` after `NAME=` in an assignment.
    Array(Vec<Word>),
}

impl Word {
    /// The text when the word is one unquoted literal (a reserved word, a name).
    pub(crate) fn plain(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [Part::Lit { text, quoted: false }] => Some(text),
            _ => None,
        }
    }

    /// The value when the word is literal text only (quotes removed), else `None`.
    pub(crate) fn literal(&self) -> Option<String> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Lit { text, .. } => out.push_str(text),
                _ => return None,
            }
        }
        Some(out)
    }
}

struct PendingDoc {
    delimiter: Vec<u8>,
    quoted: bool,
    strip_tabs: bool,
    slot: usize,
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

    /// An empty quoted literal (`''`, `""`) still makes a word.
    fn mark_quoted_empty(&mut self) -> Parsed<()> {
        if self.lit.is_empty() && !self.parts.iter().any(|p| matches!(p, Part::Lit { quoted: true, .. })) {
            self.flush()?;
            self.push_part(Part::Lit {
                text: String::new(),
                quoted: true,
            });
        }
        Ok(())
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

impl Parser {
    // --- reading -------------------------------------------------------------------

    /// `p` moved past every `\`-newline at it.
    fn cont(&self, mut p: usize) -> usize {
        while self.src.get(p) == Some(&b'\\') && self.src.get(p + 1) == Some(&b'\n') {
            p += 2;
        }
        p
    }

    fn peek(&self) -> Option<u8> {
        self.src.get(self.cont(self.pos)).copied()
    }

    /// The byte `n` positions ahead (0 = `peek`), line continuations skipped.
    fn peek_at(&self, n: usize) -> Option<u8> {
        let mut p = self.cont(self.pos);
        for _ in 0..n {
            p = self.cont(p + 1);
        }
        self.src.get(p).copied()
    }

    fn bump(&mut self) {
        self.pos = self.cont(self.pos) + 1;
    }

    /// Consumes one whole character (all bytes of a UTF-8 sequence) and returns them.
    fn take_char(&mut self) -> std::ops::Range<usize> {
        let start = self.cont(self.pos);
        let len = self.src.get(start).map_or(1, |b| utf8_len(*b));
        let end = (start + len).min(self.src.len());
        self.pos = end;
        start.min(end)..end
    }

    /// Consumes one raw character at `pos` (no line-continuation removal).
    fn take_raw_char(&mut self) -> std::ops::Range<usize> {
        let start = self.pos;
        let len = self.src.get(start).map_or(1, |b| utf8_len(*b));
        let end = (start + len).min(self.src.len());
        self.pos = end;
        start.min(end)..end
    }

    fn eat(&mut self, text: &str) -> bool {
        // One pass: each byte where `peek_at(i)` reads it; consumed as `bump` would.
        let mut p = self.cont(self.pos);
        for (i, b) in text.as_bytes().iter().enumerate() {
            if i > 0 {
                p = self.cont(p + 1);
            }
            if self.src.get(p) != Some(b) {
                return false;
            }
        }
        if !text.is_empty() {
            self.pos = p + 1;
        }
        true
    }

    fn text_from(&self, start: usize) -> String {
        String::from_utf8_lossy(&self.src[start.min(self.pos)..self.pos]).into_owned()
    }

    fn unexpected(&self) -> Stop {
        match self.peek() {
            None => Stop("an unexpected end of the line".into()),
            Some(b'\n') => Stop("an unexpected newline".into()),
            Some(c) => {
                let start = self.cont(self.pos);
                let end = (start + 12).min(self.src.len());
                let near = String::from_utf8_lossy(&self.src[start..end]);
                Stop(format!("unexpected `{}` near `{near}`", c as char))
            }
        }
    }

    fn deeper(&mut self) -> Parsed<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return stop(format!("nesting deeper than {MAX_DEPTH} levels"));
        }
        Ok(())
    }

    fn shallower(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.bump();
        }
    }

    /// Skips a comment (to the newline, which stays): no line continuation inside.
    fn skip_comment(&mut self) {
        if self.peek() == Some(b'#') {
            self.pos = self.cont(self.pos);
            while let Some(c) = self.src.get(self.pos) {
                if *c == b'\n' {
                    break;
                }
                self.pos += 1;
            }
        }
    }

    fn newline(&mut self) -> Parsed<()> {
        if self.peek() != Some(b'\n') {
            return Err(self.unexpected());
        }
        self.bump();
        if !self.pending.is_empty() {
            self.read_docs()?;
        } else if self.outer_pending {
            return stop("a newline inside a substitution before a here-document's body");
        }
        Ok(())
    }

    /// Blanks, comments and newlines.
    fn linebreak(&mut self) -> Parsed<()> {
        loop {
            self.skip_blanks();
            self.skip_comment();
            if self.peek() == Some(b'\n') {
                self.newline()?;
            } else {
                return Ok(());
            }
        }
    }

    fn is_delimiter(c: Option<u8>) -> bool {
        matches!(
            c,
            None | Some(b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>')
        )
    }

    /// Whether the next token is the reserved word `word` (unquoted, followed by a
    /// delimiter).
    fn at_word(&self, word: &str) -> bool {
        // One pass over the bytes (what `peek_at(i)` for each `i` would read).
        let mut p = self.cont(self.pos);
        for b in word.as_bytes() {
            if self.src.get(p) != Some(b) {
                return false;
            }
            p = self.cont(p + 1);
        }
        Self::is_delimiter(self.src.get(p).copied())
    }

    fn expect_word(&mut self, word: &str) -> Parsed<()> {
        self.linebreak()?;
        if self.at_word(word) {
            self.eat(word);
            Ok(())
        } else {
            stop(format!("expected `{word}`: {}", self.unexpected().0))
        }
    }

    fn at_list_end(&self) -> bool {
        match self.peek() {
            None | Some(b')') => true,
            Some(b';') => matches!(self.peek_at(1), Some(b';' | b'&')),
            _ => self.at_reserved_end(),
        }
    }

    /// Whether the next token is one of [`RESERVED_END`] (the first byte is checked once
    /// before the words are: most tokens start with none of theirs).
    fn at_reserved_end(&self) -> bool {
        matches!(self.peek(), Some(b't' | b'e' | b'f' | b'd' | b'}'))
            && RESERVED_END.iter().any(|word| self.at_word(word))
    }

    // --- lists -----------------------------------------------------------------------

    /// A list; `nonempty` requires at least one command.
    fn parse_list(&mut self, nonempty: bool) -> Parsed<List> {
        self.parse_list_into(nonempty, None)
    }

    /// A list; with `sink`, the items parsed so far go to it whenever none of them waits
    /// for a here-document's body, and the list returned holds the rest.
    fn parse_list_into(&mut self, nonempty: bool, mut sink: Option<&mut dyn FnMut(List)>) -> Parsed<List> {
        self.deeper()?;
        // Room for one item: most lists, and the pieces handed to `sink`, hold one.
        let one = || List {
            items: Vec::with_capacity(1),
        };
        let mut list = one();
        loop {
            self.linebreak()?;
            if self.at_list_end() {
                break;
            }
            let and_or = self.parse_and_or()?;
            self.skip_blanks();
            self.skip_comment();
            let mut background = false;
            let more = match self.peek() {
                Some(b';') if !matches!(self.peek_at(1), Some(b';' | b'&')) => {
                    self.bump();
                    true
                }
                Some(b'&') if !matches!(self.peek_at(1), Some(b'&' | b'>')) => {
                    self.bump();
                    background = true;
                    true
                }
                Some(b'\n') => {
                    self.newline()?;
                    true
                }
                _ => false,
            };
            list.items.push(Item { and_or, background });
            if let Some(sink) = sink.as_mut()
                && self.pending.is_empty()
            {
                let mut chunk = std::mem::replace(&mut list, one());
                self.fill_docs(&mut chunk)?;
                sink(chunk);
            }
            if !more {
                break;
            }
        }
        if nonempty && list.items.is_empty() {
            return Err(self.unexpected());
        }
        self.shallower();
        Ok(list)
    }

    fn parse_and_or(&mut self) -> Parsed<AndOr> {
        let first = self.parse_pipeline()?;
        let mut rest = Vec::new();
        loop {
            self.skip_blanks();
            let and = if self.eat("&&") {
                true
            } else if self.eat("||") {
                false
            } else {
                break;
            };
            self.linebreak()?;
            rest.push((and, self.parse_pipeline()?));
        }
        Ok(AndOr { first, rest })
    }

    fn parse_pipeline(&mut self) -> Parsed<Pipeline> {
        let mut negated = false;
        let mut timed = false;
        loop {
            self.skip_blanks();
            if self.at_word("!") {
                self.bump();
                negated = !negated;
            } else if self.at_word("time") {
                self.eat("time");
                timed = true;
                self.skip_blanks();
                if self.at_word("-p") {
                    self.eat("-p");
                    self.skip_blanks();
                }
                if self.at_word("--") {
                    self.eat("--");
                }
            } else {
                break;
            }
        }
        self.skip_blanks();
        // Most pipelines are one command (see `Builder::push_part`).
        let mut commands = Vec::with_capacity(1);
        let bare = matches!(self.peek(), None | Some(b';' | b'&' | b'\n' | b')')) || self.at_list_end();
        if timed && bare {
            return Ok(Pipeline { negated, commands });
        }
        commands.push(self.parse_command()?);
        loop {
            self.skip_blanks();
            if self.peek() == Some(b'|') && self.peek_at(1) != Some(b'|') {
                self.bump();
                if self.peek() == Some(b'&') {
                    self.bump();
                }
                self.linebreak()?;
                commands.push(self.parse_command()?);
            } else {
                break;
            }
        }
        Ok(Pipeline { negated, commands })
    }

    // --- commands --------------------------------------------------------------------

    fn parse_command(&mut self) -> Parsed<Command> {
        self.skip_blanks();
        if let Some(compound) = self.parse_compound()? {
            let redirects = self.trailing_redirects()?;
            return Ok(Command::Compound(compound, redirects));
        }
        if self.at_word("function") {
            self.eat("function");
            self.skip_blanks();
            let name = self.function_name()?;
            self.skip_blanks();
            if self.peek() == Some(b'(') {
                self.bump();
                self.skip_blanks();
                if self.peek() != Some(b')') {
                    return Err(self.unexpected());
                }
                self.bump();
            }
            return self.function_body(name);
        }
        if self.at_word("coproc") {
            self.eat("coproc");
            self.skip_blanks();
            if let Some(compound) = self.parse_compound()? {
                let redirects = self.trailing_redirects()?;
                return Ok(Command::Coproc(Box::new(Command::Compound(compound, redirects))));
            }
            let first_start = self.cont(self.pos);
            let first = self.lex_word(false)?;
            self.skip_blanks();
            if first.plain().is_some_and(is_plain_name)
                && let Some(compound) = self.parse_compound()?
            {
                let redirects = self.trailing_redirects()?;
                return Ok(Command::Coproc(Box::new(Command::Compound(compound, redirects))));
            }
            let simple = self.parse_simple(Some((first, first_start)))?;
            return Ok(Command::Coproc(Box::new(simple)));
        }
        if self.at_word("select") {
            return stop("`select`");
        }
        if self.at_reserved_end() {
            return Err(self.unexpected());
        }
        if self.peek() == Some(b'(') && self.peek_at(1) == Some(b'(') {
            return stop("an arithmetic command `(( ))`");
        }
        self.parse_simple(None)
    }

    /// A compound command, if one starts here.
    fn parse_compound(&mut self) -> Parsed<Option<Compound>> {
        // Every compound command starts with one of these bytes.
        if !matches!(self.peek(), Some(b'(' | b'{' | b'i' | b'w' | b'u' | b'f' | b'c' | b'[')) {
            return Ok(None);
        }
        if self.peek() == Some(b'(') {
            if self.peek_at(1) == Some(b'(') {
                return stop("an arithmetic command `(( ))`");
            }
            self.bump();
            let list = self.parse_list(true)?;
            self.linebreak()?;
            if self.peek() != Some(b')') {
                return Err(self.unexpected());
            }
            self.bump();
            return Ok(Some(Compound::Subshell(list)));
        }
        if self.at_word("{") {
            self.bump();
            let list = self.parse_list(true)?;
            self.expect_word("}")?;
            return Ok(Some(Compound::Brace(list)));
        }
        if self.at_word("if") {
            self.eat("if");
            let mut branches = Vec::new();
            let cond = self.parse_list(true)?;
            self.expect_word("then")?;
            let body = self.parse_list(true)?;
            branches.push((cond, body));
            let mut otherwise = None;
            loop {
                self.linebreak()?;
                if self.at_word("elif") {
                    self.eat("elif");
                    let cond = self.parse_list(true)?;
                    self.expect_word("then")?;
                    let body = self.parse_list(true)?;
                    branches.push((cond, body));
                } else if self.at_word("else") {
                    self.eat("else");
                    otherwise = Some(self.parse_list(true)?);
                    self.expect_word("fi")?;
                    break;
                } else {
                    self.expect_word("fi")?;
                    break;
                }
            }
            return Ok(Some(Compound::If { branches, otherwise }));
        }
        for keyword in ["while", "until"] {
            if self.at_word(keyword) {
                self.eat(keyword);
                let cond = self.parse_list(true)?;
                self.expect_word("do")?;
                let body = self.parse_list(true)?;
                self.expect_word("done")?;
                return Ok(Some(Compound::Loop { cond, body }));
            }
        }
        if self.at_word("for") {
            let start = self.pos;
            self.eat("for");
            self.skip_blanks();
            if self.peek() == Some(b'(') {
                return stop("an arithmetic `for (( ))` loop");
            }
            let var = self.lex_word(false)?;
            let Some(var) = var.plain().filter(|name| is_identifier(name)).map(str::to_string) else {
                return stop("a `for` loop whose variable is not a plain name");
            };
            self.linebreak()?;
            let mut words = None;
            if self.at_word("in") {
                self.eat("in");
                let mut list = Vec::new();
                loop {
                    self.skip_blanks();
                    match self.peek() {
                        Some(b';') => {
                            self.bump();
                            break;
                        }
                        Some(b'\n') => {
                            self.newline()?;
                            break;
                        }
                        Some(b'#') => self.skip_comment(),
                        None => return Err(self.unexpected()),
                        _ if Self::is_delimiter(self.peek()) => return Err(self.unexpected()),
                        _ => list.push(self.lex_word(false)?),
                    }
                }
                words = Some(list);
            } else if self.peek() == Some(b';') {
                self.bump();
            }
            self.linebreak()?;
            if !self.at_word("do") {
                return stop("a `for` loop without `do`");
            }
            self.eat("do");
            let body = self.parse_list(true)?;
            self.expect_word("done")?;
            let raw = self.text_from(start);
            return Ok(Some(Compound::For { var, words, body, raw }));
        }
        if self.at_word("case") {
            self.eat("case");
            self.skip_blanks();
            let word = self.lex_word(false)?;
            self.linebreak()?;
            self.expect_word("in")?;
            let mut arms = Vec::new();
            loop {
                self.linebreak()?;
                if self.at_word("esac") {
                    self.eat("esac");
                    break;
                }
                if self.peek() == Some(b'(') {
                    self.bump();
                }
                let mut patterns = Vec::new();
                loop {
                    self.skip_blanks();
                    if Self::is_delimiter(self.peek()) {
                        return Err(self.unexpected());
                    }
                    patterns.push(self.lex_word(false)?);
                    self.skip_blanks();
                    if self.peek() == Some(b'|') {
                        self.bump();
                    } else {
                        break;
                    }
                }
                if self.peek() != Some(b')') {
                    return Err(self.unexpected());
                }
                self.bump();
                let body = self.parse_list(false)?;
                arms.push((patterns, body));
                self.linebreak()?;
                if self.eat(";;&") || self.eat(";;") || self.eat(";&") {
                    continue;
                }
                self.expect_word("esac")?;
                break;
            }
            return Ok(Some(Compound::Case { word, arms }));
        }
        if self.at_word("[[") {
            self.eat("[[");
            return self.parse_cond().map(Some);
        }
        Ok(None)
    }

    fn parse_cond(&mut self) -> Parsed<Compound> {
        let mut words: Vec<Word> = Vec::new();
        let mut operators: Vec<String> = Vec::new();
        loop {
            self.skip_blanks();
            if self.at_word("]]") {
                self.eat("]]");
                break;
            }
            match self.peek() {
                None | Some(b'\n' | b';' | b'|' | b'&') => {
                    if self.eat("&&") || self.eat("||") {
                        operators.push(String::new());
                        continue;
                    }
                    return stop("a `[[ ]]` the analysis does not parse");
                }
                Some(b'(' | b')') => {
                    self.bump();
                    operators.push(String::new());
                }
                Some(b'<' | b'>') if self.peek_at(1) != Some(b'(') => {
                    self.bump();
                    operators.push(String::new());
                }
                _ => {
                    let word = self.lex_word(false)?;
                    operators.push(word.plain().unwrap_or("").to_string());
                    words.push(word);
                }
            }
        }
        // Arithmetic comparisons evaluate their operands as expressions (a variable that
        // holds `a[$(…)]` runs it); `-v`/`-R` evaluate a subscript.
        for (index, op) in operators.iter().enumerate() {
            match op.as_str() {
                "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge" => {
                    let literal_int = |i: Option<usize>| {
                        i.and_then(|i| operators.get(i)).is_some_and(|o| {
                            !o.is_empty() && o.trim_start_matches('-').bytes().all(|b| b.is_ascii_digit())
                        })
                    };
                    if !literal_int(index.checked_sub(1)) || !literal_int(Some(index + 1)) {
                        return stop("an arithmetic comparison in `[[ ]]` on something other than a number");
                    }
                }
                "-v" | "-R" => return stop("`[[ -v ]]` (it evaluates a subscript)"),
                _ => {}
            }
        }
        Ok(Compound::Cond(words))
    }

    fn function_name(&mut self) -> Parsed<String> {
        let word = self.lex_word(false)?;
        match word.plain() {
            Some(name) if !name.is_empty() => Ok(name.to_string()),
            _ => stop("a function whose name is not plain text"),
        }
    }

    fn function_body(&mut self, name: String) -> Parsed<Command> {
        self.linebreak()?;
        let Some(compound) = self.parse_compound()? else {
            return stop("a function body that is not a compound command");
        };
        let redirects = self.trailing_redirects()?;
        Ok(Command::Function {
            name,
            body: Box::new(Command::Compound(compound, redirects)),
        })
    }

    fn trailing_redirects(&mut self) -> Parsed<Vec<Redirect>> {
        let mut redirects = Vec::new();
        loop {
            self.skip_blanks();
            if self.at_redirect() {
                redirects.push(self.parse_redirect()?);
            } else if Self::is_delimiter(self.peek()) || self.peek() == Some(b'#') {
                return Ok(redirects);
            } else {
                return Err(self.unexpected());
            }
        }
    }

    fn parse_simple(&mut self, first: Option<(Word, usize)>) -> Parsed<Command> {
        let mut start = self.cont(self.pos);
        let mut simple = Simple::default();
        // The command name is a declaration builtin (whose words may be array assignments).
        let is_declaration = |word: &Word| {
            word.plain()
                .is_some_and(|name| matches!(name, "declare" | "typeset" | "local" | "export" | "readonly"))
        };
        let mut declaration = false;
        if let Some((first, first_start)) = first {
            start = first_start;
            declaration = is_declaration(&first);
            simple.words.push(first);
        }
        loop {
            self.skip_blanks();
            if self.at_redirect() {
                simple.redirects.push(self.parse_redirect()?);
                continue;
            }
            match self.peek() {
                None | Some(b'\n' | b';' | b'&' | b'|' | b')' | b'#') => break,
                Some(b'(') => {
                    let is_name = simple.assigns.is_empty()
                        && simple.redirects.is_empty()
                        && simple.words.len() == 1
                        && simple.words[0].plain().is_some();
                    if !is_name {
                        return Err(self.unexpected());
                    }
                    self.bump();
                    self.skip_blanks();
                    if self.peek() != Some(b')') {
                        return Err(self.unexpected());
                    }
                    self.bump();
                    let name = simple.words[0].plain().unwrap_or_default().to_string();
                    return self.function_body(name);
                }
                _ => {}
            }
            let assign_ok = simple.words.is_empty() || declaration;
            let word_start = self.pos;
            let word = self.lex_word(assign_ok)?;
            if simple.words.is_empty() {
                if let Some(assign) = as_assignment(&word, &self.src[word_start.min(self.pos)..self.pos])? {
                    simple.assigns.push(assign);
                    continue;
                }
                if word.plain().is_some_and(|w| RESERVED_END.contains(&w) || w == "{") && simple.assigns.is_empty() {
                    return Err(self.unexpected());
                }
                declaration = is_declaration(&word);
            }
            simple.words.push(word);
        }
        let raw = String::from_utf8_lossy(&self.src[start.min(self.pos)..self.pos]);
        simple.raw = raw.trim_end_matches([' ', '\t']).to_string();
        if simple.words.is_empty() && simple.assigns.is_empty() && simple.redirects.is_empty() {
            return Err(self.unexpected());
        }
        Ok(Command::Simple(simple))
    }

    // --- redirections ---------------------------------------------------------------------

    fn at_redirect(&self) -> bool {
        // Every redirection starts with one of these bytes.
        if !matches!(self.peek(), Some(b'0'..=b'9' | b'<' | b'>' | b'&' | b'{')) {
            return false;
        }
        let mut i = 0;
        while self.peek_at(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
        match self.peek_at(i) {
            Some(b'<' | b'>') => self.peek_at(i + 1) != Some(b'('),
            Some(b'&') if i == 0 => self.peek_at(1) == Some(b'>'),
            Some(b'{') if i == 0 => {
                // `{name}>file` assigns a file descriptor to a variable.
                let mut j = 1;
                while self.peek_at(j).is_some_and(is_name_char) {
                    j += 1;
                }
                j > 1 && self.peek_at(j) == Some(b'}') && matches!(self.peek_at(j + 1), Some(b'<' | b'>'))
            }
            _ => false,
        }
    }

    fn parse_redirect(&mut self) -> Parsed<Redirect> {
        if self.peek() == Some(b'{') {
            return stop("a `{var}>` redirection (it assigns a variable)");
        }
        let mut digits = String::new();
        while let Some(c) = self.peek().filter(u8::is_ascii_digit) {
            digits.push(c as char);
            self.bump();
        }
        let fd = if digits.is_empty() {
            None
        } else {
            Some(
                digits
                    .parse::<u32>()
                    .map_err(|_| Stop("a file descriptor number too large".into()))?,
            )
        };
        let mut dup_in = false;
        let op = if self.eat("<<<") {
            RedirOp::HereString
        } else if self.eat("<<-") {
            return self.heredoc(true);
        } else if self.eat("<<") {
            return self.heredoc(false);
        } else if self.eat("<>") {
            RedirOp::ReadWrite
        } else if self.eat("<&") {
            dup_in = true;
            RedirOp::Dup
        } else if self.eat("<") {
            RedirOp::In
        } else if self.eat(">>") {
            RedirOp::Append
        } else if self.eat(">&") {
            RedirOp::Dup
        } else if self.eat(">|") {
            RedirOp::Clobber
        } else if self.eat(">") {
            RedirOp::Out
        } else if self.eat("&>>") {
            RedirOp::AppendErr
        } else if self.eat("&>") {
            RedirOp::OutErr
        } else {
            return Err(self.unexpected());
        };
        self.skip_blanks();
        if Self::is_delimiter(self.peek()) {
            return Err(self.unexpected());
        }
        let word_start = self.pos;
        let word = self.lex_word(false)?;
        let op = match op {
            RedirOp::Dup => {
                let literal = word.literal();
                let is_fd = literal.as_deref().is_some_and(|w| {
                    w == "-" || (!w.is_empty() && w.trim_end_matches('-').bytes().all(|b| b.is_ascii_digit()))
                });
                if is_fd {
                    RedirOp::Dup
                } else if fd.is_none() && !dup_in && self.src.get(word_start).is_some_and(|b| *b != b'-') {
                    // `>&file` is `&>file` when the word is not a number.
                    RedirOp::OutErr
                } else {
                    return stop("a descriptor duplication whose target is not a number");
                }
            }
            other => other,
        };
        Ok(Redirect {
            op,
            target: Target::Word(word),
        })
    }

    fn heredoc(&mut self, strip_tabs: bool) -> Parsed<Redirect> {
        self.skip_blanks();
        if Self::is_delimiter(self.peek()) {
            return Err(self.unexpected());
        }
        let word = self.lex_word(false)?;
        let Some(delimiter) = word.literal() else {
            return stop("a here-document delimiter with expansions");
        };
        if delimiter.is_empty()
            || !delimiter
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-+:@%".contains(&b))
        {
            return stop("a here-document delimiter the analysis does not read");
        }
        let quoted = word
            .parts
            .iter()
            .any(|part| matches!(part, Part::Lit { quoted: true, .. }));
        let slot = self.docs.len();
        self.docs.push(None);
        self.pending.push(PendingDoc {
            delimiter: delimiter.into_bytes(),
            quoted,
            strip_tabs,
            slot,
        });
        Ok(Redirect {
            op: RedirOp::HereDoc,
            target: Target::HereDoc(Word {
                parts: vec![Part::Lit {
                    text: format!("\u{0}{slot}"),
                    quoted: true,
                }],
            }),
        })
    }

    /// Reads the bodies of the pending here-documents, starting at `pos` (just after a
    /// newline).
    fn read_docs(&mut self) -> Parsed<()> {
        let pending = std::mem::take(&mut self.pending);
        for doc in pending {
            let mut body: Vec<u8> = Vec::new();
            loop {
                if self.pos >= self.src.len() {
                    return stop("a here-document without its end line");
                }
                // One logical line: `\`-newline joins lines unless the delimiter was quoted.
                let mut line: Vec<u8> = Vec::new();
                let mut ended = false;
                while let Some(c) = self.src.get(self.pos).copied() {
                    if c == b'\n' {
                        self.pos += 1;
                        ended = true;
                        break;
                    }
                    if c == b'\\' && !doc.quoted {
                        match self.src.get(self.pos + 1).copied() {
                            Some(b'\n') => {
                                if doc.strip_tabs {
                                    return stop("a line continuation inside a `<<-` here-document");
                                }
                                self.pos += 2;
                                continue;
                            }
                            Some(next) => {
                                line.push(c);
                                line.push(next);
                                self.pos += 2;
                                continue;
                            }
                            None => {
                                line.push(c);
                                self.pos += 1;
                                continue;
                            }
                        }
                    }
                    line.push(c);
                    self.pos += 1;
                }
                let content: &[u8] = if doc.strip_tabs {
                    let tabs = line.iter().take_while(|b| **b == b'\t').count();
                    &line[tabs..]
                } else {
                    &line
                };
                if content == doc.delimiter.as_slice() {
                    break;
                }
                body.extend_from_slice(content);
                body.push(b'\n');
                if !ended {
                    return stop("a here-document without its end line");
                }
            }
            let text = String::from_utf8(body).map_err(|_| Stop("text that is not UTF-8".into()))?;
            let word = if doc.quoted {
                Word {
                    parts: vec![Part::Lit { text, quoted: true }],
                }
            } else {
                self.nested(text, false, |parser| parser.heredoc_body())?
            };
            if let Some(slot) = self.docs.get_mut(doc.slot) {
                *slot = Some(word);
            }
        }
        Ok(())
    }

    /// The body of an unquoted here-document: like double quotes, but `"` is literal.
    fn heredoc_body(&mut self) -> Parsed<Word> {
        let mut builder = Builder::default();
        while let Some(c) = self.peek() {
            match c {
                b'\\' => {
                    self.bump();
                    match self.src.get(self.pos).copied() {
                        Some(n @ (b'$' | b'`' | b'\\')) => {
                            self.pos += 1;
                            builder.push(&[n], true)?;
                        }
                        _ => builder.push(b"\\", true)?,
                    }
                }
                b'$' => {
                    if matches!(self.peek_at(1), Some(b'\'' | b'"')) {
                        self.bump();
                        builder.push(b"$", true)?;
                    } else {
                        self.dollar(&mut builder, true)?;
                    }
                }
                b'`' => {
                    let part = self.backtick(true)?;
                    builder.part(part)?;
                }
                _ => {
                    let bytes = self.take_char();
                    builder.push(&self.src[bytes], true)?;
                }
            }
        }
        Ok(Word {
            parts: builder.finish()?,
        })
    }

    /// Runs `f` on `text` as a separate source (backquotes, here-document bodies).
    fn nested<T>(&mut self, text: String, keep_outer: bool, f: impl FnOnce(&mut Parser) -> Parsed<T>) -> Parsed<T> {
        self.deeper()?;
        let src = std::mem::replace(&mut self.src, text.into_bytes());
        let pos = std::mem::replace(&mut self.pos, 0);
        let pending = std::mem::take(&mut self.pending);
        let outer = self.outer_pending;
        self.outer_pending = keep_outer && (outer || !pending.is_empty());
        let result = f(self).and_then(|value| {
            if self.pos < self.src.len() {
                Err(self.unexpected())
            } else if !self.pending.is_empty() {
                stop("a here-document without its end line")
            } else {
                Ok(value)
            }
        });
        self.src = src;
        self.pos = pos;
        self.pending = pending;
        self.outer_pending = outer;
        self.shallower();
        result
    }

    /// Replaces here-document placeholders by their bodies.
    fn fill_docs(&mut self, list: &mut List) -> Parsed<()> {
        if self.docs.len() == self.filled {
            return Ok(());
        }
        self.filled = self.docs.len();
        let docs = &mut self.docs;
        fill_list(list, docs)
    }

    // --- words -------------------------------------------------------------------------

    /// One word; `assign_ok` allows `NAME=( … )`.
    fn lex_word(&mut self, assign_ok: bool) -> Parsed<Word> {
        let mut builder = Builder::default();
        while let Some(c) = self.peek() {
            match c {
                b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b')' => break,
                b'<' | b'>' => {
                    if self.peek_at(1) == Some(b'(') {
                        let part = self.process_substitution()?;
                        builder.part(part)?;
                    } else {
                        break;
                    }
                }
                b'(' => {
                    let prefix = array_prefix(&builder);
                    if assign_ok && prefix {
                        self.bump();
                        let mut elements = Vec::new();
                        loop {
                            self.linebreak()?;
                            match self.peek() {
                                Some(b')') => {
                                    self.bump();
                                    break;
                                }
                                Some(b'[') => return stop("an array element with a subscript"),
                                None => return Err(self.unexpected()),
                                c if Self::is_delimiter(c) => return Err(self.unexpected()),
                                _ => elements.push(self.lex_word(false)?),
                            }
                        }
                        builder.part(Part::Array(elements))?;
                        if !Self::is_delimiter(self.peek()) {
                            return Err(self.unexpected());
                        }
                    }
                    break;
                }
                b'\\' => {
                    self.bump();
                    if self.pos >= self.src.len() {
                        builder.push(b"\\", true)?;
                    } else {
                        let bytes = self.take_raw_char();
                        builder.push(&self.src[bytes], true)?;
                    }
                }
                b'\'' => {
                    self.bump();
                    let begin = self.pos;
                    while self.src.get(self.pos).is_some_and(|b| *b != b'\'') {
                        self.pos += 1;
                    }
                    if self.pos >= self.src.len() {
                        return stop("an unterminated single quote");
                    }
                    let bytes = begin..self.pos;
                    self.pos += 1;
                    builder.push(&self.src[bytes], true)?;
                    builder.mark_quoted_empty()?;
                }
                b'"' => {
                    self.bump();
                    self.double_quoted(&mut builder)?;
                    builder.mark_quoted_empty()?;
                }
                b'$' => self.dollar(&mut builder, false)?,
                b'`' => {
                    let part = self.backtick(false)?;
                    builder.part(part)?;
                }
                _ => {
                    let bytes = self.take_char();
                    // The ordinary bytes after it in one go: none that another arm handles,
                    // and no `\` (which could start a line continuation). The source is
                    // UTF-8, so this ends on a character boundary as `take_char` would.
                    let mut end = bytes.end;
                    while let Some(b) = self.src.get(end)
                        && !matches!(
                            b,
                            b' ' | b'\t'
                                | b'\n'
                                | b';'
                                | b'&'
                                | b'|'
                                | b')'
                                | b'<'
                                | b'>'
                                | b'('
                                | b'\\'
                                | b'\''
                                | b'"'
                                | b'$'
                                | b'`'
                        )
                    {
                        end += 1;
                    }
                    self.pos = end;
                    builder.push(&self.src[bytes.start..end], false)?;
                }
            }
        }
        if builder.is_empty() {
            return Err(self.unexpected());
        }
        Ok(Word {
            parts: builder.finish()?,
        })
    }

    /// The inside of `"…"` (the opening quote consumed).
    fn double_quoted(&mut self, builder: &mut Builder) -> Parsed<()> {
        self.deeper()?;
        loop {
            match self.peek() {
                None => return stop("an unterminated double quote"),
                Some(b'"') => {
                    self.bump();
                    break;
                }
                Some(b'\\') => {
                    self.bump();
                    match self.src.get(self.pos).copied() {
                        Some(n @ (b'$' | b'`' | b'"' | b'\\')) => {
                            self.pos += 1;
                            builder.push(&[n], true)?;
                        }
                        _ => builder.push(b"\\", true)?,
                    }
                }
                Some(b'$') => {
                    if matches!(self.peek_at(1), Some(b'\'' | b'"')) {
                        self.bump();
                        builder.push(b"$", true)?;
                    } else {
                        self.dollar(builder, true)?;
                    }
                }
                Some(b'`') => {
                    let part = self.backtick(true)?;
                    builder.part(part)?;
                }
                Some(_) => {
                    let bytes = self.take_char();
                    builder.push(&self.src[bytes], true)?;
                }
            }
        }
        self.shallower();
        Ok(())
    }

    /// `$…` at `pos`.
    fn dollar(&mut self, builder: &mut Builder, quoted: bool) -> Parsed<()> {
        let start = self.pos;
        self.bump();
        match self.peek() {
            Some(b'(') => {
                if self.peek_at(1) == Some(b'(') {
                    let part = self.arithmetic(start, quoted)?;
                    builder.part(part)
                } else {
                    self.bump();
                    let list = self.substitution_list()?;
                    builder.part(Part::Command {
                        text: self.text_from(start),
                        quoted,
                        list,
                    })
                }
            }
            Some(b'{') => {
                let part = self.braced_parameter(start, quoted)?;
                builder.part(part)
            }
            Some(b'\'') if !quoted => {
                self.bump();
                let bytes = self.ansi_c()?;
                builder.push(&bytes, true)?;
                builder.mark_quoted_empty()
            }
            Some(b'"') if !quoted => stop("a `$\"…\"` translated string"),
            Some(b'[') => stop("a `$[ ]` arithmetic expansion"),
            Some(c) if is_name_start(c) => {
                let mut name = String::new();
                while let Some(c) = self.peek().filter(|c| is_name_char(*c)) {
                    name.push(c as char);
                    self.bump();
                }
                builder.part(Part::Param {
                    text: self.text_from(start),
                    name,
                    quoted,
                    inner: Vec::new(),
                    assigns: false,
                })
            }
            Some(c) if c.is_ascii_digit() || b"@*#?-$!".contains(&c) => {
                self.bump();
                builder.part(Part::Param {
                    text: self.text_from(start),
                    name: (c as char).to_string(),
                    quoted,
                    inner: Vec::new(),
                    assigns: false,
                })
            }
            _ => builder.push(b"$", quoted),
        }
    }

    /// A list up to its closing `)` (the opening one consumed).
    fn substitution_list(&mut self) -> Parsed<List> {
        let pending = std::mem::take(&mut self.pending);
        let outer = self.outer_pending;
        self.outer_pending = outer || !pending.is_empty();
        let result = (|| {
            let list = self.parse_list(false)?;
            self.linebreak()?;
            if self.peek() != Some(b')') {
                return Err(self.unexpected());
            }
            if !self.pending.is_empty() {
                return stop("a here-document inside a substitution that ends on its line");
            }
            self.bump();
            Ok(list)
        })();
        self.pending = pending;
        self.outer_pending = outer;
        result
    }

    fn process_substitution(&mut self) -> Parsed<Part> {
        let start = self.pos;
        self.bump();
        self.bump();
        let list = self.substitution_list()?;
        Ok(Part::Process {
            text: self.text_from(start),
            list,
        })
    }

    /// `$(( … ))` whose content is constant (numbers and operators only).
    fn arithmetic(&mut self, start: usize, quoted: bool) -> Parsed<Part> {
        self.bump();
        self.bump();
        let mut depth = 0usize;
        loop {
            match self.peek() {
                None => return stop("an unterminated `$(( ))`"),
                Some(b'(') => {
                    depth += 1;
                    self.bump();
                }
                Some(b')') => {
                    if depth == 0 {
                        self.bump();
                        if self.peek() != Some(b')') {
                            return stop("a `$(( ))` the analysis does not parse");
                        }
                        self.bump();
                        break;
                    }
                    depth -= 1;
                    self.bump();
                }
                Some(c) if c.is_ascii_digit() => {
                    // A number: digits, then letters and `#`/`x` of a base or hex literal.
                    while self
                        .peek()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'#' || c == b'_' || c == b'@')
                    {
                        self.bump();
                    }
                }
                Some(c) if b" \t\n+-*/%<>=!&|^~?:,".contains(&c) => self.bump(),
                Some(_) => {
                    return stop("arithmetic on variables or substitutions (their values are evaluated as code)");
                }
            }
        }
        Ok(Part::Arith {
            text: self.text_from(start),
            quoted,
        })
    }

    /// `${ … }` at `start` (`$` consumed, `{` next).
    fn braced_parameter(&mut self, start: usize, quoted: bool) -> Parsed<Part> {
        self.deeper()?;
        self.bump();
        let mut inner = Vec::new();
        let mut assigns = false;
        let name;
        match self.peek() {
            Some(b'!') => return stop("an indirect expansion `${!…}`"),
            Some(b'#') if self.peek_at(1) == Some(b'}') => {
                self.bump();
                name = "#".to_string();
            }
            Some(b'#') => {
                self.bump();
                name = self.parameter_name()?;
                self.subscript()?;
                if self.peek() != Some(b'}') {
                    return stop("a length expansion the analysis does not parse");
                }
            }
            _ => {
                name = self.parameter_name()?;
                self.subscript()?;
            }
        }
        match self.peek() {
            Some(b'}') => {}
            Some(b':') if matches!(self.peek_at(1), Some(b'-' | b'=' | b'?' | b'+')) => {
                self.bump();
                assigns = self.peek() == Some(b'=');
                self.bump();
                inner.push(self.brace_word(quoted, false)?);
            }
            Some(b':') => {
                // `${x:offset:length}`: arithmetic, so constants only.
                self.bump();
                while let Some(c) = self.peek() {
                    if c == b'}' {
                        break;
                    }
                    if !(c.is_ascii_digit() || matches!(c, b' ' | b'-' | b':')) {
                        return stop("a substring expansion with a computed offset");
                    }
                    self.bump();
                }
            }
            Some(b'-' | b'=' | b'?' | b'+') => {
                assigns = self.peek() == Some(b'=');
                self.bump();
                inner.push(self.brace_word(quoted, false)?);
            }
            Some(b'#' | b'%' | b'^' | b',') => {
                let op = self.peek();
                self.bump();
                if self.peek() == op {
                    self.bump();
                }
                inner.push(self.brace_word(quoted, false)?);
            }
            Some(b'/') => {
                self.bump();
                if matches!(self.peek(), Some(b'/' | b'#' | b'%')) {
                    self.bump();
                }
                inner.push(self.brace_word(quoted, true)?);
                if self.peek() == Some(b'/') {
                    self.bump();
                    inner.push(self.brace_word(quoted, false)?);
                }
            }
            Some(b'@') => {
                self.bump();
                if !matches!(self.peek(), Some(b'Q' | b'U' | b'u' | b'L' | b'a')) {
                    return stop("a `${x@…}` transformation that may evaluate its value");
                }
                self.bump();
            }
            _ => return stop("a parameter expansion the analysis does not parse"),
        }
        if self.peek() != Some(b'}') {
            return Err(self.unexpected());
        }
        self.bump();
        self.shallower();
        Ok(Part::Param {
            text: self.text_from(start),
            name,
            quoted,
            inner,
            assigns,
        })
    }

    fn parameter_name(&mut self) -> Parsed<String> {
        let mut name = String::new();
        match self.peek() {
            Some(c) if is_name_start(c) => {
                while let Some(c) = self.peek().filter(|c| is_name_char(*c)) {
                    name.push(c as char);
                    self.bump();
                }
            }
            Some(c) if c.is_ascii_digit() => {
                while let Some(c) = self.peek().filter(u8::is_ascii_digit) {
                    name.push(c as char);
                    self.bump();
                }
            }
            Some(c) if b"@*#?-$!".contains(&c) => {
                name.push(c as char);
                self.bump();
            }
            _ => return stop("a parameter expansion the analysis does not parse"),
        }
        Ok(name)
    }

    /// An array subscript `[n]`, `[@]`, `[*]`: anything else is evaluated as arithmetic.
    fn subscript(&mut self) -> Parsed<()> {
        if self.peek() != Some(b'[') {
            return Ok(());
        }
        self.bump();
        let mut content = String::new();
        while let Some(c) = self.peek() {
            if c == b']' {
                break;
            }
            content.push(c as char);
            self.bump();
        }
        if self.peek() != Some(b']') {
            return stop("an unterminated subscript");
        }
        self.bump();
        let constant =
            content == "@" || content == "*" || (!content.is_empty() && content.bytes().all(|b| b.is_ascii_digit()));
        if !constant {
            return stop("an array subscript that is evaluated (arithmetic on data)");
        }
        Ok(())
    }

    /// The word inside `${x<op>…}`, up to `}` (or `/` when `slash`).
    fn brace_word(&mut self, quoted: bool, slash: bool) -> Parsed<Word> {
        let mut builder = Builder::default();
        loop {
            match self.peek() {
                None => return stop("an unterminated `${`"),
                Some(b'}') => break,
                Some(b'/') if slash => break,
                Some(b'\\') => {
                    self.bump();
                    if self.pos >= self.src.len() {
                        return stop("an unterminated `${`");
                    }
                    let bytes = self.take_raw_char();
                    builder.push(&self.src[bytes], true)?;
                }
                Some(b'\'') if quoted => return stop("a single quote inside `\"${…}\"`"),
                Some(b'\'') => {
                    self.bump();
                    let begin = self.pos;
                    while self.src.get(self.pos).is_some_and(|b| *b != b'\'') {
                        self.pos += 1;
                    }
                    if self.pos >= self.src.len() {
                        return stop("an unterminated single quote");
                    }
                    let bytes = begin..self.pos;
                    self.pos += 1;
                    builder.push(&self.src[bytes], true)?;
                }
                Some(b'"') => {
                    self.bump();
                    self.double_quoted(&mut builder)?;
                }
                Some(b'$') => self.dollar(&mut builder, quoted)?,
                Some(b'`') => {
                    let part = self.backtick(quoted)?;
                    builder.part(part)?;
                }
                Some(_) => {
                    let bytes = self.take_char();
                    builder.push(&self.src[bytes], quoted)?;
                }
            }
        }
        Ok(Word {
            parts: builder.finish()?,
        })
    }

    /// `` `…` ``: the text up to the closing backquote, unescaped, parsed as a list.
    fn backtick(&mut self, quoted: bool) -> Parsed<Part> {
        let start = self.pos;
        self.bump();
        let mut inner: Vec<u8> = Vec::new();
        loop {
            match self.peek() {
                None => return stop("an unterminated backquote"),
                Some(b'`') => {
                    self.bump();
                    break;
                }
                Some(b'\\') => {
                    self.bump();
                    match self.src.get(self.pos).copied() {
                        Some(n @ (b'$' | b'`' | b'\\')) => {
                            self.pos += 1;
                            inner.push(n);
                        }
                        Some(b'"') if quoted => {
                            self.pos += 1;
                            inner.push(b'"');
                        }
                        Some(_) => {
                            inner.push(b'\\');
                            let bytes = self.take_raw_char();
                            inner.extend_from_slice(&self.src[bytes]);
                        }
                        None => inner.push(b'\\'),
                    }
                }
                Some(_) => {
                    let bytes = self.take_char();
                    inner.extend_from_slice(&self.src[bytes]);
                }
            }
        }
        let text = String::from_utf8(inner).map_err(|_| Stop("text that is not UTF-8".into()))?;
        let list = self.nested(text, false, |parser| {
            let list = parser.parse_list(false)?;
            parser.linebreak()?;
            Ok(list)
        })?;
        Ok(Part::Command {
            text: self.text_from(start),
            quoted,
            list,
        })
    }

    /// The inside of `$'…'` (the quote consumed): escapes decoded.
    fn ansi_c(&mut self) -> Parsed<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            let Some(c) = self.src.get(self.pos).copied() else {
                return stop("an unterminated `$'…'`");
            };
            self.pos += 1;
            if c == b'\'' {
                break;
            }
            if c != b'\\' {
                out.push(c);
                continue;
            }
            let Some(e) = self.src.get(self.pos).copied() else {
                return stop("an unterminated `$'…'`");
            };
            self.pos += 1;
            match e {
                b'a' => out.push(7),
                b'b' => out.push(8),
                b'e' | b'E' => out.push(27),
                b'f' => out.push(12),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'v' => out.push(11),
                b'\\' | b'\'' | b'"' | b'?' => out.push(e),
                b'0'..=b'7' => {
                    let mut value = u32::from(e - b'0');
                    for _ in 0..2 {
                        match self.src.get(self.pos).copied() {
                            Some(d @ b'0'..=b'7') => {
                                value = value * 8 + u32::from(d - b'0');
                                self.pos += 1;
                            }
                            _ => break,
                        }
                    }
                    out.push((value & 0xff) as u8);
                }
                b'x' => {
                    let value = self.hex_digits(2);
                    match value {
                        Some(v) => out.push(v as u8),
                        None => out.extend_from_slice(b"\\x"),
                    }
                }
                b'u' | b'U' => {
                    let value = self.hex_digits(if e == b'u' { 4 } else { 8 });
                    match value.and_then(char::from_u32) {
                        Some(ch) => {
                            let mut buffer = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buffer).as_bytes());
                        }
                        None => return stop("a `$'\\u…'` escape the analysis does not decode"),
                    }
                }
                b'c' => return stop("a `$'\\c…'` control escape"),
                other => {
                    out.push(b'\\');
                    out.push(other);
                }
            }
        }
        if out.contains(&0) {
            return stop("a NUL byte in `$'…'` (bash cuts the word there)");
        }
        Ok(out)
    }

    fn hex_digits(&mut self, max: usize) -> Option<u32> {
        let mut value = 0u32;
        let mut count = 0;
        while count < max {
            match self.src.get(self.pos).and_then(|b| (*b as char).to_digit(16)) {
                Some(d) => {
                    value = value * 16 + d;
                    self.pos += 1;
                    count += 1;
                }
                None => break,
            }
        }
        (count > 0).then_some(value)
    }
}

/// True for a name bash accepts as a variable.
pub(crate) fn is_identifier(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty() && is_name_start(bytes[0]) && bytes.iter().all(|b| is_name_char(*b))
}

/// True for a function or command name made of ordinary characters only.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
}

/// Whether the builder holds exactly an unquoted `NAME=` or `NAME+=`.
fn array_prefix(builder: &Builder) -> bool {
    if !builder.parts.is_empty() || builder.quoted {
        return false;
    }
    let Ok(text) = std::str::from_utf8(&builder.lit) else {
        return false;
    };
    let name = text.strip_suffix("+=").or_else(|| text.strip_suffix('='));
    name.is_some_and(is_identifier)
}

/// `NAME=value`, `NAME+=value`, `NAME=( … )` when the word is one (the name and `=`
/// unquoted); a subscripted assignment stops the parse. `source` is the word's source text.
fn as_assignment(word: &Word, source: &[u8]) -> Parsed<Option<Assign>> {
    let Some(Part::Lit { text, quoted: false }) = word.parts.first() else {
        return Ok(None);
    };
    let name_len = text.bytes().take_while(|b| is_name_char(*b)).count();
    if name_len == 0 || !is_name_start(text.as_bytes()[0]) {
        return Ok(None);
    }
    let rest = &text[name_len..];
    if rest.starts_with('[') {
        // `a[i]=v` evaluates `i` as arithmetic; a word that only looks like it (`a[b]`
        // as a command) has no `]=`.
        if source.windows(2).any(|pair| pair == b"]=") || source.windows(3).any(|triple| triple == b"]+=") {
            return stop("an assignment to an array element (its subscript is evaluated)");
        }
        return Ok(None);
    }
    let value_start = if rest.starts_with("+=") {
        2
    } else if rest.starts_with('=') {
        1
    } else {
        return Ok(None);
    };
    let name = text[..name_len].to_string();
    let mut parts = word.parts.clone();
    let after = text[name_len + value_start..].to_string();
    if after.is_empty() {
        parts.remove(0);
    } else {
        parts[0] = Part::Lit {
            text: after,
            quoted: false,
        };
    }
    if let [Part::Array(elements)] = parts.as_slice() {
        return Ok(Some(Assign {
            name,
            value: AssignValue::Array(elements.clone()),
        }));
    }
    if parts.iter().any(|part| matches!(part, Part::Array(_))) {
        return stop("an array assignment the analysis does not parse");
    }
    Ok(Some(Assign {
        name,
        value: AssignValue::Scalar(Word { parts }),
    }))
}

/// The slot of a here-document placeholder: a word that is one quoted literal starting
/// with NUL, which no word of the line can be (the parser refuses NUL bytes).
fn doc_slot(word: &Word) -> Option<usize> {
    match word.parts.as_slice() {
        [Part::Lit { text, quoted: true }] => text.strip_prefix('\u{0}').and_then(|slot| slot.parse().ok()),
        _ => None,
    }
}

fn fill_list(list: &mut List, docs: &mut Vec<Option<Word>>) -> Parsed<()> {
    for item in &mut list.items {
        fill_pipeline(&mut item.and_or.first, docs)?;
        for (_, pipeline) in &mut item.and_or.rest {
            fill_pipeline(pipeline, docs)?;
        }
    }
    Ok(())
}

fn fill_pipeline(pipeline: &mut Pipeline, docs: &mut Vec<Option<Word>>) -> Parsed<()> {
    for command in &mut pipeline.commands {
        fill_command(command, docs)?;
    }
    Ok(())
}

fn fill_redirects(redirects: &mut [Redirect], docs: &mut Vec<Option<Word>>) -> Parsed<()> {
    for redirect in redirects {
        match &mut redirect.target {
            Target::HereDoc(word) => {
                if let Some(slot) = doc_slot(word) {
                    match docs.get_mut(slot).and_then(Option::take) {
                        Some(body) => *word = body,
                        None => return stop("a here-document without its body"),
                    }
                }
                fill_word(word, docs)?;
            }
            Target::Word(word) => fill_word(word, docs)?,
        }
    }
    Ok(())
}

fn fill_word(word: &mut Word, docs: &mut Vec<Option<Word>>) -> Parsed<()> {
    for part in &mut word.parts {
        match part {
            Part::Command { list, .. } | Part::Process { list, .. } => fill_list(list, docs)?,
            Part::Param { inner, .. } | Part::Array(inner) => {
                for word in inner {
                    fill_word(word, docs)?;
                }
            }
            Part::Lit { .. } | Part::Arith { .. } => {}
        }
    }
    Ok(())
}

fn fill_command(command: &mut Command, docs: &mut Vec<Option<Word>>) -> Parsed<()> {
    match command {
        Command::Simple(simple) => {
            for assign in &mut simple.assigns {
                match &mut assign.value {
                    AssignValue::Scalar(word) => fill_word(word, docs)?,
                    AssignValue::Array(words) => {
                        for word in words {
                            fill_word(word, docs)?;
                        }
                    }
                }
            }
            for word in &mut simple.words {
                fill_word(word, docs)?;
            }
            fill_redirects(&mut simple.redirects, docs)
        }
        Command::Compound(compound, redirects) => {
            match compound {
                Compound::Brace(list) | Compound::Subshell(list) => fill_list(list, docs)?,
                Compound::If { branches, otherwise } => {
                    for (cond, body) in branches {
                        fill_list(cond, docs)?;
                        fill_list(body, docs)?;
                    }
                    if let Some(list) = otherwise {
                        fill_list(list, docs)?;
                    }
                }
                Compound::Loop { cond, body } => {
                    fill_list(cond, docs)?;
                    fill_list(body, docs)?;
                }
                Compound::For { words, body, .. } => {
                    for word in words.iter_mut().flatten() {
                        fill_word(word, docs)?;
                    }
                    fill_list(body, docs)?;
                }
                Compound::Case { word, arms } => {
                    fill_word(word, docs)?;
                    for (patterns, body) in arms {
                        for pattern in patterns {
                            fill_word(pattern, docs)?;
                        }
                        fill_list(body, docs)?;
                    }
                }
                Compound::Cond(words) => {
                    for word in words {
                        fill_word(word, docs)?;
                    }
                }
            }
            fill_redirects(redirects, docs)
        }
        Command::Function { body, .. } | Command::Coproc(body) => fill_command(body, docs),
    }
}
