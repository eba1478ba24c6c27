//! From an analysis to the permission requests the bash tool asserts: paths resolved
//! through the one [`Location`] resolution (spec §9.9), resources with holes kept as
//! holes, each resource once.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use toolgate_core::{HoleClass, Location, PathError, PathKind, PermissionRequest, Resource};

use crate::analysis::{Analysis, Env, PathRef, Piece};
use crate::expand::PathHole;
use crate::walk::analyze_in;

/// What running a command line would assert, in order.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Plan {
    /// The resolved working directory.
    pub workdir: PathBuf,
    /// The analysis behind the assertions.
    pub analysis: Analysis,
    /// The assertions: `external_directory` (if any), `bash`, `read` (if any), `edit` (if any).
    pub requests: Vec<PermissionRequest>,
}

impl Plan {
    /// The `bash` assertion.
    pub fn bash_request(&self) -> Option<&PermissionRequest> {
        self.requests.iter().find(|request| request.action == "bash")
    }
}

/// Why a plan could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The working directory is not usable.
    #[error("Working directory is not usable: {0}")]
    Workdir(#[from] PathError),
}

/// Resources in order, each once.
#[derive(Default)]
struct Unique {
    list: Vec<Resource>,
    seen: HashSet<Resource>,
}

impl Unique {
    fn push(&mut self, resource: Resource) {
        if self.seen.insert(resource.clone()) {
            self.list.push(resource);
        }
    }
}

/// What a path in the command line amounts to for the permission checks.
enum Target {
    /// Inside the project: this resource.
    Inside(String),
    /// Outside: this canonical path, under this approval boundary.
    Outside(String, String),
}

fn target(location: &Location, workdir: &Path, path: &str, kind: PathKind) -> Target {
    let absolute = workdir.join(path);
    let text = absolute.to_string_lossy();
    match location.resolve(&text, kind) {
        Ok(resolved) => match resolved.external {
            None => Target::Inside(resolved.resource),
            Some(external) => Target::Outside(resolved.resource, external.resource),
        },
        // A symlink that leads out, or an odd path: treat it as outside, at the directory
        // it really is in, so it is asked for rather than waved through.
        Err(PathError::LocationEscape { resolved, .. }) => {
            let dir = resolved
                .parent()
                .unwrap_or(&resolved)
                .to_string_lossy()
                .replace('\\', "/");
            Target::Outside(
                resolved.to_string_lossy().into_owned(),
                format!("{}/*", dir.trim_end_matches('/')),
            )
        }
        Err(_) => Target::Outside(text.to_string(), format!("{}/*", text.trim_end_matches('/'))),
    }
}

/// The permission resources of one path: what `read`/`edit` is asked (if anything) and
/// the `external_directory` boundary it needs.
struct Resolved {
    resources: Vec<Resource>,
    external: Option<Resource>,
}

fn hole_class(class: PathHole) -> HoleClass {
    match class {
        PathHole::Name => HoleClass::Name,
        PathHole::Below | PathHole::Any => HoleClass::Any,
    }
}

/// `prefix` followed by the pieces, as a resource.
fn with_pieces(prefix: &str, pieces: &[Piece]) -> Resource {
    let mut resource = Resource::exact(prefix);
    for piece in pieces {
        match piece {
            Piece::Text(text) => resource.push_text(text),
            Piece::Hole { display, class } => resource.push_hole(display.clone(), hole_class(*class)),
        }
    }
    resource
}

fn below(display: &str) -> Piece {
    Piece::Hole {
        display: display.to_string(),
        class: PathHole::Below,
    }
}

fn resolve_path(location: &Location, workdir: &Path, path: &PathRef, kind: PathKind) -> Resolved {
    let base = match (&path.base, path.pieces.first()) {
        (_, Some(Piece::Text(text))) if text.starts_with('/') => Some(String::new()),
        (base, _) => base.clone(),
    };
    let unknown = || Resolved {
        resources: vec![Resource::unknown(path.joined())],
        external: Some(Resource::unknown(format!("{}/*", path.joined()))),
    };
    let Some(base) = base else { return unknown() };
    if path.pieces.iter().any(|piece| {
        matches!(
            piece,
            Piece::Hole {
                class: PathHole::Any,
                ..
            }
        )
    }) {
        return unknown();
    }
    let base_dir = if base.is_empty() {
        workdir.to_path_buf()
    } else {
        workdir.join(&base)
    };
    if let Some(literal) = path.literal() {
        let mut resources = Vec::new();
        let external = match target(location, &base_dir, &literal, kind) {
            Target::Inside(resource) => {
                if path.tree {
                    let prefix = if resource == "." {
                        String::new()
                    } else {
                        format!("{resource}/")
                    };
                    resources.push(with_pieces(&prefix, &[below("…")]));
                }
                resources.push(Resource::exact(resource));
                None
            }
            Target::Outside(resource, boundary) => {
                // A directory the command creates is its own boundary before it exists too.
                let boundary = if path.created {
                    format!("{}/*", resource.trim_end_matches('/'))
                } else {
                    boundary
                };
                if path.tree {
                    resources.push(with_pieces(
                        &format!("{}/", resource.trim_end_matches('/')),
                        &[below("…")],
                    ));
                }
                resources.push(Resource::exact(resource));
                Some(Resource::exact(boundary))
            }
        };
        return Resolved { resources, external };
    }
    // Holes that stay inside one directory: resolve the directory, keep the holes.
    let mut prefix = String::new();
    let mut rest: Vec<Piece> = Vec::new();
    for (index, piece) in path.pieces.iter().enumerate() {
        match piece {
            Piece::Text(text) => match text.rfind('/') {
                Some(slash) => {
                    prefix.push_str(&text[..=slash]);
                    if slash + 1 < text.len() {
                        rest.push(Piece::Text(text[slash + 1..].to_string()));
                    }
                }
                None => rest.push(piece.clone()),
            },
            Piece::Hole { .. } => {
                rest.extend(path.pieces[index..].iter().cloned());
                break;
            }
        }
        if matches!(piece, Piece::Text(text) if !text.contains('/')) {
            rest.extend(path.pieces[index + 1..].iter().cloned());
            break;
        }
    }
    let dir = if prefix.is_empty() {
        ".".to_string()
    } else {
        prefix.trim_end_matches('/').to_string()
    };
    let dir = if dir.is_empty() { "/".to_string() } else { dir };
    let mut tail = rest;
    if path.tree {
        tail.push(Piece::Text("/".into()));
        tail.push(below("…"));
    }
    match target(location, &base_dir, &dir, PathKind::Directory) {
        Target::Inside(resource) => {
            let prefix = if resource == "." {
                String::new()
            } else {
                format!("{resource}/")
            };
            Resolved {
                resources: vec![with_pieces(&prefix, &tail)],
                external: None,
            }
        }
        Target::Outside(resource, _) => {
            let dir = resource.trim_end_matches('/').to_string();
            Resolved {
                resources: vec![with_pieces(&format!("{dir}/"), &tail)],
                external: Some(Resource::exact(format!("{dir}/*"))),
            }
        }
    }
}

/// The most entries a recursive read's directory may hold for its files to be read one
/// by one; past it the read stays `DIR/…`, anything below.
pub(crate) const MAX_TREE_FILES: usize = 5_000;

/// A recursive read (`grep -r PATTERN dir`, `rg PATTERN dir`, what `find dir -exec`
/// or `find dir | xargs` reads) decided by the files that exist below the directory: the
/// directory and each file found, walked without following symbolic links, instead of
/// `dir/…` that a read rule such as `*.env: deny` may match whether or not such a file
/// is there (README "The bash tool"). Only for a [`PathRef::settled`] path inside the
/// project (nothing of the line ran before that could add a file), and within
/// [`MAX_TREE_FILES`] entries: otherwise `None`, and the read is `dir/…` as before. A
/// symbolic link below is resolved like any path the line names (one that leads out
/// makes the walk give up, so its target's question is the one asked for `dir/…`).
fn tree_files(location: &Location, workdir: &Path, path: &PathRef) -> Option<Resolved> {
    if !path.settled {
        return None;
    }
    let dir = match path.pieces.as_slice() {
        [Piece::Text(text)] if path.tree => text.clone(),
        [
            Piece::Text(text),
            Piece::Hole {
                class: PathHole::Below, ..
            },
        ] if !path.tree && text.ends_with('/') => match text.trim_end_matches('/') {
            "" => "/".to_string(),
            trimmed => trimmed.to_string(),
        },
        _ => return None,
    };
    let base_dir = match (&path.base, dir.starts_with('/')) {
        (_, true) => PathBuf::new(),
        (Some(base), false) if base.is_empty() => workdir.to_path_buf(),
        (Some(base), false) => workdir.join(base),
        (None, false) => return None,
    };
    let Target::Inside(resource) = target(location, &base_dir, &dir, PathKind::Directory) else {
        return None;
    };
    let root = base_dir.join(&dir);
    if !root.metadata().is_ok_and(|meta| meta.is_dir()) {
        return None;
    }
    let prefix = if resource == "." {
        String::new()
    } else {
        format!("{}/", resource.trim_end_matches('/'))
    };
    let mut files = Vec::new();
    let mut seen = 0usize;
    let mut dirs = vec![(root, prefix)];
    while let Some((dir, shown)) = dirs.pop() {
        // A directory that cannot be read: nothing of it is read either.
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries {
            seen += 1;
            if seen > MAX_TREE_FILES {
                return None;
            }
            let entry = entry.ok()?;
            let name = entry.file_name().into_string().ok()?;
            let kind = entry.file_type().ok()?;
            let shown = format!("{shown}{name}");
            if kind.is_dir() {
                dirs.push((entry.path(), format!("{shown}/")));
            } else if kind.is_symlink() {
                // A link to a directory: `grep -R` and `rg -L` read what is below it.
                if entry.path().metadata().is_ok_and(|meta| meta.is_dir()) {
                    return None;
                }
                match target(location, workdir, &entry.path().to_string_lossy(), PathKind::File) {
                    Target::Inside(inside) => files.push(inside),
                    Target::Outside(..) => return None,
                }
            } else {
                files.push(shown);
            }
        }
    }
    // In the order of their names, whatever order the directories listed them in.
    files.sort();
    let mut resources = vec![Resource::exact(resource)];
    resources.extend(files.into_iter().map(Resource::exact));
    Some(Resolved {
        resources,
        external: None,
    })
}

/// What the shell will see of its environment, as far as the analysis needs it.
///
/// Start from [`ShellEnv::inherited`] or [`ShellEnv::default`] and change what differs
/// with the `with_…` setters; more may be added (`#[non_exhaustive]`).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ShellEnv {
    /// `$HOME` (for `~` and `$HOME`).
    pub home: Option<String>,
    /// `$PATH` (which names are commands a function could shadow).
    pub path: Option<String>,
    /// Whether `$CDPATH` is set.
    pub cdpath: bool,
}

impl ShellEnv {
    /// The environment this process gives the shells it starts.
    pub fn inherited() -> ShellEnv {
        let env = Env::inherited(PathBuf::new());
        ShellEnv {
            home: env.home,
            path: env.path,
            cdpath: env.cdpath,
        }
    }

    /// `$HOME` is `home` (`None`: unset, so `~` is unknown).
    pub fn with_home(mut self, home: Option<String>) -> Self {
        self.home = home;
        self
    }

    /// `$PATH` is `path` (`None`: unset).
    pub fn with_path(mut self, path: Option<String>) -> Self {
        self.path = path;
        self
    }

    /// Whether `$CDPATH` is set (then `cd name` may go anywhere).
    pub fn with_cdpath(mut self, cdpath: bool) -> Self {
        self.cdpath = cdpath;
        self
    }
}

/// Works out what running `command` in `workdir` (relative to `location`) would assert.
///
/// This is the one place the bash tool's permission questions come from; `toolgate
/// check bash` prints it.
pub fn plan(
    location: &Location,
    command: &str,
    workdir: Option<&str>,
    description: Option<&str>,
) -> Result<Plan, PlanError> {
    plan_with(location, command, workdir, description, &ShellEnv::inherited())
}

/// [`plan`] for a shell that will run with `shell_env` (a caller that starts the shell
/// with another `HOME` must say so: `~` means that one).
pub fn plan_with(
    location: &Location,
    command: &str,
    workdir: Option<&str>,
    description: Option<&str>,
    shell_env: &ShellEnv,
) -> Result<Plan, PlanError> {
    let resolved = location.resolve(workdir.unwrap_or("."), PathKind::Directory)?;
    let dir = resolved.path.clone();
    let env = Env {
        workdir: dir.clone(),
        home: shell_env.home.clone(),
        path: shell_env.path.clone(),
        cdpath: shell_env.cdpath,
    };
    let analysis = analyze_in(command, &env);
    let mut externals = Unique::default();
    if let Some(external) = &resolved.external {
        externals.push(Resource::exact(external.resource.clone()));
    }
    for path in &analysis.paths {
        let resolved = resolve_path(location, &dir, path, PathKind::Directory);
        if let Some(external) = resolved.external {
            externals.push(external);
        }
    }
    let mut reads = Unique::default();
    for path in &analysis.reads {
        let resolved =
            tree_files(location, &dir, path).unwrap_or_else(|| resolve_path(location, &dir, path, PathKind::File));
        externals.extend(resolved.external);
        for resource in resolved.resources {
            reads.push(resource);
        }
    }
    let mut writes = Unique::default();
    for path in &analysis.writes {
        let resolved = resolve_path(location, &dir, path, PathKind::File);
        externals.extend(resolved.external);
        for resource in resolved.resources {
            writes.push(resource);
        }
    }
    let mut requests = Vec::new();
    if !externals.list.is_empty() {
        let save: Vec<String> = externals
            .list
            .iter()
            .filter_map(|r| r.as_exact().map(str::to_string))
            .collect();
        let unsaveable: Vec<String> = externals
            .list
            .iter()
            .filter(|r| !r.is_exact())
            .map(Resource::display)
            .collect();
        requests.push(
            PermissionRequest::new("external_directory")
                .holed(externals.list)
                .save(save)
                .unsaveable(unsaveable)
                .metadata("command", command),
        );
    }
    let mut bash = PermissionRequest::new("bash").metadata("command", command);
    if let Some(description) = description {
        bash = bash.metadata("description", description);
    }
    let mut saves = Unique::default();
    for part in &analysis.parts {
        let display = part.display();
        if part.opaque {
            bash = bash.opaque([display]);
            continue;
        }
        bash = bash.holed([part.resource.clone()]);
        match &part.save {
            Some(save) => saves.push(Resource::exact(save.clone())),
            None => bash = bash.unsaveable([display]),
        }
    }
    bash = bash.save(saves.list.iter().filter_map(|r| r.as_exact().map(str::to_string)));
    requests.push(bash);
    if !reads.list.is_empty() {
        requests.push(
            PermissionRequest::new("read")
                .holed(reads.list)
                .save(["*"])
                .metadata("command", command),
        );
    }
    if !writes.list.is_empty() {
        requests.push(
            PermissionRequest::new("edit")
                .holed(writes.list)
                .save(["*"])
                .metadata("command", command),
        );
    }
    Ok(Plan {
        workdir: dir,
        analysis,
        requests,
    })
}

impl Extend<Resource> for Unique {
    fn extend<I: IntoIterator<Item = Resource>>(&mut self, items: I) {
        for item in items {
            self.push(item);
        }
    }
}
