//! Background processes through the real front ends: a real HTTP server
//! (`python3 -m http.server`) started in the background from `serve` (HTTP API) and from
//! `mcp` (JSON-RPC over stdio), waited for, fetched through another call, its log read,
//! killed, and `/proc` checked for anything left; sessions apart; the end of a session
//! (`DELETE /session/{id}`, the MCP client gone) and SIGTERM to toolgate leave nothing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use e2e::{Sandbox, Served};
use serde_json::{Value, json};

const TOKEN: &str = e2e::SERVER_TOKEN;

/// A port nothing listens on now (bound, then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The processes (not zombies) whose command line holds `marker`.
fn running_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !cmdline.contains(marker) || pid == std::process::id() {
            continue;
        }
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            matches!(
                stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next()),
                Some("Z" | "X")
            )
        });
        if !zombie {
            found.push(pid);
        }
    }
    found
}

/// The `sleep` processes of [`with_children`] carrying `marker` that run.
fn sleeps(marker: &str) -> usize {
    running_with(&format!("86400.{marker}"))
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| cmdline.starts_with(b"sleep\0"))
        })
        .count()
}

/// Waits until the three `sleep`s of [`with_children`] with `marker` run.
fn wait_for_sleeps(marker: &str) -> bool {
    (0..1000).any(|_| {
        std::thread::sleep(Duration::from_millis(10));
        sleeps(marker) == 3
    })
}

/// The shell ID in a background start's result.
fn shell_id(text: &str) -> String {
    let start = text
        .find("(shell ID: ")
        .unwrap_or_else(|| panic!("no shell ID in {text}"))
        + "(shell ID: ".len();
    text[start..].split(')').next().unwrap().to_string()
}

/// A marker no other run of these tests uses at the same time (`n` tells a test's apart).
fn marker(n: u32) -> String {
    format!("{}{n}", std::process::id())
}

/// A command that starts two processes carrying `marker` (one in the group, one that
/// left it with `setsid`) and then runs `last`.
fn with_children(marker: &str, last: &str) -> String {
    format!("sleep 86400.{marker}1 & setsid sleep 86400.{marker}2 & {last}")
}

// ---------------------------------------------------------------- serve (HTTP API)

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap()
}

/// One tool call over HTTP: the result's text and whether it is an error.
async fn http_call(served: &Served, session: &str, tool: &str, input: Value) -> (String, bool) {
    let response = client()
        .post(format!("{}/session/{session}/call", served.base))
        .bearer_auth(TOKEN)
        .body(json!({"tool": tool, "input": input}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    let result = &body["result"];
    let text = match &result["value"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts.iter().filter_map(|part| part["text"].as_str()).collect(),
        other => other.to_string(),
    };
    (text, result["type"] == "error")
}

/// Reads `id`'s output over HTTP until it holds `wanted`.
async fn http_read_until(served: &Served, session: &str, id: &str, wanted: &str) -> String {
    let mut seen = String::new();
    for _ in 0..60 {
        let (text, error) = http_call(served, session, "shell_output", json!({"id": id, "wait_ms": 5000})).await;
        assert!(!error, "{text}");
        // Everything kept, read again: output comes in pieces and each read has a trailer.
        let (text, error) = http_call(served, session, "shell_output", json!({"id": id, "since": 0})).await;
        assert!(!error, "{text}");
        seen = text;
        if seen.contains(wanted) {
            return seen;
        }
    }
    panic!("never saw {wanted:?} in {seen}");
}

#[tokio::test]
async fn a_dev_server_in_the_background_of_serve_is_waited_for_fetched_read_and_killed_leaving_nothing() {
    let sandbox = Sandbox::new();
    let served = sandbox.serve(&[]);
    let port = free_port();
    let marker = format!("http.server {port}");
    let (started, error) = http_call(
        &served,
        "ses_web",
        "bash",
        json!({"command": format!("python3 -m http.server {port} --bind 127.0.0.1"), "background": true,
               "wait_for": {"port": port, "timeout_ms": 60_000}}),
    )
    .await;
    assert!(!error, "{started}");
    assert!(
        started.starts_with("Command moved to the background (shell ID: "),
        "{started}"
    );
    assert!(
        started.contains(&format!("Ready: port {port} accepts connections")),
        "{started}"
    );
    let id = shell_id(&started);
    assert_eq!(running_with(&marker).len(), 1, "the server runs");

    let (fetched, error) = http_call(
        &served,
        "ses_web",
        "bash",
        json!({"command": format!("curl -s http://127.0.0.1:{port}/")}),
    )
    .await;
    assert!(!error && fetched.contains("Directory listing for /"), "{fetched}");
    let log = http_read_until(&served, "ses_web", &id, "\"GET / HTTP/1.1\" 200").await;
    assert!(log.contains("Serving HTTP on 127.0.0.1"), "{log}");

    // Another session sees nothing and can stop nothing.
    let (listed, _) = http_call(&served, "ses_other", "shell_list", json!({})).await;
    assert_eq!(listed, "No background processes in this session.");
    let (refused, error) = http_call(&served, "ses_other", "shell_kill", json!({"id": id})).await;
    assert!(error && refused.starts_with("No background process"), "{refused}");
    assert_eq!(running_with(&marker).len(), 1, "still running");

    let (listed, _) = http_call(&served, "ses_web", "shell_list", json!({})).await;
    assert!(listed.contains(&id) && listed.contains("running"), "{listed}");
    let (killed, error) = http_call(&served, "ses_web", "shell_kill", json!({"id": id})).await;
    assert!(
        !error && killed.starts_with(&format!("The background process {id} ended")),
        "{killed}"
    );
    assert_eq!(running_with(&marker), Vec::<u32>::new(), "nothing is left");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[tokio::test]
async fn deleting_a_session_and_sigterm_to_serve_end_every_process_with_its_setsid_children() {
    let sandbox = Sandbox::new();
    let mut served = sandbox.serve(&[]);
    let (ending, kept) = (marker(71), marker(72));
    for (session, marker) in [("ses_end", ending.as_str()), ("ses_keep", kept.as_str())] {
        let (started, error) = http_call(
            &served,
            session,
            "bash",
            json!({"command": with_children(marker, &format!("sleep 86400.{marker}3")), "background": true}),
        )
        .await;
        assert!(!error, "{started}");
    }
    assert!(wait_for_sleeps(&ending) && wait_for_sleeps(&kept), "both trees run");

    let response = client()
        .delete(format!("{}/session/ses_end", served.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    let ended: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert_eq!(ended, json!({"ended": 1}));
    assert_eq!(running_with(&format!("86400.{ending}")), Vec::<u32>::new());
    assert_eq!(sleeps(&kept), 3, "another session's stay");

    let killed = Command::new("kill")
        .args(["-TERM", &served.child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = served.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert_eq!(
        running_with(&format!("86400.{kept}")),
        Vec::<u32>::new(),
        "SIGTERM left them"
    );
}

// ---------------------------------------------------------------- mcp (stdio)

struct McpPipes {
    child: std::process::Child,
    input: Option<std::process::ChildStdin>,
    output: std::sync::mpsc::Receiver<String>,
    /// The notifications seen so far.
    notifications: Vec<Value>,
    next_id: u64,
}

impl McpPipes {
    fn start(sandbox: &Sandbox) -> McpPipes {
        let mut command = sandbox.command(&["mcp"]);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command.spawn().unwrap();
        let (sender, output) = std::sync::mpsc::channel();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let mut stdio = McpPipes {
            input: child.stdin.take(),
            child,
            output,
            notifications: Vec::new(),
            next_id: 1,
        };
        stdio.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}),
        );
        stdio.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        stdio
    }

    fn send(&mut self, message: Value) {
        let input = self.input.as_mut().unwrap();
        writeln!(input, "{message}").unwrap();
        input.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self
                .output
                .recv_timeout(Duration::from_secs(120))
                .unwrap_or_else(|e| panic!("no answer to {method} ({e})"));
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
            if message.get("id").is_none() {
                self.notifications.push(message);
            }
        }
    }

    /// One tool call: its text and whether it is an error.
    fn call(&mut self, tool: &str, arguments: Value) -> (String, bool) {
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let result = &answer["result"];
        assert!(result.is_object(), "{answer}");
        (
            result["content"][0]["text"].as_str().unwrap_or_default().to_string(),
            result["isError"] == true,
        )
    }
}

#[test]
fn a_dev_server_in_the_background_of_mcp_is_waited_for_fetched_read_and_killed_leaving_nothing() {
    let sandbox = Sandbox::new();
    let mut mcp = McpPipes::start(&sandbox);
    let port = free_port();
    let marker = format!("http.server {port}");
    let (started, error) = mcp.call(
        "bash",
        json!({"command": format!("python3 -m http.server {port} --bind 127.0.0.1"), "background": true,
               "wait_for": {"port": port, "timeout_ms": 60_000}}),
    );
    assert!(
        !error && started.contains(&format!("Ready: port {port} accepts connections")),
        "{started}"
    );
    let id = shell_id(&started);
    let (fetched, error) = mcp.call("bash", json!({"command": format!("curl -s http://127.0.0.1:{port}/")}));
    assert!(!error && fetched.contains("Directory listing for /"), "{fetched}");
    let mut log = String::new();
    for _ in 0..60 {
        let (text, error) = mcp.call("shell_output", json!({"id": id, "wait_ms": 5000}));
        assert!(!error, "{text}");
        log.push_str(&text);
        if log.contains("\"GET / HTTP/1.1\" 200") {
            break;
        }
    }
    assert!(log.contains("\"GET / HTTP/1.1\" 200"), "{log}");
    let (killed, error) = mcp.call("shell_kill", json!({"id": id}));
    assert!(!error && killed.contains("ended"), "{killed}");
    assert_eq!(running_with(&marker), Vec::<u32>::new(), "nothing is left");
    // The client was told, without polling, that the process started and ended.
    let (_, _) = mcp.call("shell_list", json!({}));
    let kinds: Vec<String> = mcp
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/message")
        .filter(|n| n["params"]["data"]["properties"]["id"] == json!(id))
        .map(|n| n["params"]["data"]["type"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("shell.started"), "{kinds:?}");
    assert!(kinds.iter().any(|kind| kind == "shell.exited"), "{kinds:?}");
    drop(mcp.input.take());
    assert!(mcp.child.wait().unwrap().success());
}

#[test]
fn the_mcp_client_gone_or_sigterm_to_toolgate_ends_every_background_process() {
    for (how, marker) in [("client gone", marker(81)), ("SIGTERM", marker(82))] {
        let sandbox = Sandbox::new();
        let mut mcp = McpPipes::start(&sandbox);
        let (started, error) = mcp.call(
            "bash",
            json!({"command": with_children(&marker, &format!("sleep 86400.{marker}3")), "background": true}),
        );
        assert!(!error, "{started}");
        let pattern = format!("86400.{marker}");
        assert!(wait_for_sleeps(&marker), "{how}: the tree runs");
        if how == "SIGTERM" {
            let killed = Command::new("kill")
                .args(["-TERM", &mcp.child.id().to_string()])
                .status()
                .unwrap();
            assert!(killed.success());
        } else {
            drop(mcp.input.take());
        }
        let status = mcp.child.wait().unwrap();
        assert!(status.success(), "{how}: {status:?}");
        assert_eq!(running_with(&pattern), Vec::<u32>::new(), "{how} left processes behind");
    }
}

#[test]
fn a_call_that_starts_a_background_process_ends_it_when_toolgate_call_exits() {
    let sandbox = Sandbox::new();
    let marker = marker(91);
    // Ready once both children were started: the call returns with the tree running.
    let last = format!("echo up; sleep 86400.{marker}3");
    let input = json!({"command": with_children(&marker, &last), "background": true, "wait_for": {"pattern": "^up$"}})
        .to_string();
    let (code, out, err) = sandbox.run(&["call", "bash", &input, "--auto"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("Command moved to the background") && out.contains("Ready: "),
        "{out}"
    );
    assert_eq!(running_with(&format!("86400.{marker}")), Vec::<u32>::new());
}

fn parent_of(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    after.split(' ').nth(1).unwrap().parse().unwrap()
}

fn gone(marker: &str) -> bool {
    (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        running_with(marker).is_empty()
    })
}

/// `call --detach`: the call returns once its answer is printed, and a holder keeps the
/// background process (its execs still checked) until the process ends by itself or
/// the holder is stopped; the exit code is the call's.
#[test]
fn a_detached_call_returns_and_its_holder_keeps_the_process_until_it_ends_or_is_stopped() {
    let sandbox = Sandbox::new();
    let marker = marker(95);
    let input = json!({"command": format!("echo up; exec sleep 86400.{marker}"), "background": true,
                       "wait_for": {"pattern": "^up$"}})
    .to_string();
    let (code, out, err) = sandbox.run(&["call", "bash", &input, "--auto", "--detach"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("Command moved to the background") && out.contains("Ready: "),
        "{out}"
    );
    // `up` is printed before bash execs sleep, and that exec is checked first: on a busy
    // machine the call can return while bash still stands where sleep will be.
    let find = || -> Vec<u32> {
        running_with(&format!("86400.{marker}"))
            .into_iter()
            .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.starts_with(b"sleep\0")))
            .collect()
    };
    let mut sleeping = find();
    for _ in 0..100 {
        if !sleeping.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        sleeping = find();
    }
    assert_eq!(sleeping.len(), 1, "the process outlived the call");
    let holder = parent_of(sleeping[0]);
    let cmdline =
        String::from_utf8_lossy(&std::fs::read(format!("/proc/{holder}/cmdline")).unwrap()).replace('\0', " ");
    assert!(
        cmdline.contains(" call bash ") && !cmdline.contains("--detach"),
        "{cmdline}"
    );
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(holder as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    assert!(gone(&marker), "SIGTERM to the holder ends the process, and the holder");

    // A process that ends by itself: the holder goes with it.
    let marker = format!("{marker}7");
    let input = json!({"command": format!("echo up; sleep 1.{marker}"), "background": true,
                       "wait_for": {"pattern": "^up$"}})
    .to_string();
    let (code, out, err) = sandbox.run(&["call", "bash", &input, "--auto", "--detach"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(gone(&marker), "the holder exits once its processes ended");

    // The call's own exit code and error come through.
    let plain = sandbox.run(&["call", "bash", r#"{"command": "echo out; exit 3"}"#, "--auto"]);
    let detached = sandbox.run(&[
        "call",
        "bash",
        r#"{"command": "echo out; exit 3"}"#,
        "--auto",
        "--detach",
    ]);
    assert_eq!(plain, detached);
    assert!(
        detached.1.contains("out") && detached.1.contains("code 3"),
        "{detached:?}"
    );
    let (code, _, err) = sandbox.run(&["call", "no_such_tool", "{}", "--detach"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown tool"), "{err}");
}

/// The events of `/event`, as `(type, data)`, read by a task.
async fn events(served: &Served) -> tokio::sync::mpsc::UnboundedReceiver<(String, Value)> {
    use futures_util::StreamExt;
    let stream = client()
        .get(format!("{}/event", served.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status().as_u16(), 200);
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut body = stream.bytes_stream();
        let mut buffer = String::new();
        while let Some(Ok(chunk)) = body.next().await {
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                let kind = block
                    .lines()
                    .find_map(|l| l.strip_prefix("event: "))
                    .unwrap_or("")
                    .to_string();
                let data = block.lines().find_map(|l| l.strip_prefix("data: ")).unwrap_or("null");
                let _ = sender.send((kind, serde_json::from_str(data).unwrap_or(Value::Null)));
            }
        }
    });
    receiver
}

/// The next event of type `wanted`.
async fn next_event(events: &mut tokio::sync::mpsc::UnboundedReceiver<(String, Value)>, wanted: &str) -> Value {
    loop {
        let (kind, data) = tokio::time::timeout(Duration::from_secs(60), events.recv())
            .await
            .unwrap_or_else(|_| panic!("no {wanted} event"))
            .unwrap();
        if kind == wanted {
            return data;
        }
    }
}

/// Answers the next `permission.asked` once; its resources.
async fn approve_next(served: &Served, events: &mut tokio::sync::mpsc::UnboundedReceiver<(String, Value)>) -> Value {
    let asked = next_event(events, "permission.asked").await;
    let id = asked["properties"]["id"].as_str().unwrap().to_string();
    let response = client()
        .post(format!("{}/permission/{id}/reply", served.base))
        .bearer_auth(TOKEN)
        .body(r#"{"reply": "once"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    asked["properties"]["resources"].clone()
}

/// A line written to a background shell is asked like a bash call, and the program it
/// starts is decided again by the exec guard when it starts — an ask that reaches the
/// person after the call that wrote it has returned; the process's life is on `/event`.
#[tokio::test]
async fn a_background_shell_asks_through_the_front_end_after_the_call_returned_and_its_life_is_on_the_event_stream() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": {"*": "allow", "touch *": "ask"}}}"#,
    );
    let served = sandbox.serve(&[]);
    let mut events = events(&served).await;
    let base = served.base.clone();
    let start = tokio::spawn(async move {
        let response = client()
            .post(format!("{base}/session/ses_sh/call"))
            .bearer_auth(TOKEN)
            .body(json!({"tool": "bash", "input": {"command": "bash", "background": true}}).to_string())
            .send()
            .await
            .unwrap();
        let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        body
    });
    // A shell reading its input may run anything, `touch` included: the start is asked.
    assert_eq!(approve_next(&served, &mut events).await, json!(["bash"]));
    let started = start.await.unwrap();
    let id = shell_id(started["result"]["value"].as_str().unwrap());
    let announced = next_event(&mut events, "shell.started").await;
    assert_eq!(
        (&announced["properties"]["sessionID"], &announced["properties"]["id"]),
        (&json!("ses_sh"), &json!(id))
    );

    let base = served.base.clone();
    let write_id = id.clone();
    let write = tokio::spawn(async move {
        let response = client()
            .post(format!("{base}/session/ses_sh/call"))
            .bearer_auth(TOKEN)
            .body(json!({"tool": "shell_write", "input": {"id": write_id, "input": "touch made\n"}}).to_string())
            .send()
            .await
            .unwrap();
        let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        body
    });
    // The line, asked before it is written.
    assert_eq!(approve_next(&served, &mut events).await, json!(["touch made"]));
    let written = write.await.unwrap();
    assert_eq!(written["result"]["type"], "text", "{written}");
    // `touch` starting in the background shell: the line was approved, so the exec guard
    // lets what it predicted start without asking a second time.
    let made = (0..1000).any(|_| {
        std::thread::sleep(Duration::from_millis(10));
        sandbox.project().join("made").exists()
    });
    assert!(made, "the approved program ran");

    // A program the line did not name, started later by the shell itself (an alias, a
    // function, input it read): the exec guard asks, after the call that wrote it returned.
    let base = served.base.clone();
    let write_id = id.clone();
    let write = tokio::spawn(async move {
        let response = client()
            .post(format!("{base}/session/ses_sh/call"))
            .bearer_auth(TOKEN)
            .body(json!({"tool": "shell_write", "input": {"id": write_id, "input": "t=touch; $t late\n"}}).to_string())
            .send()
            .await
            .unwrap();
        let body: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
        body
    });
    let line = approve_next(&served, &mut events).await;
    assert!(line.to_string().contains("late"), "the line is asked: {line}");
    assert_eq!(write.await.unwrap()["result"]["type"], "text");
    let resources = approve_next(&served, &mut events).await;
    assert!(resources.to_string().contains("touch late"), "{resources}");
    let late = (0..1000).any(|_| {
        std::thread::sleep(Duration::from_millis(10));
        sandbox.project().join("late").exists()
    });
    assert!(late, "the program approved at exec ran");

    let (killed, error) = http_call(&served, "ses_sh", "shell_kill", json!({"id": id})).await;
    assert!(!error, "{killed}");
    let exited = next_event(&mut events, "shell.exited").await;
    assert_eq!(exited["properties"]["id"], json!(id));
    assert_eq!(exited["properties"]["killed"], json!(true));
}

/// `toolgate ARGS` against the sandbox's running `serve`: its exit code and stdout+stderr.
fn cli(sandbox: &Sandbox, args: &[&str]) -> (i32, String) {
    let out = sandbox.command(args).output().unwrap();
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

/// A person answers from a terminal: `serve` prints a line per ask on stderr, `toolgate
/// pending` lists the asks and `approve`/`reject` answer them through the runtime file's
/// socket (no token anywhere on disk), and `toolgate shells` lists, reads and kills every
/// session's background processes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_answers_and_sees_the_background_processes_from_a_terminal() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": {"*": "allow", "touch *": "ask"}}}"#,
    );
    assert_eq!(
        cli(&sandbox, &["pending"]).0,
        1,
        "no server yet: a failure that says how to start one"
    );
    assert!(cli(&sandbox, &["pending"]).1.contains("no running `toolgate serve`"));
    let mut command = sandbox.command(&["serve", "--listen", "127.0.0.1:0"]);
    command
        .env("TOOLGATE_SERVER_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut served = Served::start(command);
    let stderr = served.child.stderr.take().unwrap();
    let (lines, stderr_lines) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    // The runtime file names the server and holds no token.
    let run = sandbox.data_dir().join("run");
    let files: Vec<_> = std::fs::read_dir(&run).unwrap().map(|e| e.unwrap().path()).collect();
    let json = files
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .unwrap();
    let text = std::fs::read_to_string(json).unwrap();
    assert!(text.contains(&served.base) && !text.contains(TOKEN), "{text}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&run).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(std::fs::metadata(json).unwrap().permissions().mode() & 0o777, 0o600);

    // Another user is closed on at once, whatever the file modes: opened up here on
    // purpose, the socket still answers nobody but the server's own user.
    if rustix::process::geteuid().is_root() && Command::new("setpriv").arg("--version").output().is_ok() {
        let socket = files
            .iter()
            .find(|p| p.extension().is_some_and(|e| e == "sock"))
            .unwrap();
        for dir in [sandbox.root.path().to_path_buf(), sandbox.data_dir(), run.clone()] {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o666)).unwrap();
        let probe = "import socket,sys\ns=socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n\
try:\n    s.sendall(b'GET /permission HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n')\n    print(repr(s.recv(4096)))\n\
except (ConnectionResetError, BrokenPipeError):\n    print(repr(b''))";
        let out = Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "/usr/bin/python3",
                "-c",
                probe,
            ])
            .arg(socket)
            .output()
            .unwrap();
        let answer = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && answer.trim() == "b''",
            "another user got an answer: {answer} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::set_permissions(&run, std::fs::Permissions::from_mode(0o700)).unwrap();
        // A socket others may write is not followed by the terminal commands.
        let (code, refused) = cli(&sandbox, &["pending"]);
        assert!(code == 1 && refused.contains("not this user's own"), "{refused}");
        std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600)).unwrap();
    }

    let call = |command: &'static str| {
        let base = served.base.clone();
        tokio::spawn(async move {
            let response = client()
                .post(format!("{base}/session/ses_term/call"))
                .bearer_auth(TOKEN)
                .body(json!({"tool": "bash", "input": {"command": command}}).to_string())
                .send()
                .await
                .unwrap();
            serde_json::from_slice::<Value>(&response.bytes().await.unwrap()).unwrap()
        })
    };
    let pending_id = || {
        for _ in 0..600 {
            let (code, out) = cli(&sandbox, &["pending", "--json"]);
            assert_eq!(code, 0, "{out}");
            let asks: Value = serde_json::from_str(&out).unwrap();
            if let Some(ask) = asks.as_array().and_then(|a| a.first()) {
                return (ask["id"].as_str().unwrap().to_string(), ask.clone());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("no ask became pending");
    };

    // A command the server runs is the server's descendant: it cannot answer asks there,
    // even as the same user with the socket's path in hand.
    {
        let socket = files
            .iter()
            .find(|p| p.extension().is_some_and(|e| e == "sock"))
            .unwrap();
        let probe = format!(
            "/usr/bin/python3 -c \"import socket\ns=socket.socket(socket.AF_UNIX)\ns.connect('{}')\n\
try:\n    s.sendall(b'GET /permission HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n')\n    print('ANSWER', s.recv(4096))\n\
except OSError:\n    print('ANSWER', b'')\"",
            socket.display()
        );
        let base = served.base.clone();
        let probing = tokio::spawn(async move {
            let response = client()
                .post(format!("{base}/session/ses_term/call"))
                .bearer_auth(TOKEN)
                .body(json!({"tool": "bash", "input": {"command": probe}}).to_string())
                .send()
                .await
                .unwrap();
            serde_json::from_slice::<Value>(&response.bytes().await.unwrap()).unwrap()
        });
        // Inline code is asked about: the person allows it from the terminal.
        let (id, _) = pending_id();
        let _ = stderr_lines.recv_timeout(Duration::from_secs(30));
        assert_eq!(cli(&sandbox, &["approve", &id]).0, 0);
        let out = probing.await.unwrap().to_string();
        assert!(out.contains("ANSWER b''"), "a descendant got an answer: {out}");
    }

    // Approve once.
    let first = call("touch once");
    let (id, ask) = pending_id();
    assert_eq!(ask["resources"], json!(["touch once"]));
    let (code, listed) = cli(&sandbox, &["pending"]);
    assert!(
        code == 0 && listed.contains(&id) && listed.contains("touch once"),
        "{listed}"
    );
    let line = stderr_lines.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(
        line.contains(&format!("ask {id} (bash in session ses_term): touch once")),
        "{line}"
    );
    assert_eq!(cli(&sandbox, &["approve", &id]), (0, format!("{id}: allowed once\n")));
    let settled = first.await.unwrap();
    assert_eq!(settled["result"]["type"], "text", "{settled}");
    assert!(sandbox.project().join("once").exists());
    // An answered ask cannot be answered again.
    let (code, again) = cli(&sandbox, &["approve", &id]);
    assert!(code == 1 && again.contains("answered already"), "{again}");

    // Reject with feedback: the model gets the message.
    let second = call("touch never");
    let (id, _) = pending_id();
    let (code, out) = cli(&sandbox, &["reject", &id, "--message", "use the fixtures instead"]);
    assert_eq!(code, 0, "{out}");
    let settled = second.await.unwrap();
    assert!(settled.to_string().contains("use the fixtures instead"), "{settled}");
    assert!(!sandbox.project().join("never").exists());

    // Always: saved, and the next such command is not asked.
    let third = call("touch always");
    let (id, _) = pending_id();
    assert_eq!(cli(&sandbox, &["approve", &id, "--always"]).0, 0);
    third.await.unwrap();
    let (code, saved) = cli(&sandbox, &["approvals", "list"]);
    assert!(code == 0 && saved.contains("touch *"), "{saved}");

    // Background processes of any session.
    let marker = marker(41);
    let (started, error) = http_call(
        &served,
        "ses_bg",
        "bash",
        json!({"command": format!("echo ready-{marker}; exec sleep 86400.{marker}"), "background": true,
               "wait_for": {"pattern": "ready"}}),
    )
    .await;
    assert!(!error, "{started}");
    let id = shell_id(&started);
    let (code, table) = cli(&sandbox, &["shells"]);
    assert!(
        code == 0 && table.contains(&id) && table.contains("ses_bg") && table.contains("running"),
        "{table}"
    );
    let (code, output) = cli(&sandbox, &["shells", "--output", &id]);
    assert_eq!((code, output), (0, format!("ready-{marker}\n")));
    // The person's read does not move the model's.
    let (read, _) = http_call(&served, "ses_bg", "shell_output", json!({"id": id})).await;
    assert!(read.contains(&format!("ready-{marker}")), "{read}");
    let (code, killed) = cli(&sandbox, &["shells", "--kill", &id]);
    assert!(code == 0 && killed.contains("ending"), "{killed}");
    let gone = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        running_with(&format!("86400.{marker}")).is_empty()
    });
    assert!(gone, "killed from the terminal");
    let (code, missing) = cli(&sandbox, &["shells", "--kill", "sh_nope"]);
    assert!(
        code == 1 && missing.contains("no background process sh_nope"),
        "{missing}"
    );

    // SIGTERM: the runtime file goes with the server.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(served.child.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let _ = served.child.wait();
    assert!(!json.exists(), "the runtime file is removed when serve stops");
    let (code, out) = cli(&sandbox, &["pending"]);
    assert!(code == 1 && out.contains("no running `toolgate serve`"), "{out}");
}

/// Whether `pid` descends from `ancestor` (its parent chain, read in `/proc`, reaches it).
fn descends(pid: u32, ancestor: u32) -> bool {
    let mut at = pid;
    for _ in 0..64 {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{at}/stat")) else {
            return false;
        };
        let Some(parent) = stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().nth(1))
            .and_then(|ppid| ppid.parse::<u32>().ok())
        else {
            return false;
        };
        if parent == ancestor {
            return true;
        }
        if parent <= 1 {
            return false;
        }
        at = parent;
    }
    false
}

/// Polls until nothing with `marker` in its command line runs (10 s at most).
fn none_left(marker: &str) -> bool {
    (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        running_with(marker).is_empty()
    })
}

/// Daemons: a process that forks twice (its parent exits at once, so it is orphaned) and
/// leaves the group and the session is still its background process's. While the shell
/// runs the command is the subreaper of its orphans (set by the sandbox trampoline), so
/// the daemon stays in its tree even when its exec cleared the environment; once the
/// shell exited, `serve` (a subreaper too) adopts it and knows it by the shell ID in its
/// environment. Either way it stays a descendant of `serve` (what the local socket's
/// check relies on) and ends with its background process.
#[tokio::test]
async fn daemons_that_fork_twice_and_leave_the_session_end_with_their_background_process() {
    let trampoline = e2e::kernel_has(e2e::KernelFeature::Sandbox) || e2e::kernel_has(e2e::KernelFeature::ExecGuard);
    let sandbox = Sandbox::new();
    let served = sandbox.serve(&[]);
    let serve_pid = served.child.id();
    let m = marker(81);
    // `( … & )`: the subshell forks the daemon and exits; `setsid` leaves group and session.
    let daemon = |tag: &str| format!("( setsid sleep 86400.{m}{tag} < /dev/null > /dev/null 2>&1 & )");
    let cleared =
        |tag: &str| format!("( env -i /usr/bin/setsid /bin/sleep 86400.{m}{tag} < /dev/null > /dev/null 2>&1 & )");

    // 1. The shell runs on; shell_kill ends the daemons too.
    let mut line = daemon("1");
    if trampoline {
        line = format!("{line}; {}", cleared("2"));
    }
    let expected = if trampoline { 2 } else { 1 };
    let (started, error) = http_call(
        &served,
        "ses_daemon",
        "bash",
        json!({"command": format!("{line}; echo up; exec sleep 86400.{m}4"), "background": true,
               "wait_for": {"pattern": "^up$"}}),
    )
    .await;
    assert!(!error, "{started}");
    let id = shell_id(&started);
    // The `sleep`s themselves (not the shells whose command lines name them).
    let daemons = |tags: &str| -> Vec<u32> {
        tags.chars()
            .flat_map(|tag| running_with(&format!("86400.{m}{tag}")))
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
                    let program = cmdline.split(|b| *b == 0).next().unwrap_or_default();
                    program.rsplit(|b| *b == b'/').next() == Some(&b"sleep"[..])
                })
            })
            .collect()
    };
    assert!(
        (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(25));
            daemons("12").len() == expected
        }),
        "the daemons run: {:?}",
        daemons("12")
    );
    // Orphans, in their own sessions, and still under serve.
    tokio::time::sleep(Duration::from_millis(200)).await;
    for pid in daemons("12") {
        assert!(descends(pid, serve_pid), "{pid} left serve's tree");
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let fields: Vec<&str> = stat.rsplit(')').next().unwrap().split_whitespace().collect();
        assert_eq!(fields[3], pid.to_string(), "{pid} leads its own session: {stat}");
    }
    let (killed, error) = http_call(&served, "ses_daemon", "shell_kill", json!({"id": id})).await;
    assert!(!error, "{killed}");
    assert!(
        none_left(&format!("86400.{m}")),
        "left: {:?}",
        running_with(&format!("86400.{m}"))
    );

    // 2. The shell exits right after starting the daemon: what it left behind ends,
    // the daemon adopted by serve included.
    let (started, error) = http_call(
        &served,
        "ses_daemon",
        "bash",
        json!({"command": format!("{}; echo up", daemon("3")), "background": true,
               "wait_for": {"pattern": "^up$"}}),
    )
    .await;
    assert!(!error, "{started}");
    assert!(
        none_left(&format!("86400.{m}3")),
        "left: {:?}",
        running_with(&format!("86400.{m}3"))
    );
    // Nothing of it stays behind as a zombie of serve either: it is reaped.
    let zombies = || -> Vec<String> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
            .filter(|stat| {
                let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
                fields.first() == Some(&"Z") && fields.get(1) == Some(&serve_pid.to_string().as_str())
            })
            .collect()
    };
    assert!(
        (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            zombies().is_empty()
        }),
        "zombies of serve: {:?}",
        zombies()
    );
}

/// Whether this process may make a cgroup (v2) under its own, as toolgate does for each
/// background process: the test then requires what only a cgroup gives.
fn cgroups_writable() -> bool {
    let (Ok(info), Ok(own)) = (
        std::fs::read_to_string("/proc/self/mountinfo"),
        std::fs::read_to_string("/proc/self/cgroup"),
    ) else {
        return false;
    };
    let Some(path) = own.lines().find_map(|line| line.strip_prefix("0::")) else {
        return false;
    };
    let Some(mount) = info.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let fields: Vec<&str> = before.split_whitespace().collect();
        (after.starts_with("cgroup2 ") && fields.get(3) == Some(&"/")).then(|| fields[4].to_string())
    }) else {
        return false;
    };
    let probe = std::path::Path::new(&mount)
        .join(path.trim().trim_start_matches('/'))
        .join(format!("e2e-probe-{}", std::process::id()));
    let made = std::fs::create_dir(&probe).is_ok();
    let _ = std::fs::remove_dir(&probe);
    made
}

/// A process that re-executes itself with an empty environment (no shell ID left to know
/// it by) and then changes its PID every 0.1 s (fork, the parent exits, `setsid`) outruns
/// every reading of `/proc`; it is still its background process's, because the cgroup
/// toolgate made for that process keeps every descendant, and `cgroup.kill` ends them all
/// at once: by `shell_kill` while the shell runs, when the shell exits, and by `DELETE
/// /session`. Where the system lets toolgate make no cgroup, only the first half is checked
/// (the tree and the shell ID still hold a daemon that stands still).
///
/// Whether it runs is read from its heartbeat (it appends its PID to a file at each hop),
/// since a scan of `/proc` can miss a process that hops while the scan runs.
#[tokio::test]
async fn a_process_that_clears_its_environment_and_keeps_changing_its_pid_still_ends_with_its_background_process() {
    let sandbox = Sandbox::new();
    let cgroups = cgroups_writable();
    let m = marker(91);
    sandbox.write(
        "project/hop.py",
        "import os, sys, time\n\
         if len(sys.argv) < 3:\n\
         \x20   os.execve(sys.executable, [sys.executable, sys.argv[0], sys.argv[1], 'hop'], {})\n\
         while not os.path.exists('stop'):\n\
         \x20   if os.fork() > 0:\n\
         \x20       os._exit(0)\n\
         \x20   os.setsid()\n\
         \x20   if os.fork() > 0:\n\
         \x20       os._exit(0)\n\
         \x20   with open(sys.argv[1], 'a') as beat:\n\
         \x20       beat.write(f'{os.getpid()}\\n')\n\
         \x20   time.sleep(0.1)\n",
    );
    // Whatever happens, the hoppers stop when the test ends.
    struct Stop(std::path::PathBuf);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = std::fs::write(&self.0, "");
        }
    }
    let _stop = Stop(sandbox.project().join("stop"));
    let beats = |n: u32| sandbox.project().join(format!("beat{m}{n}"));
    let beating = |n: u32| {
        let size = || std::fs::metadata(beats(n)).map(|meta| meta.len()).unwrap_or(0);
        let before = size();
        std::thread::sleep(Duration::from_millis(700));
        size() != before
    };
    let stopped = |n: u32| (0..20).any(|_| !beating(n));
    let served = sandbox.serve(&[]);
    let line = |n: u32| format!("python3 hop.py beat{m}{n} > /dev/null 2>&1 < /dev/null & sleep 1; echo hopped");

    // 1. While the shell runs.
    let (started, error) = http_call(
        &served,
        "ses_hop",
        "bash",
        json!({"command": format!("{}; exec sleep 86400", line(1)), "background": true,
               "wait_for": {"pattern": "^hopped$"}}),
    )
    .await;
    assert!(!error, "{started}");
    assert!(beating(1), "the hopper runs: {started}");
    let id = shell_id(&started);
    let (killed, error) = http_call(&served, "ses_hop", "shell_kill", json!({"id": id})).await;
    assert!(!error, "{killed}");
    if !cgroups {
        eprintln!("no cgroup can be made here: the hopper is not required to end");
        return;
    }
    assert!(stopped(1), "the hopper outlived shell_kill");

    // 2. The shell exits a second after starting it: what it left behind ends with it.
    let (started, error) = http_call(
        &served,
        "ses_hop",
        "bash",
        json!({"command": line(2), "background": true, "wait_for": {"pattern": "^hopped$"}}),
    )
    .await;
    assert!(!error, "{started}");
    assert!(stopped(2), "the hopper outlived its shell");

    // 3. The session ends while the shell runs.
    let (started, error) = http_call(
        &served,
        "ses_hop",
        "bash",
        json!({"command": format!("{}; exec sleep 86400", line(3)), "background": true,
               "wait_for": {"pattern": "^hopped$"}}),
    )
    .await;
    assert!(!error, "{started}");
    assert!(beating(3), "the hopper runs: {started}");
    let response = client()
        .delete(format!("{}/session/ses_hop", served.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(stopped(3), "the hopper outlived its session");
}

/// This test process's own cgroup (v2) directory, when it may write there.
fn own_cgroup_dir() -> Option<std::path::PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own
        .lines()
        .find_map(|line| line.strip_prefix("0::"))?
        .trim()
        .to_string();
    let mount = info.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        let fields: Vec<&str> = before.split_whitespace().collect();
        (after.starts_with("cgroup2 ") && fields.get(3) == Some(&"/")).then(|| fields[4].to_string())
    })?;
    let dir = std::path::Path::new(&mount).join(path.trim_start_matches('/'));
    cgroups_writable().then_some(dir)
}

/// A command run without the sandbox where it may write the cgroup tree (root) can leave
/// its cgroup; with its environment cleared and its shell gone at once, nothing marks it
/// as its background process's but being `serve`'s adopted child. It still ends when
/// `serve` stops: the last step of every shutdown ends what was adopted.
#[tokio::test]
async fn a_process_that_left_its_cgroup_still_ends_when_serve_stops() {
    let Some(own) = own_cgroup_dir() else {
        eprintln!("no cgroup can be made here: nothing to leave");
        return;
    };
    let sandbox = Sandbox::new();
    let m = marker(95);
    // The line names the cgroup tree, outside the project: allowed here.
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": "allow", "external_directory": "allow"}}"#,
    );
    sandbox.write(
        "project/leave.py",
        "import os, sys, time\n\
         with open(sys.argv[1], 'w') as procs:\n\
         \x20   procs.write(str(os.getpid()))\n\
         open('out', 'w').close()\n\
         time.sleep(86400)\n",
    );
    let served = sandbox.serve(&[]);
    let procs = own.join("cgroup.procs");
    let line = format!(
        "( env -i /usr/bin/setsid {} leave.py {} left{m} < /dev/null > /dev/null 2>&1 & ); while [ ! -e out ]; do sleep 0.01; done; echo up",
        python(),
        procs.display()
    );
    let (started, error) = http_call(
        &served,
        "ses_leave",
        "bash",
        json!({"command": line, "background": true, "wait_for": {"pattern": "^up$"}}),
    )
    .await;
    assert!(!error, "{started}");
    assert!(
        (0..100).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            !running_with(&format!("left{m}")).is_empty()
        }),
        "the process runs: {started}"
    );
    // It left its group before its shell exited, so the shell's end did not end it.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let left = running_with(&format!("left{m}"));
    assert!(
        !left.is_empty(),
        "the process outlived its shell, as a process that left its cgroup does"
    );
    let membership = std::fs::read_to_string(format!("/proc/{}/cgroup", left[0])).unwrap_or_default();
    assert!(!membership.contains("/toolgate-"), "{membership}");
    let status = Command::new("kill")
        .args(["-TERM", &served.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    assert!(
        none_left(&format!("left{m}")),
        "left: {:?}",
        running_with(&format!("left{m}"))
    );
}

/// The real program of the `python3` on `PATH` (not a version manager's shim, which
/// needs its environment).
fn python() -> String {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A background process starts where, and with what, a foreground command does, and is
/// in its own cgroup from its first instruction: the first start (its process moved into
/// a new group) and the next ones (a trampoline made ahead, waiting in its group) alike,
/// with the exec guard (the default) and without it (as on a kernel that lacks it; then
/// with the sandbox on, whose trampoline joins the group: with neither, the shell itself is
/// moved as it starts, README "Background processes"). The shell forks first of all; that
/// child is in the group only if the shell was when it forked.
#[tokio::test]
async fn every_background_start_runs_like_a_foreground_one_and_is_in_its_group_from_its_first_instruction() {
    let probe = "echo \"id=$TOOLGATE_SHELL_ID\"; pwd; umask; \
                 env | grep -v -e '^TOOLGATE_SHELL_ID=' -e '^_=' -e '^SHLVL=' | sort; echo end";
    for guarded in [true, false] {
        let sandbox = Sandbox::new();
        let cgroups = cgroups_writable();
        let mut command = if guarded {
            sandbox.command(&["serve", "--listen", "127.0.0.1:0"])
        } else {
            sandbox.command(&["serve", "--listen", "127.0.0.1:0", "--sandbox", "workspace-write"])
        };
        command.env("TOOLGATE_SERVER_TOKEN", TOKEN).stdout(Stdio::piped());
        if !guarded {
            // The exec guard reported missing: the sandbox alone, as on a kernel without it.
            command.env("TOOLGATE_TEST_EXEC_GUARD_MISSING", "seccomp user notification");
        }
        // As an MCP client or a service starts toolgate: no SHLVL. A bash whose stdin is a
        // socket then takes itself for a remote shell and reads ~/.bashrc (Debian's build).
        sandbox.write("home/.bashrc", "echo bashrc-ran\nexport FROM_BASHRC=1\n");
        command
            .env_remove("SHLVL")
            .env("HOME", sandbox.root.path().join("home"));
        let served = Served::start(command);
        let serve_pid = served.child.id();
        let (foreground, error) = http_call(&served, "ses_like", "bash", json!({"command": probe})).await;
        assert!(!error, "{foreground}");
        let expected: Vec<&str> = foreground.lines().skip(1).take_while(|line| *line != "end").collect();
        assert!(expected.iter().any(|line| line.starts_with("PATH=")), "{foreground}");
        assert!(!foreground.contains("bashrc-ran"), "{foreground}");
        for round in 0..3 {
            let m = marker(120 + round + if guarded { 0 } else { 10 });
            let before = uptime();
            let (started, error) = http_call(
                &served,
                "ses_like",
                "bash",
                json!({"command": format!("sleep 86400.{m} & echo \"child=$!\"; echo \"pid=$$\"; {probe}; exec sleep 86400"),
                       "background": true, "wait_for": {"pattern": "^end$"}}),
            )
            .await;
            assert!(!error, "{started}");
            let id = shell_id(&started);
            let output = http_read_until(&served, "ses_like", &id, "\nend").await;
            assert!(
                !output.contains("bashrc-ran"),
                "round {round} (guard {guarded}): ~/.bashrc ran: {output}"
            );
            let lines: Vec<&str> = output.lines().collect();
            let at = lines
                .iter()
                .position(|line| line.starts_with("child="))
                .unwrap_or_else(|| panic!("{output}"));
            assert_eq!(lines[at + 2], format!("id={id}"), "{output}");
            let got: Vec<&str> = lines[at + 3..]
                .iter()
                .copied()
                .take_while(|line| *line != "end")
                .collect();
            assert_eq!(got, expected, "round {round} (guard {guarded}): {output}");
            if cgroups {
                let child = lines[at].trim_start_matches("child=");
                let group = std::fs::read_to_string(format!("/proc/{child}/cgroup")).unwrap_or_default();
                assert!(
                    group
                        .lines()
                        .any(|line| line.starts_with("0::") && line.ends_with(&format!("/toolgate-{serve_pid}/{id}"))),
                    "round {round} (guard {guarded}): the shell forked outside its group: {group} {output}"
                );
                // After the first, each process was made ahead, waiting in its group
                // before the call that runs it was made.
                let pid = lines[at + 1].trim_start_matches("pid=");
                let made = started_at(pid.parse().unwrap());
                assert_eq!(
                    round > 0,
                    made < before,
                    "round {round} (guard {guarded}): made {made} s, call {before} s"
                );
            }
            let (killed, error) = http_call(&served, "ses_like", "shell_kill", json!({"id": id})).await;
            assert!(!error, "{killed}");
            assert!(
                gone(&format!("86400.{m}")),
                "round {round}: its child outlived shell_kill"
            );
        }
    }
}

/// Seconds since boot, as `/proc/uptime` says.
fn uptime() -> f64 {
    let text = std::fs::read_to_string("/proc/uptime").unwrap();
    text.split_whitespace().next().unwrap().parse().unwrap()
}

/// When process `pid` started, in seconds since boot (proc(5) field 22, in clock ticks,
/// 100 a second on Linux).
fn started_at(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let ticks: f64 = after.split(' ').nth(19).unwrap().parse().unwrap();
    ticks / 100.0
}
