//! DescribeTopicPartitions (KIP-966): what `kafka-topics --describe` and the Admin client's
//! `describeTopics` ask from Kafka 3.8 on. Metadata's topic answer, paged: topics in name order,
//! at most `ResponsePartitionLimit` partitions per answer (and never more than Kafka's default
//! `max.request.partition.size.limit`), and a cursor to the next partition when more remain.

use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::acl::{Operation, ResourceType};
use shoal_coordinator::{TopicMeta, TopicsView};
use shoal_protocol::messages::describe_topic_partitions_response::{
    Cursor, DescribeTopicPartitionsResponsePartition, DescribeTopicPartitionsResponseTopic,
};
use shoal_protocol::messages::{
    BrokerId, DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, TopicName,
};
use shoal_protocol::ResponseError;

use super::authorize::TOPIC_OPERATIONS;
use super::metadata::LEADER_EPOCH;
use crate::context::Call;

/// Kafka's `max.request.partition.size.limit` default: the most partitions one answer holds.
const PARTITIONS_PER_ANSWER_MAX: i32 = 2000;

/// Each topic answered, in name order: its name and what is known of it (an error: no such
/// topic, or not describable, answered with the error alone).
fn wanted<'v>(
    call: &Call<'_>,
    view: &'v TopicsView,
    request: &DescribeTopicPartitionsRequest,
) -> Vec<(String, Result<&'v TopicMeta, ResponseError>)> {
    let describable = |name: &str| call.authorized(Operation::Describe, ResourceType::Topic, name);
    let mut wanted: Vec<(String, Result<&TopicMeta, ResponseError>)> = if request.topics.is_empty()
    {
        // All topics: those the client may not describe are left out, as Metadata does.
        view.all()
            .filter(|t| describable(&t.name))
            .map(|t| (t.name.clone(), Ok(&**t)))
            .collect()
    } else {
        request
            .topics
            .iter()
            .map(|t| {
                let name = t.name.0.as_str();
                let known = match (describable(name), view.by_name(name)) {
                    (false, _) => Err(ResponseError::TopicAuthorizationFailed),
                    (true, None) => Err(ResponseError::UnknownTopicOrPartition),
                    (true, Some(meta)) => Ok(&**meta),
                };
                (name.to_string(), known)
            })
            .collect()
    };
    wanted.sort_by(|a, b| a.0.cmp(&b.0));
    wanted.dedup_by(|a, b| a.0 == b.0);
    wanted
}

pub async fn handle(
    call: &Call<'_>,
    request: DescribeTopicPartitionsRequest,
) -> DescribeTopicPartitionsResponse {
    let view = call.broker.shard.topics.load();
    let wanted = wanted(call, &view, &request);
    let (first_topic, first_partition) = match &request.cursor {
        Some(cursor) => (cursor.topic_name.0.as_str(), cursor.partition_index.max(0)),
        None => ("", 0),
    };
    let mut room = request
        .response_partition_limit
        .clamp(0, PARTITIONS_PER_ANSWER_MAX);
    let mut response = DescribeTopicPartitionsResponse::default();
    for (name, known) in wanted.iter().filter(|(n, _)| n.as_str() >= first_topic) {
        let start = if name == first_topic {
            first_partition
        } else {
            0
        };
        let meta = match known {
            Err(error) => {
                response.topics.push(
                    DescribeTopicPartitionsResponseTopic::default()
                        .with_name(Some(topic_name(name)))
                        .with_error_code(error.code()),
                );
                continue;
            }
            Ok(meta) => meta,
        };
        if start < meta.partitions && room == 0 {
            response.next_cursor = Some(
                Cursor::default()
                    .with_topic_name(topic_name(name))
                    .with_partition_index(start),
            );
            break;
        }
        let end = meta.partitions.min(start.saturating_add(room));
        room -= end.saturating_sub(start).max(0);
        response.topics.push(describe(call, meta, start..end));
        if end < meta.partitions {
            response.next_cursor = Some(
                Cursor::default()
                    .with_topic_name(topic_name(name))
                    .with_partition_index(end),
            );
            break;
        }
    }
    response
}

fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_string()))
}

fn describe(
    call: &Call<'_>,
    meta: &TopicMeta,
    partitions: std::ops::Range<i32>,
) -> DescribeTopicPartitionsResponseTopic {
    DescribeTopicPartitionsResponseTopic::default()
        .with_name(Some(topic_name(&meta.name)))
        .with_topic_id(meta.id)
        .with_topic_authorized_operations(call.authorized_operations(
            &TOPIC_OPERATIONS,
            ResourceType::Topic,
            &meta.name,
        ))
        .with_partitions(
            partitions
                .map(|index| {
                    let node = call.partition_leader(meta.id, index);
                    DescribeTopicPartitionsResponsePartition::default()
                        .with_partition_index(index)
                        .with_leader_id(BrokerId(node))
                        .with_leader_epoch(LEADER_EPOCH)
                        .with_replica_nodes(vec![BrokerId(node)])
                        .with_isr_nodes(vec![BrokerId(node)])
                        // No eligible leader replicas (KIP-966's ELR): the lists are empty,
                        // as Kafka's are with ELR off.
                        .with_eligible_leader_replicas(Some(Vec::new()))
                        .with_last_known_elr(Some(Vec::new()))
                })
                .collect(),
        )
}
