//! The gate as a front end uses it: every call leaves exactly one record, cancellations
//! included; catalog misses are typed; doom loops ask; old spills go.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use toolgate_core::{Context, ModelResult, Tool, ToolFailure};
use toolgate_gate::{Call, Gate, GateError, GateEvent};
use toolgate_output_store::OutputStore;
use toolgate_permission::{AgentSettings, Agents, AskMode, AuditLog, PermissionService};
use toolgate_registry::{ApplicationTools, ToolRegistry};

struct Fixture {
    data: tempfile::TempDir,
    gate: Gate,
    audit: Arc<AuditLog>,
    runs: Arc<AtomicUsize>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    text: String,
}

fn fixture(mode: AskMode) -> Fixture {
    let data = tempfile::tempdir().unwrap();
    let store = OutputStore::new(data.path());
    let registry = ToolRegistry::new(&ApplicationTools::new(), Arc::new(store.clone()));
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let echo = Tool::builder("Echo.", move |input: Echo, _: Context| {
        counted.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, ToolFailure>(input.text) }
    })
    .build();
    let hang = Tool::builder("Never answers.", |_: Value, _: Context| async {
        std::future::pending::<()>().await;
        Ok::<_, ToolFailure>("never")
    })
    .build();
    let panics = Tool::builder("Panics.", |_: Value, _: Context| async {
        if true {
            panic!("boom");
        }
        Ok::<_, ToolFailure>("never")
    })
    .build();
    let registration = registry
        .register([("echo", echo), ("hang", hang), ("panics", panics)])
        .unwrap();
    let audit = Arc::new(AuditLog::new(data.path().join("audit.jsonl")));
    let agents = Agents::build(&AgentSettings::default()).unwrap();
    let permissions = PermissionService::builder(agents, "/project")
        .mode(mode)
        .audit(Arc::clone(&audit))
        .build();
    let gate = Gate::builder(registry, permissions)
        .hold(registration)
        .spills(store)
        .build();
    Fixture {
        data,
        gate,
        audit,
        runs,
    }
}

fn kinds(audit: &AuditLog) -> Vec<(String, String)> {
    audit
        .tail(100)
        .iter()
        .map(|entry| {
            (
                entry["kind"].as_str().unwrap_or("").to_string(),
                entry["tool"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn drain(events: &mut tokio::sync::broadcast::Receiver<GateEvent>) -> Vec<GateEvent> {
    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        seen.push(event);
    }
    seen
}

#[tokio::test]
async fn a_settled_call_is_recorded_once_from_start_to_end() {
    let f = fixture(AskMode::Headless);
    let mut events = f.gate.subscribe();
    let catalog = f.gate.catalog("build");
    let call = Call::new("ses_1", "echo", json!({"text": "hi"})).with_id("call_1");
    let settled = f.gate.call(&catalog, call).await.unwrap();
    assert_eq!(settled.settlement.result, ModelResult::Text("hi".into()));
    assert_eq!(settled.context.tool_call_id, "call_1");
    assert_eq!(settled.context.agent, "build");
    assert_eq!(kinds(&f.audit), [("settled".to_string(), "echo".to_string())]);
    assert_eq!(f.audit.open_calls(), 0);
    let seen = drain(&mut events);
    assert!(matches!(&seen[0], GateEvent::Started { call, tool, .. } if call == "call_1" && tool == "echo"));
    assert!(
        matches!(&seen[1], GateEvent::Settled { result: ModelResult::Text(text), declined: false, .. } if text == "hi")
    );
    assert_eq!(seen.len(), 2);
}

#[tokio::test]
async fn a_dropped_call_is_recorded_as_cancelled_and_leaks_nothing() {
    let f = fixture(AskMode::Headless);
    let mut events = f.gate.subscribe();
    let catalog = f.gate.catalog("build");
    let call = f
        .gate
        .call(&catalog, Call::new("ses_1", "hang", json!({})).with_id("call_h"));
    let timed_out = tokio::time::timeout(Duration::from_millis(50), call).await;
    assert!(timed_out.is_err(), "the hanging tool answered");
    // Precondition: the call had begun before it was dropped.
    let seen = drain(&mut events);
    assert!(
        matches!(&seen[0], GateEvent::Started { call, .. } if call == "call_h"),
        "{seen:?}"
    );
    assert!(matches!(&seen[1], GateEvent::Cancelled { call, tool, .. } if call == "call_h" && tool == "hang"));
    assert_eq!(kinds(&f.audit), [("cancelled".to_string(), "hang".to_string())]);
    assert_eq!(f.audit.open_calls(), 0, "the cancelled call is still remembered");
}

#[tokio::test]
async fn unknown_and_stale_calls_are_typed_and_run_nothing() {
    let f = fixture(AskMode::Headless);
    let mut events = f.gate.subscribe();
    let catalog = f.gate.catalog("build");
    let unknown = f
        .gate
        .call(&catalog, Call::new("s", "nope", json!({})))
        .await
        .unwrap_err();
    assert!(
        matches!(&unknown, GateError::Unknown { tool, agent, offered, .. }
            if tool == "nope" && agent == "build" && offered == &["echo", "hang", "panics"]),
        "{unknown:?}"
    );
    assert!(unknown.never_ran());
    assert_eq!(unknown.to_string(), "Unknown tool: nope");
    assert!(drain(&mut events).is_empty(), "an unknown call never starts");

    // A new registration of the same name makes the old catalog's entry stale.
    let replacement = Tool::builder("Echo again.", |input: Echo, _: Context| async move {
        Ok::<_, ToolFailure>(input.text)
    })
    .build();
    let _again = f.gate.registry().register([("echo", replacement)]).unwrap();
    let stale = f
        .gate
        .call(&catalog, Call::new("s", "echo", json!({"text": "x"})))
        .await
        .unwrap_err();
    assert!(
        matches!(&stale, GateError::Stale { tool } if tool == "echo") && stale.never_ran(),
        "{stale:?}"
    );
    assert_eq!(f.runs.load(Ordering::SeqCst), 0);
    let recorded = f.audit.tail(10);
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[0]["error"], "Unknown tool: nope");
    assert_eq!(recorded[1]["error"], "Stale tool call: echo");
    assert_eq!(f.audit.open_calls(), 0);
}

#[tokio::test]
async fn a_panicking_tool_is_a_failure_on_record() {
    let f = fixture(AskMode::Headless);
    let mut events = f.gate.subscribe();
    let catalog = f.gate.catalog("build");
    let error = f
        .gate
        .call(&catalog, Call::new("s", "panics", json!({})))
        .await
        .unwrap_err();
    assert!(matches!(error, GateError::Defect(_)) && !error.never_ran(), "{error:?}");
    let seen = drain(&mut events);
    assert!(
        matches!(&seen[1], GateEvent::Failed { error, .. } if error.contains("boom")),
        "{seen:?}"
    );
    assert!(f.audit.tail(1)[0]["error"].as_str().unwrap().contains("boom"));
}

/// spec §4.11: the third identical call in one assistant message asks `doom_loop`
/// (declined here: no one can answer), and the tool does not run a third time.
#[tokio::test]
async fn the_third_identical_call_in_a_message_asks_doom_loop() {
    let f = fixture(AskMode::Headless);
    let catalog = f.gate.catalog("build");
    let same = || Call::new("ses_d", "echo", json!({"text": "again"})).in_message("msg_1");
    for _ in 0..2 {
        let settled = f.gate.call(&catalog, same()).await.unwrap();
        assert_eq!(settled.settlement.result, ModelResult::Text("again".into()));
    }
    let third = f.gate.call(&catalog, same()).await.unwrap();
    assert!(third.settlement.refusal.is_some(), "{:?}", third.settlement.result);
    let ModelResult::Error(message) = &third.settlement.result else {
        panic!("{:?}", third.settlement.result)
    };
    assert!(message.contains("doom_loop"), "{message}");
    assert_eq!(f.runs.load(Ordering::SeqCst), 2);
    let decision = f
        .audit
        .tail(20)
        .into_iter()
        .find(|entry| entry["kind"] == "decision")
        .unwrap();
    assert_eq!(decision["action"], "doom_loop");
    assert_eq!(decision["resources"], json!(["echo"]));

    // Another message, another session, or another input starts afresh.
    let fresh = Call::new("ses_d", "echo", json!({"text": "again"})).in_message("msg_2");
    assert!(f.gate.call(&catalog, fresh).await.unwrap().settlement.refusal.is_none());
    assert_eq!(f.runs.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn auto_mode_lets_a_doom_loop_through() {
    let f = fixture(AskMode::Auto);
    let catalog = f.gate.catalog("build");
    for _ in 0..4 {
        let call = Call::new("s", "echo", json!({"text": "a"})).in_message("m");
        assert!(f.gate.call(&catalog, call).await.unwrap().settlement.refusal.is_none());
    }
    assert_eq!(f.runs.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn the_first_call_removes_week_old_spills_and_keeps_fresh_ones() {
    let f = fixture(AskMode::Headless);
    let spills = f.data.path().join("tool-output");
    std::fs::create_dir_all(&spills).unwrap();
    let old = spills.join("tool_old");
    let fresh = spills.join("tool_fresh");
    let other = spills.join("notes.txt");
    for path in [&old, &fresh, &other] {
        std::fs::write(path, "x").unwrap();
    }
    let eight_days = SystemTime::now() - Duration::from_secs(8 * 24 * 3600);
    for path in [&old, &other] {
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(eight_days)
            .unwrap();
    }
    // Precondition: building the gate removes nothing.
    tokio::task::yield_now().await;
    assert!(old.exists());
    let catalog = f.gate.catalog("build");
    f.gate
        .call(&catalog, Call::new("s", "echo", json!({"text": "x"})))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while old.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(!old.exists(), "the week-old spill is still there");
    assert!(fresh.exists() && other.exists());
}

/// The gate keeps each agent's catalog while registrations stay as they are: a catalog
/// asked for after a registration or an unregistration offers what the registry holds
/// then, and the older catalog's calls of a replaced tool are still refused as stale.
#[tokio::test]
async fn a_new_catalog_follows_every_registration_change() {
    let f = fixture(AskMode::Auto);
    let first = f.gate.catalog("build");
    assert!(first.offers("echo") && !first.offers("late"));
    let late = Tool::builder("Registered later.", |_: Value, _: Context| async {
        Ok::<_, ToolFailure>("late")
    })
    .build();
    let registration = f.gate.registry().register([("late", late)]).unwrap();
    let second = f.gate.catalog("build");
    assert!(second.offers("late"), "{:?}", second.names());
    let settled = f.gate.call(&second, Call::new("s", "late", json!({}))).await.unwrap();
    assert_eq!(settled.settlement.result, ModelResult::Text("late".into()));
    assert!(
        matches!(
            f.gate.call(&first, Call::new("s", "late", json!({}))).await,
            Err(GateError::Unknown { .. })
        ),
        "the catalog made before the registration does not offer it"
    );
    drop(registration);
    let third = f.gate.catalog("build");
    assert!(!third.offers("late"), "an unregistered tool is still offered");
    assert!(matches!(
        f.gate.call(&second, Call::new("s", "late", json!({}))).await,
        Err(GateError::Stale { .. })
    ));

    // Replacing a tool: the old catalogs are stale for it, a new one runs the new tool.
    let replacement = Tool::builder("Echo, louder.", |input: Echo, _: Context| async move {
        Ok::<_, ToolFailure>(input.text.to_uppercase())
    })
    .build();
    let _replaced = f.gate.registry().register([("echo", replacement)]).unwrap();
    for old in [&first, &third] {
        let stale = f
            .gate
            .call(old, Call::new("s", "echo", json!({"text": "a"})))
            .await
            .unwrap_err();
        assert_eq!(stale.to_string(), "Stale tool call: echo");
    }
    let fourth = f.gate.catalog("build");
    let settled = f
        .gate
        .call(&fourth, Call::new("s", "echo", json!({"text": "a"})))
        .await
        .unwrap();
    assert_eq!(settled.settlement.result, ModelResult::Text("A".into()));
    assert_eq!(f.runs.load(Ordering::SeqCst), 0, "a stale call ran the old tool");
}

/// Each agent's rules decide its own catalog, kept or not: an agent whose rules deny a
/// tool never gets another agent's catalog.
#[tokio::test]
async fn each_agent_keeps_its_own_catalog() {
    let registry = ToolRegistry::new(
        &ApplicationTools::new(),
        Arc::new(OutputStore::new(tempfile::tempdir().unwrap().path())),
    );
    let echo = Tool::builder("Echo.", |input: Echo, _: Context| async move {
        Ok::<_, ToolFailure>(input.text)
    })
    .build();
    let registration = registry.register([("echo", echo)]).unwrap();
    let settings = AgentSettings::default().with_agents(json!({"plan": {"permission": {"echo": "deny"}}}));
    let agents = Agents::build(&settings).unwrap();
    let permissions = PermissionService::builder(agents, "/project")
        .mode(AskMode::Auto)
        .build();
    let gate = Gate::builder(registry, permissions).hold(registration).build();
    for _ in 0..2 {
        assert!(gate.catalog("build").offers("echo"));
        assert!(!gate.catalog("plan").offers("echo"), "plan was given build's catalog");
    }
    let refused = gate
        .call(&gate.catalog("plan"), Call::new("s", "echo", json!({"text": "x"})))
        .await
        .unwrap_err();
    assert!(matches!(refused, GateError::Unknown { .. }));
}

/// `run` is what a front end without a catalog of its own calls: it prepares for the one
/// tool (a lazily registered tool comes up), catalogs for the agent, and settles; a miss
/// says what the agent is offered. `prepared_catalog` prepares for the whole catalog.
#[tokio::test]
async fn run_prepares_for_the_tool_catalogs_for_the_agent_and_settles() {
    let registry = ToolRegistry::new(
        &ApplicationTools::new(),
        Arc::new(OutputStore::new(tempfile::tempdir().unwrap().path())),
    );
    let echo = Tool::builder("Echo.", |input: Echo, _: Context| async move {
        Ok::<_, ToolFailure>(input.text)
    })
    .build();
    let registration = registry.register([("echo", echo)]).unwrap();
    // The prepare hook registers `late` on first need, and records what it was asked for.
    let asked: Arc<std::sync::Mutex<Vec<Option<String>>>> = Arc::default();
    let held: Arc<std::sync::Mutex<Vec<toolgate_registry::Registration>>> = Arc::default();
    let prepare: toolgate_gate::Prepare = {
        let (asked, held, registry) = (Arc::clone(&asked), Arc::clone(&held), registry.clone());
        Arc::new(move |tool: Option<String>| {
            asked.lock().unwrap().push(tool);
            let mut held = held.lock().unwrap();
            if held.is_empty() {
                let late =
                    Tool::builder("Late.", |_: Value, _: Context| async { Ok::<_, ToolFailure>("late") }).build();
                held.push(registry.register([("late", late)]).unwrap());
            }
            Box::pin(async {})
        })
    };
    let settings = AgentSettings::default().with_agents(json!({"plan": {"permission": {"echo": "deny"}}}));
    let agents = Agents::build(&settings).unwrap();
    let permissions = PermissionService::builder(agents, "/project")
        .mode(AskMode::Auto)
        .build();
    let gate = Gate::builder(registry, permissions)
        .hold(registration)
        .prepare(prepare)
        .build();

    assert!(!gate.catalog("build").offers("late"), "catalog does not prepare");
    let settled = gate.run("build", Call::new("s", "late", json!({}))).await.unwrap();
    assert_eq!(settled.settlement.result, ModelResult::Text("late".into()));
    assert_eq!(settled.context.agent, "build");
    assert_eq!(asked.lock().unwrap().as_slice(), [Some("late".to_string())]);

    let listed = gate.prepared_catalog("plan").await;
    assert_eq!(listed.names(), ["late"], "plan's rules hide echo");
    assert_eq!(
        asked.lock().unwrap().last(),
        Some(&None),
        "a whole catalog prepares everything"
    );

    let refused = gate
        .run("plan", Call::new("s", "echo", json!({"text": "x"})))
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, GateError::Unknown { tool, agent, offered, .. }
            if tool == "echo" && agent == "plan" && offered == &["late"]),
        "{refused:?}"
    );
    // Hidden by plan's rules (spec §2.4): denied, by the rule that hides it.
    assert!(
        matches!(&refused, GateError::Unknown { denied: Some(_), .. }),
        "{refused:?}"
    );
    assert!(
        refused
            .to_string()
            .starts_with("Permission denied: tool echo for agent plan by rule "),
        "{refused}"
    );
}
