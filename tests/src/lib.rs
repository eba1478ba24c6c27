//! End-to-end tests and cross-crate benchmarks for toolgate.
//!
//! This is the one library besides the binary that may combine every crate of the
//! workspace: its tests drive whole flows (registry → tool → output bound), and its
//! benches and examples produce the figures `cargo xtask bench` writes to BENCHMARKS.md.
//!
//! ```
//! let tool = e2e::noop_tool();
//! assert_eq!(tool.definition("noop").name, "noop");
//! ```

use schemars::JsonSchema;
use serde::Deserialize;
use tool_core::{Context, Tool, ToolFailure};

/// The input of [`noop_tool`]: nothing.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoInput {}

/// A tool that does nothing and answers `ok`: the floor under every settle.
pub fn noop_tool() -> Tool {
    Tool::builder("Does nothing.", |_: NoInput, _: Context| async {
        Ok::<_, ToolFailure>("ok")
    })
    .build()
}

/// A text of exactly `bytes` bytes made of 79-character lines, like a long log.
pub fn log_text(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes);
    let line = "2026-11-29T12:00:00Z INFO request served in 12 ms path=/api/v1/items status=200\n";
    while text.len() + line.len() <= bytes {
        text.push_str(line);
    }
    while text.len() < bytes {
        text.push('x');
    }
    text
}
