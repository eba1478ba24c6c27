//! Containment attacks on every file tool: `..` escapes, absolute paths outside, a
//! symlinked directory leading out, a symlink chain, a dangling symlink pointing out, a
//! file symlink pointing out. Outside paths must be asked for; nothing outside may be
//! touched without `external_directory`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::json;
use support::{Project, Recording, call, symlink};
use toolgate_builtins_fs::{edit_tool, glob_tool, grep_tool, patch_tool, read_tool, write_tool};
use toolgate_core::Refusal;

/// A project whose permission fake refuses every `external_directory`.
fn guarded() -> Project {
    let project = Project::with(Recording::new(|r| {
        if r.action == "external_directory" {
            Err(Refusal::declined())
        } else {
            Ok(())
        }
    }));
    let outside = project.outside_root();
    std::fs::write(outside.join("secret.txt"), "SECRET\n").unwrap();
    symlink(&outside, &project.dir.path().join("linkdir"));
    symlink(&outside.join("secret.txt"), &project.dir.path().join("linkfile"));
    symlink(&outside.join("created.txt"), &project.dir.path().join("dangling"));
    symlink(&project.dir.path().join("linkdir"), &project.dir.path().join("chain"));
    project
}

#[tokio::test]
async fn read_cannot_escape() {
    let project = guarded();
    let read = read_tool(project.services());
    let outside = project.outside_root().join("secret.txt");
    for path in ["../secret.txt", "linkdir/secret.txt", "linkfile", "chain/secret.txt"] {
        let error = call(&read, json!({"path": path})).await.unwrap_err();
        assert!(!error.contains("SECRET"), "{path}: {error}");
        assert!(error.starts_with("Unable to read"), "{path}: {error}");
    }
    let error = call(&read, json!({"path": outside})).await.unwrap_err();
    assert_eq!(
        error,
        format!("Unable to read {}", outside.display()),
        "absolute outside paths are asked for and refused"
    );
    assert!(
        project.permissions.actions().iter().all(|a| a == "external_directory"),
        "no read was even asked"
    );
}

#[tokio::test]
async fn write_and_edit_cannot_escape() {
    let project = guarded();
    let outside = project.outside_root();
    let write = write_tool(project.services());
    let edit = edit_tool(project.services());
    for path in ["../x.txt", "linkdir/x.txt", "chain/x.txt", "dangling", "linkfile"] {
        assert!(
            call(&write, json!({"path": path, "content": "pwned"})).await.is_err(),
            "{path}"
        );
        assert!(
            call(
                &edit,
                json!({"path": path, "oldString": "SECRET", "newString": "pwned"})
            )
            .await
            .is_err(),
            "{path}"
        );
    }
    assert!(
        call(&write, json!({"path": outside.join("x.txt"), "content": "pwned"}))
            .await
            .is_err()
    );
    assert!(!outside.join("x.txt").exists());
    assert!(
        !outside.join("created.txt").exists(),
        "a write through a dangling link creates nothing outside"
    );
    assert_eq!(std::fs::read_to_string(outside.join("secret.txt")).unwrap(), "SECRET\n");
}

#[tokio::test]
async fn apply_patch_cannot_escape() {
    let project = guarded();
    let outside = project.outside_root();
    let tool = patch_tool(project.services());
    for path in ["../x.txt", "linkdir/x.txt", "dangling", "linkfile"] {
        let patch = format!("*** Begin Patch\n*** Add File: {path}\n+pwned\n*** End Patch");
        assert!(call(&tool, json!({"patchText": patch})).await.is_err(), "{path}");
    }
    let patch = format!(
        "*** Begin Patch\n*** Update File: {}\n@@\n-SECRET\n+pwned\n*** End Patch",
        outside.join("secret.txt").display()
    );
    assert!(call(&tool, json!({"patchText": patch})).await.is_err());
    assert_eq!(std::fs::read_to_string(outside.join("secret.txt")).unwrap(), "SECRET\n");
    assert!(!outside.join("x.txt").exists() && !outside.join("created.txt").exists());
}

#[tokio::test]
async fn glob_and_grep_do_not_follow_links_out() {
    let project = guarded();
    project.write("inside.txt", "SECRET inside\n");
    let text = call(&grep_tool(project.services()), json!({"pattern": "SECRET"}))
        .await
        .unwrap();
    assert!(text.starts_with("Found 1 matches"), "{text}");
    assert!(!text.contains(&project.outside_root().display().to_string()), "{text}");
    let files = call(&glob_tool(project.services()), json!({"pattern": "*.txt"}))
        .await
        .unwrap();
    assert!(!files.contains("secret.txt"), "{files}");
    assert!(
        call(
            &grep_tool(project.services()),
            json!({"pattern": "SECRET", "path": "linkdir"})
        )
        .await
        .is_err()
    );
    assert!(
        call(
            &grep_tool(project.services()),
            json!({"pattern": "SECRET", "path": "../"})
        )
        .await
        .is_err()
    );
    assert!(
        call(
            &glob_tool(project.services()),
            json!({"pattern": "*", "path": project.outside_root()})
        )
        .await
        .is_err()
    );
}
