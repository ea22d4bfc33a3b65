//! `BrokerConfig`: the whole file, one field per table, and how it is read.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use shoal_shards::{FetchConfig, GroupConfig, ProduceConfig, RewriteConfig, ShardsConfig};

use crate::listeners::{parse_listeners, Listener};
use crate::{
    AuthorizerConfig, ClusterConfig, ConfigError, CoordinatorConfig, DeadLettersConfig,
    DelegationTokenConfig, LogConfig, ObjectStoreConfig, QuotasConfig, SaslConfig, SslConfig,
};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BrokerConfig {
    /// The one PLAINTEXT listener when `listeners` is empty.
    pub listen: SocketAddr,
    /// Kafka's `listeners`: "NAME://host:port,...", each name a security protocol or mapped
    /// to one by `listener_security_protocol_map`.
    pub listeners: String,
    /// Kafka's `advertised.listeners`, same form; a listener not named advertises its address.
    pub advertised_listeners: String,
    /// Kafka's `listener.security.protocol.map`: "NAME:PROTOCOL,...".
    pub listener_security_protocol_map: String,
    pub sasl: SaslConfig,
    pub delegation_token: DelegationTokenConfig,
    pub ssl: SslConfig,
    pub authorizer: AuthorizerConfig,
    /// Prometheus metrics at http://<this>/metrics; unset means no endpoint.
    pub metrics_listen: Option<SocketAddr>,
    /// Host and port clients are told to connect to; defaults to `listen`.
    pub advertised_listener: Option<String>,
    pub data_dir: PathBuf,
    pub node_id: i32,
    pub cluster_id: String,
    pub max_request_bytes: usize,
    /// Bytes of requests all connections of one shard may have in memory at once; readers
    /// wait for room (Kafka's queued.max.request.bytes).
    pub max_in_flight_request_bytes: usize,
    /// Requests one connection may have in flight (pipelined) before reading pauses.
    pub max_in_flight_per_connection: usize,
    /// A connection whose unwritten answers hold this many bytes is not read from until its
    /// client takes them (Kafka mutes such a channel).
    pub max_unsent_bytes_per_connection: usize,
    /// Kafka's `connections.max.idle.ms`: a connection that sends no request (while it waits
    /// for no answer) or takes no answer for this long is closed.
    pub connections_max_idle_ms: u64,
    /// A request must arrive whole within this long of its first bytes.
    pub request_read_timeout_ms: u64,
    /// How long each start-up step may take (the object store's check, PostgreSQL, the
    /// coordinator's recovery, each shard's wiring and listeners): passing failures are
    /// tried again within it; past it the broker stops, naming the step.
    pub startup_timeout_ms: u64,
    /// Kafka's `max.connections` and `max.connections.per.ip`: more are closed at once.
    pub max_connections: usize,
    pub max_connections_per_ip: usize,
    pub auto_create_topics: bool,
    pub default_partitions: i32,
    pub shards: ShardsConfig,
    pub coordinator: CoordinatorConfig,
    pub produce: ProduceConfig,
    pub fetch: FetchConfig,
    pub object_store: ObjectStoreConfig,
    pub groups: GroupConfig,
    pub dead_letters: DeadLettersConfig,
    pub cluster: ClusterConfig,
    pub rewrite: RewriteConfig,
    pub quotas: QuotasConfig,
    pub schema_registry: shoal_registry_server::SchemaRegistryConfig,
    pub iceberg: shoal_iceberg_writer::IcebergConfig,
    pub log: LogConfig,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig {
            listen: "127.0.0.1:9092".parse().expect("valid address"),
            listeners: String::new(),
            advertised_listeners: String::new(),
            listener_security_protocol_map: String::new(),
            sasl: SaslConfig::default(),
            delegation_token: DelegationTokenConfig::default(),
            ssl: SslConfig::default(),
            authorizer: AuthorizerConfig::default(),
            advertised_listener: None,
            metrics_listen: None,
            data_dir: PathBuf::from("./data"),
            node_id: 0,
            cluster_id: "shoal-local".to_string(),
            max_request_bytes: 100 << 20,
            max_in_flight_request_bytes: 512 << 20,
            max_in_flight_per_connection: 64,
            max_unsent_bytes_per_connection: 64 << 20,
            connections_max_idle_ms: 600_000,
            request_read_timeout_ms: 30_000,
            startup_timeout_ms: 60_000,
            max_connections: 10_000,
            max_connections_per_ip: 1_000,
            auto_create_topics: true,
            default_partitions: 1,
            shards: ShardsConfig::default(),
            coordinator: CoordinatorConfig::default(),
            produce: ProduceConfig::default(),
            fetch: FetchConfig::default(),
            object_store: ObjectStoreConfig::default(),
            groups: GroupConfig::default(),
            dead_letters: DeadLettersConfig::default(),
            cluster: ClusterConfig::default(),
            rewrite: RewriteConfig::default(),
            quotas: QuotasConfig::default(),
            schema_registry: Default::default(),
            iceberg: Default::default(),
            log: LogConfig::default(),
        }
    }
}

impl BrokerConfig {
    pub fn load(path: Option<&Path>) -> Result<BrokerConfig, ConfigError> {
        let Some(path) = path else {
            return Ok(BrokerConfig::default());
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("cannot read {}: {e}", path.display())))?;
        toml::from_str(&text).map_err(|e| ConfigError(format!("{}: {e}", path.display())))
    }

    /// The listeners to bind, with their protocols and advertised addresses.
    pub fn listeners(&self) -> Result<Vec<Listener>, ConfigError> {
        parse_listeners(
            &self.listeners,
            &self.advertised_listeners,
            &self.listener_security_protocol_map,
            self.listen,
            self.advertised_listener.as_deref(),
        )
    }

    /// The host and port written into Metadata responses.
    pub fn advertised(&self) -> (String, i32) {
        if let Some(listener) = &self.advertised_listener {
            if let Some((host, port)) = listener.rsplit_once(':') {
                if let Ok(port) = port.parse() {
                    return (host.to_string(), port);
                }
            }
        }
        (self.listen.ip().to_string(), self.listen.port() as i32)
    }
}
