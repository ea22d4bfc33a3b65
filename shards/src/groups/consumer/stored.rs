//! A consumer-protocol group to and from the coordinator's records
//! (`ShoalConsumerGroupRecord` and its members' `ShoalConsumerMemberRecord`s), so a broker
//! that claims the group continues it: members keep their epochs, partitions and targets.
//! Deadlines are not stored: a restored member has a whole session (and rebalance timeout,
//! when revoking) from the moment its group is read back.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use shoal_coordinator::state::consumer_groups::StoredConsumerGroup;
use shoal_coordinator::TopicPartition;
use shoal_protocol::records::{
    ShoalClassicProtocol, ShoalConsumerGroupRecord, ShoalConsumerGroupTopic,
    ShoalConsumerMemberPartitions, ShoalConsumerMemberRecord,
};

use super::assignor::Assignor;
use super::group::{
    whole_name_regex, ClassicMember, ConsumerGroup, Member, TopicAccess, MEMBER_OVERHEAD_BYTES,
};
use super::reconcile::{MemberAssignment, MemberState};

/// What a change writes: the group's record and the records of the members it touched.
pub type GroupChange = (ShoalConsumerGroupRecord, Vec<ShoalConsumerMemberRecord>);

impl ConsumerGroup {
    /// The records of what changed since the last call (None: nothing did). A group left
    /// without members is recorded as deleted.
    pub fn take_change(&mut self, group_id: &str) -> Option<GroupChange> {
        let epochs = (self.group_epoch, self.assignment_epoch);
        if self.unstored_members.is_empty() && epochs == self.stored_epochs {
            return None;
        }
        self.stored_epochs = epochs;
        self.stored_changes += 1;
        let changed = std::mem::take(&mut self.unstored_members);
        let deleted = self.members.is_empty();
        let group = ShoalConsumerGroupRecord {
            group_id: group_id.to_string(),
            change: self.stored_changes,
            deleted,
            group_epoch: self.group_epoch,
            assignment_epoch: self.assignment_epoch,
            subscribed_topics: self
                .subscribed_topics
                .iter()
                .map(|(id, partitions)| ShoalConsumerGroupTopic {
                    topic_id: *id,
                    partitions: *partitions,
                })
                .collect(),
        };
        if deleted {
            self.member_bytes.clear();
            self.memory_bytes = 0;
            return Some((group, Vec::new()));
        }
        let members = changed
            .into_iter()
            .map(|id| {
                let record = match self.members.get(&id) {
                    Some(m) => member_record(&id, m, self.target.get(&id)),
                    None => ShoalConsumerMemberRecord {
                        member_id: id,
                        removed: true,
                        ..Default::default()
                    },
                };
                self.account_member(&record);
                record
            })
            .collect();
        Some((group, members))
    }

    /// What the group holds in memory, as of its last change: each member's record size
    /// (its ids, subscription and partitions) plus a fixed overhead.
    pub fn memory_bytes(&self) -> usize {
        self.memory_bytes
    }

    fn account_member(&mut self, record: &ShoalConsumerMemberRecord) {
        let before = match record.removed {
            true => self.member_bytes.remove(&record.member_id),
            false => self
                .member_bytes
                .insert(record.member_id.clone(), record_bytes(record)),
        };
        let after = self.member_bytes.get(&record.member_id).copied();
        self.memory_bytes = self.memory_bytes - before.unwrap_or(0) + after.unwrap_or(0);
    }

    /// The group as stored, its members' sessions starting `now`.
    pub fn restore(
        stored: &StoredConsumerGroup,
        default_assignor: Assignor,
        max_size: usize,
        session_timeout: Duration,
        now: Instant,
    ) -> ConsumerGroup {
        let mut group = ConsumerGroup::new(default_assignor, max_size, session_timeout);
        group.group_epoch = stored.group.group_epoch;
        group.assignment_epoch = stored.group.assignment_epoch;
        group.stored_epochs = (group.group_epoch, group.assignment_epoch);
        group.stored_changes = stored.group.change;
        group.subscribed_topics = stored
            .group
            .subscribed_topics
            .iter()
            .map(|t| (t.topic_id, t.partitions))
            .collect();
        for (id, r) in &stored.members {
            group.account_member(r);
            let member = restored_member(r, session_timeout, now);
            for p in member
                .assignment
                .assigned
                .iter()
                .chain(&member.assignment.revoking)
            {
                group.holders.insert(*p, id.clone());
            }
            group.target.insert(id.clone(), partitions_of(&r.target));
            group.unresolved.insert(id.clone());
            group.members.insert(id.clone(), member);
        }
        group
    }
}

fn member_record(
    id: &str,
    m: &Member,
    target: Option<&BTreeSet<TopicPartition>>,
) -> ShoalConsumerMemberRecord {
    ShoalConsumerMemberRecord {
        member_id: id.to_string(),
        removed: false,
        instance_id: m.instance_id.clone(),
        rack_id: m.rack_id.clone(),
        client_id: m.client_id.clone(),
        client_host: m.client_host.clone(),
        principal: m.access.as_ref().map(|a| a.principal.clone()),
        acl_host: m
            .access
            .as_ref()
            .map(|a| a.host.clone())
            .unwrap_or_default(),
        allow_if_no_acl: m.access.as_ref().is_some_and(|a| a.allow_if_no_acl),
        rebalance_timeout_ms: i32::try_from(m.rebalance_timeout.as_millis()).unwrap_or(i32::MAX),
        subscribed_topic_names: m.subscribed.iter().cloned().collect(),
        subscribed_topic_regex: m.regex.as_ref().map(|(e, _)| e.clone()),
        server_assignor: m.server_assignor.clone(),
        state: state_code(m.assignment.state),
        member_epoch: m.assignment.epoch,
        previous_member_epoch: m.previous_epoch,
        left_statically: m.left_statically,
        assigned: records_of(&m.assignment.assigned),
        revoking: records_of(&m.assignment.revoking),
        target: target.map(records_of).unwrap_or_default(),
        classic_protocols: m
            .classic
            .iter()
            .flat_map(|c| &c.protocols)
            .map(|(name, metadata)| ShoalClassicProtocol {
                name: name.clone(),
                metadata: metadata.to_vec(),
            })
            .collect(),
        classic_session_timeout_ms: m.classic.as_ref().map_or(0, |c| {
            i32::try_from(c.session_timeout.as_millis()).unwrap_or(i32::MAX)
        }),
    }
}

fn restored_member(r: &ShoalConsumerMemberRecord, session: Duration, now: Instant) -> Member {
    let state = state_of(r.state);
    let classic = (!r.classic_protocols.is_empty()).then(|| ClassicMember {
        session_timeout: Duration::from_millis(r.classic_session_timeout_ms.max(0) as u64),
        protocols: r
            .classic_protocols
            .iter()
            .map(|p| (p.name.clone(), bytes::Bytes::from(p.metadata.clone())))
            .collect(),
    });
    let session = classic.as_ref().map_or(session, |c| c.session_timeout);
    let rebalance_timeout = Duration::from_millis(r.rebalance_timeout_ms.max(0) as u64);
    Member {
        instance_id: r.instance_id.clone(),
        rack_id: r.rack_id.clone(),
        client_id: r.client_id.clone(),
        client_host: r.client_host.clone(),
        access: r.principal.as_ref().map(|principal| TopicAccess {
            principal: principal.clone(),
            host: r.acl_host.clone(),
            allow_if_no_acl: r.allow_if_no_acl,
        }),
        rebalance_timeout,
        subscribed: r.subscribed_topic_names.iter().cloned().collect(),
        // Stored only after it compiled here; should it not now, the member matches nothing
        // by expression until it sends it again.
        regex: r
            .subscribed_topic_regex
            .as_ref()
            .and_then(|e| whole_name_regex(e).ok().map(|r| (e.clone(), r))),
        server_assignor: r.server_assignor.clone(),
        assignment: MemberAssignment {
            state,
            epoch: r.member_epoch,
            assigned: partitions_of(&r.assigned),
            revoking: partitions_of(&r.revoking),
        },
        previous_epoch: r.previous_member_epoch,
        session_deadline: now + session,
        revocation_deadline: (state == MemberState::UnrevokedPartitions)
            .then_some(now + rebalance_timeout),
        left_statically: r.left_statically,
        classic: classic.map(Box::new),
    }
}

/// A member's memory, estimated from its record: strings, partitions (held three ways:
/// assigned or revoking, target, holders), and the maps' own overhead.
fn record_bytes(r: &ShoalConsumerMemberRecord) -> usize {
    const PARTITION_BYTES: usize = 3 * 32;
    let strings = r.member_id.len()
        + r.instance_id.as_ref().map_or(0, String::len)
        + r.rack_id.as_ref().map_or(0, String::len)
        + r.client_id.len()
        + r.client_host.len()
        + r.subscribed_topic_names
            .iter()
            .map(String::len)
            .sum::<usize>()
        + r.subscribed_topic_regex.as_ref().map_or(0, String::len)
        + r.server_assignor.as_ref().map_or(0, String::len)
        + r.classic_protocols
            .iter()
            .map(|p| p.name.len() + p.metadata.len())
            .sum::<usize>();
    let partitions: usize = [&r.assigned, &r.revoking, &r.target]
        .iter()
        .flat_map(|topics| topics.iter())
        .map(|t| t.partitions.len())
        .sum();
    MEMBER_OVERHEAD_BYTES + 2 * strings + partitions * PARTITION_BYTES
}

fn state_code(state: MemberState) -> i8 {
    match state {
        MemberState::Stable => 0,
        MemberState::UnrevokedPartitions => 1,
        MemberState::UnreleasedPartitions => 2,
    }
}

/// The log's entries are checked to hold 0..=2.
fn state_of(code: i8) -> MemberState {
    match code {
        1 => MemberState::UnrevokedPartitions,
        2 => MemberState::UnreleasedPartitions,
        _ => MemberState::Stable,
    }
}

fn records_of(partitions: &BTreeSet<TopicPartition>) -> Vec<ShoalConsumerMemberPartitions> {
    let mut by_topic: BTreeMap<uuid::Uuid, Vec<i32>> = BTreeMap::new();
    for p in partitions {
        by_topic.entry(p.topic_id).or_default().push(p.partition);
    }
    by_topic
        .into_iter()
        .map(|(topic_id, partitions)| ShoalConsumerMemberPartitions {
            topic_id,
            partitions,
        })
        .collect()
}

fn partitions_of(records: &[ShoalConsumerMemberPartitions]) -> BTreeSet<TopicPartition> {
    records
        .iter()
        .flat_map(|t| TopicPartition::each(t.topic_id, &t.partitions))
        .collect()
}

#[cfg(test)]
#[path = "stored_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "group_model_tests.rs"]
mod model_tests;
