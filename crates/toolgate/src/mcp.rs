//! `toolgate mcp`: builds the parts and hands them to `toolgate_server::mcp`.

use toolgate_permission::AskMode;

use crate::app::{server_parts, server_runtime};
use crate::{Failure, Project};

/// `toolgate mcp`.
pub(crate) fn serve_stdio(project: &Project, auto: bool) -> Result<(), Failure> {
    let mode = if auto { AskMode::Auto } else { AskMode::Interactive };
    // Questions cannot be put through this channel yet: they are dismissed.
    let parts = server_parts(project, mode, false)?;
    let runtime = server_runtime()?;
    runtime
        .block_on(toolgate_server::mcp::serve_stdio(parts))
        .map_err(Failure::runtime)
}
