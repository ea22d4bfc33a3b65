use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};
use shoal_coordinator::{ErrorKind, Request, Response, TopicPartition};

use super::Broker;
use crate::kafka::error_codes;

pub async fn handle(
    broker: &Broker,
    request: ListOffsetsRequest,
    _version: i16,
) -> ListOffsetsResponse {
    let view = broker.shard.topics.load();
    let mut lookups = Vec::new();
    for topic in &request.topics {
        if let Some(meta) = view.by_name(topic.name.0.as_str()) {
            for p in &topic.partitions {
                let tp = TopicPartition {
                    topic_id: meta.id,
                    partition: p.partition_index,
                };
                lookups.push((tp, p.timestamp));
            }
        }
    }
    let found = match broker
        .shard
        .coordinator_call(Request::ListOffsets {
            partitions: lookups.clone(),
        })
        .await
    {
        Ok(Response::ListOffsets(found)) if found.len() == lookups.len() => Some(found),
        _ => None,
    };
    let mut found = found.map(|f| f.into_iter());
    let mut response = ListOffsetsResponse::default();
    for topic in request.topics {
        let known = view.by_name(topic.name.0.as_str()).is_some();
        let partitions = topic
            .partitions
            .iter()
            .map(|p| {
                let mut answer =
                    ListOffsetsPartitionResponse::default().with_partition_index(p.partition_index);
                let result = if known {
                    match found.as_mut().and_then(|f| f.next()) {
                        Some(r) => Ok(r),
                        None => Err(ErrorKind::NotAvailable),
                    }
                } else {
                    Err(ErrorKind::UnknownTopicOrPartition)
                };
                match result {
                    Ok(r) if r.error.is_none() => {
                        answer.offset = r.offset;
                        answer.timestamp = r.timestamp;
                    }
                    Ok(r) => answer.error_code = error_codes::code_of(r.error),
                    Err(e) => answer.error_code = error_codes::code_of(Some(e)),
                }
                answer
            })
            .collect();
        response.topics.push(
            ListOffsetsTopicResponse::default()
                .with_name(topic.name)
                .with_partitions(partitions),
        );
    }
    response
}
