//! The calls on a group, each typed with its answer: the shard that owns the group runs them
//! on its `Groups` (a connection on another shard sends them as a peer call). Here, the calls
//! on any kind of group (claims, listing, deleting); each protocol's own are in its module
//! (`classic/calls.rs`, `consumer/calls.rs`, `share/calls.rs`).

use std::fmt::Debug;
use std::rc::Rc;
use std::sync::Arc;

use super::classic::messages::*;
use super::{GroupError, Groups};
use futures::future::LocalBoxFuture;
use futures::FutureExt;
use shoal_coordinator::{GroupClaim, TopicsView};

/// One call on the groups of the shard that runs it.
pub trait GroupCall: Send + Debug + 'static {
    type Reply: Send + 'static;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply>;
}

/// A reply made now, for calls that do not wait.
pub(super) fn ready<T: 'static>(reply: T) -> LocalBoxFuture<'static, T> {
    async move { reply }.boxed_local()
}

/// The claim to write for the group under (DeleteGroups, OffsetDelete), claimed if not held.
#[derive(Debug)]
pub struct ClaimFor(pub String);

impl GroupCall for ClaimFor {
    type Reply = Result<GroupClaim, GroupError>;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        async move { groups.claim(&self.0).await }.boxed_local()
    }
}

/// The log refused a write under `claim` (or the group was deleted with it): drop it, and
/// the group's members here.
#[derive(Debug)]
pub struct LoseClaim {
    pub group_id: String,
    pub claim: GroupClaim,
}

impl GroupCall for LoseClaim {
    type Reply = ();

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        groups.lose_claim(&self.group_id, &self.claim);
        ready(())
    }
}

/// Every group the shard owns.
#[derive(Debug, Clone, Copy)]
pub struct ListGroups;

impl GroupCall for ListGroups {
    type Reply = Vec<GroupListing>;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        ready(groups.list())
    }
}

/// Forget the group if it has no members (DeleteGroups). Claimed first, so a
/// consumer-protocol group's recorded members count.
#[derive(Debug)]
pub struct ForgetGroup(pub String);

impl GroupCall for ForgetGroup {
    type Reply = Option<GroupError>;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        async move {
            match groups.claim(&self.0).await {
                Ok(_) => groups.forget(&self.0),
                Err(error) => Some(error),
            }
        }
        .boxed_local()
    }
}

/// Topics the group's members subscribe to, by name or expression (OffsetDelete refuses
/// those), with the topics as the receiving shard saw them.
#[derive(Debug)]
pub struct SubscribedTopics(pub String, pub Arc<TopicsView>);

impl GroupCall for SubscribedTopics {
    type Reply = Result<Vec<String>, GroupError>;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        async move {
            groups.claim(&self.0).await?;
            Ok(groups.subscribed_topics(&self.0, &self.1))
        }
        .boxed_local()
    }
}

/// The shard that owns a group: a stable hash of its id, so every shard agrees.
pub fn owner_of_group(group_id: &str, shard_count: usize) -> usize {
    crc32c::crc32c(group_id.as_bytes()) as usize % shard_count.max(1)
}
