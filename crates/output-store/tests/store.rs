//! Output store conformance: vectors O1–O11 of spec §9.7, plus proptests.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, SystemTime};

use proptest::prelude::*;
use serde_json::json;
use toolgate_core::{BoundError, Content, Context, OutputBound, ToolOutput};
use toolgate_output_store::{Limits, MAX_BYTES, OutputStore, bounded_preview};

fn store() -> (tempfile::TempDir, OutputStore) {
    let data = tempfile::tempdir().unwrap();
    let store = OutputStore::new(data.path());
    (data, store)
}

fn lines(text: &str) -> usize {
    text.split('\n').count()
}

#[test]
fn o1_small_text_is_unchanged() {
    let (_data, store) = store();
    let result = store.truncate("one\ntwo", None).unwrap();
    assert_eq!(result.content, "one\ntwo");
    assert!(!result.truncated);
    assert!(result.output_path.is_none());
    assert!(!store.dir().exists(), "nothing is written for output within the limits");
}

#[test]
fn o2_over_the_byte_limit_keeps_head_tail_and_the_full_file() {
    let (data, store) = store();
    let text = format!("HEAD-{}-TAIL", "x".repeat(500));
    let result = store
        .truncate(&text, Some(Limits::default().max_lines(2000).max_bytes(300)))
        .unwrap();
    assert!(result.truncated);
    let path = result.output_path.unwrap();
    assert!(path.is_absolute());
    assert!(path.starts_with(data.path().join("tool-output")));
    assert!(path.file_name().unwrap().to_str().unwrap().starts_with("tool_"));
    assert!(result.content.contains(&path.display().to_string()));
    assert!(result.content.contains("HEAD-") && result.content.contains("-TAIL"));
    assert!(result.content.len() <= 300, "{} bytes", result.content.len());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
}

#[tokio::test]
async fn o3_bound_of_two_long_texts_spills_what_was_counted() {
    let (_data, store) = store();
    let output = ToolOutput::new(
        json!({"kind": "report"}),
        vec![Content::text("a".repeat(30_000)), Content::text("b".repeat(30_000))],
    );
    let bounded = store.bound(&Context::default(), output).await.unwrap();
    assert_eq!(bounded.output.structured, json!({}));
    assert_eq!(bounded.output_paths.len(), 1);
    // Our counting rule (not spec §3.5 step 4, which counts and spills the pretty-printed
    // JSON): the spill holds exactly the text the model would read.
    let spilled = std::fs::read_to_string(&bounded.output_paths[0]).unwrap();
    assert_eq!(spilled, format!("{}\n{}", "a".repeat(30_000), "b".repeat(30_000)));
    let [Content::Text { text }] = bounded.output.content.as_slice() else {
        panic!("one text part expected: {:?}", bounded.output.content);
    };
    assert!(text.len() <= MAX_BYTES);
    assert!(text.starts_with("aaa") && text.ends_with("bbb"));
    assert!(text.contains("... output truncated (showed "));
    assert!(text.contains(&format!("full content saved to {}", bounded.output_paths[0].display())));
}

#[tokio::test]
async fn o4_structured_only_output_is_counted_as_pretty_json() {
    let (_data, store) = store();
    let structured = json!({"text": "x".repeat(51_200)});
    let output = ToolOutput::new(structured.clone(), vec![]);
    let bounded = store.bound(&Context::default(), output).await.unwrap();
    assert_eq!(bounded.output.structured, json!({}));
    assert_eq!(bounded.output_paths.len(), 1);
    assert_eq!(bounded.output.content.len(), 1);
    let spilled = std::fs::read_to_string(&bounded.output_paths[0]).unwrap();
    assert_eq!(spilled, serde_json::to_string_pretty(&structured).unwrap());
}

#[tokio::test]
async fn o5_media_is_kept_inline_and_never_written() {
    let (_data, store) = store();
    let media = Content::media("image/png", "a".repeat(51_200));
    let output = ToolOutput::new(json!({"caption": "a picture"}), vec![media.clone()]);
    let bounded = store.bound(&Context::default(), output).await.unwrap();
    assert!(bounded.output_paths.is_empty());
    assert_eq!(bounded.output.structured, json!({}));
    assert_eq!(bounded.output.content, [media]);
    assert!(!store.dir().exists());
}

#[tokio::test]
async fn o5_media_beside_long_text_is_kept_after_the_preview() {
    let (_data, store) = store();
    let media = Content::media("image/png", "aGVsbG8=");
    let output = ToolOutput::new(json!(null), vec![Content::text("line\n".repeat(5000)), media.clone()]);
    let bounded = store.bound(&Context::default(), output).await.unwrap();
    assert_eq!(bounded.output.content.len(), 2);
    assert_eq!(bounded.output.content[1], media);
    let spilled = std::fs::read_to_string(&bounded.output_paths[0]).unwrap();
    assert!(
        !spilled.contains("aGVsbG8="),
        "media is never written to the spill file"
    );
}

#[tokio::test]
async fn o6_oversized_inline_media_is_an_error() {
    let (_data, store) = store();
    let output = ToolOutput::new(json!(null), vec![Content::media("image/png", "a".repeat(5_242_881))]);
    let error = store.bound(&Context::default(), output).await.unwrap_err();
    assert!(
        matches!(
            error,
            BoundError::MediaLimit {
                bytes: 5_242_881,
                limit: 5_242_880,
                ..
            }
        ),
        "{error}"
    );
}

#[tokio::test]
async fn o7_an_unwritable_spill_directory_fails_the_bound() {
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("tool-output"), "not a directory").unwrap();
    let store = OutputStore::new(data.path());
    let output = ToolOutput::text("x".repeat(51_201));
    let error = store.bound(&Context::default(), output).await.unwrap_err();
    assert!(matches!(error, BoundError::Storage { .. }), "{error}");
}

// O8 (a structured value that cannot be serialised, a JavaScript BigInt) cannot be built
// in Rust: `serde_json::Value` is always encodable. Unencodable tool outputs are caught one
// step earlier, at settle's encode step (tool-core's
// `spec_1_4_unencodable_output_is_a_failure_not_a_success`).

#[test]
fn o9_configured_limits_apply() {
    let (_data, store) = store();
    let store = store.with_limits(Limits::default().max_lines(2).max_bytes(1000));
    assert_eq!(store.limits(), Limits::default().max_lines(2).max_bytes(1000));
    let result = store.truncate("one\ntwo\nthree", None).unwrap();
    assert!(result.truncated);
    assert!(lines(&result.content) <= 2);
}

#[test]
fn o10_cleanup_removes_only_old_spill_files() {
    let (_data, store) = store();
    let old = store.write("old").unwrap();
    let recent = store.write("recent").unwrap();
    let keep = store.dir().join("keep.txt");
    std::fs::write(&keep, "keep").unwrap();
    let eight_days_ago = SystemTime::now() - Duration::from_secs(8 * 24 * 3600);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(eight_days_ago)
        .unwrap();
    std::fs::File::options()
        .write(true)
        .open(&keep)
        .unwrap()
        .set_modified(eight_days_ago)
        .unwrap();
    assert_eq!(store.cleanup(), 1);
    assert!(!old.exists());
    assert!(recent.exists());
    assert!(keep.exists());
}

#[test]
fn o10_cleanup_of_a_missing_directory_does_nothing() {
    let (_data, store) = store();
    assert_eq!(store.cleanup(), 0);
}

#[tokio::test]
async fn o10_background_cleanup_runs_at_start() {
    let (_data, store) = store();
    let old = store.write("old").unwrap();
    let long_ago = SystemTime::now() - Duration::from_secs(30 * 24 * 3600);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(long_ago)
        .unwrap();
    let task = store.spawn_cleanup(&tokio::runtime::Handle::current());
    for _ in 0..200 {
        if !old.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(task);
    assert!(!old.exists());
}

#[test]
fn o11_four_lines_or_fewer_leave_only_the_marker() {
    let text = "1\n2\n3\n4\n5\n6";
    let result = bounded_preview(text, "MARKER", 4, 1000);
    assert_eq!(result, "MARKER");
    let (_data, store) = store();
    let cut = store
        .truncate(text, Some(Limits::default().max_lines(4).max_bytes(1000)))
        .unwrap();
    assert!(cut.content.starts_with("... output truncated"));
    assert!(lines(&cut.content) <= 4);
}

#[test]
fn spill_files_are_created_exclusively_with_ascending_names() {
    let (_data, store) = store();
    let paths: Vec<_> = (0..50).map(|n| store.write(&n.to_string()).unwrap()).collect();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted);
    let leftovers: Vec<_> = std::fs::read_dir(store.dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".partial"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left behind: {leftovers:?}");
}

#[test]
fn preview_follows_the_exact_algorithm() {
    // Line-truncated: head ceil(L'/2), tail floor(L'/2) around the marker.
    let text: Vec<String> = (1..=20).map(|n| n.to_string()).collect();
    let text = text.join("\n");
    assert_eq!(bounded_preview(&text, "M", 9, 1000), "1\n2\n3\n\nM\n\n19\n20");
    // Byte-truncated single line: prefix ceil(B'/2), suffix floor(B'/2).
    let long = format!("{}{}", "a".repeat(100), "b".repeat(100));
    assert_eq!(
        bounded_preview(&long, "M", 100, 25),
        format!("{}\n\nM\n\n{}", "a".repeat(10), "b".repeat(10))
    );
    // Multi-byte characters are never split.
    let wide = "é".repeat(100);
    let preview = bounded_preview(&wide, "M", 100, 26);
    assert!(preview.len() <= 26);
    assert!(preview.starts_with("éééé") && preview.ends_with("éééé"));
}

#[test]
fn marker_states_how_much_was_shown_of_how_much() {
    let (_data, store) = store();
    let text: String = (0..18_234).map(|n| format!("row {n}\n")).collect();
    let cut = store.truncate(&text, None).unwrap();
    let marker = cut
        .content
        .lines()
        .find(|line| line.starts_with("... output truncated"))
        .unwrap();
    assert!(marker.contains("of 18235 lines"), "{marker}");
    assert!(marker.contains("read it with offset/limit or grep it"), "{marker}");
    assert!(lines(&cut.content) <= 2000 && cut.content.len() <= MAX_BYTES);
}

fn text_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!["a", "bc", "\n", "é", "日本", "🦀", " ", "\n\n", "xyz"]),
        0..400,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn bounded_output_respects_both_limits(
        text in text_strategy(),
        max_lines in 1usize..60,
        max_bytes in 1usize..400,
    ) {
        let marker = "... output truncated; full content saved to /data/tool-output/tool_x ...";
        let preview = bounded_preview(&text, marker, max_lines, max_bytes);
        prop_assert!(preview.len() <= max_bytes, "{} > {max_bytes}", preview.len());
        prop_assert!(lines(&preview) <= max_lines);
        // Either the marker alone (cut to fit) or head + marker (+ tail) of the text; being a
        // `&str` it cannot hold a split character.
        if let Some((head, _)) = preview.split_once(&format!("\n\n{marker}")) {
            // The head starts as the text does (a byte-cut head may then jump to the tail lines).
            prop_assert!(text.starts_with(head.split('\n').next().unwrap_or("")));
        } else {
            prop_assert!(marker.starts_with(preview.as_str()), "{preview:?}");
        }
    }

    #[test]
    fn store_output_respects_limits_and_spills_everything(
        text in text_strategy(),
        max_lines in 1usize..60,
        max_bytes in 1usize..600,
    ) {
        let (_data, store) = store();
        let store = store.with_limits(Limits::default().max_lines(max_lines).max_bytes(max_bytes));
        let bounded = store.bound_now(ToolOutput::new(json!(null), vec![Content::text(text.clone())])).unwrap();
        let shown = bounded.output.content[0].as_text().unwrap();
        prop_assert!(shown.len() <= max_bytes);
        prop_assert!(lines(shown) <= max_lines);
        match bounded.output_paths.as_slice() {
            [] => prop_assert_eq!(shown, text.as_str()),
            [path] => prop_assert_eq!(std::fs::read_to_string(path).unwrap(), text),
            more => prop_assert!(false, "{} paths", more.len()),
        }
    }
}
