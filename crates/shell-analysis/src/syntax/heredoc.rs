//! Here-documents: bodies read after the line that names them, then filled into the
//! redirections that wait for them.

use super::ast::{AssignValue, Command, Compound, List, Part, Pipeline, RedirOp, Redirect, Target, Word};
use super::{Builder, Parsed, Parser, Stop, stop};

pub(super) struct PendingDoc {
    delimiter: Vec<u8>,
    quoted: bool,
    strip_tabs: bool,
    slot: usize,
}

impl Parser {
    pub(super) fn heredoc(&mut self, strip_tabs: bool) -> Parsed<Redirect> {
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
    pub(super) fn read_docs(&mut self) -> Parsed<()> {
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
    pub(super) fn heredoc_body(&mut self) -> Parsed<Word> {
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

    /// Replaces here-document placeholders by their bodies.
    pub(super) fn fill_docs(&mut self, list: &mut List) -> Parsed<()> {
        if self.docs.len() == self.filled {
            return Ok(());
        }
        self.filled = self.docs.len();
        let docs = &mut self.docs;
        fill_list(list, docs)
    }

    // --- words -------------------------------------------------------------------------
}

/// The slot of a here-document placeholder: a word that is one quoted literal starting
/// with NUL, which no word of the line can be (the parser refuses NUL bytes).
pub(super) fn doc_slot(word: &Word) -> Option<usize> {
    match word.parts.as_slice() {
        [Part::Lit { text, quoted: true }] => text.strip_prefix('\u{0}').and_then(|slot| slot.parse().ok()),
        _ => None,
    }
}

pub(super) fn fill_list(list: &mut List, docs: &mut Vec<Option<Word>>) -> Parsed<()> {
    for item in &mut list.items {
        fill_pipeline(&mut item.and_or.first, docs)?;
        for (_, pipeline) in &mut item.and_or.rest {
            fill_pipeline(pipeline, docs)?;
        }
    }
    Ok(())
}

pub(super) fn fill_pipeline(pipeline: &mut Pipeline, docs: &mut Vec<Option<Word>>) -> Parsed<()> {
    for command in &mut pipeline.commands {
        fill_command(command, docs)?;
    }
    Ok(())
}

pub(super) fn fill_redirects(redirects: &mut [Redirect], docs: &mut Vec<Option<Word>>) -> Parsed<()> {
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

pub(super) fn fill_word(word: &mut Word, docs: &mut Vec<Option<Word>>) -> Parsed<()> {
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

pub(super) fn fill_command(command: &mut Command, docs: &mut Vec<Option<Word>>) -> Parsed<()> {
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
