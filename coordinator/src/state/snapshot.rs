//! The whole state as one snapshot image, so recovery loads it instead of replaying history.
//! Layout: magic, version, the state's fields in a fixed order, then a CRC-32C of all that.
//! Decoding checks every length against the bytes present: a damaged image is an error,
//! never a panic or a huge allocation.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use uuid::Uuid;

use super::groups::GroupOffsets;
use super::producers::{ProducerBatch, ProducerState};
use super::{BatchEntry, CoordinatorState, FileState, PartitionState, TopicMirror, TopicState};
use crate::messages::StoredOffset;
use crate::records::TopicConfig;
use crate::records::{
    partition_mirror_from_bytes, partition_mirror_to_bytes, PARTITION_MIRROR_ENCODED_BYTES,
};
use crate::CoordinatorError;

const MAGIC: &[u8; 8] = b"SHOALSNP";
/// Version 3 added mirrors; version 2 the full topic config and committed group offsets.
/// Older images still load (with defaults for what they lack).
const VERSION: u32 = 3;
const VERSION_WITH_GROUPS: u32 = 2;
const VERSION_RETENTION_ONLY: u32 = 1;

const BATCH_ENTRY_BYTES: usize = 8 + 4 + 4 + 8 + 8 + 8 + 8;

impl CoordinatorState {
    pub fn encode_snapshot(&self) -> Vec<u8> {
        let batches = self.batch_count();
        let mut w = Vec::with_capacity(64 + batches * BATCH_ENTRY_BYTES);
        w.extend_from_slice(MAGIC);
        put_u32(&mut w, VERSION);
        put_u64(&mut w, self.next_file_id);
        put_i64(&mut w, self.next_producer_id);
        let mut topic_ids: Vec<&Uuid> = self.topics.keys().collect();
        topic_ids.sort();
        put_u32(&mut w, topic_ids.len() as u32);
        for id in topic_ids {
            let topic = &self.topics[id];
            w.extend_from_slice(id.as_bytes());
            put_str(&mut w, &topic.name);
            w.extend_from_slice(&topic.config.to_bytes());
            match &topic.mirror {
                Some(m) => {
                    w.push(1);
                    put_str(&mut w, &m.name);
                    w.push(m.removed as u8);
                }
                None => w.push(0),
            }
            put_u32(&mut w, topic.partitions.len() as u32);
            for p in &topic.partitions {
                put_i64(&mut w, p.log_start_offset);
                put_i64(&mut w, p.high_watermark);
                put_u64(&mut w, p.size_bytes);
                put_u32(&mut w, p.batches.len() as u32);
                for b in &p.batches {
                    put_u64(&mut w, b.file_id);
                    put_u32(&mut w, b.byte_offset);
                    put_u32(&mut w, b.size_bytes);
                    put_i64(&mut w, b.base_offset);
                    put_i64(&mut w, b.last_offset);
                    put_i64(&mut w, b.max_timestamp);
                    put_i64(&mut w, b.log_append_time_ms);
                }
                let mut producer_ids: Vec<&i64> = p.producers.keys().collect();
                producer_ids.sort();
                put_u32(&mut w, producer_ids.len() as u32);
                for pid in producer_ids {
                    let s = &p.producers[pid];
                    put_i64(&mut w, *pid);
                    w.extend_from_slice(&s.epoch.to_be_bytes());
                    put_i64(&mut w, s.last_write_ms);
                    w.push(s.recent.len() as u8);
                    for r in &s.recent {
                        put_u32(&mut w, r.base_sequence as u32);
                        put_u32(&mut w, r.last_sequence as u32);
                        put_i64(&mut w, r.base_offset);
                    }
                }
                w.extend_from_slice(&partition_mirror_to_bytes(0, &p.mirror));
            }
        }
        let mut file_ids: Vec<&u64> = self.files.keys().collect();
        file_ids.sort();
        put_u32(&mut w, file_ids.len() as u32);
        for id in file_ids {
            let f = &self.files[id];
            put_u64(&mut w, *id);
            put_str(&mut w, &f.object_key);
            put_u64(&mut w, f.live_batches);
        }
        put_u32(&mut w, self.deletable_files.len() as u32);
        for (key, since) in &self.deletable_files {
            put_str(&mut w, key);
            put_i64(&mut w, *since);
        }
        let mut groups: Vec<&String> = self.groups.keys().collect();
        groups.sort();
        put_u32(&mut w, groups.len() as u32);
        for group in groups {
            let entry = &self.groups[group];
            put_str(&mut w, group);
            put_i64(&mut w, entry.last_commit_ms);
            put_u32(&mut w, entry.offsets.len() as u32);
            for ((topic_id, partition), stored) in &entry.offsets {
                w.extend_from_slice(topic_id.as_bytes());
                put_u32(&mut w, *partition as u32);
                put_i64(&mut w, stored.offset);
                put_u32(&mut w, stored.leader_epoch as u32);
                put_str(&mut w, &stored.metadata);
            }
        }
        put_u32(&mut w, self.mirrors.len() as u32);
        for (name, config) in &self.mirrors {
            put_str(&mut w, name);
            put_u32(&mut w, config.len() as u32);
            for (k, v) in config {
                put_str(&mut w, k);
                put_str(&mut w, v);
            }
        }
        let crc = crc32c::crc32c(&w);
        put_u32(&mut w, crc);
        w
    }

    pub fn decode_snapshot(image: &[u8]) -> Result<CoordinatorState, CoordinatorError> {
        if image.len() < MAGIC.len() + 8 {
            return Err(CoordinatorError::MalformedSnapshot("too short".into()));
        }
        let (body, crc) = image.split_at(image.len() - 4);
        if crc32c::crc32c(body) != u32::from_be_bytes(crc.try_into().expect("4 bytes")) {
            return Err(CoordinatorError::MalformedSnapshot(
                "checksum mismatch".into(),
            ));
        }
        let mut r = Reader { buf: body, pos: 0 };
        if r.take(8)? != MAGIC {
            return Err(CoordinatorError::MalformedSnapshot("unknown format".into()));
        }
        let version = r.u32()?;
        if !(VERSION_RETENTION_ONLY..=VERSION).contains(&version) {
            return Err(CoordinatorError::MalformedSnapshot(format!(
                "unknown version {version}"
            )));
        }
        let mut state = CoordinatorState {
            next_file_id: r.u64()?,
            next_producer_id: r.i64()?,
            ..CoordinatorState::default()
        };
        for _ in 0..r.count(16)? {
            let id = Uuid::from_bytes(r.take(16)?.try_into().expect("16 bytes"));
            let name = r.string()?;
            let config = if version == VERSION_RETENTION_ONLY {
                TopicConfig {
                    retention_ms: r.i64()?,
                    retention_bytes: r.i64()?,
                    ..TopicConfig::default()
                }
            } else {
                TopicConfig::from_bytes(r.take(TopicConfig::default().to_bytes().len())?)?
            };
            let mirror = if version >= VERSION && r.take(1)?[0] == 1 {
                let name = r.string()?;
                let removed = r.take(1)?[0] != 0;
                Some(TopicMirror { name, removed })
            } else {
                None
            };
            let partition_count = r.count(28)?;
            let mut partitions = Vec::with_capacity(partition_count);
            for _ in 0..partition_count {
                let mut p = PartitionState {
                    log_start_offset: r.i64()?,
                    high_watermark: r.i64()?,
                    size_bytes: r.u64()?,
                    ..PartitionState::default()
                };
                let batch_count = r.count(BATCH_ENTRY_BYTES)?;
                p.batches = VecDeque::with_capacity(batch_count);
                for _ in 0..batch_count {
                    p.batches.push_back(BatchEntry {
                        file_id: r.u64()?,
                        byte_offset: r.u32()?,
                        size_bytes: r.u32()?,
                        base_offset: r.i64()?,
                        last_offset: r.i64()?,
                        max_timestamp: r.i64()?,
                        log_append_time_ms: r.i64()?,
                    });
                }
                let producer_count = r.count(19)?;
                p.producers = HashMap::with_capacity(producer_count);
                for _ in 0..producer_count {
                    let pid = r.i64()?;
                    let epoch = i16::from_be_bytes(r.take(2)?.try_into().expect("2 bytes"));
                    let last_write_ms = r.i64()?;
                    let recent_count = r.take(1)?[0] as usize;
                    let mut recent = VecDeque::with_capacity(recent_count);
                    for _ in 0..recent_count {
                        recent.push_back(ProducerBatch {
                            base_sequence: r.u32()? as i32,
                            last_sequence: r.u32()? as i32,
                            base_offset: r.i64()?,
                        });
                    }
                    p.producers.insert(
                        pid,
                        ProducerState {
                            epoch,
                            recent,
                            last_write_ms,
                        },
                    );
                }
                if version >= VERSION {
                    p.mirror =
                        partition_mirror_from_bytes(r.take(PARTITION_MIRROR_ENCODED_BYTES)?)?.1;
                }
                partitions.push(p);
            }
            state.topic_ids.insert(name.clone(), id);
            state.topics.insert(
                id,
                TopicState {
                    name,
                    config,
                    partitions,
                    mirror,
                },
            );
        }
        for _ in 0..r.count(20)? {
            let id = r.u64()?;
            let object_key: Arc<str> = Arc::from(r.string()?.as_str());
            let live_batches = r.u64()?;
            state.file_ids.insert(object_key.clone(), id);
            state.files.insert(
                id,
                FileState {
                    object_key,
                    live_batches,
                },
            );
        }
        for _ in 0..r.count(12)? {
            let key: Arc<str> = Arc::from(r.string()?.as_str());
            let since = r.i64()?;
            state.deletable_files.insert(key, since);
        }
        if version >= VERSION_WITH_GROUPS {
            for _ in 0..r.count(16)? {
                let group = r.string()?;
                let mut entry = GroupOffsets {
                    last_commit_ms: r.i64()?,
                    ..GroupOffsets::default()
                };
                let count = r.count(36)?;
                entry.offsets.reserve(count);
                for _ in 0..count {
                    let topic_id = Uuid::from_bytes(r.take(16)?.try_into().expect("16 bytes"));
                    let partition = r.u32()? as i32;
                    let stored = StoredOffset {
                        offset: r.i64()?,
                        leader_epoch: r.u32()? as i32,
                        metadata: r.string()?,
                    };
                    entry.offsets.insert((topic_id, partition), stored);
                }
                state.groups.insert(group, entry);
            }
        }
        if version >= VERSION {
            for _ in 0..r.count(8)? {
                let name = r.string()?;
                let mut config = Vec::new();
                for _ in 0..r.count(8)? {
                    config.push((r.string()?, r.string()?));
                }
                state.mirrors.insert(name, config);
            }
        }
        if r.pos != body.len() {
            return Err(CoordinatorError::MalformedSnapshot("trailing bytes".into()));
        }
        Ok(state)
    }
}

fn put_u32(w: &mut Vec<u8>, v: u32) {
    w.extend_from_slice(&v.to_be_bytes());
}

fn put_u64(w: &mut Vec<u8>, v: u64) {
    w.extend_from_slice(&v.to_be_bytes());
}

fn put_i64(w: &mut Vec<u8>, v: i64) {
    w.extend_from_slice(&v.to_be_bytes());
}

fn put_str(w: &mut Vec<u8>, s: &str) {
    put_u32(w, s.len() as u32);
    w.extend_from_slice(s.as_bytes());
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], CoordinatorError> {
        if self.buf.len() - self.pos < n {
            return Err(CoordinatorError::MalformedSnapshot(format!(
                "truncated at byte {}",
                self.pos
            )));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn u32(&mut self) -> Result<u32, CoordinatorError> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().expect("4")))
    }

    fn u64(&mut self) -> Result<u64, CoordinatorError> {
        Ok(u64::from_be_bytes(self.take(8)?.try_into().expect("8")))
    }

    fn i64(&mut self) -> Result<i64, CoordinatorError> {
        Ok(self.u64()? as i64)
    }

    /// An element count, refused if the remaining bytes cannot hold that many elements of at
    /// least `min_element_bytes` each.
    fn count(&mut self, min_element_bytes: usize) -> Result<usize, CoordinatorError> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_element_bytes) > self.buf.len() - self.pos {
            return Err(CoordinatorError::MalformedSnapshot(format!(
                "count {n} exceeds the image at byte {}",
                self.pos
            )));
        }
        Ok(n)
    }

    fn string(&mut self) -> Result<String, CoordinatorError> {
        let len = self.u32()? as usize;
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| CoordinatorError::MalformedSnapshot("invalid UTF-8".into()))
    }
}
