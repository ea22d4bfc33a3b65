//! Applying the log's records to the state, each record type as it is stored: the same
//! records the state's decisions produce (`emit`), read back by replay and by snapshots.

use shoal_mirror::{MirrorState, PartitionMirror};
use shoal_protocol::records::*;

use std::sync::Arc;

use super::producers::ProducerBatch;
use super::{BatchEntry, CoordinatorState, PartitionState, TopicMirror, TopicState};
use crate::broker_configs::CLUSTER_DEFAULT;
use crate::entry::{compression_of, status_of, Entry};
use crate::messages::BatchKind;
use crate::messages::TopicPartition;
use crate::records::{
    CleanupPolicy, CommittedOffset, CompactionConfig, TopicCompression, TopicConfig, Transaction,
};
use crate::topic_configs::{overrides_differing_from_default, resolve, TopicOverrides};

impl CoordinatorState {
    /// Applies one entry, record by record. Entries come from this state's own decisions or
    /// from `Entry::decode`, which refuses shapes no decision writes.
    pub fn apply(&mut self, entry: &Entry) {
        let time = entry.time_ms;
        let mut records = entry.records.iter().peekable();
        while let Some(record) = records.next() {
            self.view_changes.note(record);
            match record {
                AnyRecord::DisklessPartitionCreatedRecord(r) => self.apply_partition_created(r),
                AnyRecord::ShoalTopicConfigRecord(r) => {
                    let (compression, compaction) = older_topic_settings(&mut records);
                    self.apply_whole_topic_config(r, compression, compaction);
                }
                AnyRecord::ShoalTopicOverridesRecord(r) => self.apply_topic_overrides(r),
                AnyRecord::ShoalBatchesRewrittenRecord(r) => self.apply_batches_rewritten(r, time),
                AnyRecord::DisklessTopicDeletedRecord(r) => self.apply_topic_deleted(r, time),
                AnyRecord::DisklessFileCommittedRecord(r) => {
                    let kinds = match records.next_if(|next| is_kinds(next)) {
                        Some(AnyRecord::ShoalTransactionalBatchesRecord(kinds)) => Some(kinds),
                        _ => None,
                    };
                    self.apply_file_committed(r, kinds, time);
                }
                AnyRecord::DisklessRecordsDeletedRecord(r) => self.apply_records_deleted(r, time),
                AnyRecord::ShoalProducerIdAllocatedRecord(r) => self.apply_producer_id(r),
                AnyRecord::ShoalProducersExpiredRecord(r) => self.apply_producers_expired(r),
                AnyRecord::ShoalFilesDeletedRecord(r) => self.apply_files_deleted(r),
                AnyRecord::ShoalOffsetsCommittedRecord(r) => self.apply_offsets_committed(r, time),
                AnyRecord::ShoalGroupOffsetsDeletedRecord(r) => self.apply_group_offsets_deleted(r),
                AnyRecord::ShoalGroupDeletedRecord(r) => self.apply_group_deleted(r),
                AnyRecord::ShoalClientQuotaRecord(r) => self.apply_client_quota(r),
                AnyRecord::ShoalBrokerConfigRecord(r) => self.apply_broker_config(r),
                AnyRecord::ShoalFeatureLevelsRecord(r) => self.apply_feature_levels(r),
                AnyRecord::ShoalGroupConfigRecord(r) => self.apply_group_config(r),
                AnyRecord::ShoalConsumerGroupRecord(r) => {
                    let members = members_following(&mut records, |next| match next {
                        AnyRecord::ShoalConsumerMemberRecord(m) => Some(m),
                        _ => None,
                    });
                    self.apply_consumer_group(r, members.into_iter());
                }
                AnyRecord::ShoalStreamsGroupRecord(r) => {
                    let members = members_following(&mut records, |next| match next {
                        AnyRecord::ShoalStreamsMemberRecord(m) => Some(m),
                        _ => None,
                    });
                    self.apply_streams_group(r, members.into_iter());
                }
                AnyRecord::ShoalGroupClaimedRecord(r) => self.apply_group_claimed(r),
                AnyRecord::ShoalShareStateRecord(r) => self.apply_share_state(r),
                AnyRecord::ShoalMirrorCreatedRecord(r) => self.apply_mirror_created(r),
                AnyRecord::ShoalTopicMirrorChangedRecord(r) => self.apply_topic_mirror(r),
                AnyRecord::ShoalMirrorPartitionsChangedRecord(r) => self.apply_mirror_partitions(r),
                AnyRecord::ShoalPartitionTruncatedRecord(r) => self.apply_truncation(r, time),
                AnyRecord::ShoalScramCredentialRecord(r) => self.apply_scram_credential(r),
                AnyRecord::ShoalDelegationTokenRecord(r) => self.apply_delegation_token(r),
                AnyRecord::ShoalDelegationTokenRemovedRecord(r) => {
                    self.apply_delegation_token_removed(r)
                }
                AnyRecord::ShoalScramCredentialDeletedRecord(r) => {
                    self.apply_scram_credential_deleted(r)
                }
                AnyRecord::ShoalRegistrySchemaRecord(r) => self.apply_registry_schema(r),
                AnyRecord::ShoalRegistryVersionRecord(r) => self.apply_registry_version(r),
                AnyRecord::ShoalRegistryVersionDeletedRecord(r) => {
                    self.apply_registry_version_deleted(r)
                }
                AnyRecord::ShoalRegistrySettingRecord(r) => self.apply_registry_setting(r),
                AnyRecord::ShoalRegistryNextIdRecord(r) => self.apply_registry_next_id(r),
                AnyRecord::ShoalAclCreatedRecord(r) => self.apply_acl_created(r),
                AnyRecord::ShoalAclDeletedRecord(r) => self.apply_acl_deleted(r),
                AnyRecord::ShoalTransactionRecord(r) => self.apply_transaction_record(r),
                AnyRecord::ShoalTransactionsExpiredRecord(r) => self.apply_transactions_expired(r),
                // Read with the record before them, above.
                AnyRecord::ShoalTransactionalBatchesRecord(_)
                | AnyRecord::ShoalTopicCompressionRecord(_)
                | AnyRecord::ShoalTopicCompactionRecord(_)
                | AnyRecord::ShoalConsumerMemberRecord(_)
                | AnyRecord::ShoalStreamsMemberRecord(_)
                // A snapshot's own records, loaded by `decode_snapshot`.
                | AnyRecord::ShoalSnapshotHeaderRecord(_)
                | AnyRecord::ShoalPartitionStateRecord(_)
                | AnyRecord::ShoalFileStateRecord(_)
                | AnyRecord::ShoalDeletableFileRecord(_)
                | AnyRecord::ShoalPartitionTransactionsRecord(_) => {
                    // `check_log_entry` keeps these out of the entries applied here.
                    debug_assert!(false, "record type {} applied", record.record_type())
                }
            }
        }
    }

    /// A committed object, as stored: each batch of a known partition joins its log and its
    /// producer's state, with the kind its transactional-batches record lists (Plain when
    /// none). The object gets the next file id: ids follow commit order, so a replay assigns
    /// the same ones.
    fn apply_file_committed(
        &mut self,
        file: &DisklessFileCommittedRecord,
        kinds: Option<&ShoalTransactionalBatchesRecord>,
        at_ms: i64,
    ) {
        let file_id = self.next_file_id;
        self.next_file_id = self.next_file_id.saturating_add(1);
        let mut listed = kinds
            .map(|k| k.batches.as_slice())
            .unwrap_or_default()
            .iter()
            .peekable();
        let (mut index, mut live) = (0i32, 0);
        for topic in &file.topics {
            for partition in &topic.partitions {
                for b in &partition.batches {
                    let kind = match listed.next_if(|l| l.index == index) {
                        Some(l) => kind_of(l.kind),
                        None => BatchKind::Plain,
                    };
                    index = index.saturating_add(1);
                    let Some(p) = self.partition_mut(topic.topic_id, partition.partition_index)
                    else {
                        continue;
                    };
                    p.apply_batch(b, kind, file_id, at_ms);
                    live += 1;
                }
            }
        }
        self.hold_object(Arc::from(file.object_key.as_str()), file_id, live, at_ms);
    }

    /// A topic's whole config as an older Shoal wrote it (its compression and compaction
    /// records, when not the defaults, follow it): the topic sets what differs from Kafka's
    /// defaults, the only default there was then.
    fn apply_whole_topic_config(
        &mut self,
        r: &ShoalTopicConfigRecord,
        compression: Option<&ShoalTopicCompressionRecord>,
        compaction: Option<&ShoalTopicCompactionRecord>,
    ) {
        let Some(topic) = self.topics.get_mut(&r.topic_id) else {
            return;
        };
        let mut config = config_of(r);
        if let Some(c) = compression {
            config.compression = compression_of(c).unwrap_or(TopicCompression::Producer);
        }
        if let Some(c) = compaction {
            (config.cleanup, config.compaction) = compaction_of(c);
        }
        topic.overrides = overrides_differing_from_default(&config);
        topic.config = config;
    }

    /// The configs a topic sets itself; its config in effect is resolved from them and
    /// today's cluster-wide defaults.
    fn apply_topic_overrides(&mut self, r: &ShoalTopicOverridesRecord) {
        let defaults = self.broker_configs(CLUSTER_DEFAULT);
        if let Some(topic) = self.topics.get_mut(&r.topic_id) {
            let own: TopicOverrides = r
                .configs
                .iter()
                .map(|c| (c.name.clone(), c.value.clone()))
                .collect();
            topic.config = resolve(&own, &defaults);
            topic.overrides = own;
        }
    }

    fn apply_topic_mirror(&mut self, r: &ShoalTopicMirrorChangedRecord) {
        if let Some(topic) = self.topics.get_mut(&r.topic_id) {
            topic.mirror = Some(TopicMirror {
                name: r.mirror_name.clone(),
                removed: r.removed,
            });
        }
    }

    /// Partition 0 of an unknown topic creates it (its settings follow in the same entry);
    /// a later partition grows a known topic.
    fn apply_partition_created(&mut self, r: &DisklessPartitionCreatedRecord) {
        let count = (r.partition_index.max(0) as usize).saturating_add(1);
        match self.topics.get_mut(&r.topic_id) {
            Some(topic) if count > topic.partitions.len() => {
                topic.partitions.resize_with(count, PartitionState::default);
            }
            Some(_) => {}
            None if r.partition_index == 0 => {
                self.topic_ids.insert(r.name.clone(), r.topic_id);
                self.topics.insert(
                    r.topic_id,
                    TopicState {
                        name: r.name.clone(),
                        config: TopicConfig::default(),
                        overrides: TopicOverrides::new(),
                        partitions: vec![PartitionState::default()],
                        mirror: None,
                    },
                );
            }
            None => {}
        }
    }

    fn apply_topic_deleted(&mut self, r: &DisklessTopicDeletedRecord, at_ms: i64) {
        self.forget_topic_offsets(r.topic_id);
        self.forget_topic_share_states(r.topic_id);
        if let Some(topic) = self.topics.remove(&r.topic_id) {
            self.topic_ids.remove(&topic.name);
            for batch in topic.partitions.iter().flat_map(|p| p.batches.iter()) {
                self.release_batch(batch.file_id, at_ms);
            }
        }
    }

    fn apply_records_deleted(&mut self, r: &DisklessRecordsDeletedRecord, at_ms: i64) {
        let Some(p) = self.partition_mut(r.topic_id, r.partition_index) else {
            return;
        };
        p.log_start_offset = p.log_start_offset.max(r.new_log_start_offset);
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
            self.release_batch(file_id, at_ms);
        }
    }

    fn apply_mirror_partitions(&mut self, r: &ShoalMirrorPartitionsChangedRecord) {
        for record in &r.partitions {
            let Some(m) = partition_mirror_of(record) else {
                continue;
            };
            if let Some(p) = self.partition_mut(r.topic_id, record.partition_index) {
                // Mirrored producer ids belong to the source cluster's id space: once the
                // partition is writable here they would collide with local ones.
                if m.state == MirrorState::Stopped && p.mirror.is_read_only() {
                    p.producers.clear();
                    // The source's open transactions can never end here: aborted.
                    p.transactions.abort_all_open(p.high_watermark);
                }
                p.mirror = m;
            }
        }
    }
}

impl PartitionState {
    /// One batch of a committed file joins the log, its transaction and its producer's state.
    fn apply_batch(
        &mut self,
        b: &DisklessCommittedBatch,
        kind: BatchKind,
        file_id: u64,
        at_ms: i64,
    ) {
        let (base_offset, last_offset) = (b.assigned_base_offset, b.assigned_last_offset);
        // A log's files are checked for this when read (`check_file`), decisions assign
        // offsets so. That they also rise from one batch to the next is the decisions' doing
        // only: a log that says otherwise passes each entry's check, so it is not asserted
        // here (the metadata-log fuzzer feeds such logs, with debug assertions).
        debug_assert!(
            base_offset <= last_offset,
            "batch {base_offset}..{last_offset}"
        );
        // Sizes and positions are checked non-negative when read, and decisions write u32s.
        let (byte_offset, size_bytes) = (b.byte_offset as u32, b.byte_size as u32);
        self.high_watermark = self.high_watermark.max(last_offset.saturating_add(1));
        self.size_bytes = self.size_bytes.saturating_add(u64::from(size_bytes));
        self.batches.push_back(BatchEntry {
            file_id,
            byte_offset,
            size_bytes,
            base_offset,
            last_offset,
            max_timestamp: b.batch_max_timestamp,
            log_append_time_ms: at_ms,
        });
        self.transactions
            .on_batch(kind, b.producer_id, base_offset, last_offset);
        let is_marker = matches!(kind, BatchKind::CommitMarker | BatchKind::AbortMarker);
        if is_marker && b.producer_id >= 0 {
            // A marker carries no sequence; at a newer epoch it fences older batches.
            let producer = self.producers.entry(b.producer_id).or_default();
            producer.advance_epoch(b.producer_epoch);
            producer.last_write_ms = at_ms;
        } else if b.producer_id >= 0 && b.producer_epoch >= 0 {
            let producer = self.producers.entry(b.producer_id).or_default();
            producer.record(
                b.producer_epoch,
                ProducerBatch {
                    base_sequence: b.base_sequence,
                    last_sequence: b.last_sequence,
                    base_offset,
                },
            );
            producer.last_write_ms = at_ms;
        }
    }
}

/// An older Shoal's topic compression and compaction settings, which follow its config
/// record in that order when they are not the defaults.
fn older_topic_settings<'a>(
    records: &mut std::iter::Peekable<std::slice::Iter<'a, AnyRecord>>,
) -> (
    Option<&'a ShoalTopicCompressionRecord>,
    Option<&'a ShoalTopicCompactionRecord>,
) {
    let compression =
        match records.next_if(|r| matches!(r, AnyRecord::ShoalTopicCompressionRecord(_))) {
            Some(AnyRecord::ShoalTopicCompressionRecord(c)) => Some(c),
            _ => None,
        };
    let compaction =
        match records.next_if(|r| matches!(r, AnyRecord::ShoalTopicCompactionRecord(_))) {
            Some(AnyRecord::ShoalTopicCompactionRecord(c)) => Some(c),
            _ => None,
        };
    (compression, compaction)
}

/// A file's batch kinds, which follow its record when it has transactional batches.
fn is_kinds(record: &AnyRecord) -> bool {
    matches!(record, AnyRecord::ShoalTransactionalBatchesRecord(_))
}

/// A group's member records, which follow its record in an entry (`member` picks them).
fn members_following<'a, M>(
    records: &mut std::iter::Peekable<std::slice::Iter<'a, AnyRecord>>,
    member: impl Fn(&'a AnyRecord) -> Option<&'a M>,
) -> Vec<&'a M> {
    let mut members = Vec::new();
    while let Some(m) = records.peek().and_then(|next| member(next)) {
        records.next();
        members.push(m);
    }
    members
}

pub(super) fn kind_of(code: i8) -> BatchKind {
    match code {
        1 => BatchKind::Transactional,
        2 => BatchKind::CommitMarker,
        3 => BatchKind::AbortMarker,
        _ => BatchKind::Plain,
    }
}

/// An older Shoal's config record: what it holds, Kafka's defaults for the rest (the
/// compression and compaction records that follow it, and configs it did not know).
pub(super) fn config_of(r: &ShoalTopicConfigRecord) -> TopicConfig {
    TopicConfig {
        retention_ms: r.retention_ms,
        retention_bytes: r.retention_bytes,
        log_append_time: r.log_append_time,
        max_message_bytes: r.max_message_bytes,
        ..TopicConfig::default()
    }
}

/// The policy and settings a compaction record holds (a policy of neither is refused when
/// the entry is read, so it never reaches here; delete stands in).
pub(super) fn compaction_of(r: &ShoalTopicCompactionRecord) -> (CleanupPolicy, CompactionConfig) {
    let cleanup = CleanupPolicy::from_flags(r.compact, r.delete).unwrap_or_default();
    let compaction = CompactionConfig {
        delete_retention_ms: r.delete_retention_ms,
        min_compaction_lag_ms: r.min_compaction_lag_ms,
        max_compaction_lag_ms: r.max_compaction_lag_ms,
        min_cleanable_dirty_ratio_ppm: r.min_cleanable_dirty_ratio_ppm,
        segment_ms: r.segment_ms,
        segment_bytes: r.segment_bytes,
    };
    (cleanup, compaction)
}

fn partition_mirror_of(p: &ShoalPartitionMirror) -> Option<PartitionMirror> {
    Some(PartitionMirror {
        state: MirrorState::from_code(p.state)?,
        paused: p.paused,
        prepared: p.prepared,
        last_mirrored_offset: p.last_mirrored_offset,
        failures: p.failures as u32,
        retry_at_ms: (p.retry_at_ms >= 0).then_some(p.retry_at_ms),
    })
}

pub(super) fn transaction_of(r: &ShoalTransactionRecord) -> Option<Transaction> {
    Some(Transaction {
        status: status_of(r.state)?,
        transactional_id: r.transactional_id.clone(),
        producer_id: r.producer_id,
        producer_epoch: r.producer_epoch,
        timeout_ms: r.timeout_ms,
        started_ms: r.started_ms,
        updated_ms: r.updated_ms,
        partitions: r
            .partitions
            .iter()
            .map(|p| TopicPartition {
                topic_id: p.topic_id,
                partition: p.partition_index,
            })
            .collect(),
        pending_offsets: r
            .pending_offsets
            .iter()
            .map(|o| {
                let offset = CommittedOffset {
                    topic_id: o.topic_id,
                    partition: o.partition_index,
                    offset: o.committed_offset,
                    leader_epoch: o.leader_epoch,
                    metadata: o.metadata.clone(),
                };
                (o.group_id.clone(), offset)
            })
            .collect(),
        ended_as: (r.ended_producer_id >= 0 && r.ended_producer_epoch >= 0)
            .then_some((r.ended_producer_id, r.ended_producer_epoch)),
        next_producer_id: (r.next_producer_id >= 0).then_some(r.next_producer_id),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file record read back with offsets no decision writes is applied without a panic.
    #[test]
    fn hostile_offsets_in_a_committed_file_do_not_overflow() {
        let topic_id = uuid::Uuid::from_u128(1);
        let file = super::super::emit::one_batch_file("wal/x", topic_id, i64::MAX, i64::MIN);
        let mut state = CoordinatorState::default();
        state.apply(&Entry::of(0, file));
        // A file of no known partition holds no batch: it is garbage from the start.
        assert_eq!(state.deletable_file_count(), 1);
    }

    /// A log whose file entries each pass their check but together run a partition's offsets
    /// backwards (what the metadata-log fuzzer found against an order assert, since
    /// withdrawn) is applied without a panic, debug assertions on.
    #[test]
    fn files_whose_offsets_run_backwards_across_entries_are_applied_without_a_panic() {
        let topic_id = uuid::Uuid::from_u128(1);
        let mut created = vec![AnyRecord::from(DisklessPartitionCreatedRecord {
            topic_id,
            name: "t".into(),
            partition_index: 0,
        })];
        created.push(super::super::emit::topic_settings(
            topic_id,
            &Default::default(),
        ));
        let file =
            |key: &str, base, last| super::super::emit::one_batch_file(key, topic_id, base, last);
        let mut state = CoordinatorState::default();
        state.apply(&Entry::new(0, created));
        state.apply(&Entry::of(1, file("wal/a", 5, 9)));
        state.apply(&Entry::of(2, file("wal/b", 0, 2)));
        let tp = TopicPartition {
            topic_id,
            partition: 0,
        };
        assert_eq!(state.partition(tp).map(|p| p.high_watermark), Some(10));
    }
}
