//! The ask/reply service: V1 flows A1–A15 (spec §9.4, V2 semantics where they differ),
//! V2 vectors P1–P14 (§9.5), agents (§4.10), and the concurrency proptest.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use serde_json::json;
use toolgate_core::{Context, PermissionRequest, Refusal};
use toolgate_permission::{
    AgentSettings, Agents, ApprovalStore, AskMode, Effect, Event, Origin, PermissionService, Reply, ReplyError, Rule,
    SqliteStore,
};

/// The rotation size `AuditLog` documents (10 MiB), as a user of the log sees it.
const ROTATE_BYTES: u64 = 10 * 1024 * 1024;

fn agents(permission: serde_json::Value) -> Agents {
    Agents::build(
        &AgentSettings::default()
            .with_output_dir(PathBuf::from("/data/tool-output"))
            .with_plans_dir(PathBuf::from("/data/plans"))
            .with_permission(permission),
    )
    .unwrap()
}

fn service(permission: serde_json::Value) -> PermissionService {
    PermissionService::builder(agents(permission), "/project")
        .mode(AskMode::Interactive)
        .build()
}

fn ctx(session: &str) -> Context {
    Context::new(session, "build").with_call("msg_1", "call_1")
}

fn bash(commands: &[&str]) -> PermissionRequest {
    PermissionRequest::new("bash").resources(commands.iter().copied())
}

type Asking = tokio::task::JoinHandle<Result<(), Refusal>>;

fn ask(service: &PermissionService, session: &str, request: PermissionRequest) -> Asking {
    let service = service.clone();
    let ctx = ctx(session);
    tokio::spawn(async move { service.assert(&ctx, request).await })
}

async fn wait_pending(service: &PermissionService, count: usize) -> Vec<toolgate_permission::Request> {
    for _ in 0..500 {
        let pending = service.pending();
        if pending.len() >= count {
            return pending;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    panic!("expected {count} pending requests, have {}", service.pending().len());
}

#[tokio::test]
async fn a01_allowed_resolves_at_once() {
    let service = service(json!({"bash": "allow"}));
    service.assert(&ctx("s1"), bash(&["ls"])).await.unwrap();
    assert!(service.pending().is_empty());
}

#[tokio::test]
async fn a02_denied_is_blocked_with_the_relevant_rules() {
    let service = service(json!({"bash": "deny"}));
    let refusal = service.assert(&ctx("s1"), bash(&["rm -rf /"])).await.unwrap_err();
    let Refusal::Blocked { rules, .. } = &refusal else {
        panic!("{refusal:?}")
    };
    // Spec §4.6's message, naming the resource and the deciding rule with its origin.
    assert_eq!(
        refusal.to_string(),
        r#"Permission denied: bash "rm -rf /" by rule bash "*" deny (user config)"#
    );
    // Only rules whose action matches bash: the defaults' `* *` and the user's bash rule.
    assert!(rules.iter().all(|rule| rule.action == "*" || rule.action == "bash"));
    assert_eq!(rules.last().unwrap().effect, "deny");
}

#[tokio::test]
async fn a03_a04_a11_ask_publishes_and_once_resolves() {
    let service = service(json!({"bash": "ask"}));
    let mut events = service.subscribe();
    let asking = ask(&service, "s1", bash(&["ls"]).save(["ls *"]).metadata("command", "ls"));
    let pending = wait_pending(&service, 1).await;
    assert_eq!(pending.len(), 1);
    let Event::Asked(request) = events.recv().await.unwrap() else {
        panic!("asked first")
    };
    assert!(request.id.starts_with("per_"));
    assert_eq!((request.session_id.as_str(), request.action.as_str()), ("s1", "bash"));
    assert_eq!(
        (request.resources.clone(), request.save.clone()),
        (vec!["ls".to_string()], vec!["ls *".to_string()])
    );
    assert_eq!(request.metadata.get("command"), Some(&json!("ls")));
    assert_eq!(
        (request.source.message_id.as_str(), request.source.call_id.as_str()),
        ("msg_1", "call_1")
    );
    service.reply(&request.id, Reply::Once, None).unwrap();
    asking.await.unwrap().unwrap();
    assert_eq!(
        events.recv().await.unwrap(),
        Event::Replied {
            session_id: "s1".into(),
            request_id: request.id.clone(),
            reply: Reply::Once
        }
    );
    assert!(service.pending().is_empty());
}

#[tokio::test]
async fn a05_a14_p14_reject_declines_and_stops_the_loop() {
    let service = service(json!({"bash": "ask"}));
    let asking = ask(&service, "s1", bash(&["ls"]));
    let id = wait_pending(&service, 1).await[0].id.clone();
    service.reply(&id, Reply::Reject, None).unwrap();
    let refusal = asking.await.unwrap().unwrap_err();
    assert_eq!(refusal, Refusal::declined());
    assert!(refusal.stops_loop());
}

#[tokio::test]
async fn a06_reject_with_feedback_corrects() {
    let service = service(json!({"bash": "ask"}));
    let asking = ask(&service, "s1", bash(&["rm -rf build"]));
    let id = wait_pending(&service, 1).await[0].id.clone();
    service.reply(&id, Reply::Reject, Some("Use a safer command")).unwrap();
    let refusal = asking.await.unwrap().unwrap_err();
    assert_eq!(
        refusal.to_string(),
        "The user rejected permission to use this specific tool call with the following feedback: Use a safer command"
    );
    assert!(!refusal.stops_loop());
}

#[tokio::test]
async fn a07_p11_always_saves_for_the_project() {
    let service = service(json!({"bash": "ask"}));
    let asking = ask(&service, "s1", bash(&["ls -la"]).save(["ls *"]));
    let id = wait_pending(&service, 1).await[0].id.clone();
    service.reply(&id, Reply::Always, None).unwrap();
    asking.await.unwrap().unwrap();
    // Another session, same project: no prompt.
    service.assert(&ctx("s2"), bash(&["ls"])).await.unwrap();
    assert!(service.pending().is_empty());
}

#[tokio::test]
async fn a08_reject_declines_the_whole_session() {
    let service = service(json!({"bash": "ask", "edit": "ask"}));
    let first = ask(&service, "s1", bash(&["ls"]));
    let second = ask(&service, "s1", PermissionRequest::new("edit").resources(["a.rs"]));
    let other = ask(&service, "s2", bash(&["ls"]));
    let pending = wait_pending(&service, 3).await;
    let id = pending.iter().find(|r| r.session_id == "s1").unwrap().id.clone();
    service.reply(&id, Reply::Reject, None).unwrap();
    assert_eq!(first.await.unwrap().unwrap_err(), Refusal::declined());
    assert_eq!(second.await.unwrap().unwrap_err(), Refusal::declined());
    assert_eq!(service.pending().len(), 1, "the other session's request stays");
    let other_id = service.pending()[0].id.clone();
    service.reply(&other_id, Reply::Once, None).unwrap();
    other.await.unwrap().unwrap();
}

#[tokio::test]
async fn a09_always_resolves_what_it_now_allows() {
    let service = service(json!({"bash": "ask"}));
    let a = ask(&service, "s1", bash(&["ls"]).save(["ls"]));
    let b = ask(&service, "s1", bash(&["ls"]));
    let pending = wait_pending(&service, 2).await;
    service.reply(&pending[0].id, Reply::Always, None).unwrap();
    a.await.unwrap().unwrap();
    b.await.unwrap().unwrap();
    assert!(service.pending().is_empty());
}

/// V1 kept `b` pending because approvals were per session; V2 saves for the project and
/// re-evaluates every pending request of the location, so `b` resolves too.
#[tokio::test]
async fn a10_always_cascades_across_sessions_of_the_location() {
    let service = service(json!({"bash": "ask"}));
    let a = ask(&service, "s1", bash(&["ls"]).save(["ls"]));
    let b = ask(&service, "s2", bash(&["ls"]));
    let c = ask(&service, "s3", bash(&["cat x"]));
    let pending = wait_pending(&service, 3).await;
    let id = pending.iter().find(|r| r.session_id == "s1").unwrap().id.clone();
    service.reply(&id, Reply::Always, None).unwrap();
    a.await.unwrap().unwrap();
    b.await.unwrap().unwrap();
    assert_eq!(service.pending().len(), 1, "cat x is not covered by the approval");
    service.shutdown();
    assert!(c.await.unwrap().is_err());
}

#[tokio::test]
async fn a12_unknown_reply_id_is_not_found() {
    let service = service(json!({}));
    let error = service.reply("per_missing", Reply::Once, None).unwrap_err();
    assert!(
        matches!(error, ReplyError::NotFound(ref id) if id == "per_missing"),
        "{error}"
    );
}

#[tokio::test]
async fn a13_a14_any_denied_resource_blocks_and_nothing_is_queued() {
    let service = service(json!({"bash": {"*": "allow", "rm *": "deny"}}));
    let refusal = service
        .assert(&ctx("s1"), bash(&["echo hello", "rm -rf /"]))
        .await
        .unwrap_err();
    assert!(matches!(refusal, Refusal::Blocked { .. }));
    let service = self::service(json!({"bash": {"echo *": "ask", "rm *": "deny"}}));
    let refusal = service
        .assert(&ctx("s1"), bash(&["echo hello", "rm -rf /"]))
        .await
        .unwrap_err();
    assert!(matches!(refusal, Refusal::Blocked { .. }));
    assert!(service.pending().is_empty());
}

#[tokio::test]
async fn a15_shutdown_declines_pending_and_later_asks() {
    let service = service(json!({"bash": "ask"}));
    let asking = ask(&service, "s1", bash(&["ls"]));
    wait_pending(&service, 1).await;
    service.shutdown();
    assert!(asking.await.unwrap().unwrap_err().stops_loop());
    assert!(
        service
            .assert(&ctx("s1"), bash(&["ls"]))
            .await
            .unwrap_err()
            .stops_loop()
    );
}

#[tokio::test]
async fn cancel_session_declines_only_that_session() {
    let service = service(json!({"bash": "ask"}));
    let mine = ask(&service, "s1", bash(&["ls"]));
    let theirs = ask(&service, "s2", bash(&["ls"]));
    wait_pending(&service, 2).await;
    service.cancel_session("s1");
    assert!(mine.await.unwrap().is_err());
    assert_eq!(service.pending().len(), 1);
    service.shutdown();
    assert!(theirs.await.unwrap().is_err());
}

#[tokio::test]
async fn dropping_the_asker_withdraws_the_request() {
    let service = service(json!({"bash": "ask"}));
    let asking = ask(&service, "s1", bash(&["ls"]));
    wait_pending(&service, 1).await;
    asking.abort();
    let _ = asking.await;
    assert!(service.pending().is_empty());
}

#[tokio::test]
async fn p01_p02_p03_agent_rules_decide() {
    let allow = service(json!({"read": "allow"}));
    allow
        .assert(&ctx("s"), PermissionRequest::new("read").resources(["src/index.ts"]))
        .await
        .unwrap();
    let deny = service(json!({"read": "deny"}));
    assert!(
        deny.assert(&ctx("s"), PermissionRequest::new("read").resources(["src/index.ts"]))
            .await
            .is_err()
    );
    assert!(deny.pending().is_empty());
    let none = service(json!({"*": "ask"}));
    let asking = ask(&none, "s", PermissionRequest::new("read").resources(["src/index.ts"]));
    let pending = wait_pending(&none, 1).await;
    assert_eq!(pending[0].resources, ["src/index.ts"]);
    none.shutdown();
    let _ = asking.await;
}

#[tokio::test]
async fn p04_named_agent_and_unknown_agent() {
    let agents = Agents::build(
        &AgentSettings::default().with_agents(json!({"reviewer": {"permission": {"read": "deny", "edit": "ask"}}})),
    )
    .unwrap();
    let service = PermissionService::builder(agents, "/p")
        .mode(AskMode::Interactive)
        .build();
    let reviewer = Context::new("s", "reviewer");
    assert!(matches!(
        service
            .assert(&reviewer, PermissionRequest::new("read").resources(["a"]))
            .await,
        Err(Refusal::Blocked { .. })
    ));
    // P7: an agent that does not exist may do nothing.
    let ghost = Context::new("s", "ghost");
    assert!(matches!(
        service
            .assert(&ghost, PermissionRequest::new("read").resources(["a"]))
            .await,
        Err(Refusal::Blocked { .. })
    ));
    assert!(service.hides("ghost", "read"));
    let svc = service.clone();
    let task = tokio::spawn(async move {
        svc.assert(
            &Context::new("s", "reviewer"),
            PermissionRequest::new("edit").resources(["a"]),
        )
        .await
    });
    // The request waits (the wire form, without the agent, is the server's: see
    // toolgate-server's wire tests).
    wait_pending(&service, 1).await;
    service.shutdown();
    let _ = task.await;
}

#[tokio::test]
async fn p05_star_deny_with_read_allow() {
    let service = service(json!({"*": "deny", "read": "allow"}));
    service
        .assert(&ctx("s"), PermissionRequest::new("read").resources(["tool_123"]))
        .await
        .unwrap();
    let external = PermissionRequest::new("external_directory").resources(["/tmp/tool-output/*"]);
    assert!(service.assert(&ctx("s"), external).await.is_err());
    // The data directory's own spill files stay readable (the tool-output allowance).
    let spill = PermissionRequest::new("external_directory").resources(["/data/tool-output/*"]);
    service.assert(&ctx("s"), spill).await.unwrap();
}

#[tokio::test]
async fn p06_empty_agent_means_the_default_agent() {
    let service = service(json!({"custom": "allow", "bash": "deny"}));
    service
        .assert(
            &Context::new("s", ""),
            PermissionRequest::new("custom").resources(["x"]),
        )
        .await
        .unwrap();
    assert!(service.assert(&Context::new("s", ""), bash(&["ls"])).await.is_err());
}

#[tokio::test]
async fn p08_session_rules_apply_after_agent_rules() {
    let service = service(json!({"*": "allow"}));
    service.set_session_rules(
        "s",
        vec![Rule::new("edit", "/original/**", Effect::Deny, Origin::Session)],
    );
    let request = PermissionRequest::new("edit").resources(["/original/src/index.ts"]);
    assert!(matches!(
        service.assert(&ctx("s"), request.clone()).await,
        Err(Refusal::Blocked { .. })
    ));
    service.assert(&ctx("other"), request).await.unwrap();
}

#[tokio::test]
async fn p09_p10_saved_approvals_beat_ask_never_deny() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("toolgate.db")).unwrap();
    store.add("/project", "bash", &["pwd".into()]).unwrap();
    let service = PermissionService::builder(agents(json!({"bash": "ask"})), "/project")
        .store(Arc::new(store))
        .mode(AskMode::Interactive)
        .build();
    service.assert(&ctx("s"), bash(&["pwd"])).await.unwrap();
    service.set_session_rules("s", vec![Rule::new("bash", "*", Effect::Deny, Origin::Session)]);
    assert!(matches!(
        service.assert(&ctx("s"), bash(&["pwd"])).await,
        Err(Refusal::Blocked { .. })
    ));
    let denied = PermissionService::builder(agents(json!({"bash": "deny"})), "/project")
        .store(sqlite(dir.path().join("toolgate.db")).unwrap())
        .mode(AskMode::Interactive)
        .build();
    assert!(matches!(
        denied.assert(&ctx("s"), bash(&["pwd"])).await,
        Err(Refusal::Blocked { .. })
    ));
    // The explanation names the saved approval as the deciding rule where it decides.
    let explained = service.explain("other", "build", &bash(&["pwd", "ls"]));
    assert_eq!(explained[0].rule.as_ref().unwrap().origin, Origin::SavedApproval);
    assert_eq!(explained[1].effect, Effect::Ask);
}

#[tokio::test]
async fn p11_always_writes_the_table_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("toolgate.db");
    let service = PermissionService::builder(agents(json!({"read": "ask"})), "/project")
        .store(sqlite(&db).unwrap())
        .mode(AskMode::Interactive)
        .build();
    let asking = ask(
        &service,
        "s",
        PermissionRequest::new("read").resources(["src/a.ts"]).save(["src/*"]),
    );
    let id = wait_pending(&service, 1).await[0].id.clone();
    service.reply(&id, Reply::Always, None).unwrap();
    asking.await.unwrap().unwrap();
    let rows = SqliteStore::open(&db).unwrap().list("/project").unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].action.as_str(), rows[0].resource.as_str()), ("read", "src/*"));
    service
        .assert(&ctx("s"), PermissionRequest::new("read").resources(["src/next.ts"]))
        .await
        .unwrap();
}

#[tokio::test]
async fn p12_cascade_skips_requests_their_rules_now_deny() {
    let service = service(json!({"bash": "ask"}));
    let a = ask(&service, "s1", bash(&["ls"]).save(["ls"]));
    let _b = ask(&service, "s2", bash(&["ls"]));
    let pending = wait_pending(&service, 2).await;
    service.set_session_rules("s2", vec![Rule::new("bash", "*", Effect::Deny, Origin::Session)]);
    let id = pending.iter().find(|r| r.session_id == "s1").unwrap().id.clone();
    service.reply(&id, Reply::Always, None).unwrap();
    a.await.unwrap().unwrap();
    assert_eq!(service.pending().len(), 1);
    assert_eq!(service.pending()[0].session_id, "s2");
    service.shutdown();
}

#[tokio::test]
async fn p13_no_resources_is_allow() {
    let service = service(json!({"*": "deny"}));
    service.assert(&ctx("s"), PermissionRequest::new("bash")).await.unwrap();
}

#[tokio::test]
async fn auto_mode_approves_asks_but_not_denies() {
    let service = PermissionService::builder(agents(json!({"bash": {"*": "ask", "rm *": "deny"}})), "/p")
        .mode(AskMode::Auto)
        .build();
    service.assert(&ctx("s"), bash(&["ls"])).await.unwrap();
    assert!(matches!(
        service.assert(&ctx("s"), bash(&["rm -rf /"])).await,
        Err(Refusal::Blocked { .. })
    ));
}

#[tokio::test]
async fn headless_mode_declines_asks_naming_them() {
    let service = PermissionService::builder(agents(json!({"bash": "ask"})), "/p")
        .mode(AskMode::Headless)
        .build();
    let refusal = service.assert(&ctx("s"), bash(&["ls", "pwd"])).await.unwrap_err();
    assert!(refusal.stops_loop());
    assert_eq!(
        refusal.to_string(),
        "permission requested: bash (ls, pwd); declined (no one can answer)"
    );
}

#[test]
fn agents_defaults_and_builtins() {
    let agents = Agents::build(
        &AgentSettings::default()
            .with_output_dir(PathBuf::from("/data/tool-output"))
            .with_plans_dir(PathBuf::from("/data/plans")),
    )
    .unwrap();
    let names: Vec<&str> = agents.all().iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        names,
        ["build", "plan", "general", "explore", "compaction", "title", "summary"]
    );
    let build = &agents.get("build").unwrap().rules;
    assert_eq!(build.evaluate("read", "src/.env").effect, Effect::Ask);
    assert_eq!(build.evaluate("read", ".env.example").effect, Effect::Allow);
    assert_eq!(build.evaluate("doom_loop", "read").effect, Effect::Ask);
    assert_eq!(build.evaluate("question", "*").effect, Effect::Allow);
    assert_eq!(build.evaluate("external_directory", "/etc/*").effect, Effect::Ask);
    assert_eq!(
        build.evaluate("external_directory", "/data/tool-output/*").effect,
        Effect::Allow
    );
    let plan = &agents.get("plan").unwrap().rules;
    assert_eq!(plan.evaluate("edit", "src/main.rs").effect, Effect::Deny);
    assert_eq!(plan.evaluate("edit", ".opencode/plans/x.md").effect, Effect::Allow);
    let explore = &agents.get("explore").unwrap().rules;
    assert_eq!(explore.evaluate("grep", "*").effect, Effect::Allow);
    assert_eq!(explore.evaluate("bash", "ls").effect, Effect::Deny);
    assert!(explore.hides("edit"));
    let general = &agents.get("general").unwrap().rules;
    assert_eq!(general.evaluate("question", "*").effect, Effect::Deny);
    assert!(agents.get("title").unwrap().hidden);
}

#[test]
fn user_config_follows_builtin_rules_and_agent_config_follows_user() {
    let agents = Agents::build(
        &AgentSettings::default()
            .with_permission(json!({"edit": "allow"}))
            .with_agents(json!({"plan": {"permission": {"edit": {"docs/*": "allow", "*": "ask"}}}})),
    )
    .unwrap();
    // User config re-enables edits in plan mode, then plan's own block asks again.
    let plan = &agents.get("plan").unwrap().rules;
    assert_eq!(plan.evaluate("edit", "src/a.rs").effect, Effect::Ask);
    let last = plan.evaluate("edit", "src/a.rs").rule.unwrap().origin;
    assert_eq!(last, Origin::AgentConfig);
}

#[test]
fn custom_agents_legacy_tools_and_managed_layer() {
    let agents = Agents::build(
        &AgentSettings::default()
            .with_tools(json!({"write": false, "bash": true}))
            .with_permission(json!({"bash": {"rm *": "ask"}}))
            .with_agents(
                json!({"docs": {"mode": "subagent", "description": "Writes docs", "permission": {"edit": "allow"}}}),
            )
            .with_managed(json!({"bash": {"curl *": "deny"}})),
    )
    .unwrap();
    let build = &agents.get("build").unwrap().rules;
    assert_eq!(
        build.evaluate("edit", "a.rs").effect,
        Effect::Deny,
        "tools.write=false → edit deny"
    );
    assert_eq!(
        build.evaluate("bash", "rm -rf x").effect,
        Effect::Ask,
        "explicit permission merged over tools"
    );
    assert_eq!(build.evaluate("bash", "ls").effect, Effect::Allow);
    let docs = agents.get("docs").unwrap();
    assert_eq!(docs.mode, toolgate_permission::Mode::Subagent);
    assert_eq!(docs.description, "Writes docs");
    assert_eq!(docs.rules.evaluate("edit", "a.rs").effect, Effect::Allow);
    // Managed deny comes last for every agent: nothing can override it.
    for agent in agents.all() {
        assert_eq!(
            agent.rules.evaluate("bash", "curl evil.sh").effect,
            Effect::Deny,
            "{}",
            agent.name
        );
    }
}

#[test]
fn default_agent_selection_and_its_errors() {
    let build = |default: Option<&str>, agents: serde_json::Value| {
        Agents::build(&{
            let mut settings = AgentSettings::default().with_agents(agents);
            settings.default_agent = default.map(str::to_string);
            settings
        })
    };
    assert_eq!(build(Some("plan"), json!({})).unwrap().default_agent().name, "plan");
    assert_eq!(
        build(Some("nope"), json!({})).unwrap_err().to_string(),
        "default agent \"nope\" not found"
    );
    assert_eq!(
        build(Some("explore"), json!({})).unwrap_err().to_string(),
        "default agent \"explore\" is a subagent"
    );
    assert_eq!(
        build(Some("title"), json!({})).unwrap_err().to_string(),
        "default agent \"title\" is hidden"
    );
    let disabled = json!({"build": {"disable": true}, "plan": {"disable": true}});
    assert_eq!(
        build(None, disabled).unwrap_err().to_string(),
        "no primary visible agent found"
    );
    assert_eq!(
        build(None, json!({"build": {"disable": true}}))
            .unwrap()
            .default_agent()
            .name,
        "plan"
    );
    let bad = build(None, json!({"x": {"mode": "boss"}})).unwrap_err().to_string();
    assert_eq!(
        bad,
        "agent.x.mode: expected \"primary\", \"subagent\" or \"all\", found \"boss\""
    );
}

#[test]
fn tool_output_allowance_respects_an_explicit_deny() {
    let agents = Agents::build(
        &AgentSettings::default()
            .with_output_dir(PathBuf::from("/data/tool-output"))
            .with_plans_dir(PathBuf::from("/data/plans"))
            .with_permission(json!({"external_directory": {"/data/tool-output/*": "deny"}})),
    )
    .unwrap();
    let rules = &agents.get("build").unwrap().rules;
    assert_eq!(
        rules.evaluate("external_directory", "/data/tool-output/*").effect,
        Effect::Deny
    );
}

#[test]
fn doom_loop_fires_on_the_threshold() {
    let watch = toolgate_permission::DoomLoop::new(toolgate_permission::DOOM_LOOP_THRESHOLD);
    let input = json!({"command": "ls"});
    assert!(!watch.observe("s", "m", "bash", &input));
    assert!(!watch.observe("s", "m", "bash", &json!({"command": "pwd"})));
    assert!(!watch.observe("s", "m", "bash", &input));
    assert!(!watch.observe("s", "m", "bash", &input));
    assert!(watch.observe("s", "m", "bash", &input));
    assert!(!watch.observe("s", "m", "read", &input), "another tool breaks the run");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Many concurrent asks and mixed replies: every request resolved exactly once, nothing left pending.
    #[test]
    fn concurrent_asks_resolve_exactly_once(replies in prop::collection::vec(0u8..4, 1..60)) {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        runtime.block_on(async {
            let service = service(json!({"bash": "ask"}));
            let count = replies.len();
            let mut tasks = Vec::new();
            for (index, _) in replies.iter().enumerate() {
                let session = format!("s{}", index % 5);
                let command = format!("cmd{}", index % 7);
                tasks.push(ask(&service, &session, bash(&[&command]).save([command.clone()])));
            }
            let mut replied = 0;
            let mut round = 0;
            while replied < count {
                for request in service.pending() {
                    let reply = match replies[round % replies.len()] {
                        0 => Reply::Once,
                        1 => Reply::Always,
                        2 => Reply::Reject,
                        _ => Reply::Once,
                    };
                    round += 1;
                    let message = (round % 3 == 0).then_some("no");
                    let _ = service.reply(&request.id, reply, message);
                }
                replied = tasks.iter().filter(|task| task.is_finished()).count();
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let mut outcomes = 0;
            for task in tasks {
                let _ = task.await.unwrap();
                outcomes += 1;
            }
            assert_eq!(outcomes, count);
            assert!(service.pending().is_empty());
        });
    }

    /// No saved approval ever turns a configured deny into allow.
    #[test]
    fn saved_approvals_never_override_a_configured_deny(
        denied in prop::sample::select(vec!["rm *", "*", "git push*", "curl *"]),
        saved in prop::collection::vec(prop::sample::select(vec!["*", "rm *", "rm -rf /", "git *", "curl *", "ls"]), 0..6),
        command in prop::sample::select(vec!["rm -rf /", "git push origin", "curl x", "ls", "rm"]),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let store = SqliteStore::open(dir.path().join("toolgate.db")).unwrap();
            let saved: Vec<String> = saved.iter().map(|s| s.to_string()).collect();
            store.add("/project", "bash", &saved).unwrap();
            store.add("/project", "*", &saved).unwrap();
            let agents = agents(json!({"bash": {"*": "ask", denied: "deny"}}));
            let configured_deny = agents.get("build").unwrap().rules.evaluate("bash", command).effect == Effect::Deny;
            let service = PermissionService::builder(agents, "/project").store(Arc::new(store)).mode(AskMode::Auto).build();
            let outcome = service.assert(&ctx("s"), bash(&[command])).await;
            if configured_deny {
                assert!(matches!(outcome, Err(Refusal::Blocked { .. })), "{command} under {denied} with {saved:?}");
            } else {
                assert!(outcome.is_ok());
            }
        });
    }
}

#[test]
fn store_list_add_remove_clear_per_project() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("toolgate.db")).unwrap();
    assert_eq!(store.add("/a", "bash", &["ls *".into(), "git *".into()]).unwrap(), 2);
    assert_eq!(
        store.add("/a", "bash", &["ls *".into()]).unwrap(),
        0,
        "insert-or-ignore on (project, action, resource)"
    );
    assert_eq!(store.add("/b", "bash", &["ls *".into()]).unwrap(), 1);
    assert_eq!(store.add("/a", "bash", &[]).unwrap(), 0);
    let a = store.list("/a").unwrap();
    assert_eq!(a.len(), 2);
    let b = store.list("/b").unwrap();
    assert!(
        !store.remove("/a", &b[0].id).unwrap(),
        "another project's id is left alone"
    );
    assert_eq!(store.list("/b").unwrap().len(), 1);
    assert!(store.remove("/a", &a[0].id).unwrap());
    assert!(!store.remove("/a", &a[0].id).unwrap());
    assert_eq!(store.list("/a").unwrap().len(), 1);
    assert_eq!(store.clear("/a").unwrap(), 1);
    assert_eq!(store.list("/b").unwrap().len(), 1);
}

#[test]
fn another_process_approval_is_seen_without_restart() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("toolgate.db");
    let service = PermissionService::builder(agents(json!({"bash": "ask"})), "/project")
        .store(sqlite(&db).unwrap())
        .mode(AskMode::Headless)
        .build();
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert!(runtime.block_on(service.assert(&ctx("s"), bash(&["make"]))).is_err());
    // A second connection, as another process would have.
    SqliteStore::open(&db)
        .unwrap()
        .add("/project", "bash", &["make".into()])
        .unwrap();
    assert!(runtime.block_on(service.assert(&ctx("s"), bash(&["make"]))).is_ok());
}

/// The child half of `killed_writer_keeps_committed_approvals`: adds approvals forever,
/// printing each id after its commit. Ignored in normal runs; the parent runs it.
#[test]
#[ignore = "run by killed_writer_keeps_committed_approvals as a child process"]
fn writer_child() {
    let Ok(path) = std::env::var("TOOLGATE_TEST_WRITER_DB") else {
        return;
    };
    let store = SqliteStore::open(&path).unwrap();
    for n in 0.. {
        store.add("/project", "bash", &[format!("cmd{n}")]).unwrap();
        println!("committed cmd{n}");
    }
}

#[test]
fn killed_writer_keeps_committed_approvals() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("toolgate.db");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            // The full name in this binary: its module, then the function.
            "service::writer_child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("TOOLGATE_TEST_WRITER_DB", &db)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut committed = Vec::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while committed.len() < 50 {
        let line = lines.next().unwrap().unwrap();
        if let Some(name) = line.strip_prefix("committed ") {
            committed.push(name.to_string());
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let store = SqliteStore::open(&db).unwrap();
    let saved: Vec<String> = store
        .list("/project")
        .unwrap()
        .into_iter()
        .map(|a| a.resource)
        .collect();
    for name in &committed {
        assert!(saved.contains(name), "{name} was committed before the kill but is gone");
    }
}

#[test]
fn project_id_is_the_git_root() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    std::fs::create_dir_all(dir.path().join("src/deep")).unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(
        toolgate_permission::project_id(&dir.path().join("src/deep")),
        root.to_string_lossy()
    );
    let plain = tempfile::tempdir().unwrap();
    let sub = plain.path().join("x");
    std::fs::create_dir(&sub).unwrap();
    // /tmp itself is not inside a work tree on a sane machine.
    assert!(toolgate_permission::project_id(&sub).ends_with("/x"));
}

#[allow(dead_code)]
fn assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<PermissionService>();
    is::<Arc<SqliteStore>>();
    is::<Arc<dyn ApprovalStore>>();
}

#[tokio::test]
async fn unsaveable_resources_ignore_saved_approvals() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("toolgate.db")).unwrap();
    store.add("/p", "bash", &["sh *".into()]).unwrap();
    let service = PermissionService::builder(agents(json!({"bash": "ask"})), "/p")
        .store(Arc::new(store))
        .mode(AskMode::Headless)
        .build();
    // A parsed `sh -c 'ls'` is satisfied by the saved `sh *`…
    service.assert(&ctx("s"), bash(&["sh -c 'ls'"])).await.unwrap();
    // …an opaque `sh -c "$X"` is not: only a rule or a person may allow it.
    let opaque = PermissionRequest::new("bash").unsaveable(["sh -c \"$X\""]);
    assert!(
        service
            .assert(&ctx("s"), opaque.clone())
            .await
            .unwrap_err()
            .stops_loop()
    );
    assert_eq!(service.explain("s", "build", &opaque)[0].effect, Effect::Ask);
}

#[tokio::test]
async fn the_audit_log_records_decisions_and_replies() {
    let dir = tempfile::tempdir().unwrap();
    let audit = Arc::new(toolgate_permission::AuditLog::new(dir.path().join("audit.jsonl")));
    let service = PermissionService::builder(
        agents(json!({"bash": {"*": "ask", "ls *": "allow", "rm *": "deny"}})),
        "/p",
    )
    .mode(AskMode::Interactive)
    .audit(Arc::clone(&audit))
    .build();
    audit.begin_call("call_1", "bash");
    service.assert(&ctx("s1"), bash(&["ls"])).await.unwrap();
    let _ = service.assert(&ctx("s1"), bash(&["rm x"])).await;
    let asking = ask(&service, "s1", bash(&["make"]));
    let id = wait_pending(&service, 1).await[0].id.clone();
    service.reply(&id, Reply::Once, None).unwrap();
    asking.await.unwrap().unwrap();
    let entries = audit.tail(10);
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[0]["effect"], "allow");
    assert_eq!(entries[0]["tool"], "bash");
    assert_eq!(entries[0]["rule"]["resource"], "ls *");
    assert_eq!(entries[0]["rule"]["origin"], "user_config");
    assert_eq!(entries[1]["effect"], "deny");
    assert_eq!(entries[2]["reply"], "once");
    assert_eq!(entries[2]["resources"], json!(["make"]));
    assert!(entries[0]["time"].as_str().unwrap().ends_with('Z'));
    assert_eq!(audit.tail(1).len(), 1);
}

#[test]
fn the_audit_log_rotates_at_10_mib() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    std::fs::write(&path, "x".repeat(ROTATE_BYTES as usize)).unwrap();
    let audit = toolgate_permission::AuditLog::new(&path);
    audit.settled(&toolgate_permission::Caller::new("s", "build", "c"), "bash", None, &[]);
    audit.flush();
    assert!(dir.path().join("audit.jsonl.1").exists());
    assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 1);
}

fn audit_caller() -> toolgate_permission::Caller<'static> {
    toolgate_permission::Caller::new("s", "build", "c")
}

fn lines_of(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .map(|text| text.lines().map(str::to_string).collect())
        .unwrap_or_default()
}

#[test]
fn every_audit_entry_kind_keeps_its_keys_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let audit = toolgate_permission::AuditLog::new(&path);
    audit.begin_call("c", "bash");
    let rule = toolgate_permission::Rule::new("bash", "ls *", Effect::Allow, toolgate_permission::Origin::UserConfig);
    audit.decision(
        &audit_caller(),
        "bash",
        &["ls".to_string()],
        Effect::Allow,
        Some(&rule),
        None,
    );
    audit.decision(&audit_caller(), "bash", &[], Effect::Ask, None, Some("once"));
    audit.settled(
        &audit_caller(),
        "bash",
        Some("boom \"quoted\"\n"),
        &[PathBuf::from("/d/tool-output/t_1")],
    );
    audit.cancelled(&audit_caller(), "bash");
    audit.auth_failed(
        &toolgate_permission::AuthFailure::new("wrong token")
            .peer("127.0.0.1:9")
            .request("GET", "/tool")
            .counts(2, 3, 4),
    );
    audit.flush();
    let lines = lines_of(&path);
    assert_eq!(lines.len(), 5, "{lines:?}");
    let keys = |line: &str| -> Vec<String> {
        let value: serde_json::Map<String, serde_json::Value> = serde_json::from_str(line).unwrap();
        value.keys().cloned().collect()
    };
    let decision = [
        "seq",
        "prev",
        "time",
        "kind",
        "session",
        "agent",
        "tool",
        "call",
        "action",
        "resources",
        "effect",
        "rule",
        "reply",
        "source",
    ];
    assert_eq!(keys(&lines[0]), decision);
    assert_eq!(keys(&lines[1]), decision);
    assert_eq!(
        keys(&lines[2]),
        [
            "seq",
            "prev",
            "time",
            "kind",
            "session",
            "agent",
            "tool",
            "call",
            "error",
            "truncated",
            "outputPaths"
        ]
    );
    assert_eq!(
        keys(&lines[3]),
        ["seq", "prev", "time", "kind", "session", "agent", "tool", "call"]
    );
    assert_eq!(
        keys(&lines[4]),
        [
            "seq",
            "prev",
            "time",
            "kind",
            "peer",
            "method",
            "path",
            "reason",
            "connectionFailures",
            "totalFailures",
            "suppressed"
        ]
    );
    let first: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(first["tool"], "bash");
    assert_eq!(
        first["rule"],
        json!({"action": "bash", "resource": "ls *", "effect": "allow", "origin": "user_config"})
    );
    assert_eq!(first["source"], json!({"kind": "rule"}));
    let second: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
    assert_eq!(second["source"], json!({"kind": "reply", "front_end": "api"}));
    assert_eq!(second["rule"], serde_json::Value::Null);
    assert_eq!(second["resources"], json!([]));
    let settled: serde_json::Value = serde_json::from_str(&lines[2]).unwrap();
    assert_eq!(settled["error"], "boom \"quoted\"\n");
    assert_eq!(settled["truncated"], true);
    assert_eq!(settled["outputPaths"], json!(["/d/tool-output/t_1"]));
    let cancelled: serde_json::Value = serde_json::from_str(&lines[3]).unwrap();
    assert_eq!(cancelled["kind"], "cancelled");
    let refused: serde_json::Value = serde_json::from_str(&lines[4]).unwrap();
    assert_eq!(refused["totalFailures"], 3);
}

#[test]
fn the_audit_log_rotates_when_its_own_entries_reach_10_mib() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let rotated = dir.path().join("audit.jsonl.1");
    // A few entries short of the limit when the log opens it: only the log's own writes
    // take it over, so rotation must follow from what it wrote, not from a fresh look.
    let start = ROTATE_BYTES as usize - 1_000;
    std::fs::write(&path, format!("{}\n", "x".repeat(start - 1))).unwrap();
    let audit = toolgate_permission::AuditLog::new(&path);
    let mut written = 0;
    while !rotated.exists() {
        assert!(written < 100, "no rotation after {written} entries past the limit");
        audit.settled(&audit_caller(), "bash", None, &[]);
        audit.flush();
        written += 1;
    }
    assert!(written > 1, "precondition: the first entry did not rotate the log");
    let old = lines_of(&rotated);
    let new = lines_of(&path);
    assert_eq!(old[0].len(), start - 1, "the pre-filled line went to the rotated file");
    assert!(std::fs::metadata(&rotated).unwrap().len() >= ROTATE_BYTES);
    assert_eq!(new.len(), 1, "the entry that found the log full starts the new file");
    assert_eq!(old.len() - 1 + new.len(), written, "every entry is in one of the files");
}

#[test]
fn the_audit_log_follows_a_rotation_by_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let rotated = dir.path().join("audit.jsonl.1");
    let audit = toolgate_permission::AuditLog::new(&path);
    audit.settled(&audit_caller(), "bash", None, &[]);
    audit.flush();
    assert_eq!(lines_of(&path).len(), 1, "precondition: the log wrote its first entry");
    // Another process rotates the log, as it does when it finds it full.
    std::fs::rename(&path, &rotated).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut written = 1;
    while !path.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the log kept writing to the rotated file"
        );
        audit.settled(&audit_caller(), "bash", None, &[]);
        audit.flush();
        written += 1;
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        lines_of(&path).len(),
        1,
        "the new file starts with the entry that found it gone"
    );
    assert_eq!(lines_of(&rotated).len() + 1, written, "no entry was lost");
}

/// The SQLite store at `path`, as the service takes it.
fn sqlite(path: impl AsRef<std::path::Path>) -> Result<Arc<dyn ApprovalStore>, toolgate_permission::StoreError> {
    SqliteStore::open(path).map(|store| Arc::new(store) as Arc<dyn ApprovalStore>)
}
