//! What a program is called at exec time: the names of the trusted `PATH`, the files of
//! the programs the refusing rules name (the same file or the same bytes under another
//! name), and the programs that run another's code themselves (interpreters, emulators).

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use toolgate_sandbox::FileId;

/// The names of the trusted `PATH`, resolved as they are asked for.
pub(super) struct TrustedPath {
    pub(super) dirs: Vec<PathBuf>,
    /// When the command started: a program that appeared in a trusted directory since is
    /// the command's own (planted, with the sandbox off, in `~/.local/bin`), not the name's.
    since: (i64, i64),
    names: HashMap<OsString, Option<(FileId, PathBuf)>>,
    /// Every program of the trusted directories by file, built the first time a program
    /// is met that its own name does not resolve to (a hard link, a copy, a script): its
    /// name, and whether it changed since the command started.
    index: Option<HashMap<(u64, u64), (String, bool)>>,
}

impl TrustedPath {
    pub(super) fn new(path: Option<&OsStr>, writable: &[PathBuf]) -> TrustedPath {
        let dirs = path
            .map(std::env::split_paths)
            .into_iter()
            .flatten()
            .filter(|dir| dir.is_absolute())
            .map(|dir| std::fs::canonicalize(&dir).unwrap_or(dir))
            .filter(|dir| !writable.iter().any(|root| dir.starts_with(root)))
            .collect();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        TrustedPath {
            dirs,
            since: (now.as_secs() as i64, i64::from(now.subsec_nanos())),
            names: HashMap::new(),
            index: None,
        }
    }

    /// The file `name` resolves to in the trusted `PATH`, as `execvp` would find it, and
    /// its path there.
    pub(super) fn lookup(&mut self, name: &OsStr) -> Option<(FileId, PathBuf)> {
        if let Some(found) = self.names.get(name) {
            return found.clone();
        }
        let found = self.dirs.iter().find_map(|dir| {
            let candidate = dir.join(name);
            FileId::of(&candidate)
                .filter(|file| file.mode & 0o170000 == 0o100000 && file.mode & 0o111 != 0)
                .filter(|file| file.changed < self.since)
                .map(|file| (file, candidate))
        });
        self.names.insert(name.to_os_string(), found.clone());
        found
    }

    /// The name of the program `file` in the trusted directories (under another name),
    /// and whether it is trusted: a file changed since the command started is not, yet
    /// its name may still refuse it.
    pub(super) fn name_of(&mut self, file: &FileId) -> Option<(String, bool)> {
        let since = self.since;
        let index = self.index.get_or_insert_with(|| {
            let mut index: HashMap<(u64, u64), (String, bool)> = HashMap::new();
            for dir in &self.dirs {
                let Ok(entries) = std::fs::read_dir(dir) else { continue };
                for entry in entries.flatten() {
                    let name = entry.file_name();
                    if let (Some(name), Some(file)) = (name.to_str(), FileId::of(&entry.path())) {
                        // The shortest of a file's names stands for it (`git`, not
                        // `git-upload-pack`), whatever order the directory lists them in.
                        let known = index
                            .entry((file.dev, file.ino))
                            .or_insert_with(|| (name.to_string(), file.changed < since));
                        if (name.len(), name) < (known.0.len(), known.0.as_str()) {
                            known.0 = name.to_string();
                        }
                    }
                }
            }
            index
        });
        index.get(&(file.dev, file.ino)).cloned()
    }
}

/// Files by their size, with where they are.
type FilesBySize = HashMap<u64, Vec<PathBuf>>;

/// The files of the programs the rules refuse by name ([`Permissions::strict_programs`]):
/// the same program run under another of its names (`dash` for `sh`, `mawk` for `awk`,
/// a hard link or a byte-for-byte copy of `rm`, npm's script run by `node`) is checked
/// against those rules too.
pub(super) struct StrictFiles {
    /// Each program's file (device and inode), with the rule words it is.
    pub(super) by_file: HashMap<(u64, u64), Vec<String>>,
    /// The same files by size, with where they are (a copy is compared byte for byte).
    by_size: HashMap<u64, Vec<(PathBuf, String)>>,
    /// The files of [`INTERPRETERS`] in the trusted directories, by file and by size
    /// (a copy of `node` is `node`), found the first time a program is not one by name.
    interpreters: Option<(HashSet<(u64, u64)>, FilesBySize)>,
    /// Whether any of the programs is a script (not an ELF program): only then can an
    /// interpreter be given one to run.
    pub(super) scripts: bool,
}

impl StrictFiles {
    /// `words` as found now: a path as it is, a name in the trusted directories `dirs`
    /// (wherever it changed: this only ever makes a decision stricter).
    pub(super) fn new(words: Vec<String>, dirs: &[PathBuf]) -> StrictFiles {
        let mut strict = StrictFiles {
            by_file: HashMap::new(),
            by_size: HashMap::new(),
            interpreters: None,
            scripts: false,
        };
        for word in words {
            let found = if word.starts_with('/') {
                let path = PathBuf::from(&word);
                FileId::of(&path).map(|file| (file, path))
            } else if word.contains('/') {
                None
            } else {
                dirs.iter().find_map(|dir| {
                    let path = dir.join(&word);
                    FileId::of(&path)
                        .filter(|file| file.mode & 0o170000 == 0o100000 && file.mode & 0o111 != 0)
                        .map(|file| (file, path))
                })
            };
            let Some((file, path)) = found else { continue };
            let names = strict.by_file.entry((file.dev, file.ino)).or_default();
            if !names.contains(&word) {
                names.push(word.clone());
            }
            let path = std::fs::canonicalize(&path).unwrap_or(path);
            if !strict.scripts {
                strict.scripts = std::fs::File::open(&path).is_ok_and(|mut opened| !is_elf(&mut opened));
            }
            strict.by_size.entry(file.size).or_default().push((path, word));
        }
        strict
    }

    /// Whether `file` is one of [`INTERPRETERS`] under another name: the same file, or
    /// (`open` gives it to read) the same bytes as one in the trusted directories `dirs`.
    pub(super) fn is_interpreter(
        &mut self,
        file: &FileId,
        dirs: &[PathBuf],
        open: impl FnOnce() -> Option<std::fs::File>,
    ) -> bool {
        let (by_file, by_size) = self.interpreters.get_or_insert_with(|| {
            let (mut by_file, mut by_size) = (HashSet::new(), FilesBySize::new());
            // `python3` and `python2` are how most systems name `python` (their links
            // lead to the versioned file).
            let names = INTERPRETERS
                .iter()
                .flat_map(|name| [name.to_string(), format!("{name}3"), format!("{name}2")]);
            let names: Vec<String> = names.collect();
            for dir in dirs {
                for name in &names {
                    let path = dir.join(name);
                    if let Some(found) = FileId::of(&path)
                        && found.mode & 0o170000 == 0o100000
                        && by_file.insert((found.dev, found.ino))
                    {
                        by_size.entry(found.size).or_default().push(path);
                    }
                }
            }
            (by_file, by_size)
        });
        if by_file.contains(&(file.dev, file.ino)) {
            return true;
        }
        let Some(same_size) = by_size.get(&file.size) else {
            return false;
        };
        let Some(mut opened) = open() else {
            return false;
        };
        same_size.iter().any(|path| {
            use std::io::Seek as _;
            opened.rewind().is_ok()
                && std::fs::File::open(path).is_ok_and(|mut other| same_bytes(&mut opened, &mut other))
        })
    }

    /// The rule words `file` is: the same file, or (`open` gives it to read) the same
    /// bytes as one.
    pub(super) fn names_of(&self, file: &FileId, open: impl FnOnce() -> Option<std::fs::File>) -> Vec<String> {
        if let Some(names) = self.by_file.get(&(file.dev, file.ino)) {
            return names.clone();
        }
        let Some(same_size) = self.by_size.get(&file.size) else {
            return Vec::new();
        };
        let Some(mut opened) = open() else {
            return Vec::new();
        };
        let mut names = Vec::new();
        for (path, word) in same_size {
            use std::io::Seek as _;
            if opened.rewind().is_err() {
                break;
            }
            if let Ok(mut other) = std::fs::File::open(path)
                && same_bytes(&mut opened, &mut other)
                && !names.contains(word)
            {
                names.push(word.clone());
            }
        }
        names
    }
}

/// Whether two readers give the same bytes to their ends (a read error: not the same).
pub(super) fn same_bytes(a: &mut impl std::io::Read, b: &mut impl std::io::Read) -> bool {
    let (mut left, mut right) = ([0u8; 16384], [0u8; 16384]);
    loop {
        let Ok(n) = read_full(a, &mut left) else { return false };
        let Ok(m) = read_full(b, &mut right) else { return false };
        if n != m || left[..n] != right[..m] {
            return false;
        }
        if n == 0 {
            return true;
        }
    }
}

/// Fills `buffer` as far as the reader goes.
fn read_full(reader: &mut impl std::io::Read, buffer: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

/// Programs that run a file given as an operand as their script (`python3 x.py`, `node
/// x.js`), by name with any version suffix (`python3.11`).
pub(super) const INTERPRETERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "python", "pypy", "node", "nodejs", "deno", "bun",
    "perl", "ruby", "php", "lua", "luajit", "tclsh", "wish", "Rscript", "julia", "guile", "racket", "ts-node", "tsx",
];

/// How many of an interpreter's arguments are looked at for a rule's program given as
/// its script (an option's value may come first: `python3 -X dev x.py`).
pub(super) const MAX_OPERANDS: usize = 64;

/// Whether the file starts as an ELF program does (read from its start; the position is
/// left where it was read to).
pub(super) fn is_elf(file: &mut std::fs::File) -> bool {
    use std::io::{Read as _, Seek as _};
    let mut magic = [0u8; 4];
    let elf = file.read_exact(&mut magic).is_ok() && magic == *b"\x7fELF";
    let _ = file.rewind();
    elf
}

/// Programs that run another program's code themselves, with no `exec` the guard sees.
pub(super) const EMULATORS: &[&str] = &[
    "valgrind",
    "valgrind.bin",
    "box64",
    "box86",
    "FEXInterpreter",
    "FEXLoader",
];

/// Whether `program` is one of [`EMULATORS`] or a user-mode `qemu-<arch>`.
pub(super) fn is_emulator(program: &Path) -> bool {
    let name = program.file_name().and_then(OsStr::to_str).unwrap_or_default();
    // valgrind's tools (`/usr/libexec/valgrind/memcheck-amd64-linux`) are emulators too.
    let valgrind_tool = program
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|dir| dir == "valgrind");
    EMULATORS.contains(&name)
        || valgrind_tool
        || (name.starts_with("qemu-") && !name.starts_with("qemu-system-") && !name.starts_with("qemu-img"))
}

/// Whether `name` is one of [`INTERPRETERS`] (version digits and dots after it aside).
pub(super) fn is_interpreter(name: &str) -> bool {
    let bare = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    INTERPRETERS.contains(&bare)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpreters_are_known_by_name_with_any_version() {
        for name in ["python3", "python3.11", "node", "bash", "sh", "perl5.36"] {
            assert!(is_interpreter(name), "{name}");
        }
        for name in ["rm", "git", "python-config", "nodemon", "3"] {
            assert!(!is_interpreter(name), "{name}");
        }
    }

    #[test]
    fn the_same_bytes_are_told_from_different_ones() {
        let long: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let mut changed = long.clone();
        changed[70_000] ^= 1;
        assert!(same_bytes(&mut long.as_slice(), &mut long.as_slice()));
        assert!(!same_bytes(&mut long.as_slice(), &mut changed.as_slice()));
        assert!(!same_bytes(&mut long.as_slice(), &mut &long[..99_999]));
        assert!(same_bytes(&mut &b""[..], &mut &b""[..]));
    }
}
