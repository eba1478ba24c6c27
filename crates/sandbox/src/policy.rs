//! What a sandboxed command may do, and how that travels on a command line.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::TRAMPOLINE;

/// Devices every sandboxed command may write to (what `>/dev/null` and friends need).
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// How much a sandboxed command may write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    /// No sandbox: the command runs with the user's full authority.
    #[default]
    Off,
    /// Writes only under the project, the temp directory and the configured directories.
    WorkspaceWrite,
    /// No writes at all (except to `/dev/null`-like devices).
    ReadOnly,
}

impl Mode {
    /// The configuration spelling: `off`, `workspace-write`, `read-only`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::WorkspaceWrite => "workspace-write",
            Mode::ReadOnly => "read-only",
        }
    }

    /// Parses the configuration spelling.
    pub fn parse(text: &str) -> Option<Mode> {
        match text {
            "off" => Some(Mode::Off),
            "workspace-write" => Some(Mode::WorkspaceWrite),
            "read-only" => Some(Mode::ReadOnly),
            _ => None,
        }
    }

    /// The stricter of two modes (`off` < `workspace-write` < `read-only`).
    pub fn stricter(self, other: Mode) -> Mode {
        self.max(other)
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Mode {
    type Err = String;

    fn from_str(text: &str) -> Result<Mode, String> {
        Mode::parse(text).ok_or_else(|| format!("{text:?} is not a sandbox mode (off, read-only, workspace-write)"))
    }
}

/// What one sandboxed command may do. Paths should be absolute and canonical: they are
/// compared as written. Built with [`Policy::new`] and its setters (more settings may
/// come, hence `#[non_exhaustive]`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Policy {
    /// `read-only` or `workspace-write`; `off` only together with
    /// [`exec_guard`](Policy::exec_guard): without it, a policy that exists always
    /// restricts, and `off` is treated as `read-only`.
    pub mode: Mode,
    /// Directories (or files) where everything may be written, in `workspace-write` mode.
    pub writable: Vec<PathBuf>,
    /// Existing paths made read-only even inside a writable directory.
    pub read_only: Vec<PathBuf>,
    /// Existing paths hidden: an empty, unreadable file or directory is mounted over them.
    pub masked: Vec<PathBuf>,
    /// Whether TCP/UDP may be used (the host network); off means no socket at all.
    pub network: bool,
    /// The directory the command starts in (entered again after the mounts).
    pub workdir: PathBuf,
    /// What is mounted over hidden files (required when a hidden path is not a
    /// directory): a Unix socket no one listens on, mode 000, which `open` refuses for
    /// every user, root included (`ENXIO`), and which recursive searches skip.
    pub mask_file: Option<PathBuf>,
    /// Whether the exec guard is installed (see [`crate::ExecListener`]): the trampoline
    /// then expects a Unix socket from the supervisor as its stdin.
    pub exec_guard: bool,
}

/// A trampoline command line that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// An option the trampoline does not know.
    #[error("unknown sandbox option {0:?}")]
    Unknown(String),
    /// An option without its value.
    #[error("sandbox option {0} needs a value")]
    MissingValue(String),
    /// A value that is not what the option takes.
    #[error("sandbox option {option}: {value:?} is not valid")]
    Invalid {
        /// The option.
        option: String,
        /// The value given.
        value: String,
    },
    /// No `--` and command after the options.
    #[error("no command after the sandbox options (`-- PROGRAM ARGS…`)")]
    NoCommand,
}

impl Policy {
    /// A policy in `mode` for a project at `project`: in `workspace-write` mode the project,
    /// the temp directory (`$TMPDIR`, else `/tmp`) and `/dev/shm` are writable. The
    /// command starts in `project`.
    pub fn new(mode: Mode, project: impl AsRef<Path>, network: bool) -> Policy {
        let project = project.as_ref().to_path_buf();
        let writable = if mode == Mode::WorkspaceWrite {
            let mut roots = vec![project.clone()];
            let temp = std::env::temp_dir();
            let temp = std::fs::canonicalize(&temp).unwrap_or(temp);
            for root in [temp, PathBuf::from("/dev/shm")] {
                if !roots.contains(&root) {
                    roots.push(root);
                }
            }
            roots
        } else {
            Vec::new()
        };
        Policy {
            mode,
            writable,
            read_only: Vec::new(),
            masked: Vec::new(),
            network,
            workdir: project,
            mask_file: None,
            exec_guard: false,
        }
    }

    /// Installs the exec guard (or not): every program the command starts is put to the
    /// supervisor first. With [`Mode::Off`], the guard is all the trampoline sets up.
    pub fn exec_guard(mut self, on: bool) -> Policy {
        self.exec_guard = on;
        self
    }

    /// True when the policy confines the command (a sandbox mode other than off).
    pub fn sandboxed(&self) -> bool {
        self.mode != Mode::Off
    }

    /// Adds writable directories (ignored in `read-only` mode).
    pub fn writable<P: Into<PathBuf>>(mut self, paths: impl IntoIterator<Item = P>) -> Policy {
        if self.mode == Mode::WorkspaceWrite {
            for path in paths {
                let path = path.into();
                if !self.writable.contains(&path) {
                    self.writable.push(path);
                }
            }
        }
        self
    }

    /// Adds paths that stay read-only.
    pub fn read_only<P: Into<PathBuf>>(mut self, paths: impl IntoIterator<Item = P>) -> Policy {
        self.read_only.extend(paths.into_iter().map(Into::into));
        self
    }

    /// Adds paths that are hidden.
    pub fn masked<P: Into<PathBuf>>(mut self, paths: impl IntoIterator<Item = P>) -> Policy {
        self.masked.extend(paths.into_iter().map(Into::into));
        self
    }

    /// Sets the directory the command starts in.
    pub fn workdir(mut self, dir: impl Into<PathBuf>) -> Policy {
        self.workdir = dir.into();
        self
    }

    /// Sets the socket mounted over hidden files (see [`Policy::mask_file`]).
    pub fn mask_file(mut self, file: impl Into<PathBuf>) -> Policy {
        self.mask_file = Some(file.into());
        self
    }

    /// True when `path` (absolute) lies under a writable root.
    pub fn is_writable(&self, path: &Path) -> bool {
        self.mode == Mode::WorkspaceWrite && self.writable.iter().any(|root| path.starts_with(root))
    }

    /// The options that encode this policy for the trampoline.
    pub fn to_args(&self) -> Vec<OsString> {
        // A policy always restricts: `off` travels as `read-only`, unless the exec guard
        // is all it asks for.
        let mode = if self.mode == Mode::Off && !self.exec_guard {
            Mode::ReadOnly
        } else {
            self.mode
        };
        let mut args: Vec<OsString> = vec![
            "--mode".into(),
            mode.as_str().into(),
            "--network".into(),
            if self.network { "on" } else { "off" }.into(),
            "--cwd".into(),
            self.workdir.clone().into(),
        ];
        if self.exec_guard {
            args.push("--exec-guard".into());
            args.push("on".into());
        }
        if let Some(file) = &self.mask_file {
            args.push("--mask-file".into());
            args.push(file.clone().into());
        }
        for (option, paths) in [
            ("--write", &self.writable),
            ("--read-only", &self.read_only),
            ("--mask", &self.masked),
        ] {
            for path in paths {
                args.push(option.into());
                args.push(path.clone().into());
            }
        }
        args
    }

    /// The whole trampoline command line: `exe __sandbox-exec OPTIONS -- program args…`.
    /// Run it (with the environment the command should see) to run `program` sandboxed.
    pub fn command_line<S: AsRef<OsStr>>(
        &self,
        exe: impl AsRef<OsStr>,
        program: impl AsRef<OsStr>,
        args: impl IntoIterator<Item = S>,
    ) -> Vec<OsString> {
        let mut line = vec![exe.as_ref().to_os_string(), TRAMPOLINE.into()];
        line.extend(self.to_args());
        line.push("--".into());
        line.push(program.as_ref().to_os_string());
        line.extend(args.into_iter().map(|arg| arg.as_ref().to_os_string()));
        line
    }

    /// Reads the options [`to_args`](Policy::to_args) wrote, then `--` and the command.
    pub fn from_args<S: AsRef<OsStr>>(args: &[S]) -> Result<(Policy, Vec<OsString>), ParseError> {
        let mut policy = Policy {
            mode: Mode::ReadOnly,
            writable: Vec::new(),
            read_only: Vec::new(),
            masked: Vec::new(),
            network: false,
            workdir: PathBuf::from("/"),
            mask_file: None,
            exec_guard: false,
        };
        let mut cwd = None;
        let mut off = false;
        let mut iter = args.iter().map(AsRef::as_ref);
        while let Some(option) = iter.next() {
            if option == "--" {
                let command: Vec<OsString> = iter.map(OsStr::to_os_string).collect();
                if command.is_empty() {
                    return Err(ParseError::NoCommand);
                }
                if off && !policy.exec_guard {
                    return Err(ParseError::Invalid {
                        option: "--mode".into(),
                        value: "off".into(),
                    });
                }
                policy.workdir = cwd.unwrap_or_else(|| PathBuf::from("/"));
                return Ok((policy, command));
            }
            let name = option.to_string_lossy().into_owned();
            let value = iter.next().ok_or_else(|| ParseError::MissingValue(name.clone()))?;
            let invalid = || ParseError::Invalid {
                option: name.clone(),
                value: value.to_string_lossy().into_owned(),
            };
            match name.as_str() {
                "--mode" => {
                    policy.mode = match value.to_str().and_then(Mode::parse) {
                        None => return Err(invalid()),
                        Some(mode) => {
                            off = mode == Mode::Off;
                            mode
                        }
                    }
                }
                "--network" => {
                    policy.network = match value.to_str() {
                        Some("on") => true,
                        Some("off") => false,
                        _ => return Err(invalid()),
                    }
                }
                "--exec-guard" => {
                    policy.exec_guard = match value.to_str() {
                        Some("on") => true,
                        Some("off") => false,
                        _ => return Err(invalid()),
                    }
                }
                "--cwd" => cwd = Some(absolute(value).ok_or_else(invalid)?),
                "--mask-file" => policy.mask_file = Some(absolute(value).ok_or_else(invalid)?),
                "--write" => policy.writable.push(absolute(value).ok_or_else(invalid)?),
                "--read-only" => policy.read_only.push(absolute(value).ok_or_else(invalid)?),
                "--mask" => policy.masked.push(absolute(value).ok_or_else(invalid)?),
                _ => return Err(ParseError::Unknown(name)),
            }
        }
        Err(ParseError::NoCommand)
    }

    /// A note for the result of a command that failed: which refusal of the sandbox its
    /// output shows (a write outside the workspace, a hidden or read-only path, the
    /// network), or that the sandbox was on when the output shows a refusal it cannot
    /// place. `None` when the output shows no refusal.
    pub fn explain(&self, output: &str) -> Option<String> {
        crate::explain::explain(self, output)
    }

    /// One sentence on what this policy allows, for people and models.
    pub fn summary(&self) -> String {
        let writes = match self.mode {
            Mode::WorkspaceWrite => {
                let roots: Vec<String> = self.writable.iter().map(|p| p.display().to_string()).collect();
                format!("writes only under {}", roots.join(", "))
            }
            _ => "no writes".to_string(),
        };
        let network = if self.network { "network on" } else { "network off" };
        format!("{} sandbox: {writes}; {network}", self.mode)
    }
}

fn absolute(value: &OsStr) -> Option<PathBuf> {
    let path = PathBuf::from(value);
    path.is_absolute().then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_round_trip_with_odd_paths() {
        use std::os::unix::ffi::OsStrExt;
        let odd = PathBuf::from(OsStr::from_bytes(b"/p/--mask/\xff name"));
        let policy = Policy::new(Mode::WorkspaceWrite, "/p", true)
            .writable(["/cache"])
            .read_only([odd.clone()])
            .masked(["/p/.env", "/p/--"])
            .workdir("/p/sub dir")
            .mask_file("/data/mask.sock");
        let line = policy.command_line("/bin/toolgate", "/bin/bash", ["-c", "echo --mask"]);
        let (parsed, command) = Policy::from_args(&line[2..]).unwrap();
        assert_eq!(parsed, policy);
        assert_eq!(command, ["/bin/bash", "-c", "echo --mask"]);
        assert!(parsed.read_only.contains(&odd));
    }

    #[test]
    fn bad_command_lines_are_refused() {
        let refused = |args: &[&str]| Policy::from_args(args).is_err();
        assert!(refused(&[]));
        assert!(refused(&["--mode", "read-only"]));
        assert!(refused(&["--mode", "read-only", "--"]));
        assert!(refused(&["--mode", "off", "--", "sh"]));
        assert!(refused(&["--mode", "off", "--exec-guard", "off", "--", "sh"]));
        assert!(refused(&["--exec-guard", "maybe", "--", "sh"]));
        assert!(refused(&["--mode", "everything", "--", "sh"]));
        assert!(refused(&["--write", "relative/path", "--", "sh"]));
        assert!(refused(&["--mask"]));
        assert!(refused(&["--unknown", "x", "--", "sh"]));
        assert!(refused(&["--network", "maybe", "--", "sh"]));
    }

    #[test]
    fn the_exec_guard_alone_travels_as_mode_off() {
        let policy = Policy::new(Mode::Off, "/p", true).exec_guard(true);
        let line = policy.command_line("/bin/toolgate", "/bin/bash", ["-c", "true"]);
        let (parsed, _) = Policy::from_args(&line[2..]).unwrap();
        assert_eq!(parsed, policy);
        assert!(!parsed.sandboxed());
        // Without the guard, `off` still travels as the strictest mode.
        let plain = Policy::new(Mode::Off, "/p", false);
        let line = plain.command_line("/bin/toolgate", "/bin/bash", ["-c", "true"]);
        assert_eq!(Policy::from_args(&line[2..]).unwrap().0.mode, Mode::ReadOnly);
    }

    #[test]
    fn modes_order_by_strictness() {
        assert_eq!(Mode::Off.stricter(Mode::WorkspaceWrite), Mode::WorkspaceWrite);
        assert_eq!(Mode::ReadOnly.stricter(Mode::WorkspaceWrite), Mode::ReadOnly);
        for mode in [Mode::Off, Mode::WorkspaceWrite, Mode::ReadOnly] {
            assert_eq!(mode.as_str().parse::<Mode>(), Ok(mode));
        }
    }

    #[test]
    fn read_only_mode_has_no_writable_roots() {
        let policy = Policy::new(Mode::ReadOnly, "/p", false).writable(["/cache"]);
        assert!(policy.writable.is_empty());
        assert!(!policy.is_writable(Path::new("/p/x")));
        let policy = Policy::new(Mode::WorkspaceWrite, "/p", false);
        assert!(policy.is_writable(Path::new("/p/x")));
        assert!(!policy.is_writable(Path::new("/px")));
    }
}
