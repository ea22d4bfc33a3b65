//! A partition's batch as the state keeps it (in a file the state numbers), and every
//! conversion between it and the forms it travels in: the snapshot's record, a rewrite's
//! record, and the coordinate a reader is given. The fields map in one place.

use std::sync::Arc;

use shoal_protocol::records::{ShoalRewrittenBatch, ShoalStoredBatch};

use crate::messages::BatchCoordinate;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct BatchEntry {
    pub(super) file_id: u64,
    pub(super) byte_offset: u32,
    pub(super) size_bytes: u32,
    pub(super) base_offset: i64,
    pub(super) last_offset: i64,
    pub(super) max_timestamp: i64,
    pub(super) log_append_time_ms: i64,
}

impl BatchEntry {
    /// A batch a rewrite placed in `file_id`. Positions were checked non-negative when the
    /// record was read, and rewrites write u32s.
    pub(super) fn rewritten(file_id: u64, b: &ShoalRewrittenBatch) -> BatchEntry {
        BatchEntry {
            file_id,
            byte_offset: b.byte_offset as u32,
            size_bytes: b.byte_size as u32,
            base_offset: b.base_offset,
            last_offset: b.last_offset,
            max_timestamp: b.batch_max_timestamp,
            log_append_time_ms: b.log_append_timestamp,
        }
    }

    /// A batch from a snapshot, whose numbers are checked here: a snapshot is read from disk.
    pub(super) fn from_snapshot(b: &ShoalStoredBatch) -> Result<BatchEntry, String> {
        Ok(BatchEntry {
            file_id: u64::try_from(b.file_id).map_err(|_| "negative file id")?,
            byte_offset: u32::try_from(b.byte_offset).map_err(|_| "byte offset")?,
            size_bytes: u32::try_from(b.byte_size).map_err(|_| "byte size")?,
            base_offset: b.base_offset,
            last_offset: b.last_offset,
            max_timestamp: b.batch_max_timestamp,
            log_append_time_ms: b.log_append_timestamp,
        })
    }

    pub(super) fn snapshot_record(&self) -> ShoalStoredBatch {
        ShoalStoredBatch {
            file_id: self.file_id as i64,
            byte_offset: self.byte_offset as i32,
            byte_size: self.size_bytes as i32,
            base_offset: self.base_offset,
            last_offset: self.last_offset,
            batch_max_timestamp: self.max_timestamp,
            log_append_timestamp: self.log_append_time_ms,
        }
    }

    /// Where a reader finds the batch, in the object its file is.
    pub(super) fn coordinate(&self, object_key: Arc<str>) -> BatchCoordinate {
        BatchCoordinate {
            object_key,
            byte_offset: self.byte_offset,
            size_bytes: self.size_bytes,
            base_offset: self.base_offset,
            last_offset: self.last_offset,
            max_timestamp: self.max_timestamp,
            log_append_time_ms: self.log_append_time_ms,
        }
    }
}

/// A rewrite's record of a batch it placed (the file is the rewrite's own).
pub(super) fn rewritten_record(b: &BatchCoordinate) -> ShoalRewrittenBatch {
    ShoalRewrittenBatch {
        byte_offset: b.byte_offset as i32,
        byte_size: b.size_bytes as i32,
        base_offset: b.base_offset,
        last_offset: b.last_offset,
        batch_max_timestamp: b.max_timestamp,
        log_append_timestamp: b.log_append_time_ms,
    }
}
