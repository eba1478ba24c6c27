//! `cargo xtask api`: the size of each library crate's public API, counted from the
//! rustdoc output of `cargo doc --workspace --no-deps`.
//!
//! One count per crate: every item page rustdoc writes (structs, enums, traits,
//! functions, macros, type aliases, constants, statics, modules) plus every public field,
//! enum variant, trait method and inherent method or associated item on those pages.
//! Trait implementations (`Clone`, `Debug`, …) are not counted. Items a crate re-exports
//! from another toolgate crate (rustdoc inlines their pages) are counted apart: they are
//! that other crate's API, shown here so that one dependency is enough. Reproduce with
//! `cargo xtask api`.

use std::path::Path;

use anyhow::{Context, Result, bail};

/// The library crates whose API is counted, by library name.
const CRATES: &[&str] = &[
    "toolgate_core",
    "toolgate_config",
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
    let target = crate::target_dir();
    let doc = target.join("doc");
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
    println!("| crate | public items | re-exported from other toolgate crates |");
    println!("|---|---|---|");
    let mut total = Count::default();
    for name in CRATES {
        let dir = doc.join(name);
        if !dir.is_dir() {
            bail!("cargo doc wrote no pages for {name} ({})", dir.display());
        }
        let count = count_dir(&dir, name)?;
        total.own += count.own;
        total.reexported += count.reexported;
        println!("| {} | {} | {} |", name.replace('_', "-"), count.own, count.reexported);
    }
    println!("| total | {} | {} |", total.own, total.reexported);
    Ok(())
}

/// A crate's own items, and those it re-exports from other crates.
#[derive(Default)]
struct Count {
    own: usize,
    reexported: usize,
}

/// Items on the pages of one module directory of `krate` and its submodules.
fn count_dir(dir: &Path, krate: &str) -> Result<Count> {
    let mut count = Count::default();
    for entry in std::fs::read_dir(dir).with_context(|| dir.display().to_string())? {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() && path.join("index.html").is_file() {
            // A public module: its page, and what it holds.
            let inner = count_dir(&path, krate)?;
            count.own += 1 + inner.own;
            count.reexported += inner.reexported;
        } else if name.ends_with(".html") && PAGE_PREFIXES.iter().any(|prefix| name.starts_with(prefix)) {
            let text = std::fs::read_to_string(&path)?;
            let items = 1 + members(&text);
            if defined_in(&text, krate) {
                count.own += items;
            } else {
                count.reexported += items;
            }
        }
    }
    Ok(count)
}

/// Whether an item page is of an item `krate` defines: its heading links to the item's
/// source in `src/<krate>/`. A page rustdoc inlined for a re-export has no such link.
fn defined_in(page: &str, krate: &str) -> bool {
    let Some(start) = page.find("<span class=\"sub-heading\">") else {
        return true;
    };
    let heading = &page[start..];
    let heading = heading.find("</span>").map_or(heading, |end| &heading[..end]);
    heading.contains(&format!("src/{krate}/"))
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
