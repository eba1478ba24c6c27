//! The patch grammar and the content derivation, vectors PA1–PA16 (spec §9.12); the
//! tool itself is tested through its public constructor in `tests/it/patch.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::{Chunk, Derived, Hunk, derive, parse};

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
