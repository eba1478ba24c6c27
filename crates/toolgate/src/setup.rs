//! What every project-aware command starts from: the project directory, the data and
//! config directories, the loaded config, the agent, the permission service and the bash
//! sandbox settings.

use std::path::PathBuf;

use toolgate_permission::{Agents, AskMode, DoomMemory, PermissionService, SqliteStore};

use crate::config::{Config, Dirs};
use crate::{Failure, Project};

/// Everything a project-aware command needs.
pub(crate) struct Setup {
    pub(crate) dir: PathBuf,
    pub(crate) dirs: Dirs,
    pub(crate) config: Config,
    pub(crate) agent: String,
    pub(crate) service: PermissionService,
    /// The bash sandbox settings (`--sandbox` applied by the commands that take it).
    pub(crate) sandbox: crate::sandbox::Settings,
    /// Whether bash runs on this process's own streams (`toolgate exec`).
    pub(crate) attached: bool,
    /// Whether the tools include `approval_prompt`, Claude Code's permission prompt
    /// (`toolgate mcp` only).
    pub(crate) prompt_tool: bool,
}

/// The project directory as given (`--dir`, else the current one) and canonical.
pub(crate) fn project_dir(project: &Project) -> Result<(PathBuf, PathBuf), Failure> {
    let given = match &project.dir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(Failure::runtime)?,
    };
    if !given.is_dir() {
        return Err(Failure::usage(format!("--dir {}: not a directory", given.display())));
    }
    let dir = std::fs::canonicalize(&given).map_err(Failure::runtime)?;
    Ok((given, dir))
}

impl Setup {
    /// The setup of a command that keeps doom_loop streaks in this process.
    pub(crate) fn new(project: &Project, mode: AskMode) -> Result<Setup, Failure> {
        Setup::open(project, mode, DoomMemory::Process)
    }

    /// The setup of a project-aware command; `doom` says where doom_loop streaks live
    /// (the database for `call`, where each process makes one call).
    pub(crate) fn open(project: &Project, mode: AskMode, doom: DoomMemory) -> Result<Setup, Failure> {
        let (given, dir) = project_dir(project)?;
        // Rules may name the project by the path the user knows it by, which may be a
        // symlink to the canonical one: both spellings are matched.
        let spelled = std::path::absolute(&given).unwrap_or_else(|_| dir.clone());
        let dirs = Dirs::discover();
        // A terminal can be asked once, at startup, about a project file not yet trusted;
        // `toolgate mcp`'s stdin is the protocol, and it has no terminal on both.
        let policy = if project.trust_project {
            crate::trust::Policy::Everything
        } else if mode == AskMode::Interactive {
            crate::trust::Policy::Prompt
        } else {
            crate::trust::Policy::Stored
        };
        let config = Config::load(&dirs, &dir, project.config.as_deref(), policy).map_err(Failure::usage)?;
        if let Some(line) = crate::trust::ignored_line(&config.trust) {
            eprintln!("{line}");
        }
        // `external_directory` allows the skill directories outside the project (spec
        // §4.10), never the project's own: those are inside it and need no allowance, and
        // one that is a symlink out of it (`.claude/skills -> /`) is the repository's say,
        // which must not widen what may be read or written outside.
        let skill_dirs: Vec<PathBuf> = toolgate_builtins_fs::skill_dirs(&dir, Some(&dirs.config))
            .into_iter()
            .filter(|skills| !skills.starts_with(&dir))
            .collect();
        let agents = Agents::build(&config.agent_settings(&dirs, skill_dirs.clone()))
            .map_err(|error| Failure::usage(format!("config: {error}")))?;
        let agent = match &project.agent {
            Some(name) if agents.get(name).is_none() => {
                let known: Vec<&str> = agents.all().iter().map(|a| a.name.as_str()).collect();
                return Err(Failure::usage(format!(
                    "unknown agent {name:?}; known agents: {}",
                    known.join(", ")
                )));
            }
            Some(name) => name.clone(),
            None => agents.default_agent().name.clone(),
        };
        // Opened when a decision or a command first needs it.
        let store = std::sync::Arc::new(SqliteStore::deferred(dirs.data.join("toolgate.db")));
        let project_id = toolgate_permission::project_id(&dir);
        let audit = std::sync::Arc::new(toolgate_permission::AuditLog::with_retention(
            dirs.data.join("audit.jsonl"),
            retention(&config),
        ));
        let shadow = match &project.shadow_config {
            Some(file) => {
                let shadow = Config::load(&dirs, &dir, Some(file), crate::trust::Policy::Stored)
                    .map_err(|error| Failure::usage(format!("--shadow-config: {error}")))?;
                let agents = Agents::build(&shadow.agent_settings(&dirs, skill_dirs.clone()))
                    .map_err(|error| Failure::usage(format!("--shadow-config {}: {error}", file.display())))?;
                // Saved approvals count in the shadow policy too; it never asks or records.
                Some((
                    PermissionService::builder(agents, project_id.clone())
                        .store(store.clone())
                        .roots([dir.clone(), spelled.clone()])
                        .build(),
                    file.display().to_string(),
                ))
            }
            None => None,
        };
        let mut builder = PermissionService::builder(agents, project_id)
            .store(store)
            .mode(mode)
            .headless_note("no terminal; use --auto to approve")
            .audit(audit)
            .roots([dir.clone(), spelled])
            .doom_memory(doom);
        // The saved approvals are rules too: their database is never an edit away.
        for name in [
            "toolgate.db",
            "toolgate.db-wal",
            "toolgate.db-shm",
            "toolgate.db-journal",
        ] {
            builder = builder.protect(dirs.data.join(name), false);
        }
        for (path, tree) in protected_paths(&config, &dir) {
            builder = builder.protect(path, tree);
        }
        if let Some((shadow, file)) = shadow {
            builder = builder.shadow(shadow, file);
        }
        let service = builder.build();
        let sandbox = crate::sandbox::Settings::from_config(&config, &dirs, &dir);
        Ok(Setup {
            dir,
            dirs,
            config,
            agent,
            service,
            sandbox,
            attached: false,
            prompt_tool: false,
        })
    }

    /// The parts of this setup the bash tool and its sandbox are made from.
    pub(crate) fn sandbox_parts(&self) -> crate::sandbox::Parts<'_> {
        crate::sandbox::Parts {
            dir: &self.dir,
            dirs: &self.dirs,
            config: &self.config,
            sandbox: &self.sandbox,
            service: &self.service,
            attached: self.attached,
        }
    }
}

/// What an edit always asks a person about, whatever allows it (README, "Files that
/// define the rules"): every file and directory the rules come from for this project, and
/// the files git runs code from (hooks, config, and the rest `git_code_paths` knows) in the
/// project's worktree — each with whether it is a whole directory.
pub(crate) fn protected_paths(config: &Config, dir: &std::path::Path) -> Vec<(PathBuf, bool)> {
    let mut out: Vec<(PathBuf, bool)> = config
        .rule_paths
        .iter()
        .map(|rule_path| (rule_path.path.clone(), rule_path.tree))
        .collect();
    // The worktree: the nearest directory with `.git` (the project itself otherwise).
    let root = dir
        .ancestors()
        .find(|ancestor| ancestor.join(".git").exists())
        .unwrap_or(dir);
    for top in [dir, root] {
        let git = top.join(".git");
        out.push((git.join("hooks"), true));
        out.push((git.join("config"), false));
        out.push((git.join("config.worktree"), false));
        out.push((top.join(".gitmodules"), false));
        for path in toolgate_sandbox::git_code_paths(top) {
            let tree = path.is_dir();
            out.push((path, tree));
        }
    }
    out
}

/// The audit log's retention from the config's `audit` block (README "Audit log").
fn retention(config: &Config) -> toolgate_permission::Retention {
    let defaults = toolgate_permission::Retention::default();
    let Some(audit) = config.settings.audit else {
        return defaults;
    };
    toolgate_permission::Retention::new(
        audit.max_bytes.map_or(defaults.max_bytes, |bytes| bytes.get()),
        audit.files.map_or(defaults.files, |files| {
            usize::try_from(files.get()).unwrap_or(usize::MAX)
        }),
        match audit.max_age_days {
            Some(days) => Some(std::time::Duration::from_secs(days.get().saturating_mul(86_400))),
            None => defaults.max_age,
        },
    )
}
