//! A file with two hard links is rewritten in place — a rename would part its names — and
//! keeps every line another program appends during the rewrite, as a replaced file does.
//! The other program is a real process (`sh`, appending a line with `>>` every half millisecond or so);
//! the edits grow the file and shrink it by less and more than a block, so every path of
//! the in-place rewrite runs while appends land.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::os::unix::fs::MetadataExt;

use serde_json::json;
use support::{Project, call};
use toolgate_builtins_fs::{edit_tool, patch_tool, write_tool};

/// Starts `sh` appending `appended <n>` lines to `path` until `stop` exists; it then
/// writes how many it wrote to `<stop>.count`.
fn appender(path: &std::path::Path, stop: &std::path::Path) -> std::process::Child {
    std::process::Command::new("sh")
        .args([
            "-c",
            r#"i=0; while [ ! -e "$2" ]; do echo "appended $i" >> "$1"; i=$((i+1)); sleep 0.0005; done; echo $i > "$2.count""#,
            "sh",
        ])
        .arg(path)
        .arg(stop)
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hard_linked_file_keeps_every_line_an_appender_process_writes_while_it_is_rewritten() {
    let project = Project::new();
    let filler = "x".repeat(3000);
    let mut text = String::from("head\n");
    for n in 0..40 {
        text.push_str(&format!("small {n:02}\ntiny {n:02}\nbig {n:02} {filler}{filler}\n"));
    }
    project.write("log.txt", &text);
    let path = project.dir.path().join("log.txt");
    let other = project.outside.path().join("other-name.txt");
    std::fs::hard_link(&path, &other).unwrap();
    let inode = std::fs::metadata(&path).unwrap().ino();
    let stop = project.outside.path().join("stop");
    let mut child = appender(&path, &stop);
    let services = project.services();
    let edit = edit_tool(services.clone());
    let patch = patch_tool(services.clone());
    let mut applied = 0;
    let mut failures = Vec::new();
    for n in 0..40 {
        // Shrink by 6 KB (more than a block), grow by a little, shrink by a little, and
        // a patch that grows.
        let changes = [
            call(&edit, json!({"path": "log.txt", "oldString": format!("big {n:02} {filler}{filler}\n"), "newString": ""})).await,
            call(&edit, json!({"path": "log.txt", "oldString": format!("small {n:02}\n"), "newString": format!("small {n:02} edited\n")})).await,
            call(&edit, json!({"path": "log.txt", "oldString": format!("tiny {n:02}\n"), "newString": ""})).await,
            call(&patch, json!({"patchText": format!("*** Begin Patch\n*** Update File: log.txt\n@@\n head\n+patched {n:02}\n*** End Patch")})).await,
        ];
        for change in changes {
            match change {
                Ok(_) => applied += 1,
                Err(error) => failures.push(error),
            }
        }
    }
    std::fs::write(&stop, "").unwrap();
    assert!(child.wait().unwrap().success());
    let count: usize = std::fs::read_to_string(format!("{}.count", stop.display()))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let content = project.read("log.txt");
    assert_eq!(
        std::fs::read_to_string(&other).unwrap(),
        content,
        "both names see one file"
    );
    assert_eq!(std::fs::metadata(&path).unwrap().ino(), inode, "rewritten in place");
    let appended: Vec<&str> = content.lines().filter(|line| line.starts_with("appended ")).collect();
    let expected: Vec<String> = (0..count).map(|n| format!("appended {n}")).collect();
    assert!(count > 100, "the appender ran: {count} lines");
    let lost: Vec<usize> = (0..count)
        .filter(|n| appended.iter().filter(|line| **line == format!("appended {n}")).count() != 1)
        .collect();
    assert!(
        lost.is_empty(),
        "{} of {count} appended lines lost or doubled: {lost:?}",
        lost.len()
    );
    assert!(appended == expected, "every appended line is there once, in order");
    for failure in &failures {
        assert!(failure.starts_with("File changed since it was read: "), "{failure}");
    }
    assert!(
        applied > 120,
        "most changes land: {applied} of 160; failures: {failures:?}"
    );
    println!("hard-linked: {applied} of 160 changes applied, {count} lines appended meanwhile, all kept in order");
}

#[tokio::test]
async fn in_place_rewrites_without_a_range_collapse_shrink_and_grow_exactly() {
    // tmpfs cannot collapse a range: the shrink then moves the tail down and cuts.
    let Ok(dir) = tempfile::tempdir_in("/dev/shm") else {
        return;
    };
    let project = Project::new();
    let path = dir.path().join("shm.txt");
    let mut text = String::new();
    for n in 0..50 {
        text.push_str(&format!("line {n:02} {}\n", "y".repeat(n * 300)));
    }
    std::fs::write(&path, &text).unwrap();
    std::fs::hard_link(&path, dir.path().join("second.txt")).unwrap();
    let external = project.services();
    let edit = edit_tool(external);
    let name = path.display().to_string();
    for n in (0..50).rev() {
        let line = format!("line {n:02} {}\n", "y".repeat(n * 300));
        let replacement = if n % 2 == 0 {
            String::new()
        } else {
            format!("kept {n:02}\n")
        };
        call(
            &edit,
            json!({"path": name, "oldString": line.clone(), "newString": replacement.clone()}),
        )
        .await
        .unwrap();
        text = text.replacen(&line, &replacement, 1);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "after line {n}");
    }
    let write = write_tool(project.services());
    call(&write, json!({"path": name, "content": ""})).await.unwrap();
    assert_eq!(std::fs::read_to_string(dir.path().join("second.txt")).unwrap(), "");
}
