//! One entry of the metadata log: the generated records of one change
//! (`protocol/schemas/records/`: KIP-1164's where they say what happened, Shoal's own for the
//! rest), written together at one time and applied together by `CoordinatorState::apply`.
//! A change is described once: the state's decisions are these records, the log and the
//! snapshots store them, and the state applies them as they are. `check` refuses an entry no
//! Shoal writes, so apply can trust what it reads back.

mod check;

use shoal_protocol::records::{self, AnyRecord};

pub use check::MAGIC_V2;
pub(crate) use check::{check_log_entry, compression_of, status_of, OBJECT_FORMAT_WAL};

/// The records of one change and when it was made.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// When it was written, in ms since the epoch: the log-append time of the batches it
    /// commits and the time of the deletions, truncations and offset commits it records.
    pub time_ms: i64,
    pub records: Vec<AnyRecord>,
}

impl Entry {
    pub fn new(time_ms: i64, records: Vec<AnyRecord>) -> Entry {
        debug_assert!(!records.is_empty(), "an entry records something");
        Entry { time_ms, records }
    }

    /// An entry of one record.
    pub fn of(time_ms: i64, record: impl Into<AnyRecord>) -> Entry {
        Entry::new(time_ms, vec![record.into()])
    }

    /// Appends the entry's bytes (its time, then each record with its type and version).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        records::encode_entry(self.time_ms, &self.records, out)
            .expect("generated encoders accept every record");
        debug_assert_eq!(
            Entry::decode(&out[start..]).as_ref(),
            Ok(self),
            "an entry must decode to itself"
        );
    }

    /// The entry in `bytes`; an error says why it is not one this build writes.
    pub fn decode(bytes: &[u8]) -> Result<Entry, String> {
        let (time_ms, records) = records::decode_entry(bytes).map_err(|e| e.to_string())?;
        check_log_entry(&records)?;
        Ok(Entry { time_ms, records })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use shoal_auth::ScramCredential;
    use shoal_mirror::{MirrorState, PartitionMirror};
    use shoal_protocol::records::*;
    use uuid::Uuid;

    use super::*;
    use crate::acl::AclBinding;
    use crate::messages::{BatchKind, CommitBatch, NewObject, TopicPartition};
    use crate::records::*;
    use crate::state::emit;
    use crate::topic_configs::TopicOverrides;

    /// One entry of each kind a decision writes, for codec and frame tests.
    pub(crate) fn samples() -> Vec<Entry> {
        let id = Uuid::from_u128(7);
        let other = Uuid::from_u128(8);
        let batch = |topic_id, partition, base_offset| CommittedBatch {
            batch: CommitBatch {
                partition: TopicPartition {
                    topic_id,
                    partition,
                },
                byte_offset: 100,
                size_bytes: 61,
                offset_count: 3,
                max_timestamp: 1_700_000_000_000,
                producer_id: 5,
                producer_epoch: 1,
                base_sequence: 0,
                kind: BatchKind::Plain,
                kept_base_offset: None,
                joins_transaction: false,
            },
            base_offset,
            last_offset: base_offset + 2,
            last_sequence: 2,
            timestamp_type: 0,
        };
        let object = |key: &str| NewObject::uploaded(key, 4096, 0);
        let lz4 = TopicConfig {
            compression: TopicCompression::Lz4,
            ..TopicConfig::default()
        };
        let mirror = PartitionMirror {
            state: MirrorState::Mirroring,
            paused: true,
            last_mirrored_offset: 17,
            prepared: true,
            failures: 2,
            retry_at_ms: Some(99),
        };
        let transaction = Transaction {
            transactional_id: "tx-1".into(),
            producer_id: 9,
            producer_epoch: 3,
            timeout_ms: 60_000,
            status: TransactionStatus::PrepareCommit,
            started_ms: 1000,
            updated_ms: 2000,
            partitions: [TopicPartition {
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
            ended_as: Some((8, 41)),
            next_producer_id: Some(10),
        };
        let acl = AclBinding {
            resource_type: 2,
            resource_name: "orders".into(),
            pattern_type: 4,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: 3,
            permission: 3,
        };
        // As an older Shoal created a topic: its whole config in fixed fields.
        let mut compressed = emit::partitions_created(other, "compressed", 0, 2);
        compressed.extend(emit::older::whole_topic_config(other, &lz4));
        let own: TopicOverrides = [("retention.ms", "-1"), ("segment.ms", "8")]
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .into();
        let kinds = |kind, b: CommittedBatch| CommittedBatch {
            batch: CommitBatch { kind, ..b.batch },
            ..b
        };
        vec![
            Entry::new(
                99,
                emit::topic_created(id, "orders", 4, &TopicOverrides::new()),
            ),
            Entry::new(99, compressed),
            Entry::new(
                1234,
                emit::file_committed(
                    &object("wal/abc"),
                    &[
                        batch(id, 0, 0),
                        batch(id, 0, 3),
                        batch(other, 1, 0),
                        batch(id, 2, 0),
                        batch(id, 0, 6),
                    ],
                    1234,
                ),
            ),
            Entry::new(
                1234,
                emit::file_committed(
                    &object("wal/transactions"),
                    &[
                        batch(id, 0, 0),
                        kinds(BatchKind::Transactional, batch(id, 0, 3)),
                        kinds(BatchKind::CommitMarker, batch(id, 0, 6)),
                        kinds(BatchKind::AbortMarker, batch(id, 1, 0)),
                    ],
                    1234,
                ),
            ),
            Entry::of(99, emit::transaction_changed(&transaction)),
            Entry::of(
                99,
                ShoalTransactionsExpiredRecord {
                    transactional_ids: vec!["tx-1".into(), "tx-2".into()],
                },
            ),
            Entry::new(
                1300,
                emit::file_committed(
                    &NewObject {
                        key: "wal/empty".into(),
                        size_bytes: 0,
                        uploader_broker_id: 3,
                        owner_ids: vec![1, 2],
                    },
                    &[],
                    1300,
                ),
            ),
            Entry::of(
                1400,
                DisklessRecordsDeletedRecord {
                    topic_id: id,
                    partition_index: 1,
                    new_log_start_offset: 10,
                },
            ),
            Entry::of(1500, DisklessTopicDeletedRecord { topic_id: id }),
            Entry::of(99, ShoalProducerIdAllocatedRecord { producer_id: 42 }),
            Entry::of(
                99,
                ShoalFilesDeletedRecord {
                    object_keys: vec!["wal/a".into(), "wal/b".into()],
                },
            ),
            Entry::new(99, emit::partitions_created(id, "orders", 4, 6)),
            Entry::of(
                99,
                ShoalProducersExpiredRecord {
                    topic_id: id,
                    partition_index: 0,
                    producer_ids: vec![5, 6],
                },
            ),
            Entry::of(99, emit::topic_settings(id, &own)),
            Entry::new(
                99,
                emit::older::whole_topic_config(
                    id,
                    &TopicConfig {
                        retention_ms: -1,
                        retention_bytes: 1 << 30,
                        log_append_time: true,
                        max_message_bytes: 100,
                        timestamp_before_max_ms: i64::MAX,
                        timestamp_after_max_ms: 3_600_000,
                        compression: TopicCompression::Zstd,
                        cleanup: crate::records::CleanupPolicy::CompactDelete,
                        compaction: crate::records::CompactionConfig {
                            delete_retention_ms: 5,
                            min_compaction_lag_ms: 6,
                            max_compaction_lag_ms: 7,
                            min_cleanable_dirty_ratio_ppm: 10_000,
                            segment_ms: 8,
                            segment_bytes: 9,
                        },
                        schema_validation: Default::default(),
                        iceberg_enabled: true,
                        dead_letters_enabled: false,
                    },
                ),
            ),
            Entry::of(
                99,
                ShoalBatchesRewrittenRecord {
                    topic_id: id,
                    partition_index: 1,
                    object_key: "wal/rw-1".into(),
                    file_size: 300,
                    from_offset: 10,
                    to_offset: 20,
                    cleaned_offset: 20,
                    batches: vec![ShoalRewrittenBatch {
                        byte_offset: 0,
                        byte_size: 300,
                        base_offset: 12,
                        last_offset: 19,
                        batch_max_timestamp: 5,
                        log_append_timestamp: 6,
                    }],
                },
            ),
            Entry::of(
                1600,
                emit::offsets_committed(
                    "g",
                    &[CommittedOffset {
                        topic_id: id,
                        partition: 3,
                        offset: 99,
                        leader_epoch: -1,
                        metadata: "m".into(),
                    }],
                ),
            ),
            Entry::of(
                99,
                ShoalGroupOffsetsDeletedRecord {
                    group_id: "g".into(),
                    partitions: vec![ShoalGroupPartition {
                        topic_id: id,
                        partition_index: 3,
                    }],
                },
            ),
            Entry::of(
                99,
                ShoalGroupDeletedRecord {
                    group_id: "g".into(),
                },
            ),
            Entry::new(
                99,
                vec![
                    ShoalConsumerGroupRecord {
                        group_id: "cg".into(),
                        change: 7,
                        deleted: false,
                        group_epoch: 4,
                        assignment_epoch: 4,
                        subscribed_topics: vec![ShoalConsumerGroupTopic {
                            topic_id: id,
                            partitions: 4,
                        }],
                    }
                    .into(),
                    ShoalConsumerMemberRecord {
                        member_id: "m1".into(),
                        instance_id: Some("i1".into()),
                        client_id: "c".into(),
                        subscribed_topic_names: vec!["orders".into()],
                        subscribed_topic_regex: Some("ord.*".into()),
                        state: 1,
                        member_epoch: 3,
                        previous_member_epoch: 2,
                        assigned: vec![ShoalConsumerMemberPartitions {
                            topic_id: id,
                            partitions: vec![0, 1],
                        }],
                        revoking: vec![ShoalConsumerMemberPartitions {
                            topic_id: id,
                            partitions: vec![2],
                        }],
                        ..Default::default()
                    }
                    .into(),
                    ShoalConsumerMemberRecord {
                        member_id: "m2".into(),
                        removed: true,
                        ..Default::default()
                    }
                    .into(),
                ],
            ),
            Entry::of(
                99,
                ShoalConsumerGroupRecord {
                    group_id: "cg".into(),
                    deleted: true,
                    ..Default::default()
                },
            ),
            Entry::of(
                99,
                emit::group_config(
                    "cg",
                    &[("group.consumer.session.timeout.ms".into(), "50000".into())],
                ),
            ),
            Entry::of(
                99,
                crate::broker_configs::broker_config_record(
                    -1,
                    &[("max.connections".into(), "100".into())],
                ),
            ),
            Entry::of(
                99,
                emit::mirror_created("m", &[("bootstrap.servers".into(), "a:9092".into())]),
            ),
            Entry::of(99, emit::topic_mirror_changed(id, "m", false)),
            Entry::of(99, emit::mirror_partitions(id, &[(0, mirror)])),
            Entry::of(
                1700,
                ShoalPartitionTruncatedRecord {
                    topic_id: id,
                    partition_index: 0,
                    offset: 5,
                },
            ),
            Entry::of(
                99,
                emit::scram_credential_set(
                    "alice",
                    2,
                    &ScramCredential {
                        salt: vec![1, 2, 3],
                        stored_key: vec![4; 64],
                        server_key: vec![5; 64],
                        iterations: 4096,
                    },
                ),
            ),
            Entry::of(
                99,
                ShoalScramCredentialDeletedRecord {
                    user: "alice".into(),
                    mechanism: 1,
                },
            ),
            Entry::of(99, emit::acl_created(&acl)),
            Entry::of(99, emit::acl_deleted(&acl)),
            Entry::of(
                99,
                crate::client_quotas::quota_record(
                    &vec![
                        ("user".into(), None),
                        ("client-id".into(), Some("app".into())),
                    ],
                    "producer_byte_rate",
                    Some(1_048_576.0),
                ),
            ),
        ]
    }

    #[test]
    fn every_entry_decodes_to_itself() {
        for entry in samples() {
            let mut bytes = Vec::new();
            entry.encode(&mut bytes);
            assert_eq!(Entry::decode(&bytes), Ok(entry));
        }
    }

    #[test]
    fn a_topic_is_created_by_its_partition_records_and_its_own_configs() {
        let types: Vec<i16> = samples()[0]
            .records
            .iter()
            .map(AnyRecord::record_type)
            .collect();
        assert_eq!(types, [100, 100, 100, 100, ShoalTopicOverridesRecord::TYPE]);
    }

    #[test]
    fn broker_configs_from_the_log_are_checked() {
        use crate::broker_configs::broker_config_record;
        let config = |name: &str| (name.to_string(), "1".to_string());
        let bad = [
            broker_config_record(-2, &[config("max.connections")]),
            broker_config_record(0, &[config("")]),
            broker_config_record(0, &[config("a"), config("b"), config("a")]),
        ];
        for record in bad {
            let mut bytes = Vec::new();
            records::encode_entry(0, &[record.clone().into()], &mut bytes).unwrap();
            assert!(Entry::decode(&bytes).is_err(), "{record:?} was read");
        }
        let good = broker_config_record(3, &[config("a"), config("b")]);
        let mut bytes = Vec::new();
        records::encode_entry(0, &[good.into()], &mut bytes).unwrap();
        assert!(Entry::decode(&bytes).is_ok());
    }

    #[test]
    fn client_quotas_from_the_log_are_checked() {
        use crate::client_quotas::quota_record;
        let user = vec![("user".to_string(), Some("u".to_string()))];
        let bad = [
            quota_record(&user, "producer_byte_rate", Some(f64::NAN)),
            quota_record(&user, "producer_byte_rate", Some(-5.0)),
            quota_record(&user, "bytes_per_fortnight", Some(5.0)),
            quota_record(&vec![("ip".into(), None)], "producer_byte_rate", Some(5.0)),
            quota_record(
                &vec![("client-id".into(), None), ("user".into(), None)],
                "producer_byte_rate",
                Some(5.0),
            ),
        ];
        for record in bad {
            let mut bytes = Vec::new();
            records::encode_entry(0, &[record.clone().into()], &mut bytes).unwrap();
            assert!(Entry::decode(&bytes).is_err(), "{record:?} was read");
        }
    }

    #[test]
    fn entries_no_decision_writes_are_refused() {
        let created = |index| {
            AnyRecord::from(DisklessPartitionCreatedRecord {
                topic_id: Uuid::from_u128(1),
                name: "t".into(),
                partition_index: index,
            })
        };
        let refused = |records: Vec<AnyRecord>| {
            let mut bytes = Vec::new();
            records::encode_entry(0, &records, &mut bytes).unwrap();
            Entry::decode(&bytes).is_err()
        };
        assert!(
            refused(vec![created(0), created(2)]),
            "partitions that skip one"
        );
        assert!(
            refused(vec![created(i32::MAX - 1)]),
            "no partition beyond the limit"
        );
        assert!(refused(vec![]), "an empty entry");
        let settings = vec![emit::topic_settings(
            Uuid::from_u128(1),
            &TopicOverrides::new(),
        )];
        let own = |names: &[&str]| {
            let configs = names.iter().map(|n| ShoalTopicOwnConfig {
                name: n.to_string(),
                value: "1".to_string(),
            });
            let record = ShoalTopicOverridesRecord {
                topic_id: Uuid::from_u128(1),
                configs: configs.collect(),
            };
            vec![AnyRecord::from(record)]
        };
        let mut after_whole =
            emit::older::whole_topic_config(Uuid::from_u128(1), &TopicConfig::default());
        after_whole.extend(settings.clone());
        assert!(
            refused(after_whole),
            "own configs are not written after a whole config"
        );
        assert!(!refused(own(&["retention.ms", "a.newer.config"])));
        assert!(
            refused(own(&["retention.ms", "retention.ms"])),
            "a config named twice"
        );
        assert!(refused(own(&[""])), "a config without a name");
        let mut late = vec![created(1)];
        late.extend(settings.clone());
        assert!(refused(late), "a new topic's partitions start at 0");
        let mut twice = settings.clone();
        twice.extend(settings);
        assert!(refused(twice), "nothing after a whole change");
        let header = ShoalSnapshotHeaderRecord {
            next_file_id: 0,
            next_producer_id: 0,
        };
        assert!(
            refused(vec![header.into()]),
            "a snapshot's own record in the log"
        );
        let unknown_state = ShoalTransactionRecord {
            state: 9,
            ..Default::default()
        };
        assert!(
            refused(vec![unknown_state.into()]),
            "an unknown transaction state"
        );
        let group = |deleted| {
            AnyRecord::from(ShoalConsumerGroupRecord {
                group_id: "cg".into(),
                deleted,
                ..Default::default()
            })
        };
        let member = |state| {
            AnyRecord::from(ShoalConsumerMemberRecord {
                member_id: "m".into(),
                state,
                ..Default::default()
            })
        };
        assert!(
            !refused(vec![group(false), member(2)]),
            "a group and a member"
        );
        assert!(
            refused(vec![group(false), member(3)]),
            "an unknown member state"
        );
        assert!(
            refused(vec![group(true), member(0)]),
            "members of a deleted group"
        );
        assert!(refused(vec![member(0)]), "a member without its group");
        let file = |base, last| {
            AnyRecord::from(emit::one_batch_file(
                "wal/x",
                Uuid::from_u128(1),
                base,
                last,
            ))
        };
        assert!(!refused(vec![file(5, 9)]), "a file's batch");
        assert!(
            refused(vec![file(9, 5)]),
            "a batch whose offsets run backwards"
        );
        assert!(
            refused(vec![
                group(false),
                ShoalSnapshotHeaderRecord::default().into()
            ]),
            "another record in a group's entry"
        );
    }
}
