//! The project's own files the sandbox must keep out of a command's reach: what git runs
//! code from (so a command cannot plant code the person's next `git` runs outside the
//! sandbox), and the file mounted over hidden files.

use std::path::{Path, PathBuf};

/// How many directory entries the search for git's code paths may visit per command.
const GIT_BUDGET: usize = 2000;

/// What git runs code from, or follows to find where it runs code from, in the project's
/// repository and its submodules' (under `.git/modules`): the hooks directory, the config
/// (`core.fsmonitor`, `core.pager`, aliases, filters, `core.hooksPath`…), a hooks
/// directory that `core.hooksPath` puts inside the project (husky's `.husky/_`), the
/// files that send git to another git directory (`commondir`, a linked worktree's
/// `gitdir`, a worktree's `.git` file), `config.worktree`, and `.gitmodules`. A command
/// that wrote any of them would run code outside the sandbox the next time the person
/// runs git, so the existing ones stay read-only even though the rest of `.git` (objects,
/// index, refs) is writable; [`GitWatch`] undoes the ones a command creates.
pub fn git_code_paths(project: &Path) -> Vec<PathBuf> {
    let dot_git = project.join(".git");
    let mut found = Vec::new();
    // Not through symlinks: a link elsewhere is someone else's tree.
    let meta = std::fs::symlink_metadata(&dot_git).ok();
    let git = match meta {
        Some(meta) if meta.is_dir() => dot_git.clone(),
        Some(meta) if meta.is_file() => {
            // A linked worktree or a submodule's checkout: `.git` names the git directory.
            found.push(dot_git.clone());
            match gitdir_of(&dot_git, project) {
                Some(dir) => dir,
                None => return found,
            }
        }
        _ => return found,
    };
    let exists = |path: &Path| std::fs::symlink_metadata(path).is_ok();
    if exists(&project.join(".gitmodules")) {
        found.push(project.join(".gitmodules"));
    }
    let mut budget = GIT_BUDGET;
    let mut pending = vec![git.clone()];
    let mut seen = Vec::new();
    while let Some(dir) = pending.pop() {
        if seen.contains(&dir) {
            continue;
        }
        seen.push(dir.clone());
        if dir.join("HEAD").is_file() {
            found.push(dir.join("hooks"));
            let config = dir.join("config");
            if dir == git
                && let Ok(text) = std::fs::read_to_string(&config)
                && let Some(hooks) = hooks_path(&text)
            {
                // Relative to the top of the working tree, where hooks run.
                found.push(project.join(hooks));
            }
            found.push(config);
            // Only where they exist: a missing one cannot be mounted over (GitWatch
            // undoes a new one).
            for file in ["commondir", "config.worktree", "gitdir"] {
                if exists(&dir.join(file)) {
                    found.push(dir.join(file));
                }
            }
            // A linked worktree's git directory shares the main one's config and hooks.
            if let Ok(common) = std::fs::read_to_string(dir.join("commondir")) {
                let common = dir.join(common.trim());
                if let Ok(common) = std::fs::canonicalize(common) {
                    pending.push(common);
                }
            }
        }
        // The main repository's submodules live under `.git/modules`, theirs under
        // `modules` of their own git directory (or deeper, for names with slashes); a
        // repository's linked worktrees under `worktrees`.
        let mut children = vec![dir.join("worktrees")];
        children.push(if dir == git { git.join("modules") } else { dir.clone() });
        for children in children {
            let Ok(entries) = std::fs::read_dir(&children) else {
                continue;
            };
            for entry in entries.flatten() {
                let Some(left) = budget.checked_sub(1) else {
                    return found;
                };
                budget = left;
                let skip = matches!(
                    entry.file_name().to_str(),
                    Some("objects" | "refs" | "logs" | "hooks" | "info" | "lfs")
                );
                if !skip && entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                    pending.push(entry.path());
                }
            }
        }
    }
    found
}

/// The git directory a `.git` file names (`gitdir: PATH`, relative to the file).
fn gitdir_of(file: &Path, project: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find_map(|line| line.strip_prefix("gitdir:"))?.trim();
    std::fs::canonicalize(project.join(line)).ok()
}

/// What git would follow to code that a command may create where nothing is (a new file
/// is not protected by a read-only mount), watched across one command: created ones are
/// moved aside afterwards, with a note. `commondir` in the git directory (it would send
/// git to another config and hooks), and a repository the command made and staged as a
/// submodule (git descends into it, and runs what its config says).
#[derive(Debug)]
pub struct GitWatch {
    git: Option<PathBuf>,
    project: PathBuf,
    index: Option<(u64, i64, i64)>,
    absent: Vec<PathBuf>,
    started: std::time::SystemTime,
}

impl GitWatch {
    /// Notes the state before a command runs in `project`.
    pub fn before(project: &Path) -> GitWatch {
        let dot_git = project.join(".git");
        let git = match std::fs::symlink_metadata(&dot_git) {
            Ok(meta) if meta.is_dir() => Some(dot_git),
            Ok(meta) if meta.is_file() => gitdir_of(&dot_git, project),
            _ => None,
        };
        let absent = git
            .iter()
            .flat_map(|git| ["commondir", "config.worktree"].map(|file| git.join(file)))
            .chain(std::iter::once(project.join(".gitmodules")))
            .filter(|path| std::fs::symlink_metadata(path).is_err())
            .collect();
        GitWatch {
            index: git.as_ref().and_then(|git| stamp(&git.join("index"))),
            git,
            project: project.to_path_buf(),
            absent,
            started: std::time::SystemTime::now(),
        }
    }

    /// After the command: moves aside what it created that git would follow to code, and
    /// says so (one line each).
    pub fn after(self) -> Vec<String> {
        let mut notes = Vec::new();
        let mut quarantine = |path: &Path, why: &str| {
            let aside = aside(path);
            match std::fs::rename(path, &aside) {
                Ok(()) => notes.push(format!(
                    "sandbox: the command created {}, which {why}; toolgate moved it to {} (ask the user if it is meant)",
                    path.display(),
                    aside.display()
                )),
                Err(error) => notes.push(format!(
                    "sandbox: the command created {}, which {why}, and toolgate could not move it aside ({error}): \
                     tell the user before they run git here",
                    path.display()
                )),
            }
        };
        for path in &self.absent {
            if std::fs::symlink_metadata(path).is_ok() {
                let why = if path.ends_with(".gitmodules") {
                    "registers submodules git would enter"
                } else {
                    "would make git read another config and hooks"
                };
                quarantine(path, why);
            }
        }
        // The index changed: a submodule staged whose repository the command made.
        if let Some(git) = &self.git
            && stamp(&git.join("index")) != self.index
        {
            for path in gitlinks(&git.join("index")).unwrap_or_default() {
                let nested = self.project.join(&path).join(".git");
                let made = std::fs::symlink_metadata(&nested)
                    .and_then(|meta| meta.modified())
                    .is_ok_and(|modified| modified >= self.started);
                if made {
                    quarantine(
                        &nested,
                        "is a repository staged as a submodule, whose config git would run",
                    );
                }
            }
        }
        notes
    }
}

fn aside(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    path.with_file_name(format!("{name}.toolgate-moved-{stamp}"))
}

/// Size and modification time, to tell whether a file changed.
fn stamp(path: &Path) -> Option<(u64, i64, i64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.mtime(), meta.mtime_nsec()))
}

/// The paths of the gitlink (submodule) entries of a git index (versions 2 to 4).
fn gitlinks(index: &Path) -> Option<Vec<String>> {
    const MAX_INDEX: u64 = 256 * 1024 * 1024;
    if std::fs::metadata(index).ok()?.len() > MAX_INDEX {
        return None;
    }
    let data = std::fs::read(index).ok()?;
    let word = |at: usize| -> Option<u32> { Some(u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?)) };
    if data.get(..4)? != b"DIRC" {
        return None;
    }
    let version = word(4)?;
    let count = word(8)?;
    let mut at = 12;
    let mut previous: Vec<u8> = Vec::new();
    let mut found = Vec::new();
    for _ in 0..count {
        let mode = word(at + 24)?;
        let flags = u16::from_be_bytes(data.get(at + 60..at + 62)?.try_into().ok()?);
        let mut name_at = at + 62;
        if version >= 3 && flags & 0x4000 != 0 {
            name_at += 2;
        }
        let name: Vec<u8>;
        let next;
        if version == 4 {
            // A varint: how many bytes of the previous name to drop, then a NUL-ended suffix.
            let mut drop = 0usize;
            let mut i = name_at;
            loop {
                let byte = *data.get(i)?;
                i += 1;
                drop = (drop << 7) | usize::from(byte & 0x7f);
                if byte & 0x80 == 0 {
                    break;
                }
                drop += 1;
            }
            let end = i + data.get(i..)?.iter().position(|b| *b == 0)?;
            let keep = previous.len().checked_sub(drop)?;
            let mut full = previous[..keep].to_vec();
            full.extend_from_slice(&data[i..end]);
            name = full;
            next = end + 1;
        } else {
            let end = name_at + data.get(name_at..)?.iter().position(|b| *b == 0)?;
            name = data[name_at..end].to_vec();
            // Entries are padded with NULs to a multiple of eight bytes.
            let len = end - at;
            next = at + (len / 8 + 1) * 8;
        }
        if mode & 0o170000 == 0o160000 {
            found.push(String::from_utf8_lossy(&name).into_owned());
        }
        previous = name;
        at = next;
    }
    Some(found)
}

/// `core.hooksPath` as a config file sets it (the last one wins), if it does.
fn hooks_path(config: &str) -> Option<String> {
    let mut section = String::new();
    let mut value = None;
    for line in config.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            section = header.trim_end_matches(']').trim().to_ascii_lowercase();
            continue;
        }
        if section != "core" {
            continue;
        }
        if let Some((key, rest)) = line.split_once('=')
            && key.trim().eq_ignore_ascii_case("hookspath")
        {
            value = Some(rest.trim().trim_matches('"').to_string());
        }
    }
    value.filter(|path| !path.is_empty())
}

/// `<data>/sandbox/mask.sock`: what is mounted over hidden files, a Unix socket no one
/// listens on, mode 000 (`open` fails for everyone, root included; searches skip it).
#[cfg(target_os = "linux")]
pub fn mask_file(data: &Path) -> Result<PathBuf, crate::SandboxError> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
    let dir = data.join("sandbox");
    let file = dir.join("mask.sock");
    let uid = rustix::process::geteuid().as_raw();
    let good = |file: &Path| {
        std::fs::symlink_metadata(file).is_ok_and(|meta| {
            meta.file_type().is_socket() && meta.permissions().mode() & 0o777 == 0 && meta.uid() == uid
        })
    };
    if good(&file) {
        return Ok(file);
    }
    std::fs::create_dir_all(&dir).map_err(|source| crate::SandboxError::Step {
        step: format!("cannot create {}", dir.display()),
        source,
    })?;
    // Made under a name of its own and renamed into place, so that concurrent calls (and
    // processes) only ever see a finished one.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let temp = dir.join(format!(
        ".mask.{}.{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let _ = std::fs::remove_file(&temp);
    let made = std::os::unix::net::UnixListener::bind(&temp)
        .map(drop)
        .and_then(|()| std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(0o000)))
        .and_then(|()| std::fs::rename(&temp, &file));
    if let Err(source) = made {
        let _ = std::fs::remove_file(&temp);
        return Err(crate::SandboxError::Step {
            step: format!("cannot create {}", file.display()),
            source,
        });
    }
    if !good(&file) {
        return Err(crate::SandboxError::Step {
            step: format!("cannot use {}", file.display()),
            source: std::io::Error::other("not a socket of this user with mode 000"),
        });
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn the_mask_socket_is_made_once_whoever_asks_at_the_same_time() {
        use std::os::unix::fs::{FileTypeExt, PermissionsExt};
        let data = tempfile::tempdir().unwrap();
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let data = data.path().to_path_buf();
                std::thread::spawn(move || mask_file(&data))
            })
            .collect();
        for thread in threads {
            let file = thread.join().unwrap().unwrap();
            let meta = std::fs::symlink_metadata(&file).unwrap();
            assert!(meta.file_type().is_socket());
            assert_eq!(meta.permissions().mode() & 0o777, 0);
        }
        // Nothing half-made is left behind, and a file in its place is replaced.
        let entries: Vec<_> = std::fs::read_dir(data.path().join("sandbox")).unwrap().collect();
        assert_eq!(entries.len(), 1);
        let file = data.path().join("sandbox/mask.sock");
        std::fs::remove_file(&file).unwrap();
        std::fs::write(&file, "not a socket").unwrap();
        assert_eq!(mask_file(data.path()).unwrap(), file);
        assert!(std::fs::symlink_metadata(&file).unwrap().file_type().is_socket());
    }

    #[test]
    fn git_code_paths_cover_hooks_config_hooks_path_and_submodules() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (file, text) in [
            (".git/HEAD", "ref: refs/heads/main\n"),
            (
                ".git/config",
                "[core]\n\tbare = false\n[Core]\n  hooksPath = \".husky/_\"\n",
            ),
            (".git/objects/ab/HEAD", "not a git dir\n"),
            (".git/modules/lib/HEAD", "x\n"),
            (".git/modules/lib/config", "x\n"),
            (".git/modules/lib/modules/deep/HEAD", "x\n"),
            (".git/modules/path/to/sub/HEAD", "x\n"),
        ] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
        }
        let mut found: Vec<String> = git_code_paths(root)
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().display().to_string())
            .collect();
        found.sort();
        assert_eq!(
            found,
            [
                ".git/config",
                ".git/hooks",
                ".git/modules/lib/config",
                ".git/modules/lib/hooks",
                ".git/modules/lib/modules/deep/config",
                ".git/modules/lib/modules/deep/hooks",
                ".git/modules/path/to/sub/config",
                ".git/modules/path/to/sub/hooks",
                ".husky/_",
            ]
        );
        assert_eq!(
            hooks_path("[core]\nhookspath=a\n[other]\nhookspath=b\n").as_deref(),
            Some("a")
        );
        assert_eq!(hooks_path("[user]\nname = x\n"), None);
        // A `.git` file (a worktree): the file itself stays as it is; its git directory,
        // when it exists, is protected like the main one.
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join(".git"), "gitdir: /elsewhere\n").unwrap();
        assert_eq!(git_code_paths(other.path()), [other.path().join(".git")]);
    }

    fn git(dir: &Path, args: &[&str]) {
        let status = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "protocol.file.allow=always",
            ])
            .args(args)
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    #[test]
    fn gitlinks_are_read_from_every_index_version() {
        if std::process::Command::new("git").arg("--version").output().is_err() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        std::fs::write(root.join("a.txt"), "a").unwrap();
        std::fs::create_dir_all(root.join("deep/sub")).unwrap();
        git(&root.join("deep/sub"), &["init", "-q"]);
        std::fs::write(root.join("deep/sub/f"), "f").unwrap();
        git(&root.join("deep/sub"), &["add", "f"]);
        git(&root.join("deep/sub"), &["commit", "-qm", "x"]);
        git(root, &["add", "a.txt", "deep/sub"]);
        for version in ["2", "3", "4"] {
            git(root, &["update-index", "--index-version", version]);
            assert_eq!(
                gitlinks(&root.join(".git/index")).unwrap(),
                ["deep/sub"],
                "index version {version}"
            );
        }
    }

    #[test]
    fn a_created_commondir_and_a_staged_repository_are_moved_aside() {
        if std::process::Command::new("git").arg("--version").output().is_err() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        std::fs::write(root.join("a.txt"), "a").unwrap();
        git(root, &["add", "a.txt"]);
        let watch = GitWatch::before(root);
        // What a command might do: stage a repository of its own, and redirect git.
        std::fs::create_dir(root.join("planted")).unwrap();
        git(&root.join("planted"), &["init", "-q"]);
        std::fs::write(root.join("planted/f"), "f").unwrap();
        git(&root.join("planted"), &["add", "f"]);
        git(&root.join("planted"), &["commit", "-qm", "x"]);
        git(root, &["add", "planted"]);
        std::fs::write(root.join(".git/commondir"), "../evil\n").unwrap();
        let notes = watch.after();
        assert!(!root.join(".git/commondir").exists());
        assert!(!root.join("planted/.git").exists());
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes.iter().any(|n| n.contains("commondir")), "{notes:?}");
        // Nothing changed: nothing moved.
        let watch = GitWatch::before(root);
        assert!(watch.after().is_empty());
    }
}
