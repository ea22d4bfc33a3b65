//! FindCoordinator: this broker coordinates every group (a single-node cluster). Transaction
//! coordinators are not offered: transactions are not supported yet.

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use kafka_protocol::protocol::StrBytes;

use super::text;
use crate::handlers::Broker;
use crate::kafka::error_codes;

const KEY_TYPE_GROUP: i8 = 0;

pub fn handle(
    broker: &Broker,
    request: FindCoordinatorRequest,
    version: i16,
) -> FindCoordinatorResponse {
    let answer = |key: StrBytes| {
        let coordinator = Coordinator::default().with_key(key);
        if request.key_type == KEY_TYPE_GROUP {
            coordinator
                .with_node_id(BrokerId(broker.config.node_id))
                .with_host(text(broker.advertised_host.clone()))
                .with_port(broker.advertised_port)
        } else {
            coordinator
                .with_node_id(BrokerId(-1))
                .with_host(text(""))
                .with_port(-1)
                .with_error_code(error_codes::COORDINATOR_NOT_AVAILABLE)
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
