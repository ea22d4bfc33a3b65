use kafka_protocol::protocol::StrBytes;
use shoal_protocol::config_codes::ConfigSource;
use shoal_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use shoal_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};
use shoal_protocol::ResponseError;

use super::broker_configs;
use super::described::{described, described_synonyms};
use super::group_configs::{group_config_value, GROUP_CONFIGS, RESOURCE_GROUP};
use super::*;
use crate::context::Call;
use shoal_coordinator::acl::Operation;

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
                    describe_topic(call, result, name, &wanted, request.include_synonyms)
                }
                RESOURCE_BROKER => {
                    match broker_configs::describe(broker, name, wanted, request.include_synonyms) {
                        Ok(configs) => result.with_configs(configs),
                        Err((code, message)) => result
                            .with_error_code(code)
                            .with_error_message(Some(StrBytes::from_string(message))),
                    }
                }
                RESOURCE_GROUP => result.with_configs(group_configs(
                    call,
                    name,
                    &wanted,
                    request.include_synonyms,
                )),
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

/// A topic's configs in effect, with where each comes from.
fn describe_topic(
    call: &Call<'_>,
    result: DescribeConfigsResult,
    name: &str,
    wanted: &dyn Fn(&str) -> bool,
    include_synonyms: bool,
) -> DescribeConfigsResult {
    let view = call.broker.shard.topics.load();
    let Some(topic) = view.by_name(name) else {
        return result
            .with_error_code(ResponseError::UnknownTopicOrPartition.code())
            .with_error_message(Some(StrBytes::from_static_str("Unknown topic.")));
    };
    let defaults = view.broker_configs(None);
    let configs = TOPIC_CONFIGS
        .iter()
        .filter(|def| wanted(def.name))
        .map(|def| {
            let found = topic_config_found(def, &topic.config, &topic.overrides, defaults);
            described_synonyms(def.name, &found, false, def.config_type, include_synonyms)
        })
        .collect();
    result.with_configs(configs)
}

/// A group's configs: its own, or the broker's defaults.
fn group_configs(
    call: &Call<'_>,
    name: &str,
    wanted: &dyn Fn(&str) -> bool,
    include_synonyms: bool,
) -> Vec<DescribeConfigsResourceResult> {
    let view = call.broker.shard.topics.load();
    let defaults = &call.broker.config.groups;
    GROUP_CONFIGS
        .iter()
        .filter(|config| wanted(config.name))
        .map(|config| {
            let (value, default) = group_config_value(&view, defaults, name, config.name);
            let source = if default {
                ConfigSource::Default
            } else {
                ConfigSource::DynamicGroup
            };
            let found = [(source, value)];
            described(
                config.name,
                &found,
                false,
                config.config_type,
                include_synonyms,
            )
        })
        .collect()
}
