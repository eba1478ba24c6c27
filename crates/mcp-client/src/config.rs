//! OpenCode's `mcp` config key, read as is.
//!
//! Two forms are accepted, and may be mixed across layers:
//! - V1: `"mcp": {"<name>": {"type": "local", "command": [...], "environment": {...},
//!   "enabled": true, "timeout": 5000}}` or `{"type": "remote", "url", "headers", "enabled",
//!   "timeout"}`; `timeout` is the startup timeout in milliseconds.
//! - V2: `"mcp": {"servers": {"<name>": {..., "cwd": ".", "disabled": false,
//!   "timeout": {"startup": ms, "request": ms}}}}`.
//!
//! String values may name environment variables as `{env:VAR}`. Unknown keys (OpenCode's
//! `oauth`, …) are ignored; a key toolgate reads with the wrong type is an error that names
//! its key path.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

/// How long a server may take to start and list its tools when the config does not say
/// (OpenCode's default).
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_millis(5000);

/// How long one request may take when the config does not say (the MCP SDKs' default).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_millis(60_000);

/// A config entry with the wrong shape: `<key path>: expected …, found …`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: expected {expected}, found {found}")]
pub struct ConfigError {
    /// Where, e.g. `mcp.github.command` or `mcp.servers.calc.timeout.request`.
    pub path: String,
    /// What was expected there.
    pub expected: String,
    /// What was found, as JSON.
    pub found: String,
}

impl ConfigError {
    fn new(path: &str, expected: &str, found: &Value) -> Self {
        ConfigError {
            path: path.to_string(),
            expected: expected.to_string(),
            found: found.to_string(),
        }
    }
}

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

/// One configured server, after `{env:…}` substitution ([`parse`] builds it from the
/// config; [`ServerConfig::new`] from code). More settings may come, hence
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
        }
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

/// One server entry of one config layer, before parsing.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The server name.
    pub name: String,
    /// Its key path (`mcp.calc` or `mcp.servers.calc`), for error messages.
    pub path: String,
    /// The entry as written.
    pub value: Value,
}

/// `path` extended by `key`: `.key` for plain names, `["key"]` otherwise.
fn key_path(path: &str, key: &str) -> String {
    let plain = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        format!("{path}.{key}")
    } else {
        format!("{path}[{}]", Value::String(key.to_string()))
    }
}

/// The V2 form: `servers` holds an object of server objects and is not itself a V1
/// server (which would have a `type`, `command` or `url`).
fn is_v2(mcp: &Map<String, Value>) -> bool {
    match mcp.get("servers") {
        Some(Value::Object(servers)) => !["type", "command", "url"].iter().any(|key| servers.contains_key(*key)),
        _ => false,
    }
}

/// The server entries of one layer's `mcp` value, in file order, in either form.
pub fn entries(mcp: &Value) -> Result<Vec<Entry>, ConfigError> {
    let Value::Object(map) = mcp else {
        return Err(ConfigError::new("mcp", "an object of MCP servers", mcp));
    };
    let (servers, base) = if is_v2(map) {
        match map.get("servers") {
            Some(Value::Object(servers)) => (servers, "mcp.servers".to_string()),
            _ => return Ok(Vec::new()),
        }
    } else {
        (map, "mcp".to_string())
    };
    Ok(servers
        .iter()
        .map(|(name, value)| Entry {
            name: name.clone(),
            path: key_path(&base, name),
            value: value.clone(),
        })
        .collect())
}

/// Checks every entry of one layer's `mcp` value (nothing is substituted or started).
pub fn validate(mcp: &Value) -> Result<(), ConfigError> {
    for entry in entries(mcp)? {
        parse(&entry, |_| None, Path::new("."))?;
    }
    Ok(())
}

/// Replaces every `{env:VAR}` in `text` with the variable's value (empty when unset,
/// as OpenCode does). toolgate's own variables (`TOOLGATE_*`) are never substituted: a
/// config, possibly a project's, must not be a way to hand toolgate's secrets to a server.
pub(crate) fn substitute(text: &str, env: &impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{env:") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 5..];
        match after.find('}') {
            Some(end) => {
                let name = after[..end].trim();
                if !name.starts_with("TOOLGATE_") {
                    out.push_str(&env(name).unwrap_or_default());
                }
                rest = &after[end + 1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

fn milliseconds(value: &Value, path: &str) -> Result<Duration, ConfigError> {
    match value.as_u64() {
        Some(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err(ConfigError::new(path, "a positive number of milliseconds", value)),
    }
}

fn string_map(
    value: &Value,
    path: &str,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, ConfigError> {
    let Value::Object(map) = value else {
        return Err(ConfigError::new(path, "an object of names to strings", value));
    };
    map.iter()
        .map(|(key, value)| match value {
            Value::String(text) => Ok((key.clone(), substitute(text, env))),
            other => Err(ConfigError::new(&key_path(path, key), "a string", other)),
        })
        .collect()
}

/// Parses one entry. `env` looks variables up for `{env:…}`; `project` anchors a
/// relative `cwd`.
pub fn parse(entry: &Entry, env: impl Fn(&str) -> Option<String>, project: &Path) -> Result<ServerConfig, ConfigError> {
    let path = entry.path.as_str();
    let Value::Object(map) = &entry.value else {
        return Err(ConfigError::new(path, "an MCP server object", &entry.value));
    };
    if entry.name.is_empty() {
        return Err(ConfigError::new(
            path,
            "a non-empty server name",
            &Value::String(String::new()),
        ));
    }
    let field = |key: &str| map.get(key).map(|value| (value, format!("{path}.{key}")));
    let kind = match field("type") {
        Some((Value::String(kind), _)) if kind == "local" || kind == "remote" => kind.clone(),
        Some((other, at)) => return Err(ConfigError::new(&at, "\"local\" or \"remote\"", other)),
        // Without a type, what is there decides.
        None if map.contains_key("command") => "local".to_string(),
        None if map.contains_key("url") => "remote".to_string(),
        None => {
            return Err(ConfigError::new(
                &format!("{path}.type"),
                "\"local\" (with `command`) or \"remote\" (with `url`)",
                &Value::Null,
            ));
        }
    };
    let launch = if kind == "local" {
        let command = match field("command") {
            Some((Value::Array(items), at)) if !items.is_empty() => items
                .iter()
                .enumerate()
                .map(|(index, item)| match item {
                    Value::String(text) if index > 0 || !text.is_empty() => Ok(substitute(text, &env)),
                    other => Err(ConfigError::new(&format!("{at}[{index}]"), "a non-empty string", other)),
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some((other, at)) => {
                return Err(ConfigError::new(
                    &at,
                    "a non-empty list: the program and its arguments",
                    other,
                ));
            }
            None => {
                return Err(ConfigError::new(
                    &format!("{path}.command"),
                    "the command to start",
                    &Value::Null,
                ));
            }
        };
        let mut environment = Vec::new();
        for key in ["environment", "env"] {
            if let Some((value, at)) = field(key) {
                environment.extend(string_map(value, &at, &env)?);
            }
        }
        let cwd = match field("cwd") {
            Some((Value::String(dir), _)) => {
                let dir = PathBuf::from(substitute(dir, &env));
                Some(if dir.is_absolute() { dir } else { project.join(dir) })
            }
            Some((other, at)) => return Err(ConfigError::new(&at, "a directory", other)),
            None => None,
        };
        Launch::Local {
            command,
            environment,
            cwd,
        }
    } else {
        let url = match field("url") {
            Some((Value::String(raw), at)) => {
                let url = substitute(raw, &env);
                // A URL held in a variable is checked when the server starts.
                if !(url.starts_with("http://") || url.starts_with("https://") || raw.contains("{env:")) {
                    return Err(ConfigError::new(&at, "an http:// or https:// URL", &Value::String(url)));
                }
                url
            }
            Some((other, at)) => return Err(ConfigError::new(&at, "an http:// or https:// URL", other)),
            None => {
                return Err(ConfigError::new(
                    &format!("{path}.url"),
                    "the server's URL",
                    &Value::Null,
                ));
            }
        };
        let headers = match field("headers") {
            Some((value, at)) => string_map(value, &at, &env)?,
            None => Vec::new(),
        };
        Launch::Remote { url, headers }
    };
    let mut enabled = true;
    if let Some((value, at)) = field("enabled") {
        enabled = value
            .as_bool()
            .ok_or_else(|| ConfigError::new(&at, "true or false", value))?;
    }
    if let Some((value, at)) = field("disabled") {
        let disabled = value
            .as_bool()
            .ok_or_else(|| ConfigError::new(&at, "true or false", value))?;
        enabled = enabled && !disabled;
    }
    let mut startup_timeout = DEFAULT_STARTUP_TIMEOUT;
    let mut request_timeout = DEFAULT_REQUEST_TIMEOUT;
    match field("timeout") {
        None => {}
        Some((Value::Object(timeouts), at)) => {
            for (key, value) in timeouts {
                let here = key_path(&at, key);
                match key.as_str() {
                    "startup" => startup_timeout = milliseconds(value, &here)?,
                    "request" => request_timeout = milliseconds(value, &here)?,
                    _ => {
                        return Err(ConfigError::new(
                            &here,
                            "`startup` or `request`",
                            &Value::String(key.clone()),
                        ));
                    }
                }
            }
        }
        Some((value, at)) => {
            startup_timeout = milliseconds(value, &at).map_err(|mut error| {
                error.expected = "a positive number of milliseconds, or {\"startup\": ms, \"request\": ms}".into();
                error
            })?;
        }
    }
    Ok(ServerConfig {
        name: entry.name.clone(),
        launch,
        enabled,
        startup_timeout,
        request_timeout,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".into()),
            "TOOLGATE_SERVER_TOKEN" => Some("never".into()),
            _ => None,
        }
    }

    fn one(mcp: Value) -> Result<ServerConfig, ConfigError> {
        let entries = entries(&mcp)?;
        assert_eq!(entries.len(), 1, "{entries:?}");
        parse(&entries[0], env, Path::new("/project"))
    }

    #[test]
    fn v1_local_and_remote_as_opencode_writes_them() {
        let local = one(json!({"calc": {"type": "local", "command": ["python3", "calc.py"],
            "environment": {"KEY": "{env:TOKEN}"}, "enabled": true, "timeout": 2500}}))
        .unwrap();
        assert_eq!(
            local,
            ServerConfig {
                name: "calc".into(),
                launch: Launch::Local {
                    command: vec!["python3".into(), "calc.py".into()],
                    environment: vec![("KEY".into(), "s3cret".into())],
                    cwd: None,
                },
                enabled: true,
                startup_timeout: Duration::from_millis(2500),
                request_timeout: DEFAULT_REQUEST_TIMEOUT,
            }
        );
        let remote = one(json!({"gh": {"type": "remote", "url": "https://api.example/mcp",
            "headers": {"Authorization": "Bearer {env:TOKEN}"}, "enabled": false, "oauth": false}}))
        .unwrap();
        assert_eq!(
            remote.launch,
            Launch::Remote {
                url: "https://api.example/mcp".into(),
                headers: vec![("Authorization".into(), "Bearer s3cret".into())],
            }
        );
        assert!(!remote.enabled);
        assert_eq!(remote.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
    }

    #[test]
    fn v2_servers_with_cwd_disabled_and_both_timeouts() {
        let server = one(
            json!({"servers": {"calc": {"type": "local", "command": ["calc"], "cwd": "tools",
            "disabled": true, "timeout": {"startup": 100, "request": 200}}}}),
        )
        .unwrap();
        assert_eq!(
            server.launch,
            Launch::Local {
                command: vec!["calc".into()],
                environment: vec![],
                cwd: Some(PathBuf::from("/project/tools")),
            }
        );
        assert!(!server.enabled);
        assert_eq!(server.startup_timeout, Duration::from_millis(100));
        assert_eq!(server.request_timeout, Duration::from_millis(200));
    }

    #[test]
    fn a_v1_server_named_servers_is_not_taken_for_the_v2_form() {
        let server = one(json!({"servers": {"type": "remote", "url": "http://127.0.0.1:1/mcp"}})).unwrap();
        assert_eq!(server.name, "servers");
    }

    #[test]
    fn toolgate_variables_are_never_substituted() {
        assert_eq!(substitute("a{env:TOKEN}b{env:NOPE}c", &env), "as3cretbc");
        assert_eq!(substitute("{env:TOOLGATE_SERVER_TOKEN}", &env), "");
        assert_eq!(substitute("{env: TOKEN }", &env), "s3cret");
        assert_eq!(substitute("unterminated {env:TOKEN", &env), "unterminated {env:TOKEN");
    }

    #[test]
    fn malformed_entries_name_their_key_path() {
        let cases = [
            (json!([]), "mcp", "an object of MCP servers"),
            (json!({"a": 1}), "mcp.a", "an MCP server object"),
            (
                json!({"a": {"type": "stdio", "command": ["x"]}}),
                "mcp.a.type",
                "\"local\" or \"remote\"",
            ),
            (json!({"a": {"type": "local"}}), "mcp.a.command", "the command to start"),
            (
                json!({"a": {"type": "local", "command": []}}),
                "mcp.a.command",
                "a non-empty list",
            ),
            (
                json!({"a": {"type": "local", "command": "npx server"}}),
                "mcp.a.command",
                "a non-empty list",
            ),
            (
                json!({"a": {"type": "local", "command": ["x", 1]}}),
                "mcp.a.command[1]",
                "a non-empty string",
            ),
            (
                json!({"a": {"type": "local", "command": ["x"], "environment": {"K": 1}}}),
                "mcp.a.environment.K",
                "a string",
            ),
            (
                json!({"a": {"type": "local", "command": ["x"], "enabled": "yes"}}),
                "mcp.a.enabled",
                "true or false",
            ),
            (
                json!({"a": {"type": "local", "command": ["x"], "timeout": 0}}),
                "mcp.a.timeout",
                "a positive number",
            ),
            (
                json!({"a": {"type": "remote", "url": "ftp://x"}}),
                "mcp.a.url",
                "an http:// or https:// URL",
            ),
            (
                json!({"a": {"type": "remote", "url": "https://x", "headers": []}}),
                "mcp.a.headers",
                "an object",
            ),
            (
                json!({"my server": {"type": "remote"}}),
                "mcp[\"my server\"].url",
                "the server's URL",
            ),
            (
                json!({"servers": {"a": {"command": ["x"], "timeout": {"request": -1}}}}),
                "mcp.servers.a.timeout.request",
                "a positive number",
            ),
            (
                json!({"servers": {"a": {"command": ["x"], "timeout": {"startp": 1}}}}),
                "mcp.servers.a.timeout.startp",
                "`startup` or `request`",
            ),
            (
                json!({"servers": {"a": {"command": ["x"], "disabled": 0}}}),
                "mcp.servers.a.disabled",
                "true or false",
            ),
            (
                json!({"a": {"headers": {}}}),
                "mcp.a.type",
                "\"local\" (with `command`)",
            ),
        ];
        for (mcp, path, expected) in cases {
            let error = validate(&mcp).unwrap_err();
            assert_eq!(error.path, path, "{mcp}");
            assert!(error.expected.starts_with(expected), "{mcp}: {error}");
        }
    }

    #[test]
    fn a_url_from_a_variable_is_checked_only_after_substitution() {
        let mcp = json!({"a": {"type": "remote", "url": "{env:TOKEN}"}});
        assert!(validate(&mcp).is_ok());
    }
}
