use shoal_coordinator::{ErrorKind, Request, Response};

use super::error_fields;
use crate::diskless::messages::*;
use crate::handlers::Broker;

pub async fn create_partitions(
    broker: &Broker,
    request: DisklessCreatePartitionsRequest,
) -> DisklessCreatePartitionsResponse {
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let call = Request::CreatePartitions {
            topic_id: topic.topic_id,
            name: topic.name,
            total_partitions: topic.num_partitions,
        };
        let error = match broker.shard.coordinator_call(call).await {
            Ok(Response::CreatePartitions(result)) => result.err(),
            _ => Some(ErrorKind::NotAvailable),
        };
        let (error_code, error_message) = error_fields(error);
        topics.push(DisklessCreatablePartitionsResult {
            topic_id: topic.topic_id,
            error_code,
            error_message,
        });
    }
    DisklessCreatePartitionsResponse {
        topics,
        ..Default::default()
    }
}
