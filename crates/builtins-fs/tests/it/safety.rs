//! What the changing tools (write, edit, apply_patch; spec §5.3–§5.5) must never do: block
//! on or replace a special file, break a link, lose a mode or an owner, write a file the
//! caller may not write, or apply a patch to a file that changed under it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::time::Duration;

use serde_json::{Value, json};
use support::{Project, Recording, call};
use toolgate_builtins_fs::{edit_tool, patch_tool, read_tool, write_tool};
use toolgate_core::Tool;

/// Settles with a deadline: a call on a special file must answer, not hang.
async fn call_soon(tool: &Tool, input: Value) -> Result<String, String> {
    tokio::time::timeout(Duration::from_secs(20), call(tool, input))
        .await
        .expect("the call hung")
}

fn mkfifo(path: &std::path::Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o666),
        0,
    )
    .unwrap();
    assert!(std::fs::symlink_metadata(path).unwrap().file_type().is_fifo());
}

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn update(path: &str, old: &str, new: &str) -> String {
    format!("*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifos_and_sockets_are_refused_without_blocking() {
    let project = Project::new();
    let fifo = project.dir.path().join("pipe");
    mkfifo(&fifo);
    let socket_path = project.dir.path().join("sock");
    let _socket = std::os::unix::net::UnixListener::bind(&socket_path).unwrap();
    assert!(std::fs::symlink_metadata(&socket_path).unwrap().file_type().is_socket());
    let services = project.services();
    for name in ["pipe", "sock"] {
        let expected = format!("Unable to write {name}: not a regular file");
        let write = call_soon(&write_tool(services.clone()), json!({"path": name, "content": "x"})).await;
        assert_eq!(write.unwrap_err(), expected);
        let edit = call_soon(
            &edit_tool(services.clone()),
            json!({"path": name, "oldString": "a", "newString": "b"}),
        )
        .await;
        assert_eq!(edit.unwrap_err(), expected);
        let patch = call_soon(
            &patch_tool(services.clone()),
            json!({"patchText": update(name, "a", "b")}),
        )
        .await;
        assert_eq!(patch.unwrap_err(), expected);
        let add = format!("*** Begin Patch\n*** Add File: {name}\n+x\n*** End Patch");
        let patch = call_soon(&patch_tool(services.clone()), json!({"patchText": add})).await;
        assert_eq!(patch.unwrap_err(), expected);
        let read = call_soon(&read_tool(services.clone()), json!({"path": name})).await;
        assert_eq!(read.unwrap_err(), format!("Path is not a file: {name}"));
    }
    assert!(
        std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(),
        "still a FIFO"
    );
    assert!(std::fs::symlink_metadata(&socket_path).unwrap().file_type().is_socket());
    let leftovers: Vec<_> = std::fs::read_dir(project.dir.path())
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "no temporary file is left behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_are_never_replaced_or_read_whole() {
    // /dev/zero, approved as an external write: it stays the device, and edit does not try
    // to read its endless content.
    let project = Project::new();
    let services = project.services();
    let write = call_soon(
        &write_tool(services.clone()),
        json!({"path": "/dev/zero", "content": "x"}),
    )
    .await;
    assert_eq!(write.unwrap_err(), "Unable to write /dev/zero: not a regular file");
    let edit = call_soon(
        &edit_tool(services.clone()),
        json!({"path": "/dev/zero", "oldString": "a", "newString": "b"}),
    )
    .await;
    assert_eq!(edit.unwrap_err(), "Unable to write /dev/zero: not a regular file");
    assert!(std::fs::metadata("/dev/zero").unwrap().file_type().is_char_device());
    assert!(
        project
            .permissions
            .actions()
            .contains(&"external_directory".to_string()),
        "the write was approved, so only the file check stopped it"
    );
    // A character device made in the project (mknod needs root and a device-friendly mount).
    let device = project.dir.path().join("zero");
    let made = rustix::fs::mknodat(
        rustix::fs::CWD,
        &device,
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o666),
        rustix::fs::makedev(1, 5),
    );
    if let Err(error) = made {
        eprintln!("skipped the mknod half: cannot create a character device here ({error})");
        return;
    }
    let write = call_soon(&write_tool(services.clone()), json!({"path": "zero", "content": "x"})).await;
    assert_eq!(write.unwrap_err(), "Unable to write zero: not a regular file");
    let patch = call_soon(
        &patch_tool(services.clone()),
        json!({"patchText": update("zero", "a", "b")}),
    )
    .await;
    assert_eq!(patch.unwrap_err(), "Unable to write zero: not a regular file");
    assert!(std::fs::symlink_metadata(&device).unwrap().file_type().is_char_device());
}

#[tokio::test]
async fn symlinked_targets_are_written_through() {
    let project = Project::new();
    project.write("real.txt", "alpha\n");
    support::symlink(
        &project.dir.path().join("real.txt"),
        &project.dir.path().join("link.txt"),
    );
    let services = project.services();
    call(
        &edit_tool(services.clone()),
        json!({"path": "link.txt", "oldString": "alpha", "newString": "beta"}),
    )
    .await
    .unwrap();
    call(
        &patch_tool(services.clone()),
        json!({"patchText": update("link.txt", "beta", "gamma")}),
    )
    .await
    .unwrap();
    let link = project.dir.path().join("link.txt");
    assert!(
        std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(),
        "the link stays a link"
    );
    assert_eq!(project.read("real.txt"), "gamma\n");
    call(&write_tool(services), json!({"path": "link.txt", "content": "delta\n"}))
        .await
        .unwrap();
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(project.read("real.txt"), "delta\n");
}

#[tokio::test]
async fn hard_linked_files_are_updated_in_place() {
    let project = Project::new();
    project.write("a.txt", "one\ntwo\n");
    let a = project.dir.path().join("a.txt");
    let b = project.dir.path().join("b.txt");
    std::fs::hard_link(&a, &b).unwrap();
    let inode = std::fs::metadata(&a).unwrap().ino();
    let services = project.services();
    call(
        &edit_tool(services.clone()),
        json!({"path": "a.txt", "oldString": "one", "newString": "ONE"}),
    )
    .await
    .unwrap();
    call(
        &patch_tool(services.clone()),
        json!({"patchText": update("b.txt", "two", "TWO")}),
    )
    .await
    .unwrap();
    call(
        &write_tool(services.clone()),
        json!({"path": "a.txt", "content": "whole\n"}),
    )
    .await
    .unwrap();
    for path in [&a, &b] {
        let meta = std::fs::metadata(path).unwrap();
        assert_eq!(
            (meta.ino(), meta.nlink()),
            (inode, 2),
            "{} is still the same file",
            path.display()
        );
    }
    assert_eq!(project.read("b.txt"), "whole\n");
    // Both names in one patch are one file: refused rather than applied twice.
    let both = "*** Begin Patch\n*** Update File: a.txt\n@@\n-whole\n+x\n*** Update File: b.txt\n@@\n-whole\n+y\n*** End Patch";
    let error = call(&patch_tool(services), json!({"patchText": both}))
        .await
        .unwrap_err();
    assert!(error.contains("are the same file"), "{error}");
    assert_eq!(project.read("a.txt"), "whole\n");
}

#[tokio::test]
async fn modes_are_kept_and_moves_keep_theirs() {
    let project = Project::new();
    project.write("run.sh", "#!/bin/sh\necho one\n");
    project.write("private.txt", "secret\n");
    let run = project.dir.path().join("run.sh");
    std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(
        project.dir.path().join("private.txt"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    let services = project.services();
    call(
        &edit_tool(services.clone()),
        json!({"path": "run.sh", "oldString": "one", "newString": "two"}),
    )
    .await
    .unwrap();
    assert_eq!(mode(&run), 0o755);
    call(
        &write_tool(services.clone()),
        json!({"path": "private.txt", "content": "other\n"}),
    )
    .await
    .unwrap();
    assert_eq!(mode(&project.dir.path().join("private.txt")), 0o640);
    let moved =
        "*** Begin Patch\n*** Update File: run.sh\n*** Move to: bin/run.sh\n@@\n-echo two\n+echo three\n*** End Patch";
    call(&patch_tool(services), json!({"patchText": moved})).await.unwrap();
    assert!(!run.exists());
    assert_eq!(
        mode(&project.dir.path().join("bin/run.sh")),
        0o755,
        "the move keeps the mode"
    );
    assert_eq!(project.read("bin/run.sh"), "#!/bin/sh\necho three\n");
}

#[tokio::test]
async fn owner_and_group_are_kept_when_the_process_may() {
    let project = Project::new();
    project.write("theirs.txt", "a\n");
    let path = project.dir.path().join("theirs.txt");
    if std::os::unix::fs::chown(&path, Some(65534), Some(65534)).is_err() {
        eprintln!("skipped: only root can give a file to another user");
        return;
    }
    call(
        &edit_tool(project.services()),
        json!({"path": "theirs.txt", "oldString": "a", "newString": "b"}),
    )
    .await
    .unwrap();
    let meta = std::fs::metadata(&path).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (65534, 65534));
    assert_eq!(project.read("theirs.txt"), "b\n");
}

#[tokio::test]
async fn a_file_the_caller_may_not_write_is_refused_with_the_os_error() {
    let project = Project::new();
    project.write("locked.txt", "keep\n");
    let path = project.dir.path().join("locked.txt");
    // Root may write a 0444 file (as with any editor); the immutable flag stops even root.
    let is_root = rustix::process::geteuid().is_root();
    type Action = Box<dyn Fn()>;
    let (lock, unlock): (Action, Action) = if is_root {
        let flag = |flag: &'static str, path: std::path::PathBuf| {
            move || {
                let status = std::process::Command::new("chattr").arg(flag).arg(&path).status();
                assert!(status.is_ok_and(|s| s.success()), "chattr {flag} is needed as root");
            }
        };
        (Box::new(flag("+i", path.clone())), Box::new(flag("-i", path.clone())))
    } else {
        let set = |mode: u32, path: std::path::PathBuf| {
            move || std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        (Box::new(set(0o444, path.clone())), Box::new(set(0o644, path.clone())))
    };
    lock();
    let services = project.services();
    let edit = call(
        &edit_tool(services.clone()),
        json!({"path": "locked.txt", "oldString": "keep", "newString": "lost"}),
    )
    .await;
    let write = call(
        &write_tool(services.clone()),
        json!({"path": "locked.txt", "content": "lost"}),
    )
    .await;
    let patch = call(
        &patch_tool(services),
        json!({"patchText": update("locked.txt", "keep", "lost")}),
    )
    .await;
    unlock();
    let os_error = if is_root {
        "Operation not permitted (os error 1)"
    } else {
        "Permission denied (os error 13)"
    };
    assert_eq!(edit.unwrap_err(), format!("Unable to edit locked.txt: {os_error}"));
    assert_eq!(write.unwrap_err(), format!("Unable to write locked.txt: {os_error}"));
    let patch = patch.unwrap_err();
    assert!(
        patch.contains(os_error) && patch.contains("Nothing was applied"),
        "{patch}"
    );
    assert_eq!(project.read("locked.txt"), "keep\n");
}

/// A permission service that lets another writer change the project while the person
/// looks at the prompt (the moment a patch's plan goes stale).
fn changing_during_approval(project: Project, change: impl Fn(&std::path::Path) + Send + Sync + 'static) -> Project {
    let root = project.dir.path().to_path_buf();
    let done = std::sync::atomic::AtomicBool::new(false);
    let permissions = Recording::new(move |request| {
        if request.action == "edit" && !done.swap(true, std::sync::atomic::Ordering::SeqCst) {
            change(&root);
        }
        Ok(())
    });
    Project {
        dir: project.dir,
        outside: project.outside,
        permissions,
    }
}

#[tokio::test]
async fn a_patch_on_a_file_changed_since_approval_is_recomputed_when_unambiguous() {
    let project = Project::new();
    project.write("a.txt", "header\nalpha\nbeta\n");
    let project = changing_during_approval(project, |root| {
        std::fs::write(root.join("a.txt"), "new first line\nheader\nalpha\nbeta\n").unwrap();
    });
    call(
        &patch_tool(project.services()),
        json!({"patchText": update("a.txt", "alpha", "ALPHA")}),
    )
    .await
    .unwrap();
    assert_eq!(
        project.read("a.txt"),
        "new first line\nheader\nALPHA\nbeta\n",
        "both changes are kept"
    );
}

#[tokio::test]
async fn a_patch_whose_lines_changed_or_became_ambiguous_fails_and_keeps_the_other_writer() {
    for (other, why) in [
        ("header\nALPHA by someone else\nbeta\n", "its lines were changed"),
        ("header\nalpha\nalpha\nbeta\n", "its lines now occur twice"),
    ] {
        let project = Project::new();
        project.write("a.txt", "header\nalpha\nbeta\n");
        let project = changing_during_approval(project, move |root| {
            std::fs::write(root.join("a.txt"), other).unwrap();
        });
        let error = call(
            &patch_tool(project.services()),
            json!({"patchText": update("a.txt", "alpha", "mine")}),
        )
        .await
        .unwrap_err();
        assert!(
            error.starts_with("File changed since it was read: a.txt; read it again"),
            "{why}: {error}"
        );
        assert_eq!(project.read("a.txt"), other, "{why}: the other writer's content stays");
    }
}

#[tokio::test]
async fn a_patch_adding_a_file_someone_created_meanwhile_fails_whole() {
    let project = Project::new();
    project.write("b.txt", "b\n");
    let project = changing_during_approval(project, |root| {
        std::fs::write(root.join("new.txt"), "theirs\n").unwrap();
    });
    let patch = "*** Begin Patch\n*** Update File: b.txt\n@@\n-b\n+B\n*** Add File: new.txt\n+mine\n*** End Patch";
    let error = call(&patch_tool(project.services()), json!({"patchText": patch}))
        .await
        .unwrap_err();
    assert_eq!(error, "File changed since it was read: new.txt; read it again");
    assert_eq!(project.read("new.txt"), "theirs\n");
    assert_eq!(project.read("b.txt"), "b\n", "all or nothing");
}

#[tokio::test]
async fn a_patch_deleting_a_file_changed_meanwhile_fails() {
    let project = Project::new();
    project.write("old.txt", "old\n");
    let project = changing_during_approval(project, |root| {
        std::fs::write(root.join("old.txt"), "old\nplus an important line\n").unwrap();
    });
    let patch = "*** Begin Patch\n*** Delete File: old.txt\n*** End Patch";
    let error = call(&patch_tool(project.services()), json!({"patchText": patch}))
        .await
        .unwrap_err();
    assert_eq!(error, "File changed since it was read: old.txt; read it again");
    assert_eq!(project.read("old.txt"), "old\nplus an important line\n");
}

#[tokio::test]
async fn new_files_and_added_files_follow_the_umask_not_0600() {
    // The umask is the process's: compare with what this process would create itself.
    let project = Project::new();
    let services = project.services();
    call(&write_tool(services.clone()), json!({"path": "w.txt", "content": "x"}))
        .await
        .unwrap();
    let add = "*** Begin Patch\n*** Add File: p.txt\n+x\n*** End Patch";
    call(&patch_tool(services), json!({"patchText": add})).await.unwrap();
    std::fs::write(project.dir.path().join("reference.txt"), "x").unwrap();
    let expected = mode(&project.dir.path().join("reference.txt"));
    assert_ne!(expected, 0o600, "this test needs a umask other than 077");
    assert_eq!(mode(&project.dir.path().join("w.txt")), expected);
    assert_eq!(mode(&project.dir.path().join("p.txt")), expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_to_special_files_are_refused_and_stay_links() {
    // Links in the project to a FIFO, to a character device in the project (when mknod is
    // allowed) and to /dev/zero: the link is resolved and what it names refused, without
    // blocking on the FIFO or reading the device. The link out of the project is refused
    // before that, by containment.
    let project = Project::new();
    let fifo = project.dir.path().join("pipe");
    mkfifo(&fifo);
    support::symlink(&fifo, &project.dir.path().join("to-pipe"));
    support::symlink(std::path::Path::new("/dev/zero"), &project.dir.path().join("to-zero"));
    let device = project.dir.path().join("zero");
    let mut links = vec![
        ("to-pipe", "not a regular file"),
        ("to-zero", "Path leaves the working directory"),
    ];
    let made = rustix::fs::mknodat(
        rustix::fs::CWD,
        &device,
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o666),
        rustix::fs::makedev(1, 5),
    );
    match made {
        Ok(()) => {
            support::symlink(&device, &project.dir.path().join("to-device"));
            links.push(("to-device", "not a regular file"));
        }
        Err(error) => eprintln!("no link to a device in the project: cannot mknod here ({error})"),
    }
    let services = project.services();
    for (name, refusal) in links {
        let write = call_soon(&write_tool(services.clone()), json!({"path": name, "content": "x"})).await;
        let error = write.unwrap_err();
        assert!(error.contains(refusal), "{name}: {error}");
        let edit = call_soon(
            &edit_tool(services.clone()),
            json!({"path": name, "oldString": "a", "newString": "b"}),
        )
        .await;
        let error = edit.unwrap_err();
        assert!(error.contains(refusal), "{name}: {error}");
        let patch = call_soon(
            &patch_tool(services.clone()),
            json!({"patchText": update(name, "a", "b")}),
        )
        .await;
        let error = patch.unwrap_err();
        assert!(error.contains(refusal), "{name}: {error}");
        let link = project.dir.path().join(name);
        assert!(
            std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(),
            "{name} stays a link"
        );
    }
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert!(std::fs::metadata("/dev/zero").unwrap().file_type().is_char_device());
    if device.exists() {
        assert!(std::fs::symlink_metadata(&device).unwrap().file_type().is_char_device());
    }
}
