//! What the coordinator's metadata log holds, as the state machine sees it. Each `Record`
//! carries results (assigned offsets, append times), never requests, so replaying them
//! rebuilds exactly the state that answered the clients. On disk each is one entry of the
//! generated metadata records (`record_codec`), framed by `frames`.

use shoal_mirror::PartitionMirror;

use std::collections::BTreeSet;

use crate::acl::AclBinding;
use crate::messages::TopicPartition;
use shoal_auth::ScramCredential;
use uuid::Uuid;

/// What a batch is to transactions: a marker's outcome is read from its control record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BatchKind {
    /// Not part of a transaction (idempotent or not).
    #[default]
    Plain,
    /// Records of an open transaction: hidden from read_committed consumers until its marker.
    Transactional,
    CommitMarker,
    AbortMarker,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommittedBatch {
    pub topic_id: Uuid,
    pub partition: i32,
    pub byte_offset: u32,
    pub size_bytes: u32,
    pub base_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub last_sequence: i32,
    /// 0: CreateTime, 1: LogAppendTime (the topic's setting when it was appended).
    pub timestamp_type: i8,
    pub kind: BatchKind,
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
    /// `compression.type`: the codec batches are stored with.
    pub compression: TopicCompression,
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
    /// Kafka's defaults: seven days, no size limit, CreateTime, 1 MiB + 12 bytes.
    fn default() -> Self {
        TopicConfig {
            retention_ms: 7 * 24 * 3600 * 1000,
            retention_bytes: -1,
            log_append_time: false,
            max_message_bytes: 1_048_588,
            compression: TopicCompression::Producer,
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
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// A topic and its settings.
    TopicCreated {
        id: Uuid,
        name: String,
        partitions: i32,
        config: TopicConfig,
    },
    TopicDeleted {
        id: Uuid,
        at_ms: i64,
    },
    /// A WAL object and the batches of it that were accepted (possibly none), committed at
    /// `at_ms`, which is also the batches' log-append time. It gets the next file id.
    FileCommitted {
        object_key: String,
        file_size: u64,
        uploader_broker_id: i32,
        owner_ids: Vec<i32>,
        at_ms: i64,
        batches: Vec<CommittedBatch>,
    },
    /// The log start offset of a partition moved forward (DeleteRecords or retention).
    RecordsDeleted {
        topic_id: Uuid,
        partition: i32,
        new_log_start_offset: i64,
        at_ms: i64,
    },
    ProducerIdAllocated {
        producer_id: i64,
    },
    /// Garbage collection removed these objects from the store.
    FilesDeleted {
        object_keys: Vec<String>,
    },
    /// An existing topic grew from `first_new` partitions to `total_partitions`.
    PartitionsAdded {
        topic_id: Uuid,
        name: String,
        first_new: i32,
        total_partitions: i32,
    },
    /// Producers idle past the expiration time are forgotten in one partition.
    ProducersExpired {
        topic_id: Uuid,
        partition: i32,
        producer_ids: Vec<i64>,
    },
    /// AlterConfigs replaced a topic's settings.
    TopicConfigChanged {
        topic_id: Uuid,
        config: TopicConfig,
    },
    /// A consumer group committed offsets at `at_ms`.
    OffsetsCommitted {
        group: String,
        at_ms: i64,
        offsets: Vec<CommittedOffset>,
    },
    /// OffsetDelete: the committed offsets of the listed partitions are removed (an empty
    /// list removes nothing).
    GroupOffsetsDeleted {
        group: String,
        partitions: Vec<(Uuid, i32)>,
    },
    /// DeleteGroups or offset expiry: every committed offset of the group is removed.
    GroupDeleted {
        group: String,
    },
    /// CreateMirror: a mirror and its settings (name/value pairs).
    MirrorCreated {
        name: String,
        config: Vec<(String, String)>,
    },
    /// A topic joined a mirror, or left it (`removed`: its `mirror.name` has the `.removed`
    /// suffix, kept for failback).
    TopicMirrorChanged {
        topic_id: Uuid,
        mirror: String,
        removed: bool,
    },
    /// Mirror state of some of a topic's partitions.
    MirrorPartitionsChanged {
        topic_id: Uuid,
        partitions: Vec<(i32, PartitionMirror)>,
    },
    /// Local records from `offset` on were dropped (mirror preparation, source truncation).
    PartitionTruncated {
        topic_id: Uuid,
        partition: i32,
        offset: i64,
        at_ms: i64,
    },
    /// AlterUserScramCredentials set a user's credential for one mechanism (Kafka's code:
    /// 1 SCRAM-SHA-256, 2 SCRAM-SHA-512).
    ScramCredentialSet {
        user: String,
        mechanism: i8,
        credential: ScramCredential,
    },
    ScramCredentialDeleted {
        user: String,
        mechanism: i8,
    },
    /// CreateAcls added a binding.
    AclCreated(AclBinding),
    /// DeleteAcls removed a binding.
    AclDeleted(AclBinding),
    /// A transactional id's state changed (InitProducerId, AddPartitionsToTxn, EndTxn, ...).
    TransactionChanged(Transaction),
    /// Transactional ids idle past `transactional.id.expiration.ms` are forgotten.
    TransactionsExpired {
        transactional_ids: Vec<String>,
    },
}
