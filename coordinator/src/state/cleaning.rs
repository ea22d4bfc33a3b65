//! What retention and garbage collection ask of the state: which log start offsets to move,
//! and which objects have been unreferenced long enough to delete.

use super::CoordinatorState;
use shoal_protocol::records::{
    DisklessRecordsDeletedRecord, ShoalFilesDeletedRecord, ShoalProducersExpiredRecord,
};

use crate::entry::Entry;

impl CoordinatorState {
    /// Entries that enforce retention.ms and retention.bytes at `now_ms`, dropping at most
    /// `max_batches` batches in this step so one sweep never stalls the coordinator.
    pub fn retention_records(&self, now_ms: i64, max_batches: usize) -> Vec<Entry> {
        let mut records = Vec::new();
        let mut budget = max_batches;
        let mut topic_ids: Vec<_> = self.topics.keys().copied().collect();
        topic_ids.sort();
        for topic_id in topic_ids {
            let topic = &self.topics[&topic_id];
            let config = topic.config;
            // cleanup.policy=compact alone: old batches go only by compaction.
            if !config.cleanup.deletes() {
                continue;
            }
            for (index, p) in topic.partitions.iter().enumerate() {
                if budget == 0 {
                    return records;
                }
                let mut remaining_bytes = p.size_bytes;
                let mut new_start = p.log_start_offset;
                for b in p.batches.iter() {
                    let expired = config.retention_ms >= 0
                        && b.max_timestamp < now_ms.saturating_sub(config.retention_ms);
                    let oversized = config.retention_bytes >= 0
                        && remaining_bytes > config.retention_bytes as u64;
                    if budget == 0 || !(expired || oversized) {
                        break;
                    }
                    new_start = b.last_offset + 1;
                    remaining_bytes -= b.size_bytes as u64;
                    budget -= 1;
                }
                if new_start > p.log_start_offset {
                    let deleted = DisklessRecordsDeletedRecord {
                        topic_id,
                        partition_index: index as i32,
                        new_log_start_offset: new_start,
                    };
                    records.push(Entry::of(now_ms, deleted));
                }
            }
        }
        records
    }

    /// Entries that forget producers idle since before `idle_before_ms` (Kafka's
    /// producer.id.expiration.ms), at most `max_producers` in this step.
    pub fn producer_expiry_records(
        &self,
        idle_before_ms: i64,
        max_producers: usize,
        now_ms: i64,
    ) -> Vec<Entry> {
        let mut records = Vec::new();
        let mut budget = max_producers;
        let mut topic_ids: Vec<_> = self.topics.keys().copied().collect();
        topic_ids.sort();
        for topic_id in topic_ids {
            for (index, p) in self.topics[&topic_id].partitions.iter().enumerate() {
                if budget == 0 {
                    return records;
                }
                let mut producer_ids: Vec<i64> = p
                    .producers
                    .iter()
                    .filter(|(_, s)| s.last_write_ms < idle_before_ms)
                    .map(|(id, _)| *id)
                    .take(budget)
                    .collect();
                if producer_ids.is_empty() {
                    continue;
                }
                producer_ids.sort_unstable();
                budget -= producer_ids.len();
                let expired = ShoalProducersExpiredRecord {
                    topic_id,
                    partition_index: index as i32,
                    producer_ids,
                };
                records.push(Entry::of(now_ms, expired));
            }
        }
        records
    }

    /// Up to `max` objects unreferenced since before `older_than_ms`.
    pub fn expired_deletable_files(&self, older_than_ms: i64, max: usize) -> Vec<String> {
        self.deletable_files
            .iter()
            .filter(|(_, since)| **since < older_than_ms)
            .take(max)
            .map(|(key, _)| key.to_string())
            .collect()
    }

    pub fn deletable_file_count(&self) -> usize {
        self.deletable_files.len()
    }
}

impl CoordinatorState {
    pub(super) fn apply_producers_expired(&mut self, r: &ShoalProducersExpiredRecord) {
        if let Some(p) = self.partition_mut(r.topic_id, r.partition_index) {
            for id in &r.producer_ids {
                p.producers.remove(id);
            }
        }
    }

    pub(super) fn apply_files_deleted(&mut self, r: &ShoalFilesDeletedRecord) {
        for key in &r.object_keys {
            self.deletable_files.remove(key.as_str());
        }
    }
}
