//! The analysis crate's integration tests, one binary: the permission analysis of whole
//! lines under fixed rules (`table`, as reviewed snapshots), benign lines that must stay
//! allowed (`benign`), and the replay of the failures the analysis oracle recorded
//! (`oracle_corpus`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout)]

// The soundness comparison, shared with the oracle (`e2e::shell_oracle`); these tests use
// part of it.
#[allow(unreachable_pub, dead_code)]
#[path = "../../../../tests/src/shell_oracle/soundness.rs"]
mod soundness;

mod benign;
mod bounded;
mod builtins;
mod everyday;
mod oracle_corpus;
mod recursive;
mod table;
