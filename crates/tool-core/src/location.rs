//! `Location`: the directory a call runs in, and the one resolution of a model-supplied path.

use std::io;
use std::path::{Component, Path, PathBuf};

/// How deep symlink chains are followed before giving up (Linux's own limit).
const MAX_LINKS: u32 = 40;

/// What the caller expects at the path; decides the external approval boundary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PathKind {
    /// A file (or anything that is not known to be a directory).
    #[default]
    File,
    /// A directory: when it is one, the boundary is the directory itself.
    Directory,
}

/// Why a path was refused (spec §5.1).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    /// A relative path that climbs out of the location (`../x`).
    #[error("Path escapes the working directory: {path}. Use a path inside {root}, or an absolute path.")]
    RelativeEscape {
        /// The path as given.
        path: String,
        /// The location directory.
        root: PathBuf,
    },
    /// A path inside the location that leads outside through a symlink.
    #[error("Path leaves the working directory through a symbolic link: {path} resolves to {resolved}")]
    LocationEscape {
        /// The path as given.
        path: String,
        /// Where it really leads.
        resolved: PathBuf,
    },
    /// An ancestor of the path exists but is not a directory.
    #[error("Path has a parent that is not a directory: {path}")]
    NonDirectoryAncestor {
        /// The path as given.
        path: String,
    },
    /// The file system refused to tell (permission denied, a symlink loop).
    #[error("Cannot resolve path {path}: {source}")]
    Io {
        /// The path as given.
        path: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

/// The approval boundary of a path outside the location: asking for
/// `external_directory` on `<directory>/*`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExternalDirectory {
    /// The directory that holds the path (or the path, for a directory).
    pub directory: PathBuf,
    /// The resource to assert: `<directory>/*`.
    pub resource: String,
    /// The pattern an "always" answer saves: `<directory>/*`.
    pub save: String,
}

/// A path resolved against a [`Location`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResolvedPath {
    /// The canonical absolute path (symlinks resolved as far as the path exists).
    pub path: PathBuf,
    /// The permission resource: relative to the root with `/` (`.` for the root) when
    /// inside, the canonical absolute path when outside.
    pub resource: String,
    /// Set when the path is outside the location.
    pub external: Option<ExternalDirectory>,
}

/// The directory a call runs in.
///
/// [`Location::resolve`] is the only way a tool turns a model's path into a file-system
/// path, so containment is decided in one place.
///
/// ```
/// # fn main() -> std::io::Result<()> {
/// let dir = std::env::temp_dir();
/// let location = toolgate_core::Location::new(&dir)?;
/// let resolved = location.resolve("notes/today.md", Default::default()).unwrap();
/// assert_eq!(resolved.resource, "notes/today.md");
/// assert!(location.resolve("../outside", Default::default()).is_err());
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    /// The directory as given (made absolute), for lexical containment.
    given: PathBuf,
    /// Its canonical form, for real containment.
    root: PathBuf,
}

impl Location {
    /// A location at `dir`, which must exist and be a directory.
    pub fn new(dir: impl AsRef<Path>) -> io::Result<Self> {
        let dir = dir.as_ref();
        let given = normalize(&std::env::current_dir()?.join(dir));
        let root = std::fs::canonicalize(&given)?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a directory", dir.display()),
            ));
        }
        Ok(Location { given, root })
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// True when `path` (already canonical) lies inside the root.
    fn contains(&self, path: &Path) -> bool {
        path.starts_with(&self.root)
    }

    /// Resolves a model-supplied path (spec §5.1).
    ///
    /// Trailing newlines are trimmed; `~` and `~/` expand to the home directory. A relative
    /// path that climbs out is refused; a path inside that leads outside through a symlink
    /// is refused; a path that does not exist yet resolves through its nearest existing
    /// ancestor, which must be a directory. Absolute paths outside are allowed but flagged
    /// [`ResolvedPath::external`] so the caller asks `external_directory` first.
    pub fn resolve(&self, path: &str, kind: PathKind) -> Result<ResolvedPath, PathError> {
        let original = path;
        let trimmed = path.trim_end_matches(['\n', '\r']);
        let expanded = expand_home(trimmed);
        let candidate = Path::new(&expanded);
        let relative = !candidate.is_absolute();
        let absolute = normalize(&self.given.join(candidate));
        let lexically_internal = absolute.starts_with(&self.given) || absolute.starts_with(&self.root);
        if relative && !lexically_internal {
            return Err(PathError::RelativeEscape {
                path: original.to_string(),
                root: self.given.clone(),
            });
        }
        let canonical = canonicalize(&absolute, 0).map_err(|error| match error {
            Resolve::NotDirectory => PathError::NonDirectoryAncestor {
                path: original.to_string(),
            },
            Resolve::Io(source) => PathError::Io {
                path: original.to_string(),
                source,
            },
        })?;
        let internal = self.contains(&canonical);
        if lexically_internal && !internal {
            return Err(PathError::LocationEscape {
                path: original.to_string(),
                resolved: canonical,
            });
        }
        if internal {
            let resource = match canonical.strip_prefix(&self.root) {
                Ok(rest) if rest.as_os_str().is_empty() => ".".to_string(),
                Ok(rest) => slashed(rest),
                Err(_) => slashed(&canonical),
            };
            return Ok(ResolvedPath {
                path: canonical,
                resource,
                external: None,
            });
        }
        let directory = if kind == PathKind::Directory && canonical.is_dir() {
            canonical.clone()
        } else {
            canonical
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| canonical.clone())
        };
        let boundary = format!("{}/*", slashed(&directory).trim_end_matches('/'));
        Ok(ResolvedPath {
            resource: slashed(&canonical),
            path: canonical,
            external: Some(ExternalDirectory {
                directory,
                resource: boundary.clone(),
                save: boundary,
            }),
        })
    }
}

fn expand_home(path: &str) -> String {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    match (path, home) {
        ("~", Some(home)) => home.to_string_lossy().into_owned(),
        (p, Some(home)) if p.starts_with("~/") => home.join(&p[2..]).to_string_lossy().into_owned(),
        (p, _) => p.to_string(),
    }
}

fn slashed(path: &Path) -> String {
    path.to_string_lossy().replace('\\', "/")
}

/// Lexical normalisation, as Node's `path.resolve`: `.` dropped, `..` pops (never above root).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

enum Resolve {
    NotDirectory,
    Io(io::Error),
}

/// The real path of `path`, following symlinks (dangling ones too) and re-appending
/// whatever does not exist yet below the nearest existing directory.
fn canonicalize(path: &Path, depth: u32) -> Result<PathBuf, Resolve> {
    if depth > MAX_LINKS {
        return Err(Resolve::Io(io::Error::other("too many levels of symbolic links")));
    }
    let error = match std::fs::canonicalize(path) {
        Ok(real) => return Ok(real),
        Err(error) => error,
    };
    match error.kind() {
        io::ErrorKind::NotFound => {}
        io::ErrorKind::NotADirectory => return Err(Resolve::NotDirectory),
        _ => return Err(Resolve::Io(error)),
    }
    if let (Some(Component::ParentDir), Some(parent)) = (path.components().next_back(), path.parent()) {
        let real = canonicalize(parent, depth)?;
        return Ok(real.parent().map(Path::to_path_buf).unwrap_or(real));
    }
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        // The root itself cannot be missing; a path with nothing above it has no directory.
        return Err(Resolve::NotDirectory);
    };
    let real_parent = canonicalize(parent, depth)?;
    match std::fs::metadata(&real_parent) {
        Ok(meta) if !meta.is_dir() => return Err(Resolve::NotDirectory),
        _ => {}
    }
    let joined = real_parent.join(name);
    // A dangling symlink "exists" for lstat only: follow it by hand so that writing through
    // it cannot land somewhere unchecked.
    match std::fs::symlink_metadata(&joined) {
        Ok(meta) if meta.file_type().is_symlink() => {
            let target = std::fs::read_link(&joined).map_err(Resolve::Io)?;
            // No lexical clean-up here: `..` in a link target must be taken physically.
            canonicalize(&real_parent.join(target), depth + 1)
        }
        _ => Ok(joined),
    }
}
