//! The OpenCode plugin (`packages/opencode-toolgate`) in Node against the published
//! OpenCode plugin API: its `node --test` suite loads the plugin as OpenCode's plugin
//! runtime does, drives its permission hooks against real projects and this build's
//! binary (a denied command, an allowed read, an ask, a composition, toolgate missing),
//! and type-checks it with `tsc` against the pinned `@opencode-ai/plugin`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

#[test]
fn the_opencode_plugin_follows_the_rules_and_matches_the_published_types() {
    let package = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../packages/opencode-toolgate");
    let modules = e2e::opencode_plugin_tools().join("node_modules");
    let mut tests: Vec<PathBuf> = std::fs::read_dir(package.join("test"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with(".test.mjs"))
        .collect();
    tests.sort();
    assert!(!tests.is_empty(), "no tests in {}", package.display());
    let output = Command::new(e2e::node())
        .args(["--test", "--test-reporter=tap"])
        .args(&tests)
        .current_dir(&package)
        .env("TOOLGATE_BIN", e2e::toolgate_binary())
        .env("TOOLGATE_OPENCODE_MODULES", &modules)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "node --test failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // A suite that ran nothing would succeed too: every test must have run and passed.
    let count = |name: &str| {
        stdout
            .lines()
            .find_map(|line| line.strip_prefix(&format!("# {name} ")))
            .and_then(|n| n.trim().parse::<u32>().ok())
            .unwrap_or_else(|| panic!("no `# {name}` line:\n{stdout}"))
    };
    assert!(count("pass") >= 10, "{stdout}");
    assert_eq!(count("fail"), 0, "{stdout}");
    assert_eq!(count("skipped"), 0, "{stdout}");
}
