//! Reading a failed command's output for what the sandbox refused, so the model can ask
//! the person instead of retrying blindly.

use std::path::{Component, Path, PathBuf};

use crate::policy::{Mode, Policy};

/// Messages (strerror texts and the spellings of common runtimes) of a refused file access.
const REFUSALS: &[&str] = &[
    "Permission denied",
    "Read-only file system",
    "Operation not permitted",
    "Device or resource busy",
    "EACCES",
    "EPERM",
    "EROFS",
    "EBUSY",
    "[Errno 13]",
    "[Errno 1]",
    "[Errno 30]",
];

/// Messages of an access to a hidden path (the mask is a socket or an empty directory).
const HIDDEN: &[&str] = &[
    "No such device or address",
    "No such file or directory",
    "ENXIO",
    "ENOENT",
    "[Errno 6]",
    "[Errno 2]",
];

/// Messages of a refused network access (as the sandbox produces them: sockets refused,
/// no route, no name resolution).
const NETWORK: &[&str] = &[
    "Network is unreachable",
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Couldn't connect to server",
    "Failed to connect to",
    "getaddrinfo",
    "ENETUNREACH",
    "[Errno 101]",
    "[Errno -3]",
    "socket: Operation not permitted",
    "Address family not supported",
];

/// At most this many notes: the model needs the gist, not a log.
const MAX_NOTES: usize = 3;

/// Words that put an unplaced refusal on the network's account (a socket refused).
const NETWORK_WORDS: &[&str] = &[
    "socket",
    "connect",
    "http://",
    "https://",
    "urlopen",
    "getaddrinfo",
    "resolv",
];

pub(crate) fn explain(policy: &Policy, output: &str) -> Option<String> {
    let mut notes: Vec<String> = Vec::new();
    let mut unplaced = false;
    let mut network = false;
    for line in output.lines() {
        if !policy.network && NETWORK.iter().any(|marker| line.contains(marker)) {
            network = true;
            continue;
        }
        if HIDDEN.iter().any(|marker| line.contains(marker)) {
            // Only a hidden path explains these; any other missing file is not ours.
            if let Some(note) = candidates(line).into_iter().find_map(|path| hidden(policy, &path))
                && !notes.contains(&note)
            {
                notes.push(note);
            }
            continue;
        }
        if !REFUSALS.iter().any(|marker| line.contains(marker)) {
            continue;
        }
        let read_only_fs =
            line.contains("Read-only file system") || line.contains("EROFS") || line.contains("[Errno 30]");
        // The exec guard refuses a program with EPERM and says so in a line of its own;
        // inside the sandbox a refused write is EACCES or EROFS, so an EPERM naming a program
        // is the guard's, and a note about writing would send the model the wrong way.
        if policy.exec_guard && refused_exec(policy, line) {
            continue;
        }
        match candidates(line)
            .into_iter()
            .find_map(|path| classify(policy, &path, read_only_fs))
        {
            Some(note) => {
                if !notes.contains(&note) {
                    notes.push(note);
                }
            }
            None => unplaced = true,
        }
    }
    if unplaced && !policy.network {
        let lower = output.to_lowercase();
        if NETWORK_WORDS.iter().any(|word| lower.contains(word)) {
            network = true;
            unplaced = false;
        }
    }
    if network {
        notes.push("sandbox: network access is off (sandbox.network is false): no TCP or UDP connection can be made, not even to this machine".into());
    }
    if notes.is_empty() && unplaced {
        notes.push(format!(
            "sandbox: the command ran in the {}; the refusal above may come from it",
            policy.summary()
        ));
    }
    if notes.is_empty() {
        return None;
    }
    notes.truncate(MAX_NOTES);
    Some(notes.join("\n"))
}

/// Whether `line` is a shell's report that the exec guard refused a program: an EPERM on an
/// executable file.
fn refused_exec(policy: &Policy, line: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let eperm = line.contains("Operation not permitted") || line.contains("EPERM") || line.contains("[Errno 1]");
    eperm
        && candidates(line).iter().any(|written| {
            resolve(&policy.workdir, written)
                .and_then(|path| std::fs::metadata(path).ok())
                .is_some_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

/// The note for a hidden path, if `written` is one.
fn hidden(policy: &Policy, written: &str) -> Option<String> {
    let path = resolve(&policy.workdir, written)?;
    let masked = policy.masked.iter().find(|masked| path.starts_with(masked))?;
    Some(format!(
        "sandbox: {} is hidden: the `read` rules deny or ask for {}, and no one can be asked from inside the \
         sandbox; read it with the read tool (which asks the user when the rules ask), or ask the user",
        path.display(),
        masked.display()
    ))
}

/// The process id of `/proc/<pid>/…`.
fn proc_pid(path: &Path) -> Option<u32> {
    let mut components = path.components();
    match (components.next(), components.next(), components.next()) {
        (Some(Component::RootDir), Some(Component::Normal(proc)), Some(Component::Normal(pid))) if proc == "proc" => {
            pid.to_str()?.parse().ok()
        }
        _ => None,
    }
}

/// What the sandbox says about a path the output names, if it explains a refusal there.
/// `read_only_fs`: the message was "Read-only file system", which inside the sandbox only
/// its read-only mounts produce.
fn classify(policy: &Policy, written: &str, read_only_fs: bool) -> Option<String> {
    if let Some(note) = hidden(policy, written) {
        return Some(note);
    }
    let path = resolve(&policy.workdir, written)?;
    if let Some(read_only) = policy.read_only.iter().find(|ro| path.starts_with(ro)) {
        return Some(format!(
            "sandbox: {} is read-only: an `edit` deny rule, toolgate's own configuration or git's hooks and config (code git would run outside the sandbox) protect {}",
            path.display(),
            read_only.display()
        ));
    }
    if crate::DEVICES.iter().any(|device| path == Path::new(device)) {
        return None;
    }
    // Another process's /proc entries: refused for reading too (Landlock's scopes), so a
    // note about writing would send the model the wrong way.
    if !read_only_fs && let Some(pid) = proc_pid(&path) {
        return Some(format!(
            "sandbox: {} belongs to process {pid}, outside the sandbox: commands cannot read, trace or signal processes they did not start",
            path.display()
        ));
    }
    match policy.mode {
        Mode::WorkspaceWrite if !policy.is_writable(&path) => {
            let roots: Vec<String> = policy.writable.iter().map(|p| p.display().to_string()).collect();
            Some(format!(
                "sandbox: write outside the workspace refused: {} (writable: {}); ask the user, who can run it outside the sandbox or add the directory to sandbox.writable",
                path.display(),
                roots.join(", ")
            ))
        }
        Mode::ReadOnly | Mode::Off => Some(format!(
            "sandbox: the read-only sandbox refuses every write: {}",
            path.display()
        )),
        // A relative path that seems writable was relative to a directory the command
        // moved to (`cd ..`): the read-only mounts say it was outside.
        Mode::WorkspaceWrite if read_only_fs && !Path::new(written).is_absolute() => {
            let roots: Vec<String> = policy.writable.iter().map(|p| p.display().to_string()).collect();
            Some(format!(
                "sandbox: write outside the workspace refused: {written} (relative to where the command was; writable: {}); ask the user, who can run it outside the sandbox or add the directory to sandbox.writable",
                roots.join(", ")
            ))
        }
        Mode::WorkspaceWrite => None,
    }
}

/// The words of a message line that could be paths: quoted parts, and the fields of the
/// `program: path: message` form.
fn candidates(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (open, close) in [('\'', '\''), ('"', '"'), ('‘', '’'), ('`', '\''), ('“', '”')] {
        let mut rest = line;
        while let Some(start) = rest.find(open) {
            let after = &rest[start + open.len_utf8()..];
            let Some(end) = after.find(close) else {
                break;
            };
            let inner = &after[..end];
            if could_be_path(inner) {
                found.push(inner.to_string());
            }
            rest = &after[end + close.len_utf8()..];
        }
    }
    // `program: [line N: ]path: message`: the fields between the program and the
    // message, nearest the message first.
    let fields: Vec<&str> = line.split(": ").collect();
    if fields.len() >= 3 {
        for field in fields[1..fields.len() - 1].iter().rev() {
            // dash and busybox put a verb before the path: `sh: 1: cannot create x: …`.
            let field = field.trim();
            let field = ["cannot create ", "can't create ", "cannot open ", "can't open "]
                .iter()
                .find_map(|verb| field.strip_prefix(verb))
                .unwrap_or(field);
            if could_be_path(field) && !found.iter().any(|f| f == field) {
                found.push(field.to_string());
            }
        }
    }
    // Free-standing absolute paths (`… /etc/x …`), after the program's name.
    let rest = if fields.len() >= 2 {
        &line[fields[0].len()..]
    } else {
        line
    };
    for word in rest.split_whitespace() {
        let word = word.trim_matches(|c: char| matches!(c, ',' | ';' | ':' | '(' | ')' | '[' | ']'));
        if word.starts_with('/') && looks_like_path(word) && !found.iter().any(|f| f == word) {
            found.push(word.to_string());
        }
    }
    found
}

/// A word in a place where messages put the path: anything without blanks.
fn could_be_path(text: &str) -> bool {
    !text.is_empty() && text.len() < 4096 && !text.contains(char::is_whitespace) && !text.starts_with("http")
}

fn looks_like_path(text: &str) -> bool {
    !text.is_empty()
        && text.len() < 4096
        && !text.contains(char::is_whitespace)
        && (text.contains('/') || text.starts_with('.') || text.starts_with('~'))
        && !text.starts_with("http")
}

/// `written` made absolute against `workdir`, with `.` and `..` folded.
fn resolve(workdir: &Path, written: &str) -> Option<PathBuf> {
    let written = if let Some(rest) = written.strip_prefix("~/") {
        PathBuf::from(std::env::var_os("HOME")?).join(rest)
    } else {
        PathBuf::from(written)
    };
    let joined = workdir.join(written);
    let mut out = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        let mut policy = Policy::new(Mode::WorkspaceWrite, "/p", false)
            .read_only(["/p/locked"])
            .masked(["/p/.env", "/p/secrets"]);
        policy.writable = vec![PathBuf::from("/p"), PathBuf::from("/tmp")];
        policy
    }

    #[test]
    fn a_program_the_exec_guard_refused_is_not_called_a_write() {
        let line = "/bin/bash: line 1: /bin/sh: Operation not permitted\n";
        let mut policy = Policy::new(Mode::WorkspaceWrite, "/p", false);
        policy.writable = vec![PathBuf::from("/p")];
        // Without the guard an EPERM on a path outside the workspace reads as a refused write.
        assert!(explain(&policy, line).is_some_and(|note| note.contains("write outside")));
        policy.exec_guard = true;
        assert_eq!(explain(&policy, line), None);
        // A refused write stays explained with the guard on.
        let write = "bash: /usr/x: Permission denied\n";
        assert!(explain(&policy, write).is_some_and(|note| note.contains("write outside")));
    }

    #[test]
    fn other_processes_proc_entries_are_not_called_writes() {
        let policy = Policy::new(Mode::WorkspaceWrite, "/p", false);
        let note = explain(&policy, "cat: /proc/1/environ: Permission denied\n").unwrap();
        assert!(
            note.starts_with("sandbox: /proc/1/environ belongs to process 1"),
            "{note}"
        );
        assert!(!note.contains("write"), "{note}");
        let note = explain(
            &policy,
            "/bin/sh: 1: cannot create /proc/sys/x: Read-only file system\n",
        )
        .unwrap();
        assert!(
            note.contains("write outside the workspace refused: /proc/sys/x"),
            "{note}"
        );
    }

    #[test]
    fn writes_outside_the_workspace_are_named() {
        let policy = policy();
        for output in [
            "bash: line 1: /etc/hosts: Permission denied",
            "touch: cannot touch '/home/u/.bashrc': Permission denied",
            "PermissionError: [Errno 13] Permission denied: '/var/x'",
            "bash: ../escape.txt: Permission denied",
            "mkdir: cannot create directory ‘/opt/new’: Permission denied",
        ] {
            let note = policy.explain(output).unwrap_or_default();
            assert!(
                note.starts_with("sandbox: write outside the workspace refused: /"),
                "{output} → {note}"
            );
        }
        let note = policy.explain("bash: ../escape.txt: Permission denied").unwrap();
        assert!(note.contains("refused: /escape.txt"), "{note}");
        // The program's own path is not what was refused.
        let note = policy
            .explain("/bin/bash: line 1: /etc/x: Read-only file system")
            .unwrap();
        assert!(note.contains("refused: /etc/x "), "{note}");
    }

    #[test]
    fn hidden_and_read_only_paths_are_named() {
        let policy = policy();
        let note = policy.explain("cat: .env: Permission denied").unwrap();
        assert!(note.starts_with("sandbox: /p/.env is hidden"), "{note}");
        let note = policy
            .explain("mkdir: cannot create directory ‘locked’: Read-only file system")
            .unwrap();
        assert!(note.starts_with("sandbox: /p/locked is read-only"), "{note}");
        let note = policy
            .explain("/bin/bash: line 1: locked: Read-only file system")
            .unwrap();
        assert!(note.starts_with("sandbox: /p/locked is read-only"), "{note}");
        // dash and busybox spell it with a verb before the path.
        for line in [
            "/bin/sh: 1: cannot create locked: Read-only file system",
            "sh: can't create locked: Read-only file system",
        ] {
            let note = policy.explain(line).unwrap();
            assert!(note.starts_with("sandbox: /p/locked is read-only"), "{line}: {note}");
        }
        let note = policy.explain("cat: .env: Permission denied").unwrap();
        assert!(note.starts_with("sandbox: /p/.env is hidden"), "{note}");
        let note = policy.explain("cat: secrets/key: Permission denied").unwrap();
        assert!(note.contains("/p/secrets/key is hidden"), "{note}");
        let note = policy
            .explain("/bin/bash: line 1: locked/a: Read-only file system")
            .unwrap();
        assert!(note.contains("/p/locked/a is read-only"), "{note}");
    }

    #[test]
    fn network_refusals_are_explained_only_when_the_network_is_off() {
        let output = "curl: (7) Failed to connect to 127.0.0.1 port 80: Couldn't connect to server";
        assert!(policy().explain(output).unwrap().contains("network access is off"));
        let mut online = policy();
        online.network = true;
        assert_eq!(online.explain(output), None);
        let python = "    sock = socket(af, socktype, proto)\nPermissionError: [Errno 1] Operation not permitted";
        assert!(policy().explain(python).unwrap().contains("network access is off"));
    }

    #[test]
    fn unplaced_refusals_get_the_general_note_and_clean_failures_none() {
        let policy = policy();
        let note = policy.explain("error: Operation not permitted (os error 1)").unwrap();
        assert!(
            note.starts_with("sandbox: the command ran in the workspace-write sandbox"),
            "{note}"
        );
        assert_eq!(policy.explain("test failed: expected 1, got 2"), None);
        // After `cd ..`, a relative path only looks inside.
        let note = policy
            .explain("/bin/bash: line 1: out.txt: Read-only file system")
            .unwrap();
        assert!(
            note.starts_with("sandbox: write outside the workspace refused: out.txt (relative"),
            "{note}"
        );
        // A missing file is not the sandbox's doing, a hidden one is.
        assert_eq!(policy.explain("cat: nothing.txt: No such file or directory"), None);
        let note = policy.explain("cat: secrets/key: No such file or directory").unwrap();
        assert!(note.contains("/p/secrets/key is hidden"), "{note}");
        // A refusal inside the workspace is not the sandbox's doing.
        assert!(
            policy
                .explain("cat: /p/src/private: Permission denied")
                .unwrap()
                .starts_with("sandbox: the command ran in")
        );
    }
}
