//! One streams group (KIP-1071): its topology (set by the first member, replaced by a member
//! with a newer epoch), the topology configured against the topics, its members, the group
//! epoch (bumped when membership, a member's process or endpoint, the topology or its tasks
//! change), the target assignment computed for it, and each member's reconciliation towards
//! its target, one heartbeat at a time. Epoch 0 joins, -1 leaves, -2 leaves a static
//! member's place open for its return.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use super::assignor::{assign, AssignorMember};
use super::reconcile::{MemberState, MemberTasks};
use super::stored::Stored;
use super::tasks::{Role, TaskId, Tasks};
use super::topology::{Configured, InternalTopic, StatusCode, Topology};
use crate::groups::consumer::group::{Topics, JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH};
use crate::groups::deadlines::{EarliestDeadline, MemberDeadlines};
use crate::groups::GroupError;

/// A member's maps, deadlines and strings beside its tasks, as the shard's memory counts it.
pub(super) const MEMBER_OVERHEAD_BYTES: usize = 768;
pub(super) const TASK_BYTES: usize = 96;
/// Client tags one member may send.
const MAX_CLIENT_TAGS: usize = 64;

/// An interactive-queries endpoint (`application.server`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
}

/// One StreamsGroupHeartbeat, as the group needs it (`None`: the field was null, unchanged).
#[derive(Debug, Clone, Default)]
pub struct StreamsHeartbeat {
    pub member_id: String,
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    /// -1 when not sent.
    pub rebalance_timeout_ms: i32,
    pub client_id: String,
    pub client_host: String,
    pub topology: Option<Topology>,
    /// The tasks it runs.
    pub owned: Option<Tasks>,
    pub process_id: Option<String>,
    pub user_endpoint: Option<Endpoint>,
    pub client_tags: Option<BTreeMap<String, String>>,
    pub task_offsets: Option<Vec<(TaskId, i64)>>,
    pub task_end_offsets: Option<Vec<(TaskId, i64)>>,
    pub shutdown_application: bool,
    /// The endpoint information epoch it last got.
    pub endpoint_epoch: i32,
}

impl StreamsHeartbeat {
    /// What a joining member brings, before its tasks.
    pub fn memory_bytes(&self) -> usize {
        let topology = self.topology.as_ref().map_or(0, Topology::memory_bytes);
        MEMBER_OVERHEAD_BYTES + self.member_id.len() + self.client_id.len() + topology
    }
}

/// One member's share of the group's endpoints: the partitions its tasks read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointPartitions {
    pub endpoint: Endpoint,
    pub active: BTreeMap<String, Vec<i32>>,
    pub standby: BTreeMap<String, Vec<i32>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamsAnswer {
    pub member_id: String,
    pub member_epoch: i32,
    /// Sent to a joining member, when they changed, and to a member behind its epoch.
    pub tasks: Option<Tasks>,
    pub statuses: Vec<(StatusCode, String)>,
    pub endpoint_epoch: i32,
    /// Sent when the member's endpoint epoch is not the group's.
    pub endpoints: Option<Vec<EndpointPartitions>>,
    /// Internal topics the broker is to create.
    pub to_create: Vec<InternalTopic>,
}

#[derive(Debug, Clone)]
pub struct Member {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub process_id: String,
    pub user_endpoint: Option<Endpoint>,
    pub client_tags: BTreeMap<String, String>,
    pub topology_epoch: i32,
    pub rebalance_timeout: Duration,
    pub tasks: MemberTasks,
    /// The epoch before the last change, accepted again from a member whose answer was lost.
    pub previous_epoch: i32,
    pub task_offsets: Vec<(TaskId, i64)>,
    pub task_end_offsets: Vec<(TaskId, i64)>,
    pub session_deadline: Instant,
    pub revocation_deadline: Option<Instant>,
    pub left_statically: bool,
}

impl MemberDeadlines for Member {
    fn session_deadline(&self) -> Instant {
        self.session_deadline
    }

    fn revocation_deadline(&self) -> Option<Instant> {
        self.revocation_deadline
    }
}

pub struct StreamsGroup {
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub topology: Option<Topology>,
    pub configured: Configured,
    /// The topics `configured` was computed against.
    topics_version: Option<u64>,
    pub members: BTreeMap<String, Member>,
    pub target: BTreeMap<String, Tasks>,
    /// Who runs each task as active (assigned or revoking), and who has it otherwise.
    active_holders: HashMap<TaskId, String>,
    other_holders: HashMap<TaskId, BTreeSet<String>>,
    pub endpoint_epoch: i32,
    pub shutdown_requested_by: Option<String>,
    max_size: usize,
    pub session_timeout: Duration,
    pub standby_replicas: usize,
    /// A bound on the members' deadlines, so `expire` need not look at every member at
    /// every heartbeat.
    deadlines: EarliestDeadline,
    /// What was last stored in the coordinator's log (`stored.rs`).
    pub(super) stored: Stored,
    /// Read back from the log and not yet configured against the topics: the first
    /// configuration takes the stored assignment as it is.
    pub(super) restored: bool,
}

impl StreamsGroup {
    pub fn new(max_size: usize, session_timeout: Duration, standby_replicas: usize) -> Self {
        StreamsGroup {
            group_epoch: 0,
            assignment_epoch: 0,
            topology: None,
            configured: Configured::default(),
            topics_version: None,
            members: BTreeMap::new(),
            target: BTreeMap::new(),
            active_holders: HashMap::new(),
            other_holders: HashMap::new(),
            endpoint_epoch: 0,
            shutdown_requested_by: None,
            max_size,
            session_timeout,
            standby_replicas,
            deadlines: EarliestDeadline::default(),
            stored: Stored::default(),
            restored: false,
        }
    }

    /// A member read back from the log, holding what it held.
    pub(super) fn restore_member(&mut self, id: &str, member: Member) {
        self.hold(id, &member.tasks.held());
        self.members.insert(id.to_string(), member);
    }

    pub fn heartbeat(
        &mut self,
        request: StreamsHeartbeat,
        topics: &impl Topics,
        now: Instant,
    ) -> Result<StreamsAnswer, GroupError> {
        check(&request)?;
        match request.member_epoch {
            LEAVE_EPOCH | STATIC_LEAVE_EPOCH => return self.leave(&request),
            JOIN_EPOCH => self.join(&request, now)?,
            epoch => self.check_epoch(&request, epoch)?,
        }
        self.stored.touched.insert(request.member_id.clone());
        let mut bump = false;
        if let Some(topology) = &request.topology {
            bump |= self.take_topology(topology)?;
        }
        let member = self
            .members
            .get_mut(&request.member_id)
            .expect("joined or checked");
        member.session_deadline = now + self.session_timeout;
        // A session shortened by the group's config may end before the bound.
        self.deadlines.lower_to(member.session_deadline);
        bump |= update_member(member, &request);
        if self.topics_version != Some(topics.version()) || bump {
            self.topics_version = Some(topics.version());
            let configured = match &self.topology {
                Some(topology) => topology.configure(topics),
                None => Configured::default(),
            };
            bump |= configured.tasks != self.configured.tasks && !self.restored;
            self.restored = false;
            self.configured = configured;
        }
        if bump {
            self.group_epoch += 1;
        }
        if request.shutdown_application {
            self.shutdown_requested_by = Some(request.member_id.clone());
        }
        self.refresh_target();
        Ok(self.reconcile(&request, now))
    }

    /// The topology a joining member sends: the first sets it, a newer epoch replaces it, an
    /// older one is answered with the STALE_TOPOLOGY status. Whether the epoch moves.
    fn take_topology(&mut self, topology: &Topology) -> Result<bool, GroupError> {
        match &self.topology {
            Some(current) if current.epoch > topology.epoch => Ok(false),
            Some(current) if current.epoch == topology.epoch => match current == topology {
                true => Ok(false),
                // Kafka's rule: a changed topology comes with a new epoch.
                false => Err(GroupError::StreamsInvalidTopologyEpoch),
            },
            _ => {
                self.topology = Some(topology.clone());
                Ok(true)
            }
        }
    }

    fn join(&mut self, request: &StreamsHeartbeat, now: Instant) -> Result<(), GroupError> {
        let returning = request.instance_id.as_ref().and_then(|instance| {
            self.members
                .iter()
                .find(|(_, m)| m.instance_id.as_ref() == Some(instance))
                .map(|(id, m)| (id.clone(), m.left_statically))
        });
        match returning {
            Some((id, false)) if id != request.member_id => {
                return Err(GroupError::UnreleasedInstanceId)
            }
            // A static member back: its place and tasks, under its new id, without a rebalance.
            Some((id, true)) => {
                let mut member = self.members.remove(&id).expect("found above");
                member.left_statically = false;
                let new_id = request.member_id.clone();
                if let Some(target) = self.target.remove(&id) {
                    self.target.insert(new_id.clone(), target);
                }
                self.unhold(&id, &member.tasks.held());
                self.hold(&new_id, &member.tasks.held());
                self.stored.touched.insert(id);
                self.members.insert(new_id, member);
                return Ok(());
            }
            _ => {}
        }
        if self.members.contains_key(&request.member_id) {
            // Rejoining with epoch 0 gives up what it had.
            self.remove(&request.member_id);
        } else if self.members.len() >= self.max_size {
            return Err(GroupError::GroupMaxSizeReached);
        }
        let member = Member {
            instance_id: request.instance_id.clone(),
            rack_id: None,
            client_id: request.client_id.clone(),
            client_host: request.client_host.clone(),
            process_id: String::new(),
            user_endpoint: None,
            client_tags: BTreeMap::new(),
            topology_epoch: -1,
            rebalance_timeout: Duration::ZERO,
            tasks: MemberTasks::joined(),
            previous_epoch: JOIN_EPOCH,
            task_offsets: Vec::new(),
            task_end_offsets: Vec::new(),
            session_deadline: now + self.session_timeout,
            revocation_deadline: None,
            left_statically: false,
        };
        self.members.insert(request.member_id.clone(), member);
        self.group_epoch += 1;
        Ok(())
    }

    /// A known member at its epoch, or at its previous one when the answer that moved it on
    /// was lost and it runs nothing it no longer has.
    fn check_epoch(&self, request: &StreamsHeartbeat, epoch: i32) -> Result<(), GroupError> {
        let member = self
            .members
            .get(&request.member_id)
            .filter(|m| !m.left_statically)
            .ok_or(GroupError::UnknownMemberId)?;
        let current = member.tasks.epoch;
        let held = member.tasks.assigned.clone();
        let lost_answer = epoch == member.previous_epoch
            && request
                .owned
                .as_ref()
                .is_some_and(|owned| owned.each().all(|(t, _)| held.has(t)));
        match epoch == current || (epoch < current && lost_answer) {
            true => Ok(()),
            false => Err(GroupError::FencedMemberEpoch),
        }
    }

    fn leave(&mut self, request: &StreamsHeartbeat) -> Result<StreamsAnswer, GroupError> {
        let Some(member) = self.members.get_mut(&request.member_id) else {
            return Err(GroupError::UnknownMemberId);
        };
        if request.member_epoch == STATIC_LEAVE_EPOCH && member.instance_id.is_some() {
            member.left_statically = true;
            self.stored.touched.insert(request.member_id.clone());
        } else {
            self.remove(&request.member_id);
        }
        Ok(StreamsAnswer {
            member_id: request.member_id.clone(),
            member_epoch: request.member_epoch,
            tasks: None,
            statuses: Vec::new(),
            endpoint_epoch: self.endpoint_epoch,
            endpoints: None,
            to_create: Vec::new(),
        })
    }

    /// Removes a member (left, or fenced by a timeout); its tasks go to the others.
    pub fn remove(&mut self, member_id: &str) {
        let Some(member) = self.members.remove(member_id) else {
            return;
        };
        self.target.remove(member_id);
        self.unhold(member_id, &member.tasks.held());
        self.stored.touched.insert(member_id.to_string());
        if self.shutdown_requested_by.as_deref() == Some(member_id) && self.members.is_empty() {
            self.shutdown_requested_by = None;
        }
        self.group_epoch += 1;
    }

    fn hold(&mut self, member_id: &str, tasks: &Tasks) {
        for (task, active) in tasks.each() {
            match active {
                true => {
                    self.active_holders
                        .insert(task.clone(), member_id.to_string());
                }
                false => {
                    let holders = self.other_holders.entry(task.clone()).or_default();
                    holders.insert(member_id.to_string());
                }
            }
        }
    }

    fn unhold(&mut self, member_id: &str, tasks: &Tasks) {
        for (task, active) in tasks.each() {
            match active {
                true => {
                    if self.active_holders.get(task).map(String::as_str) == Some(member_id) {
                        self.active_holders.remove(task);
                    }
                }
                false => {
                    if let Some(holders) = self.other_holders.get_mut(task) {
                        holders.remove(member_id);
                        if holders.is_empty() {
                            self.other_holders.remove(task);
                        }
                    }
                }
            }
        }
    }

    /// Whether another member keeps `task` from `member_id` in `role`: an active task while
    /// another member runs it active or another member of its process has it at all; any
    /// other role while another member of its process has it.
    fn unreleased(&self, member_id: &str, task: &TaskId, role: Role) -> bool {
        let process = &self.members[member_id].process_id;
        let same_process = |holder: &String| {
            holder != member_id
                && self
                    .members
                    .get(holder)
                    .is_some_and(|m| &m.process_id == process)
        };
        let active = self.active_holders.get(task);
        let active_blocks = match role {
            Role::Active => active.is_some_and(|h| h != member_id),
            _ => active.is_some_and(same_process),
        };
        active_blocks
            || self
                .other_holders
                .get(task)
                .is_some_and(|holders| holders.iter().any(same_process))
    }

    /// Kafka's streams group states.
    pub fn state(&self) -> &'static str {
        if self.members.is_empty() {
            return "Empty";
        }
        if self.topology.is_none() || !self.configured.is_ready() {
            return "NotReady";
        }
        if self.assignment_epoch < self.group_epoch {
            return "Assigning";
        }
        let settled = self.members.values().all(|m| {
            m.tasks.state == MemberState::Stable && m.tasks.epoch == self.assignment_epoch
        });
        match settled {
            true => "Stable",
            false => "Reconciling",
        }
    }

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
        if !expired.is_empty() {
            self.refresh_target();
        }
        expired
    }

    /// Recomputes the target when the group epoch moved past it.
    fn refresh_target(&mut self) {
        if self.assignment_epoch == self.group_epoch {
            return;
        }
        let members = self
            .members
            .iter()
            .map(|(id, m)| {
                let member = AssignorMember {
                    process_id: m.process_id.clone(),
                    previous: self.target.get(id).cloned().unwrap_or_default(),
                };
                (id.clone(), member)
            })
            .collect();
        self.target = assign(&members, &self.configured.tasks, self.standby_replicas);
        self.assignment_epoch = self.group_epoch;
        // Each member's target may have moved: all are compared with what is stored.
        self.stored.touched.extend(self.members.keys().cloned());
    }

    fn reconcile(&mut self, request: &StreamsHeartbeat, now: Instant) -> StreamsAnswer {
        let id = &request.member_id;
        let target = self.target.get(id).cloned().unwrap_or_default();
        let before = self.members[id].tasks.clone();
        let next = before.advance(
            self.assignment_epoch,
            &target,
            request.owned.as_ref(),
            |task, role| self.unreleased(id, task, role),
        );
        self.unhold(id, &before.held());
        self.hold(id, &next.held());
        let changed = next.assigned != before.assigned;
        let member = self.members.get_mut(id).expect("present");
        if next.epoch != before.epoch {
            member.previous_epoch = before.epoch;
        }
        member.revocation_deadline = match next.state {
            MemberState::UnrevokedTasks => member
                .revocation_deadline
                .or(Some(now + member.rebalance_timeout)),
            _ => None,
        };
        member.tasks = next;
        if let Some(deadline) = member.revocation_deadline {
            self.deadlines.lower_to(deadline);
        }
        let has_endpoint = member.user_endpoint.is_some();
        // Also to a member that reports running other tasks than it has (an answer that
        // told it so was lost).
        let send = request.member_epoch == JOIN_EPOCH
            || request.member_epoch != member.tasks.epoch
            || changed
            || request
                .owned
                .as_ref()
                .is_some_and(|o| *o != member.tasks.assigned);
        let tasks = send.then(|| member.tasks.assigned.clone());
        let member_epoch = member.tasks.epoch;
        let topology_epoch = member.topology_epoch;
        if changed && has_endpoint {
            self.endpoint_epoch += 1;
        }
        StreamsAnswer {
            member_id: id.clone(),
            member_epoch,
            tasks,
            statuses: self.statuses(topology_epoch),
            endpoint_epoch: self.endpoint_epoch,
            endpoints: (request.endpoint_epoch != self.endpoint_epoch).then(|| self.endpoints()),
            to_create: self.configured.to_create.clone(),
        }
    }

    fn statuses(&self, member_topology_epoch: i32) -> Vec<(StatusCode, String)> {
        let mut statuses = Vec::new();
        if let Some(topology) = &self.topology {
            if member_topology_epoch < topology.epoch {
                statuses.push((
                    StatusCode::StaleTopology,
                    format!(
                        "The member's topology epoch {} is behind the group's topology epoch {}.",
                        member_topology_epoch, topology.epoch
                    ),
                ));
            }
        }
        statuses.extend(self.configured.status.clone());
        if let Some(by) = &self.shutdown_requested_by {
            statuses.push((
                StatusCode::ShutdownApplication,
                format!("Streams group member {by} encountered a fatal error and requested a shutdown for the entire application."),
            ));
        }
        statuses
    }

    /// Each member with an endpoint, and the partitions its tasks read (for interactive
    /// queries): one entry per member, as Kafka sends them.
    pub fn endpoints(&self) -> Vec<EndpointPartitions> {
        let Some(topology) = &self.topology else {
            return Vec::new();
        };
        let partitions_of = |tasks: &mut dyn Iterator<Item = &TaskId>| {
            let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
            for task in tasks {
                let Some(subtopology) = topology.subtopology(&task.subtopology) else {
                    continue;
                };
                for topic in self.configured.task_partitions(subtopology, task.partition) {
                    by_topic
                        .entry(topic.to_string())
                        .or_default()
                        .push(task.partition);
                }
            }
            for partitions in by_topic.values_mut() {
                partitions.sort_unstable();
                partitions.dedup();
            }
            by_topic
        };
        self.members
            .values()
            .filter_map(|m| {
                let endpoint = m.user_endpoint.clone()?;
                let assigned = &m.tasks.assigned;
                Some(EndpointPartitions {
                    endpoint,
                    active: partitions_of(&mut assigned.active.iter()),
                    standby: partitions_of(&mut assigned.standby.iter().chain(&assigned.warmup)),
                })
            })
            .collect()
    }

    /// What the group holds in memory, as of its last change: its members with their tasks
    /// (`stored.rs` keeps their sum), and its topology.
    pub fn memory_bytes(&self) -> usize {
        self.topology.as_ref().map_or(0, Topology::memory_bytes) + self.stored.members_bytes
    }

    /// Whether `epoch` is one this member may commit offsets with: its own, or the one
    /// before it (a commit sent as its epoch moved on).
    pub fn may_commit(&self, member_id: &str, epoch: i32) -> Result<(), GroupError> {
        let member = self
            .members
            .get(member_id)
            .ok_or(GroupError::UnknownMemberId)?;
        match epoch == member.tasks.epoch || epoch == member.previous_epoch {
            true => Ok(()),
            false => Err(GroupError::StaleMemberEpoch),
        }
    }
}

/// Kafka's checks of a heartbeat before it reaches the group.
fn check(request: &StreamsHeartbeat) -> Result<(), GroupError> {
    if request.member_id.is_empty()
        || request.instance_id.as_deref() == Some("")
        || request.rack_id.as_deref() == Some("")
        || request.member_epoch < STATIC_LEAVE_EPOCH
        || request
            .client_tags
            .as_ref()
            .is_some_and(|t| t.len() > MAX_CLIENT_TAGS)
    {
        return Err(GroupError::InvalidRequest);
    }
    if request.member_epoch == STATIC_LEAVE_EPOCH && request.instance_id.is_none() {
        return Err(GroupError::InvalidRequest);
    }
    if request.member_epoch != JOIN_EPOCH {
        return match request.topology.is_some() {
            true => Err(GroupError::InvalidRequest),
            false => Ok(()),
        };
    }
    let owns_nothing = request.owned.as_ref().is_none_or(Tasks::is_empty);
    let Some(topology) = request.topology.as_ref() else {
        return Err(GroupError::InvalidRequest);
    };
    if request.rebalance_timeout_ms < 0 || !owns_nothing || request.process_id.is_none() {
        return Err(GroupError::InvalidRequest);
    }
    topology.validate()
}

/// A heartbeat's changes to its member; whether they move the group's epoch (what the
/// assignor and the endpoints depend on).
fn update_member(member: &mut Member, request: &StreamsHeartbeat) -> bool {
    let mut bump = false;
    if let Some(rack) = &request.rack_id {
        bump |= member.rack_id.as_ref() != Some(rack);
        member.rack_id = Some(rack.clone());
    }
    if request.rebalance_timeout_ms >= 0 {
        member.rebalance_timeout = Duration::from_millis(request.rebalance_timeout_ms as u64);
    }
    if let Some(process) = &request.process_id {
        bump |= &member.process_id != process;
        member.process_id = process.clone();
    }
    if let Some(endpoint) = &request.user_endpoint {
        bump |= member.user_endpoint.as_ref() != Some(endpoint);
        member.user_endpoint = Some(endpoint.clone());
    }
    if let Some(tags) = &request.client_tags {
        bump |= &member.client_tags != tags;
        member.client_tags = tags.clone();
    }
    if let Some(topology) = &request.topology {
        member.topology_epoch = topology.epoch;
    }
    if let Some(offsets) = &request.task_offsets {
        member.task_offsets = offsets.clone();
    }
    if let Some(offsets) = &request.task_end_offsets {
        member.task_end_offsets = offsets.clone();
    }
    member.client_id = request.client_id.clone();
    member.client_host = request.client_host.clone();
    bump
}

#[cfg(test)]
#[path = "group_tests.rs"]
mod tests;
