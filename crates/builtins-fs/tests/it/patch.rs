//! apply_patch: vector PA17 (spec §9.12), moves, atomicity, precise failures; the
//! grammar vectors PA1–PA16 are unit tests of the private parser (`src/patch/tests.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::json;
use support::{Project, call};
use toolgate_builtins_fs::patch_tool;

#[tokio::test]
async fn pa17_empty_patch_is_rejected() {
    let project = Project::new();
    let tool = patch_tool(project.services());
    assert_eq!(
        call(&tool, json!({"patchText": "*** Begin Patch\n*** End Patch"}))
            .await
            .unwrap_err(),
        "patch rejected: empty patch"
    );
    assert_eq!(
        call(&tool, json!({"patchText": "  "})).await.unwrap_err(),
        "patchText is required"
    );
    assert!(
        call(&tool, json!({"patchText": "garbage"}))
            .await
            .unwrap_err()
            .starts_with("patch verification failed: Invalid patch format")
    );
}

#[tokio::test]
async fn applies_add_update_delete_and_move_with_one_assertion() {
    let project = Project::new();
    project.write("update.txt", "one\ntwo\nthree\n");
    project.write("delete.txt", "bye\n");
    project.write("old/name.txt", "a\nb\n");
    let patch = "*** Begin Patch\n*** Add File: new/add.txt\n+hello\n*** Update File: update.txt\n@@\n one\n-two\n+2\n*** Delete File: delete.txt\n*** Update File: old/name.txt\n*** Move to: moved/name.txt\n@@\n-a\n+A\n*** End Patch";
    let text = call(&patch_tool(project.services()), json!({"patchText": patch}))
        .await
        .unwrap();
    assert_eq!(
        text,
        "Success. Updated the following files:\nA new/add.txt\nM update.txt\nD delete.txt\nM moved/name.txt"
    );
    assert_eq!(project.read("new/add.txt"), "hello\n");
    assert_eq!(project.read("update.txt"), "one\n2\nthree\n");
    assert!(!project.exists("delete.txt"));
    assert!(!project.exists("old/name.txt"));
    assert_eq!(project.read("moved/name.txt"), "A\nb\n");
    let requests = project.permissions.requests();
    assert_eq!(requests.len(), 1, "one edit assertion for every target");
    assert_eq!(requests[0].action, "edit");
    assert_eq!(
        requests[0].resources,
        [
            "new/add.txt",
            "update.txt",
            "delete.txt",
            "old/name.txt",
            "moved/name.txt"
        ]
    );
    assert!(requests[0].metadata["diff"].as_str().unwrap().contains("-two\n+2"));
}

#[tokio::test]
async fn verification_failures_touch_nothing_and_say_why() {
    let project = Project::new();
    project.write("a.txt", "alpha\nbeta\ngamma\n");
    project.write("b.txt", "x\n");
    let tool = patch_tool(project.services());
    let patch = "*** Begin Patch\n*** Update File: b.txt\n@@\n-x\n+y\n*** Update File: a.txt\n@@\n alpha\n-BETA2\n+delta\n*** End Patch";
    let error = call(&tool, json!({"patchText": patch})).await.unwrap_err();
    assert!(
        error.starts_with("patch verification failed: Failed to find expected lines in a.txt:\nalpha\nBETA2"),
        "{error}"
    );
    assert!(
        error.contains(
            "Closest match at line 1: 1 of 2 lines match, then the patch expects \"BETA2\" but the file has \"beta\""
        ),
        "{error}"
    );
    assert_eq!(project.read("b.txt"), "x\n", "nothing is written when any hunk fails");
    assert!(project.permissions.requests().is_empty(), "nothing is asked either");
    let applied = "*** Begin Patch\n*** Update File: a.txt\n@@\n-nothing\n+beta\n*** End Patch";
    let error = call(&tool, json!({"patchText": applied})).await.unwrap_err();
    assert!(error.contains("already applied"), "{error}");
}

#[tokio::test]
async fn a_failing_write_restores_every_file() {
    let project = Project::new();
    project.write("a.txt", "a\n");
    project.write("b.txt", "b\n");
    std::fs::create_dir(project.dir.path().join("locked")).unwrap();
    project.write("locked/c.txt", "c\n");
    // The third file's directory refuses new files, even to root (immutable attribute).
    let locked = project.dir.path().join("locked");
    let lock = |flag: &str| {
        std::process::Command::new("chattr")
            .arg(flag)
            .arg(&locked)
            .status()
            .is_ok_and(|s| s.success())
    };
    assert!(
        lock("+i"),
        "chattr +i is needed to make a directory unwritable for this test"
    );
    let patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n*** Delete File: b.txt\n*** Update File: locked/c.txt\n@@\n-c\n+C\n*** End Patch";
    let result = call(&patch_tool(project.services()), json!({"patchText": patch})).await;
    assert!(lock("-i"));
    let error = result.unwrap_err();
    assert!(error.contains("Nothing was applied"), "{error}");
    assert_eq!(project.read("a.txt"), "a\n");
    assert_eq!(project.read("b.txt"), "b\n");
    assert_eq!(project.read("locked/c.txt"), "c\n");
}

#[tokio::test]
async fn already_applied_is_said_only_when_the_new_lines_prove_it() {
    let project = Project::new();
    project.write("a.rs", "fn main() {\n    run();\n}\n");
    let tool = patch_tool(project.services());
    // The old line is missing and the new one is a lone `}`, which is everywhere: not proof.
    let brace = "*** Begin Patch\n*** Update File: a.rs\n@@\n-    stop();\n+}\n*** End Patch";
    let error = call(&tool, json!({"patchText": brace})).await.unwrap_err();
    assert!(error.contains("Failed to find expected lines"), "{error}");
    assert!(!error.contains("already applied"), "{error}");
    // New lines that say something, found once: already applied.
    let applied = "*** Begin Patch\n*** Update File: a.rs\n@@\n-    walk();\n+    run();\n*** End Patch";
    let error = call(&tool, json!({"patchText": applied})).await.unwrap_err();
    assert!(error.contains("already applied"), "{error}");
    assert_eq!(project.read("a.rs"), "fn main() {\n    run();\n}\n");
}

#[tokio::test]
async fn crlf_files_keep_crlf_in_the_lines_a_patch_touches() {
    let project = Project::new();
    project.write("win.txt", "one\r\ntwo\r\nthree\r\n");
    project.write("mixed.txt", "unix\nwin\r\nlast\n");
    let tool = patch_tool(project.services());
    let patch = "*** Begin Patch\n*** Update File: win.txt\n@@\n one\n-two\n+TWO\n+two and a half\n three\n@@\n+four\n*** Update File: mixed.txt\n@@\n-win\n+WIN\n*** End Patch";
    call(&tool, json!({"patchText": patch})).await.unwrap();
    assert_eq!(
        project.read("win.txt"),
        "one\r\nTWO\r\ntwo and a half\r\nthree\r\nfour\r\n"
    );
    // Lines left alone keep their own ending; new lines get the file's (it has CRLF).
    assert_eq!(project.read("mixed.txt"), "unix\nWIN\r\nlast\n");
}
