//! The executors' settings, drawn from the config file.

use std::time::Duration;

use shoal_shards::{MaintenanceConfig, RuntimeConfig};

use super::BrokerConfig;
use crate::ConfigError;

impl BrokerConfig {
    pub fn runtime(&self) -> Result<RuntimeConfig, ConfigError> {
        let shard_cores = if self.shards.cores.is_empty() {
            online_cores()
        } else {
            self.shards.cores.clone()
        };
        Ok(RuntimeConfig {
            node_id: self.node_id,
            data_dir: self.data_dir.clone(),
            store: self.object_store.store(&self.data_dir),
            shard_cores,
            coordinator_core: self.coordinator.core,
            coordinator_own_executor: self.coordinator.own_executor,
            shards: self.shards.clone(),
            produce: self.produce.clone(),
            fetch: self.fetch.clone(),
            live: std::sync::Arc::new(shoal_shards::LiveSettings::new(shoal_shards::LiveValues {
                commit_interval_ms: self.produce.commit_interval_ms,
                buffer_max_bytes: self.produce.buffer_max_bytes,
                fetch_max_bytes: self.fetch.max_bytes,
                fetch_max_wait_ms: self.fetch.max_wait_ms,
            })),
            maintenance: MaintenanceConfig {
                retention_check_interval: ms(self.coordinator.retention_check_interval_ms),
                retention_step_batches: self.coordinator.retention_step_batches,
                producer_id_expiration: ms(self.coordinator.producer_id_expiration_ms),
                file_cleaner_interval: ms(self.coordinator.file_cleaner_interval_ms),
                file_cleaner_grace: ms(self.coordinator.file_cleaner_grace_ms),
                orphan_scan_interval: ms(self.coordinator.orphan_scan_interval_ms),
                orphan_grace: ms(self.coordinator.orphan_grace_ms),
                delegation_token_check_interval: ms(self.delegation_token.expiry_check_interval_ms),
            },
            snapshot_log_bytes: self.coordinator.snapshot_log_bytes,
            coordinator_database: self.coordinator.database()?,
            shared_coordinator_log: self.cluster.enabled,
            groups: self.groups,
            incarnation: RuntimeConfig::draw_incarnation(),
            lease_lapses: Default::default(),
            duties: match self.cluster.enabled {
                true => shoal_metalog::Duties::unheld(),
                false => shoal_metalog::Duties::always(),
            },
            rewrite: self.rewrite.clone(),
            startup_timeout: ms(self.startup_timeout_ms),
        })
    }
}

pub(super) fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

pub(super) fn online_cores() -> Vec<usize> {
    core_affinity::get_core_ids()
        .map(|ids| ids.into_iter().map(|c| c.id).collect())
        .unwrap_or_else(|| vec![0])
}
