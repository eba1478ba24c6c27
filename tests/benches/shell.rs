//! Permission analysis of a 200-command script, and of lines of 512 KiB and 1 MiB (the
//! size limit) made of many short commands, whose ratio shows the analysis is linear.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};

/// 200 commands of the kinds an agent writes: pipelines, lists, substitutions, wrappers,
/// redirections, control flow.
pub fn script() -> String {
    let lines = [
        "git status --short && git diff --stat",
        "cargo build --release 2>&1 | tail -n 20",
        "FOO=1 npm run build > build.log",
        "for f in src/*.rs; do wc -l \"$f\"; done",
        "echo \"$(date) done\" >> log.txt",
        "sudo -u deploy env PATH=/usr/bin rm -rf /tmp/cache",
        "find . -name '*.tmp' -exec rm {} \\;",
        "bash -c 'cd sub && make test'",
        "if [ -f Cargo.toml ]; then cargo fmt; else echo none; fi",
        "cat README.md | grep -n toolgate | head -5",
    ];
    (0..200).map(|i| lines[i % lines.len()]).collect::<Vec<_>>().join("\n")
}

/// Commands of the script above, one a line, up to `bytes` (many commands: the case the
/// old analysis was quadratic in).
pub fn many_commands(bytes: usize) -> String {
    let script = script();
    let mut out = String::with_capacity(bytes);
    // Without the one line the analysis calls opaque (`env PATH=…`), so the whole input
    // is analysed.
    let lines: Vec<&str> = script.lines().filter(|line| !line.contains("PATH=")).collect();
    for line in lines.iter().cycle() {
        if out.len() + line.len() + 1 > bytes {
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn analysis(c: &mut Criterion) {
    let script = script();
    let mut group = c.benchmark_group("shell");
    group.bench_function("analyze_200_commands", |b| {
        b.iter(|| std::hint::black_box(toolgate_shell_analysis::analyze(std::hint::black_box(&script))))
    });
    for (id, bytes) in [("analyze_512kib", 512 * 1024), ("analyze_1mib", 1024 * 1024)] {
        let line = many_commands(bytes);
        // The figure is about analysing the line, not refusing it as too long.
        let analysis = toolgate_shell_analysis::analyze(&line);
        assert!(analysis.opaque.is_none(), "{id}: {:?}", analysis.opaque);
        group.bench_function(id, |b| {
            b.iter(|| std::hint::black_box(toolgate_shell_analysis::analyze(std::hint::black_box(&line))))
        });
    }
    group.finish();
}

criterion_group!(benches, analysis);
criterion_main!(benches);
