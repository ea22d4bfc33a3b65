//! Each shard binds the same address with SO_REUSEPORT, so the kernel spreads connections
//! across shards and each connection lives entirely on the shard that accepted it.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use glommio::net::TcpListener;
use shoal_shards::{Shard, ShardError};

use super::connection::serve_connection;
use super::limits::ConnectionLimits;
use crate::config::BrokerConfig;
use crate::handlers::Broker;

/// Pause after a failed accept (e.g. out of file descriptors) before trying again.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// Accepts connections until the broker stops; returns only if the listener cannot bind.
pub async fn serve_shard(
    shard: Rc<Shard>,
    config: Arc<BrokerConfig>,
    limits: Arc<ConnectionLimits>,
) -> Result<(), ShardError> {
    let listener = TcpListener::bind(config.listen).map_err(|e| {
        ShardError::Config(format!(
            "cannot bind the Kafka listener {}: {e}",
            config.listen
        ))
    })?;
    tracing::info!(shard = shard.index, listen = %config.listen, "Kafka listener ready");
    let tasks = shard.tasks.clone();
    if let (0, Some(listen)) = (shard.index, config.metrics_listen) {
        tasks.spawn_background(
            "metrics endpoint",
            super::metrics_http::serve_metrics(listen, shard.clone()),
        );
    }
    let broker = Rc::new(Broker::new(shard, config));
    tasks.spawn_background(
        "mirror fetchers",
        crate::mirror::fetcher::run(broker.clone()),
    );
    if broker.shard.index == 0 {
        tasks.spawn_background(
            "mirror metadata sync",
            crate::mirror::metadata_sync::run(broker.clone()),
        );
    }
    loop {
        match listener.accept().await {
            Ok(stream) => {
                let Some(ip) = stream.peer_addr().ok().map(|a| a.ip()) else {
                    continue;
                };
                match limits.admit(ip) {
                    Ok(admitted) => {
                        let _ = stream.set_nodelay(true);
                        tasks.spawn_request(serve_connection(broker.clone(), stream, admitted));
                    }
                    // Closed at once, as Kafka does; the client retries elsewhere or later.
                    Err(limit) => tracing::debug!(%ip, limit, "connection refused"),
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                glommio::timer::sleep(ACCEPT_RETRY).await;
            }
        }
    }
}
