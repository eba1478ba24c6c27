//! The sandbox trampoline on its own: `toolgate-sandbox-exec [__sandbox-exec] POLICY -- PROGRAM
//! ARGS…` applies the policy (the sandbox, the exec guard) to itself and executes the
//! program, exactly as `toolgate __sandbox-exec` does. It links nothing but the sandbox, so
//! it starts much faster than the whole CLI, which every bash command would otherwise pay.

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    // The command line `toolgate_sandbox::Policy::command_line` builds names the mode.
    if args.first().is_some_and(|arg| arg == toolgate_sandbox::TRAMPOLINE) {
        args.remove(0);
    }
    let exit = toolgate_sandbox::trampoline_main(args);
    if let Some(line) = &exit.stdout {
        println!("{line}");
    }
    if let Some(line) = &exit.stderr {
        eprintln!("{line}");
    }
    ExitCode::from(exit.code)
}
