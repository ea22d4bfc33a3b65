//! Classic members of a consumer-protocol group, as Kafka's online migration serves them: a
//! classic group with members becomes a consumer-protocol group when a consumer-protocol
//! member joins (each classic member keeps its partitions, at the classic generation as its
//! epoch), and its classic members go on with JoinGroup, SyncGroup, Heartbeat and LeaveGroup:
//! the broker assigns them (no leader), a JoinGroup is their reconciliation step (they report
//! what they own in their subscription), SyncGroup hands out what they may consume, and a
//! heartbeat answers REBALANCE_IN_PROGRESS when they should rejoin to move on.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use bytes::Bytes;
use shoal_coordinator::TopicPartition;

use super::group::{ClassicMember, ConsumerGroup, Heartbeat, Topics, JOIN_EPOCH};
use super::reconcile::{MemberAssignment, MemberState};
use crate::groups::classic::messages::{JoinRequest, JoinResponse, LeavingMember, MemberRef};
use crate::groups::GroupError;
use shoal_protocol::consumer_protocol::{read_assignment, read_subscription, write_assignment};

/// The embedded protocol's type: only consumer groups migrate.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// A classic group's member as it moves into a consumer-protocol group.
#[derive(Debug, Clone)]
pub struct ClassicSeed {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout: Duration,
    pub rebalance_timeout: Duration,
    pub protocols: Vec<(String, Bytes)>,
    /// Its metadata for the group's protocol (its subscription).
    pub metadata: Bytes,
    /// What the last SyncGroup gave it (empty: nothing yet).
    pub assignment: Bytes,
}

/// A classic member's SyncGroup answer: its protocol and what it may consume.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicAssignment {
    pub protocol_name: String,
    pub assignment: Bytes,
}

impl ConsumerGroup {
    /// Kafka's `fromClassicGroup`: every member stable at the classic generation, its last
    /// assignment both what it holds and its target (a partition two members claim stays
    /// with the first). None when a member's subscription or assignment does not parse.
    pub fn from_classic(
        mut group: ConsumerGroup,
        generation: i32,
        seeds: Vec<ClassicSeed>,
        topics: &impl Topics,
        now: Instant,
    ) -> Option<ConsumerGroup> {
        group.group_epoch = generation;
        group.assignment_epoch = generation;
        for seed in seeds {
            let subscription = read_subscription(&seed.metadata)?;
            let assigned: BTreeSet<TopicPartition> =
                partitions_by_id(&read_assignment(&seed.assignment)?, topics)
                    .into_iter()
                    .filter(|p| !group.holders.contains_key(p))
                    .collect();
            for p in &assigned {
                group.holders.insert(*p, seed.member_id.clone());
            }
            group
                .target
                .insert(seed.member_id.clone(), assigned.clone());
            let member = super::group::Member {
                instance_id: seed.instance_id,
                rack_id: subscription.rack_id,
                client_id: seed.client_id,
                client_host: seed.client_host,
                access: None,
                rebalance_timeout: seed.rebalance_timeout,
                subscribed: subscription.topics.into_iter().collect(),
                regex: None,
                server_assignor: None,
                assignment: MemberAssignment {
                    state: MemberState::Stable,
                    epoch: generation,
                    assigned,
                    revoking: BTreeSet::new(),
                },
                previous_epoch: generation,
                session_deadline: now + seed.session_timeout,
                revocation_deadline: None,
                left_statically: false,
                classic: Some(Box::new(ClassicMember {
                    session_timeout: seed.session_timeout,
                    protocols: seed.protocols,
                })),
            };
            group.unresolved.insert(seed.member_id.clone());
            group.unstored_members.insert(seed.member_id.clone());
            group.members.insert(seed.member_id, member);
        }
        Some(group)
    }

    /// Whether every member is a classic one (the group may go back to the classic protocol).
    pub fn only_classic_members(&self) -> bool {
        !self.members.is_empty() && self.members.values().all(|m| m.classic.is_some())
    }

    /// The classic members as a classic group takes them back (Kafka's `fromConsumerGroup`),
    /// each with its target as its assignment, in its subscription's version; the group is
    /// left empty, to be stored as deleted.
    pub fn into_classic(&mut self, topics: &impl Topics) -> Vec<ClassicSeed> {
        let ids: Vec<String> = self.members.keys().cloned().collect();
        let mut seeds = Vec::with_capacity(ids.len());
        for id in ids {
            let member = &self.members[&id];
            let Some(classic) = &member.classic else {
                continue;
            };
            let target = self.target.get(&id).cloned().unwrap_or_default();
            let metadata = classic.protocols.first().map(|(_, m)| m.clone());
            let metadata = metadata.unwrap_or_default();
            seeds.push(ClassicSeed {
                member_id: id.clone(),
                instance_id: member.instance_id.clone(),
                client_id: member.client_id.clone(),
                client_host: member.client_host.clone(),
                session_timeout: classic.session_timeout,
                rebalance_timeout: member.rebalance_timeout,
                protocols: classic.protocols.clone(),
                assignment: encode_assignment(&metadata, &target, topics),
                metadata,
            });
            self.remove(&id);
        }
        seeds
    }

    /// A classic member's JoinGroup: its reconciliation step (Kafka's
    /// `classicGroupJoinToConsumerGroup`). It is answered at once with its epoch as the
    /// generation and no leader: the broker assigns.
    pub fn classic_join(
        &mut self,
        request: &JoinRequest,
        topics: &impl Topics,
        now: Instant,
    ) -> Result<JoinResponse, GroupError> {
        self.check_classic_protocols(request)?;
        let subscription = request
            .protocols
            .first()
            .and_then(|(_, metadata)| read_subscription(metadata))
            .ok_or(GroupError::InconsistentGroupProtocol)?;
        let mut member_id = request.member_id.clone();
        if member_id.is_empty() {
            member_id = uuid::Uuid::new_v4().to_string();
            if request.require_known_member_id && request.group_instance_id.is_none() {
                return Ok(JoinResponse::failed(
                    GroupError::MemberIdRequired,
                    &member_id,
                ));
            }
        }
        let epoch = self.classic_member_epoch(request, &member_id)?;
        let heartbeat = Heartbeat {
            member_id: member_id.clone(),
            member_epoch: epoch,
            instance_id: request.group_instance_id.clone(),
            rack_id: subscription.rack_id,
            client_id: request.client_id.clone(),
            client_host: request.client_host.clone(),
            rebalance_timeout_ms: request.rebalance_timeout_ms.max(0),
            subscribed_topic_names: Some(subscription.topics.into_iter().collect()),
            subscribed_topic_regex: None,
            server_assignor: None,
            owned: Some(partitions_by_id(&subscription.owned, topics)),
            access: None,
        };
        self.heartbeat(heartbeat, topics, now)?;
        let session_timeout = Duration::from_millis(request.session_timeout_ms.max(0) as u64);
        let member = self.members.get_mut(&member_id).expect("joined");
        let classic = ClassicMember {
            session_timeout,
            protocols: request.protocols.clone(),
        };
        if member.classic.as_deref() != Some(&classic) {
            member.classic = Some(Box::new(classic));
            self.unstored_members.insert(member_id.clone());
        }
        member.session_deadline = now + session_timeout;
        // It must sync (or, revoking, rejoin) within its rebalance timeout, or be fenced.
        let deadline = *member
            .revocation_deadline
            .get_or_insert(now + member.rebalance_timeout);
        let generation_id = member.assignment.epoch;
        self.deadline_set(deadline.min(now + session_timeout));
        Ok(JoinResponse {
            error: None,
            generation_id,
            protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
            protocol_name: request.protocols.first().map(|(name, _)| name.clone()),
            leader: String::new(),
            member_id,
            members: Vec::new(),
        })
    }

    /// The epoch a classic join goes on from: its own for a known member, 0 for a new one.
    /// A static member rejoining under a new id takes its instance's place (the old id is
    /// fenced), as a restarted static member does in a classic group.
    fn classic_member_epoch(
        &mut self,
        request: &JoinRequest,
        member_id: &str,
    ) -> Result<i32, GroupError> {
        if let Some(instance) = &request.group_instance_id {
            let holder = self
                .members
                .iter()
                .find(|(_, m)| m.instance_id.as_ref() == Some(instance))
                .map(|(id, _)| id.clone());
            match holder {
                Some(id) if id == member_id => {}
                Some(id) if request.member_id.is_empty() => {
                    // The new id takes the place as a static member's return does.
                    self.members.get_mut(&id).expect("found").left_statically = true;
                    return Ok(JOIN_EPOCH);
                }
                Some(_) => return Err(GroupError::FencedInstanceId),
                None if !request.member_id.is_empty() => return Err(GroupError::UnknownMemberId),
                None => return Ok(JOIN_EPOCH),
            }
        }
        match self.members.get(member_id) {
            Some(m) if m.classic.is_none() => Err(GroupError::UnknownMemberId),
            Some(m) => Ok(m.assignment.epoch),
            None => Ok(JOIN_EPOCH),
        }
    }

    /// The group's protocol type is "consumer"; the joining member must share a protocol
    /// with every other classic member.
    fn check_classic_protocols(&self, request: &JoinRequest) -> Result<(), GroupError> {
        if request.protocol_type != CONSUMER_PROTOCOL_TYPE || request.protocols.is_empty() {
            return Err(GroupError::InconsistentGroupProtocol);
        }
        let others: Vec<&ClassicMember> = self
            .members
            .iter()
            .filter(|(id, _)| **id != request.member_id)
            .filter_map(|(_, m)| m.classic.as_deref())
            .collect();
        let shared = request.protocols.iter().any(|(name, _)| {
            others
                .iter()
                .all(|c| c.protocols.iter().any(|(n, _)| n == name))
        });
        match shared {
            true => Ok(()),
            false => Err(GroupError::InconsistentGroupProtocol),
        }
    }

    /// A classic member's SyncGroup (Kafka's `classicGroupSyncToConsumerGroup`): what it may
    /// consume now, unless a newer epoch waits for its rejoin.
    pub fn classic_sync(
        &mut self,
        m: &MemberRef,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        topics: &impl Topics,
        now: Instant,
    ) -> Result<ClassicAssignment, GroupError> {
        let member_id = self.classic_member(m)?;
        let member = self.members.get_mut(&member_id).expect("checked");
        let classic = member.classic.as_ref().expect("checked");
        let (name, metadata) = classic.protocols.first().cloned().unwrap_or_default();
        if protocol_type.is_some_and(|t| t != CONSUMER_PROTOCOL_TYPE)
            || protocol_name.is_some_and(|n| n != name)
        {
            return Err(GroupError::InconsistentGroupProtocol);
        }
        member.session_deadline = now + classic.session_timeout;
        // Behind the group and not in the middle of revoking: it must rejoin first.
        if self.group_epoch > member.assignment.epoch
            && member.assignment.state != MemberState::UnrevokedPartitions
        {
            return Err(GroupError::RebalanceInProgress);
        }
        if member.assignment.state != MemberState::UnrevokedPartitions {
            member.revocation_deadline = None; // synced: nothing more is due
        }
        Ok(ClassicAssignment {
            protocol_name: name,
            assignment: encode_assignment(&metadata, &member.assignment.assigned, topics),
        })
    }

    /// A classic member's heartbeat (Kafka's `classicGroupHeartbeatToConsumerGroup`):
    /// REBALANCE_IN_PROGRESS asks it to rejoin when the group moved past its epoch, when it
    /// must revoke, or when partitions it waits for have been released.
    pub fn classic_heartbeat(&mut self, m: &MemberRef, now: Instant) -> Result<(), GroupError> {
        let member_id = self.classic_member(m)?;
        let member = self.members.get_mut(&member_id).expect("checked");
        let session = member.classic.as_ref().expect("checked").session_timeout;
        member.session_deadline = now + session;
        let member = &self.members[&member_id];
        let released = member.assignment.state == MemberState::UnreleasedPartitions
            && !self.waits_on_unreleased(&member_id);
        if member.assignment.epoch < self.group_epoch
            || member.assignment.state == MemberState::UnrevokedPartitions
            || released
        {
            // Told to rejoin: it must within its rebalance timeout, or be fenced (Kafka's
            // join timeout), so what it holds cannot be held up forever.
            let member = self.members.get_mut(&member_id).expect("checked");
            let deadline = *member
                .revocation_deadline
                .get_or_insert(now + member.rebalance_timeout);
            self.deadline_set(deadline);
            return Err(GroupError::RebalanceInProgress);
        }
        Ok(())
    }

    /// LeaveGroup for classic members (by id, or by instance id alone as admins do).
    pub fn classic_leave(&mut self, leaving: &[LeavingMember]) -> Vec<Option<GroupError>> {
        leaving
            .iter()
            .map(|l| {
                let by_instance = l.member_id.is_empty() && l.group_instance_id.is_some();
                let found = match by_instance {
                    true => self
                        .members
                        .iter()
                        .find(|(_, m)| m.instance_id == l.group_instance_id)
                        .map(|(id, _)| id.clone())
                        .ok_or(GroupError::UnknownMemberId),
                    false => self.classic_member(&MemberRef {
                        group_id: String::new(),
                        member_id: l.member_id.clone(),
                        generation_id: -1,
                        group_instance_id: l.group_instance_id.clone(),
                    }),
                };
                match found {
                    Ok(id) if self.members[&id].classic.is_some() => {
                        self.remove(&id);
                        None
                    }
                    Ok(_) => Some(GroupError::UnknownMemberId),
                    Err(error) => Some(error),
                }
            })
            .collect()
    }

    /// The classic member a request names: by instance id (which must be held by that
    /// member id) or by member id; a consumer-protocol member is unknown to classic requests.
    fn classic_member(&self, m: &MemberRef) -> Result<String, GroupError> {
        if let Some(instance) = &m.group_instance_id {
            let holder = self
                .members
                .iter()
                .find(|(_, member)| member.instance_id.as_ref() == Some(instance));
            match holder {
                Some((id, _)) if *id != m.member_id => return Err(GroupError::FencedInstanceId),
                None => return Err(GroupError::UnknownMemberId),
                _ => {}
            }
        }
        match self.members.get(&m.member_id) {
            Some(member) if member.classic.is_some() && !member.left_statically => {
                Ok(m.member_id.clone())
            }
            _ => Err(GroupError::UnknownMemberId),
        }
    }

    /// Whether part of the member's target is still held by another member.
    fn waits_on_unreleased(&self, member_id: &str) -> bool {
        let member = &self.members[member_id];
        self.target.get(member_id).is_some_and(|target| {
            target
                .difference(&member.assignment.assigned)
                .any(|p| self.holders.get(p).is_some_and(|h| h != member_id))
        })
    }
}

/// Topic-name partitions as the group keys them; topics that do not exist are dropped.
fn partitions_by_id(
    partitions: &[(String, Vec<i32>)],
    topics: &impl Topics,
) -> BTreeSet<TopicPartition> {
    partitions
        .iter()
        .filter_map(|(name, indexes)| Some((topics.lookup(name)?.0, indexes)))
        .flat_map(|(topic_id, indexes)| TopicPartition::each(topic_id, indexes))
        .collect()
}

/// Partitions by topic name in the consumer protocol's assignment, in the version of the
/// member's subscription `metadata`.
fn encode_assignment(
    metadata: &[u8],
    partitions: &BTreeSet<TopicPartition>,
    topics: &impl Topics,
) -> Bytes {
    let version = metadata
        .get(..2)
        .map_or(0, |v| i16::from_be_bytes([v[0], v[1]]));
    let mut by_topic: Vec<(String, Vec<i32>)> = Vec::new();
    for p in partitions {
        let Some(name) = topics.name_of(p.topic_id) else {
            continue;
        };
        match by_topic.last_mut() {
            Some((last, indexes)) if *last == name => indexes.push(p.partition),
            _ => by_topic.push((name, vec![p.partition])),
        }
    }
    Bytes::from(write_assignment(version, &by_topic))
}

#[cfg(test)]
#[path = "classic_tests.rs"]
mod tests;
