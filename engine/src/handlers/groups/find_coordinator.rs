//! FindCoordinator: one broker coordinates each group (this one on a single node; in a
//! cluster, the one `ClusterView::coordinator` picks among the live brokers). Transaction
//! coordinators are not offered: transactions are not supported yet.

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;
use shoal_protocol::ResponseError;

use super::text;
use crate::handlers::Call;
use shoal_coordinator::acl::code;

const KEY_TYPE_GROUP: i8 = 0;

pub async fn handle(call: &Call<'_>, request: FindCoordinatorRequest) -> FindCoordinatorResponse {
    let version = call.version;
    let answer = |key: StrBytes| {
        let coordinator = Coordinator::default().with_key(key.clone());
        if request.key_type == KEY_TYPE_GROUP && !call.authorized(code::DESCRIBE, code::GROUP, &key)
        {
            coordinator
                .with_node_id(BrokerId(-1))
                .with_host(text(""))
                .with_port(-1)
                .with_error_code(ResponseError::GroupAuthorizationFailed.code())
        } else if request.key_type == KEY_TYPE_GROUP {
            let chosen = call.group_coordinator(&key);
            coordinator
                .with_node_id(BrokerId(chosen.node_id))
                .with_host(text(chosen.host))
                .with_port(chosen.port)
        } else {
            coordinator
                .with_node_id(BrokerId(-1))
                .with_host(text(""))
                .with_port(-1)
                .with_error_code(ResponseError::CoordinatorNotAvailable.code())
                .with_error_message(Some(text("Transactions are not supported.")))
        }
    };
    if version >= 4 {
        let coordinators = request
            .coordinator_keys
            .iter()
            .cloned()
            .map(answer)
            .collect();
        return FindCoordinatorResponse::default().with_coordinators(coordinators);
    }
    let c = answer(request.key.clone());
    FindCoordinatorResponse::default()
        .with_error_code(c.error_code)
        .with_error_message(c.error_message)
        .with_node_id(c.node_id)
        .with_host(c.host)
        .with_port(c.port)
}
