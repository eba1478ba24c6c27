//! Rules hold for every spelling and approvals stay inside what the person meant: a path
//! rule written through a symlink decides the path as it really is (spec §4.3, §5.1);
//! protected files always ask, whatever allows them (README, "Files that define the
//! rules"); "always for this session" never reaches the project (§4.5, §10.1); a refusal
//! names its rule and file (§4.6); a hidden tool names what hides it (§2.4, §4.8).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use toolgate_core::{Context, PermissionRequest, Refusal, Verdict};
use toolgate_permission::{
    AgentSettings, Agents, ApprovalStore, AskMode, ConfigLayer, MemoryStore, Origin, PermissionService, Reply, Rule,
};

fn agents(permission: serde_json::Value) -> Agents {
    Agents::build(&AgentSettings::default().with_permission(permission)).unwrap()
}

fn ctx(session: &str) -> Context {
    Context::new(session, "build").with_call("msg_1", "call_1")
}

async fn wait_pending(service: &PermissionService) -> Vec<toolgate_permission::Request> {
    for _ in 0..1000 {
        let pending = service.pending();
        if !pending.is_empty() {
            return pending;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    panic!("nothing was asked");
}

/// §4.3 "absolute candidate", every spelling: a deny written through a symlinked
/// directory holds for the real path, and the refusal names the rule as written.
#[tokio::test]
async fn a_deny_through_a_symlinked_spelling_holds_for_the_real_path() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join("project")).unwrap();
    std::fs::create_dir_all(root.join("outside/vault")).unwrap();
    std::os::unix::fs::symlink(root.join("outside"), root.join("link")).unwrap();
    let written = format!("{}/link/vault/*", root.display());
    let real = format!("{}/outside/vault/key.pem", root.display());
    let agents =
        Agents::build(&AgentSettings::default().with_layer(
            ConfigLayer::new("toolgate.json").with_permission(json!({"read": {(written.clone()): "deny"}})),
        ))
        .unwrap();
    let service = PermissionService::builder(agents, "p")
        .roots([root.join("project")])
        .mode(AskMode::Auto)
        .build();
    let request = PermissionRequest::new("read").resources([real.clone()]);
    let refusal = service.assert(&ctx("s"), request.clone()).await.unwrap_err();
    assert_eq!(
        refusal.to_string(),
        format!("Permission denied: read \"{real}\" by rule read \"{written}\" deny (toolgate.json)")
    );
    assert_eq!(service.decide_now(&ctx("s"), &request).verdict, Verdict::Deny);
    // Another file outside the denied directory is still only asked (auto-approved).
    let other = format!("{}/outside/open.txt", root.display());
    service
        .assert(&ctx("s"), PermissionRequest::new("read").resources([other]))
        .await
        .unwrap();
}

/// README "Files that define the rules": a protected file's edit asks although the rules
/// allow every edit, a saved `edit *` approval and a session rule do not cover it, and
/// `--auto` declines it; "always" saves nothing. A deny still refuses at once.
#[tokio::test]
async fn protected_files_always_ask() {
    let dir = tempfile::tempdir().unwrap();
    let project = std::fs::canonicalize(dir.path()).unwrap();
    let store = Arc::new(MemoryStore::new());
    store.add("p", "edit", &["*".to_string()]).unwrap();
    let build = |mode: AskMode, permission: serde_json::Value| {
        PermissionService::builder(agents(permission), "p")
            .roots([project.clone()])
            .store(store.clone())
            .protect(project.join("opencode.json"), false)
            .protect(project.join(".git/hooks"), true)
            .mode(mode)
            .build()
    };
    let edit = |path: &str| PermissionRequest::new("edit").resources([path]).save(["*"]);

    let auto = build(AskMode::Auto, json!({"edit": "allow"}));
    auto.set_session_rules(
        "s",
        vec![Rule::new(
            "edit",
            "*",
            toolgate_permission::Effect::Allow,
            Origin::Session,
        )],
    );
    for path in ["opencode.json", ".git/hooks/pre-commit"] {
        let refusal = auto.assert(&ctx("s"), edit(path)).await.unwrap_err();
        assert!(refusal.to_string().contains("defines the rules"), "{refusal}");
        assert!(matches!(refusal, Refusal::Declined { .. }));
        assert_eq!(auto.decide_now(&ctx("s"), &edit(path)).verdict, Verdict::Ask);
    }
    auto.assert(&ctx("s"), edit("src/main.rs")).await.unwrap();
    // Absolute spellings of the same files are the same files.
    let absolute = project.join(".git/hooks/post-checkout").to_string_lossy().into_owned();
    assert!(auto.assert(&ctx("s"), edit(&absolute)).await.is_err());

    let denied = build(AskMode::Auto, json!({"edit": {"*": "allow", "opencode.json": "deny"}}));
    let refusal = denied.assert(&ctx("s"), edit("opencode.json")).await.unwrap_err();
    assert!(matches!(refusal, Refusal::Blocked { .. }), "{refusal:?}");

    let person = build(AskMode::Interactive, json!({"edit": "allow"}));
    let asking = {
        let person = person.clone();
        tokio::spawn(async move { person.assert(&ctx("s"), edit("opencode.json")).await })
    };
    let pending = wait_pending(&person).await;
    assert!(pending[0].save.is_empty(), "{:?}", pending[0].save);
    assert_eq!(pending[0].metadata["protected"], json!(["opencode.json"]));
    person.reply(&pending[0].id, Reply::Always, None).unwrap();
    asking.await.unwrap().unwrap();
    assert_eq!(store.list("p").unwrap().len(), 1, "nothing more saved");
    // Asked again next time.
    assert!(person.would_ask(&ctx("s"), &edit("opencode.json")));
}

/// §10.1 "make scope configurable": "always for this session" allows the session's next
/// requests, never another session's, saves nothing for the project, and never lifts a
/// deny.
#[tokio::test]
async fn always_for_this_session_stays_in_the_session() {
    let store = Arc::new(MemoryStore::new());
    let service = PermissionService::builder(agents(json!({"bash": {"*": "ask", "rm *": "deny"}})), "p")
        .store(store.clone())
        .mode(AskMode::Interactive)
        .build();
    let ask = PermissionRequest::new("bash")
        .resources(["git status"])
        .save(["git status *"]);
    let asking = {
        let service = service.clone();
        let ask = ask.clone();
        tokio::spawn(async move { service.assert(&ctx("s1"), ask).await })
    };
    let pending = wait_pending(&service).await;
    service.reply(&pending[0].id, Reply::Session, None).unwrap();
    asking.await.unwrap().unwrap();
    assert_eq!(service.decide_now(&ctx("s1"), &ask).verdict, Verdict::Allow);
    assert_eq!(service.decide_now(&ctx("s2"), &ask).verdict, Verdict::Ask);
    assert!(store.list("p").unwrap().is_empty());
    let rm = PermissionRequest::new("bash").resources(["rm -rf x"]);
    assert_eq!(service.decide_now(&ctx("s1"), &rm).verdict, Verdict::Deny);
}

/// What exec-time enforcement may reuse (§4.3 decisions at exec): an allow by a
/// configured rule names that rule and holds while the rules' version stays; a change of
/// the session rules moves the version; an allow a saved approval took part in (here
/// "always for this session") names no rule, so it is decided again every time.
#[tokio::test]
async fn a_reusable_allow_names_its_rule_and_the_version_moves_with_session_rules() {
    use toolgate_core::Permissions;
    let service = PermissionService::builder(agents(json!({"bash": {"*": "ask", "ls *": "allow"}})), "p")
        .mode(AskMode::Interactive)
        .build();
    let mixed = PermissionRequest::new("bash").resources(["git status", "ls -l"]);
    let ls = PermissionRequest::new("bash").resources(["ls -l"]);
    let decided = service.decide_now(&ctx("s"), &ls);
    assert_eq!(decided.verdict, Verdict::Allow);
    assert!(decided.rule.is_some(), "an allow by a configured rule names it");
    let before = Permissions::rules_version(&service).unwrap();
    service.set_session_rules(
        "s",
        vec![Rule::new(
            "bash",
            "ls *",
            toolgate_permission::Effect::Deny,
            Origin::Session,
        )],
    );
    let after = Permissions::rules_version(&service).unwrap();
    assert_ne!(before, after, "a session rule change moves the version");
    assert_eq!(service.decide_now(&ctx("s"), &ls).verdict, Verdict::Deny);
    // "Always for this session" for `git status`: the mixed request is allowed, by a
    // saved approval among others, and names no rule.
    let ask = PermissionRequest::new("bash")
        .resources(["git status"])
        .save(["git status *"]);
    let asking = {
        let service = service.clone();
        tokio::spawn(async move { service.assert(&ctx("s2"), ask).await })
    };
    let pending = wait_pending(&service).await;
    service.reply(&pending[0].id, Reply::Session, None).unwrap();
    asking.await.unwrap().unwrap();
    let decided = service.decide_now(&ctx("s2"), &mixed);
    assert_eq!(decided.verdict, Verdict::Allow);
    assert!(decided.rule.is_none(), "{:?}", decided.rule);
}

/// §2.4, §4.8: what hides a tool is the last rule of its action, denying `*`.
#[test]
fn the_rule_that_hides_a_tool_is_named() {
    let agents = Agents::build(
        &AgentSettings::default()
            .with_layer(ConfigLayer::new("/p/toolgate.json").with_permission(json!({"webfetch": "deny"}))),
    )
    .unwrap();
    let service = PermissionService::builder(agents, "p").build();
    let rule = service.hidden_by("build", "webfetch").unwrap();
    assert_eq!(rule.to_string(), "webfetch \"*\" deny (/p/toolgate.json)");
    assert_eq!(service.hidden_by("build", "read"), None);
}

/// Exec-time enforcement learns which programs the refusing rules name: the first word
/// of every deny pattern and of every ask pattern a person wrote, never an allow's, a
/// default's ask, or a word with a wildcard.
#[test]
fn the_programs_refusing_rules_name_are_their_literal_first_words() {
    let service = PermissionService::builder(
        agents(json!({"bash": {
            "*": "ask",
            "rm *": "deny",
            "git push *": "ask",
            "git status": "allow",
            "ls *": "allow",
            "r? *": "deny",
            "/usr/bin/sh -c *": "deny",
            "rm": "deny",
            "npm publish": "ask",
        }})),
        "p",
    )
    .build();
    assert_eq!(
        service.strict_programs(&ctx("s"), "bash"),
        ["rm", "git", "/usr/bin/sh", "npm"]
    );
    assert!(service.strict_programs(&ctx("s"), "read").is_empty());
}
