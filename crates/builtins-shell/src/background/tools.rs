//! `shell_list`, `shell_output`, `shell_write`, `shell_kill`, and what `bash` returns for
//! a background start (with its `wait_for`).

use std::sync::Arc;
use std::time::Duration;

use rustix::process::Signal;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate_core::{Annotations, Content, Context, PermissionRequest, Tool, ToolFailure};

use super::{Proc, ShellInfo, Shells, Size};
use crate::{BashOutput, Shared, WaitFor};

/// The longest `wait_for` and `wait_ms`.
const MAX_WAIT_MS: u64 = 600_000;
/// `wait_for`'s default timeout.
const DEFAULT_READY_MS: u64 = 30_000;
/// How often a port is tried during its first [`PORT_SOON`]: a refused connection on
/// loopback costs microseconds, and a server that starts in tens of milliseconds is
/// seen ready within 2 ms rather than within 10.
const PORT_EVERY_SOON: Duration = Duration::from_millis(2);
/// How long a port is tried every [`PORT_EVERY_SOON`].
const PORT_SOON: Duration = Duration::from_secs(1);
/// How often a port is tried after that.
const PORT_EVERY: Duration = Duration::from_millis(10);
/// Output shown with a background start, at most (its end).
const START_OUTPUT: usize = 4 * 1024;

/// A parsed `wait_for`.
pub(crate) enum Ready {
    Port(u16, Duration),
    Pattern(regex::Regex, Duration),
}

impl Ready {
    /// Checks `wait_for` before anything runs.
    pub(crate) fn parse(wait: &WaitFor) -> Result<Ready, ToolFailure> {
        let ms = wait.timeout_ms.unwrap_or(DEFAULT_READY_MS);
        if ms == 0 || ms > MAX_WAIT_MS {
            return Err(ToolFailure::new(format!(
                "Invalid wait_for.timeout_ms: {ms}. It must be between 1 and {MAX_WAIT_MS} milliseconds."
            )));
        }
        let timeout = Duration::from_millis(ms);
        match (wait.port, &wait.pattern) {
            (Some(0), None) => Err(ToolFailure::new("Invalid wait_for.port: 0.")),
            (Some(port), None) => Ok(Ready::Port(port, timeout)),
            // `^` and `$` at every line: a pattern is what a person looks for in a log.
            (None, Some(pattern)) => regex::RegexBuilder::new(pattern)
                .multi_line(true)
                .crlf(true)
                .size_limit(1 << 20)
                .build()
                .map(|regex| Ready::Pattern(regex, timeout))
                .map_err(|error| ToolFailure::new(format!("Invalid wait_for.pattern: {error}"))),
            _ => Err(ToolFailure::new(
                "wait_for takes one of {\"port\": N} or {\"pattern\": \"REGEX\"} (with an optional timeout_ms).",
            )),
        }
    }
}

/// Whether something accepts TCP connections on `port` of loopback.
async fn accepts(port: u16) -> bool {
    for address in [
        std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        std::net::SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port)),
    ] {
        if tokio::net::TcpStream::connect(address).await.is_ok() {
            return true;
        }
    }
    false
}

/// Waits as `ready` says; what the result says about it, and whether it became ready.
async fn wait_ready(proc: &Proc, ready: Ready) -> (bool, String) {
    let begun = tokio::time::Instant::now();
    match ready {
        Ready::Port(port, timeout) => {
            let deadline = begun + timeout;
            loop {
                if accepts(port).await {
                    return (
                        true,
                        format!(
                            "Ready: port {port} accepts connections (after {} ms).",
                            begun.elapsed().as_millis()
                        ),
                    );
                }
                if !proc.running() {
                    return (
                        false,
                        format!("The process ended before port {port} accepted connections."),
                    );
                }
                if tokio::time::Instant::now() >= deadline {
                    return (
                        false,
                        format!(
                            "Not ready: port {port} did not accept connections within {} ms; the process still runs.",
                            timeout.as_millis()
                        ),
                    );
                }
                // Ends early when the process ends.
                let every = if begun.elapsed() < PORT_SOON {
                    PORT_EVERY_SOON
                } else {
                    PORT_EVERY
                };
                proc.wait_output(u64::MAX, every).await;
            }
        }
        Ready::Pattern(pattern, timeout) => {
            let deadline = begun + timeout;
            loop {
                let seen = proc.total();
                if let Some(line) = proc.matches(&pattern) {
                    return (
                        true,
                        format!(
                            "Ready: the output matched (after {} ms): {line}",
                            begun.elapsed().as_millis()
                        ),
                    );
                }
                if !proc.running() {
                    return (false, "The process ended before its output matched the pattern.".into());
                }
                let now = tokio::time::Instant::now();
                if now >= deadline {
                    return (
                        false,
                        format!(
                            "Not ready: the output did not match within {} ms; the process still runs.",
                            timeout.as_millis()
                        ),
                    );
                }
                proc.wait_output(seen, deadline - now).await;
            }
        }
    }
}

/// What `bash` returns for a process it started in the background.
pub(crate) async fn started(proc: &Proc, ready: Option<Ready>, sandbox: Option<String>) -> BashOutput {
    let mut text = format!(
        "Command moved to the background (shell ID: {}).\nOutput is streaming to: {}\n\
         Read it with shell_output (wait_ms waits for more), send input with shell_write, stop it with shell_kill. \
         It ends with the session.",
        proc.id,
        proc.log.display()
    );
    let mut became = None;
    if let Some(ready) = ready {
        let (ok, said) = wait_ready(proc, ready).await;
        became = Some(ok);
        text.push_str("\n\n");
        text.push_str(&said);
    }
    if let Some((exit, notes, how)) = proc.ended() {
        text.push_str(&format!(
            "\n\nThe process {how}{}.",
            exit.map(|code| format!(" with code {code}")).unwrap_or_default()
        ));
        for note in notes {
            text.push('\n');
            text.push_str(&note);
        }
    }
    if became.is_some() || !proc.running() {
        // A glance: `shell_output` still reads all of it.
        let read = proc.read_from(Some(0), false);
        let shown = tail(&read.text, START_OUTPUT);
        text.push_str("\n\nOutput so far:\n");
        text.push_str(if shown.is_empty() { "(no output)" } else { shown });
    }
    let exit = proc.ended().and_then(|(exit, _, _)| exit);
    BashOutput {
        exit,
        truncated: false,
        timeout: false,
        dropped_bytes: 0,
        sandbox,
        shell_id: Some(proc.id.clone()),
        output_path: Some(proc.log.clone()),
        ready: became,
        text,
    }
}

/// The last `max` bytes of `text`, cut at a character boundary.
fn tail(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// Every tool that works with background processes, with its name.
pub(crate) fn tools(shared: Arc<Shared>, shells: Shells) -> Vec<(&'static str, Tool)> {
    vec![
        ("shell_list", list_tool(Arc::clone(&shared), shells.clone())),
        ("shell_output", output_tool(Arc::clone(&shared), shells.clone())),
        ("shell_write", write_tool(Arc::clone(&shared), shells.clone())),
        ("shell_kill", kill_tool(shared, shells)),
    ]
}

/// The input of `shell_list`.
#[derive(Deserialize, JsonSchema)]
struct ListInput {}

/// The output of `shell_list`.
#[derive(Serialize, JsonSchema)]
struct ListOutput {
    shells: Vec<ShellInfo>,
}

fn list_tool(shared: Arc<Shared>, shells: Shells) -> Tool {
    Tool::builder(
        "List this session's background processes (started with bash `background: true`): id, command, pid, state, \
         exit code, start time (ms since the epoch) and bytes of output.",
        move |_: ListInput, ctx: Context| {
            let (shared, shells) = (Arc::clone(&shared), shells.clone());
            async move {
                let request = PermissionRequest::new("shell_list").resources(["*"]).save(["*"]);
                shared.permissions.assert(&ctx, request).await?;
                Ok::<_, ToolFailure>(ListOutput {
                    shells: shells.list(Some(&ctx.session_id)),
                })
            }
        },
    )
    .project(|output: &ListOutput| {
        if output.shells.is_empty() {
            return vec![Content::text("No background processes in this session.")];
        }
        let lines: Vec<String> = output
            .shells
            .iter()
            .map(|shell| {
                format!(
                    "{}  pid {}  {}{}  {} bytes  {}",
                    shell.id,
                    shell.pid,
                    shell.state,
                    shell.exit.map(|code| format!(" (exit {code})")).unwrap_or_default(),
                    shell.bytes,
                    shell.command
                )
            })
            .collect();
        vec![Content::text(lines.join("\n"))]
    })
    .title("List background processes")
    .annotations(Annotations::read_only())
    .build()
}

/// The input of `shell_output`.
#[derive(Deserialize, JsonSchema)]
struct OutputInput {
    /// The process's shell ID.
    id: String,
    /// The byte offset to read from (default: where the previous shell_output stopped;
    /// 0 for everything still kept).
    since: Option<u64>,
    /// When there is no new output: wait up to this many milliseconds for some, or for
    /// the process to end (default 0, at most 600000).
    wait_ms: Option<u64>,
}

/// The output of `shell_output`.
#[derive(Serialize, JsonSchema)]
struct OutputOutput {
    id: String,
    /// `running` or `exited`.
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    exit: Option<i32>,
    /// The offset the text starts at.
    from: u64,
    /// The offset to pass as `since` next time.
    next: u64,
    /// Bytes before `from` the ring no longer had.
    dropped: u64,
    /// Bytes of the middle left out of the text (the log file has them).
    left_out: u64,
    #[serde(skip)]
    text: String,
}

fn output_tool(shared: Arc<Shared>, shells: Shells) -> Tool {
    Tool::builder(
        "Read a background process's new output (since the previous read, or from `since`), waiting up to `wait_ms` \
         for more or for its end. Shows at most 32 KiB (its first and last halves, with the count left out); the log \
         file has everything.",
        move |input: OutputInput, ctx: Context| {
            let (shared, shells) = (Arc::clone(&shared), shells.clone());
            async move {
                let proc = shells.get(&ctx, &input.id)?;
                let request = PermissionRequest::new("shell_output")
                    .resources([proc.command.clone()])
                    .save(["*"]);
                shared.permissions.assert(&ctx, request).await?;
                let wait = input.wait_ms.unwrap_or(0).min(MAX_WAIT_MS);
                if wait > 0 {
                    let since = input.since.unwrap_or_else(|| proc.read_cursor());
                    proc.wait_output(since, Duration::from_millis(wait)).await;
                }
                let read = proc.read(input.since);
                let mut text = read.text.clone();
                if read.dropped > 0 {
                    text = format!(
                        "[... {} bytes before this were dropped from memory (the ring keeps the last {} bytes; the log file {} has them) ...]\n{text}",
                        read.dropped,
                        proc.ring_bytes,
                        proc.log.display()
                    );
                }
                if text.is_empty() {
                    text = "(no new output)".into();
                }
                text.push_str("\n\n");
                match (read.running, read.exit) {
                    (true, _) => text.push_str(&format!("The process is running (next offset {}).", read.next)),
                    (false, exit) => {
                        let (_, notes, how) = proc.ended().unwrap_or((exit, Vec::new(), "exited"));
                        text.push_str(&format!(
                            "The process {how}{}.",
                            exit.map(|code| format!(" with code {code}")).unwrap_or_default()
                        ));
                        for note in notes {
                            text.push('\n');
                            text.push_str(&note);
                        }
                    }
                }
                Ok::<_, ToolFailure>(OutputOutput {
                    id: proc.id.clone(),
                    state: if read.running { "running" } else { "exited" },
                    exit: read.exit,
                    from: read.from,
                    next: read.next,
                    dropped: read.dropped,
                    left_out: read.left_out,
                    text,
                })
            }
        },
    )
    .project(|output: &OutputOutput| vec![Content::text(output.text.clone())])
    .title("Read a background process's output")
    .annotations(Annotations::read_only().idempotent(false))
    .build()
}

/// The input of `shell_write`.
#[derive(Deserialize, JsonSchema)]
struct WriteInput {
    /// The process's shell ID.
    id: String,
    /// What to write, as typed: end a line with `\n` to submit it. To a shell it is a
    /// command line, checked like a `bash` call.
    input: String,
    /// With `tty: true`: set the terminal's size first.
    tty_size: Option<crate::TtySize>,
}

/// The output of `shell_write`.
#[derive(Serialize, JsonSchema)]
struct WriteOutput {
    id: String,
    bytes: usize,
}

/// Whether `input` is plain data (an answer to a prompt, a number, a name), which an
/// "always" may save; anything else written to an interpreter is code and never saved.
fn plain_data(input: &str) -> bool {
    let line = input.strip_suffix('\n').unwrap_or(input);
    line.len() <= 200
        && line
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, ' ' | '.' | ',' | '-' | '_' | '@' | '+' | ':' | '/'))
}

fn write_tool(shared: Arc<Shared>, shells: Shells) -> Tool {
    Tool::builder(
        "Write to a background process's input (its terminal with `tty: true`): end a line with \\n to submit it. \
         A line written to a shell is checked against the rules like a bash command; input to another program \
         (python, node, a database shell) is asked as bash with the input shown.",
        move |input: WriteInput, ctx: Context| {
            let (shared, shells) = (Arc::clone(&shared), shells.clone());
            async move {
                let proc = shells.get(&ctx, &input.id)?;
                if !proc.running() {
                    return Err(ToolFailure::new(format!(
                        "The background process {} has ended.",
                        proc.id
                    )));
                }
                let request = PermissionRequest::new("shell_write")
                    .resources([proc.command.clone()])
                    .save(["*"]);
                shared.permissions.assert(&ctx, request).await?;
                let shown = format!("{} <<< {}", proc.command, input.input.trim_end_matches('\n'));
                // Input as it is: no allow rule for the program itself (`cat *` for a
                // `cat | bash`) may stand for whatever the input makes it do.
                let as_it_is = || {
                    PermissionRequest::new("bash")
                        .opaque([shown.clone()])
                        .metadata("command", proc.command.clone())
                        .metadata("input", input.input.clone())
                };
                if proc.shell_program {
                    // A command line for the shell: analysed and asked as a bash call.
                    let beyond = super::input_beyond_its_text(&input.input, proc.tty);
                    if beyond || proc.stateful.load(std::sync::atomic::Ordering::SeqCst) {
                        shared.permissions.assert(&ctx, as_it_is()).await?;
                    }
                    let workdir = proc.workdir.to_string_lossy().into_owned();
                    let authorized = crate::authorize(&shared, &input.input, Some(&workdir), None, &ctx).await?;
                    if beyond {
                        proc.stateful.store(true, std::sync::atomic::Ordering::SeqCst);
                    } else {
                        proc.predict(authorized.predicted);
                    }
                } else if plain_data(&input.input) {
                    let request = PermissionRequest::new("bash")
                        .resources([shown.clone()])
                        .save([shown.clone()])
                        .metadata("command", proc.command.clone())
                        .metadata("input", input.input.clone());
                    shared.permissions.assert(&ctx, request).await?;
                } else {
                    shared.permissions.assert(&ctx, as_it_is()).await?;
                }
                if let Some(size) = input.tty_size {
                    proc.resize(Size {
                        rows: size.rows.max(1),
                        cols: size.cols.max(1),
                    })
                    .map_err(|error| ToolFailure::new(format!("Unable to set the terminal size: {error}")))?;
                }
                proc.write(input.input.as_bytes())
                    .await
                    .map_err(|error| ToolFailure::new(format!("Unable to write to {}: {error}", proc.id)))?;
                Ok::<_, ToolFailure>(WriteOutput {
                    id: proc.id.clone(),
                    bytes: input.input.len(),
                })
            }
        },
    )
    .project(|output: &WriteOutput| {
        vec![Content::text(format!(
            "Wrote {} bytes to {}; read the answer with shell_output (wait_ms waits for it).",
            output.bytes, output.id
        ))]
    })
    .title("Write to a background process")
    .annotations(Annotations::additive())
    .build()
}

/// The input of `shell_kill`.
#[derive(Deserialize, JsonSchema)]
struct KillInput {
    /// The process's shell ID.
    id: String,
    /// `TERM` (default: the whole tree, then KILL after 3 s), `KILL`, `INT`, `HUP`,
    /// `QUIT`, `USR1` or `USR2` (sent to the process group).
    signal: Option<String>,
}

/// The output of `shell_kill`.
#[derive(Serialize, JsonSchema)]
struct KillOutput {
    id: String,
    /// `running` or `exited`.
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    exit: Option<i32>,
    #[serde(skip)]
    text: String,
}

fn signal_named(name: &str) -> Option<Signal> {
    let name = name.trim().to_ascii_uppercase();
    Some(match name.strip_prefix("SIG").unwrap_or(&name) {
        "TERM" => Signal::TERM,
        "KILL" => Signal::KILL,
        "INT" => Signal::INT,
        "HUP" => Signal::HUP,
        "QUIT" => Signal::QUIT,
        "USR1" => Signal::USR1,
        "USR2" => Signal::USR2,
        _ => return None,
    })
}

fn kill_tool(shared: Arc<Shared>, shells: Shells) -> Tool {
    Tool::builder(
        "Stop a background process: TERM to its whole process tree, then KILL after 3 s (default), or send it \
         another signal (INT, HUP, QUIT, USR1, USR2, KILL).",
        move |input: KillInput, ctx: Context| {
            let (shared, shells) = (Arc::clone(&shared), shells.clone());
            async move {
                let proc = shells.get(&ctx, &input.id)?;
                let signal = match input.signal.as_deref() {
                    None => Signal::TERM,
                    Some(name) => signal_named(name).ok_or_else(|| {
                        ToolFailure::new(format!(
                            "Unknown signal {name:?}: use TERM, KILL, INT, HUP, QUIT, USR1 or USR2."
                        ))
                    })?,
                };
                let request = PermissionRequest::new("shell_kill")
                    .resources([proc.command.clone()])
                    .save(["*"]);
                shared.permissions.assert(&ctx, request).await?;
                let ended = if !proc.running() {
                    true
                } else if signal == Signal::TERM || signal == Signal::KILL {
                    if signal == Signal::TERM {
                        proc.terminate();
                    } else {
                        proc.signal(Signal::KILL);
                    }
                    proc.wait_end(crate::exec::KILL_GRACE + Duration::from_secs(2)).await
                } else {
                    proc.signal(signal);
                    // Whatever the signal does, it does soon.
                    proc.wait_end(Duration::from_millis(200)).await
                };
                let exit = proc.ended().and_then(|(exit, _, _)| exit);
                let text = if ended {
                    format!(
                        "The background process {} ended{}.",
                        proc.id,
                        exit.map(|code| format!(" with code {code}")).unwrap_or_default()
                    )
                } else {
                    format!(
                        "Sent {} to {}; it still runs.",
                        input.signal.as_deref().unwrap_or("TERM"),
                        proc.id
                    )
                };
                Ok::<_, ToolFailure>(KillOutput {
                    id: proc.id.clone(),
                    state: if ended { "exited" } else { "running" },
                    exit,
                    text,
                })
            }
        },
    )
    .project(|output: &KillOutput| vec![Content::text(output.text.clone())])
    .title("Signal a background process")
    .annotations(Annotations::destructive().idempotent(true))
    .build()
}

#[cfg(test)]
mod tests {
    use super::plain_data;

    #[test]
    fn plain_data_is_an_answer_not_code() {
        for input in ["y\n", "42", "yes please", "alice@example.com\n"] {
            assert!(plain_data(input), "{input}");
        }
        for input in ["print(1)", "import os; os.system('x')", "DROP TABLE t;", "a\nb"] {
            assert!(!plain_data(input), "{input}");
        }
    }
}
