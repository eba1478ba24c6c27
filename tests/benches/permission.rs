//! Permission figures: one decision against 1,000 rules, and one `always` cascade over
//! 10,000 pending asks.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use toolgate_core::{Context, PermissionRequest};
use toolgate_permission::{AgentSettings, Agents, AskMode, Effect, Origin, PermissionService, Reply, Rule, Ruleset};

/// 1,000 rules shaped like a large real config: many bash prefixes, edit and read paths,
/// a few MCP wildcards, and wildcard-action rules spread through.
fn thousand_rules() -> Vec<Rule> {
    let mut rules = vec![Rule::new("*", "*", Effect::Allow, Origin::Defaults)];
    let effects = [Effect::Allow, Effect::Ask, Effect::Deny];
    for n in 0..999 {
        let effect = effects[n % 3];
        let rule = match n % 10 {
            0..=4 => Rule::new("bash", format!("tool{n} *"), effect, Origin::UserConfig),
            5 | 6 => Rule::new("edit", format!("src/module{n}/*.rs"), effect, Origin::UserConfig),
            7 => Rule::new("read", format!("*secret{n}*"), effect, Origin::UserConfig),
            8 => Rule::new(format!("mcp_server{n}_*"), "*", effect, Origin::UserConfig),
            _ => Rule::new(
                "external_directory",
                format!("/home/user/project{n}/*"),
                effect,
                Origin::UserConfig,
            ),
        };
        rules.push(rule);
    }
    rules
}

fn decision(c: &mut Criterion) {
    let rules = Ruleset::new(thousand_rules());
    let mut group = c.benchmark_group("permission");
    group.bench_function("decision_1000_rules", |b| {
        b.iter(|| std::hint::black_box(rules.evaluate("bash", std::hint::black_box("tool505 --flag value"))).effect)
    });
    group.bench_function("decision_1000_rules_naive", |b| {
        b.iter(|| {
            std::hint::black_box(rules.evaluate_naive("bash", std::hint::black_box("tool505 --flag value"))).effect
        })
    });
    // The path a file tool takes: an `edit` of a project file that no hashed pattern
    // decides, so the action's RegexSet runs, with the absolute candidate (spec §4.3).
    let absolute = ["/home/user/app/src/module507/deep/lib.txt".to_string()];
    assert_eq!(
        rules.evaluate_path("edit", "src/module507/deep/lib.txt", &absolute),
        rules.evaluate_path_naive("edit", "src/module507/deep/lib.txt", &absolute)
    );
    group.bench_function("decision_1000_rules_edit_path", |b| {
        b.iter(|| {
            std::hint::black_box(rules.evaluate_path(
                "edit",
                std::hint::black_box("src/module507/deep/lib.txt"),
                &absolute,
            ))
            .effect
        })
    });
    let mut large = vec![Rule::new("*", "*", Effect::Allow, Origin::Defaults)];
    for n in 0..10_000 {
        large.push(Rule::new(
            "edit",
            format!("src/module{n}/*/part?{n}.rs"),
            Effect::Allow,
            Origin::UserConfig,
        ));
    }
    large.push(Rule::new("edit", "secret/*", Effect::Deny, Origin::UserConfig));
    let large = Ruleset::new(large);
    assert_eq!(large.evaluate("edit", "secret/key").effect, Effect::Deny);
    group.bench_function("decision_10000_rules", |b| {
        b.iter(|| std::hint::black_box(large.evaluate("edit", std::hint::black_box("src/lib.rs"))).effect)
    });
    group.finish();
}

const PENDING: usize = 10_000;

fn cascade(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("permission");
    group.sample_size(10);
    group.bench_function("always_cascade_10000", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                let agents =
                    Agents::build(&AgentSettings::default().with_permission(serde_json::json!({"bash": "ask"})))
                        .unwrap();
                let service = PermissionService::builder(agents, "/project")
                    .mode(AskMode::Interactive)
                    .build();
                let tasks: Vec<_> = (0..=PENDING)
                    .map(|n| {
                        let service = service.clone();
                        let request = PermissionRequest::new("bash").resources(["ls -la"]).save(["ls *"]);
                        runtime.spawn(async move {
                            let ctx = Context::new(format!("ses_{}", n % 100), "build");
                            service.assert(&ctx, request).await
                        })
                    })
                    .collect();
                while service.pending().len() <= PENDING {
                    std::thread::sleep(Duration::from_millis(5));
                }
                let first = service.pending()[0].id.clone();
                let start = Instant::now();
                service.reply(&first, Reply::Always, None).unwrap();
                total += start.elapsed();
                assert!(service.pending().is_empty());
                runtime.block_on(async {
                    for task in tasks {
                        task.await.unwrap().unwrap();
                    }
                });
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, decision, cascade);
criterion_main!(benches);
