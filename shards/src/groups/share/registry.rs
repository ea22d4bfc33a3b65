//! The share groups one shard owns (beside its classic and consumer-protocol groups, in
//! `Groups`): their members, share sessions and share-partitions, bounded by the shard's
//! group limits. A restart reads each share-partition back from its state in the
//! coordinator's log: each state an acquisition or acknowledgement changed, and each new
//! share-partition's start, is taken to be written there (`take_writes`) before the member is
//! answered. In a cluster, groups another broker coordinates are held here only for the
//! share-partitions their members fetch from this broker (see `ShareGroup`).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeSet, HashMap};
use std::time::Instant;

use shoal_coordinator::{TopicPartition, TopicsView};

use super::group::{
    AckBatch, ReadFrom, ReadRecords, ShareGroup, ShareHeartbeat, ShareHeartbeatAnswer,
    SESSION_CLOSE_EPOCH, SESSION_OPEN_EPOCH,
};
use super::partition::{Acquired, DeadLetterRun, ShareLimits, ShareState};
use super::stored::to_record;
use crate::groups::classic::messages::GroupListing;
use crate::groups::{GroupConfig, GroupError};
use shoal_protocol::records::ShoalShareStateRecord;

/// Kafka's `share` group type and protocol type, as ListGroups shows them.
pub const SHARE_GROUP_TYPE: &str = "share";

/// A share group's settings as its GROUP configs (or the broker's defaults) give them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareSettings {
    pub limits: ShareLimits,
    pub session_timeout_ms: i64,
}

/// A ShareFetch's or ShareAcknowledge's session step (see `ShareGroup::on_session`).
#[derive(Debug, Clone)]
pub struct SessionStep {
    pub member_id: String,
    pub epoch: i32,
    /// ShareFetch may open a session; ShareAcknowledge may not.
    pub is_fetch: bool,
    pub add: Vec<TopicPartition>,
    pub forget: Vec<TopicPartition>,
    pub acks: Vec<(TopicPartition, Vec<AckBatch>)>,
}

/// What the session step answers: each acknowledged partition's outcome, and where each of
/// the session's partitions reads from (empty for ShareAcknowledge and a closing fetch).
#[derive(Debug, Clone, Default)]
pub struct SessionAnswer {
    pub acks: Vec<(TopicPartition, Option<GroupError>)>,
    pub reads: Vec<(TopicPartition, ReadFrom)>,
    /// Bytes per offset of the last read of each partition read before.
    pub record_bytes: Vec<(TopicPartition, u32)>,
}

impl SessionAnswer {
    /// The share-partitions whose state the log refused (another broker holds them now):
    /// their acknowledgements failed, and they are read from the log again.
    pub fn refuse(&mut self, refused: &[TopicPartition]) {
        for (tp, outcome) in self.acks.iter_mut() {
            if refused.contains(tp) {
                *outcome = Some(GroupError::NotLeaderOrFollower);
            }
        }
        for (tp, from) in self.reads.iter_mut() {
            if refused.contains(tp) {
                *from = ReadFrom::Unknown;
            }
        }
        self.record_bytes.retain(|(tp, _)| !refused.contains(tp));
    }
}

/// A share group as ShareGroupDescribe shows it.
#[derive(Debug, Clone)]
pub struct ShareGroupDescription {
    pub state: &'static str,
    pub group_epoch: i32,
    pub members: Vec<ShareMemberDescription>,
}

#[derive(Debug, Clone)]
pub struct ShareMemberDescription {
    pub member_id: String,
    pub member_epoch: i32,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    pub assignment: BTreeSet<TopicPartition>,
}

pub struct ShareGroups {
    groups: RefCell<HashMap<String, ShareGroup>>,
    config: GroupConfig,
    /// Share sessions open on this shard's groups (`max_share_sessions`).
    sessions: Cell<usize>,
    /// The clock locks and sessions are measured on.
    origin: Instant,
}

impl ShareGroups {
    pub fn new(config: GroupConfig) -> ShareGroups {
        ShareGroups {
            groups: RefCell::new(HashMap::new()),
            config,
            sessions: Cell::new(0),
            origin: Instant::now(),
        }
    }

    fn now_ms(&self) -> i64 {
        self.origin.elapsed().as_millis() as i64
    }

    pub fn contains(&self, group_id: &str) -> bool {
        self.groups.borrow().contains_key(group_id)
    }

    pub fn len(&self) -> usize {
        self.groups.borrow().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn memory_bytes(&self, group_id: &str) -> usize {
        self.groups
            .borrow()
            .get(group_id)
            .map_or(0, ShareGroup::memory_bytes)
    }

    /// ShareGroupHeartbeat; `may_create` says whether a new group fits the shard's limits.
    pub fn heartbeat(
        &self,
        group_id: &str,
        heartbeat: ShareHeartbeat,
        topics: &TopicsView,
        settings: ShareSettings,
        may_create: bool,
    ) -> Result<ShareHeartbeatAnswer, GroupError> {
        let mut groups = self.groups.borrow_mut();
        if !groups.contains_key(group_id) {
            if heartbeat.member_epoch != 0 {
                return Err(GroupError::UnknownMemberId);
            }
            if !may_create {
                return Err(GroupError::TooManyGroups);
            }
        }
        let group = groups.entry(group_id.to_string()).or_default();
        let sessions_before = group.session_count();
        let lookup = |name: &str| topics.by_name(name).map(|t| (t.id, t.partitions));
        let answer = group.heartbeat(
            heartbeat,
            &lookup,
            topics.version(),
            self.now_ms(),
            settings.session_timeout_ms,
            self.config.share_max_size,
        );
        group.retain_partitions(|tp| {
            topics
                .by_id(&tp.topic_id)
                .is_some_and(|t| tp.partition < t.partitions)
        });
        self.recount(sessions_before, group.session_count());
        answer
    }

    /// ShareFetch's or ShareAcknowledge's session step. `visiting`: another broker
    /// coordinates the group (its members are visitors here); `may_create` says whether a
    /// group new to this shard fits its limits.
    pub fn session_step(
        &self,
        group_id: &str,
        step: SessionStep,
        settings: ShareSettings,
        visiting: bool,
        may_create: bool,
    ) -> Result<SessionAnswer, GroupError> {
        let mut groups = self.groups.borrow_mut();
        let opens = step.epoch == SESSION_OPEN_EPOCH && step.is_fetch;
        if opens && self.sessions.get() >= self.config.max_share_sessions {
            return Err(GroupError::ShareSessionLimitReached);
        }
        if visiting && opens && !groups.contains_key(group_id) {
            if !may_create {
                return Err(GroupError::TooManyGroups);
            }
            groups.insert(group_id.to_string(), ShareGroup::default());
        }
        let group = groups.get_mut(group_id).ok_or(match step.epoch {
            SESSION_OPEN_EPOCH => GroupError::UnknownMemberId,
            _ => GroupError::ShareSessionNotFound,
        })?;
        let now_ms = self.now_ms();
        let visit_until = visiting.then(|| now_ms.saturating_add(settings.session_timeout_ms));
        let sessions_before = group.session_count();
        let acks = group.on_session(
            &step.member_id,
            step.epoch,
            step.is_fetch,
            &step.add,
            &step.forget,
            &step.acks,
            settings.limits,
            now_ms,
            visit_until,
        );
        let reads = match (&acks, step.is_fetch && step.epoch != SESSION_CLOSE_EPOCH) {
            (Ok(_), true) if group.is_member(&step.member_id) => {
                group.read_positions(&step.member_id, now_ms)
            }
            _ => Vec::new(),
        };
        self.recount(sessions_before, group.session_count());
        let record_bytes = reads
            .iter()
            .filter_map(|(tp, _)| Some((*tp, group.record_bytes(tp)?)))
            .collect();
        Ok(SessionAnswer {
            acks: acks?,
            reads,
            record_bytes,
        })
    }

    /// Hands the member records of what was read for it.
    pub fn acquire(
        &self,
        group_id: &str,
        member_id: &str,
        reads: &[ReadRecords],
        max_records: usize,
        settings: ShareSettings,
    ) -> Result<Vec<Vec<Acquired>>, GroupError> {
        let mut groups = self.groups.borrow_mut();
        let group = groups
            .get_mut(group_id)
            .ok_or(GroupError::UnknownMemberId)?;
        group.acquire(
            member_id,
            reads,
            max_records,
            settings.limits,
            self.now_ms(),
        )
    }

    /// The records of the group's share-partition states changed since last taken.
    pub fn take_writes(&self, group_id: &str) -> Vec<ShoalShareStateRecord> {
        let mut groups = self.groups.borrow_mut();
        let Some(group) = groups.get_mut(group_id) else {
            return Vec::new();
        };
        group
            .take_writes()
            .iter()
            .map(|w| to_record(group_id, w.partition, w.version, &w.state))
            .collect()
    }

    /// The group's records given up on since last taken, for the dead-letter writer.
    pub fn take_dead_letters(&self, group_id: &str) -> Vec<(TopicPartition, DeadLetterRun)> {
        let mut groups = self.groups.borrow_mut();
        groups
            .get_mut(group_id)
            .map_or_else(Vec::new, |group| group.take_dead_letters())
    }

    /// The dead-letter writer is done with `first..=last` of the group's `partition`.
    pub fn dead_lettered(&self, group_id: &str, partition: TopicPartition, first: i64, last: i64) {
        if let Some(group) = self.groups.borrow_mut().get_mut(group_id) {
            group.dead_lettered(partition, first, last);
        }
    }

    /// Forgets the share-partitions whose state the log refused from this shard.
    pub fn drop_partitions(&self, group_id: &str, refused: &[TopicPartition]) {
        if let Some(group) = self.groups.borrow_mut().get_mut(group_id) {
            group.drop_partitions(refused);
        }
    }

    /// AlterShareGroupOffsets and DeleteShareGroupOffsets on a group without members (a
    /// group this shard holds nothing of has none): the records to write.
    pub fn reset(
        &self,
        group_id: &str,
        changes: &[(TopicPartition, Option<i64>, i64)],
    ) -> Result<Vec<ShoalShareStateRecord>, GroupError> {
        let now_ms = self.now_ms();
        let mut groups = self.groups.borrow_mut();
        let group = groups.entry(group_id.to_string()).or_default();
        let sessions_before = group.session_count();
        group.expire_members(now_ms);
        self.recount(sessions_before, group.session_count());
        let written = group.reset(changes)?;
        Ok(written
            .into_iter()
            .map(|(tp, version, start)| {
                let state = ShareState {
                    start_offset: start.unwrap_or(0),
                    batches: Vec::new(),
                };
                ShoalShareStateRecord {
                    deleted: start.is_none(),
                    ..to_record(group_id, tp, version, &state)
                }
            })
            .collect())
    }

    pub fn describe(&self, group_id: &str) -> Option<ShareGroupDescription> {
        let mut groups = self.groups.borrow_mut();
        let group = groups.get_mut(group_id).filter(|g| g.coordinated())?;
        let sessions_before = group.session_count();
        group.expire_members(self.now_ms());
        self.recount(sessions_before, group.session_count());
        let members = group
            .members
            .iter()
            .map(|(id, m)| ShareMemberDescription {
                member_id: id.clone(),
                member_epoch: m.epoch,
                rack_id: m.rack_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                subscribed_topic_names: m.subscribed.clone(),
                assignment: m.assignment.clone(),
            })
            .collect();
        Some(ShareGroupDescription {
            state: state_of(group),
            group_epoch: group.group_epoch,
            members,
        })
    }

    pub fn list(&self) -> Vec<GroupListing> {
        let now_ms = self.now_ms();
        let mut groups = self.groups.borrow_mut();
        groups
            .iter_mut()
            .filter(|(_, group)| group.coordinated())
            .map(|(id, group)| {
                let sessions_before = group.session_count();
                group.expire_members(now_ms);
                self.recount(sessions_before, group.session_count());
                GroupListing {
                    group_id: id.clone(),
                    protocol_type: SHARE_GROUP_TYPE.to_string(),
                    state: state_of(group),
                    group_type: SHARE_GROUP_TYPE,
                }
            })
            .collect()
    }

    /// DeleteGroups: only a group without members.
    pub fn delete(&self, group_id: &str) -> Option<GroupError> {
        let mut groups = self.groups.borrow_mut();
        let group = groups.get_mut(group_id)?;
        let sessions_before = group.session_count();
        group.expire_members(self.now_ms());
        self.recount(sessions_before, group.session_count());
        if !group.members.is_empty() {
            return Some(GroupError::NonEmptyGroup);
        }
        groups.remove(group_id);
        None
    }

    /// One group's share sessions went from `before` to `after`.
    fn recount(&self, before: usize, after: usize) {
        self.sessions
            .set((self.sessions.get() + after).saturating_sub(before));
    }
}

/// Kafka's share group states: Empty without members, else Stable (a share group has no
/// rebalance to wait for).
pub fn state_of(group: &ShareGroup) -> &'static str {
    match group.members.is_empty() {
        true => "Empty",
        false => "Stable",
    }
}
