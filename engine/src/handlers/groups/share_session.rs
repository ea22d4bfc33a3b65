//! What ShareFetch and ShareAcknowledge share: the request's partitions checked (the topic
//! known by id, READ on it), its acknowledgements read, and the share session step sent to
//! the group's shard.

use std::collections::BTreeMap;

use shoal_coordinator::acl::Operation;
use shoal_coordinator::features::{SHARE_RENEW_LEVEL, SHARE_VERSION};
use shoal_coordinator::{TopicPartition, TopicsView};
use shoal_protocol::kafka_protocol::protocol::StrBytes;
use shoal_protocol::messages::GroupId;
use shoal_protocol::ResponseError;
use shoal_shards::groups::share::calls::ShareSessionCall;
use shoal_shards::groups::share::group::{AckBatch, RENEW};
use shoal_shards::groups::share::registry::{SessionAnswer, SessionStep};
use shoal_shards::groups::GroupError;
use uuid::Uuid;

use crate::context::Call;
use crate::handlers::configs::group_configs::{share_group_settings, ShareGroupSettings};
use crate::kafka::error_codes;

/// The partitions a ShareFetch or ShareAcknowledge names with their acknowledgement batches
/// (the two requests' generated types have the same field names).
macro_rules! named_partitions {
    ($topics:expr) => {
        $topics
            .iter()
            .flat_map(|t| {
                t.partitions.iter().map(|p| {
                    $crate::handlers::groups::share_session::NamedPartition {
                        topic_id: t.topic_id,
                        partition: p.partition_index,
                        acks: p
                            .acknowledgement_batches
                            .iter()
                            .map(|b| shoal_shards::groups::share::group::AckBatch {
                                first_offset: b.first_offset,
                                last_offset: b.last_offset,
                                types: b.acknowledge_types.clone(),
                            })
                            .collect(),
                    }
                })
            })
            .collect::<Vec<_>>()
    };
}
pub(super) use named_partitions;

/// One partition a request names, with its acknowledgement batches.
pub struct NamedPartition {
    pub topic_id: Uuid,
    pub partition: i32,
    pub acks: Vec<AckBatch>,
}

/// Each partition's answer so far: its error (0 none), its acknowledgement's error, and
/// whether it was acknowledged.
#[derive(Debug, Default, Clone, Copy)]
pub struct PartitionOutcome {
    pub error_code: i16,
    pub acknowledge_error_code: i16,
}

/// The partitions a request may act on, and the answers for those it may not.
pub struct Checked {
    pub usable: Vec<NamedPartition>,
    pub outcomes: BTreeMap<(Uuid, i32), PartitionOutcome>,
}

/// What a ShareFetch or ShareAcknowledge starts from, once its preamble passed.
pub struct ShareRequest {
    pub group_id: String,
    pub member_id: String,
    pub checked: Checked,
    pub settings: ShareGroupSettings,
}

/// What ShareFetch and ShareAcknowledge check first: a group and a member named, and READ on
/// the group; then the partitions `named` checked and the group's settings read. Err: the
/// code to answer the whole request with.
pub fn share_request(
    call: &Call<'_>,
    group: Option<&GroupId>,
    member: Option<&StrBytes>,
    named: Vec<NamedPartition>,
) -> Result<ShareRequest, i16> {
    let (Some(group), Some(member)) = (group, member) else {
        return Err(ResponseError::InvalidRequest.code());
    };
    let (group_id, member_id) = (group.0.to_string(), member.to_string());
    call.check_group(Operation::Read, &group_id)
        .map_err(|denied| error_codes::code_of(Some(denied)))?;
    let broker = call.broker;
    let view = broker.shard.topics.load();
    let checked = check_partitions(call, &view, named);
    let settings = share_group_settings(&view, &broker.config.groups, &group_id);
    Ok(ShareRequest {
        group_id,
        member_id,
        checked,
        settings,
    })
}

/// The partitions of a known topic the client may READ; the others are answered now
/// (UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, TOPIC_AUTHORIZATION_FAILED).
fn check_partitions(call: &Call<'_>, view: &TopicsView, named: Vec<NamedPartition>) -> Checked {
    let mut checked = Checked {
        usable: Vec::new(),
        outcomes: BTreeMap::new(),
    };
    for p in named {
        let code = match view.by_id(&p.topic_id) {
            None => ResponseError::UnknownTopicId.code(),
            Some(topic) if call.check_topic(Operation::Read, &topic.name).is_err() => {
                ResponseError::TopicAuthorizationFailed.code()
            }
            Some(topic) if !(0..topic.partitions).contains(&p.partition) => {
                ResponseError::UnknownTopicOrPartition.code()
            }
            Some(_) => {
                checked.usable.push(p);
                continue;
            }
        };
        let outcome = PartitionOutcome {
            error_code: code,
            acknowledge_error_code: code,
        };
        checked.outcomes.insert((p.topic_id, p.partition), outcome);
    }
    checked
}

/// The session step on the group's shard; the acknowledgement outcomes go into `outcomes`.
pub async fn session_step(
    call: &Call<'_>,
    group_id: &str,
    step: SessionStep,
    settings: &ShareGroupSettings,
    outcomes: &mut BTreeMap<(Uuid, i32), PartitionOutcome>,
) -> Result<SessionAnswer, i16> {
    let run = ShareSessionCall {
        group_id: group_id.to_string(),
        step,
        settings: settings.share,
        // Another broker of the cluster coordinates the group: its members fetch here the
        // share-partitions Metadata names this broker for.
        visiting: call.check_coordinator(group_id).is_err(),
    };
    let answer = call
        .broker
        .shard
        .try_group_call(group_id, run)
        .await
        .map_err(|error| error_codes::code_of(Some::<GroupError>(error)))?;
    for (tp, outcome) in &answer.acks {
        let entry = outcomes.entry((tp.topic_id, tp.partition)).or_default();
        entry.acknowledge_error_code = error_codes::code_of(*outcome);
    }
    Ok(answer)
}

/// The acknowledgements of the usable partitions, as the session step takes them. Where
/// renewals are not allowed (a request before v2, or a group with
/// `share.renew.acknowledge.enable` off) a RENEW is an unknown type, refused as the group
/// refuses those.
pub fn acks_of(
    usable: &[NamedPartition],
    renew_allowed: bool,
) -> Vec<(TopicPartition, Vec<AckBatch>)> {
    usable
        .iter()
        .filter(|p| !p.acks.is_empty())
        .map(|p| {
            let mut acks = p.acks.clone();
            if !renew_allowed {
                for kind in acks.iter_mut().flat_map(|b| b.types.iter_mut()) {
                    if *kind == RENEW {
                        *kind = UNKNOWN_TYPE;
                    }
                }
            }
            (partition_of(p), acks)
        })
        .collect()
}

/// An acknowledge type no version has.
const UNKNOWN_TYPE: i8 = -1;

/// The first version of ShareFetch and ShareAcknowledge with RENEW (KIP-1222).
const RENEW_FROM_VERSION: i16 = 2;

/// Whether this request may renew locks: its version has RENEW, `share.version` 2 is
/// finalized, and the group's `share.renew.acknowledge.enable` is on.
pub fn renew_allowed(call: &Call<'_>, settings: &ShareGroupSettings) -> bool {
    call.version >= RENEW_FROM_VERSION
        && call.feature_level(SHARE_VERSION) >= SHARE_RENEW_LEVEL
        && settings.renew_enabled
}

pub fn partition_of(p: &NamedPartition) -> TopicPartition {
    TopicPartition {
        topic_id: p.topic_id,
        partition: p.partition,
    }
}
