use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::commands::DeleteTopic;
use shoal_coordinator::ErrorKind;
use shoal_protocol::messages::delete_topics_response::DeletableTopicResult;
use shoal_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse, TopicName};
use shoal_protocol::ResponseError;
use uuid::Uuid;

use crate::context::Call;
use crate::kafka::error_codes;
use shoal_coordinator::acl::{Operation, ResourceType};

pub async fn handle(call: &Call<'_>, request: DeleteTopicsRequest) -> DeleteTopicsResponse {
    let broker = call.broker;
    let version = call.version;
    // v0-5 name topics in `topic_names`; v6 in `topics`, by name or by id.
    let targets: Vec<(Option<TopicName>, Uuid)> = if version >= 6 {
        request
            .topics
            .into_iter()
            .map(|t| (t.name, t.topic_id))
            .collect()
    } else {
        request
            .topic_names
            .into_iter()
            .map(|n| (Some(n), Uuid::nil()))
            .collect()
    };
    let mut response = DeleteTopicsResponse::default();
    for (name, id) in targets {
        let name = name.or_else(|| {
            broker
                .shard
                .topics
                .load()
                .by_id(&id)
                .map(|t| TopicName(StrBytes::from_string(t.name.clone())))
        });
        let mut result = DeletableTopicResult::default()
            .with_name(name.clone())
            .with_topic_id(id);
        let outcome = match &name {
            None => Err(ResponseError::UnknownTopicId.code()),
            Some(name)
                if !call.authorized(Operation::Delete, ResourceType::Topic, name.0.as_str()) =>
            {
                Err(ResponseError::TopicAuthorizationFailed.code())
            }
            Some(name) if !within_mutation_quota(call, name.0.as_str()) => {
                Err(ResponseError::ThrottlingQuotaExceeded.code())
            }
            Some(name) => {
                let request = DeleteTopic {
                    name: name.0.as_str().to_string(),
                };
                match broker.shard.coordinator.run(request).await {
                    Ok(Ok(deleted_id)) => {
                        result.topic_id = deleted_id;
                        Ok(())
                    }
                    Ok(Err(e)) => Err(error_codes::code_of(Some(e))),
                    _ => Err(error_codes::code_of(Some(ErrorKind::NotAvailable))),
                }
            }
        };
        if let Err(code) = outcome {
            result.error_code = code;
        }
        response.responses.push(result);
    }
    response
}

/// Deleting `name`'s partitions is within the client's `controller_mutation_rate` (refused
/// from v5, which can say so; an unknown topic deletes nothing and is not counted).
fn within_mutation_quota(call: &Call<'_>, name: &str) -> bool {
    let partitions = call
        .broker
        .shard
        .topics
        .load()
        .by_name(name)
        .map_or(0, |t| t.partitions);
    partitions == 0 || call.mutation_within_quota(partitions as u64, call.version >= 5)
}
