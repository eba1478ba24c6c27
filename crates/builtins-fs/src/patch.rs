//! `apply_patch` (spec §5.5): the envelope grammar, the seek order, verification of every
//! hunk before any write — and, beyond OpenCode and Codex, moves, all-or-nothing writes
//! and precise failures (`already applied`, the first line that diverges).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate_core::{Annotations, Content, Context, PathKind, PermissionRequest, Tool, ToolFailure};

use crate::change::{Cancel, ChangeError, Write, lock_all, transact};
use crate::common::{BOM, Services, blocking, changed, too_large, unified_diff};

/// One file change of a patch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Hunk {
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
pub(crate) struct Chunk {
    /// Lines to find (context and removals).
    pub(crate) old: Vec<String>,
    /// Lines to put in their place (context and additions).
    pub(crate) new: Vec<String>,
    /// The text after `@@`: a line to find first.
    pub(crate) context: Option<String>,
    /// Anchored at the end of the file (`*** End of File`).
    pub(crate) end_of_file: bool,
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

/// Parses a patch (spec §5.5 grammar). Errors are the spec's messages (tested in
/// `patch/tests.rs`).
pub(crate) fn parse(text: &str) -> Result<Vec<Hunk>, String> {
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

/// Like [`seek`], for a patch recomputed on a file that changed since it was approved:
/// the first comparator that finds `wanted` must find it in one place only (or at the
/// end, for an end-anchored chunk), else the change is ambiguous and not applied.
fn seek_unique(lines: &[String], wanted: &[String], from: usize, eof: bool) -> Result<Option<usize>, ()> {
    for same in COMPARATORS {
        if eof && lines.len() >= wanted.len() && matches_at(lines, lines.len() - wanted.len(), wanted, same) {
            return Ok(Some(lines.len() - wanted.len()));
        }
        let mut found =
            (from..=lines.len().saturating_sub(wanted.len())).filter(|&at| matches_at(lines, at, wanted, same));
        if let Some(at) = found.next() {
            return if found.next().is_some() { Err(()) } else { Ok(Some(at)) };
        }
    }
    Ok(None)
}

/// Whether a chunk whose old lines are missing has already been applied: its new lines
/// are in the file, exactly, in one place, and say something (a lone `}` or a blank line
/// occurs everywhere and proves nothing).
fn already_applied(lines: &[String], chunk: &Chunk) -> bool {
    let telling = chunk
        .new
        .iter()
        .any(|line| line.chars().filter(|c| c.is_alphanumeric()).count() >= 3);
    if chunk.new.is_empty() || !telling || chunk.new == chunk.old {
        return false;
    }
    let exact: Compare = |a, b| a == b;
    let mut found =
        (0..=lines.len().saturating_sub(chunk.new.len())).filter(|&at| matches_at(lines, at, &chunk.new, exact));
    found.next().is_some() && found.next().is_none()
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
pub(crate) struct Derived {
    /// The new content, without a BOM.
    pub(crate) content: String,
    /// Whether the original had a BOM.
    pub(crate) bom: bool,
}

/// Applies `chunks` to `original` (spec §5.5 "Applying an update").
///
/// Line endings are kept: in a file with CRLF endings the lines a chunk adds get CRLF too,
/// and every line it leaves alone keeps its own ending. The tool itself derives through
/// [`derive_with`]; this is the lenient form the grammar tests exercise.
#[cfg(test)]
pub(crate) fn derive(original: &str, path: &str, chunks: &[Chunk]) -> Result<Derived, String> {
    derive_with(original, path, chunks, false)
}

/// [`derive`]; with `strict`, every chunk must find its place unambiguously.
fn derive_with(original: &str, path: &str, chunks: &[Chunk], strict: bool) -> Result<Derived, String> {
    let (bom, text) = match original.strip_prefix(BOM) {
        Some(rest) => (true, rest),
        None => (false, original),
    };
    let crlf = text.contains("\r\n");
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    let trailing_newline = lines.last().is_some_and(String::is_empty);
    if trailing_newline {
        lines.pop();
    }
    // Each line's own ending: CRLF when it had one. The last line, when unterminated,
    // gets the file's ending if a change ever puts something after it.
    let count = lines.len();
    let mut endings: Vec<bool> = lines
        .iter_mut()
        .enumerate()
        .map(|(index, line)| {
            if index + 1 < count || trailing_newline {
                let had = line.ends_with('\r');
                if had {
                    line.pop();
                }
                had
            } else {
                crlf
            }
        })
        .collect();
    let ambiguous = |what: String| format!("{what} in {path} no longer occur in one place only");
    let mut replacements: Vec<(usize, usize, Vec<String>)> = Vec::new();
    let mut cursor = 0;
    for chunk in chunks {
        if let Some(context) = &chunk.context {
            let mut found = None;
            for same in COMPARATORS {
                let mut at = (cursor..lines.len()).filter(|&at| same(&lines[at], context));
                if let Some(first) = at.next() {
                    if strict && at.next().is_some() {
                        return Err(ambiguous(format!("the context '{context}'")));
                    }
                    found = Some(first);
                    break;
                }
            }
            let found = found.ok_or_else(|| format!("Failed to find context '{context}' in {path}"))?;
            cursor = found + 1;
        }
        if chunk.old.is_empty() {
            replacements.push((lines.len(), 0, chunk.new.clone()));
            continue;
        }
        let mut old = chunk.old.clone();
        let mut new = chunk.new.clone();
        let find = |old: &[String]| {
            if strict {
                seek_unique(&lines, old, cursor, chunk.end_of_file)
                    .map_err(|()| ambiguous(format!("the lines to change ({:?})", chunk.old.join("\n"))))
            } else {
                Ok(seek(&lines, old, cursor, chunk.end_of_file))
            }
        };
        let mut found = find(&old)?;
        if found.is_none() && old.last().is_some_and(String::is_empty) {
            old.pop();
            if new.last().is_some_and(String::is_empty) {
                new.pop();
            }
            found = find(&old)?;
        }
        let Some(at) = found else {
            // Already there? Then say so rather than fail vaguely.
            if already_applied(&lines, chunk) {
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
        let added = new.len();
        lines.splice(at..at + length, new);
        endings.splice(at..at + length, std::iter::repeat_n(crlf, added));
    }
    let mut content = String::with_capacity(text.len() + 64);
    for (index, line) in lines.iter().enumerate() {
        content.push_str(line);
        if index + 1 < lines.len() {
            content.push_str(if endings[index] { "\r\n" } else { "\n" });
        }
    }
    let last_empty = lines.last().is_some_and(String::is_empty);
    if !lines.is_empty() && (trailing_newline || !last_empty) {
        content.push_str(if endings.last().copied().unwrap_or(crlf) {
            "\r\n"
        } else {
            "\n"
        });
    }
    Ok(Derived { content, bom })
}

/// The input of `apply_patch`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PatchInput {
    /// The whole patch, from `*** Begin Patch` to `*** End Patch`.
    pub(crate) patch_text: String,
}

/// One file the patch changed.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct PatchedFile {
    /// `A` added, `M` modified (or moved), `D` deleted.
    pub(crate) status: String,
    /// The permission resource.
    pub(crate) resource: String,
}

/// The output of `apply_patch`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct PatchOutput {
    /// The files changed, in patch order.
    pub(crate) files: Vec<PatchedFile>,
}

/// The tool's description.
pub(crate) const DESCRIPTION: &str = "Apply a patch to one or more files: `*** Begin Patch`, then hunks (`*** Add File: <path>` \
with `+` lines; `*** Delete File: <path>`; `*** Update File: <path>`, optionally `*** Move to: <path>`, then `@@` \
chunks of ` ` context, `-` removed and `+` added lines, `*** End of File` to anchor at the end), then `*** End Patch`. \
Every hunk is verified before anything is written, and either every file changes or none does.";

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
    .title("Apply a patch")
    .annotations(Annotations::destructive())
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
                services.permissions.assert(ctx, request).await.map_err(|r| {
                    let message = crate::common::refusal_message(&r, format!("Unable to apply patch at {path}"));
                    ToolFailure::from(r).with_message(message)
                })?;
            }
            targets.insert(path.clone(), resolved);
        }
    }
    let planned = {
        let hunks = hunks.clone();
        let targets = targets.clone();
        blocking(move || plan(&hunks, &targets, &mut |path| read_base(path), None)).await??
    };
    let resources = planned.resources();
    let request = PermissionRequest::new("edit")
        .resources(resources.clone())
        .save([crate::common::EDIT_SAVE])
        .metadata("filepath", resources.join(", "))
        .metadata("diff", planned.diff.clone())
        .metadata("files", serde_json::to_value(&planned.files).unwrap_or_default());
    services.permissions.assert(ctx, request).await.map_err(|refusal| {
        let message =
            crate::common::refusal_message(&refusal, format!("Unable to apply patch at {}", resources.join(", ")));
        ToolFailure::from(refusal).with_message(message)
    })?;
    let files = planned.files.clone();
    let cancel = Cancel::default();
    let guard = cancel.guard();
    let committed = blocking(move || commit(&hunks, &targets, planned, &cancel)).await?;
    guard.disarm();
    committed?;
    Ok(PatchOutput { files })
}

/// Reads a path as it is before the patch, without the lock (for the approval's diff).
fn read_base(path: &Path) -> Result<Option<Vec<u8>>, ChangeError> {
    crate::change::read_regular(path)
}

/// Every path a patch touches, what each held when the patch was computed, and what
/// each will hold.
struct Planned {
    /// Every path, in the order the patch first touches it, with the model's spelling.
    paths: Vec<(PathBuf, String, String)>,
    /// What each path held when the patch was computed (`None`: nothing there).
    seen: BTreeMap<PathBuf, Option<Vec<u8>>>,
    /// What each path will hold.
    state: BTreeMap<PathBuf, Option<String>>,
    /// A move's destination and its source: the file keeps its mode and owner.
    moved_from: BTreeMap<PathBuf, PathBuf>,
    files: Vec<PatchedFile>,
    diff: String,
}

impl Planned {
    /// The permission resources of every path that changes, in patch order.
    fn resources(&self) -> Vec<String> {
        let mut list: Vec<String> = Vec::new();
        for (path, resource, _) in &self.paths {
            let before = self.seen.get(path).cloned().flatten();
            let after = self.state.get(path).cloned().flatten();
            if before.as_deref() != after.as_ref().map(String::as_bytes) && !list.contains(resource) {
                list.push(resource.clone());
            }
        }
        list
    }
}

type ReadBase<'a> = dyn FnMut(&Path) -> Result<Option<Vec<u8>>, ChangeError> + 'a;

/// Verifies every hunk and computes every new content, writing nothing. `read` gives what
/// a path holds before the patch. With `previous` (what an earlier plan saw), this is a
/// recomputation on files that changed since: updates are re-applied only where every
/// chunk still finds one place, and paths added, deleted or moved onto must not have
/// changed at all.
fn plan(
    hunks: &[Hunk],
    targets: &BTreeMap<String, toolgate_core::ResolvedPath>,
    read: &mut ReadBase<'_>,
    previous: Option<&BTreeMap<PathBuf, Option<Vec<u8>>>>,
) -> Result<Planned, ToolFailure> {
    let fail = |message: String| ToolFailure::new(format!("patch verification failed: {message}"));
    let strict = previous.is_some();
    let mut planned = Planned {
        paths: Vec::new(),
        seen: BTreeMap::new(),
        state: BTreeMap::new(),
        moved_from: BTreeMap::new(),
        files: Vec::new(),
        diff: String::new(),
    };
    // Records what `path` holds before the patch (once) and returns its current text.
    let mut touch = |planned: &mut Planned,
                     path: &str,
                     verb: &str,
                     must_be_unchanged: bool|
     -> Result<(PathBuf, Option<String>), ToolFailure> {
        let target = &targets[path];
        let real = target.path.clone();
        if !planned.seen.contains_key(&real) {
            let bytes = read(&real).map_err(|error| match error {
                ChangeError::NotRegular => ToolFailure::new(format!("Unable to write {path}: not a regular file")),
                ChangeError::TooLarge(size) => ToolFailure::new(too_large("apply patch at", path, size)),
                ChangeError::Directory => fail(format!("Failed to read file to {verb} {path}: path is a directory")),
                other => fail(format!("Failed to read {path}: {other}")),
            })?;
            if must_be_unchanged
                && let Some(previous) = previous
                && previous.get(&real) != Some(&bytes)
            {
                return Err(ToolFailure::new(changed(path)));
            }
            planned
                .paths
                .push((real.clone(), target.resource.clone(), path.to_string()));
            planned.seen.insert(real.clone(), bytes);
        }
        if let Some(text) = planned.state.get(&real) {
            return Ok((real, text.clone()));
        }
        let text = match &planned.seen[&real] {
            None => None,
            Some(bytes) => match std::str::from_utf8(bytes) {
                Ok(text) => Some(text.to_string()),
                Err(_) if verb == "add" => None,
                Err(_) => return Err(fail(format!("{path} is not valid UTF-8"))),
            },
        };
        Ok((real, text))
    };
    for hunk in hunks {
        match hunk {
            Hunk::Add { path, contents } => {
                let (real, _) = touch(&mut planned, path, "add", strict)?;
                let target = &targets[path];
                let body = contents.strip_prefix(BOM).unwrap_or(contents);
                let content = if body.is_empty() || body.ends_with('\n') {
                    body.to_string()
                } else {
                    format!("{body}\n")
                };
                planned.diff.push_str(&unified_diff(&target.resource, "", &content));
                planned.state.insert(real.clone(), Some(content));
                planned.moved_from.remove(&real);
                planned.files.push(PatchedFile {
                    status: "A".into(),
                    resource: target.resource.clone(),
                });
            }
            Hunk::Delete { path } => {
                let (real, old) = touch(&mut planned, path, "delete", strict)?;
                let target = &targets[path];
                let old =
                    old.ok_or_else(|| fail(format!("Failed to read file to delete {path}: it does not exist")))?;
                planned.diff.push_str(&unified_diff(&target.resource, &old, ""));
                planned.state.insert(real, None);
                planned.files.push(PatchedFile {
                    status: "D".into(),
                    resource: target.resource.clone(),
                });
            }
            Hunk::Update { path, move_to, chunks } => {
                let (real, old) = touch(&mut planned, path, "update", false)?;
                let old =
                    old.ok_or_else(|| fail(format!("Failed to read file to update {path}: it does not exist")))?;
                let derived = derive_with(&old, path, chunks, strict).map_err(|error| {
                    if strict {
                        ToolFailure::new(format!("{}: {error}", changed(path)))
                    } else {
                        fail(error)
                    }
                })?;
                let content = if derived.bom {
                    format!("{BOM}{}", derived.content)
                } else {
                    derived.content
                };
                let destination_name = move_to.as_deref().unwrap_or(path);
                let destination = &targets[destination_name];
                planned.diff.push_str(&unified_diff(
                    &destination.resource,
                    old.strip_prefix(BOM).unwrap_or(&old),
                    content.strip_prefix(BOM).unwrap_or(&content),
                ));
                if destination.path != real {
                    touch(&mut planned, destination_name, "move", strict)?;
                    planned.state.insert(real.clone(), None);
                    let source = planned.moved_from.remove(&real).unwrap_or(real);
                    planned.moved_from.insert(destination.path.clone(), source);
                }
                planned.state.insert(destination.path.clone(), Some(content));
                planned.files.push(PatchedFile {
                    status: "M".into(),
                    resource: destination.resource.clone(),
                });
            }
        }
    }
    Ok(planned)
}

/// Applies a planned patch under the locks of every path it touches: every file changes
/// or none does. Files that changed since the patch was computed get it recomputed once
/// (when that is unambiguous); a second surprise fails the call.
fn commit(
    hunks: &[Hunk],
    targets: &BTreeMap<String, toolgate_core::ResolvedPath>,
    mut planned: Planned,
    cancel: &Cancel,
) -> Result<(), ToolFailure> {
    let paths: Vec<PathBuf> = planned.paths.iter().map(|(path, _, _)| path.clone()).collect();
    let shown = |planned: &Planned, path: &Path| {
        planned
            .paths
            .iter()
            .find(|(real, _, _)| real == path)
            .map_or_else(|| path.display().to_string(), |(_, _, given)| given.clone())
    };
    let fail = |planned: &Planned, error: ChangeError| match error {
        ChangeError::Changed(path) => ToolFailure::new(changed(&shown(planned, &path))),
        ChangeError::TooLarge(size) => {
            ToolFailure::new(too_large("apply patch at", &planned.resources().join(", "), size))
        }
        ChangeError::NotRegular => ToolFailure::new(format!(
            "Unable to write {}: not a regular file",
            planned
                .paths
                .iter()
                .map(|(_, _, given)| given.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
        other => ToolFailure::new(format!(
            "Unable to apply patch at {}: {other}. Nothing was applied: every file is as it was.",
            planned.resources().join(", ")
        )),
    };
    let mut recomputed = false;
    loop {
        let held = lock_all(&paths, cancel).map_err(|error| fail(&planned, error))?;
        let mut current: BTreeMap<PathBuf, Option<Vec<u8>>> = BTreeMap::new();
        for one in &held {
            let content = one.content().map_err(|error| fail(&planned, error))?;
            current.insert(one.path().to_path_buf(), content.map(<[u8]>::to_vec));
        }
        if current != planned.seen {
            if recomputed {
                let path = paths
                    .iter()
                    .find(|path| current.get(*path) != planned.seen.get(*path))
                    .cloned()
                    .unwrap_or_default();
                return Err(ToolFailure::new(changed(&shown(&planned, &path))));
            }
            recomputed = true;
            let previous = std::mem::take(&mut planned.seen);
            let mut read = |path: &Path| Ok(current.get(path).cloned().flatten());
            planned = plan(hunks, targets, &mut read, Some(&previous))?;
        }
        let index = |path: &Path| paths.iter().position(|p| p == path).unwrap_or(0);
        let mut writes: Vec<Write> = Vec::new();
        let mut deletes: Vec<Write> = Vec::new();
        for (path, _, _) in &planned.paths {
            let before = planned.seen.get(path).cloned().flatten();
            let after = planned.state.get(path).cloned().flatten();
            if before.as_deref() == after.as_ref().map(String::as_bytes) {
                continue;
            }
            match after {
                Some(text) => writes.push(Write {
                    index: index(path),
                    content: Some(text.into_bytes()),
                    like: planned.moved_from.get(path).map(|source| index(source)),
                }),
                None => deletes.push(Write {
                    index: index(path),
                    content: None,
                    like: None,
                }),
            }
        }
        // New content first, removals last: a move never loses its file on the way.
        writes.extend(deletes);
        match transact(&held, &writes, cancel) {
            Ok(()) => return Ok(()),
            Err(ChangeError::Changed(_)) if !recomputed => {}
            Err(error) => return Err(fail(&planned, error)),
        }
    }
}

#[cfg(test)]
mod tests;
