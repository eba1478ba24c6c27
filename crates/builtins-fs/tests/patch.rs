//! apply_patch: vectors PA1–PA17 (spec §9.12), moves, atomicity, precise failures.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use serde_json::json;
use support::{Project, call};
use toolgate_builtins_fs::patch::{Chunk, Derived, Hunk, derive, parse};
use toolgate_builtins_fs::patch_tool;

fn addition(text: &str) -> Vec<Chunk> {
    vec![Chunk {
        old: vec![],
        new: vec![text.to_string()],
        context: None,
        end_of_file: false,
    }]
}

fn replace(old: &[&str], new: &[&str], eof: bool) -> Vec<Chunk> {
    vec![Chunk {
        old: old.iter().map(|s| s.to_string()).collect(),
        new: new.iter().map(|s| s.to_string()).collect(),
        context: None,
        end_of_file: eof,
    }]
}

fn content(original: &str, chunks: &[Chunk]) -> String {
    derive(original, "f", chunks).unwrap().content
}

#[test]
fn pa01_to_pa06_pure_additions_end_with_a_newline() {
    assert_eq!(content("", &addition("added")), "added\n", "PA1");
    assert_eq!(content("\n", &addition("added")), "\nadded\n", "PA2");
    assert_eq!(content("before", &addition("added")), "before\nadded\n", "PA3");
    assert_eq!(content("before\n", &addition("added")), "before\nadded\n", "PA4");
    assert_eq!(content("before\n\n", &addition("added")), "before\n\nadded\n", "PA5");
    assert_eq!(
        content("before\n\n\n", &addition("added")),
        "before\n\n\nadded\n",
        "PA6"
    );
}

#[test]
fn pa07_endings_and_bom_are_kept() {
    for ending in ["\n", "\n\n", "\n\n\n"] {
        let derived = derive(
            &format!("\u{feff}old{ending}"),
            "f",
            &replace(&["old"], &["new"], false),
        )
        .unwrap();
        assert_eq!(
            derived,
            Derived {
                content: format!("new{ending}"),
                bom: true
            }
        );
    }
}

#[test]
fn pa08_eof_chunk_with_an_empty_last_line() {
    assert_eq!(content("old\n\n", &replace(&["old", ""], &["new"], true)), "new\n");
}

#[test]
fn pa09_parse_add_update_delete() {
    let text = "*** Begin Patch\n*** Add File: add.txt\n+added\n*** Update File: update.txt\n@@ section\n-old\n+new\n*** Delete File: delete.txt\n*** End Patch";
    assert_eq!(
        parse(text).unwrap(),
        [
            Hunk::Add {
                path: "add.txt".into(),
                contents: "added".into()
            },
            Hunk::Update {
                path: "update.txt".into(),
                move_to: None,
                chunks: vec![Chunk {
                    old: vec!["old".into()],
                    new: vec!["new".into()],
                    context: Some("section".into()),
                    end_of_file: false
                }],
            },
            Hunk::Delete {
                path: "delete.txt".into()
            },
        ]
    );
}

#[test]
fn pa10_heredoc_wrapper_is_stripped() {
    let bare = "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch";
    assert_eq!(
        parse(&format!("cat <<'EOF'\n{bare}\nEOF")).unwrap(),
        parse(bare).unwrap()
    );
    assert_eq!(parse(&format!("<<EOF\n{bare}\nEOF\n")).unwrap(), parse(bare).unwrap());
}

#[test]
fn pa11_fuzzy_seek_keeps_the_bom() {
    let derived = derive("\u{feff}old\n", "f", &replace(&["  old   "], &["new"], false)).unwrap();
    assert_eq!(
        derived,
        Derived {
            content: "new\n".into(),
            bom: true
        }
    );
}

#[test]
fn pa12_eof_chunks_anchor_at_the_end() {
    let result = content(
        "marker\nmiddle\nmarker\nend\n",
        &replace(&["marker", "end"], &["marker changed", "end"], true),
    );
    assert_eq!(result, "marker\nmiddle\nmarker changed\nend\n");
}

#[test]
fn pa13_to_pa16_grammar() {
    let hunks = parse("*** Begin Patch\n*** Update File: a\n@@\n-last\n+end\n*** End of File\n*** End Patch").unwrap();
    let Hunk::Update { chunks, .. } = &hunks[0] else {
        panic!()
    };
    assert!(chunks[0].end_of_file, "PA13");
    assert!(
        parse("*** Begin Patch\n*** Add File: a\nno plus\n*** End Patch")
            .unwrap_err()
            .starts_with("Invalid add file line"),
        "PA14"
    );
    assert!(
        parse("*** Begin Patch\n*** Update File: a\n*** End Patch")
            .unwrap_err()
            .contains("expected at least one @@ chunk"),
        "PA15"
    );
    assert!(
        parse("*** Begin Patch\n*** Delete File: a\nbody\n*** End Patch")
            .unwrap_err()
            .starts_with("Invalid patch line"),
        "PA16"
    );
    assert_eq!(
        parse("no markers").unwrap_err(),
        "Invalid patch format: missing Begin/End markers"
    );
    assert_eq!(
        parse("*** Begin Patch\n*** Add File:  \n*** End Patch").unwrap_err(),
        "Invalid add file path"
    );
}

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
