//! ShareFetch (KIP-932): a share group's member fetches records of its share session's
//! partitions and acknowledges those it was given before. Three steps:
//! 1. the session step on the group's shard (the session opened, checked or closed, the
//!    acknowledgements applied, and where each partition reads from);
//! 2. the records read as Fetch reads them (long-polling for new ones), from the first
//!    available record of each share-partition; for one this broker holds nothing of, from
//!    where its state in the coordinator's log says, or for one new to the group from where
//!    `share.auto.offset.reset` says;
//! 3. the records read handed to the member under a lock on the group's shard; those the
//!    member got are sent with the batches that hold them.

use std::collections::BTreeMap;

use bytes::Bytes;

use shoal_coordinator::commands::{ListOffsets, ReadShareGroupStates};
use shoal_coordinator::TopicPartition;
use shoal_protocol::messages::share_fetch_response::{
    AcquiredRecords, LeaderIdAndEpoch, PartitionData, ShareFetchableTopicResponse,
};
use shoal_protocol::messages::{ShareFetchRequest, ShareFetchResponse};
use shoal_protocol::ResponseError;
use shoal_shards::groups::share::calls::{AcquireAnswer, ShareAcquireCall};
use shoal_shards::groups::share::delivery::{
    covering, end_of_records, never_delivered, runs, AcquiredRun,
};
use shoal_shards::groups::share::group::{ReadFrom, ReadRecords, SESSION_CLOSE_EPOCH};
use shoal_shards::groups::share::partition::{SharePartition, ShareState};
use shoal_shards::groups::share::registry::{SessionAnswer, SessionStep};
use shoal_shards::groups::share::stored::from_record;
use shoal_shards::groups::GroupError;
use shoal_shards::maintenance::now_ms;
use shoal_shards::{PartitionFetch, PartitionFetchResult};
use uuid::Uuid;

use super::dead_letters;
use super::share_session::{
    acks_of, named_partitions, partition_of, renew_allowed, session_step, share_request,
    PartitionOutcome, ShareRequest,
};
use super::topics_as;
use crate::context::Call;
use crate::handlers::configs::group_configs::{AutoOffsetReset, ShareGroupSettings};
use crate::handlers::metadata::LEADER_EPOCH;
use crate::kafka::error_codes;

/// ListOffsets' timestamps for the earliest and the latest offset.
const EARLIEST: i64 = -2;
const LATEST: i64 = -1;
/// A ShareFetch that names no record limit gets the Java client's `max.poll.records`.
const DEFAULT_MAX_RECORDS: usize = 500;
/// A share-partition's first read, before the size of its records is known.
const FIRST_READ_BYTES: u32 = 1 << 20;
/// No read smaller than one large batch.
const MIN_READ_BYTES: u64 = 64 << 10;

pub async fn handle(call: &Call<'_>, request: ShareFetchRequest) -> ShareFetchResponse {
    let broker = call.broker;
    let (group, member) = (request.group_id.as_ref(), request.member_id.as_ref());
    let started = share_request(call, group, member, named_partitions!(request.topics));
    let ShareRequest {
        group_id,
        member_id,
        mut checked,
        settings,
    } = match started {
        Ok(started) => started,
        Err(code) => return refused(code),
    };
    let forget = request
        .forgotten_topics_data
        .iter()
        .flat_map(|t| TopicPartition::each(t.topic_id, &t.partitions))
        .collect();
    let step = SessionStep {
        member_id: member_id.clone(),
        epoch: request.share_session_epoch,
        is_fetch: true,
        add: checked.usable.iter().map(partition_of).collect(),
        forget,
        acks: acks_of(&checked.usable, renew_allowed(call, &settings)),
    };
    let session = session_step(call, &group_id, step, &settings, &mut checked.outcomes).await;
    let answer = match session {
        Ok(answer) => answer,
        Err(code) => return refused(code),
    };
    let mut outcomes = checked.outcomes;
    let mut response = ShareFetchResponse::default()
        .with_acquisition_lock_timeout_ms(settings.share.limits.lock_duration_ms as i32);
    // A renewing request (KIP-1222) only acknowledges: the member is not handed more records
    // while it renews the locks of those it holds.
    if request.share_session_epoch == SESSION_CLOSE_EPOCH || request.is_renew_ack {
        if settings.share.limits.dead_letters {
            dead_letters::write_given_up(broker, &group_id).await;
        }
        response.responses = topic_responses(outcomes, BTreeMap::new(), call);
        return response;
    }
    let dead_letters_of = settings.share.limits.dead_letters.then(|| group_id.clone());
    let delivered = match read_and_acquire(
        call,
        &request,
        group_id,
        member_id,
        answer,
        &settings,
        &mut outcomes,
    )
    .await
    {
        Ok(delivered) => delivered,
        Err(code) => return refused(code),
    };
    // Records given up on by this fetch's acknowledgements, or found with their locks run
    // out at the delivery limit as it acquired.
    if let Some(group_id) = dead_letters_of {
        dead_letters::write_given_up(broker, &group_id).await;
    }
    let bytes_out: usize = delivered.values().map(|(records, _)| records.len()).sum();
    broker.shard.metrics.counters.count_fetched(bytes_out);
    response.responses = topic_responses(outcomes, delivered, call);
    response
}
/// Reads from where the session left each partition (or its reset offset), has the group
/// acquire what was read, and returns what was handed out; the error code when the group's
/// shard refused.
async fn read_and_acquire(
    call: &Call<'_>,
    request: &ShareFetchRequest,
    group_id: String,
    member_id: String,
    answer: SessionAnswer,
    settings: &ShareGroupSettings,
    outcomes: &mut BTreeMap<(Uuid, i32), PartitionOutcome>,
) -> Result<Delivered, i16> {
    let max_records = match request.max_records {
        n if n > 0 => n as usize,
        _ => DEFAULT_MAX_RECORDS,
    };
    let acknowledged: Vec<TopicPartition> = answer.acks.iter().map(|(tp, _)| *tp).collect();
    let record_bytes: BTreeMap<TopicPartition, u32> = answer.record_bytes.into_iter().collect();
    let mut positions = answer.reads;
    let stored = stored_states(call, &group_id, &mut positions, settings).await;
    let starts = reset_offsets(call, &positions, settings).await;
    let plan = ReadPlan {
        max_bytes: request.max_bytes,
        max_records,
        read_committed: settings.read_committed,
    };
    let (reads, fetches) = plan.reads(&positions, &starts, &stored, &record_bytes, outcomes);
    let results = fetch_bounded(call, request, fetches).await;
    let (acquire, read_records) = acquisitions(reads, results, settings.read_committed, outcomes);
    let handed = call
        .broker
        .shard
        .try_group_call(
            &group_id,
            ShareAcquireCall {
                group_id: group_id.clone(),
                member_id,
                reads: acquire,
                max_records,
                settings: settings.share,
            },
        )
        .await;
    let answer = handed.map_err(|error| error_codes::code_of(Some(error)))?;
    Ok(deliveries(answer, &read_records, &acknowledged, outcomes))
}

/// A partition to read: where from, and its stored state when the group had none in memory.
type PlannedRead = (TopicPartition, i64, Option<(ShareState, i64)>);

/// How much one ShareFetch reads.
struct ReadPlan {
    max_bytes: i32,
    max_records: usize,
    read_committed: bool,
}

impl ReadPlan {
    /// The partitions to read and their fetches: each from the position the group gave, or
    /// the reset offset where it knew none (no reset offset: COORDINATOR_NOT_AVAILABLE);
    /// a partition whose records are all in flight is answered without a read.
    fn reads(
        &self,
        positions: &[(TopicPartition, ReadFrom)],
        starts: &BTreeMap<TopicPartition, i64>,
        stored: &BTreeMap<TopicPartition, (ShareState, i64)>,
        record_bytes: &BTreeMap<TopicPartition, u32>,
        outcomes: &mut BTreeMap<(Uuid, i32), PartitionOutcome>,
    ) -> (Vec<PlannedRead>, Vec<PartitionFetch>) {
        let mut reads = Vec::new();
        let mut fetches = Vec::new();
        for (tp, from) in positions {
            let from = match from {
                ReadFrom::Offset(offset) => *offset,
                ReadFrom::Unknown => match starts.get(tp) {
                    Some(&offset) => offset,
                    None => {
                        let outcome = outcomes.entry((tp.topic_id, tp.partition)).or_default();
                        outcome.error_code = ResponseError::CoordinatorNotAvailable.code();
                        continue;
                    }
                },
                ReadFrom::Full => {
                    outcomes.entry((tp.topic_id, tp.partition)).or_default();
                    continue;
                }
            };
            reads.push((*tp, from, stored.get(tp).cloned()));
            let wanted = read_size(record_bytes.get(tp).copied(), self.max_records);
            fetches.push(PartitionFetch {
                partition: *tp,
                offset: from,
                max_bytes: (self.max_bytes.max(0) as u32).min(wanted),
                read_committed: self.read_committed,
                offsets_only: false,
            });
        }
        (reads, fetches)
    }
}

/// The fetches, within the request's bounds and the broker's (`fetch.max.bytes`, the
/// longest wait).
async fn fetch_bounded(
    call: &Call<'_>,
    request: &ShareFetchRequest,
    fetches: Vec<PartitionFetch>,
) -> Vec<PartitionFetchResult> {
    let shard = &call.broker.shard;
    let live = &shard.config.live;
    let max_bytes = live.fetch_bytes(request.max_bytes) as u32;
    let max_wait = live.fetch_wait(request.max_wait_ms);
    let min_bytes = (request.min_bytes.max(0) as u32).min(max_bytes);
    shard.fetch(fetches, max_bytes, min_bytes, max_wait).await
}

/// What each read found, for the group to acquire: the window of offsets read (up to the
/// last stable offset under read_committed, with the aborted records never to deliver), and
/// the records themselves by partition; a failed read answers its partition's error.
fn acquisitions(
    reads: Vec<PlannedRead>,
    results: Vec<PartitionFetchResult>,
    read_committed: bool,
    outcomes: &mut BTreeMap<(Uuid, i32), PartitionOutcome>,
) -> (Vec<ReadRecords>, BTreeMap<TopicPartition, Bytes>) {
    let mut acquire = Vec::new();
    let mut read_records = BTreeMap::new();
    for ((tp, from, stored), result) in reads.into_iter().zip(results) {
        let outcome = outcomes.entry((tp.topic_id, tp.partition)).or_default();
        if result.error.is_some() {
            outcome.error_code = error_codes::code_of(result.error);
            continue;
        }
        let log_end = match read_committed {
            true => result.last_stable_offset,
            false => result.high_watermark,
        };
        let end = end_of_records(&result.records).map_or(from, |end| end.min(log_end));
        let never = match read_committed {
            true => never_delivered(&result.records, &result.aborted),
            false => Vec::new(),
        };
        acquire.push(ReadRecords {
            partition: tp,
            start_if_new: from,
            stored,
            window: from..end,
            never,
            bytes_read: result.records.len(),
        });
        read_records.insert(tp, result.records);
    }
    (acquire, read_records)
}

/// What a share-partition's read asks for: the records a member may be handed (twice over,
/// for records released or archived among them) at the size the last read found, else
/// FIRST_READ_BYTES. A share fetch hands out at most `max_records`; reading all that the fetch
/// allows would read far more than it can use.
fn read_size(record_bytes: Option<u32>, max_records: usize) -> u32 {
    match record_bytes {
        None => FIRST_READ_BYTES,
        Some(bytes) => {
            let wanted = (max_records as u64 * 2).saturating_mul(bytes as u64);
            wanted.clamp(MIN_READ_BYTES, u32::MAX as u64) as u32
        }
    }
}

/// The states the log holds of share-partitions this broker holds nothing of (after a
/// restart): each such partition reads from where its state says.
async fn stored_states(
    call: &Call<'_>,
    group_id: &str,
    positions: &mut [(TopicPartition, ReadFrom)],
    settings: &ShareGroupSettings,
) -> BTreeMap<TopicPartition, (ShareState, i64)> {
    let mut found = BTreeMap::new();
    if !positions.iter().any(|(_, from)| *from == ReadFrom::Unknown) {
        return found;
    }
    let read = ReadShareGroupStates {
        group: group_id.to_string(),
    };
    let Ok(records) = call.broker.shard.coordinator.run(read).await else {
        return found;
    };
    for record in records {
        let tp = TopicPartition {
            topic_id: record.topic_id,
            partition: record.partition,
        };
        let Some((_, from)) = positions.iter_mut().find(|(p, _)| *p == tp) else {
            continue;
        };
        if *from != ReadFrom::Unknown {
            continue;
        }
        let (state, version) = from_record(&record);
        let restored = SharePartition::restore(&state, settings.share.limits);
        *from = restored
            .next_to_read()
            .map_or(ReadFrom::Full, ReadFrom::Offset);
        found.insert(tp, (state, version));
    }
    found
}

/// Where each share-partition new to the group starts: `share.auto.offset.reset` looked up
/// as ListOffsets does (by duration: the first record at or after that time, else the end).
async fn reset_offsets(
    call: &Call<'_>,
    reads: &[(TopicPartition, ReadFrom)],
    settings: &ShareGroupSettings,
) -> BTreeMap<TopicPartition, i64> {
    let timestamp = match settings.auto_offset_reset {
        AutoOffsetReset::Earliest => EARLIEST,
        AutoOffsetReset::Latest => LATEST,
        AutoOffsetReset::ByDuration(back) => {
            let back_ms = i64::try_from(back.as_millis()).unwrap_or(i64::MAX);
            now_ms().saturating_sub(back_ms).max(0)
        }
    };
    let unknown: Vec<TopicPartition> = reads
        .iter()
        .filter(|(_, from)| *from == ReadFrom::Unknown)
        .map(|(tp, _)| *tp)
        .collect();
    let mut starts = BTreeMap::new();
    for timestamp in [timestamp, LATEST] {
        let wanted: Vec<(TopicPartition, i64)> = unknown
            .iter()
            .filter(|tp| !starts.contains_key(*tp))
            .map(|tp| (*tp, timestamp))
            .collect();
        if wanted.is_empty() {
            break;
        }
        let lookup = ListOffsets {
            partitions: wanted.clone(),
            read_committed: settings.read_committed,
        };
        let Ok(found) = call.broker.shard.coordinator.run(lookup).await else {
            break;
        };
        for ((tp, _), result) in wanted.iter().zip(found) {
            if result.error.is_none() && result.offset >= 0 {
                starts.insert(*tp, result.offset);
            }
        }
    }
    starts
}

/// The records handed to the member, by partition, with the runs of offsets it acquired.
type Delivered = BTreeMap<(Uuid, i32), (Bytes, Vec<AcquiredRun>)>;

/// What the group handed out, as records to answer with: only what it acquired of what was
/// read. Where the log refused a share-partition's state nothing of it is handed out, and
/// the acknowledgements, written with the acquisitions, failed too (NOT_LEADER_OR_FOLLOWER).
fn deliveries(
    answer: AcquireAnswer,
    read_records: &BTreeMap<TopicPartition, Bytes>,
    acknowledged: &[TopicPartition],
    outcomes: &mut BTreeMap<(Uuid, i32), PartitionOutcome>,
) -> Delivered {
    let not_leader = error_codes::code_of(Some(GroupError::NotLeaderOrFollower));
    for tp in &answer.refused {
        let outcome = outcomes.entry((tp.topic_id, tp.partition)).or_default();
        if read_records.contains_key(tp) {
            outcome.error_code = not_leader;
        }
        if acknowledged.contains(tp) {
            outcome.acknowledge_error_code = not_leader;
        }
    }
    let mut delivered = BTreeMap::new();
    for (tp, acquired) in answer.handed {
        let Some(records) = read_records.get(&tp).filter(|_| !acquired.is_empty()) else {
            continue;
        };
        let key = (tp.topic_id, tp.partition);
        delivered.insert(key, (covering(records, &acquired), runs(&acquired)));
    }
    delivered
}

/// The answer's partitions by topic: every partition named, acknowledged or read.
fn topic_responses(
    outcomes: BTreeMap<(Uuid, i32), PartitionOutcome>,
    mut delivered: Delivered,
    call: &Call<'_>,
) -> Vec<ShareFetchableTopicResponse> {
    let partitions = outcomes
        .into_iter()
        .map(|((topic_id, partition), outcome)| {
            let leader = LeaderIdAndEpoch::default()
                .with_leader_id(call.partition_leader(topic_id, partition))
                .with_leader_epoch(LEADER_EPOCH);
            let mut data = PartitionData::default()
                .with_partition_index(partition)
                .with_error_code(outcome.error_code)
                .with_acknowledge_error_code(outcome.acknowledge_error_code)
                .with_current_leader(leader);
            if let Some((records, acquired)) = delivered.remove(&(topic_id, partition)) {
                data = data.with_records(Some(records)).with_acquired_records(
                    acquired
                        .into_iter()
                        .map(|run| {
                            AcquiredRecords::default()
                                .with_first_offset(run.first_offset)
                                .with_last_offset(run.last_offset)
                                .with_delivery_count(run.deliveries as i16)
                        })
                        .collect(),
                );
            }
            (topic_id, data)
        });
    topics_as!(ShareFetchableTopicResponse, partitions)
}

fn refused(code: i16) -> ShareFetchResponse {
    ShareFetchResponse::default().with_error_code(code)
}
