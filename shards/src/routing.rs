//! Partition → shard ownership: one pure function, so every shard computes the same owner
//! without asking anyone.

use shoal_coordinator::TopicPartition;

/// The shard that owns `tp` among `shard_count` shards. A topic's partitions go round-robin
/// from a starting shard derived from the topic id, so one topic spreads across all shards.
pub fn owner_shard(tp: &TopicPartition, shard_count: usize) -> usize {
    assert!(shard_count > 0, "at least one shard");
    let (hi, lo) = tp.topic_id.as_u64_pair();
    let start = (hi ^ lo) % shard_count as u64;
    ((start + tp.partition.max(0) as u64) % shard_count as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    #[test]
    fn a_topic_spreads_evenly_and_routing_is_stable() {
        let topic_id = Uuid::new_v4();
        let mut counts = [0; 4];
        for partition in 0..40 {
            let tp = TopicPartition {
                topic_id,
                partition,
            };
            let owner = owner_shard(&tp, 4);
            assert_eq!(owner, owner_shard(&tp, 4));
            counts[owner] += 1;
        }
        assert_eq!(counts, [10; 4]);
    }
}
