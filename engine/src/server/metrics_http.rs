//! The Prometheus endpoint: `GET /metrics` on `metrics_listen`, served by shard 0, which sums
//! every shard's counters at each scrape; `GET /health` and `GET /ready` for orchestrators
//! (`health.rs`). A minimal HTTP/1.1 responder: one request per connection, bounded request
//! size.

use std::net::SocketAddr;
use std::rc::Rc;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::{TcpListener, TcpStream};
use shoal_coordinator::commands::{DescribeCompaction, GroupLags};
use shoal_shards::groups::render_group_lags;
use shoal_shards::mirror::progress::render_lags;
use shoal_shards::rewrite::render_compaction;
use shoal_shards::table_progress::{self, render_table_progress};
use shoal_shards::Shard;

use super::health::Readiness;
use crate::handlers::registry::name_of;

const REQUEST_MAX_BYTES: usize = 8 << 10;

pub async fn serve_metrics(listen: SocketAddr, shard: Rc<Shard>, readiness: Rc<Readiness>) {
    let listener = match TcpListener::bind(listen) {
        Ok(listener) => listener,
        Err(e) => {
            tracing::error!(%listen, error = %e, "cannot bind the metrics listener: no /metrics, /health or /ready on this broker; give metrics_listen a free address and restart");
            return;
        }
    };
    tracing::info!(%listen, "metrics endpoint ready at /metrics, /health and /ready");
    loop {
        if let Ok(stream) = listener.accept().await {
            let (shard, readiness) = (shard.clone(), readiness.clone());
            glommio::spawn_local(async move {
                let _ = answer(stream, &shard, &readiness).await;
            })
            .detach();
        }
    }
}

async fn answer(
    mut stream: TcpStream,
    shard: &Shard,
    readiness: &Readiness,
) -> std::io::Result<()> {
    let mut request = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).await?;
        if n == 0 || request.len() + n > REQUEST_MAX_BYTES {
            return Ok(());
        }
        request.extend_from_slice(&chunk[..n]);
    }
    let (status, content_type, body) = if request.starts_with(b"GET /metrics ") {
        let (metrics, lags) = shard.scrape().await;
        let compaction = shard
            .coordinator
            .run(DescribeCompaction)
            .await
            .unwrap_or_default();
        let group_lags = shard.coordinator.run(GroupLags).await.unwrap_or_default();
        let now_ms = shoal_shards::maintenance::now_ms();
        let text = metrics.render(name_of, &shard.coordinator_metrics)
            + &render_lags(lags)
            + &render_compaction(&compaction, now_ms)
            + &render_group_lags(&group_lags)
            + &render_table_progress(&table_progress::snapshot());
        ("200 OK", "text/plain; version=0.0.4", text)
    } else if request.starts_with(b"GET /health ") {
        ("200 OK", "text/plain", "ok\n".to_string())
    } else if request.starts_with(b"GET /ready ") {
        match readiness.check(shard).await {
            Ok(()) => ("200 OK", "text/plain", "ready\n".to_string()),
            Err(reasons) => (
                "503 Service Unavailable",
                "text/plain",
                format!("not ready: {}\n", reasons.join("; ")),
            ),
        }
    } else {
        (
            "404 Not Found",
            "text/plain",
            "served: /metrics, /health, /ready\n".to_string(),
        )
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.flush().await
}
