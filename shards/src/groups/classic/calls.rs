//! The calls of the classic protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, a member's
//! offset commit, DescribeGroups), each typed with its answer, for the shard that owns the
//! group.

use std::rc::Rc;

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use shoal_coordinator::GroupClaim;

use super::messages::*;
use crate::groups::calls::ready;
use crate::groups::{GroupCall, GroupError, Groups};

impl GroupCall for JoinRequest {
    type Reply = JoinResponse;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        async move { groups.join(self).await }.boxed_local()
    }
}

impl GroupCall for SyncRequest {
    type Reply = SyncResponse;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        async move { groups.sync(self).await }.boxed_local()
    }
}

#[derive(Debug)]
pub struct Heartbeat(pub MemberRef);

impl GroupCall for Heartbeat {
    type Reply = Option<GroupError>;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        async move { groups.heartbeat(&self.0).await }.boxed_local()
    }
}

#[derive(Debug)]
pub struct Leave {
    pub group_id: String,
    pub members: Vec<LeavingMember>,
}

impl GroupCall for Leave {
    /// One outcome per leaving member, in order.
    type Reply = Vec<Option<GroupError>>;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        async move { groups.leave(&self.group_id, &self.members).await }.boxed_local()
    }
}

/// May this member commit offsets now? If so, the claim to write them under.
#[derive(Debug)]
pub struct ValidateCommit(pub MemberRef);

impl GroupCall for ValidateCommit {
    type Reply = Result<GroupClaim, GroupError>;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        async move { groups.validate_commit(&self.0).await }.boxed_local()
    }
}

#[derive(Debug)]
pub struct DescribeGroup(pub String);

impl GroupCall for DescribeGroup {
    /// None when the shard holds no such group.
    type Reply = Option<GroupDescription>;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        ready(groups.describe(&self.0))
    }
}
