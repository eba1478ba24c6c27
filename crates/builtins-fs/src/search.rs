//! `glob` and `grep` (spec §5.6, §5.7): in-process on ripgrep's crates — gitignore and
//! hidden-file rules as ripgrep's defaults, symlinks never followed, no child process.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, SearcherBuilder, sinks::Lossy};
use ignore::{WalkBuilder, WalkState, overrides::OverrideBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolgate_core::{Content, Context, PathKind, Tool, ToolFailure};

use crate::common::{Services, blocking};

/// Default number of results.
pub const DEFAULT_LIMIT: usize = 100;
/// The note under a list that was cut.
pub const TRUNCATED_NOTE: &str = "(Results are truncated. Consider using a more specific path or pattern.)";

/// The input of `glob`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct GlobInput {
    /// The glob, as ripgrep's `-g` takes it (`**/*.rs`, `src/*.toml`, `Cargo.*`).
    pub pattern: String,
    /// The directory to search (default: the project root).
    pub path: Option<String>,
    /// At most this many files (default 100).
    #[schemars(range(min = 1))]
    pub limit: Option<usize>,
}

/// The input of `grep`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct GrepInput {
    /// The regular expression (Rust regex syntax, like ripgrep).
    pub pattern: String,
    /// The file or directory to search (default: the project root).
    pub path: Option<String>,
    /// Only files matching this glob (`*.rs`, `*.{ts,tsx}`).
    pub include: Option<String>,
    /// At most this many matches (default 100).
    #[schemars(range(min = 1))]
    pub limit: Option<usize>,
}

/// The output of `glob` and `grep`.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct SearchOutput {
    /// Files found (glob) or files with matches (grep), newest first.
    pub files: Vec<String>,
    /// Matches found (grep; equals the file count for glob).
    pub matches: usize,
    /// Whether the limit cut the list.
    pub truncated: bool,
    /// The model-facing text.
    #[serde(skip)]
    pub text: String,
}

/// The glob tool's description.
pub const GLOB_DESCRIPTION: &str = "Find files by name with a glob (`**/*.rs`, `src/**/mod.rs`, `*.toml`), newest first, \
as absolute paths. Respects .gitignore and skips hidden files like ripgrep. At most `limit` (default 100) results.";

/// The grep tool's description.
pub const GREP_DESCRIPTION: &str = "Search file contents with a regular expression (ripgrep syntax). Optional `path` (a \
file or directory) and `include` glob (`*.rs`). Results are grouped by file, newest first, with line numbers; at most \
`limit` (default 100) matches. Respects .gitignore and skips hidden and binary files like ripgrep.";

fn walker(root: &Path, glob: Option<&str>) -> Result<WalkBuilder, String> {
    let mut builder = WalkBuilder::new(root);
    builder
        .follow_links(false)
        .threads(std::thread::available_parallelism().map_or(2, usize::from).min(8));
    if let Some(glob) = glob {
        let mut overrides = OverrideBuilder::new(root);
        overrides.add(glob).map_err(|error| error.to_string())?;
        builder.overrides(overrides.build().map_err(|error| error.to_string())?);
    }
    Ok(builder)
}

fn modified(path: &Path) -> SystemTime {
    std::fs::symlink_metadata(path)
        .and_then(|meta| meta.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// Files under `root` matching `glob`, newest first.
pub fn find_files(root: &Path, glob: &str) -> Result<Vec<PathBuf>, String> {
    let found = Mutex::new(Vec::new());
    walker(root, Some(glob))?.build_parallel().run(|| {
        let found = &found;
        Box::new(move |entry| {
            if let Ok(entry) = entry
                && entry.file_type().is_some_and(|kind| kind.is_file())
            {
                let path = entry.into_path();
                let time = modified(&path);
                found
                    .lock()
                    .unwrap_or_else(|poison| poison.into_inner())
                    .push((time, path));
            }
            WalkState::Continue
        })
    });
    let mut found = found.into_inner().unwrap_or_else(|poison| poison.into_inner());
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    Ok(found.into_iter().map(|(_, path)| path).collect())
}

/// One file's matches: (line number, line).
type FileMatches = (SystemTime, PathBuf, Vec<(u64, String)>);

/// Lines matching `pattern` in `root` (a file or a directory), grouped by file, newest first.
pub fn search(root: &Path, pattern: &str, include: Option<&str>) -> Result<Vec<FileMatches>, String> {
    let matcher = RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|error| format!("Invalid regular expression {pattern:?}: {error}"))?;
    let results: Mutex<Vec<FileMatches>> = Mutex::new(Vec::new());
    let search_one = |path: &Path, searcher: &mut grep_searcher::Searcher| {
        let mut lines = Vec::new();
        let _ = searcher.search_path(
            &matcher,
            path,
            Lossy(|number, line| {
                let line = line.trim_end_matches(['\n', '\r']);
                let line = if line.chars().count() > 2000 {
                    line.chars().take(2000).collect::<String>() + "..."
                } else {
                    line.to_string()
                };
                lines.push((number, line));
                Ok(true)
            }),
        );
        if !lines.is_empty() {
            results.lock().unwrap_or_else(|poison| poison.into_inner()).push((
                modified(path),
                path.to_path_buf(),
                lines,
            ));
        }
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
        walker(root, include)?.build_parallel().run(|| {
            let search_one = &search_one;
            let mut searcher = make_searcher();
            Box::new(move |entry| {
                if let Ok(entry) = entry
                    && entry.file_type().is_some_and(|kind| kind.is_file())
                {
                    search_one(entry.path(), &mut searcher);
                }
                WalkState::Continue
            })
        });
    }
    let mut results = results.into_inner().unwrap_or_else(|poison| poison.into_inner());
    results.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    Ok(results)
}

/// Builds `glob`.
pub fn glob_tool(services: Services) -> Tool {
    Tool::builder(GLOB_DESCRIPTION, move |input: GlobInput, ctx: Context| {
        let services = services.clone();
        async move {
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
            let limit = input.limit.unwrap_or(DEFAULT_LIMIT);
            let glob = input.pattern;
            blocking(move || {
                let mut files = find_files(&root, &glob)
                    .map_err(|error| ToolFailure::new(format!("Invalid glob {glob:?}: {error}")))?;
                let truncated = files.len() > limit;
                files.truncate(limit);
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
                Ok(SearchOutput {
                    matches: files.len(),
                    files,
                    truncated,
                    text,
                })
            })
            .await?
        }
    })
    .project(|output: &SearchOutput| vec![Content::text(output.text.clone())])
    .build()
}

/// Builds `grep`.
pub fn grep_tool(services: Services) -> Tool {
    Tool::builder(GREP_DESCRIPTION, move |input: GrepInput, ctx: Context| {
        let services = services.clone();
        async move {
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
            let limit = input.limit.unwrap_or(DEFAULT_LIMIT);
            blocking(move || {
                let results = search(&root, &input.pattern, input.include.as_deref()).map_err(ToolFailure::new)?;
                let total: usize = results.iter().map(|(_, _, lines)| lines.len()).sum();
                let mut shown = 0;
                let mut blocks = Vec::new();
                let mut files = Vec::new();
                for (_, path, lines) in &results {
                    if shown >= limit {
                        break;
                    }
                    let take = (limit - shown).min(lines.len());
                    shown += take;
                    let mut block = format!("{}:", path.display());
                    for (number, line) in &lines[..take] {
                        block.push_str(&format!("\n  Line {number}: {line}"));
                    }
                    blocks.push(block);
                    files.push(path.to_string_lossy().into_owned());
                }
                let truncated = total > shown;
                let mut text = if total == 0 {
                    "No files found".to_string()
                } else {
                    format!("Found {total} matches\n{}", blocks.join("\n\n"))
                };
                if truncated {
                    text.push_str("\n\n");
                    text.push_str(TRUNCATED_NOTE);
                }
                Ok(SearchOutput {
                    files,
                    matches: total,
                    truncated,
                    text,
                })
            })
            .await?
        }
    })
    .project(|output: &SearchOutput| vec![Content::text(output.text.clone())])
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
        .save(["*"])
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
