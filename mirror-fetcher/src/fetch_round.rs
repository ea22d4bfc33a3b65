//! One mirror's work against its source: PREPARING (truncate to the source's last mirrored
//! offset) and a fetch round (Fetch at the local end, store the batches at their offsets,
//! follow the source's log start).

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::commands::{DeleteRecords, ListOffsets, Truncate};
use shoal_coordinator::{MirrorEvent, TopicPartition, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP};
use shoal_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use shoal_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use shoal_protocol::messages::{
    BrokerId, FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse, TopicName,
};
use shoal_protocol::mirror as m;
use shoal_protocol::ResponseError;
use shoal_shards::mirror::store::FetchedBatch;
use shoal_wal::{BatchHeader, WalError};

use super::client::{FETCH, LIST_OFFSETS};
use super::session::{event, events, failed, OwnedPartition, Session};
use crate::FetchError;
use crate::Host;
use shoal_protocol::codes as error_codes;
use shoal_shards::mirror::progress::SourceOffsets;

/// Truncates the partition to the source's last mirrored offset (0 when the source has no
/// record, or does not speak KIP-1279), then lets it start MIRRORING.
pub async fn prepare(
    broker: &dyn Host,
    s: &mut Session,
    p: &OwnedPartition,
) -> Result<(), FetchError> {
    let lmo = if s.source_knows_mirrors {
        let request = m::LastMirroredOffsetsRequest {
            mirror_name: s.name.clone(),
            topics: vec![m::last_mirrored_offsets_request::TopicData {
                name: p.topic.clone(),
                partitions: vec![m::last_mirrored_offsets_request::PartitionData {
                    partition_index: p.partition.partition,
                }],
            }],
        };
        let client = s.client.as_mut().ok_or_else(not_connected)?;
        let response: m::LastMirroredOffsetsResponse =
            client.call(0, &request, Duration::ZERO).await?;
        response
            .topics
            .first()
            .and_then(|t| t.partitions.first())
            .map_or(0, |p| p.last_mirrored_offset.max(0))
    } else {
        0
    };
    truncate(broker, p.partition, lmo).await?;
    s.fetch_from.remove(&p.partition);
    tracing::info!(mirror = %s.name, topic = %p.topic, partition = p.partition.partition, lmo, "mirror partition prepared");
    event(broker, p.partition, MirrorEvent::Prepared).await;
    Ok(())
}

async fn truncate(
    broker: &dyn Host,
    partition: TopicPartition,
    offset: i64,
) -> Result<(), FetchError> {
    match broker
        .shard()
        .coordinator
        .run(Truncate { partition, offset })
        .await
    {
        Ok(Ok(())) => Ok(()),
        other => Err(FetchError::Source(format!("truncation refused: {other:?}"))),
    }
}

/// (log start, high watermark) of local partitions.
async fn local_offsets(
    broker: &dyn Host,
    partitions: &[OwnedPartition],
) -> Result<Vec<(i64, i64)>, FetchError> {
    let request = ListOffsets {
        read_committed: false,
        partitions: partitions
            .iter()
            .flat_map(|p| {
                [
                    (p.partition, EARLIEST_TIMESTAMP),
                    (p.partition, LATEST_TIMESTAMP),
                ]
            })
            .collect(),
    };
    match broker.shard().coordinator.run(request).await {
        Ok(r) if r.len() == partitions.len() * 2 => {
            Ok(r.chunks(2).map(|c| (c[0].offset, c[1].offset)).collect())
        }
        _ => Err(FetchError::Source("local offsets unavailable".into())),
    }
}

pub async fn fetch_round(
    broker: &dyn Host,
    s: &mut Session,
    partitions: &[OwnedPartition],
) -> Result<(), FetchError> {
    let local = local_offsets(broker, partitions).await?;
    let (request, fetch_offsets) = fetch_request(s, partitions, &local);
    let wait = Duration::from_millis(s.config.fetch_wait_max_ms as u64);
    let client = s.client.as_mut().ok_or_else(not_connected)?;
    let response: FetchResponse = client.call_api(FETCH, &request, wait).await?;
    let mut stored: Vec<FetchedBatch> = Vec::new();
    let mut source_starts: Vec<(usize, i64)> = Vec::new();
    for topic in &response.responses {
        for data in &topic.partitions {
            let Some(index) = partitions.iter().position(|p| {
                p.topic == topic.topic.0.as_str() && p.partition.partition == data.partition_index
            }) else {
                continue;
            };
            let p = &partitions[index];
            let from = fetch_offsets[&p.partition];
            match data.error_code {
                error_codes::NONE => {}
                code if code == ResponseError::OffsetOutOfRange.code() => {
                    realign(broker, s, p, from).await?;
                    continue;
                }
                code => {
                    tracing::warn!(mirror = %s.name, topic = %p.topic, partition = p.partition.partition, code, "source refused the fetch; the partition is retried as the mirror's failed.retry settings say (shoal mirror describe shows its state)");
                    event(broker, p.partition, failed()).await;
                    continue;
                }
            }
            let records = data.records.clone().unwrap_or_default();
            let batches = split_batches(&records, from);
            let fetched_end = fetched_end(&batches, from);
            broker.shard().mirror_progress.record(
                &s.name,
                &p.topic,
                p.partition,
                SourceOffsets {
                    high_watermark: data.high_watermark,
                    log_start_offset: data.log_start_offset,
                },
                fetched_end,
            );
            source_starts.push((index, data.log_start_offset));
            match batches {
                Ok(batches) => {
                    stored.extend(batches.into_iter().map(|(header, bytes)| FetchedBatch {
                        partition: p.partition,
                        header,
                        bytes,
                    }))
                }
                Err(e) => {
                    tracing::warn!(mirror = %s.name, topic = %p.topic, error = %e, "malformed batch from the source");
                    event(broker, p.partition, failed()).await;
                }
            }
        }
    }
    store(broker, stored).await?;
    follow_source_starts(broker, partitions, &local, source_starts).await;
    Ok(())
}

/// The source has no data at `from`: its log start moved past it (continue from there, the
/// gap stays a gap) or its log ends before it (truncate locally to its end).
async fn realign(
    broker: &dyn Host,
    s: &mut Session,
    p: &OwnedPartition,
    from: i64,
) -> Result<(), FetchError> {
    let (start, end) = source_offsets(s, p).await?;
    if from < start {
        s.fetch_from.insert(p.partition, start);
    } else if from > end {
        truncate(broker, p.partition, end).await?;
        s.fetch_from.remove(&p.partition);
    }
    tracing::info!(mirror = %s.name, topic = %p.topic, from, start, end, "realigned with the source");
    Ok(())
}

async fn source_offsets(s: &mut Session, p: &OwnedPartition) -> Result<(i64, i64), FetchError> {
    let ask = |timestamp| {
        ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(TopicName(StrBytes::from_string(p.topic.clone())))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(p.partition.partition)
                    .with_current_leader_epoch(-1)
                    .with_timestamp(timestamp)])])
    };
    let mut offsets = [0i64; 2];
    for (slot, timestamp) in [EARLIEST_TIMESTAMP, LATEST_TIMESTAMP]
        .into_iter()
        .enumerate()
    {
        let request = ask(timestamp);
        let client = s.client.as_mut().ok_or_else(not_connected)?;
        let response: ListOffsetsResponse = client
            .call_api(LIST_OFFSETS, &request, Duration::ZERO)
            .await?;
        offsets[slot] = response
            .topics
            .first()
            .and_then(|t| t.partitions.first())
            .filter(|p| p.error_code == error_codes::NONE)
            .map(|p| p.offset)
            .ok_or_else(|| FetchError::Source("ListOffsets refused".into()))?;
    }
    Ok((offsets[0], offsets[1]))
}

/// Whole, valid batches that hold offsets at or after `from` (the first may start before it
/// when the source's log start is inside a batch; the coordinator refuses any overlap with
/// local data). A batch cut short at the end of the response (the source's size limit) is
/// left for the next round; a corrupt one is an error.
fn split_batches(records: &Bytes, from: i64) -> Result<Vec<(BatchHeader, Bytes)>, WalError> {
    let mut batches = Vec::new();
    let mut pos = 0;
    while pos < records.len() {
        let rest = &records[pos..];
        let header = match BatchHeader::parse_validated(rest) {
            Ok(header) => header,
            Err(WalError::BatchLengthMismatch { .. }) | Err(WalError::BatchTooShort(_)) => break,
            Err(e) => return Err(e),
        };
        if header.base_offset + header.last_offset_delta as i64 >= from {
            batches.push((header, records.slice(pos..pos + header.size_bytes)));
        }
        pos += header.size_bytes;
    }
    Ok(batches)
}

fn not_connected() -> FetchError {
    FetchError::Source("not connected".into())
}

/// One Fetch for every partition, each from past its local end (or where an earlier round
/// left it), and the offset each starts from.
fn fetch_request(
    s: &Session,
    partitions: &[OwnedPartition],
    local: &[(i64, i64)],
) -> (FetchRequest, HashMap<TopicPartition, i64>) {
    let mut fetch_offsets = HashMap::new();
    let mut by_topic: Vec<(String, Vec<FetchPartition>)> = Vec::new();
    for (p, (_, local_end)) in partitions.iter().zip(local) {
        let from = s
            .fetch_from
            .get(&p.partition)
            .copied()
            .filter(|f| f > local_end)
            .unwrap_or(*local_end);
        fetch_offsets.insert(p.partition, from);
        let fetch = FetchPartition::default()
            .with_partition(p.partition.partition)
            .with_fetch_offset(from)
            .with_partition_max_bytes(s.config.fetch_max_bytes as i32)
            .with_current_leader_epoch(-1)
            .with_log_start_offset(-1);
        match by_topic.iter_mut().find(|(t, _)| *t == p.topic) {
            Some((_, list)) => list.push(fetch),
            None => by_topic.push((p.topic.clone(), vec![fetch])),
        }
    }
    let request = FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(s.config.fetch_wait_max_ms as i32)
        .with_min_bytes(s.config.fetch_min_bytes as i32)
        .with_max_bytes(s.config.fetch_response_max_bytes as i32)
        .with_topics(
            by_topic
                .into_iter()
                .map(|(topic, partitions)| {
                    FetchTopic::default()
                        .with_topic(TopicName(StrBytes::from_string(topic)))
                        .with_partitions(partitions)
                })
                .collect(),
        );
    (request, fetch_offsets)
}

/// Appends what the round fetched, as the source wrote it.
async fn store(broker: &dyn Host, stored: Vec<FetchedBatch>) -> Result<(), FetchError> {
    if stored.is_empty() {
        return Ok(());
    }
    let results = broker
        .shard()
        .store_mirrored(stored)
        .await
        .map_err(|e| FetchError::Source(format!("storing mirrored batches: {e:?}")))?;
    if let Some(refused) = results.iter().find(|r| r.error.is_some()) {
        tracing::debug!(error = ?refused.error, "some mirrored batches were refused");
    }
    Ok(())
}

/// Keeps the source's log start: records it deleted are deleted here too. One write for the
/// round's new starts, one for its recoveries.
async fn follow_source_starts(
    broker: &dyn Host,
    partitions: &[OwnedPartition],
    local: &[(i64, i64)],
    source_starts: Vec<(usize, i64)>,
) {
    let mut starts = Vec::new();
    let mut recovered = Vec::new();
    for (index, source_start) in source_starts {
        let p = &partitions[index];
        let (local_start, _) = local[index];
        if source_start > local_start {
            starts.push((p.partition, source_start));
        }
        if p.mirror.failures > 0 {
            recovered.push((p.partition, MirrorEvent::Fetched));
        }
    }
    if !starts.is_empty() {
        let _ = broker
            .shard()
            .coordinator
            .run(DeleteRecords { partitions: starts })
            .await;
    }
    events(broker, recovered).await;
}

/// The offset after the last batch fetched (`from` when none was).
fn fetched_end(batches: &Result<Vec<(BatchHeader, Bytes)>, WalError>, from: i64) -> i64 {
    (batches.as_ref().ok())
        .and_then(|b| b.last())
        .map_or(from, |(h, _)| {
            h.base_offset + h.last_offset_delta as i64 + 1
        })
}
