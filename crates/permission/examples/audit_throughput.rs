//! Audit log throughput with the hash chain on: 100,000 decision records queued from 4
//! threads (as a server's workers would), then flushed; prints
//! `figure audit_records_per_second` and `figure audit_queue_us` (a caller's median cost
//! to queue one record). Run with `cargo run --release -p toolgate-permission --example
//! audit_throughput`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use toolgate_permission::{AuditLog, Caller, Effect, Origin, Rule};

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = std::sync::Arc::new(AuditLog::new(&path));
    let rule = Rule::new("bash", "git *", Effect::Allow, Origin::UserConfig)
        .with_source("/home/me/.config/toolgate/toolgate.json");
    const THREADS: usize = 4;
    const PER: usize = 25_000;
    let start = Instant::now();
    let mut queue_us: Vec<f64> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let log = log.clone();
                let rule = rule.clone();
                scope.spawn(move || {
                    let mut times = Vec::with_capacity(PER);
                    for n in 0..PER {
                        let call = format!("call_{t}_{n}");
                        let resources = vec![format!("git status --short {n}")];
                        let caller = Caller::new("ses_bench", "build", &call);
                        let one = Instant::now();
                        log.decision(&caller, "bash", &resources, Effect::Allow, Some(&rule), None);
                        times.push(one.elapsed().as_secs_f64() * 1e6);
                    }
                    times
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    log.flush();
    let elapsed = start.elapsed().as_secs_f64();
    let records = (THREADS * PER) as f64;
    queue_us.sort_by(f64::total_cmp);
    let verified = toolgate_permission::verify_audit(&path).unwrap();
    assert_eq!(verified.records as f64, records);
    assert!(verified.broken.is_none());
    println!("figure audit_records_per_second {:.0}", records / elapsed);
    println!("figure audit_queue_us {:.2}", queue_us[queue_us.len() / 2]);
}
