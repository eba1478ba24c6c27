//! Build metadata for `toolgate --version`: the commit it was built from and the cargo
//! features it was built with.
//!
//! The commit comes from `TOOLGATE_COMMIT` when set (a source archive or a packager that
//! knows it), else from `git` run in the source tree, else `unknown` (a crates.io
//! tarball has no `.git`); a build never fails for want of git.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=TOOLGATE_COMMIT");
    let commit = std::env::var("TOOLGATE_COMMIT")
        .ok()
        .filter(|commit| !commit.trim().is_empty())
        .or_else(git_commit)
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=TOOLGATE_COMMIT={}", commit.trim());
    let mut features: Vec<String> = std::env::vars()
        .filter_map(|(name, _)| name.strip_prefix("CARGO_FEATURE_").map(str::to_string))
        .filter(|name| name != "DEFAULT")
        .map(|name| name.to_lowercase().replace('_', "-"))
        .collect();
    features.sort();
    let features = if features.is_empty() {
        "none".to_string()
    } else {
        features.join(", ")
    };
    println!("cargo:rustc-env=TOOLGATE_FEATURES={features}");
}

/// The short commit of HEAD. Reruns when HEAD or the branch it points at moves (paths
/// from `git rev-parse --git-path`, right in a worktree too), not on every edit: a
/// commit's own build says which commit, a build of uncommitted changes says the commit
/// they started from.
fn git_commit() -> Option<String> {
    let dir = std::env::var("CARGO_MANIFEST_DIR").ok()?;
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(&dir)
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string())
            .filter(|text| !text.is_empty())
    };
    let head = git(&["rev-parse", "--short=12", "HEAD"])?;
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(&["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        // A path that does not exist would rerun this script on every build.
        let path = git(&["rev-parse", "--path-format=absolute", "--git-path", &name]);
        if let Some(path) = path.filter(|path| std::path::Path::new(path).exists()) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    Some(head)
}
