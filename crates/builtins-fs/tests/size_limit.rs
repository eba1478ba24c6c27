//! A size limit before anything is read whole: `edit` and `apply_patch` of a file over
//! 32 MiB are refused with what to do instead, and `write` replaces one without reading
//! it — all without allocating anything near the file's size. Every allocation of this
//! test process is counted (a global allocator that tracks the peak); a 2 GiB sparse file
//! costs no disk.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "it/support.rs"]
mod support;

use serde_json::json;
use support::{Project, call};
use toolgate_builtins_fs::{edit_tool, patch_tool, read_tool, write_tool};

#[global_allocator]
static ALLOCATED: peak_alloc::PeakAlloc = peak_alloc::PeakAlloc;

/// What one call may allocate above what the process held before it.
const BOUND: usize = 16 << 20;

fn peak_during<T>(work: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCATED.current_usage();
    ALLOCATED.reset_peak_usage();
    let result = work();
    (result, ALLOCATED.peak_usage().saturating_sub(before))
}

/// A sparse file of `size` bytes whose first line is `first`.
fn sparse(project: &Project, name: &str, first: &str, size: u64) {
    let path = project.dir.path().join(name);
    std::fs::write(&path, format!("{first}\n")).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(size)
        .unwrap();
}

#[test]
fn a_two_gib_file_is_refused_by_edit_and_apply_patch_before_it_is_read_and_replaced_by_write() {
    let project = Project::new();
    sparse(&project, "huge.txt", "alpha", 2 << 30);
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let edit = edit_tool(project.services());
    let (result, peak) = peak_during(|| {
        runtime.block_on(call(
            &edit,
            json!({"path": "huge.txt", "oldString": "alpha", "newString": "beta"}),
        ))
    });
    let error = result.unwrap_err();
    assert!(
        error.starts_with(
            "Unable to edit huge.txt: the file is 2 GiB, and edit, write and apply_patch read at most 32 MiB"
        ),
        "{error}"
    );
    assert!(
        error.contains("offset and limit") && error.contains("bash"),
        "says what to do: {error}"
    );
    assert!(peak < BOUND, "edit allocated {peak} bytes for a refused 2 GiB file");

    let patch = patch_tool(project.services());
    let text = "*** Begin Patch\n*** Update File: huge.txt\n@@\n-alpha\n+beta\n*** End Patch";
    let (result, peak) = peak_during(|| runtime.block_on(call(&patch, json!({"patchText": text}))));
    let error = result.unwrap_err();
    assert!(
        error.starts_with("Unable to apply patch at huge.txt: the file is 2 GiB"),
        "{error}"
    );
    assert!(
        peak < BOUND,
        "apply_patch allocated {peak} bytes for a refused 2 GiB file"
    );
    assert_eq!(
        std::fs::metadata(project.dir.path().join("huge.txt")).unwrap().len(),
        2 << 30
    );

    // `read` never reads it whole either (its zeros make it binary, seen in the first 64 KiB).
    let read = read_tool(project.services());
    let (page, peak) = peak_during(|| runtime.block_on(call(&read, json!({"path": "huge.txt", "limit": 1}))));
    assert_eq!(page.unwrap_err(), "Cannot read binary file: huge.txt");
    assert!(peak < BOUND, "read allocated {peak} bytes");

    // `write` replaces the whole content: it needs nothing of the old one but its BOM.
    sparse(&project, "bom.txt", "\u{feff}old", 2 << 30);
    let write = write_tool(project.services());
    let (result, peak) = peak_during(|| runtime.block_on(call(&write, json!({"path": "bom.txt", "content": "new\n"}))));
    assert_eq!(result.unwrap(), "Wrote file successfully: bom.txt");
    assert!(peak < BOUND, "write allocated {peak} bytes replacing a 2 GiB file");
    assert_eq!(project.read("bom.txt"), "\u{feff}new\n", "the BOM is kept");
}

#[test]
fn a_file_just_under_the_limit_is_still_edited() {
    let project = Project::new();
    let mut text = String::from("alpha\n");
    text.push_str(&"x".repeat((32 << 20) - text.len() - 1));
    text.push('\n');
    assert_eq!(text.len(), 32 << 20);
    project.write("big.txt", &text);
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let edit = edit_tool(project.services());
    let done = runtime.block_on(call(
        &edit,
        json!({"path": "big.txt", "oldString": "alpha", "newString": "beta"}),
    ));
    assert!(done.is_ok(), "{done:?}");
    assert!(project.read("big.txt").starts_with("beta\nxxx"));
    // One byte more is refused.
    std::fs::OpenOptions::new()
        .append(true)
        .open(project.dir.path().join("big.txt"))
        .and_then(|mut file| std::io::Write::write_all(&mut file, b"yy"))
        .unwrap();
    let error = runtime
        .block_on(call(
            &edit,
            json!({"path": "big.txt", "oldString": "beta", "newString": "gamma"}),
        ))
        .unwrap_err();
    assert!(
        error.contains("the file is 32.0 MiB, and edit, write and apply_patch read at most 32 MiB"),
        "{error}"
    );
}
