//! A record batch of a WAL object as the coordinator is asked to commit it: where it lies in
//! the object, the header fields the coordinator decides with, and what it is to transactions.

use shoal_coordinator::{BatchKind, CommitBatch, TopicPartition};
use shoal_wal::control::marker_outcome;
use shoal_wal::{BatchHeader, SegmentPlacement};

/// What the coordinator is told of one batch laid out in a WAL object: produced batches are
/// described this way, and mirrored ones too, with their source offsets kept.
/// `batch` (whose header is `header`) of `partition`, placed in the object at `placement`.
pub(crate) fn commit_batch(
    partition: TopicPartition,
    placement: SegmentPlacement,
    header: &BatchHeader,
    batch: &[u8],
) -> CommitBatch {
    CommitBatch {
        partition,
        byte_offset: placement.byte_offset,
        size_bytes: placement.size_bytes,
        offset_count: header.offset_count() as u32,
        max_timestamp: header.max_timestamp,
        producer_id: header.producer_id,
        producer_epoch: header.producer_epoch,
        base_sequence: header.base_sequence,
        kind: batch_kind(header, batch),
        kept_base_offset: None,
        joins_transaction: false,
    }
}

/// What a stored batch is to transactions: from its header, and for a marker its record.
fn batch_kind(header: &BatchHeader, batch: &[u8]) -> BatchKind {
    match (header.is_control(), header.is_transactional()) {
        (true, _) => match marker_outcome(batch) {
            Some(true) => BatchKind::CommitMarker,
            Some(false) => BatchKind::AbortMarker,
            // Other control records mean nothing to transactions; consumers skip them.
            None => BatchKind::Plain,
        },
        (false, true) => BatchKind::Transactional,
        (false, false) => BatchKind::Plain,
    }
}
