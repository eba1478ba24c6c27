//! Discovery and layering: which files are read, in which order, and what each gives.
//!
//! Layers, lowest first (later layers win where their rules match; spec §4.9 and
//! README "Configuration"):
//!
//! 1. OpenCode's global directory (`$XDG_CONFIG_HOME/opencode`, else
//!    `~/.config/opencode`): `config.json`, `opencode.json`, `opencode.jsonc`, then its
//!    Markdown agents.
//! 2. toolgate's global directory: `toolgate.json`, `toolgate.jsonc`.
//! 3. `$OPENCODE_CONFIG`, a file.
//! 4. The project's files, from the worktree root (the nearest directory with `.git`, else
//!    the file-system root) down to the directory, nearest last: in each, `opencode.json`,
//!    `opencode.jsonc`, `toolgate.json`, `toolgate.jsonc`.
//! 5. `~/.opencode`, then every `.opencode` directory on the same walk, nearest last:
//!    `opencode.json`, `opencode.jsonc`, then its Markdown agents. (As in OpenCode, every
//!    `.opencode` file outranks every file of step 4.)
//! 6. `$OPENCODE_CONFIG_DIR`: the same as a `.opencode` directory.
//! 7. `$OPENCODE_CONFIG_CONTENT`, inline JSONC.
//! 8. `--config FILE` (toolgate's).
//! 9. `$OPENCODE_PERMISSION`, then `$TOOLGATE_PERMISSION`: a `permission` value each.
//!
//! Then the managed layers, after everything and never overridden: OpenCode's managed
//! directory (`/etc/opencode` on Linux) `opencode.json`, `opencode.jsonc` and its agents,
//! then toolgate's `managed.json` in its global directory.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::agent::{AgentSpec, agent_specs, front_matter, markdown_name};
use crate::decode::decode;
use crate::document::{Document, Sandbox, Websearch};
use crate::error::{ConfigError, ErrorKind, Warning, key_path};
use crate::mcp::{McpEntry, McpLaunch, McpServer};
use crate::rules::{Permission, RuleSpec, block_rules, permission_rules};

/// Where a layer comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SourceKind {
    /// OpenCode's global config directory.
    OpenCodeGlobal,
    /// toolgate's global config directory.
    ToolgateGlobal,
    /// `$OPENCODE_CONFIG`.
    OpenCodeConfig,
    /// A file found on the walk from the worktree root to the directory.
    Project,
    /// A `.opencode` directory (or `~/.opencode`, or `$OPENCODE_CONFIG_DIR`).
    DotOpenCode,
    /// A Markdown agent file.
    MarkdownAgent,
    /// `$OPENCODE_CONFIG_CONTENT`.
    OpenCodeConfigContent,
    /// `--config FILE`.
    Explicit,
    /// `$OPENCODE_PERMISSION`.
    OpenCodePermission,
    /// `$TOOLGATE_PERMISSION`.
    ToolgatePermission,
    /// OpenCode's managed directory.
    OpenCodeManaged,
    /// toolgate's `managed.json`.
    Managed,
}

impl SourceKind {
    /// A short name for listings (`toolgate config`).
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::OpenCodeGlobal => "opencode global",
            SourceKind::ToolgateGlobal => "toolgate global",
            SourceKind::OpenCodeConfig => "$OPENCODE_CONFIG",
            SourceKind::Project => "project",
            SourceKind::DotOpenCode => ".opencode",
            SourceKind::MarkdownAgent => "agent file",
            SourceKind::OpenCodeConfigContent => "$OPENCODE_CONFIG_CONTENT",
            SourceKind::Explicit => "--config",
            SourceKind::OpenCodePermission => "$OPENCODE_PERMISSION",
            SourceKind::ToolgatePermission => "$TOOLGATE_PERMISSION",
            SourceKind::OpenCodeManaged => "opencode managed",
            SourceKind::Managed => "managed",
        }
    }

    /// Whether the layer is an administrator's (appended after everything).
    pub fn is_managed(self) -> bool {
        matches!(self, SourceKind::OpenCodeManaged | SourceKind::Managed)
    }
}

/// The environment variables that choose config, read once ([`Env::from_process`]) so a
/// load can be repeated and tested with any values.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Env {
    /// `$OPENCODE_CONFIG`: one more file, after the global ones.
    pub opencode_config: Option<PathBuf>,
    /// `$OPENCODE_CONFIG_DIR`: one more config directory, after the `.opencode` ones.
    pub opencode_config_dir: Option<PathBuf>,
    /// `$OPENCODE_CONFIG_CONTENT`: inline JSONC.
    pub opencode_config_content: Option<String>,
    /// `$OPENCODE_PERMISSION`: a JSON `permission` value.
    pub opencode_permission: Option<String>,
    /// `$TOOLGATE_PERMISSION`: a JSON `permission` value.
    pub toolgate_permission: Option<String>,
    /// `$OPENCODE_DISABLE_PROJECT_CONFIG` is `true` or `1`: OpenCode's project files and
    /// `.opencode` directories are not read (toolgate's own project files still are).
    pub disable_project_config: bool,
    /// The variables `{env:VAR}` reads; `None`: this process's.
    pub vars: Option<std::collections::HashMap<String, String>>,
}

impl Env {
    /// The variables of this process. One that is set but not UTF-8 (where text is
    /// expected) is an error, never "unset": dropping its layer would drop its denies.
    pub fn from_process() -> Result<Env, ConfigError> {
        let text = |name: &str| match std::env::var(name) {
            Ok(text) => Ok(Some(text)),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(ConfigError::whole(
                ErrorKind::Environment,
                format!("${name}"),
                "is not valid UTF-8",
            )),
        };
        let path = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        Ok(Env {
            opencode_config: path("OPENCODE_CONFIG"),
            opencode_config_dir: path("OPENCODE_CONFIG_DIR"),
            opencode_config_content: text("OPENCODE_CONFIG_CONTENT")?,
            opencode_permission: text("OPENCODE_PERMISSION")?,
            toolgate_permission: text("TOOLGATE_PERMISSION")?,
            disable_project_config: matches!(
                std::env::var("OPENCODE_DISABLE_PROJECT_CONFIG").as_deref(),
                Ok("true" | "1")
            ),
            vars: None,
        })
    }
}

/// What a load starts from: the directory, the global directories and the environment.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Inputs {
    /// The directory toolgate runs for (the project; files are found upward from it).
    pub directory: PathBuf,
    /// toolgate's global config directory (`toolgate.json`, `managed.json`).
    pub toolgate_dir: Option<PathBuf>,
    /// toolgate's data directory (its token, approval database, `trusted.json`): a
    /// project file's `{file:…}` never reads from it, nor from `toolgate_dir`.
    pub data_dir: Option<PathBuf>,
    /// OpenCode's global config directory ([`opencode_global_dir`]).
    pub opencode_dir: Option<PathBuf>,
    /// OpenCode's managed directory ([`opencode_managed_dir`]).
    pub managed_dir: Option<PathBuf>,
    /// The home directory: `~` in rules, and `~/.opencode`.
    pub home: Option<PathBuf>,
    /// `--config FILE`.
    pub explicit: Option<PathBuf>,
    /// The environment variables that choose config.
    pub env: Env,
}

impl Inputs {
    /// Inputs for `directory` with nothing else set.
    pub fn new(directory: impl Into<PathBuf>) -> Inputs {
        Inputs {
            directory: directory.into(),
            ..Inputs::default()
        }
    }

    /// Inputs for `directory` as this process finds them: toolgate's global directory
    /// (`$TOOLGATE_CONFIG_DIR`, else the platform config directory's `toolgate`), OpenCode's
    /// global and managed directories, the home directory, and the environment
    /// ([`Env::from_process`]). `--config` is left for the caller ([`Inputs::explicit`]).
    pub fn from_process(directory: impl Into<PathBuf>) -> Result<Inputs, ConfigError> {
        use etcetera::BaseStrategy;
        let base = etcetera::choose_base_strategy().ok();
        let home = base.as_ref().map(|b| b.home_dir().to_path_buf());
        let toolgate_dir = std::env::var_os("TOOLGATE_CONFIG_DIR")
            .map(PathBuf::from)
            .or_else(|| base.as_ref().map(|b| b.config_dir().join("toolgate")));
        Ok(Inputs {
            directory: directory.into(),
            toolgate_dir,
            data_dir: None,
            opencode_dir: opencode_global_dir(home.as_deref()),
            managed_dir: opencode_managed_dir(),
            home,
            explicit: None,
            env: Env::from_process()?,
        })
    }

    /// Sets toolgate's global config directory.
    pub fn toolgate_dir(mut self, dir: impl Into<PathBuf>) -> Inputs {
        self.toolgate_dir = Some(dir.into());
        self
    }

    /// Sets toolgate's data directory.
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Inputs {
        self.data_dir = Some(dir.into());
        self
    }

    /// Sets OpenCode's global config directory.
    pub fn opencode_dir(mut self, dir: Option<PathBuf>) -> Inputs {
        self.opencode_dir = dir;
        self
    }

    /// Sets OpenCode's managed directory.
    pub fn managed_dir(mut self, dir: Option<PathBuf>) -> Inputs {
        self.managed_dir = dir;
        self
    }

    /// Sets the home directory.
    pub fn home(mut self, home: Option<PathBuf>) -> Inputs {
        self.home = home;
        self
    }

    /// Sets `--config FILE`.
    pub fn explicit(mut self, file: Option<PathBuf>) -> Inputs {
        self.explicit = file;
        self
    }

    /// Sets the environment.
    pub fn env(mut self, env: Env) -> Inputs {
        self.env = env;
        self
    }
}

/// OpenCode's global config directory: `$XDG_CONFIG_HOME/opencode`, else
/// `~/.config/opencode` (OpenCode uses the XDG layout on every platform).
pub fn opencode_global_dir(home: Option<&Path>) -> Option<PathBuf> {
    match std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from) {
        Some(xdg) if xdg.is_absolute() => Some(xdg.join("opencode")),
        _ => home.map(|home| home.join(".config").join("opencode")),
    }
}

/// OpenCode's managed (administrator's) directory on this platform, or
/// `$OPENCODE_TEST_MANAGED_CONFIG_DIR` when set (OpenCode's own override).
pub fn opencode_managed_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("OPENCODE_TEST_MANAGED_CONFIG_DIR").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    if cfg!(target_os = "macos") {
        Some(PathBuf::from("/Library/Application Support/opencode"))
    } else if cfg!(unix) {
        Some(PathBuf::from("/etc/opencode"))
    } else {
        std::env::var_os("ProgramData").map(|dir| PathBuf::from(dir).join("opencode"))
    }
}

/// One layer: a file (or variable) as read, and the rules and agent blocks it gives.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Layer {
    /// Where it comes from.
    pub kind: SourceKind,
    /// The file's path, or the variable's name: what rules from it name as their source.
    pub source: String,
    /// The file, when it is one.
    pub path: Option<PathBuf>,
    /// The decoded document.
    pub document: Document,
    /// The document as written (the settings are deep-merged from these).
    pub raw: Value,
    /// Its rules, in order: `tools`, `permission`, `permissions`.
    pub rules: Vec<RuleSpec>,
    /// Its agent blocks, in order: `agent`, `mode`, `agents` (or the Markdown agent).
    pub agents: Vec<AgentSpec>,
    /// Found on the walk from the worktree root (its files and `.opencode` directories):
    /// the repository's say, not the user's. What such a file may change without trust
    /// is limited ([`Loaded::untrusted`]), and `{env:…}` never gives it toolgate's secrets.
    pub project: bool,
    /// The SHA-256 of the file's bytes as read and decoded (lowercase hex), when it is a file.
    pub sha256: Option<String>,
    /// The files its `{file:…}` read, in order: they define its values as much as it does
    /// (their edits always ask, like the file's own; README "Files that define the rules").
    pub references: Vec<PathBuf>,
    /// The values its `{env:…}` and `{file:…}` put into `mcp`: secrets that every tool's
    /// output has redacted (README "Redaction").
    pub mcp_secrets: Vec<String>,
}

/// Everything a load read.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Loaded {
    /// The user's layers, lowest first.
    pub layers: Vec<Layer>,
    /// The managed layers, appended after everything.
    pub managed: Vec<Layer>,
    /// What was noticed but did not stop the load, one line each.
    pub warnings: Vec<Warning>,
}

/// Keys whose misspelling is an error: their rules would be silently lost.
const RULE_KEYS: [&str; 5] = ["permission", "permissions", "tools", "agent", "agents"];
const AGENT_RULE_KEYS: [&str; 3] = ["permission", "permissions", "tools"];

/// Reads every layer for `inputs`. A file that exists but cannot be read, parsed or
/// decoded is an error naming it: never a partial set of rules.
pub fn load(inputs: &Inputs) -> Result<Loaded, ConfigError> {
    let mut loader = Loader {
        home: inputs.home.clone(),
        loaded: Loaded::default(),
        seen_dirs: Vec::new(),
        owner: None,
        project: false,
        vars: inputs.env.vars.clone(),
        scope: None,
        own: [&inputs.toolgate_dir, &inputs.data_dir]
            .into_iter()
            .flatten()
            .map(|dir| std::fs::canonicalize(dir).unwrap_or_else(|_| std::path::absolute(dir).unwrap_or(dir.clone())))
            .collect(),
        directory: std::path::absolute(&inputs.directory).unwrap_or_else(|_| inputs.directory.clone()),
    };
    let env = &inputs.env;
    if let Some(dir) = &inputs.opencode_dir {
        loader.files(
            dir,
            &["config.json", "opencode.json", "opencode.jsonc"],
            SourceKind::OpenCodeGlobal,
        )?;
        loader.agents(dir, SourceKind::MarkdownAgent)?;
    }
    if let Some(dir) = &inputs.toolgate_dir {
        loader.files(dir, &["toolgate.json", "toolgate.jsonc"], SourceKind::ToolgateGlobal)?;
    }
    if let Some(file) = &env.opencode_config {
        loader.required(file, SourceKind::OpenCodeConfig, "$OPENCODE_CONFIG")?;
    }
    // A relative directory is the current directory's: the walk needs its ancestors.
    let directory = std::path::absolute(&inputs.directory).unwrap_or_else(|_| inputs.directory.clone());
    let walk = walk(&directory);
    loader.owner = owner(&directory);
    loader.project = true;
    // The project `{file:…}` of a project file may read: the worktree root, when the walk
    // found one (without `.git` each file's own directory, as the walk may reach `/`).
    loader.scope = walk
        .first()
        .filter(|root| root.join(".git").exists())
        .map(|root| std::fs::canonicalize(root).unwrap_or_else(|_| root.clone()));
    for dir in &walk {
        if !env.disable_project_config {
            loader.files(dir, &["opencode.json", "opencode.jsonc"], SourceKind::Project)?;
        }
        loader.files(dir, &["toolgate.json", "toolgate.jsonc"], SourceKind::Project)?;
    }
    loader.owner = None;
    loader.project = false;
    if !env.disable_project_config {
        if let Some(home) = &inputs.home {
            loader.directory(&home.join(".opencode"))?;
        }
        loader.owner = owner(&directory);
        loader.project = true;
        for dir in &walk {
            loader.directory(&dir.join(".opencode"))?;
        }
    }
    loader.owner = None;
    loader.project = false;
    if let Some(dir) = &env.opencode_config_dir {
        loader.directory(dir)?;
    }
    if let Some(text) = &env.opencode_config_content {
        let (mut layer, read) = loader.text(
            text,
            SourceKind::OpenCodeConfigContent,
            "$OPENCODE_CONFIG_CONTENT",
            None,
        )?;
        layer.references = read.into_iter().map(|(path, _)| path).collect();
        loader.loaded.layers.push(layer);
    }
    if let Some(file) = &inputs.explicit {
        loader.required(file, SourceKind::Explicit, "--config")?;
    }
    for (text, kind, name) in [
        (
            &env.opencode_permission,
            SourceKind::OpenCodePermission,
            "$OPENCODE_PERMISSION",
        ),
        (
            &env.toolgate_permission,
            SourceKind::ToolgatePermission,
            "$TOOLGATE_PERMISSION",
        ),
    ] {
        if let Some(text) = text {
            let layer = loader.permission_env(text, kind, name)?;
            loader.loaded.layers.push(layer);
        }
    }
    if let Some(dir) = &inputs.managed_dir {
        loader.files(dir, &["opencode.json", "opencode.jsonc"], SourceKind::OpenCodeManaged)?;
        loader.agents(dir, SourceKind::OpenCodeManaged)?;
    }
    if let Some(dir) = &inputs.toolgate_dir {
        loader.files(dir, &["managed.json"], SourceKind::Managed)?;
    }
    let Loader { mut loaded, .. } = loader;
    let (managed, layers): (Vec<Layer>, Vec<Layer>) = loaded.layers.drain(..).partition(|l| l.kind.is_managed());
    loaded.layers = layers;
    loaded.managed = managed;
    Ok(loaded)
}

/// A place whose content defines rules, agents or settings: a file, or a whole directory
/// (a `.opencode` directory, a global config directory). See [`rule_paths`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RulePath {
    /// The file or directory, as discovery spells it (it may not exist yet).
    pub path: PathBuf,
    /// True for a directory: everything beneath it counts.
    pub tree: bool,
}

impl RulePath {
    /// One file.
    pub fn file(path: impl Into<PathBuf>) -> RulePath {
        RulePath {
            path: path.into(),
            tree: false,
        }
    }
}

/// Every place [`load`] reads for `inputs`, or would read once it exists: the files that
/// define the rules and the directories that hold them (Markdown agents, `.opencode`
/// directories, the global and managed directories), plus each project directory's
/// `.toolgate`. An edit of any of them changes what the rules are, so the permission
/// service always asks before one (README, "Files that define the rules").
pub fn rule_paths(inputs: &Inputs) -> Vec<RulePath> {
    let file = |path: PathBuf| RulePath { path, tree: false };
    let tree = |path: PathBuf| RulePath { path, tree: true };
    let mut out = Vec::new();
    let env = &inputs.env;
    out.extend(inputs.opencode_dir.clone().map(tree));
    out.extend(inputs.toolgate_dir.clone().map(tree));
    out.extend(inputs.managed_dir.clone().map(tree));
    out.extend(env.opencode_config.clone().map(file));
    out.extend(inputs.explicit.clone().map(file));
    // A `.opencode` directory: its config files, its agents and modes, and the plugins
    // and tools OpenCode runs from it — not its plans, which the plan agent writes.
    let dot_opencode = |out: &mut Vec<RulePath>, dir: &Path| {
        for name in ["opencode.json", "opencode.jsonc"] {
            out.push(file(dir.join(name)));
        }
        for name in DOT_OPENCODE_TREES {
            out.push(tree(dir.join(name)));
        }
    };
    if let Some(dir) = &env.opencode_config_dir {
        dot_opencode(&mut out, dir);
    }
    if let Some(home) = &inputs.home {
        dot_opencode(&mut out, &home.join(".opencode"));
    }
    let directory = std::path::absolute(&inputs.directory).unwrap_or_else(|_| inputs.directory.clone());
    for dir in walk(&directory) {
        for name in ["opencode.json", "opencode.jsonc", "toolgate.json", "toolgate.jsonc"] {
            out.push(file(dir.join(name)));
        }
        dot_opencode(&mut out, &dir.join(".opencode"));
        out.push(tree(dir.join(".toolgate")));
    }
    out
}

/// The directories of a `.opencode` directory that define agents or hold code OpenCode
/// runs (both spellings of each, as OpenCode reads both).
const DOT_OPENCODE_TREES: [&str; 8] = ["agent", "agents", "mode", "modes", "plugin", "plugins", "tool", "tools"];

/// The directories from the worktree root (the nearest ancestor with `.git`; without one,
/// the file-system root) down to `directory`, farthest first.
fn walk(directory: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for dir in directory.ancestors() {
        dirs.push(dir.to_path_buf());
        if dir.join(".git").exists() {
            break;
        }
    }
    dirs.reverse();
    dirs
}

struct Loader {
    home: Option<PathBuf>,
    loaded: Loaded,
    seen_dirs: Vec<PathBuf>,
    /// While walking the project's directories: the directory's owner. A file found
    /// there that someone else owns (not root either) is not read — in a directory
    /// without `.git` the walk reaches shared ones like `/tmp`, where anyone may leave an
    /// `opencode.json` with rules or MCP servers.
    owner: Option<u32>,
    /// While walking the project's directories: the layers read are [`Layer::project`].
    project: bool,
    /// [`Env::vars`].
    vars: Option<std::collections::HashMap<String, String>>,
    /// While walking the project's directories: the worktree root (canonical) when there
    /// is one; `None` reads the directory of each file as its project.
    scope: Option<PathBuf>,
    /// toolgate's own directories, canonical ([`crate::vars::FileScope::own`]).
    own: Vec<PathBuf>,
    /// The directory of the load: `{file:…}` of `$OPENCODE_CONFIG_CONTENT` resolves here.
    directory: PathBuf,
}

/// The owner of `path` (Unix), for [`Loader::owner`].
fn owner(path: &Path) -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|meta| meta.uid())
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

impl Loader {
    /// Whether `file` is someone else's, found on the project walk: warned about, not read.
    fn foreign(&mut self, file: &Path) -> bool {
        let (Some(expected), Some(found)) = (self.owner, owner(file)) else {
            return false;
        };
        if found == expected || found == 0 {
            return false;
        }
        self.warn(
            &file.display().to_string(),
            "",
            format!("not read: owned by uid {found}, neither the directory's owner (uid {expected}) nor root"),
        );
        true
    }

    /// Each of `names` in `dir` that exists, in order.
    fn files(&mut self, dir: &Path, names: &[&str], kind: SourceKind) -> Result<(), ConfigError> {
        for name in names {
            let file = dir.join(name);
            if file.is_file() && !self.foreign(&file) {
                let layer = self.file(&file, kind)?;
                self.loaded.layers.push(layer);
            }
        }
        Ok(())
    }

    /// A file that was named: missing is an error.
    fn required(&mut self, file: &Path, kind: SourceKind, by: &str) -> Result<(), ConfigError> {
        if !file.is_file() {
            return Err(ConfigError::whole(
                ErrorKind::Read,
                file.display().to_string(),
                format!("does not exist (named by {by})"),
            ));
        }
        let layer = self.file(file, kind)?;
        self.loaded.layers.push(layer);
        Ok(())
    }

    /// A config directory (`.opencode`): its files, then its agents; each directory once.
    fn directory(&mut self, dir: &Path) -> Result<(), ConfigError> {
        if !dir.is_dir() || self.foreign(dir) {
            return Ok(());
        }
        let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        if self.seen_dirs.contains(&canonical) {
            return Ok(());
        }
        self.seen_dirs.push(canonical);
        self.files(dir, &["opencode.json", "opencode.jsonc"], SourceKind::DotOpenCode)?;
        self.agents(dir, SourceKind::MarkdownAgent)
    }

    /// The Markdown agents of a config directory: `agent/**/*.md`, `agents/**/*.md`,
    /// `mode/*.md` and `modes/*.md` (the last two primary), in path order.
    fn agents(&mut self, dir: &Path, kind: SourceKind) -> Result<(), ConfigError> {
        for (sub, recursive, primary) in [
            ("agent", true, false),
            ("agents", true, false),
            ("mode", false, true),
            ("modes", false, true),
        ] {
            let root = dir.join(sub);
            if !root.is_dir() {
                continue;
            }
            let mut files = Vec::new();
            markdown_files(&root, recursive, &mut files)?;
            files.sort();
            for file in files {
                if self.foreign(&file) {
                    continue;
                }
                let relative = file.strip_prefix(dir).unwrap_or(&file);
                let name = markdown_name(relative);
                let layer = self.markdown(&file, &name, primary, kind)?;
                self.loaded.layers.push(layer);
            }
        }
        Ok(())
    }

    fn read_text(file: &Path) -> Result<String, ConfigError> {
        std::fs::read_to_string(file).map_err(|error| {
            ConfigError::whole(
                ErrorKind::Read,
                file.display().to_string(),
                format!("cannot be read: {error}"),
            )
        })
    }

    fn file(&mut self, file: &Path, kind: SourceKind) -> Result<Layer, ConfigError> {
        let text = Self::read_text(file)?;
        let source = file.display().to_string();
        let (mut layer, read) = self.text(&text, kind, &source, Some(file))?;
        // Of the very text decoded: trust is given to what was read, never to a later
        // version of the file — nor of a file its `{file:…}` names, so those are hashed
        // with it (each as a NUL, its path, a NUL and the content substituted).
        let mut bytes = text.into_bytes();
        layer.references = read.iter().map(|(path, _)| path.clone()).collect();
        for (path, content) in read {
            bytes.push(0);
            bytes.extend_from_slice(path.as_os_str().as_encoded_bytes());
            bytes.push(0);
            bytes.extend_from_slice(content.as_bytes());
        }
        layer.sha256 = Some(crate::trust::sha256_hex(&bytes));
        Ok(layer)
    }

    /// Parses and substitutes `text`, then decodes it; also the files its `{file:…}` read.
    fn text(
        &mut self,
        text: &str,
        kind: SourceKind,
        source: &str,
        path: Option<&Path>,
    ) -> Result<(Layer, Vec<(PathBuf, String)>), ConfigError> {
        let options = jsonc_parser::ParseOptions::default();
        let mut raw: Value = jsonc_parser::parse_to_serde_value(text, &options)
            .map_err(|error| ConfigError::whole(ErrorKind::Syntax, source, format!("is not valid JSONC: {error}")))?;
        if !raw.is_object() {
            return Err(ConfigError::whole(
                ErrorKind::Invalid,
                source,
                "expected an object at the top level",
            ));
        }
        let mut refused = Vec::new();
        let vars = self.vars.take();
        let lookup = |name: &str| match &vars {
            Some(vars) => vars.get(name).cloned(),
            None => std::env::var(name).ok(),
        };
        let base = path
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_else(|| self.directory.clone());
        // A project file reads only inside its project: the worktree root, else the
        // directory it was found in (for a `.opencode` file, the one holding `.opencode`).
        let scope = self.project.then(|| {
            let own_dir = if base.file_name().is_some_and(|name| name == ".opencode") {
                base.parent().unwrap_or(&base).to_path_buf()
            } else {
                base.clone()
            };
            let root = self
                .scope
                .clone()
                .unwrap_or_else(|| std::fs::canonicalize(&own_dir).unwrap_or(own_dir));
            crate::vars::FileScope {
                root,
                own: self.own.clone(),
            }
        });
        let mut files = crate::vars::Files {
            base: &base,
            home: self.home.as_deref(),
            scope: scope.as_ref(),
            read: Vec::new(),
            refused: Vec::new(),
            secrets: Vec::new(),
        };
        let substituted = crate::vars::substitute_value(&mut raw, "", self.project, &lookup, &mut refused, &mut files);
        let crate::vars::Files {
            read,
            refused: refused_files,
            secrets,
            ..
        } = files;
        self.vars = vars;
        substituted.map_err(|e| e.in_source(source))?;
        for (path, name) in refused {
            self.warn(
                source,
                &path,
                format!("{{env:{name}}} is toolgate's own secret, never given to a project's config: left empty"),
            );
        }
        for (path, token, why) in refused_files {
            self.warn(
                source,
                &path,
                format!(
                    "{token} is not read for a project's config ({why}): left empty; name it in your own config (global or --config) instead"
                ),
            );
        }
        let mut layer = self.document(raw, kind, source, path)?;
        layer.mcp_secrets = secrets;
        Ok((layer, read))
    }

    fn document(
        &mut self,
        raw: Value,
        kind: SourceKind,
        source: &str,
        path: Option<&Path>,
    ) -> Result<Layer, ConfigError> {
        let document: Document = decode(raw.clone(), "").map_err(|e| e.in_source(source))?;
        self.check_keys(&raw, &document, source)?;
        let home = self.home.as_deref();
        let rules = block_rules(
            document.tools.as_ref(),
            document.permission.as_ref(),
            document.permissions.as_deref(),
            "",
            home,
        )
        .map_err(|e| e.in_source(source))?;
        let agents = agent_specs(
            document.agent.as_ref(),
            document.mode.as_ref(),
            document.agents.as_ref(),
            home,
        )
        .map_err(|e| e.in_source(source))?;
        if let Some(mcp) = &document.mcp {
            mcp.entries().map_err(|e| e.in_source(source))?;
        }
        if let Some(Websearch::Settings(settings)) = &document.websearch
            && let Some(provider) = &settings.provider
            && !matches!(provider.as_str(), "exa" | "parallel" | "random")
        {
            self.warn(
                source,
                "websearch.provider",
                format!("{provider:?} is not a provider toolgate has (exa, parallel); the first with a key is used"),
            );
        }
        Ok(Layer {
            kind,
            source: source.to_string(),
            path: path.map(Path::to_path_buf),
            document,
            raw,
            rules,
            agents,
            project: self.project,
            sha256: None,
            references: Vec::new(),
            mcp_secrets: Vec::new(),
        })
    }

    fn markdown(&mut self, file: &Path, name: &str, primary: bool, kind: SourceKind) -> Result<Layer, ConfigError> {
        let text = Self::read_text(file)?;
        let source = file.display().to_string();
        let front = front_matter(&text, &source)?;
        let key = if primary { "mode" } else { "agent" };
        let mut agents = serde_json::Map::new();
        agents.insert(name.to_string(), front.clone());
        let mut raw = serde_json::Map::new();
        raw.insert(key.to_string(), Value::Object(agents));
        // Errors and warnings name the front matter's own keys, not the wrapper.
        let block: crate::agent::AgentConfig = decode(front.clone(), "").map_err(|e| e.in_source(&source))?;
        let block_value = serde_json::to_value(&block).unwrap_or(Value::Null);
        self.agent_keys(&front, &block_value, "", &source)?;
        let mut layer = self.document(Value::Object(raw), kind, &source, Some(file))?;
        layer.raw = Value::Object(serde_json::Map::new());
        Ok(layer)
    }

    fn permission_env(&mut self, text: &str, kind: SourceKind, name: &str) -> Result<Layer, ConfigError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|error| ConfigError::whole(ErrorKind::Environment, name, format!("is not valid JSON: {error}")))?;
        let permission: Permission = decode(value.clone(), "").map_err(|e| ConfigError {
            kind: ErrorKind::Environment,
            ..e.in_source(name)
        })?;
        let rules = permission_rules(&permission, "", self.home.as_deref()).map_err(|e| ConfigError {
            kind: ErrorKind::Environment,
            ..e.in_source(name)
        })?;
        let document = Document {
            permission: Some(permission),
            ..Document::default()
        };
        Ok(Layer {
            kind,
            source: name.to_string(),
            path: None,
            document,
            raw: Value::Object(serde_json::Map::new()),
            rules,
            agents: Vec::new(),
            project: false,
            sha256: None,
            references: Vec::new(),
            mcp_secrets: Vec::new(),
        })
    }

    fn warn(&mut self, source: &str, path: &str, message: impl Into<String>) {
        self.loaded.warnings.push(Warning {
            source: source.to_string(),
            path: path.to_string(),
            message: message.into(),
        });
    }

    /// Warns about every key `document` does not hold; a misspelt rules key is an error.
    fn check_keys(&mut self, raw: &Value, document: &Document, source: &str) -> Result<(), ConfigError> {
        let known = serde_json::to_value(document).unwrap_or(Value::Null);
        let (Value::Object(raw), Value::Object(known)) = (raw, &known) else {
            return Ok(());
        };
        for (key, value) in raw {
            if value.is_null() {
                continue;
            }
            let path = key_path("", key);
            match known.get(key) {
                None => self.unknown(source, &path, key, &RULE_KEYS)?,
                Some(known_value) => match key.as_str() {
                    "agent" | "agents" | "mode" => {
                        if let (Value::Object(blocks), Value::Object(known_blocks)) = (value, known_value) {
                            for (name, block) in blocks {
                                let empty = Value::Null;
                                let known_block = known_blocks.get(name).unwrap_or(&empty);
                                self.agent_keys(block, known_block, &key_path(&path, name), source)?;
                            }
                        }
                    }
                    "mcp" => self.mcp_keys(value, &path, source),
                    _ => self.diff(value, known_value, &path, source),
                },
            }
        }
        Ok(())
    }

    /// An agent block takes any key (OpenCode passes unknown ones to the provider as
    /// options), so only a misspelt rules key is reported: as an error.
    fn agent_keys(&mut self, raw: &Value, known: &Value, path: &str, source: &str) -> Result<(), ConfigError> {
        let Value::Object(raw) = raw else { return Ok(()) };
        for (key, value) in raw {
            if value.is_null() || known.get(key).is_some() {
                continue;
            }
            if let Some(meant) = misspelling(key, &AGENT_RULE_KEYS) {
                return Err(misspelt(source, &key_path(path, key), meant));
            }
        }
        Ok(())
    }

    fn mcp_keys(&mut self, value: &Value, path: &str, source: &str) {
        let Value::Object(map) = value else { return };
        let v2 = matches!(map.get("servers"), Some(Value::Object(servers))
            if !["type", "command", "url"].iter().any(|key| servers.contains_key(*key)));
        let (servers, base) = match (v2, map.get("servers")) {
            (true, Some(Value::Object(servers))) => {
                for key in map.keys().filter(|key| !matches!(key.as_str(), "servers" | "timeout")) {
                    self.warn(source, &key_path(path, key), "unknown key (ignored)");
                }
                (servers, key_path(path, "servers"))
            }
            _ => (map, path.to_string()),
        };
        for (name, server) in servers {
            let decoded: Result<McpServer, _> = serde_json::from_value(server.clone());
            if let Ok(decoded) = decoded {
                let known = serde_json::to_value(&decoded).unwrap_or(Value::Null);
                self.diff(server, &known, &key_path(&base, name), source);
            }
        }
    }

    /// Warns about every key of `raw` that `known` (the decoded value, re-encoded) lacks.
    fn diff(&mut self, raw: &Value, known: &Value, path: &str, source: &str) {
        match (raw, known) {
            (Value::Object(raw), Value::Object(known)) => {
                for (key, value) in raw {
                    if value.is_null() {
                        continue;
                    }
                    let here = key_path(path, key);
                    match known.get(key) {
                        None => self.warn(source, &here, "unknown key (ignored)"),
                        Some(known) => self.diff(value, known, &here, source),
                    }
                }
            }
            (Value::Array(raw), Value::Array(known)) => {
                for (index, (raw, known)) in raw.iter().zip(known).enumerate() {
                    self.diff(raw, known, &format!("{path}[{index}]"), source);
                }
            }
            _ => {}
        }
    }

    fn unknown(&mut self, source: &str, path: &str, key: &str, rule_keys: &[&str]) -> Result<(), ConfigError> {
        if let Some(meant) = misspelling(key, rule_keys) {
            return Err(misspelt(source, path, meant));
        }
        self.warn(source, path, "unknown key (ignored)");
        Ok(())
    }
}

/// The rules key `key` is within two edits (Damerau–Levenshtein) of, if any.
fn misspelling(key: &str, rule_keys: &[&str]) -> Option<&'static str> {
    RULE_KEYS
        .iter()
        .filter(|known| rule_keys.contains(known))
        .map(|known| (strsim::damerau_levenshtein(&key.to_lowercase(), known), *known))
        .filter(|(distance, _)| *distance <= 2)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, known)| known)
}

fn misspelt(source: &str, path: &str, meant: &str) -> ConfigError {
    ConfigError {
        origin: source.to_string(),
        path: path.to_string(),
        message: format!("unknown key; did you mean `{meant}`? (rules under a misspelt key would be ignored)"),
        kind: ErrorKind::Misspelt,
    }
}

fn markdown_files(dir: &Path, recursive: bool, out: &mut Vec<PathBuf>) -> Result<(), ConfigError> {
    let entries = std::fs::read_dir(dir).map_err(|error| {
        ConfigError::whole(
            ErrorKind::Read,
            dir.display().to_string(),
            format!("cannot be read: {error}"),
        )
    })?;
    for entry in entries {
        let entry = entry.map_err(|error| {
            ConfigError::whole(
                ErrorKind::Read,
                dir.display().to_string(),
                format!("cannot be read: {error}"),
            )
        })?;
        let path = entry.path();
        if path.is_dir() {
            if recursive {
                markdown_files(&path, true, out)?;
            }
        } else if path.extension().is_some_and(|ext| ext == "md") {
            out.push(path);
        }
    }
    Ok(())
}

impl Loaded {
    /// Every layer in the order it applies: the user's, then the managed ones.
    pub fn all(&self) -> impl Iterator<Item = &Layer> {
        self.layers.iter().chain(&self.managed)
    }

    /// The settings other than rules, deep-merged in layer order (later wins; a managed
    /// layer's last), except `sandbox`, which is the user's alone: a managed layer's
    /// `sandbox` is a floor ([`Loaded::managed_sandbox`]).
    ///
    /// Every layer decoded on its own, so what they merge to decodes too; should it not,
    /// that is an error, never the defaults (which would turn a sandbox off).
    pub fn settings(&self) -> Result<Document, ConfigError> {
        let mut merged = Value::Object(serde_json::Map::new());
        for layer in self.all() {
            let mut raw = layer.raw.clone();
            if let Value::Object(map) = &mut raw {
                for key in ["permission", "permissions", "tools", "agent", "agents", "mode", "mcp"] {
                    map.shift_remove(key);
                }
                if layer.kind.is_managed() {
                    map.shift_remove("sandbox");
                }
            }
            deep_merge(&mut merged, &raw);
        }
        decode(merged, "").map_err(|e| e.in_source("(the layers merged)"))
    }

    /// The managed layers' `sandbox` blocks, merged.
    pub fn managed_sandbox(&self) -> Result<Option<Sandbox>, ConfigError> {
        let mut merged: Option<Value> = None;
        for layer in &self.managed {
            if let Some(sandbox) = layer.raw.get("sandbox") {
                match &mut merged {
                    Some(value) => deep_merge(value, sandbox),
                    None => merged = Some(sandbox.clone()),
                }
            }
        }
        merged
            .map(|value| decode(value, "sandbox").map_err(|e| e.in_source("(the managed layers merged)")))
            .transpose()
    }

    /// The MCP servers of every layer, merged by name: a later layer's entry replaces the
    /// whole server (a deep merge would mix two servers' settings), and V1's
    /// `{"enabled": false}` alone turns a server off.
    pub fn mcp(&self) -> Vec<McpEntry> {
        let mut servers: Vec<McpEntry> = Vec::new();
        for layer in self.all() {
            let Some(mcp) = &layer.document.mcp else { continue };
            // Every layer's entries were checked when it was read.
            for entry in mcp.entries().unwrap_or_default() {
                match servers.iter_mut().find(|known| known.name == entry.name) {
                    Some(known) if entry.launch == McpLaunch::Off => known.enabled = false,
                    Some(known) => *known = entry,
                    None if entry.launch == McpLaunch::Off => {}
                    None => servers.push(entry),
                }
            }
        }
        servers
    }
}

/// Deep-merges `over` into `base`: objects merge key by key (existing keys keep their
/// place, new keys go last), anything else is replaced.
pub fn deep_merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(key) {
                    Some(existing) => deep_merge(existing, value),
                    None => {
                        base.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (base, over) => *base = over.clone(),
    }
}
