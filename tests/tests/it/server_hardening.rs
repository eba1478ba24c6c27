//! `toolgate serve` attacked the way a local process or a web page would: half-sent
//! request heads, a thousand idle connections at the file limit, DNS rebinding and
//! foreign origins, weak tokens, token guessing, and another project's approvals. Every
//! test talks to the real binary over real sockets.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use e2e::{SERVER_TOKEN as TOKEN, Sandbox, Served};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends `request` (a whole HTTP/1.1 request with `Connection: close`) and returns the
/// status and the body.
async fn raw(served: &Served, request: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(served.address()).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer))
        .await
        .expect("no answer within 20 s")
        .unwrap();
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {text:?}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default();
    (status, body)
}

/// `GET /tool` with these extra header lines (each ending in `\r\n`).
async fn get_tool(served: &Served, headers: &str) -> u16 {
    raw(
        served,
        &format!("GET /tool HTTP/1.1\r\n{headers}Connection: close\r\n\r\n"),
    )
    .await
    .0
}

fn host(served: &Served) -> String {
    format!("Host: {}\r\n", served.address())
}

fn bearer() -> String {
    format!("Authorization: Bearer {TOKEN}\r\n")
}

#[tokio::test]
async fn a_client_that_sends_half_a_request_head_is_closed_after_the_header_timeout() {
    let sandbox = Sandbox::new();
    let served = sandbox.serve(&[]);
    // Precondition: the server answers whole requests.
    assert_eq!(get_tool(&served, &(host(&served) + &bearer())).await, 200);
    let mut slow = TcpStream::connect(served.address()).await.unwrap();
    slow.write_all(format!("GET /tool HTTP/1.1\r\n{}", host(&served)).as_bytes())
        .await
        .unwrap();
    let started = Instant::now();
    let mut buffer = [0u8; 256];
    let read = tokio::time::timeout(Duration::from_secs(30), slow.read(&mut buffer))
        .await
        .expect("the half-sent request was still held after 30 s");
    let elapsed = started.elapsed();
    assert!(
        matches!(read, Ok(0) | Err(_)),
        "the server answered instead of closing: {read:?} {:?}",
        String::from_utf8_lossy(&buffer)
    );
    assert!(
        elapsed >= Duration::from_secs(9) && elapsed <= Duration::from_secs(13),
        "closed after {elapsed:?}, not after the 10 s header timeout"
    );
}

/// The soft and hard limits of open files of process `pid`.
fn file_limits(pid: u32) -> (u64, u64) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits.lines().find(|line| line.starts_with("Max open files")).unwrap();
    let numbers: Vec<u64> = line.split_whitespace().filter_map(|word| word.parse().ok()).collect();
    (numbers[0], numbers[1])
}

/// `toolgate serve` started by `sh -c 'ulimit …; exec toolgate serve …'`.
fn serve_with_ulimit(sandbox: &Sandbox, ulimit: &str) -> Served {
    let mut command = std::process::Command::new("sh");
    command
        .arg("-c")
        .arg(format!("ulimit {ulimit} && exec \"$0\" \"$@\""))
        .arg(e2e::toolgate_binary())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .current_dir(sandbox.project())
        .env("TOOLGATE_DATA_DIR", sandbox.data_dir())
        .env("TOOLGATE_CONFIG_DIR", sandbox.config_dir())
        .env("TOOLGATE_SERVER_TOKEN", TOKEN)
        .env_remove("TOOLGATE_PERMISSION")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped());
    Served::start(command)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eleven_hundred_idle_connections_at_a_1024_file_limit_do_not_lock_out_an_authenticated_call() {
    // This process holds the attacker's 1,100 sockets: it needs more than 1,024 files.
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let hard = limit.maximum.unwrap_or(1 << 20);
    rustix::process::setrlimit(
        rustix::process::Resource::Nofile,
        rustix::process::Rlimit {
            current: Some(hard),
            maximum: limit.maximum,
        },
    )
    .unwrap();
    assert!(
        hard >= 1200,
        "this test needs a hard file limit of at least 1200, not {hard}"
    );
    let sandbox = Sandbox::new();
    sandbox.write("project/hello.txt", "hello\n");
    sandbox.write("project/toolgate.json", r#"{"permission": {"read": "allow"}}"#);
    let served = serve_with_ulimit(&sandbox, "-n 1024");
    assert_eq!(
        file_limits(served.child.id()),
        (1024, 1024),
        "precondition: the server runs with 1,024 files"
    );
    let address = served.address();
    let head = format!("POST /session/s/call HTTP/1.1\r\nHost: {address}\r\nContent-Le");
    let mut idle = Vec::new();
    for _ in 0..1100 {
        let Ok(mut stream) = TcpStream::connect(address).await else {
            continue;
        };
        let _ = stream.write_all(head.as_bytes()).await;
        idle.push(stream);
    }
    assert!(idle.len() >= 1100, "only {} attacker connections opened", idle.len());
    let call = reqwest_client()
        .post(format!("{}/session/s/call", served.base))
        .bearer_auth(TOKEN)
        .body(json!({"tool": "read", "input": {"path": "hello.txt"}}).to_string())
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("the authenticated call got no answer while 1,100 connections were held");
    assert_eq!(call.status().as_u16(), 200);
    let body: Value = serde_json::from_slice(&call.bytes().await.unwrap()).unwrap();
    assert!(body["result"]["value"].as_str().unwrap().contains("1: hello"), "{body}");
    drop(idle);
}

#[tokio::test]
async fn the_file_limit_is_raised_to_the_hard_limit_at_start() {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let hard = limit.maximum.unwrap_or(1 << 20).min(1 << 20);
    let soft = (hard / 2).clamp(1, 512);
    assert!(soft < hard, "precondition: room between the soft and hard limits");
    let sandbox = Sandbox::new();
    let served = serve_with_ulimit(&sandbox, &format!("-S -n {soft}"));
    let (now_soft, now_hard) = file_limits(served.child.id());
    assert_eq!(now_hard, hard);
    assert_eq!(now_soft, now_hard, "the soft limit ({soft} at exec) was not raised");
}

fn reqwest_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

#[tokio::test]
async fn rebinding_hosts_and_foreign_origins_are_refused_even_with_the_token() {
    let sandbox = Sandbox::new();
    let served = sandbox.serve(&["--allow-host", "devbox.lan"]);
    let port = served.address().port();
    let ok = bearer();
    for (headers, expected) in [
        (format!("Host: 127.0.0.1:{port}\r\n{ok}"), 200),
        (format!("Host: localhost:{port}\r\n{ok}"), 200),
        (format!("Host: LOCALHOST:{port}\r\n{ok}"), 200),
        (format!("Host: [::1]:{port}\r\n{ok}"), 200),
        (format!("Host: devbox.lan:{port}\r\n{ok}"), 200),
        // DNS rebinding: the attacker's name, resolving to 127.0.0.1.
        (format!("Host: evil.example:{port}\r\n{ok}"), 403),
        ("Host: evil.example\r\n".to_string() + &ok, 403),
        (format!("Host: localhost.evil.example:{port}\r\n{ok}"), 403),
        (format!("Host: localhost:{}\r\n{ok}", port.wrapping_add(1)), 403),
        (format!("Host: 127.0.0.1\r\n{ok}"), 403),
        (format!("Host: devbox.lan:1\r\n{ok}"), 403),
        (format!("Host: user@localhost:{port}\r\n{ok}"), 403),
        (ok.clone(), 403),
        (format!("Host: 127.0.0.1:{port}\r\nHost: evil.example\r\n{ok}"), 403),
        // Browsers: the page's origin must be this server.
        (
            format!("Host: 127.0.0.1:{port}\r\nOrigin: http://evil.example\r\n{ok}"),
            403,
        ),
        (
            format!("Host: 127.0.0.1:{port}\r\nOrigin: http://localhost:3000\r\n{ok}"),
            403,
        ),
        (format!("Host: 127.0.0.1:{port}\r\nOrigin: null\r\n{ok}"), 403),
        (format!("Host: 127.0.0.1:{port}\r\nOrigin: file://\r\n{ok}"), 403),
        (
            format!("Host: 127.0.0.1:{port}\r\nOrigin: http://localhost:{port}\r\n{ok}"),
            200,
        ),
        (
            format!("Host: 127.0.0.1:{port}\r\nOrigin: http://devbox.lan:{port}\r\n{ok}"),
            200,
        ),
        // Without the token a good Host is still not enough.
        (format!("Host: 127.0.0.1:{port}\r\n"), 401),
    ] {
        assert_eq!(get_tool(&served, &headers).await, expected, "{headers:?}");
    }
    // An absolute request target naming another host is refused too.
    let (status, _) = raw(
        &served,
        &format!("GET http://evil.example/tool HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{ok}Connection: close\r\n\r\n"),
    )
    .await;
    assert_eq!(status, 403);
    // And so is MCP at /mcp.
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#;
    let mcp = |host: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{ok}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{initialize}",
            initialize.len()
        )
    };
    assert_eq!(raw(&served, &mcp("evil.example")).await.0, 403);
    let (status, body) = raw(&served, &mcp(&format!("localhost:{port}"))).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"serverInfo\""), "{body}");
}

#[test]
fn weak_or_blank_env_tokens_are_refused_at_start_with_exit_2() {
    let sandbox = Sandbox::new();
    for (token, says) in [
        ("a", "has 1 characters; it needs at least 32"),
        ("", "is blank"),
        ("   ", "is blank"),
        ("0123456789abcdef0123456789abcde", "has 31 characters"),
        ("0123456789abcdef 0123456789abcdef", "visible ASCII"),
        ("0123456789abcdéf0123456789abcdef", "visible ASCII"),
    ] {
        let output = sandbox
            .command(&["serve", "--listen", "127.0.0.1:0"])
            .env("TOOLGATE_SERVER_TOKEN", token)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{token:?}: {stderr}");
        assert!(stderr.contains(says), "{token:?}: {stderr}");
        assert!(
            output.stdout.is_empty(),
            "{token:?}: it listened: {}",
            String::from_utf8_lossy(&output.stdout)
        );
    }
    // 32 characters is enough, and an unset variable gets a 43-character random token.
    let mut command = sandbox.command(&["serve", "--listen", "127.0.0.1:0"]);
    command
        .env("TOOLGATE_SERVER_TOKEN", "0123456789abcdef0123456789abcdef")
        .stdout(std::process::Stdio::piped());
    drop(Served::start(command));
    let mut command = sandbox.command(&["serve", "--listen", "127.0.0.1:0"]);
    command
        .env_remove("TOOLGATE_SERVER_TOKEN")
        .stdout(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let _address = lines.next().unwrap().unwrap();
    let token = lines.next().unwrap().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let token = token.strip_prefix("toolgate: token ").unwrap();
    assert_eq!(token.len(), 43, "{token}");
    assert!(token.bytes().all(|b| b.is_ascii_alphanumeric()), "{token}");
}

#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive() {
    let sandbox = Sandbox::new();
    let served = sandbox.serve(&[]);
    let host = host(&served);
    for (authorization, expected) in [
        (format!("bearer {TOKEN}"), 200),
        (format!("BEARER {TOKEN}"), 200),
        (format!("BeArEr {TOKEN}"), 200),
        (format!("Bearer   {TOKEN} "), 200),
        (format!("Basic {TOKEN}"), 401),
        (format!("Bearer{TOKEN}"), 401),
        (format!("Bearer {}", &TOKEN[..TOKEN.len() - 1]), 401),
        (format!("Bearer {TOKEN}x"), 401),
    ] {
        assert_eq!(
            get_tool(&served, &format!("{host}Authorization: {authorization}\r\n")).await,
            expected,
            "{authorization:?}"
        );
    }
}

#[tokio::test]
async fn failed_authentications_are_slowed_per_connection_and_audited_without_the_token() {
    let sandbox = Sandbox::new();
    let served = sandbox.serve(&[]);
    let guess = "guessed-token-that-must-never-be-logged-0001";
    // One keep-alive connection, as a guessing script would use.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(1)
        .build()
        .unwrap();
    let mut took = Vec::new();
    for _ in 0..6 {
        let started = Instant::now();
        let response = client
            .get(format!("{}/tool", served.base))
            .bearer_auth(guess)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 401);
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        took.push(started.elapsed());
    }
    assert!(
        took[..3].iter().all(|t| *t < Duration::from_millis(500)),
        "a few mistakes are free: {took:?}"
    );
    assert!(
        took[3..].iter().all(|t| *t >= Duration::from_millis(700)),
        "guessing is slowed after a few a second: {took:?}"
    );
    // The right token on the same connection is not slowed.
    let started = Instant::now();
    let response = client
        .get(format!("{}/tool", served.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(started.elapsed() < Duration::from_millis(500));
    let audit = std::fs::read_to_string(sandbox.data_dir().join("audit.jsonl")).unwrap();
    let refused: Vec<Value> = audit
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|entry| entry["kind"] == "auth_failed")
        .collect();
    assert_eq!(refused.len(), 6, "{audit}");
    assert_eq!(refused[5]["reason"], "wrong token");
    assert_eq!(refused[5]["path"], "/tool");
    assert_eq!(refused[5]["connectionFailures"], 6, "{}", refused[5]);
    assert!(refused[5]["peer"].as_str().unwrap().starts_with("127.0.0.1:"));
    assert!(!audit.contains(guess), "the audit log holds the guessed token");
    assert!(!audit.contains(TOKEN), "the audit log holds the real token");
}

#[tokio::test]
async fn approvals_of_another_project_are_untouched() {
    let sandbox = Sandbox::new();
    let served = sandbox.serve(&[]);
    use toolgate_permission::ApprovalStore;
    let store = toolgate_permission::SqliteStore::open(sandbox.data_dir().join("toolgate.db")).unwrap();
    store.add("/some/other/project", "bash", &["rm *".to_string()]).unwrap();
    let other = store.list("/some/other/project").unwrap();
    assert_eq!(other.len(), 1, "precondition: the other project has an approval");
    let id = &other[0].id;
    let response = reqwest_client()
        .delete(format!("{}/approvals/{id}", served.base))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    let (status, listed) = raw(
        &served,
        &format!(
            "GET /approvals HTTP/1.1\r\n{}{}Connection: close\r\n\r\n",
            host(&served),
            bearer()
        ),
    )
    .await;
    assert_eq!(
        (status, listed.trim()),
        (200, "[]"),
        "another project's approval is listed"
    );
    // The CLI of this project cannot remove it either.
    let (code, _, stderr) = sandbox.run(&["approvals", "remove", id]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(store.list("/some/other/project").unwrap().len(), 1, "it was deleted");
}

/// What a command run by the model would do to find the server's token: its own
/// environment, every process's environment and command line, every regular file the
/// server holds open (through `/proc/<pid>/fd`), and every file of the data and config
/// directories. All it reads goes to `loot.bin` in the project, as it goes. The model
/// would write it with the write tool: `python3 -` with the script as input is an opaque
/// command that always asks.
///
/// Only regular files are opened, each read has 2 s and the whole hunt 40 s: another
/// process's pipes, sockets and devices (the server's stdout, the test runner's capture
/// pipe) are not the token's hiding place, and reading them can wait on their writers.
fn token_hunt_script(data: &std::path::Path, config: &std::path::Path) -> String {
    format!(
        r#"import os, signal, stat
def slow(*_):
    raise TimeoutError("no answer within 2 s")
signal.signal(signal.SIGALRM, slow)
loot = open("loot.bin", "wb")
def put(data):
    loot.write(data)
    loot.flush()
put(("env %r\n" % sorted(os.environ.items())).encode())
read = 0
def take(label, path):
    global read
    try:
        signal.alarm(2)
        try:
            mode = os.stat(path).st_mode
            if not stat.S_ISREG(mode):
                put(("-- %s: not a regular file (%o)\n" % (label, mode)).encode())
                return
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
            try:
                chunks = []
                while sum(map(len, chunks)) < 1 << 22:
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        break
                    chunks.append(chunk)
            finally:
                os.close(fd)
        finally:
            signal.alarm(0)
        put(("== %s\n" % label).encode() + b"".join(chunks) + b"\n")
        read += 1
    except Exception as error:
        put(("!! %s: %s\n" % (label, error)).encode())
for pid in sorted(p for p in os.listdir("/proc") if p.isdigit()):
    take("cmdline " + pid, "/proc/%s/cmdline" % pid)
    take("environ " + pid, "/proc/%s/environ" % pid)
# The server is an ancestor of this command: the one whose command line says serve.
servers = []
pid = str(os.getppid())
while pid not in ("0", "1"):
    try:
        words = open("/proc/%s/cmdline" % pid, "rb").read().split(b"\0")
        if b"serve" in words:
            servers.append(pid)
        pid = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()[1]
    except Exception:
        break
for pid in servers:
    try:
        fds = os.listdir("/proc/%s/fd" % pid)
    except Exception as error:
        put(("!! fds %s: %s\n" % (pid, error)).encode())
        fds = []
    for fd in fds:
        take("fd %s/%s" % (pid, fd), "/proc/%s/fd/%s" % (pid, fd))
for root in ({data:?}, {config:?}):
    for directory, _, files in os.walk(root):
        for name in files:
            take(os.path.join(directory, name), os.path.join(directory, name))
loot.close()
print("servers:", servers, "read:", read)
"#
    )
}

#[tokio::test]
async fn a_bash_call_finds_the_token_nowhere_it_can_look() {
    let sandbox = Sandbox::new();
    sandbox.write(
        "project/toolgate.json",
        r#"{"permission": {"bash": "allow", "read": "allow", "external_directory": "allow"}}"#,
    );
    // A token of this test alone: other tests' servers run with the shared one.
    let token = format!("hunt-{}-{:?}-0123456789abcdef", std::process::id(), Instant::now());
    let token: String = token.chars().filter(char::is_ascii_alphanumeric).collect();
    let mut command = sandbox.command(&["serve", "--listen", "127.0.0.1:0"]);
    command
        .env("TOOLGATE_SERVER_TOKEN", &token)
        .stdout(std::process::Stdio::piped());
    let served = Served::start(command);
    // Something in the data directory first: a refused guess and a call in the audit log.
    let client = reqwest_client();
    let refused = client
        .get(format!("{}/tool", served.base))
        .bearer_auth("a-wrong-token-of-enough-characters-000")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status().as_u16(), 401);
    sandbox.write(
        "project/hunt.py",
        &token_hunt_script(&sandbox.data_dir(), &sandbox.config_dir()),
    );
    let script = "timeout -k 2 40 python3 hunt.py";
    let call = client
        .post(format!("{}/session/s/call", served.base))
        .bearer_auth(&token)
        .body(json!({"tool": "bash", "input": {"command": script}}).to_string())
        .timeout(Duration::from_secs(90))
        .send();
    let mut call = std::pin::pin!(call);
    // The rules allow the call: should it ask anyway, say what it asked instead of
    // waiting for the HTTP timeout.
    let response = loop {
        tokio::select! {
            response = &mut call => break response.unwrap(),
            () = tokio::time::sleep(Duration::from_secs(1)) => {
                let pending: Value = client
                    .get(format!("{}/permission", served.base))
                    .bearer_auth(&token)
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                assert_eq!(pending, json!([]), "the call asked instead of running");
            }
        }
    };
    assert_eq!(response.status().as_u16(), 200);
    let settled: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    let text = settled["result"]["value"].as_str().unwrap_or_default().to_string();
    let server = served.child.id().to_string();
    assert!(
        text.contains(&format!("'{server}'")),
        "precondition: the command found the server process {server}: {settled}"
    );
    let loot = std::fs::read(sandbox.project().join("loot.bin")).unwrap();
    let loot = String::from_utf8_lossy(&loot);
    // Preconditions: it did read the server's command line and the data directory.
    assert!(loot.contains(&format!("== cmdline {server}\n")), "{text}");
    assert!(
        loot.contains("audit.jsonl"),
        "the data directory was not searched: {text}"
    );
    if let Some(at) = loot.find(&token) {
        let section = loot[..at].rfind("== ").unwrap_or(0);
        let label = loot[section..].lines().next().unwrap_or_default();
        panic!("the command found the token in {label:?}: {text}");
    }
}

#[test]
fn a_token_from_the_environment_is_used_but_never_printed() {
    let sandbox = Sandbox::new();
    let mut command = sandbox.command(&["serve", "--listen", "127.0.0.1:0"]);
    command
        .env("TOOLGATE_SERVER_TOKEN", TOKEN)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stdout.take().unwrap()));
    let mut printed = Vec::new();
    // The address, the token line and the MCP line.
    for _ in 0..3 {
        printed.push(lines.next().unwrap().unwrap());
    }
    let address = printed[0]
        .strip_prefix("toolgate: listening on http://")
        .unwrap()
        .to_string();
    // Precondition: the server runs with that token (and only with it).
    let get = |authorization: &str| {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        write!(
            stream,
            "GET /tool HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {authorization}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer.split_whitespace().nth(1).unwrap_or_default().to_string()
    };
    assert_eq!(get(TOKEN), "200", "{printed:?}");
    assert_eq!(get("0123456789abcdef0123456789abcdef-other"), "401");
    let _ = child.kill();
    let _ = child.wait();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    for line in printed
        .iter()
        .chain(stderr.lines().map(str::to_string).collect::<Vec<_>>().iter())
    {
        assert!(!line.contains(TOKEN), "printed: {line:?}");
    }
    assert_eq!(printed[1], "toolgate: token from $TOOLGATE_SERVER_TOKEN (not shown)");
}
