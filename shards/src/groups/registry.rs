//! The groups one shard owns, and the timer that expires sessions and ends rebalance phases
//! at their deadlines.

use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::claims::{Claimer, Claims};
use super::classic::messages::*;
use super::consumer::classic::CONSUMER_PROTOCOL_TYPE;
use super::consumer::description::ConsumerGroupDescription;
use super::consumer::group::{Heartbeat as ConsumerHeartbeat, HeartbeatAnswer, JOIN_EPOCH};
use super::consumer::registry::{ConsumerGroups, Downgrade};
use super::consumer::stored::GroupChange;
use super::share::registry::ShareGroups;
use super::{Group, GroupConfig, GroupError};
use crate::signal::LocalSignal;
use futures::channel::oneshot;
use futures::FutureExt;
use shoal_coordinator::commands::{ReadConsumerGroup, WriteConsumerGroup, WriteShareStates};
use shoal_coordinator::{ErrorKind, GroupClaim, TopicPartition, TopicsView};
use shoal_protocol::consumer_protocol::subscribed_topics;
use shoal_protocol::records::ShoalShareStateRecord;

/// What one new share group member is taken to need before it joins.
const MEMBER_ESTIMATE_BYTES: usize = 1024;

/// The longest the timer sleeps with nothing due: a backstop, not the precision.
const IDLE_WAKE: Duration = Duration::from_secs(1);

pub struct Groups {
    groups: RefCell<HashMap<String, Group>>,
    /// The groups of the consumer protocol (KIP-848); a group id is one kind or the other.
    consumer: ConsumerGroups,
    /// Share groups (KIP-932), whose ids are neither of the others.
    share: ShareGroups,
    /// Each group's next deadline as armed: `timers` may also hold older, later entries for a
    /// group, which are skipped when they come due.
    armed: RefCell<HashMap<String, Instant>>,
    timers: RefCell<BinaryHeap<Reverse<(Instant, String)>>>,
    /// When the timer task will next wake; an earlier deadline wakes it through `rearmed`.
    timer_wake: Cell<Instant>,
    rearmed: LocalSignal,
    /// What each group holds, and all of them together (`max_memory_bytes_per_shard`).
    group_bytes: RefCell<HashMap<String, usize>>,
    total_bytes: Cell<usize>,
    config: GroupConfig,
    /// The claims in the log that let this shard write for its groups.
    claims: Claims,
}

impl Groups {
    pub fn new(config: GroupConfig, claimer: Claimer) -> Rc<Groups> {
        let groups = Rc::new(Groups {
            groups: RefCell::new(HashMap::new()),
            consumer: ConsumerGroups::new(config),
            share: ShareGroups::new(config),
            armed: RefCell::new(HashMap::new()),
            timers: RefCell::new(BinaryHeap::new()),
            timer_wake: Cell::new(Instant::now()),
            rearmed: LocalSignal::default(),
            group_bytes: RefCell::new(HashMap::new()),
            total_bytes: Cell::new(0),
            config,
            claims: Claims::new(claimer),
        });
        glommio::spawn_local(Self::run_timers(Rc::downgrade(&groups))).detach();
        groups
    }

    /// Ticks each group when its next deadline comes, so sessions end at their deadline and
    /// not up to a polling interval later.
    async fn run_timers(weak: std::rc::Weak<Groups>) {
        loop {
            let Some(groups) = weak.upgrade() else { break };
            let now = Instant::now();
            Self::fire_due(&groups, now);
            let wake = groups
                .timers
                .borrow()
                .peek()
                .map_or(now + IDLE_WAKE, |Reverse((at, _))| *at)
                .min(now + IDLE_WAKE);
            groups.timer_wake.set(wake);
            let sleep = glommio::timer::sleep(wake.saturating_duration_since(now));
            futures::select! {
                _ = sleep.fuse() => {}
                _ = groups.rearmed.wait().fuse() => {}
            }
        }
    }

    fn fire_due(self: &Rc<Self>, now: Instant) {
        loop {
            let due = {
                let mut timers = self.timers.borrow_mut();
                match timers.peek() {
                    Some(Reverse((at, _))) if *at <= now => timers.pop().map(|Reverse(e)| e),
                    _ => None,
                }
            };
            let Some((at, group_id)) = due else { break };
            // Only the entry matching the armed deadline is live; others were superseded.
            if self.armed.borrow().get(&group_id) != Some(&at) {
                continue;
            }
            self.armed.borrow_mut().remove(&group_id);
            if self.consumer.contains(&group_id) {
                self.expire_consumer_members(&group_id, now);
                continue;
            }
            if let Some(group) = self.groups.borrow_mut().get_mut(&group_id) {
                group.tick(now);
            }
            self.after_change(&group_id);
        }
    }

    /// A consumer-protocol group's sessions and revocations that ran out end now, not at
    /// the next heartbeat; what that changed is stored in the background under the claim
    /// held (a failed write drops the group here, to be read back from the log).
    fn expire_consumer_members(self: &Rc<Self>, group_id: &str, now: Instant) {
        let (change, downgrade) = self.consumer.expire(group_id, now);
        self.after_consumer_change(group_id, change.as_ref());
        self.downgrade(group_id, downgrade, now);
        let (Some(change), Some(claim)) = (change, self.claims.held(group_id)) else {
            return;
        };
        let groups = self.clone();
        let group_id = group_id.to_string();
        glommio::spawn_local(async move {
            let _ = groups
                .store_consumer_change(&group_id, claim, Some(change))
                .await;
        })
        .detach();
    }

    /// After a consumer-protocol group's request or expiry: its memory as last stored, and
    /// its next session check armed if that is earlier than the one armed.
    fn after_consumer_change(&self, group_id: &str, change: Option<&GroupChange>) {
        if change.is_some() {
            self.account(group_id, self.consumer.memory_bytes(group_id));
        }
        if let Some(next) = self.consumer.next_check(group_id) {
            self.arm(group_id, next);
        }
    }

    /// A consumer-protocol group whose last consumer-protocol member left goes on as a
    /// classic group of its classic members, which rebalances (it was stored as deleted).
    fn downgrade(&self, group_id: &str, downgrade: Option<Downgrade>, now: Instant) {
        let Some(Downgrade {
            generation,
            members,
        }) = downgrade
        else {
            return;
        };
        tracing::info!(
            group = group_id,
            members = members.len(),
            "the last consumer-protocol member left: the group goes back to the classic protocol"
        );
        let group = Group::downgraded(group_id, self.config, generation, members, now);
        self.groups.borrow_mut().insert(group_id.to_string(), group);
        self.after_change(group_id);
    }

    /// A classic group with members becomes a consumer-protocol group as a consumer-protocol
    /// member joins it (Kafka's online upgrade): its members keep their partitions, and
    /// those waiting in JoinGroup or SyncGroup are answered REBALANCE_IN_PROGRESS. Refused
    /// (GROUP_ID_NOT_FOUND, as Kafka does) unless the policy allows it, the member is
    /// joining, the group uses the consumer protocol's assignment and fits a consumer group.
    fn upgrade(
        &self,
        group_id: &str,
        request: &ConsumerHeartbeat,
        topics: &TopicsView,
    ) -> Result<(), GroupError> {
        let seeds = match self.groups.borrow().get(group_id) {
            Some(group) if !group.is_empty() => group.upgrade_seeds(),
            _ => return Ok(()),
        };
        let allowed =
            self.config.consumer_migration_policy.upgrades() && request.member_epoch == JOIN_EPOCH;
        let Some((generation, seeds)) = seeds.filter(|_| allowed) else {
            return Err(GroupError::GroupIdNotFound);
        };
        let members = seeds.len();
        if members >= self.config.max_size
            || !self.consumer.upgrade(group_id, generation, seeds, topics)
        {
            return Err(GroupError::GroupIdNotFound);
        }
        self.groups.borrow_mut().remove(group_id);
        tracing::info!(
            group = group_id,
            members,
            "a consumer-protocol member joined a classic group: it moves to the consumer protocol"
        );
        Ok(())
    }

    /// After a group changed: forget it if nothing is left of it, else arm its next deadline
    /// if that is earlier than the one armed (a later one is found when the armed one fires).
    fn after_change(&self, group_id: &str) {
        let (next, bytes) = {
            let mut groups = self.groups.borrow_mut();
            match groups.get(group_id) {
                Some(group) if group.is_idle() => {
                    groups.remove(group_id);
                    (None, 0)
                }
                Some(group) => (group.next_deadline(), group.memory_bytes()),
                None => (None, 0),
            }
        };
        if bytes > 0 || !self.consumer.contains(group_id) {
            self.account(group_id, bytes);
        }
        if let Some(next) = next {
            self.arm(group_id, next);
        }
    }

    /// Arms the group's next deadline if it is earlier than the one armed (a later one is
    /// found when the armed one fires).
    fn arm(&self, group_id: &str, next: Instant) {
        let mut armed = self.armed.borrow_mut();
        if armed.get(group_id).is_some_and(|at| *at <= next) {
            return;
        }
        armed.insert(group_id.to_string(), next);
        self.timers
            .borrow_mut()
            .push(Reverse((next, group_id.to_string())));
        if next < self.timer_wake.get() {
            self.rearmed.notify_all();
        }
    }

    /// Records what `group_id` holds now (0: gone).
    fn account(&self, group_id: &str, bytes: usize) {
        let mut sizes = self.group_bytes.borrow_mut();
        let before = if bytes == 0 {
            sizes.remove(group_id).unwrap_or(0)
        } else {
            sizes.insert(group_id.to_string(), bytes).unwrap_or(0)
        };
        self.total_bytes
            .set(self.total_bytes.get() - before + bytes);
    }

    /// Whether a join bringing `bytes` more fits the shard's group memory.
    fn has_room_for(&self, bytes: usize) -> bool {
        self.total_bytes.get() + bytes <= self.config.max_memory_bytes_per_shard
    }

    /// After this broker's cluster lease lapsed, other brokers may have taken its groups:
    /// every group's members are dropped with the claims (they rejoin, and the group is
    /// claimed again, reading the log first).
    fn drop_groups_if_lease_lapsed(&self) {
        if !self.claims.lease_lapsed() {
            return;
        }
        let mut dropped = self.consumer.clear();
        dropped.extend(self.groups.borrow_mut().drain().map(|(id, _)| id));
        if !dropped.is_empty() {
            tracing::warn!(
                groups = dropped.len(),
                "this broker's cluster lease lapsed: its groups' members must rejoin"
            );
        }
        for group_id in dropped {
            self.account(&group_id, 0);
        }
    }

    /// The log refused a write under `claim`: another broker coordinates the group now. The
    /// claim and the group's members here are dropped.
    pub fn lose_claim(&self, group_id: &str, claim: &GroupClaim) {
        if !self.claims.lose(group_id, claim) {
            return;
        }
        tracing::info!(
            group = group_id,
            epoch = claim.epoch,
            "another broker claimed this group; its members here must rejoin"
        );
        self.groups.borrow_mut().remove(group_id);
        self.consumer.remove(group_id);
        self.account(group_id, 0);
    }

    /// The claim under which this shard writes for the group. One not held is claimed now,
    /// and the consumer-protocol group the log holds under that id is read back, so its
    /// members continue where the previous coordinator left them.
    pub async fn claim(&self, group_id: &str) -> Result<GroupClaim, GroupError> {
        self.drop_groups_if_lease_lapsed();
        if let Some(claim) = self.claims.held(group_id) {
            return Ok(claim);
        }
        let _turn = self.claims.taking().lock().await;
        if let Some(claim) = self.claims.held(group_id) {
            return Ok(claim);
        }
        let claim = self.claims.take(group_id).await?;
        let read = ReadConsumerGroup {
            group: group_id.to_string(),
        };
        let stored = self
            .claims
            .coordinator()
            .run(read)
            .await
            .map_err(|_| GroupError::CoordinatorNotAvailable)?;
        if let Some(stored) = stored {
            self.consumer.restore(group_id, &stored);
            // Its members' sessions run from now: checked on the timer, should none return.
            self.account(group_id, self.consumer.memory_bytes(group_id));
            self.after_consumer_change(group_id, None);
        }
        self.claims.hold(group_id, claim);
        Ok(claim)
    }

    /// Writes what a consumer-protocol group's last request changed, under `claim`, before
    /// the member is answered. On failure the group is dropped here with the claim: the
    /// next request claims it again and reads back what the log holds.
    async fn store_consumer_change(
        &self,
        group_id: &str,
        claim: GroupClaim,
        change: Option<GroupChange>,
    ) -> Result<(), GroupError> {
        let Some((group, members)) = change else {
            return Ok(());
        };
        let write = WriteConsumerGroup {
            claim,
            group,
            members,
        };
        let outcome = self.claims.coordinator().run(write).await;
        if matches!(outcome, Ok(Ok(()))) {
            return Ok(());
        }
        self.lose_claim(group_id, &claim);
        match outcome {
            Ok(Err(ErrorKind::NotCoordinator)) => Err(GroupError::NotCoordinator),
            _ => Err(GroupError::CoordinatorNotAvailable),
        }
    }

    /// ConsumerGroupHeartbeat. A group new to this shard is claimed first, as for JoinGroup;
    /// a classic group with members is upgraded (`upgrade`).
    pub async fn consumer_heartbeat(
        &self,
        group_id: &str,
        request: ConsumerHeartbeat,
        topics: &Arc<TopicsView>,
        session_timeout_ms: u64,
    ) -> Result<HeartbeatAnswer, GroupError> {
        self.drop_groups_if_lease_lapsed();
        if self.share.contains(group_id) {
            return Err(GroupError::GroupIdNotFound);
        }
        let claim = self.claim(group_id).await?;
        self.upgrade(group_id, &request, topics)?;
        if !self.consumer.contains(group_id) {
            self.consumer
                .may_create(&request, self.groups.borrow().len())?;
        }
        if request.member_epoch == JOIN_EPOCH && !self.has_room_for(request.memory_bytes()) {
            return Err(GroupError::TooManyGroups);
        }
        let session = Duration::from_millis(session_timeout_ms);
        let (answer, (change, downgrade)) =
            self.consumer.heartbeat(group_id, request, topics, session);
        self.after_consumer_change(group_id, change.as_ref());
        self.downgrade(group_id, downgrade, Instant::now());
        self.store_consumer_change(group_id, claim, change).await?;
        answer
    }

    /// JoinGroup from a classic member of a consumer-protocol group: its reconciliation
    /// step, stored before it is answered.
    async fn classic_join(&self, req: JoinRequest) -> JoinResponse {
        let group_id = req.group_id.clone();
        let claim = match self.claim(&group_id).await {
            Ok(claim) => claim,
            Err(error) => return JoinResponse::failed(error, &req.member_id),
        };
        if !self.has_room_for(req.metadata_bytes()) {
            return JoinResponse::failed(GroupError::TooManyGroups, &req.member_id);
        }
        let topics = req.topics.clone();
        let (answer, (change, downgrade)) = self.consumer.classic_join(&req, &topics);
        self.after_consumer_change(&group_id, change.as_ref());
        self.downgrade(&group_id, downgrade, Instant::now());
        if let Err(error) = self.store_consumer_change(&group_id, claim, change).await {
            return JoinResponse::failed(error, &req.member_id);
        }
        answer.unwrap_or_else(|error| JoinResponse::failed(error, &req.member_id))
    }

    /// JoinGroup: answered once the group's rebalance completes (or fails). A group new to
    /// this shard is claimed first, so its members' offsets are read after every write of
    /// the broker that coordinated it before.
    pub async fn join(&self, req: JoinRequest) -> JoinResponse {
        let member_id = req.member_id.clone();
        let group_id = req.group_id.clone();
        self.drop_groups_if_lease_lapsed();
        if self.share.contains(&group_id) {
            return JoinResponse::failed(GroupError::InconsistentGroupProtocol, &member_id);
        }
        if !self.groups.borrow().contains_key(&group_id) {
            if let Err(error) = self.claim(&group_id).await {
                return JoinResponse::failed(error, &member_id);
            }
        }
        if self.consumer.contains(&group_id) {
            return self.classic_join(req).await;
        }
        let now = Instant::now();
        let (tx, rx) = oneshot::channel();
        {
            let mut groups = self.groups.borrow_mut();
            let incoming = req.client_id.len()
                + req.group_instance_id.as_ref().map_or(0, String::len)
                + req.metadata_bytes();
            if (!groups.contains_key(&req.group_id)
                && groups.len() >= self.config.max_groups_per_shard)
                || !self.has_room_for(incoming)
            {
                return JoinResponse::failed(GroupError::TooManyGroups, &member_id);
            }
            let group = groups
                .entry(req.group_id.clone())
                .or_insert_with(|| Group::new(&req.group_id, self.config));
            group.join(req, now, tx);
        }
        self.after_change(&group_id);
        rx.await
            .unwrap_or_else(|_| JoinResponse::failed(GroupError::RebalanceInProgress, &member_id))
    }

    /// SyncGroup: answered once the leader's assignment is in.
    pub async fn sync(&self, req: SyncRequest) -> SyncResponse {
        self.drop_groups_if_lease_lapsed();
        if let Err(error) = self.restore_if_stored(&req.member.group_id).await {
            return SyncResponse::failed(error);
        }
        let now = Instant::now();
        let (tx, rx) = oneshot::channel();
        let group_id = req.member.group_id.clone();
        if self.consumer.contains(&group_id) {
            let topics = req.topics.clone();
            return match self.consumer.classic_sync(&req, &topics) {
                Ok(given) => SyncResponse {
                    error: None,
                    protocol_type: Some(CONSUMER_PROTOCOL_TYPE.to_string()),
                    protocol_name: Some(given.protocol_name),
                    assignment: given.assignment,
                },
                Err(error) => SyncResponse::failed(error),
            };
        }
        match self.groups.borrow_mut().get_mut(&group_id) {
            Some(group) => group.sync(req, now, tx),
            None => {
                let _ = tx.send(SyncResponse::failed(GroupError::UnknownMemberId));
            }
        }
        self.after_change(&group_id);
        rx.await
            .unwrap_or_else(|_| SyncResponse::failed(GroupError::RebalanceInProgress))
    }

    pub async fn heartbeat(&self, m: &MemberRef) -> Option<GroupError> {
        self.drop_groups_if_lease_lapsed();
        if let Err(error) = self.restore_if_stored(&m.group_id).await {
            return Some(error);
        }
        if self.consumer.contains(&m.group_id) {
            return self.consumer.classic_heartbeat(m).err();
        }
        let outcome = match self.groups.borrow_mut().get_mut(&m.group_id) {
            Some(group) => group.heartbeat(m, Instant::now()),
            None => Some(GroupError::UnknownMemberId),
        };
        self.after_change(&m.group_id);
        outcome
    }

    pub async fn leave(
        &self,
        group_id: &str,
        members: &[LeavingMember],
    ) -> Vec<Option<GroupError>> {
        self.drop_groups_if_lease_lapsed();
        if let Err(error) = self.restore_if_stored(group_id).await {
            return vec![Some(error); members.len()];
        }
        if self.consumer.contains(group_id) {
            return self.classic_leave(group_id, members).await;
        }
        let outcomes = match self.groups.borrow_mut().get_mut(group_id) {
            Some(group) => group.leave(members, Instant::now()),
            None => vec![Some(GroupError::UnknownMemberId); members.len()],
        };
        self.after_change(group_id);
        outcomes
    }

    /// LeaveGroup from classic members of a consumer-protocol group, stored before the
    /// answer (a failed write fails them all: they are read back as members).
    async fn classic_leave(
        &self,
        group_id: &str,
        members: &[LeavingMember],
    ) -> Vec<Option<GroupError>> {
        let Some(claim) = self.claims.held(group_id) else {
            return vec![Some(GroupError::NotCoordinator); members.len()];
        };
        let (outcomes, (change, downgrade)) = self.consumer.classic_leave(group_id, members);
        self.after_consumer_change(group_id, change.as_ref());
        self.downgrade(group_id, downgrade, Instant::now());
        match self.store_consumer_change(group_id, claim, change).await {
            Ok(()) => outcomes,
            Err(error) => vec![Some(error); members.len()],
        }
    }

    /// May this member commit offsets now? If so, the claim its commit is written under.
    pub async fn validate_commit(&self, m: &MemberRef) -> Result<GroupClaim, GroupError> {
        self.drop_groups_if_lease_lapsed();
        self.restore_if_stored(&m.group_id).await?;
        if self.consumer.contains(&m.group_id) {
            self.consumer.validate_commit(m)?;
            return self.claim(&m.group_id).await;
        }
        let outcome = match self.groups.borrow_mut().get_mut(&m.group_id) {
            Some(group) => group.validate_commit(m, Instant::now()),
            // No members: only a "simple" commit (generation -1) is allowed.
            None if m.generation_id < 0 => None,
            None => Some(GroupError::UnknownMemberId),
        };
        self.after_change(&m.group_id);
        match outcome {
            Some(error) => Err(error),
            None => self.claim(&m.group_id).await,
        }
    }

    /// None when this shard holds no such group.
    pub fn describe(&self, group_id: &str) -> Option<GroupDescription> {
        self.groups.borrow().get(group_id).map(Group::describe)
    }

    /// A consumer-protocol group as held here, or as the log holds it.
    pub async fn describe_consumer_group(
        &self,
        group_id: &str,
    ) -> Result<Option<ConsumerGroupDescription>, GroupError> {
        self.drop_groups_if_lease_lapsed();
        self.restore_if_stored(group_id).await?;
        Ok(self.consumer.describe(group_id))
    }

    /// A group this shard holds nothing of, but the log holds as a consumer-protocol group
    /// (after a restart, or a move from another broker), is claimed and read back, so the
    /// classic requests of its classic members find it as JoinGroup and heartbeats do. Only
    /// a group the log has is claimed: requests naming made-up ids write nothing.
    async fn restore_if_stored(&self, group_id: &str) -> Result<(), GroupError> {
        let held_here = self.consumer.contains(group_id)
            || self.groups.borrow().contains_key(group_id)
            || self.claims.held(group_id).is_some();
        if held_here {
            return Ok(());
        }
        let read = ReadConsumerGroup {
            group: group_id.to_string(),
        };
        match self.claims.coordinator().run(read).await {
            Ok(None) => Ok(()),
            Ok(Some(_)) => self.claim(group_id).await.map(|_| ()),
            Err(_) => Err(GroupError::CoordinatorNotAvailable),
        }
    }

    /// Every group this shard owns.
    pub fn list(&self) -> Vec<GroupListing> {
        let mut listed: Vec<GroupListing> =
            self.groups.borrow().values().map(Group::listing).collect();
        listed.extend(self.consumer.list());
        listed.extend(self.share.list());
        listed
    }

    /// The share groups of this shard.
    pub fn share(&self) -> &ShareGroups {
        &self.share
    }

    /// Whether a classic or consumer-protocol group holds the id (a share group may not).
    pub fn holds_other_than_share(&self, group_id: &str) -> bool {
        self.consumer.contains(group_id) || self.groups.borrow().contains_key(group_id)
    }

    /// Whether a new share group, or one more member, fits the shard's group limits.
    pub fn share_may_grow(&self, group_id: &str) -> bool {
        let groups = self.groups.borrow().len() + self.share.len();
        let new_group = !self.share.contains(group_id);
        self.has_room_for(MEMBER_ESTIMATE_BYTES)
            && !(new_group && groups >= self.config.max_groups_per_shard)
    }

    /// Writes share-partition states to the coordinator's log, durably; the share-partitions
    /// whose state it refused (another broker wrote them since this one read them).
    pub async fn write_share_states(
        &self,
        states: Vec<ShoalShareStateRecord>,
    ) -> Result<Vec<TopicPartition>, GroupError> {
        if states.is_empty() {
            return Ok(Vec::new());
        }
        let partitions: Vec<TopicPartition> = states
            .iter()
            .map(|s| TopicPartition {
                topic_id: s.topic_id,
                partition: s.partition,
            })
            .collect();
        let write = WriteShareStates { states };
        let refused = self
            .claims
            .coordinator()
            .run(write)
            .await
            .map_err(|_| GroupError::CoordinatorNotAvailable)?;
        Ok(refused.into_iter().map(|i| partitions[i]).collect())
    }

    /// Charges what a share group holds now to the shard's group memory.
    pub fn account_share(&self, group_id: &str) {
        self.account(group_id, self.share.memory_bytes(group_id));
    }

    /// Forgets the group if it has no members (DeleteGroups).
    pub fn forget(&self, group_id: &str) -> Option<GroupError> {
        if self.share.contains(group_id) {
            let outcome = self.share.delete(group_id);
            self.account_share(group_id);
            return outcome;
        }
        // A consumer-protocol group held here has members (it is dropped with its last).
        if self.consumer.contains(group_id) {
            return Some(GroupError::NonEmptyGroup);
        }
        let outcome = {
            let mut groups = self.groups.borrow_mut();
            match groups.get(group_id) {
                Some(group) if !group.is_empty() => Some(GroupError::NonEmptyGroup),
                Some(_) => {
                    groups.remove(group_id);
                    None
                }
                // The group may still have committed offsets: the caller asks the
                // coordinator.
                None => Some(GroupError::GroupIdNotFound),
            }
        };
        self.after_change(group_id);
        outcome
    }

    /// Topics the group's members subscribe to (OffsetDelete refuses those).
    pub fn subscribed_topics(&self, group_id: &str, topics: &TopicsView) -> Vec<String> {
        if let Some(names) = self.consumer.subscribed_topics(group_id, topics) {
            return names;
        }
        let groups = self.groups.borrow();
        let mut topics: Vec<String> = groups
            .get(group_id)
            .map(|g| {
                g.member_metadata()
                    .iter()
                    .filter_map(|m| subscribed_topics(m))
                    .flatten()
                    .collect()
            })
            .unwrap_or_default();
        topics.sort();
        topics.dedup();
        topics
    }
}
