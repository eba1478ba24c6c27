//! Settle of a no-op tool through a materialized catalog and a real output store.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use toolgate_core::Context;
use toolgate_output_store::OutputStore;
use toolgate_registry::{ApplicationTools, ToolRegistry};

fn settle(c: &mut Criterion) {
    let data = tempfile::tempdir().unwrap();
    let app = ApplicationTools::new();
    let registry = ToolRegistry::new(&app, Arc::new(OutputStore::new(data.path())));
    let _guard = registry.register([("noop", e2e::noop_tool())]).unwrap();
    let turn = registry.materialize(|_| false);
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let ctx = Context::new("ses_bench", "build").with_call("msg_1", "call_1");
    let mut group = c.benchmark_group("settle");
    group.bench_function("noop", |b| {
        b.iter(|| {
            let settled = runtime
                .block_on(turn.settle("noop", serde_json::json!({}), ctx.clone()))
                .unwrap();
            std::hint::black_box(settled)
        })
    });
    group.finish();
}

criterion_group!(benches, settle);
criterion_main!(benches);
