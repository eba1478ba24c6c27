//! What every file tool does first: resolve the path, then ask — in that order, so a
//! refused call reads nothing.

use std::sync::Arc;

use toolgate_core::{Context, Location, PathKind, PermissionRequest, Permissions, ResolvedPath, ToolFailure};

use crate::change::ChangeError;

/// The services a file tool captures.
#[derive(Clone)]
pub struct Services {
    /// Where paths resolve.
    pub location: Location,
    /// Who is asked.
    pub permissions: Arc<dyn Permissions>,
}

impl Services {
    /// Services for `location`, asking `permissions`.
    pub fn new(location: Location, permissions: Arc<dyn Permissions>) -> Services {
        Services { location, permissions }
    }

    /// Resolves `path`, asks `external_directory` when it is outside, then `action` on the
    /// resource with `save`. `failure` turns any refusal or bad path into the tool's own
    /// message (the refusal itself is kept so a declined call still stops the loop).
    pub async fn authorize(
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
        })?;
        Ok(resolved)
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

    /// [`Services::authorize`] for changing a file: `edit`, saved as `*`, with the change
    /// as a unified diff for the prompt. The diff comes from the request alone: nothing is
    /// read before approval.
    pub(crate) async fn authorize_edit(
        &self,
        ctx: &Context,
        path: &str,
        diff: String,
        failure: impl Fn() -> String,
    ) -> Result<ResolvedPath, ToolFailure> {
        let mut metadata = serde_json::Map::new();
        metadata.insert("filepath".into(), path.into());
        metadata.insert("diff".into(), diff.into());
        let ask = PathAsk {
            path,
            kind: PathKind::File,
            action: "edit",
            save: &["*"],
            metadata,
        };
        self.authorize(ctx, ask, failure).await
    }
}

/// What a tool asks about one path.
pub struct PathAsk<'a> {
    /// The model's path.
    pub path: &'a str,
    /// File or directory (decides the external boundary).
    pub kind: PathKind,
    /// The action asked (`read`, `edit`).
    pub action: &'a str,
    /// What "always" saves.
    pub save: &'a [&'a str],
    /// Details for the prompt.
    pub metadata: serde_json::Map<String, serde_json::Value>,
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
