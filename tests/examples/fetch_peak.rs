//! Peak memory while webfetch streams a 1 GiB body from a local server, above the
//! process's baseline: prints `figure fetch_peak_above_baseline_mib`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::routing::get;
use toolgate_builtins_net::{FetchConfig, webfetch_tool};
use toolgate_core::Context;

use e2e::AllowAll;

use e2e::status_kib;

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let address = runtime.block_on(async {
        let app = Router::new().route(
            "/gib",
            get(|| async {
                let chunk = vec![b'a'; 64 * 1024];
                let stream =
                    futures_util::stream::iter((0..16_384).map(move |_| Ok::<_, std::io::Error>(chunk.clone())));
                ([("content-type", "text/plain")], Body::from_stream(stream))
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        address
    });
    let tool = webfetch_tool(FetchConfig::default().allow_private_network(true), Arc::new(AllowAll));
    // Warm up client construction and the runtime on a tiny request first.
    let tiny = serde_json::json!({"url": format!("http://{address}/missing")});
    let _ = runtime.block_on(tool.settle(tiny, Context::default()));
    let baseline = status_kib("VmRSS:");
    let input = serde_json::json!({"url": format!("http://{address}/gib")});
    let output = runtime
        .block_on(tool.settle(input, Context::default()))
        .unwrap()
        .unwrap();
    let text = output.content[0].as_text().unwrap();
    assert!(text.ends_with("preview shown per tool description]"));
    drop(output);
    let peak = status_kib("VmHWM:");
    println!("figure fetch_peak_above_baseline_mib {:.1}", (peak - baseline) / 1024.0);
}
