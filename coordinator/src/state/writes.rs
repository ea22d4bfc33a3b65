//! Operations that change state. Each validates and returns the entry (the records, at the
//! time given) describing its outcome; nothing here mutates: the caller logs the entry and
//! applies it.

use std::collections::{BTreeMap, HashMap};

use uuid::Uuid;

use super::producers::{last_sequence, ProducerBatch, ProducerState, SequenceCheck};
use super::{CoordinatorState, PartitionState, PARTITIONS_PER_TOPIC_MAX};
use crate::messages::*;
use shoal_protocol::records::*;

use super::emit;
use crate::entry::Entry;
use crate::records::{CommittedBatch, TopicConfig, Transaction};
use crate::topic_configs::{overrides_differing_from_default, TopicOverrides};
use crate::ErrorKind;

/// Kafka's limit on topic names.
const TOPIC_NAME_MAX_CHARS: usize = 249;

impl CoordinatorState {
    /// A new topic that sets what in `config` differs from Kafka's defaults.
    pub fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        id: Uuid,
        config: TopicConfig,
        now_ms: i64,
    ) -> Result<Entry, ErrorKind> {
        let own = overrides_differing_from_default(&config);
        self.create_topic_setting(name, partitions, id, &own, now_ms)
    }

    /// A new topic that sets `own` itself; its other configs follow the cluster-wide
    /// defaults.
    pub fn create_topic_setting(
        &self,
        name: &str,
        partitions: i32,
        id: Uuid,
        own: &TopicOverrides,
        now_ms: i64,
    ) -> Result<Entry, ErrorKind> {
        if !is_valid_topic_name(name) {
            return Err(ErrorKind::InvalidTopic);
        }
        if partitions <= 0 || partitions > PARTITIONS_PER_TOPIC_MAX {
            return Err(ErrorKind::InvalidPartitions);
        }
        if self.topic_ids.contains_key(name) {
            return Err(ErrorKind::TopicAlreadyExists);
        }
        Ok(Entry::new(
            now_ms,
            emit::topic_created(id, name, partitions, own),
        ))
    }

    /// DisklessCreatePartitions: creates the topic with the given id, or grows it to
    /// `total_partitions`. Idempotent: partitions that exist already are not an error.
    pub fn create_partitions(
        &self,
        topic_id: Uuid,
        name: &str,
        total_partitions: i32,
        now_ms: i64,
    ) -> Result<Option<Entry>, ErrorKind> {
        if total_partitions <= 0 || total_partitions > PARTITIONS_PER_TOPIC_MAX {
            return Err(ErrorKind::InvalidPartitions);
        }
        match self.topics.get(&topic_id) {
            Some(topic) if topic.name != name => Err(ErrorKind::InvalidRequest),
            Some(topic) if total_partitions as usize > topic.partitions.len() => {
                let first_new = topic.partitions.len() as i32;
                let records =
                    emit::partitions_created(topic_id, &topic.name, first_new, total_partitions);
                Ok(Some(Entry::new(now_ms, records)))
            }
            Some(_) => Ok(None),
            None => self
                .create_topic(
                    name,
                    total_partitions,
                    topic_id,
                    TopicConfig::default(),
                    now_ms,
                )
                .map(Some),
        }
    }

    /// AlterConfigs: the topic sets `own` itself, and follows the cluster-wide defaults for
    /// the rest (None when nothing changes).
    pub fn alter_topic_config(
        &self,
        name: &str,
        own: &TopicOverrides,
        now_ms: i64,
    ) -> Result<Option<Entry>, ErrorKind> {
        let id = self
            .topic_ids
            .get(name)
            .ok_or(ErrorKind::UnknownTopicOrPartition)?;
        Ok(self.topic_settings_changed(*id, own, now_ms))
    }

    /// The entry that has topic `id` set `own` itself, if that is not what it sets now.
    pub(crate) fn topic_settings_changed(
        &self,
        id: Uuid,
        own: &TopicOverrides,
        now_ms: i64,
    ) -> Option<Entry> {
        let topic = self.topics.get(&id)?;
        let unchanged = topic.overrides == *own;
        (!unchanged).then(|| Entry::of(now_ms, emit::topic_settings(id, own)))
    }

    /// The topic's id and the entry that deletes it.
    pub fn delete_topic(&self, name: &str, now_ms: i64) -> Result<(Uuid, Entry), ErrorKind> {
        let id = *self
            .topic_ids
            .get(name)
            .ok_or(ErrorKind::UnknownTopicOrPartition)?;
        Ok((
            id,
            Entry::of(now_ms, DisklessTopicDeletedRecord { topic_id: id }),
        ))
    }

    /// The frame CommitFile and CommitMirrored share: an object key the coordinator already
    /// knows is refused whole (a repeated commit, a retry over the wire, must not append its
    /// batches twice: None); each batch of a known partition is placed by `place`, in object
    /// order, and the placed ones are committed. The per-batch answers and the batches placed.
    pub(super) fn commit_object(
        &self,
        object: &NewObject,
        batches: &[CommitBatch],
        now_ms: i64,
        mut place: impl FnMut(&CommitBatch, &PartitionState) -> Placement,
    ) -> Option<(Vec<CommitBatchResult>, Vec<CommittedBatch>)> {
        if self.is_known_object(&object.key) {
            return None;
        }
        let mut results = Vec::with_capacity(batches.len());
        let mut committed = Vec::with_capacity(batches.len());
        for b in batches {
            let Some(p) = self.partition(b.partition) else {
                results.push(CommitBatchResult::rejected(
                    ErrorKind::UnknownTopicOrPartition,
                ));
                continue;
            };
            match place(b, p) {
                Placement::Answered(result) => results.push(result),
                Placement::At {
                    base_offset,
                    last_offset,
                    last_sequence,
                } => {
                    committed.push(CommittedBatch {
                        batch: *b,
                        base_offset,
                        last_offset,
                        last_sequence,
                        timestamp_type: self.timestamp_type(b.partition.topic_id),
                    });
                    results.push(CommitBatchResult::appended(
                        base_offset,
                        now_ms,
                        p.log_start_offset,
                    ));
                }
            }
        }
        Some((results, committed))
    }

    /// CommitFile: checks each batch (partition known, not transactional, producer
    /// sequence) and assigns offsets to the accepted ones, in object order. Returns the
    /// per-batch answers and the record to append, so the object is accounted for even when
    /// no batch was accepted.
    pub fn commit_file(
        &self,
        object: &NewObject,
        batches: &[CommitBatch],
        now_ms: i64,
    ) -> (Vec<CommitBatchResult>, Option<Entry>) {
        let mut next_offsets: HashMap<TopicPartition, i64> = HashMap::new();
        // Producer state as this commit's earlier batches leave it.
        let mut producers: HashMap<(TopicPartition, i64), ProducerState> = HashMap::new();
        // Transactions this commit's batches joined (transactions V2), by transactional id.
        let mut joined: BTreeMap<String, Transaction> = BTreeMap::new();
        let place = |b: &CommitBatch, p: &PartitionState| {
            if p.mirror.is_read_only() {
                return Placement::refused(ErrorKind::ReadOnlyTopic);
            }
            if b.kept_base_offset.is_some() {
                // Only CommitMirrored keeps offsets; a produced batch is given them.
                return Placement::refused(ErrorKind::InvalidRequest);
            }
            if let Err(error) = self.check_transaction_kind(b, &producers, p, &mut joined, now_ms) {
                return Placement::refused(error);
            }
            let is_marker = matches!(b.kind, BatchKind::CommitMarker | BatchKind::AbortMarker);
            let idempotent = b.producer_id >= 0 && b.producer_epoch >= 0 && !is_marker;
            let last_seq = if idempotent {
                last_sequence(b.base_sequence, b.offset_count)
            } else {
                -1
            };
            let key = (b.partition, b.producer_id);
            if idempotent {
                let current = producers
                    .get(&key)
                    .or_else(|| p.producers.get(&b.producer_id));
                match ProducerState::check(current, b.producer_epoch, b.base_sequence, last_seq) {
                    SequenceCheck::Accept => {}
                    SequenceCheck::Duplicate { base_offset } => {
                        return Placement::Answered(CommitBatchResult {
                            error: None,
                            base_offset,
                            log_append_time_ms: -1,
                            log_start_offset: p.log_start_offset,
                            is_duplicate: true,
                        });
                    }
                    SequenceCheck::Reject(error) => return Placement::refused(error),
                }
            }
            let next = next_offsets.entry(b.partition).or_insert(p.high_watermark);
            let base_offset = *next;
            *next += b.offset_count as i64;
            if idempotent {
                let mut state = producers
                    .remove(&key)
                    .or_else(|| p.producers.get(&b.producer_id).cloned())
                    .unwrap_or_default();
                state.record(
                    b.producer_epoch,
                    ProducerBatch {
                        base_sequence: b.base_sequence,
                        last_sequence: last_seq,
                        base_offset,
                    },
                );
                producers.insert(key, state);
            }
            Placement::At {
                base_offset,
                last_offset: base_offset + b.offset_count as i64 - 1,
                last_sequence: last_seq,
            }
        };
        let Some((results, committed)) = self.commit_object(object, batches, now_ms, place) else {
            return (refused_whole(batches), None);
        };
        let mut records: Vec<AnyRecord> = joined.values().map(emit::transaction_changed).collect();
        records.extend(emit::file_committed(object, &committed, now_ms));
        (results, Some(Entry::new(now_ms, records)))
    }

    /// A transactional batch must belong to its producer's open transaction in this
    /// partition, or join it; a marker (written by this broker) must not be older than the
    /// producer.
    fn check_transaction_kind(
        &self,
        b: &CommitBatch,
        producers: &HashMap<(TopicPartition, i64), ProducerState>,
        p: &super::PartitionState,
        joined: &mut BTreeMap<String, Transaction>,
        now_ms: i64,
    ) -> Result<(), ErrorKind> {
        match b.kind {
            BatchKind::Plain => Ok(()),
            BatchKind::Transactional if b.producer_id < 0 || b.producer_epoch < 0 => {
                Err(ErrorKind::InvalidRequest)
            }
            BatchKind::Transactional => self.check_transactional_batch(b, joined, now_ms),
            BatchKind::CommitMarker | BatchKind::AbortMarker => {
                let current = producers
                    .get(&(b.partition, b.producer_id))
                    .or_else(|| p.producers.get(&b.producer_id));
                if current.is_some_and(|s| s.epoch > b.producer_epoch) {
                    return Err(ErrorKind::InvalidProducerEpoch);
                }
                let commit = b.kind == BatchKind::CommitMarker;
                self.check_marker(b.producer_id, b.producer_epoch, commit)
            }
        }
    }

    /// DeleteRecords: -1 means up to the high watermark. Returns the new log start offset
    /// and the record, if the start moves.
    pub fn delete_records(
        &self,
        tp: TopicPartition,
        offset: i64,
        now_ms: i64,
    ) -> Result<(i64, Option<Entry>), ErrorKind> {
        let p = self
            .partition(tp)
            .ok_or(ErrorKind::UnknownTopicOrPartition)?;
        let target = if offset == -1 {
            p.high_watermark
        } else {
            offset
        };
        if target < 0 || target > p.high_watermark {
            return Err(ErrorKind::OffsetOutOfRange);
        }
        if target <= p.log_start_offset {
            return Ok((p.log_start_offset, None));
        }
        let record = DisklessRecordsDeletedRecord {
            topic_id: tp.topic_id,
            partition_index: tp.partition,
            new_log_start_offset: target,
        };
        Ok((target, Some(Entry::of(now_ms, record))))
    }

    /// The next producer id and the entry that takes it.
    pub fn allocate_producer_id(&self, now_ms: i64) -> (i64, Entry) {
        let producer_id = self.next_producer_id;
        let entry = Entry::of(now_ms, ShoalProducerIdAllocatedRecord { producer_id });
        (producer_id, entry)
    }
}

/// Where a commit places one batch of a known partition.
pub(super) enum Placement {
    /// Committed at these offsets.
    At {
        base_offset: i64,
        last_offset: i64,
        last_sequence: i32,
    },
    /// Not committed: refused, or a duplicate answered with its first commit's offset.
    Answered(CommitBatchResult),
}

impl Placement {
    pub(super) fn refused(error: ErrorKind) -> Placement {
        Placement::Answered(CommitBatchResult::rejected(error))
    }
}

/// Every batch of a commit whose object is already known refused (INVALID_REQUEST).
pub(super) fn refused_whole(batches: &[CommitBatch]) -> Vec<CommitBatchResult> {
    vec![CommitBatchResult::rejected(ErrorKind::InvalidRequest); batches.len()]
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
