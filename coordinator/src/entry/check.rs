//! The shapes a log entry may take, checked when it is read back: the records one change
//! writes together, in order, with codes this build knows. An entry that fails is damage (or
//! a newer Shoal's), never applied on a guess.

use shoal_mirror::MirrorState;
use shoal_protocol::records::*;

use crate::records::PARTITIONS_PER_TOPIC_MAX;
use crate::records::{TopicCompression, TransactionStatus};

/// WRITE_AHEAD_MULTI_SEGMENT, the only object format.
pub(crate) const OBJECT_FORMAT_WAL: i8 = 1;
/// The record-batch format's magic, which committed batches carry (KIP-1164's coordinates).
/// The format is `shoal_wal::batch`'s; the coordinator does not depend on it, so the engine
/// checks that both say the same (`handlers::diskless::find_batches`).
pub const MAGIC_V2: i8 = 2;

/// Checks one entry of the log: a topic's partitions (with its settings when it is new), a
/// topic's settings, a committed file (with its batches' transaction kinds), or one record.
pub(crate) fn check_log_entry(records: &[AnyRecord]) -> Result<(), String> {
    let (first, rest) = records.split_first().ok_or("an empty entry")?;
    match first {
        AnyRecord::DisklessPartitionCreatedRecord(p) => check_partitions(p, rest),
        AnyRecord::ShoalTopicConfigRecord(c) => check_settings(c, rest),
        AnyRecord::ShoalTopicOverridesRecord(o) => {
            check_overrides(o)?;
            alone(rest)
        }
        AnyRecord::DisklessFileCommittedRecord(f) => {
            let batches = check_file(f)?;
            match rest {
                [AnyRecord::ShoalTransactionalBatchesRecord(kinds), more @ ..] => {
                    check_batch_kinds(kinds, batches)?;
                    alone(more)
                }
                _ => alone(rest),
            }
        }
        AnyRecord::ShoalMirrorPartitionsChangedRecord(m) => {
            for p in &m.partitions {
                MirrorState::from_code(p.state)
                    .ok_or_else(|| format!("mirror state code {}", p.state))?;
            }
            alone(rest)
        }
        AnyRecord::ShoalBatchesRewrittenRecord(r) => {
            check_rewrite(r)?;
            alone(rest)
        }
        AnyRecord::ShoalConsumerGroupRecord(g) => check_consumer_group(g, rest),
        AnyRecord::ShoalStreamsGroupRecord(g) => check_streams_group(g, rest),
        AnyRecord::ShoalShareStateRecord(_) => check_share_states(records),
        AnyRecord::ShoalClientQuotaRecord(q) => check_client_quotas(q, rest),
        AnyRecord::ShoalBrokerConfigRecord(c) => {
            crate::broker_configs::check_broker_config(c)?;
            alone(rest)
        }
        AnyRecord::ShoalDelegationTokenRecord(t) => {
            crate::delegation_tokens::check_token_record(t)?;
            alone(rest)
        }
        AnyRecord::ShoalFeatureLevelsRecord(f) => {
            crate::features::check_feature_levels(f)?;
            alone(rest)
        }
        AnyRecord::ShoalTransactionRecord(_) => check_transactions(records),
        AnyRecord::ShoalRegistrySchemaRecord(_)
        | AnyRecord::ShoalRegistryVersionRecord(_)
        | AnyRecord::ShoalRegistryVersionDeletedRecord(_)
        | AnyRecord::ShoalRegistrySettingRecord(_)
        | AnyRecord::ShoalRegistryNextIdRecord(_) => check_registry_records(records),
        AnyRecord::DisklessTopicDeletedRecord(_)
        | AnyRecord::DisklessRecordsDeletedRecord(_)
        | AnyRecord::ShoalTransactionsExpiredRecord(_)
        | AnyRecord::ShoalProducerIdAllocatedRecord(_)
        | AnyRecord::ShoalFilesDeletedRecord(_)
        | AnyRecord::ShoalProducersExpiredRecord(_)
        | AnyRecord::ShoalOffsetsCommittedRecord(_)
        | AnyRecord::ShoalGroupOffsetsDeletedRecord(_)
        | AnyRecord::ShoalGroupDeletedRecord(_)
        | AnyRecord::ShoalGroupClaimedRecord(_)
        | AnyRecord::ShoalGroupConfigRecord(_)
        | AnyRecord::ShoalMirrorCreatedRecord(_)
        | AnyRecord::ShoalTopicMirrorChangedRecord(_)
        | AnyRecord::ShoalPartitionTruncatedRecord(_)
        | AnyRecord::ShoalScramCredentialRecord(_)
        | AnyRecord::ShoalScramCredentialDeletedRecord(_)
        | AnyRecord::ShoalDelegationTokenRemovedRecord(_)
        | AnyRecord::ShoalAclCreatedRecord(_)
        | AnyRecord::ShoalAclDeletedRecord(_) => alone(rest),
        other => Err(format!(
            "record type {} in a log entry",
            other.record_type()
        )),
    }
}

/// A schema registry change: registry records only (a new schema with its first version, a
/// subject's versions deleted together), each well formed.
fn check_registry_records(records: &[AnyRecord]) -> Result<(), String> {
    for record in records {
        match record {
            AnyRecord::ShoalRegistrySchemaRecord(_)
            | AnyRecord::ShoalRegistryVersionRecord(_)
            | AnyRecord::ShoalRegistryVersionDeletedRecord(_)
            | AnyRecord::ShoalRegistrySettingRecord(_)
            | AnyRecord::ShoalRegistryNextIdRecord(_) => {
                crate::registry_records::check_registry_record(record)?
            }
            other => {
                return Err(format!(
                    "record type {} in a schema registry entry",
                    other.record_type()
                ))
            }
        }
    }
    Ok(())
}

/// A consumer group's record, then only its members' (none when it is deleted), each with a
/// known reconciliation state.
fn check_consumer_group(
    group: &ShoalConsumerGroupRecord,
    rest: &[AnyRecord],
) -> Result<(), String> {
    if group.deleted && !rest.is_empty() {
        return Err(format!(
            "members after consumer group {} was deleted",
            group.group_id
        ));
    }
    for record in rest {
        let AnyRecord::ShoalConsumerMemberRecord(m) = record else {
            return Err(format!(
                "record type {} in consumer group {}'s entry",
                record.record_type(),
                group.group_id
            ));
        };
        if !(0..=2).contains(&m.state) {
            return Err(format!("consumer member state {}", m.state));
        }
    }
    Ok(())
}

/// A streams group's record, then only its members' (none when it is deleted), each with a
/// known reconciliation state.
fn check_streams_group(group: &ShoalStreamsGroupRecord, rest: &[AnyRecord]) -> Result<(), String> {
    if group.deleted && !rest.is_empty() {
        return Err(format!(
            "members after streams group {} was deleted",
            group.group_id
        ));
    }
    for record in rest {
        let AnyRecord::ShoalStreamsMemberRecord(m) = record else {
            return Err(format!(
                "record type {} in streams group {}'s entry",
                record.record_type(),
                group.group_id
            ));
        };
        if !(0..=2).contains(&m.state) {
            return Err(format!("streams member state {}", m.state));
        }
    }
    Ok(())
}

/// Share-partition states only (one write holds those of several partitions), each with
/// known states in runs that go forward from its start without gaps, no more of them than a
/// share-partition may hold in flight.
fn check_share_states(records: &[AnyRecord]) -> Result<(), String> {
    for record in records {
        let AnyRecord::ShoalShareStateRecord(r) = record else {
            return Err(format!(
                "record type {} among share states",
                record.record_type()
            ));
        };
        if r.batches.len() > SHARE_STATE_RUNS_MAX {
            return Err(format!("{} runs in one share state", r.batches.len()));
        }
        let mut next = r.start_offset;
        for batch in &r.batches {
            if batch.first_offset != next || batch.last_offset < batch.first_offset {
                return Err(format!(
                    "share state run {}..={} where {next} was next",
                    batch.first_offset, batch.last_offset
                ));
            }
            if ![0, 2, 4].contains(&batch.state) {
                return Err(format!("share record state {}", batch.state));
            }
            next = batch.last_offset.saturating_add(1);
        }
    }
    Ok(())
}

/// Runs in one share-partition's state: at most one per record in flight (Kafka's largest
/// `share.partition.max.record.locks` is 4,000).
const SHARE_STATE_RUNS_MAX: usize = 4_000;

/// Nothing may follow a whole change.
/// One entity's quotas as AlterClientQuotas sets them: a known entity in order, known keys
/// and valid values; only quota records follow.
fn check_client_quotas(first: &ShoalClientQuotaRecord, rest: &[AnyRecord]) -> Result<(), String> {
    use crate::client_quotas::{check_quota, checked_entity, entity_of};
    let check = |q: &ShoalClientQuotaRecord| {
        let entity = entity_of(q);
        if checked_entity(entity.clone())? != entity {
            return Err("a client quota's entity is out of order".to_string());
        }
        match q.remove {
            true => Ok(()),
            false => check_quota(&q.key, q.value),
        }
    };
    check(first)?;
    for record in rest {
        match record {
            AnyRecord::ShoalClientQuotaRecord(q) => check(q)?,
            other => {
                return Err(format!(
                    "record type {} after a client quota",
                    other.record_type()
                ))
            }
        }
    }
    Ok(())
}

/// Transactional ids' changes: one alone, or those a committed file's batches made by
/// joining their transactions (transactions V2), followed by that file.
fn check_transactions(records: &[AnyRecord]) -> Result<(), String> {
    let mut rest = records;
    while let [AnyRecord::ShoalTransactionRecord(t), more @ ..] = rest {
        status_of(t.state).ok_or_else(|| format!("transaction state {} is unknown", t.state))?;
        rest = more;
    }
    match rest {
        [] => Ok(()),
        [AnyRecord::DisklessFileCommittedRecord(_), ..] => check_log_entry(rest),
        [other, ..] => Err(format!(
            "record type {} after a transaction",
            other.record_type()
        )),
    }
}

fn alone(rest: &[AnyRecord]) -> Result<(), String> {
    match rest.first() {
        None => Ok(()),
        Some(extra) => Err(format!(
            "record type {} after a whole record",
            extra.record_type()
        )),
    }
}

/// A run of `DisklessPartitionCreatedRecord`s for consecutive partitions of one topic: a new
/// topic (from partition 0) when its settings follow, more partitions when they do not.
fn check_partitions(
    first: &DisklessPartitionCreatedRecord,
    rest: &[AnyRecord],
) -> Result<(), String> {
    let mut next = first
        .partition_index
        .checked_add(1)
        .ok_or("partition index overflow")?;
    let mut rest = rest;
    while let [AnyRecord::DisklessPartitionCreatedRecord(p), more @ ..] = rest {
        if p.topic_id != first.topic_id || p.name != first.name || p.partition_index != next {
            return Err(format!(
                "record type {} does not continue the partitions of topic {}",
                DisklessPartitionCreatedRecord::TYPE,
                first.topic_id
            ));
        }
        next += 1;
        rest = more;
    }
    if !(1..=PARTITIONS_PER_TOPIC_MAX).contains(&next) || first.partition_index < 0 {
        return Err(format!(
            "partitions {}..{next} of topic {}",
            first.partition_index, first.topic_id
        ));
    }
    match rest {
        [] => Ok(()),
        [AnyRecord::ShoalTopicConfigRecord(c), more @ ..] if c.topic_id == first.topic_id => {
            if first.partition_index != 0 {
                return Err("a new topic's partitions must start at 0".to_string());
            }
            check_settings(c, more)
        }
        [AnyRecord::ShoalTopicOverridesRecord(o), more @ ..] if o.topic_id == first.topic_id => {
            if first.partition_index != 0 {
                return Err("a new topic's partitions must start at 0".to_string());
            }
            check_overrides(o)?;
            alone(more)
        }
        [other, ..] => Err(format!(
            "record type {} does not continue the partitions of topic {}",
            other.record_type(),
            first.topic_id
        )),
    }
}

/// A topic's settings as an older Shoal wrote them: its config record, then its compression
/// when not "producer", then its compaction settings when not the defaults.
fn check_settings(config: &ShoalTopicConfigRecord, rest: &[AnyRecord]) -> Result<(), String> {
    let rest = match rest {
        [AnyRecord::ShoalTopicCompressionRecord(c), more @ ..] if c.topic_id == config.topic_id => {
            compression_of(c)?;
            more
        }
        _ => rest,
    };
    match rest {
        [AnyRecord::ShoalTopicCompactionRecord(c), more @ ..] if c.topic_id == config.topic_id => {
            if !c.compact && !c.delete {
                return Err(format!("topic {} has no cleanup policy", c.topic_id));
            }
            alone(more)
        }
        _ => alone(rest),
    }
}

/// The configs a topic sets itself: each named, once (a name this build does not know, a
/// newer Shoal's, is kept and means nothing here; a value the topic config table refuses
/// counts as not set when the topic's config is resolved).
fn check_overrides(o: &ShoalTopicOverridesRecord) -> Result<(), String> {
    let mut names: Vec<&str> = o.configs.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    if names.first() == Some(&"") || names.windows(2).any(|w| w[0] == w[1]) {
        return Err(format!(
            "topic {}'s own configs are misnamed or named twice",
            o.topic_id
        ));
    }
    Ok(())
}

/// A rewrite's batches lie in its range, in order, without overlapping; a range with none
/// replaced names no batch.
fn check_rewrite(r: &ShoalBatchesRewrittenRecord) -> Result<(), String> {
    if r.to_offset < r.from_offset {
        return Err(format!(
            "rewritten range {}..{}",
            r.from_offset, r.to_offset
        ));
    }
    let mut next = r.from_offset;
    for b in &r.batches {
        let malformed = b.base_offset < next
            || b.last_offset < b.base_offset
            || b.last_offset >= r.to_offset
            || b.byte_offset < 0
            || b.byte_size < 0;
        if malformed {
            return Err(format!(
                "a rewritten batch of object {} is malformed",
                r.object_key
            ));
        }
        next = b.last_offset + 1;
    }
    if !r.batches.is_empty() && r.object_key.is_empty() {
        return Err("rewritten batches without an object".to_string());
    }
    Ok(())
}

/// The file's batches, counted; an error for a format or batch this build does not write.
fn check_file(r: &DisklessFileCommittedRecord) -> Result<usize, String> {
    if r.object_format != OBJECT_FORMAT_WAL || r.file_size < 0 {
        return Err(format!(
            "object {} has format {} and size {}",
            r.object_key, r.object_format, r.file_size
        ));
    }
    let mut count = 0;
    for b in r
        .topics
        .iter()
        .flat_map(|t| &t.partitions)
        .flat_map(|p| &p.batches)
    {
        if b.magic != MAGIC_V2
            || b.byte_offset < 0
            || b.byte_size < 0
            || b.assigned_last_offset < b.assigned_base_offset
        {
            return Err(format!("a batch of object {} is malformed", r.object_key));
        }
        count += 1;
    }
    Ok(count)
}

/// The listed batches' indexes rise and lie within the file; their kinds are known.
fn check_batch_kinds(r: &ShoalTransactionalBatchesRecord, batches: usize) -> Result<(), String> {
    let mut previous = -1i64;
    for listed in &r.batches {
        let index = listed.index as i64;
        if index <= previous || index >= batches as i64 {
            return Err(format!(
                "transactional batch index {index} out of order or range"
            ));
        }
        if !(1..=3).contains(&listed.kind) {
            return Err(format!("batch kind {} is unknown", listed.kind));
        }
        previous = index;
    }
    Ok(())
}

pub(crate) fn compression_of(r: &ShoalTopicCompressionRecord) -> Result<TopicCompression, String> {
    Ok(match r.compression_type {
        1 => TopicCompression::Uncompressed,
        2 => TopicCompression::Gzip,
        3 => TopicCompression::Snappy,
        4 => TopicCompression::Lz4,
        5 => TopicCompression::Zstd,
        other => {
            return Err(format!(
                "compression type {other} of topic {} is unknown",
                r.topic_id
            ))
        }
    })
}

pub(crate) fn status_of(code: i8) -> Option<TransactionStatus> {
    Some(match code {
        0 => TransactionStatus::Empty,
        1 => TransactionStatus::Ongoing,
        2 => TransactionStatus::PrepareCommit,
        3 => TransactionStatus::PrepareAbort,
        4 => TransactionStatus::CompleteCommit,
        5 => TransactionStatus::CompleteAbort,
        _ => return None,
    })
}
