//! The broker-side assignors of the consumer group protocol (KIP-848, `group.consumer.assignors`):
//! they turn members' subscriptions into a target assignment.
//!
//! - `Uniform` (Kafka's default): every partition of a subscribed topic goes to exactly one
//!   member subscribed to its topic, counts as even as the subscriptions allow, and sticky:
//!   a member keeps the partitions of its previous target that it still may and should have,
//!   so a member joining or leaving moves only the partitions it must.
//! - `Range`: per topic, the members subscribed to it (by member id) take contiguous ranges of
//!   its partitions, the first ones one more when they do not divide evenly, so members with
//!   the same subscriptions get the same partition numbers of co-partitioned topics.

use std::collections::{BTreeMap, BTreeSet};

use shoal_coordinator::TopicPartition;
use uuid::Uuid;

/// What an assignor knows of a member.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AssignorMember {
    pub subscribed: BTreeSet<Uuid>,
    /// Its partitions in the previous target assignment.
    pub previous: BTreeSet<TopicPartition>,
}

pub type Assignment = BTreeMap<String, BTreeSet<TopicPartition>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assignor {
    Uniform,
    Range,
}

impl Assignor {
    /// By its name in `group.consumer.assignors` / a heartbeat's `ServerAssignor`.
    pub fn by_name(name: &str) -> Option<Assignor> {
        match name {
            "uniform" => Some(Assignor::Uniform),
            "range" => Some(Assignor::Range),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Assignor::Uniform => "uniform",
            Assignor::Range => "range",
        }
    }

    /// The target assignment: an entry for every member (empty when it gets nothing).
    /// `topics` holds the partition count of every existing topic; subscribed topics that
    /// do not exist are skipped.
    pub fn assign(
        &self,
        members: &BTreeMap<String, AssignorMember>,
        topics: &BTreeMap<Uuid, i32>,
    ) -> Assignment {
        match self {
            Assignor::Uniform => uniform(members, topics),
            Assignor::Range => range(members, topics),
        }
    }
}

fn partitions_of(topic: Uuid, count: i32) -> impl Iterator<Item = TopicPartition> {
    (0..count.max(0)).map(move |partition| TopicPartition {
        topic_id: topic,
        partition,
    })
}

fn range(members: &BTreeMap<String, AssignorMember>, topics: &BTreeMap<Uuid, i32>) -> Assignment {
    let mut assignment: Assignment = members
        .keys()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for (&topic, &count) in topics {
        let subscribers: Vec<&String> = members
            .iter()
            .filter(|(_, m)| m.subscribed.contains(&topic))
            .map(|(id, _)| id)
            .collect();
        if subscribers.is_empty() {
            continue;
        }
        let count = count.max(0) as usize;
        let (each, extra) = (count / subscribers.len(), count % subscribers.len());
        let mut next = 0;
        for (i, member) in subscribers.into_iter().enumerate() {
            let take = each + usize::from(i < extra);
            let owned = assignment
                .get_mut(member)
                .expect("every member has an entry");
            owned.extend(partitions_of(topic, count as i32).skip(next).take(take));
            next += take;
        }
    }
    assignment
}

fn uniform(members: &BTreeMap<String, AssignorMember>, topics: &BTreeMap<Uuid, i32>) -> Assignment {
    let mut assignment: Assignment = members
        .keys()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    let may_own = |member: &AssignorMember, p: &TopicPartition| {
        member.subscribed.contains(&p.topic_id)
            && topics
                .get(&p.topic_id)
                .is_some_and(|&count| p.partition < count)
    };
    let wanted: BTreeSet<TopicPartition> = topics
        .iter()
        .filter(|(topic, _)| members.values().any(|m| m.subscribed.contains(topic)))
        .flat_map(|(&topic, &count)| partitions_of(topic, count))
        .collect();
    if members.is_empty() || wanted.is_empty() {
        return assignment;
    }
    // 1. Stickiness: each member keeps what it had and still may have (once), up to the most
    //    an even spread would give anyone.
    let ceiling = wanted.len().div_ceil(members.len());
    let mut taken = BTreeSet::new();
    for (id, member) in members {
        let owned = assignment.get_mut(id).expect("every member has an entry");
        for p in &member.previous {
            if owned.len() < ceiling && may_own(member, p) && taken.insert(*p) {
                owned.insert(*p);
            }
        }
    }
    // 2. The rest, each to the member subscribed to its topic that holds the fewest.
    for p in wanted.difference(&taken.clone()) {
        let fewest = members
            .iter()
            .filter(|(_, m)| may_own(m, p))
            .min_by_key(|(id, _)| assignment[*id].len())
            .map(|(id, _)| id.clone())
            .expect("a wanted partition has a subscriber");
        assignment.get_mut(&fewest).expect("member").insert(*p);
    }
    // 3. Even out: move a partition from a member holding two or more above another that may
    //    own it, until no such pair is left (with equal subscriptions: counts within one).
    while let Some((from, to, p)) = uneven_pair(members, &assignment, &may_own) {
        assignment.get_mut(&from).expect("member").remove(&p);
        assignment.get_mut(&to).expect("member").insert(p);
    }
    assignment
}

/// A member holding at least two more than another member that may own one of its
/// partitions: (donor, receiver, the partition to move). Prefers the fullest donor and the
/// emptiest receiver.
fn uneven_pair(
    members: &BTreeMap<String, AssignorMember>,
    assignment: &Assignment,
    may_own: &impl Fn(&AssignorMember, &TopicPartition) -> bool,
) -> Option<(String, String, TopicPartition)> {
    let mut by_count: Vec<(&String, usize)> =
        assignment.iter().map(|(id, o)| (id, o.len())).collect();
    by_count.sort_by_key(|&(id, n)| (n, id));
    for &(donor, donor_count) in by_count.iter().rev() {
        for &(receiver, receiver_count) in &by_count {
            if donor_count < receiver_count + 2 {
                break;
            }
            let movable = assignment[donor]
                .iter()
                .rev()
                .find(|p| may_own(&members[receiver], p));
            if let Some(p) = movable {
                return Some((donor.clone(), receiver.clone(), *p));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn topic(n: u8) -> Uuid {
        Uuid::from_bytes([n; 16])
    }

    fn member(topics: &[u8], previous: &[(u8, i32)]) -> AssignorMember {
        AssignorMember {
            subscribed: topics.iter().map(|&t| topic(t)).collect(),
            previous: previous
                .iter()
                .map(|&(t, partition)| TopicPartition {
                    topic_id: topic(t),
                    partition,
                })
                .collect(),
        }
    }

    fn members(list: Vec<(&str, AssignorMember)>) -> BTreeMap<String, AssignorMember> {
        list.into_iter()
            .map(|(id, m)| (id.to_string(), m))
            .collect()
    }

    /// Every subscribed partition once, to a member subscribed to its topic.
    fn check_complete(
        members: &BTreeMap<String, AssignorMember>,
        topics: &BTreeMap<Uuid, i32>,
        assignment: &Assignment,
    ) {
        let mut seen = BTreeSet::new();
        for (id, owned) in assignment {
            for p in owned {
                assert!(
                    members[id].subscribed.contains(&p.topic_id),
                    "{id} got {p:?}"
                );
                assert!(seen.insert(*p), "{p:?} assigned twice");
            }
        }
        for (&t, &count) in topics {
            if members.values().any(|m| m.subscribed.contains(&t)) {
                for p in partitions_of(t, count) {
                    assert!(seen.contains(&p), "{p:?} unassigned");
                }
            }
        }
    }

    #[test]
    fn range_gives_contiguous_ranges_the_first_members_one_more() {
        let ms = members(vec![
            ("a", member(&[1, 2], &[])),
            ("b", member(&[1, 2], &[])),
        ]);
        let topics = BTreeMap::from([(topic(1), 3), (topic(2), 3)]);
        let assignment = Assignor::Range.assign(&ms, &topics);
        let numbers = |id: &str| -> Vec<(u8, i32)> {
            assignment[id]
                .iter()
                .map(|p| (p.topic_id.as_bytes()[0], p.partition))
                .collect()
        };
        assert_eq!(numbers("a"), vec![(1, 0), (1, 1), (2, 0), (2, 1)]);
        assert_eq!(numbers("b"), vec![(1, 2), (2, 2)]);
    }

    #[test]
    fn uniform_moves_only_what_a_new_member_must_take() {
        let topics = BTreeMap::from([(topic(1), 8)]);
        let first = members(vec![("a", member(&[1], &[])), ("b", member(&[1], &[]))]);
        let before = Assignor::Uniform.assign(&first, &topics);
        assert_eq!(before["a"].len(), 4);
        let mut second: BTreeMap<String, AssignorMember> = first
            .into_iter()
            .map(|(id, mut m)| {
                m.previous = before[&id].clone();
                (id, m)
            })
            .collect();
        second.insert("c".into(), member(&[1], &[]));
        let after = Assignor::Uniform.assign(&second, &topics);
        check_complete(&second, &topics, &after);
        let moved: usize = ["a", "b"]
            .iter()
            .map(|id| before[*id].difference(&after[*id]).count())
            .sum();
        assert_eq!(
            moved,
            after["c"].len(),
            "only the newcomer's partitions moved"
        );
        assert!((2..=3).contains(&after["c"].len()));
    }

    #[test]
    fn uniform_skips_topics_that_do_not_exist_and_partitions_that_are_gone() {
        let ms = members(vec![("a", member(&[1, 9], &[(1, 5)]))]);
        let topics = BTreeMap::from([(topic(1), 2)]);
        let assignment = Assignor::Uniform.assign(&ms, &topics);
        assert_eq!(assignment["a"].len(), 2);
        check_complete(&ms, &topics, &assignment);
    }

    fn arbitrary_group(
    ) -> impl Strategy<Value = (BTreeMap<String, AssignorMember>, BTreeMap<Uuid, i32>)> {
        let topics = proptest::collection::btree_map(0u8..5, 0i32..12, 1..5);
        let members = proptest::collection::vec(
            (
                proptest::collection::btree_set(0u8..6, 0..4),
                proptest::collection::vec((0u8..5, 0i32..12), 0..10),
            ),
            0..7,
        );
        (topics, members).prop_map(|(topics, members)| {
            let topics = topics.into_iter().map(|(t, n)| (topic(t), n)).collect();
            let members = members
                .into_iter()
                .enumerate()
                .map(|(i, (subscribed, previous))| {
                    let subscribed: Vec<u8> = subscribed.into_iter().collect();
                    (format!("m{i}"), member(&subscribed, &previous))
                })
                .collect();
            (members, topics)
        })
    }

    proptest! {
        #[test]
        fn every_assignor_assigns_each_subscribed_partition_once((ms, topics) in arbitrary_group()) {
            for assignor in [Assignor::Uniform, Assignor::Range] {
                let assignment = assignor.assign(&ms, &topics);
                prop_assert_eq!(assignment.len(), ms.len());
                check_complete(&ms, &topics, &assignment);
            }
        }

        #[test]
        fn uniform_is_even_for_equal_subscriptions(
            count in 0i32..40, size in 1usize..8, previous in proptest::collection::vec((0usize..8, 0i32..40), 0..40)
        ) {
            let topics = BTreeMap::from([(topic(1), count), (topic(2), count / 2)]);
            let mut ms: BTreeMap<String, AssignorMember> =
                (0..size).map(|i| (format!("m{i}"), member(&[1, 2], &[]))).collect();
            for (i, partition) in previous {
                if let Some(m) = ms.get_mut(&format!("m{i}")) {
                    m.previous.insert(TopicPartition { topic_id: topic(1), partition });
                }
            }
            let assignment = Assignor::Uniform.assign(&ms, &topics);
            check_complete(&ms, &topics, &assignment);
            let counts: Vec<usize> = assignment.values().map(BTreeSet::len).collect();
            prop_assert!(counts.iter().max().unwrap() - counts.iter().min().unwrap() <= 1);
        }
    }
}
