//! One consumer group under the classic rebalance protocol, as Kafka's group coordinator runs
//! it: members join, the coordinator waits for every known member (or the rebalance timeout),
//! picks a protocol and a leader, the leader's assignment is handed out at SyncGroup, and
//! heartbeats keep members alive. I/O-free: time comes in as `now`, waiting requests are
//! oneshot senders answered when the group moves on.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use super::messages::*;
use crate::groups::{GroupConfig, GroupError};
use bytes::Bytes;
use futures::channel::oneshot;

/// The most of a client id a member id carries.
const MEMBER_ID_CLIENT_PREFIX_MAX: usize = 128;
/// What a member costs beyond its strings and bytes (maps, timers, senders).
const MEMBER_OVERHEAD_BYTES: usize = 256;

#[path = "migration.rs"]
mod migration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Empty => "Empty",
            Phase::PreparingRebalance => "PreparingRebalance",
            Phase::CompletingRebalance => "CompletingRebalance",
            Phase::Stable => "Stable",
        }
    }
}

struct Member {
    instance_id: Option<String>,
    client_id: String,
    client_host: String,
    session_timeout: Duration,
    rebalance_timeout: Duration,
    protocols: Vec<(String, Bytes)>,
    assignment: Bytes,
    last_heard: Instant,
    /// Joined this generation order: the first joiner leads a new group.
    joined_at: u64,
    pending_join: Option<oneshot::Sender<JoinResponse>>,
    pending_sync: Option<oneshot::Sender<SyncResponse>>,
}

impl Member {
    /// The member's metadata for the group's chosen protocol.
    fn metadata_for(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|(n, _)| n == protocol)
            .map(|(_, meta)| meta.clone())
            .unwrap_or_default()
    }
}

pub struct Group {
    id: String,
    phase: Phase,
    generation: i32,
    protocol_type: Option<String>,
    protocol: Option<String>,
    leader: Option<String>,
    members: BTreeMap<String, Member>,
    /// group.instance.id → member id of static members.
    static_members: HashMap<String, String>,
    /// Member ids handed out with MEMBER_ID_REQUIRED, awaiting their rejoin, with a deadline.
    pending_members: HashMap<String, Instant>,
    /// PreparingRebalance: when to complete the join phase even if members are missing.
    join_deadline: Option<Instant>,
    /// The join phase began with the group empty: wait out the initial delay.
    initial_delay: bool,
    /// CompletingRebalance: when members that have not synced are dropped.
    sync_deadline: Option<Instant>,
    next_member_seq: u64,
    config: GroupConfig,
}

impl Group {
    pub fn new(id: &str, config: GroupConfig) -> Group {
        Group {
            id: id.to_string(),
            phase: Phase::Empty,
            generation: 0,
            protocol_type: None,
            protocol: None,
            leader: None,
            members: BTreeMap::new(),
            static_members: HashMap::new(),
            pending_members: HashMap::new(),
            join_deadline: None,
            initial_delay: false,
            sync_deadline: None,
            next_member_seq: 0,
            config,
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Nothing left to remember: no members, none about to join.
    pub fn is_idle(&self) -> bool {
        self.members.is_empty() && self.pending_members.is_empty()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Kafka's form, `<client id>-<uuid>`, with the client id cut to a bounded prefix: ids
    /// are kept and echoed on every request, and a client id can be 32 KiB.
    fn new_member_id(&self, client_id: &str) -> String {
        let mut prefix = client_id.len().min(MEMBER_ID_CLIENT_PREFIX_MAX);
        while !client_id.is_char_boundary(prefix) {
            prefix -= 1;
        }
        format!("{}-{}", &client_id[..prefix], uuid::Uuid::new_v4())
    }

    /// Roughly what the group holds: members (ids, client ids, metadata, assignments) and
    /// the member ids it awaits.
    pub fn memory_bytes(&self) -> usize {
        let members: usize = self
            .members
            .iter()
            .map(|(id, m)| {
                MEMBER_OVERHEAD_BYTES
                    + id.len()
                    + m.client_id.len()
                    + m.client_host.len()
                    + m.instance_id.as_ref().map_or(0, String::len)
                    + m.protocols
                        .iter()
                        .map(|(name, meta)| name.len() + meta.len())
                        .sum::<usize>()
                    + m.assignment.len()
            })
            .sum();
        let pending: usize = self
            .pending_members
            .keys()
            .map(|id| MEMBER_OVERHEAD_BYTES + id.len())
            .sum();
        members + pending
    }

    pub fn join(&mut self, req: JoinRequest, now: Instant, reply: oneshot::Sender<JoinResponse>) {
        let fail = |reply: oneshot::Sender<JoinResponse>, error, member_id: &str| {
            let _ = reply.send(JoinResponse::failed(error, member_id));
        };
        if let Err(error) = self.config.check_join(&req) {
            return fail(reply, error, &req.member_id);
        }
        let session = req.session_timeout_ms;
        if req.protocol_type.is_empty() || req.protocols.is_empty() || !self.supports(&req) {
            return fail(reply, GroupError::InconsistentGroupProtocol, &req.member_id);
        }
        let is_new = req.member_id.is_empty();
        if let Some(instance) = req.group_instance_id.clone() {
            if let Some(existing) = self.static_members.get(&instance).cloned() {
                if !is_new && req.member_id != existing {
                    return fail(reply, GroupError::FencedInstanceId, &req.member_id);
                }
                if is_new {
                    return self.replace_static_member(req, existing, now, reply);
                }
            } else if !is_new && !self.members.contains_key(&req.member_id) {
                return fail(reply, GroupError::UnknownMemberId, &req.member_id);
            }
        } else if is_new {
            // Member ids handed out and awaited count toward the group's size.
            if self.members.len() + self.pending_members.len() >= self.config.max_size {
                return fail(reply, GroupError::GroupMaxSizeReached, "");
            }
            let member_id = self.new_member_id(&req.client_id);
            if req.require_known_member_id {
                let deadline = now + Duration::from_millis(session as u64);
                self.pending_members.insert(member_id.clone(), deadline);
                return fail(reply, GroupError::MemberIdRequired, &member_id);
            }
            return self.add_member(member_id, req, now, reply);
        } else if !self.members.contains_key(&req.member_id)
            && !self.pending_members.contains_key(&req.member_id)
        {
            return fail(reply, GroupError::UnknownMemberId, &req.member_id);
        }
        let member_id = if is_new {
            self.new_member_id(&req.client_id)
        } else {
            req.member_id.clone()
        };
        self.add_member(member_id, req, now, reply);
    }

    fn supports(&self, req: &JoinRequest) -> bool {
        if self.members.is_empty() {
            return true;
        }
        if self.protocol_type.as_deref() != Some(req.protocol_type.as_str()) {
            return false;
        }
        // Some protocol must remain that every member, this one included, supports.
        req.protocols.iter().any(|(name, _)| {
            self.members
                .iter()
                .filter(|(id, _)| **id != req.member_id)
                .all(|(_, m)| m.protocols.iter().any(|(n, _)| n == name))
        })
    }

    /// A static member restarted (same group.instance.id, new process): it takes the old
    /// member's place; a stable group with unchanged protocols does not rebalance.
    fn replace_static_member(
        &mut self,
        req: JoinRequest,
        old_id: String,
        now: Instant,
        reply: oneshot::Sender<JoinResponse>,
    ) {
        let new_id = self.new_member_id(&req.client_id);
        let Some(mut old) = self.members.remove(&old_id) else {
            self.static_members
                .remove(req.group_instance_id.as_deref().unwrap_or(""));
            return self.add_member(new_id, req, now, reply);
        };
        if let Some(pending) = old.pending_join.take() {
            let _ = pending.send(JoinResponse::failed(GroupError::FencedInstanceId, &old_id));
        }
        if let Some(pending) = old.pending_sync.take() {
            let _ = pending.send(SyncResponse::failed(GroupError::FencedInstanceId));
        }
        if self.leader.as_deref() == Some(old_id.as_str()) {
            self.leader = Some(new_id.clone());
        }
        self.static_members.insert(
            req.group_instance_id.clone().unwrap_or_default(),
            new_id.clone(),
        );
        old.last_heard = now;
        old.client_id = req.client_id.clone();
        old.client_host = req.client_host.clone();
        // As Kafka: a stable group does not rebalance for it unless the protocol the group
        // would select changes. Its metadata may differ from the old process's last join
        // (a new consumer's subscription carries no generation) and is taken as it is.
        let old_protocols = std::mem::replace(&mut old.protocols, req.protocols.clone());
        self.members.insert(new_id.clone(), old);
        if self.phase == Phase::Stable && self.choose_protocol() == self.protocol {
            let _ = reply.send(self.current_generation(&new_id));
            return;
        }
        if let Some(member) = self.members.get_mut(&new_id) {
            member.protocols = old_protocols;
        }
        self.add_member(new_id, req, now, reply);
    }

    fn add_member(
        &mut self,
        member_id: String,
        req: JoinRequest,
        now: Instant,
        reply: oneshot::Sender<JoinResponse>,
    ) {
        if !self.members.contains_key(&member_id) && self.members.len() >= self.config.max_size {
            self.pending_members.remove(&member_id);
            let _ = reply.send(JoinResponse::failed(
                GroupError::GroupMaxSizeReached,
                &member_id,
            ));
            return;
        }
        self.pending_members.remove(&member_id);
        // A follower rejoining a stable group with what it had changes nothing: Kafka answers
        // with the current generation instead of rebalancing everyone.
        let unchanged_follower = self.phase == Phase::Stable
            && self.leader.as_deref() != Some(member_id.as_str())
            && self
                .members
                .get(&member_id)
                .is_some_and(|m| m.protocols == req.protocols);
        if unchanged_follower {
            if let Some(member) = self.members.get_mut(&member_id) {
                member.last_heard = now;
            }
            let _ = reply.send(self.current_generation(&member_id));
            return;
        }
        if let Some(instance) = &req.group_instance_id {
            self.static_members
                .insert(instance.clone(), member_id.clone());
        }
        self.next_member_seq += 1;
        let seq = self.next_member_seq;
        let member = self.members.entry(member_id).or_insert_with(|| Member {
            instance_id: req.group_instance_id.clone(),
            client_id: String::new(),
            client_host: String::new(),
            session_timeout: Duration::ZERO,
            rebalance_timeout: Duration::ZERO,
            protocols: Vec::new(),
            assignment: Bytes::new(),
            last_heard: now,
            joined_at: seq,
            pending_join: None,
            pending_sync: None,
        });
        member.client_id = req.client_id;
        member.client_host = req.client_host;
        member.session_timeout = Duration::from_millis(req.session_timeout_ms.max(0) as u64);
        member.rebalance_timeout = Duration::from_millis(req.rebalance_timeout_ms.max(0) as u64);
        member.protocols = req.protocols;
        member.last_heard = now;
        if let Some(previous) = member.pending_join.replace(reply) {
            let _ = previous.send(JoinResponse::failed(GroupError::RebalanceInProgress, ""));
        }
        if self.members.len() == 1 {
            self.protocol_type = Some(req.protocol_type);
        }
        match self.phase {
            Phase::PreparingRebalance => {
                self.extend_initial_delay(now);
                self.try_complete_join(now);
            }
            _ => self.prepare_rebalance(now),
        }
    }

    /// The stable generation as a JoinGroup answer for `member_id` (no member list: only a
    /// leader assigns, and this one need not).
    fn current_generation(&self, member_id: &str) -> JoinResponse {
        JoinResponse {
            error: None,
            generation_id: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol.clone(),
            leader: self.leader.clone().unwrap_or_default(),
            member_id: member_id.to_string(),
            members: Vec::new(),
        }
    }

    /// While the first members of an empty group arrive, wait `initial_rebalance_delay` after
    /// each, so they land in one generation (Kafka's group.initial.rebalance.delay.ms).
    fn extend_initial_delay(&mut self, now: Instant) {
        if self.initial_delay {
            let delay = Duration::from_millis(self.config.initial_rebalance_delay_ms);
            let cap = now + self.max_rebalance_timeout();
            self.join_deadline = Some((now + delay).min(cap));
        }
    }

    fn max_rebalance_timeout(&self) -> Duration {
        self.members
            .values()
            .map(|m| m.rebalance_timeout)
            .max()
            .unwrap_or(Duration::ZERO)
    }

    fn prepare_rebalance(&mut self, now: Instant) {
        let was_empty = self.phase == Phase::Empty;
        self.phase = Phase::PreparingRebalance;
        self.sync_deadline = None;
        for member in self.members.values_mut() {
            if let Some(pending) = member.pending_sync.take() {
                let _ = pending.send(SyncResponse::failed(GroupError::RebalanceInProgress));
            }
        }
        if was_empty && self.config.initial_rebalance_delay_ms > 0 {
            self.initial_delay = true;
            self.extend_initial_delay(now);
        } else {
            self.join_deadline = Some(now + self.max_rebalance_timeout());
            self.try_complete_join(now);
        }
    }

    fn try_complete_join(&mut self, now: Instant) {
        let all_joined = self.pending_members.is_empty()
            && self.members.values().all(|m| m.pending_join.is_some());
        let delay_over = !self.initial_delay || self.join_deadline.is_none_or(|d| now >= d);
        if self.phase == Phase::PreparingRebalance && all_joined && delay_over {
            self.complete_join(now);
        }
    }

    /// Ends the join phase: members that did not rejoin are dropped, a protocol and a leader
    /// are chosen, and every waiting member gets its JoinGroup answer.
    fn complete_join(&mut self, now: Instant) {
        let missing: Vec<String> = self
            .members
            .iter()
            .filter(|(_, m)| m.pending_join.is_none())
            .map(|(id, _)| id.clone())
            .collect();
        for id in missing {
            self.remove_member(&id);
        }
        self.pending_members.clear();
        self.join_deadline = None;
        self.initial_delay = false;
        self.generation += 1;
        if self.members.is_empty() {
            self.phase = Phase::Empty;
            self.protocol = None;
            self.leader = None;
            return;
        }
        self.protocol = self.choose_protocol();
        if !self
            .leader
            .as_ref()
            .is_some_and(|l| self.members.contains_key(l))
        {
            self.leader = self
                .members
                .iter()
                .min_by_key(|(_, m)| m.joined_at)
                .map(|(id, _)| id.clone());
        }
        self.phase = Phase::CompletingRebalance;
        let sync_timeout = self.max_rebalance_timeout();
        self.sync_deadline = Some(now + sync_timeout);
        let protocol = self.protocol.clone().unwrap_or_default();
        let leader = self.leader.clone().unwrap_or_default();
        let all: Vec<JoinedMember> = self
            .members
            .iter()
            .map(|(id, m)| JoinedMember {
                member_id: id.clone(),
                group_instance_id: m.instance_id.clone(),
                metadata: m.metadata_for(&protocol),
            })
            .collect();
        for (id, member) in self.members.iter_mut() {
            member.last_heard = now;
            if let Some(reply) = member.pending_join.take() {
                let _ = reply.send(JoinResponse {
                    error: None,
                    generation_id: self.generation,
                    protocol_type: self.protocol_type.clone(),
                    protocol_name: self.protocol.clone(),
                    leader: leader.clone(),
                    member_id: id.clone(),
                    members: if *id == leader {
                        all.clone()
                    } else {
                        Vec::new()
                    },
                });
            }
        }
    }

    /// The protocol every member supports that most members prefer.
    fn choose_protocol(&self) -> Option<String> {
        let first = self.members.values().min_by_key(|m| m.joined_at)?;
        let candidates: Vec<&String> = first
            .protocols
            .iter()
            .map(|(n, _)| n)
            .filter(|n| {
                self.members
                    .values()
                    .all(|m| m.protocols.iter().any(|(p, _)| p == *n))
            })
            .collect();
        let mut votes: Vec<(usize, &String)> = candidates.iter().map(|c| (0, *c)).collect();
        for member in self.members.values() {
            if let Some((n, _)) = member
                .protocols
                .iter()
                .find(|(p, _)| candidates.contains(&p))
            {
                if let Some(vote) = votes.iter_mut().find(|(_, c)| *c == n) {
                    vote.0 += 1;
                }
            }
        }
        // Ties go to the earliest member's preference.
        let best = votes.iter().map(|(v, _)| *v).max()?;
        votes
            .into_iter()
            .find(|(v, _)| *v == best)
            .map(|(_, c)| c.clone())
    }

    fn remove_member(&mut self, member_id: &str) -> bool {
        let Some(mut member) = self.members.remove(member_id) else {
            return self.pending_members.remove(member_id).is_some();
        };
        if let Some(instance) = &member.instance_id {
            if self.static_members.get(instance).map(String::as_str) == Some(member_id) {
                self.static_members.remove(instance);
            }
        }
        if let Some(reply) = member.pending_join.take() {
            let _ = reply.send(JoinResponse::failed(GroupError::UnknownMemberId, member_id));
        }
        if let Some(reply) = member.pending_sync.take() {
            let _ = reply.send(SyncResponse::failed(GroupError::UnknownMemberId));
        }
        if self.leader.as_deref() == Some(member_id) {
            self.leader = None;
        }
        true
    }

    /// After members left or expired: rebalance the survivors, or finish the join phase.
    fn after_removal(&mut self, now: Instant) {
        match self.phase {
            Phase::Stable | Phase::CompletingRebalance => {
                if self.members.is_empty() {
                    self.phase = Phase::Empty;
                    self.generation += 1;
                    self.protocol = None;
                    self.leader = None;
                    self.sync_deadline = None;
                } else {
                    self.prepare_rebalance(now);
                }
            }
            Phase::PreparingRebalance => self.try_complete_join(now),
            Phase::Empty => {}
        }
    }

    /// Checks a request from a member of the current generation.
    fn check_member(&self, m: &MemberRef) -> Result<(), GroupError> {
        if let Some(instance) = &m.group_instance_id {
            match self.static_members.get(instance) {
                Some(id) if *id != m.member_id => return Err(GroupError::FencedInstanceId),
                _ => {}
            }
        }
        if !self.members.contains_key(&m.member_id) {
            return Err(GroupError::UnknownMemberId);
        }
        if m.generation_id != self.generation {
            return Err(GroupError::IllegalGeneration);
        }
        Ok(())
    }

    pub fn sync(&mut self, req: SyncRequest, now: Instant, reply: oneshot::Sender<SyncResponse>) {
        if let Err(e) = self.check_member(&req.member) {
            let _ = reply.send(SyncResponse::failed(e));
            return;
        }
        let mismatched =
            |given: &Option<String>, ours: &Option<String>| given.is_some() && given != ours;
        if mismatched(&req.protocol_type, &self.protocol_type)
            || mismatched(&req.protocol_name, &self.protocol)
        {
            let _ = reply.send(SyncResponse::failed(GroupError::InconsistentGroupProtocol));
            return;
        }
        let member_id = req.member.member_id.clone();
        if let Some(member) = self.members.get_mut(&member_id) {
            member.last_heard = now;
        }
        match self.phase {
            Phase::Empty => {
                let _ = reply.send(SyncResponse::failed(GroupError::UnknownMemberId));
            }
            Phase::PreparingRebalance => {
                let _ = reply.send(SyncResponse::failed(GroupError::RebalanceInProgress));
            }
            Phase::Stable => {
                let assignment = self.members[&member_id].assignment.clone();
                let _ = reply.send(self.sync_answer(assignment));
            }
            Phase::CompletingRebalance => {
                if let Some(member) = self.members.get_mut(&member_id) {
                    member.pending_sync = Some(reply);
                }
                if self.leader.as_deref() == Some(member_id.as_str()) {
                    let assignments: HashMap<String, Bytes> = req.assignments.into_iter().collect();
                    for (id, member) in self.members.iter_mut() {
                        member.assignment = assignments.get(id).cloned().unwrap_or_default();
                    }
                    self.phase = Phase::Stable;
                    self.sync_deadline = None;
                    let answers: Vec<(oneshot::Sender<SyncResponse>, Bytes)> = self
                        .members
                        .values_mut()
                        .filter_map(|m| m.pending_sync.take().map(|r| (r, m.assignment.clone())))
                        .collect();
                    for (reply, assignment) in answers {
                        let _ = reply.send(self.sync_answer(assignment));
                    }
                }
            }
        }
    }

    fn sync_answer(&self, assignment: Bytes) -> SyncResponse {
        SyncResponse {
            error: None,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol.clone(),
            assignment,
        }
    }

    pub fn heartbeat(&mut self, m: &MemberRef, now: Instant) -> Option<GroupError> {
        if self.phase == Phase::Empty {
            return Some(GroupError::UnknownMemberId);
        }
        if let Err(e) = self.check_member(m) {
            // A member of the previous generation learns of the rebalance this way too.
            if e == GroupError::IllegalGeneration && self.phase == Phase::PreparingRebalance {
                return Some(GroupError::RebalanceInProgress);
            }
            return Some(e);
        }
        if let Some(member) = self.members.get_mut(&m.member_id) {
            member.last_heard = now;
        }
        match self.phase {
            Phase::PreparingRebalance => Some(GroupError::RebalanceInProgress),
            _ => None,
        }
    }

    /// OffsetCommit: a member of the current generation, or anyone (generation -1) while the
    /// group has no members.
    pub fn validate_commit(&mut self, m: &MemberRef, now: Instant) -> Option<GroupError> {
        if m.generation_id < 0 && m.member_id.is_empty() {
            return (!self.members.is_empty()).then_some(GroupError::UnknownMemberId);
        }
        if let Err(e) = self.check_member(m) {
            return Some(e);
        }
        if let Some(member) = self.members.get_mut(&m.member_id) {
            member.last_heard = now;
        }
        (self.phase == Phase::CompletingRebalance).then_some(GroupError::RebalanceInProgress)
    }

    pub fn leave(&mut self, members: &[LeavingMember], now: Instant) -> Vec<Option<GroupError>> {
        let mut results = Vec::with_capacity(members.len());
        let mut removed = false;
        for leaving in members {
            let member_id = match &leaving.group_instance_id {
                Some(instance) => match self.static_members.get(instance) {
                    Some(id) if leaving.member_id.is_empty() || *id == leaving.member_id => {
                        id.clone()
                    }
                    Some(_) => {
                        results.push(Some(GroupError::FencedInstanceId));
                        continue;
                    }
                    None => {
                        results.push(Some(GroupError::UnknownMemberId));
                        continue;
                    }
                },
                None => leaving.member_id.clone(),
            };
            if self.remove_member(&member_id) {
                removed = true;
                results.push(None);
            } else {
                results.push(Some(GroupError::UnknownMemberId));
            }
        }
        if removed {
            self.after_removal(now);
        }
        results
    }

    /// When a silent member's session ends: members waiting in JoinGroup or SyncGroup are
    /// not silent.
    fn session_deadline(member: &Member) -> Option<Instant> {
        (member.pending_join.is_none() && member.pending_sync.is_none())
            .then(|| member.last_heard + member.session_timeout)
    }

    /// The next moment `tick` has work to do: a session or a pending member id ending, or the
    /// join or sync phase running out of time.
    pub fn next_deadline(&self) -> Option<Instant> {
        let phase_deadline = match self.phase {
            Phase::PreparingRebalance => self.join_deadline,
            Phase::CompletingRebalance => self.sync_deadline,
            Phase::Empty | Phase::Stable => None,
        };
        self.members
            .values()
            .filter_map(Self::session_deadline)
            .chain(self.pending_members.values().copied())
            .chain(phase_deadline)
            .min()
    }

    /// Expires silent members and pending ids, and ends join/sync phases that ran out of time.
    pub fn tick(&mut self, now: Instant) {
        let pending_before = self.pending_members.len();
        self.pending_members.retain(|_, deadline| *deadline > now);
        let pending_expired = self.pending_members.len() < pending_before;
        let expired: Vec<String> = self
            .members
            .iter()
            .filter(|(_, m)| Self::session_deadline(m).is_some_and(|d| now >= d))
            .map(|(id, _)| id.clone())
            .collect();
        if !expired.is_empty() {
            tracing::info!(group = %self.id, members = ?expired, "session timeout: members removed");
            for id in &expired {
                self.remove_member(id);
            }
            self.after_removal(now);
        } else if pending_expired && self.phase == Phase::PreparingRebalance {
            // The join phase may have been waiting only for the ids that never came back.
            self.try_complete_join(now);
        }
        match self.phase {
            Phase::PreparingRebalance if self.join_deadline.is_some_and(|d| now >= d) => {
                self.complete_join(now)
            }
            Phase::CompletingRebalance if self.sync_deadline.is_some_and(|d| now >= d) => {
                // The leader never sent the assignment: drop who has not synced, start over.
                let silent: Vec<String> = self
                    .members
                    .iter()
                    .filter(|(_, m)| m.pending_sync.is_none())
                    .map(|(id, _)| id.clone())
                    .collect();
                for id in &silent {
                    self.remove_member(id);
                }
                self.after_removal(now);
            }
            _ => {}
        }
    }

    pub fn describe(&self) -> GroupDescription {
        let protocol = self.protocol.clone().unwrap_or_default();
        GroupDescription {
            group_id: self.id.clone(),
            state: self.phase.name(),
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            protocol: protocol.clone(),
            members: self
                .members
                .iter()
                .map(|(id, m)| MemberDescription {
                    member_id: id.clone(),
                    group_instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    metadata: m.metadata_for(&protocol),
                    assignment: m.assignment.clone(),
                })
                .collect(),
        }
    }

    /// The group as ListGroups shows it, without copying its members.
    pub fn listing(&self) -> GroupListing {
        GroupListing {
            group_id: self.id.clone(),
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            state: self.phase.name(),
            group_type: "classic",
        }
    }

    /// Member metadata of the chosen protocol (the consumer protocol's subscriptions).
    pub fn member_metadata(&self) -> Vec<Bytes> {
        let protocol = self.protocol.as_deref().unwrap_or_default();
        self.members
            .values()
            .map(|m| m.metadata_for(protocol))
            .collect()
    }
}
