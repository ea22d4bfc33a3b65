//! The coordinator's in-memory state and its only mutation path, `apply(&Record)`. Operations
//! validate against the state, describe their outcome as a record, then apply it, so a replay
//! of the log reaches exactly the same state.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use uuid::Uuid;

use crate::messages::*;
use crate::records::{CommittedBatch, Record};
use crate::view::{TopicMeta, TopicsView};
use crate::ErrorKind;

/// Kafka's limit on topic names.
const TOPIC_NAME_MAX_CHARS: usize = 249;
/// A bound on partitions per topic, so one request cannot allocate without limit.
pub const PARTITIONS_PER_TOPIC_MAX: i32 = 10_000;

#[derive(Debug, Clone, PartialEq, Eq)]
struct BatchEntry {
    file_id: u64,
    byte_offset: u32,
    size_bytes: u32,
    base_offset: i64,
    last_offset: i64,
    max_timestamp: i64,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct PartitionState {
    log_start_offset: i64,
    high_watermark: i64,
    /// Ordered by offset; consecutive entries never overlap.
    batches: VecDeque<BatchEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct TopicState {
    name: String,
    partitions: Vec<PartitionState>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct FileState {
    object_key: Arc<str>,
    live_batches: u64,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CoordinatorState {
    topics: HashMap<Uuid, TopicState>,
    topic_ids: HashMap<String, Uuid>,
    files: HashMap<u64, FileState>,
    next_file_id: u64,
    /// Objects no live batch references any more; garbage collection deletes them.
    deletable_files: Vec<Arc<str>>,
}

impl CoordinatorState {
    pub fn apply(&mut self, record: &Record) {
        match record {
            Record::TopicCreated {
                id,
                name,
                partitions,
            } => {
                self.topic_ids.insert(name.clone(), *id);
                self.topics.insert(
                    *id,
                    TopicState {
                        name: name.clone(),
                        partitions: vec![PartitionState::default(); *partitions as usize],
                    },
                );
            }
            Record::TopicDeleted { id } => {
                if let Some(topic) = self.topics.remove(id) {
                    self.topic_ids.remove(&topic.name);
                    for batch in topic.partitions.iter().flat_map(|p| p.batches.iter()) {
                        self.release_batch(batch.file_id);
                    }
                }
            }
            Record::FileCommitted {
                file_id,
                object_key,
                batches,
            } => {
                self.next_file_id = self.next_file_id.max(file_id + 1);
                let object_key: Arc<str> = Arc::from(object_key.as_str());
                let mut live = 0;
                for b in batches {
                    let Some(p) = self.partition_mut(b.topic_id, b.partition) else {
                        continue;
                    };
                    p.high_watermark = p.high_watermark.max(b.last_offset + 1);
                    p.batches.push_back(BatchEntry {
                        file_id: *file_id,
                        byte_offset: b.byte_offset,
                        size_bytes: b.size_bytes,
                        base_offset: b.base_offset,
                        last_offset: b.last_offset,
                        max_timestamp: b.max_timestamp,
                    });
                    live += 1;
                }
                if live == 0 {
                    self.deletable_files.push(object_key);
                } else {
                    self.files.insert(
                        *file_id,
                        FileState {
                            object_key,
                            live_batches: live,
                        },
                    );
                }
            }
        }
    }

    fn release_batch(&mut self, file_id: u64) {
        if let Some(file) = self.files.get_mut(&file_id) {
            file.live_batches -= 1;
            if file.live_batches == 0 {
                let file = self.files.remove(&file_id).expect("present");
                self.deletable_files.push(file.object_key);
            }
        }
    }

    fn partition(&self, tp: TopicPartition) -> Option<&PartitionState> {
        let index = usize::try_from(tp.partition).ok()?;
        self.topics.get(&tp.topic_id)?.partitions.get(index)
    }

    fn partition_mut(&mut self, topic_id: Uuid, partition: i32) -> Option<&mut PartitionState> {
        let index = usize::try_from(partition).ok()?;
        self.topics.get_mut(&topic_id)?.partitions.get_mut(index)
    }

    /// Validates a topic creation and returns the record that performs it.
    pub fn create_topic(&self, name: &str, partitions: i32, id: Uuid) -> Result<Record, ErrorKind> {
        if !is_valid_topic_name(name) {
            return Err(ErrorKind::InvalidTopic);
        }
        if partitions <= 0 || partitions > PARTITIONS_PER_TOPIC_MAX {
            return Err(ErrorKind::InvalidPartitions);
        }
        if self.topic_ids.contains_key(name) {
            return Err(ErrorKind::TopicAlreadyExists);
        }
        Ok(Record::TopicCreated {
            id,
            name: name.to_string(),
            partitions,
        })
    }

    pub fn delete_topic(&self, name: &str) -> Result<Record, ErrorKind> {
        let id = self
            .topic_ids
            .get(name)
            .ok_or(ErrorKind::UnknownTopicOrPartition)?;
        Ok(Record::TopicDeleted { id: *id })
    }

    /// CommitFile: assigns offsets to the accepted batches, in object order. Returns the
    /// per-batch answers and the record to append (always one, so the object is accounted
    /// for even when every batch was rejected).
    pub fn commit_file(
        &self,
        object_key: &str,
        batches: &[CommitBatch],
        now_ms: i64,
    ) -> (Vec<CommitBatchResult>, Record) {
        let mut next_offsets: HashMap<TopicPartition, i64> = HashMap::new();
        let mut results = Vec::with_capacity(batches.len());
        let mut committed = Vec::with_capacity(batches.len());
        for b in batches {
            let Some(p) = self.partition(b.partition) else {
                results.push(rejected(ErrorKind::UnknownTopicOrPartition));
                continue;
            };
            if b.is_transactional {
                results.push(rejected(ErrorKind::InvalidRequest));
                continue;
            }
            let next = next_offsets.entry(b.partition).or_insert(p.high_watermark);
            let base_offset = *next;
            *next += b.offset_count as i64;
            committed.push(CommittedBatch {
                topic_id: b.partition.topic_id,
                partition: b.partition.partition,
                byte_offset: b.byte_offset,
                size_bytes: b.size_bytes,
                base_offset,
                last_offset: base_offset + b.offset_count as i64 - 1,
                max_timestamp: b.max_timestamp,
                log_append_time_ms: now_ms,
            });
            results.push(CommitBatchResult {
                error: None,
                base_offset,
                log_append_time_ms: now_ms,
                log_start_offset: p.log_start_offset,
            });
        }
        let record = Record::FileCommitted {
            file_id: self.next_file_id,
            object_key: object_key.to_string(),
            batches: committed,
        };
        (results, record)
    }

    pub fn list_offsets(&self, tp: TopicPartition, timestamp: i64) -> ListOffsetsResult {
        let Some(p) = self.partition(tp) else {
            return ListOffsetsResult {
                error: Some(ErrorKind::UnknownTopicOrPartition),
                offset: -1,
                timestamp: -1,
            };
        };
        let found = |offset, timestamp| ListOffsetsResult {
            error: None,
            offset,
            timestamp,
        };
        match timestamp {
            LATEST_TIMESTAMP => found(p.high_watermark, -1),
            EARLIEST_TIMESTAMP | EARLIEST_LOCAL_TIMESTAMP => found(p.log_start_offset, -1),
            LATEST_TIERED_TIMESTAMP => found(-1, -1),
            MAX_TIMESTAMP => match p.batches.iter().max_by_key(|b| b.max_timestamp) {
                Some(b) => found(b.base_offset.max(p.log_start_offset), b.max_timestamp),
                None => found(-1, -1),
            },
            ts if ts >= 0 => match p.batches.iter().find(|b| b.max_timestamp >= ts) {
                Some(b) => found(b.base_offset.max(p.log_start_offset), b.max_timestamp),
                None => found(-1, -1),
            },
            _ => ListOffsetsResult {
                error: Some(ErrorKind::InvalidRequest),
                offset: -1,
                timestamp: -1,
            },
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
                        batches: Vec::new(),
                    };
                };
                let mut result = FindBatchesResult {
                    error: None,
                    log_start_offset: p.log_start_offset,
                    high_watermark: p.high_watermark,
                    batches: Vec::new(),
                };
                if req.offset < p.log_start_offset || req.offset > p.high_watermark {
                    result.error = Some(ErrorKind::OffsetOutOfRange);
                    return result;
                }
                let first = p.batches.partition_point(|b| b.last_offset < req.offset);
                let mut partition_spent: u64 = 0;
                for b in p.batches.iter().skip(first) {
                    let size = b.size_bytes as u64;
                    let fits = spent + size <= max_bytes as u64
                        && partition_spent + size <= req.max_partition_bytes as u64;
                    if !fits && any_batch {
                        break;
                    }
                    let Some(file) = self.files.get(&b.file_id) else {
                        break;
                    };
                    result.batches.push(BatchCoordinate {
                        object_key: file.object_key.clone(),
                        byte_offset: b.byte_offset,
                        size_bytes: b.size_bytes,
                        base_offset: b.base_offset,
                        last_offset: b.last_offset,
                    });
                    spent += size;
                    partition_spent += size;
                    any_batch = true;
                    if !fits {
                        break;
                    }
                }
                result
            })
            .collect()
    }

    pub fn topics_view(&self) -> TopicsView {
        TopicsView::new(self.topics.iter().map(|(id, t)| TopicMeta {
            name: t.name.clone(),
            id: *id,
            partitions: t.partitions.len() as i32,
        }))
    }

    pub fn topic_meta(&self, name: &str) -> Option<TopicMeta> {
        let id = self.topic_ids.get(name)?;
        let topic = self.topics.get(id)?;
        Some(TopicMeta {
            name: name.to_string(),
            id: *id,
            partitions: topic.partitions.len() as i32,
        })
    }

    /// Hands over the keys of objects that no live batch references.
    pub fn take_deletable_files(&mut self) -> Vec<Arc<str>> {
        std::mem::take(&mut self.deletable_files)
    }

    pub fn high_watermark(&self, tp: TopicPartition) -> Option<i64> {
        self.partition(tp).map(|p| p.high_watermark)
    }
}

fn rejected(error: ErrorKind) -> CommitBatchResult {
    CommitBatchResult {
        error: Some(error),
        base_offset: -1,
        log_append_time_ms: -1,
        log_start_offset: -1,
    }
}

/// Kafka's rule: 1..=249 characters of ASCII letters, digits, '.', '_' and '-', not "." or "..".
pub fn is_valid_topic_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= TOPIC_NAME_MAX_CHARS
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}
