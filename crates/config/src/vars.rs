//! `{env:VAR}` and `{file:PATH}` in config files, as OpenCode substitutes them: every
//! `{env:NAME}` in a string (a value or a key, so a rule's pattern may use one) becomes the
//! variable's value, or nothing when it is unset; then every `{file:PATH}` becomes the
//! named file's content, trimmed (a path relative to the config file's directory, `~/` the
//! home directory's). A file that does not exist or cannot be read is a configuration
//! error naming the file and key path, as in OpenCode, never an empty string. toolgate
//! substitutes in the decoded strings rather than the file's text, so a value or a file
//! holding `"` or a newline stays one string and cannot add keys, and a file's content is
//! never read for references again.
//!
//! A project's file (found on the walk from the worktree root, README "Configuration")
//! never gets toolgate's own secrets: not its variables ([`is_toolgate_secret`]), and not
//! its files ([`FileScope`]): a project's `{file:…}` reads only a file inside the project,
//! outside toolgate's own directories, with one hard link. Anything else becomes empty
//! with a warning, so a repository cannot hand the server token, the approval database or
//! the user's keys to an MCP server, a command or the model. The user's own files may use
//! them (an MCP server of the websearch provider's, say).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::{ConfigError, ErrorKind, key_path};

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

/// Where a project file's `{file:…}` may read ([`Scope`]), fixed when the layer is read.
#[derive(Clone, Debug)]
pub(crate) struct FileScope {
    /// The project: the worktree root, or without `.git` the directory the file was
    /// found in (canonical).
    pub(crate) root: PathBuf,
    /// toolgate's own directories (its config and data directories, canonical when they
    /// exist): never read, even inside the project.
    pub(crate) own: Vec<PathBuf>,
}

/// How `{file:…}` is read for one layer.
pub(crate) struct Files<'a> {
    /// The directory relative paths resolve against: the config file's.
    pub(crate) base: &'a Path,
    /// `~/`.
    pub(crate) home: Option<&'a Path>,
    /// A project file's limits; `None`: the user's own file, which may read any file.
    pub(crate) scope: Option<&'a FileScope>,
    /// Every file read, in order, with its content (the layer's SHA-256 covers them, so
    /// a trusted file whose referenced file changed needs trust again).
    pub(crate) read: Vec<(PathBuf, String)>,
    /// Every reference refused: (key path, reference, why).
    pub(crate) refused: Vec<(String, String, String)>,
    /// The values `{env:…}` and `{file:…}` put into `mcp` (tokens in headers and
    /// environments, usually): redacted from every output (README "Redaction").
    pub(crate) secrets: Vec<String>,
}

impl Files<'_> {
    /// The path `reference` (the text between `{file:` and `}`) names, as OpenCode
    /// resolves it: `~/` is the home directory, a relative path the config file's
    /// directory's, lexically normalised like Node's `path.resolve`.
    fn resolve(&self, reference: &str) -> PathBuf {
        let named = match (reference.strip_prefix("~/"), self.home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => PathBuf::from(reference),
        };
        let joined = if named.is_absolute() {
            named
        } else {
            self.base.join(named)
        };
        std::path::absolute(&joined).unwrap_or(joined)
    }

    /// Why a project file may not read the file opened as `file` from `path`, if it may
    /// not. Judged on what was opened (its real path, from the open descriptor where the
    /// system says it), so a symlink swapped after a check cannot lead elsewhere; a file
    /// whose real place cannot be established is refused (fail closed).
    fn refusal(scope: &FileScope, path: &Path, file: &std::fs::File) -> Option<String> {
        #[cfg(target_os = "linux")]
        let real = {
            use std::os::fd::AsRawFd;
            std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
        };
        #[cfg(not(target_os = "linux"))]
        let real = std::fs::canonicalize(path);
        let Ok(real) = real else {
            return Some(format!("the real path of {} cannot be established", path.display()));
        };
        if scope.own.iter().any(|dir| real.starts_with(dir)) {
            return Some(format!("{} is toolgate's own file", real.display()));
        }
        if !real.starts_with(&scope.root) {
            return Some(format!(
                "{} is outside the project ({})",
                real.display(),
                scope.root.display()
            ));
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            // Another name of the same file may be toolgate's token or database.
            match file.metadata() {
                Ok(meta) if meta.nlink() > 1 => {
                    return Some(format!("{} has {} hard links", real.display(), meta.nlink()));
                }
                Ok(_) => {}
                Err(_) => return Some(format!("{} cannot be examined", real.display())),
            }
        }
        None
    }

    /// The content `{file:reference}` at `key` becomes, or why the load fails.
    fn content(&mut self, key: &str, reference: &str) -> Result<String, ConfigError> {
        use std::io::Read;
        let path = self.resolve(reference);
        let token = format!("{{file:{reference}}}");
        let bad = |message: String| ConfigError {
            origin: String::new(),
            path: key.to_string(),
            message: format!("bad file reference {token:?}: {message}"),
            kind: ErrorKind::Read,
        };
        // A missing file is an error either way (as in OpenCode). Only a regular file is
        // opened: a FIFO would hold the load forever.
        match std::fs::metadata(&path) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(bad(format!("{} does not exist", path.display())));
            }
            Err(error) => return Err(bad(format!("{} cannot be read: {error}", path.display()))),
            Ok(meta) if !meta.is_file() => return Err(bad(format!("{} is not a file", path.display()))),
            Ok(_) => {}
        }
        let mut file =
            std::fs::File::open(&path).map_err(|error| bad(format!("{} cannot be read: {error}", path.display())))?;
        // A project's file is refused before anything of the file is read, so nothing of
        // toolgate's (not even whether it is text) reaches it.
        if let Some(scope) = self.scope
            && let Some(why) = Self::refusal(scope, &path, &file)
        {
            self.refused.push((key.to_string(), token, why));
            return Ok(String::new());
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|error| bad(format!("{} cannot be read: {error}", path.display())))?;
        let text = String::from_utf8(bytes).map_err(|_| bad(format!("{} is not valid UTF-8", path.display())))?;
        let content = text.trim().to_string();
        self.read.push((path, content.clone()));
        Ok(content)
    }

    /// `text` with every `{file:PATH}` replaced (OpenCode's pattern: at least one
    /// character up to the first `}`); the contents inserted are not scanned again.
    fn substitute(&mut self, key: &str, text: &str) -> Result<String, ConfigError> {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(start) = rest.find("{file:") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 6..];
            match after.find('}') {
                Some(end) if end > 0 => {
                    out.push_str(&self.content(key, &after[..end])?);
                    rest = &after[end + 1..];
                }
                _ => {
                    out.push_str("{file:");
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        Ok(out)
    }
}

/// One string's substitutions: `{env:…}`, then `{file:…}`.
fn substitute_string(
    text: &str,
    at: &str,
    project: bool,
    lookup: &dyn Fn(&str) -> Option<String>,
    refused: &mut Vec<(String, String)>,
    files: &mut Files<'_>,
) -> Result<String, ConfigError> {
    let mcp = at == "mcp" || at.starts_with("mcp.") || at.starts_with("mcp[");
    let mut text = if text.contains("{env:") {
        let seen = std::cell::RefCell::new(Vec::new());
        let recording = |name: &str| {
            let value = lookup(name);
            if mcp && let Some(value) = &value {
                seen.borrow_mut().push(value.clone());
            }
            value
        };
        let (new, names) = substitute_env(text, recording, project);
        files.secrets.extend(seen.into_inner());
        refused.extend(names.into_iter().map(|name| (at.to_string(), name)));
        new
    } else {
        text.to_string()
    };
    if text.contains("{file:") {
        let before = files.read.len();
        text = files.substitute(at, &text)?;
        if mcp {
            let contents: Vec<String> = files.read[before..]
                .iter()
                .map(|(_, content)| content.clone())
                .collect();
            files.secrets.extend(contents);
        }
    }
    Ok(text)
}

/// Substitutes in every string of `value` (keys too): `{env:…}` first, then `{file:…}`
/// (as OpenCode does, so `{file:{env:DIR}/key}` works); each refused variable is recorded
/// with its key path.
pub(crate) fn substitute_value(
    value: &mut Value,
    path: &str,
    project: bool,
    lookup: &dyn Fn(&str) -> Option<String>,
    refused: &mut Vec<(String, String)>,
    files: &mut Files<'_>,
) -> Result<(), ConfigError> {
    match value {
        Value::String(text) if text.contains("{env:") || text.contains("{file:") => {
            *text = substitute_string(text, path, project, lookup, refused, files)?;
        }
        Value::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                substitute_value(item, &format!("{path}[{index}]"), project, lookup, refused, files)?;
            }
        }
        Value::Object(map) => {
            let old = std::mem::take(map);
            for (key, mut item) in old {
                let key = if key.contains("{env:") || key.contains("{file:") {
                    substitute_string(&key, &key_path(path, &key), project, lookup, refused, files)?
                } else {
                    key
                };
                substitute_value(&mut item, &key_path(path, &key), project, lookup, refused, files)?;
                map.insert(key, item);
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn files<'a>(base: &'a Path, scope: Option<&'a FileScope>) -> Files<'a> {
        Files {
            base,
            home: None,
            scope,
            read: Vec::new(),
            refused: Vec::new(),
            secrets: Vec::new(),
        }
    }

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
        substitute_value(
            &mut value,
            "",
            true,
            &lookup,
            &mut refused,
            &mut files(Path::new("/"), None),
        )
        .unwrap();
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
        substitute_value(
            &mut own,
            "",
            false,
            &lookup,
            &mut refused,
            &mut files(Path::new("/"), None),
        )
        .unwrap();
        assert_eq!((own["y"].as_str(), refused.len()), (Some("secret"), 0));
    }
}
