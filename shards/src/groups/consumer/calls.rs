//! The calls of the consumer protocol (ConsumerGroupHeartbeat, ConsumerGroupDescribe), each
//! typed with its answer, for the shard that owns the group.

use std::rc::Rc;
use std::sync::Arc;

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use shoal_coordinator::TopicsView;

use super::description::ConsumerGroupDescription;
use super::group::{Heartbeat, HeartbeatAnswer};
use crate::groups::{GroupCall, GroupError, Groups};

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
