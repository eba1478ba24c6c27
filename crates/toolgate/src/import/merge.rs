//! The imported block as JSONC text, and its splice into the project's `toolgate.json`:
//! the file's own text, comments and order stay as they are; the imported rules are
//! appended to its `permissions` list (or a new one), the servers to its `mcp` object.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use jsonc_parser::ast;

use super::Imported;

/// The file the import merges into: the project's `toolgate.json`, or its
/// `toolgate.jsonc` when only that one exists.
pub(super) fn target(dir: &Path) -> PathBuf {
    let json = dir.join("toolgate.json");
    let jsonc = dir.join("toolgate.jsonc");
    if !json.exists() && jsonc.exists() { jsonc } else { json }
}

/// The merged text and what was left out of it.
pub(super) struct Merged {
    pub(super) text: String,
    /// The number of servers added.
    pub(super) servers: usize,
    /// Servers left out because the file already has one of that name.
    pub(super) skipped: Vec<String>,
}

fn quote(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

/// A comment's text on one line (a newline would end the comment early).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The header comment of an imported block: where it came from, and what it lacks.
fn header(imported: &Imported, agent: &str, indent: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{indent}// Imported by `toolgate import {agent}` from:");
    for source in &imported.sources {
        let _ = writeln!(out, "{indent}//   {}", one_line(&source.display().to_string()));
    }
    if !imported.notes.is_empty() {
        let _ = writeln!(
            out,
            "{indent}// Not expressed, or expressed more strictly than {agent} has it:"
        );
        for note in &imported.notes {
            let _ = writeln!(out, "{indent}//   - {}", one_line(note));
        }
    }
    out
}

/// The rules as list items, one a line, each with its origin as a comment. Every item
/// but the last ends in a comma.
fn rule_items(imported: &Imported, indent: &str) -> String {
    let mut out = String::new();
    let count = imported.rules.len();
    for (index, rule) in imported.rules.iter().enumerate() {
        let comma = if index + 1 < count { "," } else { "" };
        let _ = writeln!(
            out,
            "{indent}{{\"action\": {}, \"resource\": {}, \"effect\": \"{}\"}}{comma} // {}",
            quote(&rule.action),
            quote(&rule.resource),
            rule.effect.as_str(),
            one_line(&rule.why)
        );
    }
    out
}

/// The servers as object members, each with its origin as a comment above it.
fn server_members(servers: &[&super::Server], indent: &str) -> String {
    let mut out = String::new();
    for (index, server) in servers.iter().enumerate() {
        let comma = if index + 1 < servers.len() { "," } else { "" };
        let _ = writeln!(out, "{indent}// {}", one_line(&server.why));
        let _ = writeln!(out, "{indent}{}: {}{comma}", quote(&server.name), server.value);
    }
    out
}

/// The imported block as a config file of its own (what `toolgate import` prints).
pub(super) fn document(imported: &Imported, agent: &str) -> String {
    // The header inside the list, as a merge puts it: the same import again is then
    // found word for word, whichever way the file began.
    let mut out = String::from("{\n  \"permissions\": [\n");
    out.push_str(&header(imported, agent, "    "));
    out.push_str(&rule_items(imported, "    "));
    out.push_str("  ]");
    if imported.servers.is_empty() {
        out.push('\n');
    } else {
        out.push_str(",\n  \"mcp\": {\n");
        let servers: Vec<&super::Server> = imported.servers.iter().collect();
        out.push_str(&server_members(&servers, "    "));
        out.push_str("  }\n");
    }
    out.push_str("}\n");
    out
}

/// Why a file cannot take the import.
#[derive(Debug, thiserror::Error)]
pub(super) enum MergeError {
    #[error("cannot be read as JSONC: {0}")]
    Parse(String),
    #[error("is not a JSON object")]
    NotObject,
    #[error("`{0}` is not {1}; fix it or move it aside before importing")]
    Shape(&'static str, &'static str),
}

/// Where a comma after the last element ends, if one follows it before `close` (outside
/// comments).
fn comma_after(text: &str, from: usize, close: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut at = from;
    while at < close {
        match bytes[at] {
            b',' => return Some(at + 1),
            b'/' if bytes.get(at + 1) == Some(&b'/') => {
                while at < close && bytes[at] != b'\n' {
                    at += 1;
                }
            }
            b'/' if bytes.get(at + 1) == Some(&b'*') => {
                at += 2;
                while at + 1 < close && !(bytes[at] == b'*' && bytes[at + 1] == b'/') {
                    at += 1;
                }
                at += 1;
            }
            _ => {}
        }
        at += 1;
    }
    None
}

/// One insertion into the original text.
struct Insert {
    at: usize,
    text: String,
}

/// Where and how to add `members` (whole lines, the last without a comma) at the end of
/// a list or object spanning `range`, whose last element ends at `last_end`.
fn append(text: &str, range: jsonc_parser::common::Range, last_end: Option<usize>, members: &str) -> Insert {
    let close = range.end.saturating_sub(1);
    match last_end {
        Some(end) => match comma_after(text, end, close) {
            Some(after) => Insert {
                at: after,
                text: format!("\n{}", members.trim_end_matches('\n')),
            },
            None => Insert {
                at: end,
                text: format!(",\n{}", members.trim_end_matches('\n')),
            },
        },
        None => Insert {
            at: range.start + 1,
            text: format!("\n{}", members),
        },
    }
}

fn object_last_end(object: &ast::Object<'_>) -> Option<usize> {
    object.properties.last().map(|p| p.range.end)
}

/// `old` with the imported block spliced in.
pub(super) fn merge(old: &str, imported: &Imported, agent: &str) -> Result<Merged, MergeError> {
    if old.trim().is_empty() {
        return Ok(Merged {
            text: document(imported, agent),
            servers: imported.servers.len(),
            skipped: Vec::new(),
        });
    }
    let parsed = jsonc_parser::parse_to_ast(old, &Default::default(), &Default::default())
        .map_err(|error| MergeError::Parse(error.to_string()))?;
    let Some(ast::Value::Object(root)) = parsed.value else {
        return Err(MergeError::NotObject);
    };
    let block = format!("{}{}", header(imported, agent, "    "), rule_items(imported, "    "));
    let servers_there = |names: &[String]| imported.servers.iter().all(|server| names.contains(&server.name));
    let mut inserts = Vec::new();
    // Members new to the root object, added in one insertion at its end.
    let mut root_members: Vec<String> = Vec::new();
    match root.get("permissions").map(|p| &p.value) {
        Some(ast::Value::Array(list)) => {
            let last = list.elements.last().map(|e| jsonc_parser::common::Ranged::range(e).end);
            inserts.push(append(old, list.range, last, &block));
        }
        Some(_) => return Err(MergeError::Shape("permissions", "a list")),
        None => root_members.push(format!("  \"permissions\": [\n{block}  ]")),
    }
    // Servers: into `mcp.servers` (V2) when the file uses it, else `mcp` (V1); a name the
    // file has already keeps the file's server.
    let mut skipped = Vec::new();
    let (existing, place): (Vec<String>, Option<&ast::Object<'_>>) = match root.get("mcp").map(|p| &p.value) {
        Some(ast::Value::Object(mcp)) => match mcp.get("servers").map(|p| &p.value) {
            Some(ast::Value::Object(servers)) => (names(servers), Some(servers)),
            Some(_) => return Err(MergeError::Shape("mcp.servers", "an object")),
            None => (names(mcp), Some(mcp)),
        },
        Some(_) => return Err(MergeError::Shape("mcp", "an object")),
        None => (Vec::new(), None),
    };
    // The same import again (its block word for word, its servers there): nothing to add.
    if old.contains(block.trim_end_matches([',', '\n'])) && servers_there(&existing) {
        return Ok(Merged {
            text: old.to_string(),
            servers: 0,
            skipped: Vec::new(),
        });
    }
    let servers: Vec<&super::Server> = imported
        .servers
        .iter()
        .filter(|server| {
            let clash = existing.contains(&server.name);
            if clash {
                skipped.push(format!(
                    "MCP server {:?} not imported: the file has a server of that name already",
                    server.name
                ));
            }
            !clash
        })
        .collect();
    if !servers.is_empty() {
        match place {
            Some(object) => {
                let members = server_members(&servers, "    ");
                inserts.push(append(old, object.range, object_last_end(object), &members));
            }
            None => root_members.push(format!("  \"mcp\": {{\n{}  }}", server_members(&servers, "    "))),
        }
    }
    if !root_members.is_empty() {
        let members = format!("{}\n", root_members.join(",\n"));
        inserts.push(append(old, root.range, object_last_end(&root), &members));
    }
    let mut text = old.to_string();
    // From the end, so earlier offsets stay right; at one offset, in the order made.
    let mut order: Vec<usize> = (0..inserts.len()).collect();
    order.sort_by(|a, b| inserts[*b].at.cmp(&inserts[*a].at).then(b.cmp(a)));
    for index in order {
        let insert = &inserts[index];
        text.insert_str(insert.at, &insert.text);
    }
    // The result must load as JSONC, or nothing is written.
    jsonc_parser::parse_to_serde_value::<serde_json::Value>(&text, &Default::default())
        .map_err(|error| MergeError::Parse(format!("the merged file does not parse ({error})")))?;
    Ok(Merged {
        text,
        servers: servers.len(),
        skipped,
    })
}

fn names(object: &ast::Object<'_>) -> Vec<String> {
    object.properties.iter().map(|p| p.name.as_str().to_string()).collect()
}

/// Writes `text` to `path` through a file beside it and a rename, keeping the old file's
/// mode: a reader sees the old content or the new, never half of it.
pub(super) fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{name}.import-{}", std::process::id()));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&temp)?;
        if let Ok(meta) = std::fs::metadata(path) {
            file.set_permissions(meta.permissions())?;
        }
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{Effect, Rule, Server};

    fn imported() -> Imported {
        Imported {
            sources: vec![PathBuf::from("/h/.claude/settings.json")],
            rules: vec![
                Rule::new("bash", "*", Effect::Ask, "baseline"),
                Rule::new("bash", "git status *", Effect::Allow, "Bash(git status:*)"),
            ],
            servers: vec![Server {
                name: "calc".into(),
                value: serde_json::json!({"type": "local", "command": ["calc"]}),
                why: ".mcp.json".into(),
            }],
            notes: vec!["defaultMode \"plan\"".into()],
        }
    }

    fn load(text: &str) -> serde_json::Value {
        jsonc_parser::parse_to_serde_value(text, &Default::default()).unwrap()
    }

    /// A file's own rules, comments and servers stay; the import comes after them.
    #[test]
    fn existing_rules_and_comments_stay_and_the_import_comes_last() {
        let old = "{\n  // mine\n  \"permissions\": [\n    {\"action\": \"bash\", \"resource\": \"cargo *\", \"effect\": \"allow\"},\n  ],\n  \"mcp\": {\"calc\": {\"type\": \"local\", \"command\": [\"mine\"]}}\n}\n";
        let merged = merge(old, &imported(), "claude-code").unwrap();
        assert!(merged.text.contains("// mine"), "{}", merged.text);
        let value = load(&merged.text);
        let rules = value["permissions"].as_array().unwrap();
        assert_eq!(rules.len(), 3);
        assert_eq!(rules[0]["resource"], "cargo *");
        assert_eq!(rules[2]["resource"], "git status *");
        assert_eq!(value["mcp"]["calc"]["command"][0], "mine", "the file's server is kept");
        assert_eq!(merged.servers, 0);
        assert_eq!(merged.skipped.len(), 1);
    }

    /// A file without `permissions` or `mcp` gets both, after its own keys.
    #[test]
    fn a_file_without_the_keys_gets_them() {
        let old = "{\n  \"permission\": {\"bash\": {\"rm *\": \"deny\"}}\n}\n";
        let merged = merge(old, &imported(), "claude-code").unwrap();
        let value = load(&merged.text);
        assert_eq!(value["permission"]["bash"]["rm *"], "deny");
        assert_eq!(value["permissions"].as_array().unwrap().len(), 2);
        assert_eq!(value["mcp"]["calc"]["type"], "local");
        let again = merge("{}", &imported(), "claude-code").unwrap();
        assert_eq!(load(&again.text)["permissions"].as_array().unwrap().len(), 2);
        let empty_list = merge("{\"permissions\": []}", &imported(), "claude-code").unwrap();
        assert_eq!(load(&empty_list.text)["permissions"].as_array().unwrap().len(), 2);
    }

    /// Importing the same rules again changes nothing.
    #[test]
    fn the_same_import_twice_is_one() {
        for start in ["", "{\n}\n"] {
            let once = merge(start, &imported(), "claude-code").unwrap();
            let twice = merge(&once.text, &imported(), "claude-code").unwrap();
            assert_eq!(once.text, twice.text);
        }
        let once = merge("", &imported(), "claude-code").unwrap();
        let other = merge(&once.text, &imported(), "codex").unwrap();
        assert_ne!(once.text, other.text, "another agent's block is added");
    }

    /// V2's `mcp.servers` takes the servers when the file uses it.
    #[test]
    fn servers_go_where_the_file_keeps_them() {
        let old = "{\"mcp\": {\"servers\": {\"x\": {\"type\": \"local\", \"command\": [\"x\"]}}}}";
        let merged = merge(old, &imported(), "claude-code").unwrap();
        let value = load(&merged.text);
        assert_eq!(value["mcp"]["servers"]["calc"]["type"], "local");
        assert!(value["mcp"].get("calc").is_none());
    }

    /// A file that is not an object, or whose keys have another shape, is refused.
    #[test]
    fn odd_files_are_refused() {
        assert!(merge("[]", &imported(), "codex").is_err());
        assert!(merge("{\"permissions\": {}}", &imported(), "codex").is_err());
        assert!(merge("{\"mcp\": []}", &imported(), "codex").is_err());
        assert!(merge("{", &imported(), "codex").is_err());
    }

    /// A comment after the last element's comma does not hide the comma.
    #[test]
    fn a_comma_behind_a_comment_is_seen() {
        assert_eq!(comma_after("1 /* , */ ]", 1, 10), None);
        assert_eq!(comma_after("1 // ,\n , ]", 1, 10), Some(9));
    }
}
