//! Consumer-protocol groups (KIP-848) as their coordinating brokers recorded them: the group's
//! epochs and subscribed topics, and each member whole. A broker that claims a group reads it
//! back and continues it, so members keep their epochs and partitions across a restart or a
//! move of the group. Only the claim's holder writes (`WriteConsumerGroup`); a group whose last
//! member left is forgotten (its committed offsets stay in `groups`).

use std::collections::BTreeMap;

use shoal_protocol::records::{AnyRecord, ShoalConsumerGroupRecord, ShoalConsumerMemberRecord};

use super::stored_groups::{entries, GroupRecord, MemberRecord, StoredGroup};
use super::CoordinatorState;

/// One consumer-protocol group as stored.
pub type StoredConsumerGroup = StoredGroup<ShoalConsumerGroupRecord, ShoalConsumerMemberRecord>;

/// The records hold no floating point numbers: equality is total.
impl Eq for StoredConsumerGroup {}

impl GroupRecord for ShoalConsumerGroupRecord {}

impl MemberRecord for ShoalConsumerMemberRecord {
    fn member_id(&self) -> &str {
        &self.member_id
    }

    fn removed(&self) -> bool {
        self.removed
    }
}

impl CoordinatorState {
    pub fn consumer_group(&self, group: &str) -> Option<StoredConsumerGroup> {
        self.consumer_groups.get(group).cloned()
    }

    /// A group's record and the member records that follow it in its entry.
    pub(super) fn apply_consumer_group<'a>(
        &mut self,
        group: &ShoalConsumerGroupRecord,
        members: impl Iterator<Item = &'a ShoalConsumerMemberRecord>,
    ) {
        if group.deleted {
            self.consumer_groups.remove(&group.group_id);
            return;
        }
        let stored = self
            .consumer_groups
            .entry(group.group_id.clone())
            .or_insert_with(|| StoredConsumerGroup {
                group: group.clone(),
                members: BTreeMap::new(),
            });
        stored.group = group.clone();
        stored.apply_members(members);
    }

    /// DeleteGroups and offset expiry forget the group's membership with its offsets.
    pub(super) fn forget_consumer_group(&mut self, group: &str) {
        self.consumer_groups.remove(group);
    }

    /// Every group's records, for a snapshot, sorted by group.
    pub(super) fn consumer_group_entries(&self) -> Vec<Vec<AnyRecord>> {
        entries(&self.consumer_groups)
    }
}

#[cfg(test)]
mod tests {
    use shoal_protocol::records::ShoalGroupDeletedRecord;

    use super::*;
    use crate::entry::Entry;

    fn group(epoch: i32, deleted: bool) -> ShoalConsumerGroupRecord {
        ShoalConsumerGroupRecord {
            group_id: "cg".into(),
            change: epoch as i64,
            deleted,
            group_epoch: epoch,
            assignment_epoch: epoch,
            ..Default::default()
        }
    }

    fn member(id: &str, epoch: i32, removed: bool) -> AnyRecord {
        ShoalConsumerMemberRecord {
            member_id: id.into(),
            removed,
            member_epoch: epoch,
            ..Default::default()
        }
        .into()
    }

    fn change(group: ShoalConsumerGroupRecord, members: Vec<AnyRecord>) -> Entry {
        let mut records = vec![group.into()];
        records.extend(members);
        Entry::new(1, records)
    }

    fn member_epochs(state: &CoordinatorState) -> Vec<(String, i32)> {
        let stored = state.consumer_group("cg").expect("stored");
        stored
            .members
            .iter()
            .map(|(id, m)| (id.clone(), m.member_epoch))
            .collect()
    }

    #[test]
    fn changes_replace_members_and_a_snapshot_keeps_the_group() {
        let mut state = CoordinatorState::default();
        state.apply(&change(
            group(1, false),
            vec![member("a", 1, false), member("b", 1, false)],
        ));
        state.apply(&change(
            group(2, false),
            vec![member("a", 2, false), member("b", 0, true)],
        ));
        assert_eq!(member_epochs(&state), [("a".to_string(), 2)]);
        assert_eq!(state.consumer_group("cg").unwrap().group.group_epoch, 2);
        let image = state.encode_snapshot();
        let restored = CoordinatorState::decode_snapshot(&image).unwrap();
        assert_eq!(restored, state);
        assert_eq!(member_epochs(&restored), [("a".to_string(), 2)]);
    }

    #[test]
    fn a_deleted_group_or_deleted_offsets_forget_it() {
        let mut state = CoordinatorState::default();
        state.apply(&change(group(1, false), vec![member("a", 1, false)]));
        state.apply(&change(group(2, true), vec![]));
        assert_eq!(state.consumer_group("cg"), None);
        state.apply(&change(group(3, false), vec![member("a", 3, false)]));
        let deleted = ShoalGroupDeletedRecord {
            group_id: "cg".into(),
        };
        state.apply(&Entry::of(2, deleted));
        assert_eq!(state.consumer_group("cg"), None);
    }
}

#[cfg(test)]
mod write_tests {
    use super::*;
    use crate::commands::{ClaimGroup, WriteConsumerGroup};
    use crate::{Command, CoordinatorMetrics, ErrorKind, Round};

    fn run<C: Command>(state: &mut CoordinatorState, command: C) -> C::Reply {
        let (mut frames, metrics) = (Vec::new(), CoordinatorMetrics::default());
        command.run(&mut Round::new(state, &mut frames, 1, &metrics))
    }

    #[test]
    fn a_change_is_stored_only_under_the_latest_claim_and_right_after_the_last() {
        let mut state = CoordinatorState::default();
        let claim = |node_id| ClaimGroup {
            group: "cg".into(),
            node_id,
            incarnation: 1,
        };
        let ours = run(&mut state, claim(1)).unwrap();
        let write = |change| WriteConsumerGroup {
            claim: ours,
            group: ShoalConsumerGroupRecord {
                group_id: "cg".into(),
                change,
                ..Default::default()
            },
            members: vec![],
        };
        assert_eq!(run(&mut state, write(1)), Ok(()));
        // The write of change 2 failed: change 3, computed after it, must not land.
        assert_eq!(run(&mut state, write(3)), Err(ErrorKind::NotCoordinator));
        assert_eq!(run(&mut state, write(2)), Ok(()));
        run(&mut state, claim(2)).unwrap();
        assert_eq!(run(&mut state, write(3)), Err(ErrorKind::NotCoordinator));
        assert_eq!(state.consumer_group("cg").unwrap().group.change, 2);
    }
}
