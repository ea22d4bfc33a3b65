use shoal_coordinator::{ErrorKind, Request, Response};
use shoal_protocol::diskless::*;

use super::error_fields;
use crate::handlers::Call;

pub async fn create_partitions(
    call: &Call<'_>,
    request: DisklessCreatePartitionsRequest,
) -> DisklessCreatePartitionsResponse {
    let broker = call.broker;
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
