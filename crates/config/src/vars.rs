//! `{env:VAR}` in config files, as OpenCode substitutes it: every `{env:NAME}` in a string
//! (a value or a key, so a rule's pattern may use one) becomes the variable's value, or
//! nothing when it is unset. toolgate substitutes in the decoded strings rather than the
//! file's text, so a value holding `"` or a newline stays one string and cannot add keys.
//!
//! A project's file (found on the walk from the worktree root, README "Configuration")
//! never gets toolgate's own secrets ([`is_toolgate_secret`]): the reference becomes empty
//! with a warning, so a repository cannot hand the server token or the websearch keys to
//! an MCP server or a command. The user's own files may use them (an MCP server of the
//! websearch provider's, say).

use serde_json::Value;

use crate::error::key_path;

/// toolgate's own variables (`TOOLGATE_*`, such as the server's bearer token) and the
/// websearch keys (`EXA_API_KEY`, `PARALLEL_API_KEY`), in any case (as the shell's
/// environment filter reads them): never substituted in a project's file.
pub fn is_toolgate_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    upper.starts_with("TOOLGATE_") || upper == "EXA_API_KEY" || upper == "PARALLEL_API_KEY"
}

/// Replaces every `{env:NAME}` in `text` with `lookup(NAME)` (empty when unset, as OpenCode
/// does; the name is taken as written, up to the first `}`). With `project`, toolgate's
/// secrets become empty too; the names refused are returned, in order.
///
/// ```
/// let lookup = |name: &str| (name == "TOKEN").then(|| "s3cret".to_string());
/// let (text, refused) = toolgate_config::substitute_env("Bearer {env:TOKEN}{env:NOPE}", lookup, true);
/// assert_eq!((text.as_str(), refused.len()), ("Bearer s3cret", 0));
/// let (text, refused) = toolgate_config::substitute_env("{env:TOOLGATE_SERVER_TOKEN}", |_| Some("x".into()), true);
/// assert_eq!((text.as_str(), refused), ("", vec!["TOOLGATE_SERVER_TOKEN".to_string()]));
/// // The user's own file may name them.
/// let (text, _) = toolgate_config::substitute_env("{env:EXA_API_KEY}", |_| Some("k".into()), false);
/// assert_eq!(text, "k");
/// ```
pub fn substitute_env(text: &str, lookup: impl Fn(&str) -> Option<String>, project: bool) -> (String, Vec<String>) {
    let mut out = String::with_capacity(text.len());
    let mut refused = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{env:") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 5..];
        match after.find('}') {
            Some(end) if end > 0 => {
                let name = &after[..end];
                if project && is_toolgate_secret(name) {
                    refused.push(name.to_string());
                } else {
                    out.push_str(&lookup(name).unwrap_or_default());
                }
                rest = &after[end + 1..];
            }
            // `{env:}` names nothing (OpenCode's pattern needs one character): kept as written.
            Some(_) => {
                out.push_str("{env:}");
                rest = &after[1..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    (out, refused)
}

/// Substitutes in every string of `value` (keys too); each refused name is recorded with
/// its key path.
pub(crate) fn substitute_value(
    value: &mut Value,
    path: &str,
    project: bool,
    lookup: &dyn Fn(&str) -> Option<String>,
    refused: &mut Vec<(String, String)>,
) {
    match value {
        Value::String(text) if text.contains("{env:") => {
            let (new, names) = substitute_env(text, lookup, project);
            refused.extend(names.into_iter().map(|name| (path.to_string(), name)));
            *text = new;
        }
        Value::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                substitute_value(item, &format!("{path}[{index}]"), project, lookup, refused);
            }
        }
        Value::Object(map) => {
            let old = std::mem::take(map);
            for (key, mut item) in old {
                let key = if key.contains("{env:") {
                    let (new, names) = substitute_env(&key, lookup, project);
                    refused.extend(names.into_iter().map(|name| (key_path(path, &key), name)));
                    new
                } else {
                    key
                };
                substitute_value(&mut item, &key_path(path, &key), project, lookup, refused);
                map.insert(key, item);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strings_and_keys_are_substituted_and_secrets_refused_in_a_project() {
        let lookup = |name: &str| match name {
            "HOME_DIR" => Some("/home/me".to_string()),
            "QUOTE" => Some("a\", \"mcp\": {".to_string()),
            "TOOLGATE_SERVER_TOKEN" | "EXA_API_KEY" => Some("secret".to_string()),
            _ => None,
        };
        let mut value = json!({
            "permission": {"read": {"{env:HOME_DIR}/.ssh/**": "deny"}},
            "x": ["{env:QUOTE}", "{env:UNSET}!", "{env:}", "{env:EXA_API_KEY}"],
            "y": {"z": "Bearer {env:TOOLGATE_SERVER_TOKEN}"},
        });
        let mut refused = Vec::new();
        substitute_value(&mut value, "", true, &lookup, &mut refused);
        assert_eq!(value["permission"]["read"]["/home/me/.ssh/**"], "deny");
        assert_eq!(value["x"], json!(["a\", \"mcp\": {", "!", "{env:}", ""]));
        assert_eq!(value["y"]["z"], "Bearer ");
        assert_eq!(
            refused,
            vec![
                ("x[3]".to_string(), "EXA_API_KEY".to_string()),
                ("y.z".to_string(), "TOOLGATE_SERVER_TOKEN".to_string())
            ]
        );
        let mut own = json!({"y": "{env:TOOLGATE_SERVER_TOKEN}"});
        let mut refused = Vec::new();
        substitute_value(&mut own, "", false, &lookup, &mut refused);
        assert_eq!((own["y"].as_str(), refused.len()), (Some("secret"), 0));
    }
}
