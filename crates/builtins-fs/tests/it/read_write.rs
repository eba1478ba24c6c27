//! read (spec §5.2) and write (§5.3).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use serde_json::json;
use support::{Project, Recording, call};
use toolgate_builtins_fs::{read_tool, write_tool};
use toolgate_core::{Context, ModelResult, Refusal};

#[tokio::test]
async fn reads_pages_with_line_numbers_and_continuation() {
    let project = Project::new();
    let text: String = (1..=3000).map(|n| format!("line {n}\n")).collect();
    project.write("big.txt", &text);
    let read = read_tool(project.services());
    let first = call(&read, json!({"path": "big.txt"})).await.unwrap();
    assert!(
        first.starts_with("Read file big.txt, lines 1-2000\n1: line 1\n"),
        "{}",
        &first[..60]
    );
    assert!(first.ends_with("2000: line 2000\n[Output truncated. Continue reading with offset: 2001]"));
    let rest = call(&read, json!({"path": "big.txt", "offset": 2001})).await.unwrap();
    assert!(rest.starts_with("Read file big.txt, lines 2001-3000\n2001: line 2001"));
    assert!(
        rest.ends_with("3000: line 3000"),
        "the last page has no continuation line"
    );
    let middle = call(&read, json!({"path": "big.txt", "offset": 10, "limit": 2}))
        .await
        .unwrap();
    assert_eq!(
        middle,
        "Read file big.txt, lines 10-11\n10: line 10\n11: line 11\n[Output truncated. Continue reading with offset: 12]"
    );
    assert_eq!(
        call(&read, json!({"path": "big.txt", "offset": 3001}))
            .await
            .unwrap_err(),
        "Offset 3001 is out of range"
    );
    assert!(
        call(&read, json!({"path": "big.txt", "offset": 0}))
            .await
            .unwrap_err()
            .contains("1-based")
    );
    assert!(
        call(&read, json!({"path": "big.txt", "limit": 2001}))
            .await
            .unwrap_err()
            .contains("limit")
    );
    let asked = project.permissions.requests();
    assert_eq!(
        (asked[0].action.as_str(), asked[0].save.clone()),
        ("read", vec!["*".to_string()])
    );
}

#[tokio::test]
async fn pages_stop_at_50_kb_and_long_lines_are_cut() {
    let project = Project::new();
    let wide = "é".repeat(5000);
    project.write("wide.txt", &format!("{wide}\nshort\n"));
    let read = read_tool(project.services());
    // Spec §5.2: a file of at most 50 KB read without offset or limit is not paged: whole.
    let text = call(&read, json!({"path": "wide.txt"})).await.unwrap();
    assert_eq!(text, format!("Read file wide.txt, lines 1-2\n1: {wide}\n2: short"));
    // Paged (an offset or a limit, or a larger file): long lines are cut.
    let cut = format!("1: {}... (line truncated to 2000 chars)", "é".repeat(2000));
    let text = call(&read, json!({"path": "wide.txt", "offset": 1})).await.unwrap();
    assert_eq!(text.lines().nth(1).unwrap(), cut);
    project.write("big.txt", &format!("{wide}\n{}", "x\n".repeat(30_000)));
    let text = call(&read, json!({"path": "big.txt"})).await.unwrap();
    assert_eq!(text.lines().nth(1).unwrap(), cut);
    let lines: String = (0..1000).map(|_| format!("{}\n", "x".repeat(100))).collect();
    project.write("many.txt", &lines);
    let text = call(&read, json!({"path": "many.txt"})).await.unwrap();
    assert!(text.len() < 60_000);
    assert!(
        text.contains("[Output truncated. Continue reading with offset: "),
        "stopped by bytes, not lines"
    );
    // A small file with a long line and many short ones: the line is whole, the page
    // still stops at 2000 lines.
    project.write("short.txt", &format!("{wide}\n{}", "y\n".repeat(3000)));
    let text = call(&read, json!({"path": "short.txt"})).await.unwrap();
    assert!(text.starts_with(&format!("Read file short.txt, lines 1-2000\n1: {wide}\n")));
    assert!(text.ends_with("[Output truncated. Continue reading with offset: 2001]"));
}

#[tokio::test]
async fn crlf_empty_and_unicode() {
    let project = Project::new();
    project.write("crlf.txt", "a\r\nb\r\n");
    project.write("empty.txt", "");
    let read = read_tool(project.services());
    assert_eq!(
        call(&read, json!({"path": "crlf.txt"})).await.unwrap(),
        "Read file crlf.txt, lines 1-2\n1: a\n2: b"
    );
    assert_eq!(
        call(&read, json!({"path": "empty.txt"})).await.unwrap(),
        "Read file empty.txt, 0 lines"
    );
    std::fs::write(project.dir.path().join("bad.txt"), b"ok\n\xff\xfe\n").unwrap();
    assert_eq!(
        call(&read, json!({"path": "bad.txt"})).await.unwrap_err(),
        "File is not valid UTF-8: bad.txt"
    );
}

#[tokio::test]
async fn binaries_are_refused_and_images_are_media() {
    let project = Project::new();
    std::fs::write(project.dir.path().join("a.bin"), b"\x00\x01\x02").unwrap();
    std::fs::write(project.dir.path().join("lib.so"), b"text").unwrap();
    let read = read_tool(project.services());
    assert_eq!(
        call(&read, json!({"path": "a.bin"})).await.unwrap_err(),
        "Cannot read binary file: a.bin"
    );
    assert_eq!(
        call(&read, json!({"path": "lib.so"})).await.unwrap_err(),
        "Cannot read binary file: lib.so"
    );
    let image = image::RgbImage::from_pixel(3000, 1500, image::Rgb([200, 10, 10]));
    image.save(project.dir.path().join("wide.png")).unwrap();
    let output = read
        .settle(json!({"path": "wide.png"}), Context::default())
        .await
        .unwrap()
        .unwrap();
    let ModelResult::Content(parts) = ModelResult::from_output(&output) else {
        panic!()
    };
    assert_eq!(parts[0].as_text(), Some("Image read successfully"));
    let toolgate_core::Content::Media { mime, data, .. } = &parts[1] else {
        panic!()
    };
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD.decode(data).unwrap();
    let decoded = image::load_from_memory(&bytes).unwrap();
    assert_eq!(
        (decoded.width(), decoded.height()),
        (2000, 1000),
        "shrunk to fit 2000×2000"
    );
    assert_eq!(mime, "image/png");
    std::fs::write(project.dir.path().join("broken.png"), b"\x89PNG\r\n\x1a\nnot really").unwrap();
    assert_eq!(
        call(&read, json!({"path": "broken.png"})).await.unwrap_err(),
        "Image could not be decoded: broken.png"
    );
    std::fs::write(project.dir.path().join("doc.pdf"), b"%PDF-1.4 fake").unwrap();
    let output = read
        .settle(json!({"path": "doc.pdf"}), Context::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(output.content[0].as_text(), Some("PDF read successfully"));
}

#[tokio::test]
async fn directories_list_dirs_first_and_page() {
    let project = Project::new();
    project.write("b.txt", "");
    project.write("A.txt", "");
    project.write("sub/x.txt", "");
    project.write("zdir/y.txt", "");
    support::symlink(&project.outside_root(), &project.dir.path().join("escape"));
    support::symlink(&project.dir.path().join("b.txt"), &project.dir.path().join("link.txt"));
    let read = read_tool(project.services());
    let text = call(&read, json!({"path": "."})).await.unwrap();
    assert_eq!(
        text,
        "Read directory ., entries 1-5\nsub/\nzdir/\nA.txt\nb.txt\nlink.txt"
    );
    let page = call(&read, json!({"path": ".", "offset": 2, "limit": 2}))
        .await
        .unwrap();
    assert_eq!(
        page,
        "Read directory ., entries 2-3\nzdir/\nA.txt\n[Output truncated. Continue reading with offset: 4]"
    );
}

#[tokio::test]
async fn missing_files_suggest_and_recover_lookalike_names() {
    let project = Project::new();
    project.write("config.toml", "");
    project.write("config.local.toml", "");
    project.write("caf\u{e9}\u{a0}menu.txt", "menu\n");
    let read = read_tool(project.services());
    let error = call(&read, json!({"path": "config"})).await.unwrap_err();
    assert!(
        error.starts_with("File not found: config\n\nDid you mean one of these?\n"),
        "{error}"
    );
    assert!(
        error.contains("config.local.toml") && error.contains("config.toml"),
        "{error}"
    );
    // NFD "é" and a plain space: the NFC, no-break-space name is found.
    let text = call(&read, json!({"path": "cafe\u{301} menu.txt"})).await.unwrap();
    assert!(text.ends_with("1: menu"), "{text}");
}

#[tokio::test]
async fn a_refused_read_reveals_nothing() {
    let project = Project::with(Recording::new(|_| Err(Refusal::declined())));
    project.write(".env", "SECRET=1");
    let error = call(&read_tool(project.services()), json!({"path": ".env"}))
        .await
        .unwrap_err();
    assert_eq!(error, "Unable to read .env");
    let missing = call(&read_tool(project.services()), json!({"path": "nope"}))
        .await
        .unwrap_err();
    assert_eq!(missing, "Unable to read nope", "not even whether the file exists");
}

#[tokio::test]
async fn write_creates_replaces_and_keeps_bom_and_mode() {
    let project = Project::new();
    let write = write_tool(project.services());
    assert_eq!(write.permission_action("write"), "edit");
    assert_eq!(
        call(&write, json!({"path": "deep/new/file.txt", "content": "hi\n"}))
            .await
            .unwrap(),
        "Created file successfully: deep/new/file.txt"
    );
    assert_eq!(project.read("deep/new/file.txt"), "hi\n");
    project.write("bom.txt", "\u{feff}old");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        project.dir.path().join("bom.txt"),
        std::fs::Permissions::from_mode(0o750),
    )
    .unwrap();
    assert_eq!(
        call(&write, json!({"path": "bom.txt", "content": "new"}))
            .await
            .unwrap(),
        "Wrote file successfully: bom.txt"
    );
    assert_eq!(project.read("bom.txt"), "\u{feff}new");
    let mode = std::fs::metadata(project.dir.path().join("bom.txt"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o750);
    let leftovers: Vec<_> = std::fs::read_dir(project.dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
    let asked = project.permissions.requests();
    assert_eq!(
        (asked[0].action.as_str(), asked[0].save.clone()),
        ("edit", vec!["*".to_string()])
    );
}

#[tokio::test]
async fn concurrent_writes_never_interleave() {
    let project = Project::new();
    let services = project.services();
    let mut tasks = Vec::new();
    for n in 0..16 {
        let write = write_tool(services.clone());
        tasks.push(tokio::spawn(async move {
            call(
                &write,
                json!({"path": "shared.txt", "content": format!("{n}\n").repeat(50_000)}),
            )
            .await
            .unwrap();
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let content = project.read("shared.txt");
    let first = content.lines().next().unwrap().to_string();
    assert!(content.lines().all(|line| line == first));
    assert_eq!(content.lines().count(), 50_000);
}

#[tokio::test]
async fn suggestions_are_spelled_as_the_path_was_given_and_listings_skip_special_files() {
    let project = Project::new();
    project.write("src/config.toml", "");
    let read = read_tool(project.services());
    let error = call(&read, json!({"path": "src/config"})).await.unwrap_err();
    assert_eq!(
        error,
        "File not found: src/config\n\nDid you mean one of these?\nsrc/config.toml"
    );
    let absolute = project.root().join("src/config");
    let error = call(&read, json!({"path": absolute.to_str().unwrap()}))
        .await
        .unwrap_err();
    assert!(
        error.ends_with(&format!("\n{}", project.root().join("src/config.toml").display())),
        "{error}"
    );
    rustix::fs::mknodat(
        rustix::fs::CWD,
        project.dir.path().join("src/pipe"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(project.dir.path().join("src/sock")).unwrap();
    let listing = call(&read, json!({"path": "src"})).await.unwrap();
    assert_eq!(listing, "Read directory src, entries 1-1\nconfig.toml");
}

/// A small text file is read on the caller's task, so it is answered even while every
/// blocking thread is taken (by reads of big files, say); a big file and a directory
/// still go to the blocking threads and are answered once one is free.
#[test]
fn a_small_read_is_answered_while_the_blocking_threads_are_busy() {
    let project = Project::new();
    project.write("small.txt", "one line\n");
    let big: String = (1..=20_000).map(|n| format!("line {n}\n")).collect();
    project.write("big.txt", &big);
    std::fs::create_dir(project.root().join("dir")).unwrap();
    project.write("dir/inside.txt", "x\n");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let read = read_tool(project.services());
    runtime.block_on(async {
        let (release, held) = std::sync::mpsc::channel::<()>();
        let (started, running) = std::sync::mpsc::channel::<()>();
        let blocker = tokio::task::spawn_blocking(move || {
            let _ = started.send(());
            let _ = held.recv();
        });
        // Precondition: the one blocking thread is taken.
        running.recv().unwrap();
        let small = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            call(&read, json!({"path": "small.txt"})),
        )
        .await;
        assert_eq!(
            small.expect("the small read waited for a blocking thread").unwrap(),
            "Read file small.txt, lines 1-1\n1: one line"
        );
        let big = tokio::spawn({
            let read = read.clone();
            async move { call(&read, json!({"path": "big.txt", "offset": 19_999})).await }
        });
        let dir = tokio::spawn({
            let read = read.clone();
            async move { call(&read, json!({"path": "dir"})).await }
        });
        release.send(()).unwrap();
        blocker.await.unwrap();
        let big = big.await.unwrap().unwrap();
        assert!(big.ends_with("20000: line 20000"), "{big}");
        let dir = dir.await.unwrap().unwrap();
        assert!(dir.contains("inside.txt"), "{dir}");
    });
}
