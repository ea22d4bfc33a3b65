//! Metadata log records. They carry results (assigned offsets, append times, ids), never
//! requests, so replaying them rebuilds exactly the state that answered the clients.
//!
//! Frame on disk: `[payload length u32][CRC-32C of payload u32][payload]`, big-endian;
//! `frames` reads them back and tells a torn tail from damage.

use shoal_mirror::{MirrorState, PartitionMirror};
use uuid::Uuid;

use crate::CoordinatorError;

pub const FRAME_HEADER_BYTES: usize = 8;
/// No record comes near this; a larger length can only be a torn or corrupt frame.
pub const FRAME_PAYLOAD_MAX_BYTES: usize = 256 << 20;

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
}

/// The fewest bytes one committed offset takes in a record (empty metadata).
const COMMITTED_OFFSET_MIN_BYTES: usize = 16 + 4 + 8 + 4 + 4;

/// Bytes one committed batch takes in a record.
const COMMITTED_BATCH_BYTES: usize = 16 + 4 + 4 + 4 + 8 + 8 + 8 + 8 + 2 + 4 + 4;

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
}

impl Default for TopicConfig {
    /// Kafka's defaults: seven days, no size limit, CreateTime, 1 MiB + 12 bytes.
    fn default() -> Self {
        TopicConfig {
            retention_ms: 7 * 24 * 3600 * 1000,
            retention_bytes: -1,
            log_append_time: false,
            max_message_bytes: 1_048_588,
        }
    }
}

impl TopicConfig {
    const ENCODED_BYTES: usize = 8 + 8 + 1 + 4;

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.retention_ms.to_be_bytes());
        out.extend_from_slice(&self.retention_bytes.to_be_bytes());
        out.push(self.log_append_time as u8);
        out.extend_from_slice(&self.max_message_bytes.to_be_bytes());
    }

    fn decode(r: &mut Reader) -> Result<TopicConfig, CoordinatorError> {
        Ok(TopicConfig {
            retention_ms: r.i64()?,
            retention_bytes: r.i64()?,
            log_append_time: r.u8()? != 0,
            max_message_bytes: r.i32()?,
        })
    }

    /// The encoding snapshots share with the log.
    pub fn to_bytes(&self) -> [u8; Self::ENCODED_BYTES] {
        let mut out = Vec::with_capacity(Self::ENCODED_BYTES);
        self.encode(&mut out);
        out.try_into().expect("fixed size")
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<TopicConfig, CoordinatorError> {
        let mut r = Reader {
            buf: bytes,
            pos: 0,
            base: 0,
        };
        TopicConfig::decode(&mut r)
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
    /// `at_ms`, which is also the batches' log-append time.
    FileCommitted {
        file_id: u64,
        object_key: String,
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
    /// An existing topic grew to `total_partitions`.
    PartitionsAdded {
        topic_id: Uuid,
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
}

/// Bytes one partition's mirror state takes in a record.
const PARTITION_MIRROR_BYTES: usize = 4 + 1 + 1 + 1 + 8 + 4 + 1 + 8;

fn put_partition_mirror(out: &mut Vec<u8>, partition: i32, m: &PartitionMirror) {
    out.extend_from_slice(&partition.to_be_bytes());
    out.push(m.state.code() as u8);
    out.push(m.paused as u8);
    out.push(m.prepared as u8);
    out.extend_from_slice(&m.last_mirrored_offset.to_be_bytes());
    out.extend_from_slice(&m.failures.to_be_bytes());
    out.push(m.retry_at_ms.is_some() as u8);
    out.extend_from_slice(&m.retry_at_ms.unwrap_or(0).to_be_bytes());
}

fn read_partition_mirror(r: &mut Reader) -> Result<(i32, PartitionMirror), CoordinatorError> {
    let partition = r.i32()?;
    let state = MirrorState::from_code(r.u8()? as i8).ok_or_else(|| r.malformed())?;
    let paused = r.u8()? != 0;
    let prepared = r.u8()? != 0;
    let last_mirrored_offset = r.i64()?;
    let failures = r.u32()?;
    let has_retry = r.u8()? != 0;
    let retry_at = r.i64()?;
    Ok((
        partition,
        PartitionMirror {
            state,
            paused,
            last_mirrored_offset,
            prepared,
            failures,
            retry_at_ms: has_retry.then_some(retry_at),
        },
    ))
}

/// The encoding snapshots share with the log.
pub fn partition_mirror_to_bytes(partition: i32, m: &PartitionMirror) -> Vec<u8> {
    let mut out = Vec::with_capacity(PARTITION_MIRROR_BYTES);
    put_partition_mirror(&mut out, partition, m);
    out
}

pub fn partition_mirror_from_bytes(
    bytes: &[u8],
) -> Result<(i32, PartitionMirror), CoordinatorError> {
    let mut r = Reader {
        buf: bytes,
        pos: 0,
        base: 0,
    };
    read_partition_mirror(&mut r)
}

pub const PARTITION_MIRROR_ENCODED_BYTES: usize = PARTITION_MIRROR_BYTES;

const TAG_TOPIC_CREATED: u8 = 1;
const TAG_TOPIC_DELETED: u8 = 2;
const TAG_FILE_COMMITTED: u8 = 3;
const TAG_RECORDS_DELETED: u8 = 4;
const TAG_PRODUCER_ID_ALLOCATED: u8 = 5;
const TAG_FILES_DELETED: u8 = 6;
const TAG_PARTITIONS_ADDED: u8 = 7;
const TAG_PRODUCERS_EXPIRED: u8 = 8;
/// TopicCreated with the whole `TopicConfig`; tag 1 holds only the retention settings.
const TAG_TOPIC_CREATED_FULL_CONFIG: u8 = 9;
const TAG_TOPIC_CONFIG_CHANGED: u8 = 10;
const TAG_OFFSETS_COMMITTED: u8 = 11;
const TAG_GROUP_OFFSETS_DELETED: u8 = 12;
const TAG_MIRROR_CREATED: u8 = 13;
const TAG_TOPIC_MIRROR_CHANGED: u8 = 14;
const TAG_MIRROR_PARTITIONS_CHANGED: u8 = 15;
const TAG_PARTITION_TRUNCATED: u8 = 16;
const TAG_GROUP_DELETED: u8 = 17;

impl Record {
    /// Appends this record as one framed entry to `out`.
    pub fn encode_frame(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; FRAME_HEADER_BYTES]);
        self.encode_payload(out);
        let payload = &out[start + FRAME_HEADER_BYTES..];
        debug_assert_eq!(
            Record::decode_payload(payload, 0).ok().as_ref(),
            Some(self),
            "a record must decode to itself"
        );
        let len = payload.len() as u32;
        let crc = crc32c::crc32c(payload);
        out[start..start + 4].copy_from_slice(&len.to_be_bytes());
        out[start + 4..start + 8].copy_from_slice(&crc.to_be_bytes());
    }

    fn encode_payload(&self, out: &mut Vec<u8>) {
        match self {
            Record::TopicCreated {
                id,
                name,
                partitions,
                config,
            } => {
                out.push(TAG_TOPIC_CREATED_FULL_CONFIG);
                out.extend_from_slice(id.as_bytes());
                put_str(out, name);
                out.extend_from_slice(&partitions.to_be_bytes());
                config.encode(out);
            }
            Record::TopicConfigChanged { topic_id, config } => {
                out.push(TAG_TOPIC_CONFIG_CHANGED);
                out.extend_from_slice(topic_id.as_bytes());
                config.encode(out);
            }
            Record::OffsetsCommitted {
                group,
                at_ms,
                offsets,
            } => {
                out.push(TAG_OFFSETS_COMMITTED);
                put_str(out, group);
                out.extend_from_slice(&at_ms.to_be_bytes());
                out.extend_from_slice(&(offsets.len() as u32).to_be_bytes());
                for o in offsets {
                    out.extend_from_slice(o.topic_id.as_bytes());
                    out.extend_from_slice(&o.partition.to_be_bytes());
                    out.extend_from_slice(&o.offset.to_be_bytes());
                    out.extend_from_slice(&o.leader_epoch.to_be_bytes());
                    put_str(out, &o.metadata);
                }
            }
            Record::MirrorCreated { name, config } => {
                out.push(TAG_MIRROR_CREATED);
                put_str(out, name);
                out.extend_from_slice(&(config.len() as u32).to_be_bytes());
                for (k, v) in config {
                    put_str(out, k);
                    put_str(out, v);
                }
            }
            Record::TopicMirrorChanged {
                topic_id,
                mirror,
                removed,
            } => {
                out.push(TAG_TOPIC_MIRROR_CHANGED);
                out.extend_from_slice(topic_id.as_bytes());
                put_str(out, mirror);
                out.push(*removed as u8);
            }
            Record::MirrorPartitionsChanged {
                topic_id,
                partitions,
            } => {
                out.push(TAG_MIRROR_PARTITIONS_CHANGED);
                out.extend_from_slice(topic_id.as_bytes());
                out.extend_from_slice(&(partitions.len() as u32).to_be_bytes());
                for (partition, m) in partitions {
                    put_partition_mirror(out, *partition, m);
                }
            }
            Record::PartitionTruncated {
                topic_id,
                partition,
                offset,
                at_ms,
            } => {
                out.push(TAG_PARTITION_TRUNCATED);
                out.extend_from_slice(topic_id.as_bytes());
                out.extend_from_slice(&partition.to_be_bytes());
                out.extend_from_slice(&offset.to_be_bytes());
                out.extend_from_slice(&at_ms.to_be_bytes());
            }
            Record::GroupOffsetsDeleted { group, partitions } => {
                out.push(TAG_GROUP_OFFSETS_DELETED);
                put_str(out, group);
                out.extend_from_slice(&(partitions.len() as u32).to_be_bytes());
                for (topic_id, partition) in partitions {
                    out.extend_from_slice(topic_id.as_bytes());
                    out.extend_from_slice(&partition.to_be_bytes());
                }
            }
            Record::GroupDeleted { group } => {
                out.push(TAG_GROUP_DELETED);
                put_str(out, group);
            }
            Record::TopicDeleted { id, at_ms } => {
                out.push(TAG_TOPIC_DELETED);
                out.extend_from_slice(id.as_bytes());
                out.extend_from_slice(&at_ms.to_be_bytes());
            }
            Record::FileCommitted {
                file_id,
                object_key,
                at_ms,
                batches,
            } => {
                out.push(TAG_FILE_COMMITTED);
                out.extend_from_slice(&file_id.to_be_bytes());
                put_str(out, object_key);
                out.extend_from_slice(&at_ms.to_be_bytes());
                out.extend_from_slice(&(batches.len() as u32).to_be_bytes());
                out.reserve(batches.len() * COMMITTED_BATCH_BYTES);
                for b in batches {
                    out.extend_from_slice(b.topic_id.as_bytes());
                    out.extend_from_slice(&b.partition.to_be_bytes());
                    out.extend_from_slice(&b.byte_offset.to_be_bytes());
                    out.extend_from_slice(&b.size_bytes.to_be_bytes());
                    out.extend_from_slice(&b.base_offset.to_be_bytes());
                    out.extend_from_slice(&b.last_offset.to_be_bytes());
                    out.extend_from_slice(&b.max_timestamp.to_be_bytes());
                    out.extend_from_slice(&b.producer_id.to_be_bytes());
                    out.extend_from_slice(&b.producer_epoch.to_be_bytes());
                    out.extend_from_slice(&b.base_sequence.to_be_bytes());
                    out.extend_from_slice(&b.last_sequence.to_be_bytes());
                }
            }
            Record::RecordsDeleted {
                topic_id,
                partition,
                new_log_start_offset,
                at_ms,
            } => {
                out.push(TAG_RECORDS_DELETED);
                out.extend_from_slice(topic_id.as_bytes());
                out.extend_from_slice(&partition.to_be_bytes());
                out.extend_from_slice(&new_log_start_offset.to_be_bytes());
                out.extend_from_slice(&at_ms.to_be_bytes());
            }
            Record::ProducerIdAllocated { producer_id } => {
                out.push(TAG_PRODUCER_ID_ALLOCATED);
                out.extend_from_slice(&producer_id.to_be_bytes());
            }
            Record::PartitionsAdded {
                topic_id,
                total_partitions,
            } => {
                out.push(TAG_PARTITIONS_ADDED);
                out.extend_from_slice(topic_id.as_bytes());
                out.extend_from_slice(&total_partitions.to_be_bytes());
            }
            Record::ProducersExpired {
                topic_id,
                partition,
                producer_ids,
            } => {
                out.push(TAG_PRODUCERS_EXPIRED);
                out.extend_from_slice(topic_id.as_bytes());
                out.extend_from_slice(&partition.to_be_bytes());
                out.extend_from_slice(&(producer_ids.len() as u32).to_be_bytes());
                for id in producer_ids {
                    out.extend_from_slice(&id.to_be_bytes());
                }
            }
            Record::FilesDeleted { object_keys } => {
                out.push(TAG_FILES_DELETED);
                out.extend_from_slice(&(object_keys.len() as u32).to_be_bytes());
                for key in object_keys {
                    put_str(out, key);
                }
            }
        }
    }

    pub(crate) fn decode_payload(payload: &[u8], at: usize) -> Result<Record, CoordinatorError> {
        let mut r = Reader {
            buf: payload,
            pos: 0,
            base: at,
        };
        let record = match r.u8()? {
            TAG_TOPIC_CREATED => Record::TopicCreated {
                id: r.uuid()?,
                name: r.string()?,
                partitions: r.partition_count()?,
                config: TopicConfig {
                    retention_ms: r.i64()?,
                    retention_bytes: r.i64()?,
                    ..TopicConfig::default()
                },
            },
            TAG_TOPIC_CREATED_FULL_CONFIG => Record::TopicCreated {
                id: r.uuid()?,
                name: r.string()?,
                partitions: r.partition_count()?,
                config: TopicConfig::decode(&mut r)?,
            },
            TAG_TOPIC_CONFIG_CHANGED => Record::TopicConfigChanged {
                topic_id: r.uuid()?,
                config: TopicConfig::decode(&mut r)?,
            },
            TAG_OFFSETS_COMMITTED => {
                let group = r.string()?;
                let at_ms = r.i64()?;
                let count = r.u32()? as usize;
                if count > payload.len() / COMMITTED_OFFSET_MIN_BYTES {
                    return Err(r.malformed());
                }
                let mut offsets = Vec::with_capacity(count);
                for _ in 0..count {
                    offsets.push(CommittedOffset {
                        topic_id: r.uuid()?,
                        partition: r.i32()?,
                        offset: r.i64()?,
                        leader_epoch: r.i32()?,
                        metadata: r.string()?,
                    });
                }
                Record::OffsetsCommitted {
                    group,
                    at_ms,
                    offsets,
                }
            }
            TAG_MIRROR_CREATED => {
                let name = r.string()?;
                let count = r.u32()? as usize;
                if count > payload.len() / 8 {
                    return Err(r.malformed());
                }
                let mut config = Vec::with_capacity(count);
                for _ in 0..count {
                    config.push((r.string()?, r.string()?));
                }
                Record::MirrorCreated { name, config }
            }
            TAG_TOPIC_MIRROR_CHANGED => Record::TopicMirrorChanged {
                topic_id: r.uuid()?,
                mirror: r.string()?,
                removed: r.u8()? != 0,
            },
            TAG_MIRROR_PARTITIONS_CHANGED => {
                let topic_id = r.uuid()?;
                let count = r.u32()? as usize;
                if count > payload.len() / PARTITION_MIRROR_BYTES {
                    return Err(r.malformed());
                }
                let mut partitions = Vec::with_capacity(count);
                for _ in 0..count {
                    partitions.push(read_partition_mirror(&mut r)?);
                }
                Record::MirrorPartitionsChanged {
                    topic_id,
                    partitions,
                }
            }
            TAG_PARTITION_TRUNCATED => Record::PartitionTruncated {
                topic_id: r.uuid()?,
                partition: r.i32()?,
                offset: r.i64()?,
                at_ms: r.i64()?,
            },
            TAG_GROUP_OFFSETS_DELETED => {
                let group = r.string()?;
                let count = r.u32()? as usize;
                if count > payload.len() / 20 {
                    return Err(r.malformed());
                }
                let mut partitions = Vec::with_capacity(count);
                for _ in 0..count {
                    partitions.push((r.uuid()?, r.i32()?));
                }
                if partitions.is_empty() {
                    // Logs written before GroupDeleted existed meant the whole group by this.
                    Record::GroupDeleted { group }
                } else {
                    Record::GroupOffsetsDeleted { group, partitions }
                }
            }
            TAG_GROUP_DELETED => Record::GroupDeleted { group: r.string()? },
            TAG_TOPIC_DELETED => Record::TopicDeleted {
                id: r.uuid()?,
                at_ms: r.i64()?,
            },
            TAG_FILE_COMMITTED => {
                let file_id = r.u64()?;
                let object_key = r.string()?;
                let at_ms = r.i64()?;
                let count = r.u32()? as usize;
                // A count beyond what the payload can hold is corruption, not an allocation.
                if count > payload.len() / COMMITTED_BATCH_BYTES {
                    return Err(r.malformed());
                }
                let mut batches = Vec::with_capacity(count);
                for _ in 0..count {
                    batches.push(CommittedBatch {
                        topic_id: r.uuid()?,
                        partition: r.i32()?,
                        byte_offset: r.u32()?,
                        size_bytes: r.u32()?,
                        base_offset: r.i64()?,
                        last_offset: r.i64()?,
                        max_timestamp: r.i64()?,
                        producer_id: r.i64()?,
                        producer_epoch: r.i16()?,
                        base_sequence: r.i32()?,
                        last_sequence: r.i32()?,
                    });
                }
                Record::FileCommitted {
                    file_id,
                    object_key,
                    at_ms,
                    batches,
                }
            }
            TAG_RECORDS_DELETED => Record::RecordsDeleted {
                topic_id: r.uuid()?,
                partition: r.i32()?,
                new_log_start_offset: r.i64()?,
                at_ms: r.i64()?,
            },
            TAG_PRODUCER_ID_ALLOCATED => Record::ProducerIdAllocated {
                producer_id: r.i64()?,
            },
            TAG_PARTITIONS_ADDED => Record::PartitionsAdded {
                topic_id: r.uuid()?,
                total_partitions: r.partition_count()?,
            },
            TAG_PRODUCERS_EXPIRED => {
                let topic_id = r.uuid()?;
                let partition = r.i32()?;
                let count = r.u32()? as usize;
                if count > payload.len() / 8 {
                    return Err(r.malformed());
                }
                let mut producer_ids = Vec::with_capacity(count);
                for _ in 0..count {
                    producer_ids.push(r.i64()?);
                }
                Record::ProducersExpired {
                    topic_id,
                    partition,
                    producer_ids,
                }
            }
            TAG_FILES_DELETED => {
                let count = r.u32()? as usize;
                if count > payload.len() / 4 {
                    return Err(r.malformed());
                }
                let mut object_keys = Vec::with_capacity(count);
                for _ in 0..count {
                    object_keys.push(r.string()?);
                }
                Record::FilesDeleted { object_keys }
            }
            _ => return Err(r.malformed()),
        };
        if r.pos != payload.len() {
            return Err(r.malformed());
        }
        Ok(record)
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl Reader<'_> {
    fn malformed(&self) -> CoordinatorError {
        CoordinatorError::MalformedRecord(self.base + self.pos)
    }

    /// A topic's partition count: what the coordinator ever creates, or the record is bad
    /// (applying it would allocate that many partitions).
    fn partition_count(&mut self) -> Result<i32, CoordinatorError> {
        let n = self.i32()?;
        if !(1..=crate::state::PARTITIONS_PER_TOPIC_MAX).contains(&n) {
            return Err(self.malformed());
        }
        Ok(n)
    }

    fn take(&mut self, n: usize) -> Result<&[u8], CoordinatorError> {
        if self.buf.len() - self.pos < n {
            return Err(self.malformed());
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, CoordinatorError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, CoordinatorError> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().expect("4")))
    }

    fn i16(&mut self) -> Result<i16, CoordinatorError> {
        Ok(i16::from_be_bytes(self.take(2)?.try_into().expect("2")))
    }

    fn i32(&mut self) -> Result<i32, CoordinatorError> {
        Ok(self.u32()? as i32)
    }

    fn u64(&mut self) -> Result<u64, CoordinatorError> {
        Ok(u64::from_be_bytes(self.take(8)?.try_into().expect("8")))
    }

    fn i64(&mut self) -> Result<i64, CoordinatorError> {
        Ok(self.u64()? as i64)
    }

    fn uuid(&mut self) -> Result<Uuid, CoordinatorError> {
        Ok(Uuid::from_bytes(self.take(16)?.try_into().expect("16")))
    }

    fn string(&mut self) -> Result<String, CoordinatorError> {
        let len = self.u32()? as usize;
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| self.malformed())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// One record of each kind, for codec and frame tests.
    pub(crate) fn samples() -> Vec<Record> {
        let id = Uuid::from_u128(7);
        vec![
            Record::TopicCreated {
                id,
                name: "orders".into(),
                partitions: 4,
                config: TopicConfig::default(),
            },
            Record::FileCommitted {
                file_id: 9,
                object_key: "wal/abc".into(),
                at_ms: 5678,
                batches: vec![CommittedBatch {
                    topic_id: id,
                    partition: 2,
                    byte_offset: 10,
                    size_bytes: 100,
                    base_offset: 5,
                    last_offset: 9,
                    max_timestamp: 1234,
                    producer_id: 77,
                    producer_epoch: 1,
                    base_sequence: 10,
                    last_sequence: 14,
                }],
            },
            Record::RecordsDeleted {
                topic_id: id,
                partition: 2,
                new_log_start_offset: 7,
                at_ms: 9999,
            },
            Record::ProducerIdAllocated { producer_id: 3 },
            Record::PartitionsAdded {
                topic_id: id,
                total_partitions: 6,
            },
            Record::ProducersExpired {
                topic_id: id,
                partition: 1,
                producer_ids: vec![4, 9],
            },
            Record::FilesDeleted {
                object_keys: vec!["wal/abc".into(), "wal/def".into()],
            },
            Record::TopicConfigChanged {
                topic_id: id,
                config: TopicConfig {
                    log_append_time: true,
                    max_message_bytes: 5000,
                    ..TopicConfig::default()
                },
            },
            Record::OffsetsCommitted {
                group: "billing".into(),
                at_ms: 42,
                offsets: vec![CommittedOffset {
                    topic_id: id,
                    partition: 3,
                    offset: 17,
                    leader_epoch: -1,
                    metadata: "m".into(),
                }],
            },
            Record::GroupOffsetsDeleted {
                group: "billing".into(),
                partitions: vec![(id, 3)],
            },
            Record::GroupDeleted {
                group: "billing".into(),
            },
            Record::MirrorCreated {
                name: "dr".into(),
                config: vec![("bootstrap.servers".into(), "a:1".into())],
            },
            Record::TopicMirrorChanged {
                topic_id: id,
                mirror: "dr".into(),
                removed: true,
            },
            Record::MirrorPartitionsChanged {
                topic_id: id,
                partitions: vec![(
                    1,
                    PartitionMirror {
                        state: MirrorState::Failed,
                        paused: true,
                        last_mirrored_offset: 9,
                        prepared: true,
                        failures: 3,
                        retry_at_ms: Some(77),
                    },
                )],
            },
            Record::PartitionTruncated {
                topic_id: id,
                partition: 1,
                offset: 4,
                at_ms: 5,
            },
            Record::TopicDeleted { id, at_ms: 10_000 },
        ]
    }

    #[test]
    fn a_topic_created_by_an_older_version_still_decodes_with_default_settings() {
        // Tag 1: id, name, partitions, retention.ms, retention.bytes (before full configs).
        let mut payload = vec![TAG_TOPIC_CREATED];
        payload.extend_from_slice(Uuid::from_u128(3).as_bytes());
        put_str(&mut payload, "old");
        payload.extend_from_slice(&2i32.to_be_bytes());
        payload.extend_from_slice(&1000i64.to_be_bytes());
        payload.extend_from_slice(&(-1i64).to_be_bytes());
        let record = Record::decode_payload(&payload, 0).unwrap();
        let expected = TopicConfig {
            retention_ms: 1000,
            ..TopicConfig::default()
        };
        assert!(matches!(record, Record::TopicCreated { config, .. } if config == expected));
    }

    #[test]
    fn an_older_whole_group_deletion_still_decodes_as_one() {
        // Before GroupDeleted, an empty partition list meant "the whole group".
        let mut payload = vec![TAG_GROUP_OFFSETS_DELETED];
        put_str(&mut payload, "g");
        payload.extend_from_slice(&0u32.to_be_bytes());
        let record = Record::decode_payload(&payload, 0).unwrap();
        assert_eq!(record, Record::GroupDeleted { group: "g".into() });
    }
}
