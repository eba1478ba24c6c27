//! What `find` writes into a pipe that `xargs` reads: the paths it finds, when the files
//! that exist say so.
//!
//! `find START … | xargs CMD` is how a line applies a command to the files below a
//! directory. The words `xargs` appends are not known from the line alone: `xargs` splits
//! its input at blanks and reads quotes and backslashes in it, so a file named `a /etc`
//! with a `passwd` inside makes `find` print `./a /etc/passwd` and `xargs` pass
//! `/etc/passwd`. They are known from the files: when no name below `START` holds a blank,
//! a quote or a backslash, every word `xargs` makes is one path `find` printed, a path at
//! or below `START` (README "The bash tool": a recursive read is decided by the files
//! that exist under the path, bounded; past the bound the words stay unknown and are
//! asked for).
//!
//! The files must be the ones `find` will see: nothing of the line ran before the
//! pipeline, and the command `xargs` runs writes nothing the analysis can see (it runs
//! while `find` still walks; one that wrote a name could make the next path a word).

use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::{Cwd, State, Walker};
use crate::arg::{Access, Arg};
use crate::expand;
use crate::path::absolute;
use crate::programs;
use crate::syntax::Command;

/// The most entries walked below a start path; past it the paths are not known.
pub(super) const MAX_FOUND: usize = 10_000;

/// `find` words that print something other than the paths (or print them elsewhere, or
/// run a command whose output joins them), follow symbolic links (the walk below does
/// not), or read the start paths from a file.
const NOT_PATHS: &[&str] = &[
    "-printf",
    "-fprintf",
    "-ls",
    "-fls",
    "-fprint",
    "-fprint0",
    "-exec",
    "-execdir",
    "-ok",
    "-okdir",
    "-delete",
    "-follow",
    "-files0-from",
    "-L",
    "-H",
    "-D",
];

/// Whether a name splits or quotes nothing when `xargs` reads it.
fn plain_name(name: &[u8]) -> bool {
    !name.is_empty()
        && !name
            .iter()
            .any(|b| b.is_ascii_whitespace() || matches!(b, b'\'' | b'"' | b'\\' | b'\x0b'))
}

impl Walker<'_> {
    /// The words `xargs` in `next` appends when `command` is the `find` that writes its
    /// input: a path at or below the start, or `None` when that is not known. `ran_before`:
    /// a program of the line ran before the pipeline.
    pub(super) fn piped_paths(
        &mut self,
        command: &Command,
        next: &Command,
        state: &State,
        ran_before: bool,
    ) -> Option<Arg> {
        if ran_before {
            return None;
        }
        let (Command::Simple(find), Command::Simple(xargs)) = (command, next) else {
            return None;
        };
        if !find.assigns.is_empty()
            || !find.redirects.is_empty()
            || !xargs.assigns.is_empty()
            || !xargs.redirects.is_empty()
        {
            return None;
        }
        // Words no expansion changes (no substitution runs first, no pattern matches).
        let words = |simple: &crate::syntax::Simple| -> Option<Vec<String>> {
            simple.words.iter().map(expand::plain_text).collect()
        };
        let find_words = words(find)?;
        let xargs_words = words(xargs)?;
        if find_words.first().map(String::as_str) != Some("find")
            || xargs_words.first().map(String::as_str) != Some("xargs")
            || state.funcs.contains_key("find")
            || state.funcs.contains_key("xargs")
        {
            return None;
        }
        // One start path, then an expression that prints paths only.
        let rest = &find_words[1..];
        let starts: Vec<&String> = rest
            .iter()
            .take_while(|word| !word.starts_with('-') && !["(", "!", ")", ","].contains(&word.as_str()))
            .collect();
        let start = match starts.as_slice() {
            [] => ".".to_string(),
            [only] => (*only).clone(),
            _ => return None,
        };
        if rest
            .iter()
            .any(|word| NOT_PATHS.contains(&word.as_str()) || word.starts_with("-D") || word.starts_with("-O"))
            || !plain_name(start.as_bytes())
        {
            return None;
        }
        // `xargs` appends the words of its input to a command that writes nothing.
        let args: Vec<Arg> = xargs_words.iter().map(Arg::text).collect();
        let verdict = Self::verdict("xargs", &args);
        let [nested] = verdict.nested.as_slice() else {
            return None;
        };
        if !nested.appended || !verdict.effects.is_empty() || verdict.opaque.is_some() || verdict.refuse.is_some() {
            return None;
        }
        // Another delimiter, or arguments from a file; the command's own words are looked
        // at too (a `grep -a` only costs the paths being known).
        if xargs_words[1..].iter().any(|word| {
            word.starts_with("-d")
                || word.starts_with("--delimiter")
                || word.starts_with("-a")
                || word.starts_with("--arg")
        }) {
            return None;
        }
        let found = programs::below(&Arg::text(start.clone()));
        let mut command = nested.args.clone();
        command.push(found.clone());
        let name = command.first().and_then(Arg::literal)?.into_owned();
        let inner = Self::verdict(&name, &command);
        if inner.opaque.is_some()
            || inner.refuse.is_some()
            || inner.code.is_some()
            || !inner.nested.is_empty()
            || !inner.scripts.is_empty()
            || !inner.script_files.is_empty()
            || inner.effects.iter().any(|effect| effect.access == Access::Write)
        {
            return None;
        }
        // The names below the start, as they are now.
        let Cwd::Known(bases) = &state.cwd else { return None };
        let [base] = bases.as_slice() else { return None };
        let root = PathBuf::from(absolute(&self.env.workdir, base)).join(&start);
        let walked = walk_plain(root)?;
        self.spend(walked).then_some(found)
    }
}

/// Walks `root` without following symbolic links: the entries seen when every name is
/// plain, or `None` (a name that is not, or more than [`MAX_FOUND`] entries).
fn walk_plain(root: PathBuf) -> Option<usize> {
    let mut seen = 0;
    let mut dirs = vec![root.clone()];
    match root.symlink_metadata() {
        Ok(meta) if meta.is_dir() => {}
        // A start that is no directory: `find` prints it alone (or nothing).
        _ => return Some(0),
    }
    while let Some(dir) = dirs.pop() {
        // A directory that cannot be read: `find` prints nothing of it.
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries {
            let Ok(entry) = entry else { return None };
            seen += 1;
            if seen > MAX_FOUND || !plain_name(entry.file_name().as_bytes()) {
                return None;
            }
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                dirs.push(entry.path());
            }
        }
    }
    Some(seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_split_or_quote_are_not_plain() {
        for name in ["a b", "a\tb", "a\nb", "a'", "\"", "a\\b", ""] {
            assert!(!plain_name(name.as_bytes()), "{name:?}");
        }
        for name in ["a.rs", "..x", "-n", "é", "a,b{c}"] {
            assert!(plain_name(name.as_bytes()), "{name:?}");
        }
    }

    #[test]
    fn the_walk_is_bounded_and_sees_every_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/c.rs"), "").unwrap();
        assert_eq!(walk_plain(dir.path().to_path_buf()), Some(3));
        std::fs::create_dir_all(dir.path().join("a/b/x /etc")).unwrap();
        assert_eq!(walk_plain(dir.path().to_path_buf()), None);
        let many = tempfile::tempdir().unwrap();
        for n in 0..=MAX_FOUND {
            std::fs::write(many.path().join(n.to_string()), "").unwrap();
        }
        assert_eq!(walk_plain(many.path().to_path_buf()), None);
        assert_eq!(walk_plain(many.path().join("missing")), Some(0));
    }
}
