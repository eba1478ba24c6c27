//! The everyday corpus (`corpus/everyday.txt`): command lines an AI coding agent runs in an
//! ordinary session (cargo, npm, pytest, git, grep/rg, sed -n, find, jq, make, with pipes
//! and chains), planned in a fixture project and a fixed home, and decided under
//! toolgate's default rules plus a config that allows the programs they use
//! (`corpus/everyday-config.json`: `bash` asks by default, `PROG *` allowed for each
//! program, `rm *` and `git push *` ask), with exec-time enforcement on (a `bash` request
//! is `enforced`: an opaque part is asked, not denied). At least 97 % of the lines must
//! run without a question and none may be denied, on a fresh machine (no package-manager
//! cache yet) and on one where every cache exists. The asked lines are printed with their reasons
//! (`cargo nextest run -p toolgate-shell-analysis everyday --no-capture`).

use std::fmt::Write as _;
use std::path::Path;

use toolgate_core::Location;
use toolgate_permission::{AgentSettings, Agents, Effect, Ruleset, decide_resource};
use toolgate_shell_analysis::{ShellEnv, plan_with};

/// The share of lines that must be allowed, in percent.
const TARGET: usize = 97;

/// The corpus lines, decoded: `# ` lines are comments; `\n` stands for a newline, `\\`
/// for a backslash, any other backslash is itself (the file's header says so).
fn corpus(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("everyday.txt")).unwrap();
    text.lines()
        .filter(|line| !line.is_empty() && !line.starts_with("# "))
        .map(|line| {
            line.replace("\\\\", "\u{1}")
                .replace("\\n", "\n")
                .replace('\u{1}', "\\")
        })
        .collect()
}

/// The files of the fixture project (what the corpus lines name), as `make-project.sh`
/// made them when the corpus was measured: a Cargo workspace, a package.json, a Python
/// package, a Go module, a Makefile and scripts.
const FILES: &[(&str, &str)] = &[
    (
        "Cargo.toml",
        "[workspace]\nmembers = [\"crates/*\"]\n\n[package]\nname = \"toolgate-demo\"\nversion = \"0.1.0\"\n",
    ),
    ("src/main.rs", "fn main() { println!(\"hi\"); } // TODO\n"),
    ("src/lib.rs", "pub fn parse(s: &str) -> usize { s.len() }\n"),
    ("src/config.rs", "pub const X: u8 = 1;\n"),
    ("src/old.rs", "pub fn old() {}\n"),
    ("src/utils/mod.rs", "\n"),
    (
        "crates/toolgate-core/Cargo.toml",
        "[package]\nname = \"toolgate-core\"\nversion = \"0.1.0\"\n",
    ),
    ("crates/toolgate-core/src/lib.rs", "pub fn f() {}\n"),
    ("crates/toolgate-core/src/parser.rs", "pub fn parse() {}\n"),
    (
        "crates/toolgate-cli/Cargo.toml",
        "[package]\nname = \"toolgate-cli\"\nversion = \"0.1.0\"\n",
    ),
    ("crates/toolgate-cli/src/lib.rs", "pub fn f() {}\n"),
    ("examples/basic.rs", "fn main() {}\n"),
    ("package.json", "{\"name\": \"demo-web\", \"version\": \"1.2.3\"}\n"),
    ("web/package.json", "{\"name\": \"demo-web\", \"version\": \"1.2.3\"}\n"),
    ("web/src/index.ts", "export {}\n"),
    ("package-lock.json", "{}\n"),
    ("tsconfig.json", "{\"compilerOptions\": {\"strict\": true}}\n"),
    ("src/utils.test.ts", "export const a = 1;\n"),
    ("pyproject.toml", "[project]\nname = \"mypkg\"\nversion = \"0.1.0\"\n"),
    ("requirements.txt", "requests\n"),
    ("tests/test_api.py", "def test_login(): pass\n"),
    ("tests/test_models.py", "def test_m(): pass\n"),
    ("tests/__init__.py", ""),
    ("mypkg/__init__.py", ""),
    ("go.mod", "module example.com/demo\n\ngo 1.22\n"),
    ("main.go", "package main\n"),
    ("cmd/server/main.go", "package main\n"),
    ("internal/parser/parser.go", "package parser\n"),
    ("Makefile", "all:\n\ttrue\ntest:\n\ttrue\n"),
    ("scripts/test.sh", "#!/usr/bin/env bash\necho ok\n"),
    ("scripts/setup.sh", "#!/bin/sh\necho setup\n"),
    ("scripts/build.js", "console.log(1)\n"),
    ("scripts/gen_fixtures.py", "print(1)\n"),
    ("README.md", "# demo\n"),
    ("CHANGELOG.md", "# Changelog\n"),
    (".gitignore", "target/\nnode_modules/\n"),
    (".env.example", "PORT=3000\n"),
    ("data/sample.json", "[{\"status\":\"failed\"}]\n"),
    ("results.json", "[{\"status\":\"failed\"}]\n"),
    ("data/users.csv", "id,name,n\n1,a,2\n"),
    ("data/input.csv", "a\r\n"),
    ("data/blob.bin", "\0\0\0\0"),
    ("a.bin", "\0\0\0\0"),
    ("b.bin", "\0\0\0\0"),
    ("names.txt", "b\na\nb\n"),
    ("words.txt", "x\ny\n"),
    ("ids.txt", "1\n2\n"),
    ("a.txt", "a\n"),
    ("b.txt", "b\n"),
    ("access.log", "1.1.1.1 - GET /\n"),
    ("build.log", "error: x\n"),
    ("build/output.txt", "x\n"),
    ("tests/fixtures/tmp.json", "{}\n"),
    ("config/dev.toml", "[dev]\n"),
    ("fix.patch", "diff\n"),
    ("fixtures.tar.gz", ""),
    ("release.zip", ""),
    ("dist/app.tar.gz", ""),
    ("templates/a.html", "x\n"),
    ("expected/a", "x\n"),
    ("actual/a", "x\n"),
    (".git/HEAD", "ref: refs/heads/main\n"),
];

/// Empty directories of the fixture.
const DIRS: &[&str] = &["data", "dist/app", "target/debug"];

/// The package managers' caches, relative to the home (README "The bash tool").
const CACHES: &[&str] = &[
    ".npm",
    ".cargo",
    ".cache/pip",
    ".cache/uv",
    ".cache/yarn",
    ".cache/pnpm",
    ".cache/go-build",
    ".cache/pypoetry",
    ".local/share/pnpm",
    ".local/share/uv",
    "go",
    ".yarn",
    ".bun",
];

fn fixture(root: &Path) {
    for (path, contents) in FILES {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
    for dir in DIRS {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    for script in ["scripts/test.sh", "scripts/setup.sh"] {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(root.join(script), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// What the corpus came to in one home.
pub(crate) struct Measured {
    /// The lines allowed without a question.
    pub(crate) allowed: usize,
    /// The lines asked, each with its reasons.
    pub(crate) asked: Vec<String>,
    /// The lines denied, each with its reasons.
    pub(crate) denied: Vec<String>,
}

/// Plans and decides every line in `project` with `home` as `HOME`, under the config in
/// `corpus`.
fn measure(corpus: &Path, project: &Path, home: &Path, lines: &[String]) -> Measured {
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(corpus.join("everyday-config.json")).unwrap()).unwrap();
    let settings = AgentSettings::default()
        .with_home(home)
        .with_temp_dir("/tmp")
        .with_permission(config["permission"].clone());
    let agents = Agents::build(&settings).unwrap();
    let rules: &Ruleset = &agents.get("build").unwrap().rules;
    let location = Location::new(project).unwrap();
    let env = ShellEnv::default()
        .with_home(Some(home.display().to_string()))
        .with_path(Some("/usr/local/bin:/usr/bin:/bin".into()));
    let mut measured = Measured {
        allowed: 0,
        asked: Vec::new(),
        denied: Vec::new(),
    };
    for line in lines {
        let plan = plan_with(&location, line, None, None, &env).unwrap();
        let mut effect = Effect::Allow;
        let mut reasons = String::new();
        // Exec-time enforcement is on (the default where the kernel has it): a bash
        // request is decided again at each exec, as the bash tool and `toolgate check`
        // mark it (README "The bash tool").
        let requests: Vec<_> = plan
            .requests
            .iter()
            .cloned()
            .map(|request| {
                let enforced = request.action == "bash";
                request.enforced_later(enforced)
            })
            .collect();
        for request in &requests {
            for resource in &request.resources {
                let (decided, rule) = decide_resource(&[rules], None, request, resource);
                if decided == Effect::Allow {
                    continue;
                }
                if decided == Effect::Deny || effect == Effect::Allow {
                    effect = decided;
                }
                let why = plan
                    .analysis
                    .parts
                    .iter()
                    .find(|part| part.display() == *resource)
                    .and_then(|part| part.why.clone());
                write!(reasons, "\n    {} {resource:?}: {decided}", request.action).unwrap();
                if let Some(rule) = rule {
                    write!(reasons, " by {:?}", rule.resource).unwrap();
                }
                if request.opaque.contains(resource) {
                    reasons.push_str(" (opaque)");
                }
                if let Some(why) = why {
                    write!(reasons, ": {why}").unwrap();
                }
            }
        }
        match effect {
            Effect::Allow => measured.allowed += 1,
            Effect::Ask => measured.asked.push(format!("{line:?}{reasons}")),
            Effect::Deny => measured.denied.push(format!("{line:?}{reasons}")),
        }
    }
    measured
}

/// The corpus in `dir` (`everyday.txt`, `everyday-config.json`) measured in a fixture
/// project made under `scratch`, in a fresh home and in one where every package cache
/// exists: the number of lines, and each home's result. `cargo xtask bench` reports the
/// worse of the two (`tests/examples/everyday_corpus.rs`).
pub(crate) fn measure_corpus(dir: &Path, scratch: &Path) -> (usize, Vec<(&'static str, Measured)>) {
    let lines = corpus(dir);
    let root = std::fs::canonicalize(scratch).unwrap();
    let project = root.join("project");
    fixture(&project);
    let fresh = root.join("fresh-home");
    std::fs::create_dir(&fresh).unwrap();
    let used = root.join("home");
    for cache in CACHES {
        std::fs::create_dir_all(used.join(cache)).unwrap();
    }
    let homes = [("a fresh home", &fresh), ("a home with every cache", &used)]
        .into_iter()
        .map(|(name, home)| (name, measure(dir, &project, home, &lines)))
        .collect();
    (lines.len(), homes)
}

#[test]
fn everyday_commands_run_without_a_question() {
    // Not under the temporary directory, which the default rules allow: the homes must be
    // judged as homes.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let (total, homes) = measure_corpus(&corpus, dir.path());
    assert!(total >= 300, "{total} lines");
    let mut failures = Vec::new();
    for (name, measured) in homes {
        println!(
            "{name}: {} of {total} allowed ({:.1} %), {} asked, {} denied",
            measured.allowed,
            measured.allowed as f64 * 100.0 / total as f64,
            measured.asked.len(),
            measured.denied.len()
        );
        for line in measured.denied.iter().chain(&measured.asked) {
            println!("  {line}");
        }
        if measured.allowed * 100 < TARGET * total {
            failures.push(format!(
                "{name}: {} of {total} allowed, below {TARGET} %",
                measured.allowed
            ));
        }
        if !measured.denied.is_empty() {
            failures.push(format!("{name}: {} lines denied", measured.denied.len()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("; "));
}
