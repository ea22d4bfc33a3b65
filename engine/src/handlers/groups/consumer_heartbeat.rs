//! ConsumerGroupHeartbeat (KIP-848): a consumer-protocol member joins, heartbeats, reconciles
//! and leaves through this one API; the group's shard decides (`groups::consumer`).

use std::collections::BTreeSet;

use shoal_coordinator::features::{CONSUMER_PROTOCOL_LEVEL, GROUP_VERSION};
use shoal_coordinator::TopicPartition;
use shoal_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use shoal_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use shoal_protocol::ResponseError;
use shoal_shards::groups::consumer::calls::ConsumerHeartbeat;
use shoal_shards::groups::consumer::group::{Heartbeat, HeartbeatAnswer};
use shoal_shards::groups::GroupError;

use super::{heartbeat_preamble, owned, owned_optional, text, topics_as};
use crate::context::Call;
use crate::handlers::configs::group_configs::group_timeouts;
use crate::kafka::error_codes;

pub async fn handle(
    call: &Call<'_>,
    request: ConsumerGroupHeartbeatRequest,
) -> ConsumerGroupHeartbeatResponse {
    let broker = call.broker;
    // The consumer protocol is served while `group.version` 1 is finalized, as on Kafka.
    if call.feature_level(GROUP_VERSION) < CONSUMER_PROTOCOL_LEVEL {
        return refused(ResponseError::UnsupportedVersion.code());
    }
    let group_id = owned(&request.group_id.0);
    let subscribed = request.subscribed_topic_names.iter().flatten();
    if let Err(code) = heartbeat_preamble(call, &group_id, subscribed) {
        return refused(code);
    }
    let mut member_id = owned(&request.member_id);
    if member_id.is_empty() && call.version == 0 && request.member_epoch == 0 {
        // Version 0: the coordinator names a joining member (from v1 the client does).
        member_id = uuid::Uuid::new_v4().to_string();
    }
    let heartbeat = Heartbeat {
        member_id,
        member_epoch: request.member_epoch,
        instance_id: owned_optional(&request.instance_id),
        rack_id: owned_optional(&request.rack_id),
        client_id: call.client.id.clone(),
        client_host: call.client.host.clone(),
        access: call.topic_access(),
        rebalance_timeout_ms: request.rebalance_timeout_ms,
        subscribed_topic_names: request
            .subscribed_topic_names
            .as_ref()
            .map(|names| names.iter().map(|n| owned(&n.0)).collect()),
        subscribed_topic_regex: owned_optional(&request.subscribed_topic_regex),
        server_assignor: owned_optional(&request.server_assignor),
        owned: request.topic_partitions.as_ref().map(|topics| {
            topics
                .iter()
                .flat_map(|t| TopicPartition::each(t.topic_id, &t.partitions))
                .collect()
        }),
    };
    let topics = broker.shard.topics.load_full();
    let (session_timeout_ms, interval_ms) =
        group_timeouts(&topics, &broker.config.groups, &group_id);
    let call_on_group = ConsumerHeartbeat {
        group_id: group_id.clone(),
        heartbeat,
        topics,
        session_timeout_ms,
    };
    let answer = broker.shard.try_group_call(&group_id, call_on_group).await;
    match answer {
        Ok(answer) => answered(answer, interval_ms),
        Err(error) => refused(error_codes::code_of(Some::<GroupError>(error))),
    }
}

fn refused(code: i16) -> ConsumerGroupHeartbeatResponse {
    ConsumerGroupHeartbeatResponse::default().with_error_code(code)
}

fn answered(answer: HeartbeatAnswer, interval_ms: i32) -> ConsumerGroupHeartbeatResponse {
    ConsumerGroupHeartbeatResponse::default()
        .with_member_id(Some(text(answer.member_id)))
        .with_member_epoch(answer.member_epoch)
        .with_heartbeat_interval_ms(interval_ms)
        .with_assignment(answer.assignment.map(assignment))
}

/// The partitions by topic id, as the response carries them.
fn assignment(partitions: BTreeSet<TopicPartition>) -> Assignment {
    let topics = partitions.into_iter().map(|p| (p.topic_id, p.partition));
    Assignment::default().with_topic_partitions(topics_as!(TopicPartitions, topics))
}
