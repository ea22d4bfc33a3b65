use kafka_protocol::messages::create_topics_request::CreatableTopicConfig;
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};
use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::state::{is_valid_topic_name, PARTITIONS_PER_TOPIC_MAX};
use shoal_coordinator::{ErrorKind, TopicConfig};

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
        let config = topic_config(&topic.configs);
        let outcome = if topic.replication_factor == 0 || topic.replication_factor < -1 {
            Err((
                error_codes::INVALID_REPLICATION_FACTOR,
                "Replication factor must be -1 or at least 1.".to_string(),
            ))
        } else if let Err(message) = config {
            Err((error_codes::INVALID_CONFIG, message))
        } else if request.validate_only {
            validate(broker, &name, partitions)
        } else {
            let config = config.expect("checked above");
            topics::create(broker, &name, partitions, config)
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

/// The topic configs Shoal honours. Others are accepted and ignored, as they do not change
/// how a diskless partition behaves (replication settings, segment sizes).
fn topic_config(configs: &[CreatableTopicConfig]) -> Result<TopicConfig, String> {
    let mut config = TopicConfig::default();
    for c in configs {
        let Some(value) = c.value.as_ref().map(|v| v.as_str()) else {
            continue;
        };
        let parse = |name: &str| {
            value
                .parse::<i64>()
                .ok()
                .filter(|v| *v >= -1)
                .ok_or_else(|| format!("{name} must be an integer >= -1, got '{value}'"))
        };
        match c.name.as_str() {
            "retention.ms" => config.retention_ms = parse("retention.ms")?,
            "retention.bytes" => config.retention_bytes = parse("retention.bytes")?,
            "cleanup.policy" if value != "delete" => {
                return Err(format!(
                    "cleanup.policy={value} is not supported: diskless topics only delete"
                ))
            }
            _ => {}
        }
    }
    Ok(config)
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
