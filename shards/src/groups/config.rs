//! `[groups]`: the group coordinator's limits, and the check every JoinGroup meets.

use serde::{Deserialize, Serialize};

use super::classic::messages::JoinRequest;
use super::GroupError;

/// `[groups]`: the group coordinator's limits (Kafka's `group.*` broker settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GroupConfig {
    pub min_session_timeout_ms: i32,
    pub max_session_timeout_ms: i32,
    /// Wait this long for more members when an empty group starts its first rebalance.
    pub initial_rebalance_delay_ms: u64,
    /// Members per group.
    pub max_size: usize,
    /// Groups with members (or joining) one shard holds; a new one beyond gets
    /// COORDINATOR_NOT_AVAILABLE, so group ids from clients cannot grow memory without bound.
    pub max_groups_per_shard: usize,
    /// Committed offsets of a group without members expire this long after its last commit.
    pub offsets_retention_ms: i64,
    /// One member's protocol metadata, all protocols together (consumer protocol: its
    /// subscription's topic names and expression).
    pub max_member_metadata_bytes: usize,
    /// What all groups of one shard may hold (members, their metadata and assignments,
    /// member ids handed out and awaited); a join past it gets COORDINATOR_NOT_AVAILABLE.
    pub max_memory_bytes_per_shard: usize,
    /// Consumer-protocol members: removed after this long without a heartbeat.
    pub consumer_session_timeout_ms: u64,
    /// Consumer-protocol members: asked to heartbeat this often.
    pub consumer_heartbeat_interval_ms: i32,
    /// Whether a group with members moves between the protocols (Kafka's
    /// `group.consumer.migration.policy`).
    pub consumer_migration_policy: MigrationPolicy,
    /// Share groups (KIP-932): members are removed after this long without a heartbeat.
    pub share_session_timeout_ms: u64,
    /// Share groups: members are asked to heartbeat this often.
    pub share_heartbeat_interval_ms: i32,
    /// Share groups: how long a record handed to a member stays with it.
    pub share_record_lock_duration_ms: u64,
    /// Share groups: deliveries of a record before it is archived instead of offered again.
    pub share_delivery_count_limit: u16,
    /// Share groups: records in flight (handed out, not yet done) per share-partition.
    pub share_partition_max_record_locks: u32,
    /// Share sessions (one per fetching member) all share groups of one shard may hold.
    pub max_share_sessions: usize,
    /// Members per share group (Kafka's `group.share.max.size`).
    pub share_max_size: usize,
    /// Streams groups (KIP-1071): members are removed after this long without a heartbeat.
    pub streams_session_timeout_ms: u64,
    /// Streams groups: members are asked to heartbeat this often.
    pub streams_heartbeat_interval_ms: i32,
    /// Streams groups: standby replicas of each task.
    pub streams_num_standby_replicas: u16,
}

/// Kafka's `group.consumer.migration.policy`: a classic group with members is upgraded when
/// a consumer-protocol member joins it, and a consumer group whose last consumer-protocol
/// member leaves, with classic members left, is downgraded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MigrationPolicy {
    Bidirectional,
    Upgrade,
    Downgrade,
    Disabled,
}

impl MigrationPolicy {
    pub fn upgrades(self) -> bool {
        matches!(
            self,
            MigrationPolicy::Bidirectional | MigrationPolicy::Upgrade
        )
    }

    pub fn downgrades(self) -> bool {
        matches!(
            self,
            MigrationPolicy::Bidirectional | MigrationPolicy::Downgrade
        )
    }
}

impl Default for GroupConfig {
    /// Kafka's defaults, except a bounded group size.
    fn default() -> Self {
        GroupConfig {
            min_session_timeout_ms: 6_000,
            max_session_timeout_ms: 1_800_000,
            initial_rebalance_delay_ms: 3_000,
            max_size: 1_000,
            max_groups_per_shard: 100_000,
            offsets_retention_ms: 7 * 24 * 3600 * 1000,
            max_member_metadata_bytes: 1 << 20,
            max_memory_bytes_per_shard: 256 << 20,
            consumer_session_timeout_ms: 45_000,
            consumer_heartbeat_interval_ms: 5_000,
            consumer_migration_policy: MigrationPolicy::Bidirectional,
            share_session_timeout_ms: 45_000,
            share_heartbeat_interval_ms: 5_000,
            share_record_lock_duration_ms: 30_000,
            share_delivery_count_limit: 5,
            share_partition_max_record_locks: 2_000,
            max_share_sessions: 2_000,
            share_max_size: 200,
            streams_session_timeout_ms: 45_000,
            streams_heartbeat_interval_ms: 5_000,
            streams_num_standby_replicas: 0,
        }
    }
}

impl GroupConfig {
    /// What every JoinGroup must meet, whichever kind of group it reaches: its metadata
    /// within `max_member_metadata_bytes`, its session within the bounds.
    pub fn check_join(&self, req: &JoinRequest) -> Result<(), GroupError> {
        if req.metadata_bytes() > self.max_member_metadata_bytes {
            return Err(GroupError::InvalidRequest);
        }
        let session = req.session_timeout_ms;
        if session < self.min_session_timeout_ms || session > self.max_session_timeout_ms {
            return Err(GroupError::InvalidSessionTimeout);
        }
        Ok(())
    }
}
