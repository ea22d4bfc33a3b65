//! TxnOffsetCommit: a consumer group's offsets, committed with the transaction (held by it
//! until EndTxn commits, dropped if it aborts). Sent to the group's coordinator.

use shoal_coordinator::acl::{Operation, ResourceType};
use shoal_coordinator::commands::CommitTransactionOffsets;
use shoal_coordinator::{ErrorKind, GroupClaim};
use shoal_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use shoal_protocol::messages::{TxnOffsetCommitRequest, TxnOffsetCommitResponse};
use shoal_shards::groups::classic::messages::MemberRef;

use crate::context::Call;
use crate::handlers::groups::commit_request::{
    check_member, entries, group_claim, outcomes, run_under_claim, topic_answers, topic_names,
    topic_offsets,
};
use crate::kafka::error_codes::Outcome;

/// The TxnOffsetCommit version of transactions V2 (KIP-890): the commit joins the
/// transaction itself, where the client sent AddOffsetsToTxn first before.
const TRANSACTIONS_V2_FROM: i16 = 5;
/// Versions from 6 on name topics by id (KIP-1319).
const TOPIC_IDS_FROM_VERSION: i16 = 6;

pub async fn handle(call: &Call<'_>, request: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse {
    let broker = call.broker;
    let group_id = request.group_id.0.to_string();
    let id = request.transactional_id.0.as_str();
    let checked = check(call, &request, &group_id).await;
    let mut refused = checked.err();
    let view = broker.shard.topics.load();
    let names = topic_names!(call, TOPIC_IDS_FROM_VERSION, &view, request.topics);
    let topics = topic_offsets!(request.topics, &names);
    let entries = entries(call, &view, &topics);
    let count = entries.len();
    let results = match checked {
        Err(_) => None,
        Ok(claim) => {
            let command = CommitTransactionOffsets {
                transactional_id: id.to_string(),
                producer_id: request.producer_id.0,
                producer_epoch: request.producer_epoch,
                group: group_id.clone(),
                claim,
                offsets: entries,
                joins: call.version >= TRANSACTIONS_V2_FROM,
            };
            let claim_gone =
                |reply: &Result<_, ErrorKind>| matches!(reply, Err(ErrorKind::NotCoordinator));
            match run_under_claim(broker, &group_id, claim, command, claim_gone).await {
                Ok(Ok(results)) if results.len() == count => Some(results),
                Ok(Err(e)) => {
                    refused = Some(e.into());
                    None
                }
                _ => None,
            }
        }
    };
    let outcomes = outcomes(call, &view, &topics, refused, results);
    let answers = topic_answers!(
        TxnOffsetCommitResponseTopic,
        TxnOffsetCommitResponsePartition,
        outcomes,
        request.topics,
        &names
    );
    TxnOffsetCommitResponse::default().with_topics(answers)
}

/// Whether the commit may be written, and under which claim: WRITE on the transactional id,
/// READ on the group, this broker its coordinator; from v3 a named member must be in the
/// group's generation.
async fn check(
    call: &Call<'_>,
    request: &TxnOffsetCommitRequest,
    group_id: &str,
) -> Result<GroupClaim, Outcome> {
    let id = request.transactional_id.0.as_str();
    let allowed = call
        .authorized(Operation::Write, ResourceType::TransactionalId, id)
        .then_some(())
        .ok_or(ErrorKind::TransactionalIdAuthorizationFailed)
        .and_then(|()| call.check_group(Operation::Read, group_id))
        .and_then(|()| call.check_coordinator(group_id))
        .map_err(Outcome::from);
    // v3+ names the member: a consumer that left the group's generation is refused.
    match allowed {
        Err(refused) => Err(refused),
        Ok(()) if request.generation_id_or_member_epoch >= 0 && !request.member_id.is_empty() => {
            let member = MemberRef {
                group_id: group_id.to_string(),
                member_id: request.member_id.to_string(),
                generation_id: request.generation_id_or_member_epoch,
                group_instance_id: request.group_instance_id.as_ref().map(|s| s.to_string()),
            };
            check_member(call.broker, member).await
        }
        Ok(()) => group_claim(call.broker, group_id).await,
    }
}
