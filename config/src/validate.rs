//! What the config file must satisfy before the broker starts: each section's checks, with a
//! message that names the keys to change.

use super::runtime::online_cores;
use super::{BrokerConfig, CoordinatorKind, StoreKind};
use crate::ConfigError;
use shoal_auth::SaslMechanism;

/// Limits that keep every buffer bounded and objects under the 2 GiB format limit.
pub const BUFFER_MAX_BYTES_LIMIT: usize = 1 << 30;

type Checked = Result<(), ConfigError>;

fn fail(message: impl Into<String>) -> Checked {
    Err(ConfigError(message.into()))
}

impl BrokerConfig {
    pub fn validate(&self) -> Checked {
        if let Some(level) = &self.log.level {
            crate::log::parse_filter(level)
                .map_err(|e| ConfigError(format!("[log] level: {e}")))?;
        }
        self.check_cluster()?;
        self.schema_registry.validate().map_err(ConfigError)?;
        self.check_tls()?;
        self.check_sasl()?;
        self.check_delegation_tokens()?;
        self.check_limits()?;
        self.check_groups_and_store()?;
        self.check_coordinator_and_cores()
    }

    fn check_cluster(&self) -> Checked {
        if !self.cluster.enabled {
            return Ok(());
        }
        if self.coordinator.kind != CoordinatorKind::Postgres {
            return fail(
                "cluster.enabled needs [coordinator] kind = \"postgres\": brokers share the \
                 coordinator's database",
            );
        }
        if self.cluster.heartbeat_ms == 0 || self.cluster.lease_ms <= self.cluster.heartbeat_ms {
            return fail("cluster: heartbeat_ms must be positive and below lease_ms");
        }
        Ok(())
    }

    /// A TLS listener, and the schema registry over TLS, need the broker's certificate.
    fn check_tls(&self) -> Checked {
        let certificate = self.ssl.certificate_file.is_some() && self.ssl.key_file.is_some();
        if self.schema_registry.tls && !certificate {
            return fail(
                "[schema_registry] tls uses the broker's certificate: set ssl.certificate_file \
                 and ssl.key_file",
            );
        }
        let listeners = self.listeners()?;
        if let Some(tls) = listeners.iter().find(|l| l.protocol.uses_tls()) {
            if !certificate {
                return fail(format!(
                    "listener {} uses TLS: set ssl.certificate_file and ssl.key_file",
                    tls.name
                ));
            }
        }
        Ok(())
    }

    fn check_sasl(&self) -> Checked {
        let oauth = &self.sasl.oauthbearer;
        let mechanisms = &self.sasl.enabled_mechanisms;
        if mechanisms.iter().any(|m| m == "OAUTHBEARER")
            && oauth.jwks_endpoint_url.is_none()
            && !oauth.allow_unsecured_tokens
        {
            return fail(
                "sasl.enabled_mechanisms has OAUTHBEARER: set sasl.oauthbearer.jwks_endpoint_url \
                 (the identity provider's keys)",
            );
        }
        if let Some(url) = &oauth.jwks_endpoint_url {
            if !url.starts_with("file://") && !url.starts_with("https://") {
                return fail(format!(
                    "sasl.oauthbearer.jwks_endpoint_url {url}: give an https:// or file:// URL"
                ));
            }
        }
        match mechanisms
            .iter()
            .find(|m| SaslMechanism::from_name(m).is_none())
        {
            Some(mechanism) => fail(format!(
                "sasl.enabled_mechanisms: {mechanism} is not served"
            )),
            None => Ok(()),
        }
    }

    fn check_delegation_tokens(&self) -> Checked {
        let tokens = &self.delegation_token;
        if tokens.secret_key.as_deref() == Some("") {
            return fail("delegation_token.secret_key is empty: set a secret or leave it out");
        }
        if tokens.max_lifetime_ms < 1
            || tokens.expiry_time_ms < 1
            || tokens.expiry_check_interval_ms < 1
        {
            return fail(
                "delegation_token: max_lifetime_ms, expiry_time_ms and expiry_check_interval_ms \
                 must be at least 1",
            );
        }
        Ok(())
    }

    /// The bounds on connections, requests, buffers and quota windows.
    fn check_limits(&self) -> Checked {
        let windows = self.quotas.window_num;
        if !(1..=crate::quotas::MAX_WINDOWS).contains(&windows)
            || !(1..=3600).contains(&self.quotas.window_size_seconds)
        {
            return fail(format!(
                "quotas: window_num must be 1 to {} and window_size_seconds 1 to 3600",
                crate::quotas::MAX_WINDOWS
            ));
        }
        if self.default_partitions <= 0 {
            return fail("default_partitions must be at least 1");
        }
        if self.max_request_bytes < 1024 {
            return fail("max_request_bytes must be at least 1024");
        }
        if self.max_in_flight_request_bytes < self.max_request_bytes {
            return fail("max_in_flight_request_bytes must be at least max_request_bytes");
        }
        if self.max_in_flight_per_connection == 0 || self.shards.queue_depth == 0 {
            return fail("max_in_flight_per_connection and queue_depth must be positive");
        }
        if self.connections_max_idle_ms == 0
            || self.request_read_timeout_ms == 0
            || self.startup_timeout_ms == 0
            || self.max_connections == 0
            || self.max_connections_per_ip == 0
            || self.fetch.max_bytes == 0
        {
            return fail(
                "connections_max_idle_ms, request_read_timeout_ms, startup_timeout_ms, \
                 max_connections, max_connections_per_ip and fetch.max_bytes must be positive",
            );
        }
        let produce = &self.produce;
        if produce.max_inflated_batch_bytes < produce.buffer_max_bytes {
            return fail("produce.max_inflated_batch_bytes must be at least buffer_max_bytes");
        }
        if produce.buffer_max_bytes == 0 || produce.buffer_max_bytes > BUFFER_MAX_BYTES_LIMIT {
            return fail(format!(
                "produce.buffer_max_bytes must be in 1..={BUFFER_MAX_BYTES_LIMIT}"
            ));
        }
        if produce.uploads_in_flight_max == 0 {
            return fail("produce.uploads_in_flight_max must be positive");
        }
        Ok(())
    }

    fn check_groups_and_store(&self) -> Checked {
        let groups = &self.groups;
        if groups.min_session_timeout_ms <= 0
            || groups.min_session_timeout_ms > groups.max_session_timeout_ms
            || groups.max_size == 0
            || groups.max_groups_per_shard == 0
            || groups.offsets_retention_ms <= 0
        {
            return fail(
                "groups: need 0 < min_session_timeout_ms <= max_session_timeout_ms, \
                 max_size >= 1 and offsets_retention_ms > 0",
            );
        }
        let store = &self.object_store;
        if !(1 << 20..=1 << 40).contains(&store.segment_bytes) {
            return fail("object_store: segment_bytes must be between 1 MiB and 1 TiB");
        }
        if store.kind == StoreKind::S3 {
            if store.endpoint.is_empty() || store.bucket.is_empty() {
                return fail("object_store: kind = \"s3\" needs endpoint and bucket");
            }
            if store.max_connections == 0 || store.part_size_bytes < (5 << 20) {
                return fail(
                    "object_store: max_connections must be positive, part_size_bytes >= 5 MiB",
                );
            }
        }
        Ok(())
    }

    fn check_coordinator_and_cores(&self) -> Checked {
        let c = &self.coordinator;
        let intervals = [
            c.retention_check_interval_ms,
            c.file_cleaner_interval_ms,
            c.orphan_scan_interval_ms,
        ];
        if c.retention_step_batches == 0 || intervals.contains(&0) {
            return fail("coordinator intervals and retention_step_batches must be positive");
        }
        let online = online_cores();
        for core in self.shards.cores.iter().chain([&self.coordinator.core]) {
            if !online.contains(core) {
                return fail(format!("core {core} is not online (online: {online:?})"));
            }
        }
        Ok(())
    }
}
