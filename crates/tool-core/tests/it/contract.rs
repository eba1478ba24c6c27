//! The tool contract: settle order, definitions, refusals (spec §1).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolgate_core::{Annotations, Content, Context, Defect, ModelResult, Refusal, Tool, ToolFailure, ToolOutput};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ReadInput {
    /// The file to read.
    file_path: String,
    /// 1-based line to start at.
    offset: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
struct Lines {
    lines: Vec<String>,
}

fn counting_tool(calls: Arc<AtomicUsize>) -> Tool {
    Tool::builder("Read a file.", move |input: ReadInput, _ctx: Context| {
        let calls = Arc::clone(&calls);
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ToolFailure>(Lines {
                lines: vec![format!("{}@{}", input.file_path, input.offset.unwrap_or(1))],
            })
        }
    })
    .build()
}

#[tokio::test]
async fn spec_1_4_invalid_input_never_runs_the_tool() {
    let calls = Arc::new(AtomicUsize::new(0));
    let tool = counting_tool(Arc::clone(&calls));
    let outcome = tool.settle(json!({"offset": 2}), Context::default()).await.unwrap();
    let failure = outcome.unwrap_err();
    assert_eq!(failure.message(), "Invalid tool input: missing field `filePath`");
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    let wrong_type = tool.settle(json!({"filePath": 3}), Context::default()).await.unwrap();
    assert!(
        wrong_type
            .unwrap_err()
            .message()
            .starts_with("Invalid tool input: invalid type: integer `3`")
    );
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn spec_1_4_structured_output_without_projection_has_no_content() {
    let calls = Arc::new(AtomicUsize::new(0));
    let tool = counting_tool(Arc::clone(&calls));
    let output = tool
        .settle(json!({"filePath": "a.txt", "offset": 3}), Context::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(output.structured, json!({"lines": ["a.txt@3"]}));
    assert!(output.content.is_empty());
    assert_eq!(
        ModelResult::from_output(&output),
        ModelResult::Json(json!({"lines": ["a.txt@3"]}))
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn spec_1_4_projection_decides_model_content() {
    let tool = Tool::builder("Read.", |input: ReadInput, _ctx: Context| async move {
        Ok::<_, ToolFailure>(Lines {
            lines: vec![input.file_path],
        })
    })
    .project(|output: &Lines| {
        vec![
            Content::text(output.lines.join("\n")),
            Content::Media {
                mime: "image/png".into(),
                data: "aGVsbG8=".into(),
                name: Some("pic.png".into()),
            },
        ]
    })
    .build();
    let output = tool
        .settle(json!({"filePath": "x"}), Context::default())
        .await
        .unwrap()
        .unwrap();
    let result = ModelResult::from_output(&output);
    assert_eq!(
        result.to_json(),
        json!({"type": "content", "value": [
            {"type": "text", "text": "x"},
            {"type": "file", "uri": "data:image/png;base64,aGVsbG8=", "mime": "image/png", "name": "pic.png"}
        ]})
    );
}

/// An output whose `Serialize` fails, as a map with non-string keys does.
#[derive(JsonSchema)]
struct Unencodable;

impl Serialize for Unencodable {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom("value is not representable"))
    }
}

#[tokio::test]
async fn spec_1_4_unencodable_output_is_a_failure_not_a_success() {
    let tool = Tool::builder("Broken.", |_: serde_json::Value, _: Context| async {
        Ok::<_, ToolFailure>(Unencodable)
    })
    .build();
    let failure = tool.settle(json!({}), Context::default()).await.unwrap().unwrap_err();
    assert_eq!(
        failure.message(),
        "Tool returned an invalid value for its output schema: value is not representable"
    );
}

#[tokio::test]
async fn spec_1_4_tool_failure_passes_through_unchanged() {
    let tool = Tool::builder("Deny.", |_: serde_json::Value, _: Context| async {
        Err::<String, _>(ToolFailure::new("Denied"))
    })
    .build();
    let failure = tool.settle(json!({}), Context::default()).await.unwrap().unwrap_err();
    assert_eq!(failure, ToolFailure::new("Denied"));
}

#[tokio::test]
async fn spec_1_4_a_panic_is_a_defect_not_a_tool_error() {
    let tool = Tool::builder("Panics.", |_: serde_json::Value, _: Context| async {
        if true {
            panic!("unexpected executor defect");
        }
        Ok::<String, ToolFailure>(String::new())
    })
    .build();
    let defect = tool.settle(json!({}), Context::default()).await.unwrap_err();
    assert_eq!(defect, Defect::Panicked("unexpected executor defect".into()));
}

#[tokio::test]
async fn spec_1_4_cancellation_stops_the_executor() {
    let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
    let started_tx = Arc::new(std::sync::Mutex::new(Some(started_tx)));
    let finished = Arc::new(AtomicUsize::new(0));
    let finished_in_tool = Arc::clone(&finished);
    let tool = Tool::builder("Slow.", move |_: serde_json::Value, _: Context| {
        let started_tx = started_tx.lock().unwrap().take();
        let finished = Arc::clone(&finished_in_tool);
        async move {
            if let Some(tx) = started_tx {
                let _ = tx.send(());
            }
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            finished.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ToolFailure>("done")
        }
    })
    .build();
    let call = tokio::spawn(async move { tool.settle(json!({}), Context::default()).await });
    started_rx.await.unwrap();
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    assert_eq!(finished.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn spec_1_2_context_reaches_the_executor_exactly() {
    let tool = Tool::builder("Ctx.", |_: serde_json::Value, ctx: Context| async move {
        Ok::<_, ToolFailure>(serde_json::to_value(&ctx).unwrap())
    })
    .build();
    let ctx = Context::new("ses_1", "build").with_call("msg_1", "call_1");
    let output = tool.settle(json!({}), ctx).await.unwrap().unwrap();
    assert_eq!(
        output.structured,
        json!({"sessionID": "ses_1", "agent": "build", "assistantMessageID": "msg_1", "toolCallID": "call_1"})
    );
}

#[test]
fn spec_1_3_definition_schema_is_inline_optional_and_standard() {
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        depth: u64,
    }
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Input {
        path: String,
        limit: Option<u32>,
        nested: Option<Inner>,
    }
    let tool = Tool::builder("Schema.", |_: Input, _: Context| async { Ok::<_, ToolFailure>("") }).build();
    let definition = tool.definition("schema");
    let text = serde_json::to_string(&*definition.input_schema).unwrap();
    assert!(!text.contains("$ref"), "{text}");
    assert!(!text.contains("uint"), "{text}");
    assert!(!text.contains("null"), "{text}");
    assert!(!text.contains("$schema"), "{text}");
    let schema = &*definition.input_schema;
    assert_eq!(schema["required"], json!(["path"]));
    assert_eq!(schema["properties"]["limit"]["type"], json!("integer"));
    assert_eq!(
        schema["properties"]["nested"]["properties"]["depth"]["type"],
        json!("integer")
    );
    // Built once, shared by every definition of the handle.
    assert!(Arc::ptr_eq(
        &definition.input_schema,
        &tool.definition("other").input_schema
    ));
    let json = serde_json::to_value(&definition).unwrap();
    assert_eq!(json["name"], "schema");
    assert!(json.get("inputSchema").is_some() && json.get("outputSchema").is_some());
}

/// A tool's title and hints are part of its definition, on every handle of it (a
/// permission label changes neither), and a tool that gives none says nothing.
#[test]
fn titles_and_annotations_are_in_the_definition() {
    let plain = counting_tool(Arc::new(AtomicUsize::new(0)));
    let definition = plain.definition("read");
    assert_eq!((definition.title, definition.annotations.is_empty()), (None, true));
    let described = Tool::builder("Read a file.", |_: ReadInput, _ctx: Context| async {
        Ok::<_, ToolFailure>("ok")
    })
    .title("Read a file")
    .annotations(Annotations::read_only())
    .build()
    .with_permission("read");
    let definition = described.definition("view");
    assert_eq!(definition.title.as_deref(), Some("Read a file"));
    assert_eq!(definition.annotations, Annotations::read_only());
    let wire = serde_json::to_value(&definition).unwrap();
    assert_eq!(
        wire["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
    );
    // Hints as a server gave them: only those it gave.
    let upstream = Tool::from_schema(
        "Wipe.",
        json!({"type": "object"}),
        |_| Ok(()),
        |_, _ctx: Context| async { Ok(ToolOutput::text("wiped")) },
    )
    .title("Wipe")
    .annotations(Annotations::from_hints(Some(false), Some(true), None, None))
    .build();
    let definition = upstream.definition("srv_wipe");
    assert_eq!(definition.title.as_deref(), Some("Wipe"));
    assert_eq!(
        serde_json::to_value(&definition).unwrap()["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": true})
    );
}

#[test]
fn spec_1_7_permission_label_is_per_handle() {
    let tool = Tool::builder("Write.", |_: serde_json::Value, _: Context| async {
        Ok::<_, ToolFailure>("")
    })
    .build();
    let as_edit = tool.with_permission("edit");
    let as_question = tool.with_permission("question");
    assert_eq!(tool.permission_action("write"), "write");
    assert_eq!(as_edit.permission_action("write"), "edit");
    assert_eq!(as_question.permission_action("write"), "question");
    assert_eq!(as_edit.permission_action("write"), "edit");
}

#[test]
fn spec_4_6_refusal_messages() {
    let blocked = Refusal::Blocked {
        action: "bash".into(),
        reason: None,
        rules: vec![toolgate_core::RuleRef {
            action: "bash".into(),
            resource: "rm *".into(),
            effect: "deny".into(),
            source: None,
        }],
        denied: None,
    };
    assert_eq!(blocked.to_string(), "Permission denied: bash");
    // With the deciding rule known, the message names the resource and the rule with
    // the file it was written in.
    let named = Refusal::Blocked {
        action: "bash".into(),
        reason: None,
        rules: Vec::new(),
        denied: Some(Box::new((
            "rm -rf build".into(),
            toolgate_core::RuleRef {
                action: "bash".into(),
                resource: "rm *".into(),
                effect: "deny".into(),
                source: Some("toolgate.json".into()),
            },
        ))),
    };
    assert_eq!(
        named.to_string(),
        r#"Permission denied: bash "rm -rf build" by rule bash "rm *" deny (toolgate.json)"#
    );
    assert!(!blocked.stops_loop());
    assert_eq!(
        Refusal::declined().to_string(),
        "The user rejected permission to use this specific tool call."
    );
    let corrected = Refusal::Corrected {
        feedback: "use git mv".into(),
    };
    assert_eq!(
        corrected.to_string(),
        "The user rejected permission to use this specific tool call with the following feedback: use git mv"
    );
    let failure = ToolFailure::from(Refusal::declined());
    assert!(failure.is_declined());
    assert!(!ToolFailure::from(corrected).is_declined());
}

#[test]
fn text_output_helper_matches_settle_of_a_string() {
    let output = ToolOutput::text("hi");
    assert_eq!(ModelResult::from_output(&output), ModelResult::Text("hi".into()));
    assert_eq!(
        ModelResult::Error("x".into()).to_json(),
        json!({"type": "error", "value": "x"})
    );
}

#[test]
fn ascending_ids_sort_in_creation_order() {
    let ids: Vec<String> = (0..5000).map(|_| toolgate_core::ascending_id("per")).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);
    assert!(ids.iter().all(|id| id.starts_with("per_") && id.len() == 4 + 26));
    let unique: std::collections::HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len());
}

/// A tool described by a raw schema, as an MCP server's tool is: `a` must be an integer.
fn schema_tool(calls: Arc<AtomicUsize>, structured: serde_json::Value) -> Tool {
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]});
    Tool::from_schema(
        "Double a.",
        schema,
        |input| match input.get("a") {
            Some(value) if value.is_i64() => Ok(()),
            Some(value) => Err(format!("{value} is not of type \"integer\"")),
            None => Err("\"a\" is a required property".into()),
        },
        move |input, _ctx: Context| {
            let calls = Arc::clone(&calls);
            let structured = structured.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                let doubled = input["a"].as_i64().unwrap_or(0) * 2;
                Ok(ToolOutput::new(structured, vec![Content::text(doubled.to_string())]))
            }
        },
    )
    .output_schema(json!({"type": "object"}), |value| {
        if value.is_object() {
            Ok(())
        } else {
            Err(format!("{value} is not of type \"object\""))
        }
    })
    .build()
}

#[tokio::test]
async fn spec_1_4_schema_tools_keep_the_settle_order() {
    let calls = Arc::new(AtomicUsize::new(0));
    let tool = schema_tool(Arc::clone(&calls), json!({"doubled": 4}));
    let definition = tool.definition("double");
    assert_eq!(definition.input_schema["required"], json!(["a"]));
    assert_eq!(definition.output_schema["type"], "object");

    for (input, reason) in [
        (json!({}), "\"a\" is a required property"),
        (json!({"a": "2"}), "\"2\" is not of type \"integer\""),
    ] {
        let failed = tool.settle(input, Context::default()).await.unwrap().unwrap_err();
        assert_eq!(failed.message(), format!("Invalid tool input: {reason}"));
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0, "invalid input never reaches execute");

    let output = tool.settle(json!({"a": 2}), Context::default()).await.unwrap().unwrap();
    assert_eq!(output.structured, json!({"doubled": 4}));
    assert_eq!(ModelResult::from_output(&output), ModelResult::Text("4".into()));

    let liar = schema_tool(Arc::clone(&calls), json!("four"));
    let failed = liar
        .settle(json!({"a": 2}), Context::default())
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(
        failed.message(),
        "Tool returned an invalid value for its output schema: \"four\" is not of type \"object\""
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2, "the output check runs after execute");
}

#[tokio::test]
async fn schema_tools_without_an_output_schema_accept_any_value_and_panics_are_defects() {
    let tool = Tool::from_schema(
        "Panics.",
        json!({"type": "object"}),
        |_| Ok(()),
        |_input, _ctx: Context| async move {
            if true {
                panic!("upstream exploded");
            }
            Ok(ToolOutput::text("never"))
        },
    )
    .build();
    assert_eq!(tool.definition("p").output_schema, Arc::new(json!({})));
    let defect = tool.settle(json!({}), Context::default()).await.unwrap_err();
    assert_eq!(defect, Defect::Panicked("upstream exploded".into()));
}

/// A tool that asserts `bash` before it acts, counting what it ran.
fn asking_tool(permissions: Arc<dyn toolgate_core::Permissions>, ran: Arc<AtomicUsize>) -> Tool {
    Tool::builder("Run a command.", move |input: serde_json::Value, ctx: Context| {
        let (permissions, ran) = (Arc::clone(&permissions), Arc::clone(&ran));
        async move {
            let command = input["command"].as_str().unwrap_or("").to_string();
            let request = toolgate_core::PermissionRequest::new("bash").resources([command.clone()]);
            permissions.assert(&ctx, request).await?;
            ran.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ToolFailure>(format!("ran {command}"))
        }
    })
    .build()
}

#[tokio::test]
async fn allow_all_lets_every_call_act_and_deny_all_refuses_before_it_acts() {
    let ran = Arc::new(AtomicUsize::new(0));
    let ctx = Context::new("ses_1", "build");
    let input = json!({"command": "rm -rf build"});

    let allowed = asking_tool(Arc::new(toolgate_core::AllowAll), Arc::clone(&ran));
    let output = allowed.settle(input.clone(), ctx.clone()).await.unwrap().unwrap();
    assert_eq!(
        ModelResult::from_output(&output),
        ModelResult::Text("ran rm -rf build".into())
    );
    assert_eq!(ran.load(Ordering::SeqCst), 1);

    let denied = asking_tool(Arc::new(toolgate_core::DenyAll), Arc::clone(&ran));
    let failure = denied.settle(input, ctx.clone()).await.unwrap().unwrap_err();
    assert_eq!(failure.message(), "Permission denied: bash");
    assert!(
        matches!(failure.refusal(), Some(Refusal::Blocked { action, rules, .. }) if action == "bash" && rules.is_empty()),
        "{failure:?}"
    );
    assert_eq!(ran.load(Ordering::SeqCst), 1, "a denied call acted");

    // Neither shows prompts, so neither asks a tool to prepare one.
    let request = toolgate_core::PermissionRequest::new("edit").resources(["a.txt"]);
    assert!(!toolgate_core::Permissions::would_ask(
        &toolgate_core::AllowAll,
        &ctx,
        &request
    ));
    assert!(!toolgate_core::Permissions::would_ask(
        &toolgate_core::DenyAll,
        &ctx,
        &request
    ));
}
