//! `cargo xtask api`: the size of each library crate's public API, counted from the
//! rustdoc output of `cargo doc --workspace --no-deps`.
//!
//! One count per crate: every item page rustdoc writes (structs, enums, traits,
//! functions, macros, type aliases, constants, statics, modules) plus every public field,
//! enum variant, trait method and inherent method or associated item on those pages.
//! Trait implementations (`Clone`, `Debug`, …) are not counted. Reproduce with
//! `cargo xtask api`.

use std::path::Path;

use anyhow::{Context, Result, bail};

/// The library crates whose API is counted, by library name.
const CRATES: &[&str] = &[
    "toolgate_core",
    "toolgate_registry",
    "toolgate_output_store",
    "toolgate_permission",
    "toolgate_builtins_fs",
    "toolgate_builtins_net",
    "toolgate_shell_analysis",
    "toolgate_builtins_shell",
    "toolgate_builtins_session",
    "toolgate_server",
    "toolgate_gate",
    "toolgate_mcp_client",
    "toolgate_sandbox",
];

const PAGE_PREFIXES: &[&str] = &[
    "struct.",
    "enum.",
    "trait.",
    "fn.",
    "macro.",
    "type.",
    "constant.",
    "static.",
    "union.",
];

pub(crate) fn run() -> Result<()> {
    let doc = crate::root().join("target/doc");
    // rustdoc never deletes the page of an item that went private, so a page left over
    // from an earlier build would still be counted. Start each counted crate afresh;
    // cargo sees its output missing and documents the crate again.
    for name in CRATES {
        let dir = doc.join(name);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(error).with_context(|| format!("could not remove {}", dir.display())),
        }
    }
    let status = crate::cargo(&["doc", "--workspace", "--no-deps", "--locked"])
        .status()
        .context("could not run cargo doc")?;
    if !status.success() {
        bail!("cargo doc failed ({status})");
    }
    println!("| crate | public items |");
    println!("|---|---|");
    let mut total = 0;
    for name in CRATES {
        let dir = doc.join(name);
        if !dir.is_dir() {
            bail!("cargo doc wrote no pages for {name} ({})", dir.display());
        }
        let count = count_dir(&dir)?;
        total += count;
        println!("| {} | {count} |", name.replace('_', "-"));
    }
    println!("| total | {total} |");
    Ok(())
}

/// Items on the pages of one module directory and its submodules.
fn count_dir(dir: &Path) -> Result<usize> {
    let mut count = 0;
    for entry in std::fs::read_dir(dir).with_context(|| dir.display().to_string())? {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() && path.join("index.html").is_file() {
            // A public module: its page, and what it holds.
            count += 1 + count_dir(&path)?;
        } else if name.ends_with(".html") && PAGE_PREFIXES.iter().any(|prefix| name.starts_with(prefix)) {
            let text = std::fs::read_to_string(&path)?;
            count += 1 + members(&text);
        }
    }
    Ok(count)
}

/// Fields, variants, trait methods and inherent associated items of one item page.
fn members(page: &str) -> usize {
    // Trait implementations come after this marker; they are not API of this crate.
    let own = page
        .find("id=\"trait-implementations\"")
        .or_else(|| page.find("id=\"synthetic-implementations\""))
        .map_or(page, |end| &page[..end]);
    [
        "id=\"structfield.",
        "id=\"variant.",
        "id=\"tymethod.",
        "id=\"method.",
        "id=\"associatedconstant.",
        "id=\"associatedtype.",
    ]
    .iter()
    .map(|anchor| own.matches(anchor).count())
    .sum()
}
