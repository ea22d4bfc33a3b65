//! One rewritten object being built: the batches it replaces (as read) and those it stores,
//! uploaded and swapped in by the coordinator in one command that succeeds only if the
//! replaced batches are still where they were read.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use shoal_coordinator::commands::RewriteBatches;
use shoal_coordinator::{BatchCoordinate, NewObject, TopicPartition, REWRITTEN_OBJECT_PREFIX};
use shoal_wal::{ObjectBuilder, WriteLane};

use crate::produce::upload_with_retries;
use crate::{Shard, ShardError};

pub struct Output {
    partition: TopicPartition,
    /// Reserved whole (untouched pages cost no memory), so building never copies it.
    capacity: usize,
    object: ObjectBuilder,
    replaced: Vec<BatchCoordinate>,
    stored: Vec<BatchCoordinate>,
    /// The last swapped object's buffer, taken back once nothing else held it: the next
    /// object is built in it. A fresh 32 MiB buffer faulted in page by page, and was unmapped
    /// again when dropped, cost about a fifth of a merge's CPU (issue 63's profile).
    spare: Option<BytesMut>,
}

/// What a swap came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Swap {
    Done,
    /// The partition changed since it was read; the object is garbage now.
    Lost,
}

impl Output {
    pub fn new(partition: TopicPartition, capacity: usize) -> Output {
        Output {
            partition,
            capacity,
            object: ObjectBuilder::with_capacity(capacity),
            replaced: Vec::new(),
            stored: Vec::new(),
            spare: None,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.replaced.is_empty()
    }

    /// Bytes the object holds so far.
    pub fn len(&self) -> usize {
        self.object.len()
    }

    /// `read` is replaced by `kept` (its bytes as rewritten), or dropped when None.
    pub fn push(&mut self, read: BatchCoordinate, kept: Option<&[u8]>) -> Result<(), ShardError> {
        if let Some(bytes) = kept {
            let placement = self.object.append(bytes)?;
            self.stored.push(BatchCoordinate {
                byte_offset: placement.byte_offset,
                size_bytes: placement.size_bytes,
                ..read.clone()
            });
        }
        self.replaced.push(read);
        Ok(())
    }

    /// Uploads the object (if any batch is kept) and asks the coordinator to swap it in;
    /// `cleaned_offset` completes a compaction pass. Leaves the output empty.
    pub async fn swap(
        &mut self,
        shard: &Shard,
        cleaned_offset: Option<i64>,
    ) -> Result<Swap, ShardError> {
        if self.replaced.is_empty() {
            return Ok(Swap::Done);
        }
        let next = match self.spare.take() {
            Some(buf) => ObjectBuilder::reusing(buf),
            None => ObjectBuilder::with_capacity(self.capacity),
        };
        let data: Bytes = std::mem::replace(&mut self.object, next).finish();
        let object = match data.is_empty() {
            true => None,
            false => {
                let key = format!("{REWRITTEN_OBJECT_PREFIX}{}", uuid::Uuid::new_v4());
                let produce = &shard.config.produce;
                upload_with_retries(
                    WriteLane::Background,
                    shard.store.clone(),
                    key.clone(),
                    data.clone().into(),
                    produce.upload_attempts,
                    Duration::from_millis(produce.upload_backoff_ms),
                )
                .await?;
                shard
                    .metrics
                    .counters
                    .rewrite_bytes_written
                    .add(data.len() as u64);
                shard.metrics.counters.rewrite_objects_written.add(1);
                let size = data.len() as u64;
                Some(NewObject::uploaded(key, size, shard.config.node_id))
            }
        };
        let command = RewriteBatches {
            partition: self.partition,
            object,
            replaced: std::mem::take(&mut self.replaced),
            batches: std::mem::take(&mut self.stored),
            cleaned_offset,
        };
        let swapped = shard.coordinator.run(command).await?;
        // Only ours once the store let go of it (a cache holding the object keeps it).
        self.spare = data.try_into_mut().ok();
        match swapped {
            Ok(true) => Ok(Swap::Done),
            Ok(false) => {
                shard.metrics.counters.rewrite_swaps_lost.add(1);
                Ok(Swap::Lost)
            }
            Err(e) => Err(ShardError::Rewrite(format!("the swap was refused: {e:?}"))),
        }
    }
}
