use shoal_protocol::messages::leave_group_response::MemberResponse;
use shoal_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse};
use shoal_shards::groups::classic::calls::Leave;
use shoal_shards::groups::classic::messages::LeavingMember;
use shoal_shards::groups::GroupError;

use super::{owned, owned_optional};
use crate::context::Call;
use crate::kafka::error_codes;
use shoal_coordinator::acl::Operation;

pub async fn handle(call: &Call<'_>, request: LeaveGroupRequest) -> LeaveGroupResponse {
    let broker = call.broker;
    let version = call.version;
    let group_id = owned(&request.group_id.0);
    if let Err(denied) = call.check_group(Operation::Read, &group_id) {
        return LeaveGroupResponse::default().with_error_code(error_codes::code_of(Some(denied)));
    }
    if let Err(elsewhere) = call.check_coordinator(&group_id) {
        return LeaveGroupResponse::default()
            .with_error_code(error_codes::code_of(Some(elsewhere)));
    }
    // v0-2 name one member; v3+ a batch, static members by instance id.
    let members: Vec<LeavingMember> = if version < 3 {
        vec![LeavingMember {
            member_id: owned(&request.member_id),
            group_instance_id: None,
        }]
    } else {
        request
            .members
            .iter()
            .map(|m| LeavingMember {
                member_id: owned(&m.member_id),
                group_instance_id: owned_optional(&m.group_instance_id),
            })
            .collect()
    };
    let count = members.len();
    let results = match broker
        .shard
        .group_call(
            &group_id,
            Leave {
                group_id: group_id.clone(),
                members,
            },
        )
        .await
    {
        Ok(results) if results.len() == count => results,
        _ => vec![Some(GroupError::NotAvailable); count],
    };
    if version < 3 {
        return LeaveGroupResponse::default()
            .with_error_code(error_codes::code_of(results.first().copied().flatten()));
    }
    LeaveGroupResponse::default().with_members(
        request
            .members
            .into_iter()
            .zip(results)
            .map(|(m, error)| {
                MemberResponse::default()
                    .with_member_id(m.member_id)
                    .with_group_instance_id(m.group_instance_id)
                    .with_error_code(error_codes::code_of(error))
            })
            .collect(),
    )
}
