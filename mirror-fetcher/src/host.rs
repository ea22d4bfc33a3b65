//! What the mirror's tasks need of the broker they run in.

use shoal_coordinator::TopicPartition;
use shoal_shards::Shard;

/// The broker as a mirror's task sees it: its shard (coordinator, topics, groups, storage)
/// and, in a cluster, which of its brokers does which part of the work.
pub trait Host {
    fn shard(&self) -> &Shard;

    /// Whether this broker fetches `partition` of a mirror (in a cluster, exactly one does).
    fn mirrors_partition(&self, partition: &TopicPartition) -> bool;

    /// Whether this broker runs the chores one broker does for all, such as the metadata sync.
    fn runs_cluster_chores(&self) -> bool;
}
