//! The values the state machine keeps and decides with: committed batches and offsets, topic
//! settings, transactions. The log itself holds generated records (`entry`); these are what
//! the state reads them into and writes them from.

use std::collections::BTreeSet;

use uuid::Uuid;

use crate::messages::{CommitBatch, TopicPartition};

/// A bound on partitions per topic, so one request cannot allocate without limit.
pub const PARTITIONS_PER_TOPIC_MAX: i32 = 10_000;

/// A batch as committed: what the shard described and what the coordinator gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommittedBatch {
    /// The batch as the shard described it.
    pub batch: CommitBatch,
    /// The offsets it was given (or, mirrored, kept).
    pub base_offset: i64,
    pub last_offset: i64,
    /// An idempotent producer's last sequence in it; -1 for others.
    pub last_sequence: i32,
    /// 0: CreateTime, 1: LogAppendTime (the topic's setting when it was appended).
    pub timestamp_type: i8,
}

/// Per-topic settings Shoal honours (Kafka's names in the comments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicConfig {
    /// `retention.ms`: batches whose newest record is older are deleted; -1 keeps them.
    pub retention_ms: i64,
    /// `retention.bytes`: oldest batches are deleted while a partition holds more; -1: no limit.
    pub retention_bytes: i64,
    /// `message.timestamp.type=LogAppendTime`: the broker stamps batches as it appends them.
    pub log_append_time: bool,
    /// `max.message.bytes`: the largest batch a producer may send.
    pub max_message_bytes: i32,
    /// `message.timestamp.before.max.ms` / `after.max.ms`: how far a CreateTime record's
    /// timestamp may lie behind or ahead of the broker's clock.
    pub timestamp_before_max_ms: i64,
    pub timestamp_after_max_ms: i64,
    /// `compression.type`: the codec batches are stored with.
    pub compression: TopicCompression,
    /// `cleanup.policy`: retention deletes old batches, compaction old values of a key, or both.
    pub cleanup: CleanupPolicy,
    /// When compaction may and must run, and what it keeps.
    pub compaction: CompactionConfig,
    /// `confluent.{key,value}.schema.validation` and their subject name strategies: records
    /// must carry the id of a schema registered under their subject.
    pub schema_validation: SchemaValidation,
    /// `shoal.iceberg.enabled`: the broker's table writer keeps an Iceberg table of the
    /// topic's committed records.
    pub iceberg_enabled: bool,
    /// `errors.deadletterqueue.group.enable`: share groups may use the topic as their
    /// dead-letter queue (KIP-1191); a topic's owner allows it, not a group's.
    pub dead_letters_enabled: bool,
}

/// Which of a record's parts must name a registered schema, and under which subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SchemaValidation {
    pub key: bool,
    pub value: bool,
    pub key_strategy: SubjectNameStrategy,
    pub value_strategy: SubjectNameStrategy,
    /// The checked parts' data must also decode with the schema their id names.
    pub decode: bool,
}

impl SchemaValidation {
    pub fn any(&self) -> bool {
        self.key || self.value
    }
}

/// How a record's subject is named (Confluent's `*.subject.name.strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SubjectNameStrategy {
    /// `<topic>-key` / `<topic>-value`.
    #[default]
    Topic,
    /// The record's schema's full name.
    Record,
    /// `<topic>-<record's full name>`.
    TopicRecord,
}

impl SubjectNameStrategy {
    const NAMES: [(&'static str, SubjectNameStrategy); 3] = [
        ("TopicNameStrategy", SubjectNameStrategy::Topic),
        ("RecordNameStrategy", SubjectNameStrategy::Record),
        ("TopicRecordNameStrategy", SubjectNameStrategy::TopicRecord),
    ];
    /// Confluent's configs name the serializers' classes.
    const PACKAGE: &'static str = "io.confluent.kafka.serializers.subject.";

    /// By class name, with or without its package.
    pub fn parse(name: &str) -> Option<SubjectNameStrategy> {
        let short = name
            .trim()
            .strip_prefix(Self::PACKAGE)
            .unwrap_or(name.trim());
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == short)
            .map(|(_, s)| *s)
    }

    pub fn class_name(self) -> String {
        let short = Self::NAMES
            .iter()
            .find(|(_, s)| *s == self)
            .map(|(n, _)| *n)
            .expect("every strategy is named");
        format!("{}{short}", Self::PACKAGE)
    }
}

/// `cleanup.policy`, a list of `delete` and `compact`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CleanupPolicy {
    #[default]
    Delete,
    Compact,
    CompactDelete,
}

impl CleanupPolicy {
    pub fn from_flags(compact: bool, delete: bool) -> Option<CleanupPolicy> {
        match (compact, delete) {
            (false, true) => Some(CleanupPolicy::Delete),
            (true, false) => Some(CleanupPolicy::Compact),
            (true, true) => Some(CleanupPolicy::CompactDelete),
            (false, false) => None,
        }
    }

    pub fn compacts(self) -> bool {
        self != CleanupPolicy::Delete
    }

    /// retention.ms and retention.bytes apply.
    pub fn deletes(self) -> bool {
        self != CleanupPolicy::Compact
    }

    /// As Kafka lists it.
    pub fn name(self) -> &'static str {
        match self {
            CleanupPolicy::Delete => "delete",
            CleanupPolicy::Compact => "compact",
            CleanupPolicy::CompactDelete => "compact,delete",
        }
    }
}

/// Kafka's compaction settings, with its names in the comments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionConfig {
    /// `delete.retention.ms`: tombstones are kept at least this long after they were written.
    pub delete_retention_ms: i64,
    /// `min.compaction.lag.ms`: batches appended more recently are not compacted.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms`: a dirty batch older than this is compacted whatever the ratio.
    pub max_compaction_lag_ms: i64,
    /// `min.cleanable.dirty.ratio`, in parts per million of the cleanable bytes.
    pub min_cleanable_dirty_ratio_ppm: i32,
    /// `segment.ms` and `segment.bytes`: the newest batches, within both, are what Kafka would
    /// still hold in its active segment, and are not yet cleanable.
    pub segment_ms: i64,
    pub segment_bytes: i64,
}

impl Default for CompactionConfig {
    /// Kafka's defaults: one day, none, no maximum, 0.5, seven days, 1 GiB.
    fn default() -> Self {
        CompactionConfig {
            delete_retention_ms: 24 * 3600 * 1000,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            min_cleanable_dirty_ratio_ppm: 500_000,
            segment_ms: 7 * 24 * 3600 * 1000,
            segment_bytes: 1 << 30,
        }
    }
}

/// `compression.type`: `Producer` keeps each batch as its producer compressed it; any other
/// value has the broker recompress batches that use another codec, as Kafka does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TopicCompression {
    #[default]
    Producer,
    Uncompressed,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl TopicCompression {
    /// Kafka's names, as `compression.type` takes and shows them.
    pub const NAMES: [(&'static str, TopicCompression); 6] = [
        ("producer", TopicCompression::Producer),
        ("uncompressed", TopicCompression::Uncompressed),
        ("gzip", TopicCompression::Gzip),
        ("snappy", TopicCompression::Snappy),
        ("lz4", TopicCompression::Lz4),
        ("zstd", TopicCompression::Zstd),
    ];

    pub fn from_name(name: &str) -> Option<TopicCompression> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, c)| *c)
    }

    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, c)| *c == self)
            .map_or("producer", |(n, _)| n)
    }
}

impl Default for TopicConfig {
    /// Kafka's defaults: seven days, no size limit, CreateTime, 1 MiB + 12 bytes, any
    /// timestamp in the past and none over an hour ahead.
    fn default() -> Self {
        TopicConfig {
            retention_ms: 7 * 24 * 3600 * 1000,
            retention_bytes: -1,
            log_append_time: false,
            max_message_bytes: 1_048_588,
            timestamp_before_max_ms: i64::MAX,
            timestamp_after_max_ms: 3_600_000,
            compression: TopicCompression::Producer,
            cleanup: CleanupPolicy::Delete,
            compaction: CompactionConfig::default(),
            schema_validation: SchemaValidation::default(),
            iceberg_enabled: false,
            dead_letters_enabled: false,
        }
    }
}

/// One consumer group's committed position in one partition (OffsetCommit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    pub topic_id: Uuid,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
}

/// Where a transactional id's transaction stands (Kafka's TransactionState).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionStatus {
    Empty,
    Ongoing,
    PrepareCommit,
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
}

/// One transactional id and its current transaction, recorded whole at every change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transaction {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub timeout_ms: i32,
    pub status: TransactionStatus,
    /// When the open transaction began; -1 when none is open.
    pub started_ms: i64,
    pub updated_ms: i64,
    pub partitions: BTreeSet<TopicPartition>,
    /// TxnOffsetCommit's offsets by group, committed to the groups with the transaction.
    pub pending_offsets: Vec<(String, CommittedOffset)>,
    /// Transactions V2 (KIP-890) bump the epoch when the producer ends a transaction: the
    /// producer id and epoch it ended its last one with, so an EndTxn retried with them (its
    /// answer lost) is answered as that end. None after a fence or a new transaction.
    pub ended_as: Option<(i64, i16)>,
    /// While an end whose bump exhausts the epochs is under way: the producer id the
    /// transactional id moves to, at epoch 0, once the markers are written.
    pub next_producer_id: Option<i64>,
}
