//! The streams protocol's requests as the shard's `Groups` answer them: a group new to the
//! shard is claimed first (so one broker of a cluster coordinates it), its memory and timer
//! follow each change.

use std::collections::BTreeMap;
use std::time::Instant;

use shoal_coordinator::TopicsView;

use super::group::{Member, StreamsAnswer, StreamsHeartbeat};
use super::registry::StreamsSettings;
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
        self.claim(group_id).await?;
        if !self.streams.contains(group_id) {
            let others = self.classic.borrow().len() + self.consumer.len() + self.share.len();
            self.streams.may_create(&request, others)?;
        }
        if request.member_epoch == 0 && !self.has_room_for(request.memory_bytes()) {
            return Err(GroupError::TooManyGroups);
        }
        let answer = self.streams.heartbeat(group_id, request, topics, settings);
        self.after_streams_change(group_id);
        answer
    }

    /// After a streams group's request or expiry: its memory, and its next check armed.
    pub(in crate::groups) fn after_streams_change(&self, group_id: &str) {
        self.account(group_id, self.streams.memory_bytes(group_id));
        if let Some(next) = self.streams.next_check(group_id) {
            self.arm(group_id, next);
        }
    }

    pub(in crate::groups) fn expire_streams_members(&self, group_id: &str, now: Instant) {
        self.streams.expire(group_id, now);
        self.after_streams_change(group_id);
    }

    pub fn describe_streams_group(&self, group_id: &str) -> Option<StreamsGroupDescription> {
        self.drop_groups_if_lease_lapsed();
        self.streams.with(group_id, |g| StreamsGroupDescription {
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
        })
    }
}
