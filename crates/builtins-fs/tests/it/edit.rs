//! edit: vectors ED1–ED14 (spec §9.11) and the graded fallback.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::json;
use support::{Project, Recording, call};
use toolgate_builtins_fs::edit_tool;
use toolgate_core::Refusal;

#[tokio::test]
async fn ed01_edits_and_reports_a_diff() {
    let project = Project::new();
    project.write("hello.txt", "before\nrest\n");
    let text = call(
        &edit_tool(project.services()),
        json!({"path": "hello.txt", "oldString": "before", "newString": "after"}),
    )
    .await
    .unwrap();
    assert_eq!(project.read("hello.txt"), "after\nrest\n");
    assert_eq!(
        text,
        "Edited file successfully: hello.txt\nReplacements: 1\n```diff\n-before\n+after\n```"
    );
    let requests = project.permissions.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        (
            requests[0].action.as_str(),
            requests[0].resources.clone(),
            requests[0].save.clone()
        ),
        ("edit", vec!["hello.txt".to_string()], vec!["*".to_string()])
    );
    let diff = requests[0].metadata["diff"].as_str().unwrap();
    assert!(diff.contains("-before") && diff.contains("+after"), "{diff}");
}

#[tokio::test]
async fn ed02_ed03_absolute_paths_inside_and_outside() {
    let project = Project::new();
    project.write("a.txt", "x");
    let inside = project.root().join("a.txt");
    call(
        &edit_tool(project.services()),
        json!({"path": inside, "oldString": "x", "newString": "y"}),
    )
    .await
    .unwrap();
    assert_eq!(project.permissions.actions(), ["edit"]);
    let outside = project.outside_root().join("b.txt");
    std::fs::write(&outside, "x").unwrap();
    call(
        &edit_tool(project.services()),
        json!({"path": outside, "oldString": "x", "newString": "y"}),
    )
    .await
    .unwrap();
    assert_eq!(project.permissions.actions(), ["edit", "external_directory", "edit"]);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "y");
}

#[tokio::test]
async fn ed04_ed05_refused_edits_read_and_write_nothing() {
    let project = Project::with(Recording::new(|r| {
        if r.action == "external_directory" {
            Err(Refusal::declined())
        } else {
            Ok(())
        }
    }));
    let outside = project.outside_root().join("b.txt");
    std::fs::write(&outside, "x").unwrap();
    let error = call(
        &edit_tool(project.services()),
        json!({"path": outside, "oldString": "x", "newString": "y"}),
    )
    .await
    .unwrap_err();
    assert_eq!(error, format!("Unable to edit {}", outside.display()));
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "x");
    let denied = Project::with(Recording::new(|_| {
        Err(Refusal::Blocked {
            action: "edit".into(),
            reason: None,
            rules: vec![],
            denied: None,
        })
    }));
    denied.write("a.txt", "same same");
    for old in ["same", "missing"] {
        let error = call(
            &edit_tool(denied.services()),
            json!({"path": "a.txt", "oldString": old, "newString": "z"}),
        )
        .await
        .unwrap_err();
        assert_eq!(
            error, "Unable to edit a.txt",
            "the answer does not reveal whether {old:?} matches"
        );
    }
    assert_eq!(denied.read("a.txt"), "same same");
}

#[tokio::test]
async fn ed06_to_ed10_checks_in_order() {
    let project = Project::new();
    project.write("a.txt", "same same");
    let edit = edit_tool(project.services());
    assert_eq!(
        call(&edit, json!({"path": "a.txt", "oldString": "x", "newString": "x"}))
            .await
            .unwrap_err(),
        "No changes to apply: oldString and newString are identical."
    );
    assert_eq!(
        call(&edit, json!({"path": "a.txt", "oldString": "", "newString": "x"}))
            .await
            .unwrap_err(),
        "oldString must not be empty. Use write to create or overwrite a file."
    );
    assert!(
        project.permissions.requests().is_empty(),
        "nothing is asked before those checks pass"
    );
    let missing = call(
        &edit,
        json!({"path": "a.txt", "oldString": "missing", "newString": "x"}),
    )
    .await
    .unwrap_err();
    assert!(
        missing.starts_with(
            "Could not find oldString in the file. It must match exactly, including whitespace and indentation."
        ),
        "{missing}"
    );
    assert_eq!(
        call(&edit, json!({"path": "a.txt", "oldString": "same", "newString": "x"}))
            .await
            .unwrap_err(),
        "Found multiple exact matches for oldString. Provide more surrounding context or set replaceAll to true."
    );
    project.write("b.txt", "same same same");
    let text = call(
        &edit,
        json!({"path": "b.txt", "oldString": "same", "newString": "after", "replaceAll": true}),
    )
    .await
    .unwrap();
    assert_eq!(project.read("b.txt"), "after after after");
    assert!(text.contains("Replacements: 3"));
}

#[tokio::test]
async fn overlapping_occurrences_count_as_non_overlapping_matches() {
    // "aa" occurs twice in "aaa" but matches once without overlap (as `str::matches`):
    // one match, replaced at the first place; in "aaaa" it matches twice.
    let project = Project::new();
    let edit = edit_tool(project.services());
    project.write("three.txt", "aaa\n");
    call(&edit, json!({"path": "three.txt", "oldString": "aa", "newString": "X"}))
        .await
        .unwrap();
    assert_eq!(project.read("three.txt"), "Xa\n");
    project.write("four.txt", "aaaa\n");
    let error = call(&edit, json!({"path": "four.txt", "oldString": "aa", "newString": "X"}))
        .await
        .unwrap_err();
    assert!(error.starts_with("Found multiple exact matches"), "{error}");
    assert_eq!(project.read("four.txt"), "aaaa\n");
    let text = call(
        &edit,
        json!({"path": "four.txt", "oldString": "aa", "newString": "X", "replaceAll": true}),
    )
    .await
    .unwrap();
    assert_eq!(project.read("four.txt"), "XX\n");
    assert!(text.contains("Replacements: 2"), "{text}");
    // A match at the very start and at the very end, and multi-byte text around it.
    project.write("edges.txt", "é start middle end é");
    call(
        &edit,
        json!({"path": "edges.txt", "oldString": "é start", "newString": "begin"}),
    )
    .await
    .unwrap();
    call(
        &edit,
        json!({"path": "edges.txt", "oldString": "end é", "newString": "finish"}),
    )
    .await
    .unwrap();
    assert_eq!(project.read("edges.txt"), "begin middle finish");
}

#[tokio::test]
async fn ed11_bom_and_crlf_are_kept() {
    let project = Project::new();
    project.write("a.txt", "\u{feff}before\r\nrest\r\n");
    call(
        &edit_tool(project.services()),
        json!({"path": "a.txt", "oldString": "before\nrest", "newString": "after\nrest"}),
    )
    .await
    .unwrap();
    assert_eq!(project.read("a.txt"), "\u{feff}after\r\nrest\r\n");
}

#[tokio::test]
async fn ed12_a_file_changed_after_approval_is_not_overwritten() {
    let project = Project::new();
    project.write("a.txt", "alpha beta");
    let path = project.dir.path().join("a.txt");
    // The permission prompt is where time passes: another writer changes the file then.
    let changing = Recording::new(move |_| {
        std::fs::write(&path, "gamma delta").unwrap();
        Ok(())
    });
    let racing = Project {
        dir: project.dir,
        outside: project.outside,
        permissions: changing,
    };
    // The file is read after approval, so this edit sees the new content and fails to match…
    let error = call(
        &edit_tool(racing.services()),
        json!({"path": "a.txt", "oldString": "alpha", "newString": "1"}),
    )
    .await
    .unwrap_err();
    assert!(error.starts_with("Could not find oldString"), "{error}");
    assert_eq!(
        racing.read("a.txt"),
        "gamma delta",
        "the other writer's content is kept"
    );
}

#[tokio::test]
async fn ed12_racing_edits_one_wins_the_other_is_told() {
    let project = Project::new();
    project.write("a.txt", &"line\n".repeat(20_000));
    let services = project.services();
    let mut tasks = Vec::new();
    for n in 0..8 {
        let edit = edit_tool(services.clone());
        tasks.push(tokio::spawn(async move {
            call(&edit, json!({"path": "a.txt", "oldString": "line\nline\n", "newString": format!("edit{n}\n"), "replaceAll": true})).await
        }));
    }
    let mut won = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => won += 1,
            Err(error) => assert!(error.starts_with("Could not find oldString"), "{error}"),
        }
    }
    assert_eq!(won, 1, "edits apply one after the other: the first replaces every pair");
    let content = project.read("a.txt");
    let edits = content.lines().filter(|l| l.starts_with("edit")).count();
    assert_eq!(edits, 10_000, "exactly one edit's replacements are in the file");
    let first = content.lines().next().unwrap().to_string();
    assert!(content.lines().all(|l| l == first), "no interleaving of two edits");
}

#[tokio::test]
async fn ed13_trailing_whitespace_fallback_is_reported() {
    let project = Project::new();
    project.write("a.ts", "const x = 1\nconst y = 2");
    let text = call(&edit_tool(project.services()), json!({"path": "a.ts", "oldString": "const x = 1   \nconst y = 2  ", "newString": "const x = 10\nconst y = 20"})).await.unwrap();
    assert_eq!(project.read("a.ts"), "const x = 10\nconst y = 20");
    assert!(text.contains("Matched after ignoring trailing whitespace."), "{text}");
}

#[tokio::test]
async fn ed14_a_much_larger_span_is_refused() {
    let project = Project::new();
    let pad = " ".repeat(300);
    project.write("a.txt", &format!("{pad}a\n{pad}b\n{pad}c\n"));
    let error = call(
        &edit_tool(project.services()),
        json!({"path": "a.txt", "oldString": "a\nb\nc", "newString": "x"}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        error,
        "Refusing replacement because the matched span is much larger than oldString. Re-read the file and provide the full exact oldString for the intended replacement."
    );
}

#[tokio::test]
async fn indentation_and_unicode_grades() {
    let project = Project::new();
    project.write("a.py", "def f():\n    if x:\n        return 1\n");
    let text = call(
        &edit_tool(project.services()),
        json!({"path": "a.py", "oldString": "if x:\n    return 1", "newString": "if y:\n    return 2"}),
    )
    .await
    .unwrap();
    assert_eq!(project.read("a.py"), "def f():\n    if y:\n        return 2\n");
    assert!(text.contains("Matched after ignoring indentation"), "{text}");
    project.write("b.md", "He said \u{201c}hello\u{201d} \u{2014} twice\u{2026}\n");
    let text = call(
        &edit_tool(project.services()),
        json!({"path": "b.md", "oldString": "He said \"hello\" - twice...", "newString": "He said hi"}),
    )
    .await
    .unwrap();
    assert_eq!(project.read("b.md"), "He said hi\n");
    assert!(text.contains("Matched after folding Unicode punctuation"), "{text}");
}

#[tokio::test]
async fn not_found_quotes_the_closest_line() {
    let project = Project::new();
    project.write("a.rs", "fn main() {\n    let total = compute(items);\n}\n");
    let error = call(
        &edit_tool(project.services()),
        json!({"path": "a.rs", "oldString": "let total = compute(item_list);", "newString": "x"}),
    )
    .await
    .unwrap_err();
    assert!(
        error.contains("Closest line (2): \"    let total = compute(items);\""),
        "{error}"
    );
    assert!(
        error.contains("after 24 characters: oldString has \"_list);\", the file has \"s);\""),
        "{error}"
    );
}

#[tokio::test]
async fn missing_files_and_directories() {
    let project = Project::new();
    std::fs::create_dir(project.dir.path().join("dir")).unwrap();
    let edit = edit_tool(project.services());
    assert_eq!(
        call(&edit, json!({"path": "nope.txt", "oldString": "a", "newString": "b"}))
            .await
            .unwrap_err(),
        "File not found: nope.txt"
    );
    assert_eq!(
        call(&edit, json!({"path": "dir", "oldString": "a", "newString": "b"}))
            .await
            .unwrap_err(),
        "Path is a directory, not a file: dir"
    );
}
