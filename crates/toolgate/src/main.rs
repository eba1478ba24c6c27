//! The `toolgate` binary: stitches every crate together for end users.
//!
//! Filled by the binary issue; until then it only says so.

use std::process::ExitCode;

fn main() -> ExitCode {
    eprintln!("toolgate: no commands yet");
    ExitCode::from(2)
}
