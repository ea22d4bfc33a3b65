use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};
use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::state::{is_valid_topic_name, PARTITIONS_PER_TOPIC_MAX};
use shoal_coordinator::ErrorKind;

use super::{topics, Broker};
use crate::kafka::error_codes;

pub async fn handle(
    broker: &Broker,
    request: CreateTopicsRequest,
    _version: i16,
) -> CreateTopicsResponse {
    let mut response = CreateTopicsResponse::default();
    for topic in request.topics {
        let name = topic.name.0.as_str().to_string();
        let partitions = if !topic.assignments.is_empty() {
            topic.assignments.len() as i32
        } else if topic.num_partitions == -1 {
            broker.config.default_partitions
        } else {
            topic.num_partitions
        };
        let mut result = CreatableTopicResult::default()
            .with_name(topic.name.clone())
            .with_num_partitions(partitions)
            // Diskless partitions are as durable as the object store: one copy is reported.
            .with_replication_factor(1)
            .with_configs(Some(Vec::new()));
        let outcome = if topic.replication_factor == 0 || topic.replication_factor < -1 {
            Err((
                error_codes::INVALID_REPLICATION_FACTOR,
                "Replication factor must be -1 or at least 1.".to_string(),
            ))
        } else if request.validate_only {
            validate(broker, &name, partitions)
        } else {
            topics::create(broker, &name, partitions)
                .await
                .map(|meta| {
                    result.topic_id = meta.id;
                })
                .map_err(|e| {
                    (
                        error_codes::code_of(Some(e)),
                        error_codes::message_of(e).to_string(),
                    )
                })
        };
        if let Err((code, message)) = outcome {
            result.error_code = code;
            result.error_message = Some(StrBytes::from_string(message));
            result.num_partitions = -1;
            result.replication_factor = -1;
            result.configs = None;
        }
        response.topics.push(result);
    }
    response
}

fn validate(broker: &Broker, name: &str, partitions: i32) -> Result<(), (i16, String)> {
    let error = if !is_valid_topic_name(name) {
        Some(ErrorKind::InvalidTopic)
    } else if partitions <= 0 || partitions > PARTITIONS_PER_TOPIC_MAX {
        Some(ErrorKind::InvalidPartitions)
    } else if broker.shard.topics.load().by_name(name).is_some() {
        Some(ErrorKind::TopicAlreadyExists)
    } else {
        None
    };
    match error {
        Some(e) => Err((
            error_codes::code_of(Some(e)),
            error_codes::message_of(e).to_string(),
        )),
        None => Ok(()),
    }
}
