//! `cargo xtask tidy`: the rules of ARCHITECTURE.md that a machine can check.
//!
//! - The dependency rule, read from `cargo metadata`: `toolgate-core` depends on no crate
//!   of ours; every other library crate on `toolgate-core` alone, except the gate (which
//!   composes registry, permission and output store) and the server (which runs over the
//!   gate and names no tool crate but the question service's). Dev-dependencies may differ.
//! - Tests never kill processes by name (`pkill`, `killall`): they track their own PIDs.

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
        "toolgate-gate" => &[
            "toolgate-core",
            "toolgate-registry",
            "toolgate-permission",
            "toolgate-output-store",
        ],
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
    if problems.is_empty() {
        println!("tidy: dependency rule and test hygiene hold");
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

/// Test code: files under a `tests/`, `benches/` or `examples/` directory.
fn is_test_source(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "rs")
        && path.components().any(|c| {
            let c = c.as_os_str();
            c == "tests" || c == "benches" || c == "examples"
        })
}
