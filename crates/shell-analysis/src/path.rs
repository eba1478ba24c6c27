//! Path text helpers: joining, normalising, system directories and devices.

use std::path::Path;

/// Devices that are neither read nor written in a way the rules speak about.
pub(crate) fn is_device(path: &str) -> bool {
    matches!(
        path,
        "/dev/null"
            | "/dev/zero"
            | "/dev/full"
            | "/dev/random"
            | "/dev/urandom"
            | "/dev/tty"
            | "/dev/stdin"
            | "/dev/stdout"
            | "/dev/stderr"
    ) || path
        .strip_prefix("/dev/fd/")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

pub(crate) fn is_system_dir(path: &str) -> bool {
    let dir = path.rsplit_once('/').map_or("", |(dir, _)| dir);
    matches!(
        dir,
        "/bin" | "/usr/bin" | "/usr/local/bin" | "/sbin" | "/usr/sbin" | "/usr/local/sbin"
    )
}

/// `dir` (relative to the working directory, or absolute) joined with `path`.
pub(crate) fn join(dir: &str, path: &str) -> String {
    if path.starts_with('/') {
        return normalize(path);
    }
    if dir.is_empty() {
        return normalize(path);
    }
    normalize(&format!("{}/{path}", dir.trim_end_matches('/')))
}

/// Removes `.` components and duplicate slashes (`..` stays: only the filesystem knows
/// what it leads to).
pub(crate) fn normalize(path: &str) -> String {
    let absolute = path.starts_with('/');
    let parts: Vec<&str> = path
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    let joined = parts.join("/");
    if absolute { format!("/{joined}") } else { joined }
}

pub(crate) fn absolute(workdir: &Path, dir: &str) -> String {
    if dir.starts_with('/') {
        dir.to_string()
    } else if dir.is_empty() {
        workdir.to_string_lossy().into_owned()
    } else {
        workdir.join(dir).to_string_lossy().into_owned()
    }
}
