//! The exec-time oracle in CI (`e2e::shell_oracle::exec`): generated lines and lines the
//! analysis misreads on purpose, each run twice through the real `toolgate call bash`
//! under strace — once with everything allowed, to see which programs it starts, then
//! with deny rules for some of them — and no denied program may ever start.
//!
//! `EXEC_ORACLE_LINES=N EXEC_ORACLE_SEED=S cargo nextest run -p e2e exec_oracle::`
//! runs N generated lines of seed S instead of the fixed set.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout)]

use std::process::Command;
use std::time::{Duration, Instant};

use e2e::shell_oracle::exec::{ExecOptions, ExecOracle, ExecOutcome, exec_summary};
use e2e::shell_oracle::{Case, builtins, generate};

/// The generated part: fixed, so a failure is reproducible with these numbers.
const SEED: u64 = 22;
const GENERATED: usize = 400;

fn kernel_sandbox() -> bool {
    Command::new(e2e::toolgate_binary())
        .args(["__sandbox-exec", "--probe"])
        .output()
        .is_ok_and(|output| output.status.success())
}

/// Lines the analysis misreads on purpose (or cannot follow), each denying `rm` by name:
/// where the analysis lets the line run, the kernel must stop `rm` when it starts.
const MISREAD: &[(&str, &str)] = &[
    ("function-redefined", "f() { echo hi; }; f; f() { rm victim; }; f"),
    (
        "function-redefined-by-eval",
        "f() { ls; }; f; eval 'f() { rm victim; }'; f",
    ),
    (
        "script-rewritten",
        "printf 'ls\\n' > s.sh; bash s.sh; printf 'rm victim\\n' > s.sh; bash s.sh",
    ),
    (
        "script-written-then-run",
        "printf 'rm victim\\n' > s.sh; chmod +x s.sh; ./s.sh",
    ),
    (
        "printf-v-exported",
        "c=ls; printf -v c rm; export c; bash -c '$c victim'",
    ),
    ("read-exported", "c=ls; read c <<< rm; export c; bash -c '$c victim'"),
    ("declare-x", "declare -x c=rm; bash -c '$c victim'"),
    ("eval-base64", "eval \"$(echo cm0gdmljdGlt | base64 -d)\""),
    ("alias", "shopt -s expand_aliases\nalias ls='rm victim'\nls"),
    ("source-written", "printf 'rm victim\\n' > s.sh; source s.sh"),
    ("bash-env", "printf 'rm victim\\n' > e.sh; BASH_ENV=./e.sh bash -c true"),
    ("xargs", "echo victim | xargs rm"),
    ("find-exec", "find . -name victim -exec rm {} +"),
    ("env-S", "env -S 'rm victim'"),
    ("trap-exit", "trap 'rm victim' EXIT"),
    (
        "command-not-found-handle",
        "command_not_found_handle() { rm victim; }; nosuchcommand",
    ),
    ("exec-a", "exec -a innocent rm victim"),
    ("background", "rm victim & wait"),
    ("subshell", "(rm victim)"),
    ("process-substitution", "cat <(rm victim)"),
    ("heredoc-bash-s", "bash -s <<'EOF'\nrm victim\nEOF"),
    (
        "python-execv",
        "printf 'import os\\nos.execv(\"/usr/bin/rm\", [\"rm\", \"victim\"])\\n' > x.py; python3 x.py",
    ),
    (
        "python-system",
        "printf 'import os\\nos.system(\"rm victim\")\\n' > x.py; python3 x.py",
    ),
    ("makefile", "printf 'all:\\n\\trm victim\\n' > Makefile; make -s"),
    (
        "git-hook",
        "mkdir -p .git/hooks; printf '#!/bin/sh\\nrm victim\\n' > .git/hooks/pre-commit; \
         chmod +x .git/hooks/pre-commit; git -c user.name=a -c user.email=a@b commit -q --allow-empty -m x",
    ),
    ("git-alias", "git -c alias.x='!rm victim' x"),
    ("git-alias-config", "git config alias.x '!rm victim'; git x"),
    // (git runs `core.pager` only for a terminal, which a command never has: its editor.)
    (
        "git-editor",
        "git -c core.editor='rm victim; :' -c user.name=a -c user.email=a@b commit -q --allow-empty",
    ),
    ("dev-fd", "exec 3</usr/bin/rm; /dev/fd/3 victim"),
    ("symlink", "ln -s /usr/bin/rm r; ./r victim"),
    ("coproc", "coproc rm victim; wait"),
];

fn cases() -> Vec<Case> {
    let (seed, count) = match (
        std::env::var("EXEC_ORACLE_SEED").ok().and_then(|v| v.parse().ok()),
        std::env::var("EXEC_ORACLE_LINES").ok().and_then(|v| v.parse().ok()),
    ) {
        (seed, Some(count)) => (seed.unwrap_or(SEED), count),
        (seed, None) => (seed.unwrap_or(SEED), GENERATED),
    };
    let mut cases: Vec<Case> = MISREAD
        .iter()
        .map(|(tag, line)| Case::new(*line, &[&format!("misread:{tag}"), "deny-name:rm"]))
        .collect();
    // Every builtin and option of bash (the strace oracle's closed set), each line with
    // its programs denied.
    cases.extend(builtins::lines().into_iter().map(|(line, tags)| Case { line, tags }));
    cases.extend(generate::lines(seed, count).into_iter().enumerate().map(|(index, g)| {
        let mut tags = g.tags;
        tags.push(format!("seed:{seed}:{index}"));
        Case { line: g.line, tags }
    }));
    cases
}

fn describe(outcome: &ExecOutcome) -> String {
    format!(
        "{:?} {:?}\n  denied: {:?}\n  started anyway: {:?}\n  result: {}",
        outcome.case.line,
        outcome.case.tags,
        outcome.denied.iter().map(|d| &d.rules).collect::<Vec<_>>(),
        outcome
            .violations
            .iter()
            .map(|s| (&s.path, &s.argv))
            .collect::<Vec<_>>(),
        outcome.text
    )
}

#[test]
fn no_denied_program_ever_starts() {
    if !e2e::kernel_has(e2e::KernelFeature::ExecGuard) {
        return;
    }
    let options = ExecOptions {
        workers: std::thread::available_parallelism().map_or(2, usize::from),
        timeout: Duration::from_secs(5),
        sandbox: kernel_sandbox(),
        seed: SEED,
    };
    let oracle = ExecOracle::new(&e2e::toolgate_binary(), options).expect("the exec oracle needs strace");
    let cases = cases();
    let start = Instant::now();
    let outcomes = oracle.run(&cases);
    println!("{}", exec_summary(&outcomes, start.elapsed().as_secs_f64()));

    let broken: Vec<String> = outcomes
        .iter()
        .filter(|o| !o.violations.is_empty())
        .map(describe)
        .collect();
    assert!(
        broken.is_empty(),
        "denied programs started ({}):\n{}",
        broken.len(),
        broken.join("\n")
    );
    let inconclusive: Vec<(&str, &str)> = outcomes
        .iter()
        .filter_map(|o| o.inconclusive.as_deref().map(|why| (o.case.line.as_str(), why)))
        .collect();
    assert!(
        inconclusive.is_empty(),
        "lines the oracle could not check: {inconclusive:?}"
    );

    // The oracle must see something to stop: most lines start a program, and a good part
    // of them run past the analysis under their deny rules and are stopped by the kernel.
    let generated: Vec<&ExecOutcome> = outcomes
        .iter()
        .filter(|o| o.case.tags.iter().any(|t| t.starts_with("seed:")))
        .collect();
    let observed = generated.iter().filter(|o| !o.observed.is_empty()).count();
    assert!(
        observed * 10 >= generated.len() * 6,
        "only {observed} of {} lines started a program",
        generated.len()
    );
    let stopped = generated.iter().filter(|o| o.ran && o.refusals > 0).count();
    assert!(
        stopped * 10 >= generated.len(),
        "only {stopped} of {} lines reached the kernel with a denied program",
        generated.len()
    );

    // The misread lines: each really runs rm when allowed (else it proves nothing), and
    // the ones the analysis reads wrong and lets run are stopped by the kernel.
    let misread: Vec<&ExecOutcome> = outcomes
        .iter()
        .filter(|o| o.case.tags.iter().any(|t| t.starts_with("misread:")))
        .collect();
    let rm = e2e::shell_oracle::exec::which(&std::env::var("PATH").unwrap_or_default(), "rm")
        .and_then(|path| e2e::shell_oracle::exec::key_of(&path))
        .expect("rm is installed");
    let mut report = Vec::new();
    for outcome in &misread {
        let ran_rm = outcome.observed.iter().any(|s| s.runs.iter().any(|(f, _)| *f == rm));
        let tag = &outcome.case.tags[0];
        report.push(format!(
            "{tag}: rm when allowed {ran_rm}, ran under the deny {}, kernel refusals {}",
            outcome.ran, outcome.refusals
        ));
        if outcome.ran && ran_rm {
            assert!(
                outcome.refusals > 0,
                "the kernel did not report stopping rm: {}",
                describe(outcome)
            );
        }
    }
    println!("{}", report.join("\n"));
    // (A function redefined after use was one of these; the analysis now walks a function
    // at each call with that call's state, so it refuses that line itself.)
    for must in [
        "misread:printf-v-exported",
        "misread:read-exported",
        "misread:script-written-then-run",
        "misread:command-not-found-handle",
        "misread:python-execv",
        "misread:symlink",
    ] {
        let outcome = misread.iter().find(|o| o.case.tags[0] == must).unwrap();
        assert!(
            outcome.ran && outcome.refusals > 0,
            "{must} should run past the analysis and be stopped by the kernel: {}",
            describe(outcome)
        );
    }
}
