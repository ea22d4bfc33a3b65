//! Rewriting stored batches, for merging and compaction: which partitions have work (plans),
//! whether a rewrite may replace the batches it read (the swap, decided only if they are
//! still exactly where the rewriter read them), and applying a swap. A rewrite never changes
//! an offset: every batch it stores keeps the base and last offset it was first given.

use std::collections::VecDeque;
use std::sync::Arc;

use shoal_protocol::records::ShoalBatchesRewrittenRecord;

use super::batch_entry::rewritten_record;
use super::{BatchEntry, CoordinatorState, PartitionState};
use crate::entry::Entry;
use crate::messages::{
    is_rewritten_object, owner_shard, BatchCoordinate, CompactionStatus, NewObject, RewriteKind,
    RewritePlan, TopicPartition,
};
use crate::records::TopicConfig;
use crate::ErrorKind;

/// When a partition not compacted is worth merging.
#[derive(Debug, Clone, Copy)]
pub struct MergePolicy {
    /// Bytes of batches in WAL objects that make a merge worth it.
    pub min_bytes: u64,
    /// A batch in a WAL object longer than this is merged whatever the bytes.
    pub max_age_ms: i64,
    /// A partition is merged only while its shares of WAL objects (its consecutive batches
    /// in one object) average fewer bytes than this: larger shares are read about as cheaply
    /// as a merged object.
    pub below_bytes: u64,
}

impl CoordinatorState {
    /// Partitions owned by `shard_index` of `shard_count` with rewriting to do at `now_ms`,
    /// at most `max`.
    pub fn rewrite_plans(
        &self,
        (shard_index, shard_count): (usize, usize),
        merge: MergePolicy,
        now_ms: i64,
        max: usize,
    ) -> Vec<RewritePlan> {
        let mut plans = Vec::new();
        let mut topic_ids: Vec<_> = self.topics.keys().copied().collect();
        topic_ids.sort();
        for topic_id in topic_ids {
            let topic = &self.topics[&topic_id];
            for (index, p) in topic.partitions.iter().enumerate() {
                if plans.len() >= max {
                    return plans;
                }
                let tp = TopicPartition {
                    topic_id,
                    partition: index as i32,
                };
                if owner_shard(&tp, shard_count) != shard_index {
                    continue;
                }
                let plan = if topic.config.cleanup.compacts() {
                    // A mirror's partition is the source's copy until it is promoted.
                    if p.mirror.is_read_only() {
                        continue;
                    }
                    self.compaction_plan(tp, p, &topic.config, now_ms)
                } else {
                    self.merge_plan(tp, p, merge, now_ms)
                };
                plans.extend(plan);
            }
        }
        plans
    }

    fn is_merged(&self, b: &BatchEntry) -> bool {
        self.files
            .get(&b.file_id)
            .is_some_and(|f| is_rewritten_object(&f.object_key))
    }

    fn merge_plan(
        &self,
        tp: TopicPartition,
        p: &PartitionState,
        merge: MergePolicy,
        now_ms: i64,
    ) -> Option<RewritePlan> {
        let end = p.transactions.last_stable_offset(p.high_watermark);
        // From the first small share on, every unmerged batch: a merge copies them all, so
        // large shares among small ones do not split its output into small merged objects.
        let (mut from, mut bytes, mut count, mut oldest) = (None, 0u64, 0u64, i64::MAX);
        for share in shares(p, end) {
            let first = &p.batches[share.start];
            if self.is_merged(first) {
                continue;
            }
            let (share_bytes, share_oldest) =
                p.batches
                    .range(share)
                    .fold((0u64, i64::MAX), |(bytes, oldest), b| {
                        (
                            bytes + b.size_bytes as u64,
                            oldest.min(b.log_append_time_ms),
                        )
                    });
            if from.is_none() && share_bytes >= merge.below_bytes {
                continue;
            }
            from.get_or_insert(first.base_offset);
            bytes += share_bytes;
            count += 1;
            oldest = oldest.min(share_oldest);
        }
        if count == 0 || bytes / count >= merge.below_bytes {
            return None;
        }
        let due = bytes >= merge.min_bytes
            || (bytes > 0 && oldest < now_ms.saturating_sub(merge.max_age_ms));
        due.then(|| RewritePlan {
            partition: tp,
            kind: RewriteKind::Merge,
            from_offset: from.expect("bytes to merge have a first batch"),
            cleaned_offset: p.cleaned_offset,
            end_offset: end,
            delete_retention_ms: 0,
            aborted: Vec::new(),
        })
    }

    fn compaction_plan(
        &self,
        tp: TopicPartition,
        p: &PartitionState,
        config: &TopicConfig,
        now_ms: i64,
    ) -> Option<RewritePlan> {
        let first = p.batches.front()?;
        let dirty = dirty_range(p, config, now_ms);
        let c = &config.compaction;
        let ratio_reached = dirty.dirty_bytes as u128 * 1_000_000
            >= dirty.cleanable_bytes as u128 * c.min_cleanable_dirty_ratio_ppm.max(0) as u128;
        let overdue = dirty.oldest_dirty_ms < now_ms.saturating_sub(c.max_compaction_lag_ms);
        (dirty.dirty_bytes > 0 && (ratio_reached || overdue)).then(|| RewritePlan {
            partition: tp,
            kind: RewriteKind::Compact,
            from_offset: first.base_offset,
            cleaned_offset: dirty.cleaned_offset,
            end_offset: dirty.end_offset,
            delete_retention_ms: c.delete_retention_ms,
            aborted: p
                .transactions
                .aborted_within(first.base_offset, dirty.end_offset),
        })
    }

    /// Where compaction stands in every partition of every compacted topic (for metrics).
    pub fn compaction_status(&self, now_ms: i64) -> Vec<CompactionStatus> {
        let mut status = Vec::new();
        for topic in self.topics.values() {
            if !topic.config.cleanup.compacts() {
                continue;
            }
            for (index, p) in topic.partitions.iter().enumerate() {
                let dirty = dirty_range(p, &topic.config, now_ms);
                status.push(CompactionStatus {
                    topic: topic.name.clone(),
                    partition: index as i32,
                    dirty_bytes: dirty.dirty_bytes,
                    cleanable_bytes: dirty.cleanable_bytes,
                    oldest_dirty_ms: (dirty.dirty_bytes > 0).then_some(dirty.oldest_dirty_ms),
                    cleaned_offset: dirty.cleaned_offset,
                });
            }
        }
        status.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
        status
    }

    /// The swap: the entry replacing `replaced` (as read) with `batches` stored in `object`,
    /// or, when the partition's batches in that range are no longer exactly those, the entry
    /// that only leaves the object for garbage collection (and `false`).
    pub fn rewrite_batches(
        &self,
        tp: TopicPartition,
        object: Option<&NewObject>,
        replaced: &[BatchCoordinate],
        batches: &[BatchCoordinate],
        cleaned_offset: Option<i64>,
        now_ms: i64,
    ) -> Result<(bool, Option<Entry>), ErrorKind> {
        let p = self
            .partition(tp)
            .ok_or(ErrorKind::UnknownTopicOrPartition)?;
        if let Some(object) = object {
            // A retried swap: the object is already live (or garbage); never decide it twice.
            if self.is_known_object(&object.key) {
                return Ok((false, None));
            }
        }
        let (Some(first), Some(last)) = (replaced.first(), replaced.last()) else {
            return Err(ErrorKind::InvalidRequest);
        };
        let (from, to) = (first.base_offset, last.last_offset.saturating_add(1));
        if !keeps_offsets(replaced, batches) {
            return Err(ErrorKind::InvalidRequest);
        }
        let key = object.map_or(String::new(), |o| o.key.clone());
        let file_size = object.map_or(0, |o| o.size_bytes as i64);
        let mut record = ShoalBatchesRewrittenRecord {
            topic_id: tp.topic_id,
            partition_index: tp.partition,
            object_key: key,
            file_size,
            from_offset: from,
            to_offset: to,
            cleaned_offset: cleaned_offset.unwrap_or(-1),
            batches: batches.iter().map(rewritten_record).collect(),
        };
        if !self.still_stored(p, replaced, from, to) {
            if record.object_key.is_empty() {
                return Ok((false, None));
            }
            record.from_offset = from;
            record.to_offset = from;
            record.cleaned_offset = -1;
            record.batches.clear();
            return Ok((false, Some(Entry::of(now_ms, record))));
        }
        Ok((true, Some(Entry::of(now_ms, record))))
    }

    /// Whether the partition's batches overlapping `from..to` are exactly `replaced`.
    fn still_stored(
        &self,
        p: &PartitionState,
        replaced: &[BatchCoordinate],
        from: i64,
        to: i64,
    ) -> bool {
        let start = p.batches.partition_point(|b| b.last_offset < from);
        let current = p.batches.range(start..).take_while(|b| b.base_offset < to);
        let mut expected = replaced.iter();
        for b in current {
            let Some(read) = expected.next() else {
                return false;
            };
            let same_place = self
                .files
                .get(&b.file_id)
                .is_some_and(|f| f.object_key == read.object_key)
                && b.byte_offset == read.byte_offset
                && b.size_bytes == read.size_bytes;
            if !same_place || b.base_offset != read.base_offset || b.last_offset != read.last_offset
            {
                return false;
            }
        }
        expected.next().is_none()
    }

    pub(super) fn apply_batches_rewritten(&mut self, r: &ShoalBatchesRewrittenRecord, at_ms: i64) {
        let object_key: Arc<str> = Arc::from(r.object_key.as_str());
        let file_id = self.next_file_id;
        let Some(p) = self.partition_mut(r.topic_id, r.partition_index) else {
            if !object_key.is_empty() {
                self.deletable_files.insert(object_key, at_ms);
            }
            return;
        };
        if r.cleaned_offset >= 0 {
            p.cleaned_offset = p.cleaned_offset.max(r.cleaned_offset);
        }
        let start = p.batches.partition_point(|b| b.last_offset < r.from_offset);
        let mut tail = p.batches.split_off(start);
        let replaced = tail
            .iter()
            .take_while(|b| b.base_offset < r.to_offset)
            .count();
        let released: Vec<BatchEntry> = tail.drain(..replaced).collect();
        let stored: VecDeque<BatchEntry> = r
            .batches
            .iter()
            .map(|b| BatchEntry::rewritten(file_id, b))
            .collect();
        let released_bytes: u64 = released.iter().map(|b| b.size_bytes as u64).sum();
        let stored_bytes: u64 = stored.iter().map(|b| b.size_bytes as u64).sum();
        p.size_bytes = p
            .size_bytes
            .saturating_sub(released_bytes)
            .saturating_add(stored_bytes);
        let live = stored.len() as u64;
        p.batches.extend(stored);
        p.batches.append(&mut tail);
        if live > 0 {
            self.next_file_id = self.next_file_id.saturating_add(1);
        }
        self.hold_object(object_key, file_id, live, at_ms);
        for b in released {
            self.release_batch(b.file_id, at_ms);
        }
    }

    /// The records a snapshot keeps of rewriting: each partition's cleaned offset.
    pub(super) fn cleaned_offset_record(
        topic_id: uuid::Uuid,
        index: i32,
        p: &PartitionState,
    ) -> Option<ShoalBatchesRewrittenRecord> {
        (p.cleaned_offset > 0).then(|| ShoalBatchesRewrittenRecord {
            topic_id,
            partition_index: index,
            object_key: String::new(),
            file_size: 0,
            from_offset: 0,
            to_offset: 0,
            cleaned_offset: p.cleaned_offset,
            batches: Vec::new(),
        })
    }
}

/// A partition's cleanable range: from its first batch to `end_offset`, dirty from
/// `cleaned_offset`.
struct DirtyRange {
    cleaned_offset: i64,
    end_offset: i64,
    cleanable_bytes: u64,
    dirty_bytes: u64,
    /// When the oldest dirty batch was appended (i64::MAX when none is dirty).
    oldest_dirty_ms: i64,
}

/// The partition's batches that begin before `end`, as its shares of objects: index ranges
/// of consecutive batches in one object.
fn shares(p: &PartitionState, end: i64) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        let file_id = p
            .batches
            .get(start)
            .filter(|b| b.base_offset < end)?
            .file_id;
        let len = p
            .batches
            .range(start..)
            .take_while(|b| b.file_id == file_id && b.base_offset < end)
            .count();
        let share = start..start + len;
        start += len;
        Some(share)
    })
}

fn dirty_range(p: &PartitionState, config: &TopicConfig, now_ms: i64) -> DirtyRange {
    let end_offset = cleanable_end(p, config, now_ms);
    let cleaned_offset = p.cleaned_offset.max(p.log_start_offset);
    let mut range = DirtyRange {
        cleaned_offset,
        end_offset,
        cleanable_bytes: 0,
        dirty_bytes: 0,
        oldest_dirty_ms: i64::MAX,
    };
    for b in p.batches.iter().take_while(|b| b.base_offset < end_offset) {
        range.cleanable_bytes += b.size_bytes as u64;
        if b.base_offset >= cleaned_offset {
            range.dirty_bytes += b.size_bytes as u64;
            range.oldest_dirty_ms = range.oldest_dirty_ms.min(b.log_append_time_ms);
        }
    }
    range
}

/// Where compaction must stop: the last stable offset, the first batch younger than
/// min.compaction.lag.ms, and the newest batches Kafka would still hold in its active
/// segment (within segment.bytes and segment.ms, or max.compaction.lag.ms if shorter).
fn cleanable_end(p: &PartitionState, config: &TopicConfig, now_ms: i64) -> i64 {
    let c = &config.compaction;
    let mut end = p.transactions.last_stable_offset(p.high_watermark);
    let young_after = now_ms.saturating_sub(c.min_compaction_lag_ms);
    if let Some(young) = p
        .batches
        .iter()
        .find(|b| b.log_append_time_ms > young_after)
    {
        end = end.min(young.base_offset);
    }
    let segment_after = now_ms.saturating_sub(c.segment_ms.min(c.max_compaction_lag_ms));
    let mut active_bytes = 0u64;
    for b in p.batches.iter().rev() {
        active_bytes += b.size_bytes as u64;
        if active_bytes > c.segment_bytes.max(0) as u64 || b.log_append_time_ms < segment_after {
            break;
        }
        end = end.min(b.base_offset);
    }
    end
}

/// A rewrite keeps offsets: its batches are some of the replaced ones, by offsets, in order.
fn keeps_offsets(replaced: &[BatchCoordinate], batches: &[BatchCoordinate]) -> bool {
    let mut read = replaced.iter();
    batches
        .iter()
        .all(|b| read.any(|r| r.base_offset == b.base_offset && r.last_offset == b.last_offset))
        && replaced
            .windows(2)
            .all(|w| w[0].last_offset < w[1].base_offset)
}
