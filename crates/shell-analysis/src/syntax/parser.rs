//! The grammar: lists, and-or lists, pipelines, commands, compound commands and
//! redirections, read by recursive descent with a bounded depth.

use super::ast::{AndOr, Command, Compound, Item, List, Pipeline, RedirOp, Redirect, Simple, Target, Word};
use super::word::{as_assignment, is_identifier, is_plain_name};
use super::{MAX_DEPTH, Parsed, Parser, RESERVED_END, Stop, is_name_char, stop, utf8_len};

impl Parser {
    /// `p` moved past every `\`-newline at it.
    pub(super) fn cont(&self, mut p: usize) -> usize {
        while self.src.get(p) == Some(&b'\\') && self.src.get(p + 1) == Some(&b'\n') {
            p += 2;
        }
        p
    }

    pub(super) fn peek(&self) -> Option<u8> {
        self.src.get(self.cont(self.pos)).copied()
    }

    /// The byte `n` positions ahead (0 = `peek`), line continuations skipped.
    pub(super) fn peek_at(&self, n: usize) -> Option<u8> {
        let mut p = self.cont(self.pos);
        for _ in 0..n {
            p = self.cont(p + 1);
        }
        self.src.get(p).copied()
    }

    pub(super) fn bump(&mut self) {
        self.pos = self.cont(self.pos) + 1;
    }

    /// Consumes one whole character (all bytes of a UTF-8 sequence) and returns them.
    pub(super) fn take_char(&mut self) -> std::ops::Range<usize> {
        let start = self.cont(self.pos);
        let len = self.src.get(start).map_or(1, |b| utf8_len(*b));
        let end = (start + len).min(self.src.len());
        self.pos = end;
        start.min(end)..end
    }

    /// Consumes one raw character at `pos` (no line-continuation removal).
    pub(super) fn take_raw_char(&mut self) -> std::ops::Range<usize> {
        let start = self.pos;
        let len = self.src.get(start).map_or(1, |b| utf8_len(*b));
        let end = (start + len).min(self.src.len());
        self.pos = end;
        start.min(end)..end
    }

    pub(super) fn eat(&mut self, text: &str) -> bool {
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

    pub(super) fn text_from(&self, start: usize) -> String {
        String::from_utf8_lossy(&self.src[start.min(self.pos)..self.pos]).into_owned()
    }

    pub(super) fn unexpected(&self) -> Stop {
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

    pub(super) fn deeper(&mut self) -> Parsed<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return stop(format!("nesting deeper than {MAX_DEPTH} levels"));
        }
        Ok(())
    }

    pub(super) fn shallower(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    pub(super) fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.bump();
        }
    }

    /// Skips a comment (to the newline, which stays): no line continuation inside.
    pub(super) fn skip_comment(&mut self) {
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

    pub(super) fn newline(&mut self) -> Parsed<()> {
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
    pub(super) fn linebreak(&mut self) -> Parsed<()> {
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

    pub(super) fn is_delimiter(c: Option<u8>) -> bool {
        matches!(
            c,
            None | Some(b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>')
        )
    }

    /// Whether the next token is the reserved word `word` (unquoted, followed by a
    /// delimiter).
    pub(super) fn at_word(&self, word: &str) -> bool {
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

    pub(super) fn expect_word(&mut self, word: &str) -> Parsed<()> {
        self.linebreak()?;
        if self.at_word(word) {
            self.eat(word);
            Ok(())
        } else {
            stop(format!("expected `{word}`: {}", self.unexpected().0))
        }
    }

    pub(super) fn at_list_end(&self) -> bool {
        match self.peek() {
            None | Some(b')') => true,
            Some(b';') => matches!(self.peek_at(1), Some(b';' | b'&')),
            _ => self.at_reserved_end(),
        }
    }

    /// Whether the next token is one of [`RESERVED_END`] (the first byte is checked once
    /// before the words are: most tokens start with none of theirs).
    pub(super) fn at_reserved_end(&self) -> bool {
        matches!(self.peek(), Some(b't' | b'e' | b'f' | b'd' | b'}'))
            && RESERVED_END.iter().any(|word| self.at_word(word))
    }

    // --- lists -----------------------------------------------------------------------

    /// A list; `nonempty` requires at least one command.
    pub(super) fn parse_list(&mut self, nonempty: bool) -> Parsed<List> {
        self.parse_list_into(nonempty, None)
    }

    /// A list; with `sink`, the items parsed so far go to it whenever none of them waits
    /// for a here-document's body, and the list returned holds the rest.
    pub(super) fn parse_list_into(&mut self, nonempty: bool, mut sink: Option<&mut dyn FnMut(List)>) -> Parsed<List> {
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

    pub(super) fn parse_and_or(&mut self) -> Parsed<AndOr> {
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

    pub(super) fn parse_pipeline(&mut self) -> Parsed<Pipeline> {
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

    pub(super) fn parse_command(&mut self) -> Parsed<Command> {
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
    pub(super) fn parse_compound(&mut self) -> Parsed<Option<Compound>> {
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

    pub(super) fn parse_cond(&mut self) -> Parsed<Compound> {
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

    pub(super) fn function_name(&mut self) -> Parsed<String> {
        let word = self.lex_word(false)?;
        match word.plain() {
            Some(name) if !name.is_empty() => Ok(name.to_string()),
            _ => stop("a function whose name is not plain text"),
        }
    }

    pub(super) fn function_body(&mut self, name: String) -> Parsed<Command> {
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

    pub(super) fn trailing_redirects(&mut self) -> Parsed<Vec<Redirect>> {
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

    pub(super) fn parse_simple(&mut self, first: Option<(Word, usize)>) -> Parsed<Command> {
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
                simple.words_at = word_start.saturating_sub(start);
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

    pub(super) fn at_redirect(&self) -> bool {
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

    pub(super) fn parse_redirect(&mut self) -> Parsed<Redirect> {
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

    /// Runs `f` on `text` as a separate source (backquotes, here-document bodies).
    pub(super) fn nested<T>(
        &mut self,
        text: String,
        keep_outer: bool,
        f: impl FnOnce(&mut Parser) -> Parsed<T>,
    ) -> Parsed<T> {
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
}
