//! The bash tool: command parsing, arity prefixes and process lifecycle.
//!
//! This crate is filled by its own issue; until then it holds only this overview.
//! It depends on `tool-core` alone, like every library crate of the workspace.
