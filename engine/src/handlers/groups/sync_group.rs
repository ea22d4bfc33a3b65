use shoal_protocol::messages::{SyncGroupRequest, SyncGroupResponse};
use shoal_shards::groups::classic::messages::{MemberRef, SyncRequest};

use super::{optional_text, owned, owned_optional};
use crate::context::Call;
use crate::kafka::error_codes;
use shoal_coordinator::acl::Operation;

pub async fn handle(call: &Call<'_>, request: SyncGroupRequest) -> SyncGroupResponse {
    let broker = call.broker;
    let group_id = owned(&request.group_id.0);
    if let Err(denied) = call.check_group(Operation::Read, &group_id) {
        return SyncGroupResponse::default().with_error_code(error_codes::code_of(Some(denied)));
    }
    if let Err(elsewhere) = call.check_coordinator(&group_id) {
        return SyncGroupResponse::default().with_error_code(error_codes::code_of(Some(elsewhere)));
    }
    let sync = SyncRequest {
        member: MemberRef {
            group_id: group_id.clone(),
            member_id: owned(&request.member_id),
            generation_id: request.generation_id,
            group_instance_id: owned_optional(&request.group_instance_id),
        },
        protocol_type: owned_optional(&request.protocol_type),
        protocol_name: owned_optional(&request.protocol_name),
        assignments: request
            .assignments
            .iter()
            .map(|a| (owned(&a.member_id), a.assignment.clone()))
            .collect(),
        topics: broker.shard.topics.load_full(),
    };
    match broker.shard.group_call(&group_id, sync).await {
        Ok(answer) => SyncGroupResponse::default()
            .with_error_code(error_codes::code_of(answer.error))
            .with_protocol_type(optional_text(answer.protocol_type))
            .with_protocol_name(optional_text(answer.protocol_name))
            .with_assignment(answer.assignment),
        Err(unreachable) => {
            SyncGroupResponse::default().with_error_code(error_codes::code_of(Some(unreachable)))
        }
    }
}
