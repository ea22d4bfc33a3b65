use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse};
use shoal_coordinator::{ErrorKind, Request, Response, TopicPartition};

use super::Broker;
use crate::kafka::error_codes;

pub async fn handle(
    broker: &Broker,
    request: DeleteRecordsRequest,
    _version: i16,
) -> DeleteRecordsResponse {
    let view = broker.shard.topics.load();
    let mut targets = Vec::new();
    for topic in &request.topics {
        if let Some(meta) = view.by_name(topic.name.0.as_str()) {
            for p in &topic.partitions {
                let tp = TopicPartition {
                    topic_id: meta.id,
                    partition: p.partition_index,
                };
                targets.push((tp, p.offset));
            }
        }
    }
    let results = match broker
        .shard
        .coordinator_call(Request::DeleteRecords {
            partitions: targets.clone(),
        })
        .await
    {
        Ok(Response::DeleteRecords(results)) if results.len() == targets.len() => Some(results),
        _ => None,
    };
    let mut results = results.map(|r| r.into_iter());
    let mut response = DeleteRecordsResponse::default();
    for topic in request.topics {
        let known = view.by_name(topic.name.0.as_str()).is_some();
        let partitions = topic
            .partitions
            .iter()
            .map(|p| {
                let result = if known {
                    results
                        .as_mut()
                        .and_then(|r| r.next())
                        .unwrap_or(Err(ErrorKind::NotAvailable))
                } else {
                    Err(ErrorKind::UnknownTopicOrPartition)
                };
                let answer =
                    DeleteRecordsPartitionResult::default().with_partition_index(p.partition_index);
                match result {
                    Ok(low_watermark) => answer.with_low_watermark(low_watermark),
                    Err(e) => answer
                        .with_low_watermark(-1)
                        .with_error_code(error_codes::code_of(Some(e))),
                }
            })
            .collect();
        response.topics.push(
            DeleteRecordsTopicResult::default()
                .with_name(topic.name)
                .with_partitions(partitions),
        );
    }
    response
}
