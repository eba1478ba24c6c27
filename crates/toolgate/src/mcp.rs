//! `toolgate mcp`: builds the parts and hands them to `toolgate_server::mcp`.

use toolgate_permission::AskMode;

use crate::app::{server_parts, server_runtime};
use crate::{Failure, Project};

/// `toolgate mcp`.
pub(crate) fn serve_stdio(project: &Project, auto: bool) -> Result<(), Failure> {
    let mode = if auto { AskMode::Auto } else { AskMode::Interactive };
    // Questions cannot be put through this channel yet: they are dismissed.
    let (parts, app) = server_parts(project, mode, false)?;
    let runtime = server_runtime()?;
    let served = runtime.block_on(toolgate_server::mcp::serve_stdio(parts));
    drop(app);
    served.map_err(Failure::runtime)
}
