//! A recursive read is decided by the files that exist below its directory, walked and
//! bounded (README "The bash tool"): `grep -r`, `rg`, what `find -exec` and
//! `find | xargs` read. In real directories: a `.env` below the directory is denied by a
//! `*.env` read rule; none there and the same line is allowed; a file added by an
//! earlier program of the line, more entries than the bound, or a name that `xargs`
//! would split leave the read as "anything below", which the rule denies.

use std::path::Path;

use crate::soundness;
use toolgate_core::Location;
use toolgate_permission::{Effect, Origin, Ruleset, rules_from_config};

fn rules() -> Ruleset {
    let config = serde_json::json!({
        "bash": {"*": "allow"},
        "read": {"*": "allow", "*.env": "deny", "*/.env": "deny"},
        "edit": {"*": "allow"},
        "external_directory": {"*": "ask"}
    });
    Ruleset::new(rules_from_config(&config, "permission", Origin::UserConfig, None).unwrap())
}

fn effect(project: &Path, line: &str) -> Effect {
    let location = Location::new(project).unwrap();
    let plan = toolgate_shell_analysis::plan(&location, line, None, None).unwrap();
    soundness::analysis_effect(&rules(), None, &plan.requests)
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for file in [
        "src/main.rs",
        "src/lib/mod.rs",
        "src/lib/parse.rs",
        "docs/a.md",
        "secrets/.env",
    ] {
        let path = dir.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "x\n").unwrap();
    }
    dir
}

const RECURSIVE: &[&str] = &[
    "grep -rn TODO DIR",
    "grep -r -l x DIR | wc -l",
    "rg -n TODO DIR",
    "find DIR -name '*.rs' -exec grep -l x {} +",
    "find DIR -type f | xargs wc -l",
    "find DIR -name '*.rs' | xargs grep -c unwrap | sort",
];

#[test]
fn a_recursive_read_is_decided_by_the_files_below() {
    let dir = project();
    for line in RECURSIVE {
        // No `.env` below src: allowed; below secrets and the root: denied.
        assert_eq!(effect(dir.path(), &line.replace("DIR", "src")), Effect::Allow, "{line}");
        assert_eq!(
            effect(dir.path(), &line.replace("DIR", "secrets")),
            Effect::Deny,
            "{line}"
        );
        assert_eq!(effect(dir.path(), &line.replace("DIR", ".")), Effect::Deny, "{line}");
    }
    // The same lines on a directory with a `.env` only in a subdirectory.
    std::fs::create_dir_all(dir.path().join("src/deep/er")).unwrap();
    std::fs::write(dir.path().join("src/deep/er/prod.env"), "KEY=1\n").unwrap();
    for line in RECURSIVE {
        assert_eq!(effect(dir.path(), &line.replace("DIR", "src")), Effect::Deny, "{line}");
        assert_eq!(
            effect(dir.path(), &line.replace("DIR", "docs")),
            Effect::Allow,
            "{line}"
        );
    }
}

#[test]
fn what_the_walk_cannot_vouch_for_stays_anything_below() {
    let dir = project();
    // A program that ran before may have added a `.env` below.
    assert_eq!(effect(dir.path(), "cp x src/a; grep -rn TODO src"), Effect::Deny);
    assert_eq!(effect(dir.path(), "./gen.sh && find src | xargs cat"), Effect::Deny);
    // A builtin writes nothing below unless it says so.
    assert_eq!(effect(dir.path(), "cd . && grep -rn TODO src"), Effect::Allow);
    // xargs with another delimiter, a find that prints more than paths, a command that
    // writes while find walks, a symbolic link followed.
    for line in [
        "find src | xargs -d / cat",
        "find src -printf '%p %s\\n' | xargs cat",
        "find src | xargs sed -i s/a/b/",
        "find -L src | xargs cat",
        "find src docs | xargs cat",
    ] {
        assert_ne!(effect(dir.path(), line), Effect::Allow, "{line}");
    }
    // A name xargs splits: `a /x` makes the word `/x`.
    std::fs::create_dir_all(dir.path().join("docs/a /etc")).unwrap();
    std::fs::write(dir.path().join("docs/a /etc/passwd"), "").unwrap();
    assert_ne!(effect(dir.path(), "find docs | xargs cat"), Effect::Allow);
    assert_eq!(effect(dir.path(), "grep -rn TODO docs"), Effect::Allow);
}

#[test]
fn a_tree_past_the_bound_is_anything_below() {
    let dir = project();
    let many = dir.path().join("many");
    std::fs::create_dir(&many).unwrap();
    for n in 0..5_001 {
        std::fs::write(many.join(format!("f{n}.txt")), "").unwrap();
    }
    assert_eq!(effect(dir.path(), "grep -rn TODO many"), Effect::Deny);
    std::fs::remove_file(many.join("f0.txt")).unwrap();
    assert_eq!(effect(dir.path(), "grep -rn TODO many"), Effect::Allow);
}

#[test]
fn a_link_below_that_leads_out_is_asked_for() {
    let dir = project();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("notes.txt"), "").unwrap();
    std::os::unix::fs::symlink(outside.path().join("notes.txt"), dir.path().join("docs/link")).unwrap();
    assert_ne!(effect(dir.path(), "grep -rn TODO docs"), Effect::Allow);
}
