use kafka_protocol::protocol::StrBytes;
use shoal_protocol::messages::join_group_response::JoinGroupResponseMember;
use shoal_protocol::messages::{JoinGroupRequest, JoinGroupResponse};
use shoal_shards::groups::classic::messages::JoinRequest;

use super::{optional_text, owned, owned_optional, text};
use crate::context::Call;
use crate::kafka::error_codes;
use shoal_coordinator::acl::Operation;

/// The first JoinGroup version whose answer may carry no protocol name (a null one).
const PROTOCOL_NAME_NULLABLE_FROM: i16 = 7;

pub async fn handle(call: &Call<'_>, request: JoinGroupRequest) -> JoinGroupResponse {
    let broker = call.broker;
    let version = call.version;
    let client = call.client;
    let group_id = owned(&request.group_id.0);
    if let Err(denied) = call.check_group(Operation::Read, &group_id) {
        return JoinGroupResponse::default().with_error_code(error_codes::code_of(Some(denied)));
    }
    if let Err(elsewhere) = call.check_coordinator(&group_id) {
        return JoinGroupResponse::default().with_error_code(error_codes::code_of(Some(elsewhere)));
    }
    let join = JoinRequest {
        group_id: group_id.clone(),
        member_id: owned(&request.member_id),
        group_instance_id: owned_optional(&request.group_instance_id),
        client_id: client.id.clone(),
        client_host: client.host.clone(),
        session_timeout_ms: request.session_timeout_ms,
        // v0 has no rebalance timeout: Kafka uses the session timeout.
        rebalance_timeout_ms: if version == 0 {
            request.session_timeout_ms
        } else {
            request.rebalance_timeout_ms
        },
        protocol_type: owned(&request.protocol_type),
        protocols: request
            .protocols
            .iter()
            .map(|p| (owned(&p.name), p.metadata.clone()))
            .collect(),
        require_known_member_id: version >= 4,
        topics: broker.shard.topics.load_full(),
    };
    let answer = match broker.shard.group_call(&group_id, join).await {
        Ok(answer) => answer,
        Err(unreachable) => {
            return JoinGroupResponse::default()
                .with_error_code(error_codes::code_of(Some(unreachable)))
                .with_generation_id(-1)
                .with_member_id(request.member_id)
        }
    };
    JoinGroupResponse::default()
        .with_error_code(error_codes::code_of(answer.error))
        .with_generation_id(answer.generation_id)
        .with_protocol_type(optional_text(answer.protocol_type))
        .with_protocol_name(
            // Before v7 the name is not nullable: Kafka answers "" where it has none.
            optional_text(answer.protocol_name)
                .or_else(|| (version < PROTOCOL_NAME_NULLABLE_FROM).then(StrBytes::default)),
        )
        .with_leader(text(answer.leader))
        .with_member_id(text(answer.member_id))
        .with_members(
            answer
                .members
                .into_iter()
                .map(|m| {
                    JoinGroupResponseMember::default()
                        .with_member_id(text(m.member_id))
                        .with_group_instance_id(optional_text(m.group_instance_id))
                        .with_metadata(m.metadata)
                })
                .collect(),
        )
}
