//! Each shard binds the same address with SO_REUSEPORT, so the kernel spreads connections
//! across shards and each connection lives entirely on the shard that accepted it.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use glommio::net::TcpListener;
use shoal_shards::Shard;

use super::connection::serve_connection;
use crate::config::BrokerConfig;
use crate::handlers::Broker;
use crate::mirror::status::MirrorStatus;

/// Pause after a failed accept (e.g. out of file descriptors) before trying again.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

pub async fn serve_shard(
    shard: Rc<Shard>,
    config: Arc<BrokerConfig>,
    mirror_status: Arc<MirrorStatus>,
) {
    let listener = match TcpListener::bind(config.listen) {
        Ok(listener) => listener,
        Err(e) => {
            tracing::error!(listen = %config.listen, error = %e, "cannot bind the Kafka listener");
            std::process::exit(1);
        }
    };
    tracing::info!(shard = shard.index, listen = %config.listen, "Kafka listener ready");
    if let (0, Some(listen)) = (shard.index, config.metrics_listen) {
        glommio::spawn_local(super::metrics_http::serve_metrics(
            listen,
            shard.metrics.clone(),
            mirror_status.clone(),
        ))
        .detach();
    }
    let broker = Rc::new(Broker::new(shard, config, mirror_status));
    glommio::spawn_local(crate::mirror::fetcher::run(broker.clone())).detach();
    if broker.shard.index == 0 {
        glommio::spawn_local(crate::mirror::metadata_sync::run(broker.clone())).detach();
    }
    loop {
        match listener.accept().await {
            Ok(stream) => {
                let _ = stream.set_nodelay(true);
                let broker = broker.clone();
                glommio::spawn_local(serve_connection(broker, stream)).detach();
            }
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                glommio::timer::sleep(ACCEPT_RETRY).await;
            }
        }
    }
}
