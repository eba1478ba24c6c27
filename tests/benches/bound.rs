//! Bound of a 100 MiB text output: count, spill, preview.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use toolgate_core::{Content, ToolOutput};
use toolgate_output_store::OutputStore;

const SIZE: usize = 100 * 1024 * 1024;

fn bound(c: &mut Criterion) {
    let data = tempfile::tempdir().unwrap();
    let store = OutputStore::new(data.path());
    let text = e2e::log_text(SIZE);
    let mut group = c.benchmark_group("bound");
    group.sample_size(10).throughput(Throughput::Bytes(SIZE as u64));
    group.bench_function("100MiB", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                // The output is built outside the timing: the figure is the bound alone.
                let output = ToolOutput::new(serde_json::Value::Null, vec![Content::text(text.clone())]);
                let start = Instant::now();
                let bounded = store.bound_now(output).unwrap();
                total += start.elapsed();
                for path in bounded.output_paths {
                    std::fs::remove_file(path).unwrap();
                }
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, bound);
criterion_main!(benches);
