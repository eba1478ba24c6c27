//! The differential check against Codex's own policy engine: Codex's published CLI
//! (`@openai/codex` on npm, pinned as [`e2e::CODEX_VERSION`]) decides every command of a
//! corpus (`tests/fixtures/import/codex/corpus.txt`) with `codex execpolicy check --rules
//! default.rules`, toolgate decides the same line with the same rules imported
//! (`toolgate import codex`, then `toolgate check bash`), and toolgate must be at least as
//! strict on every command (allow < ask < deny; a command no Codex rule matches counts
//! as Codex's allow). Where toolgate is stricter, the reason is recorded:
//! `docs/differential-codex.md` is this test's output, and the test fails when it is out
//! of date (`TOOLGATE_WRITE_DIFFERENTIAL=1` rewrites it). Without the package (offline),
//! the test says so and passes as skipped.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use e2e::Sandbox;
use serde_json::Value;

fn fixture(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/import/codex")
        .join(file)
}

/// A shell's word splitting (quotes, backslashes; no expansion), as Codex's own `shlex`
/// splits its examples: the argv Codex is asked about.
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => {}
                        },
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    word.push(c);
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

fn rank(effect: &str) -> u8 {
    match effect {
        "allow" | "none" => 0,
        "ask" | "prompt" => 1,
        "deny" | "forbidden" => 2,
        other => panic!("unknown effect {other}"),
    }
}

/// Codex's decision on `argv`: `allow`, `prompt`, `forbidden`, or `none` (no rule).
fn codex(binary: &Path, home: &Path, argv: &[String]) -> String {
    let output = std::process::Command::new(binary)
        .args(["execpolicy", "check", "--rules"])
        .arg(fixture("default.rules"))
        .arg("--")
        .args(argv)
        .env("HOME", home)
        .env("CODEX_HOME", home.join(".codex"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "codex execpolicy check {argv:?}: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let value: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    value["decision"].as_str().unwrap_or("none").to_string()
}

/// Why toolgate is stricter than Codex on one line, from `toolgate check --json`.
fn reason(report: &Value, codex_rank: u8, clean: &dyn Fn(&str) -> String) -> (String, String) {
    let parts = report["resources"].as_array().cloned().unwrap_or_default();
    let bash_rank = parts
        .iter()
        .map(|p| rank(p["effect"].as_str().unwrap_or("ask")))
        .max()
        .unwrap_or(0);
    let rule = |part: &Value| match part["rule"].as_object() {
        Some(rule) => format!(
            "{} {:?} {}",
            rule["action"].as_str().unwrap_or(""),
            rule["resource"].as_str().unwrap_or(""),
            rule["effect"].as_str().unwrap_or("")
        ),
        None => "no rule".into(),
    };
    if bash_rank > codex_rank {
        let strict = parts
            .iter()
            .filter(|p| rank(p["effect"].as_str().unwrap_or("ask")) == bash_rank)
            .collect::<Vec<_>>();
        let first = strict[0];
        let detail = format!(
            "`{}` by {}",
            clean(first["resource"].as_str().unwrap_or("")),
            rule(first)
        );
        if first["opaque"].as_bool() == Some(true) || !first["holes"].as_array().is_none_or(Vec::is_empty) {
            return ("runtime".into(), detail);
        }
        // toolgate decides a command by its words and by its text as written: a part with
        // the words of another is the same command, spelled another way.
        let shown = |part: &Value| words(part["resource"].as_str().unwrap_or("")).join(" ");
        if parts
            .iter()
            .any(|p| !std::ptr::eq(p, first) && shown(p) == shown(first))
        {
            return ("spelled".into(), detail);
        }
        if parts.len() > 1 && !std::ptr::eq(first, &parts[0]) {
            return ("later".into(), detail);
        }
        if parts.len() > 1 {
            return ("composed".into(), detail);
        }
        return ("spelled".into(), detail);
    }
    for also in report["also"].as_array().into_iter().flatten() {
        if rank(also["effect"].as_str().unwrap_or("ask")) > codex_rank {
            let part = also["resources"]
                .as_array()
                .and_then(|r| {
                    r.iter()
                        .find(|p| rank(p["effect"].as_str().unwrap_or("ask")) > codex_rank)
                })
                .cloned()
                .unwrap_or(Value::Null);
            return (
                format!("touches:{}", also["action"].as_str().unwrap_or("")),
                format!(
                    "{} `{}` by {}",
                    also["action"].as_str().unwrap_or(""),
                    clean(part["resource"].as_str().unwrap_or("")),
                    rule(&part)
                ),
            );
        }
    }
    ("other".into(), "no part explains it".into())
}

/// What each reason means, for the document.
fn explain(reason: &str) -> &'static str {
    match reason {
        "later" => {
            "**A later command of the line.** Codex's `execpolicy check` matches the argv's first words only: `git status && rm -rf build` is `git status …` to it. toolgate analyses the line as bash runs it and decides every command in it (README \"The bash tool\"); a later command's own rule is the stricter one."
        }
        "composed" => {
            "**A command inside a command.** A substitution (`` `whoami` ``, `$(curl …)`) runs a command of its own before the outer one, and toolgate decides it by its own rule; Codex sees the outer command's words only."
        }
        "runtime" => {
            "**Known only when it runs.** Part of the command is a variable, a substitution or a glob: toolgate cannot see what will run, so no allow covers it (README \"The analysis\")."
        }
        "spelled" => {
            "**The same command, spelled another way.** toolgate decides a command by its words and by its text as written (quotes, backslashes, extra spaces), and the stricter answer holds: the imported `git status *` matches the words of `'git' status` but not its text, so toolgate asks where Codex, comparing words, allows."
        }
        "touches:read" => {
            "**It reads a file the rules ask about.** toolgate also asks `read` for what a command reads, and the default rules ask before a `.env` file is read: a recursive read of a directory (`src/…`) may reach one, so it is asked too."
        }
        "touches:edit" => {
            "**It writes a file the rules ask about.** toolgate also asks `edit` for what a command writes."
        }
        "touches:external_directory" => {
            "**It reaches outside the project.** toolgate asks `external_directory` for a path outside the project (the default rules ask; Codex's rules know no paths)."
        }
        _ => "**Other.**",
    }
}

#[test]
fn toolgate_is_at_least_as_strict_as_codex_on_every_command() {
    let binary = match e2e::codex_cli() {
        Ok(binary) => binary,
        Err(why) => {
            eprintln!("SKIPPED: the Codex differential needs @openai/codex from npm: {why}");
            return;
        }
    };
    let sandbox = Sandbox::new();
    let home = sandbox.root.path().join("home");
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    let rules = fixture("default.rules");
    let import = sandbox
        .command(&["import", "codex", "--from", rules.to_str().unwrap(), "--write"])
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(import.status.success(), "{}", String::from_utf8_lossy(&import.stderr));
    let root = sandbox.root.path().to_string_lossy().into_owned();
    let canonical = std::fs::canonicalize(sandbox.root.path())
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let clean = move |text: &str| text.replace(&canonical, "<sandbox>").replace(&root, "<sandbox>");
    let corpus = std::fs::read_to_string(fixture("corpus.txt")).unwrap();
    let lines: Vec<&str> = corpus
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .collect();
    assert!(lines.len() >= 250, "the corpus has {} commands", lines.len());
    let mut weaker = Vec::new();
    let mut equal = 0;
    let mut unmatched: BTreeMap<String, usize> = BTreeMap::new();
    let mut unmatched_rows: Vec<String> = Vec::new();
    let mut stricter: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in &lines {
        let decision = codex(&binary, &home, &words(line));
        let output = sandbox
            .command(&["check", "bash", line, "--json"])
            .env("HOME", &home)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "check {line}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
        let effect = report["effect"].as_str().unwrap().to_string();
        let (codex_rank, ours) = (rank(&decision), rank(&effect));
        if ours < codex_rank {
            weaker.push(format!("{line}: Codex {decision}, toolgate {effect}\n{stdout}"));
        } else if decision == "none" {
            *unmatched.entry(effect.clone()).or_default() += 1;
            if effect != "ask" {
                let parts = report["resources"].as_array().cloned().unwrap_or_default();
                let shown: Vec<String> = parts
                    .iter()
                    .map(|p| {
                        format!(
                            "`{}` {}",
                            clean(p["resource"].as_str().unwrap_or("")),
                            p["effect"].as_str().unwrap_or("")
                        )
                    })
                    .collect();
                unmatched_rows.push(format!(
                    "| `{}` | {effect} | {} |",
                    line.replace('|', "\\|"),
                    shown.join(", ").replace('|', "\\|")
                ));
            }
        } else if ours == codex_rank {
            equal += 1;
        } else {
            let (why, detail) = reason(&report, codex_rank, &clean);
            stricter.entry(why).or_default().push(format!(
                "| `{}` | {decision} | {effect} | {detail} |",
                line.replace('|', "\\|")
            ));
        }
    }
    assert!(
        weaker.is_empty(),
        "toolgate is less strict than Codex on:\n{}",
        weaker.join("\n")
    );
    // The document: counts, then every stricter command under its reason.
    let total_stricter: usize = stricter.values().map(Vec::len).sum();
    let total_unmatched: usize = unmatched.values().sum();
    let mut doc = String::new();
    let _ = writeln!(doc, "# The differential check against Codex's execpolicy\n");
    let _ = writeln!(
        doc,
        "Generated by `tests/tests/it/import_codex_differential.rs` (regenerate with\n`TOOLGATE_WRITE_DIFFERENTIAL=1 cargo nextest run -p e2e import_codex_differential`);\ndo not edit by hand.\n"
    );
    let _ = writeln!(
        doc,
        "Codex's CLI `{}` (`@openai/codex` on npm) decides each command of\n`tests/fixtures/import/codex/corpus.txt` with `codex execpolicy check --rules default.rules`\n(the line split into words as a shell would); toolgate decides the same line with\n`toolgate check bash` after `toolgate import codex --from default.rules`. toolgate must be\nat least as strict on every command (allow < ask < deny), and is.\n",
        e2e::CODEX_VERSION
    );
    let _ = writeln!(doc, "| | commands |\n|---|---|");
    let _ = writeln!(doc, "| in the corpus | {} |", lines.len());
    let _ = writeln!(doc, "| a Codex rule matches, same effect | {equal} |");
    let _ = writeln!(doc, "| a Codex rule matches, toolgate stricter | {total_stricter} |");
    for (why, rows) in &stricter {
        let _ = writeln!(doc, "| — {} | {} |", why, rows.len());
    }
    let _ = writeln!(doc, "| no Codex rule matches | {total_unmatched} |");
    for (effect, count) in &unmatched {
        let _ = writeln!(doc, "| — toolgate: {effect} | {count} |");
    }
    let _ = writeln!(doc, "| toolgate less strict | 0 |\n");
    let _ = writeln!(
        doc,
        "Where no Codex rule matches, Codex decides by its approval policy and its list of\nknown-safe commands, outside the rules; the import gives toolgate a baseline that asks\n(`bash *: ask`), so such a command is asked unless toolgate's analysis finds nothing to ask.\n"
    );
    let _ = writeln!(
        doc,
        "The lines no Codex rule matches that toolgate does not ask about, with the commands\nits analysis found in them: toolgate sees through `time`, `VAR=value`, `;`, groups and\ncontrol flow to commands an imported rule decides (Codex's words `status;` or `LANG=C`\nmatch no rule), and a builtin that runs nothing (`true`, `export`) needs no rule:\n"
    );
    let _ = writeln!(doc, "| command | toolgate | its parts |\n|---|---|---|");
    for row in &unmatched_rows {
        let _ = writeln!(doc, "{row}");
    }
    let _ = writeln!(doc);
    let _ = writeln!(doc, "## Where toolgate is stricter, and why\n");
    for (why, rows) in &stricter {
        let _ = writeln!(doc, "### {why} ({})\n\n{}\n", rows.len(), explain(why));
        let _ = writeln!(
            doc,
            "| command | Codex | toolgate | what decides in toolgate |\n|---|---|---|---|"
        );
        for row in rows {
            let _ = writeln!(doc, "{row}");
        }
        let _ = writeln!(doc);
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/differential-codex.md");
    if std::env::var_os("TOOLGATE_WRITE_DIFFERENTIAL").is_some() {
        std::fs::write(&path, &doc).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == doc,
        "docs/differential-codex.md is out of date; regenerate it with TOOLGATE_WRITE_DIFFERENTIAL=1. It would be:\n{doc}"
    );
}
