//! A configured MCP server, as plain data.
//!
//! OpenCode's `mcp` config key (V1 names under `mcp`, V2 `mcp.servers`) is read by
//! `toolgate-config`; a front end turns each entry into a [`ServerConfig`] (substituting
//! `{env:VAR}`), or builds one in code with [`ServerConfig::new`].

use std::path::PathBuf;
use std::time::Duration;

/// How long a server may take to start and list its tools when the config does not say
/// (OpenCode's default).
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_millis(5000);

/// How long one request may take when the config does not say (the MCP SDKs' default).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_millis(60_000);

/// How a server is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Launch {
    /// A child process spoken to over stdio.
    Local {
        /// The program and its arguments.
        command: Vec<String>,
        /// Variables added to the child's environment.
        environment: Vec<(String, String)>,
        /// The child's working directory, relative ones resolved against the project
        /// (default: the project directory).
        cwd: Option<PathBuf>,
    },
    /// A server over HTTP: streamable HTTP, or the older HTTP+SSE transport.
    Remote {
        /// The endpoint.
        url: String,
        /// Headers sent with every request.
        headers: Vec<(String, String)>,
    },
}

/// One configured server, after `{env:…}` substitution. More settings may come, hence
/// `#[non_exhaustive]`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerConfig {
    /// The name under `mcp` (tool names are `<name>_<tool>`).
    pub name: String,
    /// How to reach it.
    pub launch: Launch,
    /// False when the config disables it (`enabled: false`, `disabled: true`).
    pub enabled: bool,
    /// Start plus `initialize` plus the first `tools/list`.
    pub startup_timeout: Duration,
    /// One `tools/call`.
    pub request_timeout: Duration,
    /// A local server's command runs under this prefix (empty: as it is). The binary
    /// gives the sandbox trampoline and its policy here, so the server runs under the
    /// same kernel sandbox as bash.
    pub wrapper: Vec<String>,
    /// A remote server's OAuth settings (`oauth`; default: on, dynamic registration).
    pub oauth: OAuth,
}

impl ServerConfig {
    /// An enabled server named `name` with the default timeouts
    /// ([`DEFAULT_STARTUP_TIMEOUT`], [`DEFAULT_REQUEST_TIMEOUT`]).
    pub fn new(name: impl Into<String>, launch: Launch) -> ServerConfig {
        ServerConfig {
            name: name.into(),
            launch,
            enabled: true,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            wrapper: Vec::new(),
            oauth: OAuth::default(),
        }
    }

    /// The same server, its command run under `prefix` (a local server's only): the
    /// program and arguments of `prefix`, then the command.
    pub fn run_under(mut self, prefix: Vec<String>) -> ServerConfig {
        self.wrapper = prefix;
        self
    }

    /// What the server's pins are kept under besides its name: its command line (its
    /// working directory too), or its URL.
    pub fn identity(&self) -> String {
        match &self.launch {
            Launch::Local { command, cwd, .. } => {
                let mut identity = format!("stdio:{}", serde_json::Value::from(command.clone()));
                if let Some(cwd) = cwd {
                    identity.push_str(&format!(" in {}", cwd.display()));
                }
                identity
            }
            Launch::Remote { url, .. } => format!("url:{url}"),
        }
    }

    /// The same server with other OAuth settings.
    pub fn oauth(mut self, oauth: OAuth) -> ServerConfig {
        self.oauth = oauth;
        self
    }

    /// The same server, enabled or not.
    pub fn enabled(mut self, enabled: bool) -> ServerConfig {
        self.enabled = enabled;
        self
    }

    /// The same server with another startup timeout.
    pub fn startup_timeout(mut self, timeout: Duration) -> ServerConfig {
        self.startup_timeout = timeout;
        self
    }

    /// The same server with another request timeout.
    pub fn request_timeout(mut self, timeout: Duration) -> ServerConfig {
        self.request_timeout = timeout;
        self
    }
}

/// A server's OAuth settings (OpenCode's `oauth` key of a remote server).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuth {
    /// False for `"oauth": false`: the server is never logged in to (its `401` says so).
    pub enabled: bool,
    /// A client registered beforehand (no dynamic registration then).
    pub client_id: Option<String>,
    /// That client's secret, when it is a confidential one.
    pub client_secret: Option<String>,
    /// The scopes to ask for (space-separated); without it, those the server's challenge
    /// or its resource metadata name.
    pub scope: Option<String>,
}

impl Default for OAuth {
    fn default() -> OAuth {
        OAuth {
            enabled: true,
            client_id: None,
            client_secret: None,
            scope: None,
        }
    }
}

impl OAuth {
    /// OAuth turned off for the server.
    pub fn disabled() -> OAuth {
        OAuth {
            enabled: false,
            ..OAuth::default()
        }
    }

    /// The same settings with a preregistered client.
    pub fn client(mut self, id: impl Into<String>, secret: Option<String>) -> OAuth {
        self.client_id = Some(id.into());
        self.client_secret = secret;
        self
    }

    /// The same settings asking for `scope` (space-separated scopes).
    pub fn scope(mut self, scope: impl Into<String>) -> OAuth {
        self.scope = Some(scope.into());
        self
    }
}
