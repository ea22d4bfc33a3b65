use shoal_coordinator::acl::Operation;
use shoal_coordinator::commands::CommitOffsets;
use shoal_coordinator::ErrorKind;
use shoal_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use shoal_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse};
use shoal_shards::groups::classic::messages::MemberRef;

use super::commit_request::{
    check_member, entries, outcomes, run_under_claim, topic_answers, topic_names, topic_offsets,
};
use super::{owned, owned_optional};
use crate::context::Call;

/// Versions from 10 on name topics by id (KIP-848).
const TOPIC_IDS_FROM_VERSION: i16 = 10;

pub async fn handle(call: &Call<'_>, request: OffsetCommitRequest) -> OffsetCommitResponse {
    let broker = call.broker;
    let view = broker.shard.topics.load();
    let names = topic_names!(call, TOPIC_IDS_FROM_VERSION, &view, request.topics);
    let group_id = owned(&request.group_id.0);
    let member = MemberRef {
        group_id: group_id.clone(),
        member_id: owned(&request.member_id),
        generation_id: request.generation_id_or_member_epoch,
        group_instance_id: owned_optional(&request.group_instance_id),
    };
    let allowed = call
        .check_group(Operation::Read, &group_id)
        .and_then(|()| call.check_coordinator(&group_id));
    let checked = match allowed {
        Err(denied) => Err(denied.into()),
        Ok(()) => check_member(broker, member).await,
    };
    let refused = checked.err();
    let topics = topic_offsets!(request.topics, &names);
    let entries = match checked {
        Err(_) => Vec::new(),
        Ok(_) => entries(call, &view, &topics),
    };
    let count = entries.len();
    let results = match checked {
        Ok(claim) if !entries.is_empty() => {
            let request = CommitOffsets {
                group: group_id.clone(),
                claim: Some(claim),
                offsets: entries,
            };
            let refused = |results: &Vec<Option<ErrorKind>>| {
                results.contains(&Some(ErrorKind::NotCoordinator))
            };
            match run_under_claim(broker, &group_id, claim, request, refused).await {
                Ok(results) if results.len() == count => Some(results),
                _ => None,
            }
        }
        _ => Some(Vec::new()),
    };
    let outcomes = outcomes(call, &view, &topics, refused, results);
    let answers = topic_answers!(
        OffsetCommitResponseTopic,
        OffsetCommitResponsePartition,
        outcomes,
        request.topics,
        &names
    );
    OffsetCommitResponse::default().with_topics(answers)
}
