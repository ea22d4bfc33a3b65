//! OffsetDelete: removes committed offsets, except for topics the group's members are
//! subscribed to (GROUP_SUBSCRIBED_TO_TOPIC), as Kafka does.

use shoal_coordinator::commands::DeleteOffsets;
use shoal_coordinator::{ErrorKind, TopicPartition};
use shoal_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use shoal_protocol::messages::{OffsetDeleteRequest, OffsetDeleteResponse};
use shoal_shards::groups::calls::SubscribedTopics;
use shoal_shards::groups::GroupError;

use super::commit_request::{group_claim, run_under_claim};
use super::owned;
use crate::context::{Broker, Call};
use crate::handlers::topics::permitted;
use crate::kafka::error_codes::{self, Outcome};
use shoal_coordinator::acl::Operation;

pub async fn handle(call: &Call<'_>, request: OffsetDeleteRequest) -> OffsetDeleteResponse {
    let broker = call.broker;
    let group = owned(&request.group_id.0);
    if let Err(denied) = call.check_group(Operation::Delete, &group) {
        return OffsetDeleteResponse::default().with_error_code(error_codes::code_of(Some(denied)));
    }
    let view = broker.shard.topics.load_full();
    let subscribed = broker
        .shard
        .try_group_call(&group, SubscribedTopics(group.clone(), view.clone()))
        .await;
    let subscribed =
        match subscribed {
            Ok(names) => names,
            Err(error) => {
                return OffsetDeleteResponse::default()
                    .with_error_code(error_codes::code_of(Some::<GroupError>(error)))
            }
        };
    let error_of = |name: &str| {
        if let Err(refused) = permitted(call, &view, name, Operation::Read) {
            Some(Outcome::from(refused))
        } else if subscribed.iter().any(|t| t == name) {
            Some(GroupError::GroupSubscribedToTopic.into())
        } else {
            None
        }
    };
    let deletable: Vec<TopicPartition> = request
        .topics
        .iter()
        .filter(|t| error_of(t.name.0.as_str()).is_none())
        .filter_map(|t| view.by_name(t.name.0.as_str()).map(|m| (m.id, t)))
        .flat_map(|(topic_id, t)| {
            t.partitions.iter().map(move |p| TopicPartition {
                topic_id,
                partition: p.partition_index,
            })
        })
        .collect();
    let top_error = delete(broker, &group, deletable).await;
    let topics = request
        .topics
        .into_iter()
        .map(|t| {
            let error = error_of(t.name.0.as_str());
            OffsetDeleteResponseTopic::default()
                .with_partitions(
                    t.partitions
                        .iter()
                        .map(|p| {
                            OffsetDeleteResponsePartition::default()
                                .with_partition_index(p.partition_index)
                                .with_error_code(error_codes::code_of(error))
                        })
                        .collect(),
                )
                .with_name(t.name)
        })
        .collect();
    match top_error {
        Some(e) => OffsetDeleteResponse::default().with_error_code(error_codes::code_of(Some(e))),
        None => OffsetDeleteResponse::default().with_topics(topics),
    }
}

/// Deletes the group's offsets of `deletable` under its claim: the request's error, if any.
/// Only the deletable partitions: refused ones keep their offsets, and an empty list deletes
/// nothing.
async fn delete(broker: &Broker, group: &str, deletable: Vec<TopicPartition>) -> Option<Outcome> {
    match group_claim(broker, group).await {
        Err(refused) => Some(refused),
        Ok(claim) => {
            let delete = DeleteOffsets {
                group: group.to_string(),
                claim,
                partitions: deletable,
            };
            let claim_gone =
                |reply: &Result<bool, ErrorKind>| matches!(reply, Err(ErrorKind::NotCoordinator));
            match run_under_claim(broker, group, claim, delete, claim_gone).await {
                Ok(Ok(true)) => None,
                Ok(Ok(false)) => Some(Outcome::from(GroupError::GroupIdNotFound)),
                Ok(Err(refused)) => Some(refused.into()),
                Err(_) => Some(ErrorKind::NotAvailable.into()),
            }
        }
    }
}
