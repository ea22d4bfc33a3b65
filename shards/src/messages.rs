//! What a client request asks of one partition, and its answer: the part of a request that
//! goes to the shard owning the partition (`peer` says how it gets there).

use bytes::Bytes;
use shoal_coordinator::{ErrorKind, TopicPartition};
use shoal_wal::decompress::Codec;

#[derive(Debug, Clone)]
pub struct PartitionProduce {
    pub partition: TopicPartition,
    pub records: Bytes,
    pub rules: ProduceRules,
}

/// The topic settings a produce must follow, taken from the topic's config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProduceRules {
    /// `message.timestamp.type=LogAppendTime`: stamp batches with the broker's clock.
    pub log_append_time: bool,
    /// `max.message.bytes`: the largest batch accepted.
    pub max_batch_bytes: usize,
    /// zstd batches are refused below Produce v7, as Kafka does.
    pub zstd_allowed: bool,
    /// Control batches (transaction markers) are taken: only from the broker's own
    /// transaction coordinator.
    pub markers: bool,
    /// `compression.type` names a codec: batches compressed otherwise are recompressed.
    pub recompress_to: Option<shoal_wal::decompress::Codec>,
    /// `cleanup.policy` includes compact: every record needs a key.
    pub keys_required: bool,
    /// `message.timestamp.before.max.ms` / `after.max.ms`: the furthest a CreateTime record
    /// may lie behind or ahead of the broker's clock.
    pub timestamp_before_max_ms: i64,
    pub timestamp_after_max_ms: i64,
    /// `confluent.*.schema.validation`: records must name registered schemas.
    pub schemas: Option<crate::produce::schemas::SchemaRule>,
    /// Produce v12+ with transactions V2 finalized (KIP-890): a transactional batch joins its
    /// producer's transaction in its partition, as AddPartitionsToTxn did before.
    pub joins_transaction: bool,
}

impl ProduceRules {
    /// The rules of a topic named `topic` with `config`.
    pub fn for_topic(
        topic: &str,
        config: &shoal_coordinator::TopicConfig,
        produce_version: i16,
    ) -> Self {
        let validation = config.schema_validation;
        ProduceRules {
            schemas: validation
                .any()
                .then(|| crate::produce::schemas::SchemaRule {
                    validation,
                    topic: topic.into(),
                }),
            ..ProduceRules::new(config, produce_version)
        }
    }

    /// The rules of `config` without schema validation (the broker's own markers).
    pub fn new(config: &shoal_coordinator::TopicConfig, produce_version: i16) -> Self {
        ProduceRules {
            log_append_time: config.log_append_time,
            max_batch_bytes: config.max_message_bytes.max(0) as usize,
            zstd_allowed: produce_version >= 7,
            markers: false,
            recompress_to: codec_of(config.compression),
            keys_required: config.cleanup.compacts(),
            timestamp_before_max_ms: config.timestamp_before_max_ms,
            timestamp_after_max_ms: config.timestamp_after_max_ms,
            schemas: None,
            joins_transaction: false,
        }
    }
}

fn codec_of(compression: shoal_coordinator::TopicCompression) -> Option<Codec> {
    use shoal_coordinator::TopicCompression as C;
    match compression {
        C::Producer => None,
        C::Uncompressed => Some(Codec::None),
        C::Gzip => Some(Codec::Gzip),
        C::Snappy => Some(Codec::Snappy),
        C::Lz4 => Some(Codec::Lz4),
        C::Zstd => Some(Codec::Zstd),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionProduceResult {
    pub error: Option<ErrorKind>,
    pub base_offset: i64,
    pub log_append_time_ms: i64,
    pub log_start_offset: i64,
    /// The indexes in its batch of the records that got the batch refused, when any did.
    pub bad_records: Vec<i32>,
}

impl PartitionProduceResult {
    pub fn failed(error: ErrorKind) -> Self {
        PartitionProduceResult {
            error: Some(error),
            base_offset: -1,
            log_append_time_ms: -1,
            log_start_offset: -1,
            bad_records: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct PartitionFetch {
    pub partition: TopicPartition,
    pub offset: i64,
    pub max_bytes: u32,
    /// Only records below the last stable offset (Kafka's READ_COMMITTED).
    pub read_committed: bool,
    /// Only the partition's offsets (watermarks, log start): no batch is looked up or read.
    pub offsets_only: bool,
}

#[derive(Debug, Clone)]
pub struct PartitionFetchResult {
    pub error: Option<ErrorKind>,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    pub records: Bytes,
    /// For read_committed: the aborted transactions among `records`.
    pub aborted: Vec<shoal_coordinator::AbortedTransaction>,
}
