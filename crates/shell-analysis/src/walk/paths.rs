//! Paths: redirections, file operands, patterns expanded against the files bash would see.

use std::borrow::Cow;
use std::path::PathBuf;

use super::{Cwd, State, Walker};
use crate::analysis::{PathRef, Piece};
use crate::arg::{Access, Arg};
use crate::programs::ARCHIVE_MEMBERS;

/// How a read below what an extractor wrote is shown: the file a member links to.
const ARCHIVED_LINK: &str = "(a link an archive held)";
use crate::expand::{self, Expanded, Field, Glob, Mode, PathHole, Seg};
use crate::path::{absolute, is_device, join};
use crate::syntax::{RedirOp, Redirect, Target};

impl Walker<'_> {
    pub(super) fn redirects(&mut self, redirects: &[Redirect], state: &State) {
        for redirect in redirects {
            if self.stopped() {
                return;
            }
            match &redirect.target {
                Target::HereDoc(body) => {
                    self.nested_in_word(body, state);
                }
                Target::Word(word) => {
                    self.nested_in_word(word, state);
                    let mode = if redirect.op == RedirOp::HereString {
                        Mode::Value
                    } else {
                        Mode::Words
                    };
                    let Some(expanded) = self.expand(word, state, mode) else {
                        return;
                    };
                    let access = match redirect.op {
                        RedirOp::In => Some(Access::Read),
                        RedirOp::Out | RedirOp::Append | RedirOp::Clobber | RedirOp::OutErr | RedirOp::AppendErr => {
                            Some(Access::Write)
                        }
                        RedirOp::ReadWrite => {
                            self.file_args(&expanded, Access::Read, state, false);
                            Some(Access::Write)
                        }
                        RedirOp::Dup | RedirOp::HereString | RedirOp::HereDoc => None,
                    };
                    if let Some(access) = access {
                        self.file_args(&expanded, access, state, false);
                    }
                }
            }
        }
    }

    /// Records the fields of an expanded word as paths.
    pub(super) fn file_args(&mut self, expanded: &Expanded, access: Access, state: &State, tree: bool) {
        for field in &expanded.fields {
            let arg = Arg {
                field: field.clone(),
                vanish: expanded.vanish,
                split: expanded.split,
            };
            self.file(&arg, access, state, tree, None);
        }
    }

    /// Records one path effect: the field relative to the current directory (or `under`).
    pub(crate) fn file(&mut self, arg: &Arg, access: Access, state: &State, tree: bool, under: Option<&Field>) {
        // The files below are the ones there are now when no program ran before, or when
        // piped.rs found that the `find` feeding this `xargs` changes nothing either.
        self.out.settled = !self.programs_ran || self.piped_settled;
        self.file_at(arg, access, state, tree, under);
        self.out.settled = false;
        let members = arg
            .field
            .segs
            .iter()
            .any(|seg| matches!(seg, Seg::Hole { display, .. } if display == ARCHIVE_MEMBERS));
        if access == Access::Write && members {
            for base in Self::bases(state, under) {
                let dir = base.map_or_else(|| "/".to_string(), |base| absolute(&self.env.workdir, &base));
                if !self.extracted.contains(&dir) {
                    self.extracted.push(dir);
                }
            }
        } else if access == Access::Read && !self.extracted.is_empty() {
            // Below what an extractor wrote in this line, a name may be a link the archive
            // held (to a file a read rule denies): read as an unknown file.
            let below = Self::bases(state, under)
                .into_iter()
                .any(|base| match (base, arg.value()) {
                    (Some(base), Some(value)) => {
                        let path = absolute(&self.env.workdir, &join(&base, &value));
                        self.extracted.iter().any(|dir| {
                            dir == "/" || path == *dir || path.starts_with(&format!("{}/", dir.trim_end_matches('/')))
                        })
                    }
                    _ => true,
                });
            if below {
                self.file_at(&Arg::unknown(ARCHIVED_LINK), Access::Read, state, tree, None);
            }
        }
    }

    fn file_at(&mut self, arg: &Arg, access: Access, state: &State, tree: bool, under: Option<&Field>) {
        let kind = match access {
            Access::Read => 0,
            Access::Write => 1,
            Access::Dir => 2,
        };
        // The value, worked out once (`arg.value()`: none when the word may split).
        let value = arg.value();
        if let Some(value) = &value
            && (value.starts_with("/dev/tcp/") || value.starts_with("/dev/udp/"))
        {
            self.refuse("a network connection through /dev/tcp or /dev/udp");
            return;
        }
        if arg.split {
            // The value may be several paths, anywhere.
            self.out.path(
                kind,
                PathRef {
                    pieces: vec![Piece::Hole {
                        display: arg.field.display(),
                        class: PathHole::Any,
                    }],
                    base: None,
                    tree,
                    created: false,
                    settled: false,
                },
            );
            return;
        }
        let field = &arg.field;
        if let Some(value) = &value
            && is_device(value)
        {
            return;
        }
        if let Some(value) = value
            && (value.starts_with("/proc/") || value.starts_with("/dev/fd/") || value == "/proc")
        {
            // `/dev/fd/../…` and `/proc/self/…` name files by the process that opens them.
            self.out.path(
                kind,
                PathRef {
                    pieces: vec![Piece::Hole {
                        display: value.into_owned(),
                        class: PathHole::Any,
                    }],
                    base: None,
                    tree,
                    created: false,
                    settled: false,
                },
            );
            return;
        }
        for base in Self::bases(state, under) {
            let base = base.as_deref();
            if field.is_pattern()
                && let Some(base_dir) = base
            {
                for matched in self.glob(field, base_dir) {
                    self.out.path(
                        kind,
                        PathRef {
                            pieces: vec![Piece::Text(matched)],
                            base: Some(base_dir.to_string()),
                            tree,
                            created: false,
                            settled: false,
                        },
                    );
                }
            }
            self.out.field_path(kind, field, base, tree);
        }
    }

    /// The directories a relative path may be relative to (borrowed from the state when
    /// they are its working directories).
    pub(super) fn bases<'s>(state: &'s State, under: Option<&Field>) -> Vec<Option<Cow<'s, str>>> {
        let bases = || -> Vec<Option<Cow<'s, str>>> {
            match &state.cwd {
                Cwd::Known(dirs) => dirs.iter().map(|dir| Some(Cow::Borrowed(dir.as_str()))).collect(),
                Cwd::Unknown => vec![None],
            }
        };
        match under {
            None => bases(),
            Some(dir) => match dir.value() {
                Some(dir) if dir.starts_with('/') => vec![Some(Cow::Owned(dir.into_owned()))],
                Some(dir) => bases()
                    .into_iter()
                    .map(|base| base.map(|base| Cow::Owned(join(&base, &dir))))
                    .collect(),
                None => vec![None],
            },
        }
    }

    /// Matches a pattern field against the filesystem from `base` (relative to the
    /// working directory, or absolute), as bash would.
    pub(super) fn glob(&mut self, field: &Field, base: &str) -> Vec<String> {
        let components = expand::components(field);
        let absolute_pattern = field.starts_with("/");
        let root = if absolute_pattern {
            PathBuf::from("/")
        } else {
            PathBuf::from(absolute(&self.env.workdir, base))
        };
        let mut current: Vec<(PathBuf, String)> =
            vec![(root, if absolute_pattern { "/".into() } else { String::new() })];
        let count = components.len();
        for (index, component) in components.iter().enumerate() {
            if component.is_empty() {
                if index == 0 {
                    continue;
                }
                for (_, shown) in current.iter_mut() {
                    if !shown.ends_with('/') {
                        shown.push('/');
                    }
                }
                continue;
            }
            let active = component.iter().any(|seg| matches!(seg, Seg::Glob(_)));
            let mut next = Vec::new();
            for (dir, shown) in &current {
                let prefix = if shown.is_empty() || shown.ends_with('/') {
                    shown.clone()
                } else {
                    format!("{shown}/")
                };
                if active {
                    let Some(listing) = self.fs.list(dir) else { continue };
                    // Matching a name costs the pattern's length times the name's (at most
                    // 255 bytes): each name listed is counted at the pattern's length.
                    let pattern_len: usize = component
                        .iter()
                        .map(|seg| match seg {
                            Seg::Lit(text) => text.len(),
                            _ => 1,
                        })
                        .sum();
                    if !self.spend(10 + listing.len().saturating_mul(pattern_len + 1)) {
                        return Vec::new();
                    }
                    let names: Vec<&String> = listing
                        .iter()
                        .filter(|name| expand::component_matches(component, name))
                        .collect();
                    for name in names {
                        let path = dir.join(name);
                        if index + 1 < count && !self.fs.is_dir(&path) {
                            continue;
                        }
                        next.push((path, format!("{prefix}{name}")));
                    }
                } else {
                    let name: String = component
                        .iter()
                        .map(|seg| match seg {
                            Seg::Lit(text) => text.clone(),
                            Seg::Hole { value: Some(value), .. } => value.clone(),
                            _ => String::new(),
                        })
                        .collect();
                    let path = dir.join(&name);
                    if self.fs.exists(&path) {
                        next.push((path, format!("{prefix}{name}")));
                    }
                }
                if next.len() > 1000 {
                    return Vec::new();
                }
            }
            current = next;
        }
        current.into_iter().map(|(_, shown)| shown).collect()
    }

    // --- simple commands --------------------------------------------------------------------
}

/// A path's pieces for the permission checks: patterns become one-component holes.
pub(super) fn pieces(field: &Field) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    let push_text = |out: &mut Vec<Piece>, text: &str| match out.last_mut() {
        Some(Piece::Text(last)) => last.push_str(text),
        _ => out.push(Piece::Text(text.to_string())),
    };
    for seg in &field.segs {
        match seg {
            Seg::Lit(text) => push_text(&mut out, text),
            Seg::Hole { value: Some(value), .. } => push_text(&mut out, value),
            Seg::Hole { display, class, .. } => out.push(Piece::Hole {
                display: display.clone(),
                class: *class,
            }),
            Seg::Glob(glob) => {
                let display = match glob {
                    Glob::Star => "*".to_string(),
                    Glob::One => "?".to_string(),
                    Glob::Class { text, .. } => text.clone(),
                };
                match out.last_mut() {
                    Some(Piece::Hole {
                        display: last,
                        class: PathHole::Name,
                    }) => last.push_str(&display),
                    _ => out.push(Piece::Hole {
                        display,
                        class: PathHole::Name,
                    }),
                }
            }
        }
    }
    out
}

/// Appends how the [`pieces`] of `field` are shown (what [`PathRef::display`] of them gives).
pub(super) fn push_pieces_display(field: &Field, out: &mut String) {
    for seg in &field.segs {
        match seg {
            Seg::Lit(text) | Seg::Hole { value: Some(text), .. } => out.push_str(text),
            Seg::Hole { display, .. } => out.push_str(display),
            Seg::Glob(glob) => match glob {
                Glob::Star => out.push('*'),
                Glob::One => out.push('?'),
                Glob::Class { text, .. } => out.push_str(text),
            },
        }
    }
}

/// A value field whose patterns are already matched (a `for` variable): patterns become
/// one-component holes that are no longer active.
pub(super) fn hole_patterns(field: &Field) -> Field {
    Field {
        segs: field
            .segs
            .iter()
            .map(|seg| match seg {
                Seg::Glob(glob) => Seg::Hole {
                    display: match glob {
                        Glob::Star => "*".into(),
                        Glob::One => "?".into(),
                        Glob::Class { text, .. } => text.clone(),
                    },
                    class: PathHole::Name,
                    value: None,
                },
                other => other.clone(),
            })
            .collect(),
    }
}
