//! `write` (spec §5.3): create or replace a file, atomically, keeping its BOM and mode.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate_core::{Content, Context, Tool, ToolFailure};

use crate::common::{BOM, Services, blocking, file_lock, unified_diff, write_atomic};

/// The input of `write`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct WriteInput {
    /// The file, relative to the project or absolute.
    pub path: String,
    /// The whole new content.
    pub content: String,
}

/// The output of `write`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct WriteOutput {
    /// Always `write`.
    pub operation: String,
    /// The file written (canonical).
    pub target: String,
    /// The permission resource.
    pub resource: String,
    /// Whether it existed before.
    pub existed: bool,
}

/// The tool's description.
pub const DESCRIPTION: &str = "Create a file or replace its whole content. Missing parent directories are created; \
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
    .build()
    .with_permission("edit")
}

async fn write(services: &Services, input: WriteInput, ctx: &Context) -> Result<WriteOutput, ToolFailure> {
    let path = input.path.clone();
    let failure = || format!("Unable to write {path}");
    let resolved = services
        .authorize_edit(ctx, &path, unified_diff(&path, "", &input.content), failure)
        .await?;
    let target = resolved.path.clone();
    let resource = resolved.resource.clone();
    let content = input.content;
    blocking(move || {
        let lock = file_lock(&target);
        let _held = lock.lock().unwrap_or_else(|poison| poison.into_inner());
        if target.is_dir() {
            return Err(ToolFailure::new(format!("Unable to write {path}: it is a directory")));
        }
        let existing = std::fs::read(&target).ok();
        let keep_bom = existing
            .as_deref()
            .is_some_and(|bytes| bytes.starts_with(BOM.as_bytes()))
            && !content.starts_with(BOM);
        let bytes = if keep_bom { format!("{BOM}{content}") } else { content };
        write_atomic(&target, bytes.as_bytes())
            .map_err(|error| ToolFailure::new(format!("Unable to write {path}: {error}")))?;
        Ok(WriteOutput {
            operation: "write".into(),
            target: target.to_string_lossy().into_owned(),
            resource,
            existed: existing.is_some(),
        })
    })
    .await?
}
