//! The executors' settings an operator may change while the broker runs (dynamic broker
//! configs): read where each decision is made, replaced when the coordinator's catalogue
//! changes them. Relaxed atomics: a decision made with the value of a moment ago is fine.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// The values they start from: the config file's.
#[derive(Debug, Clone, Copy)]
pub struct LiveValues {
    pub commit_interval_ms: u64,
    pub buffer_max_bytes: usize,
    pub fetch_max_bytes: usize,
    pub fetch_max_wait_ms: u64,
}

#[derive(Debug)]
pub struct LiveSettings {
    commit_interval_ms: AtomicU64,
    buffer_max_bytes: AtomicUsize,
    fetch_max_bytes: AtomicUsize,
    fetch_max_wait_ms: AtomicU64,
}

impl LiveSettings {
    pub fn new(start: LiveValues) -> LiveSettings {
        LiveSettings {
            commit_interval_ms: AtomicU64::new(start.commit_interval_ms),
            buffer_max_bytes: AtomicUsize::new(start.buffer_max_bytes),
            fetch_max_bytes: AtomicUsize::new(start.fetch_max_bytes),
            fetch_max_wait_ms: AtomicU64::new(start.fetch_max_wait_ms),
        }
    }

    /// `[produce] commit_interval_ms`: how long the WAL buffer gathers writes.
    pub fn commit_interval(&self) -> Duration {
        Duration::from_millis(self.commit_interval_ms.load(Ordering::Relaxed))
    }

    /// `[produce] buffer_max_bytes`: the WAL buffer rotates at this size.
    pub fn buffer_max_bytes(&self) -> usize {
        self.buffer_max_bytes.load(Ordering::Relaxed)
    }

    /// `[fetch] max_bytes`: the most one Fetch answer holds.
    pub fn fetch_max_bytes(&self) -> usize {
        self.fetch_max_bytes.load(Ordering::Relaxed)
    }

    /// `[fetch] max_wait_ms`: the longest a Fetch waits.
    pub fn fetch_max_wait_ms(&self) -> u64 {
        self.fetch_max_wait_ms.load(Ordering::Relaxed)
    }

    /// A fetch's wait: what its client asked for (negative: none), no longer than
    /// `[fetch] max_wait_ms`.
    pub fn fetch_wait(&self, requested_ms: i32) -> Duration {
        Duration::from_millis((requested_ms.max(0) as u64).min(self.fetch_max_wait_ms()))
    }

    /// A fetch's bytes: what its client asked for (negative: none), no more than
    /// `[fetch] max_bytes`.
    pub fn fetch_bytes(&self, requested: i32) -> usize {
        (requested.max(0) as usize).min(self.fetch_max_bytes())
    }

    pub fn set_commit_interval_ms(&self, ms: u64) {
        self.commit_interval_ms.store(ms, Ordering::Relaxed);
    }

    pub fn set_buffer_max_bytes(&self, bytes: usize) {
        self.buffer_max_bytes.store(bytes, Ordering::Relaxed);
    }

    pub fn set_fetch_max_bytes(&self, bytes: usize) {
        self.fetch_max_bytes.store(bytes, Ordering::Relaxed);
    }

    pub fn set_fetch_max_wait_ms(&self, ms: u64) {
        self.fetch_max_wait_ms.store(ms, Ordering::Relaxed);
    }
}
