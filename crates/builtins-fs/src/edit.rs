//! `edit` (spec §5.4): replace an exact string, in a fixed order of checks, with a
//! conditional write — and, beyond OpenCode, a graded fallback when the exact match fails.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate_core::{Annotations, Content, Context, Tool, ToolFailure};

use crate::change::{Cancel, ChangeError, Write, lock_all, transact};
use crate::common::{BOM, Services, blocking, change_failure, unified_diff};

/// The input of `edit`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EditInput {
    /// The file, relative to the project or absolute.
    pub(crate) path: String,
    /// The exact text to replace.
    pub(crate) old_string: String,
    /// The text to put in its place.
    pub(crate) new_string: String,
    /// Replace every occurrence (default: exactly one must exist).
    #[serde(default)]
    pub(crate) replace_all: bool,
}

/// How `oldString` was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Grade {
    /// Exactly as given.
    Exact,
    /// Ignoring trailing whitespace on each line.
    TrailingWhitespace,
    /// Ignoring indentation.
    Indentation,
    /// Folding Unicode punctuation and spaces (curly quotes, dashes, `…`, no-break spaces).
    Unicode,
}

impl Grade {
    fn note(self) -> Option<&'static str> {
        match self {
            Grade::Exact => None,
            Grade::TrailingWhitespace => Some("Matched after ignoring trailing whitespace."),
            Grade::Indentation => Some("Matched after ignoring indentation; the new text was re-indented to fit."),
            Grade::Unicode => Some("Matched after folding Unicode punctuation and spaces."),
        }
    }
}

/// The output of `edit`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct EditOutput {
    /// Always `edit`.
    pub(crate) operation: String,
    /// The file edited (canonical).
    pub(crate) target: String,
    /// The permission resource.
    pub(crate) resource: String,
    /// How many occurrences were replaced.
    pub(crate) replacements: usize,
    /// How `oldString` was found.
    #[serde(rename = "match")]
    pub(crate) grade: Grade,
    /// The model-facing text.
    #[serde(skip)]
    pub(crate) text: String,
}

/// The tool's description.
pub(crate) const DESCRIPTION: &str = "Replace `oldString` with `newString` in a file. `oldString` must match exactly one place \
(including whitespace and indentation) unless `replaceAll` is set; give enough surrounding lines to make it unique. \
When no exact match exists, one unambiguous match ignoring trailing whitespace, indentation or Unicode punctuation is \
used and reported. Line endings and a byte-order mark are preserved. Edits of one file apply one at a time, each to \
the current content; a file changed meanwhile by another program fails with `File changed since it was read`.";

/// The messages of spec §5.4, word for word.
pub(crate) const SAME: &str = "No changes to apply: oldString and newString are identical.";
/// See [`SAME`].
pub(crate) const EMPTY: &str = "oldString must not be empty. Use write to create or overwrite a file.";
/// See [`SAME`].
pub(crate) const NOT_FOUND: &str =
    "Could not find oldString in the file. It must match exactly, including whitespace and indentation.";
/// See [`SAME`].
pub(crate) const MULTIPLE: &str =
    "Found multiple exact matches for oldString. Provide more surrounding context or set replaceAll to true.";
/// See [`SAME`].
pub(crate) const TOO_LARGE: &str = "Refusing replacement because the matched span is much larger than oldString. Re-read the file and provide the full exact oldString for the intended replacement.";

/// Builds `edit`.
pub fn edit_tool(services: Services) -> Tool {
    Tool::builder(DESCRIPTION, move |input: EditInput, ctx: Context| {
        let services = services.clone();
        async move { edit(&services, input, &ctx).await }
    })
    .project(|output: &EditOutput| vec![Content::text(output.text.clone())])
    .title("Edit a file")
    .annotations(Annotations::destructive())
    .build()
}

async fn edit(services: &Services, input: EditInput, ctx: &Context) -> Result<EditOutput, ToolFailure> {
    if input.old_string == input.new_string {
        return Err(ToolFailure::new(SAME));
    }
    if input.old_string.is_empty() {
        return Err(ToolFailure::new(EMPTY));
    }
    let path = input.path.clone();
    let fallback = unified_diff(&path, &input.old_string, &input.new_string);
    let planned = input.clone();
    // The prompt shows the whole file's change; a change that cannot be worked out
    // here (no match) shows as requested, and fails after approval as it always did.
    let change = move |old: Option<&str>| old.and_then(|old| apply(old, &planned).ok()).map(|(new, _, _)| new);
    let resolved = services
        .authorize_edit(ctx, &path, fallback, change, || format!("Unable to edit {path}"))
        .await?;
    let target = resolved.path.clone();
    let resource = resolved.resource.clone();
    let cancel = Cancel::default();
    let guard = cancel.guard();
    let edited = blocking(move || {
        let fail = |error| match error {
            ChangeError::Directory => ToolFailure::new(format!("Path is a directory, not a file: {path}")),
            other => change_failure(other, "edit", &path),
        };
        // The edit is computed from the content read under the lock, so edits of one file
        // apply one after the other, each to the result of the last. A file changed by a
        // program that ignores the lock is read again and the edit recomputed, once.
        let mut retried = false;
        loop {
            let held = lock_all(std::slice::from_ref(&target), &cancel).map_err(fail)?;
            let Some(bytes) = held[0].content().map_err(fail)? else {
                return Err(ToolFailure::new(format!("File not found: {path}")));
            };
            let current =
                std::str::from_utf8(bytes).map_err(|_| ToolFailure::new(format!("File is not valid UTF-8: {path}")))?;
            let (updated, replacements, grade) = apply(current, &input)?;
            let writes = [Write {
                index: 0,
                content: Some(updated.into_bytes()),
                like: None,
            }];
            let done = transact(&held, &writes, &cancel);
            // Unlock before freeing the two copies of the file: the next edit need not wait
            // for that.
            drop(held);
            drop(writes);
            match done {
                Ok(()) => {
                    return Ok(EditOutput {
                        operation: "edit".into(),
                        target: target.to_string_lossy().into_owned(),
                        text: summary(&resource, replacements, grade, &input.old_string, &input.new_string),
                        resource,
                        replacements,
                        grade,
                    });
                }
                Err(ChangeError::Changed(_)) if !retried => retried = true,
                Err(error) => return Err(fail(error)),
            }
        }
    })
    .await?;
    guard.disarm();
    edited
}

/// Applies the edit to `content`: BOM and line endings kept, exact match first, then the
/// graded fallback. Returns the new content, the number of replacements and the grade.
pub(crate) fn apply(content: &str, input: &EditInput) -> Result<(String, usize, Grade), ToolFailure> {
    let (bom, body) = match content.strip_prefix(BOM) {
        Some(rest) => (true, rest),
        None => (false, content),
    };
    let crlf = memchr::memmem::find(body.as_bytes(), b"\r\n").is_some();
    let fit = |text: &str| {
        let unix = text.replace("\r\n", "\n");
        if crlf { unix.replace('\n', "\r\n") } else { unix }
    };
    let old = fit(&input.old_string);
    let new = fit(&input.new_string);
    // The usual case, one exact match, costs one vectorised scan (the first match, then
    // whether a second one follows) and one copy: on a 10 MiB file, counting every match
    // first and then replacing scanned it twice more, all under the file's lock.
    let finder = memchr::memmem::Finder::new(old.as_bytes());
    let first = finder.find(body.as_bytes()).map(|start| (start, start + old.len()));
    let (result, replacements, grade) = match first {
        None => {
            let (start, end, replacement, grade) = fallback(body, &old, &new)?;
            (format!("{}{replacement}{}", &body[..start], &body[end..]), 1, grade)
        }
        Some((start, end)) => match (body.get(..start), body.get(end..)) {
            // A match of valid UTF-8 in valid UTF-8 starts and ends on character boundaries.
            (Some(before), Some(after)) if finder.find(after.as_bytes()).is_none() => {
                let mut result = String::with_capacity(before.len() + new.len() + after.len());
                result.push_str(before);
                result.push_str(&new);
                result.push_str(after);
                (result, 1, Grade::Exact)
            }
            _ => match finder.find_iter(body.as_bytes()).count() {
                1 => (body.replacen(old.as_str(), &new, 1), 1, Grade::Exact),
                n if input.replace_all => (body.replace(old.as_str(), &new), n, Grade::Exact),
                _ => return Err(ToolFailure::new(MULTIPLE)),
            },
        },
    };
    // The BOM goes back when the file had one; a new one in newString stays as written.
    let result = if bom { format!("{BOM}{result}") } else { result };
    Ok((result, replacements, grade))
}

fn fold_unicode(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\u{2018}' | '\u{2019}' | '\u{201a}' | '\u{201b}' => "'".to_string(),
            '\u{201c}' | '\u{201d}' | '\u{201e}' | '\u{201f}' => "\"".to_string(),
            '\u{2010}'..='\u{2015}' | '\u{2212}' => "-".to_string(),
            '\u{2026}' => "...".to_string(),
            '\u{00a0}' | '\u{2007}' | '\u{202f}' | '\u{2009}' | '\u{200a}' => " ".to_string(),
            other => other.to_string(),
        })
        .collect()
}

/// Lines of `text` with their byte ranges (the range excludes the line ending).
fn line_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (index, _) in text.match_indices('\n') {
        let end = if index > start && text.as_bytes()[index - 1] == b'\r' {
            index - 1
        } else {
            index
        };
        spans.push((start, end));
        start = index + 1;
    }
    if start < text.len() {
        spans.push((start, text.len()));
    }
    spans
}

fn indentation(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// The graded fallback: one unambiguous line-wise match, never a span much larger than
/// `old`. Returns (start, end, replacement, grade).
fn fallback(body: &str, old: &str, new: &str) -> Result<(usize, usize, String, Grade), ToolFailure> {
    let old_lines: Vec<&str> = old.lines().collect();
    let spans = line_spans(body);
    if old_lines.is_empty() || old_lines.len() > spans.len() {
        return Err(ToolFailure::new(not_found(body, old)));
    }
    type Compare = fn(&str, &str) -> bool;
    let grades: [(Grade, Compare); 3] = [
        (Grade::TrailingWhitespace, |a, b| a.trim_end() == b.trim_end()),
        (Grade::Indentation, |a, b| a.trim() == b.trim()),
        (Grade::Unicode, |a, b| fold_unicode(a.trim()) == fold_unicode(b.trim())),
    ];
    for (grade, same) in grades {
        let candidates: Vec<usize> = (0..=spans.len() - old_lines.len())
            .filter(|&first| {
                old_lines
                    .iter()
                    .enumerate()
                    .all(|(offset, old_line)| same(&body[spans[first + offset].0..spans[first + offset].1], old_line))
            })
            .collect();
        match candidates.as_slice() {
            [] => continue,
            [first] => {
                let start = spans[*first].0;
                let end = spans[first + old_lines.len() - 1].1;
                if end - start > old.len() * 2 + 32 {
                    return Err(ToolFailure::new(TOO_LARGE));
                }
                let replacement = if grade == Grade::Indentation {
                    reindent(
                        new,
                        indentation(old_lines[0]),
                        indentation(&body[spans[*first].0..spans[*first].1]),
                    )
                } else {
                    new.to_string()
                };
                return Ok((start, end, replacement, grade));
            }
            _ => return Err(ToolFailure::new(MULTIPLE)),
        }
    }
    Err(ToolFailure::new(not_found(body, old)))
}

/// Moves `text` from indentation `from` to `to`, line by line.
fn reindent(text: &str, from: &str, to: &str) -> String {
    text.split('\n')
        .map(|line| match line.strip_prefix(from) {
            Some(rest) if !line.trim().is_empty() => format!("{to}{rest}"),
            _ => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The not-found message, quoting the file line closest to `old`'s first line and where
/// the two part ways.
fn not_found(body: &str, old: &str) -> String {
    let first = old.lines().find(|line| !line.trim().is_empty()).unwrap_or("").trim();
    if first.is_empty() {
        return NOT_FOUND.to_string();
    }
    let mut best: Option<(usize, usize, &str)> = None;
    for (number, line) in body.lines().enumerate().take(200_000) {
        let candidate = line.trim();
        let prefix = candidate.chars().zip(first.chars()).take_while(|(a, b)| a == b).count();
        let suffix = candidate
            .chars()
            .rev()
            .zip(first.chars().rev())
            .take_while(|(a, b)| a == b)
            .count();
        let score = prefix + suffix.min(first.chars().count().saturating_sub(prefix));
        if score > 0 && best.is_none_or(|(best_score, _, _)| score > best_score) {
            best = Some((score, number + 1, line));
        }
    }
    let Some((_, number, line)) = best else {
        return NOT_FOUND.to_string();
    };
    let candidate = line.trim();
    let column = candidate.chars().zip(first.chars()).take_while(|(a, b)| a == b).count();
    let expected: String = first.chars().skip(column).take(40).collect();
    let found: String = candidate.chars().skip(column).take(40).collect();
    let shown: String = line.chars().take(240).collect();
    format!(
        "{NOT_FOUND}\nClosest line ({number}): {shown:?}\nIt differs from the first line of oldString after {column} characters: oldString has {expected:?}, the file has {found:?}."
    )
}

fn excerpt(text: &str, sign: char) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out: Vec<String> = lines
        .iter()
        .take(6)
        .map(|line| {
            if line.chars().count() > 240 {
                format!("{sign}{}...", line.chars().take(240).collect::<String>())
            } else {
                format!("{sign}{line}")
            }
        })
        .collect();
    if lines.len() > 6 {
        out.push(format!("{sign}..."));
    }
    out
}

fn summary(resource: &str, replacements: usize, grade: Grade, old: &str, new: &str) -> String {
    let mut lines = vec![
        format!("Edited file successfully: {resource}"),
        format!("Replacements: {replacements}"),
    ];
    if let Some(note) = grade.note() {
        lines.push(note.to_string());
    }
    lines.push("```diff".into());
    lines.extend(excerpt(old, '-'));
    lines.extend(excerpt(new, '+'));
    lines.push("```".into());
    lines.join("\n")
}
