//! Prints the analysis of each argument, run in the current directory (a development aid):
//! `cargo run -p toolgate-shell-analysis --example analyze -- 'git status; rm x'`.
#![allow(clippy::unwrap_used, clippy::expect_used)]
fn main() {
    for arg in std::env::args().skip(1) {
        let analysis = toolgate_shell_analysis::analyze(&arg);
        println!("{arg:?}");
        if let Some(reason) = &analysis.opaque {
            println!("  opaque: {reason}");
        }
        for part in &analysis.parts {
            let kind = if part.opaque { "opaque" } else { "bash" };
            println!(
                "  {kind:6} {:?} save={:?} why={:?}",
                part.display(),
                part.save,
                part.why
            );
        }
        for (label, paths) in [
            ("read", &analysis.reads),
            ("write", &analysis.writes),
            ("path", &analysis.paths),
        ] {
            for path in paths {
                println!("  {label:6} {} (tree: {})", path.joined(), path.tree);
            }
        }
    }
}
