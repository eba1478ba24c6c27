//! `tools` and `call`: the catalog, and one call through registry → permission → tool →
//! output bound.

use std::io::{IsTerminal, Read, Write};

use serde_json::{Value, json};
use toolgate_builtins_session::{QuestionEvent, QuestionRequest, QuestionService};
use toolgate_core::ModelResult;
use toolgate_gate::{Call, GateError};
use toolgate_permission::{AskMode, DoomMemory, Event, PermissionService, Reply};

use crate::app::App;
use crate::setup::Setup;
use crate::{Failure, Project};

/// Exit code when a permission was refused.
const EXIT_DECLINED: u8 = 3;

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| Failure::runtime(format!("could not start the runtime: {error}")))
}

pub(crate) fn tools(project: &Project, json: bool) -> Result<(), Failure> {
    let setup = Setup::new(project, AskMode::Headless)?;
    let app = App::new(&setup, QuestionService::new(false))?;
    let runtime = runtime()?;
    let catalog = runtime.block_on(app.gate.prepared_catalog(&setup.agent));
    runtime.block_on(app.shutdown());
    app.report_mcp_errors(false);
    if json {
        let list: Vec<Value> = catalog
            .definitions()
            .iter()
            .map(|d| json!({"name": d.name, "description": d.description, "inputSchema": d.input_schema}))
            .collect();
        outln!("{}", serde_json::to_string_pretty(&list).map_err(Failure::runtime)?);
        return Ok(());
    }
    if catalog.definitions().is_empty() {
        outln!("agent {} is offered no tools", setup.agent);
    }
    for definition in catalog.definitions() {
        let first = definition
            .description
            .split(". ")
            .next()
            .unwrap_or("")
            .trim_end_matches('.');
        let summary = if first.chars().count() > 90 {
            format!("{}…", first.chars().take(89).collect::<String>())
        } else {
            first.to_string()
        };
        outln!("{:<14} {summary}", definition.name);
    }
    Ok(())
}

pub(crate) struct CallArgs<'a> {
    pub(crate) tool: &'a str,
    pub(crate) input: Option<&'a str>,
    pub(crate) session: Option<&'a str>,
    pub(crate) auto: bool,
    pub(crate) json: bool,
    pub(crate) sandbox: Option<toolgate_sandbox::Mode>,
    /// `toolgate exec`: bash runs on this process's own streams, and the exit code is
    /// the command's (see [`exec_outcome`]).
    pub(crate) attached: bool,
}

fn read_input(input: Option<&str>) -> Result<Value, Failure> {
    let text = match input {
        None => return Ok(json!({})),
        Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|error| Failure::usage(format!("could not read the input from stdin: {error}")))?;
            text
        }
        Some(text) => text.to_string(),
    };
    serde_json::from_str(&text).map_err(|error| Failure::usage(format!("the input is not valid JSON: {error}")))
}

pub(crate) fn call(project: &Project, args: CallArgs<'_>) -> Result<(), Failure> {
    // A terminal on stdin means someone can answer; stdin itself is then not input.
    let interactive = !args.auto && std::io::stdin().is_terminal() && args.input != Some("-");
    let mode = if args.auto {
        AskMode::Auto
    } else if interactive {
        AskMode::Interactive
    } else {
        AskMode::Headless
    };
    let input = read_input(args.input)?;
    // One process sees one call: the doom_loop streak of a named session is kept in the
    // database. A fresh session has no streak to continue, and leaves it unopened.
    let doom = match args.session {
        Some(_) => DoomMemory::Database,
        None => DoomMemory::Process,
    };
    let mut setup = Setup::open(project, mode, doom)?;
    setup.sandbox = setup.sandbox.clone().with_cli(args.sandbox);
    setup.attached = args.attached;
    let questions = QuestionService::new(interactive);
    let app = App::new(&setup, questions.clone())?;
    if let Some(gateway) = &app.gateway {
        // Servers' elicitations: accepted with their own defaults under --auto, put to
        // the person at a terminal, declined when no one can answer.
        let elicitor: std::sync::Arc<dyn toolgate_mcp_client::Elicitor> = if args.auto {
            std::sync::Arc::new(toolgate_mcp_client::AcceptDefaults)
        } else if interactive {
            std::sync::Arc::new(crate::gateway::QuestionElicitor {
                questions: questions.clone(),
                fallback_session: String::new(),
            })
        } else {
            std::sync::Arc::new(toolgate_mcp_client::DeclineAll)
        };
        gateway.set_elicitor(elicitor);
    }
    let gate = &app.gate;
    let session = args
        .session
        .map(str::to_string)
        .unwrap_or_else(|| toolgate_core::ascending_id("ses"));
    let runtime = runtime()?;
    // `--detach`: this is the process that holds the background processes after the
    // caller got its answer (see `detach`).
    let hold = std::env::var_os(HOLD_ENV).map(std::path::PathBuf::from);
    let settled = runtime.block_on(async {
        // Spill files older than 7 days go also when only short-lived calls run (spec
        // §3.6): at most one scan a day between all of them, beside the call.
        let spills = app.spills.clone();
        let upkeep = tokio::task::spawn_blocking(move || spills.cleanup_if_due());
        let prompt =
            interactive.then(|| tokio::spawn(prompt_loop(setup.service.clone(), questions.clone(), session.clone())));
        // This front end has no assistant messages: the session is one message, so
        // doom_loop counts identical calls across the session's processes.
        let call = Call::new(session.clone(), args.tool, input).in_message(session.clone());
        let settled = gate.run(&setup.agent, call).await;
        if let Some(prompt) = prompt {
            prompt.abort();
        }
        if hold.is_none() {
            app.shutdown().await;
        }
        let _ = upkeep.await;
        settled
    });
    let result = if args.attached {
        exec_outcome(settled)
    } else {
        report(settled, &args, &app)
    };
    let Some(status) = hold else { return result };
    // Nobody is at a prompt any more: an ask from now on (an exec the guard stops) is
    // declined, unless --auto answers it.
    if mode == AskMode::Interactive {
        setup.service.shutdown();
    }
    hold_until_idle(&runtime, &app, &status, result)
}

/// The variable that makes `toolgate call` the holder of a `--detach`ed call: it names
/// the file the exit code goes to.
pub(crate) const HOLD_ENV: &str = "TOOLGATE_DETACH_STATUS";

/// The holder's part: tells the caller the exit code, lets go of its pipes (the caller
/// sees them close and goes on), then keeps the background processes — their output
/// read, their execs checked — until every one ended or a SIGINT or SIGTERM came, and
/// ends what is left. A closed terminal (SIGHUP) does not end them: that is what
/// `--detach` asks for.
fn hold_until_idle(
    runtime: &tokio::runtime::Runtime,
    app: &crate::app::App,
    status: &std::path::Path,
    result: Result<(), Failure>,
) -> Result<(), Failure> {
    use std::io::Write;
    let code = match &result {
        Ok(()) => 0,
        Err(failure) => {
            if !failure.message.is_empty() {
                eprintln!(
                    "toolgate: {}",
                    failure.message.split_whitespace().collect::<Vec<_>>().join(" ")
                );
            }
            failure.code
        }
    };
    runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        // Listening before the caller is told: a SIGTERM sent the moment `call --detach`
        // returned must end the processes, not the holder alone (its default action).
        let _hangup = signal(SignalKind::hangup());
        let mut interrupt = signal(SignalKind::interrupt()).ok();
        let mut terminate = signal(SignalKind::terminate()).ok();
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        let _ = std::fs::write(status, code.to_string());
        if let Ok(null) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null") {
            let _ = rustix::stdio::dup2_stdin(&null);
            let _ = rustix::stdio::dup2_stdout(&null);
            let _ = rustix::stdio::dup2_stderr(&null);
        }
        tokio::select! {
            () = app.shells.wait_idle() => {}
            () = received(interrupt.as_mut()) => {}
            () = received(terminate.as_mut()) => {}
        }
        app.shutdown().await;
    });
    Err(Failure {
        code,
        message: String::new(),
    })
}

/// The next delivery of `signal`; never, when it could not be listened for.
async fn received(signal: Option<&mut tokio::signal::unix::Signal>) {
    match signal {
        Some(signal) => {
            signal.recv().await;
        }
        None => std::future::pending::<()>().await,
    }
}

/// `toolgate call --detach`: runs the same call in a holder process (this binary again,
/// with [`HOLD_ENV`]) and passes its output through; once the holder let go of its
/// output the answer is complete, and this process exits with the holder's code while
/// the holder keeps the background processes under the same rules.
pub(crate) fn detach() -> Result<(), Failure> {
    let exe = std::env::current_exe().map_err(|e| Failure::runtime(format!("cannot find this program: {e}")))?;
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).filter(|arg| arg != "--detach").collect();
    let status = std::env::temp_dir().join(format!(
        ".toolgate-detach-{}-{}",
        std::process::id(),
        toolgate_core::ascending_id("d")
    ));
    let mut child = std::process::Command::new(exe)
        .args(&args)
        .env(HOLD_ENV, &status)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| Failure::runtime(format!("cannot start the call: {e}")))?;
    let relay = |from: Option<Box<dyn std::io::Read + Send>>, to: fn() -> Box<dyn std::io::Write>| {
        std::thread::spawn(move || {
            if let Some(mut from) = from {
                let _ = std::io::copy(&mut from, &mut to());
            }
        })
    };
    let out = relay(
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        || Box::new(std::io::stdout()),
    );
    let err = relay(
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        || Box::new(std::io::stderr()),
    );
    let _ = out.join();
    let _ = err.join();
    let code = match std::fs::read_to_string(&status) {
        Ok(text) => {
            let _ = std::fs::remove_file(&status);
            text.trim().parse::<u8>().unwrap_or(1)
        }
        // The holder ended before it answered (killed, or it failed to start the call).
        Err(_) => child
            .wait()
            .ok()
            .and_then(|status| status.code())
            .and_then(|code| u8::try_from(code).ok())
            .unwrap_or(1),
    };
    Err(Failure {
        code,
        message: String::new(),
    })
}

/// The exit code of `toolgate exec` when the command could not run: refused by the
/// rules or a person, or not startable (as a shell says of a command it cannot execute).
pub(crate) const EXIT_NOT_RUN: u8 = 126;

/// What `toolgate exec` says of its settled call: the command printed its own output, so
/// only a refusal or an error is said, on stderr (one line each), and the exit code is the
/// command's own, or [`EXIT_NOT_RUN`] when it never ran.
fn exec_outcome(settled: Result<toolgate_gate::Settled, GateError>) -> Result<(), Failure> {
    let settled = match settled {
        Ok(settled) => settled.settlement,
        Err(failure) => {
            return Err(Failure {
                code: EXIT_NOT_RUN,
                message: failure.to_string(),
            });
        }
    };
    if let ModelResult::Error(message) = &settled.result {
        return Err(Failure {
            code: EXIT_NOT_RUN,
            message: message.clone(),
        });
    }
    let exit = settled
        .output
        .as_ref()
        .and_then(|output| output.structured.get("exit"))
        .and_then(Value::as_i64);
    // The first line says how the command ended; the others are what exec-time
    // enforcement refused, which the person at the terminal should see.
    if let ModelResult::Text(text) = &settled.result {
        // Written, not `eprintln!`: a closed stderr (`2>&1 | head`) costs the line, never
        // the command's exit code.
        let mut err = std::io::stderr().lock();
        for line in text.lines().skip(1).filter(|line| !line.trim().is_empty()) {
            let prefix = if line.starts_with("toolgate") { "" } else { "toolgate: " };
            let _ = writeln!(err, "{prefix}{line}");
        }
    }
    match exit {
        Some(0) => Ok(()),
        Some(code) => Err(Failure {
            code: u8::try_from(code).unwrap_or(1),
            message: String::new(),
        }),
        None => Err(Failure {
            code: 1,
            message: String::new(),
        }),
    }
}

/// What `call` prints for a settled call, and its exit code.
fn report(
    settled: Result<toolgate_gate::Settled, GateError>,
    args: &CallArgs<'_>,
    app: &crate::app::App,
) -> Result<(), Failure> {
    let settled = match settled {
        Ok(settled) => settled.settlement,
        Err(denied @ GateError::Unknown { denied: Some(_), .. }) => {
            // Hidden by a deny: say so (and which rule), not "unknown".
            return Err(Failure::usage(denied.to_string()));
        }
        Err(GateError::Unknown {
            tool, agent, offered, ..
        }) => {
            app.report_mcp_errors(true);
            return Err(Failure::usage(format!(
                "unknown tool {tool:?} for agent {agent}; available: {}",
                if offered.is_empty() {
                    "none".to_string()
                } else {
                    offered.join(", ")
                }
            )));
        }
        Err(failure) => {
            // A call that could not be settled (a panic, an output that cannot be bounded)
            // is still answered in JSON when JSON was asked for.
            if args.json {
                let result = ModelResult::Error(failure.to_string()).to_json();
                let value = json!({"result": result, "output": null, "outputPaths": []});
                outln!("{}", serde_json::to_string_pretty(&value).map_err(Failure::runtime)?);
            }
            return Err(Failure::runtime(failure));
        }
    };
    if args.json {
        let value = json!({
            "result": settled.result.to_json(),
            "output": settled.output,
            "outputPaths": settled.output_paths,
        });
        outln!("{}", serde_json::to_string_pretty(&value).map_err(Failure::runtime)?);
    }
    match &settled.result {
        ModelResult::Error(message) => {
            if !args.json {
                eprintln!("{message}");
            }
            let code = if settled.refusal.is_some() { EXIT_DECLINED } else { 1 };
            Err(Failure {
                code,
                message: String::new(),
            })
        }
        result => {
            if !args.json {
                print_result(result).map_err(Failure::runtime)?;
            }
            Ok(())
        }
    }
}

fn print_result(result: &ModelResult) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    match result {
        ModelResult::Text(text) => writeln!(out, "{text}"),
        ModelResult::Json(value) => writeln!(out, "{}", serde_json::to_string_pretty(value).unwrap_or_default()),
        ModelResult::Content(parts) => {
            for part in parts {
                match part {
                    toolgate_core::Content::Text { text } => writeln!(out, "{text}")?,
                    toolgate_core::Content::Media { mime, data, name } => writeln!(
                        out,
                        "[{mime}{} — {} bytes of base64]",
                        name.as_deref().map(|n| format!(" {n}")).unwrap_or_default(),
                        data.len()
                    )?,
                }
            }
            Ok(())
        }
        ModelResult::Error(message) => writeln!(out, "{message}"),
    }
}

/// Answers every permission request and question of `session` on the terminal, one at a time.
async fn prompt_loop(service: PermissionService, questions: QuestionService, session: String) {
    let mut events = service.subscribe();
    let mut asked = questions.subscribe();
    // Anything published before we subscribed is still pending: answer that first.
    let mut queue: Vec<toolgate_permission::Request> = service
        .pending()
        .into_iter()
        .filter(|r| r.session_id == session)
        .collect();
    let mut question_queue: Vec<QuestionRequest> = questions
        .pending()
        .into_iter()
        .filter(|q| q.session_id == session)
        .collect();
    loop {
        for request in queue.drain(..) {
            let answer = {
                let request = request.clone();
                tokio::task::spawn_blocking(move || ask_on_terminal(&request)).await
            };
            let (reply, message) = answer.unwrap_or((Reply::Reject, None));
            let by = toolgate_permission::DecisionSource::Reply {
                front_end: "terminal".into(),
                person: person(),
            };
            let _ = service.reply_by(&request.id, reply, message.as_deref(), by);
        }
        for request in question_queue.drain(..) {
            let answer = {
                let request = request.clone();
                tokio::task::spawn_blocking(move || answer_on_terminal(&request)).await
            };
            let _ = match answer.ok().flatten() {
                Some(answers) => questions.reply(&request.id, answers).map(|_| ()),
                None => questions.reject(&request.id),
            };
        }
        tokio::select! {
            event = events.recv() => match event {
                Ok(Event::Asked(request)) if request.session_id == session => queue.push(*request),
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    queue.extend(service.pending().into_iter().filter(|r| r.session_id == session));
                }
                Err(_) => return,
            },
            event = asked.recv() => match event {
                Ok(QuestionEvent::Asked(request)) if request.session_id == session => question_queue.push(request),
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    question_queue.extend(questions.pending().into_iter().filter(|q| q.session_id == session));
                }
                Err(_) => return,
            },
        }
    }
}

/// Shows questions on stderr and reads one answer per question from stdin: option
/// numbers (comma-separated when several are allowed), or free text; `Enter` leaves a
/// question unanswered; `!` dismisses them all.
fn answer_on_terminal(request: &QuestionRequest) -> Option<Vec<Vec<String>>> {
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut err = std::io::stderr().lock();
    let mut answers = Vec::new();
    for prompt in &request.questions {
        let _ = writeln!(
            err,
            "\n{} {}",
            paint("1;35", &format!("[{}]", prompt.header), colour),
            paint("1", &prompt.question, colour)
        );
        for (index, option) in prompt.options.iter().enumerate() {
            let _ = writeln!(err, "  {}. {} — {}", index + 1, option.label, option.description);
        }
        // A free-text question (an elicitation's text field) has no numbers to offer.
        let how = if prompt.options.is_empty() {
            ""
        } else if prompt.multiple {
            "numbers separated by commas, "
        } else {
            "a number, "
        };
        let _ = write!(err, "  answer ({how}your own words, Enter to skip, ! to dismiss): ");
        let _ = err.flush();
        let mut line = String::new();
        match std::io::stdin().read_line(&mut line) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        let line = line.trim();
        if line == "!" {
            return None;
        }
        let picks: Option<Vec<String>> = line
            .split(',')
            .map(|part| {
                part.trim()
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| n.checked_sub(1))
                    .and_then(|n| prompt.options.get(n))
                    .map(|option| option.label.clone())
            })
            .collect();
        let answer = match picks {
            _ if line.is_empty() => Vec::new(),
            Some(picks) if prompt.multiple || picks.len() == 1 => picks,
            _ => vec![line.to_string()],
        };
        answers.push(answer);
    }
    Some(answers)
}

fn paint(code: &str, text: &str, colour: bool) -> String {
    if colour {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// The lines of a unified diff, each with the line number it has in the file: the new
/// file's for added and context lines, the old file's for removed ones; none for
/// headers. A hunk's length comes from its `@@` header, so a removed line that starts
/// with `--` is never taken for a file header.
fn numbered_diff(diff: &str) -> Vec<(Option<usize>, &str)> {
    // (next line number, lines left) in the old and the new file.
    let (mut old, mut new) = ((0usize, 0usize), (0usize, 0usize));
    let mut out = Vec::new();
    for line in diff.lines() {
        let in_hunk = old.1 > 0 || new.1 > 0;
        if !in_hunk {
            if let Some(header) = line.strip_prefix("@@ -") {
                // `@@ -12,7 +12,8 @@`: start and length in each file (length 1 if absent).
                let mut parts = header.split_whitespace();
                let range = |part: Option<&str>| {
                    let mut numbers = part.unwrap_or("").trim_start_matches('+').split(',');
                    let start = numbers.next().and_then(|n| n.parse().ok()).unwrap_or(1);
                    let length = numbers.next().map_or(Some(1), |n| n.parse().ok()).unwrap_or(1);
                    (start, length)
                };
                old = range(parts.next());
                new = range(parts.next());
            }
            out.push((None, line));
        } else if line.starts_with('\\') {
            out.push((None, line));
        } else if line.starts_with('-') {
            out.push((Some(old.0), line));
            old = (old.0 + 1, old.1.saturating_sub(1));
        } else if line.starts_with('+') {
            out.push((Some(new.0), line));
            new = (new.0 + 1, new.1.saturating_sub(1));
        } else {
            out.push((Some(new.0), line));
            old = (old.0 + 1, old.1.saturating_sub(1));
            new = (new.0 + 1, new.1.saturating_sub(1));
        }
    }
    out
}

/// Shows one request on stderr and reads the answer from stdin.
fn ask_on_terminal(request: &toolgate_permission::Request) -> (Reply, Option<String>) {
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "\n{} {}",
        paint("1;33", "permission:", colour),
        paint("1", &request.action, colour)
    );
    if let Some(command) = request.metadata.get("command").and_then(Value::as_str)
        && request.action == "bash"
    {
        let _ = writeln!(err, "  $ {command}");
    }
    if let Some(description) = request.metadata.get("description").and_then(Value::as_str) {
        let _ = writeln!(err, "  {description}");
    }
    if let Some(diff) = request.metadata.get("diff").and_then(Value::as_str) {
        for (number, line) in numbered_diff(diff) {
            let painted = if line.starts_with('+') && !line.starts_with("+++") {
                paint("32", line, colour)
            } else if line.starts_with('-') && !line.starts_with("---") {
                paint("31", line, colour)
            } else if line.starts_with("@@") {
                paint("36", line, colour)
            } else {
                line.to_string()
            };
            let gutter = number.map(|n| format!("{n:>5} ")).unwrap_or_else(|| " ".repeat(6));
            let _ = writeln!(err, "  {}{painted}", paint("2", &gutter, colour));
        }
    }
    let asked: Vec<&String> = request
        .resources
        .iter()
        .filter(|resource| !request.allowed.contains(resource))
        .collect();
    for resource in &request.resources {
        if request.allowed.contains(resource) {
            let _ = writeln!(
                err,
                "  {} {resource}  (already allowed by a rule)",
                paint("32", "✓", colour)
            );
        } else {
            let _ = writeln!(err, "  • {resource}");
        }
    }
    if !request.allowed.is_empty() {
        let _ = writeln!(
            err,
            "  asking for {} of {}: the parts marked • ",
            asked.len(),
            request.resources.len()
        );
    }
    if let Some(protected) = request.metadata.get("protected").and_then(Value::as_array) {
        let names: Vec<&str> = protected.iter().filter_map(Value::as_str).collect();
        let _ = writeln!(
            err,
            "  {} defines the rules or runs code through git: asked every time, never saved",
            names.join(", ")
        );
    }
    // "Always" in two scopes (spec §10.1): this session, or the project (saved), each
    // saving exactly the patterns `toolgate check` shows as "always would save".
    let (session, always) = if request.save.is_empty() {
        (
            "[s] this session (nothing to save: same as once)".to_string(),
            "[a] always (nothing to save: same as once)".to_string(),
        )
    } else {
        let patterns = request.save.join(", ");
        (
            format!("[s] allow for this session: {patterns}"),
            format!("[a] allow always for the project: {patterns}"),
        )
    };
    let _ = writeln!(err, "  [o] allow once\n  {session}\n  {always}\n  [r] reject");
    loop {
        let _ = write!(err, "  answer [o/s/a/r]: ");
        let _ = err.flush();
        let mut line = String::new();
        match std::io::stdin().read_line(&mut line) {
            Ok(0) | Err(_) => return (Reply::Reject, None),
            Ok(_) => {}
        }
        match line.trim().to_ascii_lowercase().as_str() {
            "o" | "once" | "y" | "yes" => return (Reply::Once, None),
            "a" | "always" => return (Reply::Always, None),
            "s" | "session" => return (Reply::Session, None),
            "r" | "reject" | "n" | "no" => {
                let _ = write!(err, "  feedback for the model (optional, Enter to skip): ");
                let _ = err.flush();
                let mut feedback = String::new();
                let _ = std::io::stdin().read_line(&mut feedback);
                let feedback = feedback.trim().to_string();
                return (Reply::Reject, (!feedback.is_empty()).then_some(feedback));
            }
            _ => {
                let _ = writeln!(
                    err,
                    "  please answer o (once), s (this session), a (always, for the project) or r (reject)"
                );
            }
        }
    }
}

pub(crate) fn audit_tail(project: &Project, count: usize, json: bool) -> Result<(), Failure> {
    let setup = Setup::new(project, AskMode::Headless)?;
    let Some(audit) = setup.service.audit() else {
        return Ok(());
    };
    let entries = audit.tail(count);
    if entries.is_empty() {
        outln!("no audit entries in {}", audit.path().display());
    }
    for entry in entries {
        if json {
            outln!("{entry}");
            continue;
        }
        let text = |key: &str| entry.get(key).and_then(Value::as_str).unwrap_or("-").to_string();
        let what = if text("kind") == "settled" {
            let spilled = entry["outputPaths"].as_array().map_or(0, Vec::len);
            match entry.get("error").and_then(Value::as_str) {
                Some(error) => format!("settled with error: {error}"),
                None if spilled > 0 => format!(
                    "settled, output cut (full text in {})",
                    entry["outputPaths"][0].as_str().unwrap_or("?")
                ),
                None => "settled".to_string(),
            }
        } else {
            let resources: Vec<&str> = entry["resources"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let rule = entry
                .get("rule")
                .filter(|r| !r.is_null())
                .map(|r| {
                    format!(
                        " by {} {:?} ({})",
                        r["action"].as_str().unwrap_or(""),
                        r["resource"].as_str().unwrap_or(""),
                        r["origin"].as_str().unwrap_or("")
                    )
                })
                .unwrap_or_default();
            let reply = entry
                .get("reply")
                .and_then(Value::as_str)
                .map(|r| format!(", reply {r}"))
                .unwrap_or_default();
            format!(
                "{} {}: {}{rule}{reply} [{}]",
                text("action"),
                text("effect"),
                resources.join(", "),
                text("tool")
            )
        };
        outln!("{} {} {} {what}", text("time"), text("session"), text("agent"));
    }
    Ok(())
}

/// `toolgate audit why CALL`: every record of one call, oldest first, each decision with
/// its source. Exit 1 when the log has none.
pub(crate) fn audit_why(project: &Project, call: &str, json: bool) -> Result<(), Failure> {
    let setup = Setup::new(project, AskMode::Headless)?;
    let Some(audit) = setup.service.audit() else {
        return Err(Failure::runtime("no audit log is configured"));
    };
    let records = audit.query(&toolgate_permission::AuditQuery::last(usize::MAX).call(call));
    if records.is_empty() {
        return Err(Failure::runtime(format!(
            "no audit records for call {call:?} in {} (or its rotated files); `toolgate audit tail --json` lists call ids",
            audit.path().display()
        )));
    }
    if json {
        for record in &records {
            outln!("{record}");
        }
        return Ok(());
    }
    let text = |record: &Value, key: &str| record.get(key).and_then(Value::as_str).unwrap_or("-").to_string();
    let tool = records
        .iter()
        .find_map(|record| record.get("tool").and_then(Value::as_str))
        .unwrap_or("-");
    outln!(
        "call {call} ({tool}) in session {}, agent {}",
        text(&records[0], "session"),
        text(&records[0], "agent")
    );
    for record in &records {
        outln!("  {} {}", text(record, "time"), why_line(record));
    }
    Ok(())
}

/// One record of `audit why`, in words.
fn why_line(record: &Value) -> String {
    let text = |value: &Value, key: &str| value.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    match text(record, "kind").as_str() {
        "settled" => match record.get("error").and_then(Value::as_str) {
            Some(error) => format!("settled with an error: {error}"),
            None => {
                let redacted: Vec<String> = record["redacted"]
                    .as_array()
                    .map(|kinds| {
                        kinds
                            .iter()
                            .map(|kind| format!("{} ×{}", text(kind, "kind"), kind["count"]))
                            .collect()
                    })
                    .unwrap_or_default();
                if redacted.is_empty() {
                    "settled".to_string()
                } else {
                    format!("settled; redacted {}", redacted.join(", "))
                }
            }
        },
        "cancelled" => "cancelled before it settled".to_string(),
        "decision" => {
            let resources: Vec<&str> = record["resources"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let source = &record["source"];
            let rule = record.get("rule").filter(|rule| !rule.is_null()).map(|rule| {
                let file = rule
                    .get("file")
                    .and_then(Value::as_str)
                    .map(|file| format!(", {file}"))
                    .unwrap_or_default();
                format!(
                    "rule {} {:?} {} ({}{file})",
                    text(rule, "action"),
                    text(rule, "resource"),
                    text(rule, "effect"),
                    text(rule, "origin")
                )
            });
            let by = match text(source, "kind").as_str() {
                "approval" => {
                    let when = source
                        .get("saved_at")
                        .and_then(Value::as_str)
                        .map(|when| format!(", saved {when}"))
                        .unwrap_or_default();
                    format!("saved approval {}{when}", text(source, "id"))
                }
                "session_approval" => "an approval for this session".to_string(),
                "reply" => {
                    let person = source
                        .get("person")
                        .and_then(Value::as_str)
                        .map(|person| format!(" ({person})"))
                        .unwrap_or_default();
                    format!(
                        "reply {} through {}{person}",
                        text(record, "reply"),
                        text(source, "front_end")
                    )
                }
                "auto" => "--auto".to_string(),
                "headless" => format!("no one could answer ({})", text(record, "reply")),
                "hook" => format!("the {} hook", text(record, "via")),
                "exec" => match &rule {
                    Some(rule) => format!("exec-time enforcement, {rule}"),
                    None => "exec-time enforcement".to_string(),
                },
                "session_rule" => rule.clone().unwrap_or_else(|| "a session rule".to_string()),
                _ => rule.clone().unwrap_or_else(|| "no rule (the default)".to_string()),
            };
            let flagged = if record["flagged"] == true { " [flagged]" } else { "" };
            let shadow = record
                .get("shadow")
                .map(|shadow| {
                    let differs = if shadow["differs"] == true { ", differs" } else { "" };
                    format!("; shadow policy: {}{differs}", text(shadow, "effect"))
                })
                .unwrap_or_default();
            format!(
                "{} {}: {} — by {by}{flagged}{shadow}",
                text(record, "action"),
                text(record, "effect"),
                resources.join(", ")
            )
        }
        other => format!("{other} record"),
    }
}

/// `toolgate audit verify`: the hash chain over the log and its rotated files.
pub(crate) fn audit_verify(project: &Project, json: bool) -> Result<(), Failure> {
    let setup = Setup::new(project, AskMode::Headless)?;
    let Some(audit) = setup.service.audit() else {
        return Err(Failure::runtime("no audit log is configured"));
    };
    audit.flush();
    let verified = toolgate_permission::verify_audit(audit.path())
        .map_err(|error| Failure::runtime(format!("cannot read {}: {error}", audit.path().display())))?;
    if json {
        let broken = verified.broken.as_ref().map(|broken| {
            serde_json::json!({
                "file": broken.file.display().to_string(),
                "line": broken.line,
                "seq": broken.seq,
                "reason": broken.reason,
            })
        });
        outln!(
            "{}",
            serde_json::json!({
                "ok": broken.is_none(),
                "files": verified.files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>(),
                "records": verified.records,
                "unchained": verified.unchained,
                "first_seq": verified.first_seq,
                "last_seq": verified.last_seq,
                "starts_after_retention": verified.starts_after_retention,
                "broken": broken,
            })
        );
    }
    if let Some(broken) = &verified.broken {
        let seq = broken.seq.map(|seq| format!(" (seq {seq})")).unwrap_or_default();
        return Err(Failure::runtime(format!(
            "audit log broken at {} line {}{seq}: {}",
            broken.file.display(),
            broken.line,
            broken.reason
        )));
    }
    if !json {
        let range = match (verified.first_seq, verified.last_seq) {
            (Some(first), Some(last)) => format!(" (seq {first} to {last})"),
            _ => String::new(),
        };
        let older = if verified.starts_after_retention {
            "; older records were removed by retention"
        } else {
            ""
        };
        let unchained = if verified.unchained > 0 {
            format!("; {} earlier records predate the chain", verified.unchained)
        } else {
            String::new()
        };
        outln!(
            "audit log intact: {} records{range} in {} files{older}{unchained}",
            verified.records,
            verified.files.len()
        );
    }
    Ok(())
}

/// The person at this terminal, for the audit record of their replies: the login name
/// the environment gives (`USER`, `LOGNAME`), when it gives one.
pub(crate) fn person() -> Option<String> {
    ["USER", "LOGNAME"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|value| !value.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::numbered_diff;

    #[test]
    fn diff_lines_carry_their_file_line_numbers() {
        let diff = "--- a.rs\n+++ a.rs\n@@ -9,3 +9,3 @@\n ctx\n--- removed comment\n+++ added comment\n ctx\n@@ -40 +40,2 @@\n-x\n+y\n+z\n";
        let numbered: Vec<(Option<usize>, &str)> = numbered_diff(diff);
        assert_eq!(
            numbered,
            [
                (None, "--- a.rs"),
                (None, "+++ a.rs"),
                (None, "@@ -9,3 +9,3 @@"),
                (Some(9), " ctx"),
                (Some(10), "--- removed comment"),
                (Some(10), "+++ added comment"),
                (Some(11), " ctx"),
                (None, "@@ -40 +40,2 @@"),
                (Some(40), "-x"),
                (Some(40), "+y"),
                (Some(41), "+z"),
            ]
        );
    }
}
