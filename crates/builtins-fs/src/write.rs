//! `write` (spec §5.3): create or replace a file, atomically, keeping its BOM and mode.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate_core::{Annotations, Content, Context, Tool, ToolFailure};

use crate::change::{Cancel, ChangeError, Write, lock_all, transact};
use crate::common::{BOM, Services, blocking, change_failure, unified_diff};

/// The input of `write`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub(crate) struct WriteInput {
    /// The file, relative to the project or absolute.
    pub(crate) path: String,
    /// The whole new content.
    pub(crate) content: String,
}

/// The output of `write`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct WriteOutput {
    /// Always `write`.
    pub(crate) operation: String,
    /// The file written (canonical).
    pub(crate) target: String,
    /// The permission resource.
    pub(crate) resource: String,
    /// Whether it existed before.
    pub(crate) existed: bool,
}

/// The tool's description.
pub(crate) const DESCRIPTION: &str = "Create a file or replace its whole content. Missing parent directories are created; \
an existing UTF-8 byte-order mark and the file's permissions are kept; the file is replaced atomically. Prefer `edit` \
for changes to part of a file.";

/// Builds `write` (it asks as `edit`).
pub fn write_tool(services: Services) -> Tool {
    Tool::builder(DESCRIPTION, move |input: WriteInput, ctx: Context| {
        let services = services.clone();
        async move { write(&services, input, &ctx).await }
    })
    .project(|output: &WriteOutput| {
        let verb = if output.existed { "Wrote" } else { "Created" };
        vec![Content::text(format!("{verb} file successfully: {}", output.resource))]
    })
    .title("Write a file")
    .annotations(Annotations::destructive().idempotent(true))
    .build()
    .with_permission("edit")
}

async fn write(services: &Services, input: WriteInput, ctx: &Context) -> Result<WriteOutput, ToolFailure> {
    let path = input.path.clone();
    let failure = || format!("Unable to write {path}");
    let fallback = unified_diff(&path, "", &input.content);
    let planned = input.content.clone();
    // An existing file's prompt shows what is overwritten.
    let change = move |_: Option<&str>| Some(planned);
    let resolved = services.authorize_edit(ctx, &path, fallback, change, failure).await?;
    let target = resolved.path.clone();
    let resource = resolved.resource.clone();
    let content = input.content;
    let cancel = Cancel::default();
    let guard = cancel.guard();
    let written = blocking(move || {
        let fail = |error| match error {
            ChangeError::Directory => ToolFailure::new(format!("Unable to write {path}: it is a directory")),
            other => change_failure(other, "write", &path),
        };
        // Nothing is computed from the old content but its BOM; a file changed by someone
        // else between the lock and the rename is still never overwritten.
        let mut retried = false;
        loop {
            let held = lock_all(std::slice::from_ref(&target), &cancel).map_err(fail)?;
            // The old content is read (so that bytes another program appends meanwhile can
            // be told from other changes) unless it is too large to hold; then only its BOM.
            let existed = held[0].exists();
            let had_bom = match held[0].content() {
                Ok(existing) => existing.is_some_and(|bytes| bytes.starts_with(BOM.as_bytes())),
                Err(ChangeError::TooLarge(_)) => held[0].starts_with(BOM.as_bytes()).map_err(fail)?,
                Err(error) => return Err(fail(error)),
            };
            let keep_bom = had_bom && !content.starts_with(BOM);
            let bytes = if keep_bom {
                format!("{BOM}{content}")
            } else {
                content.clone()
            };
            let write = Write {
                index: 0,
                content: Some(bytes.into_bytes()),
                like: None,
            };
            match transact(&held, &[write], &cancel) {
                Ok(()) => return Ok(existed),
                Err(ChangeError::Changed(_)) if !retried => retried = true,
                Err(error) => return Err(fail(error)),
            }
        }
    })
    .await?;
    guard.disarm();
    let existed = written?;
    Ok(WriteOutput {
        operation: "write".into(),
        target: resolved.path.to_string_lossy().into_owned(),
        resource,
        existed,
    })
}
