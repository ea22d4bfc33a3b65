use shoal_coordinator::acl::{Operation, ResourceType};
use shoal_coordinator::commands::{InitProducerId, ProducerIdentity};
use shoal_coordinator::ErrorKind;
use shoal_protocol::messages::{InitProducerIdRequest, InitProducerIdResponse, ProducerId};
use shoal_protocol::ResponseError;

use crate::context::Call;
use crate::kafka::error_codes;

/// Hands out a new producer id (epoch 0) for idempotent producers; ids are allocated in the
/// coordinator's log, so they are never reused after a restart. A transactional id gets its
/// own producer at the next epoch (`transactions::init`).
pub async fn handle(call: &Call<'_>, request: InitProducerIdRequest) -> InitProducerIdResponse {
    let broker = call.broker;
    let failed = |code| {
        InitProducerIdResponse::default()
            .with_error_code(code)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)
    };
    if let Some(id) = request
        .transactional_id
        .as_ref()
        .filter(|id| !id.is_empty())
    {
        return crate::handlers::transactions::init::init(call, &request, id.as_str()).await;
    }
    // Kafka: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic.
    if !(call.authorized_on_cluster(Operation::IdempotentWrite)
        || call.authorized_on_some(Operation::Write, ResourceType::Topic))
    {
        return failed(ResponseError::ClusterAuthorizationFailed.code());
    }
    match broker.shard.coordinator.run(InitProducerId).await {
        Ok(ProducerIdentity {
            producer_id,
            producer_epoch,
        }) => InitProducerIdResponse::default()
            .with_producer_id(ProducerId(producer_id))
            .with_producer_epoch(producer_epoch),
        _ => failed(error_codes::code_of(Some(ErrorKind::NotAvailable))),
    }
}
