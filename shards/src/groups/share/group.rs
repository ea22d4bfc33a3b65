//! One share group (KIP-932): its members and their assignments (ShareGroupHeartbeat), their
//! share sessions (the partitions each fetches, and the session epoch ShareFetch and
//! ShareAcknowledge must carry), and the group's share-partitions. I/O-free: time comes in as
//! milliseconds on one monotonic clock, topics as a lookup.
//!
//! A member that leaves, or whose session times out, gives back every record it holds; its
//! share session ends with it.
//!
//! In a cluster a member heartbeats to the group's coordinator but fetches each partition
//! from the broker Metadata names for it, which holds that share-partition. There the member
//! is a visitor: known by its share session alone (as Kafka's share-partition leaders know
//! members), it gives back what it holds when the session closes or times out.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Range;

use shoal_coordinator::TopicPartition;
use uuid::Uuid;

use super::assignor::assign;
use super::partition::{
    Acknowledgement, Acquired, DeadLetterRun, MemberKey, ShareLimits, SharePartition, ShareState,
    IN_FLIGHT_BYTES,
};
use crate::groups::GroupError;

/// Kafka's epoch a member joins with, and the one it leaves with.
pub const JOIN_EPOCH: i32 = 0;
pub const LEAVE_EPOCH: i32 = -1;
/// A share session's first request carries epoch 0; its last, -1.
pub const SESSION_OPEN_EPOCH: i32 = 0;
pub const SESSION_CLOSE_EPOCH: i32 = -1;

/// What a member's ShareGroupHeartbeat says.
#[derive(Debug, Clone)]
pub struct ShareHeartbeat {
    pub member_id: String,
    pub member_epoch: i32,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// None: unchanged since the member's last heartbeat.
    pub subscribed_topic_names: Option<Vec<String>>,
}

/// The answer: the member's epoch and, when it changed or the member joined, its partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareHeartbeatAnswer {
    pub member_id: String,
    pub member_epoch: i32,
    pub assignment: Option<BTreeSet<TopicPartition>>,
}

#[derive(Debug, Clone)]
pub struct ShareMember {
    pub key: MemberKey,
    pub epoch: i32,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed: Vec<String>,
    pub assignment: BTreeSet<TopicPartition>,
    /// The assignment changed since the member was last told it.
    untold: bool,
    deadline_ms: i64,
}

/// The partitions a member's share session fetches, and the epoch its next request carries.
#[derive(Debug, Clone, Default)]
struct ShareSession {
    next_epoch: i32,
    partitions: BTreeSet<TopicPartition>,
}

/// One acknowledgement batch of ShareFetch or ShareAcknowledge: one type for the whole range,
/// or one per offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckBatch {
    pub first_offset: i64,
    pub last_offset: i64,
    pub types: Vec<i8>,
}

/// Where a fetch for one share-partition reads from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadFrom {
    /// The group has no state for it yet: it starts where `share.auto.offset.reset` says.
    Unknown,
    Offset(i64),
    /// As many records in flight as allowed, none available.
    Full,
}

/// One share-partition's records read for a member: where the share-partition starts if it
/// is new to the group (its state in the log with its version, else an offset), and the
/// offsets the records read cover.
#[derive(Debug, Clone)]
pub struct ReadRecords {
    pub partition: TopicPartition,
    pub start_if_new: i64,
    pub stored: Option<(ShareState, i64)>,
    pub window: Range<i64>,
    /// Offsets never delivered (read_committed: transaction markers and aborted
    /// transactions' batches): archived as they are acquired.
    pub never: Vec<Range<i64>>,
    /// The bytes of the records read, for the estimate of a record's size.
    pub bytes_read: usize,
}

/// A share-partition's state to write to the log, at the version that orders it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateWrite {
    pub partition: TopicPartition,
    pub version: i64,
    pub state: ShareState,
}

#[derive(Debug, Default)]
pub struct ShareGroup {
    pub group_epoch: i32,
    pub members: BTreeMap<String, ShareMember>,
    /// Members that left with a share session still open: their key and until when they
    /// may close it.
    departed: HashMap<String, (MemberKey, i64)>,
    /// Members of a group another broker coordinates that fetch share-partitions held
    /// here: their key and until when their session lasts without a request.
    visitors: HashMap<String, (MemberKey, i64)>,
    /// Whether this broker coordinates the group (its members heartbeat here), not only
    /// holds share-partitions for visitors.
    coordinated: bool,
    next_key: MemberKey,
    sessions: HashMap<String, ShareSession>,
    partitions: HashMap<TopicPartition, SharePartition>,
    /// The version each share-partition's state was last written at.
    versions: HashMap<TopicPartition, i64>,
    /// Share-partitions changed since their state was last taken to be written.
    changed: Vec<TopicPartition>,
    /// Bytes per offset of each share-partition's last read: the next read is sized to the
    /// records a member may be handed, not to what the fetch would allow.
    record_bytes: HashMap<TopicPartition, u32>,
    /// The topics' version the assignment was computed with.
    topics_version: u64,
}

/// What one member or share-partition costs besides its records (for the memory budget).
const MEMBER_BYTES: usize = 512;

impl ShareGroup {
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.visitors.is_empty() && self.partitions.is_empty()
    }

    /// Whether this broker coordinates the group (ListGroups and the describe calls show
    /// only such groups).
    pub fn coordinated(&self) -> bool {
        self.coordinated
    }

    pub fn memory_bytes(&self) -> usize {
        let records: usize = self.partitions.values().map(|p| p.in_flight()).sum();
        let holders = self.members.len() + self.visitors.len() + self.partitions.len();
        records * IN_FLIGHT_BYTES + holders * MEMBER_BYTES
    }

    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    pub fn share_partition(&self, partition: &TopicPartition) -> Option<&SharePartition> {
        self.partitions.get(partition)
    }

    /// A member's heartbeat: join (epoch 0), leave (-1), or go on at its epoch.
    pub fn heartbeat(
        &mut self,
        hb: ShareHeartbeat,
        topics: &dyn Fn(&str) -> Option<(Uuid, i32)>,
        topics_version: u64,
        now_ms: i64,
        session_timeout_ms: i64,
        max_members: usize,
    ) -> Result<ShareHeartbeatAnswer, GroupError> {
        if hb.member_id.is_empty() {
            return Err(GroupError::InvalidRequest);
        }
        self.expire_members(now_ms);
        self.coordinated = true;
        let deadline_ms = now_ms.saturating_add(session_timeout_ms);
        match hb.member_epoch {
            LEAVE_EPOCH => {
                self.depart(&hb.member_id, deadline_ms);
                self.reassign(topics, topics_version);
                return Ok(ShareHeartbeatAnswer {
                    member_id: hb.member_id,
                    member_epoch: LEAVE_EPOCH,
                    assignment: None,
                });
            }
            JOIN_EPOCH => {
                let Some(names) = hb.subscribed_topic_names.filter(|n| !n.is_empty()) else {
                    return Err(GroupError::InvalidRequest);
                };
                if !self.members.contains_key(&hb.member_id) && self.members.len() >= max_members {
                    return Err(GroupError::GroupMaxSizeReached);
                }
                // A member that joins again starts over: what it held is given back. One
                // that visited while another broker coordinated the group keeps its records.
                let key = match self.visitors.remove(&hb.member_id) {
                    Some((key, _)) => key,
                    None => {
                        self.remove_member(&hb.member_id);
                        self.new_key()
                    }
                };
                self.members.insert(
                    hb.member_id.clone(),
                    ShareMember {
                        key,
                        epoch: JOIN_EPOCH,
                        rack_id: hb.rack_id,
                        client_id: hb.client_id,
                        client_host: hb.client_host,
                        subscribed: names,
                        assignment: BTreeSet::new(),
                        untold: true,
                        deadline_ms,
                    },
                );
                // A join is a new epoch even when the assignment stays the same.
                self.group_epoch += 1;
                self.topics_version = u64::MAX;
            }
            epoch => {
                let member = self
                    .members
                    .get_mut(&hb.member_id)
                    .ok_or(GroupError::UnknownMemberId)?;
                if epoch != member.epoch {
                    return Err(GroupError::FencedMemberEpoch);
                }
                member.deadline_ms = deadline_ms;
                member.rack_id = hb.rack_id.or(member.rack_id.take());
                if let Some(names) = hb.subscribed_topic_names {
                    if names != member.subscribed {
                        member.subscribed = names;
                        self.topics_version = u64::MAX;
                    }
                }
            }
        }
        if self.topics_version != topics_version {
            self.reassign(topics, topics_version);
        }
        let group_epoch = self.group_epoch;
        let member = self
            .members
            .get_mut(&hb.member_id)
            .expect("joined or known");
        let assignment = match member.untold || member.epoch != group_epoch {
            true => Some(member.assignment.clone()),
            false => None,
        };
        member.untold = false;
        member.epoch = group_epoch;
        Ok(ShareHeartbeatAnswer {
            member_id: hb.member_id,
            member_epoch: group_epoch,
            assignment,
        })
    }

    fn new_key(&mut self) -> MemberKey {
        let key = self.next_key;
        self.next_key = self.next_key.wrapping_add(1);
        key
    }

    /// A new visitor's key, its session lasting until `until`.
    fn visit(&mut self, member_id: &str, until: i64) -> MemberKey {
        let key = self.new_key();
        self.visitors.insert(member_id.to_string(), (key, until));
        key
    }

    /// Recomputes every member's partitions; a change bumps the group epoch.
    fn reassign(&mut self, topics: &dyn Fn(&str) -> Option<(Uuid, i32)>, topics_version: u64) {
        self.topics_version = topics_version;
        let mut subscribers: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (id, member) in &self.members {
            for name in &member.subscribed {
                subscribers.entry(name).or_default().push(id);
            }
        }
        let resolved = subscribers
            .into_iter()
            .filter_map(|(name, members)| topics(name).map(|(id, count)| (id, count, members)));
        let mut target: BTreeMap<String, BTreeSet<TopicPartition>> = assign(resolved)
            .into_iter()
            .map(|(id, partitions)| (id.to_string(), partitions))
            .collect();
        let mut changed = false;
        for (id, member) in self.members.iter_mut() {
            let new = target.remove(id).unwrap_or_default();
            if new != member.assignment {
                member.assignment = new;
                member.untold = true;
                changed = true;
            }
        }
        if changed {
            self.group_epoch += 1;
        }
    }

    fn remove_member(&mut self, member_id: &str) {
        self.sessions.remove(member_id);
        let key = match self.members.remove(member_id) {
            Some(member) => Some(member.key),
            None => self
                .departed
                .remove(member_id)
                .or_else(|| self.visitors.remove(member_id))
                .map(|(key, _)| key),
        };
        if let Some(key) = key {
            self.give_back(key);
        }
    }

    /// A member that leaves with its share session open keeps its records until the session
    /// closes (its last acknowledgements come after the heartbeat that left) or `deadline_ms`;
    /// one without a session gives them back now.
    fn depart(&mut self, member_id: &str, deadline_ms: i64) {
        let Some(member) = self.members.remove(member_id) else {
            return;
        };
        match self.sessions.contains_key(member_id) {
            true => {
                self.departed
                    .insert(member_id.to_string(), (member.key, deadline_ms));
            }
            false => self.give_back(member.key),
        }
    }

    /// Releases every record the member holds.
    fn give_back(&mut self, key: MemberKey) {
        for partition in self.partitions.values_mut() {
            partition.member_gone(key);
        }
    }

    /// Whether the member is in the group, or visits it (not departed).
    pub fn is_member(&self, member_id: &str) -> bool {
        self.members.contains_key(member_id) || self.visitors.contains_key(member_id)
    }

    /// The key of the member's records: a member's or a visitor's.
    fn key_of(&self, member_id: &str) -> Option<MemberKey> {
        match self.members.get(member_id) {
            Some(member) => Some(member.key),
            None => self.visitors.get(member_id).map(|(key, _)| *key),
        }
    }

    /// Members whose session ran out leave, giving back what they hold; so do departed
    /// members whose share session was not closed in time, and visitors.
    pub fn expire_members(&mut self, now_ms: i64) -> bool {
        let late: Vec<String> = self
            .departed
            .iter()
            .chain(self.visitors.iter())
            .filter(|(_, (_, deadline_ms))| *deadline_ms <= now_ms)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &late {
            self.remove_member(id);
        }
        let gone: Vec<String> = self
            .members
            .iter()
            .filter(|(_, m)| m.deadline_ms <= now_ms)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &gone {
            self.remove_member(id);
        }
        if !gone.is_empty() {
            // Their partitions go to the others at their next heartbeat.
            self.topics_version = u64::MAX;
            self.group_epoch += 1;
        }
        !gone.is_empty()
    }

    /// A ShareFetch or ShareAcknowledge on `member_id`'s session at `epoch`: opens, checks and
    /// advances, or closes the session, and applies the acknowledgements (one outcome per
    /// partition acknowledged). ShareAcknowledge cannot open a session. `visit_until`: this
    /// broker does not coordinate the group, so a member it does not know visits, its
    /// session lasting until then without another request.
    #[allow(clippy::too_many_arguments)]
    pub fn on_session(
        &mut self,
        member_id: &str,
        epoch: i32,
        opens_allowed: bool,
        add: &[TopicPartition],
        forget: &[TopicPartition],
        acks: &[(TopicPartition, Vec<AckBatch>)],
        limits: ShareLimits,
        now_ms: i64,
        visit_until: Option<i64>,
    ) -> Result<Vec<(TopicPartition, Option<GroupError>)>, GroupError> {
        self.expire_members(now_ms);
        let departed = self.departed.get(member_id).map(|(key, _)| *key);
        if let (Some(until), Some(visitor)) = (visit_until, self.visitors.get_mut(member_id)) {
            visitor.1 = until;
        }
        let known = self.key_of(member_id).or(departed);
        // Only a ShareFetch opening a session makes a visitor (the session limit bounds them).
        let member_key = match (known, visit_until) {
            (Some(key), _) => key,
            (None, Some(until)) if epoch == SESSION_OPEN_EPOCH && opens_allowed => {
                self.visit(member_id, until)
            }
            (None, Some(_)) => return Err(GroupError::ShareSessionNotFound),
            (None, None) => return Err(GroupError::UnknownMemberId),
        };
        match epoch {
            SESSION_OPEN_EPOCH if departed.is_some() => return Err(GroupError::UnknownMemberId),
            SESSION_OPEN_EPOCH if !opens_allowed => {
                return Err(GroupError::InvalidShareSessionEpoch)
            }
            SESSION_OPEN_EPOCH => {
                if !acks.is_empty() {
                    return Err(GroupError::InvalidRequest);
                }
                self.sessions.insert(
                    member_id.to_string(),
                    ShareSession {
                        next_epoch: 1,
                        partitions: add.iter().copied().collect(),
                    },
                );
                return Ok(Vec::new());
            }
            SESSION_CLOSE_EPOCH => {
                self.sessions
                    .remove(member_id)
                    .ok_or(GroupError::ShareSessionNotFound)?;
            }
            epoch => {
                let session = self
                    .sessions
                    .get_mut(member_id)
                    .ok_or(GroupError::ShareSessionNotFound)?;
                if epoch != session.next_epoch {
                    return Err(GroupError::InvalidShareSessionEpoch);
                }
                session.next_epoch = session.next_epoch.checked_add(1).unwrap_or(1);
                session.partitions.extend(add.iter().copied());
                for partition in forget {
                    session.partitions.remove(partition);
                }
            }
        }
        let outcomes: Vec<(TopicPartition, Option<GroupError>)> = acks
            .iter()
            .map(|(tp, batches)| {
                let outcome = match self.partitions.get_mut(tp) {
                    Some(partition) => {
                        partition.set_limits(limits);
                        partition.expire_locks(now_ms);
                        self.changed.push(*tp);
                        acknowledge(partition, member_key, batches, now_ms).err()
                    }
                    None => Some(GroupError::InvalidRecordState),
                };
                (*tp, outcome)
            })
            .collect();
        if epoch == SESSION_CLOSE_EPOCH {
            // A closed session gives back what its member still holds, as Kafka does.
            self.departed.remove(member_id);
            self.visitors.remove(member_id);
            self.give_back(member_key);
        }
        Ok(outcomes)
    }

    /// Where the member's session reads each of its partitions from now.
    pub fn read_positions(
        &mut self,
        member_id: &str,
        now_ms: i64,
    ) -> Vec<(TopicPartition, ReadFrom)> {
        let Some(session) = self.sessions.get(member_id) else {
            return Vec::new();
        };
        session
            .partitions
            .iter()
            .map(|tp| {
                let from = match self.partitions.get_mut(tp) {
                    None => ReadFrom::Unknown,
                    Some(partition) => {
                        partition.expire_locks(now_ms);
                        partition
                            .next_to_read()
                            .map_or(ReadFrom::Full, ReadFrom::Offset)
                    }
                };
                (*tp, from)
            })
            .collect()
    }

    /// Hands the member records of what was read for it, up to `max_records` in all; the
    /// share-partitions new to the group start where the reads say.
    pub fn acquire(
        &mut self,
        member_id: &str,
        reads: &[ReadRecords],
        max_records: usize,
        limits: ShareLimits,
        now_ms: i64,
    ) -> Result<Vec<Vec<Acquired>>, GroupError> {
        let key = self.key_of(member_id).ok_or(GroupError::UnknownMemberId)?;
        let mut left = max_records;
        let mut handed = Vec::with_capacity(reads.len());
        for read in reads {
            if !self.partitions.contains_key(&read.partition) {
                let partition = match &read.stored {
                    Some((state, version)) => {
                        self.versions.insert(read.partition, *version);
                        SharePartition::restore(state, limits)
                    }
                    None => {
                        // Where it starts is written before any record of it is handed out;
                        // the log holds none, so that write is its version 1.
                        self.versions.insert(read.partition, 0);
                        self.changed.push(read.partition);
                        SharePartition::new(read.start_if_new, limits)
                    }
                };
                self.partitions.insert(read.partition, partition);
            }
            let partition = self.partitions.get_mut(&read.partition).expect("inserted");
            partition.set_limits(limits);
            partition.expire_locks(now_ms);
            let offsets = read.window.end.saturating_sub(read.window.start);
            if offsets > 0 {
                let per_offset = read.bytes_read as i64 / offsets;
                let per_offset = per_offset.clamp(1, u32::MAX as i64) as u32;
                self.record_bytes.insert(read.partition, per_offset);
            }
            let mut got = partition.acquire(key, read.window.clone(), left, now_ms);
            left -= got.len();
            // Written before the records are handed out: a broker that lost the
            // share-partition to another finds out here (its write is refused), and after a
            // restart the delivery counts go on.
            if !got.is_empty() {
                self.changed.push(read.partition);
            }
            let skipped = |a: &Acquired| read.never.iter().any(|r| r.contains(&a.offset));
            if got.iter().any(skipped) {
                for a in got.iter().filter(|a| skipped(a)) {
                    let _ = partition.acknowledge(key, a.offset, Acknowledgement::Skip);
                }
                got.retain(|a| !skipped(a));
                self.changed.push(read.partition);
            }
            handed.push(got);
        }
        Ok(handed)
    }

    /// Bytes per offset the share-partition's last read found, if it was read.
    pub fn record_bytes(&self, partition: &TopicPartition) -> Option<u32> {
        self.record_bytes.get(partition).copied()
    }

    /// Forgets the share-partitions of topics that no longer exist.
    pub fn retain_partitions(&mut self, exists: impl Fn(&TopicPartition) -> bool) {
        self.partitions.retain(|tp, _| exists(tp));
        self.versions.retain(|tp, _| exists(tp));
        self.record_bytes.retain(|tp, _| exists(tp));
    }

    /// AlterShareGroupOffsets (`Some` start) and DeleteShareGroupOffsets (`None`) of a group
    /// without members: each share-partition's state goes, and what replaces it is written at
    /// the version after the log's (`stored_version`).
    pub fn reset(
        &mut self,
        changes: &[(TopicPartition, Option<i64>, i64)],
    ) -> Result<Vec<(TopicPartition, i64, Option<i64>)>, GroupError> {
        if !self.members.is_empty() {
            return Err(GroupError::NonEmptyGroup);
        }
        self.coordinated = true;
        let dropped: Vec<TopicPartition> = changes.iter().map(|&(tp, _, _)| tp).collect();
        self.drop_partitions(&dropped);
        Ok(changes
            .iter()
            .map(|&(tp, start, stored_version)| (tp, stored_version + 1, start))
            .collect())
    }

    /// Forgets what it held of share-partitions whose state the log refused from it (another
    /// broker wrote since): the next fetch reads them from the log again.
    pub fn drop_partitions(&mut self, dropped: &[TopicPartition]) {
        for tp in dropped {
            self.partitions.remove(tp);
            self.versions.remove(tp);
            self.record_bytes.remove(tp);
        }
        self.changed.retain(|changed| !dropped.contains(changed));
    }

    /// The records of its share-partitions given up on since last taken, for the dead-letter
    /// writer.
    pub fn take_dead_letters(&mut self) -> Vec<(TopicPartition, DeadLetterRun)> {
        self.partitions
            .iter_mut()
            .flat_map(|(tp, partition)| {
                let runs = partition.take_dead_letters();
                runs.into_iter().map(|run| (*tp, run))
            })
            .collect()
    }

    /// The dead-letter writer is done with `first..=last` of `partition`: archived.
    pub fn dead_lettered(&mut self, partition: TopicPartition, first: i64, last: i64) {
        let done = self
            .partitions
            .get_mut(&partition)
            .is_some_and(|p| p.dead_lettered(first, last));
        if done {
            self.changed.push(partition);
        }
    }

    /// The states of the share-partitions changed since the last call, each at a version
    /// above the one written before, to be written to the log.
    pub fn take_writes(&mut self) -> Vec<StateWrite> {
        let mut changed = std::mem::take(&mut self.changed);
        changed.sort_unstable();
        changed.dedup();
        changed
            .into_iter()
            .filter_map(|tp| {
                let state = self.partitions.get(&tp)?.persisted();
                let version = self.versions.entry(tp).or_insert(0);
                *version += 1;
                Some(StateWrite {
                    partition: tp,
                    version: *version,
                    state,
                })
            })
            .collect()
    }
}

/// Applies each batch whole or not at all: every record of it must be held by the member.
fn acknowledge(
    partition: &mut SharePartition,
    member: MemberKey,
    batches: &[AckBatch],
    now_ms: i64,
) -> Result<(), GroupError> {
    let mut outcome = Ok(());
    for batch in batches {
        let Some(count) = batch
            .last_offset
            .checked_sub(batch.first_offset)
            .and_then(|d| d.checked_add(1))
            .filter(|&n| n > 0)
        else {
            outcome = Err(GroupError::InvalidRequest);
            continue;
        };
        if batch.types.len() != 1 && batch.types.len() as i64 != count {
            outcome = Err(GroupError::InvalidRequest);
            continue;
        }
        let kinds: Option<Vec<Acknowledgement>> = batch
            .types
            .iter()
            .map(|&t| acknowledgement(t, now_ms))
            .collect();
        let Some(kinds) = kinds else {
            outcome = Err(GroupError::InvalidRequest);
            continue;
        };
        // More records than can be in flight cannot all be held: refused without a walk.
        let offsets = batch.first_offset..=batch.last_offset;
        if count > partition.in_flight() as i64
            || !offsets.clone().all(|o| partition.holds(member, o))
        {
            outcome = Err(GroupError::InvalidRecordState);
            continue;
        }
        for (i, offset) in offsets.enumerate() {
            let kind = kinds[if kinds.len() == 1 { 0 } else { i }];
            let _ = partition.acknowledge(member, offset, kind);
        }
    }
    outcome
}

/// ShareFetch's and ShareAcknowledge's acknowledge types: 0 a gap (an offset with no record
/// to deliver, archived like a rejected one but never dead-lettered), 1 accept, 2 release, 3 reject, 4 renew (v2; the
/// engine turns it into an unknown type where the version or the group does not allow it).
fn acknowledgement(kind: i8, now_ms: i64) -> Option<Acknowledgement> {
    match kind {
        0 => Some(Acknowledgement::Skip),
        3 => Some(Acknowledgement::Reject),
        1 => Some(Acknowledgement::Accept),
        2 => Some(Acknowledgement::Release),
        RENEW => Some(Acknowledgement::Renew { now_ms }),
        _ => None,
    }
}

/// The acknowledge type that renews a record's lock (KIP-1222).
pub const RENEW: i8 = 4;
