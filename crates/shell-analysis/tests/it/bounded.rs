//! No line may stall or crash the analysis: pathological inputs near the size limit —
//! brace expansions of millions of words, braces nested or chained by the hundred
//! thousand, thousands of functions, traps, substitutions, patterns of thousands of
//! stars against a directory of thousands of files — are each analysed within a generous
//! bound (the analysis counts its work and gives up, opaque, past a budget linear in the
//! line's length; the timeout only catches a stall, it measures nothing), and each in a
//! process of its own under a 1 GiB address-space limit (`prlimit --as`), which a brace
//! expansion that materialised its words would exceed by far.

use std::sync::mpsc;
use std::time::Duration;

use toolgate_core::Location;
use toolgate_shell_analysis::{ShellEnv, plan_with};

/// Far more than any of these lines takes, even unoptimised: only a stall reaches it.
const STALL: Duration = Duration::from_secs(120);

/// About this many bytes a line.
const SIZE: usize = 256 * 1024;

fn repeat(unit: &str, prefix: &str) -> String {
    let mut line = prefix.to_string();
    while line.len() + unit.len() <= SIZE {
        line.push_str(unit);
    }
    line
}

fn numbered(template: &str) -> String {
    let mut line = String::new();
    let mut n = 0;
    while line.len() < SIZE {
        line.push_str(&template.replace('N', &n.to_string()));
        n += 1;
    }
    line
}

fn lines() -> Vec<(&'static str, String)> {
    vec![
        ("a sequence of a million", "echo {1..1000000}".to_string()),
        ("a sequence of 10^8", "echo {1..100000000}".to_string()),
        ("a product of 2^40 words", format!("echo {}", "{a,b}".repeat(40))),
        ("a product of 9^20 words", format!("echo {}", "{1..9}".repeat(20))),
        ("nested products", format!("echo {}", "{a,{b,c}{d,e}}".repeat(12))),
        ("a product of 2^30 words", format!("echo {}", "{a,b}".repeat(30))),
        ("products in many words", repeat(" {a,b}{c,d}{e,f}{g,h}{i,j}", "echo")),
        ("unclosed braces", repeat("{", "echo ")),
        (
            "nested braces",
            format!("echo {}{}", "{".repeat(SIZE / 2 - 8), "}".repeat(SIZE / 2 - 8)),
        ),
        ("braces without a comma", repeat("{a}", "echo ")),
        ("one-word sequences", repeat("{1..1}", "echo ")),
        (
            "nested alternatives",
            format!("echo {}x{}", "{a,".repeat(SIZE / 8), "}".repeat(SIZE / 8)),
        ),
        (
            "a brace before a long word",
            format!("echo {{a,b}}{}", "x".repeat(SIZE - 16)),
        ),
        ("functions", numbered("fN(){ :;}\n")),
        ("functions in branches", numbered("if x; then fN(){ :;}; fi\n")),
        (
            "calls of calls",
            format!(
                "f(){{ g; g; }}; g(){{ h; h; }}; h(){{ i; i; }}; i(){{ ls; ls; }}; {}",
                repeat("f; ", "")
            ),
        ),
        ("traps", numbered("trap 'ls N' EXIT\n")),
        ("substitutions", repeat("$(ls)", "echo ")),
        ("a pipeline", repeat(" | cat", "ls")),
        ("and-ors", repeat(" && true", "true")),
        ("case arms", format!("case x in {} esac", numbered("aN) :;; "))),
        ("heredocs", numbered("cat <<EN\nx\nEN\n")),
        ("stars", repeat("*a", "cat ")),
        ("eval", repeat("eval 'ls; ' ", "")),
        ("sources", repeat("source ./x; ", "")),
        ("words", repeat(" a", "echo")),
    ]
}

#[test]
fn pathological_lines_are_analysed_within_bounds() {
    let dir = tempfile::tempdir().unwrap();
    // Patterns are matched against a directory of many files.
    for n in 0..3000 {
        std::fs::write(dir.path().join(format!("file{n}a.txt")), "").unwrap();
    }
    let root = dir.path().to_path_buf();
    for (name, line) in lines() {
        assert!(line.len() <= 1024 * 1024, "{name}: {} bytes", line.len());
        let (done, wait) = mpsc::channel();
        let root = root.clone();
        std::thread::spawn(move || {
            let location = Location::new(&root).unwrap();
            let env = ShellEnv::default().with_home(Some("/nonexistent/home".into()));
            let plan = plan_with(&location, &line, None, None, &env);
            let _ = done.send(plan.map(|plan| plan.analysis.opaque.is_some()));
        });
        match wait.recv_timeout(STALL) {
            Ok(Ok(opaque)) => println!("{name}: {}", if opaque { "opaque" } else { "analysed" }),
            Ok(Err(error)) => panic!("{name}: {error}"),
            Err(_) => panic!("{name}: the analysis stalled"),
        }
    }
}

/// The address space each line is analysed in.
const MEMORY: u64 = 1 << 30;

/// Each line in a fresh process of this test binary (`BOUNDED_LINE` names the line to
/// analyse, and that process does nothing else) under `prlimit --as`: an allocation past
/// the limit aborts it, and the test fails.
#[test]
fn pathological_lines_fit_in_a_bounded_address_space() {
    if let Ok(name) = std::env::var("BOUNDED_LINE") {
        let (_, line) = lines().into_iter().find(|(n, _)| *n == name).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let location = Location::new(dir.path()).unwrap();
        let env = ShellEnv::default().with_home(Some("/nonexistent/home".into()));
        plan_with(&location, &line, None, None, &env).unwrap();
        return;
    }
    let exe = std::env::current_exe().unwrap();
    for (name, _) in lines() {
        let output = std::process::Command::new("prlimit")
            .arg(format!("--as={MEMORY}"))
            .arg(&exe)
            .args([
                "--exact",
                "bounded::pathological_lines_fit_in_a_bounded_address_space",
                "--test-threads=1",
            ])
            .env("BOUNDED_LINE", name)
            .output()
            .unwrap();
        // It ran the line (the harness found the test), and within the limit.
        assert!(
            output.status.success() && String::from_utf8_lossy(&output.stdout).contains("1 passed"),
            "{name}: {}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
