//! Reading a partition's committed batches for a rewrite, a bounded step at a time: their
//! coordinates from the coordinator (below the last stable offset), their bytes through the
//! fetch path (the shard's object cache, then the store, every batch checked).

use bytes::Bytes;
use shoal_coordinator::commands::FindBatches;
use shoal_coordinator::{BatchCoordinate, ErrorKind, FindBatchesRequest, TopicPartition};

use super::Pace;
use crate::fetch::read_partition;
use crate::{Shard, ShardError};

/// A partition's batches from one offset up to (not including) a batch that begins at `end`,
/// handed out a step at a time.
pub struct Batches<'a> {
    shard: &'a Shard,
    partition: TopicPartition,
    offset: i64,
    end: i64,
}

impl<'a> Batches<'a> {
    pub fn new(shard: &'a Shard, partition: TopicPartition, from: i64, end: i64) -> Batches<'a> {
        Batches {
            shard,
            partition,
            offset: from,
            end,
        }
    }

    /// The next step's batches with their bytes, read at the pace's rate; None at the end.
    pub async fn next_step(
        &mut self,
        pace: &mut Pace,
    ) -> Result<Option<Vec<(BatchCoordinate, Bytes)>>, ShardError> {
        let step = read_step(self.shard, self.partition, (self.offset, self.end), pace).await?;
        let Some((last, _)) = step.last() else {
            return Ok(None);
        };
        self.offset = last.last_offset + 1;
        Ok(Some(step))
    }
}

/// The batches from `offset` (at most about `[rewrite] read_step_bytes`, at least one) that
/// begin before `end`, each with its bytes, read at the pace's rate; empty when none is left.
async fn read_step(
    shard: &Shard,
    partition: TopicPartition,
    (offset, end): (i64, i64),
    pace: &mut Pace,
) -> Result<Vec<(BatchCoordinate, Bytes)>, ShardError> {
    let step_bytes = shard.config.rewrite.read_step_bytes;
    let request = FindBatches {
        partitions: vec![FindBatchesRequest {
            partition,
            offset,
            max_partition_bytes: step_bytes,
            max_batches: u32::MAX,
            read_committed: true,
        }],
        max_bytes: step_bytes,
    };
    let mut results = shard.coordinator.run(request).await?;
    let result = results.pop().ok_or_else(|| moved("no answer"))?;
    match result.error {
        None => {}
        // The log start moved past the offset (retention, DeleteRecords): start over.
        Some(ErrorKind::OffsetOutOfRange) => return Err(moved("the log start moved")),
        Some(e) => return Err(moved(&format!("{e:?}"))),
    }
    let batches: Vec<BatchCoordinate> = result
        .batches
        .into_iter()
        .take_while(|b| b.base_offset < end)
        .collect();
    if batches.is_empty() {
        return Ok(Vec::new());
    }
    pace.charge(batches.iter().map(|b| b.size_bytes as u64).sum())
        .await;
    let local = &shard.local_data;
    let bytes = read_partition(&batches, &local.cache, &shard.store, &shard.metrics).await?;
    let expected: usize = batches.iter().map(|b| b.size_bytes as usize).sum();
    if bytes.len() != expected {
        // read_partition logged the batch it could not serve, with its object.
        return Err(ShardError::Rewrite(format!(
            "{} of {expected} bytes could be read",
            bytes.len()
        )));
    }
    shard
        .metrics
        .counters
        .rewrite_bytes_read
        .add(expected as u64);
    let mut at = 0;
    Ok(batches
        .into_iter()
        .map(|b| {
            let size = b.size_bytes as usize;
            let slice = bytes.slice(at..at + size);
            at += size;
            (b, slice)
        })
        .collect())
}

fn moved(what: &str) -> ShardError {
    ShardError::Rewrite(format!("the partition changed while it was read: {what}"))
}
