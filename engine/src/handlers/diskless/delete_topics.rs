use shoal_coordinator::commands::DeleteTopic;
use shoal_coordinator::ErrorKind;
use shoal_protocol::diskless::*;

use super::error_fields::error_fields;
use crate::context::Call;

pub async fn delete_topics(
    call: &Call<'_>,
    request: DisklessDeleteTopicsRequest,
) -> DisklessDeleteTopicsResponse {
    let broker = call.broker;
    let mut responses = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let name = broker
            .shard
            .topics
            .load()
            .by_id(&topic.topic_id)
            .map(|t| t.name.clone());
        let error = match name {
            None => Some(ErrorKind::UnknownTopicOrPartition),
            Some(name) => match broker.shard.coordinator.run(DeleteTopic { name }).await {
                Ok(result) => result.err(),
                _ => Some(ErrorKind::NotAvailable),
            },
        };
        let (error_code, error_message) = error_fields(error);
        responses.push(DisklessDeletableTopicResult {
            topic_id: topic.topic_id,
            error_code,
            error_message,
        });
    }
    DisklessDeleteTopicsResponse {
        responses,
        ..Default::default()
    }
}
