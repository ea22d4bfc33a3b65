use shoal_coordinator::commands::ListOffsets;
use shoal_coordinator::{ErrorKind, ListOffsetsResult};
use shoal_protocol::diskless::*;

use super::error_fields::error_fields;
use crate::context::Call;
use crate::handlers::topics::partition_values;

/// The coordinator's own answer: timestamp lookups at batch granularity.
pub async fn list_offsets(
    call: &Call<'_>,
    request: DisklessListOffsetsRequest,
) -> DisklessListOffsetsResponse {
    let broker = call.broker;
    let lookups = partition_values(
        &request.topics,
        |t| Some(t.topic_id),
        |t| &t.partitions,
        |p| (p.partition_index, p.timestamp),
    );
    let count = lookups.len();
    let call = ListOffsets {
        read_committed: false,
        partitions: lookups,
    };
    let results = match broker.shard.coordinator.run(call).await {
        Ok(results) if results.len() == count => results,
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
