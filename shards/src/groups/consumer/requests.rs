//! The consumer protocol's requests (ConsumerGroupHeartbeat, ConsumerGroupDescribe) as the
//! shard's `Groups` answer them, and what follows a consumer-protocol group's change: its
//! memory and timer, its store in the coordinator's log under the group's claim, and its moves
//! to and from the classic protocol.

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use shoal_coordinator::commands::WriteConsumerGroup;
use shoal_coordinator::{GroupClaim, TopicsView};

use super::description::ConsumerGroupDescription;
use super::group::{Heartbeat, HeartbeatAnswer, JOIN_EPOCH};
use super::registry::Downgrade;
use super::stored::GroupChange;
use crate::groups::classic::Group;
use crate::groups::{GroupError, Groups};

impl Groups {
    /// A consumer-protocol group's sessions and revocations that ran out end now, not at
    /// the next heartbeat; what that changed is stored in the background under the claim
    /// held (a failed write drops the group here, to be read back from the log).
    pub(in crate::groups) fn expire_consumer_members(
        self: &Rc<Self>,
        group_id: &str,
        now: Instant,
    ) {
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
    pub(in crate::groups) fn after_consumer_change(
        &self,
        group_id: &str,
        change: Option<&GroupChange>,
    ) {
        if change.is_some() {
            self.account(group_id, self.consumer.memory_bytes(group_id));
        }
        if let Some(next) = self.consumer.next_check(group_id) {
            self.arm(group_id, next);
        }
    }

    /// A consumer-protocol group whose last consumer-protocol member left goes on as a
    /// classic group of its classic members, which rebalances (it was stored as deleted).
    pub(in crate::groups) fn downgrade(
        &self,
        group_id: &str,
        downgrade: Option<Downgrade>,
        now: Instant,
    ) {
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
        self.classic
            .borrow_mut()
            .insert(group_id.to_string(), group);
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
        request: &Heartbeat,
        topics: &TopicsView,
    ) -> Result<(), GroupError> {
        let seeds = match self.classic.borrow().get(group_id) {
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
        self.classic.borrow_mut().remove(group_id);
        tracing::info!(
            group = group_id,
            members,
            "a consumer-protocol member joined a classic group: it moves to the consumer protocol"
        );
        Ok(())
    }

    /// Writes what a consumer-protocol group's last request changed, under `claim`, before
    /// the member is answered. On failure the group is dropped here with the claim: the
    /// next request claims it again and reads back what the log holds.
    pub(in crate::groups) async fn store_consumer_change(
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
        self.write_under_claim(group_id, claim, write).await
    }

    /// ConsumerGroupHeartbeat. A group new to this shard is claimed first, as for JoinGroup;
    /// a classic group with members is upgraded (`upgrade`).
    pub async fn consumer_heartbeat(
        &self,
        group_id: &str,
        request: Heartbeat,
        topics: &Arc<TopicsView>,
        session_timeout_ms: u64,
    ) -> Result<HeartbeatAnswer, GroupError> {
        self.drop_groups_if_lease_lapsed();
        if self.share.contains(group_id) || self.streams.contains(group_id) {
            return Err(GroupError::GroupIdNotFound);
        }
        let claim = self.claim(group_id).await?;
        self.upgrade(group_id, &request, topics)?;
        if !self.consumer.contains(group_id) {
            self.may_create_on_heartbeat(request.member_epoch)?;
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

    /// A consumer-protocol group as held here, or as the log holds it.
    pub async fn describe_consumer_group(
        &self,
        group_id: &str,
    ) -> Result<Option<ConsumerGroupDescription>, GroupError> {
        self.drop_groups_if_lease_lapsed();
        self.restore_if_stored(group_id).await?;
        Ok(self.consumer.describe(group_id))
    }
}
