//! `glob` and `grep` (spec §5.6, §5.7): in-process on ripgrep's crates — gitignore rules
//! as ripgrep's, hidden files included, version-control directories never entered,
//! symlinks never followed, no child process.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, sinks::Bytes};
use ignore::{WalkBuilder, WalkState, overrides::Override, overrides::OverrideBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate_core::{Annotations, Content, Context, PathKind, Tool, ToolFailure};

use crate::common::{ReadSight, Services, Sight, Withheld, blocking};

/// Default number of results.
pub(crate) const DEFAULT_LIMIT: usize = 100;
/// The note under a list that was cut.
pub(crate) const TRUNCATED_NOTE: &str = "(Results are truncated. Consider using a more specific path or pattern.)";
/// Version-control metadata: never listed nor searched, whatever the pattern.
pub(crate) const VCS_DIRS: &[&str] = &[".git", ".hg", ".svn", ".bzr", "_darcs", "CVS", ".jj", ".sl", ".pijul"];
/// Longest line grep shows; longer ones are cut and marked `...`.
const MAX_MATCH_LINE: usize = 2000;

/// The input of `glob`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub(crate) struct GlobInput {
    /// The glob, as ripgrep's `-g` takes it (`**/*.rs`, `src/*.toml`, `Cargo.*`).
    pub(crate) pattern: String,
    /// The directory to search (default: the project root).
    pub(crate) path: Option<String>,
    /// At most this many files (default 100).
    #[schemars(range(min = 1))]
    pub(crate) limit: Option<usize>,
}

/// The input of `grep`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub(crate) struct GrepInput {
    /// The regular expression (Rust regex syntax, like ripgrep).
    pub(crate) pattern: String,
    /// The file or directory to search (default: the project root).
    pub(crate) path: Option<String>,
    /// Only files matching this glob (`*.rs`, `*.{ts,tsx}`).
    pub(crate) include: Option<String>,
    /// At most this many matches (default 100).
    #[schemars(range(min = 1))]
    pub(crate) limit: Option<usize>,
}

/// The output of `glob` and `grep`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub(crate) struct SearchOutput {
    /// Files found (glob) or files with matches (grep), newest first.
    pub(crate) files: Vec<String>,
    /// Matches found (grep; equals the file count for glob).
    pub(crate) matches: usize,
    /// Whether the limit cut the list.
    pub(crate) truncated: bool,
    /// The model-facing text.
    #[serde(skip)]
    pub(crate) text: String,
}

/// The glob tool's description.
pub(crate) const GLOB_DESCRIPTION: &str = "Find files by name with a glob (`**/*.rs`, `src/**/mod.rs`, `*.toml`), newest first, \
as absolute paths. Respects .gitignore; hidden files are included, version-control directories (.git, …) never. At \
most `limit` (default 100) results.";

/// The grep tool's description.
pub(crate) const GREP_DESCRIPTION: &str = "Search file contents with a regular expression (ripgrep syntax). Optional `path` (a \
file or directory) and `include` glob (`*.rs`). Results are grouped by file, newest first, with line numbers; at most \
`limit` (default 100) matches are shown and all are counted. Respects .gitignore; hidden files are searched, \
version-control directories (.git, …) and binary files never; lines of `.env` files are shown only when reading the \
file is allowed.";

/// A walk of `root` as both tools share it: ignore files respected, hidden entries kept,
/// version-control directories pruned, links not followed.
fn walker(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        // ripgrep's own ignore file, above `.ignore` and `.gitignore` as in ripgrep
        // (spec §5.6, §5.7: the walk is ripgrep's).
        .add_custom_ignore_filename(".rgignore")
        .follow_links(false)
        .threads(std::thread::available_parallelism().map_or(2, usize::from).min(8))
        .filter_entry(|entry| {
            entry.depth() == 0
                || !VCS_DIRS
                    .iter()
                    .any(|name| entry.file_name() == std::ffi::OsStr::new(name))
        });
    builder
}

/// A glob as ripgrep's `-g` reads it (gitignore syntax, relative to `root`), used as a
/// filter on the files the walk yields — not as a walk override, which would let `**/*`
/// bring back ignored and version-control files.
fn glob_matcher(root: &Path, glob: &str) -> Result<Override, String> {
    let mut overrides = OverrideBuilder::new(root);
    overrides.add(glob).map_err(|error| error.to_string())?;
    overrides.build().map_err(|error| error.to_string())
}

fn modified(meta: Option<std::fs::Metadata>) -> SystemTime {
    meta.and_then(|meta| meta.modified().ok())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// Newest first, then by path: the order both tools list files in. The path is held as
/// its [`order_key`].
type Newest = (std::cmp::Reverse<SystemTime>, Vec<u8>);

/// `path` as bytes that compare the way `Path`s do, component by component: the separator
/// becomes the lowest byte, which no file name contains, so a name that is a prefix of
/// another sorts first ("a/x" < "a-b/x" < "a.b/x" as for `Path`, where plain bytes would
/// put "a-b/x" first). Comparing two keys is one `memcmp`; comparing two `Path`s walks
/// their components, which was a third of glob's time in a tree whose files share one
/// mtime (an unpacked archive: every comparison falls through to the paths).
fn order_key(path: PathBuf) -> Vec<u8> {
    use std::os::unix::ffi::OsStringExt;
    let mut key = path.into_os_string().into_vec();
    for byte in &mut key {
        if *byte == b'/' {
            *byte = 0;
        }
    }
    key
}

/// The path an [`order_key`] was made from.
fn from_order_key(mut key: Vec<u8>) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    for byte in &mut key {
        if *byte == 0 {
            *byte = b'/';
        }
    }
    PathBuf::from(std::ffi::OsString::from_vec(key))
}

/// Gathers a walker thread's results and hands them over when the thread is done.
struct Gather<'a, T> {
    local: Vec<T>,
    total: usize,
    shared: &'a Mutex<(Vec<T>, usize)>,
}

impl<T> Drop for Gather<'_, T> {
    fn drop(&mut self) {
        let mut shared = self.shared.lock().unwrap_or_else(|poison| poison.into_inner());
        shared.0.append(&mut self.local);
        shared.1 += self.total;
    }
}

/// Keeps the `limit` smallest items of `list` (sorted), amortised.
fn keep_smallest<T: Ord>(list: &mut Vec<T>, limit: usize) {
    if list.len() > limit.saturating_mul(2).max(1024) {
        list.sort_unstable();
        list.truncate(limit);
    }
}

/// The files under `root` matching `glob`, newest first: at most `limit` of them, and how
/// many matched in all.
pub(crate) fn find_files(
    root: &Path,
    glob: &str,
    limit: usize,
    sight: Option<&ReadSight>,
) -> Result<(Vec<PathBuf>, usize, Withheld), String> {
    let matcher = glob_matcher(root, glob)?;
    let shared: Mutex<(Vec<Newest>, usize)> = Mutex::new((Vec::new(), 0));
    let withheld: Mutex<Withheld> = Mutex::new(Withheld::default());
    walker(root).build_parallel().run(|| {
        let matcher = &matcher;
        let withheld = &withheld;
        let mut gather = Gather {
            local: Vec::new(),
            total: 0,
            shared: &shared,
        };
        Box::new(move |entry| {
            if let Ok(entry) = entry
                && entry.file_type().is_some_and(|kind| kind.is_file())
                && matcher.matched(entry.path(), false).is_whitelist()
            {
                // A name is shown only as far as reading the file is allowed.
                match sight.map_or(Sight::Shown, |sight| sight.of(entry.path())) {
                    Sight::Shown | Sight::Undecided => {}
                    Sight::Denied => {
                        withheld.lock().unwrap_or_else(|poison| poison.into_inner()).denied += 1;
                        return WalkState::Continue;
                    }
                    Sight::Asks => {
                        withheld.lock().unwrap_or_else(|poison| poison.into_inner()).asked += 1;
                        return WalkState::Continue;
                    }
                }
                let time = modified(entry.metadata().ok());
                gather.total += 1;
                gather
                    .local
                    .push((std::cmp::Reverse(time), order_key(entry.into_path())));
                keep_smallest(&mut gather.local, limit);
            }
            WalkState::Continue
        })
    });
    let (mut found, total) = shared.into_inner().unwrap_or_else(|poison| poison.into_inner());
    found.sort_unstable();
    found.truncate(limit);
    let withheld = withheld.into_inner().unwrap_or_else(|poison| poison.into_inner());
    Ok((
        found.into_iter().map(|(_, key)| from_order_key(key)).collect(),
        total,
        withheld,
    ))
}

/// One file's matches as shown: (line number, line).
type FileMatches = (SystemTime, PathBuf, Vec<(u64, String)>);

/// What a search found: the first `limit` matches in display order (files newest first,
/// lines in order) and the number of matches in all.
pub(crate) struct Found {
    /// Files with the matches shown, newest first.
    pub(crate) files: Vec<FileMatches>,
    /// Every match, shown or not (in files whose reading is allowed).
    pub(crate) total: usize,
    /// Files whose reading asks, with their matches and each one's match count: shown
    /// only once a person allows it.
    pub(crate) asking: Vec<(FileMatches, usize)>,
    /// What the read rules withheld outright (denied files and their match count).
    pub(crate) withheld: Withheld,
}

/// Keeps only what can still be shown: files in display order, at most `limit` lines in
/// all. Memory stays bounded by `limit` whatever the number of matches.
fn trim(files: &mut Vec<FileMatches>, limit: usize) {
    files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut left = limit;
    files.retain_mut(|(_, _, lines)| {
        lines.truncate(left);
        left -= lines.len();
        !lines.is_empty()
    });
}

fn shown_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches(['\n', '\r']);
    if text.chars().count() > MAX_MATCH_LINE {
        text.chars().take(MAX_MATCH_LINE).collect::<String>() + "..."
    } else {
        text.to_string()
    }
}

/// Lines matching `pattern` in `root` (a file or a directory), grouped by file, newest
/// first: the first `limit` of them, and the count of all. Matches beyond what can be
/// shown are counted, not kept.
pub(crate) fn search(
    root: &Path,
    pattern: &str,
    include: Option<&str>,
    limit: usize,
    sight: Option<&ReadSight>,
) -> Result<Found, String> {
    let matcher = RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|error| format!("Invalid regular expression {pattern:?}: {error}"))?;
    let include = include.map(|glob| glob_matcher(root, glob)).transpose()?;
    let shared: Mutex<(Vec<FileMatches>, usize)> = Mutex::new((Vec::new(), 0));
    let withheld: Mutex<Withheld> = Mutex::new(Withheld::default());
    let asking: Mutex<Vec<(FileMatches, usize)>> = Mutex::new(Vec::new());
    let search_one = |path: &Path, searcher: &mut grep_searcher::Searcher| {
        let mut lines = Vec::new();
        let mut count = 0usize;
        let _ = searcher.search_path(
            &matcher,
            path,
            Bytes(|number, line| {
                count += 1;
                if lines.len() < limit {
                    lines.push((number, shown_line(line)));
                }
                Ok(true)
            }),
        );
        if count == 0 {
            return;
        }
        let time = modified(std::fs::symlink_metadata(path).ok());
        // Lines are shown only as far as reading the file is allowed: the grep approval
        // covers the search, not what it would print (spec §5.2, §5.7).
        let seen = match sight.map_or(Sight::Shown, |sight| sight.of(path)) {
            Sight::Undecided if env_style(path) => Sight::Asks,
            Sight::Undecided => Sight::Shown,
            seen => seen,
        };
        match seen {
            Sight::Denied => {
                let mut withheld = withheld.lock().unwrap_or_else(|poison| poison.into_inner());
                withheld.denied += 1;
                withheld.lines += count;
                return;
            }
            Sight::Asks => {
                asking
                    .lock()
                    .unwrap_or_else(|poison| poison.into_inner())
                    .push(((time, path.to_path_buf(), lines), count));
                return;
            }
            Sight::Shown | Sight::Undecided => {}
        }
        let mut shared = shared.lock().unwrap_or_else(|poison| poison.into_inner());
        shared.1 += count;
        shared.0.push((time, path.to_path_buf(), lines));
        trim(&mut shared.0, limit);
    };
    let make_searcher = || {
        SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .build()
    };
    if root.is_file() {
        search_one(root, &mut make_searcher());
    } else {
        walker(root).build_parallel().run(|| {
            let search_one = &search_one;
            let include = include.as_ref();
            let mut searcher = make_searcher();
            Box::new(move |entry| {
                if let Ok(entry) = entry
                    && entry.file_type().is_some_and(|kind| kind.is_file())
                    && include.is_none_or(|include| include.matched(entry.path(), false).is_whitelist())
                {
                    search_one(entry.path(), &mut searcher);
                }
                WalkState::Continue
            })
        });
    }
    let (files, total) = shared.into_inner().unwrap_or_else(|poison| poison.into_inner());
    let withheld = withheld.into_inner().unwrap_or_else(|poison| poison.into_inner());
    let mut asking = asking.into_inner().unwrap_or_else(|poison| poison.into_inner());
    asking.sort_by(|a, b| a.0.1.cmp(&b.0.1));
    Ok(Found {
        files,
        total,
        asking,
        withheld,
    })
}

/// Whether `path` is a `.env`-style file, whose lines the default rules keep behind `read`.
fn env_style(path: &Path) -> bool {
    path.file_name()
        .and_then(|name| name.to_str())
        .is_some_and(|name| name == ".env" || name.starts_with(".env.") || name.ends_with(".env"))
}

fn limit_of(limit: Option<usize>) -> Result<usize, ToolFailure> {
    match limit {
        Some(0) => Err(ToolFailure::new("Invalid tool input: limit must be at least 1.")),
        Some(limit) => Ok(limit),
        None => Ok(DEFAULT_LIMIT),
    }
}

/// Builds `glob`.
pub fn glob_tool(services: Services) -> Tool {
    Tool::builder(GLOB_DESCRIPTION, move |input: GlobInput, ctx: Context| {
        let services = services.clone();
        async move {
            let limit = limit_of(input.limit)?;
            let pattern = input.pattern.clone();
            let failure = || format!("Unable to find files matching {pattern}");
            let root = search_root(
                &services,
                &ctx,
                input.path.as_deref(),
                "glob",
                &input.pattern,
                input.limit,
                None,
                failure,
            )
            .await?;
            let shown = input.path.clone().unwrap_or_else(|| ".".into());
            match std::fs::metadata(&root) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    return Err(ToolFailure::new(format!(
                        "Unable to find files matching {pattern}: {shown} is not a directory"
                    )));
                }
                Err(_) => {
                    return Err(ToolFailure::new(format!(
                        "Unable to find files matching {pattern}: search path not found: {shown}"
                    )));
                }
            }
            let glob = input.pattern;
            let sight = services.read_sight(&ctx);
            blocking(move || {
                let (files, total, withheld) = find_files(&root, &glob, limit, Some(&sight))
                    .map_err(|error| ToolFailure::new(format!("Invalid glob {glob:?}: {error}")))?;
                let truncated = total > files.len();
                let files: Vec<String> = files.iter().map(|p| p.to_string_lossy().into_owned()).collect();
                let mut text = if files.is_empty() {
                    "No files found".to_string()
                } else {
                    files.join("\n")
                };
                if truncated {
                    text.push_str("\n\n");
                    text.push_str(TRUNCATED_NOTE);
                }
                let note = withheld.note(("file", "files"));
                if !note.is_empty() {
                    text.push_str("\n\n");
                    text.push_str(&note);
                }
                Ok(SearchOutput {
                    matches: total,
                    files,
                    truncated,
                    text,
                })
            })
            .await?
        }
    })
    .project(|output: &SearchOutput| vec![Content::text(output.text.clone())])
    .title("Find files by name")
    .annotations(Annotations::read_only())
    .build()
}

/// Builds `grep`.
pub fn grep_tool(services: Services) -> Tool {
    Tool::builder(GREP_DESCRIPTION, move |input: GrepInput, ctx: Context| {
        let services = services.clone();
        async move {
            let limit = limit_of(input.limit)?;
            let pattern = input.pattern.clone();
            let failure = || format!("Unable to grep for {pattern}");
            let root = search_root(
                &services,
                &ctx,
                input.path.as_deref(),
                "grep",
                &input.pattern,
                input.limit,
                input.include.as_deref(),
                failure,
            )
            .await?;
            if !root.exists() {
                return Err(ToolFailure::new(format!(
                    "Search path not found: {}",
                    input.path.as_deref().unwrap_or(".")
                )));
            }
            let sight = services.read_sight(&ctx);
            let found = {
                let root = root.clone();
                let pattern = input.pattern.clone();
                let include = input.include.clone();
                blocking(move || {
                    search(&root, &pattern, include.as_deref(), limit, Some(&sight)).map_err(ToolFailure::new)
                })
                .await??
            };
            let Found {
                mut files,
                mut total,
                asking,
                mut withheld,
            } = found;
            // Files whose reading asks: one question for all of them, each saved as
            // itself; shown when a person allows it, else counted as withheld.
            if !asking.is_empty() {
                let paths: Vec<PathBuf> = asking.iter().map(|((_, path, _), _)| path.clone()).collect();
                match services.ask_reads(&ctx, &paths).await {
                    Ok(()) => {
                        for (file, count) in asking {
                            total += count;
                            files.push(file);
                        }
                        trim(&mut files, limit);
                    }
                    Err(refusal) => {
                        withheld.asked += asking.len();
                        withheld.lines += asking.iter().map(|(_, count)| count).sum::<usize>();
                        if let toolgate_core::Refusal::Corrected { feedback } = refusal {
                            withheld.feedback = Some(feedback);
                        }
                    }
                }
            }
            let shown: usize = files.iter().map(|(_, _, lines)| lines.len()).sum();
            let truncated = total > shown;
            let mut blocks = Vec::with_capacity(files.len());
            for (_, path, lines) in &files {
                let mut block = format!("{}:", path.display());
                for (number, line) in lines {
                    block.push_str(&format!("\n  Line {number}: {line}"));
                }
                blocks.push(block);
            }
            let mut text = if total == 0 {
                "No files found".to_string()
            } else if truncated {
                format!("Found {total} matches (showing first {shown})\n{}", blocks.join("\n\n"))
            } else {
                format!("Found {total} matches\n{}", blocks.join("\n\n"))
            };
            let note = withheld.note(("file", "files"));
            if !note.is_empty() {
                text.push_str("\n\n");
                text.push_str(&note);
            }
            if truncated {
                text.push_str("\n\n");
                text.push_str(TRUNCATED_NOTE);
            }
            Ok(SearchOutput {
                files: files
                    .iter()
                    .map(|(_, path, _)| path.to_string_lossy().into_owned())
                    .collect(),
                matches: total,
                truncated,
                text,
            })
        }
    })
    .project(|output: &SearchOutput| vec![Content::text(output.text.clone())])
    .title("Search file contents")
    .annotations(Annotations::read_only())
    .build()
}

/// Resolves the search root (a directory, or a file for grep), asks `external_directory`
/// when it is outside, then `action` on the pattern.
#[allow(clippy::too_many_arguments)]
async fn search_root(
    services: &Services,
    ctx: &Context,
    path: Option<&str>,
    action: &str,
    pattern: &str,
    limit: Option<usize>,
    include: Option<&str>,
    failure: impl Fn() -> String,
) -> Result<PathBuf, ToolFailure> {
    let resolved = services
        .location
        .resolve(path.unwrap_or("."), PathKind::Directory)
        .map_err(|error| ToolFailure::new(format!("{}: {error}", failure())))?;
    if let Some(external) = &resolved.external {
        let request = toolgate_core::PermissionRequest::new("external_directory")
            .resources([external.resource.clone()])
            .save([external.save.clone()]);
        services
            .permissions
            .assert(ctx, request)
            .await
            .map_err(|r| ToolFailure::from(r).with_message(failure()))?;
    }
    let mut request = toolgate_core::PermissionRequest::new(action)
        .resources([pattern.to_string()])
        .save([crate::common::SEARCH_SAVE])
        .metadata("root", ".")
        .metadata("path", resolved.resource.clone());
    if let Some(limit) = limit {
        request = request.metadata("limit", limit);
    }
    if let Some(include) = include {
        request = request.metadata("include", include);
    }
    services
        .permissions
        .assert(ctx, request)
        .await
        .map_err(|r| ToolFailure::from(r).with_message(failure()))?;
    Ok(resolved.path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_keys_sort_paths_as_path_does() {
        let names = [
            "/p/a/x",
            "/p/a-b/x",
            "/p/a.b/x",
            "/p/a",
            "/p/a b/x",
            "/p/a/x/y",
            "/p/ab",
            "/p/a!/x",
            "/p/A/x",
            "/p/é/x",
            "/p/a/x.rs",
            "/p/a/x-y",
            "/p/a/x/z",
            "/p/.hidden/x",
            "/p/_/x",
            "/p/~/x",
            "/p/a+/x",
        ];
        let mut by_path: Vec<PathBuf> = names.iter().map(PathBuf::from).collect();
        by_path.sort();
        let mut keys: Vec<Vec<u8>> = names.iter().map(|name| order_key(PathBuf::from(name))).collect();
        keys.sort();
        let by_key: Vec<PathBuf> = keys.into_iter().map(from_order_key).collect();
        assert_eq!(by_key, by_path);
        // Plain bytes would not: '-', '.', ' ', '!' and '+' sort before '/'.
        let mut by_bytes: Vec<&str> = names.to_vec();
        by_bytes.sort();
        assert_ne!(by_bytes.iter().map(PathBuf::from).collect::<Vec<_>>(), by_path);
    }
}
