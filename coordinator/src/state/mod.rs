//! The coordinator's in-memory state and its only mutation path, `apply(&Record)`. Operations
//! (in `writes.rs`) validate against the state and describe their outcome as records, which
//! are then applied, so a replay of the log reaches exactly the same state. Reads are in
//! `reads.rs`, retention and garbage-collection queries in `cleaning.rs`.

mod acls;
mod cleaning;
mod groups;
mod mirrors;
mod partition_transactions;
pub mod producers;
mod reads;
mod scram;
mod snapshot;
mod transaction_endings;
pub mod transactions;
mod writes;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use shoal_auth::ScramCredential;
use uuid::Uuid;

use crate::acl::AclBinding;
use crate::messages::{NewObject, TopicPartition};
use crate::records::{BatchKind, CommittedBatch, Record, TopicConfig, Transaction};
use groups::GroupOffsets;
use partition_transactions::PartitionTransactions;
use producers::{ProducerBatch, ProducerState};

pub use groups::{GROUP_ID_MAX_BYTES, OFFSET_METADATA_MAX_BYTES};
pub use mirrors::TopicMirror;
pub use reads::StoredBatch;
pub use scram::{ScramAlteration, UserScramCredentials};
pub use writes::is_valid_topic_name;

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
    log_append_time_ms: i64,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct PartitionState {
    log_start_offset: i64,
    high_watermark: i64,
    /// Ordered by offset; consecutive entries never overlap.
    batches: VecDeque<BatchEntry>,
    /// Bytes of the live batches, for retention.bytes.
    size_bytes: u64,
    producers: HashMap<i64, ProducerState>,
    transactions: PartitionTransactions,
    mirror: shoal_mirror::PartitionMirror,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct TopicState {
    name: String,
    config: TopicConfig,
    partitions: Vec<PartitionState>,
    mirror: Option<TopicMirror>,
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
    /// Objects with live batches.
    files: HashMap<u64, FileState>,
    file_ids: HashMap<Arc<str>, u64>,
    next_file_id: u64,
    /// Objects no live batch references any more, with the time they became so; garbage
    /// collection deletes them from the store after a grace period.
    deletable_files: BTreeMap<Arc<str>, i64>,
    next_producer_id: i64,
    /// Committed offsets by consumer group.
    groups: HashMap<String, GroupOffsets>,
    /// Mirrors (KIP-1279) and their settings.
    mirrors: BTreeMap<String, Vec<(String, String)>>,
    /// SCRAM credentials by user and mechanism code.
    scram_credentials: BTreeMap<(String, i8), ScramCredential>,
    /// ACL bindings (CreateAcls), published to the shards with the topic catalogue.
    acls: BTreeSet<AclBinding>,
    /// Transactional ids and their transactions.
    transactions: BTreeMap<String, Transaction>,
    /// Producer id → its transactional id (derived from `transactions`).
    transactional_producers: HashMap<i64, String>,
}

impl TopicState {
    /// Mirrored by `mirror` now (not removed from it).
    fn is_in_mirror(&self, mirror: &str) -> bool {
        self.mirror
            .as_ref()
            .is_some_and(|m| !m.removed && m.name == mirror)
    }

    fn mirror_meta(&self) -> Option<crate::view::MirrorMeta> {
        self.mirror.as_ref().map(|m| crate::view::MirrorMeta {
            name: m.name.clone(),
            removed: m.removed,
            partitions: self.partitions.iter().map(|p| p.mirror.clone()).collect(),
        })
    }
}

impl CoordinatorState {
    pub fn apply(&mut self, record: &Record) {
        match record {
            Record::TopicCreated {
                id,
                name,
                partitions,
                config,
            } => {
                self.topic_ids.insert(name.clone(), *id);
                self.topics.insert(
                    *id,
                    TopicState {
                        name: name.clone(),
                        config: *config,
                        partitions: vec![PartitionState::default(); *partitions as usize],
                        mirror: None,
                    },
                );
            }
            Record::TopicDeleted { id, at_ms } => {
                self.forget_topic_offsets(*id);
                if let Some(topic) = self.topics.remove(id) {
                    self.topic_ids.remove(&topic.name);
                    for batch in topic.partitions.iter().flat_map(|p| p.batches.iter()) {
                        self.release_batch(batch.file_id, *at_ms);
                    }
                }
            }
            Record::FileCommitted {
                object_key,
                at_ms,
                batches,
                ..
            } => self.apply_file_committed(object_key, *at_ms, batches),
            Record::RecordsDeleted {
                topic_id,
                partition,
                new_log_start_offset,
                at_ms,
            } => {
                let Some(p) = self.partition_mut(*topic_id, *partition) else {
                    return;
                };
                p.log_start_offset = p.log_start_offset.max(*new_log_start_offset);
                p.transactions.forget_before(p.log_start_offset);
                let mut released = Vec::new();
                while let Some(front) = p.batches.front() {
                    if front.last_offset >= p.log_start_offset {
                        break;
                    }
                    let front = p.batches.pop_front().expect("front exists");
                    p.size_bytes = p.size_bytes.saturating_sub(front.size_bytes as u64);
                    released.push(front.file_id);
                }
                for file_id in released {
                    self.release_batch(file_id, *at_ms);
                }
            }
            Record::ProducerIdAllocated { producer_id } => {
                self.next_producer_id = self.next_producer_id.max(producer_id.saturating_add(1));
            }
            Record::PartitionsAdded {
                topic_id,
                total_partitions,
                ..
            } => {
                if let Some(topic) = self.topics.get_mut(topic_id) {
                    let total = (*total_partitions).max(0) as usize;
                    if total > topic.partitions.len() {
                        topic.partitions.resize_with(total, PartitionState::default);
                    }
                }
            }
            Record::ProducersExpired {
                topic_id,
                partition,
                producer_ids,
            } => {
                if let Some(p) = self.partition_mut(*topic_id, *partition) {
                    for id in producer_ids {
                        p.producers.remove(id);
                    }
                }
            }
            Record::FilesDeleted { object_keys } => {
                for key in object_keys {
                    self.deletable_files.remove(key.as_str());
                }
            }
            Record::TopicConfigChanged { topic_id, config } => {
                if let Some(topic) = self.topics.get_mut(topic_id) {
                    topic.config = *config;
                }
            }
            Record::OffsetsCommitted {
                group,
                at_ms,
                offsets,
            } => self.apply_offsets_committed(group, *at_ms, offsets),
            Record::GroupOffsetsDeleted { group, partitions } => {
                self.apply_group_offsets_deleted(group, partitions)
            }
            Record::GroupDeleted { group } => {
                self.groups.remove(group);
            }
            Record::MirrorCreated { name, config } => {
                self.mirrors.insert(name.clone(), config.clone());
            }
            Record::TopicMirrorChanged {
                topic_id,
                mirror,
                removed,
            } => {
                if let Some(topic) = self.topics.get_mut(topic_id) {
                    topic.mirror = Some(TopicMirror {
                        name: mirror.clone(),
                        removed: *removed,
                    });
                }
            }
            Record::MirrorPartitionsChanged {
                topic_id,
                partitions,
            } => {
                for (partition, m) in partitions {
                    if let Some(p) = self.partition_mut(*topic_id, *partition) {
                        // Mirrored producer ids belong to the source cluster's id space: once
                        // the partition is writable here they would collide with local ones.
                        if m.state == shoal_mirror::MirrorState::Stopped && p.mirror.is_read_only()
                        {
                            p.producers.clear();
                            // The source's open transactions can never end here: aborted.
                            p.transactions.abort_all_open(p.high_watermark);
                        }
                        p.mirror = m.clone();
                    }
                }
            }
            Record::PartitionTruncated {
                topic_id,
                partition,
                offset,
                at_ms,
            } => self.apply_truncation(*topic_id, *partition, *offset, *at_ms),
            Record::ScramCredentialSet {
                user,
                mechanism,
                credential,
            } => {
                self.scram_credentials
                    .insert((user.clone(), *mechanism), credential.clone());
            }
            Record::AclCreated(binding) => {
                self.acls.insert(binding.clone());
            }
            Record::AclDeleted(binding) => {
                self.acls.remove(binding);
            }
            Record::ScramCredentialDeleted { user, mechanism } => {
                self.scram_credentials.remove(&(user.clone(), *mechanism));
            }
            Record::TransactionChanged(t) => self.apply_transaction(t),
            Record::TransactionsExpired { transactional_ids } => {
                for id in transactional_ids {
                    self.forget_transaction(id);
                }
            }
        }
    }

    /// The object gets the next file id: ids follow commit order, so a replay assigns the
    /// same ones.
    fn apply_file_committed(
        &mut self,
        object_key: &str,
        at_ms: i64,
        batches: &[crate::records::CommittedBatch],
    ) {
        let file_id = self.next_file_id;
        self.next_file_id = self.next_file_id.saturating_add(1);
        let object_key: Arc<str> = Arc::from(object_key);
        let mut live = 0;
        for b in batches {
            let Some(p) = self.partition_mut(b.topic_id, b.partition) else {
                continue;
            };
            p.high_watermark = p.high_watermark.max(b.last_offset.saturating_add(1));
            p.size_bytes = p.size_bytes.saturating_add(b.size_bytes as u64);
            p.batches.push_back(BatchEntry {
                file_id,
                byte_offset: b.byte_offset,
                size_bytes: b.size_bytes,
                base_offset: b.base_offset,
                last_offset: b.last_offset,
                max_timestamp: b.max_timestamp,
                log_append_time_ms: at_ms,
            });
            p.transactions
                .on_batch(b.kind, b.producer_id, b.base_offset, b.last_offset);
            let is_marker = matches!(b.kind, BatchKind::CommitMarker | BatchKind::AbortMarker);
            if is_marker && b.producer_id >= 0 {
                // A marker carries no sequence; at a newer epoch it fences older batches.
                let producer = p.producers.entry(b.producer_id).or_default();
                producer.advance_epoch(b.producer_epoch);
                producer.last_write_ms = at_ms;
            } else if b.producer_id >= 0 && b.producer_epoch >= 0 {
                let producer = p.producers.entry(b.producer_id).or_default();
                producer.record(
                    b.producer_epoch,
                    ProducerBatch {
                        base_sequence: b.base_sequence,
                        last_sequence: b.last_sequence,
                        base_offset: b.base_offset,
                    },
                );
                producer.last_write_ms = at_ms;
            }
            live += 1;
        }
        if live == 0 {
            self.deletable_files.insert(object_key, at_ms);
        } else {
            self.file_ids.insert(object_key.clone(), file_id);
            self.files.insert(
                file_id,
                FileState {
                    object_key,
                    live_batches: live,
                },
            );
        }
    }

    fn release_batch(&mut self, file_id: u64, at_ms: i64) {
        if let Some(file) = self.files.get_mut(&file_id) {
            file.live_batches = file.live_batches.saturating_sub(1);
            if file.live_batches == 0 {
                let file = self.files.remove(&file_id).expect("present");
                self.file_ids.remove(&file.object_key);
                self.deletable_files.insert(file.object_key, at_ms);
            }
        }
    }

    /// An object key already committed (live or deletable): a repeated commit of it (a retry
    /// over the wire) must not append its batches twice.
    /// The record of a new object and the batches of it accepted, under the next file id.
    fn file_committed(
        &self,
        object: &NewObject,
        at_ms: i64,
        batches: Vec<CommittedBatch>,
    ) -> Record {
        Record::FileCommitted {
            object_key: object.key.clone(),
            file_size: object.size_bytes,
            uploader_broker_id: object.uploader_broker_id,
            owner_ids: object.owner_ids.clone(),
            at_ms,
            batches,
        }
    }

    /// The timestamp type batches of the topic are appended with (0 CreateTime, 1 LogAppendTime).
    fn timestamp_type(&self, topic_id: Uuid) -> i8 {
        self.topics
            .get(&topic_id)
            .map_or(0, |t| t.config.log_append_time as i8)
    }

    fn is_known_object(&self, object_key: &str) -> bool {
        self.file_ids.contains_key(object_key) || self.deletable_files.contains_key(object_key)
    }

    fn partition(&self, tp: TopicPartition) -> Option<&PartitionState> {
        let index = usize::try_from(tp.partition).ok()?;
        self.topics.get(&tp.topic_id)?.partitions.get(index)
    }

    fn partition_mut(&mut self, topic_id: Uuid, partition: i32) -> Option<&mut PartitionState> {
        let index = usize::try_from(partition).ok()?;
        self.topics.get_mut(&topic_id)?.partitions.get_mut(index)
    }
}
