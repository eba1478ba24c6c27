//! What every file tool does first: resolve the path, then ask — in that order, so a
//! refused call reads nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use toolgate_core::{
    Context, Location, PathKind, PermissionRequest, Permissions, Refusal, ResolvedPath, ToolFailure, Verdict,
};

use crate::change::ChangeError;

/// What an "always" answer saves for the file tools' actions: `*` for `read`, `edit`
/// (also `write` and `apply_patch`), `glob` and `grep` (spec §5.2–§5.7), the same for
/// every resource; `None` for any other action. The tools ask with it, and `toolgate
/// check` shows it, so what check predicts is what the prompt offers.
pub fn always_pattern(action: &str) -> Option<&'static str> {
    matches!(action, "read" | "edit" | "glob" | "grep").then_some("*")
}

/// The services a file tool captures.
#[derive(Clone)]
pub struct Services {
    /// Where paths resolve.
    pub(crate) location: Location,
    /// Who is asked.
    pub(crate) permissions: Arc<dyn Permissions>,
}

impl Services {
    /// Services for `location`, asking `permissions`.
    pub fn new(location: Location, permissions: Arc<dyn Permissions>) -> Services {
        Services { location, permissions }
    }

    /// Resolves `path`, asks `external_directory` when it is outside, then `action` on the
    /// resource with `save`. `failure` turns any refusal or bad path into the tool's own
    /// message (the refusal itself is kept so a declined call still stops the loop).
    pub(crate) async fn authorize(
        &self,
        ctx: &Context,
        ask: PathAsk<'_>,
        failure: impl Fn() -> String,
    ) -> Result<ResolvedPath, ToolFailure> {
        let PathAsk {
            path,
            kind,
            action,
            save,
            metadata,
        } = ask;
        let resolved = self.resolve_outside(ctx, path, kind, &failure).await?;
        self.assert_on(ctx, &resolved, action, save, metadata, &failure).await?;
        Ok(resolved)
    }

    /// Resolves `path` and asks `external_directory` when it is outside.
    async fn resolve_outside(
        &self,
        ctx: &Context,
        path: &str,
        kind: PathKind,
        failure: &impl Fn() -> String,
    ) -> Result<ResolvedPath, ToolFailure> {
        let resolved = self
            .location
            .resolve(path, kind)
            .map_err(|error| ToolFailure::new(format!("{}: {error}", failure())))?;
        if let Some(external) = &resolved.external {
            let request = PermissionRequest::new("external_directory")
                .resources([external.resource.clone()])
                .save([external.save.clone()])
                .metadata("filepath", resolved.path.to_string_lossy().into_owned())
                .metadata("parentDir", external.directory.to_string_lossy().into_owned());
            self.permissions.assert(ctx, request).await.map_err(|refusal| {
                let message = refusal_message(&refusal, failure());
                ToolFailure::from(refusal).with_message(message)
            })?;
        }
        Ok(resolved)
    }

    /// Asks `action` on the resolved resource.
    async fn assert_on(
        &self,
        ctx: &Context,
        resolved: &ResolvedPath,
        action: &str,
        save: &[&str],
        metadata: serde_json::Map<String, serde_json::Value>,
        failure: &impl Fn() -> String,
    ) -> Result<(), ToolFailure> {
        let mut request = PermissionRequest::new(action)
            .resources([resolved.resource.clone()])
            .save(save.iter().copied());
        request.metadata = metadata;
        self.permissions.assert(ctx, request).await.map_err(|refusal| {
            let message = refusal_message(&refusal, failure());
            ToolFailure::from(refusal).with_message(message)
        })
    }
}

/// The model's message for a refusal of a file tool: the tool's own failure (spec §4.6,
/// `Unable to edit <path>`), followed by what the refusal says when that says more —
/// the rule that denied it, or why no one was asked (`declined (no terminal; …)`) — and
/// a person's correction as it is.
pub(crate) fn refusal_message(refusal: &Refusal, failure: String) -> String {
    match refusal {
        Refusal::Corrected { .. } => refusal.to_string(),
        Refusal::Declined { reason: Some(reason) } => format!("{failure}: {reason}"),
        Refusal::Blocked { denied: Some(_), .. } | Refusal::Blocked { reason: Some(_), .. } => {
            format!("{failure}: {refusal}")
        }
        Refusal::Blocked { .. } | Refusal::Declined { reason: None } => failure,
    }
}

impl Services {
    /// The read rules for `ctx`, to consult file by file ([`ReadSight::of`]).
    pub(crate) fn read_sight(&self, ctx: &Context) -> ReadSight {
        ReadSight {
            root: self.location.root().to_path_buf(),
            permissions: self.permissions.clone(),
            ctx: ctx.clone(),
        }
    }

    /// Asks `read` of `paths` (canonical) in one request, each saved as itself: what a
    /// search does before it shows lines of files whose reading asks (spec §5.2).
    pub(crate) async fn ask_reads(&self, ctx: &Context, paths: &[PathBuf]) -> Result<(), Refusal> {
        let sight = self.read_sight(ctx);
        let resources: Vec<String> = paths.iter().map(|path| sight.resource(path)).collect();
        let request = PermissionRequest::new("read")
            .resources(resources.iter().cloned())
            .save(resources.iter().cloned())
            .metadata("reason", "shown by a search");
        self.permissions.assert(ctx, request).await
    }

    /// [`Services::authorize`] for reading a file: `read`, saved as `*` (spec §5.2).
    pub(crate) async fn authorize_read(
        &self,
        ctx: &Context,
        path: &str,
        failure: impl Fn() -> String,
    ) -> Result<ResolvedPath, ToolFailure> {
        let ask = PathAsk {
            path,
            kind: PathKind::File,
            action: "read",
            save: &[READ_SAVE],
            metadata: Default::default(),
        };
        self.authorize(ctx, ask, failure).await
    }

    /// [`Services::authorize`] for changing a file: `edit`, saved as `*`, with a unified
    /// diff of the whole file for the prompt (spec §5.3, §5.4): `change` turns
    /// the current content (`None` for a missing file) into the new one. The file is read
    /// for this only when a person will be asked ([`Permissions::would_ask`]) — after any
    /// `external_directory` approval, never for a call a rule allows or denies — and only
    /// if it is a regular file of at most [`PREVIEW_MAX_BYTES`]; otherwise, or when
    /// `change` cannot say (no match), the prompt shows `fallback`, the change as the
    /// request states it. Nothing read here decides anything or reaches the model.
    pub(crate) async fn authorize_edit(
        &self,
        ctx: &Context,
        path: &str,
        fallback: String,
        change: impl FnOnce(Option<&str>) -> Option<String> + Send + 'static,
        failure: impl Fn() -> String,
    ) -> Result<ResolvedPath, ToolFailure> {
        let resolved = self.resolve_outside(ctx, path, PathKind::File, &failure).await?;
        let probe = PermissionRequest::new("edit").resources([resolved.resource.clone()]);
        let mut diff = fallback;
        if self.permissions.would_ask(ctx, &probe) {
            let target = resolved.path.clone();
            let name = resolved.resource.clone();
            let whole = blocking(move || {
                let old = read_for_preview(&target).ok()?;
                let new = change(old.as_deref())?;
                Some(unified_diff(&name, old.as_deref().unwrap_or(""), &new))
            })
            .await?;
            if let Some(whole) = whole {
                diff = whole;
            }
        }
        let mut metadata = serde_json::Map::new();
        metadata.insert("filepath".into(), path.into());
        metadata.insert("diff".into(), diff.into());
        self.assert_on(ctx, &resolved, "edit", &[EDIT_SAVE], metadata, &failure)
            .await?;
        Ok(resolved)
    }
}

/// What `read` of one file would do, decided by the rules without asking anyone: how far
/// `grep`, `glob` and a directory listing may show the file (its lines, its name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sight {
    /// Reading it is allowed: shown.
    Shown,
    /// Reading it would ask a person.
    Asks,
    /// A rule denies reading it: withheld.
    Denied,
    /// The permissions cannot decide without asserting ([`Permissions::decide`] is `None`).
    Undecided,
}

/// The read rules as the search tools consult them, file by file, without asking: cheap
/// to clone into a blocking walk (spec §5.2, §5.6, §5.7 — a file's name or lines are shown
/// only as far as `read` of it is allowed).
#[derive(Clone)]
pub(crate) struct ReadSight {
    root: PathBuf,
    permissions: Arc<dyn Permissions>,
    ctx: Context,
}

impl ReadSight {
    /// The `read` resource of `path` (canonical): relative to the location when inside,
    /// absolute when outside — what `Location::resolve` gives `read` for that path.
    pub(crate) fn resource(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(inside) if inside.as_os_str().is_empty() => ".".to_string(),
            Ok(inside) => inside.to_string_lossy().into_owned(),
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }

    /// What `read` of `path` (canonical) would do.
    pub(crate) fn of(&self, path: &Path) -> Sight {
        let request = PermissionRequest::new("read").resources([self.resource(path)]);
        match self.permissions.decide(&self.ctx, &request) {
            Some(decision) => match decision.verdict {
                Verdict::Allow => Sight::Shown,
                Verdict::Ask => Sight::Asks,
                Verdict::Deny => Sight::Denied,
            },
            None => Sight::Undecided,
        }
    }
}

/// How many files (and matches) a search left out, and why: the note under its result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Withheld {
    /// Files whose reading a rule denies.
    pub(crate) denied: usize,
    /// Files whose reading asks and was not approved.
    pub(crate) asked: usize,
    /// Matching lines in those files (grep).
    pub(crate) lines: usize,
    /// The person's words, when they declined with feedback.
    pub(crate) feedback: Option<String>,
}

impl Withheld {
    /// The note, empty when nothing was withheld. `what` names one thing counted and
    /// several (`("file", "files")`, `("entry", "entries")`); with lines counted (grep),
    /// they are said first.
    pub(crate) fn note(&self, what: (&str, &str)) -> String {
        let count = |n: usize, (one, many): (&str, &str)| format!("{n} {}", if n == 1 { one } else { many });
        let all = self.denied + self.asked;
        if all == 0 {
            return String::new();
        }
        let lines = if self.lines > 0 {
            format!("{} in ", count(self.lines, ("matching line", "matching lines")))
        } else {
            String::new()
        };
        let mut why = Vec::new();
        if self.denied > 0 {
            why.push(format!("{} denied by the read rules", self.denied));
        }
        if self.asked > 0 {
            why.push(format!(
                "{} whose reading needs a person's approval, not given here (read a file by its path to be asked)",
                self.asked
            ));
        }
        let verb = if all == 1 && self.lines <= 1 { "is" } else { "are" };
        let mut note = format!("({lines}{} {verb} not shown: {}.", count(all, what), why.join("; "));
        if let Some(feedback) = &self.feedback {
            note.push_str(&format!(" The user said: {feedback}"));
        }
        note.push(')');
        note
    }
}

/// [`always_pattern`] of `read`.
const READ_SAVE: &str = "*";
/// [`always_pattern`] of `edit`.
pub(crate) const EDIT_SAVE: &str = "*";
/// [`always_pattern`] of `glob` and `grep`.
pub(crate) const SEARCH_SAVE: &str = "*";

/// The largest file a prompt diffs whole; larger ones show the change as requested.
pub(crate) const PREVIEW_MAX_BYTES: u64 = 8 << 20;

/// The current text of `path` for a prompt's diff: `Ok(None)` when there is no file;
/// an error for anything but a regular UTF-8 file of at most [`PREVIEW_MAX_BYTES`]. A
/// FIFO or device is never opened for reading in a way that could block or stream.
fn read_for_preview(path: &Path) -> std::io::Result<Option<String>> {
    use std::io::Read;
    let not_previewed = || std::io::Error::other("not previewed");
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Opening a FIFO for reading would wait for a writer; non-blocking, it does not.
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let file = match options.open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error),
    };
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() > PREVIEW_MAX_BYTES {
        return Err(not_previewed());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(PREVIEW_MAX_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > PREVIEW_MAX_BYTES {
        return Err(not_previewed());
    }
    String::from_utf8(bytes).map(Some).map_err(|_| not_previewed())
}

/// What a tool asks about one path.
pub(crate) struct PathAsk<'a> {
    /// The model's path.
    pub(crate) path: &'a str,
    /// File or directory (decides the external boundary).
    pub(crate) kind: PathKind,
    /// The action asked (`read`, `edit`).
    pub(crate) action: &'a str,
    /// What "always" saves.
    pub(crate) save: &'a [&'a str],
    /// Details for the prompt.
    pub(crate) metadata: serde_json::Map<String, serde_json::Value>,
}

/// Runs blocking file work off the async workers when a runtime is there.
pub(crate) async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, ToolFailure> {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => runtime
            .spawn_blocking(work)
            .await
            .map_err(|error| ToolFailure::new(format!("file operation failed: {error}"))),
        Err(_) => Ok(work()),
    }
}

/// The UTF-8 byte-order mark.
pub(crate) const BOM: &str = "\u{feff}";

/// The message of a change that could not be made, for the path as the model gave it.
/// `verb` is what the tool does (`write`, `edit`, `apply patch at`).
pub(crate) fn change_failure(error: ChangeError, verb: &str, shown: &str) -> ToolFailure {
    ToolFailure::new(match error {
        ChangeError::NotRegular => format!("Unable to write {shown}: not a regular file"),
        ChangeError::Changed(_) => changed(shown),
        other => format!("Unable to {verb} {shown}: {other}"),
    })
}

/// The compare-and-swap failure: the file is not what the change was computed from.
pub(crate) fn changed(shown: &str) -> String {
    format!("File changed since it was read: {shown}; read it again")
}

/// A unified diff of `old` → `new` for `name` (prompt metadata and model text).
pub(crate) fn unified_diff(name: &str, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(name, name)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the tools save is what `always_pattern` says (and so what `check` shows).
    #[test]
    fn the_tools_save_what_always_pattern_says() {
        assert_eq!(always_pattern("read"), Some(READ_SAVE));
        assert_eq!(always_pattern("edit"), Some(EDIT_SAVE));
        assert_eq!(always_pattern("glob"), Some(SEARCH_SAVE));
        assert_eq!(always_pattern("grep"), Some(SEARCH_SAVE));
        assert_eq!(always_pattern("bash"), None);
        assert_eq!(always_pattern("webfetch"), None);
    }
}
