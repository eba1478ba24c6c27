//! The file-system tools: read, write, edit, apply_patch, glob, grep and skill.
//!
//! This crate is filled by its own issue; until then it holds only this overview.
//! It depends on `tool-core` alone, like every library crate of the workspace.
