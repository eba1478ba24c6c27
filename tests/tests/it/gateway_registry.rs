//! The MCP gateway over a real registry: `list_changed` from a real server (the official
//! Python SDK) replaces registrations under the registry's stale rule (spec §1.6), and
//! the reference `server-everything` (npm) works through the gateway.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolgate_core::{Context, ModelResult};
use toolgate_mcp_client::{Gateway, Options, ToolSink};
use toolgate_output_store::OutputStore;
use toolgate_registry::{ApplicationTools, Registration, SettleError, ToolRegistry};

/// One registration per name, as the binary keeps them.
struct Sink {
    registry: ToolRegistry,
    held: Mutex<HashMap<String, Registration>>,
}

impl ToolSink for Sink {
    fn register(&self, name: &str, tool: toolgate_core::Tool) -> Result<(), String> {
        let registration = self
            .registry
            .register([(name.to_string(), tool)])
            .map_err(|e| e.to_string())?;
        let old = self.held.lock().unwrap().insert(name.to_string(), registration);
        drop(old);
        Ok(())
    }

    fn unregister(&self, name: &str) {
        self.held.lock().unwrap().remove(name);
    }
}

fn gateway(dir: &tempfile::TempDir, servers: Value) -> (Gateway, ToolRegistry) {
    let registry = ToolRegistry::new(&ApplicationTools::new(), Arc::new(OutputStore::new(dir.path())));
    // The servers as a config file gives them, read by toolgate-config.
    let mcp: toolgate_config::Mcp = serde_json::from_value(servers).unwrap();
    let configs = mcp
        .entries()
        .unwrap()
        .into_iter()
        .map(|entry| {
            let toolgate_config::McpLaunch::Local { command, .. } = entry.launch else {
                panic!("a local server");
            };
            let launch = toolgate_mcp_client::Launch::Local {
                command,
                environment: vec![],
                cwd: None,
            };
            let mut server = toolgate_mcp_client::ServerConfig::new(entry.name, launch);
            if let Some(ms) = entry.startup_ms {
                server = server.startup_timeout(std::time::Duration::from_millis(ms));
            }
            server
        })
        .collect();
    let options = Options::new(dir.path(), dir.path().join("log"))
        .servers(configs)
        .reserved(vec!["read".into()]);
    let sink = Arc::new(Sink {
        registry: registry.clone(),
        held: Mutex::new(HashMap::new()),
    });
    (Gateway::new(options, Arc::new(e2e::AllowAll), sink), registry)
}

fn names(registry: &ToolRegistry) -> Vec<String> {
    registry
        .materialize(|_| false)
        .definitions()
        .iter()
        .map(|d| d.name.clone())
        .collect()
}

async fn text(result: &Result<toolgate_registry::Settlement, SettleError>) -> String {
    match result {
        Ok(settled) => match &settled.result {
            ModelResult::Text(text) => text.clone(),
            other => format!("{other:?}"),
        },
        Err(error) => format!("Err({error})"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_replaces_registrations_and_old_catalogs_go_stale() {
    let dir = tempfile::tempdir().unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/mcp_server.py");
    let (gateway, registry) = gateway(
        &dir,
        json!({"py": {"type": "local", "command": [e2e::python_with_mcp(), script, "stdio"], "timeout": 30000}}),
    );
    let mut changes = gateway.changes();
    gateway.start_all().await;
    let old = registry.materialize(|_| false);
    let offered: Vec<&str> = old.definitions().iter().map(|d| d.name.as_str()).collect();
    assert!(
        offered.contains(&"py_echo") && !offered.contains(&"py_added_later"),
        "{offered:?}"
    );
    let ctx = Context::new("ses_1", "build");
    changes.borrow_and_update();

    // The server removes `echo` and says so.
    let shrunk = old.settle("py_shrink", json!({}), ctx.clone()).await;
    assert_eq!(text(&shrunk).await, "shrunk");
    tokio::time::timeout(Duration::from_secs(20), changes.changed())
        .await
        .unwrap()
        .unwrap();
    assert!(!names(&registry).contains(&"py_echo".to_string()));
    // A call from the old catalog to the removed tool never runs elsewhere.
    let stale = old.settle("py_echo", json!({"text": "x"}), ctx.clone()).await;
    assert!(
        matches!(stale, Err(SettleError::Stale { ref name }) if name == "py_echo"),
        "{stale:?}"
    );
    // A tool whose definition did not change keeps its registration.
    let add = old
        .settle("py_add", json!({"a": 1, "b": 2}), ctx.clone())
        .await
        .unwrap();
    assert_eq!(add.output.unwrap().structured, json!({"sum": 3}));

    // A tool added at run time is offered by the next catalog.
    let grown = old.settle("py_grow", json!({}), ctx.clone()).await;
    assert_eq!(text(&grown).await, "grown");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !names(&registry).contains(&"py_added_later".to_string()) {
        assert!(Instant::now() < deadline, "py_added_later never registered");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let new = registry.materialize(|_| false);
    let later = new.settle("py_added_later", json!({"word": "hi"}), ctx.clone()).await;
    assert_eq!(text(&later).await, "later: hi");
    assert!(matches!(
        old.settle("py_added_later", json!({"word": "hi"}), ctx).await,
        Err(SettleError::Unknown { .. })
    ));
    gateway.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_server_everything_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let tools = e2e::npm_tools();
    let server = tools.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let (gateway, registry) = gateway(
        &dir,
        json!({"everything": {"type": "local", "command": [e2e::node(), server, "stdio"], "timeout": 60000}}),
    );
    gateway.start_all().await;
    let report = gateway.report();
    assert_eq!(report[0].errors, Vec::<String>::new(), "{report:?}");
    let listed: Vec<String> = report[0].tools.iter().map(|t| t.tool.clone()).collect();
    // Every tool the server offers a client without sampling or roots is registered.
    for tool in [
        "echo",
        "get-annotated-message",
        "get-env",
        "get-resource-links",
        "get-resource-reference",
        "get-structured-content",
        "get-sum",
        "get-tiny-image",
        "gzip-file-as-resource",
        "toggle-simulated-logging",
        "toggle-subscriber-updates",
        "trigger-long-running-operation",
        "trigger-elicitation-request",
    ] {
        assert!(listed.contains(&tool.to_string()), "{tool} missing from {listed:?}");
    }
    assert_eq!(names(&registry).len(), listed.len());
    let catalog = registry.materialize(|_| false);
    let ctx = Context::new("ses_1", "build");
    let echo = catalog
        .settle("everything_echo", json!({"message": "hi"}), ctx.clone())
        .await;
    assert_eq!(text(&echo).await, "Echo: hi");
    let sum = catalog
        .settle("everything_get-sum", json!({"a": 2, "b": 3}), ctx.clone())
        .await
        .unwrap();
    assert!(format!("{:?}", sum.result).contains('5'), "{sum:?}");
    let long = catalog
        .settle(
            "everything_trigger-long-running-operation",
            json!({"duration": 1, "steps": 2}),
            ctx.clone(),
        )
        .await
        .unwrap();
    assert!(!long.result.is_error(), "{long:?}");
    let annotated = catalog
        .settle(
            "everything_get-annotated-message",
            json!({"messageType": "error", "includeImage": true}),
            ctx.clone(),
        )
        .await
        .unwrap();
    let ModelResult::Content(parts) = &annotated.result else {
        panic!("{annotated:?}")
    };
    assert!(parts.iter().any(toolgate_core::Content::is_media), "{parts:?}");
    let links = catalog
        .settle("everything_get-resource-links", json!({"count": 2}), ctx.clone())
        .await
        .unwrap();
    assert!(format!("{:?}", links.result).contains("[resource link "), "{links:?}");
    // Sampling is not declared (toolgate has no model), so its tool is never offered: a
    // call to it fails clearly as an unknown tool, and nothing reaches the server.
    assert!(!listed.contains(&"trigger-sampling-request".to_string()));
    let sampling = catalog
        .settle("everything_trigger-sampling-request", json!({"prompt": "hi"}), ctx)
        .await;
    assert!(
        matches!(sampling, Err(SettleError::Unknown { ref name }) if name == "everything_trigger-sampling-request"),
        "{sampling:?}"
    );
    gateway.shutdown().await;
}
