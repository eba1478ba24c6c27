//! Words: quotes, escapes, `$'…'`, parameters, substitutions, arithmetic and
//! assignments, read the way bash's reader reads them.

use super::ast::{Assign, AssignValue, List, Part, Word};
use super::{Builder, Parsed, Parser, Stop, is_name_char, is_name_start, stop};

impl Parser {
    /// One word; `assign_ok` allows `NAME=( … )`.
    pub(super) fn lex_word(&mut self, assign_ok: bool) -> Parsed<Word> {
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
                    let empty = bytes.is_empty();
                    builder.push(&self.src[bytes], true)?;
                    builder.mark_quoted_empty(empty)?;
                }
                b'"' => {
                    self.bump();
                    let before = builder.size();
                    self.double_quoted(&mut builder)?;
                    let empty = builder.size() == before;
                    builder.mark_quoted_empty(empty)?;
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
    pub(super) fn double_quoted(&mut self, builder: &mut Builder) -> Parsed<()> {
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
    pub(super) fn dollar(&mut self, builder: &mut Builder, quoted: bool) -> Parsed<()> {
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
                builder.mark_quoted_empty(bytes.is_empty())
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
    pub(super) fn substitution_list(&mut self) -> Parsed<List> {
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

    pub(super) fn process_substitution(&mut self) -> Parsed<Part> {
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
    pub(super) fn arithmetic(&mut self, start: usize, quoted: bool) -> Parsed<Part> {
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
    pub(super) fn braced_parameter(&mut self, start: usize, quoted: bool) -> Parsed<Part> {
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

    pub(super) fn parameter_name(&mut self) -> Parsed<String> {
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
    pub(super) fn subscript(&mut self) -> Parsed<()> {
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
    pub(super) fn brace_word(&mut self, quoted: bool, slash: bool) -> Parsed<Word> {
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
    pub(super) fn backtick(&mut self, quoted: bool) -> Parsed<Part> {
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
    pub(super) fn ansi_c(&mut self) -> Parsed<Vec<u8>> {
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

    pub(super) fn hex_digits(&mut self, max: usize) -> Option<u32> {
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
pub(super) fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
}

/// Whether the builder holds exactly an unquoted `NAME=` or `NAME+=`.
pub(super) fn array_prefix(builder: &Builder) -> bool {
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
pub(super) fn as_assignment(word: &Word, source: &[u8]) -> Parsed<Option<Assign>> {
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
