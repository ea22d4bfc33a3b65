//! The whole state as one snapshot image, so recovery loads it instead of replaying history.
//! The image is `SHOALSNP`, a version, frames of the same generated metadata records the log
//! holds, and a CRC-32C of all that. Topics, their settings and mirror states, committed
//! offsets, group claims and mirrors are written as the log records that create them; what
//! only a snapshot holds (id counters, each partition's batches and producers, the objects)
//! has records of its own. Every length is checked against the bytes present: a damaged image
//! is an error, never a panic or a huge allocation.

use std::collections::VecDeque;
use std::sync::Arc;

use shoal_protocol::records::*;
use uuid::Uuid;

use super::partition_transactions::PartitionTransactions;
use super::producers::{ProducerBatch, ProducerState};
use super::{emit, BatchEntry, CoordinatorState, FileState, PartitionState};
use crate::entry::{check_log_entry, Entry};
use crate::frames::{encode_frame, frame_at, read_entry, FRAME_HEADER_BYTES};
use crate::messages::AbortedTransaction;
use crate::records::CommittedOffset;
use crate::CoordinatorError;
use crate::{broker_configs, client_quotas};

const MAGIC: &[u8; 8] = b"SHOALSNP";
/// Version 4: frames of generated metadata records. Older images are refused by name.
const VERSION: u32 = 4;
const PREAMBLE_BYTES: usize = 8 + 4;

impl CoordinatorState {
    pub fn encode_snapshot(&self) -> Vec<u8> {
        let mut w = Vec::with_capacity(64 + self.batch_count() * 48);
        w.extend_from_slice(MAGIC);
        w.extend_from_slice(&VERSION.to_be_bytes());
        let header = ShoalSnapshotHeaderRecord {
            next_file_id: self.next_file_id as i64,
            next_producer_id: self.next_producer_id,
        };
        put_state_record(&mut w, header.into());
        let mut topic_ids: Vec<&Uuid> = self.topics.keys().collect();
        topic_ids.sort();
        for id in topic_ids {
            self.encode_topic(*id, &mut w);
        }
        let mut file_ids: Vec<&u64> = self.files.keys().collect();
        file_ids.sort();
        for id in file_ids {
            let file = &self.files[id];
            let record = ShoalFileStateRecord {
                file_id: *id as i64,
                object_key: file.object_key.to_string(),
                live_batches: file.live_batches as i64,
            };
            put_state_record(&mut w, record.into());
        }
        for (key, since) in &self.deletable_files {
            let record = ShoalDeletableFileRecord {
                object_key: key.to_string(),
                since_ms: *since,
            };
            put_state_record(&mut w, record.into());
        }
        let mut groups: Vec<&String> = self.groups.keys().collect();
        groups.sort();
        for group in groups {
            let entry = &self.groups[group];
            let mut offsets: Vec<CommittedOffset> = entry
                .offsets
                .iter()
                .map(|((topic_id, partition), stored)| CommittedOffset {
                    topic_id: *topic_id,
                    partition: *partition,
                    offset: stored.offset,
                    leader_epoch: stored.leader_epoch,
                    metadata: stored.metadata.clone(),
                })
                .collect();
            offsets.sort_by_key(|o| (o.topic_id, o.partition));
            let committed = emit::offsets_committed(group, &offsets);
            encode_frame(&Entry::of(entry.last_commit_ms, committed), &mut w);
        }
        for claim in self.group_claim_records() {
            encode_frame(&Entry::of(0, claim), &mut w);
        }
        for (group, configs) in &self.group_configs {
            encode_frame(&Entry::of(0, emit::group_config(group, configs)), &mut w);
        }
        for (broker, configs) in &self.broker_configs {
            let record = broker_configs::broker_config_record(*broker, configs);
            encode_frame(&Entry::of(0, record), &mut w);
        }
        if self.features.epoch > 0 {
            encode_frame(&Entry::of(0, self.features.record()), &mut w);
        }
        for records in self.consumer_group_entries() {
            encode_frame(&Entry::new(0, records), &mut w);
        }
        for records in self.streams_group_entries() {
            encode_frame(&Entry::new(0, records), &mut w);
        }
        for record in self.share_state_records() {
            encode_frame(&Entry::of(0, record), &mut w);
        }
        for ((user, mechanism), credential) in &self.scram_credentials {
            let set = emit::scram_credential_set(user, *mechanism, credential);
            encode_frame(&Entry::of(0, set), &mut w);
        }
        for (token_id, token) in self.delegation_tokens.iter() {
            encode_frame(&Entry::of(0, token.record(token_id)), &mut w);
        }
        for record in self.registry_snapshot_records() {
            encode_frame(&Entry::of(0, record), &mut w);
        }
        for binding in &self.acls {
            encode_frame(&Entry::of(0, emit::acl_created(binding)), &mut w);
        }
        for (entity, quotas) in &self.client_quotas {
            for (key, value) in quotas {
                let record = client_quotas::quota_record(entity, key, Some(value.0));
                encode_frame(&Entry::of(0, record), &mut w);
            }
        }
        for t in self.transactions.values() {
            encode_frame(&Entry::of(0, emit::transaction_changed(t)), &mut w);
        }
        for (name, config) in &self.mirrors {
            encode_frame(&Entry::of(0, emit::mirror_created(name, config)), &mut w);
        }
        let crc = crc32c::crc32c(&w);
        w.extend_from_slice(&crc.to_be_bytes());
        w
    }

    fn encode_topic(&self, id: Uuid, w: &mut Vec<u8>) {
        let topic = &self.topics[&id];
        let partitions = topic.partitions.len() as i32;
        let created = emit::topic_created(id, &topic.name, partitions, &topic.overrides);
        encode_frame(&Entry::new(0, created), w);
        if let Some(mirror) = &topic.mirror {
            let changed = emit::topic_mirror_changed(id, &mirror.name, mirror.removed);
            encode_frame(&Entry::of(0, changed), w);
        }
        for (index, p) in topic.partitions.iter().enumerate() {
            let index = index as i32;
            if p.mirror != shoal_mirror::PartitionMirror::default() {
                let changed = emit::mirror_partitions(id, &[(index, p.mirror.clone())]);
                encode_frame(&Entry::of(0, changed), w);
            }
            put_state_record(w, partition_state(id, index, p).into());
            if let Some(cleaned) = Self::cleaned_offset_record(id, index, p) {
                encode_frame(&Entry::of(0, cleaned), w);
            }
            if p.transactions != PartitionTransactions::default() {
                put_state_record(w, partition_transactions(id, index, p).into());
            }
        }
    }

    pub fn decode_snapshot(image: &[u8]) -> Result<CoordinatorState, CoordinatorError> {
        if image.len() < PREAMBLE_BYTES + 4 {
            return Err(malformed("too short"));
        }
        let (body, crc) = image.split_at(image.len() - 4);
        if crc32c::crc32c(body) != u32::from_be_bytes(crc.try_into().expect("4 bytes")) {
            return Err(malformed("checksum mismatch"));
        }
        if &body[..8] != MAGIC {
            return Err(malformed("not a snapshot"));
        }
        let version = u32::from_be_bytes(body[8..12].try_into().expect("4 bytes"));
        if version != VERSION {
            return Err(malformed(&format!(
                "version {version}, this build reads version {VERSION} only"
            )));
        }
        let mut state = CoordinatorState::default();
        let mut pos = PREAMBLE_BYTES;
        let mut first = true;
        while pos < body.len() {
            let (entry, next) = read_entry(body, pos)
                .map_err(|kind| malformed(&format!("frame at byte {pos}: {kind}")))?;
            let at = pos + FRAME_HEADER_BYTES;
            let (time, records) =
                decode_entry(entry).map_err(|e| malformed(&format!("entry at byte {at}: {e}")))?;
            state
                .load_entry(time, records, first)
                .map_err(|e| malformed(&format!("entry at byte {at}: {e}")))?;
            first = false;
            pos = next;
        }
        if first {
            return Err(malformed("no header"));
        }
        Ok(state)
    }

    fn load_entry(
        &mut self,
        time: i64,
        records: Vec<AnyRecord>,
        first: bool,
    ) -> Result<(), String> {
        match (first, records.as_slice()) {
            (true, [AnyRecord::ShoalSnapshotHeaderRecord(h)]) => {
                self.next_file_id = u64::try_from(h.next_file_id).map_err(|_| "file id")?;
                self.next_producer_id = h.next_producer_id;
                Ok(())
            }
            (true, _) => Err("the first entry is not the header".into()),
            (false, [AnyRecord::ShoalPartitionStateRecord(p)]) => self.load_partition(p),
            (false, [AnyRecord::ShoalPartitionTransactionsRecord(t)]) => {
                self.load_partition_transactions(t)
            }
            (false, [AnyRecord::ShoalFileStateRecord(f)]) => {
                let id = u64::try_from(f.file_id).map_err(|_| "negative file id")?;
                let object_key: Arc<str> = Arc::from(f.object_key.as_str());
                self.file_ids.insert(object_key.clone(), id);
                let live_batches = u64::try_from(f.live_batches).map_err(|_| "live batches")?;
                self.files.insert(
                    id,
                    FileState {
                        object_key,
                        live_batches,
                    },
                );
                Ok(())
            }
            (false, [AnyRecord::ShoalDeletableFileRecord(d)]) => {
                self.deletable_files
                    .insert(Arc::from(d.object_key.as_str()), d.since_ms);
                Ok(())
            }
            (false, [first, ..]) => {
                check_log_entry(&records)?;
                // What a snapshot writes as the log writes it: a topic's creation, its mirror
                // and mirror states, group offsets and claims, mirrors, credentials, ACLs,
                // transactions.
                match first {
                    // A new topic: its partitions from 0, then its own configs (an older
                    // Shoal's snapshot: its whole config).
                    AnyRecord::DisklessPartitionCreatedRecord(p)
                        if p.partition_index == 0
                            && records.iter().any(|r| {
                                matches!(
                                    r,
                                    AnyRecord::ShoalTopicOverridesRecord(_)
                                        | AnyRecord::ShoalTopicConfigRecord(_)
                                )
                            }) => {}
                    AnyRecord::ShoalTopicMirrorChangedRecord(_)
                    | AnyRecord::ShoalMirrorPartitionsChangedRecord(_)
                    | AnyRecord::ShoalOffsetsCommittedRecord(_)
                    | AnyRecord::ShoalGroupClaimedRecord(_)
                    | AnyRecord::ShoalConsumerGroupRecord(_)
                    | AnyRecord::ShoalStreamsGroupRecord(_)
                    | AnyRecord::ShoalShareStateRecord(_)
                    | AnyRecord::ShoalGroupConfigRecord(_)
                    | AnyRecord::ShoalBrokerConfigRecord(_)
                    | AnyRecord::ShoalFeatureLevelsRecord(_)
                    | AnyRecord::ShoalMirrorCreatedRecord(_)
                    | AnyRecord::ShoalScramCredentialRecord(_)
                    | AnyRecord::ShoalDelegationTokenRecord(_)
                    | AnyRecord::ShoalRegistrySchemaRecord(_)
                    | AnyRecord::ShoalRegistryVersionRecord(_)
                    | AnyRecord::ShoalRegistrySettingRecord(_)
                    | AnyRecord::ShoalRegistryNextIdRecord(_)
                    | AnyRecord::ShoalAclCreatedRecord(_)
                    | AnyRecord::ShoalClientQuotaRecord(_)
                    | AnyRecord::ShoalTransactionRecord(_) => {}
                    // A partition's cleaned offset, nothing replaced.
                    AnyRecord::ShoalBatchesRewrittenRecord(r)
                        if r.object_key.is_empty() && r.from_offset == r.to_offset => {}
                    other => {
                        return Err(format!(
                            "a log record of type {} in a snapshot",
                            other.record_type()
                        ))
                    }
                }
                self.apply(&Entry::new(time, records));
                Ok(())
            }
            (false, []) => Err("an empty entry".into()),
        }
    }

    fn load_partition_transactions(
        &mut self,
        r: &ShoalPartitionTransactionsRecord,
    ) -> Result<(), String> {
        let p = self
            .partition_mut(r.topic_id, r.partition_index)
            .ok_or_else(|| format!("partition {} of an unknown topic", r.partition_index))?;
        p.transactions = PartitionTransactions {
            open: r
                .open
                .iter()
                .map(|o| (o.producer_id, o.first_offset))
                .collect(),
            aborted: r
                .aborted
                .iter()
                .map(|a| AbortedTransaction {
                    producer_id: a.producer_id,
                    first_offset: a.first_offset,
                    last_offset: a.last_offset,
                })
                .collect(),
        };
        Ok(())
    }

    fn load_partition(&mut self, r: &ShoalPartitionStateRecord) -> Result<(), String> {
        let p = self
            .partition_mut(r.topic_id, r.partition_index)
            .ok_or_else(|| format!("partition {} of an unknown topic", r.partition_index))?;
        p.log_start_offset = r.log_start_offset;
        p.high_watermark = r.high_watermark;
        p.size_bytes = u64::try_from(r.size_bytes).map_err(|_| "negative size")?;
        p.batches = r
            .batches
            .iter()
            .map(BatchEntry::from_snapshot)
            .collect::<Result<VecDeque<_>, String>>()?;
        p.producers = r
            .producers
            .iter()
            .map(|s| {
                let state = ProducerState {
                    epoch: s.producer_epoch,
                    recent: s
                        .recent_batches
                        .iter()
                        .map(|b| ProducerBatch {
                            base_sequence: b.base_sequence,
                            last_sequence: b.last_sequence,
                            base_offset: b.base_offset,
                        })
                        .collect(),
                    last_write_ms: s.last_write_ms,
                };
                (s.producer_id, state)
            })
            .collect();
        Ok(())
    }
}

fn partition_state(topic_id: Uuid, index: i32, p: &PartitionState) -> ShoalPartitionStateRecord {
    let mut producer_ids: Vec<&i64> = p.producers.keys().collect();
    producer_ids.sort();
    ShoalPartitionStateRecord {
        topic_id,
        partition_index: index,
        log_start_offset: p.log_start_offset,
        high_watermark: p.high_watermark,
        size_bytes: p.size_bytes as i64,
        batches: p.batches.iter().map(BatchEntry::snapshot_record).collect(),
        producers: producer_ids
            .into_iter()
            .map(|id| {
                let s = &p.producers[id];
                ShoalProducerState {
                    producer_id: *id,
                    producer_epoch: s.epoch,
                    last_write_ms: s.last_write_ms,
                    recent_batches: s
                        .recent
                        .iter()
                        .map(|b| ShoalProducerBatch {
                            base_sequence: b.base_sequence,
                            last_sequence: b.last_sequence,
                            base_offset: b.base_offset,
                        })
                        .collect(),
                }
            })
            .collect(),
    }
}

fn partition_transactions(
    topic_id: Uuid,
    index: i32,
    p: &PartitionState,
) -> ShoalPartitionTransactionsRecord {
    ShoalPartitionTransactionsRecord {
        topic_id,
        partition_index: index,
        open: p
            .transactions
            .open
            .iter()
            .map(|(producer_id, first_offset)| ShoalOpenTransaction {
                producer_id: *producer_id,
                first_offset: *first_offset,
            })
            .collect(),
        aborted: p
            .transactions
            .aborted
            .iter()
            .map(|a| ShoalAbortedTransaction {
                producer_id: a.producer_id,
                first_offset: a.first_offset,
                last_offset: a.last_offset,
            })
            .collect(),
    }
}

/// Appends one frame holding a snapshot-only record.
fn put_state_record(w: &mut Vec<u8>, record: AnyRecord) {
    let start = w.len();
    w.extend_from_slice(&[0; FRAME_HEADER_BYTES]);
    encode_entry(0, &[record], w).expect("generated encoders accept every record");
    frame_at(w, start);
}

fn malformed(why: &str) -> CoordinatorError {
    CoordinatorError::MalformedSnapshot(why.to_string())
}
