//! The open WAL buffer: produce payloads waiting for the next rotation, and turning a rotated
//! buffer into one object plus the commit request that describes it.

use std::time::Instant;

use bytes::Bytes;
use futures::channel::oneshot;
use shoal_coordinator::{CommitBatch, TopicPartition};
use shoal_wal::object::OBJECT_MAX_BYTES;
use shoal_wal::{BatchHeader, ObjectBody, SegmentPlacement};

use super::commit_batch::commit_batch;
use crate::PartitionProduceResult;

/// One partition's payload of one produce request, already validated.
pub struct PendingWrite {
    pub partition: TopicPartition,
    pub records: Bytes,
    pub headers: Vec<BatchHeader>,
    /// Its transactional batches join their producers' transactions (`ProduceRules`).
    pub joins_transaction: bool,
    pub reply: oneshot::Sender<PartitionProduceResult>,
}

#[derive(Default)]
pub struct WalBuffer {
    pub writes: Vec<PendingWrite>,
    pub size_bytes: usize,
    pub opened_at: Option<Instant>,
    /// Counts rotations, so a timer armed for an older buffer can tell it is stale.
    pub generation: u64,
}

impl WalBuffer {
    pub fn push(&mut self, write: PendingWrite) {
        if self.writes.is_empty() {
            self.opened_at = Some(Instant::now());
        }
        self.size_bytes += write.records.len();
        self.writes.push(write);
    }

    /// Takes the buffered writes, leaving an empty buffer of the next generation.
    pub fn rotate(&mut self) -> Vec<PendingWrite> {
        self.generation += 1;
        self.size_bytes = 0;
        self.opened_at = None;
        std::mem::take(&mut self.writes)
    }
}

/// A rotated buffer laid out as an object: writes grouped by partition (stable, so each
/// partition keeps arrival order), and one commit batch per record batch.
pub struct RotatedObject {
    /// The writes' batches in the requests' own buffers, not gathered (see `ObjectBody`).
    pub data: ObjectBody,
    pub batches: Vec<CommitBatch>,
    /// For each write, in `writes` order, the range of `batches` it produced.
    pub writes: Vec<(PendingWrite, std::ops::Range<usize>)>,
}

/// Fails, handing the writes back, only if they exceed the object size limit.
pub fn lay_out(mut writes: Vec<PendingWrite>) -> Result<RotatedObject, Vec<PendingWrite>> {
    writes.sort_by_key(|w| w.partition);
    let total: usize = writes.iter().map(|w| w.records.len()).sum();
    if total > OBJECT_MAX_BYTES {
        return Err(writes);
    }
    let mut data = ObjectBody::default();
    let mut batches = Vec::new();
    let mut laid_out = Vec::with_capacity(writes.len());
    for write in writes {
        let first = batches.len();
        let mut pos = 0;
        for header in &write.headers {
            let batch = &write.records[pos..pos + header.size_bytes];
            let placement = SegmentPlacement {
                byte_offset: (data.len() + pos) as u32,
                size_bytes: header.size_bytes as u32,
            };
            pos += header.size_bytes;
            batches.push(CommitBatch {
                joins_transaction: write.joins_transaction,
                ..commit_batch(write.partition, placement, header, batch)
            });
        }
        data.push(write.records.slice(..pos));
        let range = first..batches.len();
        laid_out.push((write, range));
    }
    Ok(RotatedObject {
        data,
        batches,
        writes: laid_out,
    })
}
