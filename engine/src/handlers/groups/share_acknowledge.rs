//! ShareAcknowledge (KIP-932): a share group's member acknowledges records it was given
//! (accept, release, reject, and from v2 renew their locks, KIP-1222) without fetching, on
//! its share session: the epoch it carries must be the session's next, and -1 closes the
//! session after the acknowledgements.

use std::collections::BTreeMap;

use shoal_protocol::messages::share_acknowledge_response::{
    LeaderIdAndEpoch, PartitionData, ShareAcknowledgeTopicResponse,
};
use shoal_protocol::messages::{ShareAcknowledgeRequest, ShareAcknowledgeResponse};
use shoal_shards::groups::share::registry::SessionStep;
use uuid::Uuid;

use super::dead_letters;
use super::share_session::{
    acks_of, named_partitions, renew_allowed, session_step, share_request, PartitionOutcome,
};
use super::topics_as;
use crate::context::Call;
use crate::handlers::metadata::LEADER_EPOCH;

pub async fn handle(call: &Call<'_>, request: ShareAcknowledgeRequest) -> ShareAcknowledgeResponse {
    let (group, member) = (request.group_id.as_ref(), request.member_id.as_ref());
    let mut started = match share_request(call, group, member, named_partitions!(request.topics)) {
        Ok(started) => started,
        Err(code) => return refused(code),
    };
    let step = SessionStep {
        member_id: started.member_id,
        epoch: request.share_session_epoch,
        is_fetch: false,
        add: Vec::new(),
        forget: Vec::new(),
        acks: acks_of(
            &started.checked.usable,
            renew_allowed(call, &started.settings),
        ),
    };
    if let Err(code) = session_step(
        call,
        &started.group_id,
        step,
        &started.settings,
        &mut started.checked.outcomes,
    )
    .await
    {
        return refused(code);
    }
    if started.settings.share.limits.dead_letters {
        dead_letters::write_given_up(call.broker, &started.group_id).await;
    }
    // v2 tells the member how long its locks (renewed ones among them) run.
    let lock_ms = started.settings.share.limits.lock_duration_ms as i32;
    ShareAcknowledgeResponse::default()
        .with_acquisition_lock_timeout_ms(lock_ms)
        .with_responses(topic_responses(started.checked.outcomes, call))
}

fn topic_responses(
    outcomes: BTreeMap<(Uuid, i32), PartitionOutcome>,
    call: &Call<'_>,
) -> Vec<ShareAcknowledgeTopicResponse> {
    let partitions = outcomes
        .into_iter()
        .map(|((topic_id, partition), outcome)| {
            let leader = LeaderIdAndEpoch::default()
                .with_leader_id(call.partition_leader(topic_id, partition))
                .with_leader_epoch(LEADER_EPOCH);
            // An acknowledgement's outcome is the partition's error here.
            let code = match outcome.acknowledge_error_code {
                0 => outcome.error_code,
                code => code,
            };
            let data = PartitionData::default()
                .with_partition_index(partition)
                .with_error_code(code)
                .with_current_leader(leader);
            (topic_id, data)
        });
    topics_as!(ShareAcknowledgeTopicResponse, partitions)
}

fn refused(code: i16) -> ShareAcknowledgeResponse {
    ShareAcknowledgeResponse::default().with_error_code(code)
}
