//! The values coordinator commands carry and answer with. Every type is `Send`: commands
//! cross executors over lock-free queues.

use std::sync::Arc;

use uuid::Uuid;

use crate::ErrorKind;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    pub topic_id: Uuid,
    pub partition: i32,
}

impl TopicPartition {
    /// The partitions `indexes` of topic `topic_id`, as the wire lists them: a topic and its
    /// partition numbers.
    pub fn each(topic_id: Uuid, indexes: &[i32]) -> impl Iterator<Item = TopicPartition> + '_ {
        indexes.iter().map(move |&partition| TopicPartition {
            topic_id,
            partition,
        })
    }
}

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

/// One batch of a WAL object, described by the header fields the coordinator needs. Produced
/// batches get offsets from the coordinator; mirrored ones keep their source's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitBatch {
    pub partition: TopicPartition,
    pub byte_offset: u32,
    pub size_bytes: u32,
    /// lastOffsetDelta + 1: how many offsets the batch occupies.
    pub offset_count: u32,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub kind: BatchKind,
    /// A mirrored batch's base offset on its source, which it keeps; None for a produced
    /// batch, whose offsets the coordinator assigns.
    pub kept_base_offset: Option<i64>,
    /// A transactional batch of Produce v12+ (transactions V2, KIP-890): it adds its
    /// partition to its producer's transaction, where AddPartitionsToTxn must have before.
    pub joins_transaction: bool,
}

impl CommitBatch {
    /// The offsets a mirrored batch keeps: (base, last); None if it keeps none or occupies none.
    pub fn kept_offsets(&self) -> Option<(i64, i64)> {
        let base = self.kept_base_offset?;
        let last = base.checked_add(self.offset_count.checked_sub(1)? as i64)?;
        Some((base, last))
    }
}

/// An aborted transaction in one partition: read_committed consumers skip its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTransaction {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The offset of its abort marker.
    pub last_offset: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitBatchResult {
    pub error: Option<ErrorKind>,
    pub base_offset: i64,
    pub log_append_time_ms: i64,
    pub log_start_offset: i64,
    /// An idempotent retry of a batch already committed: `base_offset` is the original.
    pub is_duplicate: bool,
}

impl CommitBatchResult {
    /// Appended at `base_offset`, at `log_append_time_ms`.
    pub fn appended(base_offset: i64, log_append_time_ms: i64, log_start_offset: i64) -> Self {
        CommitBatchResult {
            error: None,
            base_offset,
            log_append_time_ms,
            log_start_offset,
            is_duplicate: false,
        }
    }

    pub fn rejected(error: ErrorKind) -> Self {
        CommitBatchResult {
            error: Some(error),
            base_offset: -1,
            log_append_time_ms: -1,
            log_start_offset: -1,
            is_duplicate: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FindBatchesRequest {
    pub partition: TopicPartition,
    pub offset: i64,
    pub max_partition_bytes: u32,
    /// At most this many batches for the partition (DisklessFindBatches' per-partition cap).
    pub max_batches: u32,
    /// Only batches below the last stable offset, with the aborted transactions among them.
    pub read_committed: bool,
}

/// Where one committed batch lives and which offsets it was assigned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchCoordinate {
    pub object_key: Arc<str>,
    pub byte_offset: u32,
    pub size_bytes: u32,
    pub base_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    pub log_append_time_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindBatchesResult {
    pub error: Option<ErrorKind>,
    pub log_start_offset: i64,
    pub high_watermark: i64,
    /// The first offset of the oldest open transaction, or the high watermark.
    pub last_stable_offset: i64,
    pub batches: Vec<BatchCoordinate>,
    /// For read_committed: aborted transactions with records among `batches`.
    pub aborted: Vec<AbortedTransaction>,
}

/// Offset lookups use Kafka's special timestamps: -1 latest, -2 earliest, -3 max timestamp,
/// -4 earliest local, -5 latest tiered; any other value is a timestamp in ms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListOffsetsResult {
    pub error: Option<ErrorKind>,
    pub offset: i64,
    pub timestamp: i64,
}

impl ListOffsetsResult {
    pub fn failed(error: ErrorKind) -> Self {
        ListOffsetsResult {
            error: Some(error),
            offset: -1,
            timestamp: -1,
        }
    }
}

/// One partition's offset in an OffsetCommit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitEntry {
    pub partition: TopicPartition,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
}

/// Which broker coordinates a consumer group, as the log last recorded it: the one whose
/// offset writes count. A broker's process draws its incarnation at start, so a restarted
/// broker never holds its previous process's claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupClaim {
    pub node_id: i32,
    pub incarnation: i64,
    /// One more than the group's previous claim.
    pub epoch: i64,
}

/// A committed offset as OffsetFetch returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredOffset {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
}

/// How far a group's committed offsets trail the partitions' high watermarks, over the
/// partitions it committed that still exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupLag {
    pub group: String,
    pub partitions: u32,
    /// Records, summed over those partitions.
    pub total: i64,
    /// Records, on the partition that trails most.
    pub max: i64,
}

/// An idempotent producer's state in one partition (DescribeProducers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerSummary {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub last_sequence: i32,
    pub last_timestamp_ms: i64,
    /// The first offset of its transaction open in this partition, or -1.
    pub current_txn_start_offset: i64,
}

/// A source topic to mirror: its name, partition count and id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirroredTopic {
    pub name: String,
    pub partitions: i32,
    pub source_topic_id: Uuid,
}

/// What a fetcher reports about one mirrored partition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MirrorEvent {
    BeginPreparing,
    /// Truncated to the source's last mirrored offset: fetching starts.
    Prepared,
    Fetched,
    /// `jitter` in [0, 1) spreads the retry over the backoff window.
    Failed {
        jitter: f64,
    },
    RetryIfDue,
}

/// A mirrored partition's state and local offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirroredPartition {
    pub partition: TopicPartition,
    pub mirror: shoal_mirror::PartitionMirror,
    pub high_watermark: i64,
    pub log_start_offset: i64,
}

pub const LATEST_TIMESTAMP: i64 = -1;
pub const EARLIEST_TIMESTAMP: i64 = -2;
pub const MAX_TIMESTAMP: i64 = -3;
pub const EARLIEST_LOCAL_TIMESTAMP: i64 = -4;
pub const LATEST_TIERED_TIMESTAMP: i64 = -5;
/// KIP-1023 (ListOffsets v11): the earliest offset waiting to be uploaded to tiered storage.
pub const EARLIEST_PENDING_UPLOAD_TIMESTAMP: i64 = -6;

#[derive(Debug, Clone)]
pub struct MirrorDescription {
    pub config: shoal_mirror::MirrorConfig,
    pub topics: Vec<(String, Vec<MirroredPartition>)>,
}

/// A WAL object as its commit names it: the fields of KIP-1164's FileCommitted record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewObject {
    pub key: String,
    pub size_bytes: u64,
    /// The broker that uploaded it.
    pub uploader_broker_id: i32,
    /// Diskless coordinators that share its ownership (none on a single node).
    pub owner_ids: Vec<i32>,
}

impl NewObject {
    /// An object a broker uploaded for the coordinator beside it.
    pub fn uploaded(key: impl Into<String>, size_bytes: u64, uploader_broker_id: i32) -> Self {
        NewObject {
            key: key.into(),
            size_bytes,
            uploader_broker_id,
            owner_ids: Vec::new(),
        }
    }
}

/// Objects a rewrite (merging or compaction) stores are named with this prefix, under the
/// WAL prefix so the orphan scan sees them too.
pub const REWRITTEN_OBJECT_PREFIX: &str = "wal/rw-";

/// Whether `key` names an object a rewrite stored (rather than a WAL object of produce).
pub fn is_rewritten_object(key: &str) -> bool {
    key.starts_with(REWRITTEN_OBJECT_PREFIX)
}

/// The shard that owns `tp` among `shard_count` shards. A topic's partitions go round-robin
/// from a starting shard derived from the topic id, so one topic spreads across all shards.
pub fn owner_shard(tp: &TopicPartition, shard_count: usize) -> usize {
    assert!(shard_count > 0, "at least one shard");
    let (hi, lo) = tp.topic_id.as_u64_pair();
    let start = (hi ^ lo) % shard_count as u64;
    ((start + tp.partition.max(0) as u64) % shard_count as u64) as usize
}

/// What a rewrite of one partition does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewriteKind {
    /// Copies batches out of WAL objects into larger ones, byte for byte.
    Merge,
    /// Keeps only each key's latest record (cleanup.policy=compact).
    Compact,
}

/// A partition with rewriting to do, and the bounds it must keep to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewritePlan {
    pub partition: TopicPartition,
    pub kind: RewriteKind,
    /// Where reading starts: the first batch (compaction) or the first not merged yet.
    pub from_offset: i64,
    /// Compaction's checkpoint: from here on records may be superseded by later ones.
    pub cleaned_offset: i64,
    /// Nothing at or past it is touched (the last stable offset, compaction's lags).
    pub end_offset: i64,
    /// delete.retention.ms: tombstones written longer ago are dropped.
    pub delete_retention_ms: i64,
    /// Aborted transactions with records before `end_offset`: their records are dropped.
    pub aborted: Vec<AbortedTransaction>,
}

/// Where compaction stands in one partition of a compacted topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactionStatus {
    pub topic: String,
    pub partition: i32,
    /// Bytes from the cleaned offset to the cleanable end, and from the first batch to it.
    pub dirty_bytes: u64,
    pub cleanable_bytes: u64,
    /// When the oldest dirty batch was appended, if any is dirty.
    pub oldest_dirty_ms: Option<i64>,
    pub cleaned_offset: i64,
}

/// Where one live batch is stored, for verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredBatch {
    pub topic: String,
    pub partition: i32,
    pub base_offset: i64,
    pub byte_offset: u32,
    pub size_bytes: u32,
}
