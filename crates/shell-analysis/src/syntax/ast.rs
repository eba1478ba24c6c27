//! The syntax tree: lists, pipelines, commands, words and their parts.

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
    /// Where in `raw` the first word starts (after the `NAME=value` prefix), when it can
    /// be told.
    pub(crate) words_at: usize,
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
