use std::time::Duration;

use shoal_coordinator::commands::ListOffsets;
use shoal_coordinator::{ListOffsetsResult, TopicPartition, MAX_TIMESTAMP};
use shoal_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use shoal_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};
use shoal_shards::PartitionFetch;
use shoal_wal::records::{first_record_at_or_after, latest_record};
use shoal_wal::BatchHeader;

use super::metadata::LEADER_EPOCH;
use super::topics::{partition_values, permitted, Answers};
use crate::context::Broker;
use crate::context::Call;
use crate::kafka::error_codes;
use shoal_coordinator::acl::Operation;

/// The first ListOffsets version whose answers carry the leader epoch.
const LEADER_EPOCH_VERSION: i16 = 4;

pub async fn handle(call: &Call<'_>, request: ListOffsetsRequest) -> ListOffsetsResponse {
    let broker = call.broker;
    let view = broker.shard.topics.load();
    let lookups = partition_values(
        &request.topics,
        |t| permitted(call, &view, t.name.0.as_str(), Operation::Describe).ok(),
        |t| &t.partitions,
        |p| (p.partition_index, p.timestamp),
    );
    let mut found = match broker
        .shard
        .coordinator
        .run(ListOffsets {
            // Kafka's isolation level 1, READ_COMMITTED.
            read_committed: request.isolation_level == 1,
            partitions: lookups.clone(),
        })
        .await
    {
        Ok(found) if found.len() == lookups.len() => Some(found),
        _ => None,
    };
    for (result, (tp, timestamp)) in found.iter_mut().flatten().zip(&lookups) {
        if (*timestamp >= 0 || *timestamp == MAX_TIMESTAMP) && result.offset >= 0 {
            if let Some(exact) = record_exact(broker, *tp, result.offset, *timestamp).await {
                *result = exact;
            }
        }
    }
    let mut found = Answers::new(found);
    let mut response = ListOffsetsResponse::default();
    for topic in request.topics {
        let known = permitted(call, &view, topic.name.0.as_str(), Operation::Describe);
        let partitions = topic
            .partitions
            .iter()
            .map(|p| {
                let mut answer =
                    ListOffsetsPartitionResponse::default().with_partition_index(p.partition_index);
                match found.next(known) {
                    Ok(r) if r.error.is_none() => {
                        answer.offset = r.offset;
                        answer.timestamp = r.timestamp;
                        // The epoch of the offset found (KIP-320), as Kafka answers; none
                        // when no offset was, or in versions without the field.
                        if r.offset >= 0 && call.version >= LEADER_EPOCH_VERSION {
                            answer.leader_epoch = LEADER_EPOCH;
                        }
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

/// The coordinator answers timestamp lookups at batch granularity (the batch's base offset);
/// this reads that batch and finds the record itself: the first with a timestamp at or after
/// `timestamp`, or for MAX_TIMESTAMP the first with the largest timestamp.
async fn record_exact(
    broker: &Broker,
    partition: TopicPartition,
    batch_offset: i64,
    timestamp: i64,
) -> Option<ListOffsetsResult> {
    let fetch = PartitionFetch {
        partition,
        offset: batch_offset,
        // The first batch is always returned whole, whatever the byte limits.
        max_bytes: 1,
        read_committed: false,
        offsets_only: false,
    };
    let result = broker
        .shard
        .fetch(vec![fetch], 1, 0, Duration::ZERO)
        .await
        .pop()?;
    if result.error.is_some() {
        return None;
    }
    // Bounded and tolerant: stored batches may predate produce-time validation; a batch
    // that cannot be read leaves the answer at the batch's base offset.
    let header = BatchHeader::parse_validated(&result.records).ok()?;
    let inflated_max = broker.config.produce.max_inflated_batch_bytes;
    let found = if timestamp == MAX_TIMESTAMP {
        latest_record(&result.records, &header, inflated_max)
    } else {
        first_record_at_or_after(&result.records, &header, timestamp, inflated_max)
    };
    let record = found.ok()??;
    Some(ListOffsetsResult {
        error: None,
        offset: header.base_offset + record.offset_delta as i64,
        timestamp: record.timestamp,
    })
}
