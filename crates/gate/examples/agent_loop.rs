//! A minimal agent loop that embeds toolgate through the [`Gate`], as a consumer would.
//!
//! The "model" is a script: each turn it reads the catalog it is offered and the results
//! of its previous calls, and issues the next calls. Permission rules decide what the
//! calls may do; the gate records every call in the audit log and settles it through the
//! output bound. Run it with `cargo run -p toolgate-gate --example agent_loop`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use serde_json::{Value, json};
use toolgate_core::{Location, ModelResult};
use toolgate_gate::{Call, Gate};
use toolgate_output_store::OutputStore;
use toolgate_permission::{AgentSettings, Agents, AskMode, AuditLog, PermissionService};
use toolgate_registry::{ApplicationTools, ToolRegistry};

/// What the scripted model does next, given what its last calls returned.
fn model(turn: usize, offered: &[String], last: &[(String, String)]) -> Vec<(&'static str, Value)> {
    match turn {
        0 => {
            assert!(offered.iter().any(|name| name == "read"));
            vec![
                ("read", json!({"path": "notes.md"})),
                ("glob", json!({"pattern": "*.md"})),
                ("summon", json!({})),
            ]
        }
        // It saw the file; it fixes the typo it found.
        1 if last[0].1.contains("teh") => vec![(
            "edit",
            json!({"path": "notes.md", "oldString": "teh", "newString": "the"}),
        )],
        // It tries to read a secret: the rules refuse, and it gives up.
        2 => vec![("read", json!({"path": ".env"}))],
        _ => Vec::new(),
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let sandbox = tempfile::tempdir().unwrap();
    let project = sandbox.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("notes.md"), "# Notes\nteh plan\n").unwrap();
    std::fs::write(project.join(".env"), "TOKEN=secret\n").unwrap();

    // The parts: rules (edits allowed, `.env` denied), a permission service that declines
    // what no rule answers (no one to ask here), an output store, the file tools.
    let settings =
        AgentSettings::default().with_permission(json!({"edit": "allow", "read": {"*": "allow", "*.env": "deny"}}));
    let agents = Agents::build(&settings).unwrap();
    let audit = Arc::new(AuditLog::new(sandbox.path().join("audit.jsonl")));
    let permissions = PermissionService::builder(agents, project.to_string_lossy())
        .mode(AskMode::Headless)
        .audit(Arc::clone(&audit))
        .build();
    let store = OutputStore::new(sandbox.path().join("data"));
    let registry = ToolRegistry::new(&ApplicationTools::new(), Arc::new(store.clone()));
    let services = toolgate_builtins_fs::Services::new(Location::new(&project).unwrap(), Arc::new(permissions.clone()));
    let registration = registry
        .register(toolgate_builtins_fs::tools(services, Vec::new()))
        .unwrap();
    let gate = Gate::builder(registry, permissions)
        .hold(registration)
        .spills(store)
        .build();

    let session = "ses_example";
    let mut last: Vec<(String, String)> = Vec::new();
    for turn in 0.. {
        let catalog = gate.catalog("build");
        let calls = model(turn, catalog.names(), &last);
        if calls.is_empty() {
            break;
        }
        last.clear();
        let message = format!("msg_{turn}");
        for (tool, input) in calls {
            let call = Call::new(session, tool, input).in_message(message.as_str());
            let answer = match runtime.block_on(gate.call(&catalog, call)) {
                Ok(settled) => match settled.settlement.result {
                    ModelResult::Text(text) => text,
                    ModelResult::Error(error) => format!("error: {error}"),
                    other => other.to_json().to_string(),
                },
                // The model called a tool it was not offered: it is told so.
                Err(miss) if miss.never_ran() => format!("error: {miss}"),
                Err(defect) => panic!("not the tool's answer: {defect}"),
            };
            println!("turn {turn}: {tool} → {}", answer.lines().next().unwrap_or(""));
            last.push((tool.to_string(), answer));
        }
    }

    assert_eq!(
        std::fs::read_to_string(project.join("notes.md")).unwrap(),
        "# Notes\nthe plan\n"
    );
    let entries = audit.tail(100);
    let settled = entries.iter().filter(|entry| entry["kind"] == "settled").count();
    println!("audit: {} entries, {settled} settled calls", entries.len());
    assert_eq!(settled, 5, "every call, the unknown one included, is on record");
}
