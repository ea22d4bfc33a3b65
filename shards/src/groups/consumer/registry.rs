//! The consumer-protocol groups one shard owns (beside its classic groups, in `Groups`), as
//! the shard's timer and the members' heartbeats change them; each change comes back as the
//! records to store (`GroupChange`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use regex::Regex;
use shoal_coordinator::TopicsView;
use uuid::Uuid;

use super::assignor::Assignor;
use super::description::ConsumerGroupDescription;
use super::group::{ConsumerGroup, Heartbeat, HeartbeatAnswer, TopicAccess, Topics, JOIN_EPOCH};
use super::stored::GroupChange;
use crate::groups::messages::{GroupListing, MemberRef};
use crate::groups::{GroupConfig, GroupError};
use shoal_coordinator::acl::{self, Operation, ResourceType};
use shoal_coordinator::state::consumer_groups::StoredConsumerGroup;

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

    fn describable(&self, access: &TopicAccess, name: &str) -> bool {
        let decision = acl::decide(
            self.acls(),
            &access.principal,
            &access.host,
            Operation::Describe,
            ResourceType::Topic,
            name,
        );
        decision.allows(access.allow_if_no_acl)
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

    /// Drops every group; their ids.
    pub fn clear(&self) -> Vec<String> {
        self.groups.borrow_mut().drain().map(|(id, _)| id).collect()
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

    /// The member's answer, and what the heartbeat changed in the group (to be stored
    /// before the answer goes out).
    pub fn heartbeat(
        &self,
        group_id: &str,
        request: Heartbeat,
        topics: &TopicsView,
        session_timeout: Duration,
    ) -> (Result<HeartbeatAnswer, GroupError>, Option<GroupChange>) {
        // What a member's subscription may hold, as a classic member's metadata may.
        if request.subscription_bytes() > self.config.max_member_metadata_bytes {
            return (Err(GroupError::InvalidRequest), None);
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
        group.session_timeout = session_timeout;
        group.expire(now);
        let answer = group.heartbeat(request, topics, now);
        let change = group.take_change(group_id);
        if group.members.is_empty() {
            groups.remove(group_id);
        }
        (answer, change)
    }

    /// Ends the sessions and revocations of the group's members that ran out (the shard's
    /// timer calls this at the group's next check); what that changed, to be stored.
    pub fn expire(&self, group_id: &str, now: Instant) -> Option<GroupChange> {
        let mut groups = self.groups.borrow_mut();
        let group = groups.get_mut(group_id)?;
        group.expire(now);
        let change = group.take_change(group_id);
        if group.members.is_empty() {
            groups.remove(group_id);
        }
        change
    }

    /// When the group's sessions must next be checked (None: no such group).
    pub fn next_check(&self, group_id: &str) -> Option<Instant> {
        let groups = self.groups.borrow();
        Some(groups.get(group_id)?.next_check(Instant::now()))
    }

    pub fn memory_bytes(&self, group_id: &str) -> usize {
        self.groups
            .borrow()
            .get(group_id)
            .map_or(0, ConsumerGroup::memory_bytes)
    }

    /// The group as the log holds it, read back by a broker that has just claimed it.
    pub fn restore(&self, group_id: &str, stored: &StoredConsumerGroup) {
        let group = ConsumerGroup::restore(
            stored,
            Assignor::Uniform,
            self.config.max_size,
            Duration::from_millis(self.config.consumer_session_timeout_ms),
            Instant::now(),
        );
        self.groups.borrow_mut().insert(group_id.to_string(), group);
    }

    /// The names of the topics a consumer-protocol group subscribes to, by name or by
    /// expression (None: no such group here).
    pub fn subscribed_topics(&self, group_id: &str, topics: &TopicsView) -> Option<Vec<String>> {
        let groups = self.groups.borrow();
        let group = groups.get(group_id)?;
        let mut names: Vec<String> = group
            .members
            .values()
            .flat_map(|m| {
                let by_regex = m.regex.iter().flat_map(|(_, r)| topics.matching(r));
                m.subscribed.iter().cloned().chain(by_regex)
            })
            .collect();
        names.sort();
        names.dedup();
        Some(names)
    }

    pub fn describe(&self, group_id: &str) -> Option<ConsumerGroupDescription> {
        self.groups
            .borrow()
            .get(group_id)
            .map(ConsumerGroup::describe)
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
