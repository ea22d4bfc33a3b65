//! A share group's start offsets (KIP-932): DescribeShareGroupOffsets reads each
//! share-partition's start offset from the coordinator's log (where every acknowledgement's
//! change is before it is answered), and from v1 its lag (KIP-1226: the records from the start
//! offset to the partition's end not yet delivered to completion); AlterShareGroupOffsets and
//! DeleteShareGroupOffsets reset or remove them while the group has no members, as
//! `kafka-share-groups --reset-offsets` and `--delete-offsets` do.

use std::collections::BTreeMap;

use shoal_coordinator::acl::Operation;
use shoal_coordinator::commands::{ListOffsets, ReadShareGroupStates};
use shoal_coordinator::{TopicPartition, TopicsView};
use shoal_protocol::messages::alter_share_group_offsets_response::{
    AlterShareGroupOffsetsResponsePartition, AlterShareGroupOffsetsResponseTopic,
};
use shoal_protocol::messages::delete_share_group_offsets_response::DeleteShareGroupOffsetsResponseTopic;
use shoal_protocol::messages::describe_share_group_offsets_response::{
    DescribeShareGroupOffsetsResponseGroup, DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
};
use shoal_protocol::messages::{
    AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse, DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse, TopicName,
};
use shoal_protocol::records::ShoalShareStateRecord;
use shoal_protocol::ResponseError;
use shoal_shards::groups::share::calls::ResetShareOffsets;
use uuid::Uuid;

use super::{owned, text};
use crate::context::Call;
use crate::handlers::configs::group_configs::share_group_settings;
use crate::handlers::metadata::LEADER_EPOCH;
use crate::kafka::error_codes;

/// A share-partition the group has no state for: Kafka answers start offset -1.
const NO_START: i64 = -1;
/// Lag where it is not known (no state, or a version without it), as Kafka answers.
const NO_LAG: i64 = -1;
/// The first DescribeShareGroupOffsets version with lag (KIP-1226).
const LAG_FROM_VERSION: i16 = 1;
/// Share record states that are delivered to completion: acknowledged and archived.
const COMPLETE_STATES: [i8; 2] = [2, 4];
/// ListOffsets' "latest" timestamp.
const LATEST: i64 = -1;

/// Each stored share-partition's lag: the records from its start offset to the partition's
/// end (the last stable offset for a read_committed group) that are not acknowledged or
/// archived. None for all when the coordinator did not answer.
async fn lags(
    call: &Call<'_>,
    group: &str,
    stored: &BTreeMap<(Uuid, i32), ShoalShareStateRecord>,
) -> Option<BTreeMap<(Uuid, i32), i64>> {
    let view = call.broker.shard.topics.load();
    let settings = share_group_settings(&view, &call.broker.config.groups, group);
    let partitions: Vec<(TopicPartition, i64)> = stored
        .keys()
        .map(|&(topic_id, partition)| {
            (
                TopicPartition {
                    topic_id,
                    partition,
                },
                LATEST,
            )
        })
        .collect();
    let ends = ListOffsets {
        partitions: partitions.clone(),
        read_committed: settings.read_committed,
    };
    let ends = call.broker.shard.coordinator.run(ends).await.ok()?;
    let lags = partitions
        .iter()
        .zip(ends)
        .filter(|(_, end)| end.offset >= 0)
        .map(|((tp, _), end)| {
            let state = &stored[&(tp.topic_id, tp.partition)];
            let complete: i64 = state
                .batches
                .iter()
                .filter(|b| COMPLETE_STATES.contains(&b.state))
                .map(|b| {
                    (b.last_offset.min(end.offset - 1) - b.first_offset.max(state.start_offset) + 1)
                        .max(0)
                })
                .sum();
            let lag = (end.offset - state.start_offset - complete).max(0);
            ((tp.topic_id, tp.partition), lag)
        });
    Some(lags.collect())
}

/// The group's stored states by topic and partition, or the error code to answer.
async fn stored_states(
    call: &Call<'_>,
    group: &str,
) -> Result<BTreeMap<(Uuid, i32), ShoalShareStateRecord>, i16> {
    let read = ReadShareGroupStates {
        group: group.to_string(),
    };
    let records = call
        .broker
        .shard
        .coordinator
        .run(read)
        .await
        .map_err(|_| ResponseError::CoordinatorNotAvailable.code())?;
    Ok(records
        .into_iter()
        .map(|r| ((r.topic_id, r.partition), r))
        .collect())
}

/// Resets or removes the share-partitions' states on the group's shard; the group's code.
async fn reset(
    call: &Call<'_>,
    group: &str,
    changes: Vec<(TopicPartition, Option<i64>, i64)>,
) -> i16 {
    let reset = ResetShareOffsets {
        group_id: group.to_string(),
        changes,
    };
    let outcome = call.broker.shard.try_group_call(group, reset).await;
    error_codes::code_of(outcome.err())
}

/// The group's own checks: the ACL on it, and that this broker coordinates it.
fn check_group(call: &Call<'_>, operation: Operation, group: &str) -> Result<(), i16> {
    call.check_group(operation, group)
        .and_then(|()| call.check_coordinator(group))
        .map_err(|e| error_codes::code_of(Some(e)))
}

pub async fn describe(
    call: &Call<'_>,
    request: DescribeShareGroupOffsetsRequest,
) -> DescribeShareGroupOffsetsResponse {
    let view = call.broker.shard.topics.load_full();
    let mut groups = Vec::with_capacity(request.groups.len());
    for wanted in request.groups {
        let group = owned(&wanted.group_id.0);
        let answer =
            DescribeShareGroupOffsetsResponseGroup::default().with_group_id(wanted.group_id);
        let stored = match check_group(call, Operation::Describe, &group) {
            Ok(()) => stored_states(call, &group).await,
            Err(code) => Err(code),
        };
        let stored = match stored {
            Ok(stored) => stored,
            Err(code) => {
                groups.push(answer.with_error_code(code));
                continue;
            }
        };
        let lags = match call.version >= LAG_FROM_VERSION {
            true => lags(call, &group, &stored).await.unwrap_or_default(),
            false => BTreeMap::new(),
        };
        // Asked for none: every topic the group has state for.
        let asked: Vec<(String, Vec<i32>)> = match wanted.topics {
            Some(topics) => topics
                .into_iter()
                .map(|t| (owned(&t.topic_name.0), t.partitions))
                .collect(),
            None => {
                let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
                for (topic_id, partition) in stored.keys() {
                    if let Some(topic) = view.by_id(topic_id) {
                        by_topic
                            .entry(topic.name.clone())
                            .or_default()
                            .push(*partition);
                    }
                }
                by_topic.into_iter().collect()
            }
        };
        let topics = asked
            .into_iter()
            .map(|(name, partitions)| {
                described_topic(call, &view, name, partitions, &stored, &lags)
            })
            .collect();
        groups.push(answer.with_topics(topics));
    }
    DescribeShareGroupOffsetsResponse::default().with_groups(groups)
}

/// One topic of DescribeShareGroupOffsets: each partition's start offset and lag, or the
/// topic's refusal (unknown, or not to be described by this client).
fn described_topic(
    call: &Call<'_>,
    view: &TopicsView,
    name: String,
    partitions: Vec<i32>,
    stored: &BTreeMap<(Uuid, i32), ShoalShareStateRecord>,
    lags: &BTreeMap<(Uuid, i32), i64>,
) -> DescribeShareGroupOffsetsResponseTopic {
    let topic = view.by_name(&name);
    let refused = match topic {
        None => Some(ResponseError::UnknownTopicOrPartition.code()),
        Some(_) if call.check_topic(Operation::Describe, &name).is_err() => {
            Some(ResponseError::TopicAuthorizationFailed.code())
        }
        Some(_) => None,
    };
    let topic_id = topic.map_or(Uuid::nil(), |t| t.id);
    let partitions = partitions
        .into_iter()
        .map(|partition| {
            let answer = DescribeShareGroupOffsetsResponsePartition::default()
                .with_partition_index(partition)
                .with_leader_epoch(LEADER_EPOCH);
            let key = (topic_id, partition);
            match refused {
                Some(code) => answer.with_error_code(code).with_start_offset(NO_START),
                None => answer
                    .with_start_offset(stored.get(&key).map_or(NO_START, |s| s.start_offset))
                    .with_lag(lags.get(&key).copied().unwrap_or(NO_LAG)),
            }
        })
        .collect();
    DescribeShareGroupOffsetsResponseTopic::default()
        .with_topic_name(TopicName(text(name)))
        .with_topic_id(topic_id)
        .with_partitions(partitions)
}

/// A topic of AlterShareGroupOffsets: its name, its id and each partition's answer so far
/// (0: to be reset).
type TopicAnswer = (String, Uuid, Vec<(i32, i16)>);

pub async fn alter(
    call: &Call<'_>,
    request: AlterShareGroupOffsetsRequest,
) -> AlterShareGroupOffsetsResponse {
    let group = owned(&request.group_id.0);
    if let Err(code) = check_group(call, Operation::Read, &group) {
        return AlterShareGroupOffsetsResponse::default().with_error_code(code);
    }
    let view = call.broker.shard.topics.load_full();
    let stored = match stored_states(call, &group).await {
        Ok(stored) => stored,
        Err(code) => return AlterShareGroupOffsetsResponse::default().with_error_code(code),
    };
    let mut changes = Vec::new();
    let mut answers: Vec<TopicAnswer> = Vec::new();
    for t in &request.topics {
        let name = owned(&t.topic_name.0);
        let topic = view.by_name(&name);
        let refused = match topic {
            None => Some(ResponseError::UnknownTopicOrPartition.code()),
            Some(_) if call.check_topic(Operation::Read, &name).is_err() => {
                Some(ResponseError::TopicAuthorizationFailed.code())
            }
            Some(_) => None,
        };
        let topic_id = topic.map_or(Uuid::nil(), |t| t.id);
        let count = topic.map_or(0, |t| t.partitions);
        let mut partitions = Vec::with_capacity(t.partitions.len());
        for p in &t.partitions {
            let code = match refused {
                Some(code) => code,
                None if !(0..count).contains(&p.partition_index) => {
                    ResponseError::UnknownTopicOrPartition.code()
                }
                None if p.start_offset < 0 => ResponseError::InvalidRequest.code(),
                None => {
                    let tp = TopicPartition {
                        topic_id,
                        partition: p.partition_index,
                    };
                    let version = stored
                        .get(&(topic_id, p.partition_index))
                        .map_or(0, |s| s.state_version);
                    changes.push((tp, Some(p.start_offset), version));
                    0
                }
            };
            partitions.push((p.partition_index, code));
        }
        answers.push((name, topic_id, partitions));
    }
    let group_code = reset(call, &group, changes).await;
    let responses = answers
        .into_iter()
        .map(|(name, topic_id, partitions)| {
            let partitions = partitions
                .into_iter()
                .map(|(index, code)| {
                    AlterShareGroupOffsetsResponsePartition::default()
                        .with_partition_index(index)
                        .with_error_code(if code == 0 { group_code } else { code })
                })
                .collect();
            AlterShareGroupOffsetsResponseTopic::default()
                .with_topic_name(TopicName(text(name)))
                .with_topic_id(topic_id)
                .with_partitions(partitions)
        })
        .collect();
    AlterShareGroupOffsetsResponse::default()
        .with_error_code(group_code)
        .with_responses(responses)
}

pub async fn delete(
    call: &Call<'_>,
    request: DeleteShareGroupOffsetsRequest,
) -> DeleteShareGroupOffsetsResponse {
    let group = owned(&request.group_id.0);
    if let Err(code) = check_group(call, Operation::Delete, &group) {
        return DeleteShareGroupOffsetsResponse::default().with_error_code(code);
    }
    let view = call.broker.shard.topics.load_full();
    let stored = match stored_states(call, &group).await {
        Ok(stored) => stored,
        Err(code) => return DeleteShareGroupOffsetsResponse::default().with_error_code(code),
    };
    let mut changes = Vec::new();
    let mut answers = Vec::new();
    for t in &request.topics {
        let name = owned(&t.topic_name.0);
        let topic = view.by_name(&name);
        let code = match topic {
            None => ResponseError::UnknownTopicOrPartition.code(),
            Some(_) if call.check_topic(Operation::Read, &name).is_err() => {
                ResponseError::TopicAuthorizationFailed.code()
            }
            Some(topic) => {
                for ((topic_id, partition), state) in stored.range((topic.id, i32::MIN)..) {
                    if *topic_id != topic.id {
                        break;
                    }
                    let tp = TopicPartition {
                        topic_id: *topic_id,
                        partition: *partition,
                    };
                    changes.push((tp, None, state.state_version));
                }
                0
            }
        };
        answers.push((name, topic.map_or(Uuid::nil(), |t| t.id), code));
    }
    let group_code = reset(call, &group, changes).await;
    let responses = answers
        .into_iter()
        .map(|(name, topic_id, code)| {
            DeleteShareGroupOffsetsResponseTopic::default()
                .with_topic_name(TopicName(text(name)))
                .with_topic_id(topic_id)
                .with_error_code(if code == 0 { group_code } else { code })
        })
        .collect();
    DeleteShareGroupOffsetsResponse::default()
        .with_error_code(group_code)
        .with_responses(responses)
}
