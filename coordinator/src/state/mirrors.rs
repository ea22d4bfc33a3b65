//! Mirror topics (KIP-1279) in the durable state: mirrors and their settings, which mirror a
//! topic belongs to, each partition's mirror state, commits of mirrored batches at the
//! source's offsets, and truncation. Transitions go through `shoal_mirror::PartitionMirror`,
//! so this file only decides which records describe them.

use shoal_mirror::{validate_mirror_name, MirrorConfig, MirrorError, MirrorState, PartitionMirror};
use uuid::Uuid;

use super::producers::last_sequence;
use super::writes::{refused_whole, Placement};
use super::{CoordinatorState, PartitionState, PARTITIONS_PER_TOPIC_MAX};
use crate::messages::{
    CommitBatch, CommitBatchResult, MirrorEvent, MirroredPartition, MirroredTopic, NewObject,
    TopicPartition,
};
use shoal_protocol::records::{ShoalMirrorCreatedRecord, ShoalPartitionTruncatedRecord};

use super::emit;
use crate::entry::Entry;
use crate::records::TopicConfig;
use crate::topic_configs::{mirrored_configs, TopicOverrides};
use crate::ErrorKind;

/// Which mirror a topic belongs to (its `mirror.name`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMirror {
    pub name: String,
    /// Removed from the mirror (failover): `mirror.name` carries the `.removed` suffix.
    pub removed: bool,
}

impl CoordinatorState {
    pub fn create_mirror(
        &self,
        name: &str,
        config: &[(String, String)],
        now_ms: i64,
    ) -> Result<Entry, ErrorKind> {
        validate_mirror_name(name).map_err(ErrorKind::Mirror)?;
        if self.mirrors.contains_key(name) {
            return Err(ErrorKind::Mirror(MirrorError::MirrorAlreadyExists));
        }
        MirrorConfig::from_pairs(config.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .map_err(ErrorKind::Mirror)?;
        Ok(Entry::of(now_ms, emit::mirror_created(name, config)))
    }

    /// AddTopicsToMirror for one topic: creates it with the source's partition count (and the
    /// source's topic id when free), or grows it; every partition must be UNKNOWN or STOPPED.
    pub fn add_topic_to_mirror(
        &self,
        mirror: &str,
        topic: &MirroredTopic,
        fallback_id: Uuid,
        now_ms: i64,
    ) -> Result<Vec<Entry>, ErrorKind> {
        if !self.mirrors.contains_key(mirror) {
            return Err(ErrorKind::Mirror(MirrorError::UnknownMirror));
        }
        if topic.partitions <= 0 || topic.partitions > PARTITIONS_PER_TOPIC_MAX {
            return Err(ErrorKind::InvalidPartitions);
        }
        let mut records = Vec::new();
        let (topic_id, mut states) = match self.topic_ids.get(&topic.name) {
            Some(id) => {
                let existing = &self.topics[id];
                if existing
                    .mirror
                    .as_ref()
                    .is_some_and(|m| !m.removed && m.name != mirror)
                {
                    return Err(ErrorKind::Mirror(MirrorError::TopicAlreadyInMirror));
                }
                let states: Vec<PartitionMirror> = existing
                    .partitions
                    .iter()
                    .map(|p| p.mirror.clone())
                    .collect();
                if topic.partitions as usize > states.len() {
                    let first_new = states.len() as i32;
                    let added =
                        emit::partitions_created(*id, &existing.name, first_new, topic.partitions);
                    records.push(Entry::new(now_ms, added));
                }
                (*id, states)
            }
            None => {
                let id = if self.topics.contains_key(&topic.source_topic_id)
                    || topic.source_topic_id.is_nil()
                {
                    fallback_id
                } else {
                    topic.source_topic_id
                };
                records.push(self.create_topic(
                    &topic.name,
                    topic.partitions,
                    id,
                    TopicConfig::default(),
                    now_ms,
                )?);
                (id, Vec::new())
            }
        };
        states.resize(
            states.len().max(topic.partitions as usize),
            PartitionMirror::default(),
        );
        let mut changed = Vec::with_capacity(states.len());
        for (index, state) in states.iter_mut().enumerate() {
            state.add().map_err(ErrorKind::Mirror)?;
            changed.push((index as i32, state.clone()));
        }
        records.push(Entry::of(
            now_ms,
            emit::topic_mirror_changed(topic_id, mirror, false),
        ));
        records.push(Entry::of(
            now_ms,
            emit::mirror_partitions(topic_id, &changed),
        ));
        Ok(records)
    }

    /// RemoveTopicsFromMirror (failover): fetching stops, each partition's local end offset
    /// becomes its last mirrored offset, and the topic is writable again.
    pub fn remove_topic_from_mirror(
        &self,
        mirror: &str,
        name: &str,
        now_ms: i64,
    ) -> Result<Vec<Entry>, ErrorKind> {
        let (topic_id, topic) = self.mirrored_topic(mirror, name)?;
        let mut changed = Vec::new();
        for (index, p) in topic.partitions.iter().enumerate() {
            let mut m = p.mirror.clone();
            if m.state == MirrorState::Unknown || m.state == MirrorState::Stopped {
                continue;
            }
            m.remove().map_err(ErrorKind::Mirror)?;
            m.stopped(p.high_watermark).map_err(ErrorKind::Mirror)?;
            changed.push((index as i32, m));
        }
        Ok(vec![
            Entry::of(now_ms, emit::mirror_partitions(topic_id, &changed)),
            Entry::of(now_ms, emit::topic_mirror_changed(topic_id, mirror, true)),
        ])
    }

    /// Metadata sync: a mirror topic grows with its source (new partitions start mirroring)
    /// and takes the source's settings (`source`: its values of `mirrored_configs`) as its
    /// own, except the timestamp type (excluded by the KIP) and compression.
    pub fn sync_mirror_topic(
        &self,
        name: &str,
        partitions: i32,
        source: Option<TopicOverrides>,
        now_ms: i64,
    ) -> Result<Vec<Entry>, ErrorKind> {
        let (topic_id, topic) = self.topic_in_some_mirror(name)?;
        let mut records = Vec::new();
        let current = topic.partitions.len() as i32;
        if partitions > current && partitions <= PARTITIONS_PER_TOPIC_MAX {
            let added = emit::partitions_created(topic_id, name, current, partitions);
            records.push(Entry::new(now_ms, added));
            let mut added = Vec::new();
            for index in current..partitions {
                let mut m = PartitionMirror::default();
                m.add().map_err(ErrorKind::Mirror)?;
                added.push((index, m));
            }
            records.push(Entry::of(now_ms, emit::mirror_partitions(topic_id, &added)));
        }
        if let Some(source) = source {
            // The source's settings are the mirror topic's own: a cluster-wide default here
            // does not replace them.
            let mut own = topic.overrides.clone();
            own.retain(|name, _| !mirrored_configs().any(|m| m == name));
            let taken = source
                .into_iter()
                .filter(|(name, _)| mirrored_configs().any(|m| m == name));
            own.extend(taken);
            records.extend(self.topic_settings_changed(topic_id, &own, now_ms));
        }
        Ok(records)
    }

    /// PauseMirrorTopics / ResumeMirrorTopics for every partition of a topic.
    pub fn pause_mirror_topic(
        &self,
        name: &str,
        pause: bool,
        now_ms: i64,
    ) -> Result<Entry, ErrorKind> {
        let (topic_id, topic) = self.topic_in_some_mirror(name)?;
        let mut changed = Vec::new();
        for (index, p) in topic.partitions.iter().enumerate() {
            let mut m = p.mirror.clone();
            if pause { m.pause() } else { m.resume() }.map_err(ErrorKind::Mirror)?;
            changed.push((index as i32, m));
        }
        Ok(Entry::of(
            now_ms,
            emit::mirror_partitions(topic_id, &changed),
        ))
    }

    /// A fetcher's report on one partition, turned into its next state.
    pub fn mirror_event(
        &self,
        tp: TopicPartition,
        event: MirrorEvent,
        now_ms: i64,
    ) -> Result<(PartitionMirror, Option<Entry>), ErrorKind> {
        let p = self
            .partition(tp)
            .ok_or(ErrorKind::UnknownTopicOrPartition)?;
        let mut m = p.mirror.clone();
        match event {
            MirrorEvent::BeginPreparing => m.begin_preparing().map_err(ErrorKind::Mirror)?,
            MirrorEvent::Prepared => m.prepared().map_err(ErrorKind::Mirror)?,
            MirrorEvent::Fetched => m.fetched(),
            MirrorEvent::Failed { jitter } => {
                let config = self
                    .topic_mirror_config(tp.topic_id)
                    .ok_or(ErrorKind::Mirror(MirrorError::UnknownMirror))?;
                m.fail(now_ms, &config, jitter)
            }
            MirrorEvent::RetryIfDue => {
                m.retry_if_due(now_ms);
            }
        }
        let changed = [(tp.partition, m.clone())];
        let entry = (m != p.mirror)
            .then(|| Entry::of(now_ms, emit::mirror_partitions(tp.topic_id, &changed)));
        Ok((m, entry))
    }

    /// Mirrored batches keep the source's offsets: each must start at or after the partition's
    /// end (gaps stay gaps, overlaps are refused) while the partition is MIRRORING.
    pub fn commit_mirrored(
        &self,
        object: &NewObject,
        batches: &[CommitBatch],
        now_ms: i64,
    ) -> (Vec<CommitBatchResult>, Option<Entry>) {
        let mut ends: std::collections::HashMap<TopicPartition, i64> = Default::default();
        let place = |b: &CommitBatch, p: &PartitionState| {
            let end = *ends.entry(b.partition).or_insert(p.high_watermark);
            if !p.mirror.should_fetch() {
                return Placement::refused(ErrorKind::Mirror(MirrorError::InvalidRequest));
            }
            let Some((base_offset, last_offset)) =
                b.kept_offsets().filter(|(base, _)| *base >= end)
            else {
                return Placement::refused(ErrorKind::InvalidRequest);
            };
            ends.insert(b.partition, last_offset + 1);
            Placement::At {
                base_offset,
                last_offset,
                last_sequence: if b.producer_id >= 0 {
                    last_sequence(b.base_sequence, b.offset_count)
                } else {
                    -1
                },
            }
        };
        match self.commit_object(object, batches, now_ms, place) {
            Some((results, committed)) => {
                let records = emit::file_committed(object, &committed, now_ms);
                (results, Some(Entry::new(now_ms, records)))
            }
            None => (refused_whole(batches), None),
        }
    }

    /// Drops local records from `offset` on (whole batches: mirrored batches end on the
    /// source's batch boundaries). None when nothing lies there.
    pub fn truncate(
        &self,
        tp: TopicPartition,
        offset: i64,
        now_ms: i64,
    ) -> Result<Option<Entry>, ErrorKind> {
        let p = self
            .partition(tp)
            .ok_or(ErrorKind::UnknownTopicOrPartition)?;
        if offset < 0 {
            return Err(ErrorKind::OffsetOutOfRange);
        }
        let truncated = ShoalPartitionTruncatedRecord {
            topic_id: tp.topic_id,
            partition_index: tp.partition,
            offset,
        };
        Ok((offset < p.high_watermark).then(|| Entry::of(now_ms, truncated)))
    }

    /// LastMirroredOffset, answered by the old destination on failback: the offset at which
    /// mirroring of this topic into it stopped, or 0 when it has none for that mirror.
    pub fn last_mirrored_offset(&self, mirror: &str, name: &str, partition: i32) -> i64 {
        let Some(topic) = self.topic_ids.get(name).and_then(|id| self.topics.get(id)) else {
            return 0;
        };
        let same_mirror = topic.mirror.as_ref().is_some_and(|m| m.name == mirror);
        let stopped = usize::try_from(partition)
            .ok()
            .and_then(|i| topic.partitions.get(i))
            .filter(|p| p.mirror.state == MirrorState::Stopped);
        match stopped {
            Some(p) if same_mirror => p.mirror.last_mirrored_offset.max(0),
            _ => 0,
        }
    }

    /// (name, source bootstrap servers, topics in it) of every mirror.
    pub fn list_mirrors(&self) -> Vec<(String, String, i32)> {
        self.mirrors
            .iter()
            .map(|(name, config)| {
                let bootstrap = config
                    .iter()
                    .find(|(k, _)| k == "bootstrap.servers")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                let topics = self
                    .topics
                    .values()
                    .filter(|t| t.is_in_mirror(name))
                    .count() as i32;
                (name.clone(), bootstrap, topics)
            })
            .collect()
    }

    /// A mirror's topics and their partitions, by name.
    pub fn mirror_partitions(&self, mirror: &str) -> Option<Vec<(String, Vec<MirroredPartition>)>> {
        self.mirrors.get(mirror)?;
        let mut topics: Vec<(String, Vec<MirroredPartition>)> = self
            .topics
            .iter()
            .filter(|(_, t)| t.is_in_mirror(mirror))
            .map(|(id, t)| {
                let partitions = t
                    .partitions
                    .iter()
                    .enumerate()
                    .map(|(i, p)| MirroredPartition {
                        partition: TopicPartition {
                            topic_id: *id,
                            partition: i as i32,
                        },
                        mirror: p.mirror.clone(),
                        high_watermark: p.high_watermark,
                        log_start_offset: p.log_start_offset,
                    })
                    .collect();
                (t.name.clone(), partitions)
            })
            .collect();
        topics.sort_by(|a, b| a.0.cmp(&b.0));
        Some(topics)
    }

    pub fn mirror_config(&self, mirror: &str) -> Option<MirrorConfig> {
        let pairs = self.mirrors.get(mirror)?;
        MirrorConfig::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))).ok()
    }

    fn topic_mirror_config(&self, topic_id: Uuid) -> Option<MirrorConfig> {
        let mirror = self.topics.get(&topic_id)?.mirror.as_ref()?;
        self.mirror_config(&mirror.name)
    }

    /// A topic that belongs to a mirror now, whichever.
    fn topic_in_some_mirror(&self, name: &str) -> Result<(Uuid, &super::TopicState), ErrorKind> {
        let id = self
            .topic_ids
            .get(name)
            .ok_or(ErrorKind::UnknownTopicOrPartition)?;
        let topic = &self.topics[id];
        if topic.mirror.as_ref().is_none_or(|m| m.removed) {
            return Err(ErrorKind::Mirror(MirrorError::TopicNotInMirror));
        }
        Ok((*id, topic))
    }

    fn mirrored_topic(
        &self,
        mirror: &str,
        name: &str,
    ) -> Result<(Uuid, &super::TopicState), ErrorKind> {
        if !self.mirrors.contains_key(mirror) {
            return Err(ErrorKind::Mirror(MirrorError::UnknownMirror));
        }
        let id = self
            .topic_ids
            .get(name)
            .ok_or(ErrorKind::UnknownTopicOrPartition)?;
        let topic = &self.topics[id];
        match &topic.mirror {
            Some(m) if m.name == mirror && !m.removed => Ok((*id, topic)),
            _ => Err(ErrorKind::Mirror(MirrorError::TopicNotInMirror)),
        }
    }

    pub(super) fn apply_truncation(&mut self, r: &ShoalPartitionTruncatedRecord, at_ms: i64) {
        let offset = r.offset;
        let Some(p) = self.partition_mut(r.topic_id, r.partition_index) else {
            return;
        };
        let mut released = Vec::new();
        while p.batches.back().is_some_and(|b| b.base_offset >= offset) {
            let b = p.batches.pop_back().expect("back exists");
            p.size_bytes -= b.size_bytes as u64;
            released.push(b.file_id);
        }
        // A kept batch may straddle `offset` only if the caller cut inside one.
        let kept_end = p.batches.back().map_or(0, |b| b.last_offset + 1);
        p.high_watermark = p.high_watermark.min(offset).max(kept_end);
        p.log_start_offset = p.log_start_offset.min(p.high_watermark);
        // The producers' recent batches may be gone: their sequence state starts over.
        p.producers.clear();
        p.transactions.forget_from(p.high_watermark);
        for file_id in released {
            self.release_batch(file_id, at_ms);
        }
    }
}

impl CoordinatorState {
    pub(super) fn apply_mirror_created(&mut self, r: &ShoalMirrorCreatedRecord) {
        let config = r
            .configs
            .iter()
            .map(|c| (c.name.clone(), c.value.clone()))
            .collect();
        self.mirrors.insert(r.mirror_name.clone(), config);
    }
}
