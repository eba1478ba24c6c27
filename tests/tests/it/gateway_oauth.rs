//! OAuth for remote MCP servers, end to end: a real authorization server and protected
//! MCP server written with the official Python SDK (`python/mcp_oauth.py`), `toolgate mcp
//! auth NAME` run as a person would (the test reads the printed URL and plays the
//! browser: it follows the authorization server's redirect to toolgate's loopback
//! callback), then gateway calls through `toolgate call`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use e2e::Sandbox;
use serde_json::{Value, json};

/// The authorization server and protected MCP server, on loopback, ended on drop.
struct OAuthServer {
    child: Child,
    url: String,
    marks: PathBuf,
}

impl OAuthServer {
    /// Access tokens accepted for `lifetime` seconds; `report_expiry` false leaves
    /// `expires_in` out of token responses (the client learns of the expiry from a 401).
    fn start(sandbox: &Sandbox, lifetime: u64, report_expiry: bool) -> OAuthServer {
        let marks = sandbox.root.path().join("marks");
        std::fs::create_dir_all(&marks).unwrap();
        let port_file = sandbox.root.path().join("oauth.port");
        let child = Command::new(e2e::python_with_mcp())
            .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/mcp_oauth.py"))
            .arg(&port_file)
            .env("MARKS", &marks)
            .env("TOKEN_LIFETIME", lifetime.to_string())
            .env("REPORT_EXPIRY", if report_expiry { "1" } else { "0" })
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let port = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file)
                && let Ok(port) = text.trim().parse::<u16>()
            {
                break port;
            }
            assert!(Instant::now() < deadline, "the OAuth test server never started");
            std::thread::sleep(Duration::from_millis(20));
        };
        OAuthServer {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
            marks,
        }
    }

    /// How many times the server did `what` (`registrations`, `codes`, `refreshes`).
    fn count(&self, what: &str) -> usize {
        std::fs::read_to_string(self.marks.join(what)).map_or(0, |text| text.lines().count())
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The server as `notes` in the user's own config.
fn configure(sandbox: &Sandbox, server: &OAuthServer) {
    let config = json!({"mcp": {"notes": {"type": "remote", "url": server.url, "timeout": 30000}}});
    sandbox.write("config/toolgate.json", &config.to_string());
}

/// `toolgate mcp auth notes`, with the test as the person at the browser: reads the URL
/// it prints, opens it (the authorization server approves at once and redirects to
/// toolgate's loopback callback) and returns what the command printed.
fn log_in(sandbox: &Sandbox) -> String {
    let mut child = sandbox
        .command(&["mcp", "auth", "notes"])
        .env_remove("BROWSER")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = String::new();
    let url = loop {
        let Some(Ok(line)) = lines.next() else {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "no authorization URL printed: {printed}{}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        printed.push_str(&line);
        printed.push('\n');
        if let Some(at) = line.find("http://") {
            break line[at..].trim().to_string();
        }
    };
    assert!(url.contains("/authorize?"), "{url}");
    assert!(url.contains("code_challenge_method=S256"), "PKCE: {url}");
    let page = browse(&url);
    assert!(page.contains("logged in to MCP server notes"), "{page}");
    for line in lines {
        printed.push_str(&line.unwrap());
        printed.push('\n');
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "toolgate mcp auth: {printed}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    printed
}

/// GETs `url` as a browser would, following redirects; the final page's text.
fn browse(url: &str) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        // The process-wide TLS provider is the program's (here the test's) to set.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let response = client.get(url).send().await.unwrap();
        response.text().await.unwrap()
    })
}

/// The token file and the tokens in it.
fn tokens(sandbox: &Sandbox) -> (PathBuf, Vec<String>) {
    let path = sandbox.data_dir().join("mcp/oauth.json");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut found = Vec::new();
    for entry in file["servers"].as_object().unwrap().values() {
        for field in ["access_token", "refresh_token"] {
            if let Some(token) = entry["credentials"]["token_response"][field].as_str() {
                found.push(token.to_string());
            }
        }
    }
    (path, found)
}

/// Every file under `dir` but `except`, as bytes: where a token must never be.
fn every_file_but(dir: &Path, except: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(every_file_but(&path, except));
        } else if path != except
            && let Ok(bytes) = std::fs::read(&path)
        {
            found.push((path, bytes));
        }
    }
    found
}

fn assert_nowhere(sandbox: &Sandbox, token: &str, outputs: &[&str]) {
    for output in outputs {
        assert!(!output.contains(token), "a token reached the output: {output}");
    }
    let (file, _) = tokens(sandbox);
    for (path, bytes) in every_file_but(&sandbox.data_dir(), &file) {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(token), "a token was written to {}", path.display());
    }
}

#[test]
fn oauth_login_then_calls_with_the_token_refreshed_silently_and_never_shown() {
    let sandbox = Sandbox::new();
    let server = OAuthServer::start(&sandbox, 3, true);
    configure(&sandbox, &server);

    // Without a token the server answers 401: the call says how to log in.
    let (code, out, err) = sandbox.run(&["call", "notes_whoami", "{}"]);
    assert_ne!(code, 0, "{out}");
    assert!(
        err.contains("the server requires authorization (OAuth): run `toolgate mcp auth notes` to log in"),
        "{err}"
    );

    let printed = log_in(&sandbox);
    assert!(printed.contains("logged in to `notes`"), "{printed}");
    assert!(printed.contains("registered as a client"), "{printed}");
    assert_eq!((server.count("registrations"), server.count("codes")), (1, 1));

    // The tokens: in a file of the user's own (0600), under the data directory.
    let (file, first) = tokens(&sandbox);
    assert_eq!(first.len(), 2, "an access and a refresh token: {first:?}");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);

    // A call with the token; a tool that hands the token back has it redacted.
    let (code, out, err) = sandbox.run(&["call", "notes_whoami", "{}"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("client ") && out.contains("scopes notes"), "{out}");
    let (code, leaked, err) = sandbox.run(&["call", "notes_leak", "{}", "--json"]);
    assert_eq!(code, 0, "{leaked}{err}");
    assert!(leaked.contains("[REDACTED:mcp-oauth-token]"), "{leaked}");
    for token in &first {
        assert_nowhere(&sandbox, token, &[&leaked, &err, &out]);
    }
    assert_eq!(server.count("refreshes"), 0);

    // Once the access token has expired, the next call refreshes it (in that process:
    // the new token too is redacted) and saves the new one.
    std::thread::sleep(Duration::from_millis(3500));
    let (code, leaked, err) = sandbox.run(&["call", "notes_leak", "{}", "--json"]);
    assert_eq!(code, 0, "{leaked}{err}");
    assert_eq!(server.count("refreshes"), 1, "no refresh: {err}");
    let (_, second) = tokens(&sandbox);
    assert_ne!(first[0], second[0], "the access token was not replaced");
    assert!(leaked.contains("[REDACTED:mcp-oauth-token]"), "{leaked}");
    for token in first.iter().chain(&second) {
        assert_nowhere(&sandbox, token, &[&leaked, &err]);
    }
    assert_eq!(server.count("codes"), 1, "a refresh is not a new login");

    // Logged out: the tokens are forgotten, and the call says to log in again.
    let (code, out, err) = sandbox.run(&["mcp", "auth", "notes", "--logout"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(tokens(&sandbox).1.is_empty());
    let (code, _, err) = sandbox.run(&["call", "notes_whoami", "{}"]);
    assert_ne!(code, 0);
    assert!(err.contains("run `toolgate mcp auth notes`"), "{err}");
}

#[test]
fn a_token_the_server_refuses_is_refreshed_once_and_the_call_retried() {
    // The token responses give no expiry: toolgate learns of it from the server's 401.
    let sandbox = Sandbox::new();
    let server = OAuthServer::start(&sandbox, 2, false);
    configure(&sandbox, &server);
    log_in(&sandbox);
    std::thread::sleep(Duration::from_millis(2500));
    let (code, out, err) = sandbox.run(&["call", "notes_whoami", "{}"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("scopes notes"), "{out}");
    assert_eq!(server.count("refreshes"), 1);
}

#[test]
fn a_server_with_oauth_off_and_a_local_server_cannot_be_logged_in_to() {
    let sandbox = Sandbox::new();
    let server = OAuthServer::start(&sandbox, 60, true);
    let config = json!({"mcp": {
        "notes": {"type": "remote", "url": server.url, "oauth": false},
        "calc": {"type": "local", "command": ["/nonexistent/calc"]},
    }});
    sandbox.write("config/toolgate.json", &config.to_string());
    let (code, _, err) = sandbox.run(&["mcp", "auth", "notes"]);
    assert_ne!(code, 0);
    assert!(err.contains("has OAuth turned off"), "{err}");
    let (code, _, err) = sandbox.run(&["mcp", "auth", "calc"]);
    assert_ne!(code, 0);
    assert!(err.contains("is a local (stdio) server"), "{err}");
    let (code, _, err) = sandbox.run(&["mcp", "auth", "nothere"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no MCP server named `nothere`"), "{err}");
    // The 401 of a server with OAuth off does not send anyone to `mcp auth`.
    let (code, _, err) = sandbox.run(&["call", "notes_whoami", "{}"]);
    assert_ne!(code, 0);
    assert!(err.contains("its OAuth is off"), "{err}");
    assert_eq!(server.count("registrations"), 0);
}
