//! OpenCode's `mcp` key, in both forms, decoded server by server.
//!
//! - V1: `"mcp": {"<name>": {"type": "local", "command": [...], "environment": {...},
//!   "enabled": true, "timeout": 5000}}` or `{"type": "remote", "url", "headers", …}`;
//!   `timeout` is the startup timeout in milliseconds; `{"enabled": false}` alone turns off
//!   a server a lower layer defined.
//! - V2: `"mcp": {"servers": {"<name>": {..., "cwd": ".", "disabled": false,
//!   "timeout": {"startup": ms, "execution": ms}}}, "timeout": {…}}`.
//!
//! `{env:VAR}` references were substituted when the file was read ([`crate::substitute_env`]).

use std::borrow::Cow;
use std::fmt;

use indexmap::IndexMap;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::value::MapAccessDeserializer;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::decode::{decode, expected};
use crate::error::{ConfigError, key_path};
use crate::values::{Flag, Millis};

/// The `mcp` value as written; [`Mcp::entries`] decodes each server.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Mcp(pub IndexMap<String, Value>);

impl<'de> Deserialize<'de> for Mcp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        match Value::deserialize(deserializer)? {
            Value::Object(map) => Ok(Mcp(map.into_iter().collect())),
            other => Err(D::Error::custom(expected("an object of MCP servers", &other))),
        }
    }
}

impl JsonSchema for Mcp {
    fn schema_name() -> Cow<'static, str> {
        "Mcp".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let server = generator.subschema_for::<McpServer>();
        let timeout = generator.subschema_for::<McpTimeout>();
        json_schema!({
            "description": "MCP servers: V1 `{name: server}`, or V2 `{servers: {name: server}, timeout}`.",
            "anyOf": [
                {"type": "object", "properties": {"servers": {"type": "object", "additionalProperties": server}, "timeout": timeout}, "required": ["servers"]},
                {"type": "object", "additionalProperties": server}
            ]
        })
    }
}

/// How a server is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum McpKind {
    /// A child process spoken to over stdio.
    Local,
    /// A server over HTTP.
    Remote,
}

impl<'de> Deserialize<'de> for McpKind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let value = Value::deserialize(deserializer)?;
        match value.as_str() {
            Some("local") => Ok(McpKind::Local),
            Some("remote") => Ok(McpKind::Remote),
            _ => Err(D::Error::custom(expected("\"local\" or \"remote\"", &value))),
        }
    }
}

/// A server's startup and request timeouts: a number (V1: the startup timeout) or an
/// object (V2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum McpTimeout {
    /// V1: milliseconds to start.
    Startup(Millis),
    /// V2: each timeout by name.
    Each(McpTimeouts),
}

/// The V2 timeouts object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct McpTimeouts {
    /// Start plus `initialize` plus the first `tools/list`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup: Option<Millis>,
    /// One `tools/call` (toolgate's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Millis>,
    /// One `tools/call` (OpenCode V2's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<Millis>,
    /// OpenCode V2's discovery timeout; toolgate counts the first listing in `startup`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<Millis>,
}

struct TimeoutVisitor;

impl<'de> Visitor<'de> for TimeoutVisitor {
    type Value = McpTimeout;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a positive number of milliseconds, or {\"startup\": ms, \"request\": ms}")
    }

    fn visit_u64<E: serde::de::Error>(self, ms: u64) -> Result<McpTimeout, E> {
        std::num::NonZeroU64::new(ms)
            .map(|ms| McpTimeout::Startup(Millis(ms)))
            .ok_or_else(|| E::custom(expected(&self.to_string(), &Value::from(ms))))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<McpTimeout, A::Error> {
        McpTimeouts::deserialize(MapAccessDeserializer::new(map)).map(McpTimeout::Each)
    }
}

impl fmt::Display for TimeoutVisitor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.expecting(f)
    }
}

impl<'de> Deserialize<'de> for McpTimeout {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TimeoutVisitor)
    }
}

impl JsonSchema for McpTimeout {
    fn schema_name() -> Cow<'static, str> {
        "McpTimeout".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let each = generator.subschema_for::<McpTimeouts>();
        json_schema!({"anyOf": [{"type": "integer", "minimum": 1}, each]})
    }
}

/// One server entry as written (both forms' keys).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(expecting = "an MCP server object")]
pub struct McpServer {
    /// `local` or `remote`; without it, `command` means local and `url` remote.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<McpKind>,
    /// The program and its arguments (local).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandLine>,
    /// Variables added to the child's environment (local).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<IndexMap<String, String>>,
    /// The same, by another name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<IndexMap<String, String>>,
    /// The child's working directory, relative to the project (local, V2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The endpoint (remote): `http://` or `https://`, possibly through `{env:VAR}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers sent with every request (remote).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<IndexMap<String, String>>,
    /// V1: `false` turns the server off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<Flag>,
    /// V2: `true` turns the server off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<Flag>,
    /// Startup (and, V2, request) timeouts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<McpTimeout>,
    /// OAuth for a remote server: `false` turns it off; `clientId`, `clientSecret` name a
    /// client registered beforehand, `scope` the scopes to ask for (README "OAuth").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<Value>,
    /// OpenCode V2's Code Mode switch: accepted, not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub codemode: Option<Value>,
    /// The kernel sandbox a local server runs in (the shape of the top-level `sandbox`:
    /// `mode`, `network`, `writable`), over `mcp_sandbox`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<crate::document::Sandbox>,
}

/// A local server's program and its arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(transparent)]
pub struct CommandLine(pub Vec<String>);

struct CommandVisitor;

impl<'de> Visitor<'de> for CommandVisitor {
    type Value = CommandLine;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a non-empty list: the program and its arguments")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<CommandLine, A::Error> {
        Vec::deserialize(serde::de::value::SeqAccessDeserializer::new(seq)).map(CommandLine)
    }
}

impl<'de> Deserialize<'de> for CommandLine {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CommandVisitor)
    }
}

/// How a decoded server is reached (plain data: the binary builds the MCP client's
/// options from it, substituting `{env:VAR}`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpLaunch {
    /// A child process: the program and its arguments, extra variables, working directory.
    Local {
        /// The program and its arguments.
        command: Vec<String>,
        /// Variables added to its environment, in order.
        environment: Vec<(String, String)>,
        /// Its working directory as written (relative to the project).
        cwd: Option<String>,
    },
    /// An HTTP endpoint and its headers.
    Remote {
        /// The URL as written.
        url: String,
        /// Headers, in order.
        headers: Vec<(String, String)>,
    },
    /// `{"enabled": false}` alone: turns off the server of this name from a lower layer.
    Off,
}

/// One server of one layer, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpEntry {
    /// The name under `mcp` (tool names are `<name>_<tool>`).
    pub name: String,
    /// Its key path (`mcp.calc` or `mcp.servers.calc`).
    pub path: String,
    /// How it is reached.
    pub launch: McpLaunch,
    /// False when the config turns it off.
    pub enabled: bool,
    /// The startup timeout, when set.
    pub startup_ms: Option<u64>,
    /// The request timeout, when set.
    pub request_ms: Option<u64>,
    /// Its own `sandbox`, when it has one (local servers).
    pub sandbox: Option<crate::document::Sandbox>,
    /// Its OAuth settings (remote servers; default: on, dynamic client registration).
    pub oauth: McpOAuth,
}

/// A remote server's `oauth` key, checked: `false`, or `{clientId, clientSecret, scope}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpOAuth {
    /// False for `"oauth": false`.
    pub enabled: bool,
    /// A client registered beforehand.
    pub client_id: Option<String>,
    /// That client's secret.
    pub client_secret: Option<String>,
    /// The scopes to ask for, space-separated.
    pub scope: Option<String>,
}

impl Default for McpOAuth {
    fn default() -> McpOAuth {
        McpOAuth {
            enabled: true,
            client_id: None,
            client_secret: None,
            scope: None,
        }
    }
}

impl McpOAuth {
    /// Reads OpenCode's `oauth` value at `path`.
    fn of(value: Option<&Value>, path: &str) -> Result<McpOAuth, ConfigError> {
        let Some(value) = value else {
            return Ok(McpOAuth::default());
        };
        let object = match value {
            Value::Bool(enabled) => {
                return Ok(McpOAuth {
                    enabled: *enabled,
                    ..McpOAuth::default()
                });
            }
            Value::Object(object) => object,
            other => {
                return Err(ConfigError::invalid(
                    "",
                    format!("{path}.oauth"),
                    expected("false or an object (clientId, clientSecret, scope)", other),
                ));
            }
        };
        let text = |key: &str| -> Result<Option<String>, ConfigError> {
            match object.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(text)) => Ok(Some(text.clone())),
                Some(other) => Err(ConfigError::invalid(
                    "",
                    format!("{path}.oauth.{key}"),
                    expected("a string", other),
                )),
            }
        };
        Ok(McpOAuth {
            enabled: true,
            client_id: text("clientId")?,
            client_secret: text("clientSecret")?,
            scope: text("scope")?,
        })
    }
}

/// The V2 form: `servers` holds an object of server objects and is not itself a V1
/// server (which would have a `type`, `command` or `url`).
fn is_v2(mcp: &IndexMap<String, Value>) -> bool {
    match mcp.get("servers") {
        Some(Value::Object(servers)) => !["type", "command", "url"].iter().any(|key| servers.contains_key(*key)),
        _ => false,
    }
}

fn timeouts(timeout: Option<&McpTimeout>) -> (Option<u64>, Option<u64>) {
    match timeout {
        None => (None, None),
        Some(McpTimeout::Startup(ms)) => (Some(ms.0.get()), None),
        Some(McpTimeout::Each(each)) => (
            each.startup.map(|ms| ms.0.get()),
            each.request.or(each.execution).map(|ms| ms.0.get()),
        ),
    }
}

impl Mcp {
    /// Every server of this value, in file order, each checked; errors name the key path.
    pub fn entries(&self) -> Result<Vec<McpEntry>, ConfigError> {
        let (servers, base, shared) = if is_v2(&self.0) {
            let servers: IndexMap<String, Value> = match self.0.get("servers") {
                Some(value) => decode(value.clone(), "mcp.servers")?,
                None => IndexMap::new(),
            };
            let shared: Option<McpTimeout> = match self.0.get("timeout") {
                Some(value) => Some(decode(value.clone(), "mcp.timeout")?),
                None => None,
            };
            (servers, "mcp.servers", shared)
        } else {
            (self.0.clone(), "mcp", None)
        };
        let (shared_startup, shared_request) = timeouts(shared.as_ref());
        let mut entries = Vec::new();
        for (name, value) in servers {
            let path = key_path(base, &name);
            if name.is_empty() {
                return Err(ConfigError::invalid(
                    "",
                    path,
                    expected("a non-empty server name", &Value::String(String::new())),
                ));
            }
            let server: McpServer = decode(value, &path)?;
            let (startup_ms, request_ms) = timeouts(server.timeout.as_ref());
            let enabled = server.enabled.is_none_or(|flag| flag.0) && !server.disabled.is_some_and(|flag| flag.0);
            let launch = server.launch(&path, enabled)?;
            let oauth = McpOAuth::of(server.oauth.as_ref(), &path)?;
            entries.push(McpEntry {
                name,
                path,
                launch,
                enabled,
                startup_ms: startup_ms.or(shared_startup),
                request_ms: request_ms.or(shared_request),
                sandbox: server.sandbox.clone(),
                oauth,
            });
        }
        Ok(entries)
    }
}

impl McpServer {
    fn launch(&self, path: &str, enabled: bool) -> Result<McpLaunch, ConfigError> {
        let at = |key: &str| key_path(path, key);
        let kind = match self.kind {
            Some(kind) => kind,
            None if self.command.is_some() => McpKind::Local,
            None if self.url.is_some() => McpKind::Remote,
            // V1's `{"enabled": false}`: turns off a server a lower layer defined.
            None if !enabled => return Ok(McpLaunch::Off),
            None => {
                return Err(ConfigError::invalid(
                    "",
                    at("type"),
                    "expected \"local\" (with `command`) or \"remote\" (with `url`), found null",
                ));
            }
        };
        let pairs = |map: &Option<IndexMap<String, String>>| -> Vec<(String, String)> {
            map.iter()
                .flatten()
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect()
        };
        match kind {
            McpKind::Local => {
                let command = match &self.command {
                    Some(CommandLine(command)) if command.first().is_some_and(|program| !program.is_empty()) => {
                        command.clone()
                    }
                    Some(CommandLine(command)) => {
                        return Err(ConfigError::invalid(
                            "",
                            at("command"),
                            expected(
                                "a non-empty list: the program and its arguments",
                                &Value::from(command.clone()),
                            ),
                        ));
                    }
                    None => {
                        return Err(ConfigError::invalid(
                            "",
                            at("command"),
                            "expected the command to start, found null",
                        ));
                    }
                };
                let mut environment = pairs(&self.environment);
                environment.extend(pairs(&self.env));
                Ok(McpLaunch::Local {
                    command,
                    environment,
                    cwd: self.cwd.clone(),
                })
            }
            McpKind::Remote => {
                let url = match &self.url {
                    // An empty URL is what an unset `{env:VAR}` leaves: as in OpenCode, that
                    // server fails when it starts, not the whole config.
                    Some(url) if url.is_empty() || url.starts_with("http://") || url.starts_with("https://") => {
                        url.clone()
                    }
                    Some(url) => {
                        return Err(ConfigError::invalid(
                            "",
                            at("url"),
                            expected("an http:// or https:// URL", &Value::String(url.clone())),
                        ));
                    }
                    None => {
                        return Err(ConfigError::invalid(
                            "",
                            at("url"),
                            "expected the server's URL, found null",
                        ));
                    }
                };
                Ok(McpLaunch::Remote {
                    url,
                    headers: pairs(&self.headers),
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn mcp(value: Value) -> Result<Vec<McpEntry>, ConfigError> {
        let mcp: Mcp = decode(value, "mcp")?;
        mcp.entries()
    }

    #[test]
    fn v1_and_v2_servers_as_opencode_writes_them() {
        let local = mcp(json!({"calc": {"type": "local", "command": ["python3", "calc.py"],
            "environment": {"KEY": "{env:TOKEN}"}, "enabled": true, "timeout": 2500}}))
        .unwrap();
        assert_eq!(local[0].startup_ms, Some(2500));
        assert_eq!(
            local[0].launch,
            McpLaunch::Local {
                command: vec!["python3".into(), "calc.py".into()],
                environment: vec![("KEY".into(), "{env:TOKEN}".into())],
                cwd: None
            }
        );
        let v2 = mcp(
            json!({"servers": {"calc": {"type": "local", "command": ["calc"], "cwd": "tools",
            "disabled": true, "timeout": {"startup": 100, "execution": 200}}}, "timeout": {"startup": 7}}),
        )
        .unwrap();
        assert!(!v2[0].enabled);
        assert_eq!((v2[0].startup_ms, v2[0].request_ms), (Some(100), Some(200)));
        assert_eq!(v2[0].path, "mcp.servers.calc");
        let named_servers = mcp(json!({"servers": {"type": "remote", "url": "http://127.0.0.1:1/mcp"}})).unwrap();
        assert_eq!(named_servers[0].name, "servers");
        let off = mcp(json!({"calc": {"enabled": false}})).unwrap();
        assert_eq!(off[0].launch, McpLaunch::Off);
        assert_eq!(off[0].oauth, McpOAuth::default());
        let oauth = mcp(json!({"docs": {"type": "remote", "url": "https://d.example/mcp",
            "oauth": {"clientId": "c1", "scope": "read write"}}, "plain": {"url": "https://p.example", "oauth": false}}))
        .unwrap();
        assert_eq!(oauth[0].oauth.client_id.as_deref(), Some("c1"));
        assert_eq!(oauth[0].oauth.scope.as_deref(), Some("read write"));
        assert!(!oauth[1].oauth.enabled);
        let bad = mcp(json!({"docs": {"url": "https://d.example", "oauth": {"clientId": 7}}})).unwrap_err();
        assert!(bad.to_string().contains("mcp.docs.oauth.clientId"), "{bad}");
    }

    #[test]
    fn malformed_entries_name_their_key_path() {
        let cases = [
            (json!([]), "mcp", "expected an object of MCP servers"),
            (json!({"a": 1}), "mcp.a", "expected an MCP server object"),
            (
                json!({"a": {"type": "stdio", "command": ["x"]}}),
                "mcp.a.type",
                "expected \"local\" or \"remote\"",
            ),
            (
                json!({"a": {"type": "local"}}),
                "mcp.a.command",
                "expected the command to start",
            ),
            (
                json!({"a": {"type": "local", "command": []}}),
                "mcp.a.command",
                "expected a non-empty list",
            ),
            (
                json!({"a": {"type": "local", "command": "npx server"}}),
                "mcp.a.command",
                "expected a non-empty list",
            ),
            (
                json!({"a": {"type": "local", "command": ["x", 1]}}),
                "mcp.a.command[1]",
                "expected a string",
            ),
            (
                json!({"a": {"command": ["x"], "environment": {"K": 1}}}),
                "mcp.a.environment.K",
                "expected a string",
            ),
            (
                json!({"a": {"command": ["x"], "enabled": "yes"}}),
                "mcp.a.enabled",
                "expected true or false",
            ),
            (
                json!({"a": {"command": ["x"], "timeout": 0}}),
                "mcp.a.timeout",
                "expected a positive number",
            ),
            (
                json!({"a": {"type": "remote", "url": "ftp://x"}}),
                "mcp.a.url",
                "expected an http:// or https:// URL",
            ),
            (
                json!({"a": {"type": "remote", "url": "https://x", "headers": []}}),
                "mcp.a.headers",
                "expected an object",
            ),
            (
                json!({"my server": {"type": "remote"}}),
                "mcp[\"my server\"].url",
                "expected the server's URL",
            ),
            (
                json!({"servers": {"a": {"command": ["x"], "timeout": {"request": -1}}}}),
                "mcp.servers.a.timeout.request",
                "expected a positive number",
            ),
            (
                json!({"a": {"headers": {}}}),
                "mcp.a.type",
                "expected \"local\" (with `command`)",
            ),
        ];
        for (value, path, message) in cases {
            let error = mcp(value.clone()).unwrap_err();
            assert_eq!(error.path, path, "{value}: {error}");
            assert!(error.message.starts_with(message), "{value}: {error}");
        }
    }

    #[test]
    fn an_empty_url_from_an_unset_variable_fails_only_when_the_server_starts() {
        assert!(mcp(json!({"a": {"type": "remote", "url": ""}})).is_ok());
        assert!(mcp(json!({"a": {"type": "remote", "url": "{env:TOKEN}"}})).is_err());
    }
}
