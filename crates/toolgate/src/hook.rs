//! `toolgate hook AGENT`: another agent's pre-tool-use hook, answered from the project's
//! rules (README "Hooks for other agents").
//!
//! The agent runs this command before one of its own tools runs, with a JSON payload on
//! stdin naming the tool and its input. The tool is mapped to toolgate's action and
//! resources (its shell tool to `bash` with the whole analysis `toolgate check` makes, its
//! file tools to `read`/`edit` on the path, …), decided as `toolgate check` decides it —
//! saved approvals included — recorded in the audit log with the agent that asked, and
//! answered in that agent's own output format:
//!
//! | agent, event                        | allow                    | deny                            | ask                     |
//! |-------------------------------------|--------------------------|---------------------------------|-------------------------|
//! | Claude Code `PreToolUse`            | `permissionDecision: allow` | `permissionDecision: deny` + reason | `permissionDecision: ask` |
//! | Claude Code, Codex `PermissionRequest` | `decision.behavior: allow` | `decision.behavior: deny` + message | no answer: the agent's dialog |
//! | Codex `PreToolUse`                  | no answer (Codex decides) | `permissionDecision: deny` + reason | no answer (Codex decides) |
//! | Gemini CLI `BeforeTool`             | `decision: allow`        | `decision: deny` + reason       | `decision: ask`         |
//!
//! Codex's `PreToolUse` takes only a deny: its parser rejects `allow` without
//! `updatedInput` and every `ask` (codex-rs/hooks/src/engine/output_parser.rs), so the
//! hook says nothing then and Codex's own approval policy goes on.
//!
//! Fail closed: a payload that does not parse, lacks the tool's name, names another
//! event, or anything that stops the decision is a refusal — exit 2 with the reason on
//! stderr, which every one of the three agents documents as "block this tool call".

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use toolgate_core::{PathKind, PermissionRequest};
use toolgate_permission::{AskMode, Effect, Explanation, Rule};

use crate::setup::Setup;
use crate::{Failure, Project};

/// The exit code every supported agent reads as "block the tool call, stderr says why".
const EXIT_BLOCK: u8 = 2;

/// The most of a payload read: a `Write` carries the whole file, but not more than this.
const MAX_PAYLOAD: u64 = 64 * 1024 * 1024;

/// The agents whose hooks `toolgate hook` answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum HookAgent {
    /// Claude Code: `PreToolUse` and `PermissionRequest` command hooks.
    ClaudeCode,
    /// Codex: `PreToolUse` and `PermissionRequest` command hooks.
    Codex,
    /// Gemini CLI: `BeforeTool` command hooks.
    Gemini,
}

impl HookAgent {
    /// The agent's name as the command line and the audit log spell it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            HookAgent::ClaudeCode => "claude-code",
            HookAgent::Codex => "codex",
            HookAgent::Gemini => "gemini",
        }
    }
}

/// The hook events answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Event {
    /// Claude Code's and Codex's `PreToolUse`.
    PreToolUse,
    /// Claude Code's and Codex's `PermissionRequest` (the agent is about to show its
    /// permission dialog).
    PermissionRequest,
    /// Gemini CLI's `BeforeTool`.
    BeforeTool,
}

/// The parts of a payload the decision needs (field names from each agent's hook
/// reference; the fixtures in tests/fixtures/hooks cite them).
#[derive(Debug)]
pub(crate) struct Payload {
    event: Event,
    pub(crate) tool_name: String,
    pub(crate) tool_input: Value,
    pub(crate) cwd: Option<PathBuf>,
    pub(crate) session_id: String,
    pub(crate) tool_use_id: String,
    /// Gemini CLI's `mcp_context` (`server_name`, `tool_name`), for MCP tools.
    mcp: Option<(String, String)>,
}

/// One thing the rules are asked about: an action on resources, and the paths whose
/// directory is asked about as `external_directory` when it is outside the project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mapped {
    pub(crate) action: String,
    pub(crate) resources: Vec<String>,
    outside: Vec<(String, PathKind)>,
    /// The input lacks what the action needs (a `Bash` call without a command): asked,
    /// whatever the rules say about the action.
    incomplete: bool,
    /// Where a shell line runs (the payload's `cwd`): its relative paths are read from
    /// there, as the agent's shell reads them.
    workdir: Option<PathBuf>,
}

impl Mapped {
    fn new(action: impl Into<String>, resources: Vec<String>) -> Mapped {
        Mapped {
            action: action.into(),
            resources,
            outside: Vec::new(),
            incomplete: false,
            workdir: None,
        }
    }

    /// A known tool whose input lacks what its action needs.
    fn incomplete(name: &str) -> Mapped {
        Mapped {
            incomplete: true,
            ..Mapped::new(name.to_lowercase(), vec!["*".into()])
        }
    }

    /// Any tool toolgate does not know: its own name as the action, on `*` — the rules'
    /// default (ask) applies unless a rule names it.
    fn unknown(name: &str) -> Mapped {
        Mapped::new(name.to_lowercase(), vec!["*".into()])
    }
}

/// The decision: the combined effect, the one resource and rule that decided it, and
/// each assertion's own effect (for the audit log).
pub(crate) struct Verdict {
    pub(crate) effect: Effect,
    pub(crate) action: String,
    pub(crate) resource: String,
    pub(crate) rule: Option<Rule>,
    parts: Vec<(PermissionRequest, Effect, Option<Rule>)>,
}

impl Verdict {
    /// What the agent (and its model) is told: the effect, what it is about, and the
    /// rule that decided it.
    pub(crate) fn reason(&self) -> String {
        let what = format!("{} {:?}", self.action, shorten(&self.resource));
        let rule = match &self.rule {
            Some(rule) => format!("rule {}", crate::check::rule_text(Some(rule))),
            None => "no rule matched, so it is asked (the default)".to_string(),
        };
        let verb = match self.effect {
            Effect::Allow => "allows",
            Effect::Deny => "denies",
            Effect::Ask => "asks about",
        };
        format!("toolgate {verb} {what}: {rule}")
    }
}

/// At most 200 characters of a resource, for a reason shown in one line.
fn shorten(text: &str) -> String {
    if text.chars().count() <= 200 {
        return text.to_string();
    }
    let mut short: String = text.chars().take(199).collect();
    short.push('…');
    short
}

/// `toolgate hook AGENT`.
pub(crate) fn hook(project: &Project, agent: HookAgent) -> Result<(), Failure> {
    let mut text = String::new();
    let read = std::io::stdin().take(MAX_PAYLOAD).read_to_string(&mut text);
    let outcome = read
        .map_err(|error| format!("cannot read the hook payload from stdin: {error}"))
        .and_then(|_| parse(agent, &text))
        .and_then(|payload| {
            let verdict = decide_payload(project, agent, &payload)?;
            Ok((payload, verdict))
        });
    match outcome {
        Ok((payload, verdict)) => answer(agent, payload.event, &verdict),
        // The agent blocks the call on exit 2 and shows stderr: fail closed.
        Err(message) => Err(Failure {
            code: EXIT_BLOCK,
            message: format!("refused: {message}"),
        }),
    }
}

/// Reads a payload: the event (`hook_event_name`, the agent's pre-tool event when
/// absent), `tool_name` (required), `tool_input`, `cwd`, `session_id`, `tool_use_id`
/// and Gemini CLI's `mcp_context`.
pub(crate) fn parse(agent: HookAgent, text: &str) -> Result<Payload, String> {
    let value: Value = serde_json::from_str(text).map_err(|error| format!("the hook payload is not JSON: {error}"))?;
    let Value::Object(map) = value else {
        return Err("the hook payload is not a JSON object".into());
    };
    let string = |key: &str| map.get(key).and_then(Value::as_str).map(str::to_string);
    let event = match (agent, string("hook_event_name").as_deref()) {
        (HookAgent::ClaudeCode | HookAgent::Codex, None | Some("PreToolUse")) => Event::PreToolUse,
        (HookAgent::ClaudeCode | HookAgent::Codex, Some("PermissionRequest")) => Event::PermissionRequest,
        (HookAgent::Gemini, None | Some("BeforeTool")) => Event::BeforeTool,
        (_, Some(other)) => {
            let known = if agent == HookAgent::Gemini {
                "BeforeTool"
            } else {
                "PreToolUse and PermissionRequest"
            };
            return Err(format!(
                "toolgate hook {} answers {known}, not the {other:?} event",
                agent.name()
            ));
        }
    };
    let tool_name = match string("tool_name") {
        Some(name) if !name.trim().is_empty() => name,
        _ => return Err("the hook payload has no tool_name".into()),
    };
    let mcp = map.get("mcp_context").and_then(|context| {
        let server = context.get("server_name")?.as_str()?;
        let tool = context.get("tool_name")?.as_str()?;
        Some((server.to_string(), tool.to_string()))
    });
    Ok(Payload {
        event,
        tool_name,
        tool_input: map.get("tool_input").cloned().unwrap_or(Value::Null),
        cwd: string("cwd").filter(|cwd| !cwd.is_empty()).map(PathBuf::from),
        session_id: string("session_id").unwrap_or_default(),
        tool_use_id: string("tool_use_id").unwrap_or_default(),
        mcp,
    })
}

/// Decides a payload for the project (`--dir`, else the payload's `cwd`) and records
/// the decision.
fn decide_payload(project: &Project, agent: HookAgent, payload: &Payload) -> Result<Verdict, String> {
    let mut project = project.clone();
    if project.dir.is_none() {
        project.dir = payload.cwd.clone();
    }
    let setup = Setup::new(&project, AskMode::Headless).map_err(|failure| failure.message)?;
    let cwd = payload.cwd.as_deref().unwrap_or(&setup.dir);
    let mapped = map_tool(
        agent,
        &payload.tool_name,
        &payload.tool_input,
        payload.mcp.as_ref(),
        cwd,
    );
    let verdict = decide(&setup, &mapped).map_err(|failure| failure.message)?;
    record(&setup, agent, payload, &verdict);
    Ok(verdict)
}

/// The tool's name in toolgate's rules for an MCP tool: `<server>_<tool>`, as the gateway
/// registers it (sanitized, long names shortened the same way).
fn mcp_action(server: &str, tool: &str) -> String {
    toolgate_mcp_client::tool_name(server, tool)
        .unwrap_or_else(|_| format!("{server}_{tool}"))
        .to_lowercase()
}

/// Maps an agent's tool and input to toolgate's action and resources. Relative paths
/// resolve against `cwd` (the payload's). A tool whose input lacks what its action needs
/// is asked, whatever a rule about the action says.
pub(crate) fn map_tool(
    agent: HookAgent,
    name: &str,
    input: &Value,
    mcp: Option<&(String, String)>,
    cwd: &Path,
) -> Mapped {
    let mut mapped = map_tool_at(agent, name, input, mcp, cwd);
    if mapped.action == "bash" {
        mapped.workdir = Some(cwd.to_path_buf());
    }
    mapped
}

/// [`map_tool`] before the shell's working directory is added.
fn map_tool_at(agent: HookAgent, name: &str, input: &Value, mcp: Option<&(String, String)>, cwd: &Path) -> Mapped {
    let text = |key: &str| input.get(key).and_then(Value::as_str).filter(|text| !text.is_empty());
    let path = |key: &str| text(key).map(|path| absolute(cwd, path));
    let file = |action: &str, keys: &[&str]| match keys.iter().find_map(|key| path(key)) {
        Some(path) => Mapped {
            action: action.into(),
            resources: vec![path.clone()],
            outside: vec![(path, PathKind::File)],
            incomplete: false,
            workdir: None,
        },
        None => Mapped::incomplete(name),
    };
    let search = |action: &str, dir_keys: &[&str]| match text("pattern") {
        Some(pattern) => {
            let dir = dir_keys
                .iter()
                .find_map(|key| path(key))
                .unwrap_or_else(|| cwd.to_string_lossy().into_owned());
            Mapped {
                action: action.into(),
                resources: vec![pattern.to_string()],
                outside: vec![(dir, PathKind::Directory)],
                incomplete: false,
                workdir: None,
            }
        }
        None => Mapped::incomplete(name),
    };
    let single = |action: &str, key: &str| match text(key) {
        Some(value) => Mapped::new(action, vec![value.to_string()]),
        None => Mapped::incomplete(name),
    };
    // Claude Code and Codex spell MCP tools `mcp__<server>__<tool>`.
    if agent != HookAgent::Gemini
        && let Some(rest) = name.strip_prefix("mcp__")
        && let Some((server, tool)) = rest.split_once("__")
        && !server.is_empty()
        && !tool.is_empty()
    {
        return Mapped::new(mcp_action(server, tool), vec!["*".into()]);
    }
    match agent {
        HookAgent::ClaudeCode => match name {
            "Bash" => single("bash", "command"),
            "Read" => file("read", &["file_path"]),
            "NotebookRead" => file("read", &["notebook_path"]),
            "Write" | "Edit" | "MultiEdit" => file("edit", &["file_path"]),
            "NotebookEdit" => file("edit", &["notebook_path"]),
            "Glob" => search("glob", &["path"]),
            "Grep" => search("grep", &["path"]),
            "WebFetch" => single("webfetch", "url"),
            "WebSearch" => single("websearch", "query"),
            _ => Mapped::unknown(name),
        },
        HookAgent::Codex => match name {
            // The canonical name of every shell-like tool (shell, exec_command, …) in
            // Codex's hook payloads; its input is `{ "command": … }`.
            "Bash" | "shell" | "local_shell" | "exec_command" => match input.get("command") {
                Some(Value::String(line)) if !line.is_empty() => Mapped::new("bash", vec![line.clone()]),
                Some(Value::Array(words)) if !words.is_empty() => match words
                    .iter()
                    .map(|word| word.as_str().map(str::to_string))
                    .collect::<Option<Vec<String>>>()
                {
                    Some(words) => Mapped::new("bash", vec![crate::exec_line(false, &words).unwrap_or_default()]),
                    None => Mapped::incomplete(name),
                },
                _ => Mapped::incomplete(name),
            },
            // `apply_patch` carries the patch in `tool_input.command`: every file it
            // adds, updates, deletes or moves to is an edit.
            "apply_patch" => {
                let patch = text("command").or_else(|| text("input")).unwrap_or("");
                let paths = patch_paths(patch, cwd);
                if paths.is_empty() {
                    Mapped::incomplete(name)
                } else {
                    Mapped {
                        action: "edit".into(),
                        outside: paths.iter().map(|path| (path.clone(), PathKind::File)).collect(),
                        resources: paths,
                        incomplete: false,
                        workdir: None,
                    }
                }
            }
            _ => Mapped::unknown(name),
        },
        HookAgent::Gemini => {
            if let Some((server, tool)) = mcp {
                return Mapped::new(mcp_action(server, tool), vec!["*".into()]);
            }
            match name {
                "run_shell_command" => single("bash", "command"),
                "read_file" => file("read", &["file_path", "absolute_path", "path"]),
                "read_many_files" => {
                    let list = input
                        .get("include")
                        .or_else(|| input.get("paths"))
                        .and_then(Value::as_array)
                        .map(|items| {
                            items
                                .iter()
                                .filter_map(Value::as_str)
                                .map(|path| absolute(cwd, path))
                                .collect::<Vec<String>>()
                        })
                        .unwrap_or_default();
                    if list.is_empty() {
                        Mapped::incomplete(name)
                    } else {
                        Mapped {
                            action: "read".into(),
                            outside: list.iter().map(|path| (path.clone(), PathKind::File)).collect(),
                            resources: list,
                            incomplete: false,
                            workdir: None,
                        }
                    }
                }
                "write_file" | "replace" => file("edit", &["file_path", "absolute_path", "path"]),
                "glob" => search("glob", &["dir_path", "path"]),
                "grep_search" | "search_file_content" => search("grep", &["dir_path", "path"]),
                "web_fetch" => {
                    // The URLs are in the prompt (`url` in older releases).
                    let mut urls: Vec<String> = text("url").map(str::to_string).into_iter().collect();
                    urls.extend(
                        text("prompt")
                            .unwrap_or("")
                            .split_whitespace()
                            .filter(|word| word.starts_with("http://") || word.starts_with("https://"))
                            .map(|word| word.trim_end_matches([',', '.', ')', ']', '"', '\'']).to_string()),
                    );
                    if urls.is_empty() {
                        Mapped::incomplete(name)
                    } else {
                        Mapped::new("webfetch", urls)
                    }
                }
                "google_web_search" => single("websearch", "query"),
                _ => match name.strip_prefix("mcp_").and_then(|rest| rest.split_once('_')) {
                    // Gemini CLI's own reading of `mcp_<server>_<tool>`: the server is
                    // the first segment (packages/core/src/tools/mcp-tool.ts).
                    Some((server, tool)) if !server.is_empty() && !tool.is_empty() => {
                        Mapped::new(mcp_action(server, tool), vec!["*".into()])
                    }
                    _ => Mapped::unknown(name),
                },
            }
        }
    }
}

/// `path` made absolute against `cwd` when it is relative (a `~` path is left to the
/// file tools' resolution).
fn absolute(cwd: &Path, path: &str) -> String {
    if path.starts_with('/') || path.starts_with('~') {
        path.to_string()
    } else {
        cwd.join(path).to_string_lossy().into_owned()
    }
}

/// The files a Codex patch touches (`*** Add File:`, `*** Update File:`, `*** Delete
/// File:`, `*** Move to:` lines), absolute.
fn patch_paths(patch: &str, cwd: &Path) -> Vec<String> {
    let mut paths = Vec::new();
    for line in patch.lines() {
        let line = line.trim_end();
        let named = [
            "*** Add File: ",
            "*** Update File: ",
            "*** Delete File: ",
            "*** Move to: ",
        ]
        .iter()
        .find_map(|prefix| line.strip_prefix(prefix));
        if let Some(path) = named.map(str::trim).filter(|path| !path.is_empty()) {
            let path = absolute(cwd, path);
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
    }
    paths
}

/// What a tool call of `mapped` asserts, in order: `external_directory` for each path
/// outside the project (as the file tools ask it), then what `toolgate check` asserts
/// for the action (`check::requests_in`: for bash, the whole analysis).
fn assertions(analysis: &crate::check::Analysis, mapped: &Mapped) -> Result<Vec<PermissionRequest>, Failure> {
    let mut asks: Vec<PermissionRequest> = Vec::new();
    if !mapped.outside.is_empty() {
        let location = toolgate_core::Location::new(analysis.dir()).map_err(Failure::runtime)?;
        for (path, kind) in &mapped.outside {
            // A path that does not resolve is asked about as given by `requests`.
            if let Ok(resolved) = location.resolve(path, *kind)
                && let Some(external) = resolved.external
            {
                asks.push(
                    PermissionRequest::new("external_directory")
                        .resources([external.resource.clone()])
                        .save([external.save.clone()]),
                );
            }
        }
    }
    let (requests, _, _) = crate::check::requests_in(analysis, &mapped.action, &mapped.resources)?;
    asks.extend(requests);
    Ok(asks)
}

/// Decides `mapped` as `toolgate check` does: its [`assertions`], each explained with the
/// agent's rules and the saved approvals, without asking anyone.
pub(crate) fn decide(setup: &Setup, mapped: &Mapped) -> Result<Verdict, Failure> {
    if mapped.incomplete {
        return Ok(Verdict {
            effect: Effect::Ask,
            action: mapped.action.clone(),
            resource: "(its input lacks what toolgate decides on)".into(),
            rule: None,
            parts: Vec::new(),
        });
    }
    let analysis = crate::check::Analysis::for_action(setup, &mapped.action).in_workdir(mapped.workdir.clone());
    let asks = assertions(&analysis, mapped)?;
    let mut parts = Vec::new();
    // The first explanation of the strictest effect decides, and names its rule.
    let mut deciding: Option<(String, Explanation)> = None;
    let rank = |effect: Effect| match effect {
        Effect::Allow => 0,
        Effect::Ask => 1,
        Effect::Deny => 2,
    };
    for request in asks {
        let explained = setup.service.explain("", &setup.agent, &request);
        // An assertion about nothing says nothing: asked, never allowed.
        let effect = if explained.is_empty() {
            Effect::Ask
        } else {
            toolgate_permission::combine(explained.iter().map(|e| e.effect))
        };
        let own = explained.iter().find(|e| e.effect == effect).cloned();
        if let Some(own) = &own
            && deciding
                .as_ref()
                .is_none_or(|(_, current)| rank(own.effect) > rank(current.effect))
        {
            deciding = Some((request.action.clone(), own.clone()));
        }
        parts.push((request, effect, own.and_then(|e| e.rule)));
    }
    let effect = toolgate_permission::combine(parts.iter().map(|(_, effect, _)| *effect));
    let (action, explanation) = match deciding {
        Some(found) => found,
        // No assertion at all (an empty command line): nothing is known, so ask.
        None => {
            return Ok(Verdict {
                effect: Effect::Ask,
                action: mapped.action.clone(),
                resource: mapped.resources.join(" "),
                rule: None,
                parts,
            });
        }
    };
    Ok(Verdict {
        effect,
        action,
        resource: explanation.resource,
        rule: explanation.rule,
        parts,
    })
}

/// One decision entry per assertion, naming the agent that asked (`via`); an ask's
/// reply is `agent`: the agent's own prompt answers it.
fn record(setup: &Setup, agent: HookAgent, payload: &Payload, verdict: &Verdict) {
    let Some(audit) = setup.service.audit() else {
        return;
    };
    audit.begin_call(&payload.tool_use_id, &payload.tool_name);
    let caller =
        toolgate_permission::Caller::new(&payload.session_id, &setup.agent, &payload.tool_use_id).via(agent.name());
    for (request, effect, rule) in &verdict.parts {
        let reply = (*effect == Effect::Ask).then_some("agent");
        audit.decision(
            &caller,
            &request.action,
            &request.resources,
            *effect,
            rule.as_ref(),
            reply,
        );
    }
}

/// The answer in the agent's format: JSON on stdout and exit 0 (see the module's table).
fn answer(agent: HookAgent, event: Event, verdict: &Verdict) -> Result<(), Failure> {
    let reason = verdict.reason();
    let value = match (agent, event, verdict.effect) {
        (HookAgent::Codex, Event::PreToolUse, Effect::Allow | Effect::Ask) => None,
        (_, Event::PreToolUse, effect) => Some(json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": effect.as_str(),
                "permissionDecisionReason": reason,
            }
        })),
        (_, Event::PermissionRequest, Effect::Allow) => Some(json!({
            "hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}
        })),
        (_, Event::PermissionRequest, Effect::Deny) => Some(json!({
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": reason},
            }
        })),
        // The agent's own dialog asks the person.
        (_, Event::PermissionRequest, Effect::Ask) => None,
        (_, Event::BeforeTool, Effect::Deny) => Some(json!({"decision": "deny", "reason": reason})),
        (_, Event::BeforeTool, Effect::Ask) => Some(json!({"decision": "ask", "systemMessage": reason})),
        (_, Event::BeforeTool, Effect::Allow) => Some(json!({"decision": "allow"})),
    };
    if let Some(value) = value {
        outln!("{value}");
    }
    Ok(())
}

/// The input of `approval_prompt`, as Claude Code's `--permission-prompt-tool` sends it:
/// the tool asked about, its input, and the tool call's id.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct PromptInput {
    /// The tool Claude Code wants to run (`Bash`, `Edit`, `mcp__server__tool`, …).
    tool_name: String,
    /// Its input, as the model wrote it.
    #[serde(default)]
    input: Value,
    /// The tool call's id.
    #[serde(default)]
    tool_use_id: Option<String>,
}

/// The answer of `approval_prompt`: `{"behavior": "allow", "updatedInput": …}` or
/// `{"behavior": "deny", "message": …}`, sent as the JSON text of one text content.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(tag = "behavior", rename_all = "lowercase")]
pub(crate) enum PromptAnswer {
    /// Run the tool with this input (the input as it came: toolgate changes nothing).
    Allow {
        /// The input the tool runs with.
        #[serde(rename = "updatedInput")]
        updated_input: Value,
    },
    /// Do not run it; the model gets the message.
    Deny {
        /// Why, naming the rule or the person's answer.
        message: String,
    },
}

/// The tool's description.
const PROMPT_DESCRIPTION: &str = "Claude Code's permission prompt (`claude -p --permission-prompt-tool \
mcp__toolgate__approval_prompt`): decides whether Claude Code may run `tool_name` with `input` under this project's \
toolgate rules, asking the person when the rules ask. Answers {\"behavior\": \"allow\", \"updatedInput\": …} or \
{\"behavior\": \"deny\", \"message\": …} as JSON text. Not for models to call.";

/// `approval_prompt`, the tool `toolgate mcp` offers as Claude Code's permission prompt:
/// maps the tool as `toolgate hook claude-code` does and asserts each of its
/// [`assertions`] through `permissions` — so an ask goes to the person the front end's
/// usual way (MCP elicitation, or `--auto`), saved approvals and the audit log included.
/// A refusal, or an input it cannot map, is a deny; never an error the agent could take
/// for an allow.
pub(crate) fn approval_prompt_tool(
    analysis: crate::check::Analysis,
    permissions: std::sync::Arc<dyn toolgate_core::Permissions>,
) -> toolgate_core::Tool {
    let shared = std::sync::Arc::new((analysis, permissions));
    toolgate_core::Tool::builder(
        PROMPT_DESCRIPTION,
        move |input: PromptInput, ctx: toolgate_core::Context| {
            let shared = std::sync::Arc::clone(&shared);
            async move {
                let (analysis, permissions) = &*shared;
                let mapped = map_tool(
                    HookAgent::ClaudeCode,
                    &input.tool_name,
                    &input.input,
                    None,
                    analysis.dir(),
                );
                let deny = |message: String| Ok(PromptAnswer::Deny { message });
                if mapped.incomplete {
                    return deny(format!(
                        "toolgate: the input of {} lacks what the rules decide on",
                        input.tool_name
                    ));
                }
                let asks = match assertions(analysis, &mapped) {
                    Ok(asks) if !asks.is_empty() => asks,
                    Ok(_) => return deny(format!("toolgate: nothing to decide for {}", input.tool_name)),
                    Err(failure) => return deny(format!("toolgate: {}", failure.message)),
                };
                for mut request in asks {
                    // Which of Claude Code's calls the question is about, for the prompt.
                    request = request.metadata("tool", input.tool_name.clone());
                    if let Some(id) = input.tool_use_id.as_deref().filter(|id| !id.is_empty()) {
                        request = request.metadata("toolUseId", id);
                    }
                    if let Err(refusal) = permissions.assert(&ctx, request).await {
                        return deny(refusal.to_string());
                    }
                }
                Ok(PromptAnswer::Allow {
                    updated_input: input.input,
                })
            }
        },
    )
    .project(|answer: &PromptAnswer| {
        vec![toolgate_core::Content::text(
            serde_json::to_string(answer).unwrap_or_else(|_| {
                r#"{"behavior":"deny","message":"toolgate: the answer could not be written"}"#.to_string()
            }),
        )]
    })
    .title("Claude Code permission prompt")
    .annotations(toolgate_core::Annotations::read_only())
    .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapped(agent: HookAgent, name: &str, input: Value) -> Mapped {
        map_tool(agent, name, &input, None, Path::new("/work/app"))
    }

    #[test]
    fn maps_each_agents_tools() {
        let bash = mapped(HookAgent::ClaudeCode, "Bash", json!({"command": "git status"}));
        assert_eq!(
            (bash.action.as_str(), bash.resources),
            ("bash", vec!["git status".to_string()])
        );
        let read = mapped(HookAgent::ClaudeCode, "Read", json!({"file_path": "src/main.rs"}));
        assert_eq!(read.resources, vec!["/work/app/src/main.rs".to_string()]);
        assert_eq!(read.action, "read");
        let edit = mapped(HookAgent::Gemini, "replace", json!({"file_path": "/etc/hosts"}));
        assert_eq!(
            (edit.action.as_str(), edit.resources),
            ("edit", vec!["/etc/hosts".to_string()])
        );
        let mcp = mapped(HookAgent::Codex, "mcp__memory__create_entities", json!({}));
        assert_eq!(mcp.action, "memory_create_entities");
        let gemini_mcp = mapped(HookAgent::Gemini, "mcp_github_get_issue", json!({}));
        assert_eq!(gemini_mcp.action, "github_get_issue");
        let unknown = mapped(HookAgent::ClaudeCode, "TodoWrite", json!({}));
        assert_eq!(
            (unknown.action.as_str(), unknown.resources),
            ("todowrite", vec!["*".to_string()])
        );
        // Missing input: the tool's own name, never the action a rule may allow.
        assert!(mapped(HookAgent::ClaudeCode, "Bash", json!({})).incomplete);
        assert!(!bash.incomplete && !unknown.incomplete);
    }

    #[test]
    fn gemini_reads_many_files_and_fetches_the_urls_of_its_prompt() {
        let read = mapped(
            HookAgent::Gemini,
            "read_many_files",
            json!({"include": ["a.rs", "/etc/hosts"]}),
        );
        assert_eq!(read.action, "read");
        assert_eq!(
            read.resources,
            vec!["/work/app/a.rs".to_string(), "/etc/hosts".to_string()]
        );
        let fetch = mapped(
            HookAgent::Gemini,
            "web_fetch",
            json!({"prompt": "Summarize https://example.com/a and http://example.org/b."}),
        );
        assert_eq!(fetch.action, "webfetch");
        assert_eq!(
            fetch.resources,
            vec!["https://example.com/a".to_string(), "http://example.org/b".to_string()]
        );
        // No URL: nothing to decide on, so it is asked.
        assert!(mapped(HookAgent::Gemini, "web_fetch", json!({"prompt": "no link here"})).incomplete);
        let context = ("my.server".to_string(), "get issue".to_string());
        let mcp = map_tool(
            HookAgent::Gemini,
            "mcp_my_server_get_issue",
            &json!({}),
            Some(&context),
            Path::new("/"),
        );
        assert_eq!(mcp.action, "my_server_get_issue");
    }

    #[test]
    fn codex_patches_edit_every_file_they_name() {
        let patch =
            "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-x\n+y\n*** Add File: /tmp/b.txt\n+hi\n*** End Patch";
        let edit = mapped(HookAgent::Codex, "apply_patch", json!({"command": patch}));
        assert_eq!(edit.action, "edit");
        assert_eq!(
            edit.resources,
            vec!["/work/app/src/a.rs".to_string(), "/tmp/b.txt".to_string()]
        );
    }

    #[test]
    fn a_payload_without_a_tool_name_is_an_error() {
        assert!(parse(HookAgent::ClaudeCode, "{\"tool_input\": {}}").is_err());
        assert!(parse(HookAgent::ClaudeCode, "not json").is_err());
        assert!(
            parse(
                HookAgent::Gemini,
                "{\"hook_event_name\": \"AfterTool\", \"tool_name\": \"x\"}"
            )
            .is_err()
        );
        let payload = parse(HookAgent::Codex, "{\"tool_name\": \"Bash\"}").map(|p| p.event);
        assert_eq!(payload, Ok(Event::PreToolUse));
    }
}
