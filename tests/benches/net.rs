//! webfetch: fetch and convert a 1 MiB HTML page from a local server.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use criterion::{Criterion, criterion_group, criterion_main};
use toolgate_builtins_net::{FetchConfig, webfetch_tool};
use toolgate_core::Context;

use e2e::AllowAll;

/// About 1 MiB of article-like HTML: headings, paragraphs with links and emphasis, lists, code.
fn page() -> String {
    let block = "<h2>Section</h2><p>Some <a href=\"https://example.com/a\">linked text</a> with <em>emphasis</em> and \
                 <strong>strong words</strong> in a paragraph that goes on for a while to look like prose.</p>\
                 <ul><li>first item</li><li>second item</li></ul><pre><code>fn main() { println!(\"hi\"); }</code></pre>\n";
    let mut html =
        String::from("<!doctype html><html><head><title>Bench</title><script>var x = 1;</script></head><body>");
    while html.len() < 1024 * 1024 {
        html.push_str(block);
    }
    html.push_str("</body></html>");
    html
}

fn fetch(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let html = page();
    let address = runtime.block_on(async move {
        let app = Router::new().route(
            "/page",
            get(move || {
                let html = html.clone();
                async move { ([("content-type", "text/html; charset=utf-8")], html) }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        address
    });
    let tool = webfetch_tool(FetchConfig::default().allow_private_network(true), Arc::new(AllowAll));
    let input = serde_json::json!({"url": format!("http://{address}/page")});
    let mut group = c.benchmark_group("net");
    group.sample_size(30);
    group.bench_function("fetch_convert_1mib_html", |b| {
        b.iter(|| {
            runtime
                .block_on(tool.settle(input.clone(), Context::default()))
                .unwrap()
                .unwrap()
        })
    });
    let raw = serde_json::json!({"url": format!("http://{address}/page"), "format": "html"});
    group.bench_function("fetch_raw_1mib_html", |b| {
        b.iter(|| {
            runtime
                .block_on(tool.settle(raw.clone(), Context::default()))
                .unwrap()
                .unwrap()
        })
    });
    let text = serde_json::json!({"url": format!("http://{address}/page"), "format": "text"});
    group.bench_function("fetch_text_1mib_html", |b| {
        b.iter(|| {
            runtime
                .block_on(tool.settle(text.clone(), Context::default()))
                .unwrap()
                .unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, fetch);
criterion_main!(benches);
