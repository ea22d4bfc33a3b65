//! The consumer-protocol groups one shard owns (beside its classic groups, in `Groups`), as
//! the shard's timer and the members' heartbeats change them; each change comes back as the
//! records to store (`GroupChange`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use regex::Regex;
use shoal_coordinator::TopicsView;
use uuid::Uuid;

use super::assignor::Assignor;
use super::classic::{ClassicAssignment, ClassicSeed};
use super::description::ConsumerGroupDescription;
use super::group::{ConsumerGroup, Heartbeat, HeartbeatAnswer, TopicAccess, Topics};
use super::stored::GroupChange;
use crate::groups::classic::messages::{
    GroupListing, JoinRequest, JoinResponse, LeavingMember, MemberRef, SyncRequest,
};
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

    fn name_of(&self, id: Uuid) -> Option<String> {
        self.by_id(&id).map(|t| t.name.clone())
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
    /// The topics as the last request saw them: a group that goes back to the classic
    /// protocol on the timer (its last consumer-protocol member timed out) names its
    /// members' partitions with them.
    last_topics: RefCell<Arc<TopicsView>>,
}

/// A group that went back to the classic protocol: its classic members, at their newest
/// epoch as the generation (the consumer-protocol group was stored as deleted).
#[derive(Debug)]
pub struct Downgrade {
    pub generation: i32,
    pub members: Vec<ClassicSeed>,
}

/// What a request or the timer did to a group: the records to store, and the group's
/// classic members if it went back to the classic protocol.
pub type Changed = (Option<GroupChange>, Option<Downgrade>);

impl ConsumerGroups {
    pub fn new(config: GroupConfig) -> ConsumerGroups {
        ConsumerGroups {
            groups: RefCell::new(HashMap::new()),
            config,
            last_topics: RefCell::new(Arc::new(TopicsView::default())),
        }
    }

    fn new_group(&self) -> ConsumerGroup {
        ConsumerGroup::new(
            Assignor::Uniform,
            self.config.max_size,
            Duration::from_millis(self.config.consumer_session_timeout_ms),
        )
    }

    /// After a change: a group left with classic members only goes back to the classic
    /// protocol (when the policy allows); what changed is taken to be stored, and a group
    /// left empty is dropped.
    fn finish(&self, groups: &mut HashMap<String, ConsumerGroup>, group_id: &str) -> Changed {
        let Some(group) = groups.get_mut(group_id) else {
            return (None, None);
        };
        let mut downgrade = None;
        if self.config.consumer_migration_policy.downgrades() && group.only_classic_members() {
            // Kafka's classic group takes the group epoch as its generation; the members'
            // own epoch keeps their commits valid until they rejoin (a commit refused there
            // is a record read again).
            let epochs = group.members.values().map(|m| m.assignment.epoch);
            let generation = epochs.max().unwrap_or(group.group_epoch);
            let members = group.into_classic(&**self.last_topics.borrow());
            downgrade = Some(Downgrade {
                generation,
                members,
            });
        }
        let change = group.take_change(group_id);
        if group.members.is_empty() {
            groups.remove(group_id);
        }
        (change, downgrade)
    }

    /// A classic group with members becomes this consumer-protocol group (Kafka's online
    /// upgrade); false when a member's subscription or assignment does not parse.
    pub fn upgrade(
        &self,
        group_id: &str,
        generation: i32,
        members: Vec<ClassicSeed>,
        topics: &TopicsView,
    ) -> bool {
        let now = Instant::now();
        let group = ConsumerGroup::from_classic(self.new_group(), generation, members, topics, now);
        let Some(group) = group else {
            return false;
        };
        self.groups.borrow_mut().insert(group_id.to_string(), group);
        true
    }

    /// A classic member's JoinGroup to a consumer-protocol group.
    pub fn classic_join(
        &self,
        request: &JoinRequest,
        topics: &TopicsView,
    ) -> (Result<JoinResponse, GroupError>, Changed) {
        if let Err(error) = self.config.check_join(request) {
            return (Err(error), (None, None));
        }
        *self.last_topics.borrow_mut() = request.topics.clone();
        let now = Instant::now();
        let mut groups = self.groups.borrow_mut();
        let Some(group) = groups.get_mut(&request.group_id) else {
            return (Err(GroupError::UnknownMemberId), (None, None));
        };
        group.expire(now);
        let answer = group.classic_join(request, topics, now);
        (answer, self.finish(&mut groups, &request.group_id))
    }

    /// A classic member's SyncGroup to a consumer-protocol group.
    pub fn classic_sync(
        &self,
        request: &SyncRequest,
        topics: &TopicsView,
    ) -> Result<ClassicAssignment, GroupError> {
        let mut groups = self.groups.borrow_mut();
        let group = groups
            .get_mut(&request.member.group_id)
            .ok_or(GroupError::UnknownMemberId)?;
        group.classic_sync(
            &request.member,
            request.protocol_type.as_deref(),
            request.protocol_name.as_deref(),
            topics,
            Instant::now(),
        )
    }

    /// A classic member's Heartbeat to a consumer-protocol group.
    pub fn classic_heartbeat(&self, m: &MemberRef) -> Result<(), GroupError> {
        let mut groups = self.groups.borrow_mut();
        let group = groups
            .get_mut(&m.group_id)
            .ok_or(GroupError::UnknownMemberId)?;
        group.classic_heartbeat(m, Instant::now())
    }

    /// LeaveGroup for classic members of a consumer-protocol group.
    pub fn classic_leave(
        &self,
        group_id: &str,
        leaving: &[LeavingMember],
    ) -> (Vec<Option<GroupError>>, Changed) {
        let mut groups = self.groups.borrow_mut();
        let Some(group) = groups.get_mut(group_id) else {
            return (
                vec![Some(GroupError::UnknownMemberId); leaving.len()],
                (None, None),
            );
        };
        let outcomes = group.classic_leave(leaving);
        (outcomes, self.finish(&mut groups, group_id))
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

    /// The member's answer, and what the heartbeat changed in the group (to be stored
    /// before the answer goes out).
    pub fn heartbeat(
        &self,
        group_id: &str,
        request: Heartbeat,
        topics: &Arc<TopicsView>,
        session_timeout: Duration,
    ) -> (Result<HeartbeatAnswer, GroupError>, Changed) {
        // What a member's subscription may hold, as a classic member's metadata may.
        if request.subscription_bytes() > self.config.max_member_metadata_bytes {
            return (Err(GroupError::InvalidRequest), (None, None));
        }
        *self.last_topics.borrow_mut() = topics.clone();
        let now = Instant::now();
        let mut groups = self.groups.borrow_mut();
        let group = groups
            .entry(group_id.to_string())
            .or_insert_with(|| self.new_group());
        group.session_timeout = session_timeout;
        group.expire(now);
        let answer = group.heartbeat(request, &**topics, now);
        (answer, self.finish(&mut groups, group_id))
    }

    /// Ends the sessions and revocations of the group's members that ran out (the shard's
    /// timer calls this at the group's next check); what that changed, to be stored.
    pub fn expire(&self, group_id: &str, now: Instant) -> Changed {
        let mut groups = self.groups.borrow_mut();
        let Some(group) = groups.get_mut(group_id) else {
            return (None, None);
        };
        group.expire(now);
        self.finish(&mut groups, group_id)
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

    /// A commit by a member of a consumer group: its epoch must be its current one (a
    /// classic member's generation must, as in a classic group).
    pub fn validate_commit(&self, m: &MemberRef) -> Result<(), GroupError> {
        let groups = self.groups.borrow();
        let group = groups.get(&m.group_id).ok_or(GroupError::UnknownMemberId)?;
        let member = group
            .members
            .get(&m.member_id)
            .ok_or(GroupError::UnknownMemberId)?;
        match (member.assignment.epoch == m.generation_id, &member.classic) {
            (true, _) => Ok(()),
            (false, Some(_)) => Err(GroupError::IllegalGeneration),
            (false, None) => Err(GroupError::StaleMemberEpoch),
        }
    }
}
