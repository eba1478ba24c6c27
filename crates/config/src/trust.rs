//! Trust on first use for a project's files (README "Configuration", "Trusted project
//! files"): the rules of a file found on the project walk apply as in OpenCode, but the
//! parts that start programs or weaken the kernel's hold on commands apply only once the
//! person has trusted that file's exact content. This module says which parts those are
//! ([`Loaded::untrusted`]) and takes them out of a layer ([`Loaded::withhold`]); where the
//! trust is kept and how it is given is the front end's.
//!
//! The parts, each judged against the user's own layers (every layer that is not the
//! project's, managed ones included), never against another project file:
//!
//! - every MCP server that would start (`mcp`), local or remote;
//! - `sandbox.mode` below the user's mode (`off` < `workspace-write` < `read-only`);
//! - `sandbox.required: false` where the user's is `true`;
//! - `sandbox.enforce_exec: false` where the user's is not `false` (its default is on);
//! - `sandbox.network: true` and `sandbox.writable` directories the user's does not list;
//! - `shell_env.set` and `shell_env.exclude` (what commands run with: `PATH`, `LD_PRELOAD`,
//!   secrets no longer held back), and a `shell_env.inherit` wider than the user's;
//! - `notify` (webhooks): every ask's command and paths would go to its URLs, with a
//!   link that answers the ask;
//! - `redaction.credential_formats: false` (credentials in outputs would reach the model).

use std::fmt;
use std::path::PathBuf;

use serde_json::Value;
use sha2::Digest;

use crate::decode::decode;
use crate::error::{ConfigError, key_path};
use crate::load::{Loaded, deep_merge};

/// The SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let digest = sha2::Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for byte in digest.iter() {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// One part of a project file that applies only once the file is trusted.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Gated {
    /// Its key path (`mcp.calc`, `mcp.servers.calc`, `sandbox.mode`, `shell_env.set`).
    pub path: String,
    /// The MCP server's name, for an `mcp` part.
    pub server: Option<String>,
    /// The value as written (after `{env:…}`).
    pub value: Value,
    /// The keys from the top of the file to the part, to take it out.
    keys: Vec<String>,
}

impl Gated {
    fn new(keys: &[&str], value: &Value) -> Gated {
        Gated {
            path: keys.iter().fold(String::new(), |path, key| key_path(&path, key)),
            server: None,
            value: value.clone(),
            keys: keys.iter().map(|key| key.to_string()).collect(),
        }
    }
}

/// Short, one line: `mcp server "calc"`, `sandbox.mode "off"`, `shell_env.set PATH, FOO`.
impl fmt::Display for Gated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.server, &self.value) {
            (Some(name), _) => write!(f, "mcp server {name:?}"),
            (None, Value::Object(map)) => {
                let names: Vec<&str> = map.keys().map(String::as_str).collect();
                write!(f, "{} {}", self.path, names.join(", "))
            }
            (None, value) => write!(f, "{} {value}", self.path),
        }
    }
}

/// A project file with parts that need trust.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Untrusted {
    /// Its index in [`Loaded::layers`].
    pub layer: usize,
    /// The file.
    pub path: PathBuf,
    /// The SHA-256 of its content as read ([`crate::Layer::sha256`]).
    pub sha256: String,
    /// The parts, in file order.
    pub parts: Vec<Gated>,
}

/// `sandbox.mode`'s strictness.
fn rank(mode: &str) -> u8 {
    match mode {
        "read-only" => 2,
        "workspace-write" => 1,
        _ => 0,
    }
}

/// `shell_env.inherit`'s width.
fn width(inherit: &str) -> u8 {
    match inherit {
        "none" => 0,
        "core" => 1,
        _ => 2,
    }
}

impl Loaded {
    /// The user's own `sandbox` and `shell_env`, merged: what a project file is judged
    /// against.
    fn baseline(&self, key: &str) -> Value {
        let mut merged = Value::Object(serde_json::Map::new());
        for layer in self.all().filter(|layer| !layer.project) {
            if let Some(value) = layer.raw.get(key) {
                deep_merge(&mut merged, value);
            }
        }
        merged
    }

    /// Every project file with parts that need trust, in layer order.
    pub fn untrusted(&self) -> Vec<Untrusted> {
        let sandbox = self.baseline("sandbox");
        let shell_env = self.baseline("shell_env");
        let mut out = Vec::new();
        for (index, layer) in self.layers.iter().enumerate() {
            let (true, Some(path), Some(sha256)) = (layer.project, &layer.path, &layer.sha256) else {
                continue;
            };
            let mut parts = Vec::new();
            if let Some(mcp) = &layer.document.mcp {
                let v2 = mcp
                    .entries()
                    .is_ok_and(|entries| entries.iter().any(|e| e.path.starts_with("mcp.servers.")));
                for entry in mcp.entries().unwrap_or_default() {
                    if !entry.enabled || entry.launch == crate::McpLaunch::Off {
                        continue;
                    }
                    let keys: Vec<&str> = if v2 {
                        vec!["mcp", "servers", &entry.name]
                    } else {
                        vec!["mcp", &entry.name]
                    };
                    let value = lookup(&layer.raw, &keys);
                    let mut part = Gated::new(&keys, &value);
                    part.server = Some(entry.name.clone());
                    parts.push(part);
                }
            }
            if let Some(Value::Object(own)) = layer.raw.get("sandbox") {
                for (key, value) in own {
                    let user = sandbox.get(key.as_str());
                    let lowers = match (key.as_str(), value) {
                        ("mode", Value::String(mode)) => {
                            rank(mode) < rank(user.and_then(Value::as_str).unwrap_or("off"))
                        }
                        ("required", Value::Bool(false)) => user == Some(&Value::Bool(true)),
                        ("enforce_exec", Value::Bool(false)) => user != Some(&Value::Bool(false)),
                        ("network", Value::Bool(true)) => user != Some(&Value::Bool(true)),
                        ("writable", Value::Array(dirs)) => {
                            let known = user.and_then(Value::as_array);
                            dirs.iter().any(|dir| !known.is_some_and(|known| known.contains(dir)))
                        }
                        _ => false,
                    };
                    if lowers {
                        parts.push(Gated::new(&["sandbox", key], value));
                    }
                }
            }
            if let Some(Value::Object(own)) = layer.raw.get("shell_env") {
                for (key, value) in own {
                    let widens = match (key.as_str(), value) {
                        ("set", Value::Object(set)) => !set.is_empty(),
                        ("exclude", _) => shell_env.get("exclude") != Some(value),
                        ("inherit", Value::String(inherit)) => {
                            width(inherit) > width(shell_env.get("inherit").and_then(Value::as_str).unwrap_or("all"))
                        }
                        _ => false,
                    };
                    if widens {
                        parts.push(Gated::new(&["shell_env", key], value));
                    }
                }
            }
            if let Some(off @ Value::Bool(false)) = layer.raw.get("redaction").and_then(|r| r.get("credential_formats"))
            {
                parts.push(Gated::new(&["redaction", "credential_formats"], off));
            }
            if let Some(notify @ Value::Array(targets)) = layer.raw.get("notify")
                && !targets.is_empty()
            {
                parts.push(Gated::new(&["notify"], notify));
            }
            if !parts.is_empty() {
                out.push(Untrusted {
                    layer: index,
                    path: path.clone(),
                    sha256: sha256.clone(),
                    parts,
                });
            }
        }
        out
    }

    /// Takes `untrusted`'s parts out of its layer: what it said there no longer applies.
    /// Call before [`Loaded::settings`] and [`Loaded::mcp`].
    pub fn withhold(&mut self, untrusted: &Untrusted) -> Result<(), ConfigError> {
        let Some(layer) = self.layers.get_mut(untrusted.layer) else {
            return Ok(());
        };
        for part in &untrusted.parts {
            remove(&mut layer.raw, &part.keys);
        }
        // Taking keys out of objects leaves a document that decodes as the whole one did.
        layer.document = decode(layer.raw.clone(), "").map_err(|e| e.in_source(&layer.source))?;
        Ok(())
    }
}

/// Removes the value at `keys` (if there is one).
fn remove(value: &mut Value, keys: &[String]) {
    let Value::Object(map) = value else { return };
    match keys {
        [] => {}
        [last] => {
            map.shift_remove(last.as_str());
        }
        [first, rest @ ..] => {
            if let Some(next) = map.get_mut(first.as_str()) {
                remove(next, rest);
            }
        }
    }
}

fn lookup(raw: &Value, keys: &[&str]) -> Value {
    keys.iter()
        .try_fold(raw, |value, key| value.get(*key))
        .cloned()
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use crate::{Inputs, load};

    fn project(global: &str, own: &str) -> (tempfile::TempDir, crate::Loaded) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("p/.git")).unwrap();
        std::fs::create_dir_all(dir.path().join("g")).unwrap();
        std::fs::write(dir.path().join("g/toolgate.json"), global).unwrap();
        std::fs::write(dir.path().join("p/opencode.json"), own).unwrap();
        let loaded = load(&Inputs::new(dir.path().join("p")).toolgate_dir(dir.path().join("g"))).unwrap();
        (dir, loaded)
    }

    fn parts(global: &str, own: &str) -> Vec<String> {
        let (_dir, loaded) = project(global, own);
        loaded
            .untrusted()
            .iter()
            .flat_map(|u| u.parts.iter().map(ToString::to_string))
            .collect()
    }

    #[test]
    fn a_project_files_webhooks_need_trust_and_the_users_do_not() {
        let hooks = r#"{"notify": [{"url": "https://hooks.example/x", "template": {"text": "{text}"}}]}"#;
        let found = parts("{}", hooks);
        assert_eq!(found.len(), 1);
        assert!(found[0].starts_with("notify [{"), "{found:?}");
        assert!(parts(hooks, "{}").is_empty());
        assert!(parts("{}", r#"{"notify": []}"#).is_empty());
        let (_dir, mut loaded) = project("{}", hooks);
        let untrusted = loaded.untrusted();
        loaded.withhold(&untrusted[0]).unwrap();
        assert_eq!(loaded.settings().unwrap().notify, None);
    }

    #[test]
    fn only_what_starts_programs_or_weakens_the_sandbox_needs_trust() {
        let servers = r#"{"mcp": {"a": {"type": "local", "command": ["x"]}, "b": {"type": "remote", "url": "https://h"},
            "c": {"enabled": false}, "d": {"command": ["y"], "enabled": false}}}"#;
        assert_eq!(parts("{}", servers), ["mcp server \"a\"", "mcp server \"b\""]);
        let v2 = r#"{"mcp": {"servers": {"a": {"command": ["x"]}}}}"#;
        assert_eq!(parts("{}", v2), ["mcp server \"a\""]);
        let global = r#"{"sandbox": {"mode": "workspace-write", "required": true}}"#;
        assert_eq!(
            parts(global, r#"{"sandbox": {"mode": "off", "required": false}}"#),
            ["sandbox.mode \"off\"", "sandbox.required false"]
        );
        // Stricter than the user's, or the same: applies as written.
        assert!(
            parts(
                global,
                r#"{"sandbox": {"mode": "read-only", "required": true, "network": false}}"#
            )
            .is_empty()
        );
        assert!(parts("{}", r#"{"sandbox": {"mode": "off"}, "permission": {"bash": "allow"}}"#).is_empty());
        assert_eq!(
            parts(
                "{}",
                r#"{"sandbox": {"enforce_exec": false, "network": true, "writable": ["~"]}}"#
            ),
            [
                "sandbox.enforce_exec false",
                "sandbox.network true",
                "sandbox.writable [\"~\"]"
            ]
        );
        assert_eq!(
            parts(
                "{}",
                r#"{"shell_env": {"set": {"PATH": "/evil", "LD_PRELOAD": "x"}, "exclude": [], "inherit": "core"}}"#
            ),
            ["shell_env.set PATH, LD_PRELOAD", "shell_env.exclude []"]
        );
        assert_eq!(
            parts(
                r#"{"shell_env": {"inherit": "none"}}"#,
                r#"{"shell_env": {"inherit": "core"}}"#
            ),
            ["shell_env.inherit \"core\""]
        );
    }

    #[test]
    fn withholding_takes_the_parts_out_and_keeps_the_rest() {
        let (_dir, mut loaded) = project(
            r#"{"sandbox": {"mode": "read-only"}}"#,
            r#"{"mcp": {"a": {"command": ["x"]}}, "sandbox": {"mode": "off", "network": false},
               "permission": {"bash": {"rm *": "deny"}}}"#,
        );
        let untrusted = loaded.untrusted();
        assert_eq!(untrusted.len(), 1);
        assert_eq!(untrusted[0].sha256.len(), 64);
        loaded.withhold(&untrusted[0]).unwrap();
        assert!(loaded.mcp().is_empty());
        let settings = loaded.settings().unwrap();
        assert_eq!(settings.sandbox.unwrap().mode, Some(crate::SandboxMode::ReadOnly));
        assert!(loaded.layers[1].rules.iter().any(|rule| rule.resource == "rm *"));
        assert!(loaded.untrusted().is_empty());
    }

    #[test]
    fn the_users_own_files_need_no_trust() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("p/.git")).unwrap();
        std::fs::create_dir_all(dir.path().join("g")).unwrap();
        std::fs::write(
            dir.path().join("g/toolgate.json"),
            r#"{"mcp": {"a": {"command": ["x"]}}, "shell_env": {"set": {"A": "1"}}}"#,
        )
        .unwrap();
        let explicit = dir.path().join("extra.json");
        std::fs::write(&explicit, r#"{"sandbox": {"enforce_exec": false}}"#).unwrap();
        let inputs = Inputs::new(dir.path().join("p"))
            .toolgate_dir(dir.path().join("g"))
            .explicit(Some(explicit));
        assert!(load(&inputs).unwrap().untrusted().is_empty());
    }
}
