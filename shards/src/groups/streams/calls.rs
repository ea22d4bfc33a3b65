//! The calls of the streams protocol (StreamsGroupHeartbeat, StreamsGroupDescribe), each
//! typed with its answer, for the shard that owns the group.

use std::rc::Rc;
use std::sync::Arc;

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use shoal_coordinator::TopicsView;

use super::group::{StreamsAnswer, StreamsHeartbeat};
use super::registry::StreamsSettings;
use super::requests::StreamsGroupDescription;
use crate::groups::{GroupCall, GroupError, Groups};

/// A StreamsGroupHeartbeat for the shard that owns the group, with the topics as the
/// receiving shard saw them.
#[derive(Debug)]
pub struct StreamsGroupHeartbeat {
    pub group_id: String,
    pub heartbeat: StreamsHeartbeat,
    pub topics: Arc<TopicsView>,
    pub settings: StreamsSettings,
}

impl GroupCall for StreamsGroupHeartbeat {
    type Reply = Result<StreamsAnswer, GroupError>;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        async move {
            groups
                .streams_heartbeat(&self.group_id, self.heartbeat, &self.topics, self.settings)
                .await
        }
        .boxed_local()
    }
}

/// StreamsGroupDescribe: None when there is no streams group by that id here.
#[derive(Debug)]
pub struct DescribeStreamsGroup(pub String);

impl GroupCall for DescribeStreamsGroup {
    type Reply = Result<Option<StreamsGroupDescription>, GroupError>;

    fn run(self, groups: Rc<Groups>) -> LocalBoxFuture<'static, Self::Reply> {
        async move { groups.describe_streams_group(&self.0).await }.boxed_local()
    }
}
