//! The file-system tools: `read`, `write`, `edit`, `apply_patch`, `glob`, `grep` and `skill`.
//!
//! Every tool resolves its paths through [`toolgate_core::Location`], asserts its permissions,
//! and only then touches the disk — so a refused call reads nothing and reveals nothing.
//! Paths outside the project ask `external_directory` first; `write`, `edit` and
//! `apply_patch` all ask as `edit`. Writes are atomic (a temporary file and a rename),
//! keep a file's byte-order mark, mode and owner, take an `flock` on the file that every
//! toolgate process honours, and never overwrite a change made since the file was read
//! (see the `change` module and README.md, "Changing files").
//!
//! The crate's API is the tool constructors, [`Services`] and [`skill_dirs`]: a tool's
//! input and output are JSON (the schema comes with [`toolgate_core::Tool::definition`],
//! the structured output with each settled [`toolgate_core::ToolOutput`]), so the Rust
//! types behind them stay private and may change with the tools.
//!
//! ```
//! # let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! # rt.block_on(async {
//! use std::sync::Arc;
//! use toolgate_builtins_fs::{Services, read_tool};
//! use toolgate_core::{BoxFuture, Context, Location, ModelResult, PermissionRequest, Permissions, Refusal};
//!
//! struct AllowAll;
//! impl Permissions for AllowAll {
//!     fn assert<'a>(&'a self, _: &'a Context, _: PermissionRequest) -> BoxFuture<'a, Result<(), Refusal>> {
//!         Box::pin(async { Ok(()) })
//!     }
//! }
//!
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("notes.txt"), "one\ntwo\n").unwrap();
//! let services = Services::new(Location::new(dir.path()).unwrap(), Arc::new(AllowAll));
//! let read = read_tool(services);
//! let output = read.settle(serde_json::json!({"path": "notes.txt"}), Context::default()).await.unwrap().unwrap();
//! assert_eq!(ModelResult::from_output(&output), ModelResult::Text("Read file notes.txt, lines 1-2\n1: one\n2: two".into()));
//! # });
//! ```

mod change;
mod common;
mod edit;
mod patch;
mod read;
mod search;
mod skill;
mod write;

pub use common::{Services, always_pattern};
pub use edit::edit_tool;
pub use patch::patch_tool;
pub use read::read_tool;
pub use search::{glob_tool, grep_tool};
pub use skill::{skill_dirs, skill_tool};
pub use write::write_tool;

/// Every file tool under its model-facing name, for registering all of them at once.
pub fn tools(services: Services, skill_dirs: Vec<std::path::PathBuf>) -> Vec<(&'static str, toolgate_core::Tool)> {
    vec![
        ("read", read_tool(services.clone())),
        ("write", write_tool(services.clone())),
        ("edit", edit_tool(services.clone())),
        ("apply_patch", patch_tool(services.clone())),
        ("glob", glob_tool(services.clone())),
        ("grep", grep_tool(services.clone())),
        ("skill", skill_tool(services, skill_dirs)),
    ]
}

// The items of other toolgate crates that this crate's signatures name, and those crates
// whole, so that this crate alone is a sufficient dependency (ARCHITECTURE.md, "Re-exports").
#[doc(no_inline)]
pub use toolgate_core;
pub use toolgate_core::{Location, Permissions, Tool};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
