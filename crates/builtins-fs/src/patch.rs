//! `apply_patch` (spec §5.5): the envelope grammar, the seek order, verification of every
//! hunk before any write — and, beyond OpenCode and Codex, moves, all-or-nothing writes
//! and precise failures (`already applied`, the first line that diverges).

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate_core::{Content, Context, PathKind, PermissionRequest, Tool, ToolFailure};

use crate::common::{BOM, Services, blocking, file_lock, unified_diff, write_atomic};

/// One file change of a patch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hunk {
    /// Create a file.
    Add {
        /// Its path.
        path: String,
        /// Its content (lines joined by `\n`, no final newline).
        contents: String,
    },
    /// Remove a file.
    Delete {
        /// Its path.
        path: String,
    },
    /// Change a file (and maybe move it).
    Update {
        /// Its path.
        path: String,
        /// Where it moves, if anywhere.
        move_to: Option<String>,
        /// The changes, in file order.
        chunks: Vec<Chunk>,
    },
}

/// One `@@` section of an update.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chunk {
    /// Lines to find (context and removals).
    pub old: Vec<String>,
    /// Lines to put in their place (context and additions).
    pub new: Vec<String>,
    /// The text after `@@`: a line to find first.
    pub context: Option<String>,
    /// Anchored at the end of the file (`*** End of File`).
    pub end_of_file: bool,
}

fn strip_heredoc(text: &str) -> &str {
    let Some((first, rest)) = text.split_once('\n') else {
        return text;
    };
    let opener = first.trim();
    let opener = opener.strip_prefix("cat").map(str::trim_start).unwrap_or(opener);
    let Some(tag) = opener.strip_prefix("<<") else {
        return text;
    };
    let tag = tag.trim().trim_matches(['\'', '"']);
    if tag.is_empty() || !tag.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return text;
    }
    match rest.trim_end().rsplit_once('\n') {
        Some((body, last)) if last.trim() == tag => body,
        _ => text,
    }
}

/// Parses a patch (spec §5.5 grammar). Errors are the spec's messages.
///
/// ```
/// let hunks = toolgate_builtins_fs::patch::parse("*** Begin Patch\n*** Add File: a.txt\n+hello\n*** End Patch").unwrap();
/// assert_eq!(hunks, [toolgate_builtins_fs::patch::Hunk::Add { path: "a.txt".into(), contents: "hello".into() }]);
/// ```
pub fn parse(text: &str) -> Result<Vec<Hunk>, String> {
    let text = strip_heredoc(text.trim());
    let lines: Vec<&str> = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    let begin = lines.iter().position(|l| l.trim() == "*** Begin Patch");
    let end = lines.iter().rposition(|l| l.trim() == "*** End Patch");
    let (Some(begin), Some(end)) = (begin, end) else {
        return Err("Invalid patch format: missing Begin/End markers".into());
    };
    if end <= begin {
        return Err("Invalid patch format: missing Begin/End markers".into());
    }
    let body = &lines[begin + 1..end];
    let mut hunks = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let line = body[i];
        if let Some(path) = line.strip_prefix("*** Add File:") {
            let path = path.trim();
            if path.is_empty() {
                return Err("Invalid add file path".into());
            }
            i += 1;
            let mut contents = Vec::new();
            while i < body.len() && !body[i].starts_with("***") {
                match body[i].strip_prefix('+') {
                    Some(content) => contents.push(content),
                    None => return Err(format!("Invalid add file line: {}", body[i])),
                }
                i += 1;
            }
            hunks.push(Hunk::Add {
                path: path.to_string(),
                contents: contents.join("\n"),
            });
        } else if let Some(path) = line.strip_prefix("*** Delete File:") {
            let path = path.trim();
            if path.is_empty() {
                return Err("Invalid delete file path".into());
            }
            hunks.push(Hunk::Delete { path: path.to_string() });
            i += 1;
        } else if let Some(path) = line.strip_prefix("*** Update File:") {
            let path = path.trim().to_string();
            if path.is_empty() {
                return Err("Invalid update file path".into());
            }
            i += 1;
            let mut move_to = None;
            if let Some(target) = body.get(i).and_then(|l| l.strip_prefix("*** Move to:")) {
                let target = target.trim();
                if target.is_empty() {
                    return Err("Invalid move file path".into());
                }
                move_to = Some(target.to_string());
                i += 1;
            }
            let mut chunks: Vec<Chunk> = Vec::new();
            while i < body.len() {
                let line = body[i];
                if let Some(context) = line.strip_prefix("@@") {
                    let context = context.trim();
                    chunks.push(Chunk {
                        context: (!context.is_empty()).then(|| context.to_string()),
                        ..Chunk::default()
                    });
                    i += 1;
                    continue;
                }
                if line == "*** End of File" {
                    if let Some(chunk) = chunks.last_mut() {
                        chunk.end_of_file = true;
                    }
                    i += 1;
                    continue;
                }
                if line.starts_with("***") {
                    break;
                }
                let Some(chunk) = chunks.last_mut() else {
                    return Err(format!("Invalid update file line: {line}"));
                };
                match line.chars().next() {
                    Some(' ') => {
                        chunk.old.push(line[1..].to_string());
                        chunk.new.push(line[1..].to_string());
                    }
                    // An empty line is an empty context line (editors strip the space).
                    None => {
                        chunk.old.push(String::new());
                        chunk.new.push(String::new());
                    }
                    Some('-') => chunk.old.push(line[1..].to_string()),
                    Some('+') => chunk.new.push(line[1..].to_string()),
                    _ => return Err(format!("Invalid update chunk line: {line}")),
                }
                i += 1;
            }
            if chunks.is_empty() {
                return Err(format!(
                    "Invalid update hunk for {path}: expected at least one @@ chunk"
                ));
            }
            hunks.push(Hunk::Update { path, move_to, chunks });
        } else if line.trim().is_empty() {
            i += 1;
        } else {
            return Err(format!("Invalid patch line: {line}"));
        }
    }
    Ok(hunks)
}

fn fold(line: &str) -> String {
    line.trim()
        .chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{201a}' | '\u{201b}' => "'".to_string(),
            '\u{201c}' | '\u{201d}' | '\u{201e}' | '\u{201f}' => "\"".to_string(),
            '\u{2010}'..='\u{2015}' | '\u{2212}' => "-".to_string(),
            '\u{2026}' => "...".to_string(),
            '\u{00a0}' | '\u{202f}' | '\u{2007}' => " ".to_string(),
            other => other.to_string(),
        })
        .collect()
}

type Compare = fn(&str, &str) -> bool;

const COMPARATORS: [Compare; 4] = [
    |a, b| a == b,
    |a, b| a.trim_end() == b.trim_end(),
    |a, b| a.trim() == b.trim(),
    |a, b| fold(a) == fold(b),
];

fn matches_at(lines: &[String], at: usize, wanted: &[String], same: Compare) -> bool {
    at + wanted.len() <= lines.len() && wanted.iter().enumerate().all(|(i, w)| same(&lines[at + i], w))
}

/// Where `wanted` is, at or after `from` (the end first when `eof`), by the first
/// comparator that finds it.
fn seek(lines: &[String], wanted: &[String], from: usize, eof: bool) -> Option<usize> {
    for same in COMPARATORS {
        if eof && lines.len() >= wanted.len() && matches_at(lines, lines.len() - wanted.len(), wanted, same) {
            return Some(lines.len() - wanted.len());
        }
        if let Some(at) =
            (from..=lines.len().saturating_sub(wanted.len())).find(|&at| matches_at(lines, at, wanted, same))
        {
            return Some(at);
        }
    }
    None
}

/// The best partial match of `wanted`, for the failure message: (line, how many match).
fn closest(lines: &[String], wanted: &[String]) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize)> = None;
    for at in 0..lines.len() {
        let count = wanted
            .iter()
            .enumerate()
            .take_while(|(i, w)| lines.get(at + i).is_some_and(|l| l.trim() == w.trim()))
            .count();
        if count > 0 && best.is_none_or(|(_, c)| count > c) {
            best = Some((at, count));
        }
    }
    best
}

/// The result of applying an update's chunks to a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Derived {
    /// The new content, without a BOM.
    pub content: String,
    /// Whether the original had a BOM.
    pub bom: bool,
}

/// Applies `chunks` to `original` (spec §5.5 "Applying an update").
pub fn derive(original: &str, path: &str, chunks: &[Chunk]) -> Result<Derived, String> {
    let (bom, text) = match original.strip_prefix(BOM) {
        Some(rest) => (true, rest),
        None => (false, original),
    };
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    let trailing_newline = lines.last().is_some_and(String::is_empty);
    if trailing_newline {
        lines.pop();
    }
    let mut replacements: Vec<(usize, usize, Vec<String>)> = Vec::new();
    let mut cursor = 0;
    for chunk in chunks {
        if let Some(context) = &chunk.context {
            let found = COMPARATORS
                .iter()
                .find_map(|same| (cursor..lines.len()).find(|&at| same(&lines[at], context)))
                .ok_or_else(|| format!("Failed to find context '{context}' in {path}"))?;
            cursor = found + 1;
        }
        if chunk.old.is_empty() {
            replacements.push((lines.len(), 0, chunk.new.clone()));
            continue;
        }
        let mut old = chunk.old.clone();
        let mut new = chunk.new.clone();
        let mut found = seek(&lines, &old, cursor, chunk.end_of_file);
        if found.is_none() && old.last().is_some_and(String::is_empty) {
            old.pop();
            if new.last().is_some_and(String::is_empty) {
                new.pop();
            }
            found = seek(&lines, &old, cursor, chunk.end_of_file);
        }
        let Some(at) = found else {
            // Already there? Then say so rather than fail vaguely.
            if !chunk.new.is_empty() && seek(&lines, &chunk.new, 0, false).is_some() {
                return Err(format!(
                    "the change to {path} is already applied (its new lines are already in the file)"
                ));
            }
            let mut message = format!("Failed to find expected lines in {path}:\n{}", chunk.old.join("\n"));
            if let Some((line, count)) = closest(&lines, &chunk.old) {
                let expected = chunk.old.get(count).map(String::as_str).unwrap_or("");
                let actual = lines.get(line + count).map(String::as_str).unwrap_or("<end of file>");
                message.push_str(&format!(
                    "\nClosest match at line {}: {count} of {} lines match, then the patch expects {expected:?} but the file has {actual:?}",
                    line + 1,
                    chunk.old.len()
                ));
            }
            return Err(message);
        };
        replacements.push((at, old.len(), new));
        cursor = at + old.len();
    }
    replacements.sort_by_key(|replacement| std::cmp::Reverse(replacement.0));
    for (at, length, new) in replacements {
        lines.splice(at..at + length, new);
    }
    let mut content = lines.join("\n");
    let last_empty = lines.last().is_some_and(String::is_empty);
    if !lines.is_empty() && (trailing_newline || !last_empty) {
        content.push('\n');
    }
    Ok(Derived { content, bom })
}

/// The input of `apply_patch`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PatchInput {
    /// The whole patch, from `*** Begin Patch` to `*** End Patch`.
    pub patch_text: String,
}

/// One file the patch changed.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PatchedFile {
    /// `A` added, `M` modified (or moved), `D` deleted.
    pub status: String,
    /// The permission resource.
    pub resource: String,
}

/// The output of `apply_patch`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PatchOutput {
    /// The files changed, in patch order.
    pub files: Vec<PatchedFile>,
}

/// The tool's description.
pub const DESCRIPTION: &str = "Apply a patch to one or more files: `*** Begin Patch`, then hunks (`*** Add File: <path>` \
with `+` lines; `*** Delete File: <path>`; `*** Update File: <path>`, optionally `*** Move to: <path>`, then `@@` \
chunks of ` ` context, `-` removed and `+` added lines, `*** End of File` to anchor at the end), then `*** End Patch`. \
Every hunk is verified before anything is written, and either every file changes or none does.";

/// A planned change to one path.
#[derive(Clone, Debug)]
struct Change {
    path: PathBuf,
    resource: String,
    /// New content, or `None` to delete.
    content: Option<Vec<u8>>,
}

/// Builds `apply_patch` (it asks as `edit`).
pub fn patch_tool(services: Services) -> Tool {
    Tool::builder(DESCRIPTION, move |input: PatchInput, ctx: Context| {
        let services = services.clone();
        async move { apply_patch(&services, input, &ctx).await }
    })
    .project(|output: &PatchOutput| {
        let mut text = String::from("Success. Updated the following files:");
        for file in &output.files {
            text.push_str(&format!("\n{} {}", file.status, file.resource));
        }
        vec![Content::text(text)]
    })
    .build()
    .with_permission("edit")
}

async fn apply_patch(services: &Services, input: PatchInput, ctx: &Context) -> Result<PatchOutput, ToolFailure> {
    if input.patch_text.trim().is_empty() {
        return Err(ToolFailure::new("patchText is required"));
    }
    let hunks =
        parse(&input.patch_text).map_err(|error| ToolFailure::new(format!("patch verification failed: {error}")))?;
    if hunks.is_empty() {
        let normal = input.patch_text.trim().replace("\r\n", "\n");
        return Err(ToolFailure::new(if normal == "*** Begin Patch\n*** End Patch" {
            "patch rejected: empty patch"
        } else {
            "patch verification failed: no hunks found"
        }));
    }
    // Resolve every target first; outside ones are approved per directory.
    let mut targets: BTreeMap<String, toolgate_core::ResolvedPath> = BTreeMap::new();
    let mut externals: Vec<String> = Vec::new();
    for hunk in &hunks {
        let paths: Vec<&String> = match hunk {
            Hunk::Add { path, .. } | Hunk::Delete { path } => vec![path],
            Hunk::Update { path, move_to, .. } => std::iter::once(path).chain(move_to.as_ref()).collect(),
        };
        for path in paths {
            let resolved = services
                .location
                .resolve(path, PathKind::File)
                .map_err(|error| ToolFailure::new(format!("patch verification failed: {error}")))?;
            if let Some(external) = &resolved.external
                && !externals.contains(&external.resource)
            {
                externals.push(external.resource.clone());
                let request = PermissionRequest::new("external_directory")
                    .resources([external.resource.clone()])
                    .save([external.save.clone()])
                    .metadata("filepath", resolved.path.to_string_lossy().into_owned())
                    .metadata("parentDir", external.directory.to_string_lossy().into_owned());
                services
                    .permissions
                    .assert(ctx, request)
                    .await
                    .map_err(|r| ToolFailure::from(r).with_message(format!("Unable to apply patch at {path}")))?;
            }
            targets.insert(path.clone(), resolved);
        }
    }
    let (changes, files, diff) = {
        let hunks = hunks.clone();
        let targets = targets.clone();
        blocking(move || plan(&hunks, &targets)).await??
    };
    let resources: Vec<String> = {
        let mut list: Vec<String> = Vec::new();
        for change in &changes {
            if !list.contains(&change.resource) {
                list.push(change.resource.clone());
            }
        }
        list
    };
    let request = PermissionRequest::new("edit")
        .resources(resources.clone())
        .save(["*"])
        .metadata("filepath", resources.join(", "))
        .metadata("diff", diff)
        .metadata("files", serde_json::to_value(&files).unwrap_or_default());
    services.permissions.assert(ctx, request).await.map_err(|refusal| {
        let message = match &refusal {
            toolgate_core::Refusal::Corrected { .. } => refusal.to_string(),
            _ => format!("Unable to apply patch at {}", resources.join(", ")),
        };
        ToolFailure::from(refusal).with_message(message)
    })?;
    blocking(move || commit(&changes)).await??;
    Ok(PatchOutput { files })
}

/// Verifies every hunk and computes every new content, touching nothing.
fn plan(
    hunks: &[Hunk],
    targets: &BTreeMap<String, toolgate_core::ResolvedPath>,
) -> Result<(Vec<Change>, Vec<PatchedFile>, String), ToolFailure> {
    let fail = |message: String| ToolFailure::new(format!("patch verification failed: {message}"));
    // The content each path will have, as earlier hunks leave it (None: absent).
    let mut state: BTreeMap<PathBuf, Option<String>> = BTreeMap::new();
    let mut changes: Vec<Change> = Vec::new();
    let mut files = Vec::new();
    let mut diff = String::new();
    let read = |state: &BTreeMap<PathBuf, Option<String>>,
                path: &PathBuf,
                shown: &str|
     -> Result<Option<String>, ToolFailure> {
        if let Some(content) = state.get(path) {
            return Ok(content.clone());
        }
        if path.is_dir() {
            return Err(fail(format!(
                "Failed to read file to update {shown}: path is a directory"
            )));
        }
        match std::fs::read(path) {
            Ok(bytes) => String::from_utf8(bytes)
                .map(Some)
                .map_err(|_| fail(format!("{shown} is not valid UTF-8"))),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(fail(format!("Failed to read {shown}: {error}"))),
        }
    };
    for hunk in hunks {
        match hunk {
            Hunk::Add { path, contents } => {
                let target = &targets[path];
                let body = contents.strip_prefix(BOM).unwrap_or(contents);
                let content = if body.is_empty() || body.ends_with('\n') {
                    body.to_string()
                } else {
                    format!("{body}\n")
                };
                diff.push_str(&unified_diff(&target.resource, "", &content));
                state.insert(target.path.clone(), Some(content.clone()));
                changes.push(Change {
                    path: target.path.clone(),
                    resource: target.resource.clone(),
                    content: Some(content.into_bytes()),
                });
                files.push(PatchedFile {
                    status: "A".into(),
                    resource: target.resource.clone(),
                });
            }
            Hunk::Delete { path } => {
                let target = &targets[path];
                let old = read(&state, &target.path, path)?
                    .ok_or_else(|| fail(format!("Failed to read file to delete {path}: it does not exist")))?;
                diff.push_str(&unified_diff(&target.resource, &old, ""));
                state.insert(target.path.clone(), None);
                changes.push(Change {
                    path: target.path.clone(),
                    resource: target.resource.clone(),
                    content: None,
                });
                files.push(PatchedFile {
                    status: "D".into(),
                    resource: target.resource.clone(),
                });
            }
            Hunk::Update { path, move_to, chunks } => {
                let target = &targets[path];
                let old = read(&state, &target.path, path)?
                    .ok_or_else(|| fail(format!("Failed to read file to update {path}: it does not exist")))?;
                let derived = derive(&old, path, chunks).map_err(fail)?;
                let content = if derived.bom {
                    format!("{BOM}{}", derived.content)
                } else {
                    derived.content
                };
                let destination = move_to.as_ref().map_or(target, |to| &targets[to]);
                diff.push_str(&unified_diff(
                    &destination.resource,
                    old.strip_prefix(BOM).unwrap_or(&old),
                    content.strip_prefix(BOM).unwrap_or(&content),
                ));
                if move_to.is_some() && destination.path != target.path {
                    state.insert(target.path.clone(), None);
                    changes.push(Change {
                        path: target.path.clone(),
                        resource: target.resource.clone(),
                        content: None,
                    });
                }
                state.insert(destination.path.clone(), Some(content.clone()));
                changes.push(Change {
                    path: destination.path.clone(),
                    resource: destination.resource.clone(),
                    content: Some(content.into_bytes()),
                });
                files.push(PatchedFile {
                    status: "M".into(),
                    resource: destination.resource.clone(),
                });
            }
        }
    }
    Ok((changes, files, diff))
}

/// What a path held before the patch, to put back if a later write fails.
struct Saved {
    path: PathBuf,
    content: Option<Vec<u8>>,
    permissions: Option<std::fs::Permissions>,
}

/// Applies every change, or none: on the first failure everything already touched is
/// restored (content, existence and mode).
fn commit(changes: &[Change]) -> Result<(), ToolFailure> {
    let mut paths: Vec<&PathBuf> = changes.iter().map(|c| &c.path).collect();
    paths.sort();
    paths.dedup();
    let locks: Vec<_> = paths.iter().map(|path| file_lock(path)).collect();
    let _held: Vec<_> = locks
        .iter()
        .map(|lock| lock.lock().unwrap_or_else(|poison| poison.into_inner()))
        .collect();
    let mut saved: Vec<Saved> = Vec::new();
    for change in changes {
        if !saved.iter().any(|s| s.path == change.path) {
            saved.push(Saved {
                path: change.path.clone(),
                content: std::fs::read(&change.path).ok(),
                permissions: std::fs::metadata(&change.path).ok().map(|m| m.permissions()),
            });
        }
        let result = match &change.content {
            Some(content) => write_atomic(&change.path, content),
            None => match std::fs::remove_file(&change.path) {
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
                other => other,
            },
        };
        if let Err(error) = result {
            for before in saved.iter().rev() {
                let _ = match &before.content {
                    Some(content) => write_atomic(&before.path, content).and_then(|()| match &before.permissions {
                        Some(permissions) => std::fs::set_permissions(&before.path, permissions.clone()),
                        None => Ok(()),
                    }),
                    None => std::fs::remove_file(&before.path),
                };
            }
            return Err(ToolFailure::new(format!(
                "Unable to apply patch at {}: {error}. Nothing was applied: every file is as it was.",
                change.resource
            )));
        }
    }
    Ok(())
}
