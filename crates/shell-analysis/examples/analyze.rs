//! Prints the analysis of each argument, run in the current directory (a development aid):
//! `cargo run -p toolgate-shell-analysis --example analyze -- 'git status; rm x'`; an
//! argument `@FILE` stands for the line held in FILE (lines longer than an argument may be).
#![allow(clippy::unwrap_used, clippy::expect_used)]
fn main() {
    for arg in std::env::args().skip(1) {
        let arg = match arg.strip_prefix('@') {
            Some(file) => std::fs::read_to_string(file).unwrap(),
            None => arg,
        };
        let start = std::time::Instant::now();
        let analysis = toolgate_shell_analysis::analyze(&arg);
        eprintln!("analysed in {:.3} s", start.elapsed().as_secs_f64());
        println!("{:?}", arg.chars().take(200).collect::<String>());
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
