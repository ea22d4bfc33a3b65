//! Committed offsets of consumer groups (OffsetCommit/OffsetFetch), kept with the rest of the
//! durable metadata so they survive restarts. Group membership is not here: it is volatile
//! and lives on the shard that owns the group.

use std::collections::HashMap;

use uuid::Uuid;

use super::CoordinatorState;
use crate::messages::{GroupLag, OffsetCommitEntry, StoredOffset, TopicPartition};
use shoal_protocol::records::{
    ShoalGroupConfigRecord, ShoalGroupDeletedRecord, ShoalGroupOffsetsDeletedRecord,
    ShoalGroupPartition, ShoalOffsetsCommittedRecord,
};

use super::emit;
use crate::entry::Entry;
use crate::records::CommittedOffset;
use crate::ErrorKind;

/// Kafka's `offset.metadata.max.bytes`.
pub const OFFSET_METADATA_MAX_BYTES: usize = 4096;
/// Group ids longer than this are refused, so one request cannot grow the state much.
pub const GROUP_ID_MAX_BYTES: usize = 1024;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct GroupOffsets {
    pub(super) offsets: HashMap<(Uuid, i32), StoredOffset>,
    /// When the group last committed; offsets expire `offsets_retention_ms` after it.
    pub(super) last_commit_ms: i64,
}

impl CoordinatorState {
    pub(super) fn apply_offsets_committed(&mut self, r: &ShoalOffsetsCommittedRecord, at_ms: i64) {
        let entry = self.groups.entry(r.group_id.clone()).or_default();
        entry.last_commit_ms = entry.last_commit_ms.max(at_ms);
        for o in &r.offsets {
            let stored = StoredOffset {
                offset: o.committed_offset,
                leader_epoch: o.leader_epoch,
                metadata: o.metadata.clone(),
            };
            entry
                .offsets
                .insert((o.topic_id, o.partition_index), stored);
        }
    }

    pub(super) fn apply_group_offsets_deleted(&mut self, r: &ShoalGroupOffsetsDeletedRecord) {
        if let Some(entry) = self.groups.get_mut(&r.group_id) {
            for p in &r.partitions {
                entry.offsets.remove(&(p.topic_id, p.partition_index));
            }
            if entry.offsets.is_empty() {
                self.groups.remove(&r.group_id);
            }
        }
    }

    /// Offsets of a deleted topic go with it.
    pub(super) fn forget_topic_offsets(&mut self, topic_id: Uuid) {
        self.groups.retain(|_, entry| {
            entry.offsets.retain(|(id, _), _| *id != topic_id);
            !entry.offsets.is_empty()
        });
    }

    /// OffsetCommit: each entry is checked (partition known, metadata size); the accepted
    /// ones form one record.
    pub fn commit_offsets(
        &self,
        group: &str,
        entries: &[OffsetCommitEntry],
        now_ms: i64,
    ) -> (Vec<Option<ErrorKind>>, Option<Entry>) {
        if group.is_empty() || group.len() > GROUP_ID_MAX_BYTES {
            return (vec![Some(ErrorKind::InvalidGroupId); entries.len()], None);
        }
        let mut results = Vec::with_capacity(entries.len());
        let mut accepted = Vec::new();
        for e in entries {
            let error = if self.partition(e.partition).is_none() {
                Some(ErrorKind::UnknownTopicOrPartition)
            } else if e.metadata.len() > OFFSET_METADATA_MAX_BYTES {
                Some(ErrorKind::OffsetMetadataTooLarge)
            } else {
                accepted.push(CommittedOffset {
                    topic_id: e.partition.topic_id,
                    partition: e.partition.partition,
                    offset: e.offset,
                    leader_epoch: e.leader_epoch,
                    metadata: e.metadata.clone(),
                });
                None
            };
            results.push(error);
        }
        let entry = (!accepted.is_empty())
            .then(|| Entry::of(now_ms, emit::offsets_committed(group, &accepted)));
        (results, entry)
    }

    /// OffsetFetch: the listed partitions (None where nothing is committed), or every
    /// partition the group committed when `partitions` is None.
    pub fn fetch_offsets(
        &self,
        group: &str,
        partitions: Option<&[TopicPartition]>,
    ) -> Vec<(TopicPartition, Option<StoredOffset>)> {
        let entry = self.groups.get(group);
        match partitions {
            Some(partitions) => partitions
                .iter()
                .map(|tp| {
                    let stored = entry
                        .and_then(|e| e.offsets.get(&(tp.topic_id, tp.partition)))
                        .cloned();
                    (*tp, stored)
                })
                .collect(),
            None => {
                let mut all: Vec<_> = entry
                    .map(|e| {
                        e.offsets
                            .iter()
                            .map(|((topic_id, partition), stored)| {
                                let tp = TopicPartition {
                                    topic_id: *topic_id,
                                    partition: *partition,
                                };
                                (tp, Some(stored.clone()))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                all.sort_by_key(|(tp, _)| *tp);
                all
            }
        }
    }

    /// Every group's lag, by group id; a committed offset past the high watermark (a
    /// truncated partition) counts as no lag.
    pub fn group_lags(&self) -> Vec<GroupLag> {
        let mut lags: Vec<GroupLag> = self
            .groups
            .iter()
            .map(|(group, entry)| {
                let mut lag = GroupLag {
                    group: group.clone(),
                    partitions: 0,
                    total: 0,
                    max: 0,
                };
                for ((topic_id, partition), stored) in &entry.offsets {
                    let Some(state) = self
                        .topics
                        .get(topic_id)
                        .and_then(|t| t.partitions.get(usize::try_from(*partition).ok()?))
                    else {
                        continue;
                    };
                    let behind = (state.high_watermark - stored.offset).max(0);
                    lag.partitions += 1;
                    lag.total = lag.total.saturating_add(behind);
                    lag.max = lag.max.max(behind);
                }
                lag
            })
            .collect();
        lags.sort_by(|a, b| a.group.cmp(&b.group));
        lags
    }

    /// DeleteGroups: every offset and share-partition state of the group. None when it has
    /// neither.
    pub fn delete_group(&self, group: &str, now_ms: i64) -> Option<Entry> {
        if !self.groups.contains_key(group) && !self.has_share_states(group) {
            return None;
        }
        let deleted = ShoalGroupDeletedRecord {
            group_id: group.to_string(),
        };
        Some(Entry::of(now_ms, deleted))
    }

    /// OffsetDelete: the offsets of `partitions` only. Whether the group has offsets, and the
    /// record to append (none when there is nothing to delete).
    pub fn delete_offsets(
        &self,
        group: &str,
        partitions: &[TopicPartition],
        now_ms: i64,
    ) -> (bool, Option<Entry>) {
        let Some(entry) = self.groups.get(group) else {
            return (false, None);
        };
        let stored: Vec<ShoalGroupPartition> = partitions
            .iter()
            .filter(|tp| entry.offsets.contains_key(&(tp.topic_id, tp.partition)))
            .map(|tp| ShoalGroupPartition {
                topic_id: tp.topic_id,
                partition_index: tp.partition,
            })
            .collect();
        let deleted = ShoalGroupOffsetsDeletedRecord {
            group_id: group.to_string(),
            partitions: stored,
        };
        (
            true,
            (!deleted.partitions.is_empty()).then(|| Entry::of(now_ms, deleted)),
        )
    }

    /// Groups with committed offsets, sorted.
    pub fn offset_groups(&self) -> Vec<String> {
        let mut groups: Vec<String> = self.groups.keys().cloned().collect();
        groups.sort();
        groups
    }

    /// Groups that committed nothing since `before_ms`, minus `active` ones and consumer
    /// groups with members recorded, at most `max`: their offsets expire (Kafka's
    /// `offsets.retention.minutes`).
    pub fn offset_expiry_records(
        &self,
        before_ms: i64,
        active: &[String],
        max: usize,
        now_ms: i64,
    ) -> Vec<Entry> {
        let mut expired: Vec<&String> = self
            .groups
            .iter()
            .filter(|(group, entry)| {
                entry.last_commit_ms < before_ms
                    && !active.contains(group)
                    && !self.consumer_groups.contains_key(*group)
                    && !self.streams_groups.contains_key(*group)
            })
            .map(|(group, _)| group)
            .collect();
        expired.sort();
        expired
            .into_iter()
            .take(max)
            .map(|group| {
                let deleted = ShoalGroupDeletedRecord {
                    group_id: group.clone(),
                };
                Entry::of(now_ms, deleted)
            })
            .collect()
    }
}

impl CoordinatorState {
    pub(super) fn apply_group_deleted(&mut self, r: &ShoalGroupDeletedRecord) {
        self.groups.remove(&r.group_id);
        self.forget_group_claim(&r.group_id);
        self.forget_consumer_group(&r.group_id);
        self.forget_streams_group(&r.group_id);
        self.forget_group_share_states(&r.group_id);
        self.group_configs.remove(&r.group_id);
    }

    /// A group's configs as a whole; none left removes the group's entry.
    pub(super) fn apply_group_config(&mut self, r: &ShoalGroupConfigRecord) {
        let configs: Vec<(String, String)> = r
            .configs
            .iter()
            .map(|c| (c.name.clone(), c.value.clone()))
            .collect();
        match configs.is_empty() {
            true => self.group_configs.remove(&r.group_id),
            false => self.group_configs.insert(r.group_id.clone(), configs),
        };
    }
}
