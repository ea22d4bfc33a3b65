//! The fetch path on the shard that owns a partition: batch coordinates from the coordinator,
//! bytes from the cache of recent objects or from the store, base offsets patched in.

mod ahead;
mod cache;
mod plan;
mod read_ahead;
mod reader;

pub use ahead::{find_batches, goes_on, read_ahead_of};
pub use cache::ObjectCache;
pub use read_ahead::ReadAhead;
pub use reader::{read_partition, read_partitions};

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Instant;

use futures::future::{select, Either};
use shoal_coordinator::TopicPartition;
use shoal_wal::ObjectBody;

use crate::signal::LocalSignal;

/// What the owning shard knows locally about its partitions: recent objects, the latest
/// high watermarks it has seen, and a signal that fires on every commit.
pub struct LocalData {
    pub cache: RefCell<ObjectCache>,
    pub read_ahead: Rc<ReadAhead>,
    watermarks: RefCell<HashMap<TopicPartition, i64>>,
    committed: LocalSignal,
}

impl LocalData {
    pub fn new(cache_max_bytes: usize, read_ahead_max_bytes: usize) -> LocalData {
        LocalData {
            cache: RefCell::new(ObjectCache::new(cache_max_bytes)),
            read_ahead: Rc::new(ReadAhead::new(read_ahead_max_bytes)),
            watermarks: RefCell::new(HashMap::new()),
            committed: LocalSignal::default(),
        }
    }

    /// An object was committed: keep it for tailing readers and wake them. `ends` holds the
    /// end offset (last offset + 1) of each batch of it that was accepted.
    pub fn on_committed(
        &self,
        key: &str,
        data: &ObjectBody,
        ends: impl IntoIterator<Item = (TopicPartition, i64)>,
    ) {
        self.cache.borrow_mut().insert(key, data.clone());
        for (partition, end) in ends {
            self.observe_watermark(partition, end);
        }
        self.committed.notify_all();
    }

    pub fn observe_watermark(&self, partition: TopicPartition, high_watermark: i64) {
        let mut watermarks = self.watermarks.borrow_mut();
        let known = watermarks.entry(partition).or_insert(high_watermark);
        *known = (*known).max(high_watermark);
    }

    pub fn forget_watermark(&self, partition: &TopicPartition) {
        self.watermarks.borrow_mut().remove(partition);
    }

    fn has_data_past(&self, partitions: &[(TopicPartition, i64)]) -> bool {
        let watermarks = self.watermarks.borrow();
        partitions
            .iter()
            .any(|(tp, offset)| watermarks.get(tp).is_some_and(|hwm| hwm > offset))
    }

    /// Resolves when a commit moves any listed partition past its offset, or at `deadline`.
    pub async fn wait_for_data(&self, partitions: &[(TopicPartition, i64)], deadline: Instant) {
        loop {
            if self.has_data_past(partitions) {
                return;
            }
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            let commit = std::pin::pin!(self.committed.wait());
            let timeout = std::pin::pin!(glommio::timer::sleep(deadline - now));
            if let Either::Right(_) = select(commit, timeout).await {
                return;
            }
        }
    }
}
