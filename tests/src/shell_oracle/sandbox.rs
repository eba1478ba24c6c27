//! Where lines run: a throwaway sandbox, a driver inside it, and the recorders around it.
//!
//! A worker is one long-lived process tree:
//!
//! ```text
//! strace -f (outside: records execve, opens, writes, renames, deletes, chdir, forks)
//!   └─ Sandbox::command  (the swappable part: today `unshare`, later toolgate's own)
//!        └─ driver.sh    (bash, pid 1 of the sandbox's pid namespace)
//!             └─ per line: bash --norc --noprofile -c LINE   (xtrace on through SHELLOPTS)
//! ```
//!
//! Starting strace once per worker instead of once per line is what makes the throughput:
//! a traced fork and exec costs little more than an untraced one, a fresh strace costs
//! more than the line. The driver marks each line's start and end with an `open` of a
//! file that does not exist (`mark/begin.N`, `mark/end.N`), so the host can cut the one
//! strace stream into lines; before the end mark it kills every process the line left
//! behind (by id, from its own `/proc`, which only holds the sandbox's processes), so
//! nothing of one line runs into the next.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// Runs a program confined. Swappable: [`Toolgate`] puts toolgate's own kernel sandbox here.
///
/// The contract the oracle relies on: the program can write only under `writable` (any
/// other write fails), reaches no network, and is pid 1 of a fresh pid namespace with its
/// own `/proc` (the driver refuses to run otherwise, since it kills every other pid it
/// sees between lines).
pub trait Sandbox: Send + Sync {
    /// A short name for reports.
    fn name(&self) -> &'static str;

    /// The command that runs `program` confined. `scratch` is a directory for the
    /// sandbox's own files (inside `writable`).
    fn command(&self, writable: &Path, scratch: &Path, program: &[OsString]) -> std::io::Result<Command>;
}

/// User, mount, pid and network namespaces from util-linux `unshare`; every mount but the
/// writable directory remounted read-only; capabilities dropped with `setpriv`.
pub struct Unshare;

const SETUP: &str = r#"#!/bin/sh
# Runs inside fresh user, mount, pid and network namespaces: makes every mount but $1
# read-only, checks it, then runs the rest of the arguments without any capability (so
# nothing inside can undo the read-only mounts).
set -eu
writable=$1
shift
mount --bind "$writable" "$writable"
while read -r _ _ _ _ point options _; do
  point=$(printf '%b' "$point")
  [ "$point" = "$writable" ] && continue
  case ",$options," in *,ro,*) continue ;; esac
  mount -o "remount,bind,ro${options#rw}" "$point"
done < /proc/self/mountinfo
parent=$(dirname "$writable")
if ( : > "$parent/.toolgate-oracle-probe" ) 2>/dev/null; then
  echo "sandbox setup: $parent is still writable" >&2
  exit 1
fi
if grep -v -e '^ *lo:' -e '^Inter-' -e '^ *face' /proc/net/dev | grep -q .; then
  echo "sandbox setup: a network interface besides lo" >&2
  exit 1
fi
exec setpriv --no-new-privs --bounding-set=-all --inh-caps=-all -- "$@"
"#;

impl Sandbox for Unshare {
    fn name(&self) -> &'static str {
        "unshare"
    }

    fn command(&self, writable: &Path, scratch: &Path, program: &[OsString]) -> std::io::Result<Command> {
        let setup = scratch.join("setup.sh");
        std::fs::write(&setup, SETUP)?;
        let mut command = Command::new("unshare");
        command
            .args([
                "--user",
                "--map-root-user",
                "--mount",
                "--net",
                "--pid",
                "--fork",
                "--mount-proc",
                "--kill-child",
                "--",
                "/bin/sh",
            ])
            .arg(setup)
            .arg(writable)
            .args(program);
        Ok(command)
    }
}

/// toolgate's own kernel sandbox (`toolgate-sandbox`): the trampoline of the `toolgate` binary with a
/// policy that makes only `writable` writable and turns the network off, inside the pid
/// namespace (and its own `/proc`) the driver needs, which `unshare` provides around it.
/// Chosen by default where the kernel can run it ([`Toolgate::available`]).
pub struct Toolgate {
    /// The `toolgate` binary whose `__sandbox-exec` mode applies the policy.
    pub binary: PathBuf,
}

impl Toolgate {
    /// The sandbox of `binary`, if this kernel can run it (its own probe says so).
    pub fn available(binary: PathBuf) -> Option<Toolgate> {
        toolgate_sandbox::probe(&binary)
            .is_available()
            .then_some(Toolgate { binary })
    }
}

impl Sandbox for Toolgate {
    fn name(&self) -> &'static str {
        "toolgate"
    }

    fn command(&self, writable: &Path, _scratch: &Path, program: &[OsString]) -> std::io::Result<Command> {
        let Some((first, rest)) = program.split_first() else {
            return Err(std::io::Error::other("no program to run"));
        };
        let mut policy = toolgate_sandbox::Policy::new(toolgate_sandbox::Mode::WorkspaceWrite, writable, false);
        // Only the oracle's directory: not the temp directory, not /dev/shm.
        policy.writable = vec![writable.to_path_buf()];
        let line = policy.command_line(&self.binary, first, rest);
        // The pid namespace and its /proc: root of a user namespace is root to the
        // trampoline, which then drops what a container's root would not have.
        let mut command = Command::new("unshare");
        command
            .args([
                "--user",
                "--map-root-user",
                "--mount",
                "--pid",
                "--fork",
                "--mount-proc",
                "--kill-child",
                "--",
            ])
            .args(line);
        Ok(command)
    }
}

const DRIVER: &str = r#"# The oracle's driver: pid 1 of the sandbox's pid namespace, one line at a time.
# Requests on stdin: ID NUL DIR NUL LINE NUL (the project is DIR/proj).
# Answers on the original stdout: "ID STATUS" lines.
# Every open here is a traced call, so the files the lines share are opened once, in
# append mode (the host empties them between lines), and only the marks are opened per line.
h=$1
[[ $$ == 1 ]] || { echo "driver: not pid 1 of its own pid namespace; refusing to run" >&2; exit 70; }
exec 8<> "$h/sleep.fifo" 5>> "$h/out" 6< /dev/null 7>> "$h/xtrace"
# After the line's shell: let what it left running (a process substitution, a pipeline's
# tail) finish on its own for GRACE tries of 10 ms, then kill every other process of the
# namespace, by id, until none is left.
cleanup() {
  local grace=$1 pid tries alive
  for ((tries = 0; tries < grace + 500; tries++)); do
    alive=0
    for pid in /proc/[0-9]*; do
      pid=${pid#/proc/}
      [[ $pid == 1 ]] && continue
      alive=1
      ((tries >= grace)) && kill -KILL "$pid" 2>/dev/null
    done
    ((alive)) || return 0
    read -t 0.01 -u 8
  done
  echo "driver: processes survived the reap" >&3
}
trap 'cleanup 0' USR1
exec 3>&1 >/dev/null 2>&1
while IFS= read -r -d '' id && IFS= read -r -d '' dir && IFS= read -r -d '' line; do
  : < "$h/mark/begin.$id"
  (
    cd "$dir/proj" || exit 125
    export HOME="$dir/home" TMPDIR="$dir/tmp" BASH_XTRACEFD=9
    # xtrace through SHELLOPTS: every bash the line starts traces too.
    set -o xtrace
    export SHELLOPTS
    exec bash --norc --noprofile -c "$line"
  ) 9>&7 >&5 2>&5 <&6 3>&- 5>&- 6>&- 7>&- 8>&- &
  wait "$!"
  status=$?
  cleanup 30
  : < "$h/mark/end.$id"
  printf '%s %s\n' "$id" "$status" >&3
done
"#;

/// Programs replaced by a stub that records its arguments and does nothing: they would
/// delete, reach the network or gain privileges. `sudo` and `doas` run what they wrap.
const STUBS: &[&str] = &[
    "rm", "curl", "wget", "nc", "ncat", "ssh", "scp", "rsync", "sudo", "doas",
];

fn stub(name: &str, log: &Path) -> String {
    let tail = if matches!(name, "sudo" | "doas") {
        "while [ $# -gt 0 ]; do case $1 in -u|-g|-C|-h|-p) shift 2 ;; --) shift; break ;; -*) shift ;; *) break ;; esac; done\n[ $# -gt 0 ] && exec \"$@\"\nexit 0\n"
    } else {
        "exit 0\n"
    };
    format!(
        "#!/bin/sh\n# toolgate oracle stub: records its arguments, does nothing.\n{{ printf '%s' {name}; for a do printf '\\037%s' \"$a\"; done; printf '\\036'; }} >> '{}'\n{tail}",
        log.display()
    )
}

/// The files of one worker.
pub struct Harness {
    /// The harness directory (`h<N>`).
    pub dir: PathBuf,
    /// Where the lines' directories are made (`w<N>`).
    pub lines: PathBuf,
}

/// What a worker reports for one line.
pub struct Ran {
    /// The strace lines between the line's marks.
    pub trace: Vec<Vec<u8>>,
    /// The driver's pid (host numbering), whose own calls are not the line's.
    pub driver: u32,
    /// The xtrace output.
    pub xtrace: Vec<u8>,
    /// The stubs' log.
    pub stubs: Vec<u8>,
    /// Git's trace.
    pub git: Vec<u8>,
    /// The line's output (stdout and stderr), at most 4 KiB.
    pub output: String,
    /// Its exit status (as `wait` saw it; 137/138 after a kill).
    pub status: Option<i32>,
    /// Whether the timeout ended it.
    pub timed_out: bool,
}

/// A running worker.
pub struct Worker {
    harness: Harness,
    child: Child,
    stdin: Option<ChildStdin>,
    done: Receiver<String>,
    /// strace's log: opened by strace in append mode, so it can be emptied after each
    /// line (the driver is idle then). A file on the memory file system, read once per
    /// line, costs far less than a pipe that wakes a reader for every call.
    log: std::fs::File,
    driver: Option<u32>,
}

/// Why a worker failed.
#[derive(Debug)]
pub struct WorkerError(pub String);

impl std::fmt::Display for WorkerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn io_error(what: &str) -> impl Fn(std::io::Error) -> WorkerError + '_ {
    move |error| WorkerError(format!("{what}: {error}"))
}

/// The environment every line starts from (besides `HOME`, `TMPDIR`, `BASH_ENV`,
/// `BASH_XTRACEFD`, which the driver sets per line).
pub fn base_env(harness: &Path) -> Vec<(String, String)> {
    vec![
        (
            "PATH".into(),
            format!("{}/bin:/usr/local/bin:/usr/bin:/bin", harness.display()),
        ),
        ("LC_ALL".into(), "C".into()),
        ("TERM".into(), "dumb".into()),
        ("GIT_TRACE".into(), harness.join("git.trace").display().to_string()),
        ("GIT_TERMINAL_PROMPT".into(), "0".into()),
        ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
    ]
}

/// Links to the real interpreters that must not be found through a shim (pyenv's would
/// run a dozen commands of its own).
pub struct Links {
    /// `(name, target)` pairs put in the stub directory.
    pub links: Vec<(String, PathBuf)>,
}

impl Worker {
    /// Prepares the harness directory `dir` and starts the worker.
    pub fn start(
        sandbox: &dyn Sandbox,
        writable: &Path,
        harness: Harness,
        links: &Links,
    ) -> Result<Worker, WorkerError> {
        let h = &harness.dir;
        std::fs::create_dir_all(h.join("bin")).map_err(io_error("harness directory"))?;
        std::fs::create_dir_all(h.join("mark")).map_err(io_error("mark directory"))?;
        std::fs::create_dir_all(&harness.lines).map_err(io_error("line directory"))?;
        let log = h.join("stub.log");
        for name in STUBS {
            let path = h.join("bin").join(name);
            std::fs::write(&path, stub(name, &log)).map_err(io_error("stub"))?;
            set_mode(&path, 0o755)?;
        }
        for (name, target) in &links.links {
            let path = h.join("bin").join(name);
            let _ = std::fs::remove_file(&path);
            std::os::unix::fs::symlink(target, &path).map_err(io_error("link"))?;
        }
        std::fs::write(h.join("driver.sh"), DRIVER).map_err(io_error("driver"))?;
        let sleep = h.join("sleep.fifo");
        let _ = std::fs::remove_file(&sleep);
        rustix::fs::mkfifoat(rustix::fs::CWD, &sleep, rustix::fs::Mode::from_raw_mode(0o600))
            .map_err(|error| WorkerError(format!("mkfifo {}: {error}", sleep.display())))?;
        let log_path = h.join("strace.log");
        std::fs::write(&log_path, b"").map_err(io_error("strace log"))?;
        let log = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&log_path)
            .map_err(io_error("strace log"))?;
        let program: Vec<OsString> = vec![
            "bash".into(),
            "--norc".into(),
            "--noprofile".into(),
            h.join("driver.sh").into(),
            h.clone().into(),
        ];
        let sandboxed = sandbox
            .command(writable, h, &program)
            .map_err(io_error("sandbox command"))?;
        let mut command = Command::new("strace");
        command
            .args([
                "-f",
                "-A",
                "-qq",
                "--seccomp-bpf",
                "-y",
                "-v",
                "-s",
                "65536",
                "-e",
                "signal=none",
                "-e",
                "trace=execve,execveat,open,openat,openat2,creat,truncate,rename,renameat,renameat2,unlink,unlinkat,rmdir,mkdir,mkdirat,link,linkat,symlink,symlinkat,chmod,fchmodat,chown,lchown,fchownat,utimensat,mknodat,chdir,fchdir",
                "-o",
            ])
            .arg(&log_path)
            .arg("--")
            .arg(sandboxed.get_program())
            .args(sandboxed.get_args())
            .env_clear()
            .envs(base_env(h))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(
                std::fs::File::create(h.join("stderr"))
                    .map(Stdio::from)
                    .map_err(io_error("stderr file"))?,
            );
        let mut child = command
            .spawn()
            .map_err(io_error("could not start strace (is it installed?)"))?;
        let stdin = child.stdin.take().ok_or_else(|| WorkerError("no stdin".into()))?;
        let stdout = child.stdout.take().ok_or_else(|| WorkerError("no stdout".into()))?;
        let (done_tx, done) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if done_tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Worker {
            harness,
            child,
            stdin: Some(stdin),
            done,
            log,
            driver: None,
        })
    }

    /// The harness of this worker.
    pub fn harness(&self) -> &Harness {
        &self.harness
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.harness.dir.join("stderr")).unwrap_or_default()
    }

    /// Runs `line` (which holds no NUL) in `dir/proj` as request `id`.
    pub fn run(&mut self, id: u64, dir: &Path, line: &str, timeout: Duration) -> Result<Ran, WorkerError> {
        // The logs of the previous line, emptied here rather than by the driver: an open
        // inside the sandbox is a traced call, one out here is not. All are written in
        // append mode, so emptying them under an open descriptor is safe.
        for log in ["stub.log", "git.trace", "out", "xtrace"] {
            std::fs::write(self.harness.dir.join(log), b"").map_err(io_error("log"))?;
        }
        let mut request = Vec::new();
        request.extend_from_slice(id.to_string().as_bytes());
        request.push(0);
        request.extend_from_slice(dir.as_os_str().as_encoded_bytes());
        request.push(0);
        request.extend_from_slice(line.as_bytes());
        request.push(0);
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(WorkerError("the worker is shut down".into()));
        };
        stdin
            .write_all(&request)
            .and_then(|()| stdin.flush())
            .map_err(|error| WorkerError(format!("the driver is gone ({error}): {}", self.stderr())))?;
        let id_text = id.to_string();
        let mut timed_out = false;
        let deadline = Instant::now() + timeout;
        let answer = loop {
            let wait = if timed_out {
                Duration::from_secs(10)
            } else {
                deadline.saturating_duration_since(Instant::now())
            };
            match self.done.recv_timeout(wait) {
                Ok(answer) if answer.split_whitespace().next() == Some(id_text.as_str()) => break answer,
                Ok(_) => continue,
                Err(RecvTimeoutError::Timeout) if !timed_out => {
                    timed_out = true;
                    // Ask the driver to kill the line: it is pid 1 inside, we know its
                    // host pid from its first mark.
                    let driver = self.driver.or_else(|| self.driver_from_trace(&id_text));
                    match driver.and_then(|pid| rustix::process::Pid::from_raw(pid as i32)) {
                        Some(pid) => {
                            let _ = rustix::process::kill_process(pid, rustix::process::Signal::USR1);
                        }
                        None => return Err(WorkerError("timed out before the driver was known".into())),
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(WorkerError("the driver did not end a timed-out line".into()));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(WorkerError(format!("the worker exited: {}", self.stderr())));
                }
            }
        };
        let status = answer.split_whitespace().nth(1).and_then(|s| s.parse().ok());
        let trace = self.segment(&id_text)?;
        let read = |name: &str| std::fs::read(self.harness.dir.join(name)).unwrap_or_default();
        let mut output = String::from_utf8_lossy(&read("out")).into_owned();
        if output.len() > 4096 {
            let mut cut = 4096;
            while !output.is_char_boundary(cut) {
                cut -= 1;
            }
            output.truncate(cut);
        }
        Ok(Ran {
            trace,
            driver: self.driver.unwrap_or(0),
            xtrace: read("xtrace"),
            stubs: read("stub.log"),
            git: read("git.trace"),
            output,
            status,
            timed_out,
        })
    }

    /// The driver's pid, from the begin mark of `id` in the log.
    fn driver_from_trace(&mut self, id: &str) -> Option<u32> {
        let begin = format!("begin.{id}");
        let mut text = Vec::new();
        let _ = (&self.log).seek(std::io::SeekFrom::Start(0));
        let _ = (&self.log).read_to_end(&mut text);
        for line in text.split(|b| *b == b'\n') {
            if let Some((pid, name)) = crate::shell_oracle::observe::marker(line)
                && name == begin
            {
                self.driver = Some(pid);
                return Some(pid);
            }
        }
        None
    }

    /// The trace lines of request `id` (between its begin and end marks); the log is
    /// emptied afterwards.
    fn segment(&mut self, id: &str) -> Result<Vec<Vec<u8>>, WorkerError> {
        let begin = format!("begin.{id}");
        let end = format!("end.{id}");
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut text = Vec::new();
        (&self.log)
            .seek(std::io::SeekFrom::Start(0))
            .map_err(io_error("strace log"))?;
        loop {
            (&self.log).read_to_end(&mut text).map_err(io_error("strace log"))?;
            let mut lines = Vec::new();
            let mut collecting = false;
            for line in text.split(|b| *b == b'\n') {
                if let Some((pid, name)) = crate::shell_oracle::observe::marker(line) {
                    if name == begin {
                        self.driver = Some(pid);
                        collecting = true;
                        continue;
                    }
                    if name == end && Some(pid) == self.driver {
                        self.log.set_len(0).map_err(io_error("strace log"))?;
                        return Ok(lines);
                    }
                }
                if collecting {
                    lines.push(line.to_vec());
                }
            }
            if Instant::now() > deadline {
                return Err(WorkerError(format!(
                    "the trace of line {id} did not reach its end mark: {}",
                    self.stderr()
                )));
            }
            // strace writes the mark before the driver answers; this only waits out a
            // write still on its way.
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Ends the worker: closing its requests ends the driver, and with it the sandbox.
    fn shut_down(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => break,
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        if matches!(self.child.try_wait(), Ok(None)) {
            // Hung: kill what we started, by id — the sandbox's `unshare` (strace's
            // child; `--kill-child` takes the namespace with it), then strace.
            let strace = self.child.id();
            let children =
                std::fs::read_to_string(format!("/proc/{strace}/task/{strace}/children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|pid| pid.parse::<i32>().ok()) {
                if let Some(pid) = rustix::process::Pid::from_raw(child) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.shut_down();
    }
}

fn set_mode(path: &Path, mode: u32) -> Result<(), WorkerError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(io_error("chmod"))
}
