//! One config file: every key toolgate reads, and OpenCode's other top-level keys, which
//! toolgate accepts and ignores (so an OpenCode config is read unchanged, and the schema
//! does not reject it).

use std::borrow::Cow;
use std::fmt;

use indexmap::IndexMap;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::value::MapAccessDeserializer;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::agent::AgentConfig;
use crate::mcp::Mcp;
use crate::rules::{Permission, RuleItem, Tools};
use crate::values::{DirList, Flag, HostList, HttpUrl, Inherit, PositiveInt, SandboxMode};

/// Declares [`Document`]: toolgate's keys with their types, then OpenCode's ignored ones.
macro_rules! document {
    (
        read { $($(#[$meta:meta])* $field:ident $(as $rename:literal)?: $ty:ty,)+ }
        ignored { $($(#[$imeta:meta])* $ifield:ident $(as $irename:literal)?,)+ }
    ) => {
        /// One configuration file (toolgate's or OpenCode's format; both are one format).
        ///
        /// Every field is optional; a key that is absent leaves the layers below it as
        /// they are. Keys this type does not know are reported as warnings by the loader.
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(expecting = "an object")]
        #[schemars(title = "toolgate configuration (OpenCode-compatible)")]
        #[non_exhaustive]
        pub struct Document {
            $(
                $(#[$meta])*
                #[serde($(rename = $rename,)? default, skip_serializing_if = "Option::is_none")]
                pub $field: Option<$ty>,
            )+
            $(
                $(#[$imeta])*
                #[serde($(rename = $irename,)? default, skip_serializing_if = "Option::is_none")]
                pub $ifield: Option<Value>,
            )+
        }

        /// OpenCode's top-level keys that toolgate accepts and ignores (V1 and V2 schemas).
        pub const OPENCODE_IGNORED_KEYS: &[&str] = &[
            $(document!(@name $ifield $($irename)?),)+
        ];
    };
    (@name $field:ident $rename:literal) => { $rename };
    (@name $field:ident) => { stringify!($field) };
}

document! {
    read {
        /// The JSON Schema this file follows (for editors): OpenCode's
        /// `https://opencode.ai/config.json` or toolgate's (README "Configuration").
        schema as "$schema": String,
        /// OpenCode V1 rules: `"allow"`, or `{action: effect | {pattern: effect}}` in key
        /// order (toolgate also reads the V2 list form here).
        permission: Permission,
        /// OpenCode V2 rules: an ordered list of `{action, resource, effect}`.
        permissions: Vec<RuleItem>,
        /// Legacy booleans: `{tool: false}` denies, `true` allows; before `permission`.
        tools: Tools,
        /// V1 agents: `{name: {permission, tools, mode, description, disable, …}}`.
        agent: IndexMap<String, AgentConfig>,
        /// V2 agents: `{name: {permissions, mode, description, disabled, …}}`.
        agents: IndexMap<String, AgentConfig>,
        /// V1's deprecated primary agents (read as `agent` with `mode: primary`).
        mode: IndexMap<String, AgentConfig>,
        /// The agent whose rules apply when none is named.
        default_agent: String,
        /// Identical calls in a row that ask `doom_loop` (default 3).
        doom_loop_threshold: PositiveInt,
        /// Where tool output is cut and spilled to a file.
        tool_output: ToolOutput,
        /// What is redacted from every tool's output before the model sees it (README
        /// "Redaction").
        redaction: Redaction,
        /// How much of the audit log is kept (README "Audit log").
        audit: Audit,
        /// The webfetch tool's network settings.
        webfetch: Webfetch,
        /// The websearch tool: `false` turns it off, or its provider and endpoints.
        websearch: Websearch,
        /// The bash sandbox (README "The sandbox").
        sandbox: Sandbox,
        /// The environment bash commands get.
        shell_env: ShellEnv,
        /// Background processes (`bash` with `background: true`): their limits.
        shells: Shells,
        /// Webhooks `toolgate serve` POSTs once per new permission ask, each with a signed
        /// link to the page for that ask (README "The page"). Needs trust in a project file.
        notify: Vec<NotifyTarget>,
        /// MCP servers, OpenCode's V1 or V2 form.
        mcp: Mcp,
        /// The sandbox every local (stdio) MCP server runs in unless its entry has its
        /// own `sandbox` (same shape as `sandbox`; default off). README "Sandboxed servers".
        mcp_sandbox: Sandbox,
    }
    ignored {
        /// OpenCode: default shell (toolgate's bash tool always runs bash).
        shell,
        /// OpenCode V1: log level.
        log_level as "logLevel",
        /// OpenCode V1: `opencode serve` settings.
        server,
        /// OpenCode V1: slash commands.
        command,
        /// OpenCode V2: slash commands.
        commands,
        /// OpenCode: extra skill folders (toolgate's `skill` tool has its own directories).
        skills,
        /// OpenCode V1: named references.
        reference,
        /// OpenCode V2: named references.
        references,
        /// OpenCode: file watcher.
        watcher,
        /// OpenCode V1: snapshots.
        snapshot,
        /// OpenCode V2: snapshots.
        snapshots,
        /// OpenCode V1: plugins.
        plugin,
        /// OpenCode V2: plugins.
        plugins,
        /// OpenCode: session sharing.
        share,
        /// OpenCode V1: deprecated sharing switch.
        autoshare,
        /// OpenCode V1: updates.
        autoupdate,
        /// OpenCode V2: updates.
        update,
        /// OpenCode V1: providers turned off.
        disabled_providers,
        /// OpenCode V1: the only providers turned on.
        enabled_providers,
        /// OpenCode: the model.
        model,
        /// OpenCode V1: the small model.
        small_model,
        /// OpenCode: the user name shown.
        username,
        /// OpenCode V1: providers.
        provider,
        /// OpenCode V2: providers.
        providers,
        /// OpenCode: formatters.
        formatter,
        /// OpenCode: language servers.
        lsp,
        /// OpenCode: instruction files.
        instructions,
        /// OpenCode V1: deprecated layout.
        layout,
        /// OpenCode V1: attachments.
        attachment,
        /// OpenCode V2: media.
        media,
        /// OpenCode: enterprise sharing service.
        enterprise,
        /// OpenCode: compaction.
        compaction,
        /// OpenCode: experimental settings.
        experimental,
        /// OpenCode V2: session warming.
        warming,
        /// OpenCode V1: subagent depth.
        subagent_depth,
        /// OpenCode V1: theme (moved to tui.json).
        theme,
        /// OpenCode V1: key bindings (moved to tui.json).
        keybinds,
        /// OpenCode V1: terminal UI (moved to tui.json).
        tui,
    }
}

/// `tool_output`: where output is cut (spec §3.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(expecting = "an object")]
pub struct ToolOutput {
    /// Lines kept before the rest is spilled (default 2000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_lines: Option<PositiveInt>,
    /// Bytes kept before the rest is spilled (default 51200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<PositiveInt>,
}

/// `redaction`: secrets replaced by `[REDACTED:<kind>]` in every tool's output. The
/// values of secrets toolgate knows are always redacted; this switches the well-known
/// credential formats.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(expecting = "an object")]
pub struct Redaction {
    /// Well-known credential formats too: AWS access key ids and secret keys, GitHub,
    /// GitLab, Slack, Google, OpenAI, Anthropic, Stripe and npm tokens, JWTs, private key
    /// blocks (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential_formats: Option<Flag>,
}

/// `audit`: how much of the audit log is kept. The log and its rotated copies hold at
/// most `max_bytes` in all over `files` files, and a rotated file older than
/// `max_age_days` is removed at the next rotation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(expecting = "an object")]
pub struct Audit {
    /// The most bytes kept over every file (default 62914560, 60 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<PositiveInt>,
    /// How many files: the log and its rotated copies (default 6, at least 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<PositiveInt>,
    /// Rotated files older than this many days are removed (default 90).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age_days: Option<PositiveInt>,
}

/// `webfetch`: which addresses it may reach.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(expecting = "an object")]
pub struct Webfetch {
    /// Loopback, private and link-local addresses too (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_private_network: Option<Flag>,
    /// Hosts allowed although they resolve to such addresses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_hosts: Option<HostList>,
}

/// `websearch`: `false` (OpenCode V2) turns it off, or its settings.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Websearch {
    /// `false`: no websearch tool.
    Off(bool),
    /// The provider and endpoints.
    Settings(WebsearchSettings),
}

/// The websearch settings.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(expecting = "an object")]
pub struct WebsearchSettings {
    /// `exa` or `parallel` (OpenCode's `random` and other ids choose none: the first with a
    /// key in the environment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Exa's endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exa_url: Option<HttpUrl>,
    /// Parallel's endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_url: Option<HttpUrl>,
    /// OpenCode V2's per-provider settings: accepted, not used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub providers: Option<Value>,
}

struct WebsearchVisitor;

impl<'de> Visitor<'de> for WebsearchVisitor {
    type Value = Websearch;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("false or an object")
    }

    fn visit_bool<E: serde::de::Error>(self, on: bool) -> Result<Websearch, E> {
        if on {
            return Err(E::custom("expected false or an object, found true"));
        }
        Ok(Websearch::Off(false))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Websearch, A::Error> {
        WebsearchSettings::deserialize(MapAccessDeserializer::new(map)).map(Websearch::Settings)
    }
}

impl<'de> Deserialize<'de> for Websearch {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(WebsearchVisitor)
    }
}

impl JsonSchema for Websearch {
    fn schema_name() -> Cow<'static, str> {
        "Websearch".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let settings = generator.subschema_for::<WebsearchSettings>();
        json_schema!({"anyOf": [{"const": false}, settings]})
    }
}

/// `sandbox`: the bash sandbox.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(expecting = "an object")]
pub struct Sandbox {
    /// `off` (default), `workspace-write` or `read-only`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<SandboxMode>,
    /// The host's network (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Flag>,
    /// More directories where commands may write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writable: Option<DirList>,
    /// Refuse to run bash where the kernel cannot sandbox it (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Flag>,
    /// Exec-time enforcement: every program a command executes is checked against the
    /// rules, not only the analysed line (default true; a managed `true` holds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enforce_exec: Option<Flag>,
}

/// `shell_env`: the environment bash commands get (toolgate's own secrets never reach
/// them, whatever this says).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(expecting = "an object")]
pub struct ShellEnv {
    /// `all` (default), `core` or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inherit: Option<Inherit>,
    /// Name patterns (`*`, `?`, any case) left out; default `["*_TOKEN", "*_KEY", "*SECRET*"]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude: Option<Vec<String>>,
    /// Variables set or replaced, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<IndexMap<String, String>>,
}

/// One `notify` entry: where to POST, and the JSON to send.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(expecting = "an object with a url")]
pub struct NotifyTarget {
    /// Where the JSON is POSTed (`http://` or `https://`).
    pub url: HttpUrl,
    /// The JSON body: every string in it has `{id}`, `{session}`, `{action}`,
    /// `{resources}`, `{command}`, `{link}` and `{text}` (one line saying it all) replaced;
    /// default `{"id", "session", "action", "resources", "link", "text"}`. Slack:
    /// `{"text": "{text}"}`; ntfy (JSON publishing): `{"topic": "t", "message": "{text}",
    /// "click": "{link}"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<Value>,
    /// Extra request headers (`Authorization` for a Matrix or ntfy token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<IndexMap<String, String>>,
}

/// `shells`: the limits of background processes (README "Background processes").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(expecting = "an object")]
pub struct Shells {
    /// Live background processes per session (default 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_per_session: Option<PositiveInt>,
    /// Live background processes of all sessions of one server (default 64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total: Option<PositiveInt>,
    /// Bytes of each process's output kept in memory, the newest (default 1048576).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<PositiveInt>,
    /// Bytes of each process's output written to its log file at most (default 67108864).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_bytes: Option<PositiveInt>,
}
