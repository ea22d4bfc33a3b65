//! Share-partition states (KIP-932) as the brokers holding their share groups wrote them
//! (`ShoalShareStateRecord`), by group, topic and partition: the newest version of each is
//! kept, so a broker restarted or taking the group over goes on from it. They go with their
//! topic and with their group (DeleteGroups).

use std::collections::BTreeMap;

use shoal_protocol::records::{AnyRecord, ShoalShareStateRecord};
use uuid::Uuid;

use super::CoordinatorState;

/// Share-partition states by (group, topic id, partition).
pub type ShareStates = BTreeMap<(String, Uuid, i32), StoredShareState>;

/// One share-partition's state as written.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredShareState(pub ShoalShareStateRecord);

/// The record holds no floating point numbers: equality is total.
impl Eq for StoredShareState {}

impl CoordinatorState {
    /// The share-partition's state as last written, if any.
    pub fn share_state(
        &self,
        group: &str,
        topic_id: Uuid,
        partition: i32,
    ) -> Option<ShoalShareStateRecord> {
        self.share_states
            .get(&(group.to_string(), topic_id, partition))
            .map(|s| s.0.clone())
    }

    /// The version of the share-partition's state the log holds (0: none).
    pub fn share_state_version(&self, group: &str, topic_id: Uuid, partition: i32) -> i64 {
        self.share_states
            .get(&(group.to_string(), topic_id, partition))
            .map_or(0, |s| s.0.state_version)
    }

    /// Every share-partition state of the group, by topic and partition.
    pub fn share_states_of(&self, group: &str) -> Vec<ShoalShareStateRecord> {
        let from = (group.to_string(), Uuid::nil(), i32::MIN);
        self.share_states
            .range(from..)
            .take_while(|((g, _, _), _)| g == group)
            .map(|(_, r)| r.0.clone())
            .collect()
    }

    /// The groups with any share-partition state, in order.
    pub fn share_state_groups(&self) -> Vec<String> {
        let mut groups: Vec<String> = Vec::new();
        for (group, _, _) in self.share_states.keys() {
            if groups.last() != Some(group) {
                groups.push(group.clone());
            }
        }
        groups
    }

    /// Whether the group has any share-partition state.
    pub fn has_share_states(&self, group: &str) -> bool {
        let from = (group.to_string(), Uuid::nil(), i32::MIN);
        let first = self.share_states.range(from..).next();
        first.is_some_and(|((g, _, _), _)| g == group)
    }

    /// A newer state replaces the one kept (a deleted one removes it); an older or equal
    /// version is ignored.
    pub(super) fn apply_share_state(&mut self, r: &ShoalShareStateRecord) {
        let key = (r.group_id.clone(), r.topic_id, r.partition);
        let newer = self
            .share_states
            .get(&key)
            .is_none_or(|kept| kept.0.state_version < r.state_version);
        match (newer, r.deleted) {
            (false, _) => {}
            (true, true) => {
                self.share_states.remove(&key);
            }
            (true, false) => {
                self.share_states.insert(key, StoredShareState(r.clone()));
            }
        }
    }

    pub(super) fn forget_topic_share_states(&mut self, topic_id: Uuid) {
        self.share_states.retain(|(_, id, _), _| *id != topic_id);
    }

    pub(super) fn forget_group_share_states(&mut self, group: &str) {
        self.share_states.retain(|(g, _, _), _| g != group);
    }

    /// Every state's record, for a snapshot.
    pub(super) fn share_state_records(&self) -> impl Iterator<Item = AnyRecord> + '_ {
        self.share_states.values().map(|r| r.0.clone().into())
    }
}

#[cfg(test)]
mod tests {
    use shoal_protocol::records::{DisklessTopicDeletedRecord, ShoalGroupDeletedRecord};

    use super::*;
    use crate::entry::Entry;

    fn state(group: &str, partition: i32, version: i64, start: i64) -> ShoalShareStateRecord {
        ShoalShareStateRecord {
            group_id: group.into(),
            topic_id: Uuid::from_u128(5),
            partition,
            state_version: version,
            deleted: false,
            start_offset: start,
            batches: vec![],
        }
    }

    fn apply(state: &mut CoordinatorState, record: impl Into<AnyRecord>) {
        state.apply(&Entry::of(0, record.into()));
    }

    #[test]
    fn the_newest_version_is_kept_and_goes_with_its_group_or_topic() {
        let mut s = CoordinatorState::default();
        let topic = Uuid::from_u128(5);
        apply(&mut s, state("q", 0, 2, 20));
        // A write that crossed a newer one on its way is ignored.
        apply(&mut s, state("q", 0, 1, 10));
        apply(&mut s, state("q", 1, 1, 7));
        apply(&mut s, state("other", 0, 1, 3));
        apply(&mut s, state("gone", 0, 1, 3));
        let removed = ShoalShareStateRecord {
            deleted: true,
            ..state("gone", 0, 2, 0)
        };
        apply(&mut s, removed);
        assert!(!s.has_share_states("gone"));
        assert_eq!(s.share_state("q", topic, 0).unwrap().start_offset, 20);
        let starts: Vec<i64> = s
            .share_states_of("q")
            .iter()
            .map(|r| r.start_offset)
            .collect();
        assert_eq!(starts, vec![20, 7]);
        assert_eq!(s.share_state_groups(), vec!["other", "q"]);
        let deleted = ShoalGroupDeletedRecord {
            group_id: "q".into(),
        };
        apply(&mut s, deleted);
        assert!(!s.has_share_states("q"));
        assert!(s.has_share_states("other"));
        apply(&mut s, DisklessTopicDeletedRecord { topic_id: topic });
        assert!(!s.has_share_states("other"));
    }

    #[test]
    fn a_state_is_written_only_right_after_the_version_the_log_holds() {
        use crate::commands::WriteShareStates;
        use crate::{Command, CoordinatorMetrics, Round};
        let mut s = CoordinatorState::default();
        let mut write = |states: Vec<ShoalShareStateRecord>| {
            let (mut frames, metrics) = (Vec::new(), CoordinatorMetrics::default());
            let round = &mut Round::new(&mut s, &mut frames, 1, &metrics);
            WriteShareStates { states }.run(round)
        };
        // Two brokers each read "none" and write version 1: the second is refused.
        assert_eq!(write(vec![state("q", 0, 1, 10)]), Vec::<usize>::new());
        assert_eq!(
            write(vec![state("q", 0, 1, 11), state("q", 1, 1, 3)]),
            vec![0]
        );
        // One that skips a version, or repeats one, is refused too.
        assert_eq!(
            write(vec![state("q", 0, 3, 12), state("q", 1, 1, 4)]),
            vec![0, 1]
        );
        assert_eq!(write(vec![state("q", 0, 2, 12)]), Vec::<usize>::new());
        assert_eq!(s.share_state_version("q", Uuid::from_u128(5), 0), 2);
        assert_eq!(
            s.share_state("q", Uuid::from_u128(5), 0)
                .unwrap()
                .start_offset,
            12
        );
        assert_eq!(s.share_state_version("q", Uuid::from_u128(5), 7), 0);
    }
}
