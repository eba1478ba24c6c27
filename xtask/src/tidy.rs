//! `cargo xtask tidy`: the rules of ARCHITECTURE.md that a machine can check.
//!
//! - The dependency rule, read from `cargo metadata`: `toolgate-core` and
//!   `toolgate-config` depend on no crate of ours; every other library crate on `toolgate-core` alone, except the gate (which
//!   composes registry, permission and output store) and the server (which runs over the
//!   gate and names no tool crate but the question service's). Dev-dependencies may differ.
//! - Tests never kill processes by name (`pkill`, `killall`): they track their own PIDs.
//! - No unreviewed snapshot: an insta `.snap.new` or `.pending-snap` in the tree is a
//!   change nobody accepted (review it with `cargo insta review`, or delete it).
//! - The file-size budget: no Rust file over [`FILE_BUDGET`] lines unless [`OVER_BUDGET`]
//!   names it with the reason.
//! - No import circle of three files or more inside a crate (see `circles.rs`).
//! - Libraries print nothing (`println!`, `eprintln!`, …): they log through `tracing`,
//!   and the binary decides what reaches the terminal.
//! - One integration-test binary per package (`tests/it/main.rs`, a module per subject, or
//!   a single file under `tests/`): every test binary is linked against the whole
//!   dependency tree, so each extra one costs link time; [`SEPARATE_TEST_BINARIES`] lists
//!   those that must have a process of their own, with the reason.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// The packages that may depend on any crate of ours.
const ANYTHING_GOES: &[&str] = &["toolgate", "xtask", "e2e"];

/// The crates of ours a library package may depend on (normal and build dependencies).
fn allowed(package: &str) -> &'static [&'static str] {
    match package {
        "toolgate-core" => &[],
        // Plain data: the binary turns what it read into each crate's options.
        "toolgate-config" => &[],
        "toolgate-gate" => &[
            "toolgate-core",
            "toolgate-registry",
            "toolgate-permission",
            "toolgate-output-store",
        ],
        // The bash tool plans every line with the analysis crate and supervises what it
        // starts through the sandbox crate's exec guard.
        "toolgate-builtins-shell" => &["toolgate-core", "toolgate-shell-analysis", "toolgate-sandbox"],
        "toolgate-server" => &[
            "toolgate-core",
            "toolgate-gate",
            "toolgate-permission",
            "toolgate-builtins-session",
        ],
        _ => &["toolgate-core"],
    }
}

pub(crate) fn run() -> Result<()> {
    let mut problems = dependency_rule()?;
    problems.extend(kill_by_name()?);
    problems.extend(pending_snapshots()?);
    problems.extend(file_budget()?);
    problems.extend(crate::circles::check(&crate::root())?);
    problems.extend(library_prints()?);
    problems.extend(test_binaries()?);
    if problems.is_empty() {
        println!(
            "tidy: dependency rule, test hygiene, reviewed snapshots, the file-size budget, no import circles, no printing libraries and one test binary per package hold"
        );
        return Ok(());
    }
    for problem in &problems {
        eprintln!("tidy: {problem}");
    }
    bail!("{} problem(s)", problems.len())
}

fn dependency_rule() -> Result<Vec<String>> {
    let output = crate::cargo(&["metadata", "--format-version", "1", "--no-deps", "--locked"])
        .output()
        .context("could not run cargo metadata")?;
    if !output.status.success() {
        bail!("cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let metadata: Value = serde_json::from_slice(&output.stdout).context("cargo metadata output")?;
    let packages = metadata["packages"]
        .as_array()
        .context("no packages in cargo metadata")?;
    let ours: BTreeSet<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    let mut uses: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for package in packages {
        let Some(name) = package["name"].as_str() else { continue };
        let dependencies = package["dependencies"].as_array().into_iter().flatten();
        for dependency in dependencies {
            let Some(dependency_name) = dependency["name"].as_str() else {
                continue;
            };
            // `kind` is null for normal dependencies, "build" or "dev" otherwise.
            if ours.contains(dependency_name) && dependency["kind"].as_str() != Some("dev") {
                uses.entry(name).or_default().push(dependency_name);
            }
        }
    }
    let mut problems = Vec::new();
    for (package, dependencies) in uses {
        if ANYTHING_GOES.contains(&package) {
            continue;
        }
        for dependency in dependencies {
            if !allowed(package).contains(&dependency) {
                problems.push(format!(
                    "{package} depends on {dependency}; ARCHITECTURE.md allows it only {:?}",
                    allowed(package)
                ));
            }
        }
    }
    Ok(problems)
}

fn kill_by_name() -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let root = crate::root();
    let mut stack = vec![root.join("crates"), root.join("tests")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).with_context(|| dir.display().to_string())? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else if is_test_source(&path) {
                let text = std::fs::read_to_string(&path)?;
                for (number, line) in text.lines().enumerate() {
                    if line.contains("\"pkill\"") || line.contains("\"killall\"") {
                        problems.push(format!(
                            "{}:{}: kills processes by name; track the PIDs you started",
                            path.strip_prefix(&root).unwrap_or(&path).display(),
                            number + 1
                        ));
                    }
                }
            }
        }
    }
    Ok(problems)
}

/// Snapshots insta wrote for a test that failed, never reviewed.
fn pending_snapshots() -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let root = crate::root();
    let mut stack = vec![root.join("crates"), root.join("tests")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).with_context(|| dir.display().to_string())? {
            let path = entry?.path();
            let name = path
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_default();
            if path.is_dir() {
                if name != "target" {
                    stack.push(path);
                }
            } else if name.ends_with(".snap.new") || name.ends_with(".pending-snap") {
                problems.push(format!(
                    "{}: a snapshot nobody reviewed; accept it with `cargo insta review` or delete it",
                    path.strip_prefix(&root).unwrap_or(&path).display()
                ));
            }
        }
    }
    Ok(problems)
}

/// Test code: files under a `tests/`, `benches/` or `examples/` directory.
fn is_test_source(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "rs")
        && path.components().any(|c| {
            let c = c.as_os_str();
            c == "tests" || c == "benches" || c == "examples"
        })
}

/// Lines a Rust file may have: past it, a file is two jobs or a table that belongs in data.
const FILE_BUDGET: usize = 1500;

/// Files allowed over [`FILE_BUDGET`], each with its reason (paths from the workspace root).
const OVER_BUDGET: &[(&str, &str)] = &[];

/// Every Rust file of the workspace (not `target/`) over the budget without a listed reason,
/// and every listed file that no longer needs its reason.
fn file_budget() -> Result<Vec<String>> {
    let root = crate::root();
    let mut problems = Vec::new();
    let mut stack = vec![root.join("crates"), root.join("tests"), root.join("xtask")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).with_context(|| dir.display().to_string())? {
            let path = entry?.path();
            if path.is_dir() {
                if path.file_name().is_some_and(|name| name != "target") {
                    stack.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            let lines = std::fs::read_to_string(&path)?.lines().count();
            let relative = path.strip_prefix(&root).unwrap_or(&path).display().to_string();
            let listed = OVER_BUDGET.iter().any(|(file, _)| *file == relative);
            if lines > FILE_BUDGET && !listed {
                problems.push(format!(
                    "{relative}: {lines} lines, over the budget of {FILE_BUDGET}; split it, or list it with its reason in xtask/src/tidy.rs OVER_BUDGET"
                ));
            }
            if lines <= FILE_BUDGET && listed {
                problems.push(format!(
                    "{relative}: {lines} lines, within the budget: remove it from OVER_BUDGET"
                ));
            }
        }
    }
    Ok(problems)
}

/// The crates that may print: the binary (its terminal is its interface).
const MAY_PRINT: &[&str] = &["crates/toolgate"];

/// Every line of a library's code (not its comments) that prints to stdout or stderr.
fn library_prints() -> Result<Vec<String>> {
    let root = crate::root();
    let mut problems = Vec::new();
    let mut stack = Vec::new();
    for entry in std::fs::read_dir(root.join("crates")).context("crates/")? {
        let dir = entry?.path();
        let relative = dir.strip_prefix(&root).unwrap_or(&dir).display().to_string();
        if !MAY_PRINT.contains(&relative.as_str()) {
            stack.push(dir.join("src"));
        }
    }
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            // Unit-test files (`mod tests;` in its own file) may print what they generate.
            let stem = path
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_default();
            if stem == "tests" || stem.ends_with("_tests") || stem == "proptests" {
                continue;
            }
            let text = std::fs::read_to_string(&path)?;
            for (number, line) in text.lines().enumerate() {
                let code = line.trim_start();
                // Unit tests come last in a file, after their `#[cfg(test)]`.
                if code == "#[cfg(test)]" {
                    break;
                }
                if code.starts_with("//") {
                    continue;
                }
                if ["println!(", "eprintln!(", "print!(", "eprint!("]
                    .iter()
                    .any(|print| code.contains(print))
                {
                    problems.push(format!(
                        "{}:{}: a library prints; log through `tracing` (the binary shows it)",
                        path.strip_prefix(&root).unwrap_or(&path).display(),
                        number + 1
                    ));
                }
            }
        }
    }
    Ok(problems)
}

/// Integration-test binaries allowed beside a package's one, each with its reason (paths
/// from the workspace root).
const SEPARATE_TEST_BINARIES: &[(&str, &str)] = &[(
    "crates/builtins-fs/tests/grep_memory.rs",
    "installs a global allocator and measures the process's peak, which other tests in the same process would disturb",
)];

/// Every package whose `tests/` holds more than one integration-test binary (a `.rs` file
/// directly in it, or a directory with a `main.rs`) beyond [`SEPARATE_TEST_BINARIES`], and
/// every listed file that is gone.
fn test_binaries() -> Result<Vec<String>> {
    let root = crate::root();
    let mut problems = Vec::new();
    let mut packages = vec![root.join("tests")];
    for entry in std::fs::read_dir(root.join("crates")).context("crates/")? {
        packages.push(entry?.path());
    }
    for package in packages {
        let Ok(entries) = std::fs::read_dir(package.join("tests")) else {
            continue;
        };
        let mut binaries = Vec::new();
        for entry in entries {
            let path = entry?.path();
            let binary = if path.is_dir() { path.join("main.rs") } else { path };
            if binary.is_file() && binary.extension().is_some_and(|ext| ext == "rs") {
                let relative = binary.strip_prefix(&root).unwrap_or(&binary).display().to_string();
                if !SEPARATE_TEST_BINARIES.iter().any(|(file, _)| *file == relative) {
                    binaries.push(relative);
                }
            }
        }
        if binaries.len() > 1 {
            binaries.sort();
            problems.push(format!(
                "{}: {} integration-test binaries ({}); make them modules of one `tests/it/main.rs`, or list one with its reason in xtask/src/tidy.rs SEPARATE_TEST_BINARIES",
                package.strip_prefix(&root).unwrap_or(&package).display(),
                binaries.len(),
                binaries.join(", ")
            ));
        }
    }
    for (file, _) in SEPARATE_TEST_BINARIES {
        if !root.join(file).is_file() {
            problems.push(format!("{file}: listed in SEPARATE_TEST_BINARIES but gone; remove it"));
        }
    }
    Ok(problems)
}
