//! The Starlark subset Codex's `.rules` files are written in: top-level calls
//! (`prefix_rule(pattern = […], decision = "allow")`) whose arguments are strings, lists,
//! numbers, `True`, `False` and `None`, with `#` comments. Anything else (variables,
//! loops, `+`) is refused with its line: a rule toolgate cannot read must not vanish.

/// A value of the subset.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Expr {
    Str(String),
    List(Vec<Expr>),
    Bool(bool),
    Int(i64),
    None,
}

/// One top-level call.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Call {
    pub(super) name: String,
    /// Positional arguments have no name.
    pub(super) args: Vec<(Option<String>, Expr)>,
    pub(super) line: usize,
}

impl Call {
    /// The argument named `name`.
    pub(super) fn arg(&self, name: &str) -> Option<&Expr> {
        self.args
            .iter()
            .find(|(key, _)| key.as_deref() == Some(name))
            .map(|(_, value)| value)
    }
}

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
#[error("line {line}: {message}")]
pub(super) struct SyntaxError {
    pub(super) line: usize,
    pub(super) message: String,
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    Str(String),
    Int(i64),
    Punct(char),
}

fn error(line: usize, message: impl Into<String>) -> SyntaxError {
    SyntaxError {
        line,
        message: message.into(),
    }
}

fn lex(text: &str) -> Result<Vec<(Token, usize)>, SyntaxError> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut at = 0;
    let mut line = 1;
    while at < chars.len() {
        let c = chars[at];
        match c {
            '\n' => {
                line += 1;
                at += 1;
            }
            c if c.is_whitespace() => at += 1,
            '\\' if chars.get(at + 1) == Some(&'\n') => {
                line += 1;
                at += 2;
            }
            '#' => {
                while at < chars.len() && chars[at] != '\n' {
                    at += 1;
                }
            }
            '(' | ')' | '[' | ']' | ',' | '=' | ';' => {
                tokens.push((Token::Punct(c), line));
                at += 1;
            }
            '"' | '\'' => {
                let start_line = line;
                let (value, next, lines) = string(&chars, at, false).map_err(|m| error(start_line, m))?;
                tokens.push((Token::Str(value), start_line));
                line += lines;
                at = next;
            }
            'r' | 'R' if matches!(chars.get(at + 1), Some('"' | '\'')) => {
                let start_line = line;
                let (value, next, lines) = string(&chars, at + 1, true).map_err(|m| error(start_line, m))?;
                tokens.push((Token::Str(value), start_line));
                line += lines;
                at = next;
            }
            c if c.is_ascii_digit() || (c == '-' && chars.get(at + 1).is_some_and(char::is_ascii_digit)) => {
                let start = at;
                at += 1;
                while at < chars.len() && chars[at].is_ascii_digit() {
                    at += 1;
                }
                let digits: String = chars[start..at].iter().collect();
                let value = digits
                    .parse()
                    .map_err(|_| error(line, format!("bad number {digits}")))?;
                tokens.push((Token::Int(value), line));
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = at;
                while at < chars.len() && (chars[at].is_alphanumeric() || chars[at] == '_') {
                    at += 1;
                }
                tokens.push((Token::Ident(chars[start..at].iter().collect()), line));
            }
            other => return Err(error(line, format!("unsupported Starlark: {other:?}"))),
        }
    }
    Ok(tokens)
}

/// A string literal starting at `at` (its quote): its value, the index after it, and
/// the newlines it spans.
fn string(chars: &[char], at: usize, raw: bool) -> Result<(String, usize, usize), String> {
    let quote = chars[at];
    let triple = chars.get(at + 1) == Some(&quote) && chars.get(at + 2) == Some(&quote);
    let mut i = if triple { at + 3 } else { at + 1 };
    let mut out = String::new();
    let mut lines = 0;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err("unterminated string".into());
        };
        if c == quote && (!triple || (chars.get(i + 1) == Some(&quote) && chars.get(i + 2) == Some(&quote))) {
            return Ok((out, if triple { i + 3 } else { i + 1 }, lines));
        }
        if c == '\n' {
            if !triple {
                return Err("unterminated string".into());
            }
            lines += 1;
        }
        if c == '\\' && !raw {
            let Some(&next) = chars.get(i + 1) else {
                return Err("unterminated string".into());
            };
            i += 2;
            match next {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                '\\' | '"' | '\'' => out.push(next),
                '\n' => lines += 1,
                other => return Err(format!("unsupported escape \\{other}")),
            }
            continue;
        }
        if c == '\\' && raw && chars.get(i + 1) == Some(&quote) {
            out.push('\\');
            out.push(quote);
            i += 2;
            continue;
        }
        out.push(c);
        i += 1;
    }
}

struct Parser {
    tokens: Vec<(Token, usize)>,
    at: usize,
}

impl Parser {
    fn line(&self) -> usize {
        self.tokens
            .get(self.at)
            .or_else(|| self.tokens.last())
            .map_or(1, |(_, line)| *line)
    }

    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at).map(|(token, _)| token)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).map(|(token, _)| token.clone());
        self.at += 1;
        token
    }

    fn expect(&mut self, c: char) -> Result<(), SyntaxError> {
        let line = self.line();
        match self.next() {
            Some(Token::Punct(p)) if p == c => Ok(()),
            Some(other) => Err(error(line, format!("expected `{c}`, found {other:?}"))),
            None => Err(error(line, format!("expected `{c}` at the end of the file"))),
        }
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(&Token::Punct(c)) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expr(&mut self) -> Result<Expr, SyntaxError> {
        let line = self.line();
        match self.next() {
            Some(Token::Str(value)) => Ok(Expr::Str(value)),
            Some(Token::Int(value)) => Ok(Expr::Int(value)),
            Some(Token::Ident(name)) => match name.as_str() {
                "True" => Ok(Expr::Bool(true)),
                "False" => Ok(Expr::Bool(false)),
                "None" => Ok(Expr::None),
                _ => Err(error(
                    line,
                    format!("unsupported Starlark: the name {name:?} (only literals are read)"),
                )),
            },
            Some(Token::Punct('[')) => {
                let mut items = Vec::new();
                while !self.eat(']') {
                    items.push(self.expr()?);
                    if !self.eat(',') {
                        self.expect(']')?;
                        break;
                    }
                }
                Ok(Expr::List(items))
            }
            Some(other) => Err(error(line, format!("unsupported Starlark: {other:?}"))),
            None => Err(error(line, "unexpected end of the file")),
        }
    }

    fn call(&mut self) -> Result<Call, SyntaxError> {
        let line = self.line();
        let name = match self.next() {
            Some(Token::Ident(name)) => name,
            Some(other) => {
                return Err(error(
                    line,
                    format!("unsupported Starlark: {other:?} (only calls are read)"),
                ));
            }
            None => return Err(error(line, "unexpected end of the file")),
        };
        if self.peek() != Some(&Token::Punct('(')) {
            return Err(error(
                line,
                format!("unsupported Starlark after {name:?} (only calls such as prefix_rule(...) are read)"),
            ));
        }
        self.expect('(')?;
        let mut args = Vec::new();
        while !self.eat(')') {
            let keyword = match (self.tokens.get(self.at), self.tokens.get(self.at + 1)) {
                (Some((Token::Ident(key), _)), Some((Token::Punct('='), _))) => Some(key.clone()),
                _ => None,
            };
            if keyword.is_some() {
                self.at += 2;
            }
            let value = self.expr()?;
            args.push((keyword, value));
            if !self.eat(',') {
                self.expect(')')?;
                break;
            }
        }
        self.eat(';');
        Ok(Call { name, args, line })
    }
}

/// The top-level calls of a file.
pub(super) fn parse(text: &str) -> Result<Vec<Call>, SyntaxError> {
    let mut parser = Parser {
        tokens: lex(text)?,
        at: 0,
    };
    let mut calls = Vec::new();
    while parser.at < parser.tokens.len() {
        calls.push(parser.call()?);
    }
    Ok(calls)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of Codex's documented example (codex-rs/execpolicy/README.md).
    #[test]
    fn a_documented_rule() {
        let calls = parse(
            "# comment\nprefix_rule(\n    pattern = [\"cmd\", [\"alt1\", 'alt2']], # ordered\n    decision = \"prompt\",\n    match = [[\"cmd\", \"alt1\"], \"cmd alt2\"],\n    not_match = [[\"cmd\", \"oops\"], \"cmd alt3\"],\n)\nprefix_rule(pattern=[\"ls\"])\n",
        )
        .unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].name, "prefix_rule");
        assert_eq!(calls[0].line, 2);
        assert_eq!(
            calls[0].arg("pattern"),
            Some(&Expr::List(vec![
                Expr::Str("cmd".into()),
                Expr::List(vec![Expr::Str("alt1".into()), Expr::Str("alt2".into())])
            ]))
        );
        assert_eq!(calls[0].arg("decision"), Some(&Expr::Str("prompt".into())));
        assert_eq!(calls[1].line, 8);
    }

    /// Escapes, triple quotes and raw strings.
    #[test]
    fn strings() {
        let calls = parse("f(\"a\\\"b\\n\", '''x\ny''', r\"\\d\")").unwrap();
        assert_eq!(
            calls[0].args.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>(),
            [
                Expr::Str("a\"b\n".into()),
                Expr::Str("x\ny".into()),
                Expr::Str("\\d".into())
            ]
        );
    }

    /// What the subset does not have is refused, with its line.
    #[test]
    fn the_rest_is_refused() {
        assert_eq!(parse("x = [\"a\"]").unwrap_err().line, 1);
        assert_eq!(parse("\nprefix_rule(pattern = X)").unwrap_err().line, 2);
        assert!(parse("f(\"a\" + \"b\")").is_err());
        assert!(parse("for x in []: f(x)").is_err());
        assert!(parse("f(\"open").is_err());
        assert!(parse("f(").is_err());
    }
}
