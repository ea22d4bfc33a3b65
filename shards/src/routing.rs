//! Partition → shard ownership: one pure function (in the coordinator crate, whose rewrite
//! plans use it too), so every shard computes the same owner without asking anyone.

pub use shoal_coordinator::owner_shard;

#[cfg(test)]
mod tests {
    use super::*;
    use shoal_coordinator::TopicPartition;
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
