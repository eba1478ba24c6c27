//! `webfetch` (spec §6.1): bounded, honest, and no door into the local network.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate_core::{Annotations, Content, Context, PermissionRequest, Permissions, Tool, ToolFailure};

use crate::guard::{GuardedResolver, Refused, check};
use crate::html;

/// Most bytes of a body kept (5 MiB); the rest is never downloaded.
pub(crate) const MAX_RESPONSE_BYTES: usize = 5 * 1024 * 1024;
/// Redirects followed at most.
pub(crate) const MAX_REDIRECTS: usize = 10;
/// The browser-like user agent.
pub(crate) const USER_AGENT: &str =
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/143.0.0.0 Safari/537.36";

/// What `webfetch` returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Format {
    /// HTML converted to Markdown (the default).
    #[default]
    Markdown,
    /// The text of the page.
    Text,
    /// The page as it came.
    Html,
}

/// The input of `webfetch`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub(crate) struct FetchInput {
    /// The http:// or https:// URL.
    pub(crate) url: String,
    /// `markdown` (default), `text` or `html`.
    #[serde(default)]
    pub(crate) format: Format,
    /// Seconds before giving up (default 30, at most 120).
    #[schemars(range(min = 1, max = 120))]
    pub(crate) timeout: Option<u64>,
}

/// The output of `webfetch`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FetchOutput {
    /// The URL fetched.
    pub(crate) url: String,
    /// The response's content type.
    pub(crate) content_type: String,
    /// The format returned.
    pub(crate) format: Format,
    /// The content (the model reads it; kept out of the structured value so a 5 MB page
    /// is not held twice).
    #[serde(skip)]
    pub(crate) output: String,
}

/// How `webfetch` is set up.
///
/// Build it from [`FetchConfig::default`] and the setters; more settings may come.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct FetchConfig {
    /// Allow loopback, private, link-local and other internal addresses (default: refuse).
    pub(crate) allow_private_network: bool,
    /// Host name → addresses, used instead of DNS (tests).
    pub(crate) resolver_overrides: std::collections::HashMap<String, Vec<IpAddr>>,
    /// Hosts (names or addresses as written in URLs) exempt from the guard, such as an
    /// internal documentation server (config `webfetch.allowed_hosts`).
    pub(crate) allowed_hosts: Vec<String>,
}

impl FetchConfig {
    /// Allows loopback, private, link-local and other internal addresses (default: refused).
    pub fn allow_private_network(mut self, allow: bool) -> Self {
        self.allow_private_network = allow;
        self
    }

    /// Resolves `host` to `addresses` instead of asking DNS (tests, pinned hosts); the
    /// guard still checks every address.
    pub fn resolve(mut self, host: impl Into<String>, addresses: Vec<IpAddr>) -> Self {
        self.resolver_overrides.insert(host.into(), addresses);
        self
    }

    /// Hosts (names or addresses as written in URLs) exempt from the guard, such as an
    /// internal documentation server.
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }
}

/// The tool's description.
pub(crate) const DESCRIPTION: &str = "Fetch a web page (http:// or https://) and return it as Markdown (default), plain text \
or HTML. At most 5 MB of the body is read; larger pages are cut with a note. `timeout` is in seconds (default 30, at \
most 120). Addresses on the local or private network are refused.";

fn accept(format: Format) -> &'static str {
    match format {
        Format::Markdown => "text/markdown;q=1.0, text/x-markdown;q=0.9, text/plain;q=0.8, text/html;q=0.7, */*;q=0.1",
        Format::Text => "text/plain;q=1.0, text/markdown;q=0.9, text/html;q=0.8, */*;q=0.1",
        Format::Html => {
            "text/html;q=1.0, application/xhtml+xml;q=0.9, text/plain;q=0.8, text/markdown;q=0.7, */*;q=0.1"
        }
    }
}

fn textual(mime: &str) -> bool {
    mime.is_empty()
        || mime.starts_with("text/")
        || mime == "application/json"
        || mime.ends_with("+json")
        || mime == "application/xml"
        || mime.ends_with("+xml")
        || mime == "application/javascript"
        || mime == "application/x-javascript"
}

/// TLS for one client: the ring provider and the platform's certificate verifier, set on
/// the client itself, so no process-wide default is needed or touched.
pub(crate) fn tls() -> Result<rustls::ClientConfig, String> {
    use rustls_platform_verifier::BuilderVerifierExt;
    Ok(
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|error| error.to_string())?
            .with_platform_verifier()
            .map_err(|error| error.to_string())?
            .with_no_client_auth(),
    )
}

/// A client whose every connection goes through the guard and whose redirects are
/// re-checked hop by hop.
fn client(config: &FetchConfig) -> Result<reqwest::Client, String> {
    let allow = config.allow_private_network;
    let allowed_hosts = Arc::new(config.allowed_hosts.clone());
    let resolver = GuardedResolver {
        allow_private: allow,
        overrides: Arc::new(config.resolver_overrides.clone()),
        allowed_hosts: Arc::clone(&allowed_hosts),
    };
    let policy = reqwest::redirect::Policy::custom(move |attempt| {
        // `previous` holds the first URL too: more than MAX_REDIRECTS of them means one hop too many.
        if attempt.previous().len() > MAX_REDIRECTS {
            return attempt.error(format!("stopped after {MAX_REDIRECTS} redirects"));
        }
        let url = attempt.url().clone();
        if !matches!(url.scheme(), "http" | "https") {
            return attempt.error(format!("redirect to a non-http URL refused: {url}"));
        }
        if let Some(ip) = literal_ip(&url)
            && !allowed_hosts.iter().any(|h| url.host_str() == Some(h.as_str()))
            && let Err(refused) = check(&ip.to_string(), ip, allow)
        {
            return attempt.error(refused);
        }
        attempt.follow()
    });
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls()?)
        .dns_resolver(Arc::new(resolver))
        .redirect(policy)
        .no_proxy()
        .build()
        .map_err(|error| error.to_string())
}

fn literal_ip(url: &reqwest::Url) -> Option<IpAddr> {
    match url.host()? {
        url::Host::Ipv4(v4) => Some(IpAddr::V4(v4)),
        url::Host::Ipv6(v6) => Some(IpAddr::V6(v6)),
        url::Host::Domain(_) => None,
    }
}

/// The most helpful line of an error chain: our refusal when there is one, else the
/// innermost cause.
fn reason(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        return "Request timed out".to_string();
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    let mut last = error.to_string();
    while let Some(current) = source {
        if let Some(refused) = current.downcast_ref::<Refused>() {
            return refused.to_string();
        }
        last = current.to_string();
        source = current.source();
    }
    last
}

/// What one `webfetch` instance keeps between calls.
struct Fetcher {
    config: FetchConfig,
    permissions: Arc<dyn Permissions>,
    /// One HTTP client (connection pool, resolver, TLS) per tool instance, built on the
    /// first call.
    client: std::sync::OnceLock<Result<reqwest::Client, String>>,
}

/// Builds `webfetch`, asking `permissions` (`webfetch` on the URL) before any request.
pub fn webfetch_tool(config: FetchConfig, permissions: Arc<dyn Permissions>) -> Tool {
    let shared = Arc::new(Fetcher {
        config,
        permissions,
        client: std::sync::OnceLock::new(),
    });
    Tool::builder(DESCRIPTION, move |input: FetchInput, ctx: Context| {
        let shared = Arc::clone(&shared);
        async move { fetch(&shared, input, &ctx).await }
    })
    .project(|output: &FetchOutput| vec![Content::text(output.output.clone())])
    .title("Fetch a URL")
    .annotations(Annotations::read_only().open_world(true))
    .build()
}

async fn fetch(fetcher: &Fetcher, input: FetchInput, ctx: &Context) -> Result<FetchOutput, ToolFailure> {
    let config = &fetcher.config;
    let permissions = fetcher.permissions.as_ref();
    let fail = |message: String| ToolFailure::new(format!("Unable to fetch {}: {message}", input.url));
    let url = match reqwest::Url::parse(&input.url) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => url,
        _ => return Err(ToolFailure::new("URL must use http:// or https://")),
    };
    let timeout = input.timeout.unwrap_or(30);
    if timeout == 0 || timeout > 120 {
        return Err(ToolFailure::new(
            "Invalid tool input: timeout must be between 1 and 120 seconds.",
        ));
    }
    let mut request = PermissionRequest::new("webfetch")
        .resources([input.url.clone()])
        .save(["*"]);
    request.metadata.insert("url".into(), input.url.clone().into());
    request
        .metadata
        .insert("format".into(), serde_json::to_value(input.format).unwrap_or_default());
    permissions.assert(ctx, request).await?;
    let exempt = config.allowed_hosts.iter().any(|h| url.host_str() == Some(h.as_str()));
    if let (Some(ip), false) = (literal_ip(&url), exempt) {
        check(&ip.to_string(), ip, config.allow_private_network).map_err(|refused| fail(refused.to_string()))?;
    }
    let client = fetcher
        .client
        .get_or_init(|| client(config))
        .as_ref()
        .map_err(|e| fail(e.clone()))?;
    let send = |agent: &'static str| {
        client
            .get(url.clone())
            .timeout(Duration::from_secs(timeout))
            .header("User-Agent", agent)
            .header("Accept", accept(input.format))
            .header("Accept-Language", "en-US,en;q=0.9")
            .send()
    };
    let mut response = send(USER_AGENT).await.map_err(|error| fail(reason(&error)))?;
    let challenged = response.status() == reqwest::StatusCode::FORBIDDEN
        && response
            .headers()
            .get("cf-mitigated")
            .is_some_and(|v| v.as_bytes() == b"challenge");
    if challenged {
        // Some CDNs challenge browser-like agents but let an honest one through.
        response = send("toolgate").await.map_err(|error| fail(reason(&error)))?;
    }
    let status = response.status();
    if !status.is_success() {
        return Err(fail(format!("HTTP {status}")));
    }
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let mime = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    if mime.starts_with("image/") && mime != "image/svg+xml" {
        return Err(fail(format!("Unsupported fetched image content type: {mime}")));
    }
    if !textual(&mime) && mime != "image/svg+xml" {
        return Err(fail(format!("Unsupported fetched file content type: {mime}")));
    }
    // Read at most the cap; the rest is never downloaded (the connection is dropped).
    // Room for the cap and the note up front (pages are only committed as they are
    // written): the body becomes the output without a copy or a doubling reallocation.
    let mut body: Vec<u8> = Vec::with_capacity(MAX_RESPONSE_BYTES + 256);
    let mut truncated = false;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = MAX_RESPONSE_BYTES - body.len();
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    truncated = true;
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(error) => return Err(fail(reason(&error))),
        }
    }
    drop(response);
    let text = String::from_utf8(body).unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned());
    let mut output = if mime.contains("html") {
        match input.format {
            Format::Markdown => html::to_markdown(&text),
            Format::Text => html::to_text(&text),
            Format::Html => text,
        }
    } else {
        text
    };
    if truncated {
        output.push_str(&format!(
            "\n\n[Preview: response truncated to {MAX_RESPONSE_BYTES} bytes (exceeds 5 MB limit) — preview shown per tool description]"
        ));
    }
    Ok(FetchOutput {
        url: input.url.clone(),
        content_type,
        format: input.format,
        output,
    })
}
