//! The streams groups one shard owns (beside its other groups, in `Groups`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use shoal_coordinator::TopicsView;

use shoal_coordinator::state::streams_groups::StoredStreamsGroup;

use super::group::{StreamsAnswer, StreamsGroup, StreamsHeartbeat};
use super::stored::StreamsChange;
use crate::groups::classic::messages::{GroupListing, MemberRef};
use crate::groups::{GroupConfig, GroupError};

/// A streams group's settings, from its GROUP configs or the broker's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamsSettings {
    pub session_timeout_ms: u64,
    pub standby_replicas: usize,
}

pub struct StreamsGroups {
    groups: RefCell<HashMap<String, StreamsGroup>>,
    config: GroupConfig,
}

impl StreamsGroups {
    pub fn new(config: GroupConfig) -> StreamsGroups {
        StreamsGroups {
            groups: RefCell::new(HashMap::new()),
            config,
        }
    }

    pub fn contains(&self, group_id: &str) -> bool {
        self.groups.borrow().contains_key(group_id)
    }

    pub fn len(&self) -> usize {
        self.groups.borrow().len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.borrow().is_empty()
    }

    pub fn remove(&self, group_id: &str) {
        self.groups.borrow_mut().remove(group_id);
    }

    /// Drops every group; their ids.
    pub fn clear(&self) -> Vec<String> {
        self.groups.borrow_mut().drain().map(|(id, _)| id).collect()
    }

    /// The member's answer, and what the heartbeat changed in the group (to be stored before
    /// the answer goes out); a group left without members is dropped.
    pub fn heartbeat(
        &self,
        group_id: &str,
        request: StreamsHeartbeat,
        topics: &TopicsView,
        settings: StreamsSettings,
    ) -> (Result<StreamsAnswer, GroupError>, Option<StreamsChange>) {
        let now = Instant::now();
        let mut groups = self.groups.borrow_mut();
        let group = groups.entry(group_id.to_string()).or_insert_with(|| {
            StreamsGroup::new(
                self.config.max_size,
                Duration::from_millis(settings.session_timeout_ms),
                settings.standby_replicas,
            )
        });
        group.session_timeout = Duration::from_millis(settings.session_timeout_ms);
        if group.standby_replicas != settings.standby_replicas {
            group.standby_replicas = settings.standby_replicas;
            group.group_epoch += 1;
        }
        group.expire(now);
        let answer = group.heartbeat(request, topics, now);
        let change = group.take_change(group_id);
        if group.members.is_empty() {
            groups.remove(group_id);
        }
        (answer, change)
    }

    /// Ends the sessions and revocations that ran out; what that changed, to be stored.
    pub fn expire(&self, group_id: &str, now: Instant) -> Option<StreamsChange> {
        let mut groups = self.groups.borrow_mut();
        let group = groups.get_mut(group_id)?;
        for id in group.expire(now) {
            tracing::info!(
                group = group_id,
                member = id,
                "a streams group member's session ended"
            );
        }
        let change = group.take_change(group_id);
        if group.members.is_empty() {
            groups.remove(group_id);
        }
        change
    }

    /// The group as the log holds it, read back by a broker that has just claimed it.
    pub fn restore(&self, group_id: &str, stored: &StoredStreamsGroup) {
        let group = StreamsGroup::restore(
            stored,
            self.config.max_size,
            Duration::from_millis(self.config.streams_session_timeout_ms),
            usize::from(self.config.streams_num_standby_replicas),
            Instant::now(),
        );
        self.groups.borrow_mut().insert(group_id.to_string(), group);
    }

    pub fn next_check(&self, group_id: &str) -> Option<Instant> {
        let groups = self.groups.borrow();
        Some(groups.get(group_id)?.next_check(Instant::now()))
    }

    pub fn memory_bytes(&self, group_id: &str) -> usize {
        self.groups
            .borrow()
            .get(group_id)
            .map_or(0, StreamsGroup::memory_bytes)
    }

    /// Runs `f` on the group (None: no such group here).
    pub fn with<T>(&self, group_id: &str, f: impl FnOnce(&StreamsGroup) -> T) -> Option<T> {
        self.groups.borrow().get(group_id).map(f)
    }

    pub fn list(&self) -> Vec<GroupListing> {
        self.groups
            .borrow()
            .iter()
            .map(|(id, group)| GroupListing {
                group_id: id.clone(),
                protocol_type: "streams".to_string(),
                state: group.state(),
                group_type: "streams",
            })
            .collect()
    }

    /// A commit by a member of a streams group (OffsetCommit or TxnOffsetCommit).
    pub fn validate_commit(&self, m: &MemberRef) -> Result<(), GroupError> {
        let groups = self.groups.borrow();
        let group = groups.get(&m.group_id).ok_or(GroupError::UnknownMemberId)?;
        group.may_commit(&m.member_id, m.generation_id)
    }
}
