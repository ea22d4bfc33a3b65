use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::state::{is_valid_topic_name, PARTITIONS_PER_TOPIC_MAX};
use shoal_coordinator::{ErrorKind, TopicConfig};
use shoal_protocol::messages::create_topics_request::CreatableTopicConfig;
use shoal_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use shoal_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};
use shoal_protocol::ResponseError;

use super::configs::alter_configs::OwnConfig;
use super::configs::{set_topic_config, topic_config_found, TOPIC_CONFIGS};
use super::topics;
use crate::context::Broker;
use crate::context::Call;
use crate::kafka::error_codes;
use shoal_coordinator::topic_configs::{resolve, TopicOverrides};

pub async fn handle(call: &Call<'_>, request: CreateTopicsRequest) -> CreateTopicsResponse {
    let broker = call.broker;
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
        if let Ok((_, own)) = &config {
            // As created: the configs it sets, the others from today's cluster-wide defaults.
            let defaults = broker.shard.topics.load().broker_configs(None).to_vec();
            let config = resolve(own, &defaults);
            result.configs = Some(described_configs(&config, own, &defaults));
        }
        let outcome = if !call.may_create_topic(&name) {
            Err((
                ResponseError::TopicAuthorizationFailed.code(),
                "Not authorized to create this topic.".to_string(),
            ))
        } else if topic.replication_factor == 0 || topic.replication_factor < -1 {
            Err((
                ResponseError::InvalidReplicationFactor.code(),
                "Replication factor must be -1 or at least 1.".to_string(),
            ))
        } else if let Err(message) = config {
            Err((ResponseError::InvalidConfig.code(), message))
        } else if request.validate_only {
            validate(broker, &name, partitions)
        } else if !call.mutation_within_quota(partitions.max(0) as u64, call.version >= 6) {
            Err(throttled())
        } else {
            let (_, own) = config.expect("checked above");
            topics::create(broker, &name, partitions, own)
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

/// THROTTLING_QUOTA_EXCEEDED: the client is over its `controller_mutation_rate`.
pub(crate) fn throttled() -> (i16, String) {
    let error = ResponseError::ThrottlingQuotaExceeded;
    (error.code(), error.to_string())
}

/// The configs a created topic has, as CreateTopics v5+ reports them.
fn described_configs(
    config: &TopicConfig,
    own: &TopicOverrides,
    defaults: &[(String, String)],
) -> Vec<CreatableTopicConfigs> {
    TOPIC_CONFIGS
        .iter()
        .map(|def| {
            let found = topic_config_found(def, config, own, defaults);
            let (source, _, value) = found.into_iter().next().expect("Kafka's default is last");
            CreatableTopicConfigs::default()
                .with_name(StrBytes::from_static_str(def.name))
                .with_value(Some(StrBytes::from_string(value)))
                .with_config_source(source as i8)
        })
        .collect()
}

/// The topic's settings from the request's configs, and which it sets; unknown names and
/// unsupported values are refused with a message saying why.
fn topic_config(configs: &[CreatableTopicConfig]) -> Result<OwnConfig, String> {
    let (mut config, mut own) = (TopicConfig::default(), TopicOverrides::new());
    for c in configs {
        let value = c.value.as_ref().map(|v| v.as_str());
        set_topic_config(&mut config, &mut own, c.name.as_str(), value)?;
    }
    Ok((config, own))
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
