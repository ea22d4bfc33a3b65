//! ShareGroupHeartbeat (KIP-932): a share group's member joins, heartbeats and leaves through
//! this one API; the group's shard decides (`groups::share`). A share group's assignment is
//! not exclusive, so a member gets its partitions at once, without reconciling.

use shoal_coordinator::features::{SHARE_GROUPS_LEVEL, SHARE_VERSION};
use shoal_coordinator::TopicPartition;
use shoal_protocol::messages::share_group_heartbeat_response::{Assignment, TopicPartitions};
use shoal_protocol::messages::{ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse};
use shoal_protocol::ResponseError;
use shoal_shards::groups::share::calls::ShareGroupHeartbeatCall;
use shoal_shards::groups::share::group::ShareHeartbeat;
use shoal_shards::groups::GroupError;

use super::{heartbeat_preamble, owned, owned_optional, text, topics_as};
use crate::context::Call;
use crate::handlers::configs::group_configs::share_group_settings;
use crate::kafka::error_codes;

pub async fn handle(
    call: &Call<'_>,
    request: ShareGroupHeartbeatRequest,
) -> ShareGroupHeartbeatResponse {
    let broker = call.broker;
    // Share groups are served while `share.version` 1 or later is finalized, as on Kafka.
    if call.feature_level(SHARE_VERSION) < SHARE_GROUPS_LEVEL {
        return refused(ResponseError::UnsupportedVersion.code());
    }
    let group_id = owned(&request.group_id.0);
    let subscribed = request.subscribed_topic_names.iter().flatten();
    if let Err(code) = heartbeat_preamble(call, &group_id, subscribed) {
        return refused(code);
    }
    let heartbeat = ShareHeartbeat {
        member_id: owned(&request.member_id),
        member_epoch: request.member_epoch,
        rack_id: owned_optional(&request.rack_id),
        client_id: call.client.id.clone(),
        client_host: call.client.host.clone(),
        subscribed_topic_names: request
            .subscribed_topic_names
            .as_ref()
            .map(|names| names.iter().map(|n| owned(&n.0)).collect()),
    };
    let topics = broker.shard.topics.load_full();
    let settings = share_group_settings(&topics, &broker.config.groups, &group_id);
    let call_on_group = ShareGroupHeartbeatCall {
        group_id: group_id.clone(),
        heartbeat,
        topics,
        settings: settings.share,
    };
    let answer = broker.shard.try_group_call(&group_id, call_on_group).await;
    match answer {
        Ok(answer) => ShareGroupHeartbeatResponse::default()
            .with_member_id(Some(text(answer.member_id)))
            .with_member_epoch(answer.member_epoch)
            .with_heartbeat_interval_ms(settings.heartbeat_interval_ms)
            .with_assignment(answer.assignment.map(|partitions| assignment(&partitions))),
        Err(error) => refused(error_codes::code_of(Some::<GroupError>(error))),
    }
}

fn refused(code: i16) -> ShareGroupHeartbeatResponse {
    ShareGroupHeartbeatResponse::default().with_error_code(code)
}

/// The partitions by topic id, as the response carries them.
fn assignment<'a>(partitions: impl IntoIterator<Item = &'a TopicPartition>) -> Assignment {
    let topics = partitions.into_iter().map(|p| (p.topic_id, p.partition));
    Assignment::default().with_topic_partitions(topics_as!(TopicPartitions, topics))
}
