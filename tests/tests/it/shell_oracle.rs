//! The bash analysis oracle in CI: generated lines, every table case and every recorded
//! failure, each run in real bash inside the sandbox and checked for soundness against
//! `toolgate_shell_analysis::plan` (see `e2e::shell_oracle`), plus tests of the oracle
//! itself: it must see what a blind analysis misses, confine what it runs, and survive
//! lines that hang or leave processes behind.
//!
//! Every line must be sound. `ORACLE_RECORD=1 cargo nextest run -p e2e
//! shell_oracle::` also appends the failing lines that are not in the corpus yet to it, so
//! they are replayed without a sandbox from then on (`oracle_corpus.rs` in the analysis
//! crate's tests).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout)]

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use e2e::shell_oracle::soundness;
use e2e::shell_oracle::{Case, Options, Oracle, Outcome, Verdict, builtins, generate, record, summary};
use toolgate_core::{Location, PermissionRequest};

/// The seed and size of the generated part: fixed, so a failure here is reproducible
/// with `cargo xtask fuzz-shell 2500 --seed 12`.
const SEED: u64 = 12;
const GENERATED: usize = 2500;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn cases() -> Vec<Case> {
    let mut cases: Vec<Case> = generate::lines(SEED, GENERATED)
        .into_iter()
        .enumerate()
        .map(|(index, generated)| {
            let mut tags = generated.tags;
            tags.push(format!("seed:{SEED}:{index}"));
            Case {
                line: generated.line,
                tags,
            }
        })
        .collect();
    cases.extend(builtins::lines().into_iter().map(|(line, tags)| Case { line, tags }));
    let rows = table_rows();
    assert!(
        rows.len() >= 80,
        "the table test's rows were not found ({} rows)",
        rows.len()
    );
    cases.extend(rows.into_iter().map(|line| Case::new(line, &["table"])));
    let corpus = soundness::read_corpus(&workspace().join(soundness::CORPUS)).unwrap();
    cases.extend(corpus.into_iter().map(|record| Case {
        line: record.line,
        tags: record.tags,
    }));
    cases
}

/// Every `("line", Effect)` row of the analysis crate's tests: in their sources and in their
/// reviewed snapshots, each line once, in the order found.
fn table_rows() -> Vec<String> {
    let dir = workspace().join(soundness::TABLE_TESTS);
    let mut files: Vec<PathBuf> = [dir.clone(), dir.join("snapshots")]
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).unwrap())
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "rs" || ext == "snap"))
        .collect();
    files.sort();
    let mut seen = BTreeSet::new();
    files
        .iter()
        .flat_map(|file| soundness::table_rows(&std::fs::read_to_string(file).unwrap()))
        .filter(|line| seen.insert(line.clone()))
        .collect()
}

#[test]
fn generated_lines_table_cases_and_the_corpus_are_sound() {
    let oracle = Oracle::new(Options::default()).expect("the oracle needs strace, util-linux and user namespaces");
    let cases = cases();
    let start = Instant::now();
    let outcomes = oracle.run(&cases).unwrap();
    println!(
        "{}{} lines in {:.1} s",
        summary(&outcomes),
        outcomes.len(),
        start.elapsed().as_secs_f64()
    );
    let inconclusive: Vec<&Outcome> = outcomes
        .iter()
        .filter(|outcome| matches!(outcome.verdict, Verdict::Inconclusive(_)))
        .collect();
    assert!(
        inconclusive.is_empty(),
        "lines the oracle could not check: {:?}",
        inconclusive
            .iter()
            .map(|o| (&o.case.line, &o.verdict))
            .collect::<Vec<_>>()
    );
    let ran = outcomes.iter().filter(|outcome| outcome.ran).count();
    // Lines the analysis denies are checked without running (nothing would run); the
    // sound analysis denies a good part of the generated attacks, so about a third run.
    assert!(ran > GENERATED / 4, "only {ran} lines ran");
    let corpus_path = workspace().join(soundness::CORPUS);
    let known: BTreeSet<String> = soundness::read_corpus(&corpus_path)
        .unwrap()
        .into_iter()
        .map(|record| record.line)
        .collect();
    let unsound: Vec<&Outcome> = outcomes
        .iter()
        .filter(|outcome| matches!(outcome.verdict, Verdict::Unsound(_)))
        .collect();
    let describe = |outcomes: &[&Outcome]| -> String {
        outcomes
            .iter()
            .take(40)
            .map(|outcome| match &outcome.verdict {
                Verdict::Unsound(found) => format!("{:?}\n    {}", outcome.case.line, found.summary()),
                _ => String::new(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let new: Vec<&Outcome> = unsound
        .iter()
        .copied()
        .filter(|outcome| !known.contains(&outcome.case.line))
        .collect();
    if std::env::var_os("ORACLE_RECORD").is_some() && !new.is_empty() {
        let mut text = String::new();
        let mut seen = known.clone();
        for outcome in &new {
            if let Some(record) = record(outcome)
                && seen.insert(record.line.clone())
            {
                text.push_str(&soundness::corpus_line(&record));
                text.push('\n');
            }
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&corpus_path)
            .unwrap();
        file.write_all(text.as_bytes()).unwrap();
        println!("recorded {} new failures in {}", new.len(), soundness::CORPUS);
    }
    assert!(
        unsound.is_empty(),
        "{} lines ran more than the analysis asked ({} of them not in the corpus yet):\n{}",
        unsound.len(),
        new.len(),
        describe(&unsound)
    );
}

/// An analysis that asks for nothing: everything it is shown would be allowed.
fn blind(_: &Location, _: &str) -> Vec<PermissionRequest> {
    Vec::new()
}

fn one(options: Options, line: &str) -> Outcome {
    let oracle = Oracle::new(options).unwrap();
    oracle.run_with(&[Case::new(line, &[])], &blind).unwrap().remove(0)
}

#[test]
fn the_oracle_sees_what_a_blind_analysis_misses() {
    // (line, action, a form the failing event must have)
    let expected: &[(&str, &str, &str)] = &[
        ("rm victim", "bash", "rm victim"),
        ("/bin/rm victim", "bash", "rm victim"),
        ("cat secrets/key", "read", "secrets/key"),
        ("cat key-link", "read", "secrets/key"),
        ("cat secret?/k*", "read", "secrets/key"),
        ("cat /dev/fd/../cwd/.env", "read", ".env"),
        ("git -C . --no-pager push", "bash", "git push"),
        ("git -c alias.p=push p", "bash", "git push"),
        ("printf x", "bash", "printf x"),
        ("find . -maxdepth 0 -exec rm victim \\;", "bash", "rm victim"),
        ("echo victim | xargs rm", "bash", "rm victim"),
        ("x='$(rm victim)'; echo ${x@P}", "bash", "rm victim"),
        ("n='a[$(curl example.com)]'; (( n ))", "bash", "curl example.com"),
        ("PATH=sub:$PATH ls", "bash", "rm -f victim"),
        ("BASH_ENV=evil.sh bash -c :", "bash", "rm -f victim"),
        ("GIT_TRACE=/tmp/t git status", "bash", "GIT_TRACE=/tmp/t git status"),
        ("echo x > ../outside/x", "external_directory", "/sandbox/outside/*"),
        ("echo x > ../outside/b.env", "edit", "/sandbox/outside/b.env"),
        ("cat ~/.ssh/id_rsa", "external_directory", "/sandbox/home/.ssh/*"),
        ("echo x > /tmp/toolgate-oracle-probe", "external_directory", "/tmp/*"),
        ("sed -i s/A/B/ a.env", "edit", "a.env"),
        ("python3 -c 'import os; os.system(\"rm victim\")'", "bash", "rm victim"),
        ("echo hi\n\\\nrm victim", "bash", "rm victim"),
    ];
    let oracle = Oracle::new(Options::default()).unwrap();
    let cases: Vec<Case> = expected.iter().map(|(line, _, _)| Case::new(*line, &[])).collect();
    let outcomes = oracle.run_with(&cases, &blind).unwrap();
    let mut missed = Vec::new();
    for ((line, action, form), outcome) in expected.iter().zip(&outcomes) {
        let found = match &outcome.verdict {
            Verdict::Unsound(unsound) => unsound.beyond.iter().any(|(event, _)| {
                // The check speaks of the real directory the line ran in, not `/sandbox`.
                event.action == *action
                    && event.forms.iter().any(|f| {
                        f == form
                            || form
                                .strip_prefix("/sandbox/")
                                .is_some_and(|rest| f.ends_with(&format!("/{rest}")))
                    })
            }),
            _ => false,
        };
        if !found {
            missed.push(format!(
                "{line:?}: expected {action} {form:?}; got {:?}; events {:?}; output {:?}",
                outcome.verdict, outcome.events, outcome.output
            ));
        }
    }
    assert!(missed.is_empty(), "{}", missed.join("\n"));
}

#[test]
fn lines_that_only_do_allowed_things_are_sound_even_to_a_blind_analysis() {
    // The observation must not invent events: these do nothing the rules restrict.
    let oracle = Oracle::new(Options::default()).unwrap();
    let lines = [
        "echo hi",
        "ls > /dev/null 2>&1 < /dev/null",
        "echo hi > out.txt",
        "f() { echo hi; }; f",
        "git status --short",
        "(cd sub && ls)",
        "ls secrets",
        "x=1; export Y=2; unset x; cd sub",
    ];
    let cases: Vec<Case> = lines.iter().map(|line| Case::new(*line, &[])).collect();
    let outcomes = oracle.run_with(&cases, &blind).unwrap();
    for outcome in outcomes {
        assert!(
            matches!(outcome.verdict, Verdict::Sound(_)),
            "{:?}: {:?} {:?}",
            outcome.case.line,
            outcome.verdict,
            outcome.events
        );
        assert!(
            !outcome.events.is_empty() || outcome.case.line.starts_with("x=1"),
            "{:?} recorded nothing",
            outcome.case.line
        );
    }
}

#[test]
fn nothing_escapes_the_sandbox() {
    let outside = std::env::temp_dir().join(format!("toolgate-oracle-escape-{}", std::process::id()));
    let _ = std::fs::remove_file(&outside);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let line = format!(
        "echo x > {out} || echo write-refused; \
         (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo connected || echo connect-refused",
        out = outside.display()
    );
    let outcome = one(Options::default(), &line);
    assert!(
        outcome.output.contains("write-refused"),
        "the line did not run: {:?}",
        outcome.output
    );
    assert!(outcome.output.contains("connect-refused"), "{:?}", outcome.output);
    assert!(!outside.exists(), "the line wrote {}", outside.display());
    assert!(listener.accept().is_err(), "the line reached a host port");
    // The refused write was still seen: an edit outside the project.
    assert!(
        outcome.events.iter().any(|event| event.action == "external_directory"),
        "{:?}",
        outcome.events
    );
}

#[test]
fn a_line_that_hangs_or_leaves_processes_behind_does_not_hold_up_the_next() {
    let options = Options {
        workers: 1,
        timeout: Duration::from_secs(2),
        ..Options::default()
    };
    let oracle = Oracle::new(options).unwrap();
    let cases = [
        Case::new("sleep 100", &[]),
        Case::new("(sleep 1000 &); setsid sleep 1000 & echo left", &[]),
        Case::new("ls /proc | grep -c '^[0-9]'", &[]),
    ];
    let start = Instant::now();
    let outcomes = oracle.run_with(&cases, &blind).unwrap();
    assert!(outcomes[0].timed_out, "{:?}", outcomes[0]);
    assert!(!outcomes[1].timed_out, "{:?}", outcomes[1]);
    assert!(outcomes[1].output.contains("left"), "{:?}", outcomes[1].output);
    // Only the driver, the line's shell, ls and grep are alive when it runs: nothing of
    // the lines before.
    let count: usize = outcomes[2].output.trim().parse().unwrap_or(usize::MAX);
    assert!(count <= 4, "processes left over: {:?}", outcomes[2].output);
    assert!(start.elapsed() < Duration::from_secs(60), "{:?}", start.elapsed());
}

/// toolgate's analysis with a deliberate bug: it sees only the text before the first
/// separator, as a walker that stopped after the first command would.
fn first_command_only(location: &Location, line: &str) -> Vec<PermissionRequest> {
    let end = line.find([';', '&', '|', '\n']).unwrap_or(line.len());
    e2e::shell_oracle::toolgate_analysis(location, &line[..end])
}

#[test]
fn the_generated_lines_catch_a_deliberately_unsound_analysis() {
    // The generated part of the CI run can fail: the same generator, against an analysis
    // that asks for nothing and against toolgate's own with a plausible bug, finds lines
    // that ran more than was asked — with the failing event named.
    let oracle = Oracle::new(Options::default()).unwrap();
    let cases: Vec<Case> = generate::lines(SEED, 300)
        .into_iter()
        .map(|generated| Case {
            line: generated.line,
            tags: generated.tags,
        })
        .collect();
    let unsound = |outcomes: &[Outcome]| -> Vec<String> {
        outcomes
            .iter()
            .filter_map(|outcome| match &outcome.verdict {
                Verdict::Unsound(found) if !found.beyond.is_empty() => Some(outcome.case.line.clone()),
                _ => None,
            })
            .collect()
    };
    let blind_found = unsound(&oracle.run_with(&cases, &blind).unwrap());
    let buggy_found = unsound(&oracle.run_with(&cases, &first_command_only).unwrap());
    let real_found: BTreeSet<String> = unsound(&oracle.run(&cases).unwrap()).into_iter().collect();
    // What only the bug explains: lines the real analysis gets right.
    let buggy_found: Vec<String> = buggy_found
        .into_iter()
        .filter(|line| !real_found.contains(line))
        .collect();
    println!(
        "of {} generated lines: {} unsound to a blind analysis, {} more to the first-command-only one than to the real one",
        cases.len(),
        blind_found.len(),
        buggy_found.len()
    );
    assert!(
        blind_found.len() * 4 >= cases.len(),
        "only {} of {} generated lines caught a blind analysis",
        blind_found.len(),
        cases.len()
    );
    // Lines whose later commands do something the rules restrict.
    assert!(
        buggy_found.len() >= 10,
        "only {} lines caught the first-command-only analysis: {buggy_found:?}",
        buggy_found.len()
    );
    assert!(
        buggy_found.iter().any(|line| line.contains([';', '&', '|', '\n'])),
        "{buggy_found:?}"
    );
}

/// The closed set against the real bash: every builtin it has, every option letter its
/// synopsis shows, every `set -o` and `shopt` option has a line in the oracle's table
/// (spec §7.3: bash is the shell whose commands are decided, so all of it is tried).
#[test]
fn every_builtin_and_option_of_the_real_bash_has_an_oracle_line() {
    let bash = |script: &str| -> String {
        let output = std::process::Command::new("bash")
            .args(["--norc", "--noprofile", "-c", script])
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let mut missing = Vec::new();
    for name in bash("compgen -b").lines() {
        let lines: Vec<_> = builtins::BUILTIN_LINES.iter().filter(|(b, _, _)| *b == name).collect();
        if lines.is_empty() {
            missing.push(format!("{name} (no line)"));
            continue;
        }
        let synopsis = bash(&format!("help -s -- {}", generate::sq(name)));
        for option in builtins::synopsis_options(&synopsis) {
            if !lines.iter().any(|(_, o, _)| *o == option) {
                missing.push(format!("{name} {option}"));
            }
        }
    }
    for name in bash("set -o").lines().filter_map(|l| l.split_whitespace().next()) {
        if !builtins::SET_OPTIONS.contains(&name) {
            missing.push(format!("set -o {name}"));
        }
    }
    for name in bash("shopt").lines().filter_map(|l| l.split_whitespace().next()) {
        if !builtins::SHOPT_OPTIONS.contains(&name) {
            missing.push(format!("shopt {name}"));
        }
    }
    assert!(
        missing.is_empty(),
        "bash has what the oracle's table leaves out: {missing:?}"
    );
    assert!(builtins::lines().len() > 300, "{} lines", builtins::lines().len());
}
