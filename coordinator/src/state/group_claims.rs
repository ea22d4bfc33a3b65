//! Which broker coordinates each consumer group. Membership lives in the coordinating
//! broker's memory, so two brokers may each believe they coordinate a group for a while (one
//! paused past its lease, views of the cluster that differ). The log settles it: a broker
//! claims a group before writing for it, every group write carries the claim it was decided
//! under, and a write whose claim is no longer the latest is refused, so a broker that lost
//! the group cannot overwrite what the new coordinator accepted.

use shoal_protocol::records::ShoalGroupClaimedRecord;

use super::groups::GROUP_ID_MAX_BYTES;
use super::CoordinatorState;
use crate::entry::Entry;
use crate::messages::GroupClaim;
use crate::ErrorKind;

impl CoordinatorState {
    /// The group's latest claim, if any broker has claimed it.
    pub fn group_claim(&self, group: &str) -> Option<GroupClaim> {
        self.group_claims.get(group).copied()
    }

    /// Whether `claim` is the group's latest: writes decided under any other are refused.
    pub fn holds_group_claim(&self, group: &str, claim: &GroupClaim) -> bool {
        self.group_claims.get(group) == Some(claim)
    }

    /// A claim for broker `node_id` (process `incarnation`) that supersedes the group's
    /// latest, and its record.
    pub fn claim_group(
        &self,
        group: &str,
        node_id: i32,
        incarnation: i64,
        now_ms: i64,
    ) -> Result<(GroupClaim, Entry), ErrorKind> {
        if group.is_empty() || group.len() > GROUP_ID_MAX_BYTES {
            return Err(ErrorKind::InvalidGroupId);
        }
        let epoch = self.group_claims.get(group).map_or(0, |c| c.epoch) + 1;
        let claim = GroupClaim {
            node_id,
            incarnation,
            epoch,
        };
        Ok((claim, Entry::of(now_ms, claimed_record(group, &claim))))
    }

    pub(super) fn apply_group_claimed(&mut self, r: &ShoalGroupClaimedRecord) {
        let claim = GroupClaim {
            node_id: r.node_id,
            incarnation: r.incarnation,
            epoch: r.epoch,
        };
        self.group_claims.insert(r.group_id.clone(), claim);
    }

    /// A deleted group's claim goes with its offsets (so the map stays as small as the
    /// groups); the incarnation keeps a later claim of the same epoch from matching an old one.
    pub(super) fn forget_group_claim(&mut self, group: &str) {
        self.group_claims.remove(group);
    }

    /// Every claim, for a snapshot, sorted by group.
    pub(super) fn group_claim_records(&self) -> Vec<ShoalGroupClaimedRecord> {
        let mut groups: Vec<&String> = self.group_claims.keys().collect();
        groups.sort();
        groups
            .into_iter()
            .map(|g| claimed_record(g, &self.group_claims[g]))
            .collect()
    }
}

fn claimed_record(group: &str, claim: &GroupClaim) -> ShoalGroupClaimedRecord {
    ShoalGroupClaimedRecord {
        group_id: group.to_string(),
        node_id: claim.node_id,
        incarnation: claim.incarnation,
        epoch: claim.epoch,
    }
}
