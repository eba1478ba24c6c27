//! Leaf values with their own checks: each reports a wrong value as
//! `expected …, found …`, the one form every configuration error has.

use std::borrow::Cow;
use std::num::NonZeroU64;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::decode::expected;

/// A closed set of strings, with the spelling a config uses for each.
macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident, $expected:literal, { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, JsonSchema)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// The config spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }

            /// Parses the config spelling.
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $($text => Some(Self::$variant),)+
                    _ => None,
                }
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let value = Value::deserialize(deserializer)?;
                value
                    .as_str()
                    .and_then(Self::parse)
                    .ok_or_else(|| D::Error::custom(expected($expected, &value)))
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

string_enum!(
    /// What a rule does (spec §4.1).
    Effect, "\"allow\", \"ask\", \"deny\" or \"audit\"", {
        /// Run without asking.
        Allow = "allow",
        /// Ask a person.
        Ask = "ask",
        /// Refuse.
        Deny = "deny",
        /// Run without asking, and flag the decision in the audit log for review.
        Audit = "audit",
    }
);

string_enum!(
    /// How an agent may be used (spec §4.10).
    AgentMode, "\"primary\", \"subagent\" or \"all\"", {
        /// A top-level agent a user talks to.
        Primary = "primary",
        /// Only started by another agent.
        Subagent = "subagent",
        /// Either.
        All = "all",
    }
);

string_enum!(
    /// The bash sandbox's mode (README "The sandbox").
    SandboxMode, "\"off\", \"read-only\" or \"workspace-write\"", {
        /// No sandbox (the default).
        Off = "off",
        /// Writes only under the project, the temp directory and `writable`.
        WorkspaceWrite = "workspace-write",
        /// No writes at all.
        ReadOnly = "read-only",
    }
);

string_enum!(
    /// Which variables the shell inherits (`shell_env.inherit`).
    Inherit, "\"all\", \"core\" or \"none\"", {
        /// Every variable (the default).
        All = "all",
        /// The core set: `HOME`, `PATH`, `USER`, the locale, the temp directory, ….
        Core = "core",
        /// Nothing but `set`.
        None = "none",
    }
);

/// A positive integer (`tool_output.max_lines`, `doom_loop_threshold`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct PositiveInt(pub NonZeroU64);

impl PositiveInt {
    /// The value.
    pub fn get(self) -> u64 {
        self.0.get()
    }
}

impl<'de> Deserialize<'de> for PositiveInt {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        value
            .as_u64()
            .and_then(NonZeroU64::new)
            .map(PositiveInt)
            .ok_or_else(|| D::Error::custom(expected("a positive integer", &value)))
    }
}

impl JsonSchema for PositiveInt {
    fn schema_name() -> Cow<'static, str> {
        "PositiveInt".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "minimum": 1})
    }
}

/// A positive number of milliseconds (MCP timeouts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Millis(pub NonZeroU64);

impl<'de> Deserialize<'de> for Millis {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        value
            .as_u64()
            .and_then(NonZeroU64::new)
            .map(Millis)
            .ok_or_else(|| D::Error::custom(expected("a positive number of milliseconds", &value)))
    }
}

impl JsonSchema for Millis {
    fn schema_name() -> Cow<'static, str> {
        "Milliseconds".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "integer", "minimum": 1, "description": "Milliseconds."})
    }
}

/// An `http://` or `https://` URL.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct HttpUrl(pub String);

impl<'de> Deserialize<'de> for HttpUrl {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match value.as_str() {
            Some(url) if url.starts_with("http://") || url.starts_with("https://") => Ok(HttpUrl(url.to_string())),
            _ => Err(D::Error::custom(expected("an http:// or https:// URL", &value))),
        }
    }
}

impl JsonSchema for HttpUrl {
    fn schema_name() -> Cow<'static, str> {
        "HttpUrl".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "string", "pattern": "^https?://"})
    }
}

/// A list of host names (`webfetch.allowed_hosts`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct HostList(pub Vec<String>);

impl<'de> Deserialize<'de> for HostList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match &value {
            Value::Array(items) if items.iter().all(Value::is_string) => Ok(HostList(
                items.iter().filter_map(Value::as_str).map(str::to_string).collect(),
            )),
            _ => Err(D::Error::custom(expected("a list of host names", &value))),
        }
    }
}

impl JsonSchema for HostList {
    fn schema_name() -> Cow<'static, str> {
        "HostList".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "array", "items": {"type": "string"}})
    }
}

/// A list of directories (`sandbox.writable`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct DirList(pub Vec<String>);

impl<'de> Deserialize<'de> for DirList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        match &value {
            Value::Array(items) if items.iter().all(Value::is_string) => Ok(DirList(
                items.iter().filter_map(Value::as_str).map(str::to_string).collect(),
            )),
            _ => Err(D::Error::custom(expected("a list of directories", &value))),
        }
    }
}

impl JsonSchema for DirList {
    fn schema_name() -> Cow<'static, str> {
        "DirList".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "array", "items": {"type": "string"}})
    }
}

/// `true` or `false`, reported as such.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        value
            .as_bool()
            .map(Flag)
            .ok_or_else(|| D::Error::custom(expected("true or false", &value)))
    }
}

impl JsonSchema for Flag {
    fn schema_name() -> Cow<'static, str> {
        "Flag".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({"type": "boolean"})
    }
}
