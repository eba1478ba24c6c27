//! Exec-time enforcement attacked through the real binary (`toolgate call bash`): every
//! spelling of a denied program, programs that try to get out from under the guard or
//! take it over, a flood of children, a person asked while programs wait, and the
//! supervisor's death. Each test checks afterwards that no process it started is left.
//!
//! The deny rules are written against the absolute path (`/usr/bin/rm *`) where the test
//! is about the kernel: the analysis matches the words of a line (`rm victim`), not the
//! path, so it lets the line run and the exec guard alone has to stop the program.
//!
//! Tests skip, saying why, where the kernel cannot run the guard; with
//! `TOOLGATE_REQUIRE_SANDBOX_TESTS=1` (set by `cargo xtask ci` when its probe found
//! support) they fail instead.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The rules that deny `rm` by its path only.
fn deny_rm_by_path() -> Value {
    json!({"permission": {"bash": {"*": "allow", "/usr/bin/rm *": "deny", "/usr/bin/rm": "deny"}}})
}

/// The rules that deny `rm` by name.
fn deny_rm_by_name() -> Value {
    json!({"permission": {"bash": {"*": "allow", "rm *": "deny", "rm": "deny"}}})
}

/// A project with a data, config, home and temp directory of its own, a file `victim`
/// that `rm` would remove, and a marker in the environment of everything it starts.
struct Project {
    root: tempfile::TempDir,
    marker: String,
}

impl Project {
    fn new(config: Value) -> Project {
        let root = tempfile::tempdir().unwrap();
        for dir in ["project", "data", "config", "home", "tmp"] {
            std::fs::create_dir(root.path().join(dir)).unwrap();
        }
        let p = Project {
            marker: format!("exec-guard-test-{}", root.path().display()),
            root,
        };
        std::fs::write(p.project().join("toolgate.json"), config.to_string()).unwrap();
        std::fs::write(p.project().join("victim"), "delete me\n").unwrap();
        p
    }

    fn root(&self) -> PathBuf {
        std::fs::canonicalize(self.root.path()).unwrap()
    }

    fn project(&self) -> PathBuf {
        self.root().join("project")
    }

    /// A trusted `PATH` directory of this test's own, outside what the command can
    /// write, with a copy of `rm` in it: a test that links to it changes no file of the
    /// system's (a link changes its file's ctime, which concurrent tests would see).
    fn trusted_rm(&self) -> PathBuf {
        let bin = self.root().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let rm = bin.join("rm");
        std::fs::copy("/usr/bin/rm", &rm).unwrap();
        rm
    }

    /// The commands' `PATH`: the test's own `bin` first when it has one.
    fn path(&self) -> std::ffi::OsString {
        let system = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
        let bin = self.root().join("bin");
        if !bin.is_dir() {
            return system;
        }
        std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&system))).unwrap()
    }

    fn victim(&self) -> bool {
        self.project().join("victim").exists()
    }

    fn command(&self, binary: &Path) -> Command {
        let mut command = Command::new(binary);
        command
            .current_dir(self.project())
            .env("TOOLGATE_DATA_DIR", self.root().join("data"))
            .env("TOOLGATE_CONFIG_DIR", self.root().join("config"))
            .env("TMPDIR", self.root().join("tmp"))
            .env("HOME", self.root().join("home"))
            .env("EXEC_GUARD_TEST", &self.marker)
            .env_remove("TOOLGATE_PERMISSION")
            .env("PATH", self.path())
            .env_remove("TOOLGATE_TEST_EXEC_GUARD_MISSING")
            .stdin(Stdio::null());
        command
    }

    /// `toolgate call bash LINE --json` (and `extra`): the result text.
    fn bash(&self, line: &str, extra: &[&str]) -> String {
        let input = json!({"command": line, "timeout": 60000}).to_string();
        let output = self
            .command(&e2e::toolgate_binary())
            .args(["call", "bash", &input, "--json"])
            .args(extra)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let settled: Value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
        match (&settled["result"]["value"], &settled["result"]["error"]) {
            (Value::String(text), _) | (_, Value::String(text)) => text.clone(),
            _ => format!("{stdout}{}", String::from_utf8_lossy(&output.stderr)),
        }
    }

    /// Processes still running with this project's marker in their environment or a
    /// working directory inside it.
    fn leftovers(&self) -> Vec<String> {
        let root = self.root();
        let mut found = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.bytes().all(|b| b.is_ascii_digit()) || name == std::process::id().to_string() {
                continue;
            }
            let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
            let marked = environ
                .split(|b| *b == 0)
                .any(|var| var == format!("EXEC_GUARD_TEST={}", self.marker).as_bytes());
            let inside = std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| cwd.starts_with(&root));
            if marked || inside {
                let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
                found.push(format!(
                    "{name}: {}",
                    String::from_utf8_lossy(&cmdline).replace('\0', " ")
                ));
            }
        }
        found
    }

    /// Waits (a group is ended with TERM, then KILL after 3 s) until nothing is left.
    fn assert_nothing_left(&self) {
        let deadline = Instant::now() + Duration::from_secs(8);
        loop {
            let left = self.leftovers();
            if left.is_empty() {
                return;
            }
            assert!(Instant::now() < deadline, "processes left behind: {left:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The dynamic loader of this machine, if it is one the test knows.
fn loader() -> Option<&'static str> {
    ["/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"]
        .into_iter()
        .find(|path| Path::new(path).exists())
}

#[test]
fn every_spelling_of_a_denied_program_is_refused() {
    if !e2e::kernel_has(e2e::KernelFeature::ExecGuard) {
        return;
    }
    let mut lines = vec![
        "rm victim".to_string(),
        "/usr/bin/rm victim".to_string(),
        "/bin/rm victim".to_string(),
        "/usr/bin/../bin/rm victim".to_string(),
        "/proc/self/root/usr/bin/rm victim".to_string(),
        "ln -s /usr/bin/rm r; ./r victim".to_string(),
        "ln -s /bin/rm r; PATH=.:$PATH r victim".to_string(),
        "exec 3</usr/bin/rm; /dev/fd/3 victim".to_string(),
        "exec 3</usr/bin/rm; /proc/self/fd/3 victim".to_string(),
        "exec 3</usr/bin/rm; /proc/$$/fd/3 victim".to_string(),
        "printf '#!/usr/bin/rm\\n' > s; chmod +x s; ./s victim".to_string(),
        "printf '#!/usr/bin/rm\\n' > s2; printf '#!%s/s2\\n' \"$PWD\" > s1; chmod +x s1 s2; ./s1 victim".to_string(),
        "exec 3</usr/bin/rm; printf '#!/dev/fd/3\\n' > s; chmod +x s; ./s victim".to_string(),
        "env rm victim".to_string(),
        "env -i /usr/bin/rm victim".to_string(),
        "exec -a innocent rm victim".to_string(),
        "bash -c 'rm victim'".to_string(),
        "find . -name victim -exec rm {} +".to_string(),
        "echo victim | xargs rm".to_string(),
        "nice rm victim".to_string(),
        "timeout 5 rm victim".to_string(),
        // execveat of a descriptor (fexecve) and of a directory descriptor, from Python.
        "printf 'import os\\nfd = os.open(\"/usr/bin/rm\", os.O_RDONLY)\\nos.execve(fd, [\"rm\", \"victim\"], {})\\n' > x.py; python3 x.py"
            .to_string(),
        "printf 'import ctypes, os\\nlibc = ctypes.CDLL(None, use_errno=True)\\nd = os.open(\"/usr/bin\", os.O_RDONLY)\\nargv = (ctypes.c_char_p * 3)(b\"rm\", b\"victim\", None)\\nenvp = (ctypes.c_char_p * 1)(None)\\nlibc.syscall(322, d, b\"rm\", argv, envp, 0)\\nprint(\"execveat errno\", ctypes.get_errno())\\n' > x.py; python3 x.py"
            .to_string(),
    ];
    if let Some(loader) = loader() {
        lines.push(format!("{loader} /usr/bin/rm victim"));
        lines.push(format!("{loader} --argv0 x /usr/bin/rm victim"));
        lines.push(format!("exec 3<{loader}; /dev/fd/3 /usr/bin/rm victim"));
    }
    let mut failures = Vec::new();
    let mut by_kernel = 0;
    for line in &lines {
        let p = Project::new(deny_rm_by_path());
        // Inside a function redefined after its first use, which the analysis misreads
        // (it sees only the first body), so the kernel is what has to stop it.
        let hidden = format!("f() {{ :; }}; f; f() {{ {line}\n}}; f");
        let text = p.bash(&hidden, &["--auto"]);
        let kernel = text.contains("toolgate refused to start") && text.contains("/usr/bin/rm *");
        by_kernel += usize::from(kernel);
        if !p.victim() || !(kernel || text.starts_with("Permission denied: bash")) {
            failures.push(format!("{line:?}: victim {}, result: {text}", p.victim()));
        }
        p.assert_nothing_left();
    }
    assert!(
        by_kernel * 2 >= lines.len(),
        "only {by_kernel} of {} reached the kernel",
        lines.len()
    );
    // By name too, for the spellings that hide the name from the analysis.
    for line in [
        "ln -s /usr/bin/rm r; ./r victim",
        "exec 3</usr/bin/rm; /dev/fd/3 victim",
        "printf '#!/usr/bin/rm\\n' > s; chmod +x s; ./s victim",
    ] {
        let p = Project::new(deny_rm_by_name());
        let text = p.bash(line, &["--auto"]);
        if !p.victim() || !text.contains("toolgate refused to start") || !text.contains("\"rm *\"") {
            failures.push(format!("by name: {line:?}: victim {}, result: {text}", p.victim()));
        }
        p.assert_nothing_left();
    }
    assert!(failures.is_empty(), "denied rm started:\n{}", failures.join("\n"));
}

#[test]
fn a_hard_link_is_the_same_program() {
    if !e2e::kernel_has(e2e::KernelFeature::ExecGuard) {
        return;
    }
    // Made before the line: `./hl` is `rm` (it is the file `rm` resolves to), refused by
    // a rule on the trusted path.
    let p = Project::new(json!({}));
    let rm = p.trusted_rm();
    let config = json!({"permission": {"bash": {"*": "allow", format!("{} *", rm.display()): "deny"}}});
    std::fs::write(p.project().join("toolgate.json"), config.to_string()).unwrap();
    std::fs::hard_link(&rm, p.project().join("hl")).unwrap();
    let text = p.bash("./hl victim", &["--auto"]);
    assert!(p.victim(), "{text}");
    assert!(text.contains("toolgate refused to start `rm victim`"), "{text}");
    p.assert_nothing_left();
}

/// A refusal at `execve` is a decision record of its own: source `exec`, the rule that
/// refused, the spelling it was decided on; `audit why` prints it.
#[test]
fn an_exec_time_refusal_is_an_audit_record_naming_its_rule() {
    if !e2e::kernel_has(e2e::KernelFeature::ExecGuard) {
        return;
    }
    let p = Project::new(deny_rm_by_path());
    std::fs::write(p.project().join("s.sh"), "#!/bin/sh\nrm victim\n").unwrap();
    std::fs::set_permissions(
        p.project().join("s.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let text = p.bash("./s.sh", &["--auto"]);
    assert!(p.victim(), "{text}");
    let audit = std::fs::read_to_string(p.root().join("data/audit.jsonl")).unwrap();
    let refused: Vec<Value> = audit
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|r| r["source"]["kind"] == "exec")
        .collect();
    // `sh` looks for `rm` along `PATH` and tries again where the first was refused
    // (`/usr/bin/rm`, then `/bin/rm`): each start refused is a record.
    assert!(
        !refused.is_empty() && refused.iter().all(|r| r["effect"] == "deny"),
        "{audit}"
    );
    assert_eq!(refused[0]["rule"]["resource"], "/usr/bin/rm *", "{}", refused[0]);
    assert_eq!(refused[0]["tool"], "bash");
    let call = refused[0]["call"].as_str().unwrap();
    let output = p
        .command(&e2e::toolgate_binary())
        .args(["audit", "why", call])
        .output()
        .unwrap();
    let why = String::from_utf8_lossy(&output.stdout);
    assert!(
        why.contains("by exec-time enforcement, rule bash \"/usr/bin/rm *\" deny"),
        "{why}"
    );
    p.assert_nothing_left();
}

#[test]
fn a_program_changed_while_the_line_runs_is_still_refused_by_its_name() {
    if !e2e::kernel_has(e2e::KernelFeature::ExecGuard) {
        return;
    }
    // A hard link made by the line (or by anything else on the machine while it runs)
    // changes the program's ctime: its name is no longer trusted to allow it, and a deny
    // rule for the name must still hold, by its own name and by the link's.
    for line in [
        "ln RM hl; ./hl victim",
        // (`rm victim` that the analysis cannot read: the kernel has to stop it.)
        "ln RM hl; eval \"$(echo cm0gdmljdGlt | base64 -d)\"",
        "ln RM hl; mkdir d; cd d; ../hl ../victim",
    ] {
        let p = Project::new(deny_rm_by_name());
        // The test's own `rm`, first in `PATH`: the system's is never linked.
        let rm = p.trusted_rm();
        let line = line.replace("RM", &rm.display().to_string());
        let line = line.as_str();
        let text = p.bash(line, &["--auto"]);
        assert!(p.victim(), "{line}: {text}");
        assert!(text.contains("toolgate refused to start"), "{line}: {text}");
        assert!(text.contains("\"rm *\""), "{line}: {text}");
        p.assert_nothing_left();
    }
}

#[test]
fn a_copy_is_the_same_program_and_a_changed_one_is_decided_by_its_own_path() {
    if !e2e::kernel_has(e2e::KernelFeature::ExecGuard) {
        return;
    }
    // Byte for byte `rm`, under another name: refused by the rule for `rm` (README "The
    // bash tool").
    let p = Project::new(deny_rm_by_name());
    let text = p.bash("cp /usr/bin/rm ./eraser; ./eraser victim", &["--auto"]);
    assert!(p.victim(), "{text}");
    assert!(text.contains("toolgate refused to start"), "{text}");
    assert!(text.contains("\"rm *\""), "{text}");
    p.assert_nothing_left();
    // The same bytes in memory, run through the descriptor (`fexecve`).
    let p = Project::new(deny_rm_by_name());
    let line = "python3 -c \"import os; fd = os.memfd_create('x'); os.write(fd, open('/usr/bin/rm', 'rb').read()); \
                os.execve(fd, ['x', 'victim'], dict(os.environ))\"";
    let text = p.bash(line, &["--auto"]);
    assert!(p.victim(), "{text}");
    assert!(text.contains("\"rm *\""), "{text}");
    p.assert_nothing_left();
    // A changed copy is another program: a rule on its absolute path holds it.
    let p = Project::new(json!({}));
    let copy = p.project().join("eraser");
    let config = json!({"permission": {"bash": {
        "*": "allow",
        format!("{} *", copy.display()): "deny",
    }}});
    std::fs::write(p.project().join("toolgate.json"), config.to_string()).unwrap();
    let text = p.bash(
        "cp /usr/bin/rm ./eraser; printf x >> eraser; ./eraser victim",
        &["--auto"],
    );
    assert!(p.victim(), "{text}");
    assert!(text.contains("toolgate refused to start"), "{text}");
    p.assert_nothing_left();
}

/// A rule written for one name of a program holds for the program under a name that is
/// not a trusted one of its own (a link made in the project), for the name the caller
/// gives it (`argv[0]`), and for a script given to an interpreter; a file run by a
/// trusted name of its own is that program (`rustc` is not `cargo`, `xz` is not `unxz`).
#[test]
fn a_rule_for_one_name_of_a_program_holds_under_its_other_names() {
    if !e2e::kernel_has(e2e::KernelFeature::ExecGuard) {
        return;
    }
    let mut failures = Vec::new();
    let mut check = |p: &Project, line: &str, rule: &str| {
        let text = p.bash(line, &["--auto"]);
        if !p.victim() || !text.contains("toolgate refused to start") || !text.contains(rule) {
            failures.push(format!("{line:?}: result: {text}"));
        }
        p.assert_nothing_left();
    };
    // A link made in the project to a rule's program, under a name of its own.
    let p = Project::new(deny_rm_by_name());
    let rm = p.trusted_rm();
    std::fs::hard_link(&rm, p.project().join("lsy")).unwrap();
    check(&p, "./lsy victim", "\"rm *\"");
    // An interpreter given the rule's program as its script.
    let p = Project::new(json!({"permission": {"bash": {"*": "allow", "tidy-up *": "deny"}}}));
    let bin = p.root().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("tidy-up");
    std::fs::write(&script, "#!/bin/sh\nrm -f \"$@\"\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    check(&p, &format!("sh {} victim", script.display()), "\"tidy-up *\"");
    // … by a copy of the interpreter (known by its bytes), and on its standard input.
    let copy = format!(
        "cp \"$(readlink -f /bin/sh)\" ./mysh; ./mysh {} victim",
        script.display()
    );
    check(&p, &copy, "\"tidy-up *\"");
    check(&p, &format!("sh -s victim < {}", script.display()), "\"tidy-up *\"");
    // One file behind many names (as rustup's `cargo` and `rustc`, or pyenv's shims,
    // are) is the program it is run as, by a trusted name of its own: an ask for `cargo`
    // is not an ask for `rustc`. Run by another name (`argv[0]`), a rule for that name
    // holds.
    let p = Project::new(json!({"permission": {"bash": {"*": "allow", "cargo *": "ask"}}}));
    let bin = p.root().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("cargo"), "#!/bin/sh\necho \"ran as $(basename $0)\"\n").unwrap();
    std::fs::set_permissions(bin.join("cargo"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::hard_link(bin.join("cargo"), bin.join("rustc")).unwrap();
    let text = p.bash("rustc --version", &[]);
    if !text.contains("ran as rustc") {
        failures.push(format!("rustc under a cargo ask: result: {text}"));
    }
    let text = p.bash("(exec -a cargo rustc --version)", &[]);
    if text.contains("ran as") || !text.contains("cargo --version") {
        failures.push(format!("rustc run as cargo: result: {text}"));
    }
    p.assert_nothing_left();
    // The name the caller gives it: `xz` run as `unxz` decompresses. Run as `xz`, it is
    // `xz` (README: write `xz -d *` to refuse decompressing by any name).
    if Path::new("/usr/bin/xz").exists() {
        let p = Project::new(json!({"permission": {"bash": {"*": "allow", "unxz *": "deny"}}}));
        let packed = Command::new("xz").arg(p.project().join("victim")).status().unwrap();
        assert!(packed.success() && !p.victim());
        let text = p.bash("(exec -a unxz xz victim.xz)", &["--auto"]);
        if p.victim() || !text.contains("\"unxz *\"") {
            failures.push(format!("exec -a unxz: result: {text}"));
        }
        let text = p.bash("xz -d victim.xz", &["--auto"]);
        if !p.victim() {
            failures.push(format!("xz -d under an unxz deny: result: {text}"));
        }
        p.assert_nothing_left();
    } else {
        eprintln!("skipped the argv[0] case: no /usr/bin/xz");
    }
    assert!(failures.is_empty(), "denied programs started:\n{}", failures.join("\n"));
}

/// After a `chroot` that leaves the working directory outside the new root, a relative
/// path is walked from that directory, which no path of the process names: the guard
/// refuses it rather than look it up in the new root (where a decoy waits).
#[test]
fn the_working_directory_is_walked_from_itself_after_a_chroot_or_a_mount_over_it() {
    if !e2e::kernel_has(e2e::KernelFeature::ExecGuard) || !e2e::kernel_has(e2e::KernelFeature::Sandbox) {
        return;
    }
    let p = Project::new(deny_rm_by_name());
    // The decoy: where the guard would look for `zz` inside the new root.
    let decoy = p.project().join("chr").join(p.project().strip_prefix("/").unwrap());
    std::fs::create_dir_all(&decoy).unwrap();
    std::fs::copy("/usr/bin/true", decoy.join("zz")).unwrap();
    // What the real `rm` needs to start inside the new root: its loader and libraries.
    let ldd = Command::new("ldd").arg("/usr/bin/rm").output().unwrap();
    for library in String::from_utf8_lossy(&ldd.stdout)
        .split_whitespace()
        .filter(|word| word.starts_with('/'))
    {
        let inside = p.project().join("chr").join(library.trim_start_matches('/'));
        std::fs::create_dir_all(inside.parent().unwrap()).unwrap();
        std::fs::copy(library, inside).unwrap();
    }
    let up = "../".repeat(p.project().components().count());
    std::os::unix::fs::symlink(format!("{up}usr/bin/rm"), p.project().join("zz")).unwrap();
    let line = "python3 -c \"import os, ctypes; ctypes.CDLL(None).unshare(0x10000000); os.chroot('chr');                 os.execv('zz', ['zz', 'victim'])\"";
    let text = p.bash(line, &["--auto"]);
    assert!(p.victim(), "{text}");
    p.assert_nothing_left();
    // A chroot into `sub` with the working directory left outside: `sub/..` stops at the
    // new root, so `sub/../zz` is `sub/zz` (rm), not the decoy `./zz` beside it.
    let p = Project::new(deny_rm_by_name());
    let sub = p.project().join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let ldd = Command::new("ldd").arg("/usr/bin/rm").output().unwrap();
    for library in String::from_utf8_lossy(&ldd.stdout)
        .split_whitespace()
        .filter(|word| word.starts_with('/'))
    {
        let inside = sub.join(library.trim_start_matches('/'));
        std::fs::create_dir_all(inside.parent().unwrap()).unwrap();
        std::fs::copy(library, inside).unwrap();
    }
    std::fs::copy("/usr/bin/rm", sub.join("zz")).unwrap();
    std::fs::copy("/usr/bin/true", p.project().join("zz")).unwrap();
    let line = "python3 -c \"import os, ctypes; ctypes.CDLL(None).unshare(0x10000000); os.chroot('sub'); \
                os.execv('sub/../zz', ['zz', '/victim'])\"";
    std::fs::write(sub.join("victim"), "").unwrap();
    let text = p.bash(line, &["--auto"]);
    assert!(sub.join("victim").exists(), "{text}");
    assert!(text.contains("toolgate refused to start"), "{text}");
    p.assert_nothing_left();
    // A directory mounted over `/proc` in a namespace of the command's own: the caller's
    // `/proc/self/cwd` is a link the command made, not this process's `/proc`.
    let p = Project::new(deny_rm_by_name());
    let script = "import os, ctypes\nlibc = ctypes.CDLL(None)\nP = os.getcwd()\nos.makedirs('d')\n\
                  os.symlink('/usr/bin/rm', 'd/zz')\nos.symlink('/usr/bin/true', 'zz')\nos.makedirs('fp/self')\n\
                  os.symlink(P + '/d', 'fp/self/cwd')\nassert libc.unshare(0x00020000 | 0x10000000) == 0\n\
                  libc.mount(None, b'/', None, 0x40000 | 0x4000, None)\nassert libc.mount(b'fp', b'/proc', None, 0x1000, None) == 0\n\
                  os.execv('/proc/self/cwd/zz', ['zz', 'victim'])\n";
    std::fs::write(p.project().join("proc.py"), script).unwrap();
    let text = p.bash("python3 proc.py", &["--auto"]);
    assert!(p.victim(), "{text}");
    assert!(text.contains("toolgate refused to start `rm victim`"), "{text}");
    p.assert_nothing_left();
    // A mount over the working directory: the path `/proc` prints for it now names the
    // mount's decoy, the kernel walks from the directory itself.
    let p = Project::new(deny_rm_by_name());
    let line = "mkdir d; cd d; ln -s /usr/bin/rm zz; unshare -Urm sh -c \"mount -t tmpfs t \\$PWD && \
                ln -s /usr/bin/true \\$PWD/zz && ./zz ../victim; /proc/self/cwd/zz ../victim\"";
    let text = p.bash(line, &["--auto"]);
    assert!(p.victim(), "{text}");
    assert!(text.contains("toolgate refused to start `rm ../victim`"), "{text}");
    p.assert_nothing_left();
}

#[test]
fn setuid_programs_run_without_their_privileges_and_the_result_says_so() {
    if !e2e::kernel_has(e2e::KernelFeature::ExecGuard) {
        return;
    }
    let p = Project::new(json!({"permission": {"bash": {"*": "allow"}}}));
    if rustix::process::geteuid().is_root() {
        if Command::new("setpriv").arg("--version").output().is_err() {
            eprintln!("SKIPPED: root without setpriv: the unprivileged side cannot be tried");
            return;
        }
        // A setuid-root copy of `id`, and the rest of the tree the unprivileged user's.
        let bin = p.root().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::copy(e2e::toolgate_binary(), bin.join("toolgate")).unwrap();
        std::fs::copy("/usr/bin/id", bin.join("id")).unwrap();
        let status = Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(p.root())
            .status()
            .unwrap();
        assert!(status.success());
        let status = Command::new("chown")
            .args(["0:0"])
            .arg(bin.join("id"))
            .status()
            .unwrap();
        assert!(status.success());
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(bin.join("id"), std::fs::Permissions::from_mode(0o4755)).unwrap();
        let run = |line: &str| {
            let input = json!({"command": line}).to_string();
            let mut command = p.command(Path::new("setpriv"));
            command
                .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(bin.join("toolgate"))
                .args(["call", "bash", &input, "--json"]);
            String::from_utf8_lossy(&command.output().unwrap().stdout).into_owned()
        };
        let text = run(&format!("{}; echo done", bin.join("id").display()));
        assert!(text.contains("uid=65534"), "{text}");
        assert!(
            !text.contains("euid=0"),
            "the setuid program kept its privilege: {text}"
        );
        assert!(
            text.contains("is setuid: toolgate starts commands with no_new_privs"),
            "{text}"
        );
        // sudo, where it is installed, cannot become root, and the result says why.
        if Path::new("/usr/bin/sudo").exists() {
            let text = run("sudo -n rm victim; echo rc=$?");
            assert!(p.victim() && !text.contains("rc=0"), "{text}");
            assert!(text.contains("`sudo -n rm victim` is setuid"), "{text}");
        }
    } else if Path::new("/usr/bin/sudo").exists() {
        let text = p.bash("sudo -n rm victim; echo rc=$?", &[]);
        assert!(p.victim() && !text.contains("rc=0"), "{text}");
        assert!(text.contains("`sudo -n rm victim` is setuid"), "{text}");
    } else {
        eprintln!("SKIPPED: not root and no sudo: no setuid program to try");
    }
    p.assert_nothing_left();
}

#[test]
fn other_architectures_system_calls_kill_the_process() {
    if !e2e::kernel_has(e2e::KernelFeature::ExecGuard) || !cfg!(target_arch = "x86_64") {
        return;
    }
    let p = Project::new(deny_rm_by_path());
    // i386 `int 0x80` execve (11) and x32 execve (0x40000000 | 59), from machine code
    // Python puts in executable memory; neither may reach the kernel's exec unseen.
    let script = |code: &str| {
        format!(
            "import ctypes, mmap\n\
             code = bytes.fromhex('{code}')\n\
             buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n\
             buf.write(code)\n\
             addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))\n\
             ctypes.CFUNCTYPE(ctypes.c_long)(addr)()\n\
             print('survived')\n"
        )
    };
    for (name, code) in [("i386", "b80b000000cd80c3"), ("x32", "b83b0000400f05c3")] {
        std::fs::write(p.project().join(format!("{name}.py")), script(code)).unwrap();
        let text = p.bash(&format!("python3 {name}.py; echo rc=$?"), &["--auto"]);
        assert!(!text.contains("survived"), "{name}: {text}");
        assert!(text.contains("rc=159"), "{name}: killed by SIGSYS: {text}");
    }
    p.assert_nothing_left();
}

#[test]
fn a_command_cannot_install_a_listener_of_its_own() {
    if !e2e::kernel_has(e2e::KernelFeature::ExecGuard) {
        return;
    }
    let p = Project::new(deny_rm_by_path());
    // seccomp(SET_MODE_FILTER, NEW_LISTENER) with an allow-all filter, then with high
    // bits set in the operation and the flags (the kernel reads both as 32-bit).
    let script = "import ctypes, struct, sys\n\
        libc = ctypes.CDLL(None, use_errno=True)\n\
        insn = struct.pack('HBBI', 0x06, 0, 0, 0x7fff0000)\n\
        buf = ctypes.create_string_buffer(insn)\n\
        prog = struct.pack('HxxxxxxQ', 1, ctypes.addressof(buf))\n\
        pbuf = ctypes.create_string_buffer(prog)\n\
        for op, flags in [(1, 8), (1 | (1 << 32), 8 | (1 << 32))]:\n\
        \x20   r = libc.syscall(ctypes.c_long(317), ctypes.c_ulong(op), ctypes.c_ulong(flags), pbuf)\n\
        \x20   print('listener', r, ctypes.get_errno())\n";
    std::fs::write(p.project().join("listen.py"), script).unwrap();
    let text = p.bash("python3 listen.py; rm victim", &["--auto"]);
    // EPERM from the guard's own rule (the kernel alone would say EBUSY).
    assert_eq!(text.matches("listener -1 1\n").count(), 2, "{text}");
    assert!(p.victim(), "{text}");
    assert!(text.contains("toolgate refused to start `rm victim`"), "{text}");
    // A nested toolgate: its own guard cannot be installed, so it runs unguarded, under
    // the outer guard, which still refuses rm.
    let binary = e2e::toolgate_binary();
    let nested = json!({"command": "rm victim"}).to_string();
    let line = format!(
        "{} call bash '{}' --auto; echo nested=$?",
        binary.display(),
        nested.replace('\'', "'\\''")
    );
    let text = p.bash(&line, &["--auto"]);
    assert!(p.victim(), "{text}");
    assert!(text.contains("toolgate refused to start `rm victim`"), "{text}");
    p.assert_nothing_left();
}

#[test]
fn two_hundred_children_that_each_start_a_program_are_all_decided() {
    if !e2e::kernel_has(e2e::KernelFeature::ExecGuard) {
        return;
    }
    let p = Project::new(deny_rm_by_path());
    for i in 0..4 {
        std::fs::write(p.project().join(format!("v{i}")), "x").unwrap();
    }
    let line = "for i in $(seq 200); do ( case $i in 50) rm v0;; 100) rm v1;; 150) rm v2;; 200) rm v3;; \
                *) /usr/bin/true && echo ok >> log;; esac ) & done; wait; echo all done";
    let started = Instant::now();
    let text = p.bash(line, &["--auto"]);
    assert!(text.contains("all done"), "{text}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
    let log = std::fs::read_to_string(p.project().join("log")).unwrap();
    assert_eq!(log.lines().count(), 196, "{text}");
    for i in 0..4 {
        assert!(p.project().join(format!("v{i}")).exists(), "v{i}: {text}");
    }
    p.assert_nothing_left();
}

#[test]
fn an_explicit_ask_at_exec_is_put_to_the_person() {
    if !e2e::kernel_has(e2e::KernelFeature::ExecGuard) {
        return;
    }
    // `touch` by path, in a function redefined after its first use: the analysis sees
    // neither, so each touch is asked when it starts.
    let config = json!({"permission": {"bash": {"*": "allow", "/usr/bin/touch *": "ask"}}});
    let line = "f() { :; }; f; f() { touch a; touch a; touch b; }; f; echo rc=$?";
    // --auto answers each question once: the same command again is not asked again.
    let p = Project::new(config.clone());
    let text = p.bash(line, &["--auto"]);
    assert!(
        p.project().join("a").exists() && p.project().join("b").exists(),
        "{text}"
    );
    assert!(text.contains("rc=0"), "{text}");
    let audit = std::fs::read_to_string(p.root().join("data/audit.jsonl")).unwrap_or_default();
    let asked = |what: &str| {
        audit
            .lines()
            .filter(|l| l.contains(what) && l.contains("\"auto\""))
            .count()
    };
    assert_eq!(asked("touch a"), 1, "{audit}");
    assert_eq!(asked("touch b"), 1, "{audit}");
    p.assert_nothing_left();
    // No terminal and no --auto: declined; the program fails and the result says so.
    let p = Project::new(config);
    let text = p.bash(line, &[]);
    assert!(!p.project().join("a").exists(), "{text}");
    assert!(text.contains("Operation not permitted"), "{text}");
    assert!(
        text.contains("toolgate refused to start `touch a` when it started"),
        "{text}"
    );
    p.assert_nothing_left();
}

#[test]
fn a_racing_thread_does_not_stall_or_crash_the_supervisor() {
    // A thread rewrites the path after the supervisor read it: the documented limit of
    // user notification (README "The bash tool"). Whether the race wins is not asserted;
    // the supervisor must answer every call, end with the command, and keep refusing.
    if !e2e::kernel_has(e2e::KernelFeature::ExecGuard) {
        return;
    }
    let p = Project::new(deny_rm_by_path());
    let script = "import ctypes, threading\n\
        libc = ctypes.CDLL(None, use_errno=True)\n\
        path = ctypes.create_string_buffer(b'/usr/bin/true', 32)\n\
        argv = (ctypes.c_char_p * 3)(b'x', b'victim', None)\n\
        envp = (ctypes.c_char_p * 1)(None)\n\
        def flip():\n\
        \x20   while True:\n\
        \x20       ctypes.memmove(path, b'/usr/bin/rm\\0', 12)\n\
        \x20       ctypes.memmove(path, b'/usr/bin/true\\0', 14)\n\
        threading.Thread(target=flip, daemon=True).start()\n\
        libc.execve(path, argv, envp)\n\
        print('refused', ctypes.get_errno())\n";
    std::fs::write(p.project().join("race.py"), script).unwrap();
    // The same through the file system: another program the rules let run swaps the file
    // at the path between the supervisor's look and the kernel's exec (the shell that
    // runs `./x` needs no second thread for it). Copies are linked, never the system's
    // files: a link changes its file's ctime, which every test running beside this one
    // would see.
    std::fs::copy("/usr/bin/true", p.project().join("t0")).unwrap();
    std::fs::copy("/usr/bin/rm", p.project().join("r0")).unwrap();
    let swap = "import os\n\
        while True:\n\
        \x20   os.link('t0', 'n'); os.replace('n', 'x')\n\
        \x20   os.link('r0', 'n'); os.replace('n', 'x')\n";
    std::fs::write(p.project().join("swap.py"), swap).unwrap();
    let started = Instant::now();
    let text = p.bash(
        "for i in $(seq 30); do python3 race.py; done; echo raced; \
         f() { :; }; f; f() { python3 swap.py 2> /dev/null & sleep 0.2; for i in $(seq 100); do ./x victim 2> /dev/null; \
         done; kill %1; wait\n}; f; echo swapped; rm victim; echo rc=$?",
        &["--auto"],
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
    assert!(text.contains("raced") && text.contains("swapped"), "{text}");
    // The plain rm after the race is refused whatever the race did to the victim.
    assert!(text.contains("rc=126"), "{text}");
    p.assert_nothing_left();
}

#[test]
fn programs_left_behind_cannot_start_anything_once_the_supervisor_is_gone() {
    if !e2e::kernel_has(e2e::KernelFeature::ExecGuard) {
        return;
    }
    let p = Project::new(json!({"permission": {"bash": {"*": "allow"}}}));
    let marker = p.project().join("after");
    // Normal end: a process that left the group starts a program after the call ended.
    let line = format!(
        "setsid bash -c 'sleep 1; /usr/bin/true; echo $? > {}' > /dev/null 2>&1 < /dev/null & sleep 0.5; echo started",
        marker.display()
    );
    let text = p.bash(&line, &["--auto"]);
    assert!(text.contains("started"), "{text}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !marker.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(100));
    // ENOSYS: bash reports 126 for a program it could not execute.
    assert_eq!(std::fs::read_to_string(&marker).unwrap_or_default().trim(), "126");
    p.assert_nothing_left();

    // The supervisor killed: a waiting command's next program fails the same way.
    let marker = p.project().join("killed");
    let input = json!({"command": format!(
        "sleep 1.5; /usr/bin/true 2> err; echo $? > {}", marker.display()
    )})
    .to_string();
    let mut toolgate = p
        .command(&e2e::toolgate_binary())
        .args(["call", "bash", &input, "--auto"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    toolgate.kill().unwrap();
    toolgate.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !marker.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(std::fs::read_to_string(&marker).unwrap_or_default().trim(), "126");
    let err = std::fs::read_to_string(p.project().join("err")).unwrap_or_default();
    assert!(err.contains("Function not implemented"), "{err}");
    p.assert_nothing_left();
}

#[test]
fn an_allow_list_runs_what_it_allows_and_nothing_else() {
    if !e2e::kernel_has(e2e::KernelFeature::ExecGuard) {
        return;
    }
    // Deny by default, allow by name: the path spelling of an allowed program meets only
    // the catch-all deny, which must not decide over the rule written for its name.
    let p = Project::new(json!({"permission": {"bash": {
        "*": "deny", "ls *": "allow", "ls": "allow", "cat *": "allow", "echo *": "allow",
        "make *": "allow",
    }}}));
    // What an approved program starts (make's recipe) inherits its approval unless a deny
    // matches it: the catch-all deny holds for `rm` at exec, which the analysis never saw
    // (it does not read Makefiles).
    std::fs::write(p.project().join("Makefile"), "all:\n\trm victim\n").unwrap();
    let text = p.bash("ls; cat toolgate.json > /dev/null && echo cat-ok; make -s", &[]);
    assert!(text.contains("victim\n") && text.contains("cat-ok"), "{text}");
    assert!(p.victim(), "{text}");
    assert!(
        text.contains("toolgate refused to start `rm victim` by rule bash \"*\" deny"),
        "{text}"
    );
    assert_eq!(text.matches("toolgate refused to start").count(), 1, "{text}");
    p.assert_nothing_left();
}

/// What the kernel runs that a reading of the file or of the name would get wrong: a `#!`
/// line cut by a NUL, a chain of five `#!` scripts (Linux ≥ 5.8 follows five), a script
/// with execute permission only, a working directory deeper than a page (its path cannot
/// be read back), git run under a dashed name or with options before its subcommand
/// that the analysis does not follow. None of these may start a denied program.
#[test]
fn what_the_kernel_really_runs_is_what_is_decided() {
    if !e2e::kernel_has(e2e::KernelFeature::ExecGuard) {
        return;
    }
    let deep = "d".repeat(250);
    let up = "../".repeat(20);
    let mut descend = String::new();
    for _ in 0..20 {
        descend.push_str(&format!("mkdir {deep} && cd {deep} && "));
    }
    let lines = [
        "printf '#!/usr/bin/rm\\0\\n' > s; chmod +x s; ./s victim".to_string(),
        "printf '#!/usr/bin/rm\\0/bin/true\\n' > s; chmod +x s; ./s victim".to_string(),
        "printf '#!/usr/bin/rm\\n' > s4; for i in 3 2 1 0; do printf '#!%s/s%s\\n' \"$PWD\" $((i + 1)) > s$i; done; \
         chmod +x s0 s1 s2 s3 s4; ./s0 victim"
            .to_string(),
        "printf '#!/usr/bin/rm\\n' > s; chmod 111 s; ./s victim".to_string(),
        format!("{descend}ln -s /usr/bin/rm zz && ./zz {up}victim"),
    ];
    let mut lines = lines.to_vec();
    if let Some(loader) = loader() {
        // A copy of the dynamic loader under another name runs rm as `ld.so` would.
        lines.push(format!("cp {loader} ./myld; ./myld /usr/bin/rm victim"));
        lines.push(format!("cp {loader} ./myld; ./myld --argv0 ls /usr/bin/rm victim"));
        // The loader as a script's interpreter, given the program to run.
        lines.push(format!(
            "printf '#!{loader} /usr/bin/rm\\n' > s; chmod +x s; ./s victim"
        ));
        // A copy of the loader as the interpreter.
        lines.push(format!(
            "cp {loader} ./myld; printf '#!%s/myld /usr/bin/rm\\n' \"$PWD\" > s; chmod +x s; ./s victim"
        ));
    }
    let mut failures = Vec::new();
    for line in &lines {
        let p = Project::new(deny_rm_by_path());
        let hidden = format!("f() {{ :; }}; f; f() {{ {line}\n}}; f");
        let text = p.bash(&hidden, &["--auto"]);
        if !p.victim() {
            failures.push(format!("{line:?}: result: {text}"));
        }
        p.assert_nothing_left();
    }
    // git: `git push` denied; each spelling must be refused when git starts.
    let push_denied = json!({"permission": {"bash": {"*": "allow", "git push *": "deny", "git push": "deny"}}});
    for line in [
        "(exec -a git-push git -q origin HEAD)",
        "git -c a.b=c push -q origin HEAD",
        "git --config-env=a.b=HOME push -q origin HEAD",
        "git --exec-path=/nonexistent push -q origin HEAD",
        "git --no-such-global-option push -q origin HEAD",
    ] {
        let p = Project::new(push_denied.clone());
        let hidden = format!("f() {{ :; }}; f; f() {{ {line}\n}}; f");
        let text = p.bash(&hidden, &["--auto"]);
        if !(text.contains("toolgate refused to start") && text.contains("git push *")) {
            failures.push(format!("{line:?}: result: {text}"));
        }
        p.assert_nothing_left();
    }
    assert!(failures.is_empty(), "denied programs started:\n{}", failures.join("\n"));
}

/// A file that is neither an ELF program nor a `#!` script is refused as the kernel
/// without `binfmt_misc` refuses it (`ENOEXEC`), so bash still runs it as a script of
/// its own, and every program in it is decided.
#[test]
fn a_script_without_a_hash_bang_runs_through_bash_and_its_programs_are_decided() {
    if !e2e::kernel_has(e2e::KernelFeature::ExecGuard) {
        return;
    }
    let p = Project::new(deny_rm_by_name());
    let text = p.bash(
        "printf 'echo from-the-script\\nrm victim\\n' > s; chmod +x s; ./s",
        &["--auto"],
    );
    assert!(text.contains("from-the-script"), "{text}");
    assert!(p.victim(), "{text}");
    assert!(text.contains("toolgate refused to start `rm victim`"), "{text}");
    p.assert_nothing_left();
}
