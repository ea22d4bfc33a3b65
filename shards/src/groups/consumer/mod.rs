//! The consumer group protocol (KIP-848), in which the broker assigns partitions and members
//! reconcile towards their targets by heartbeat: the assignors, one member's reconciliation,
//! one group's heartbeat rules, the groups of a shard, and a group's records in the
//! coordinator's log (`stored`): every change is stored before the member is answered, and a
//! broker that claims the group reads it back, so members go on after a restart or a move.

pub mod assignor;
pub mod classic;
pub mod description;
pub mod group;
#[cfg(test)]
mod model_checks;
pub mod reconcile;
pub mod registry;
pub mod stored;

use std::rc::Rc;
use std::sync::Arc;

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use shoal_coordinator::TopicsView;

use super::calls::GroupCall;
use super::{GroupError, Groups};
use description::ConsumerGroupDescription;
use group::{Heartbeat, HeartbeatAnswer};

/// A ConsumerGroupHeartbeat for the shard that owns the group, with the topics as the
/// receiving shard saw them.
#[derive(Debug)]
pub struct ConsumerHeartbeat {
    pub group_id: String,
    pub heartbeat: Heartbeat,
    pub topics: Arc<TopicsView>,
    /// The group's session timeout (its GROUP config, or the broker's default).
    pub session_timeout_ms: u64,
}

impl GroupCall for ConsumerHeartbeat {
    type Reply = Result<HeartbeatAnswer, GroupError>;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        async move {
            groups
                .consumer_heartbeat(
                    &self.group_id,
                    self.heartbeat,
                    &self.topics,
                    self.session_timeout_ms,
                )
                .await
        }
        .boxed_local()
    }
}

/// ConsumerGroupDescribe: None when there is no consumer-protocol group by that id. One only
/// the log holds (after a restart, before its members return) is claimed and read back.
#[derive(Debug)]
pub struct DescribeConsumerGroup(pub String);

impl GroupCall for DescribeConsumerGroup {
    type Reply = Result<Option<ConsumerGroupDescription>, GroupError>;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        async move { groups.describe_consumer_group(&self.0).await }.boxed_local()
    }
}
