//! ShareAcknowledge (KIP-932): a share group's member acknowledges records it was given
//! (accept, release, reject) without fetching, on its share session: the epoch it carries
//! must be the session's next, and -1 closes the session after the acknowledgements.

use std::collections::BTreeMap;

use shoal_protocol::messages::share_acknowledge_response::{
    LeaderIdAndEpoch, PartitionData, ShareAcknowledgeTopicResponse,
};
use shoal_protocol::messages::{ShareAcknowledgeRequest, ShareAcknowledgeResponse};
use shoal_shards::groups::share::registry::SessionStep;
use uuid::Uuid;

use super::share_session::{
    acks_of, check_partitions, named_partitions, session_step, share_preamble, PartitionOutcome,
};
use super::topics_as;
use crate::context::Call;
use crate::handlers::configs::group_configs::share_group_settings;
use crate::handlers::metadata::LEADER_EPOCH;

pub async fn handle(call: &Call<'_>, request: ShareAcknowledgeRequest) -> ShareAcknowledgeResponse {
    let broker = call.broker;
    let preamble = share_preamble(call, request.group_id.as_ref(), request.member_id.as_ref());
    let (group_id, member_id) = match preamble {
        Ok(ids) => ids,
        Err(code) => return refused(code),
    };
    let named = named_partitions!(request.topics);
    let mut checked = check_partitions(call, named);
    let view = broker.shard.topics.load_full();
    let settings = share_group_settings(&view, &broker.config.groups, &group_id);
    let step = SessionStep {
        member_id,
        epoch: request.share_session_epoch,
        is_fetch: false,
        add: Vec::new(),
        forget: Vec::new(),
        acks: acks_of(&checked.usable),
    };
    if let Err(code) = session_step(call, &group_id, step, &settings, &mut checked.outcomes).await {
        return refused(code);
    }
    ShareAcknowledgeResponse::default().with_responses(topic_responses(checked.outcomes, call))
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
