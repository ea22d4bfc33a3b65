//! The groups one shard owns, of every kind, and what the kinds share: the timer that expires
//! sessions and ends rebalance phases at their deadlines, the shard's group memory and
//! limits, the claims the shard writes under, listing and deleting. Each protocol's requests
//! are answered in its own module (`classic/requests.rs`, `consumer/requests.rs`,
//! `share/requests.rs`); a group id is held by one kind at a time.

use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::claims::{Claimer, Claims};
use super::classic::messages::*;
use super::consumer::group::JOIN_EPOCH;
use super::consumer::registry::ConsumerGroups;
use super::share::registry::ShareGroups;
use super::streams::registry::StreamsGroups;
use super::{Group, GroupConfig, GroupError};
use crate::signal::LocalSignal;
use futures::FutureExt;
use shoal_coordinator::commands::{ReadConsumerGroup, ReadStreamsGroup};
use shoal_coordinator::state::streams_groups::StoredStreamsGroup;
use shoal_coordinator::{Command, ErrorKind, GroupClaim, TopicsView};
use shoal_protocol::consumer_protocol::subscribed_topics;

/// The longest the timer sleeps with nothing due: a backstop, not the precision.
const IDLE_WAKE: Duration = Duration::from_secs(1);

pub struct Groups {
    /// The groups of the classic protocol.
    pub(super) classic: RefCell<HashMap<String, Group>>,
    /// The groups of the consumer protocol (KIP-848); a group id is one kind or the other.
    pub(super) consumer: ConsumerGroups,
    /// Share groups (KIP-932), whose ids are neither of the others.
    pub(super) share: ShareGroups,
    /// Streams groups (KIP-1071).
    pub(super) streams: StreamsGroups,
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
    pub(super) config: GroupConfig,
    /// The claims in the log that let this shard write for its groups.
    pub(super) claims: Claims,
}

impl Groups {
    pub fn new(config: GroupConfig, claimer: Claimer) -> Rc<Groups> {
        let groups = Rc::new(Groups {
            classic: RefCell::new(HashMap::new()),
            consumer: ConsumerGroups::new(config),
            share: ShareGroups::new(config),
            streams: StreamsGroups::new(config),
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
            if self.streams.contains(&group_id) {
                self.expire_streams_members(&group_id, now);
                continue;
            }
            if let Some(group) = self.classic.borrow_mut().get_mut(&group_id) {
                group.tick(now);
            }
            self.after_change(&group_id);
        }
    }

    /// After a group changed: forget it if nothing is left of it, else arm its next deadline
    /// if that is earlier than the one armed (a later one is found when the armed one fires).
    pub(super) fn after_change(&self, group_id: &str) {
        let (next, bytes) = {
            let mut groups = self.classic.borrow_mut();
            match groups.get(group_id) {
                Some(group) if group.is_idle() => {
                    groups.remove(group_id);
                    (None, 0)
                }
                Some(group) => (group.next_deadline(), group.memory_bytes()),
                None => (None, 0),
            }
        };
        if bytes > 0 || !(self.consumer.contains(group_id) || self.streams.contains(group_id)) {
            self.account(group_id, bytes);
        }
        if let Some(next) = next {
            self.arm(group_id, next);
        }
    }

    /// Arms the group's next deadline if it is earlier than the one armed (a later one is
    /// found when the armed one fires).
    pub(super) fn arm(&self, group_id: &str, next: Instant) {
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
    pub(super) fn account(&self, group_id: &str, bytes: usize) {
        let mut sizes = self.group_bytes.borrow_mut();
        let before = if bytes == 0 {
            sizes.remove(group_id).unwrap_or(0)
        } else {
            sizes.insert(group_id.to_string(), bytes).unwrap_or(0)
        };
        self.total_bytes
            .set(self.total_bytes.get() - before + bytes);
    }

    /// Whether the shard holds as many groups as it may (`max_groups_per_shard`), of every
    /// kind together: a new group of any kind is refused then.
    pub(super) fn at_group_limit(&self) -> bool {
        let held = self.classic.borrow().len()
            + self.consumer.len()
            + self.share.len()
            + self.streams.len();
        held >= self.config.max_groups_per_shard
    }

    /// Whether a heartbeat may create a consumer-protocol or streams group (the caller claims
    /// it first): a join only (a member of a group this broker no longer knows, after a
    /// restart, rejoins), within `at_group_limit`.
    pub(super) fn may_create_on_heartbeat(&self, member_epoch: i32) -> Result<(), GroupError> {
        if member_epoch != JOIN_EPOCH {
            return Err(GroupError::UnknownMemberId);
        }
        match self.at_group_limit() {
            true => Err(GroupError::TooManyGroups),
            false => Ok(()),
        }
    }

    /// Whether a join bringing `bytes` more fits the shard's group memory.
    pub(super) fn has_room_for(&self, bytes: usize) -> bool {
        self.total_bytes.get() + bytes <= self.config.max_memory_bytes_per_shard
    }

    /// After this broker's cluster lease lapsed, other brokers may have taken its groups:
    /// every group's members are dropped with the claims (they rejoin, and the group is
    /// claimed again, reading the log first).
    pub(super) fn drop_groups_if_lease_lapsed(&self) {
        if !self.claims.lease_lapsed() {
            return;
        }
        let mut dropped = self.consumer.clear();
        dropped.extend(self.streams.clear());
        dropped.extend(self.classic.borrow_mut().drain().map(|(id, _)| id));
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
        self.classic.borrow_mut().remove(group_id);
        self.consumer.remove(group_id);
        self.streams.remove(group_id);
        self.account(group_id, 0);
    }

    /// Runs a write of the group's state under `claim`. On failure the group is dropped here
    /// with the claim: the next request claims it again and reads back what the log holds.
    pub(super) async fn write_under_claim<C>(
        &self,
        group_id: &str,
        claim: GroupClaim,
        write: C,
    ) -> Result<(), GroupError>
    where
        C: Command<Reply = Result<(), ErrorKind>>,
    {
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

    /// The claim under which this shard writes for the group. One not held is claimed now,
    /// and the consumer-protocol or streams group the log holds under that id is read back,
    /// so its members continue where the previous coordinator left them.
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
        } else if let Some(stored) = self.read_streams_group(group_id).await? {
            self.streams.restore(group_id, &stored);
            self.after_streams_change(group_id);
        }
        self.claims.hold(group_id, claim);
        Ok(claim)
    }

    /// A group this shard holds nothing of, but the log holds as a consumer-protocol group
    /// (after a restart, or a move from another broker), is claimed and read back, so the
    /// classic requests of its classic members find it as JoinGroup and heartbeats do. Only
    /// a group the log has is claimed: requests naming made-up ids write nothing.
    pub(super) async fn restore_if_stored(&self, group_id: &str) -> Result<(), GroupError> {
        let held_here = self.consumer.contains(group_id)
            || self.streams.contains(group_id)
            || self.classic.borrow().contains_key(group_id)
            || self.claims.held(group_id).is_some();
        if held_here {
            return Ok(());
        }
        let read = ReadConsumerGroup {
            group: group_id.to_string(),
        };
        let stored = match self.claims.coordinator().run(read).await {
            Ok(stored) => stored.is_some() || self.read_streams_group(group_id).await?.is_some(),
            Err(_) => return Err(GroupError::CoordinatorNotAvailable),
        };
        match stored {
            true => self.claim(group_id).await.map(|_| ()),
            false => Ok(()),
        }
    }

    /// The streams group the log holds under this id, if any.
    async fn read_streams_group(
        &self,
        group_id: &str,
    ) -> Result<Option<StoredStreamsGroup>, GroupError> {
        let read = ReadStreamsGroup {
            group: group_id.to_string(),
        };
        self.claims
            .coordinator()
            .run(read)
            .await
            .map_err(|_| GroupError::CoordinatorNotAvailable)
    }

    /// Every group this shard owns.
    pub fn list(&self) -> Vec<GroupListing> {
        let mut listed: Vec<GroupListing> =
            self.classic.borrow().values().map(Group::listing).collect();
        listed.extend(self.consumer.list());
        listed.extend(self.share.list());
        listed.extend(self.streams.list());
        listed
    }

    /// Forgets the group if it has no members (DeleteGroups).
    pub fn forget(&self, group_id: &str) -> Option<GroupError> {
        if self.share.contains(group_id) {
            let outcome = self.share.delete(group_id);
            self.account_share(group_id);
            return outcome;
        }
        // A consumer-protocol group held here has members (it is dropped with its last).
        if self.consumer.contains(group_id) || self.streams.contains(group_id) {
            return Some(GroupError::NonEmptyGroup);
        }
        let outcome = {
            let mut groups = self.classic.borrow_mut();
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
        let groups = self.classic.borrow();
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
