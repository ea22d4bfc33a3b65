//! The per-shard produce pipeline: buffer → WAL object → upload → commit (in rotation order)
//! → answer the producers.

mod buffer;
mod pipeline;
mod validate;

pub(crate) use pipeline::upload_with_retries;
pub use pipeline::ProducePipeline;

use shoal_coordinator::BatchKind;
use shoal_wal::control::marker_outcome;
use shoal_wal::BatchHeader;

/// What a stored batch is to transactions: from its header, and for a marker its record.
pub(crate) fn batch_kind(header: &BatchHeader, batch: &[u8]) -> BatchKind {
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
