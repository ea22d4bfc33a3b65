//! `[coordinator]`: where the coordinator runs, where its metadata log lives, and its chores'
//! intervals.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where the coordinator's metadata log lives: the data directory or PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CoordinatorKind {
    Local,
    Postgres,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CoordinatorConfig {
    pub core: usize,
    /// Its own executor thread even where `core` has a shard; by default it runs as tasks on
    /// that shard's executor.
    pub own_executor: bool,
    /// "local": the metadata log in the data directory; "postgres": in PostgreSQL at `url`.
    pub kind: CoordinatorKind,
    /// postgres://user@host:port/database; the password comes from `password_file`, else the
    /// variable named by `password_env`, else the URL.
    pub url: Option<String>,
    pub password_env: String,
    pub password_file: Option<PathBuf>,
    pub connect_timeout_ms: u64,
    pub statement_timeout_ms: u64,
    /// Connections to PostgreSQL, each carrying one round's append: rounds in flight at once.
    pub pool_size: usize,
    pub retention_check_interval_ms: u64,
    pub retention_step_batches: usize,
    pub producer_id_expiration_ms: u64,
    pub file_cleaner_interval_ms: u64,
    pub file_cleaner_grace_ms: u64,
    pub orphan_scan_interval_ms: u64,
    pub orphan_grace_ms: u64,
    pub snapshot_log_bytes: u64,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        CoordinatorConfig {
            core: 0,
            own_executor: false,
            kind: CoordinatorKind::Local,
            url: None,
            password_env: "SHOAL_COORDINATOR_PASSWORD".into(),
            password_file: None,
            connect_timeout_ms: 5_000,
            statement_timeout_ms: 10_000,
            pool_size: 2,
            // Kafka's log.retention.check.interval.ms.
            retention_check_interval_ms: 300_000,
            retention_step_batches: 100_000,
            // Kafka's producer.id.expiration.ms.
            producer_id_expiration_ms: 86_400_000,
            // Inkless's file cleaner: every 2 minutes, 60 s grace.
            file_cleaner_interval_ms: 120_000,
            file_cleaner_grace_ms: 60_000,
            orphan_scan_interval_ms: 600_000,
            orphan_grace_ms: 600_000,
            snapshot_log_bytes: 256 << 20,
        }
    }
}
