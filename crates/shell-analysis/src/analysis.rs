//! The analysis's result: the `bash` parts a line asserts, and the paths it reads, writes
//! and works in — and the environment it was read in.

use std::path::PathBuf;

use toolgate_core::Resource;

use crate::expand::PathHole;

/// One resource the line asserts for `bash`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Part {
    /// The resource: a command's words (holes where values are only known at run time),
    /// its source text, or — for an opaque part — a single hole standing for anything.
    pub resource: Resource,
    /// The "always" pattern; `None` when no saved approval may satisfy this part.
    pub save: Option<String>,
    /// True when the part stands for code the analysis cannot see: every rule of the
    /// action could apply to it, and the effect is at best ask.
    pub opaque: bool,
    /// Why the part is opaque or cannot be saved.
    pub why: Option<String>,
}

impl Part {
    /// How the part is shown (and the resource string the request carries).
    pub fn display(&self) -> String {
        self.resource.display()
    }
}

/// A piece of a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// Known text.
    Text(String),
    /// A part known only at run time.
    Hole {
        /// How it is shown.
        display: String,
        /// What it may be.
        class: PathHole,
    },
}

/// A path the line refers to.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PathRef {
    /// The path as bash would see it after expansion, with holes.
    pub pieces: Vec<Piece>,
    /// The directory it is relative to: relative to the working directory (`""` is the
    /// working directory itself) or absolute; `None` when the directory is unknown.
    pub base: Option<String>,
    /// True when everything below the path is touched too (`rm -r`, `grep -r`).
    pub tree: bool,
    /// True for a directory the command creates when it is missing and then works in (a
    /// package manager's cache): its `external_directory` boundary is itself, whether it
    /// exists yet or not.
    pub created: bool,
    /// True when nothing of the line ran before the command that touches the path (no
    /// program that could have changed the files below it): a recursive read is then
    /// decided by the files that exist below it (plan.rs).
    pub settled: bool,
}

impl PathRef {
    /// The path when it has no hole.
    pub fn literal(&self) -> Option<String> {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Hole { .. } => return None,
            }
        }
        Some(out)
    }

    /// How the path is shown.
    pub fn display(&self) -> String {
        let mut out = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => out.push_str(text),
                Piece::Hole { display, .. } => out.push_str(display),
            }
        }
        out
    }

    /// The path joined to its base, as shown (`sub/x`, `/tmp/x`, `$X/x`).
    pub fn joined(&self) -> String {
        let path = self.display();
        match &self.base {
            _ if path.starts_with('/') => path,
            Some(base) if base.is_empty() => path,
            Some(base) => format!("{}/{path}", base.trim_end_matches('/')),
            None => format!("(unknown directory)/{path}"),
        }
    }
}

/// Everything the permission checks need to know about one command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Analysis {
    /// The `bash` resources, in order of appearance, without repeats.
    pub parts: Vec<Part>,
    /// Files read (`cat` operands, `< file`, …).
    pub reads: Vec<PathRef>,
    /// Files written, created or deleted (`>`, `tee`, `cp` targets, `rm` operands, …).
    pub writes: Vec<PathRef>,
    /// Directories and paths that must be inside the project or approved (`cd` targets,
    /// `-C` directories, operands of file commands).
    pub paths: Vec<PathRef>,
    /// Why the whole line is opaque, when it is: nothing of it could be analysed.
    pub opaque: Option<String>,
}

/// What the analysis knows about the world the line will run in.
#[derive(Clone, Debug)]
pub(crate) struct Env {
    /// The working directory (absolute): patterns are matched against it.
    pub(crate) workdir: PathBuf,
    /// `$HOME` as the shell will see it.
    pub(crate) home: Option<String>,
    /// `$PATH` as the shell will see it (to know which names are commands).
    pub(crate) path: Option<String>,
    /// Whether `$CDPATH` is set (then `cd name` may go anywhere).
    pub(crate) cdpath: bool,
}

impl Env {
    /// The environment this process would give the shell, running in `workdir`.
    pub(crate) fn inherited(workdir: impl Into<PathBuf>) -> Env {
        Env {
            workdir: workdir.into(),
            home: std::env::var("HOME").ok().filter(|home| home.starts_with('/')),
            path: std::env::var("PATH").ok(),
            cdpath: std::env::var_os("CDPATH").is_some_and(|value| !value.is_empty()),
        }
    }
}
