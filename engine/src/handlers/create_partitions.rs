use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::commands::CreatePartitions;
use shoal_coordinator::state::PARTITIONS_PER_TOPIC_MAX;
use shoal_coordinator::ErrorKind;
use shoal_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use shoal_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};

use crate::context::Call;
use crate::kafka::error_codes;
use shoal_coordinator::acl::{Operation, ResourceType};

/// Grows topics to `count` partitions. Kafka only ever adds partitions: a count that is not
/// larger than the current one is `INVALID_PARTITIONS`.
pub async fn handle(call: &Call<'_>, request: CreatePartitionsRequest) -> CreatePartitionsResponse {
    let broker = call.broker;
    let mut results = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let name = topic.name.0.as_str().to_string();
        let current = broker.shard.topics.load().by_name(&name).cloned();
        let outcome = match current {
            _ if !call.authorized(Operation::Alter, ResourceType::Topic, &name) => {
                Err((ErrorKind::TopicAuthorizationFailed, None))
            }
            None => Err((ErrorKind::UnknownTopicOrPartition, None)),
            Some(meta) if topic.count <= meta.partitions => Err((
                ErrorKind::InvalidPartitions,
                Some(format!(
                    "Topic {name} has {} partitions; the count can only grow.",
                    meta.partitions
                )),
            )),
            Some(_) if topic.count > PARTITIONS_PER_TOPIC_MAX => {
                Err((ErrorKind::InvalidPartitions, None))
            }
            Some(_) if request.validate_only => Ok(()),
            Some(meta)
                if !call.mutation_within_quota(
                    (topic.count - meta.partitions) as u64,
                    call.version >= 3,
                ) =>
            {
                Err((ErrorKind::ThrottlingQuotaExceeded, None))
            }
            Some(meta) => {
                let grow = CreatePartitions {
                    topic_id: meta.id,
                    name: name.clone(),
                    total_partitions: topic.count,
                };
                match broker.shard.coordinator.run(grow).await {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(e)) => Err((e, None)),
                    _ => Err((ErrorKind::NotAvailable, None)),
                }
            }
        };
        let mut result = CreatePartitionsTopicResult::default().with_name(topic.name);
        if let Err((error, message)) = outcome {
            result.error_code = error_codes::code_of(Some(error));
            let message = message.unwrap_or_else(|| error_codes::message_of(error).to_string());
            result.error_message = Some(StrBytes::from_string(message));
        }
        results.push(result);
    }
    CreatePartitionsResponse::default().with_results(results)
}
