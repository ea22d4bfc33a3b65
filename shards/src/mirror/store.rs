//! Storing batches fetched from a mirror's source: one WAL object per fetch round, uploaded
//! like produced data, then committed at the source's offsets (CommitMirrored).

use bytes::Bytes;
use shoal_coordinator::commands::CommitMirrored;
use shoal_coordinator::{CommitBatch, CommitBatchResult, ErrorKind, NewObject, TopicPartition};
use shoal_wal::object::OBJECT_MAX_BYTES;
use shoal_wal::{BatchHeader, ObjectBody, SegmentPlacement, WriteLane};

use crate::produce::{commit_batch, upload_with_retries};
use crate::Shard;

/// One source batch, validated, for a partition this shard owns.
pub struct FetchedBatch {
    pub partition: TopicPartition,
    pub header: BatchHeader,
    pub bytes: Bytes,
}

impl Shard {
    /// Uploads `batches` as one object and commits them at their own offsets. Batches must
    /// be grouped by partition, in offset order.
    pub async fn store_mirrored(
        &self,
        batches: Vec<FetchedBatch>,
    ) -> Result<Vec<CommitBatchResult>, ErrorKind> {
        let total: usize = batches.iter().map(|b| b.bytes.len()).sum();
        if total > OBJECT_MAX_BYTES {
            return Err(ErrorKind::MessageTooLarge);
        }
        // The batches stay in the buffers they were fetched into (see `ObjectBody`).
        let mut data = ObjectBody::default();
        let mut mirrored = Vec::with_capacity(batches.len());
        for b in &batches {
            let placement = SegmentPlacement {
                byte_offset: data.len() as u32,
                size_bytes: b.bytes.len() as u32,
            };
            data.push(b.bytes.clone());
            let batch = commit_batch(b.partition, placement, &b.header, &b.bytes);
            mirrored.push(CommitBatch {
                kept_base_offset: Some(b.header.base_offset),
                joins_transaction: false,
                ..batch
            });
        }
        let key = format!(
            "{}/{}",
            crate::maintenance::WAL_PREFIX,
            uuid::Uuid::new_v4()
        );
        upload_with_retries(
            WriteLane::Produce,
            self.store.clone(),
            key.clone(),
            data.clone(),
            self.config.produce.upload_attempts,
            self.config.produce.upload_backoff(),
        )
        .await
        .map_err(|e| {
            tracing::warn!(%key, error = %e, "mirrored object upload failed; the fetch is retried (check the object store)");
            ErrorKind::StorageError
        })?;
        let count = mirrored.len();
        let request = CommitMirrored {
            object: NewObject::uploaded(key.clone(), data.len() as u64, self.config.node_id),
            batches: mirrored.clone(),
        };
        let results = match self.coordinator.run(request).await {
            Ok(results) if results.len() == count => results,
            _ => return Err(ErrorKind::NotAvailable),
        };
        // Tailing consumers of the mirror topic wake up, and read from the cache.
        let ends = mirrored
            .iter()
            .zip(&results)
            .filter(|(_, r)| r.error.is_none())
            .filter_map(|(m, _)| Some((m.partition, m.kept_offsets()?.1 + 1)));
        self.local_data.on_committed(&key, &data, ends);
        Ok(results)
    }
}
