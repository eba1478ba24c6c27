//! toolgate's MCP client.
pub mod config;
pub mod content;
pub mod names;
