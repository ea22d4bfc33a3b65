//! One consumer group of the KIP-848 protocol: its members, the group epoch (bumped whenever
//! membership, a subscription or a subscribed topic's partitions change), the target
//! assignment computed for it, and each member's reconciliation towards its target, one
//! heartbeat at a time. Kafka 4.x's rules: epoch 0 joins, -1 leaves, -2 leaves a static
//! member's place open for its return; a member may repeat its previous epoch only when an
//! answer was lost (and it owns nothing new); anything else is fenced.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use regex::Regex;
use shoal_coordinator::TopicPartition;
use uuid::Uuid;

use super::assignor::{Assignment, Assignor, AssignorMember};
use super::reconcile::{MemberAssignment, MemberState};
use crate::groups::deadlines::{EarliestDeadline, MemberDeadlines};
use crate::groups::GroupError;

/// A member's maps, deadlines and assignment state, beside its strings and partitions.
pub(super) const MEMBER_OVERHEAD_BYTES: usize = 512;

pub const JOIN_EPOCH: i32 = 0;
pub const LEAVE_EPOCH: i32 = -1;
pub const STATIC_LEAVE_EPOCH: i32 = -2;

/// One ConsumerGroupHeartbeat, as the group needs it (`None`: the field was null, unchanged).
#[derive(Debug, Clone, Default)]
pub struct Heartbeat {
    pub member_id: String,
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    /// Who sent it, as ConsumerGroupDescribe reports members.
    pub client_id: String,
    pub client_host: String,
    /// -1 when not sent.
    pub rebalance_timeout_ms: i32,
    pub subscribed_topic_names: Option<BTreeSet<String>>,
    /// A subscription by regular expression (RE2 syntax, matching whole names); an empty one
    /// clears it.
    pub subscribed_topic_regex: Option<String>,
    pub server_assignor: Option<String>,
    /// The partitions the member owns.
    pub owned: Option<BTreeSet<TopicPartition>>,
    /// Whose ACLs decide which topics its expression may match (None: every topic).
    pub access: Option<TopicAccess>,
}

/// A member's right to see topics, as the ACLs grant it DESCRIBE: topics its expression
/// matches that it may not describe are not assigned to it (Kafka's rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicAccess {
    pub principal: String,
    /// Its address, as ACLs name hosts.
    pub host: String,
    /// The authorizer's `allow_everyone_if_no_acl_found`.
    pub allow_if_no_acl: bool,
}

impl Heartbeat {
    /// What a joining member brings, as the shard's group memory counts it (as a stored
    /// member is counted, before its partitions).
    pub fn memory_bytes(&self) -> usize {
        MEMBER_OVERHEAD_BYTES
            + self.member_id.len()
            + self.instance_id.as_ref().map_or(0, String::len)
            + self.client_id.len()
            + self.client_host.len()
            + self.subscription_bytes()
    }

    /// Its subscription's topic names and expression, in bytes.
    pub fn subscription_bytes(&self) -> usize {
        let names = self.subscribed_topic_names.iter().flatten();
        names.map(String::len).sum::<usize>()
            + self.subscribed_topic_regex.as_ref().map_or(0, String::len)
    }

    /// A full heartbeat (joining, or after an error) carries everything; the group answers it
    /// with the whole assignment.
    fn is_full(&self) -> bool {
        self.rebalance_timeout_ms != -1
            && (self.subscribed_topic_names.is_some() || self.subscribed_topic_regex.is_some())
            && self.owned.is_some()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatAnswer {
    pub member_id: String,
    pub member_epoch: i32,
    /// Sent when it changed, to a full heartbeat, and to a member behind its epoch.
    pub assignment: Option<BTreeSet<TopicPartition>>,
}

#[derive(Debug, Clone)]
pub struct Member {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub access: Option<TopicAccess>,
    pub rebalance_timeout: Duration,
    pub subscribed: BTreeSet<String>,
    /// Its expression as sent, and compiled to match whole topic names.
    pub regex: Option<(String, Regex)>,
    pub server_assignor: Option<String>,
    pub assignment: MemberAssignment,
    /// The epoch before the last change, accepted again from a member whose answer was lost.
    pub previous_epoch: i32,
    pub session_deadline: Instant,
    /// Set while it must revoke: by then it has, or it is fenced.
    pub revocation_deadline: Option<Instant>,
    /// A static member that left with -2: its place (and partitions) wait for its instance.
    pub left_statically: bool,
    /// A member of the classic protocol (online migration): it joins, syncs and heartbeats
    /// with the classic requests, and the broker hands it its assignment at SyncGroup. Boxed:
    /// members are mostly of the consumer protocol, and a smaller member is a faster heartbeat
    /// in a large group.
    pub classic: Option<Box<ClassicMember>>,
}

impl MemberDeadlines for Member {
    fn session_deadline(&self) -> Instant {
        self.session_deadline
    }

    fn revocation_deadline(&self) -> Option<Instant> {
        self.revocation_deadline
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassicMember {
    pub session_timeout: Duration,
    /// (name, metadata) of the protocols it supports, as its last JoinGroup sent them.
    pub protocols: Vec<(String, bytes::Bytes)>,
}

/// The cluster's topics as the group sees them: a name's (id, partition count), if it exists.
pub trait Topics {
    fn lookup(&self, name: &str) -> Option<(Uuid, i32)>;
    /// The names of every topic `regex` matches.
    fn matching(&self, regex: &Regex) -> Vec<String>;
    /// Changes whenever the topics do: what was resolved against an older version is redone.
    fn version(&self) -> u64;
    /// A topic's name by its id (classic members are told their partitions by name).
    fn name_of(&self, id: Uuid) -> Option<String>;
    /// Whether `access` may describe topic `name` (without ACLs: always).
    fn describable(&self, _access: &TopicAccess, _name: &str) -> bool {
        true
    }
}

impl Topics for BTreeMap<String, (Uuid, i32)> {
    fn lookup(&self, name: &str) -> Option<(Uuid, i32)> {
        self.get(name).copied()
    }

    fn version(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.hash(&mut hasher);
        hasher.finish()
    }

    fn matching(&self, regex: &Regex) -> Vec<String> {
        self.keys().filter(|n| regex.is_match(n)).cloned().collect()
    }

    fn name_of(&self, id: Uuid) -> Option<String> {
        self.iter().find(|(_, t)| t.0 == id).map(|(n, _)| n.clone())
    }
}

pub struct ConsumerGroup {
    pub group_epoch: i32,
    /// The epoch `target` was computed for.
    pub assignment_epoch: i32,
    pub members: BTreeMap<String, Member>,
    pub target: Assignment,
    /// The subscribed topics' partition counts the target was computed from.
    pub(super) subscribed_topics: BTreeMap<Uuid, i32>,
    /// Each member's subscription resolved against the topics of `topics_version`: its
    /// topics' ids and partition counts. Members in `unresolved` are redone at the next
    /// heartbeat (joined, or changed their subscription); all are when the topics change.
    resolved: BTreeMap<String, BTreeMap<Uuid, i32>>,
    pub(super) unresolved: BTreeSet<String>,
    topics_version: Option<u64>,
    /// Which member holds each partition (assigned or not yet confirmed revoked).
    pub(super) holders: HashMap<TopicPartition, String>,
    /// A bound on the members' deadlines, so `expire` need not look at every member at
    /// every heartbeat.
    deadlines: EarliestDeadline,
    default_assignor: Assignor,
    max_size: usize,
    /// Applies from each member's next heartbeat (the group's config can change).
    pub session_timeout: Duration,
    /// Members whose stored record is out of date (joined, changed, reconciled, got a new
    /// target, or left), and the epochs last stored: what the next write must carry.
    pub(super) unstored_members: BTreeSet<String>,
    pub(super) stored_epochs: (i32, i32),
    /// How many changes were taken to be stored (each write names its number).
    pub(super) stored_changes: i64,
    /// Each member's estimated memory as last stored, and their sum.
    pub(super) member_bytes: HashMap<String, usize>,
    pub(super) memory_bytes: usize,
}

impl ConsumerGroup {
    pub fn new(default_assignor: Assignor, max_size: usize, session_timeout: Duration) -> Self {
        ConsumerGroup {
            group_epoch: 0,
            assignment_epoch: 0,
            members: BTreeMap::new(),
            target: Assignment::new(),
            subscribed_topics: BTreeMap::new(),
            resolved: BTreeMap::new(),
            unresolved: BTreeSet::new(),
            topics_version: None,
            holders: HashMap::new(),
            deadlines: EarliestDeadline::default(),
            default_assignor,
            max_size,
            session_timeout,
            unstored_members: BTreeSet::new(),
            stored_epochs: (0, 0),
            stored_changes: 0,
            member_bytes: HashMap::new(),
            memory_bytes: 0,
        }
    }

    pub fn heartbeat(
        &mut self,
        request: Heartbeat,
        topics: &impl Topics,
        now: Instant,
    ) -> Result<HeartbeatAnswer, GroupError> {
        if request.member_id.is_empty() {
            return Err(GroupError::MemberIdRequired);
        }
        // Refused before anything changes.
        let regex = match request.subscribed_topic_regex.as_deref() {
            Some(expression) if !expression.is_empty() => Some(whole_name_regex(expression)?),
            _ => None,
        };
        let assignor = request.server_assignor.as_deref().map(Assignor::by_name);
        if assignor == Some(None) {
            return Err(GroupError::UnsupportedAssignor);
        }
        match request.member_epoch {
            LEAVE_EPOCH | STATIC_LEAVE_EPOCH => return self.leave(&request),
            JOIN_EPOCH => self.join(&request, now)?,
            epoch => self.check_epoch(&request, epoch)?,
        }
        let member = self
            .members
            .get_mut(&request.member_id)
            .expect("joined or checked");
        member.session_deadline = now + self.session_timeout;
        // A session shortened by the group's config may end before the bound.
        self.deadlines.lower_to(member.session_deadline);
        let mut stored_fields_changed = false;
        if request.rack_id.is_some() && member.rack_id != request.rack_id {
            member.rack_id = request.rack_id.clone();
            stored_fields_changed = true;
        }
        if request.rebalance_timeout_ms >= 0 {
            let timeout = Duration::from_millis(request.rebalance_timeout_ms as u64);
            stored_fields_changed |= member.rebalance_timeout != timeout;
            member.rebalance_timeout = timeout;
        }
        let mut changed = false;
        if let Some(names) = &request.subscribed_topic_names {
            changed |= member.subscribed != *names;
            member.subscribed = names.clone();
        }
        if let Some(expression) = &request.subscribed_topic_regex {
            let before = member.regex.as_ref().map(|(e, _)| e.clone());
            if before.as_ref() != Some(expression) {
                member.regex = regex.map(|r| (expression.clone(), r));
                changed |= before.is_some() || member.regex.is_some();
            }
        }
        if let Some(assignor) = &request.server_assignor {
            changed |= member.server_assignor.as_deref() != Some(assignor.as_str());
            member.server_assignor = Some(assignor.clone());
        }
        if changed {
            self.group_epoch += 1;
            self.unresolved.insert(request.member_id.clone());
        }
        if member.access != request.access {
            // Its ACLs decide what its expression matches: resolved again.
            member.access = request.access.clone();
            self.unresolved.insert(request.member_id.clone());
            stored_fields_changed = true;
        }
        if changed || stored_fields_changed {
            self.unstored_members.insert(request.member_id.clone());
        }
        self.refresh_target(topics);
        Ok(self.reconcile(&request, now))
    }

    fn join(&mut self, request: &Heartbeat, now: Instant) -> Result<(), GroupError> {
        let subscribes =
            request.subscribed_topic_names.is_some() || request.subscribed_topic_regex.is_some();
        if request.rebalance_timeout_ms < 0 || !subscribes {
            return Err(GroupError::InvalidRequest);
        }
        let returning = request.instance_id.as_ref().and_then(|instance| {
            self.members
                .iter()
                .find(|(_, m)| m.instance_id.as_ref() == Some(instance))
                .map(|(id, m)| (id.clone(), m.left_statically))
        });
        match returning {
            // Another member has this instance id and has not left: it stays, this one waits.
            Some((id, false)) if id != request.member_id => {
                return Err(GroupError::UnreleasedInstanceId)
            }
            // A static member back: its place, partitions and target, no rebalance.
            Some((id, true)) => {
                let mut member = self.members.remove(&id).expect("found above");
                member.left_statically = false;
                member.client_id = request.client_id.clone();
                member.client_host = request.client_host.clone();
                let new_id = request.member_id.clone();
                if let Some(target) = self.target.remove(&id) {
                    self.target.insert(new_id.clone(), target);
                }
                if let Some(resolved) = self.resolved.remove(&id) {
                    self.resolved.insert(new_id.clone(), resolved);
                }
                for p in member
                    .assignment
                    .assigned
                    .iter()
                    .chain(&member.assignment.revoking)
                {
                    self.holders.insert(*p, new_id.clone());
                }
                self.unstored_members.insert(id);
                self.unstored_members.insert(new_id.clone());
                self.members.insert(new_id, member);
                return Ok(());
            }
            _ => {}
        }
        if self.members.contains_key(&request.member_id) {
            // Rejoining with epoch 0 gives up what it had: released to the others.
            self.remove(&request.member_id);
        } else if self.members.len() >= self.max_size {
            return Err(GroupError::GroupMaxSizeReached);
        }
        self.members.insert(
            request.member_id.clone(),
            Member {
                instance_id: request.instance_id.clone(),
                rack_id: None,
                client_id: request.client_id.clone(),
                client_host: request.client_host.clone(),
                access: request.access.clone(),
                rebalance_timeout: Duration::ZERO,
                subscribed: BTreeSet::new(),
                regex: None,
                server_assignor: None,
                assignment: MemberAssignment::joined(),
                previous_epoch: JOIN_EPOCH,
                session_deadline: now + self.session_timeout,
                revocation_deadline: None,
                left_statically: false,
                classic: None,
            },
        );
        self.unresolved.insert(request.member_id.clone());
        self.unstored_members.insert(request.member_id.clone());
        self.group_epoch += 1;
        Ok(())
    }

    /// A known member at its epoch, or at its previous one when the answer that moved it
    /// on was lost and it owns nothing it no longer has.
    fn check_epoch(&self, request: &Heartbeat, epoch: i32) -> Result<(), GroupError> {
        let member = self
            .members
            .get(&request.member_id)
            .filter(|m| !m.left_statically)
            .ok_or(GroupError::UnknownMemberId)?;
        let current = member.assignment.epoch;
        let lost_answer = epoch == member.previous_epoch
            && request
                .owned
                .as_ref()
                .is_some_and(|owned| owned.is_subset(&member.assignment.assigned));
        match epoch == current || (epoch < current && lost_answer) {
            true => Ok(()),
            false => Err(GroupError::FencedMemberEpoch),
        }
    }

    fn leave(&mut self, request: &Heartbeat) -> Result<HeartbeatAnswer, GroupError> {
        let Some(member) = self.members.get_mut(&request.member_id) else {
            return Err(GroupError::UnknownMemberId);
        };
        if request.member_epoch == STATIC_LEAVE_EPOCH && member.instance_id.is_some() {
            // Its partitions stay held until it returns or its session ends.
            member.left_statically = true;
            self.unstored_members.insert(request.member_id.clone());
        } else {
            self.remove(&request.member_id);
        }
        Ok(HeartbeatAnswer {
            member_id: request.member_id.clone(),
            member_epoch: request.member_epoch,
            assignment: None,
        })
    }

    /// Kafka's consumer group states: Empty, Stable, or Reconciling while a member is
    /// short of its target.
    pub fn state(&self) -> &'static str {
        let settled = self.assignment_epoch == self.group_epoch
            && self.members.values().all(|m| {
                m.assignment.state == MemberState::Stable
                    && m.assignment.epoch == self.assignment_epoch
            });
        match (self.members.is_empty(), settled) {
            (true, _) => "Empty",
            (false, true) => "Stable",
            (false, false) => "Reconciling",
        }
    }

    /// Removes a member (left, or fenced by a timeout); its partitions go to the others.
    pub fn remove(&mut self, member_id: &str) {
        let Some(member) = self.members.remove(member_id) else {
            return;
        };
        self.target.remove(member_id);
        self.resolved.remove(member_id);
        self.unresolved.remove(member_id);
        self.unstored_members.insert(member_id.to_string());
        for p in member
            .assignment
            .assigned
            .iter()
            .chain(&member.assignment.revoking)
        {
            self.holders.remove(p);
        }
        self.group_epoch += 1;
    }

    /// A member's deadline was set to `at`, perhaps earlier than any known: the bound on the
    /// earliest follows it down.
    pub(super) fn deadline_set(&mut self, at: Instant) {
        self.deadlines.lower_to(at);
    }

    /// When sessions must next be checked: the earliest deadline of a member if known, else
    /// now (the check finds it).
    pub fn next_check(&self, now: Instant) -> Instant {
        self.deadlines.next_check(now)
    }

    /// Members whose session ended, or that did not revoke within their rebalance timeout,
    /// are removed; returns their ids.
    pub fn expire(&mut self, now: Instant) -> Vec<String> {
        let Some(expired) = self.deadlines.lapsed(&self.members, now) else {
            return Vec::new();
        };
        for id in &expired {
            self.remove(id);
        }
        self.deadlines.recompute(&self.members);
        expired
    }

    /// Recomputes the target when the group epoch moved past it or a subscribed topic changed
    /// (created, deleted, grown, or newly matched by a member's expression). Subscriptions
    /// are resolved again only for members that changed, or for all when the topics did.
    fn refresh_target(&mut self, topics: &impl Topics) {
        if self.topics_version != Some(topics.version()) {
            self.topics_version = Some(topics.version());
            self.unresolved.extend(self.members.keys().cloned());
        }
        if !self.unresolved.is_empty() {
            for id in std::mem::take(&mut self.unresolved) {
                if let Some(member) = self.members.get(&id) {
                    self.resolved.insert(id, resolve(member, topics));
                }
            }
            let by_id: BTreeMap<Uuid, i32> = self
                .resolved
                .values()
                .flatten()
                .map(|(k, v)| (*k, *v))
                .collect();
            if by_id != self.subscribed_topics {
                self.subscribed_topics = by_id;
                self.group_epoch += 1;
            }
        }
        if self.assignment_epoch == self.group_epoch {
            return;
        }
        let members = self
            .members
            .keys()
            .map(|id| {
                let previous = self.target.get(id).cloned().unwrap_or_default();
                let subscribed = self.resolved.get(id).map(|t| t.keys().copied().collect());
                let subscribed = subscribed.unwrap_or_default();
                (
                    id.clone(),
                    AssignorMember {
                        subscribed,
                        previous,
                    },
                )
            })
            .collect();
        let target = self.assignor().assign(&members, &self.subscribed_topics);
        for (id, partitions) in &target {
            if self.target.get(id) != Some(partitions) {
                self.unstored_members.insert(id.clone());
            }
        }
        self.target = target;
        self.assignment_epoch = self.group_epoch;
    }

    /// The members' preferred assignor when they all name the same one, else the default.
    pub(super) fn assignor(&self) -> Assignor {
        let named: BTreeSet<&str> = self
            .members
            .values()
            .filter_map(|m| m.server_assignor.as_deref())
            .collect();
        match named.len() {
            1 => named
                .into_iter()
                .next()
                .and_then(Assignor::by_name)
                .unwrap_or(self.default_assignor),
            _ => self.default_assignor,
        }
    }

    fn reconcile(&mut self, request: &Heartbeat, now: Instant) -> HeartbeatAnswer {
        let id = &request.member_id;
        let target = self.target.get(id).cloned().unwrap_or_default();
        let holders = &self.holders;
        let next = self.members[id].assignment.advance(
            self.assignment_epoch,
            &target,
            request.owned.as_ref(),
            |p| holders.get(p).is_some_and(|holder| holder != id),
        );
        let member = self.members.get_mut(id).expect("present");
        let before = &member.assignment;
        let assignment_changed = next.assigned != before.assigned;
        for p in before.assigned.iter().chain(&before.revoking) {
            if !next.holds(p) {
                self.holders.remove(p);
            }
        }
        for p in next.assigned.iter().chain(&next.revoking) {
            self.holders.insert(*p, id.clone());
        }
        if next != member.assignment {
            self.unstored_members.insert(id.clone());
        }
        if next.epoch != member.assignment.epoch {
            member.previous_epoch = member.assignment.epoch;
        }
        member.revocation_deadline = match next.state {
            MemberState::UnrevokedPartitions => member
                .revocation_deadline
                .or(Some(now + member.rebalance_timeout)),
            _ => None,
        };
        member.assignment = next;
        if let Some(deadline) = member.revocation_deadline {
            self.deadlines.lower_to(deadline);
        }
        // A member behind the epoch it is answered with (its last answer was lost) gets the
        // whole assignment too.
        let send = request.member_epoch != member.assignment.epoch
            || request.is_full()
            || assignment_changed;
        HeartbeatAnswer {
            member_id: id.clone(),
            member_epoch: member.assignment.epoch,
            assignment: send.then(|| member.assignment.assigned.clone()),
        }
    }
}

/// A member's subscribed topics that exist: by name, and by its expression.
fn resolve(member: &Member, topics: &impl Topics) -> BTreeMap<Uuid, i32> {
    let visible = |name: &String| {
        member
            .access
            .as_ref()
            .is_none_or(|access| topics.describable(access, name))
    };
    let by_regex = member
        .regex
        .iter()
        .flat_map(|(_, r)| topics.matching(r))
        .filter(visible);
    member
        .subscribed
        .iter()
        .cloned()
        .chain(by_regex)
        .filter_map(|name| topics.lookup(&name))
        .collect()
}

/// Kafka matches an expression against whole topic names (RE2/J's `matches`).
pub(super) fn whole_name_regex(expression: &str) -> Result<Regex, GroupError> {
    crate::client_regex::whole_match(expression).ok_or(GroupError::InvalidRegularExpression)
}

#[cfg(test)]
#[path = "group_tests.rs"]
mod tests;
