//! The records the state's decisions are written as: one builder per change that needs more
//! than a literal, shared by the decisions and by snapshots (which write topics, offsets,
//! mirrors, credentials, ACLs and transactions as the records that create them).

use shoal_auth::ScramCredential;
use shoal_mirror::PartitionMirror;
use shoal_protocol::records::*;
use uuid::Uuid;

use crate::acl::AclBinding;
use crate::entry::{MAGIC_V2, OBJECT_FORMAT_WAL};
use crate::messages::BatchKind;
use crate::messages::{NewObject, TopicPartition};
use crate::records::{CommittedBatch, CommittedOffset, Transaction, TransactionStatus};
use crate::topic_configs::TopicOverrides;

/// A new topic: its partitions, then the configs it sets itself.
pub(crate) fn topic_created(
    id: Uuid,
    name: &str,
    partitions: i32,
    own: &TopicOverrides,
) -> Vec<AnyRecord> {
    let mut records = partitions_created(id, name, 0, partitions);
    records.push(topic_settings(id, own));
    records
}

/// Partitions `from..to` of a topic.
pub(crate) fn partitions_created(topic_id: Uuid, name: &str, from: i32, to: i32) -> Vec<AnyRecord> {
    (from..to)
        .map(|partition_index| {
            DisklessPartitionCreatedRecord {
                topic_id,
                name: name.to_string(),
                partition_index,
            }
            .into()
        })
        .collect()
}

/// The configs a topic sets itself, whole (its config in effect is resolved from them).
pub(crate) fn topic_settings(topic_id: Uuid, own: &TopicOverrides) -> AnyRecord {
    ShoalTopicOverridesRecord {
        topic_id,
        configs: own
            .iter()
            .map(|(name, value)| ShoalTopicOwnConfig {
                name: name.clone(),
                value: value.clone(),
            })
            .collect(),
    }
    .into()
}

/// A committed object and the batches of it that were accepted, at `at_ms` (their
/// log-append time), then which of them are transactional or markers, if any.
pub(crate) fn file_committed(
    object: &NewObject,
    batches: &[CommittedBatch],
    at_ms: i64,
) -> Vec<AnyRecord> {
    let mut records = vec![DisklessFileCommittedRecord {
        object_key: object.key.clone(),
        object_format: OBJECT_FORMAT_WAL,
        file_size: object.size_bytes as i64,
        uploader_broker_id: object.uploader_broker_id,
        owner_ids: object.owner_ids.clone(),
        topics: committed_topics(batches, at_ms),
    }
    .into()];
    let listed: Vec<ShoalTransactionalBatch> = batches
        .iter()
        .enumerate()
        .filter(|(_, b)| b.batch.kind != BatchKind::Plain)
        .map(|(index, b)| ShoalTransactionalBatch {
            index: index as i32,
            kind: kind_code(b.batch.kind),
        })
        .collect();
    if !listed.is_empty() {
        records.push(ShoalTransactionalBatchesRecord { batches: listed }.into());
    }
    records
}

/// The batches grouped as the seed's record nests them: consecutive batches of one partition
/// in one partition entry, consecutive partitions of one topic in one topic entry, so the
/// order of the batches is kept exactly.
fn committed_topics(batches: &[CommittedBatch], at_ms: i64) -> Vec<DisklessCommittedTopic> {
    let mut topics: Vec<DisklessCommittedTopic> = Vec::new();
    for committed in batches {
        let b = &committed.batch;
        let batch = DisklessCommittedBatch {
            magic: MAGIC_V2,
            byte_offset: b.byte_offset as i32,
            byte_size: b.size_bytes as i32,
            assigned_base_offset: committed.base_offset,
            assigned_last_offset: committed.last_offset,
            log_append_timestamp: at_ms,
            batch_max_timestamp: b.max_timestamp,
            timestamp_type: committed.timestamp_type,
            producer_id: b.producer_id,
            producer_epoch: b.producer_epoch,
            base_sequence: b.base_sequence,
            last_sequence: committed.last_sequence,
        };
        let TopicPartition {
            topic_id,
            partition,
        } = b.partition;
        let same_topic = topics.last().is_some_and(|t| t.topic_id == topic_id);
        if !same_topic {
            topics.push(DisklessCommittedTopic {
                topic_id,
                partitions: Vec::new(),
            });
        }
        let topic = topics.last_mut().expect("pushed above");
        match topic.partitions.last_mut() {
            Some(p) if p.partition_index == partition => p.batches.push(batch),
            _ => topic.partitions.push(DisklessCommittedPartition {
                partition_index: partition,
                batches: vec![batch],
            }),
        }
    }
    topics
}

fn kind_code(kind: BatchKind) -> i8 {
    match kind {
        BatchKind::Plain => 0,
        BatchKind::Transactional => 1,
        BatchKind::CommitMarker => 2,
        BatchKind::AbortMarker => 3,
    }
}

pub(crate) fn offsets_committed(group: &str, offsets: &[CommittedOffset]) -> AnyRecord {
    ShoalOffsetsCommittedRecord {
        group_id: group.to_string(),
        offsets: offsets
            .iter()
            .map(|o| ShoalCommittedOffset {
                topic_id: o.topic_id,
                partition_index: o.partition,
                committed_offset: o.offset,
                leader_epoch: o.leader_epoch,
                metadata: o.metadata.clone(),
            })
            .collect(),
    }
    .into()
}

pub(crate) fn mirror_created(name: &str, config: &[(String, String)]) -> AnyRecord {
    ShoalMirrorCreatedRecord {
        mirror_name: name.to_string(),
        configs: config
            .iter()
            .map(|(name, value)| ShoalMirrorConfig {
                name: name.clone(),
                value: value.clone(),
            })
            .collect(),
    }
    .into()
}

/// A group's dynamic configs, whole (none: back to the broker's defaults).
pub(crate) fn group_config(group: &str, configs: &[(String, String)]) -> AnyRecord {
    ShoalGroupConfigRecord {
        group_id: group.to_string(),
        configs: configs
            .iter()
            .map(|(name, value)| ShoalGroupConfig {
                name: name.clone(),
                value: value.clone(),
            })
            .collect(),
    }
    .into()
}

pub(crate) fn topic_mirror_changed(topic_id: Uuid, mirror: &str, removed: bool) -> AnyRecord {
    ShoalTopicMirrorChangedRecord {
        topic_id,
        mirror_name: mirror.to_string(),
        removed,
    }
    .into()
}

pub(crate) fn mirror_partitions(
    topic_id: Uuid,
    partitions: &[(i32, PartitionMirror)],
) -> AnyRecord {
    ShoalMirrorPartitionsChangedRecord {
        topic_id,
        partitions: partitions
            .iter()
            .map(|(partition_index, m)| ShoalPartitionMirror {
                partition_index: *partition_index,
                state: m.state.code(),
                paused: m.paused,
                prepared: m.prepared,
                last_mirrored_offset: m.last_mirrored_offset,
                failures: m.failures as i32,
                retry_at_ms: m.retry_at_ms.unwrap_or(-1),
            })
            .collect(),
    }
    .into()
}

pub(crate) fn scram_credential_set(
    user: &str,
    mechanism: i8,
    credential: &ScramCredential,
) -> AnyRecord {
    ShoalScramCredentialRecord {
        user: user.to_string(),
        mechanism,
        salt: credential.salt.clone(),
        stored_key: credential.stored_key.clone(),
        server_key: credential.server_key.clone(),
        iterations: credential.iterations,
    }
    .into()
}

/// The ACL records (created, deleted) carry a binding's fields as they are.
macro_rules! acl_record {
    ($record:ident, $b:expr) => {
        $record {
            resource_type: $b.resource_type,
            resource_name: $b.resource_name.clone(),
            pattern_type: $b.pattern_type,
            principal: $b.principal.clone(),
            host: $b.host.clone(),
            operation: $b.operation,
            permission_type: $b.permission,
        }
    };
}

pub(crate) fn acl_created(b: &AclBinding) -> AnyRecord {
    acl_record!(ShoalAclCreatedRecord, b).into()
}

pub(crate) fn acl_deleted(b: &AclBinding) -> AnyRecord {
    acl_record!(ShoalAclDeletedRecord, b).into()
}

/// A transactional id and its current transaction, recorded whole at every change.
pub(crate) fn transaction_changed(t: &Transaction) -> AnyRecord {
    ShoalTransactionRecord {
        transactional_id: t.transactional_id.clone(),
        producer_id: t.producer_id,
        producer_epoch: t.producer_epoch,
        timeout_ms: t.timeout_ms,
        state: status_code(t.status),
        started_ms: t.started_ms,
        updated_ms: t.updated_ms,
        partitions: t
            .partitions
            .iter()
            .map(|tp| ShoalTransactionPartition {
                topic_id: tp.topic_id,
                partition_index: tp.partition,
            })
            .collect(),
        pending_offsets: t
            .pending_offsets
            .iter()
            .map(|(group, o)| ShoalTransactionOffset {
                group_id: group.clone(),
                topic_id: o.topic_id,
                partition_index: o.partition,
                committed_offset: o.offset,
                leader_epoch: o.leader_epoch,
                metadata: o.metadata.clone(),
            })
            .collect(),
        ended_producer_id: t.ended_as.map_or(-1, |(id, _)| id),
        ended_producer_epoch: t.ended_as.map_or(-1, |(_, epoch)| epoch),
        next_producer_id: t.next_producer_id.unwrap_or(-1),
    }
    .into()
}

fn status_code(status: TransactionStatus) -> i8 {
    match status {
        TransactionStatus::Empty => 0,
        TransactionStatus::Ongoing => 1,
        TransactionStatus::PrepareCommit => 2,
        TransactionStatus::PrepareAbort => 3,
        TransactionStatus::CompleteCommit => 4,
        TransactionStatus::CompleteAbort => 5,
    }
}

/// A committed file of one batch of partition 0 of `topic_id`, its offsets as given (tests
/// feed hostile ones).
#[cfg(test)]
pub(crate) fn one_batch_file(
    key: &str,
    topic_id: Uuid,
    base_offset: i64,
    last_offset: i64,
) -> DisklessFileCommittedRecord {
    DisklessFileCommittedRecord {
        object_key: key.into(),
        object_format: OBJECT_FORMAT_WAL,
        topics: vec![DisklessCommittedTopic {
            topic_id,
            partitions: vec![DisklessCommittedPartition {
                partition_index: 0,
                batches: vec![DisklessCommittedBatch {
                    magic: MAGIC_V2,
                    assigned_base_offset: base_offset,
                    assigned_last_offset: last_offset,
                    ..Default::default()
                }],
            }],
        }],
        ..Default::default()
    }
}

/// What an older Shoal wrote, for the tests that read it back.
#[cfg(test)]
pub(crate) mod older {
    use shoal_protocol::records::*;
    use uuid::Uuid;

    use crate::records::{CleanupPolicy, CompactionConfig, TopicCompression, TopicConfig};

    /// A topic's settings as Shoal wrote them before topics kept their own configs (logs of then
    /// are still read): its config record, then its compression when not "producer", then its
    /// cleanup policy and compaction settings when any is not Kafka's default.
    pub(crate) fn whole_topic_config(topic_id: Uuid, config: &TopicConfig) -> Vec<AnyRecord> {
        let mut records = vec![ShoalTopicConfigRecord {
            topic_id,
            retention_ms: config.retention_ms,
            retention_bytes: config.retention_bytes,
            log_append_time: config.log_append_time,
            max_message_bytes: config.max_message_bytes,
        }
        .into()];
        let code = match config.compression {
            TopicCompression::Producer => None,
            TopicCompression::Uncompressed => Some(1),
            TopicCompression::Gzip => Some(2),
            TopicCompression::Snappy => Some(3),
            TopicCompression::Lz4 => Some(4),
            TopicCompression::Zstd => Some(5),
        };
        if let Some(compression_type) = code {
            records.push(
                ShoalTopicCompressionRecord {
                    topic_id,
                    compression_type,
                }
                .into(),
            );
        }
        let c = &config.compaction;
        if config.cleanup != CleanupPolicy::Delete || *c != CompactionConfig::default() {
            records.push(
                ShoalTopicCompactionRecord {
                    topic_id,
                    compact: config.cleanup.compacts(),
                    delete: config.cleanup.deletes(),
                    delete_retention_ms: c.delete_retention_ms,
                    min_compaction_lag_ms: c.min_compaction_lag_ms,
                    max_compaction_lag_ms: c.max_compaction_lag_ms,
                    min_cleanable_dirty_ratio_ppm: c.min_cleanable_dirty_ratio_ppm,
                    segment_ms: c.segment_ms,
                    segment_bytes: c.segment_bytes,
                }
                .into(),
            );
        }
        records
    }
}
