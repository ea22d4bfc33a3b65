//! Compaction with Kafka's log cleaner's semantics. Pass one reads the dirty range (from the
//! cleaned offset to the cleanable end) into a key map of each key's latest offset, stopping
//! early when the map's budget is spent; pass two rewrites the partition from its first batch
//! to where pass one stopped, keeping a record only if no later record of its key is in the
//! map. Records without a key and records of aborted transactions are dropped; tombstones
//! written longer than delete.retention.ms ago are dropped; transaction markers are kept.
//! Batches keep their base and last offsets, so offsets never move. The last swap of a pass
//! moves the cleaned offset to where it stopped.

use shoal_coordinator::{AbortedTransaction, BatchCoordinate, RewritePlan};
use shoal_wal::compaction::rebuild_batch;
use shoal_wal::records::{inflate_payload, keyed_records, KeyedRecord};
use shoal_wal::BatchHeader;

use super::key_map::KeyMap;
use super::output::{Output, Swap};
use super::reading::Batches;
use super::{Outcome, Pace};
use crate::maintenance::now_ms;
use crate::{Shard, ShardError};

pub async fn compact(
    shard: &Shard,
    plan: &RewritePlan,
    pace: &mut Pace,
) -> Result<Outcome, ShardError> {
    let Some((map, end)) = map_dirty_range(shard, plan, pace).await? else {
        return Ok(Outcome::default());
    };
    let config = &shard.config.rewrite;
    let inflated_max = shard.config.produce.max_inflated_batch_bytes;
    let tombstones_before = now_ms().saturating_sub(plan.delete_retention_ms);
    let mut outcome = Outcome::default();
    let mut output = Output::new(plan.partition, config.object_max_bytes);
    let mut batches = Batches::new(shard, plan.partition, plan.from_offset, end);
    while let Some(step) = batches.next_step(pace).await? {
        for (read, bytes) in step {
            let header = BatchHeader::parse(&bytes)?;
            let rewritten = if header.is_control() {
                Some(bytes.to_vec())
            } else if is_aborted(&read, &header, &plan.aborted) {
                outcome.records_removed += header.record_count as u64;
                None
            } else {
                let inflated = inflate_payload(&bytes, &header, inflated_max)?;
                let records = keyed_records(&inflated, &header)?;
                let total = records.len();
                let kept: Vec<KeyedRecord<'_>> = records
                    .into_iter()
                    .filter(|r| {
                        let Some(key) = r.key else {
                            return false;
                        };
                        let offset = read.base_offset + r.offset_delta as i64;
                        let superseded = map.latest(key).is_some_and(|latest| latest > offset);
                        let expired = r.is_tombstone && read.log_append_time_ms < tombstones_before;
                        !superseded && !expired
                    })
                    .collect();
                outcome.records_removed += (total - kept.len()) as u64;
                match kept.len() == total {
                    true => Some(bytes.to_vec()),
                    false => rebuild_batch(&bytes, &header, &kept, read.base_offset)?,
                }
            };
            let size = rewritten.as_ref().map_or(0, Vec::len);
            if !output.is_empty() && output.len() + size > config.object_max_bytes {
                if output.swap(shard, None).await? == Swap::Lost {
                    return Ok(outcome.lost());
                }
                outcome.objects += 1;
            }
            outcome.bytes += bytes.len() as u64;
            output.push(read, rewritten.as_deref())?;
            pace.step().await;
        }
    }
    // The last swap holds at least the last batch read, and completes the pass.
    if output.swap(shard, Some(end)).await? == Swap::Lost {
        return Ok(outcome.lost());
    }
    outcome.objects += 1;
    shard
        .metrics
        .counters
        .compaction_records_removed
        .add(outcome.records_removed);
    outcome.keys = map.len();
    Ok(outcome)
}

/// Pass one: the key map of the dirty range, and where the pass must stop (the cleanable end,
/// or earlier where the map's budget ran out). None when there is nothing dirty to read.
async fn map_dirty_range(
    shard: &Shard,
    plan: &RewritePlan,
    pace: &mut Pace,
) -> Result<Option<(KeyMap, i64)>, ShardError> {
    let config = &shard.config.rewrite;
    let inflated_max = shard.config.produce.max_inflated_batch_bytes;
    let mut map = KeyMap::with_budget(config.dedupe_buffer_bytes);
    let mut end = plan.end_offset;
    let mut batches = Batches::new(shard, plan.partition, plan.cleaned_offset, end);
    'reading: while let Some(step) = batches.next_step(pace).await? {
        for (read, bytes) in step {
            let header = BatchHeader::parse(&bytes)?;
            if header.is_control() || is_aborted(&read, &header, &plan.aborted) {
                continue;
            }
            let inflated = inflate_payload(&bytes, &header, inflated_max)?;
            let records = keyed_records(&inflated, &header)?;
            // A batch is mapped whole or not at all; one always is, so a pass moves on.
            if !map.is_empty() && !map.has_room_for(records.len()) {
                end = read.base_offset;
                break 'reading;
            }
            for r in &records {
                if let Some(key) = r.key {
                    map.insert(key, read.base_offset + r.offset_delta as i64);
                }
            }
            pace.step().await;
        }
    }
    Ok((end > plan.cleaned_offset).then_some((map, end)))
}

/// A transactional batch of a transaction that was aborted.
fn is_aborted(
    read: &BatchCoordinate,
    header: &BatchHeader,
    aborted: &[AbortedTransaction],
) -> bool {
    header.is_transactional()
        && aborted.iter().any(|a| {
            a.producer_id == header.producer_id
                && a.first_offset <= read.base_offset
                && read.base_offset <= a.last_offset
        })
}
