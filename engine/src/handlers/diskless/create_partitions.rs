use shoal_coordinator::commands::CreatePartitions;
use shoal_coordinator::ErrorKind;
use shoal_protocol::diskless::*;

use super::error_fields::error_fields;
use crate::context::Call;

pub async fn create_partitions(
    call: &Call<'_>,
    request: DisklessCreatePartitionsRequest,
) -> DisklessCreatePartitionsResponse {
    let broker = call.broker;
    let mut topics = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let call = CreatePartitions {
            topic_id: topic.topic_id,
            name: topic.name,
            total_partitions: topic.num_partitions,
        };
        let error = match broker.shard.coordinator.run(call).await {
            Ok(result) => result.err(),
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
