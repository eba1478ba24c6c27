//! `websearch` (spec §6.2): Exa or Parallel over their JSON-RPC `tools/call` endpoints.

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolgate_core::{Annotations, Content, Context, PermissionRequest, Permissions, Tool, ToolFailure};

/// Largest answer read.
pub(crate) const MAX_RESPONSE_BYTES: usize = 256 * 1024;
/// How long a search may take.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(25);
/// The answer when a provider has nothing.
pub(crate) const NO_RESULTS: &str = "No search results found. Please try a different query.";

/// A search provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Provider {
    /// Exa (`web_search_exa`).
    Exa,
    /// Parallel (`web_search`).
    Parallel,
}

/// How `websearch` is set up. The program fills it (the binary reads the keys from
/// `EXA_API_KEY` / `PARALLEL_API_KEY`); this crate reads no environment. Build it from
/// [`SearchConfig::default`] and the setters; more settings may come.
#[derive(Clone)]
#[non_exhaustive]
pub struct SearchConfig {
    /// A fixed provider; else one is chosen per session.
    pub(crate) provider: Option<Provider>,
    /// Exa's endpoint.
    pub(crate) exa_url: String,
    /// Parallel's endpoint.
    pub(crate) parallel_url: String,
    /// Exa's API key (a secret: `Debug` does not show it).
    pub(crate) exa_key: Option<String>,
    /// Parallel's API key (a secret: `Debug` does not show it).
    pub(crate) parallel_key: Option<String>,
    /// How long a search may take (default 25 s).
    pub(crate) timeout: Duration,
}

impl std::fmt::Debug for SearchConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secret = |key: &Option<String>| key.as_ref().map(|_| "<redacted>");
        f.debug_struct("SearchConfig")
            .field("provider", &self.provider)
            .field("exa_url", &self.exa_url)
            .field("parallel_url", &self.parallel_url)
            .field("exa_key", &secret(&self.exa_key))
            .field("parallel_key", &secret(&self.parallel_key))
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            provider: None,
            exa_url: "https://mcp.exa.ai/mcp".into(),
            parallel_url: "https://search.parallel.ai/mcp".into(),
            exa_key: None,
            parallel_key: None,
            timeout: TIMEOUT,
        }
    }
}

impl SearchConfig {
    /// A fixed provider (`None`: one is chosen per session).
    pub fn provider(mut self, provider: Option<Provider>) -> Self {
        self.provider = provider;
        self
    }

    /// Exa's endpoint (default `https://mcp.exa.ai/mcp`).
    pub fn exa_url(mut self, url: impl Into<String>) -> Self {
        self.exa_url = url.into();
        self
    }

    /// Parallel's endpoint (default `https://search.parallel.ai/mcp`).
    pub fn parallel_url(mut self, url: impl Into<String>) -> Self {
        self.parallel_url = url.into();
        self
    }

    /// Exa's API key, if any (a secret: `Debug` does not show it).
    pub fn exa_key(mut self, key: Option<String>) -> Self {
        self.exa_key = key;
        self
    }

    /// Parallel's API key, if any (a secret: `Debug` does not show it).
    pub fn parallel_key(mut self, key: Option<String>) -> Self {
        self.parallel_key = key;
        self
    }

    /// How long a search may take (default 25 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The provider for `session`: the fixed one, else a stable choice per session.
    pub fn provider_for(&self, session: &str) -> Provider {
        if let Some(provider) = self.provider {
            return provider;
        }
        // FNV-1a: the same session always gets the same provider.
        let hash = session.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        if hash % 2 == 0 {
            Provider::Exa
        } else {
            Provider::Parallel
        }
    }
}

/// The input of `websearch`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SearchInput {
    /// What to search for.
    pub(crate) query: String,
    /// How many results (1–20, default 8).
    #[schemars(range(min = 1, max = 20))]
    pub(crate) num_results: Option<u32>,
    /// `fallback` (default) or `preferred`: whether to crawl pages live.
    pub(crate) livecrawl: Option<String>,
    /// `auto` (default), `fast` or `deep`.
    #[serde(rename = "type")]
    pub(crate) kind: Option<String>,
    /// Most characters of context per result (1–50000).
    #[schemars(range(min = 1, max = 50000))]
    pub(crate) context_max_characters: Option<u32>,
}

/// The output of `websearch`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct SearchOutput {
    /// The provider asked.
    pub(crate) provider: Provider,
    /// What it answered.
    pub(crate) text: String,
    /// Always false: answers over the cap are refused, not cut.
    pub(crate) truncated: bool,
}

/// The tool's description.
pub(crate) const DESCRIPTION: &str = "Search the web and return the results as text with titles, links and excerpts. \
`numResults` 1–20 (default 8); `type` auto, fast or deep; `livecrawl` fallback or preferred.";

/// The first `result.content[].text` of a JSON-RPC answer given as JSON or as SSE `data:` lines.
pub(crate) fn parse_answer(body: &str) -> Option<String> {
    let text_of = |value: &Value| {
        value
            .pointer("/result/content")?
            .as_array()?
            .iter()
            .find_map(|part| part.get("text").and_then(Value::as_str).map(str::to_string))
    };
    let trimmed = body.trim_start();
    if trimmed.starts_with('{') {
        return serde_json::from_str::<Value>(trimmed).ok().as_ref().and_then(text_of);
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find_map(|value| text_of(&value))
}

/// What one `websearch` instance keeps between calls.
struct Searcher {
    config: SearchConfig,
    permissions: Arc<dyn Permissions>,
    /// One HTTP client per tool instance, built on the first call.
    client: std::sync::OnceLock<Result<reqwest::Client, String>>,
}

/// Builds `websearch`, asking `permissions` (`websearch` on the query) first.
pub fn websearch_tool(config: SearchConfig, permissions: Arc<dyn Permissions>) -> Tool {
    let shared = Arc::new(Searcher {
        config,
        permissions,
        client: std::sync::OnceLock::new(),
    });
    Tool::builder(DESCRIPTION, move |input: SearchInput, ctx: Context| {
        let shared = Arc::clone(&shared);
        async move { search(&shared, input, &ctx).await }
    })
    .project(|output: &SearchOutput| vec![Content::text(output.text.clone())])
    .title("Search the web")
    .annotations(Annotations::read_only().open_world(true))
    .build()
}

async fn search(searcher: &Searcher, input: SearchInput, ctx: &Context) -> Result<SearchOutput, ToolFailure> {
    let config = &searcher.config;
    let permissions = searcher.permissions.as_ref();
    let provider = config.provider_for(&ctx.session_id);
    let fail = |reason: String| ToolFailure::new(format!("Unable to search the web for {}: {reason}", input.query));
    if let Some(n) = input.num_results
        && !(1..=20).contains(&n)
    {
        return Err(ToolFailure::new(
            "Invalid tool input: numResults must be between 1 and 20.",
        ));
    }
    let request = PermissionRequest::new("websearch")
        .resources([input.query.clone()])
        .save(["*"])
        .metadata("query", input.query.clone())
        .metadata("provider", serde_json::to_value(provider).unwrap_or_default());
    permissions.assert(ctx, request).await?;
    let client = searcher
        .client
        .get_or_init(|| {
            reqwest::Client::builder()
                .tls_backend_preconfigured(crate::fetch::tls()?)
                .timeout(config.timeout)
                .no_proxy()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| fail(e.clone()))?;
    let (url, tool, arguments) = match provider {
        Provider::Exa => {
            let mut url = config.exa_url.clone();
            if let Some(key) = &config.exa_key {
                url.push_str(if url.contains('?') { "&" } else { "?" });
                url.push_str(&format!("exaApiKey={key}"));
            }
            let mut arguments = json!({
                "query": input.query,
                "type": input.kind.clone().unwrap_or_else(|| "auto".into()),
                "numResults": input.num_results.unwrap_or(8),
                "livecrawl": input.livecrawl.clone().unwrap_or_else(|| "fallback".into()),
            });
            if let (Some(max), Some(map)) = (input.context_max_characters, arguments.as_object_mut()) {
                map.insert("contextMaxCharacters".into(), json!(max));
            }
            (url, "web_search_exa", arguments)
        }
        Provider::Parallel => (
            config.parallel_url.clone(),
            "web_search",
            json!({"objective": input.query, "search_queries": [input.query], "session_id": ctx.session_id}),
        ),
    };
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
    let mut builder = client
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .body(body.to_string());
    if provider == Provider::Parallel {
        builder = builder.header("User-Agent", concat!("toolgate/", env!("CARGO_PKG_VERSION")));
        if let Some(key) = &config.parallel_key {
            builder = builder.header("Authorization", format!("Bearer {key}"));
        }
    }
    let timed_out = || fail(format!("{tool} request timed out"));
    let mut response = builder.send().await.map_err(|e| {
        if e.is_timeout() {
            timed_out()
        } else {
            fail(e.to_string())
        }
    })?;
    if !response.status().is_success() {
        return Err(fail(format!("HTTP {}", response.status())));
    }
    let mut answer = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| {
        if e.is_timeout() {
            timed_out()
        } else {
            fail(e.to_string())
        }
    })? {
        if answer.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(fail(format!("{tool} response exceeded {MAX_RESPONSE_BYTES} bytes")));
        }
        answer.extend_from_slice(&chunk);
    }
    let text = parse_answer(&String::from_utf8_lossy(&answer)).filter(|t| !t.trim().is_empty());
    Ok(SearchOutput {
        provider,
        text: text.unwrap_or_else(|| NO_RESULTS.to_string()),
        truncated: false,
    })
}
