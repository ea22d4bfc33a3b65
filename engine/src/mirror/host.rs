//! The broker as the mirror's tasks see it.

use shoal_coordinator::TopicPartition;
use shoal_mirror_fetcher::Host;
use shoal_shards::Shard;

use crate::context::Broker;

impl Host for Broker {
    fn shard(&self) -> &Shard {
        &self.shard
    }

    fn mirrors_partition(&self, partition: &TopicPartition) -> bool {
        Broker::mirrors_partition(self, partition)
    }

    fn runs_cluster_chores(&self) -> bool {
        Broker::runs_cluster_chores(self)
    }
}
