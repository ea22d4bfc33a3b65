use shoal_coordinator::{ErrorKind, Request, Response, TopicPartition};

use super::error_fields;
use crate::diskless::messages::*;
use crate::handlers::Broker;

pub async fn delete_records(
    broker: &Broker,
    request: DisklessDeleteRecordsRequest,
) -> DisklessDeleteRecordsResponse {
    let targets: Vec<(TopicPartition, i64)> = request
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(|p| {
                let tp = TopicPartition {
                    topic_id: t.topic_id,
                    partition: p.partition_index,
                };
                (tp, p.offset)
            })
        })
        .collect();
    let count = targets.len();
    let call = Request::DeleteRecords {
        partitions: targets,
    };
    let results = match broker.shard.coordinator_call(call).await {
        Ok(Response::DeleteRecords(results)) if results.len() == count => results,
        _ => vec![Err(ErrorKind::NotAvailable); count],
    };
    let mut results = results.into_iter();
    let topics = request
        .topics
        .into_iter()
        .map(|t| DisklessDeleteRecordsTopicResult {
            topic_id: t.topic_id,
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let result = results.next().unwrap_or(Err(ErrorKind::NotAvailable));
                    let (error_code, error_message) = error_fields(result.err());
                    DisklessDeleteRecordsPartitionResult {
                        partition_index: p.partition_index,
                        low_watermark: result.unwrap_or(-1),
                        error_code,
                        error_message,
                    }
                })
                .collect(),
        })
        .collect();
    DisklessDeleteRecordsResponse {
        topics,
        ..Default::default()
    }
}
