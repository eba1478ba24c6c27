//! The service's edges: absolute-path rules hold against relative resources (spec
//! §4.3), doom_loop (§4.11), replies (§4.5), and asks that say what is already allowed
//! (§4.4).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolgate_core::{Context, PermissionRequest, Permissions, Refusal};
use toolgate_permission::{
    AgentSettings, Agents, ApprovalStore, AskMode, DoomMemory, Effect, PermissionService, Reply, SqliteStore,
};

fn agents(permission: serde_json::Value) -> Agents {
    Agents::build(
        &AgentSettings::default()
            .with_output_dir(PathBuf::from("/data/tool-output"))
            .with_plans_dir(PathBuf::from("/data/plans"))
            .with_permission(permission),
    )
    .unwrap()
}

fn ctx(session: &str) -> Context {
    Context::new(session, "build").with_call("msg_1", "call_1")
}

async fn wait_pending(service: &PermissionService, count: usize) -> Vec<toolgate_permission::Request> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let pending = service.pending();
        if pending.len() >= count {
            return pending;
        }
        assert!(std::time::Instant::now() < deadline, "expected {count} pending");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

// ---- the absolute candidate (spec §4.3) ---------------------------------------------

#[tokio::test]
async fn absolute_rules_hold_against_relative_resources() {
    let permission = json!({
        "edit": {"/abs/project/src/*": "deny", "/abs/project/docs/*": "ask"},
        "read": {"/abs/project/secret/*": "deny"},
        "external_directory": {"/abs/project/*": "deny"}
    });
    let plain = PermissionService::builder(agents(permission.clone()), "/abs/project")
        .mode(AskMode::Headless)
        .build();
    let rooted = PermissionService::builder(agents(permission), "/abs/project")
        .mode(AskMode::Headless)
        .roots([PathBuf::from("/abs/project")])
        .build();
    let edit = PermissionRequest::new("edit").resources(["src/y.rs"]);
    // Without the project root the absolute rule cannot see `src/y.rs` (the old behaviour).
    assert!(plain.assert(&ctx("s"), edit.clone()).await.is_ok());
    let refusal = rooted.assert(&ctx("s"), edit).await.unwrap_err();
    assert!(matches!(refusal, Refusal::Blocked { .. }), "{refusal:?}");
    let read = PermissionRequest::new("read").resources(["secret/key"]);
    assert!(rooted.assert(&ctx("s"), read).await.is_err());
    // Relative rules still see the relative path; other paths are untouched.
    let other = PermissionRequest::new("edit").resources(["lib/z.rs"]);
    assert!(rooted.assert(&ctx("s"), other).await.is_ok());
    // `bash` resources are commands, never paths.
    let bash = PermissionRequest::new("bash").resources(["src/y.rs"]);
    assert!(rooted.assert(&ctx("s"), bash).await.is_ok());
    // `toolgate check` explains with the same rule.
    let explained = rooted.explain(
        "",
        "build",
        &PermissionRequest::new("edit").resources(["src/y.rs", "docs/a.md"]),
    );
    assert_eq!(explained[0].effect, Effect::Deny);
    assert_eq!(explained[0].rule.as_ref().unwrap().resource, "/abs/project/src/*");
    assert_eq!(explained[1].effect, Effect::Ask);
    // The project root itself (`.`) is the root's absolute path.
    let root = PermissionRequest::new("external_directory").resources(["."]);
    assert!(rooted.assert(&ctx("s"), root).await.is_err());
}

#[tokio::test]
async fn every_spelling_of_the_project_root_is_checked() {
    // The project reached through a symlink: rules may name either path.
    let service = PermissionService::builder(agents(json!({"edit": {"/home/me/app/src/*": "deny"}})), "/p")
        .mode(AskMode::Headless)
        .roots([PathBuf::from("/mnt/disk/app"), PathBuf::from("/home/me/app/")])
        .build();
    let edit = PermissionRequest::new("edit").resources(["src/main.rs"]);
    assert!(service.assert(&ctx("s"), edit).await.is_err());
}

#[tokio::test]
async fn relative_allows_inside_an_absolute_deny_keep_their_order() {
    // Last match wins across both kinds: a later relative allow beats an earlier
    // absolute deny, and a later absolute deny beats an earlier relative allow.
    let service = PermissionService::builder(
        agents(json!({"edit": {"/abs/p/*": "deny", "docs/*": "allow", "/abs/p/docs/private/*": "deny"}})),
        "/abs/p",
    )
    .mode(AskMode::Headless)
    .roots([PathBuf::from("/abs/p")])
    .build();
    let decide = |path: &str| service.explain("", "build", &PermissionRequest::new("edit").resources([path]))[0].effect;
    assert_eq!(decide("src/a.rs"), Effect::Deny);
    assert_eq!(decide("docs/a.md"), Effect::Allow);
    assert_eq!(decide("docs/private/a.md"), Effect::Deny);
}

#[tokio::test]
async fn saved_absolute_approvals_also_apply_to_relative_resources() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("toolgate.db")).unwrap();
    store.add("/abs/p", "edit", &["/abs/p/gen/*".to_string()]).unwrap();
    let service = PermissionService::builder(agents(json!({"edit": "ask"})), "/abs/p")
        .store(Arc::new(store))
        .mode(AskMode::Headless)
        .roots([PathBuf::from("/abs/p")])
        .build();
    assert!(
        service
            .assert(&ctx("s"), PermissionRequest::new("edit").resources(["gen/a.rs"]))
            .await
            .is_ok()
    );
    assert!(
        service
            .assert(&ctx("s"), PermissionRequest::new("edit").resources(["src/a.rs"]))
            .await
            .is_err()
    );
}

// ---- doom_loop (spec §4.11) -----------------------------------------------------------

/// A context in `session` whose calls belong to `message`.
fn in_message(session: &str, message: &str) -> Context {
    Context::new(session, "build").with_call(message, "call_1")
}

#[tokio::test]
async fn doom_loop_asks_on_the_threshold_with_key_order_significant() {
    let service = PermissionService::builder(agents(json!({})), "/p")
        .mode(AskMode::Headless)
        .build();
    let ctx = in_message("s1", "m");
    let input = json!({"path": "a", "limit": 10});
    let reordered = json!({"limit": 10, "path": "a"});
    assert!(service.doom_loop(&ctx, 3, "read", &input).await.is_ok());
    assert!(service.doom_loop(&ctx, 3, "read", &input).await.is_ok());
    let refusal = service.doom_loop(&ctx, 3, "read", &input).await.unwrap_err();
    assert_eq!(
        refusal.to_string(),
        "permission requested: doom_loop (read); declined (no one can answer)"
    );
    // The same values in another key order are another call: a new streak.
    assert!(service.doom_loop(&ctx, 3, "read", &reordered).await.is_ok());
    assert!(service.doom_loop(&ctx, 3, "read", &reordered).await.is_ok());
    assert!(service.doom_loop(&ctx, 3, "read", &reordered).await.is_err());
    // Another session, message or tool: separate streaks.
    assert!(
        service
            .doom_loop(&in_message("s2", "m"), 3, "read", &input)
            .await
            .is_ok()
    );
    assert!(
        service
            .doom_loop(&in_message("s1", "m2"), 3, "read", &reordered)
            .await
            .is_ok()
    );
    assert!(service.doom_loop(&ctx, 3, "glob", &input).await.is_ok());
}

#[tokio::test]
async fn doom_loop_follows_the_rules_and_the_threshold() {
    // A rule can allow it; "always" saves the tool's name.
    let allowed = PermissionService::builder(agents(json!({"doom_loop": "allow"})), "/p")
        .mode(AskMode::Headless)
        .build();
    for _ in 0..5 {
        assert!(
            allowed
                .doom_loop(&ctx("s"), 2, "bash", &json!({"command": "ls"}))
                .await
                .is_ok()
        );
    }
    let denied = PermissionService::builder(agents(json!({"doom_loop": "deny"})), "/p")
        .mode(AskMode::Auto)
        .build();
    let refusal = denied.doom_loop(&ctx("s"), 1, "bash", &json!({})).await.unwrap_err();
    assert!(
        matches!(refusal, Refusal::Blocked { .. }),
        "threshold 1: the first call"
    );
    // Interactive: the ask names the tool, offers to save it, and shows the input.
    let asking = PermissionService::builder(agents(json!({})), "/p")
        .mode(AskMode::Interactive)
        .build();
    asking
        .doom_loop(&ctx("s"), 2, "edit", &json!({"path": "x"}))
        .await
        .unwrap();
    let task = {
        let asking = asking.clone();
        tokio::spawn(async move { asking.doom_loop(&ctx("s"), 2, "edit", &json!({"path": "x"})).await })
    };
    let pending = wait_pending(&asking, 1).await;
    assert_eq!(pending[0].action, "doom_loop");
    assert_eq!(pending[0].resources, ["edit"]);
    assert_eq!(pending[0].save, ["edit"]);
    assert_eq!(pending[0].metadata["input"], json!({"path": "x"}));
    asking.reply(&pending[0].id, Reply::Always, None).unwrap();
    task.await.unwrap().unwrap();
    assert!(
        asking
            .doom_loop(&ctx("s"), 2, "edit", &json!({"path": "x"}))
            .await
            .is_ok(),
        "saved"
    );
}

#[tokio::test]
async fn doom_loop_streaks_survive_the_process_in_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("toolgate.db");
    let input = json!({"command": "make"});
    // Each "process" is a fresh service over the same file, as `toolgate call` is.
    let fresh = |project: &str| {
        PermissionService::builder(agents(json!({})), project)
            .store(sqlite(&db).unwrap())
            .mode(AskMode::Headless)
            .doom_memory(DoomMemory::Database)
            .build()
    };
    let ctx = in_message("s", "s");
    assert!(fresh("/p").doom_loop(&ctx, 3, "bash", &input).await.is_ok());
    assert!(fresh("/p").doom_loop(&ctx, 3, "bash", &input).await.is_ok());
    assert!(
        fresh("/other").doom_loop(&ctx, 3, "bash", &input).await.is_ok(),
        "per project"
    );
    assert!(fresh("/p").doom_loop(&ctx, 3, "bash", &input).await.is_err());
    assert!(
        fresh("/p")
            .doom_loop(&ctx, 3, "bash", &json!({"command": "ls"}))
            .await
            .is_ok()
    );
    assert!(
        fresh("/p").doom_loop(&ctx, 3, "bash", &input).await.is_ok(),
        "the streak was broken"
    );
    // In process memory, fresh services never see a streak.
    let forgetful = || {
        PermissionService::builder(agents(json!({})), "/p")
            .mode(AskMode::Headless)
            .build()
    };
    for _ in 0..4 {
        assert!(forgetful().doom_loop(&ctx, 3, "bash", &input).await.is_ok());
    }
}

// ---- replies (spec §4.5) --------------------------------------------------------------

#[tokio::test]
async fn a_reject_whose_message_is_whitespace_is_still_a_correction() {
    let service = PermissionService::builder(agents(json!({"bash": "ask"})), "/p")
        .mode(AskMode::Interactive)
        .build();
    for (message, expected) in [
        (Some("   "), Some("   ")),
        (Some("\n"), Some("\n")),
        (Some(" use cargo "), Some(" use cargo ")),
        (Some(""), None),
        (None, None),
    ] {
        let task = {
            let service = service.clone();
            tokio::spawn(async move {
                service
                    .assert(&ctx("s"), PermissionRequest::new("bash").resources(["ls"]))
                    .await
            })
        };
        let pending = wait_pending(&service, 1).await;
        service.reply(&pending[0].id, Reply::Reject, message).unwrap();
        let refusal = task.await.unwrap().unwrap_err();
        match expected {
            Some(feedback) => assert_eq!(
                refusal,
                Refusal::Corrected {
                    feedback: feedback.to_string()
                },
                "{message:?}"
            ),
            None => assert_eq!(refusal, Refusal::declined(), "{message:?}"),
        }
    }
}

// ---- what an ask shows (spec §4.4) -------------------------------------------------------

#[tokio::test]
async fn an_ask_marks_allowed_parts_and_saves_only_what_it_asks() {
    let service = PermissionService::builder(
        agents(json!({"bash": {"*": "ask", "git status *": "allow", "ls *": "allow"}})),
        "/p",
    )
    .mode(AskMode::Interactive)
    .build();
    let request = PermissionRequest::new("bash")
        .resources(["git status --short", "rm -rf build", "ls -la", "npm run build"])
        .save(["git status *", "rm *", "ls *", "npm run build *"]);
    let task = {
        let service = service.clone();
        tokio::spawn(async move { service.assert(&ctx("s"), request).await })
    };
    let pending = wait_pending(&service, 1).await;
    assert_eq!(pending[0].allowed, ["git status --short", "ls -la"]);
    assert_eq!(pending[0].save, ["rm *", "npm run build *"]);
    service.reply(&pending[0].id, Reply::Always, None).unwrap();
    task.await.unwrap().unwrap();
    // Only the asked patterns were saved.
    let again = PermissionRequest::new("bash").resources(["rm -rf dist", "npm run build -- --prod"]);
    assert!(service.assert(&ctx("s"), again).await.is_ok());
}

#[tokio::test]
async fn would_ask_only_when_a_person_will_be_asked() {
    let request = PermissionRequest::new("edit").resources(["a.rs"]);
    let ask = PermissionService::builder(agents(json!({"edit": "ask"})), "/p")
        .mode(AskMode::Interactive)
        .build();
    assert!(Permissions::would_ask(&ask, &ctx("s"), &request));
    let allow = PermissionService::builder(agents(json!({"edit": "allow"})), "/p")
        .mode(AskMode::Interactive)
        .build();
    assert!(!allow.would_ask(&ctx("s"), &request));
    let deny = PermissionService::builder(agents(json!({"edit": "deny"})), "/p")
        .mode(AskMode::Interactive)
        .build();
    assert!(!deny.would_ask(&ctx("s"), &request));
    let headless = PermissionService::builder(agents(json!({"edit": "ask"})), "/p")
        .mode(AskMode::Headless)
        .build();
    assert!(!headless.would_ask(&ctx("s"), &request));
    let auto = PermissionService::builder(agents(json!({"edit": "ask"})), "/p")
        .mode(AskMode::Auto)
        .build();
    assert!(!auto.would_ask(&ctx("s"), &request));
}

/// The SQLite store at `path`, as the service takes it.
fn sqlite(path: impl AsRef<std::path::Path>) -> Result<Arc<dyn ApprovalStore>, toolgate_permission::StoreError> {
    SqliteStore::open(path).map(|store| Arc::new(store) as Arc<dyn ApprovalStore>)
}
