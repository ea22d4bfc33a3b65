//! How a share group's partitions are spread over its members (Kafka's `simple` share
//! assignor). Unlike a consumer group's, a share group's assignment need not be exclusive:
//! the records of a partition go one by one to whoever fetches them, so a partition may be
//! given to several members. Each topic's partitions go round the members subscribed to it;
//! when a topic has fewer partitions than members, its partitions go round again so that
//! every member gets one to read.

use std::collections::{BTreeMap, BTreeSet};

use shoal_coordinator::TopicPartition;
use uuid::Uuid;

/// The assignment of each member (by id) given each topic's id and partition count and which
/// members subscribe to it. Deterministic: the same members and topics give the same answer.
pub fn assign<'a>(
    topics: impl IntoIterator<Item = (Uuid, i32, Vec<&'a str>)>,
) -> BTreeMap<&'a str, BTreeSet<TopicPartition>> {
    let mut assignment: BTreeMap<&str, BTreeSet<TopicPartition>> = BTreeMap::new();
    for (topic_id, partitions, mut members) in topics {
        if members.is_empty() || partitions <= 0 {
            continue;
        }
        members.sort_unstable();
        members.dedup();
        let rounds = (partitions as usize).max(members.len());
        for i in 0..rounds {
            let member = members[i % members.len()];
            let partition = (i % partitions as usize) as i32;
            assignment
                .entry(member)
                .or_default()
                .insert(TopicPartition {
                    topic_id,
                    partition,
                });
        }
    }
    assignment
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partitions(of: &BTreeSet<TopicPartition>) -> Vec<i32> {
        of.iter().map(|tp| tp.partition).collect()
    }

    #[test]
    fn partitions_go_round_the_members_and_every_member_gets_one() {
        let topic = Uuid::from_u128(1);
        let spread = assign([(topic, 4, vec!["b", "a"])]);
        assert_eq!(partitions(&spread["a"]), vec![0, 2]);
        assert_eq!(partitions(&spread["b"]), vec![1, 3]);
        // One partition, three members: all three read it.
        let shared = assign([(topic, 1, vec!["a", "b", "c"])]);
        assert!(shared.values().all(|p| partitions(p) == vec![0]));
        assert_eq!(shared.len(), 3);
        // Two partitions, three members: each partition has a reader, each member a partition.
        let uneven = assign([(topic, 2, vec!["a", "b", "c"])]);
        assert_eq!(partitions(&uneven["c"]), vec![0]);
        let covered: BTreeSet<i32> = uneven.values().flat_map(partitions).collect();
        assert_eq!(covered, BTreeSet::from([0, 1]));
    }

    #[test]
    fn only_subscribers_are_assigned_a_topic() {
        let (one, two) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let spread = assign([(one, 2, vec!["a"]), (two, 1, vec!["b"])]);
        assert!(spread["a"].iter().all(|tp| tp.topic_id == one));
        assert!(spread["b"].iter().all(|tp| tp.topic_id == two));
        assert!(assign([(one, 3, vec![])]).is_empty());
    }
}
