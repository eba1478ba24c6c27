//! `cargo xtask`: every chore of the workspace as one command.
//!
//! - `cargo xtask ci`: formatting, tidy, clippy, every crate with features linted with
//!   its defaults off, the whole test suite (nextest when installed, then doc tests; it
//!   includes the official MCP conformance suite, whose per-scenario results are printed
//!   after it), the agent_loop example, each README as a consumer project, `cargo doc` with warnings denied, `cargo package`
//!   of every publishable crate, the packaging test (`packages` below) and cargo-deny, one
//!   summary line per step. It says whether
//!   the kernel runs the bash sandbox; when it does, the sandbox suite may not skip.
//! - `cargo xtask tidy`: the dependency rule of ARCHITECTURE.md (from `cargo metadata`),
//!   test hygiene (no kill by name, no unreviewed snapshot), the file-size budget, import
//!   circles inside each crate and printing libraries.
//! - `cargo xtask bench [FILTER]`: runs the benchmarks, prints the table of figures
//!   against their targets and rewrites `BENCHMARKS.md`.
//! - `cargo xtask dist [--target TRIPLE | --host]... [--no-packages]`: release archives
//!   (binary, trampoline, completions, man page, README, licences) with their SHA-256 sums,
//!   and the npm and PyPI packages built from them, for every target this machine has a
//!   toolchain for (the others are skipped with a message).
//! - `cargo xtask publish --dry-run`: every publishable crate packaged and built from its
//!   own `.crate` file, in dependency order, against the others' `.crate` files.
//! - `cargo xtask packages`: `dist --host`, then the packaging test (the archive and its
//!   sums, `npx` and `uvx` of the built packages answering `tools/list`); part of `ci`.
//! - `cargo xtask api`: the public API size of each library crate.
//! - `cargo xtask consumers [--separately]`: each library crate's README built and run as
//!   a separate project that depends on what the README says and nothing else (also part
//!   of `ci`); `--separately` also keeps their features apart (slower).
//! - `cargo xtask fuzz-shell N [--seed S] [--no-record] [--show N]`: N generated command
//!   lines through the bash analysis oracle; failures are appended to
//!   `crates/shell-analysis/tests/corpus/oracle-failures.jsonl`.

mod api;
mod bench;
mod circles;
mod consumers;
mod dist;
mod publish;
mod tidy;

use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result, bail};

const USAGE: &str = "usage: cargo xtask <ci | tidy | bench [FILTER] | dist [--target TRIPLE | --host]... [--no-packages] | packages | publish --dry-run | api | consumers [--separately] | fuzz-shell N [--seed S] [--no-record]>";
const CARGO_DENY_VERSION: &str = "0.20.2";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("bench") => bench::run(args.get(1).map(String::as_str)),
        Some("dist") => dist::Options::parse(&args[1..]).and_then(|options| dist::run(&options)),
        Some("packages") => publish::packages(),
        Some("publish") => publish::dry_run(&args[1..]),
        Some("tidy") => tidy::run(),
        Some("api") => api::run(),
        Some("consumers") => consumers::run(args.get(1).is_some_and(|arg| arg == "--separately")),
        Some("fuzz-shell") => fuzz_shell(&args[1..]),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            Ok(())
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root: xtask lives one level below it.
pub(crate) fn root() -> std::path::PathBuf {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// Where cargo builds: `$CARGO_TARGET_DIR` (relative to the workspace root when it is
/// relative, as cargo run from there takes it), else `target/` of the workspace. CI and
/// developers who keep builds elsewhere set it; the files the steps read must follow.
pub(crate) fn target_dir() -> std::path::PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR").filter(|dir| !dir.is_empty()) {
        Some(dir) => root().join(dir),
        None => root().join("target"),
    }
}

/// A `cargo` command run from the workspace root.
pub(crate) fn cargo(args: &[&str]) -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command.args(args).current_dir(root());
    command
}

fn succeeds(command: &mut Command) -> bool {
    command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

struct Step {
    name: &'static str,
    ok: bool,
    seconds: f64,
}

fn run_step(name: &'static str, commands: Vec<Command>) -> Step {
    println!("==> {name}");
    let start = Instant::now();
    let mut ok = true;
    for mut command in commands {
        match command.status() {
            Ok(status) if status.success() => {}
            Ok(status) => {
                eprintln!("xtask: {name}: {command:?} exited with {status}");
                ok = false;
                break;
            }
            Err(error) => {
                eprintln!("xtask: {name}: could not start {command:?}: {error}");
                ok = false;
                break;
            }
        }
    }
    Step {
        name,
        ok,
        seconds: start.elapsed().as_secs_f64(),
    }
}

fn ci() -> Result<()> {
    let mut steps = vec![
        run_step("fmt", vec![cargo(&["fmt", "--all", "--", "--check"])]),
        {
            println!("==> tidy");
            let start = Instant::now();
            let ok = tidy::run().map_err(|error| eprintln!("xtask: tidy: {error:#}")).is_ok();
            Step {
                name: "tidy",
                ok,
                seconds: start.elapsed().as_secs_f64(),
            }
        },
        run_step(
            "clippy",
            vec![cargo(&[
                "clippy",
                "--workspace",
                "--all-targets",
                "--locked",
                "--",
                "-D",
                "warnings",
            ])],
        ),
    ];
    steps.push(features_step());
    let sandbox = sandbox_support();
    let mut tests = if succeeds(&mut cargo(&["nextest", "--version"])) {
        vec![
            cargo(&["nextest", "run", "--workspace", "--locked", "--no-fail-fast"]),
            cargo(&["test", "--workspace", "--doc", "--locked"]),
        ]
    } else {
        vec![cargo(&["test", "--workspace", "--locked", "--no-fail-fast"])]
    };
    if sandbox {
        // The kernel can run the sandbox: its suite must not skip.
        for command in &mut tests {
            command.env("TOOLGATE_REQUIRE_SANDBOX_TESTS", "1");
        }
    }
    // A snapshot that differs from the reviewed `.snap` fails, and nothing is written or
    // accepted on the way (whatever the developer's environment says); tidy refuses a
    // pending `.snap.new` left in the tree.
    for command in &mut tests {
        command.env("INSTA_UPDATE", "no").env_remove("INSTA_FORCE_PASS");
    }
    // The MCP conformance suite runs inside the tests (tests/tests/it/conformance.rs) and
    // leaves its per-scenario outcome here; a stale file must not pass for a fresh one.
    // One summary per MCP version the suite runs (2025-11-25, 2026-07-28).
    let summaries = [
        target_dir().join("conformance/summary.txt"),
        target_dir().join("conformance/summary-2026-07-28.txt"),
    ];
    for summary in &summaries {
        let _ = std::fs::remove_file(summary);
    }
    steps.push(run_step("test", tests));
    steps.push(conformance_step(&summaries));
    // The embedding example is run, not only built: it asserts what a consumer sees.
    steps.push(run_step(
        "example",
        vec![cargo(&[
            "run",
            "--locked",
            "--quiet",
            "-p",
            "toolgate-gate",
            "--example",
            "agent_loop",
        ])],
    ));
    steps.push({
        println!("==> consumers");
        let start = Instant::now();
        let ok = consumers::run(false)
            .map_err(|error| eprintln!("xtask: consumers: {error:#}"))
            .is_ok();
        Step {
            name: "consumers",
            ok,
            seconds: start.elapsed().as_secs_f64(),
        }
    });
    let mut doc = cargo(&["doc", "--workspace", "--no-deps", "--locked"]);
    doc.env("RUSTDOCFLAGS", "-D warnings");
    steps.push(run_step("doc", vec![doc]));
    steps.push(package_step());
    // The release archive of this machine's target, its npm packages and wheels, installed
    // into fresh prefixes and run (the one release build of CI).
    steps.push({
        println!("==> packages");
        let start = Instant::now();
        let ok = publish::packages()
            .map_err(|error| eprintln!("xtask: packages: {error:#}"))
            .is_ok();
        Step {
            name: "packages",
            ok,
            seconds: start.elapsed().as_secs_f64(),
        }
    });
    let mut deny = Vec::new();
    if !succeeds(&mut cargo(&["deny", "--version"])) {
        println!("cargo-deny is missing: installing {CARGO_DENY_VERSION} (a few minutes, once per machine)");
        deny.push(cargo(&[
            "install",
            "--locked",
            &format!("cargo-deny@{CARGO_DENY_VERSION}"),
        ]));
    }
    deny.push(cargo(&["deny", "check", "licenses", "bans", "sources"]));
    steps.push(run_step("deny", deny));

    println!();
    for step in &steps {
        let verdict = if step.ok { "ok" } else { "FAILED" };
        println!("ci: {:<7} {verdict:<6} ({:.1}s)", step.name, step.seconds);
    }
    let failed: Vec<&str> = steps.iter().filter(|step| !step.ok).map(|step| step.name).collect();
    if !failed.is_empty() {
        bail!("failed steps: {}", failed.join(", "));
    }
    Ok(())
}

/// Every library crate that declares features builds with its default features off
/// (`cargo hack`-style, one crate at a time so no other member turns them back on).
fn features_step() -> Step {
    let packages = match featured_packages() {
        Ok(packages) => packages,
        Err(error) => {
            eprintln!("xtask: features: {error:#}");
            return Step {
                name: "features",
                ok: false,
                seconds: 0.0,
            };
        }
    };
    let commands = packages
        .iter()
        .map(|package| {
            cargo(&[
                "clippy",
                "--locked",
                "--no-default-features",
                "-p",
                package,
                "--",
                "-D",
                "warnings",
            ])
        })
        .collect();
    run_step("features", commands)
}

/// The publishable workspace members with a `[features]` table.
fn featured_packages() -> Result<Vec<String>> {
    let output = cargo(&["metadata", "--format-version", "1", "--no-deps", "--locked"])
        .output()
        .context("could not run cargo metadata")?;
    if !output.status.success() {
        bail!("cargo metadata failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).context("cargo metadata output")?;
    let packages = metadata["packages"]
        .as_array()
        .context("no packages in cargo metadata")?;
    Ok(packages
        .iter()
        .filter(|package| {
            package["publish"]
                .as_array()
                .is_none_or(|registries| !registries.is_empty())
        })
        .filter(|package| {
            package["features"]
                .as_object()
                .is_some_and(|features| !features.is_empty())
        })
        .filter_map(|package| package["name"].as_str().map(str::to_string))
        .collect())
}

/// Every publishable crate packages (manifest metadata, included files, path dependencies
/// with versions). Verification (rebuilding each crate from its tarball, bundled SQLite
/// included) is left to the workspace build above.
///
/// Offline first: the build steps before have fetched every crate the lockfile names, so
/// packaging needs neither the network nor today's state of crates.io (a name taken there
/// since, an index outage). Only when the local index cannot answer (a machine whose cache
/// was cleaned between steps) is the crates.io index asked.
fn package_step() -> Step {
    let package = |offline: bool| {
        let mut command = cargo(&[
            "package",
            "--workspace",
            "--exclude",
            "xtask",
            "--exclude",
            "e2e",
            "--no-verify",
            "--locked",
        ]);
        if offline {
            command.arg("--offline");
        }
        command
    };
    let step = run_step("package", vec![package(true)]);
    if step.ok {
        return step;
    }
    println!("package: the local index could not answer offline; asking the crates.io index");
    let retry = run_step("package", vec![package(false)]);
    Step {
        seconds: step.seconds + retry.seconds,
        ..retry
    }
}

fn fuzz_shell(args: &[String]) -> Result<()> {
    let mut command = cargo(&[
        "run",
        "--release",
        "--locked",
        "--package",
        "e2e",
        "--example",
        "fuzz_shell",
        "--",
    ]);
    command.args(args);
    let status = command.status().context("could not run the fuzz_shell example")?;
    if !status.success() {
        bail!("fuzz-shell failed ({status})");
    }
    Ok(())
}

/// Whether this kernel runs the bash sandbox (Landlock, namespaces, seccomp): asks the
/// binary's own probe and says which way the sandbox suite goes.
fn sandbox_support() -> bool {
    let built = cargo(&["build", "--locked", "--package", "toolgate"]).status();
    if !built.is_ok_and(|status| status.success()) {
        println!("sandbox suite: cannot tell (the toolgate binary did not build)");
        return false;
    }
    let probe = Command::new(target_dir().join("debug/toolgate"))
        .args(["__sandbox-exec", "--probe"])
        .env_remove("TOOLGATE_TEST_SANDBOX_MISSING")
        .output();
    match probe {
        Ok(output) if output.status.success() => {
            let abi = String::from_utf8_lossy(&output.stdout).trim().to_string();
            println!("sandbox suite: runs ({abi}); its tests fail rather than skip");
            true
        }
        Ok(output) => {
            println!(
                "sandbox suite: SKIPPED, the kernel cannot run the sandbox here: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            );
            false
        }
        Err(error) => {
            println!("sandbox suite: SKIPPED, the probe did not start: {error}");
            false
        }
    }
}

/// Prints the MCP conformance results the test run wrote; missing results fail CI.
fn conformance_step(summaries: &[std::path::PathBuf]) -> Step {
    println!("==> conformance");
    let mut ok = true;
    for summary in summaries {
        ok &= match std::fs::read_to_string(summary) {
            Ok(text) => {
                print!("{text}");
                !text.contains("FAILED")
            }
            Err(_) => {
                eprintln!(
                    "xtask: conformance: {} was not written: the MCP conformance test did not run",
                    summary.display()
                );
                false
            }
        };
    }
    Step {
        name: "conformance",
        ok,
        seconds: 0.0,
    }
}
