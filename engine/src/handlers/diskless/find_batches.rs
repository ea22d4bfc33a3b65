use shoal_coordinator::commands::FindBatches;
use shoal_coordinator::{ErrorKind, FindBatchesRequest, FindBatchesResult, TopicPartition};
use shoal_protocol::diskless::*;

use super::error_fields::error_fields;
use crate::context::Call;

use shoal_coordinator::entry::MAGIC_V2;

const TIMESTAMP_TYPE_CREATE_TIME: i8 = 0;

pub async fn find_batches(
    call: &Call<'_>,
    request: DisklessFindBatchesRequest,
) -> DisklessFindBatchesResponse {
    let broker = call.broker;
    let max_batches = u32::try_from(request.max_batches_per_partition).unwrap_or(0);
    let wanted: Vec<FindBatchesRequest> = request
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| FindBatchesRequest {
                read_committed: false,
                partition: TopicPartition {
                    topic_id: t.topic_id,
                    partition: p.partition_index,
                },
                offset: p.offset,
                max_partition_bytes: p.max_partition_fetch_bytes.max(0) as u32,
                max_batches,
            })
        })
        .collect();
    let count = wanted.len();
    let call = FindBatches {
        partitions: wanted,
        max_bytes: request.fetch_max_bytes.max(0) as u32,
    };
    let failed = FindBatchesResult {
        error: Some(ErrorKind::NotAvailable),
        log_start_offset: -1,
        high_watermark: -1,
        last_stable_offset: -1,
        batches: Vec::new(),
        aborted: Vec::new(),
    };
    let results = match broker.shard.coordinator.run(call).await {
        Ok(results) if results.len() == count => results,
        _ => vec![failed.clone(); count],
    };
    let mut results = results.into_iter();
    let topics = request
        .topics
        .into_iter()
        .map(|t| DisklessFindBatchesTopicResponse {
            topic_id: t.topic_id,
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let r = results.next().unwrap_or_else(|| failed.clone());
                    DisklessFindBatchesPartitionResponse {
                        partition_index: p.partition_index,
                        error_code: error_fields(r.error).0,
                        log_start_offset: r.log_start_offset,
                        high_watermark: r.high_watermark,
                        batches: r
                            .batches
                            .into_iter()
                            .map(|b| DisklessFindBatchesBatchInfo {
                                // Offsets identify a batch within its partition.
                                batch_id: b.base_offset,
                                object_key: b.object_key.to_string(),
                                magic: MAGIC_V2,
                                byte_offset: b.byte_offset as i64,
                                byte_size: b.size_bytes as i64,
                                base_offset: b.base_offset,
                                last_offset: b.last_offset,
                                log_append_timestamp: b.log_append_time_ms,
                                batch_max_timestamp: b.max_timestamp,
                                timestamp_type: TIMESTAMP_TYPE_CREATE_TIME,
                            })
                            .collect(),
                    }
                })
                .collect(),
        })
        .collect();
    DisklessFindBatchesResponse {
        topics,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_coordinator_and_the_batch_format_agree_on_the_magic() {
        assert_eq!(super::MAGIC_V2, shoal_wal::batch::MAGIC_V2);
    }
}
