use shoal_coordinator::commands::DeleteRecords;
use shoal_coordinator::ErrorKind;
use shoal_protocol::diskless::*;

use super::error_fields::error_fields;
use crate::context::Call;
use crate::handlers::topics::partition_values;

pub async fn delete_records(
    call: &Call<'_>,
    request: DisklessDeleteRecordsRequest,
) -> DisklessDeleteRecordsResponse {
    let broker = call.broker;
    let targets = partition_values(
        &request.topics,
        |t| Some(t.topic_id),
        |t| &t.partitions,
        |p| (p.partition_index, p.offset),
    );
    let count = targets.len();
    let call = DeleteRecords {
        partitions: targets,
    };
    let results = match broker.shard.coordinator.run(call).await {
        Ok(results) if results.len() == count => results,
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
