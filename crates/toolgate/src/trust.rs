//! Trust on first use for a project's files (README "Configuration", "Trusted project
//! files"): `toolgate-config` says which parts of a file found on the project walk need
//! trust ([`toolgate_config::Loaded::untrusted`]); this module keeps the files trusted,
//! asks at a terminal, and withholds what is not trusted.
//!
//! A trust is a file's canonical path with the SHA-256 of its content, in
//! `<data>/trusted.json`. A changed file is another content: not trusted until trusted
//! again. Only the latest content of a path is kept.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toolgate_config::{Loaded, Untrusted};

/// How this run treats a project file's parts that need trust.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Policy {
    /// Apply what the person trusted before (`trusted.json`); withhold the rest.
    Stored,
    /// The same, and ask at the terminal about a file not trusted yet.
    Prompt,
    /// `--trust-project`: apply everything for this run (nothing is recorded).
    Everything,
}

/// A file's trust state for this run, for `toolgate config` and `toolgate trust`.
#[derive(Clone, Debug)]
pub(crate) struct FileTrust {
    pub(crate) untrusted: Untrusted,
    pub(crate) state: State,
}

/// Whether a file's parts that need trust apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum State {
    /// Trusted before, this very content.
    Trusted,
    /// `--trust-project`.
    Flag,
    /// Not trusted: withheld.
    Ignored,
}

impl State {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            State::Trusted => "trusted",
            State::Flag => "trusted by --trust-project",
            State::Ignored => "untrusted",
        }
    }
}

/// `<data>/trusted.json`: canonical path → SHA-256.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Records {
    files: BTreeMap<PathBuf, String>,
}

/// The trust records in the data directory.
pub(crate) struct Store {
    file: PathBuf,
}

/// The path a trust is recorded under: the canonical one (a symlinked spelling is the
/// same file).
fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

impl Store {
    pub(crate) fn new(data: &Path) -> Store {
        Store {
            file: data.join("trusted.json"),
        }
    }

    /// The records; a file that cannot be read or decoded trusts nothing (said once).
    fn read(&self) -> Records {
        match std::fs::read(&self.file) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|error| {
                eprintln!(
                    "toolgate: warning: {} cannot be decoded ({error}): no project file is trusted",
                    self.file.display()
                );
                Records::default()
            }),
            Err(_) => Records::default(),
        }
    }

    /// Whether `untrusted`'s file is trusted with exactly this content.
    pub(crate) fn trusts(&self, untrusted: &Untrusted) -> bool {
        self.read().files.get(&canonical(&untrusted.path)) == Some(&untrusted.sha256)
    }

    /// Changes the records under a lock (another toolgate may trust at the same time),
    /// writing them whole and renaming them into place.
    fn update(&self, change: impl FnOnce(&mut Records)) -> std::io::Result<()> {
        let dir = self.file.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join("trusted.json.lock"))?;
        lock.lock()?;
        let mut records = self.read();
        change(&mut records);
        let text = serde_json::to_vec_pretty(&records).map_err(std::io::Error::other)?;
        let temp = dir.join(format!("trusted.json.{}.tmp", std::process::id()));
        std::fs::write(&temp, text)?;
        std::fs::rename(&temp, &self.file)?;
        Ok(())
    }

    /// Records `untrusted`'s file as trusted with this content.
    pub(crate) fn trust(&self, untrusted: &Untrusted) -> std::io::Result<()> {
        self.update(|records| {
            records
                .files
                .insert(canonical(&untrusted.path), untrusted.sha256.clone());
        })
    }

    /// Removes the records of `files`; how many there were.
    pub(crate) fn revoke(&self, files: &[PathBuf]) -> std::io::Result<usize> {
        let mut removed = 0;
        self.update(|records| {
            for file in files {
                removed += usize::from(records.files.remove(&canonical(file)).is_some());
            }
        })?;
        Ok(removed)
    }
}

/// Decides each file's state under `policy` (asking at the terminal for `Prompt`), and
/// withholds the parts of every file not trusted.
pub(crate) fn apply(
    loaded: &mut Loaded,
    store: &Store,
    policy: Policy,
) -> Result<Vec<FileTrust>, toolgate_config::ConfigError> {
    let mut out = Vec::new();
    for untrusted in loaded.untrusted() {
        let state = if policy == Policy::Everything {
            State::Flag
        } else if store.trusts(&untrusted) {
            State::Trusted
        } else if policy == Policy::Prompt && ask(&untrusted) {
            if let Err(error) = store.trust(&untrusted) {
                eprintln!("toolgate: warning: the trust cannot be recorded ({error}); it holds for this run");
            }
            State::Trusted
        } else {
            State::Ignored
        };
        if state == State::Ignored {
            loaded.withhold(&untrusted)?;
        }
        out.push(FileTrust { untrusted, state });
    }
    Ok(out)
}

/// The file as the person knows it: relative to the current directory when inside it.
pub(crate) fn shown(path: &Path) -> String {
    let cwd = std::env::current_dir().ok();
    match cwd.as_deref().and_then(|cwd| path.strip_prefix(cwd).ok()) {
        Some(relative) => format!("./{}", relative.display()),
        None => path.display().to_string(),
    }
}

/// The one line that says what was withheld and how to apply it, if anything was.
pub(crate) fn ignored_line(files: &[FileTrust]) -> Option<String> {
    let parts: Vec<String> = files
        .iter()
        .filter(|file| file.state == State::Ignored)
        .map(|file| {
            let parts: Vec<String> = file.untrusted.parts.iter().map(ToString::to_string).collect();
            format!("{}: {}", shown(&file.untrusted.path), parts.join(", "))
        })
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "toolgate: ignored from untrusted {}; run `toolgate trust` to apply them (or pass --trust-project)",
            parts.join("; ")
        )
    })
}

/// What trusting `untrusted` would change, one line a part, with the value as written.
pub(crate) fn describe(untrusted: &Untrusted) -> Vec<String> {
    untrusted
        .parts
        .iter()
        .map(|part| match &part.server {
            Some(_) => format!("start {part}: {}", part.value),
            None => format!("set {} to {}", part.path, part.value),
        })
        .collect()
}

/// Asks at the terminal whether to trust `untrusted`'s content (shown part by part).
/// No terminal on stdin and stderr, or no answer: not trusted.
fn ask(untrusted: &Untrusted) -> bool {
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return false;
    }
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "toolgate: the project file {} asks for what only a trusted file may do:",
        untrusted.path.display()
    );
    for line in describe(untrusted) {
        let _ = writeln!(err, "  - {line}");
    }
    let _ = write!(
        err,
        "Trust this file's content (sha256 {}…)? Its rules apply either way. [y/N] ",
        &untrusted.sha256[..12]
    );
    let _ = err.flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => false,
        Ok(_) => matches!(line.trim(), "y" | "Y" | "yes" | "Yes"),
    }
}

/// The trust routes of `toolgate serve` (`GET /trust`, `POST /trust`): each call loads the
/// project's config anew, so a listing shows the files as they are now and a trust names
/// the content on disk when it is given.
pub(crate) struct ServedTrust {
    dirs: crate::config::Dirs,
    dir: PathBuf,
    explicit: Option<PathBuf>,
}

impl ServedTrust {
    pub(crate) fn new(dirs: crate::config::Dirs, dir: PathBuf, explicit: Option<PathBuf>) -> ServedTrust {
        ServedTrust { dirs, dir, explicit }
    }

    fn load(&self) -> Result<Vec<FileTrust>, toolgate_server::TrustError> {
        crate::config::Config::load(&self.dirs, &self.dir, self.explicit.as_deref(), Policy::Stored)
            .map(|config| config.trust)
            .map_err(|error| toolgate_server::TrustError::Failed(error.to_string()))
    }
}

/// A file's trust state as the HTTP API shows it.
fn served(file: &FileTrust, trusted: bool) -> toolgate_server::TrustFile {
    let parts = file
        .untrusted
        .parts
        .iter()
        .zip(describe(&file.untrusted))
        .map(|(part, change)| toolgate_server::TrustPart::new(&part.path, change, part.value.clone()))
        .collect();
    toolgate_server::TrustFile::new(
        canonical(&file.untrusted.path).display().to_string(),
        &file.untrusted.sha256,
        trusted,
        parts,
    )
}

impl toolgate_server::ProjectTrust for ServedTrust {
    fn files(&self) -> Result<Vec<toolgate_server::TrustFile>, toolgate_server::TrustError> {
        Ok(self
            .load()?
            .iter()
            .map(|file| served(file, file.state != State::Ignored))
            .collect())
    }

    fn trust(&self, path: &str, sha256: &str) -> Result<toolgate_server::TrustFile, toolgate_server::TrustError> {
        use toolgate_server::TrustError;
        // A relative path is the project's; either spelling of a file is the file.
        let wanted = canonical(&self.dir.join(path));
        let files = self.load()?;
        let file = files
            .iter()
            .find(|file| canonical(&file.untrusted.path) == wanted)
            .ok_or_else(|| TrustError::NotFound(path.to_string()))?;
        // Exactly the content that was shown: a file changed since then is another one.
        if file.untrusted.sha256 != sha256 {
            return Err(TrustError::Stale {
                path: wanted.display().to_string(),
                given: sha256.to_string(),
                current: file.untrusted.sha256.clone(),
            });
        }
        Store::new(&self.dirs.data)
            .trust(&file.untrusted)
            .map_err(|error| TrustError::Failed(format!("the trust cannot be recorded: {error}")))?;
        Ok(served(file, true))
    }
}
