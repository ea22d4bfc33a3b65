//! Each `Record` as one entry of generated metadata records (`shoal_protocol::records`): the
//! KIP-1164 seed's records where they say what happened, Shoal's own for the rest. One entry
//! applies as a whole, so a topic's creation (a `DisklessPartitionCreatedRecord` per partition
//! and its `ShoalTopicConfigRecord`) is never half there. One encoder, one decoder; the
//! encoder checks in debug builds that the decoder gives back the same record.

use shoal_auth::ScramCredential;
use shoal_mirror::{MirrorState, PartitionMirror};
use shoal_protocol::records::*;
use uuid::Uuid;

use crate::acl::AclBinding;
use crate::records::{
    BatchKind, CommittedBatch, CommittedOffset, Record, TopicCompression, TopicConfig,
};
use crate::state::PARTITIONS_PER_TOPIC_MAX;
use crate::transaction_codec::{
    apply_batch_kinds, batch_kinds_record, transaction_of, transaction_record,
};

/// WRITE_AHEAD_MULTI_SEGMENT, the only object format.
const OBJECT_FORMAT_WAL: i8 = 1;
const MAGIC_V2: i8 = 2;

impl Record {
    /// Appends this record as one entry, written at `now_ms` (records with a time of their
    /// own use it instead).
    pub fn encode_entry(&self, now_ms: i64, out: &mut Vec<u8>) {
        let start = out.len();
        let (time, records) = self.to_records(now_ms);
        encode_entry(time, &records, out).expect("generated encoders accept every record");
        debug_assert_eq!(
            Record::decode_entry(&out[start..]).ok().as_ref(),
            Some(self),
            "a record must decode to itself"
        );
    }

    /// The record one entry holds; an error says why the entry is not one this build knows.
    pub fn decode_entry(entry: &[u8]) -> Result<Record, String> {
        let (time, records) =
            shoal_protocol::records::decode_entry(entry).map_err(|e| e.to_string())?;
        Record::from_records(time, records)
    }

    fn to_records(&self, now_ms: i64) -> (i64, Vec<AnyRecord>) {
        match self {
            Record::TopicCreated {
                id,
                name,
                partitions,
                config,
            } => {
                let mut records = partitions_created(*id, name, 0, *partitions);
                records.extend(topic_config(*id, config));
                (now_ms, records)
            }
            Record::PartitionsAdded {
                topic_id,
                name,
                first_new,
                total_partitions,
            } => (
                now_ms,
                partitions_created(*topic_id, name, *first_new, *total_partitions),
            ),
            Record::TopicConfigChanged { topic_id, config } => {
                (now_ms, topic_config(*topic_id, config))
            }
            Record::TopicDeleted { id, at_ms } => (
                *at_ms,
                vec![DisklessTopicDeletedRecord { topic_id: *id }.into()],
            ),
            Record::FileCommitted {
                object_key,
                file_size,
                uploader_broker_id,
                owner_ids,
                at_ms,
                batches,
            } => {
                let mut records = vec![DisklessFileCommittedRecord {
                    object_key: object_key.clone(),
                    object_format: OBJECT_FORMAT_WAL,
                    file_size: *file_size as i64,
                    uploader_broker_id: *uploader_broker_id,
                    owner_ids: owner_ids.clone(),
                    topics: committed_topics(batches, *at_ms),
                }
                .into()];
                records.extend(batch_kinds_record(batches));
                (*at_ms, records)
            }
            Record::TransactionChanged(t) => (now_ms, vec![transaction_record(t)]),
            Record::TransactionsExpired { transactional_ids } => (
                now_ms,
                vec![ShoalTransactionsExpiredRecord {
                    transactional_ids: transactional_ids.clone(),
                }
                .into()],
            ),
            Record::RecordsDeleted {
                topic_id,
                partition,
                new_log_start_offset,
                at_ms,
            } => (
                *at_ms,
                vec![DisklessRecordsDeletedRecord {
                    topic_id: *topic_id,
                    partition_index: *partition,
                    new_log_start_offset: *new_log_start_offset,
                }
                .into()],
            ),
            Record::ProducerIdAllocated { producer_id } => (
                now_ms,
                vec![ShoalProducerIdAllocatedRecord {
                    producer_id: *producer_id,
                }
                .into()],
            ),
            Record::FilesDeleted { object_keys } => (
                now_ms,
                vec![ShoalFilesDeletedRecord {
                    object_keys: object_keys.clone(),
                }
                .into()],
            ),
            Record::ProducersExpired {
                topic_id,
                partition,
                producer_ids,
            } => (
                now_ms,
                vec![ShoalProducersExpiredRecord {
                    topic_id: *topic_id,
                    partition_index: *partition,
                    producer_ids: producer_ids.clone(),
                }
                .into()],
            ),
            Record::OffsetsCommitted {
                group,
                at_ms,
                offsets,
            } => (*at_ms, vec![offsets_committed(group, offsets)]),
            Record::GroupOffsetsDeleted { group, partitions } => (
                now_ms,
                vec![ShoalGroupOffsetsDeletedRecord {
                    group_id: group.clone(),
                    partitions: partitions
                        .iter()
                        .map(|(topic_id, partition_index)| ShoalGroupPartition {
                            topic_id: *topic_id,
                            partition_index: *partition_index,
                        })
                        .collect(),
                }
                .into()],
            ),
            Record::GroupDeleted { group } => (
                now_ms,
                vec![ShoalGroupDeletedRecord {
                    group_id: group.clone(),
                }
                .into()],
            ),
            Record::MirrorCreated { name, config } => (
                now_ms,
                vec![ShoalMirrorCreatedRecord {
                    mirror_name: name.clone(),
                    configs: config
                        .iter()
                        .map(|(name, value)| ShoalMirrorConfig {
                            name: name.clone(),
                            value: value.clone(),
                        })
                        .collect(),
                }
                .into()],
            ),
            Record::TopicMirrorChanged {
                topic_id,
                mirror,
                removed,
            } => (
                now_ms,
                vec![ShoalTopicMirrorChangedRecord {
                    topic_id: *topic_id,
                    mirror_name: mirror.clone(),
                    removed: *removed,
                }
                .into()],
            ),
            Record::MirrorPartitionsChanged {
                topic_id,
                partitions,
            } => (now_ms, vec![mirror_partitions(*topic_id, partitions)]),
            Record::ScramCredentialSet {
                user,
                mechanism,
                credential,
            } => (
                now_ms,
                vec![ShoalScramCredentialRecord {
                    user: user.clone(),
                    mechanism: *mechanism,
                    salt: credential.salt.clone(),
                    stored_key: credential.stored_key.clone(),
                    server_key: credential.server_key.clone(),
                    iterations: credential.iterations,
                }
                .into()],
            ),
            Record::AclCreated(b) => (
                now_ms,
                vec![ShoalAclCreatedRecord {
                    resource_type: b.resource_type,
                    resource_name: b.resource_name.clone(),
                    pattern_type: b.pattern_type,
                    principal: b.principal.clone(),
                    host: b.host.clone(),
                    operation: b.operation,
                    permission_type: b.permission,
                }
                .into()],
            ),
            Record::AclDeleted(b) => (
                now_ms,
                vec![ShoalAclDeletedRecord {
                    resource_type: b.resource_type,
                    resource_name: b.resource_name.clone(),
                    pattern_type: b.pattern_type,
                    principal: b.principal.clone(),
                    host: b.host.clone(),
                    operation: b.operation,
                    permission_type: b.permission,
                }
                .into()],
            ),
            Record::ScramCredentialDeleted { user, mechanism } => (
                now_ms,
                vec![ShoalScramCredentialDeletedRecord {
                    user: user.clone(),
                    mechanism: *mechanism,
                }
                .into()],
            ),
            Record::PartitionTruncated {
                topic_id,
                partition,
                offset,
                at_ms,
            } => (
                *at_ms,
                vec![ShoalPartitionTruncatedRecord {
                    topic_id: *topic_id,
                    partition_index: *partition,
                    offset: *offset,
                }
                .into()],
            ),
        }
    }

    pub(crate) fn from_records(time: i64, records: Vec<AnyRecord>) -> Result<Record, String> {
        let mut records = records.into_iter();
        let first = records.next().ok_or("an empty entry")?;
        if let AnyRecord::DisklessPartitionCreatedRecord(first) = first {
            return partitions_from_records(first, records);
        }
        let record = match first {
            AnyRecord::ShoalTopicConfigRecord(r) => {
                let mut config = config_of(&r);
                if let Some(AnyRecord::ShoalTopicCompressionRecord(c)) = records.as_slice().first()
                {
                    config.compression = compression_of(c, r.topic_id)?;
                    records.next();
                }
                Record::TopicConfigChanged {
                    topic_id: r.topic_id,
                    config,
                }
            }
            AnyRecord::DisklessTopicDeletedRecord(r) => Record::TopicDeleted {
                id: r.topic_id,
                at_ms: time,
            },
            AnyRecord::DisklessFileCommittedRecord(r) => {
                let mut record = file_committed(r, time)?;
                if let Some(AnyRecord::ShoalTransactionalBatchesRecord(kinds)) =
                    records.as_slice().first()
                {
                    if let Record::FileCommitted { batches, .. } = &mut record {
                        apply_batch_kinds(batches, kinds)?;
                    }
                    records.next();
                }
                record
            }
            AnyRecord::ShoalTransactionRecord(r) => Record::TransactionChanged(transaction_of(r)?),
            AnyRecord::ShoalTransactionsExpiredRecord(r) => Record::TransactionsExpired {
                transactional_ids: r.transactional_ids,
            },
            AnyRecord::DisklessRecordsDeletedRecord(r) => Record::RecordsDeleted {
                topic_id: r.topic_id,
                partition: r.partition_index,
                new_log_start_offset: r.new_log_start_offset,
                at_ms: time,
            },
            AnyRecord::ShoalProducerIdAllocatedRecord(r) => Record::ProducerIdAllocated {
                producer_id: r.producer_id,
            },
            AnyRecord::ShoalFilesDeletedRecord(r) => Record::FilesDeleted {
                object_keys: r.object_keys,
            },
            AnyRecord::ShoalProducersExpiredRecord(r) => Record::ProducersExpired {
                topic_id: r.topic_id,
                partition: r.partition_index,
                producer_ids: r.producer_ids,
            },
            AnyRecord::ShoalOffsetsCommittedRecord(r) => Record::OffsetsCommitted {
                group: r.group_id,
                at_ms: time,
                offsets: r
                    .offsets
                    .into_iter()
                    .map(|o| CommittedOffset {
                        topic_id: o.topic_id,
                        partition: o.partition_index,
                        offset: o.committed_offset,
                        leader_epoch: o.leader_epoch,
                        metadata: o.metadata,
                    })
                    .collect(),
            },
            AnyRecord::ShoalGroupOffsetsDeletedRecord(r) => Record::GroupOffsetsDeleted {
                group: r.group_id,
                partitions: r
                    .partitions
                    .into_iter()
                    .map(|p| (p.topic_id, p.partition_index))
                    .collect(),
            },
            AnyRecord::ShoalGroupDeletedRecord(r) => Record::GroupDeleted { group: r.group_id },
            AnyRecord::ShoalMirrorCreatedRecord(r) => Record::MirrorCreated {
                name: r.mirror_name,
                config: r.configs.into_iter().map(|c| (c.name, c.value)).collect(),
            },
            AnyRecord::ShoalTopicMirrorChangedRecord(r) => Record::TopicMirrorChanged {
                topic_id: r.topic_id,
                mirror: r.mirror_name,
                removed: r.removed,
            },
            AnyRecord::ShoalMirrorPartitionsChangedRecord(r) => Record::MirrorPartitionsChanged {
                topic_id: r.topic_id,
                partitions: r
                    .partitions
                    .iter()
                    .map(|p| Ok((p.partition_index, partition_mirror_of(p)?)))
                    .collect::<Result<_, String>>()?,
            },
            AnyRecord::ShoalPartitionTruncatedRecord(r) => Record::PartitionTruncated {
                topic_id: r.topic_id,
                partition: r.partition_index,
                offset: r.offset,
                at_ms: time,
            },
            AnyRecord::ShoalScramCredentialRecord(r) => Record::ScramCredentialSet {
                user: r.user,
                mechanism: r.mechanism,
                credential: ScramCredential {
                    salt: r.salt,
                    stored_key: r.stored_key,
                    server_key: r.server_key,
                    iterations: r.iterations,
                },
            },
            AnyRecord::ShoalAclCreatedRecord(r) => Record::AclCreated(AclBinding {
                resource_type: r.resource_type,
                resource_name: r.resource_name,
                pattern_type: r.pattern_type,
                principal: r.principal,
                host: r.host,
                operation: r.operation,
                permission: r.permission_type,
            }),
            AnyRecord::ShoalAclDeletedRecord(r) => Record::AclDeleted(AclBinding {
                resource_type: r.resource_type,
                resource_name: r.resource_name,
                pattern_type: r.pattern_type,
                principal: r.principal,
                host: r.host,
                operation: r.operation,
                permission: r.permission_type,
            }),
            AnyRecord::ShoalScramCredentialDeletedRecord(r) => Record::ScramCredentialDeleted {
                user: r.user,
                mechanism: r.mechanism,
            },
            other => {
                return Err(format!(
                    "record type {} in a log entry",
                    other.record_type()
                ))
            }
        };
        match records.next() {
            None => Ok(record),
            Some(extra) => Err(format!(
                "record type {} after a whole record",
                extra.record_type()
            )),
        }
    }
}

fn partitions_created(topic_id: Uuid, name: &str, from: i32, to: i32) -> Vec<AnyRecord> {
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

/// A run of `DisklessPartitionCreatedRecord`s for consecutive partitions of one topic: a new
/// topic when its settings follow, more partitions for an existing one when they do not.
fn partitions_from_records(
    first: DisklessPartitionCreatedRecord,
    rest: impl Iterator<Item = AnyRecord>,
) -> Result<Record, String> {
    let mut next = first
        .partition_index
        .checked_add(1)
        .ok_or("partition index overflow")?;
    let mut config = None;
    for record in rest {
        match (record, &config) {
            (AnyRecord::DisklessPartitionCreatedRecord(p), None)
                if p.topic_id == first.topic_id
                    && p.name == first.name
                    && p.partition_index == next =>
            {
                next += 1;
            }
            (AnyRecord::ShoalTopicConfigRecord(c), None) if c.topic_id == first.topic_id => {
                config = Some(config_of(&c));
            }
            (AnyRecord::ShoalTopicCompressionRecord(c), Some(known))
                if c.topic_id == first.topic_id
                    && known.compression == TopicCompression::Producer =>
            {
                let compression = compression_of(&c, first.topic_id)?;
                config = Some(TopicConfig {
                    compression,
                    ..*known
                });
            }
            (other, _) => {
                return Err(format!(
                    "record type {} does not continue the partitions of topic {}",
                    other.record_type(),
                    first.topic_id
                ))
            }
        }
    }
    if !(1..=PARTITIONS_PER_TOPIC_MAX).contains(&next) || first.partition_index < 0 {
        return Err(format!(
            "partitions {}..{next} of topic {}",
            first.partition_index, first.topic_id
        ));
    }
    Ok(match config {
        Some(config) if first.partition_index == 0 => Record::TopicCreated {
            id: first.topic_id,
            name: first.name,
            partitions: next,
            config,
        },
        Some(_) => return Err("a new topic's partitions must start at 0".to_string()),
        None => Record::PartitionsAdded {
            topic_id: first.topic_id,
            name: first.name,
            first_new: first.partition_index,
            total_partitions: next,
        },
    })
}

/// A topic's settings: its config record, then its compression when not "producer".
fn topic_config(topic_id: Uuid, config: &TopicConfig) -> Vec<AnyRecord> {
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
    records
}

fn compression_of(
    r: &ShoalTopicCompressionRecord,
    topic: Uuid,
) -> Result<TopicCompression, String> {
    Ok(match r.compression_type {
        1 => TopicCompression::Uncompressed,
        2 => TopicCompression::Gzip,
        3 => TopicCompression::Snappy,
        4 => TopicCompression::Lz4,
        5 => TopicCompression::Zstd,
        other => {
            return Err(format!(
                "compression type {other} of topic {topic} is unknown"
            ))
        }
    })
}

fn config_of(r: &ShoalTopicConfigRecord) -> TopicConfig {
    TopicConfig {
        retention_ms: r.retention_ms,
        retention_bytes: r.retention_bytes,
        log_append_time: r.log_append_time,
        max_message_bytes: r.max_message_bytes,
        compression: TopicCompression::Producer,
    }
}

/// The batches grouped as the seed's record nests them: consecutive batches of one partition
/// in one partition entry, consecutive partitions of one topic in one topic entry, so the
/// order of the batches is kept exactly.
fn committed_topics(batches: &[CommittedBatch], at_ms: i64) -> Vec<DisklessCommittedTopic> {
    let mut topics: Vec<DisklessCommittedTopic> = Vec::new();
    for b in batches {
        let batch = DisklessCommittedBatch {
            magic: MAGIC_V2,
            byte_offset: b.byte_offset as i32,
            byte_size: b.size_bytes as i32,
            assigned_base_offset: b.base_offset,
            assigned_last_offset: b.last_offset,
            log_append_timestamp: at_ms,
            batch_max_timestamp: b.max_timestamp,
            timestamp_type: b.timestamp_type,
            producer_id: b.producer_id,
            producer_epoch: b.producer_epoch,
            base_sequence: b.base_sequence,
            last_sequence: b.last_sequence,
        };
        let same_topic = topics.last().is_some_and(|t| t.topic_id == b.topic_id);
        if !same_topic {
            topics.push(DisklessCommittedTopic {
                topic_id: b.topic_id,
                partitions: Vec::new(),
            });
        }
        let topic = topics.last_mut().expect("pushed above");
        match topic.partitions.last_mut() {
            Some(p) if p.partition_index == b.partition => p.batches.push(batch),
            _ => topic.partitions.push(DisklessCommittedPartition {
                partition_index: b.partition,
                batches: vec![batch],
            }),
        }
    }
    topics
}

fn file_committed(r: DisklessFileCommittedRecord, at_ms: i64) -> Result<Record, String> {
    if r.object_format != OBJECT_FORMAT_WAL || r.file_size < 0 {
        return Err(format!(
            "object {} has format {} and size {}",
            r.object_key, r.object_format, r.file_size
        ));
    }
    let mut batches = Vec::new();
    for topic in &r.topics {
        for partition in &topic.partitions {
            for b in &partition.batches {
                if b.magic != MAGIC_V2 || b.byte_offset < 0 || b.byte_size < 0 {
                    return Err(format!("a batch of object {} is malformed", r.object_key));
                }
                batches.push(CommittedBatch {
                    topic_id: topic.topic_id,
                    partition: partition.partition_index,
                    byte_offset: b.byte_offset as u32,
                    size_bytes: b.byte_size as u32,
                    base_offset: b.assigned_base_offset,
                    last_offset: b.assigned_last_offset,
                    max_timestamp: b.batch_max_timestamp,
                    producer_id: b.producer_id,
                    producer_epoch: b.producer_epoch,
                    base_sequence: b.base_sequence,
                    last_sequence: b.last_sequence,
                    timestamp_type: b.timestamp_type,
                    kind: BatchKind::Plain,
                });
            }
        }
    }
    Ok(Record::FileCommitted {
        object_key: r.object_key,
        file_size: r.file_size as u64,
        uploader_broker_id: r.uploader_broker_id,
        owner_ids: r.owner_ids,
        at_ms,
        batches,
    })
}

fn offsets_committed(group: &str, offsets: &[CommittedOffset]) -> AnyRecord {
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

fn partition_mirror_of(p: &ShoalPartitionMirror) -> Result<PartitionMirror, String> {
    Ok(PartitionMirror {
        state: MirrorState::from_code(p.state)
            .ok_or_else(|| format!("mirror state code {}", p.state))?,
        paused: p.paused,
        prepared: p.prepared,
        last_mirrored_offset: p.last_mirrored_offset,
        failures: p.failures as u32,
        retry_at_ms: (p.retry_at_ms >= 0).then_some(p.retry_at_ms),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One record of each kind, for codec and frame tests.
    pub(crate) fn samples() -> Vec<Record> {
        let id = Uuid::from_u128(7);
        let other = Uuid::from_u128(8);
        let batch = |topic_id, partition, base_offset| CommittedBatch {
            topic_id,
            partition,
            byte_offset: 100,
            size_bytes: 61,
            base_offset,
            last_offset: base_offset + 2,
            max_timestamp: 1_700_000_000_000,
            producer_id: 5,
            producer_epoch: 1,
            base_sequence: 0,
            last_sequence: 2,
            timestamp_type: 0,
            kind: BatchKind::Plain,
        };
        vec![
            Record::TopicCreated {
                id,
                name: "orders".into(),
                partitions: 4,
                config: TopicConfig::default(),
            },
            Record::TopicCreated {
                id: other,
                name: "compressed".into(),
                partitions: 2,
                config: TopicConfig {
                    compression: TopicCompression::Lz4,
                    ..TopicConfig::default()
                },
            },
            Record::FileCommitted {
                object_key: "wal/abc".into(),
                file_size: 4096,
                uploader_broker_id: 0,
                owner_ids: vec![],
                at_ms: 1234,
                batches: vec![
                    batch(id, 0, 0),
                    batch(id, 0, 3),
                    batch(other, 1, 0),
                    batch(id, 2, 0),
                    batch(id, 0, 6),
                ],
            },
            Record::FileCommitted {
                object_key: "wal/transactions".into(),
                file_size: 4096,
                uploader_broker_id: 0,
                owner_ids: vec![],
                at_ms: 1234,
                batches: vec![
                    batch(id, 0, 0),
                    CommittedBatch {
                        kind: BatchKind::Transactional,
                        ..batch(id, 0, 3)
                    },
                    CommittedBatch {
                        kind: BatchKind::CommitMarker,
                        ..batch(id, 0, 6)
                    },
                    CommittedBatch {
                        kind: BatchKind::AbortMarker,
                        ..batch(id, 1, 0)
                    },
                ],
            },
            Record::TransactionChanged(crate::records::Transaction {
                transactional_id: "tx-1".into(),
                producer_id: 9,
                producer_epoch: 3,
                timeout_ms: 60_000,
                status: crate::records::TransactionStatus::PrepareCommit,
                started_ms: 1000,
                updated_ms: 2000,
                partitions: [crate::messages::TopicPartition {
                    topic_id: id,
                    partition: 1,
                }]
                .into(),
                pending_offsets: vec![(
                    "g".into(),
                    CommittedOffset {
                        topic_id: id,
                        partition: 1,
                        offset: 5,
                        leader_epoch: -1,
                        metadata: "m".into(),
                    },
                )],
            }),
            Record::TransactionsExpired {
                transactional_ids: vec!["tx-1".into(), "tx-2".into()],
            },
            Record::FileCommitted {
                object_key: "wal/empty".into(),
                file_size: 0,
                uploader_broker_id: 3,
                owner_ids: vec![1, 2],
                at_ms: 1300,
                batches: vec![],
            },
            Record::RecordsDeleted {
                topic_id: id,
                partition: 1,
                new_log_start_offset: 10,
                at_ms: 1400,
            },
            Record::TopicDeleted { id, at_ms: 1500 },
            Record::ProducerIdAllocated { producer_id: 42 },
            Record::FilesDeleted {
                object_keys: vec!["wal/a".into(), "wal/b".into()],
            },
            Record::PartitionsAdded {
                topic_id: id,
                name: "orders".into(),
                first_new: 4,
                total_partitions: 6,
            },
            Record::ProducersExpired {
                topic_id: id,
                partition: 0,
                producer_ids: vec![5, 6],
            },
            Record::TopicConfigChanged {
                topic_id: id,
                config: TopicConfig {
                    retention_ms: -1,
                    retention_bytes: 1 << 30,
                    log_append_time: true,
                    max_message_bytes: 100,
                    compression: TopicCompression::Zstd,
                },
            },
            Record::OffsetsCommitted {
                group: "g".into(),
                at_ms: 1600,
                offsets: vec![CommittedOffset {
                    topic_id: id,
                    partition: 3,
                    offset: 99,
                    leader_epoch: -1,
                    metadata: "m".into(),
                }],
            },
            Record::GroupOffsetsDeleted {
                group: "g".into(),
                partitions: vec![(id, 3)],
            },
            Record::GroupDeleted { group: "g".into() },
            Record::MirrorCreated {
                name: "m".into(),
                config: vec![("bootstrap.servers".into(), "a:9092".into())],
            },
            Record::TopicMirrorChanged {
                topic_id: id,
                mirror: "m".into(),
                removed: false,
            },
            Record::MirrorPartitionsChanged {
                topic_id: id,
                partitions: vec![(
                    0,
                    PartitionMirror {
                        state: MirrorState::Mirroring,
                        paused: true,
                        last_mirrored_offset: 17,
                        prepared: true,
                        failures: 2,
                        retry_at_ms: Some(99),
                    },
                )],
            },
            Record::PartitionTruncated {
                topic_id: id,
                partition: 0,
                offset: 5,
                at_ms: 1700,
            },
            Record::ScramCredentialSet {
                user: "alice".into(),
                mechanism: 2,
                credential: ScramCredential {
                    salt: vec![1, 2, 3],
                    stored_key: vec![4; 64],
                    server_key: vec![5; 64],
                    iterations: 4096,
                },
            },
            Record::ScramCredentialDeleted {
                user: "alice".into(),
                mechanism: 1,
            },
            Record::AclCreated(AclBinding {
                resource_type: 2,
                resource_name: "orders".into(),
                pattern_type: 4,
                principal: "User:alice".into(),
                host: "*".into(),
                operation: 3,
                permission: 3,
            }),
        ]
    }

    #[test]
    fn every_record_decodes_to_itself() {
        for record in samples() {
            let mut entry = Vec::new();
            record.encode_entry(99, &mut entry);
            assert_eq!(Record::decode_entry(&entry), Ok(record));
        }
    }

    #[test]
    fn a_topic_is_created_by_the_seeds_partition_records_and_its_settings() {
        let mut entry = Vec::new();
        samples()[0].encode_entry(0, &mut entry);
        let (_, records) = shoal_protocol::records::decode_entry(&entry).unwrap();
        let types: Vec<i16> = records.iter().map(AnyRecord::record_type).collect();
        assert_eq!(types, [100, 100, 100, 100, ShoalTopicConfigRecord::TYPE]);
    }

    #[test]
    fn partition_records_that_do_not_continue_each_other_are_refused() {
        let created = |index| {
            AnyRecord::from(DisklessPartitionCreatedRecord {
                topic_id: Uuid::from_u128(1),
                name: "t".into(),
                partition_index: index,
            })
        };
        let mut entry = Vec::new();
        encode_entry(0, &[created(0), created(2)], &mut entry).unwrap();
        assert!(Record::decode_entry(&entry).is_err());
        let mut huge = Vec::new();
        encode_entry(0, &[created(i32::MAX - 1)], &mut huge).unwrap();
        assert!(
            Record::decode_entry(&huge).is_err(),
            "no partition beyond the limit"
        );
    }
}
