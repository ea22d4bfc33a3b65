//! The classic protocol's requests (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, a member's
//! offset commit, DescribeGroups) as the shard's `Groups` answer them: by the classic group
//! of the id, or by the consumer-protocol group whose classic members send them.

use std::time::Instant;

use futures::channel::oneshot;
use shoal_coordinator::GroupClaim;

use super::messages::*;
use super::Group;
use crate::groups::consumer::classic::CONSUMER_PROTOCOL_TYPE;
use crate::groups::{GroupError, Groups};

impl Groups {
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
        if self.share.contains(&group_id) || self.streams.contains(&group_id) {
            return JoinResponse::failed(GroupError::InconsistentGroupProtocol, &member_id);
        }
        if !self.classic.borrow().contains_key(&group_id) {
            if let Err(error) = self.claim(&group_id).await {
                return JoinResponse::failed(error, &member_id);
            }
        }
        if self.consumer.contains(&group_id) {
            return self.classic_join(req).await;
        }
        let now = Instant::now();
        let (tx, rx) = oneshot::channel();
        // Asked before the map is borrowed: the limit counts the classic groups too.
        let at_limit = self.at_group_limit();
        {
            let mut groups = self.classic.borrow_mut();
            let incoming = req.client_id.len()
                + req.group_instance_id.as_ref().map_or(0, String::len)
                + req.metadata_bytes();
            if (!groups.contains_key(&req.group_id) && at_limit) || !self.has_room_for(incoming) {
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
        match self.classic.borrow_mut().get_mut(&group_id) {
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
        let outcome = match self.classic.borrow_mut().get_mut(&m.group_id) {
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
        let outcomes = match self.classic.borrow_mut().get_mut(group_id) {
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
        if self.streams.contains(&m.group_id) {
            self.streams.validate_commit(m)?;
            return self.claim(&m.group_id).await;
        }
        let outcome = match self.classic.borrow_mut().get_mut(&m.group_id) {
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
        self.classic.borrow().get(group_id).map(Group::describe)
    }
}
