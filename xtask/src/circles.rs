//! Import circles between the files of one crate.
//!
//! Each `.rs` file under a crate's `src/` is one module (`src/a/b.rs` and `src/a/b/mod.rs`
//! are `a::b`; `lib.rs` and `main.rs` the root; `src/bin/` holds other crates and is
//! skipped). A file depends on another when it names it through `crate::…` or `super::…`,
//! in a `use` line or inline in code; a name a module re-exports (`pub use walk::analyze;`)
//! leads on to the file that defines it. Plain relative paths to a module's own children
//! (`run::call`, `mod walk;`) are the module tree, not imports, so a facade that re-exports
//! its children never closes a circle.
//!
//! Two files that use each other are allowed (a module and its helper often are); a
//! circle through three files or more is reported with its files: none of them can be
//! understood, tested or moved without the others.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// One crate's files: module path (`["a", "b"]`) → file, relative to the workspace root.
type Modules = BTreeMap<Vec<String>, PathBuf>;

/// Every circle of three files or more in the crates under `root`, one message each.
pub(crate) fn check(root: &Path) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    for src in crate_sources(root)? {
        let modules = modules(root, &src)?;
        let graph = graph(root, &modules)?;
        for circle in circles(&graph) {
            let names: Vec<String> = circle
                .iter()
                .chain(circle.first())
                .map(|file| file.strip_prefix(&src).unwrap_or(file).display().to_string())
                .collect();
            problems.push(format!(
                "{}: import circle {}; break it (a circle of two files is allowed)",
                src.display(),
                names.join(" → ")
            ));
        }
    }
    Ok(problems)
}

/// The `src/` directory of every crate of the workspace, relative to `root`.
fn crate_sources(root: &Path) -> Result<Vec<PathBuf>> {
    let mut sources = Vec::new();
    let crates = root.join("crates");
    for entry in std::fs::read_dir(&crates).with_context(|| crates.display().to_string())? {
        let src = entry?.path().join("src");
        if src.is_dir() {
            sources.push(src);
        }
    }
    for member in ["xtask", "tests"] {
        let src = root.join(member).join("src");
        if src.is_dir() {
            sources.push(src);
        }
    }
    sources.sort();
    Ok(sources
        .into_iter()
        .map(|src| src.strip_prefix(root).map(Path::to_path_buf).unwrap_or(src))
        .collect())
}

/// The module path of every file under `src` (relative to `root`).
fn modules(root: &Path, src: &Path) -> Result<Modules> {
    let mut modules = Modules::new();
    let mut stack = vec![root.join(src)];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).with_context(|| dir.display().to_string())? {
            let path = entry?.path();
            let relative = path.strip_prefix(root.join(src)).unwrap_or(&path).to_path_buf();
            if path.is_dir() {
                if relative != Path::new("bin") {
                    stack.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            let mut segments: Vec<String> = relative
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(segments.as_slice(), [only] if only == "lib" || only == "main") {
                segments.clear();
            } else if segments.last().is_some_and(|last| last == "mod") {
                segments.pop();
            }
            let file = src.join(&relative);
            // `lib.rs` wins over `main.rs` as the root when a package has both.
            if segments.is_empty() && modules.get(&segments).is_some_and(|f| f.ends_with("lib.rs")) {
                continue;
            }
            modules.insert(segments, file);
        }
    }
    Ok(modules)
}

/// File → the files it imports (itself excluded).
fn graph(root: &Path, modules: &Modules) -> Result<BTreeMap<PathBuf, BTreeSet<PathBuf>>> {
    let mut texts = BTreeMap::new();
    for (module, file) in modules {
        let text = std::fs::read_to_string(root.join(file)).with_context(|| file.display().to_string())?;
        texts.insert(module.clone(), code_only(&text));
    }
    let mut graph = BTreeMap::new();
    for (module, file) in modules {
        let mut targets = BTreeSet::new();
        for (inline, path) in paths(&texts[module]) {
            let mut here = module.clone();
            here.extend(inline);
            if let Some(target) = resolve(&here, &path, modules, &texts, 0)
                && target != *file
            {
                targets.insert(target);
            }
        }
        graph.insert(file.clone(), targets);
    }
    Ok(graph)
}

/// The text without comments (line comments, doc comments included: their examples are
/// another crate's code).
fn code_only(text: &str) -> String {
    text.lines()
        .map(|line| {
            let trimmed = line.trim_start();
            if trimmed.starts_with("//") {
                return "";
            }
            // A comment after code starts at ` //`; `://` inside a URL string does not.
            match line.find(" //") {
                Some(at) => &line[..at],
                None => line,
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `crate::…` and `super::…` path in `code` (use trees expanded), each with the
/// inline modules (`mod tests { … }`) it sits in.
fn paths(code: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let mut found = Vec::new();
    let mut inline: Vec<(String, i64, bool)> = Vec::new();
    let mut depth: i64 = 0;
    let mut statement = String::new();
    let mut test_attribute = false;
    for line in code.lines() {
        let trimmed = line.trim_start();
        let here: Vec<String> = inline.iter().map(|(name, _, _)| name.clone()).collect();
        let in_test = inline.iter().any(|(_, _, test)| *test);
        // A `use` item may span lines: gather it to its `;`.
        if in_test {
            // Unit tests import what they test from anywhere: not the file's dependencies.
        } else if !statement.is_empty() || is_use(trimmed) {
            statement.push_str(line);
            statement.push(' ');
            if line.contains(';') {
                let tree = use_tree(statement.trim_start()).unwrap_or("");
                let tree = tree.split(';').next().unwrap_or("");
                for path in expand(tree) {
                    if matches!(path.first().map(String::as_str), Some("crate" | "super" | "self")) {
                        found.push((here.clone(), path));
                    }
                }
                statement.clear();
            }
        } else {
            for path in inline_paths(line) {
                found.push((here.clone(), path));
            }
        }
        if let Some(name) = inline_module(trimmed) {
            inline.push((name, depth, test_attribute));
        }
        if !trimmed.is_empty() {
            test_attribute = trimmed == "#[cfg(test)]";
        }
        depth += braces(line);
        while inline.last().is_some_and(|(_, opened, _)| depth <= *opened) {
            inline.pop();
        }
    }
    found
}

fn is_use(line: &str) -> bool {
    use_tree(line).is_some()
}

/// The use tree of a `use` item starting this (trimmed) line, whatever its visibility.
fn use_tree(line: &str) -> Option<&str> {
    let rest = match line.strip_prefix("pub") {
        Some(rest) if rest.starts_with('(') => rest.split_once(')')?.1.trim_start(),
        Some(rest) => rest.trim_start(),
        None => line,
    };
    rest.strip_prefix("use ")
}

/// `mod name {` on this line: the name of an inline module.
fn inline_module(line: &str) -> Option<String> {
    let rest = line
        .strip_prefix("pub(crate) mod ")
        .or_else(|| line.strip_prefix("pub mod "))
        .or_else(|| line.strip_prefix("mod "))?;
    let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    rest[name.len()..].trim_start().starts_with('{').then_some(name)
}

/// Opening minus closing braces on a line, outside string and character literals.
fn braces(line: &str) -> i64 {
    let mut count = 0;
    let mut in_string = false;
    let mut previous = ' ';
    for c in line.chars() {
        match c {
            '"' if previous != '\\' => in_string = !in_string,
            '{' if !in_string && previous != '\'' => count += 1,
            '}' if !in_string && previous != '\'' => count -= 1,
            _ => {}
        }
        previous = if previous == '\\' && c == '\\' { ' ' } else { c };
    }
    count
}

/// `crate::a::b` and `super::x` paths written inline in a line of code.
fn inline_paths(line: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    for start in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = line[from..].find(start) {
            let at = from + at;
            from = at + start.len();
            let before = line[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':' || c == '$') {
                continue;
            }
            let path: Vec<String> = line[at..]
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .next()
                .unwrap_or("")
                .split("::")
                .filter(|segment| !segment.is_empty())
                .map(str::to_string)
                .collect();
            paths.push(path);
        }
    }
    paths
}

/// The paths of a use tree: `crate::{a::{B, C as D}, e}` → `crate::a::B`, `crate::a::C`,
/// `crate::e`; `a::{self, B}` → `a`, `a::B`.
fn expand(tree: &str) -> Vec<Vec<String>> {
    let tree: String = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = Vec::new();
    expand_into(&tree, &[], &mut out);
    out
}

fn expand_into(tree: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if tree.is_empty() {
        return;
    }
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim().trim_end_matches("::");
        let mut base = prefix.to_vec();
        base.extend(segments(head));
        let inner = tree[open + 1..].trim_end().trim_end_matches('}');
        for part in split_top(inner) {
            expand_into(part, &base, out);
        }
        return;
    }
    let path = tree.split(" as ").next().unwrap_or(tree);
    let mut full = prefix.to_vec();
    for segment in segments(path) {
        if segment != "self" || full.is_empty() {
            full.push(segment);
        }
    }
    if !full.is_empty() && full.last().is_none_or(|last| last != "*") {
        out.push(full);
    } else if full.len() > 1 {
        // A glob imports from the module itself.
        full.pop();
        out.push(full);
    }
}

fn segments(path: &str) -> Vec<String> {
    path.split("::")
        .map(str::trim)
        .filter(|segment| !segment.is_empty())
        .map(str::to_string)
        .collect()
}

/// The comma-separated parts of a brace group, nested groups kept whole.
fn split_top(inner: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (at, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
}

/// The file that defines what `path` (starting with `crate`, `super` or `self`, written in
/// module `here`) names: the deepest module file on the path, or, for an item that module
/// re-exports, the file it comes from.
fn resolve(
    here: &[String],
    path: &[String],
    modules: &Modules,
    texts: &BTreeMap<Vec<String>, String>,
    depth: usize,
) -> Option<PathBuf> {
    let mut module: Vec<String> = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("super") => here[..here.len().checked_sub(1)?].to_vec(),
        Some("self") => here.to_vec(),
        _ => return None,
    };
    let mut rest = &path[1..];
    while rest.first().is_some_and(|segment| segment == "super") {
        module.pop();
        rest = &rest[1..];
    }
    // Inline modules live in their file: go up to the module that has one.
    while !module.is_empty() && !modules.contains_key(&module) {
        module.pop();
    }
    for segment in rest {
        let mut deeper = module.clone();
        deeper.push(segment.clone());
        if modules.contains_key(&deeper) {
            module = deeper;
            continue;
        }
        // Not a module: an item of `module`, maybe one it re-exports from another file.
        if depth < 4
            && let Some(source) = texts.get(&module).and_then(|text| reexport(text, segment))
            && let Some(file) = resolve(&module, &source, modules, texts, depth + 1)
        {
            return Some(file);
        }
        break;
    }
    modules.get(&module).cloned()
}

/// Where a module's `use` brings `name` from, as a path resolvable from that module
/// (`walk::analyze` in the root becomes `self::walk::analyze`).
fn reexport(text: &str, name: &str) -> Option<Vec<String>> {
    paths_of_uses(text)
        .into_iter()
        .find(|path| path.last().is_some_and(|last| last == name))
}

/// The paths of a file's top-level `use` items, relative ones rooted at `self`.
fn paths_of_uses(text: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut statement = String::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if statement.is_empty() && !is_use(trimmed) {
            continue;
        }
        statement.push_str(line);
        statement.push(' ');
        if !line.contains(';') {
            continue;
        }
        let tree = use_tree(statement.trim_start()).unwrap_or("");
        for mut path in expand(tree.split(';').next().unwrap_or("")) {
            if !matches!(path.first().map(String::as_str), Some("crate" | "super" | "self")) {
                path.insert(0, "self".to_string());
            }
            found.push(path);
        }
        statement.clear();
    }
    found
}

/// Every elementary circle of three files or more, each once (starting at its smallest
/// file). The graphs are a crate's files, a few dozen nodes: a depth-first walk from each
/// file through larger files only is enough.
fn circles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    const LIMIT: usize = 20;
    let mut found = Vec::new();
    for start in graph.keys() {
        let mut path = vec![start.clone()];
        walk(graph, start, &mut path, &mut found, LIMIT);
    }
    found
}

fn walk(
    graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>,
    start: &PathBuf,
    path: &mut Vec<PathBuf>,
    found: &mut Vec<Vec<PathBuf>>,
    limit: usize,
) {
    let Some(last) = path.last().cloned() else { return };
    for next in graph.get(&last).into_iter().flatten() {
        if found.len() >= limit {
            return;
        }
        if next == start {
            if path.len() >= 3 {
                found.push(path.clone());
            }
        } else if next > start && !path.contains(next) {
            path.push(next.clone());
            walk(graph, start, path, found, limit);
            path.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn strings(paths: Vec<Vec<String>>) -> Vec<String> {
        paths.into_iter().map(|path| path.join("::")).collect()
    }

    #[test]
    fn use_trees_expand_to_every_path() {
        assert_eq!(
            strings(expand("crate::{a::{B, C as D}, e, f::{self, G}}")),
            ["crate::a::B", "crate::a::C", "crate::e", "crate::f", "crate::f::G"]
        );
        assert_eq!(strings(expand("super::*")), ["super"]);
    }

    #[test]
    fn inline_paths_are_found_and_lookalikes_are_not() {
        let found = strings(inline_paths(
            "let x = crate::sandbox::validate(&v)?; my_crate::y; $crate::z",
        ));
        assert_eq!(found, ["crate::sandbox::validate"]);
    }

    fn crate_of(files: &[(&str, &str)]) -> (tempfile_dir::Dir, Modules) {
        let dir = tempfile_dir::Dir::new();
        for (name, text) in files {
            let path = dir.0.join("src").join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let modules = modules(&dir.0, Path::new("src")).unwrap();
        (dir, modules)
    }

    fn circles_of(files: &[(&str, &str)]) -> Vec<Vec<String>> {
        let (dir, modules) = crate_of(files);
        let graph = graph(&dir.0, &modules).unwrap();
        circles(&graph)
            .into_iter()
            .map(|circle| circle.iter().map(|file| file.display().to_string()).collect())
            .collect()
    }

    #[test]
    fn a_circle_of_three_files_is_found_through_inline_paths_and_reexports() {
        let found = circles_of(&[
            ("main.rs", "mod a;\nmod b;\nmod c;\npub(crate) use c::Thing;\n"),
            ("a.rs", "use crate::b::B;\n"),
            ("b.rs", "fn f() { crate::Thing::new(); }\n"),
            ("c.rs", "pub(crate) struct Thing;\nuse crate::{\n    a::A,\n};\n"),
        ]);
        assert_eq!(found, [["src/a.rs", "src/b.rs", "src/c.rs"]]);
    }

    #[test]
    fn two_files_using_each_other_a_facade_and_test_modules_are_no_circle() {
        let found = circles_of(&[
            (
                "lib.rs",
                "mod a;\nmod b;\npub use a::A;\npub use b::B;\npub struct Root;\n",
            ),
            (
                "a.rs",
                "use crate::b::B;\nuse crate::Root;\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::c::C;\n}\n",
            ),
            (
                "b.rs",
                "use crate::a::A; // crate::c::C in a comment\n/// crate::c::C in a doc\nfn f() {}\n",
            ),
            // With a's unit tests counted, a → c → b → a would be a circle.
            ("c.rs", "use crate::b::B;\nuse super::Root;\n"),
        ]);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn super_in_a_nested_module_file_reaches_its_parent() {
        let found = circles_of(&[
            ("lib.rs", "mod walk;\n"),
            ("walk/mod.rs", "mod emit;\nuse crate::plan::P;\n"),
            ("walk/emit.rs", "use super::super::lookup::L;\n"),
            ("lookup.rs", "use crate::walk::W;\n"),
            ("plan.rs", "use crate::walk::emit::E;\n"),
        ]);
        assert_eq!(
            found,
            [["src/lookup.rs", "src/walk/mod.rs", "src/plan.rs", "src/walk/emit.rs"]]
        );
    }

    /// A scratch directory removed on drop (xtask has no tempfile dependency).
    mod tempfile_dir {
        pub(crate) struct Dir(pub(crate) std::path::PathBuf);

        impl Dir {
            pub(crate) fn new() -> Dir {
                use std::sync::atomic::{AtomicUsize, Ordering};
                static NEXT: AtomicUsize = AtomicUsize::new(0);
                let path = std::env::temp_dir().join(format!(
                    "xtask-circles-{}-{}",
                    std::process::id(),
                    NEXT.fetch_add(1, Ordering::SeqCst)
                ));
                let _ = std::fs::remove_dir_all(&path);
                Dir(path)
            }
        }

        impl Drop for Dir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }
}
