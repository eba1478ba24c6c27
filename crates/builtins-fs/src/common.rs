//! What every file tool does first: resolve the path, then ask — in that order, so a
//! refused call reads nothing.

use std::path::Path;
use std::sync::Arc;

use toolgate_core::{Context, Location, PathKind, PermissionRequest, Permissions, ResolvedPath, ToolFailure};

use crate::change::ChangeError;

/// The services a file tool captures.
#[derive(Clone)]
pub struct Services {
    /// Where paths resolve.
    pub(crate) location: Location,
    /// Who is asked.
    pub(crate) permissions: Arc<dyn Permissions>,
    /// The output bound every result passes through: (lines, bytes).
    pub(crate) bound: (usize, usize),
}

impl Services {
    /// Services for `location`, asking `permissions`, for outputs bounded at the default
    /// 2000 lines / 50 KiB (spec §3.1).
    pub fn new(location: Location, permissions: Arc<dyn Permissions>) -> Services {
        Services {
            location,
            permissions,
            bound: (2000, 51_200),
        }
    }

    /// The same services for outputs bounded at `max_lines` lines and `max_bytes` bytes —
    /// the output store's limits (config `tool_output`). A `read` page is cut to fit them
    /// whole, its header and continuation line included, so the bound (spec §3.5) never
    /// cuts a page in its middle and following `offset` never skips a line.
    pub fn with_output_bound(mut self, max_lines: usize, max_bytes: usize) -> Services {
        self.bound = (max_lines, max_bytes);
        self
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
            self.permissions
                .assert(ctx, request)
                .await
                .map_err(|refusal| ToolFailure::from(refusal).with_message(failure()))?;
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
            let message = match &refusal {
                toolgate_core::Refusal::Corrected { .. } => refusal.to_string(),
                _ => failure(),
            };
            ToolFailure::from(refusal).with_message(message)
        })
    }
}

impl Services {
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
            save: &["*"],
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
        self.assert_on(ctx, &resolved, "edit", &["*"], metadata, &failure)
            .await?;
        Ok(resolved)
    }
}

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
        ChangeError::TooLarge(size) => too_large(verb, shown, size),
        other => format!("Unable to {verb} {shown}: {other}"),
    })
}

/// The refusal of a change to a file over [`crate::change::MAX_CHANGE_BYTES`], with what
/// to do instead.
pub(crate) fn too_large(verb: &str, shown: &str, size: u64) -> String {
    use crate::change::{MAX_CHANGE_BYTES, human_size};
    format!(
        "Unable to {verb} {shown}: the file is {}, and edit, write and apply_patch read at most {} of a file whole. \
         Read it in pages with read's offset and limit, and change it with bash (for example sed -i, or head/tail into a new file).",
        human_size(size),
        human_size(MAX_CHANGE_BYTES)
    )
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
