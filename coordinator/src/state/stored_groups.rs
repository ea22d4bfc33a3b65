//! A group of the KIP-848 kind (consumer protocol, streams) as its coordinating brokers
//! recorded it: the group's own record and each member's, whole, by member id. A change is the
//! group's record then the records of the members that changed (a member removed says so).

use std::collections::{BTreeMap, HashMap};

use shoal_protocol::records::AnyRecord;

/// A member's record: whose it is, and whether it says the member left.
pub trait MemberRecord: Clone + Into<AnyRecord> {
    fn member_id(&self) -> &str;
    fn removed(&self) -> bool;
}

/// A group's record as a snapshot carries it (whole, where a change may carry part of it).
pub trait GroupRecord: Clone + Into<AnyRecord> {
    fn whole(&self) -> Self {
        self.clone()
    }
}

/// One group as stored: its record and its members' by member id.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredGroup<G, M> {
    pub group: G,
    pub members: BTreeMap<String, M>,
}

impl<G: GroupRecord, M: MemberRecord> StoredGroup<G, M> {
    /// The records that recreate it: the group's, then every member's.
    pub fn records(&self) -> Vec<AnyRecord> {
        std::iter::once(self.group.whole().into())
            .chain(self.members.values().map(|m| m.clone().into()))
            .collect()
    }

    /// The members' records of a change: each replaces the member's, or removes it.
    pub(super) fn apply_members<'a>(&mut self, members: impl Iterator<Item = &'a M>)
    where
        M: 'a,
    {
        for member in members {
            match member.removed() {
                true => self.members.remove(member.member_id()),
                false => self
                    .members
                    .insert(member.member_id().to_string(), member.clone()),
            };
        }
    }
}

/// Every group's records, for a snapshot, sorted by group.
pub(super) fn entries<G: GroupRecord, M: MemberRecord>(
    groups: &HashMap<String, StoredGroup<G, M>>,
) -> Vec<Vec<AnyRecord>> {
    let mut ids: Vec<&String> = groups.keys().collect();
    ids.sort();
    ids.into_iter().map(|g| groups[g].records()).collect()
}
