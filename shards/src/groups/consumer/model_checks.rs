//! What the model tests of whole groups share: storing a group's changes in a coordinator
//! state as the shard does, reading it back as a restarted broker does, and the invariant
//! checked after every step.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use shoal_coordinator::{CoordinatorState, Entry, TopicPartition};

use super::assignor::Assignor;
use super::group::ConsumerGroup;

/// Writes what changed in the group (group "g") to the log.
pub fn store(group: &mut ConsumerGroup, log: &mut CoordinatorState) {
    if let Some((record, members)) = group.take_change("g") {
        let mut records = vec![record.into()];
        records.extend(members.into_iter().map(Into::into));
        log.apply(&Entry::new(1, records));
    }
}

/// The group as a broker claiming it reads it back (new and empty if the log has none).
pub fn restart(log: &CoordinatorState, session: Duration, now: Instant) -> ConsumerGroup {
    match log.consumer_group("g") {
        Some(stored) => ConsumerGroup::restore(&stored, Assignor::Uniform, 10, session, now),
        None => ConsumerGroup::new(Assignor::Uniform, 10, session),
    }
}

/// No partition is held by two members, nor consumed by two live clients.
pub fn check_held_and_consumed_once<'a>(
    group: &ConsumerGroup,
    consumed_by_live_clients: impl Iterator<Item = &'a BTreeSet<TopicPartition>>,
) -> Result<(), TestCaseError> {
    let mut held = BTreeSet::new();
    for m in group.members.values() {
        for p in m.assignment.assigned.iter().chain(&m.assignment.revoking) {
            prop_assert!(held.insert(*p), "{:?} held by two members", p);
        }
    }
    let mut consumed = BTreeSet::new();
    for owned in consumed_by_live_clients {
        for p in owned {
            prop_assert!(consumed.insert(*p), "{:?} consumed by two clients", p);
        }
    }
    Ok(())
}
