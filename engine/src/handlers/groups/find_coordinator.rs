//! FindCoordinator: one broker coordinates each group and each transactional id (this one on
//! a single node; in a cluster, the one `ClusterView::coordinator` picks among the live
//! brokers).

use kafka_protocol::protocol::StrBytes;
use shoal_protocol::messages::find_coordinator_response::Coordinator;
use shoal_protocol::messages::{BrokerId, FindCoordinatorRequest, FindCoordinatorResponse};
use shoal_protocol::ResponseError;

use super::text;
use crate::context::Call;
use shoal_coordinator::acl::{Operation, ResourceType};

const KEY_TYPE_GROUP: i8 = 0;
const KEY_TYPE_TRANSACTION: i8 = 1;
/// v6's share-state keys ("group:topic id:partition", KIP-932), which Kafka's brokers ask
/// each other for; Shoal keeps share-group state itself and has no share coordinator to find.
const KEY_TYPE_SHARE: i8 = 2;

pub async fn handle(call: &Call<'_>, request: FindCoordinatorRequest) -> FindCoordinatorResponse {
    let version = call.version;
    let answer = |key: StrBytes| {
        let coordinator = Coordinator::default().with_key(key.clone());
        let refused = |code: i16| {
            let refusal = Coordinator::default()
                .with_key(key.clone())
                .with_node_id(BrokerId(-1))
                .with_host(text(""))
                .with_port(-1)
                .with_error_code(code);
            match request.key_type {
                KEY_TYPE_SHARE => refusal.with_error_message(Some(StrBytes::from_static_str(
                    "Shoal keeps share-group state in its own coordinator: there is no share \
                     coordinator to find",
                ))),
                _ => refusal,
            }
        };
        let denied = match request.key_type {
            KEY_TYPE_GROUP => (!call.authorized(Operation::Describe, ResourceType::Group, &key))
                .then_some(ResponseError::GroupAuthorizationFailed),
            KEY_TYPE_TRANSACTION => {
                (!call.authorized(Operation::Describe, ResourceType::TransactionalId, &key))
                    .then_some(ResponseError::TransactionalIdAuthorizationFailed)
            }
            _ => Some(ResponseError::InvalidRequest),
        };
        match denied {
            Some(error) => refused(error.code()),
            None => {
                let chosen = call.group_coordinator(&key);
                coordinator
                    .with_node_id(BrokerId(chosen.node_id))
                    .with_host(text(chosen.host))
                    .with_port(chosen.port)
            }
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
