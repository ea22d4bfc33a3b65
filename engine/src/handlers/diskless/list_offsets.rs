use shoal_coordinator::{ErrorKind, ListOffsetsResult, Request, Response, TopicPartition};

use super::error_fields;
use crate::diskless::messages::*;
use crate::handlers::Broker;

/// The coordinator's own answer: timestamp lookups at batch granularity.
pub async fn list_offsets(
    broker: &Broker,
    request: DisklessListOffsetsRequest,
) -> DisklessListOffsetsResponse {
    let lookups: Vec<(TopicPartition, i64)> = request
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                let tp = TopicPartition {
                    topic_id: t.topic_id,
                    partition: p.partition_index,
                };
                (tp, p.timestamp)
            })
        })
        .collect();
    let count = lookups.len();
    let call = Request::ListOffsets {
        partitions: lookups,
    };
    let results = match broker.shard.coordinator_call(call).await {
        Ok(Response::ListOffsets(results)) if results.len() == count => results,
        _ => vec![ListOffsetsResult::failed(ErrorKind::NotAvailable); count],
    };
    let mut results = results.into_iter();
    let topics = request
        .topics
        .into_iter()
        .map(|t| DisklessListOffsetsTopicResponse {
            topic_id: t.topic_id,
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let r = results
                        .next()
                        .unwrap_or(ListOffsetsResult::failed(ErrorKind::NotAvailable));
                    let (error_code, error_message) = error_fields(r.error);
                    DisklessListOffsetsPartitionResponse {
                        partition_index: p.partition_index,
                        error_code,
                        error_message,
                        timestamp: r.timestamp,
                        offset: r.offset,
                    }
                })
                .collect(),
        })
        .collect();
    DisklessListOffsetsResponse {
        topics,
        ..Default::default()
    }
}
