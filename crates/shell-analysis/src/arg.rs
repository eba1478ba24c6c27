//! One argument of a command after expansion, what a path argument is used for, and a
//! command as the walker hands it to the program table.

use std::borrow::Cow;

use crate::expand::{Field, Seg};

/// What a path effect does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Read,
    Write,
    Dir,
}

/// One argument of a command: a field and how its word expanded.
#[derive(Clone, Debug)]
pub(crate) struct Arg {
    pub(crate) field: Field,
    /// The word may vanish.
    pub(crate) vanish: bool,
    /// The word may split into several arguments.
    pub(crate) split: bool,
}

impl Arg {
    pub(crate) fn literal(&self) -> Option<Cow<'_, str>> {
        if self.split { None } else { self.field.literal() }
    }

    /// The value when the analysis knows it (known holes included).
    pub(crate) fn value(&self) -> Option<Cow<'_, str>> {
        if self.split { None } else { self.field.value() }
    }

    /// Whether the argument is exactly the literal text `text` (without copying it).
    pub(crate) fn is_literal(&self, text: &str) -> bool {
        self.literal().is_some_and(|literal| literal == text)
    }

    /// True when the argument could start with `-` although its text does not show it.
    pub(crate) fn maybe_option(&self) -> bool {
        match self.field.segs.first() {
            Some(Seg::Lit(text)) => text.starts_with('-') && self.value().is_none(),
            Some(Seg::Hole { value: Some(value), .. }) => value.starts_with('-') && self.split,
            None => false,
            _ => true,
        }
    }

    pub(crate) fn text(text: impl Into<String>) -> Arg {
        Arg {
            field: Field::text(text),
            vanish: false,
            split: false,
        }
    }
}

/// A command ready to be modelled: its arguments after expansion.
#[derive(Clone, Debug)]
pub(crate) struct Cmd<'t> {
    pub(crate) args: Vec<Arg>,
    /// The source text, for the top-level command of a simple command (borrowed from the
    /// tree being walked).
    pub(crate) raw: Option<&'t str>,
    /// Variables set in its environment by a wrapper (`env NAME=value cmd`), with their
    /// values when known.
    pub(crate) env: Vec<(String, Option<String>)>,
    /// Runs in this directory (relative to the current one) instead (`env -C`).
    pub(crate) chdir: Option<Field>,
    /// Bypass functions (`command x`, `exec x`, wrappers that exec).
    pub(crate) external: bool,
}

impl Arg {
    pub(crate) fn unknown(display: &str) -> Arg {
        Arg {
            field: Field::unknown(display),
            vanish: false,
            split: true,
        }
    }
}
