//! Read-only queries: ListOffsets, FindBatches, DescribeFiles, DescribeProducers and the
//! topic catalogue.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::CoordinatorState;
use crate::messages::StoredBatch;
use crate::messages::*;
use crate::records::TopicConfig;
use crate::view::TopicMeta;
use crate::ErrorKind;

impl CoordinatorState {
    /// `read_committed`: the latest offset is the last stable one.
    pub fn list_offsets(
        &self,
        tp: TopicPartition,
        timestamp: i64,
        read_committed: bool,
    ) -> ListOffsetsResult {
        let Some(p) = self.partition(tp) else {
            return ListOffsetsResult::failed(ErrorKind::UnknownTopicOrPartition);
        };
        let found = |offset, timestamp| ListOffsetsResult {
            error: None,
            offset,
            timestamp,
        };
        match timestamp {
            LATEST_TIMESTAMP if read_committed => {
                found(p.transactions.last_stable_offset(p.high_watermark), -1)
            }
            LATEST_TIMESTAMP => found(p.high_watermark, -1),
            EARLIEST_TIMESTAMP | EARLIEST_LOCAL_TIMESTAMP => found(p.log_start_offset, -1),
            // Diskless topics have no tiered storage: nothing is tiered or waits to be, and
            // Kafka answers both for a topic without remote storage with offset -1.
            LATEST_TIERED_TIMESTAMP | EARLIEST_PENDING_UPLOAD_TIMESTAMP => found(-1, -1),
            // Batch granularity: the engine narrows these down to the record.
            MAX_TIMESTAMP => match p.batches.iter().max_by_key(|b| b.max_timestamp) {
                Some(b) => found(b.base_offset.max(p.log_start_offset), b.max_timestamp),
                None => found(-1, -1),
            },
            ts if ts >= 0 => match p.batches.iter().find(|b| b.max_timestamp >= ts) {
                Some(b) => found(b.base_offset.max(p.log_start_offset), b.max_timestamp),
                None => found(-1, -1),
            },
            _ => ListOffsetsResult::failed(ErrorKind::InvalidRequest),
        }
    }

    /// FindBatches: `max_bytes` is one budget for the request, spent in request order; only
    /// the very first batch of the request may overshoot it or its partition's cap.
    pub fn find_batches(
        &self,
        requests: &[FindBatchesRequest],
        max_bytes: u32,
    ) -> Vec<FindBatchesResult> {
        let mut spent: u64 = 0;
        let mut any_batch = false;
        requests
            .iter()
            .map(|req| {
                let Some(p) = self.partition(req.partition) else {
                    return FindBatchesResult {
                        error: Some(ErrorKind::UnknownTopicOrPartition),
                        log_start_offset: -1,
                        high_watermark: -1,
                        last_stable_offset: -1,
                        batches: Vec::new(),
                        aborted: Vec::new(),
                    };
                };
                let last_stable_offset = p.transactions.last_stable_offset(p.high_watermark);
                let mut result = FindBatchesResult {
                    error: None,
                    log_start_offset: p.log_start_offset,
                    high_watermark: p.high_watermark,
                    last_stable_offset,
                    batches: Vec::new(),
                    aborted: Vec::new(),
                };
                let visible_end = if req.read_committed {
                    last_stable_offset
                } else {
                    p.high_watermark
                };
                if req.offset < p.log_start_offset || req.offset > p.high_watermark {
                    result.error = Some(ErrorKind::OffsetOutOfRange);
                    return result;
                }
                let first = p.batches.partition_point(|b| b.last_offset < req.offset);
                let mut partition_spent: u64 = 0;
                let most = req.max_batches as usize;
                for b in p.batches.iter().skip(first).take(most) {
                    if b.base_offset >= visible_end {
                        break;
                    }
                    let size = b.size_bytes as u64;
                    let fits = spent + size <= max_bytes as u64
                        && partition_spent + size <= req.max_partition_bytes as u64;
                    if !fits && any_batch {
                        break;
                    }
                    let Some(file) = self.files.get(&b.file_id) else {
                        break;
                    };
                    result.batches.push(b.coordinate(file.object_key.clone()));
                    spent += size;
                    partition_spent += size;
                    any_batch = true;
                    if !fits {
                        break;
                    }
                }
                if let (true, Some(last)) = (req.read_committed, result.batches.last()) {
                    result.aborted = p
                        .transactions
                        .aborted_within(req.offset, last.last_offset + 1);
                }
                result
            })
            .collect()
    }

    /// DescribeLogDirs: the bytes a partition's live batches hold (None: no such partition).
    pub fn partition_size(&self, tp: TopicPartition) -> Option<u64> {
        self.partition(tp).map(|p| p.size_bytes)
    }

    /// DescribeProducers: the idempotent producers a partition remembers, by id.
    pub fn describe_producers(
        &self,
        tp: TopicPartition,
    ) -> Result<Vec<ProducerSummary>, ErrorKind> {
        let p = self
            .partition(tp)
            .ok_or(ErrorKind::UnknownTopicOrPartition)?;
        let mut producers: Vec<ProducerSummary> = p
            .producers
            .iter()
            .map(|(id, s)| ProducerSummary {
                producer_id: *id,
                producer_epoch: s.epoch,
                last_sequence: s.recent.back().map_or(-1, |b| b.last_sequence),
                last_timestamp_ms: s.last_write_ms,
                current_txn_start_offset: p.transactions.open.get(id).copied().unwrap_or(-1),
            })
            .collect();
        producers.sort_by_key(|s| s.producer_id);
        Ok(producers)
    }

    /// DescribeFiles: whether each object still holds a live batch.
    pub fn has_live_batches(&self, object_key: &str) -> bool {
        self.file_ids.contains_key(object_key)
    }

    /// Every topic as the view shows it.
    pub(super) fn topic_metas(&self) -> impl ExactSizeIterator<Item = TopicMeta> + '_ {
        self.topics.iter().map(|(id, t)| TopicMeta {
            name: t.name.clone(),
            id: *id,
            partitions: t.partitions.len() as i32,
            config: t.config,
            overrides: t.overrides.clone(),
            mirror: t.mirror_meta(),
        })
    }

    pub fn topic_meta(&self, name: &str) -> Option<TopicMeta> {
        let id = self.topic_ids.get(name)?;
        let topic = self.topics.get(id)?;
        Some(TopicMeta {
            name: name.to_string(),
            id: *id,
            partitions: topic.partitions.len() as i32,
            config: topic.config,
            overrides: topic.overrides.clone(),
            mirror: topic.mirror_meta(),
        })
    }

    pub fn topic_config(&self, name: &str) -> Option<TopicConfig> {
        let id = self.topic_ids.get(name)?;
        self.topics.get(id).map(|t| t.config)
    }

    pub fn high_watermark(&self, tp: TopicPartition) -> Option<i64> {
        self.partition(tp).map(|p| p.high_watermark)
    }

    pub fn log_start_offset(&self, tp: TopicPartition) -> Option<i64> {
        self.partition(tp).map(|p| p.log_start_offset)
    }

    /// Batches held across all partitions (for metrics and benchmarks).
    pub fn batch_count(&self) -> usize {
        self.topics
            .values()
            .flat_map(|t| t.partitions.iter())
            .map(|p| p.batches.len())
            .sum()
    }

    /// Every live batch, grouped by the object that holds it: what `shoal check` verifies.
    pub fn stored_batches(&self) -> BTreeMap<Arc<str>, Vec<StoredBatch>> {
        let mut by_object: BTreeMap<Arc<str>, Vec<StoredBatch>> = BTreeMap::new();
        for topic in self.topics.values() {
            for (partition, state) in topic.partitions.iter().enumerate() {
                for batch in &state.batches {
                    let Some(file) = self.files.get(&batch.file_id) else {
                        continue;
                    };
                    by_object
                        .entry(file.object_key.clone())
                        .or_default()
                        .push(StoredBatch {
                            topic: topic.name.clone(),
                            partition: partition as i32,
                            base_offset: batch.base_offset,
                            byte_offset: batch.byte_offset,
                            size_bytes: batch.size_bytes,
                        });
                }
            }
        }
        for batches in by_object.values_mut() {
            batches.sort_by_key(|b| b.byte_offset);
        }
        by_object
    }
}
