//! What OffsetCommit and TxnOffsetCommit share: the check of the member committing, the
//! entries of the topics the client may READ, and each partition's outcome in request order.

use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::acl::Operation;
use shoal_coordinator::{Command, GroupClaim};
use shoal_coordinator::{ErrorKind, OffsetCommitEntry, TopicPartition, TopicsView};
use shoal_shards::groups::calls::{ClaimFor, LoseClaim};
use shoal_shards::groups::classic::calls::ValidateCommit;
use shoal_shards::groups::classic::messages::MemberRef;
use shoal_shards::ShardError;

use crate::context::{Broker, Call};
use crate::handlers::topics::{permitted, Answers};
use crate::kafka::error_codes::Outcome;

/// One partition's offset, as both requests carry it.
pub struct PartitionOffset<'a> {
    pub index: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: Option<&'a StrBytes>,
}

/// One topic of the request: its name and partitions.
pub type TopicOffsets<'a> = (&'a str, Vec<PartitionOffset<'a>>);

/// Each requested topic's name (`requested_names`: from `$ids_from` on by its id). Both
/// requests' topics carry a `topic_id` and a `name`.
macro_rules! topic_names {
    ($call:expr, $ids_from:expr, $view:expr, $topics:expr) => {
        $crate::handlers::topics::requested_names(
            $call.version,
            $ids_from,
            $view,
            ($topics).iter().map(|t| (&t.topic_id, t.name.0.as_str())),
        )
    };
}
pub(crate) use topic_names;

/// The requested topics' offsets (`Vec<TopicOffsets>`), each topic under the name its id or
/// name resolved to in `names`; an unknown id commits nothing, as no topic has the empty
/// name. Both requests' topics and partitions carry the same fields under the same names.
macro_rules! topic_offsets {
    ($topics:expr, $names:expr) => {
        ($topics)
            .iter()
            .zip($names)
            .map(|(t, name)| {
                let partitions = (t.partitions.iter())
                    .map(
                        |p| $crate::handlers::groups::commit_request::PartitionOffset {
                            index: p.partition_index,
                            offset: p.committed_offset,
                            leader_epoch: p.committed_leader_epoch,
                            metadata: p.committed_metadata.as_ref(),
                        },
                    )
                    .collect();
                (name.unwrap_or_default(), partitions)
            })
            .collect::<Vec<$crate::handlers::groups::commit_request::TopicOffsets>>()
    };
}
pub(crate) use topic_offsets;

/// The answer's topics (`Vec<$topic>`): each requested topic's partitions with their codes
/// (`partition_code`), in request order. Both responses' topics and partitions have the same
/// fields under the same names.
macro_rules! topic_answers {
    ($topic:ident, $partition:ident, $outcomes:expr, $topics:expr, $names:expr) => {
        ($outcomes)
            .into_iter()
            .zip(($topics).iter().zip($names))
            .map(|(partitions, (topic, name))| {
                $topic::default()
                    .with_name(topic.name.clone())
                    .with_topic_id(topic.topic_id)
                    .with_partitions(
                        (partitions.into_iter())
                            .map(|(index, error)| {
                                $partition::default()
                                    .with_partition_index(index)
                                    .with_error_code(
                                        $crate::handlers::groups::commit_request::partition_code(
                                            *name, error,
                                        ),
                                    )
                            })
                            .collect(),
                    )
            })
            .collect::<Vec<$topic>>()
    };
}
pub(crate) use topic_answers;

/// A partition's error code: UNKNOWN_TOPIC_ID for a topic whose id named none, else its
/// outcome's.
pub fn partition_code(name: Option<&str>, error: Option<Outcome>) -> i16 {
    match name {
        None => shoal_protocol::ResponseError::UnknownTopicId.code(),
        Some(_) => crate::kafka::error_codes::code_of(error),
    }
}

/// The group's owning shard says whether `member` may commit (its generation is current),
/// and if so the claim the commit is written under.
pub async fn check_member(broker: &Broker, member: MemberRef) -> Result<GroupClaim, Outcome> {
    let group_id = member.group_id.clone();
    broker
        .shard
        .group_call(&group_id, ValidateCommit(member))
        .await
        .and_then(|checked| checked)
        .map_err(Outcome::from)
}

/// The claim this broker writes for the group under, from the group's owning shard.
pub async fn group_claim(broker: &Broker, group_id: &str) -> Result<GroupClaim, Outcome> {
    broker
        .shard
        .group_call(group_id, ClaimFor(group_id.to_string()))
        .await
        .and_then(|claimed| claimed)
        .map_err(Outcome::from)
}

/// Runs a group write decided under `claim`. When the reply says the claim is no longer
/// held (`claim_gone`: the log refused it NOT_COORDINATOR, or the write deleted it), the
/// group's owning shard drops the claim and the group's members there.
pub async fn run_under_claim<C: Command>(
    broker: &Broker,
    group_id: &str,
    claim: GroupClaim,
    command: C,
    claim_gone: impl FnOnce(&C::Reply) -> bool,
) -> Result<C::Reply, ShardError> {
    let reply = broker.shard.coordinator.run(command).await?;
    if claim_gone(&reply) {
        let lose = LoseClaim {
            group_id: group_id.to_string(),
            claim,
        };
        let _ = broker.shard.group_call(group_id, lose).await;
    }
    Ok(reply)
}

/// The entries to commit: every partition of the topics the client may READ (the others are
/// answered with their topic's refusal by `outcomes`).
pub fn entries(
    call: &Call<'_>,
    view: &TopicsView,
    topics: &[TopicOffsets],
) -> Vec<OffsetCommitEntry> {
    let mut entries = Vec::new();
    for (name, partitions) in topics {
        let Ok(topic_id) = permitted(call, view, name, Operation::Read) else {
            continue;
        };
        for p in partitions {
            entries.push(OffsetCommitEntry {
                partition: TopicPartition {
                    topic_id,
                    partition: p.index,
                },
                offset: p.offset,
                leader_epoch: p.leader_epoch,
                metadata: p.metadata.map(|m| m.to_string()).unwrap_or_default(),
            });
        }
    }
    entries
}

/// Each topic's partitions with their outcome, in request order: the request's refusal if
/// there is one, else the topic's refusal or the coordinator's answer for the entry.
pub fn outcomes(
    call: &Call<'_>,
    view: &TopicsView,
    topics: &[TopicOffsets],
    refused: Option<Outcome>,
    results: Option<Vec<Option<ErrorKind>>>,
) -> Vec<Vec<(i32, Option<Outcome>)>> {
    let mut results = Answers::new(results);
    topics
        .iter()
        .map(|(name, partitions)| {
            let known = permitted(call, view, name, Operation::Read);
            partitions
                .iter()
                .map(|p| {
                    let error = match refused {
                        Some(e) => Some(e),
                        None => results.next(known).unwrap_or_else(Some).map(Outcome::from),
                    };
                    (p.index, error)
                })
                .collect()
        })
        .collect()
}
