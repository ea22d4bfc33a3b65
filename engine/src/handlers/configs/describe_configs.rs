use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};
use kafka_protocol::protocol::StrBytes;
use shoal_protocol::ResponseError;

use super::broker_configs;
use super::group_configs::{group_config_value, GROUP_CONFIGS, RESOURCE_GROUP};
use super::*;
use crate::context::Call;
use shoal_coordinator::acl::Operation;

/// Kafka's ConfigSource values.
const SOURCE_DYNAMIC_TOPIC: i8 = 1;
pub const SOURCE_DYNAMIC_BROKER: i8 = 2;
pub const SOURCE_DYNAMIC_DEFAULT_BROKER: i8 = 3;
pub const SOURCE_STATIC_BROKER: i8 = 4;
pub const SOURCE_DEFAULT: i8 = 5;
const SOURCE_DYNAMIC_GROUP: i8 = 8;
/// Kafka's ConfigType values (DescribeConfigs v3+).
const TYPE_STRING: i8 = 2;
const TYPE_INT: i8 = 3;
const TYPE_LONG: i8 = 5;
const TYPE_DOUBLE: i8 = 6;
const TYPE_LIST: i8 = 7;

pub async fn handle(call: &Call<'_>, request: DescribeConfigsRequest) -> DescribeConfigsResponse {
    let broker = call.broker;
    let results = request
        .resources
        .into_iter()
        .map(|resource| {
            let wanted = |name: &str| {
                resource
                    .configuration_keys
                    .as_ref()
                    .is_none_or(|keys| keys.iter().any(|k| k.as_str() == name))
            };
            let result = DescribeConfigsResult::default()
                .with_resource_type(resource.resource_type)
                .with_resource_name(resource.resource_name.clone());
            let name = resource.resource_name.as_str();
            let resource_type = resource.resource_type;
            if let Some((code, message)) =
                refusal(call, resource_type, name, Operation::DescribeConfigs)
            {
                return result
                    .with_error_code(code)
                    .with_error_message(Some(StrBytes::from_string(message)));
            }
            match resource.resource_type {
                RESOURCE_TOPIC => {
                    let view = broker.shard.topics.load();
                    let Some(topic) = view.by_name(resource.resource_name.as_str()) else {
                        return result
                            .with_error_code(ResponseError::UnknownTopicOrPartition.code())
                            .with_error_message(Some(StrBytes::from_static_str("Unknown topic.")));
                    };
                    let configs = TOPIC_CONFIGS
                        .iter()
                        .filter(|name| wanted(name))
                        .filter_map(|name| {
                            let (value, default) = topic_config_value(&topic.config, name)?;
                            let source = if default {
                                SOURCE_DEFAULT
                            } else {
                                SOURCE_DYNAMIC_TOPIC
                            };
                            Some(entry(name, value, source, false, request.include_synonyms))
                        })
                        .collect();
                    result.with_configs(configs)
                }
                RESOURCE_BROKER => {
                    match broker_configs::describe(broker, name, wanted, request.include_synonyms) {
                        Ok(configs) => result.with_configs(configs),
                        Err((code, message)) => result
                            .with_error_code(code)
                            .with_error_message(Some(StrBytes::from_string(message))),
                    }
                }
                RESOURCE_GROUP => {
                    let view = broker.shard.topics.load();
                    let defaults = &broker.config.groups;
                    let configs = GROUP_CONFIGS
                        .iter()
                        .filter(|config| wanted(config))
                        .map(|config| {
                            let (value, default) =
                                group_config_value(&view, defaults, name, config);
                            let source = if default {
                                SOURCE_DEFAULT
                            } else {
                                SOURCE_DYNAMIC_GROUP
                            };
                            entry(config, value, source, false, request.include_synonyms)
                        })
                        .collect();
                    result.with_configs(configs)
                }
                _ => result
                    .with_error_code(ResponseError::InvalidRequest.code())
                    .with_error_message(Some(StrBytes::from_static_str(
                        "Only topic, broker and group configs can be described.",
                    ))),
            }
        })
        .collect();
    DescribeConfigsResponse::default().with_results(results)
}

fn entry(
    name: &str,
    value: String,
    source: i8,
    read_only: bool,
    synonyms: bool,
) -> DescribeConfigsResourceResult {
    described(
        name,
        &[(source, value)],
        read_only,
        config_type(name),
        synonyms,
    )
}

/// One config: its value and source are the first of `found` (in precedence order).
pub fn described(
    name: &str,
    found: &[(i8, String)],
    read_only: bool,
    config_type: i8,
    synonyms: bool,
) -> DescribeConfigsResourceResult {
    let (source, value) = found
        .first()
        .cloned()
        .unwrap_or((SOURCE_DEFAULT, String::new()));
    let synonyms = match synonyms {
        true => found
            .iter()
            .map(|(source, value)| {
                DescribeConfigsSynonym::default()
                    .with_name(StrBytes::from_string(name.to_string()))
                    .with_value(Some(StrBytes::from_string(value.clone())))
                    .with_source(*source)
            })
            .collect(),
        false => Vec::new(),
    };
    DescribeConfigsResourceResult::default()
        .with_name(StrBytes::from_string(name.to_string()))
        .with_value(Some(StrBytes::from_string(value)))
        .with_read_only(read_only)
        .with_config_source(source)
        .with_config_type(config_type)
        .with_synonyms(synonyms)
}

/// Kafka's type of a topic, group or static broker config.
pub fn config_type(name: &str) -> i8 {
    match name {
        "cleanup.policy" => TYPE_LIST,
        "max.message.bytes" | "message.max.bytes" | "segment.bytes" => TYPE_INT,
        "min.cleanable.dirty.ratio" => TYPE_DOUBLE,
        "message.timestamp.type" | "compression.type" => TYPE_STRING,
        "consumer.session.timeout.ms" | "consumer.heartbeat.interval.ms" => TYPE_INT,
        _ => TYPE_LONG,
    }
}
