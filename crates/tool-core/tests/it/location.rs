//! Path resolution through `Location` (spec §5.1): one test per refusal, and a proptest
//! that nothing resolves to an internal resource outside the root.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::symlink;
use std::path::Path;

use proptest::prelude::*;
use toolgate_core::{Location, PathError, PathKind};

struct Tree {
    _outside: tempfile::TempDir,
    _root: tempfile::TempDir,
    root: std::path::PathBuf,
    outside: std::path::PathBuf,
}

/// root/{src/main.rs, file.txt, link_in -> src, link_out -> <outside>, dangling_out -> <outside>/new.txt,
/// dangling_up -> ../escape.txt, loop_a <-> loop_b}
fn tree() -> Tree {
    let outside_dir = tempfile::tempdir().unwrap();
    let root_dir = tempfile::tempdir().unwrap();
    let root = root_dir.path().canonicalize().unwrap();
    let outside = outside_dir.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}").unwrap();
    std::fs::write(root.join("file.txt"), "text").unwrap();
    std::fs::write(outside.join("secret.txt"), "secret").unwrap();
    symlink(root.join("src"), root.join("link_in")).unwrap();
    symlink(&outside, root.join("link_out")).unwrap();
    symlink(outside.join("new.txt"), root.join("dangling_out")).unwrap();
    symlink("../escape.txt", root.join("dangling_up")).unwrap();
    symlink(root.join("loop_b"), root.join("loop_a")).unwrap();
    symlink(root.join("loop_a"), root.join("loop_b")).unwrap();
    Tree {
        _outside: outside_dir,
        _root: root_dir,
        root,
        outside,
    }
}

#[test]
fn internal_paths_resolve_relative_to_the_root() {
    let tree = tree();
    let location = Location::new(&tree.root).unwrap();
    let resolved = location.resolve("src/main.rs\n\n", PathKind::File).unwrap();
    assert_eq!(resolved.resource, "src/main.rs");
    assert_eq!(resolved.path, tree.root.join("src/main.rs"));
    assert!(resolved.external.is_none());
    assert_eq!(location.resolve("", PathKind::Directory).unwrap().resource, ".");
    assert_eq!(
        location.resolve("./src/../file.txt", PathKind::File).unwrap().resource,
        "file.txt"
    );
    // Through a symlink that stays inside: the canonical path is the resource.
    assert_eq!(
        location.resolve("link_in/main.rs", PathKind::File).unwrap().resource,
        "src/main.rs"
    );
    // Absolute and inside.
    let absolute = tree.root.join("file.txt");
    assert_eq!(
        location
            .resolve(absolute.to_str().unwrap(), PathKind::File)
            .unwrap()
            .resource,
        "file.txt"
    );
}

#[test]
fn missing_paths_resolve_through_the_nearest_existing_directory() {
    let tree = tree();
    let location = Location::new(&tree.root).unwrap();
    let resolved = location.resolve("src/new/deeper/file.rs", PathKind::File).unwrap();
    assert_eq!(resolved.resource, "src/new/deeper/file.rs");
    assert_eq!(resolved.path, tree.root.join("src/new/deeper/file.rs"));
}

#[test]
fn relative_escape_is_refused() {
    let tree = tree();
    let location = Location::new(&tree.root).unwrap();
    for path in ["../x", "src/../../x", "..", "a/../../b"] {
        let error = location.resolve(path, PathKind::File).unwrap_err();
        assert!(matches!(error, PathError::RelativeEscape { .. }), "{path}: {error}");
        assert!(error.to_string().starts_with("Path escapes the working directory"));
    }
}

#[test]
fn symlink_escape_is_refused() {
    let tree = tree();
    let location = Location::new(&tree.root).unwrap();
    for path in [
        "link_out/secret.txt",
        "link_out",
        "link_out/new/file",
        "dangling_out",
        "dangling_up",
    ] {
        let error = location.resolve(path, PathKind::File).unwrap_err();
        assert!(matches!(error, PathError::LocationEscape { .. }), "{path}: {error}");
    }
    // The absolute spelling of an inside path that leads out is refused the same way.
    let absolute = tree.root.join("link_out/secret.txt");
    let error = location
        .resolve(absolute.to_str().unwrap(), PathKind::File)
        .unwrap_err();
    assert!(matches!(error, PathError::LocationEscape { .. }), "{error}");
}

#[test]
fn non_directory_ancestor_is_refused() {
    let tree = tree();
    let location = Location::new(&tree.root).unwrap();
    for path in ["file.txt/child", "file.txt/a/b", "src/main.rs/x"] {
        let error = location.resolve(path, PathKind::File).unwrap_err();
        assert!(
            matches!(error, PathError::NonDirectoryAncestor { .. }),
            "{path}: {error}"
        );
    }
}

#[test]
fn symlink_loops_are_an_io_error() {
    let tree = tree();
    let location = Location::new(&tree.root).unwrap();
    let error = location.resolve("loop_a", PathKind::File).unwrap_err();
    assert!(matches!(error, PathError::Io { .. }), "{error}");
}

#[test]
fn external_paths_carry_their_approval_boundary() {
    let tree = tree();
    let location = Location::new(&tree.root).unwrap();
    let secret = tree.outside.join("secret.txt");
    let resolved = location.resolve(secret.to_str().unwrap(), PathKind::File).unwrap();
    let external = resolved.external.clone().unwrap();
    assert_eq!(resolved.resource, secret.to_str().unwrap());
    assert_eq!(external.directory, tree.outside);
    assert_eq!(external.resource, format!("{}/*", tree.outside.display()));
    assert_eq!(external.save, external.resource);
    // A directory is its own boundary.
    let dir = location
        .resolve(tree.outside.to_str().unwrap(), PathKind::Directory)
        .unwrap();
    assert_eq!(dir.external.unwrap().directory, tree.outside);
}

fn component() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "src",
        "main.rs",
        "file.txt",
        "link_in",
        "link_out",
        "dangling_out",
        "dangling_up",
        "missing",
        "..",
        ".",
        "",
        "secret.txt",
    ])
}

fn is_inside(root: &Path, path: &Path) -> bool {
    path.starts_with(root)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn no_internal_resource_lies_outside_the_root(
        absolute in any::<bool>(),
        parts in prop::collection::vec(component(), 0..6),
    ) {
        let tree = tree();
        let location = Location::new(&tree.root).unwrap();
        let joined = parts.join("/");
        let input = if absolute { format!("{}/{joined}", tree.root.display()) } else { joined };
        if let Ok(resolved) = location.resolve(&input, PathKind::File) {
            if resolved.external.is_none() {
                prop_assert!(is_inside(&tree.root, &resolved.path), "{input} -> {}", resolved.path.display());
                // Whatever the file system says the path really is must be inside too.
                if let Ok(real) = std::fs::canonicalize(&resolved.path) {
                    prop_assert!(is_inside(&tree.root, &real), "{input} really is {}", real.display());
                }
                // And a missing path's nearest existing ancestor is inside.
                let mut ancestor = resolved.path.clone();
                while !ancestor.exists() {
                    prop_assert!(ancestor.pop());
                }
                prop_assert!(is_inside(&tree.root, &std::fs::canonicalize(&ancestor).unwrap()));
            } else {
                prop_assert!(!is_inside(&tree.root, &resolved.path));
            }
        }
    }
}
