//! Each shard binds every listener's address with SO_REUSEPORT, so the kernel spreads
//! connections across shards and each connection lives entirely on the shard that accepted it.

use crate::cluster::Membership;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use glommio::net::TcpListener;
use shoal_shards::{Shard, ShardError};

use super::connection::serve_connection;
use crate::config::BrokerConfig;
use crate::context::Broker;
use crate::dynamic_configs::LiveConfigs;
use crate::quotas::QuotaBoard;
use crate::security::{Listener, OAuthValidator, TlsServer};
use shoal_config::listeners::SecurityProtocol;

/// Pause after a failed accept (e.g. out of file descriptors) before trying again.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// Accepts connections on every listener until the broker stops; returns only if a listener
/// cannot bind.
/// What secures the listeners: TLS, and the OAUTHBEARER token validator.
pub struct Security {
    pub tls: Option<Arc<TlsServer>>,
    pub oauth: Option<Arc<OAuthValidator>>,
}

/// Binds every Kafka listener of this shard (each shard accepts on its own socket).
fn bind(
    shard: &Shard,
    config: &BrokerConfig,
) -> Result<Vec<(TcpListener, Arc<Listener>)>, ShardError> {
    let listeners = config
        .listeners()
        .map_err(|e| ShardError::Config(e.to_string()))?;
    let mut bound = Vec::with_capacity(listeners.len());
    for listener in listeners {
        let socket = TcpListener::bind(listener.address).map_err(|e| {
            ShardError::Config(format!(
                "cannot bind the Kafka listener {} on {}: {e}",
                listener.name, listener.address
            ))
        })?;
        tracing::info!(
            shard = shard.index,
            listener = %listener.name,
            listen = %listener.address,
            protocol = ?listener.protocol,
            "Kafka listener ready"
        );
        bound.push((socket, Arc::new(listener)));
    }
    Ok(bound)
}

/// Shard 0's HTTP endpoints: metrics and health, and the schema registry, where configured.
fn serve_http(
    shard: &Rc<Shard>,
    config: &BrokerConfig,
    cluster: &Option<Arc<Membership>>,
    tls: &Option<Arc<TlsServer>>,
) {
    if let Some(listen) = config.metrics_listen {
        shard.tasks.spawn_background(
            "metrics endpoint",
            super::metrics_http::serve_metrics(
                listen,
                shard.clone(),
                Rc::new(super::health::Readiness::new(cluster.clone())),
            ),
        );
    }
    if config.schema_registry.listen.is_some() {
        shard.tasks.spawn_background(
            "schema registry",
            shoal_registry_server::serve(
                shard.clone(),
                config.schema_registry.clone(),
                shoal_registry_server::RegistrySecurity {
                    tls: tls.clone().map(|tls| {
                        Rc::new(move || tls.acceptor(SecurityProtocol::Ssl))
                            as Rc<dyn Fn() -> futures_rustls::TlsAcceptor>
                    }),
                    gate: registry_gate(config),
                },
            ),
        );
    }
}

pub async fn serve_shard(
    shard: Rc<Shard>,
    config: Arc<BrokerConfig>,
    live: Arc<LiveConfigs>,
    security: Security,
    cluster: Option<Arc<Membership>>,
    quotas: Arc<QuotaBoard>,
) -> Result<(), ShardError> {
    let Security { tls, oauth } = security;
    let bound = bind(&shard, &config)?;
    let tasks = shard.tasks.clone();
    if shard.index == 0 {
        serve_http(&shard, &config, &cluster, &tls);
        // Dynamic configs stored before this start hold before the first connection.
        live.apply_at_start(&shard.topics.load());
        tasks.spawn_background("dynamic broker configs", live.clone().watch(shard.clone()));
    }
    let broker = Rc::new(Broker::new(shard, config, cluster, quotas, live, oauth));
    tasks.spawn_background(
        "mirror fetchers",
        shoal_mirror_fetcher::fetcher::run(broker.clone()),
    );
    if broker.shard.index == 0 {
        tasks.spawn_background(
            "mirror metadata sync",
            shoal_mirror_fetcher::metadata_sync::run(broker.clone()),
        );
        tasks.spawn_background(
            "transaction endings",
            crate::handlers::transactions::end_transactions_chore(broker.clone()),
        );
    }
    // Each listener accepts in a task of its own. Polled together in one task, every wake-up
    // by one listener polled the others' pending accepts too, and glommio keeps a waker clone
    // for each such poll until a connection comes: after 32,767 connections on one listener
    // while another stayed idle, the task's waker count overflowed and the shard panicked.
    let accepting: Vec<_> = bound
        .into_iter()
        .map(|(socket, listener)| {
            let tls = listener.protocol.uses_tls().then(|| tls.clone()).flatten();
            glommio::spawn_local(accept(socket, listener, tls, broker.clone()))
        })
        .collect();
    for listener in accepting {
        listener.await;
    }
    Ok(())
}

async fn accept(
    socket: TcpListener,
    listener: Arc<Listener>,
    tls: Option<Arc<TlsServer>>,
    broker: Rc<Broker>,
) {
    let tasks = broker.shard.tasks.clone();
    let limits = broker.live.connections().clone();
    loop {
        match socket.accept().await {
            Ok(stream) => {
                let Some(ip) = stream.peer_addr().ok().map(|a| a.ip()) else {
                    continue;
                };
                match limits.admit(ip) {
                    Ok(admitted) => {
                        let _ = stream.set_nodelay(true);
                        let connection = serve_connection(
                            broker.clone(),
                            stream,
                            listener.clone(),
                            tls.clone(),
                            admitted,
                        );
                        tasks.spawn_request(connection);
                    }
                    // Closed at once, as Kafka does; the client retries elsewhere or later.
                    Err(limit) => {
                        broker.shard.metrics.counters.connections_refused.add(1);
                        tracing::debug!(%ip, limit, "connection refused");
                    }
                }
            }
            Err(e) => {
                tracing::warn!(listener = %listener.name, error = %e, "accept failed; retrying (too many open files: raise LimitNOFILE or ulimit -n)");
                glommio::timer::sleep(ACCEPT_RETRY).await;
            }
        }
    }
}

/// Whom the schema registry lets in, and what the ACLs let them do: the broker's own users
/// and authorizer settings.
fn registry_gate(config: &BrokerConfig) -> shoal_registry_server::GateSettings {
    shoal_registry_server::GateSettings {
        plain_users: config.sasl.plain_users.clone(),
        failed_authentication_delay_ms: config.sasl.failed_authentication_delay_ms,
        authorizer_enabled: config.authorizer.enabled,
        super_users: config.authorizer.super_users.clone(),
        allow_everyone_if_no_acl_found: config.authorizer.allow_everyone_if_no_acl_found,
    }
}
