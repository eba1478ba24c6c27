//! The release packages as a new user gets them (`cargo xtask packages`, part of CI): the
//! dist archive of this machine's target and its sums, and the npm package and wheel built
//! from it, each installed into a fresh prefix and started as an MCP client's config
//! starts it (`npx -y toolgate mcp`, `uvx toolgate mcp`), with no Rust toolchain on PATH,
//! driven by the official MCP Python SDK.
//!
//! Ignored in the ordinary test run: they need the archives, which only the release build
//! of `cargo xtask packages` makes; run without them (`TOOLGATE_DIST_DIR` unset) they fail.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use e2e::Sandbox;

/// The size budget of the stripped default build: what BENCHMARKS.md "Binary size"
/// measured (14.52 MB, then 15.31 MB with OAuth's oauth2 and its second versions of
/// sha2, rand and thiserror) with a little room, so a regression fails here. The wanted
/// 12 MB is not reached yet (BENCHMARKS.md says what is left); lower this as it shrinks.
const SIZE_LIMIT: u64 = 15_600_000;

struct Dist {
    dir: PathBuf,
    version: String,
    target: String,
}

impl Dist {
    fn get() -> Dist {
        let var = |name: &str| {
            std::env::var(name)
                .unwrap_or_else(|_| panic!("{name} is not set: run these through `cargo xtask packages`"))
        };
        Dist {
            dir: PathBuf::from(var("TOOLGATE_DIST_DIR")),
            version: var("TOOLGATE_DIST_VERSION"),
            target: var("TOOLGATE_DIST_TARGET"),
        }
    }

    fn name(&self) -> String {
        format!("toolgate-{}-{}", self.version, self.target)
    }

    fn archive(&self) -> PathBuf {
        self.dir.join(format!("{}.tar.gz", self.name()))
    }
}

fn run(command: &mut Command) -> String {
    let output = command.output().unwrap_or_else(|error| panic!("{command:?}: {error}"));
    assert!(
        output.status.success(),
        "{command:?}: {}\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A PATH with the system's programs and Node's, and no Rust toolchain (`~/.cargo/bin`).
fn clean_path() -> String {
    let mut dirs = vec!["/usr/local/bin".to_string(), "/usr/bin".to_string(), "/bin".to_string()];
    if let Ok(node) = which("node") {
        dirs.insert(0, node.parent().unwrap().display().to_string());
    }
    let path = dirs.join(":");
    for tool in ["cargo", "rustc"] {
        assert!(
            std::env::split_paths(&path).all(|dir| !dir.join(tool).exists()),
            "{tool} is on the clean PATH {path}"
        );
    }
    path
}

fn which(program: &str) -> Result<PathBuf, String> {
    std::env::var_os("PATH")
        .and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(program))
                .find(|candidate| candidate.is_file())
        })
        .ok_or_else(|| format!("{program} is not on PATH"))
}

#[test]
#[ignore = "needs `cargo xtask packages` (the release archives)"]
fn the_archive_holds_what_is_listed_its_sums_check_and_the_binary_fits() {
    let dist = Dist::get();
    // Every archive in SHA256SUMS checks; a changed byte does not.
    run(Command::new("sha256sum")
        .args(["--check", "--strict", "SHA256SUMS"])
        .current_dir(&dist.dir));
    let sums = std::fs::read_to_string(dist.dir.join("SHA256SUMS")).unwrap();
    assert!(sums.contains(&format!("  {}.tar.gz\n", dist.name())), "{sums}");
    let scratch = tempfile::tempdir().unwrap();
    let mut tampered = std::fs::read(dist.archive()).unwrap();
    let middle = tampered.len() / 2;
    tampered[middle] ^= 0x01;
    std::fs::write(scratch.path().join(format!("{}.tar.gz", dist.name())), tampered).unwrap();
    let own_line: String = sums.lines().filter(|line| line.contains(&dist.name())).collect();
    std::fs::write(scratch.path().join("SHA256SUMS"), format!("{own_line}\n")).unwrap();
    let check = Command::new("sha256sum")
        .args(["--check", "--strict", "SHA256SUMS"])
        .current_dir(scratch.path())
        .output()
        .unwrap();
    assert!(!check.status.success(), "a tampered archive passed its sum");

    // Exactly the listed files, under one folder named like the archive.
    let listing = run(Command::new("tar").arg("-tzf").arg(dist.archive()));
    let mut files: Vec<&str> = listing.lines().filter(|line| !line.ends_with('/')).collect();
    files.sort_unstable();
    let mut expected: Vec<String> = [
        "toolgate",
        "toolgate-sandbox-exec",
        "README.md",
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "completions/toolgate.bash",
        "completions/_toolgate",
        "completions/toolgate.fish",
        "completions/_toolgate.ps1",
        "man/toolgate.1",
    ]
    .iter()
    .map(|file| format!("{}/{file}", dist.name()))
    .collect();
    expected.sort_unstable();
    assert_eq!(files, expected);

    run(Command::new("tar")
        .arg("-xzf")
        .arg(dist.archive())
        .arg("-C")
        .arg(scratch.path()));
    let top = scratch.path().join(dist.name());
    let binary = top.join("toolgate");
    let size = std::fs::metadata(&binary).unwrap().len();
    assert!(size <= SIZE_LIMIT, "the binary is {size} bytes, over {SIZE_LIMIT}");
    // No symbol table left (stripped): `nm` finds nothing to list.
    let nm = Command::new("nm").arg(&binary).output().unwrap();
    assert!(
        String::from_utf8_lossy(&nm.stderr).contains("no symbols"),
        "the binary is not stripped"
    );
    // The version names the release, the commit and the features.
    let version = run(Command::new(&binary).arg("--version"));
    assert!(
        version.starts_with(&format!("toolgate {}\n", dist.version)),
        "{version}"
    );
    let commit = version
        .lines()
        .find_map(|line| line.strip_prefix("commit: "))
        .unwrap_or_else(|| panic!("{version}"));
    assert!(
        commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
        "{version}"
    );
    assert!(version.contains("\nfeatures: images, websearch\n"), "{version}");
    let short = run(Command::new(&binary).arg("-V"));
    assert_eq!(short, format!("toolgate {} ({commit})\n", dist.version));

    // The completions and the page are what this binary generates, for every command.
    let bash = std::fs::read_to_string(top.join("completions/toolgate.bash")).unwrap();
    assert_eq!(bash, run(Command::new(&binary).args(["completions", "bash"])));
    for (file, needle) in [
        ("completions/toolgate.bash", "complete -F _toolgate"),
        ("completions/_toolgate", "#compdef toolgate"),
        ("completions/toolgate.fish", "complete -c toolgate"),
        ("completions/_toolgate.ps1", "Register-ArgumentCompleter"),
    ] {
        let text = std::fs::read_to_string(top.join(file)).unwrap();
        assert!(text.contains(needle), "{file}: no {needle:?}");
        assert!(text.contains("approvals") && text.contains("trust-project"), "{file}");
    }
    let page = std::fs::read_to_string(top.join("man/toolgate.1")).unwrap();
    assert!(
        page.starts_with(".ie") || page.contains(".TH toolgate 1"),
        "{page:.200}"
    );
    for section in [".SH \"TOOLGATE MCP\"", ".SH \"TOOLGATE AUDIT TAIL\"", "\\-\\-auto"] {
        assert!(page.contains(section), "the man page has no {section}");
    }
    // The trampoline beside it is the one the binary runs.
    let probe = Command::new(top.join("toolgate-sandbox-exec"))
        .arg("--probe")
        .output()
        .unwrap();
    if probe.status.success() {
        let said = String::from_utf8_lossy(&probe.stdout);
        assert!(said.starts_with("landlock-abi "), "the trampoline's probe: {said}");
    } else {
        assert!(
            !probe.stderr.is_empty(),
            "the trampoline's probe failed silently: {probe:?}"
        );
    }
}

/// `npm install` of the built tarballs into a fresh prefix, as `npx -y` does, then
/// `npx -y toolgate mcp` from it for the Python SDK client.
#[test]
#[ignore = "needs `cargo xtask packages` (the release archives)"]
fn npx_of_the_built_npm_packages_starts_mcp_and_answers_the_sdk() {
    let dist = Dist::get();
    let npm_dir = dist.dir.join("npm");
    // The `toolgate` package and this target's platform package, as npm would pick them.
    let cpu = if dist.target.starts_with("aarch64") {
        "arm64"
    } else {
        "x64"
    };
    let libc = if dist.target.ends_with("-musl") { "musl" } else { "gnu" };
    let tarballs: Vec<PathBuf> = [
        format!("toolgate-{}.tgz", dist.version),
        format!("toolgate-linux-{cpu}-{libc}-{}.tgz", dist.version),
    ]
    .iter()
    .map(|name| npm_dir.join(name))
    .collect();
    for tarball in &tarballs {
        assert!(tarball.is_file(), "no {}", tarball.display());
    }
    let sandbox = Sandbox::new();
    crate::mcp::project(&sandbox);
    let prefix = sandbox.root.path().join("npm-prefix");
    std::fs::create_dir_all(&prefix).unwrap();
    let path = clean_path();
    let cache = sandbox.root.path().join("npm-cache");
    let mut install = Command::new("npm");
    install
        .args([
            "install",
            "--offline",
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--prefix",
        ])
        .arg(&prefix)
        .args(&tarballs)
        .env("PATH", &path)
        .env("npm_config_cache", &cache)
        .env("npm_config_update_notifier", "false");
    run(&mut install);
    // The platform package is there, and only one of them.
    let scoped: Vec<String> = std::fs::read_dir(prefix.join("node_modules/@toolgate"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(scoped.len(), 1, "{scoped:?}");
    let npx = |args: &[&str]| {
        let mut command = Command::new("npx");
        command
            .args(args)
            .current_dir(&prefix)
            .env("PATH", &path)
            .env("npm_config_cache", &cache)
            .env("npm_config_offline", "true");
        command
    };
    let version = run(&mut npx(&["-y", "toolgate", "--version"]));
    assert!(
        version.starts_with(&format!("toolgate {}\n", dist.version)),
        "{version}"
    );
    // A refused command's exit code comes through the launcher.
    let refused = npx(&["-y", "toolgate", "no-such-command"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");

    let project = sandbox.project();
    let prefix_text = prefix.to_str().unwrap();
    let seen = crate::mcp::python_client_with(
        &sandbox,
        &["exec", project.to_str().unwrap(), prefix_text, "npx", "-y", "toolgate"],
        &[
            ("PATH", path.as_str()),
            ("npm_config_cache", cache.to_str().unwrap()),
            ("npm_config_offline", "true"),
        ],
    );
    crate::mcp::check_python_session(&sandbox, &seen);
}

/// `uvx` of the built wheel (uv from PyPI, nothing from anywhere else: `--no-index`), and
/// `pip install` of it into a fresh virtualenv.
#[test]
#[ignore = "needs `cargo xtask packages` (the release archives)"]
fn uvx_and_pip_of_the_built_wheel_start_mcp_and_answer_the_sdk() {
    let dist = Dist::get();
    let wheels = dist.dir.join("pypi");
    // The wheel of this target (a full `dist` also leaves other targets' wheels there).
    let family = if dist.target.ends_with("-musl") {
        "musllinux"
    } else {
        "manylinux"
    };
    let arch = dist.target.split('-').next().unwrap();
    let wheel: Vec<PathBuf> = std::fs::read_dir(&wheels)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            let name = path.file_name().unwrap().to_string_lossy();
            name.ends_with(&format!("_{arch}.whl")) && name.contains(family)
        })
        .collect();
    assert_eq!(wheel.len(), 1, "{wheel:?}");
    let name = wheel[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(&format!("toolgate-{}-py3-none-", dist.version)),
        "{name}"
    );
    let sandbox = Sandbox::new();
    crate::mcp::project(&sandbox);
    let path = clean_path();

    // pip: the binary and its trampoline land side by side in the venv's bin/.
    let venv = sandbox.root.path().join("venv");
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    run(Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", "--no-index"])
        .arg(&wheel[0]));
    for program in ["toolgate", "toolgate-sandbox-exec"] {
        assert!(venv.join("bin").join(program).is_file(), "pip installed no {program}");
    }
    let version = run(Command::new(venv.join("bin/toolgate")).arg("--version"));
    assert!(
        version.starts_with(&format!("toolgate {}\n", dist.version)),
        "{version}"
    );

    // uvx, as an MCP client's config runs it, with its cache and tools in the sandbox.
    let uv = uv();
    let uv_dir = uv.parent().unwrap().display().to_string();
    let path = format!("{uv_dir}:{path}");
    let project = sandbox.project();
    let wheels_text = wheels.to_str().unwrap();
    let root = sandbox.root.path();
    let cache = root.join("uv-cache");
    let tools = root.join("uv-tools");
    let seen = crate::mcp::python_client_with(
        &sandbox,
        &[
            "exec",
            project.to_str().unwrap(),
            root.to_str().unwrap(),
            "uvx",
            "--no-index",
            "--find-links",
            wheels_text,
            "toolgate",
        ],
        &[
            ("PATH", path.as_str()),
            ("UV_CACHE_DIR", cache.to_str().unwrap()),
            ("UV_TOOL_DIR", tools.to_str().unwrap()),
            ("UV_PYTHON_DOWNLOADS", "never"),
            ("UV_NO_CONFIG", "1"),
        ],
    );
    crate::mcp::check_python_session(&sandbox, &seen);
}

/// uv (`uv` from PyPI, pinned), in a virtualenv made once per target directory.
fn uv() -> PathBuf {
    let python = e2e::python_with_mcp();
    let bin = python.parent().unwrap().to_path_buf();
    let uv = bin.join("uv");
    if !uv.is_file() {
        run(Command::new(bin.join("pip")).args(["install", "--quiet", "uv==0.13.9"]));
    }
    assert!(uvx_beside(&uv), "pip installed uv without uvx");
    uv
}

fn uvx_beside(uv: &Path) -> bool {
    uv.with_file_name("uvx").is_file()
}
