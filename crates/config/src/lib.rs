//! toolgate's configuration: one set of typed config files in OpenCode's format (V1 and
//! V2), where they are found and how they layer, the JSON Schema, and the one error type.
//!
//! [`load`] reads every layer for a directory ([`Inputs`]: the directory, the global
//! directories, `--config`, the environment): each file is decoded as a [`Document`],
//! its rules become plain [`RuleSpec`]s in the order that decides (the last matching rule
//! wins, spec §4.9), its agent blocks [`AgentSpec`]s, and unknown keys [`Warning`]s. A
//! file that cannot be read whole is a [`ConfigError`], never a partial set of rules.
//!
//! ```
//! use toolgate_config::{Effect, Inputs, load};
//!
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::create_dir(dir.path().join(".git")).unwrap();
//! std::fs::write(
//!     dir.path().join("opencode.json"),
//!     r#"{"permissions": [{"action": "shell", "resource": "git push *", "effect": "deny"}], "colour": 1}"#,
//! )
//! .unwrap();
//! std::fs::create_dir(dir.path().join("sub")).unwrap();
//! let loaded = load(&Inputs::new(dir.path().join("sub"))).unwrap();
//! let rule = &loaded.layers[0].rules[0];
//! assert_eq!((rule.action.as_str(), rule.resource.as_str(), rule.effect), ("shell", "git push *", Effect::Deny));
//! assert_eq!(loaded.warnings[0].path, "colour");
//! ```

mod agent;
mod decode;
mod document;
mod error;
mod load;
mod mcp;
mod rules;
mod schema;
mod trust;
mod values;
mod vars;

pub use agent::{AgentConfig, AgentSpec};
pub use document::{
    Audit, Document, NotifyTarget, OPENCODE_IGNORED_KEYS, Redaction, Sandbox, ShellEnv, Shells, ToolOutput, Webfetch,
    Websearch, WebsearchSettings,
};
pub use error::{ConfigError, ErrorKind, Warning, key_path};
pub use load::{
    Env, Inputs, Layer, Loaded, RulePath, SourceKind, deep_merge, load, opencode_global_dir, opencode_managed_dir,
    rule_paths,
};
pub use mcp::{CommandLine, Mcp, McpEntry, McpKind, McpLaunch, McpOAuth, McpServer, McpTimeout, McpTimeouts};
pub use rules::{
    ActionRules, MAX_PATTERN_BYTES, Permission, RuleItem, RuleSpec, Tools, expand_home, permission_value_rules,
};
pub use schema::{SCHEMA_URL, schema};
pub use trust::{Gated, Untrusted, sha256_hex};
pub use values::{AgentMode, DirList, Effect, Flag, HostList, HttpUrl, Inherit, Millis, PositiveInt, SandboxMode};
pub use vars::{is_toolgate_secret, substitute_env};

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
