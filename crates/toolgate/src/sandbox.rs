//! The bash sandbox and the shell's environment: the `sandbox` and `shell_env` config
//! keys, `--sandbox MODE`, the deny rules turned into hidden and read-only paths, and the
//! launcher that starts every command line through `toolgate __sandbox-exec`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use serde_json::{Value, json};
use toolgate_builtins_shell::{BashOptions, Launch, Launcher};
use toolgate_core::{Context, Location, Permissions, Tool, ToolFailure};
use toolgate_permission::{Effect, PermissionService, Rule, Ruleset};
use toolgate_sandbox::{Mode, Policy, Support};

use crate::check::Setup;
use crate::config::{Config, ConfigError, Dirs};

/// How many directory entries the expansion of deny rules may visit per command.
const WALK_BUDGET: usize = 200_000;
/// How many paths the sandbox may mount (hidden plus read-only) per command.
const MOUNT_BUDGET: usize = 4096;

/// The effective `sandbox` settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Settings {
    pub(crate) mode: Mode,
    pub(crate) network: bool,
    /// `writable` as configured (`~` expanded, relative to the project).
    pub(crate) writable: Vec<PathBuf>,
    pub(crate) required: bool,
    /// The managed layer's mode: `--sandbox` and the other layers can only be stricter.
    managed_floor: Mode,
    /// Where the mode came from, for `toolgate config`.
    pub(crate) mode_origin: &'static str,
}

impl Settings {
    /// The settings of the merged config and the managed layer.
    pub(crate) fn from_config(config: &Config, dirs: &Dirs, project: &Path) -> Settings {
        let section = config.merged.get("sandbox");
        let managed = config.managed_sandbox.as_ref();
        let get = |value: Option<&Value>, key: &str| value.and_then(|v| v.get(key)).cloned();
        let mode_of = |value: Option<&Value>| {
            get(value, "mode")
                .as_ref()
                .and_then(Value::as_str)
                .and_then(Mode::parse)
        };
        let user_mode = mode_of(section);
        let managed_floor = mode_of(managed).unwrap_or(Mode::Off);
        let mode = user_mode.unwrap_or(Mode::Off).stricter(managed_floor);
        let mode_origin = if managed_floor > user_mode.unwrap_or(Mode::Off) {
            "managed"
        } else if user_mode.is_some() {
            "config"
        } else {
            "default"
        };
        let network = get(section, "network").and_then(|v| v.as_bool()).unwrap_or(false)
            && get(managed, "network").and_then(|v| v.as_bool()).unwrap_or(true);
        let required = get(section, "required").and_then(|v| v.as_bool()).unwrap_or(false)
            || get(managed, "required").and_then(|v| v.as_bool()).unwrap_or(false);
        // An administrator's list replaces the user's.
        let writable = get(managed, "writable")
            .or_else(|| get(section, "writable"))
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(Value::as_str)
            .map(|path| {
                let expanded = toolgate_permission::expand_home(path, dirs.home.as_deref());
                project.join(expanded)
            })
            .collect();
        Settings {
            mode,
            network,
            writable,
            required,
            managed_floor,
            mode_origin,
        }
    }

    /// Applies `--sandbox MODE` (never below the managed layer's mode).
    pub(crate) fn with_cli(mut self, mode: Option<Mode>) -> Settings {
        if let Some(mode) = mode {
            self.mode = mode.stricter(self.managed_floor);
            self.mode_origin = if self.managed_floor > mode {
                "managed"
            } else {
                "--sandbox"
            };
        }
        self
    }

    /// The description's sentence for a sandbox that is on.
    fn sentence(&self) -> String {
        let network = if self.network {
            "the network is the host's"
        } else {
            "the network is off (no TCP or UDP, not even to this machine)"
        };
        match self.mode {
            Mode::ReadOnly => format!(
                "Bash runs in a read-only sandbox: the command and everything it starts can write nothing \
                 (except /dev/null-like devices), files that the read rules deny are hidden, and {network}."
            ),
            _ => {
                let mut places = vec!["the project directory".to_string(), "the temp directory".to_string()];
                places.extend(self.writable.iter().map(|p| p.display().to_string()));
                format!(
                    "Bash runs in a sandbox: the command and everything it starts can write only under {}, files \
                     that the read rules deny are hidden, files that the edit rules deny are read-only, and {network}.",
                    places.join(", ")
                )
            }
        }
    }
}

/// Checks the `sandbox` and `shell_env` keys of one config file.
pub(crate) fn validate(value: &Value, file: &str) -> Result<(), ConfigError> {
    let fail = |path: &str, expected: &str, found: &Value| {
        ConfigError(format!("config {file}: {path}: expected {expected}, found {found}"))
    };
    if let Some(section) = value.get("sandbox") {
        let Value::Object(map) = section else {
            return Err(fail("sandbox", "an object", section));
        };
        for (key, field) in map {
            let path = format!("sandbox.{key}");
            match key.as_str() {
                "mode" if field.as_str().and_then(Mode::parse).is_none() => {
                    return Err(fail(&path, "\"off\", \"read-only\" or \"workspace-write\"", field));
                }
                "network" | "required" if !field.is_boolean() => return Err(fail(&path, "true or false", field)),
                "writable" if !field.as_array().is_some_and(|list| list.iter().all(Value::is_string)) => {
                    return Err(fail(&path, "a list of directories", field));
                }
                "mode" | "network" | "required" | "writable" => {}
                _ => {
                    return Err(ConfigError(format!(
                        "config {file}: {path}: unknown key (mode, network, writable, required)"
                    )));
                }
            }
        }
    }
    if let Some(section) = value.get("shell_env") {
        let Value::Object(map) = section else {
            return Err(fail("shell_env", "an object", section));
        };
        for (key, field) in map {
            let path = format!("shell_env.{key}");
            match key.as_str() {
                "inherit" if !matches!(field.as_str(), Some("all" | "core" | "none")) => {
                    return Err(fail(&path, "\"all\", \"core\" or \"none\"", field));
                }
                "exclude" if !field.as_array().is_some_and(|list| list.iter().all(Value::is_string)) => {
                    return Err(fail(&path, "a list of name patterns", field));
                }
                "set" => {
                    let Value::Object(vars) = field else {
                        return Err(fail(&path, "an object of names to strings", field));
                    };
                    for (name, text) in vars {
                        if !text.is_string() {
                            return Err(fail(&format!("{path}.{name}"), "a string", text));
                        }
                        if toolgate_builtins_shell::is_toolgate_secret(name.as_ref()) {
                            return Err(ConfigError(format!(
                                "config {file}: {path}.{name}: toolgate's own variables never reach a command"
                            )));
                        }
                        if name.is_empty() || name.contains(['=', '\0']) {
                            return Err(fail(&format!("{path}.{name}"), "a variable name", &json!(name)));
                        }
                    }
                }
                "inherit" | "exclude" => {}
                _ => {
                    return Err(ConfigError(format!(
                        "config {file}: {path}: unknown key (inherit, exclude, set)"
                    )));
                }
            }
        }
    }
    Ok(())
}

/// The variables `inherit: core` keeps.
const CORE: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "USERNAME", "TMPDIR", "TEMP", "TMP", "LANG", "LANGUAGE", "TERM", "TZ",
];

/// The default `shell_env.exclude`.
const DEFAULT_EXCLUDE: &[&str] = &["*_TOKEN", "*_KEY", "*SECRET*"];

/// `*` and `?` over a variable name, ignoring case.
fn name_matches(pattern: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a.eq_ignore_ascii_case(b) => go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

/// The environment a command gets under `shell_env`, from `vars` (toolgate's own).
pub(crate) fn shell_environment(
    config: &Config,
    vars: impl Iterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let section = config.merged.get("shell_env");
    let inherit = section
        .and_then(|s| s.get("inherit"))
        .and_then(Value::as_str)
        .unwrap_or("all");
    let exclude: Vec<String> = match section.and_then(|s| s.get("exclude")).and_then(Value::as_array) {
        Some(list) => list.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        None => DEFAULT_EXCLUDE.iter().map(|s| s.to_string()).collect(),
    };
    let mut env: Vec<(OsString, OsString)> = vars
        .filter(|(name, _)| !toolgate_builtins_shell::is_toolgate_secret(name))
        .filter(|(name, _)| {
            let name = name.to_string_lossy();
            let kept = match inherit {
                "none" => false,
                "core" => CORE.contains(&name.as_ref()) || name.starts_with("LC_"),
                _ => true,
            };
            kept && !exclude.iter().any(|pattern| name_matches(pattern, &name))
        })
        .collect();
    if let Some(Value::Object(set)) = section.and_then(|s| s.get("set")) {
        for (name, value) in set {
            let (Some(value), false) = (
                value.as_str(),
                toolgate_builtins_shell::is_toolgate_secret(name.as_ref()),
            ) else {
                continue;
            };
            env.retain(|(existing, _)| existing != name.as_str());
            env.push((name.into(), value.into()));
        }
    }
    env
}

/// This binary, as the trampoline to run.
fn exe() -> &'static Option<PathBuf> {
    static EXE: OnceLock<Option<PathBuf>> = OnceLock::new();
    EXE.get_or_init(|| std::env::current_exe().ok())
}

/// Whether the sandbox works here: probed once per process, or remembered in
/// `<data>/sandbox/support` from an earlier probe while nothing it depends on changed.
pub(crate) fn support(dirs: &Dirs) -> &'static Support {
    static SUPPORT: OnceLock<Support> = OnceLock::new();
    SUPPORT.get_or_init(|| match exe() {
        Some(exe) => toolgate_sandbox::probe_cached(exe, &dirs.data.join("sandbox").join("support")),
        None => Support::Missing("cannot find the toolgate binary to run the sandbox with".into()),
    })
}

/// The bash tool as `setup` configures it: its environment, and its sandbox when on.
pub(crate) fn bash_tool(setup: &Setup, location: Location, permissions: Arc<dyn Permissions>) -> Tool {
    let env: Arc<[(OsString, OsString)]> = shell_environment(&setup.config, std::env::vars_os()).into();
    let mut options = BashOptions::default().with_env(env);
    let settings = &setup.sandbox;
    if settings.mode != Mode::Off {
        let support = support(&setup.dirs);
        match (support, exe()) {
            (Support::Available { .. }, Some(exe)) => {
                options.sandbox_sentence = Some(settings.sentence());
                options.launcher = Some(Arc::new(SandboxLauncher::new(setup, exe.clone())));
            }
            _ if settings.required => {
                options.sandbox_sentence = Some(format!(
                    "Bash is disabled: the sandbox is required here but {}.",
                    missing(support)
                ));
                options.launcher = Some(Arc::new(Refuse(format!(
                    "bash is disabled: the configuration requires the sandbox (sandbox.required), but it is {}",
                    support
                ))));
            }
            _ => warn_unsandboxed(support),
        }
    }
    toolgate_builtins_shell::bash_tool_with(location, permissions, options)
}

fn missing(support: &Support) -> String {
    match support {
        Support::Missing(what) => what.clone(),
        Support::Available { .. } => "this binary cannot be found".to_string(),
    }
}

/// Once per process: the sandbox was asked for and cannot be had.
fn warn_unsandboxed(support: &Support) {
    static WARNED: AtomicBool = AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::SeqCst) {
        eprintln!(
            "toolgate: warning: the bash sandbox is {support}; bash runs unsandboxed (set sandbox.required to refuse instead)"
        );
    }
}

/// A launcher that refuses every command (the sandbox is required and missing).
struct Refuse(String);

impl Launcher for Refuse {
    fn prepare(&self, _: &Context, _: &Path) -> Result<Launch, ToolFailure> {
        Err(ToolFailure::new(self.0.clone()))
    }
}

/// Starts each command line through `toolgate __sandbox-exec` with a policy made from the
/// settings and the caller's deny rules as they stand when the command starts.
struct SandboxLauncher {
    settings: Settings,
    project: PathBuf,
    exe: PathBuf,
    service: PermissionService,
    /// toolgate's own files: its config (in the project and global) and its data.
    protected: Vec<PathBuf>,
    data: PathBuf,
}

impl SandboxLauncher {
    fn new(setup: &Setup, exe: PathBuf) -> SandboxLauncher {
        let mut protected: Vec<PathBuf> = [
            "toolgate.json",
            "toolgate.jsonc",
            "opencode.json",
            "opencode.jsonc",
            ".toolgate",
        ]
        .iter()
        .map(|name| setup.dir.join(name))
        .collect();
        protected.push(setup.dirs.config.clone());
        protected.push(setup.dirs.data.clone());
        protected.extend(setup.config.sources.iter().cloned());
        SandboxLauncher {
            settings: setup.sandbox.clone(),
            project: setup.dir.clone(),
            exe,
            service: setup.service.clone(),
            protected,
            data: setup.dirs.data.clone(),
        }
    }

    fn policy(&self, ctx: &Context, workdir: &Path) -> Result<Policy, String> {
        let writable: Vec<PathBuf> = self
            .settings
            .writable
            .iter()
            .filter_map(|path| std::fs::canonicalize(path).ok())
            .collect();
        let mut policy = Policy::new(self.settings.mode, &self.project, self.settings.network)
            .writable(writable)
            .workdir(workdir);
        let agents = self.service.agents();
        let agent = agents.get(&ctx.agent).unwrap_or_else(|| agents.default_agent());
        let mut budget = WALK_BUDGET;
        let masked = expand(&agent.rules, "read", &self.project, &mut budget)?;
        let mut read_only: Vec<PathBuf> = canonical_existing(&self.protected);
        read_only.extend(canonical_existing(&git_code_paths(&self.project)));
        if self.settings.mode == Mode::WorkspaceWrite {
            read_only.extend(expand(&agent.rules, "edit", &self.project, &mut budget)?);
        }
        // Only paths where writing is possible need a mount.
        read_only.retain(|path| policy.is_writable(path));
        if masked.len() + read_only.len() > MOUNT_BUDGET {
            return Err(format!(
                "the deny rules name {} existing paths, more than the sandbox mounts ({MOUNT_BUDGET}); name directories instead (`secrets/*`)",
                masked.len() + read_only.len()
            ));
        }
        if masked.iter().any(|path| !path.is_dir()) {
            policy = policy.mask_file(mask_file(&self.data)?);
        }
        Ok(policy.masked(masked).read_only(read_only))
    }
}

impl Launcher for SandboxLauncher {
    fn prepare(&self, ctx: &Context, workdir: &Path) -> Result<Launch, ToolFailure> {
        let policy = self
            .policy(ctx, workdir)
            .map_err(|error| ToolFailure::new(format!("The sandbox could not be prepared: {error}")))?;
        let mut prefix = policy.command_line(&self.exe, "", Vec::<OsString>::new());
        // `command_line` ends with the program (here empty); the shell comes after it.
        prefix.pop();
        let sandbox = policy.mode.to_string();
        Ok(Launch::default()
            .with_prefix(prefix)
            .with_sandbox(sandbox)
            .with_note(move |output: &str| policy.explain(output)))
    }
}

/// How many directory entries the search for git's code paths may visit per command.
const GIT_BUDGET: usize = 2000;

/// What git runs code from, in the project's repository and its submodules' (under
/// `.git/modules`): the hooks directory, the config (`core.fsmonitor`, `core.pager`,
/// aliases, filters, `core.hooksPath`…), and a hooks directory that `core.hooksPath`
/// puts inside the project (husky's `.husky/_`). A command that wrote any of them would
/// run code outside the sandbox the next time the person runs git, so they stay
/// read-only even though the rest of `.git` (objects, index, refs) is writable.
fn git_code_paths(project: &Path) -> Vec<PathBuf> {
    let git = project.join(".git");
    // Not through symlinks: a link elsewhere is someone else's tree.
    let is_dir = |path: &Path| std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir());
    if !is_dir(&git) {
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut budget = GIT_BUDGET;
    let mut pending = vec![git.clone()];
    while let Some(dir) = pending.pop() {
        if dir.join("HEAD").is_file() {
            found.push(dir.join("hooks"));
            let config = dir.join("config");
            if dir == git
                && let Ok(text) = std::fs::read_to_string(&config)
                && let Some(hooks) = hooks_path(&text)
            {
                // Relative to the top of the working tree, where hooks run.
                found.push(project.join(hooks));
            }
            found.push(config);
        }
        // The main repository's submodules live under `.git/modules`, theirs under
        // `modules` of their own git directory (or deeper, for names with slashes).
        let children = if dir == git { git.join("modules") } else { dir };
        let Ok(entries) = std::fs::read_dir(&children) else {
            continue;
        };
        for entry in entries.flatten() {
            let Some(left) = budget.checked_sub(1) else {
                return found;
            };
            budget = left;
            let skip = matches!(
                entry.file_name().to_str(),
                Some("objects" | "refs" | "logs" | "hooks" | "info" | "lfs")
            );
            if !skip && entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                pending.push(entry.path());
            }
        }
    }
    found
}

/// `core.hooksPath` as a config file sets it (the last one wins), if it does.
fn hooks_path(config: &str) -> Option<String> {
    let mut section = String::new();
    let mut value = None;
    for line in config.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            section = header.trim_end_matches(']').trim().to_ascii_lowercase();
            continue;
        }
        if section != "core" {
            continue;
        }
        if let Some((key, rest)) = line.split_once('=')
            && key.trim().eq_ignore_ascii_case("hookspath")
        {
            value = Some(rest.trim().trim_matches('"').to_string());
        }
    }
    value.filter(|path| !path.is_empty())
}

fn canonical_existing(paths: &[PathBuf]) -> Vec<PathBuf> {
    paths
        .iter()
        .filter_map(|path| std::fs::canonicalize(path).ok())
        .collect()
}

/// `<data>/sandbox/mask.sock`: what is mounted over hidden files, a Unix socket no one
/// listens on, mode 000 (`open` fails for everyone, root included; searches skip it).
fn mask_file(data: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
    let dir = data.join("sandbox");
    let file = dir.join("mask.sock");
    let uid = rustix::process::geteuid().as_raw();
    let good = |file: &Path| {
        std::fs::symlink_metadata(file).is_ok_and(|meta| {
            meta.file_type().is_socket() && meta.permissions().mode() & 0o777 == 0 && meta.uid() == uid
        })
    };
    if good(&file) {
        return Ok(file);
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    // Made under a name of its own and renamed into place, so that concurrent calls (and
    // processes) only ever see a finished one.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let temp = dir.join(format!(
        ".mask.{}.{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_file(&temp);
    let made = std::os::unix::net::UnixListener::bind(&temp)
        .map(drop)
        .and_then(|()| std::fs::set_permissions(&temp, std::fs::Permissions::from_mode(0o000)))
        .and_then(|()| std::fs::rename(&temp, &file));
    if let Err(error) = made {
        let _ = std::fs::remove_file(&temp);
        return Err(format!("cannot create {}: {error}", file.display()));
    }
    if !good(&file) {
        return Err(format!("{} is not a socket of this user with mode 000", file.display()));
    }
    Ok(file)
}

/// The paths whose `action` the rules deny, as they exist now: every file the rules deny
/// inside the project (and under the literal directory of each absolute deny pattern),
/// and whole directories where the rules deny everything beneath.
fn expand(ruleset: &Ruleset, action: &str, project: &Path, budget: &mut usize) -> Result<Vec<PathBuf>, String> {
    let rules: Vec<&Rule> = ruleset.relevant(action);
    let denies: Vec<&&Rule> = rules.iter().filter(|rule| rule.effect == Effect::Deny).collect();
    if denies.is_empty() {
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    let mut starts: Vec<(PathBuf, String)> = Vec::new();
    for rule in &denies {
        let pattern = rule.resource.replace('\\', "/");
        let literal = &pattern[..pattern.find(['*', '?']).unwrap_or(pattern.len())];
        if pattern.starts_with('/') {
            // Absolute: walk from its literal directory; resources are absolute paths.
            let dir = if literal.len() == pattern.len() {
                Path::new(literal).to_path_buf()
            } else {
                Path::new(&literal[..literal.rfind('/').unwrap_or(0).max(1)]).to_path_buf()
            };
            starts.push((dir.clone(), dir.to_string_lossy().into_owned()));
        } else {
            let dir = literal.rfind('/').map_or("", |end| &literal[..end]);
            starts.push((project.join(dir), dir.to_string()));
        }
    }
    starts.sort();
    starts.dedup();
    // A walk from a directory inside another start is already done by that one.
    let all = starts.clone();
    starts.retain(|(dir, _)| !all.iter().any(|(other, _)| other != dir && dir.starts_with(other)));
    for (dir, resource) in starts {
        let meta = match std::fs::symlink_metadata(&dir) {
            Ok(meta) => meta,
            Err(_) => continue,
        };
        if !meta.is_dir() {
            if ruleset.evaluate(action, &resource).effect == Effect::Deny {
                found.push(dir);
            }
            continue;
        }
        walk(ruleset, &rules, action, &dir, &resource, &mut found, budget)?;
    }
    Ok(found)
}

fn walk(
    ruleset: &Ruleset,
    rules: &[&Rule],
    action: &str,
    dir: &Path,
    resource: &str,
    found: &mut Vec<PathBuf>,
    budget: &mut usize,
) -> Result<(), String> {
    if subtree_denied(rules, resource) {
        found.push(dir.to_path_buf());
        return Ok(());
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        // Unreadable to toolgate means unreadable to the command (same user).
        return Ok(());
    };
    for entry in entries.flatten() {
        *budget = budget.checked_sub(1).ok_or_else(|| {
            format!(
                "expanding the {action} deny rules visited more than {WALK_BUDGET} entries (under {}); narrow the rules' patterns",
                dir.display()
            )
        })?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let child = if resource.is_empty() {
            name.to_string()
        } else if resource.ends_with('/') {
            format!("{resource}{name}")
        } else {
            format!("{resource}/{name}")
        };
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir {
            walk(ruleset, rules, action, &entry.path(), &child, found, budget)?;
        } else if ruleset.evaluate(action, &child).effect == Effect::Deny {
            found.push(entry.path());
        }
    }
    Ok(())
}

/// True when the rules deny `action` on every path that could ever be under the directory
/// `resource` (`""` for the project): the last rule that covers all of them is a deny,
/// and no later rule could allow or ask for one of them.
fn subtree_denied(rules: &[&Rule], resource: &str) -> bool {
    let prefix = if resource.is_empty() || resource.ends_with('/') {
        resource.to_string()
    } else {
        format!("{resource}/")
    };
    let literal = |pattern: &str| pattern[..pattern.find(['*', '?']).unwrap_or(pattern.len())].to_string();
    let covers = |pattern: &str| {
        let stem = pattern.strip_suffix('*');
        stem.is_some_and(|stem| !stem.contains(['*', '?']) && prefix.starts_with(stem))
    };
    let Some(last) = rules.iter().rposition(|rule| covers(&rule.resource.replace('\\', "/"))) else {
        return false;
    };
    rules[last].effect == Effect::Deny
        && rules[last + 1..].iter().all(|rule| {
            let lit = literal(&rule.resource.replace('\\', "/"));
            rule.effect == Effect::Deny || !(lit.starts_with(&prefix) || prefix.starts_with(&lit))
        })
}

/// `sandbox` as `toolgate config` and `toolgate check bash` report it.
pub(crate) fn report(setup: &Setup) -> (String, Value) {
    let settings = &setup.sandbox;
    let env = shell_environment(&setup.config, std::env::vars_os());
    let shell_env = setup.config.merged.get("shell_env");
    let inherit = shell_env
        .and_then(|s| s.get("inherit"))
        .and_then(Value::as_str)
        .unwrap_or("all");
    if settings.mode == Mode::Off {
        let text = format!(
            "sandbox: off ({}): bash is not sandboxed; shell_env: inherit {inherit}, {} variables",
            settings.mode_origin,
            env.len()
        );
        let value = json!({"mode": "off", "origin": settings.mode_origin, "sandboxed": false,
            "shellEnv": {"inherit": inherit, "variables": env.len()}});
        return (text, value);
    }
    let support = support(&setup.dirs);
    let writable: Vec<String> = settings.writable.iter().map(|p| p.display().to_string()).collect();
    let state = match (support.is_available(), settings.required) {
        (true, _) => format!("{support}"),
        (false, true) => format!("{support}: bash refuses to run (sandbox.required)"),
        (false, false) => format!("{support}: bash runs UNSANDBOXED"),
    };
    let text = format!(
        "sandbox: {} ({}), network {}, writable: project, temp dir{}{}, required {} — {state}; shell_env: inherit {inherit}, {} variables",
        settings.mode,
        settings.mode_origin,
        if settings.network { "on" } else { "off" },
        if writable.is_empty() { "" } else { ", " },
        writable.join(", "),
        settings.required,
        env.len()
    );
    let value = json!({
        "mode": settings.mode.as_str(),
        "origin": settings.mode_origin,
        "network": settings.network,
        "writable": writable,
        "required": settings.required,
        "available": support.is_available(),
        "support": support.to_string(),
        "sandboxed": support.is_available(),
        "shellEnv": {"inherit": inherit, "variables": env.len()},
    });
    (text, value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolgate_permission::Origin;

    fn rules(list: &[(&str, &str, Effect)]) -> Ruleset {
        Ruleset::new(
            list.iter()
                .map(|(a, r, e)| Rule::new(*a, *r, *e, Origin::UserConfig))
                .collect(),
        )
    }

    #[test]
    fn whole_directories_are_taken_only_when_nothing_under_them_can_be_allowed() {
        use Effect::*;
        let set = rules(&[("*", "*", Allow), ("read", "secrets/*", Deny)]);
        let relevant = set.relevant("read");
        assert!(subtree_denied(&relevant, "secrets"));
        assert!(subtree_denied(&relevant, "secrets/deeper"));
        assert!(!subtree_denied(&relevant, "src"));
        assert!(!subtree_denied(&relevant, ""));
        let set = rules(&[("read", "secrets/*", Deny), ("read", "secrets/public/*", Allow)]);
        let relevant = set.relevant("read");
        assert!(!subtree_denied(&relevant, "secrets"));
        assert!(!subtree_denied(&relevant, "secrets/public"));
        assert!(subtree_denied(&relevant, "secrets/private"));
        let set = rules(&[("edit", "*", Deny), ("edit", ".opencode/plans/*.md", Allow)]);
        let relevant = set.relevant("edit");
        assert!(subtree_denied(&relevant, "src"));
        assert!(!subtree_denied(&relevant, ".opencode"));
        assert!(!subtree_denied(&relevant, ""));
        let set = rules(&[("read", "*", Deny), ("read", "*.md", Allow)]);
        assert!(!subtree_denied(&set.relevant("read"), "docs"));
    }

    #[test]
    fn expansion_finds_denied_files_and_directories_as_they_exist() {
        use Effect::*;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for file in [
            "a/.env",
            "a/b/.env",
            ".env.example",
            "x.env",
            "keep.txt",
            "secrets/k/one",
            "secrets/two",
        ] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "x").unwrap();
        }
        let set = rules(&[
            ("read", "*", Allow),
            ("read", "*.env", Deny),
            ("read", "*.env.example", Allow),
            ("read", "secrets/*", Deny),
        ]);
        let mut budget = 1000;
        let mut found = expand(&set, "read", root, &mut budget).unwrap();
        found.sort();
        let expected: Vec<PathBuf> = ["a/.env", "a/b/.env", "secrets", "x.env"]
            .iter()
            .map(|p| root.join(p))
            .collect();
        assert_eq!(found, expected);
        let mut tiny = 3;
        let error = expand(&set, "read", root, &mut tiny).unwrap_err();
        assert!(error.contains("more than"), "{error}");
        // Only absolute patterns: the project is not walked.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("id_rsa"), "k").unwrap();
        let pattern = format!("{}/*", outside.path().display());
        let set = rules(&[("read", "*", Allow), ("read", &pattern, Deny)]);
        let mut budget = 1000;
        assert_eq!(
            expand(&set, "read", root, &mut budget).unwrap(),
            [outside.path().to_path_buf()]
        );
        assert_eq!(budget, 1000);
    }

    #[test]
    fn the_mask_socket_is_made_once_whoever_asks_at_the_same_time() {
        use std::os::unix::fs::{FileTypeExt, PermissionsExt};
        let data = tempfile::tempdir().unwrap();
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let data = data.path().to_path_buf();
                std::thread::spawn(move || mask_file(&data))
            })
            .collect();
        for thread in threads {
            let file = thread.join().unwrap().unwrap();
            let meta = std::fs::symlink_metadata(&file).unwrap();
            assert!(meta.file_type().is_socket());
            assert_eq!(meta.permissions().mode() & 0o777, 0);
        }
        // Nothing half-made is left behind, and a file in its place is replaced.
        let entries: Vec<_> = std::fs::read_dir(data.path().join("sandbox")).unwrap().collect();
        assert_eq!(entries.len(), 1);
        let file = data.path().join("sandbox/mask.sock");
        std::fs::remove_file(&file).unwrap();
        std::fs::write(&file, "not a socket").unwrap();
        assert_eq!(mask_file(data.path()).unwrap(), file);
        assert!(std::fs::symlink_metadata(&file).unwrap().file_type().is_socket());
    }

    #[test]
    fn git_code_paths_cover_hooks_config_hooks_path_and_submodules() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (file, text) in [
            (".git/HEAD", "ref: refs/heads/main\n"),
            (
                ".git/config",
                "[core]\n\tbare = false\n[Core]\n  hooksPath = \".husky/_\"\n",
            ),
            (".git/objects/ab/HEAD", "not a git dir\n"),
            (".git/modules/lib/HEAD", "x\n"),
            (".git/modules/lib/config", "x\n"),
            (".git/modules/lib/modules/deep/HEAD", "x\n"),
            (".git/modules/path/to/sub/HEAD", "x\n"),
        ] {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
        }
        let mut found: Vec<String> = git_code_paths(root)
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().display().to_string())
            .collect();
        found.sort();
        assert_eq!(
            found,
            [
                ".git/config",
                ".git/hooks",
                ".git/modules/lib/config",
                ".git/modules/lib/hooks",
                ".git/modules/lib/modules/deep/config",
                ".git/modules/lib/modules/deep/hooks",
                ".git/modules/path/to/sub/config",
                ".git/modules/path/to/sub/hooks",
                ".husky/_",
            ]
        );
        assert_eq!(
            hooks_path("[core]\nhookspath=a\n[other]\nhookspath=b\n").as_deref(),
            Some("a")
        );
        assert_eq!(hooks_path("[user]\nname = x\n"), None);
        // A `.git` file (a worktree) or link: its git directory is elsewhere.
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join(".git"), "gitdir: /elsewhere\n").unwrap();
        assert!(git_code_paths(other.path()).is_empty());
    }

    #[test]
    fn variable_patterns_ignore_case_and_match_anywhere() {
        for (pattern, name) in [
            ("*_TOKEN", "GITHUB_TOKEN"),
            ("*_token", "GITHUB_TOKEN"),
            ("*SECRET*", "MY_SECRET_X"),
            ("A?C", "abc"),
        ] {
            assert!(name_matches(pattern, name), "{pattern} {name}");
        }
        for (pattern, name) in [("*_TOKEN", "TOKENS"), ("*_KEY", "KEYRING"), ("A?C", "AC")] {
            assert!(!name_matches(pattern, name), "{pattern} {name}");
        }
    }
}
