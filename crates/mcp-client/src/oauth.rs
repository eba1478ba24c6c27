//! OAuth for remote servers: the MCP authorization flow (MCP 2025-11-25, "Authorization")
//! and the tokens it leaves, kept per server.
//!
//! [`login`] does what `toolgate mcp auth NAME` does: it asks the server unauthenticated
//! and reads its `401` challenge, discovers the protected-resource metadata (RFC 9728) and
//! the authorization server's (RFC 8414, or OpenID Connect discovery), registers toolgate
//! as a public client when the server offers dynamic client registration (RFC 7591),
//! shows the authorization URL (an authorization code request with PKCE S256 and the
//! RFC 8707 `resource`), waits for the browser on a loopback redirect (`127.0.0.1`, a
//! random port) and exchanges the code. rmcp's `auth` module does the protocol; this
//! module keeps what it learns and carries it to the gateway's connections.
//!
//! Tokens live in one JSON file under toolgate's data directory (`<data>/mcp/oauth.json`,
//! mode 0600), keyed by the server's identity (its name and URL, as its pins are), read
//! and rewritten under an exclusive lock on `oauth.json.lock`. A connection to a server
//! with tokens sends the access token, refreshes it silently when it has expired (or
//! when the server answers `401` to it, once) and saves the new one. Every token value
//! the store loads or saves is handed to the store's watcher, which the binary points at
//! the output redactor: a token never reaches the model, even a server echoing it back.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::transport::auth::{
    AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationMetadata, AuthorizationMetadataSource,
    CredentialStore, OAuthClientConfig, OAuthHttpClient, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest, StoredCredentials,
};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::config::{Launch, ServerConfig};

/// How long `toolgate mcp auth` waits for the browser to come back.
pub const DEFAULT_LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// The client name toolgate registers under (dynamic client registration).
const CLIENT_NAME: &str = "toolgate";

/// Why a login, or the token file, failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// The server is a local one: there is nothing to log in to.
    #[error("MCP server `{0}` is a local (stdio) server: OAuth is for remote servers")]
    NotRemote(String),
    /// The config says `"oauth": false`.
    #[error("MCP server `{0}` has OAuth turned off (`\"oauth\": false`)")]
    Disabled(String),
    /// The server publishes no authorization metadata.
    #[error("MCP server `{0}` does not support OAuth: it publishes no authorization metadata")]
    Unsupported(String),
    /// No client: no dynamic registration offered, none configured.
    #[error(
        "the authorization server of `{0}` offers no dynamic client registration: register a client there and set `oauth.clientId` in the server's entry"
    )]
    NoClient(String),
    /// The authorization server refused the request, or the browser came back with an error.
    #[error("the authorization of `{server}` failed: {reason}")]
    Refused {
        /// The server's name.
        server: String,
        /// What was said.
        reason: String,
    },
    /// Nobody came back to the loopback redirect in time.
    #[error("no answer from the browser within {0} s; run the command again to retry")]
    Timeout(u64),
    /// The protocol layer failed (discovery, registration, token exchange).
    #[error("OAuth for `{server}`: {error}")]
    Protocol {
        /// The server's name.
        server: String,
        /// The underlying error (boxed: it is large, and rare).
        #[source]
        error: Box<AuthError>,
    },
    /// The token file could not be read or written.
    #[error("the OAuth token file {path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        error: std::io::Error,
    },
    /// The token file is not what toolgate writes.
    #[error(
        "the OAuth token file {path} is corrupt ({error}); `toolgate mcp auth NAME --logout` or removing it logs every server out"
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        error: serde_json::Error,
    },
}

/// What is kept for one server.
#[derive(Clone, Default, Serialize, Deserialize)]
struct Entry {
    name: String,
    identity: String,
    /// The authorization server's metadata as discovered at login (so a connection
    /// needs no discovery round trips).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<AuthorizationMetadata>,
    /// The redirect URI the client was registered with.
    #[serde(default)]
    redirect_uri: String,
    /// The client's secret, when the registration gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_secret: Option<String>,
    /// The client and its tokens (rmcp's record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    credentials: Option<StoredCredentials>,
}

#[derive(Default, Serialize, Deserialize)]
struct TokenFile {
    version: u32,
    servers: BTreeMap<String, Entry>,
}

/// Called with every secret value the store loads or saves (access and refresh tokens,
/// client secrets), so the output boundary can redact it.
pub type SecretWatcher = Arc<dyn Fn(&str) + Send + Sync>;

/// Where the servers' OAuth tokens are kept. Cheap to clone.
#[derive(Clone)]
pub struct TokenStore {
    path: Option<PathBuf>,
    /// The file's contents when there is no file.
    memory: Arc<Mutex<TokenFile>>,
    watcher: Option<SecretWatcher>,
}

impl std::fmt::Debug for TokenStore {
    // Never the tokens.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenStore").field("path", &self.path).finish()
    }
}

fn key(name: &str, identity: &str) -> String {
    format!("{name}\u{0}{identity}")
}

/// The secret values of an entry: the client secret, the access and refresh tokens.
fn secrets_of(entry: &Entry) -> Vec<String> {
    let mut values: Vec<String> = entry.client_secret.iter().cloned().collect();
    if let Some(credentials) = &entry.credentials {
        values.extend(token_values(credentials));
    }
    values
}

/// The access and refresh tokens of `credentials` (read through their JSON form: the
/// token type's accessors belong to the `oauth2` crate's trait).
fn token_values(credentials: &StoredCredentials) -> Vec<String> {
    let Ok(value) = serde_json::to_value(credentials) else {
        return Vec::new();
    };
    ["access_token", "refresh_token"]
        .iter()
        .filter_map(|field| value["token_response"][field].as_str().map(str::to_string))
        .collect()
}

impl TokenStore {
    /// Tokens kept in `path` (created with mode 0600 when first written).
    pub fn at(path: impl Into<PathBuf>) -> TokenStore {
        TokenStore {
            path: Some(path.into()),
            memory: Arc::default(),
            watcher: None,
        }
    }

    /// No file: tokens last as long as the store (an embedder's tests).
    pub fn memory() -> TokenStore {
        TokenStore {
            path: None,
            memory: Arc::default(),
            watcher: None,
        }
    }

    /// The same store handing every secret value it loads or saves to `watcher`.
    pub fn watch(mut self, watcher: SecretWatcher) -> TokenStore {
        self.watcher = Some(watcher);
        self
    }

    /// The file, when there is one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    fn io(&self, error: std::io::Error) -> OAuthError {
        OAuthError::Io {
            path: self.path.clone().unwrap_or_default(),
            error,
        }
    }

    fn show(&self, entry: &Entry) {
        if let Some(watcher) = &self.watcher {
            for value in secrets_of(entry) {
                watcher(&value);
            }
        }
    }

    /// Runs `change` on the file's contents under the exclusive lock, writing them back
    /// (atomically, 0600) when it returns true.
    fn with_file<T>(&self, change: impl FnOnce(&mut TokenFile) -> (T, bool)) -> Result<T, OAuthError> {
        let Some(path) = &self.path else {
            let mut file = self.memory.lock().unwrap_or_else(|p| p.into_inner());
            return Ok(change(&mut file).0);
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| self.io(e))?;
        }
        let lock = open_private(&path.with_extension("json.lock"), false).map_err(|e| self.io(e))?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| self.io(std::io::Error::from(e)))?;
        let mut file = match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice::<TokenFile>(&bytes).map_err(|error| OAuthError::Corrupt {
                path: path.clone(),
                error,
            })?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => TokenFile::default(),
            Err(error) => return Err(self.io(error)),
        };
        let (result, write) = change(&mut file);
        if write {
            file.version = 1;
            let text = serde_json::to_vec_pretty(&file).map_err(|e| self.io(std::io::Error::other(e)))?;
            let temp = path.with_extension(format!("json.{}.tmp", std::process::id()));
            let mut out = open_private(&temp, true).map_err(|e| self.io(e))?;
            out.write_all(&text)
                .and_then(|()| out.sync_all())
                .map_err(|e| self.io(e))?;
            std::fs::rename(&temp, path).map_err(|e| self.io(e))?;
        }
        drop(lock);
        Ok(result)
    }

    fn entry(&self, name: &str, identity: &str) -> Result<Option<Entry>, OAuthError> {
        if self.path.as_ref().is_some_and(|path| !path.exists()) {
            return Ok(None);
        }
        let entry = self.with_file(|file| (file.servers.get(&key(name, identity)).cloned(), false))?;
        if let Some(entry) = &entry {
            self.show(entry);
        }
        Ok(entry)
    }

    fn update(&self, name: &str, identity: &str, change: impl FnOnce(&mut Entry)) -> Result<(), OAuthError> {
        let entry = self.with_file(|file| {
            let entry = file.servers.entry(key(name, identity)).or_insert_with(|| Entry {
                name: name.to_string(),
                identity: identity.to_string(),
                ..Entry::default()
            });
            change(entry);
            (entry.clone(), true)
        })?;
        self.show(&entry);
        Ok(())
    }

    /// True when `server` has tokens (it was logged in to and not logged out of).
    pub fn has_tokens(&self, server: &ServerConfig) -> bool {
        self.entry(&server.name, &server.identity())
            .ok()
            .flatten()
            .is_some_and(|entry| entry.credentials.is_some_and(|c| c.token_response.is_some()))
    }

    /// Every secret value the store holds now (for a redactor built before any is used).
    pub fn secrets(&self) -> Vec<String> {
        if self.path.as_ref().is_some_and(|path| !path.exists()) {
            return Vec::new();
        }
        self.with_file(|file| (file.servers.values().flat_map(secrets_of).collect(), false))
            .unwrap_or_default()
    }

    /// Forgets the tokens and the client of every server named `name` (all its
    /// identities); how many were forgotten.
    pub fn forget(&self, name: &str) -> Result<usize, OAuthError> {
        if self.path.as_ref().is_some_and(|path| !path.exists()) {
            return Ok(0);
        }
        self.with_file(|file| {
            let before = file.servers.len();
            file.servers.retain(|_, entry| entry.name != name);
            let removed = before - file.servers.len();
            (removed, removed > 0)
        })
    }

    /// The credential store rmcp's authorization manager uses for one server.
    fn credentials(&self, server: &ServerConfig) -> ServerCredentials {
        ServerCredentials {
            store: self.clone(),
            name: server.name.clone(),
            identity: server.identity(),
        }
    }
}

/// Opens `path` for writing with mode 0600 (truncated when `truncate`).
fn open_private(path: &Path, truncate: bool) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(truncate)
        .mode(0o600)
        .open(path)
}

/// One server's record in the [`TokenStore`], as rmcp's credential store.
struct ServerCredentials {
    store: TokenStore,
    name: String,
    identity: String,
}

fn store_error(error: OAuthError) -> AuthError {
    AuthError::CredentialStoreError(error.to_string())
}

// rmcp's trait is declared through `async_trait`; implemented the same way.
#[async_trait::async_trait]
impl CredentialStore for ServerCredentials {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let entry = self.store.entry(&self.name, &self.identity).map_err(store_error)?;
        Ok(entry.and_then(|entry| entry.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.store
            .update(&self.name, &self.identity, |entry| {
                entry.credentials = Some(credentials)
            })
            .map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.store
            .update(&self.name, &self.identity, |entry| entry.credentials = None)
            .map_err(store_error)
    }
}

/// Every HTTP request of the OAuth flow: the gateway's own TLS configuration, its
/// same-origin redirect rule when redirects are to be followed, none otherwise.
struct OAuthHttp {
    follow: reqwest::Client,
    stop: reqwest::Client,
}

/// How long one OAuth request may take.
const OAUTH_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// At most this much of an OAuth response is read.
const MAX_OAUTH_BODY: usize = 1024 * 1024;

impl OAuthHttp {
    fn new() -> Result<OAuthHttp, String> {
        let build = |redirect| {
            reqwest::Client::builder()
                .tls_backend_preconfigured(crate::http::tls()?)
                .timeout(OAUTH_REQUEST_TIMEOUT)
                .redirect(redirect)
                .build()
                .map_err(|e| format!("HTTP client: {e}"))
        };
        Ok(OAuthHttp {
            follow: build(crate::http::redirects())?,
            stop: build(reqwest::redirect::Policy::none())?,
        })
    }
}

impl OAuthHttpClient for OAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let client = match request.redirect_policy {
                OAuthHttpRedirectPolicy::Stop => &self.stop,
                _ => &self.follow,
            };
            let request = reqwest::Request::try_from(request.request)?;
            let mut response = client.execute(request).await?;
            let mut builder = http::Response::builder()
                .status(response.status())
                .version(response.version());
            for (name, value) in response.headers() {
                builder = builder.header(name, value);
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await? {
                if body.len() + chunk.len() > MAX_OAUTH_BODY {
                    return Err(format!("an OAuth response over {MAX_OAUTH_BODY} bytes").into());
                }
                body.extend_from_slice(&chunk);
            }
            Ok(builder.body(body)?)
        })
    }
}

fn remote_url(server: &ServerConfig) -> Result<&str, OAuthError> {
    match &server.launch {
        Launch::Remote { url, .. } => Ok(url),
        Launch::Local { .. } => Err(OAuthError::NotRemote(server.name.clone())),
    }
}

/// A manager for `server` over toolgate's HTTP client, its credentials in `store`.
async fn manager(server: &ServerConfig, store: &TokenStore) -> Result<AuthorizationManager, OAuthError> {
    let url = remote_url(server)?;
    let protocol = |error| OAuthError::Protocol {
        server: server.name.clone(),
        error: Box::new(error),
    };
    let http = OAuthHttp::new().map_err(|reason| OAuthError::Refused {
        server: server.name.clone(),
        reason,
    })?;
    let mut manager = AuthorizationManager::new_with_oauth_http_client(url, Arc::new(http))
        .await
        .map_err(protocol)?;
    manager.set_credential_store(store.credentials(server));
    Ok(manager)
}

/// The authorization manager of a connection to `server`: `None` when it has no tokens
/// (its requests go out without a token; a `401` then says to log in).
pub(crate) async fn connection_manager(
    server: &ServerConfig,
    store: &TokenStore,
) -> Result<Option<AuthorizationManager>, OAuthError> {
    if !server.oauth.enabled {
        return Ok(None);
    }
    let Some(entry) = store.entry(&server.name, &server.identity())? else {
        return Ok(None);
    };
    let (Some(metadata), Some(credentials)) = (entry.metadata, entry.credentials) else {
        return Ok(None);
    };
    if credentials.token_response.is_none() {
        return Ok(None);
    }
    let mut manager = manager(server, store).await?;
    manager.set_metadata(metadata);
    let mut client = OAuthClientConfig::new(credentials.client_id, entry.redirect_uri);
    if let Some(secret) = entry.client_secret {
        client = client.with_client_secret(secret);
    }
    manager.configure_client(client).map_err(|error| OAuthError::Protocol {
        server: server.name.clone(),
        error: Box::new(error),
    })?;
    Ok(Some(manager))
}

/// What [`login`] shows along the way.
pub trait LoginPrompt: Send + Sync {
    /// The authorization URL the person opens (their browser comes back to toolgate).
    fn open(&self, url: &str);
}

/// What a [`login`] achieved.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Login {
    /// The authorization server (its issuer, else its authorization endpoint).
    pub authorization_server: String,
    /// True when toolgate registered itself as a client (dynamic client registration).
    pub registered: bool,
    /// The scopes asked for.
    pub scopes: Vec<String>,
}

/// Logs in to `server` (MCP "Authorization"): discovery, registration when offered,
/// the authorization code flow with PKCE through a loopback redirect, the token
/// exchange; the tokens go to `store`. `prompt` is shown the URL to open; the browser
/// must come back within `within`.
pub async fn login(
    server: &ServerConfig,
    store: &TokenStore,
    prompt: &dyn LoginPrompt,
    within: Duration,
) -> Result<Login, OAuthError> {
    let url = remote_url(server)?.to_string();
    if !server.oauth.enabled {
        return Err(OAuthError::Disabled(server.name.clone()));
    }
    let name = server.name.clone();
    let protocol = |error| OAuthError::Protocol {
        server: name.clone(),
        error: Box::new(error),
    };
    let refused = |reason: String| OAuthError::Refused {
        server: name.clone(),
        reason,
    };
    // The redirect: loopback on a port of the system's choosing (RFC 8252 §7.3).
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| refused(format!("could not listen on loopback: {e}")))?;
    let port = listener.local_addr().map_err(|e| refused(e.to_string()))?.port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");

    let mut manager = manager(server, store).await?;
    // The server's own challenge first: its `resource_metadata` and `scope` lead.
    let challenge = challenge(&url, &server_headers(server)).await;
    let resolution = manager
        .resolve_metadata_from_challenge(challenge.as_deref())
        .await
        .map_err(protocol)?;
    if resolution.source == AuthorizationMetadataSource::LegacyEndpointFallback && challenge.is_none() {
        return Err(OAuthError::Unsupported(name));
    }
    let metadata = resolution.metadata;
    manager.set_metadata(metadata.clone());
    let scopes: Vec<String> = match &server.oauth.scope {
        Some(scope) => scope.split_whitespace().map(str::to_string).collect(),
        None => manager.select_initial_scopes(&[]).await,
    };
    let scope_refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
    let (client_secret, registered) = match &server.oauth.client_id {
        Some(id) => {
            let mut client = OAuthClientConfig::new(id.clone(), redirect_uri.clone()).with_scopes(scopes.clone());
            if let Some(secret) = &server.oauth.client_secret {
                client = client.with_client_secret(secret.clone());
            }
            manager.configure_client(client).map_err(protocol)?;
            (server.oauth.client_secret.clone(), false)
        }
        None if metadata.registration_endpoint.is_some() => {
            let client = manager
                .register_client(CLIENT_NAME, &redirect_uri, &scope_refs)
                .await
                .map_err(protocol)?;
            (client.client_secret, true)
        }
        None => return Err(OAuthError::NoClient(name)),
    };
    let authorize = manager.get_authorization_url(&scope_refs).await.map_err(protocol)?;
    prompt.open(&authorize);
    let callback = tokio::time::timeout(within, wait_for_callback(&listener, &server.name))
        .await
        .map_err(|_| OAuthError::Timeout(within.as_secs()))?
        .map_err(refused)?;
    // The exchange saves the client and the tokens (through the store); a login that
    // fails before it leaves an earlier login as it was.
    manager
        .exchange_code_for_token_with_issuer(&callback.code, &callback.csrf_token, callback.issuer.as_deref())
        .await
        .map_err(protocol)?;
    // What login leaves besides the tokens: a connection then needs no discovery.
    store.update(&server.name, &server.identity(), |entry| {
        entry.metadata = Some(metadata.clone());
        entry.redirect_uri = redirect_uri.clone();
        entry.client_secret = client_secret;
    })?;
    Ok(Login {
        authorization_server: metadata.issuer.clone().unwrap_or(metadata.authorization_endpoint),
        registered,
        scopes,
    })
}

fn server_headers(server: &ServerConfig) -> Vec<(String, String)> {
    match &server.launch {
        Launch::Remote { headers, .. } => headers.clone(),
        Launch::Local { .. } => Vec::new(),
    }
}

/// The `WWW-Authenticate` challenge an unauthenticated `initialize` gets, when the
/// server answers `401`.
async fn challenge(url: &str, headers: &[(String, String)]) -> Option<String> {
    let client = crate::http::http_client(OAUTH_REQUEST_TIMEOUT).ok()?;
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")}}
    });
    let mut request = client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string())
        .timeout(OAUTH_REQUEST_TIMEOUT);
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let response = request.send().await.ok()?;
    if response.status() != reqwest::StatusCode::UNAUTHORIZED {
        return None;
    }
    response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)?
        .to_str()
        .ok()
        .map(str::to_string)
}

/// The longest request line and headers read from the browser.
const MAX_CALLBACK_REQUEST: usize = 16 * 1024;

/// Answers the loopback redirect: the first request for `/callback` ends the wait, with
/// the code (or the authorization server's error). Anything else gets a 404.
async fn wait_for_callback(listener: &tokio::net::TcpListener, server: &str) -> Result<AuthorizationCallback, String> {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            continue;
        };
        let mut request = Vec::new();
        let mut buffer = [0u8; 2048];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < MAX_CALLBACK_REQUEST {
            match tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer)).await {
                Ok(Ok(n)) if n > 0 => request.extend_from_slice(&buffer[..n]),
                _ => break,
            }
        }
        let text = String::from_utf8_lossy(&request);
        let target = text
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("GET "))
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or("");
        if target.split('?').next() != Some("/callback") {
            let _ = respond(&mut stream, "404 Not Found", "Not found.").await;
            continue;
        }
        let full = format!("http://127.0.0.1{target}");
        let query: Vec<(String, String)> = reqwest::Url::parse(&full)
            .map(|url| {
                url.query_pairs()
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        let get = |key: &str| query.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        if let Some(error) = get("error") {
            let description = get("error_description").map(|d| format!(": {d}")).unwrap_or_default();
            let reason = format!("the authorization server answered `{error}`{description}");
            let _ = respond(&mut stream, "400 Bad Request", &format!("toolgate: {reason}.")).await;
            return Err(crate::sanitize::escaped(&reason));
        }
        match AuthorizationCallback::from_redirect_url(&full) {
            Ok(callback) => {
                let _ = respond(
                    &mut stream,
                    "200 OK",
                    &format!(
                        "toolgate: logged in to MCP server {}. You can close this tab.",
                        crate::sanitize::escaped(server)
                    ),
                )
                .await;
                return Ok(callback);
            }
            Err(error) => {
                let _ = respond(&mut stream, "400 Bad Request", &format!("toolgate: {error}.")).await;
            }
        }
    }
}

async fn respond(stream: &mut tokio::net::TcpStream, status: &str, text: &str) -> std::io::Result<()> {
    let body = text.replace('&', "&amp;").replace('<', "&lt;");
    let page = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(page.as_bytes()).await?;
    stream.shutdown().await
}

/// The values of `value`'s `access_token` and `refresh_token` fields, for tests.
#[cfg(test)]
fn tokens_in(value: &serde_json::Value) -> Vec<String> {
    ["access_token", "refresh_token"]
        .iter()
        .filter_map(|field| value[field].as_str().map(str::to_string))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn credentials(access: &str, refresh: &str) -> StoredCredentials {
        let response = serde_json::json!({
            "access_token": access, "token_type": "bearer", "expires_in": 60, "refresh_token": refresh
        });
        assert_eq!(tokens_in(&response), [access, refresh]);
        StoredCredentials::new(
            "client-1".into(),
            Some(serde_json::from_value(response).unwrap()),
            vec![],
            Some(1),
        )
    }

    #[tokio::test]
    async fn tokens_are_kept_per_identity_in_a_private_file_and_every_value_is_watched() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let watcher = {
            let seen = Arc::clone(&seen);
            Arc::new(move |value: &str| seen.lock().unwrap().push(value.to_string()))
        };
        let store = TokenStore::at(dir.path().join("mcp/oauth.json")).watch(watcher);
        let docs = ServerConfig::new(
            "docs",
            Launch::Remote {
                url: "https://a.example/mcp".into(),
                headers: vec![],
            },
        );
        let moved = ServerConfig::new(
            "docs",
            Launch::Remote {
                url: "https://b.example/mcp".into(),
                headers: vec![],
            },
        );
        assert!(!store.has_tokens(&docs));
        store
            .credentials(&docs)
            .save(credentials("access-one-1234", "refresh-one-1234"))
            .await
            .unwrap();
        assert!(store.has_tokens(&docs));
        // Another URL under the same name is another identity: not logged in.
        assert!(!store.has_tokens(&moved));
        assert!(store.credentials(&moved).load().await.unwrap().is_none());
        let mode = std::fs::metadata(store.path().unwrap()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(seen.lock().unwrap().contains(&"access-one-1234".to_string()));
        assert!(seen.lock().unwrap().contains(&"refresh-one-1234".to_string()));
        assert_eq!(store.secrets(), ["access-one-1234", "refresh-one-1234"]);
        // A new process reads the same file.
        let again = TokenStore::at(dir.path().join("mcp/oauth.json"));
        let loaded = again.credentials(&docs).load().await.unwrap().unwrap();
        assert_eq!(token_values(&loaded), ["access-one-1234", "refresh-one-1234"]);
        assert_eq!(again.forget("docs").unwrap(), 1);
        assert!(!store.has_tokens(&docs));
        assert_eq!(again.forget("docs").unwrap(), 0);
    }

    #[test]
    fn a_corrupt_file_is_an_error_not_an_empty_store() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("oauth.json");
        std::fs::write(&path, "{not json").unwrap();
        let store = TokenStore::at(&path);
        let docs = ServerConfig::new(
            "docs",
            Launch::Remote {
                url: "https://a.example/mcp".into(),
                headers: vec![],
            },
        );
        assert!(matches!(
            store.entry("docs", &docs.identity()),
            Err(OAuthError::Corrupt { .. })
        ));
        assert!(!store.has_tokens(&docs));
    }
}
