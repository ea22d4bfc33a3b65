//! The consumer-protocol groups one shard owns (beside its classic groups, in `Groups`).
//! Members are held in memory only, as classic members are: after a restart they rejoin.
//! Sessions are checked at each heartbeat of the group, so a dead member's partitions move
//! when another member next heartbeats (every few seconds in a live group).

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use regex::Regex;
use shoal_coordinator::TopicsView;
use uuid::Uuid;

use super::assignor::Assignor;
use super::group::{ConsumerGroup, Heartbeat, HeartbeatAnswer, Topics, JOIN_EPOCH};
use crate::groups::messages::{GroupListing, MemberRef};
use crate::groups::{GroupConfig, GroupError};

impl Topics for TopicsView {
    fn lookup(&self, name: &str) -> Option<(Uuid, i32)> {
        self.by_name(name).map(|t| (t.id, t.partitions))
    }

    fn version(&self) -> u64 {
        TopicsView::version(self)
    }

    fn matching(&self, regex: &Regex) -> Vec<String> {
        self.all()
            .filter(|t| regex.is_match(&t.name))
            .map(|t| t.name.clone())
            .collect()
    }
}

pub struct ConsumerGroups {
    groups: RefCell<HashMap<String, ConsumerGroup>>,
    config: GroupConfig,
}

impl ConsumerGroups {
    pub fn new(config: GroupConfig) -> ConsumerGroups {
        ConsumerGroups {
            groups: RefCell::new(HashMap::new()),
            config,
        }
    }

    pub fn contains(&self, group_id: &str) -> bool {
        self.groups.borrow().contains_key(group_id)
    }

    pub fn remove(&self, group_id: &str) {
        self.groups.borrow_mut().remove(group_id);
    }

    pub fn clear(&self) {
        self.groups.borrow_mut().clear();
    }

    pub fn len(&self) -> usize {
        self.groups.borrow().len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.borrow().is_empty()
    }

    /// Whether a heartbeat may create this group (the caller claims it first): a join only,
    /// within the shard's bound on groups (`others`: the classic groups it holds).
    pub fn may_create(&self, request: &Heartbeat, others: usize) -> Result<(), GroupError> {
        if request.member_epoch != JOIN_EPOCH {
            // A member of a group this broker no longer knows (restarted): it rejoins.
            return Err(GroupError::UnknownMemberId);
        }
        match self.len() + others >= self.config.max_groups_per_shard {
            true => Err(GroupError::TooManyGroups),
            false => Ok(()),
        }
    }

    pub fn heartbeat(
        &self,
        group_id: &str,
        request: Heartbeat,
        topics: &TopicsView,
    ) -> Result<HeartbeatAnswer, GroupError> {
        // What a member's subscription may hold, as a classic member's metadata may.
        let names = request.subscribed_topic_names.iter().flatten();
        let subscription_bytes: usize = names.map(String::len).sum::<usize>()
            + request
                .subscribed_topic_regex
                .as_ref()
                .map_or(0, String::len);
        if subscription_bytes > self.config.max_member_metadata_bytes {
            return Err(GroupError::InvalidRequest);
        }
        let now = Instant::now();
        let mut groups = self.groups.borrow_mut();
        let group = groups.entry(group_id.to_string()).or_insert_with(|| {
            ConsumerGroup::new(
                Assignor::Uniform,
                self.config.max_size,
                Duration::from_millis(self.config.consumer_session_timeout_ms),
            )
        });
        group.expire(now);
        let answer = group.heartbeat(request, topics, now);
        if group.members.is_empty() {
            groups.remove(group_id);
        }
        answer
    }

    pub fn list(&self) -> Vec<GroupListing> {
        self.groups
            .borrow()
            .iter()
            .map(|(id, group)| GroupListing {
                group_id: id.clone(),
                protocol_type: "consumer".to_string(),
                state: group.state(),
                group_type: "consumer",
            })
            .collect()
    }

    /// A commit by a member of a consumer group: its epoch must be its current one.
    pub fn validate_commit(&self, m: &MemberRef) -> Result<(), GroupError> {
        let groups = self.groups.borrow();
        let group = groups.get(&m.group_id).ok_or(GroupError::UnknownMemberId)?;
        let member = group
            .members
            .get(&m.member_id)
            .ok_or(GroupError::UnknownMemberId)?;
        match member.assignment.epoch == m.generation_id {
            true => Ok(()),
            false => Err(GroupError::StaleMemberEpoch),
        }
    }
}
