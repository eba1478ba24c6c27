//! `check`, `config`, `approvals` and `trust`: what the rules say and which files are
//! trusted, without running anything.

use serde_json::{Value, json};
use toolgate_core::PermissionRequest;
use toolgate_permission::{ApprovalStore, AskMode, Effect, Rule};

use crate::setup::Setup;
use crate::{Failure, Project};

/// The assertions a call would make: for `bash`, exactly what the bash tool asserts for
/// each command line (its sub-commands, reads, writes and outside directories); for any
/// other action, the resources as given, saved as given.
/// What the analysis says about one bash resource: its "always" pattern, and why it is
/// opaque or cannot be saved.
#[derive(Default)]
pub(crate) struct Note {
    save: Option<String>,
    why: Option<String>,
}

/// The assertions, a note for each bash resource, and the reasons whole lines are opaque.
pub(crate) type Requests = (
    Vec<PermissionRequest>,
    std::collections::HashMap<String, Note>,
    Vec<String>,
);

/// What the assertions of a call are made from: the project, the environment the bash
/// tool gives its commands (so `~` is the same home) and whether each program is checked
/// again as it starts. Kept apart from [`Setup`] so a tool can hold it
/// (`approval_prompt`, see `hook.rs`).
#[derive(Clone, Debug)]
pub(crate) struct Analysis {
    dir: std::path::PathBuf,
    shell_env: toolgate_shell_analysis::ShellEnv,
    enforced: bool,
    /// Where bash lines run (default: the project directory).
    workdir: Option<std::path::PathBuf>,
}

impl Analysis {
    /// The analysis of `setup`'s project, as its bash tool makes it.
    pub(crate) fn of(setup: &Setup) -> Analysis {
        Analysis {
            dir: setup.dir.clone(),
            shell_env: toolgate_builtins_shell::ShellEnvPolicy::analysis_env(&crate::sandbox::shell_environment(
                &setup.config,
            )),
            enforced: crate::sandbox::enforces_exec(&setup.sandbox, &setup.dirs),
            workdir: None,
        }
    }
}

impl Analysis {
    /// [`Analysis::of`] when `action` is bash; else only the project, since only bash
    /// needs the environment and the exec guard's support (a probe).
    pub(crate) fn for_action(setup: &Setup, action: &str) -> Analysis {
        if action == "bash" {
            return Analysis::of(setup);
        }
        Analysis {
            dir: setup.dir.clone(),
            shell_env: toolgate_shell_analysis::ShellEnv::default(),
            enforced: false,
            workdir: None,
        }
    }

    /// The same analysis for bash lines that run in `workdir` (an agent's shell started
    /// in a subdirectory reads relative paths from there).
    pub(crate) fn in_workdir(mut self, workdir: Option<std::path::PathBuf>) -> Analysis {
        self.workdir = workdir;
        self
    }

    /// The project directory.
    pub(crate) fn dir(&self) -> &std::path::Path {
        &self.dir
    }
}

pub(crate) fn requests(setup: &Setup, action: &str, resources: &[String]) -> Result<Requests, Failure> {
    requests_in(&Analysis::for_action(setup, action), action, resources)
}

/// [`requests`] from an [`Analysis`].
pub(crate) fn requests_in(analysis: &Analysis, action: &str, resources: &[String]) -> Result<Requests, Failure> {
    let mut notes = std::collections::HashMap::new();
    let mut opaque_lines = Vec::new();
    if action != "bash" {
        // Paths as the file tools ask them: resolved through `Location` (symlinks, `..`),
        // so a path spelled another way is checked as the file it is.
        let location = toolgate_core::Location::new(&analysis.dir).map_err(Failure::runtime)?;
        let resources: Vec<String> = resources
            .iter()
            .map(|resource| match action {
                "read" | "edit" => location
                    .resolve(resource, toolgate_core::PathKind::File)
                    .map(|resolved| resolved.resource)
                    .unwrap_or_else(|_| resource.clone()),
                _ => resource.clone(),
            })
            .collect();
        // Saved as the tool saves it (the file tools: `*`), else the resources as given.
        let save: Vec<String> = match toolgate_builtins_fs::always_pattern(action) {
            Some(pattern) => vec![pattern.to_string()],
            None => resources.clone(),
        };
        let request = PermissionRequest::new(action).resources(resources).save(save);
        return Ok((vec![request], notes, opaque_lines));
    }
    let location = toolgate_core::Location::new(&analysis.dir).map_err(Failure::runtime)?;
    let mut merged: Vec<PermissionRequest> = Vec::new();
    for command in resources {
        let workdir = analysis.workdir.as_deref().and_then(std::path::Path::to_str);
        let plan = toolgate_shell_analysis::plan_with(&location, command, workdir, None, &analysis.shell_env)
            .map_err(Failure::runtime)?;
        if let Some(reason) = &plan.analysis.opaque {
            opaque_lines.push(format!("{command}: {reason}"));
        }
        for part in &plan.analysis.parts {
            notes.insert(
                part.display(),
                Note {
                    save: part.save.clone(),
                    why: part.why.clone(),
                },
            );
        }
        let enforced = analysis.enforced;
        for request in plan.requests {
            let request = if request.action == "bash" {
                request.enforced_later(enforced)
            } else {
                request
            };
            match merged.iter_mut().find(|r| r.action == request.action) {
                Some(existing) => {
                    for resource in request.resources {
                        if !existing.resources.contains(&resource) {
                            existing.resources.push(resource);
                        }
                    }
                    for pattern in request.save {
                        if !existing.save.contains(&pattern) {
                            existing.save.push(pattern);
                        }
                    }
                    existing.unsaveable.extend(request.unsaveable);
                    existing.holed.extend(request.holed);
                    existing.opaque.extend(request.opaque);
                }
                None => merged.push(request),
            }
        }
    }
    // The bash assertion first: it is what the user asked about.
    merged.sort_by_key(|request| request.action != "bash");
    Ok((merged, notes, opaque_lines))
}

/// The holes of a resource of `request`, as shown.
fn holes(request: &PermissionRequest, resource: &str) -> Vec<String> {
    match request.kind(resource) {
        toolgate_core::ResourceKind::Holed(holed) => holed.holes().map(|hole| hole.display.clone()).collect(),
        _ => Vec::new(),
    }
}

fn rule_json(rule: &Rule) -> Value {
    let mut value =
        json!({"action": rule.action, "resource": rule.resource, "effect": rule.effect, "origin": rule.origin});
    if let (Some(source), Some(map)) = (&rule.source, value.as_object_mut()) {
        map.insert("source".into(), json!(source));
    }
    value
}

/// Where a rule came from: its origin, and the layer (file) when it has one.
fn origin_text(rule: &Rule) -> String {
    match &rule.source {
        Some(source) => format!("{} ({source})", rule.origin),
        None => rule.origin.to_string(),
    }
}

pub(crate) fn rule_text(rule: Option<&Rule>) -> String {
    match rule {
        Some(rule) => format!(
            "{} {:?} {} — {}",
            rule.action,
            rule.resource,
            rule.effect,
            origin_text(rule)
        ),
        None => "no rule matched: ask".to_string(),
    }
}

/// `check --exit-code`: the exit code of a deny, for scripts and other agents' hooks.
pub(crate) const EXIT_DENY: u8 = 3;
/// `check --exit-code`: the exit code of an ask.
pub(crate) const EXIT_ASK: u8 = 4;

/// `toolgate check`; with `exit_code`, the process also exits 0 on allow, [`EXIT_DENY`]
/// on deny and [`EXIT_ASK`] on ask, after printing the same report.
pub(crate) fn check(
    project: &Project,
    action: &str,
    resources: &[String],
    json: bool,
    exit_code: bool,
) -> Result<(), Failure> {
    check_report(project, action, resources, json).and_then(|overall| match (exit_code, overall) {
        (false, _) | (true, Effect::Allow) => Ok(()),
        // The report is printed: nothing more to say, only the code.
        (true, Effect::Deny) => Err(Failure {
            code: EXIT_DENY,
            message: String::new(),
        }),
        (true, Effect::Ask) => Err(Failure {
            code: EXIT_ASK,
            message: String::new(),
        }),
    })
}

/// Prints the report of `check` and gives the overall effect.
fn check_report(project: &Project, action: &str, resources: &[String], json: bool) -> Result<Effect, Failure> {
    // OpenCode V2's name for the bash tool's permission: analysed as the same lines.
    let action = if action == "shell" { "bash" } else { action };
    let setup = Setup::new(project, AskMode::Headless)?;
    let (requests, notes, opaque_lines) = requests(&setup, action, resources)?;
    let mut reports = Vec::new();
    let mut saved = Vec::new();
    let mut protected_flags = Vec::new();
    for request in &requests {
        let explained = setup.service.explain("", &setup.agent, request);
        let effect = toolgate_permission::combine(explained.iter().map(|e| e.effect));
        // What "always" would save: only the patterns of the parts that are asked.
        let allowed: Vec<String> = explained
            .iter()
            .filter(|e| e.effect == Effect::Allow)
            .map(|e| e.resource.clone())
            .collect();
        // A file that defines the rules is asked every time: "always" saves nothing.
        let protected = explained.iter().any(|e| {
            e.rule
                .as_ref()
                .is_some_and(|rule| rule.origin == toolgate_permission::Origin::Protected)
        });
        protected_flags.push(protected);
        saved.push(if protected {
            Vec::new()
        } else {
            toolgate_permission::asked_save(&request.save, &request.resources, &allowed)
        });
        reports.push((request, explained, effect));
    }
    let overall = toolgate_permission::combine(reports.iter().map(|(_, _, effect)| *effect));
    if json {
        let report = |((request, explained, effect), save): (
            &(&PermissionRequest, Vec<toolgate_permission::Explanation>, Effect),
            &Vec<String>,
        )| {
            json!({
                "action": request.action,
                "effect": effect,
                "resources": explained.iter().map(|e| {
                    let note = if request.action == "bash" { notes.get(&e.resource) } else { None };
                    json!({
                        "resource": e.resource,
                        "effect": e.effect,
                        "rule": e.rule.as_ref().map(rule_json),
                        "saveable": !request.is_unsaveable(&e.resource),
                        "savePattern": note.and_then(|n| n.save.clone()),
                        "opaque": request.opaque.contains(&e.resource),
                        "holes": holes(request, &e.resource),
                        "why": note.and_then(|n| n.why.clone()),
                    })
                }).collect::<Vec<_>>(),
                "save": save,
            })
        };
        let mut value = report((&reports[0], &saved[0]));
        if let Some(map) = value.as_object_mut() {
            map.insert("effect".into(), json!(overall));
            map.insert("opaqueLines".into(), json!(opaque_lines));
            map.insert(
                "also".into(),
                Value::Array(reports[1..].iter().zip(&saved[1..]).map(report).collect()),
            );
            if action == "bash" {
                map.insert("sandbox".into(), crate::sandbox::report(&setup.sandbox_parts()).1);
            }
        }
        outln!("{}", serde_json::to_string_pretty(&value).map_err(Failure::runtime)?);
        return Ok(overall);
    }
    outln!("{action}: {overall} (agent {})", setup.agent);
    for line in &opaque_lines {
        outln!("  not analysed, the whole line stands for any command: {line}");
    }
    for (index, (request, explained, effect)) in reports.iter().enumerate() {
        if index > 0 {
            outln!("also asks {}: {effect}", request.action);
        }
        let width = explained
            .iter()
            .map(|e| e.resource.chars().count())
            .max()
            .unwrap_or(0)
            .min(60);
        for explanation in explained {
            let analysis = if request.action == "bash" {
                notes.get(&explanation.resource)
            } else {
                None
            };
            let why = analysis
                .and_then(|n| n.why.clone())
                .unwrap_or_else(|| "not analysable".into());
            let mut note = if request.opaque.contains(&explanation.resource) {
                format!("  (opaque, any command: {why}; never saved)")
            } else if request.is_unsaveable(&explanation.resource) {
                format!("  (never saved: {why})")
            } else if let (true, Some(save)) =
                (explanation.effect == Effect::Ask, analysis.and_then(|n| n.save.clone()))
            {
                format!("  → always: {save}")
            } else {
                String::new()
            };
            let holes = holes(request, &explanation.resource);
            if !holes.is_empty() {
                note.push_str(&format!("  [known only when it runs: {}]", holes.join(", ")));
            }
            outln!(
                "  {:<width$}  {:<5}  {}{note}",
                explanation.resource,
                explanation.effect.as_str(),
                rule_text(explanation.rule.as_ref())
            );
        }
        if *effect == Effect::Ask && !saved[index].is_empty() {
            outln!("  always would save: {}", saved[index].join(", "));
        } else if *effect == Effect::Ask && protected_flags[index] {
            outln!(
                "  always would save: nothing (a file that defines the rules or runs code through git: asked every time)"
            );
        }
    }
    if action == "bash" {
        outln!("{}", crate::sandbox::report(&setup.sandbox_parts()).0);
    }
    Ok(overall)
}

/// `toolgate config --schema`: the JSON Schema of a config file.
pub(crate) fn schema() -> Result<(), Failure> {
    outln!(
        "{}",
        serde_json::to_string_pretty(&toolgate_config::schema()).map_err(Failure::runtime)?
    );
    Ok(())
}

pub(crate) fn config(project: &Project, json: bool) -> Result<(), Failure> {
    let setup = Setup::new(project, AskMode::Headless)?;
    let agent = setup
        .service
        .agents()
        .get(&setup.agent)
        .ok_or_else(|| Failure::usage(format!("unknown agent {:?}", setup.agent)))?;
    // Saved approvals take part in every decision a rule does not deny.
    let approvals = match setup.service.store() {
        Some(store) => store.list(setup.service.project_id()).map_err(Failure::runtime)?,
        None => Vec::new(),
    };
    let sources = setup.config.sources();
    // The trust state of each layer that has parts needing trust (by layer index).
    let trust = |index: usize| setup.config.trust.iter().find(|file| file.untrusted.layer == index);
    if json {
        let source_json = |(index, (kind, source)): (usize, &(toolgate_config::SourceKind, String))| {
            let mut value = json!({"kind": kind.as_str(), "source": source});
            if let (Some(file), Some(map)) = (trust(index), value.as_object_mut()) {
                map.insert(
                    "trust".into(),
                    json!({
                        "state": file.state.as_str(),
                        "sha256": file.untrusted.sha256,
                        "parts": file.untrusted.parts.iter().map(|part| json!({"path": part.path, "value": part.value, "text": part.to_string()})).collect::<Vec<_>>(),
                    }),
                );
            }
            value
        };
        let value = json!({
            "agent": agent.name,
            "sources": sources.iter().enumerate().map(source_json).collect::<Vec<_>>(),
            "dataDir": setup.dirs.data,
            "project": setup.dir,
            "rules": agent.rules.rules().iter().map(rule_json).collect::<Vec<_>>(),
            "approvals": approvals,
            "sandbox": crate::sandbox::report(&setup.sandbox_parts()).1,
        });
        outln!("{}", serde_json::to_string_pretty(&value).map_err(Failure::runtime)?);
        return Ok(());
    }
    outln!("agent {} — rules in order, the last match wins", agent.name);
    if sources.is_empty() {
        outln!("config files: none (defaults only)");
    } else {
        outln!("config files: (in order; later ones win where their rules match)");
        for (index, (kind, source)) in sources.iter().enumerate() {
            let note = match trust(index) {
                None => String::new(),
                Some(file) => {
                    let parts: Vec<String> = file.untrusted.parts.iter().map(ToString::to_string).collect();
                    let verb = if file.state == crate::trust::State::Ignored {
                        "ignored until `toolgate trust`"
                    } else {
                        "applied"
                    };
                    format!("  [{}: {verb}: {}]", file.state.as_str(), parts.join(", "))
                }
            };
            outln!("{:>4}  {:<26} {source}{note}", index + 1, kind.as_str());
        }
    }
    outln!("{}", crate::sandbox::report(&setup.sandbox_parts()).0);
    for (index, rule) in agent.rules.rules().iter().enumerate() {
        outln!(
            "{:>4}  {:<20} {:<40} {:<5}  {}",
            index + 1,
            rule.action,
            rule.resource,
            rule.effect.as_str(),
            origin_text(rule)
        );
    }
    if approvals.is_empty() {
        outln!("saved approvals: none");
    } else {
        outln!("saved approvals (allow what no configured rule denies; `toolgate approvals` manages them):");
        for approval in &approvals {
            outln!(
                "{}  {:<20} {:<40} {}",
                approval.id,
                approval.action,
                approval.resource,
                format_time(approval.time_created)
            );
        }
    }
    Ok(())
}

fn store(setup: &Setup) -> Result<&dyn ApprovalStore, Failure> {
    setup
        .service
        .store()
        .ok_or_else(|| Failure::runtime("no approval database"))
}

pub(crate) fn approvals_list(project: &Project, json: bool) -> Result<(), Failure> {
    let setup = Setup::new(project, AskMode::Headless)?;
    let approvals = store(&setup)?
        .list(setup.service.project_id())
        .map_err(Failure::runtime)?;
    if json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&approvals).map_err(Failure::runtime)?
        );
        return Ok(());
    }
    if approvals.is_empty() {
        outln!("no saved approvals for {}", setup.service.project_id());
        return Ok(());
    }
    for approval in approvals {
        outln!(
            "{}  {:<20} {:<40} {}",
            approval.id,
            approval.action,
            approval.resource,
            format_time(approval.time_created)
        );
    }
    Ok(())
}

pub(crate) fn approvals_remove(project: &Project, id: &str) -> Result<(), Failure> {
    let setup = Setup::new(project, AskMode::Headless)?;
    if store(&setup)?
        .remove(setup.service.project_id(), id)
        .map_err(Failure::runtime)?
    {
        outln!("removed {id}");
        Ok(())
    } else {
        Err(Failure::usage(format!(
            "no saved approval {id}; `toolgate approvals list` shows the ids"
        )))
    }
}

pub(crate) fn approvals_clear(project: &Project) -> Result<(), Failure> {
    let setup = Setup::new(project, AskMode::Headless)?;
    let removed = store(&setup)?
        .clear(setup.service.project_id())
        .map_err(Failure::runtime)?;
    outln!("removed {removed} approval(s) of {}", setup.service.project_id());
    Ok(())
}

/// `toolgate trust [--revoke]`.
pub(crate) fn trust(project: &crate::Project, revoke: bool) -> Result<(), crate::Failure> {
    use crate::trust::{Policy, State, Store, describe, shown};
    let (_, dir) = crate::setup::project_dir(project)?;
    let dirs = crate::config::Dirs::discover();
    let store = Store::new(&dirs.data);
    let config =
        crate::config::Config::load(&dirs, &dir, project.config.as_deref(), Policy::Stored).map_err(Failure::usage)?;
    if revoke {
        let files: Vec<std::path::PathBuf> = config
            .loaded
            .layers
            .iter()
            .filter(|layer| layer.project)
            .filter_map(|layer| layer.path.clone())
            .collect();
        let removed = store.revoke(&files).map_err(Failure::runtime)?;
        outln!("revoked the trust of {removed} project file(s)");
        return Ok(());
    }
    if config.trust.is_empty() {
        outln!("nothing to trust: no project file asks for more than rules");
        return Ok(());
    }
    for file in &config.trust {
        let shown = shown(&file.untrusted.path);
        if file.state == State::Trusted {
            outln!("already trusted: {shown}");
            continue;
        }
        store.trust(&file.untrusted).map_err(|error| {
            Failure::runtime(format!("cannot record the trust in {}: {error}", "the data directory"))
        })?;
        outln!("trusted {shown} (sha256 {}):", file.untrusted.sha256);
        for line in describe(&file.untrusted) {
            outln!("  - {line}");
        }
    }
    Ok(())
}

/// Milliseconds since the epoch as `YYYY-MM-DD HH:MM:SS UTC` (the audit log's clock, shortened).
fn format_time(ms: i64) -> String {
    let stamp = toolgate_permission::rfc3339(ms);
    format!("{} {} UTC", &stamp[..10], &stamp[11..19])
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_epoch_milliseconds() {
        assert_eq!(super::format_time(0), "1970-01-01 00:00:00 UTC");
        // Checked against `date -u -d @1796000000` and a leap day.
        assert_eq!(super::format_time(1_796_000_000_000), "2026-11-30 00:53:20 UTC");
        assert_eq!(super::format_time(951_782_400_000), "2000-02-29 00:00:00 UTC");
    }
}
