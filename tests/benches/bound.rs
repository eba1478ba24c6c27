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

const MIB: usize = 1024 * 1024;

/// Redaction at the boundary on 1 MiB of log text: the store as the binary builds it
/// (credential formats on, a handful of known values), against the same store without a
/// redactor; and the same text with a secret on every 4 KiB (the replacing path).
fn redaction(c: &mut Criterion) {
    use toolgate_output_store::Redactor;
    let data = tempfile::tempdir().unwrap();
    let plain = OutputStore::new(data.path()).with_limits(
        toolgate_output_store::Limits::default()
            .max_bytes(2 * MIB)
            .max_lines(1 << 20),
    );
    let mut builder = Redactor::builder().credential_formats(true);
    for n in 0..8 {
        builder = builder.secret(format!("env:SECRET_{n}"), format!("known-secret-value-{n:04}-abcdef"));
    }
    let redacting = plain.clone().with_redactor(builder.build().unwrap());
    let clean = e2e::log_text(MIB);
    let mut leaky = String::with_capacity(MIB + 64 * 1024);
    for (index, chunk) in clean.as_bytes().chunks(4096).enumerate() {
        leaky.push_str(std::str::from_utf8(chunk).unwrap_or(""));
        leaky.push_str(if index % 2 == 0 {
            " AKIAIOSFODNN7EXAMPLE\n"
        } else {
            " known-secret-value-0003-abcdef\n"
        });
    }
    let mut group = c.benchmark_group("redaction");
    group.sample_size(30).throughput(Throughput::Bytes(MIB as u64));
    for (name, store, text) in [
        ("1MiB-off", &plain, &clean),
        ("1MiB-clean", &redacting, &clean),
        ("1MiB-leaky", &redacting, &leaky),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let output = ToolOutput::new(serde_json::Value::Null, vec![Content::text(text.clone())]);
                    let start = Instant::now();
                    let bounded = store.bound_now(output).unwrap();
                    total += start.elapsed();
                    assert!(bounded.output_paths.is_empty());
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bound, redaction);
criterion_main!(benches);
