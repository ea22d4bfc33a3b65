//! Streams groups (KIP-1071) as their coordinating brokers recorded them: the group's epochs
//! and topology, and each member whole. A broker that claims a group reads it back and
//! continues it, so members keep their epochs and tasks across a restart or a move of the
//! group. Only the claim's holder writes (`WriteStreamsGroup`); a group whose last member left
//! is forgotten (its committed offsets stay in `groups`).

use std::collections::BTreeMap;

use shoal_protocol::records::{AnyRecord, ShoalStreamsGroupRecord, ShoalStreamsMemberRecord};

use super::stored_groups::{entries, GroupRecord, MemberRecord, StoredGroup};
use super::CoordinatorState;

/// One streams group as stored: its latest record (carrying the topology last written) and
/// its members'.
pub type StoredStreamsGroup = StoredGroup<ShoalStreamsGroupRecord, ShoalStreamsMemberRecord>;

/// The records hold no floating point numbers: equality is total.
impl Eq for StoredStreamsGroup {}

impl GroupRecord for ShoalStreamsGroupRecord {
    /// With its topology, which a change carries only when it changed.
    fn whole(&self) -> Self {
        let mut whole = self.clone();
        whole.topology_changed = true;
        whole
    }
}

impl MemberRecord for ShoalStreamsMemberRecord {
    fn member_id(&self) -> &str {
        &self.member_id
    }

    fn removed(&self) -> bool {
        self.removed
    }
}

impl CoordinatorState {
    pub fn streams_group(&self, group: &str) -> Option<StoredStreamsGroup> {
        self.streams_groups.get(group).cloned()
    }

    /// A group's record and the member records that follow it in its entry. A record that
    /// does not carry the topology keeps the one stored.
    pub(super) fn apply_streams_group<'a>(
        &mut self,
        group: &ShoalStreamsGroupRecord,
        members: impl Iterator<Item = &'a ShoalStreamsMemberRecord>,
    ) {
        if group.deleted {
            self.streams_groups.remove(&group.group_id);
            return;
        }
        let stored = self
            .streams_groups
            .entry(group.group_id.clone())
            .or_insert_with(|| StoredStreamsGroup {
                group: group.clone(),
                members: BTreeMap::new(),
            });
        let mut next = group.clone();
        if !group.topology_changed {
            next.topology_changed = stored.group.topology_changed;
            next.topology_epoch = stored.group.topology_epoch;
            next.subtopologies = std::mem::take(&mut stored.group.subtopologies);
        }
        stored.group = next;
        stored.apply_members(members);
    }

    /// DeleteGroups and offset expiry forget the group's membership with its offsets.
    pub(super) fn forget_streams_group(&mut self, group: &str) {
        self.streams_groups.remove(group);
    }

    /// Every group's records, for a snapshot, sorted by group.
    pub(super) fn streams_group_entries(&self) -> Vec<Vec<AnyRecord>> {
        entries(&self.streams_groups)
    }
}

#[cfg(test)]
mod tests {
    use shoal_protocol::records::ShoalStreamsSubtopology;

    use super::*;
    use crate::entry::Entry;

    fn group(change: i64, topology: Option<i32>) -> ShoalStreamsGroupRecord {
        ShoalStreamsGroupRecord {
            group_id: "sg".into(),
            change,
            group_epoch: change as i32,
            topology_changed: topology.is_some(),
            topology_epoch: topology.unwrap_or(0),
            subtopologies: topology
                .map(|_| {
                    vec![ShoalStreamsSubtopology {
                        id: "0".into(),
                        source_topics: vec!["in".into()],
                        ..Default::default()
                    }]
                })
                .unwrap_or_default(),
            ..Default::default()
        }
    }

    fn member(id: &str, epoch: i32, removed: bool) -> AnyRecord {
        ShoalStreamsMemberRecord {
            member_id: id.into(),
            removed,
            member_epoch: epoch,
            ..Default::default()
        }
        .into()
    }

    fn change(group: ShoalStreamsGroupRecord, members: Vec<AnyRecord>) -> Entry {
        let mut records = vec![group.into()];
        records.extend(members);
        Entry::new(1, records)
    }

    #[test]
    fn changes_keep_the_topology_and_a_snapshot_carries_it() {
        let mut state = CoordinatorState::default();
        state.apply(&change(group(1, Some(3)), vec![member("a", 1, false)]));
        state.apply(&change(
            group(2, None),
            vec![member("b", 2, false), member("a", 0, true)],
        ));
        let stored = state.streams_group("sg").expect("stored");
        assert_eq!(stored.group.change, 2);
        assert_eq!(
            (
                stored.group.topology_epoch,
                stored.group.subtopologies.len()
            ),
            (3, 1)
        );
        assert_eq!(stored.members.keys().collect::<Vec<_>>(), ["b"]);
        let mut copy = CoordinatorState::default();
        copy.apply(&Entry::new(1, stored.records()));
        assert_eq!(copy.streams_group("sg"), Some(stored));
        let mut deleted = group(3, None);
        deleted.deleted = true;
        state.apply(&change(deleted, vec![]));
        assert_eq!(state.streams_group("sg"), None);
    }
}
