//! `[cluster]`: a broker as one of many over one object store and one PostgreSQL database.

use serde::{Deserialize, Serialize};

/// `[cluster]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterConfig {
    /// Share the coordinator's database with other brokers: needs `[coordinator] kind =
    /// "postgres"` and an object store every broker reaches (S3).
    pub enabled: bool,
    /// Kafka's `broker.rack`: the zone whose clients this broker serves first.
    pub rack: Option<String>,
    /// A broker that has not renewed its registration for this long is gone from Metadata.
    pub lease_ms: u64,
    /// How often a broker renews its lease and reads who else is alive.
    pub heartbeat_ms: u64,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            enabled: false,
            rack: None,
            lease_ms: 10_000,
            heartbeat_ms: 2_000,
        }
    }
}
