//! `cargo xtask publish --dry-run` and `cargo xtask packages`.
//!
//! `publish --dry-run` runs `cargo publish --dry-run --workspace` over every publishable
//! crate. Cargo orders the crates by their dependencies, packages each into its `.crate`
//! file and builds it from that file alone, resolving the workspace crates it depends on
//! from the `.crate` files packaged before it (a local overlay of the registry) and
//! everything else from crates.io. What that proves: each published crate's manifest is
//! complete (a version on every path dependency, the files it needs included, a build
//! script that works without `.git`), and the set builds as crates.io would serve it. What
//! it cannot prove: that the names are still free on crates.io, nor the upload itself.
//! Nothing is uploaded; this command refuses to run without `--dry-run`.
//!
//! `packages` is the packaging test CI runs: the host's release archive, npm packages and
//! wheels from `cargo xtask dist --host`, then `e2e`'s ignored `packages::` tests with
//! `TOOLGATE_DIST_DIR` pointing at them (the archive's contents and sums; `npx -y` and
//! `uvx` of the built packages, installed into fresh prefixes, answering the official
//! Python SDK's `tools/list`).

use anyhow::{Context, Result, bail};

use crate::{cargo, dist, succeeds};

/// The workspace members that are never published.
const UNPUBLISHED: &[&str] = &["xtask", "e2e"];

pub(crate) fn dry_run(args: &[String]) -> Result<()> {
    if !args.iter().any(|arg| arg == "--dry-run") {
        bail!(
            "publish: only `cargo xtask publish --dry-run` is offered; the upload is `cargo publish --workspace`, by hand"
        );
    }
    let allow_dirty = args.iter().any(|arg| arg == "--allow-dirty");
    let mut command = cargo(&["publish", "--dry-run", "--workspace", "--locked"]);
    for name in UNPUBLISHED {
        command.args(["--exclude", name]);
    }
    if allow_dirty {
        command.arg("--allow-dirty");
    }
    let status = command.status().context("could not run cargo publish")?;
    if !status.success() {
        bail!("cargo publish --dry-run failed ({status})");
    }
    println!("publish: every crate packaged and built from its .crate file, in dependency order; nothing uploaded");
    Ok(())
}

/// The packaging test; skipped with a message for what this machine lacks.
pub(crate) fn packages() -> Result<()> {
    let missing: Vec<&str> = ["node", "npm", "python3", "tar"]
        .into_iter()
        .filter(|program| !dist::on_path(program))
        .collect();
    if !missing.is_empty() {
        println!(
            "packages: SKIPPED, {} not on PATH (the npm and PyPI packages need them)",
            missing.join(", ")
        );
        return Ok(());
    }
    dist::run(&dist::Options {
        targets: vec![dist::host()?],
        packages: true,
    })?;
    let mut command = if succeeds(&mut cargo(&["nextest", "--version"])) {
        cargo(&[
            "nextest",
            "run",
            "--locked",
            "-p",
            "e2e",
            "--run-ignored",
            "only",
            "-E",
            "test(/^packages::/)",
        ])
    } else {
        cargo(&[
            "test",
            "--locked",
            "-p",
            "e2e",
            "--test",
            "it",
            "packages::",
            "--",
            "--ignored",
        ])
    };
    command
        .env("TOOLGATE_DIST_DIR", dist::dist_dir())
        .env("TOOLGATE_DIST_VERSION", dist::version()?)
        .env("TOOLGATE_DIST_TARGET", dist::host()?);
    let status = command.status().context("could not run the packaging tests")?;
    if !status.success() {
        bail!("the packaging tests failed ({status})");
    }
    Ok(())
}
