use shoal_protocol::messages::{HeartbeatRequest, HeartbeatResponse};
use shoal_shards::groups::classic::calls::Heartbeat;
use shoal_shards::groups::classic::messages::MemberRef;

use super::{owned, owned_optional};
use crate::context::Call;
use crate::kafka::error_codes;
use shoal_coordinator::acl::Operation;

pub async fn handle(call: &Call<'_>, request: HeartbeatRequest) -> HeartbeatResponse {
    let broker = call.broker;
    let member = MemberRef {
        group_id: owned(&request.group_id.0),
        member_id: owned(&request.member_id),
        generation_id: request.generation_id,
        group_instance_id: owned_optional(&request.group_instance_id),
    };
    let group_id = member.group_id.clone();
    if let Err(denied) = call.check_group(Operation::Read, &group_id) {
        return HeartbeatResponse::default().with_error_code(error_codes::code_of(Some(denied)));
    }
    if let Err(elsewhere) = call.check_coordinator(&group_id) {
        return HeartbeatResponse::default().with_error_code(error_codes::code_of(Some(elsewhere)));
    }
    let error = broker
        .shard
        .group_call(&group_id, Heartbeat(member))
        .await
        .unwrap_or_else(Some);
    HeartbeatResponse::default().with_error_code(error_codes::code_of(error))
}
