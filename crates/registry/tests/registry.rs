//! Registry conformance: vectors R1–R20 of spec §9.6, plus concurrency.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use toolgate_core::{
    BoundError, Bounded, BoxFuture, Content, Context, ModelResult, OutputBound, Tool, ToolFailure, ToolOutput,
};
use toolgate_registry::{ApplicationTools, RegistrationError, SettleError, Settlement, ToolRegistry};

/// Hands output back untouched.
struct PassThrough;

impl OutputBound for PassThrough {
    fn bound<'a>(&'a self, _: &'a Context, output: ToolOutput) -> BoxFuture<'a, Result<Bounded, BoundError>> {
        Box::pin(async move { Ok(Bounded::new(output, Vec::new())) })
    }
}

fn registry() -> (ApplicationTools, ToolRegistry) {
    let app = ApplicationTools::new();
    let registry = ToolRegistry::new(&app, Arc::new(PassThrough));
    (app, registry)
}

/// A tool that answers with a fixed text.
fn answering(text: &'static str) -> Tool {
    Tool::builder("Answers.", move |_: Value, _: Context| async move {
        Ok::<_, ToolFailure>(text)
    })
    .build()
}

/// The §2.4 visibility rule over `(action, resource, effect)` rules, with `*` as the only
/// pattern these vectors use.
fn hidden_by(rules: &'static [(&'static str, &'static str, &'static str)]) -> impl Fn(&str) -> bool {
    move |action| {
        rules
            .iter()
            .rev()
            .find(|(pattern, _, _)| *pattern == "*" || *pattern == action)
            .is_some_and(|(_, resource, effect)| *resource == "*" && *effect == "deny")
    }
}

fn names(registry: &ToolRegistry, rules: &'static [(&'static str, &'static str, &'static str)]) -> Vec<String> {
    let turn = registry.materialize(hidden_by(rules));
    turn.definitions()
        .iter()
        .map(|definition| definition.name.clone())
        .collect()
}

async fn settle(turn: &toolgate_registry::Materialized, name: &str) -> Settlement {
    turn.settle(name, json!({}), Context::default()).await.unwrap()
}

/// The typed refusal of a call the catalog cannot take, as the text a model is shown.
async fn miss(turn: &toolgate_registry::Materialized, name: &str) -> String {
    let error = turn.settle(name, json!({}), Context::default()).await.unwrap_err();
    match &error {
        SettleError::Unknown { name: called } | SettleError::Stale { name: called } => assert_eq!(called, name),
        other => panic!("not a catalog miss: {other:?}"),
    }
    error.to_string()
}

fn five_tools(registry: &ToolRegistry) -> toolgate_registry::Registration {
    let shared = answering("x");
    registry
        .register([
            ("question", answering("q")),
            ("bash", answering("b")),
            ("edit", shared.clone()),
            ("write", shared.with_permission("edit")),
            ("apply_patch", shared.with_permission("edit")),
        ])
        .unwrap()
}

#[test]
fn r1_question_denied_hides_question_only() {
    let (_app, registry) = registry();
    let _guard = five_tools(&registry);
    assert_eq!(
        names(&registry, &[("question", "*", "deny")]),
        ["bash", "edit", "write", "apply_patch"]
    );
}

#[test]
fn r2_last_rule_reveals_question() {
    let (_app, registry) = registry();
    let _guard = five_tools(&registry);
    assert_eq!(
        names(&registry, &[("*", "*", "deny"), ("question", "private", "allow")]),
        ["question"]
    );
}

#[test]
fn r3_later_wildcard_deny_hides_everything() {
    let (_app, registry) = registry();
    let _guard = five_tools(&registry);
    assert!(names(&registry, &[("question", "private", "allow"), ("*", "*", "deny")]).is_empty());
}

#[test]
fn r4_edit_deny_hides_every_edit_labelled_tool() {
    let (_app, registry) = registry();
    let _guard = five_tools(&registry);
    assert_eq!(names(&registry, &[("edit", "*", "deny")]), ["question", "bash"]);
}

#[test]
fn r5_permission_decoration_is_isolated_between_registrations() {
    let (_app, registry) = registry();
    let shared = answering("shared");
    let _first = registry.register([("first", shared.clone())]).unwrap();
    let _second = registry.register([("second", shared.with_permission("edit"))]).unwrap();
    let _later = shared.with_permission("question");
    assert_eq!(names(&registry, &[("edit", "*", "deny")]), ["first"]);
}

#[tokio::test]
async fn r6_tool_failure_becomes_an_error_result() {
    let (_app, registry) = registry();
    let denied = Tool::builder("Denies.", |_: Value, _: Context| async {
        Err::<String, _>(ToolFailure::new("Denied"))
    })
    .build();
    let _guard = registry.register([("denied", denied)]).unwrap();
    let settled = settle(&registry.materialize(|_| false), "denied").await;
    assert_eq!(settled.result, ModelResult::Error("Denied".into()));
    assert_eq!(settled.result.to_json(), json!({"type": "error", "value": "Denied"}));
    assert!(settled.output.is_none() && settled.output_paths.is_empty());
}

#[tokio::test]
async fn r7_unknown_tool() {
    let (_app, registry) = registry();
    assert_eq!(
        miss(&registry.materialize(|_| false), "missing").await,
        "Unknown tool: missing"
    );
}

#[tokio::test]
async fn r8_closing_the_scope_makes_the_call_stale() {
    let (_app, registry) = registry();
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let echo = Tool::builder("Echo.", move |_: Value, _: Context| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, ToolFailure>("echo") }
    })
    .build();
    let guard = registry.register([("echo", echo)]).unwrap();
    let turn = registry.materialize(|_| false);
    drop(guard);
    assert_eq!(miss(&turn, "echo").await, "Stale tool call: echo");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn r9_only_the_replaced_name_goes_stale_even_for_the_same_tool_value() {
    let (_app, registry) = registry();
    let first = answering("first");
    let _both = registry
        .register([("first", first.clone()), ("second", answering("second"))])
        .unwrap();
    let turn = registry.materialize(|_| false);
    let _again = registry.register([("first", first)]).unwrap();
    assert_eq!(miss(&turn, "first").await, "Stale tool call: first");
    assert_eq!(settle(&turn, "second").await.result, ModelResult::Text("second".into()));
}

#[tokio::test]
async fn r10_revealing_a_previous_overlay_is_stale() {
    let (_app, registry) = registry();
    let _base = registry.register([("echo", answering("base"))]).unwrap();
    let overlay = registry.register([("echo", answering("overlay"))]).unwrap();
    let turn = registry.materialize(|_| false);
    assert_eq!(settle(&turn, "echo").await.result, ModelResult::Text("overlay".into()));
    drop(overlay);
    assert_eq!(miss(&turn, "echo").await, "Stale tool call: echo");
    // A fresh turn sees the base again.
    assert_eq!(
        settle(&registry.materialize(|_| false), "echo").await.result,
        ModelResult::Text("base".into())
    );
}

#[tokio::test]
async fn r11_a_running_call_keeps_its_captured_executor() {
    let (_app, registry) = registry();
    let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
    let release_rx = Arc::new(std::sync::Mutex::new(Some(release_rx)));
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let started_tx = Arc::new(std::sync::Mutex::new(Some(started_tx)));
    let blocked = Tool::builder("Blocks.", move |_: Value, _: Context| {
        let release = release_rx.lock().unwrap().take();
        let started = started_tx.lock().unwrap().take();
        async move {
            if let Some(started) = started {
                let _ = started.send(());
            }
            if let Some(release) = release {
                let _ = release.await;
            }
            Ok::<_, ToolFailure>("original")
        }
    })
    .build();
    let guard = registry.register([("slow", blocked)]).unwrap();
    let turn = Arc::new(registry.materialize(|_| false));
    let running = tokio::spawn({
        let turn = Arc::clone(&turn);
        async move { settle(&turn, "slow").await }
    });
    started_rx.await.unwrap();
    drop(guard);
    let _replacement = registry.register([("slow", answering("replacement"))]).unwrap();
    release_tx.send(()).unwrap();
    assert_eq!(running.await.unwrap().result, ModelResult::Text("original".into()));
}

#[tokio::test]
async fn r12_context_is_passed_exactly() {
    let (_app, registry) = registry();
    let tool = Tool::builder("Ctx.", |_: Value, ctx: Context| async move {
        Ok::<_, ToolFailure>(serde_json::to_value(ctx).unwrap())
    })
    .build();
    let _guard = registry.register([("ctx", tool)]).unwrap();
    let ctx = Context::new("ses_1", "build").with_call("msg_1", "call_1");
    let settled = registry
        .materialize(|_| false)
        .settle("ctx", json!({}), ctx)
        .await
        .unwrap();
    assert_eq!(
        settled.output.unwrap().structured,
        json!({"sessionID": "ses_1", "agent": "build", "assistantMessageID": "msg_1", "toolCallID": "call_1"})
    );
}

/// Replaces every output by a fixed reference, like a store that spilled it.
struct Referencing;

impl OutputBound for Referencing {
    fn bound<'a>(&'a self, _: &'a Context, _: ToolOutput) -> BoxFuture<'a, Result<Bounded, BoundError>> {
        Box::pin(async {
            Ok(Bounded::new(
                ToolOutput::text("bounded reference"),
                vec![PathBuf::from("/managed/generic")],
            ))
        })
    }
}

/// Fails every bound as a full disk would.
struct Failing;

impl OutputBound for Failing {
    fn bound<'a>(&'a self, _: &'a Context, _: ToolOutput) -> BoxFuture<'a, Result<Bounded, BoundError>> {
        Box::pin(async {
            Err(BoundError::Storage {
                operation: "write",
                path: PathBuf::from("/managed/generic"),
                source: std::io::Error::other("disk full"),
            })
        })
    }
}

#[tokio::test]
async fn r13_settlement_carries_the_bounded_output_and_its_paths() {
    let app = ApplicationTools::new();
    let registry = ToolRegistry::new(&app, Arc::new(Referencing));
    let _guard = registry.register([("big", answering("a very long output"))]).unwrap();
    let settled = settle(&registry.materialize(|_| false), "big").await;
    assert_eq!(settled.result, ModelResult::Text("bounded reference".into()));
    assert_eq!(settled.output, Some(ToolOutput::text("bounded reference")));
    assert_eq!(settled.output_paths, [PathBuf::from("/managed/generic")]);
}

#[tokio::test]
async fn r14_a_bound_failure_fails_the_settle() {
    let app = ApplicationTools::new();
    let registry = ToolRegistry::new(&app, Arc::new(Failing));
    let _guard = registry.register([("big", answering("output"))]).unwrap();
    let error = registry
        .materialize(|_| false)
        .settle("big", json!({}), Context::default())
        .await
        .unwrap_err();
    assert!(
        matches!(error, SettleError::Bound(BoundError::Storage { .. })),
        "{error}"
    );
}

#[tokio::test]
async fn r15_application_tool_projection_with_media() {
    let (app, registry) = registry();
    let tool = Tool::builder("Once.", |_: Value, _: Context| async { Ok::<_, ToolFailure>("ONCE") })
        .project(|text: &&str| vec![Content::text(*text), Content::media("image/png", "aGVsbG8=")])
        .build();
    let _guard = app.register([("once", tool)]).unwrap();
    let settled = settle(&registry.materialize(|_| false), "once").await;
    assert_eq!(
        settled.result.to_json(),
        json!({"type": "content", "value": [
            {"type": "text", "text": "ONCE"},
            {"type": "file", "uri": "data:image/png;base64,aGVsbG8=", "mime": "image/png"}
        ]})
    );
}

#[test]
fn r16_invalid_name_is_refused() {
    let (app, registry) = registry();
    let error = registry.register([("invalid name", answering("x"))]).unwrap_err();
    assert_eq!(error.to_string(), "Invalid tool name: invalid name");
    assert!(app.register([("9lives", answering("x"))]).is_err());
    assert!(app.register([("a".repeat(65), answering("x"))]).is_err());
    assert!(app.register([("a".repeat(64), answering("x"))]).is_ok());
    assert!(app.register([("ok_name-2", answering("x"))]).is_ok());
}

/// R17 registers a value that is not a tool; Rust's types rule that out, so the vector's
/// other half is what is tested: one bad entry registers nothing at all.
#[test]
fn r17_a_bad_entry_registers_nothing() {
    let (app, registry) = registry();
    let error = app
        .register([("ok", answering("ok")), ("bro ken", answering("x"))])
        .unwrap_err();
    assert_eq!(error, RegistrationError::InvalidName { name: "bro ken".into() });
    assert!(names(&registry, &[]).is_empty());
    let duplicate = app
        .register([("a", answering("1")), ("a", answering("2"))])
        .unwrap_err();
    assert_eq!(duplicate.to_string(), "Duplicate tool name in one registration: a");
}

#[tokio::test]
async fn r18_location_wins_over_application() {
    let (app, registry) = registry();
    let _app_guard = app.register([("shared", answering("application"))]).unwrap();
    let _loc_guard = registry.register([("shared", answering("location"))]).unwrap();
    assert!(names(&registry, &[("shared", "*", "deny")]).is_empty());
    let turn = registry.materialize(|_| false);
    assert_eq!(turn.definitions().len(), 1);
    assert_eq!(
        settle(&turn, "shared").await.result,
        ModelResult::Text("location".into())
    );
}

#[tokio::test]
async fn r19_visibility_is_not_authorisation() {
    let (app, registry) = registry();
    let _guard = app.register([("contextual", answering("ran"))]).unwrap();
    assert!(names(&registry, &[("contextual", "*", "deny")]).is_empty());
    // The registry never asks permission: a catalog that offers the tool runs it.
    let turn = registry.materialize(|_| false);
    assert_eq!(
        settle(&turn, "contextual").await.result,
        ModelResult::Text("ran".into())
    );
}

#[tokio::test]
async fn r20_removed_application_tool_is_unknown_to_a_fresh_view() {
    let (app, registry) = registry();
    let guard = app.register([("contextual", answering("ran"))]).unwrap();
    drop(guard);
    assert_eq!(
        miss(&registry.materialize(|_| false), "contextual").await,
        "Unknown tool: contextual"
    );
}

#[test]
fn order_is_location_names_then_application_names() {
    let (app, registry) = registry();
    let _a = app
        .register([("zeta", answering("")), ("alpha", answering(""))])
        .unwrap();
    let _l = registry
        .register([("mid", answering("")), ("alpha", answering(""))])
        .unwrap();
    assert_eq!(names(&registry, &[]), ["mid", "alpha", "zeta"]);
}

#[tokio::test]
async fn a_panicking_tool_is_a_defect() {
    let (_app, registry) = registry();
    let tool = Tool::builder("Panics.", |_: Value, _: Context| async {
        if true {
            panic!("boom");
        }
        Ok::<String, ToolFailure>(String::new())
    })
    .build();
    let _guard = registry.register([("panics", tool)]).unwrap();
    let error = registry
        .materialize(|_| false)
        .settle("panics", json!({}), Context::default())
        .await
        .unwrap_err();
    assert!(matches!(error, SettleError::Defect(_)), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_registration_and_settle() {
    let (app, registry) = registry();
    let _base = app.register([("base", answering("base"))]).unwrap();
    let mut tasks = Vec::new();
    for task in 0..32 {
        let registry = registry.clone();
        tasks.push(tokio::spawn(async move {
            for round in 0..50 {
                let name = format!("t{task}");
                let guard = registry.register([(name.clone(), answering("mine"))]).unwrap();
                let turn = registry.materialize(|_| false);
                assert_eq!(settle(&turn, &name).await.result, ModelResult::Text("mine".into()));
                assert_eq!(settle(&turn, "base").await.result, ModelResult::Text("base".into()));
                if round % 2 == 0 {
                    drop(guard);
                    assert_eq!(miss(&turn, &name).await, format!("Stale tool call: {name}"));
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}

/// The change count front ends key kept catalogs by: it grows with every registration
/// and unregistration, at the location and in the application layer, and with nothing
/// else.
#[test]
fn the_change_count_grows_with_every_registration_change() {
    let (app, registry) = registry();
    let start = registry.changes();
    let _ = registry.materialize(|_| false);
    assert_eq!(registry.changes(), start, "a materialize changed nothing");
    let local = registry.register([("a", answering("a"))]).unwrap();
    let after_local = registry.changes();
    assert!(after_local > start);
    let global = app.register([("b", answering("b"))]).unwrap();
    let after_global = registry.changes();
    assert!(after_global > after_local, "an application registration went unseen");
    assert!(registry.register([("bad name", answering("x"))]).is_err());
    assert_eq!(registry.changes(), after_global, "a refused registration counted");
    drop(local);
    let after_drop = registry.changes();
    assert!(after_drop > after_global);
    drop(global);
    assert!(
        registry.changes() > after_drop,
        "an application unregistration went unseen"
    );
}
