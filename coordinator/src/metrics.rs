//! Counters the coordinator keeps about itself, readable from any thread.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct CoordinatorMetrics {
    /// Rounds that appended records: one fdatasync each.
    pub log_syncs: AtomicU64,
    /// Write requests (commits, topic changes, ...) made durable by those syncs.
    pub write_requests: AtomicU64,
    pub read_requests: AtomicU64,
    /// Batches placed by a commit: CommitFile's, and mirrored ones at their source offsets.
    pub batches_committed: AtomicU64,
    pub snapshots: AtomicU64,
    /// Catch-ups that applied rows other brokers appended to a shared log; fetches waiting
    /// on this broker look again when it moves.
    pub rows_from_others: AtomicU64,
    /// Fresh reads' catch-ups with a shared log (one query each).
    pub read_barriers: AtomicU64,
    /// Rounds lost to another broker's row on a shared log: the state was reloaded.
    pub lost_rounds: AtomicU64,
}

impl CoordinatorMetrics {
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}
