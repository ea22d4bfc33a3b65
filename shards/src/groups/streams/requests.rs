//! The streams protocol's requests as the shard's `Groups` answer them: a group new to the
//! shard is claimed first (so one broker of a cluster coordinates it, and a group the log
//! holds is read back), each change is stored in the coordinator's log before the member is
//! answered, and its memory and timer follow.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Instant;

use shoal_coordinator::commands::WriteStreamsGroup;
use shoal_coordinator::{GroupClaim, TopicsView};

use super::group::{Member, StreamsAnswer, StreamsHeartbeat};
use super::registry::StreamsSettings;
use super::stored::StreamsChange;
use super::tasks::Tasks;
use super::topology::{Configured, Topology};
use crate::groups::{GroupError, Groups};

/// A streams group as StreamsGroupDescribe reports it.
#[derive(Debug, Clone)]
pub struct StreamsGroupDescription {
    pub state: &'static str,
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub topology: Option<Topology>,
    pub configured: Configured,
    pub members: Vec<(String, Member)>,
    pub targets: BTreeMap<String, Tasks>,
}

impl Groups {
    /// StreamsGroupHeartbeat.
    pub async fn streams_heartbeat(
        &self,
        group_id: &str,
        request: StreamsHeartbeat,
        topics: &TopicsView,
        settings: StreamsSettings,
    ) -> Result<StreamsAnswer, GroupError> {
        self.drop_groups_if_lease_lapsed();
        if self.share.contains(group_id) || self.consumer.contains(group_id) {
            return Err(GroupError::GroupIdNotFound);
        }
        if self
            .classic
            .borrow()
            .get(group_id)
            .is_some_and(|g| !g.is_empty())
        {
            // Kafka moves a classic group to the streams protocol only when it is empty.
            return Err(GroupError::GroupIdNotFound);
        }
        let claim = self.claim(group_id).await?;
        if !self.streams.contains(group_id) {
            self.may_create_on_heartbeat(request.member_epoch)?;
        }
        if request.member_epoch == 0 && !self.has_room_for(request.memory_bytes()) {
            return Err(GroupError::TooManyGroups);
        }
        let (answer, change) = self.streams.heartbeat(group_id, request, topics, settings);
        self.after_streams_change(group_id);
        self.store_streams_change(group_id, claim, change).await?;
        answer
    }

    /// Writes what a streams group's last request changed, under `claim`, before the member
    /// is answered. On failure the group is dropped here with the claim: the next request
    /// claims it again and reads back what the log holds.
    async fn store_streams_change(
        &self,
        group_id: &str,
        claim: GroupClaim,
        change: Option<StreamsChange>,
    ) -> Result<(), GroupError> {
        let Some((group, members)) = change else {
            return Ok(());
        };
        let write = WriteStreamsGroup {
            claim,
            group,
            members,
        };
        self.write_under_claim(group_id, claim, write).await
    }

    /// After a streams group's request or expiry: its memory, and its next check armed.
    pub(in crate::groups) fn after_streams_change(&self, group_id: &str) {
        self.account(group_id, self.streams.memory_bytes(group_id));
        if let Some(next) = self.streams.next_check(group_id) {
            self.arm(group_id, next);
        }
    }

    /// Sessions and revocations that ran out end now; what that changed is stored in the
    /// background under the claim held (a failed write drops the group here, to be read back
    /// from the log).
    pub(in crate::groups) fn expire_streams_members(self: &Rc<Self>, group_id: &str, now: Instant) {
        let change = self.streams.expire(group_id, now);
        self.after_streams_change(group_id);
        let (Some(change), Some(claim)) = (change, self.claims.held(group_id)) else {
            return;
        };
        let groups = self.clone();
        let group_id = group_id.to_string();
        glommio::spawn_local(async move {
            let _ = groups
                .store_streams_change(&group_id, claim, Some(change))
                .await;
        })
        .detach();
    }

    /// A streams group as held here, or as the log holds it (claimed and read back).
    pub async fn describe_streams_group(
        &self,
        group_id: &str,
    ) -> Result<Option<StreamsGroupDescription>, GroupError> {
        self.drop_groups_if_lease_lapsed();
        self.restore_if_stored(group_id).await?;
        Ok(self.streams.with(group_id, |g| StreamsGroupDescription {
            state: g.state(),
            group_epoch: g.group_epoch,
            assignment_epoch: g.assignment_epoch,
            topology: g.topology.clone(),
            configured: g.configured.clone(),
            members: g
                .members
                .iter()
                .map(|(id, m)| (id.clone(), m.clone()))
                .collect(),
            targets: g.target.clone(),
        }))
    }
}
