use shoal_coordinator::commands::CommitFile;
use shoal_coordinator::{CommitBatch, CommitBatchResult, ErrorKind, NewObject, TopicPartition};
use shoal_protocol::diskless::*;

use super::error_fields::error_fields;
use crate::context::Call;

/// WRITE_AHEAD_MULTI_SEGMENT, the only object format.
const OBJECT_FORMAT_WAL: i8 = 1;

pub async fn commit_file(
    call: &Call<'_>,
    request: DisklessCommitFileRequest,
) -> DisklessCommitFileResponse {
    let broker = call.broker;
    let count = request.batches.len();
    let results = if request.object_format != OBJECT_FORMAT_WAL {
        vec![CommitBatchResult::rejected(ErrorKind::InvalidRequest); count]
    } else if let Err(error) = check_object(call, &request).await {
        vec![CommitBatchResult::rejected(error); count]
    } else {
        match to_commit_batches(&request) {
            Err(error) => vec![CommitBatchResult::rejected(error); count],
            Ok(batches) => {
                let object = NewObject {
                    key: request.object_key,
                    size_bytes: request.file_size.max(0) as u64,
                    uploader_broker_id: call.broker.config.node_id,
                    owner_ids: request.owner_ids,
                };
                let call = CommitFile { object, batches };
                match broker.shard.coordinator.run(call).await {
                    Ok(results) => results,
                    Err(_) => vec![CommitBatchResult::rejected(ErrorKind::NotAvailable); count],
                }
            }
        }
    };
    let batches = results
        .into_iter()
        .map(|r| {
            let (error_code, error_message) = error_fields(r.error);
            DisklessCommitBatchResult {
                error_code,
                error_message,
                assigned_base_offset: r.base_offset,
                log_append_time: r.log_append_time_ms,
                log_start_offset: r.log_start_offset,
                is_duplicate: r.is_duplicate,
            }
        })
        .collect();
    DisklessCommitFileResponse {
        batches,
        ..Default::default()
    }
}

/// The object must exist in the store with the size the request gives it, before any offset
/// moves: a commit naming an object that is not there (or shorter than its batches) would
/// hand out offsets no fetch could ever serve.
async fn check_object(
    call: &Call<'_>,
    request: &DisklessCommitFileRequest,
) -> Result<(), ErrorKind> {
    match call.broker.shard.object_size(&request.object_key).await {
        Ok(Some(size)) if size as i64 == request.file_size => Ok(()),
        Ok(found) => {
            tracing::warn!(
                object = %request.object_key,
                claimed_size = request.file_size,
                found_size = ?found,
                "DisklessCommitFile refused: the object is not in the store as described"
            );
            Err(ErrorKind::InvalidRequest)
        }
        Err(e) => {
            tracing::warn!(object = %request.object_key, error = %e, "DisklessCommitFile: object store check failed");
            Err(ErrorKind::StorageError)
        }
    }
}

/// Every batch must be a magic-2 batch inside the object with a sane offset range.
fn to_commit_batches(request: &DisklessCommitFileRequest) -> Result<Vec<CommitBatch>, ErrorKind> {
    request
        .batches
        .iter()
        .map(|b| {
            let count = b.last_offset - b.base_offset + 1;
            let inside = b.byte_offset >= 0
                && b.size > 0
                && (b.byte_offset as i64 + b.size as i64) <= request.file_size;
            if b.magic != 2 || !inside || !(1..=i32::MAX as i64).contains(&count) {
                return Err(ErrorKind::InvalidRequest);
            }
            Ok(CommitBatch {
                partition: TopicPartition {
                    topic_id: b.topic_id,
                    partition: b.partition_index,
                },
                byte_offset: b.byte_offset as u32,
                size_bytes: b.size as u32,
                offset_count: count as u32,
                max_timestamp: b.batch_max_timestamp,
                producer_id: b.producer_id,
                producer_epoch: b.producer_epoch,
                base_sequence: b.base_sequence,
                kind: shoal_coordinator::BatchKind::Plain,
                kept_base_offset: None,
                joins_transaction: false,
            })
        })
        .collect()
}
