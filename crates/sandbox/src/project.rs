//! The project's own files the sandbox must keep out of a command's reach: what git runs
//! code from (so a command cannot plant code the person's next `git` runs outside the
//! sandbox), and the file mounted over hidden files.

use std::path::{Path, PathBuf};

/// How many directory entries the search for git's code paths may visit per command.
const GIT_BUDGET: usize = 2000;

/// What git runs code from, in the project's repository and its submodules' (under
/// `.git/modules`): the hooks directory, the config (`core.fsmonitor`, `core.pager`,
/// aliases, filters, `core.hooksPath`…), and a hooks directory that `core.hooksPath`
/// puts inside the project (husky's `.husky/_`). A command that wrote any of them would
/// run code outside the sandbox the next time the person runs git, so they stay
/// read-only even though the rest of `.git` (objects, index, refs) is writable.
pub fn git_code_paths(project: &Path) -> Vec<PathBuf> {
    let git = project.join(".git");
    // Not through symlinks: a link elsewhere is someone else's tree.
    let is_dir = |path: &Path| std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir());
    if !is_dir(&git) {
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut budget = GIT_BUDGET;
    let mut pending = vec![git.clone()];
    while let Some(dir) = pending.pop() {
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
        }
        // The main repository's submodules live under `.git/modules`, theirs under
        // `modules` of their own git directory (or deeper, for names with slashes).
        let children = if dir == git { git.join("modules") } else { dir };
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
    found
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
        // A `.git` file (a worktree) or link: its git directory is elsewhere.
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join(".git"), "gitdir: /elsewhere\n").unwrap();
        assert!(git_code_paths(other.path()).is_empty());
    }
}
