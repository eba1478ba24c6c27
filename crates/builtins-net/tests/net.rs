//! webfetch and websearch against real HTTP servers on 127.0.0.1 (no test reaches the
//! internet), and the private-network guard attacked with every spelling.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Response, StatusCode};
use axum::routing::{get, post};
use serde_json::{Value, json};
use toolgate_builtins_net::{FetchConfig, Provider, SearchConfig, webfetch_tool, websearch_tool};
use toolgate_core::{AllowAll, Context, ModelResult, Tool};

const PAGE: &str = r#"<!doctype html><html><head><title>T</title><style>body{color:red}</style><script>alert(1)</script></head>
<body><h1>Main title</h1><p>Intro with <a href="https://example.com/x">a link</a> and <strong>bold</strong>.</p>
<ul><li>first</li><li>second</li></ul><pre><code>let x = 1;</code></pre>
<table><tr><th>A</th><th>B</th></tr><tr><td>1</td><td>2</td></tr></table></body></html>"#;

fn response(status: u16, content_type: &str, body: impl Into<Body>) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(body.into())
        .unwrap()
}

async fn server() -> SocketAddr {
    let app = Router::new()
        .route("/page.html", get(|| async { response(200, "text/html; charset=utf-8", PAGE) }))
        .route("/data.json", get(|| async { response(200, "application/json", r#"{"ok":true}"#) }))
        .route("/image.png", get(|| async { response(200, "image/png", vec![0x89u8, b'P', b'N', b'G']) }))
        .route("/archive.zip", get(|| async { response(200, "application/zip", "PK") }))
        .route("/big", get(|| async { response(200, "text/plain", "x".repeat(6 * 1024 * 1024)) }))
        .route(
            "/bomb",
            get(|| async {
                use std::io::Write;
                let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
                for _ in 0..100 {
                    encoder.write_all(&vec![b'a'; 1024 * 1024]).unwrap();
                }
                let compressed = encoder.finish().unwrap();
                Response::builder().header("content-type", "text/plain").header("content-encoding", "gzip").body(Body::from(compressed)).unwrap()
            }),
        )
        .route(
            "/slow",
            get(|| async {
                let stream = futures_stream();
                Response::builder().header("content-type", "text/plain").body(Body::from_stream(stream)).unwrap()
            }),
        )
        .route(
            "/redirect/{n}",
            get(|axum::extract::Path(n): axum::extract::Path<u32>| async move {
                if n == 0 {
                    response(200, "text/plain", "arrived")
                } else {
                    Response::builder().status(302).header("location", format!("/redirect/{}", n - 1)).body(Body::empty()).unwrap()
                }
            }),
        )
        .route(
            "/challenge",
            get(|headers: HeaderMap| async move {
                let agent = headers.get("user-agent").and_then(|v| v.to_str().ok()).unwrap_or("");
                if agent.starts_with("Mozilla") {
                    Response::builder().status(StatusCode::FORBIDDEN).header("cf-mitigated", "challenge").body(Body::empty()).unwrap()
                } else {
                    response(200, "text/plain", "passed")
                }
            }),
        )
        .route("/missing", get(|| async { response(404, "text/plain", "no") }))
        .route(
            "/to-internal",
            get(|headers: HeaderMap| async move {
                let port = headers.get("host").and_then(|h| h.to_str().ok()).and_then(|h| h.rsplit(':').next()).unwrap_or("80").to_string();
                Response::builder().status(302).header("location", format!("http://internal.test:{port}/page.html")).body(Body::empty()).unwrap()
            }),
        )
        .route("/to-literal", get(|| async { Response::builder().status(302).header("location", "http://127.0.0.1:9/").body(Body::empty()).unwrap() }))
        .route("/exa", post(|body: String| async move { search_answer(body) }))
        .route("/sse", post(|| async { response(200, "text/event-stream", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"from sse\"}]}}\n\n") }))
        .route("/empty", post(|| async { response(200, "application/json", r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#) }))
        .route("/huge", post(|| async { response(200, "application/json", "x".repeat(300 * 1024)) }))
        .route("/slow-search", post(|| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            response(200, "application/json", "{}")
        }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    address
}

fn search_answer(body: String) -> Response<Body> {
    let request: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(request["method"], "tools/call");
    let arguments = &request["params"]["arguments"];
    let query = arguments["query"]
        .as_str()
        .or(arguments["objective"].as_str())
        .unwrap_or("?");
    let text = format!(
        "results for {query} via {}",
        request["params"]["name"].as_str().unwrap_or("?")
    );
    response(
        200,
        "application/json",
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}}).to_string(),
    )
}

fn futures_stream() -> impl futures_util::Stream<Item = Result<Vec<u8>, std::io::Error>> {
    futures_util::stream::unfold(0u32, |n| async move {
        if n > 100 {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        Some((Ok(b"drip\n".to_vec()), n + 1))
    })
}

fn local_fetch() -> Tool {
    webfetch_tool(FetchConfig::default().allow_private_network(true), Arc::new(AllowAll))
}

async fn fetch(tool: &Tool, input: Value) -> Result<String, String> {
    match tool.settle(input, Context::new("ses_1", "build")).await.unwrap() {
        Ok(output) => match ModelResult::from_output(&output) {
            ModelResult::Text(text) => Ok(text),
            other => Ok(format!("{other:?}")),
        },
        Err(failure) => Err(failure.message().to_string()),
    }
}

#[tokio::test]
async fn formats_of_a_real_page() {
    let address = server().await;
    let tool = local_fetch();
    let url = format!("http://{address}/page.html");
    let markdown = fetch(&tool, json!({"url": url})).await.unwrap();
    assert!(markdown.contains("# Main title"), "{markdown}");
    assert!(markdown.contains("[a link](https://example.com/x)"), "{markdown}");
    assert!(markdown.contains("**bold**"), "{markdown}");
    assert!(markdown.contains("first") && markdown.contains("second"), "{markdown}");
    assert!(markdown.contains("let x = 1;"), "{markdown}");
    assert!(
        !markdown.contains("alert(1)") && !markdown.contains("color:red"),
        "{markdown}"
    );
    let text = fetch(&tool, json!({"url": url, "format": "text"})).await.unwrap();
    assert!(
        text.starts_with("Main title\nIntro with a link and bold.\nfirst\nsecond"),
        "{text}"
    );
    assert!(!text.contains('<') && !text.contains("alert"), "{text}");
    let html = fetch(&tool, json!({"url": url, "format": "html"})).await.unwrap();
    assert_eq!(html, PAGE);
}

#[tokio::test]
async fn content_type_rules_and_status() {
    let address = server().await;
    let tool = local_fetch();
    assert_eq!(
        fetch(&tool, json!({"url": format!("http://{address}/data.json")}))
            .await
            .unwrap(),
        r#"{"ok":true}"#
    );
    let image = fetch(&tool, json!({"url": format!("http://{address}/image.png")}))
        .await
        .unwrap_err();
    assert!(
        image.ends_with("Unsupported fetched image content type: image/png"),
        "{image}"
    );
    let zip = fetch(&tool, json!({"url": format!("http://{address}/archive.zip")}))
        .await
        .unwrap_err();
    assert!(
        zip.ends_with("Unsupported fetched file content type: application/zip"),
        "{zip}"
    );
    let missing = fetch(&tool, json!({"url": format!("http://{address}/missing")}))
        .await
        .unwrap_err();
    assert_eq!(
        missing,
        format!("Unable to fetch http://{address}/missing: HTTP 404 Not Found")
    );
    assert_eq!(
        fetch(&tool, json!({"url": "ftp://example.com/x"})).await.unwrap_err(),
        "URL must use http:// or https://"
    );
    assert_eq!(
        fetch(&tool, json!({"url": "file:///etc/passwd"})).await.unwrap_err(),
        "URL must use http:// or https://"
    );
}

#[tokio::test]
async fn bodies_are_capped_even_compressed() {
    let address = server().await;
    let tool = local_fetch();
    let big = fetch(&tool, json!({"url": format!("http://{address}/big")}))
        .await
        .unwrap();
    assert!(big.ends_with(
        "[Preview: response truncated to 5242880 bytes (exceeds 5 MB limit) — preview shown per tool description]"
    ));
    assert!(big.len() < 5 * 1024 * 1024 + 200);
    let bomb = fetch(&tool, json!({"url": format!("http://{address}/bomb")}))
        .await
        .unwrap();
    assert!(bomb.len() < 5 * 1024 * 1024 + 200, "the gzip bomb stops at the cap");
}

#[tokio::test]
async fn timeouts_cover_the_body() {
    let address = server().await;
    let start = std::time::Instant::now();
    let error = fetch(
        &local_fetch(),
        json!({"url": format!("http://{address}/slow"), "timeout": 1}),
    )
    .await
    .unwrap_err();
    assert!(error.ends_with("Request timed out"), "{error}");
    assert!(start.elapsed() < Duration::from_secs(4));
}

#[tokio::test]
async fn redirects_are_followed_ten_times_at_most() {
    let address = server().await;
    let tool = local_fetch();
    assert_eq!(
        fetch(&tool, json!({"url": format!("http://{address}/redirect/10")}))
            .await
            .unwrap(),
        "arrived"
    );
    let error = fetch(&tool, json!({"url": format!("http://{address}/redirect/11")}))
        .await
        .unwrap_err();
    assert!(error.contains("stopped after 10 redirects"), "{error}");
}

#[tokio::test]
async fn a_challenge_is_retried_once_with_an_honest_agent() {
    let address = server().await;
    assert_eq!(
        fetch(&local_fetch(), json!({"url": format!("http://{address}/challenge")}))
            .await
            .unwrap(),
        "passed"
    );
}

fn guarded(overrides: &[(&str, &str)], allowed: &[&str]) -> Tool {
    let config = overrides
        .iter()
        .fold(FetchConfig::default(), |config, (host, ip)| {
            config.resolve(*host, vec![ip.parse().unwrap()])
        })
        .allowed_hosts(allowed.iter().copied());
    webfetch_tool(config, Arc::new(AllowAll))
}

#[tokio::test]
async fn the_guard_refuses_every_spelling_of_an_internal_address() {
    let tool = guarded(
        &[
            ("metadata.google.internal", "169.254.169.254"),
            ("rebind.test", "10.0.0.7"),
            ("ula.test", "fd12::1"),
        ],
        &[],
    );
    let cases = [
        ("http://127.0.0.1/", "127.0.0.1", "loopback"),
        ("http://localhost/", "127.0.0.1", "loopback"),
        ("http://[::1]/", "::1", "loopback"),
        ("http://0.0.0.0/", "0.0.0.0", "unspecified"),
        (
            "http://169.254.169.254/latest/meta-data/",
            "169.254.169.254",
            "link-local",
        ),
        ("http://metadata.google.internal/", "169.254.169.254", "link-local"),
        ("http://2130706433/", "127.0.0.1", "loopback"),
        ("http://0x7f.1/", "127.0.0.1", "loopback"),
        ("http://0177.0.0.1/", "127.0.0.1", "loopback"),
        ("http://127.1/", "127.0.0.1", "loopback"),
        ("http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1", "loopback"),
        ("http://100.64.0.1/", "100.64.0.1", "carrier-grade NAT"),
        ("http://[fc00::1]/", "fc00::1", "unique-local"),
        ("http://ula.test/", "fd12::1", "unique-local"),
        ("http://192.168.1.1/", "192.168.1.1", "private"),
        ("http://rebind.test/", "10.0.0.7", "private"),
        ("http://224.0.0.1/", "224.0.0.1", "multicast"),
        ("http://255.255.255.255/", "255.255.255.255", "broadcast"),
    ];
    for (url, ip, reason) in cases {
        let error = fetch(&tool, json!({"url": url})).await.unwrap_err();
        assert!(
            error.contains(&format!("resolves to {ip}, a {reason}")),
            "{url}: {error}"
        );
    }
}

#[tokio::test]
async fn redirects_into_the_private_network_are_refused_hop_by_hop() {
    let address = server().await;
    let port = address.port();
    // public.test is trusted (it stands for a public site); where it redirects is not.
    let tool = guarded(
        &[("public.test", "127.0.0.1"), ("internal.test", "127.0.0.1")],
        &["public.test"],
    );
    let ok = fetch(&tool, json!({"url": format!("http://public.test:{port}/data.json")}))
        .await
        .unwrap();
    assert_eq!(ok, r#"{"ok":true}"#);
    let error = fetch(&tool, json!({"url": format!("http://public.test:{port}/to-internal")}))
        .await
        .unwrap_err();
    assert!(
        error.contains("refused to connect to internal.test: it resolves to 127.0.0.1, a loopback address"),
        "{error}"
    );
    let error = fetch(&tool, json!({"url": format!("http://public.test:{port}/to-literal")}))
        .await
        .unwrap_err();
    assert!(error.contains("127.0.0.1, a loopback address"), "{error}");
}

fn search_tool(url_path: &str, address: SocketAddr) -> Tool {
    let config = SearchConfig::default()
        .provider(Some(Provider::Exa))
        .exa_url(format!("http://{address}{url_path}"))
        .parallel_url(format!("http://{address}{url_path}"));
    websearch_tool(config, Arc::new(AllowAll))
}

#[tokio::test]
async fn websearch_answers() {
    let address = server().await;
    assert_eq!(
        fetch(&search_tool("/exa", address), json!({"query": "rust"}))
            .await
            .unwrap(),
        "results for rust via web_search_exa"
    );
    assert_eq!(
        fetch(&search_tool("/sse", address), json!({"query": "rust"}))
            .await
            .unwrap(),
        "from sse"
    );
    assert_eq!(
        fetch(&search_tool("/empty", address), json!({"query": "rust"}))
            .await
            .unwrap(),
        "No search results found. Please try a different query."
    );
    let huge = fetch(&search_tool("/huge", address), json!({"query": "rust"}))
        .await
        .unwrap_err();
    assert_eq!(
        huge,
        "Unable to search the web for rust: web_search_exa response exceeded 262144 bytes"
    );
    let parallel = SearchConfig::default()
        .provider(Some(Provider::Parallel))
        .parallel_url(format!("http://{address}/exa"));
    let text = fetch(&websearch_tool(parallel, Arc::new(AllowAll)), json!({"query": "zig"}))
        .await
        .unwrap();
    assert_eq!(
        text, "results for zig via web_search",
        "Parallel gets `objective` and its own tool name"
    );
    let impatient = SearchConfig::default()
        .provider(Some(Provider::Exa))
        .exa_url(format!("http://{address}/slow-search"))
        .timeout(Duration::from_millis(500));
    let start = std::time::Instant::now();
    let slow = fetch(&websearch_tool(impatient, Arc::new(AllowAll)), json!({"query": "rust"}))
        .await
        .unwrap_err();
    assert_eq!(
        slow,
        "Unable to search the web for rust: web_search_exa request timed out"
    );
    assert!(start.elapsed() < Duration::from_secs(3));
}

#[test]
fn providers_are_stable_per_session() {
    let config = SearchConfig::default();
    let first = config.provider_for("ses_abc");
    assert!((0..10).all(|_| config.provider_for("ses_abc") == first));
    let both: std::collections::HashSet<_> = (0..50)
        .map(|n| format!("{:?}", config.provider_for(&format!("ses_{n}"))))
        .collect();
    assert_eq!(both.len(), 2);
}

#[test]
fn search_keys_never_show_in_debug() {
    let config = SearchConfig::default()
        .exa_key(Some("exa-secret-123".into()))
        .parallel_key(Some("par-secret-456".into()));
    let shown = format!("{config:?}");
    assert!(!shown.contains("secret"), "{shown}");
    assert!(shown.contains("exa_key: Some(\"<redacted>\")"), "{shown}");
    let none = format!("{:?}", SearchConfig::default());
    assert!(none.contains("exa_key: None"), "{none}");
}
