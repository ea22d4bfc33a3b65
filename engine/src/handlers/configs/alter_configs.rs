//! AlterConfigs (the legacy, whole-set form): the listed configs replace the topic's (or the
//! broker's dynamic) settings, and any honoured config not listed goes back to its default.

use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::acl::Operation;
use shoal_coordinator::topic_configs::TopicOverrides;
use shoal_coordinator::TopicConfig;
use shoal_protocol::messages::alter_configs_request::AlterConfigsResource;
use shoal_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use shoal_protocol::messages::{AlterConfigsRequest, AlterConfigsResponse};
use shoal_protocol::ResponseError;

use super::*;
use crate::context::Call;
use crate::kafka::error_codes;

pub async fn handle(call: &Call<'_>, request: AlterConfigsRequest) -> AlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
        if resource.resource_type == RESOURCE_BROKER {
            let outcome = alter_broker(call, &resource, request.validate_only).await;
            responses.push(answer(
                resource.resource_type,
                resource.resource_name,
                outcome,
            ));
            continue;
        }
        let changes: Vec<(String, Option<String>)> = resource
            .configs
            .iter()
            .map(|c| {
                (
                    c.name.as_str().to_string(),
                    c.value.as_ref().map(|v| v.to_string()),
                )
            })
            .collect();
        let outcome = alter(
            call,
            resource.resource_type,
            resource.resource_name.as_str(),
            request.validate_only,
            |_current| {
                let mut own = (TopicConfig::default(), TopicOverrides::new());
                for (name, value) in &changes {
                    set_topic_config(&mut own.0, &mut own.1, name, value.as_deref())?;
                }
                Ok(own)
            },
        )
        .await;
        responses.push(answer(
            resource.resource_type,
            resource.resource_name,
            outcome,
        ));
    }
    AlterConfigsResponse::default().with_responses(responses)
}

/// A topic's settings and the configs it sets itself.
pub type OwnConfig = (TopicConfig, TopicOverrides);

/// Applies `change` to a topic's current settings: validated always, stored unless
/// `validate_only`. Errors are (Kafka code, message).
pub async fn alter(
    call: &Call<'_>,
    resource_type: i8,
    name: &str,
    validate_only: bool,
    change: impl FnOnce(OwnConfig) -> Result<OwnConfig, String>,
) -> Result<(), (i16, String)> {
    let broker = call.broker;
    if resource_type != RESOURCE_TOPIC {
        return Err((
            ResponseError::InvalidRequest.code(),
            "Only topic and broker configs can be altered here (group configs: with \
             IncrementalAlterConfigs)."
                .to_string(),
        ));
    }
    if let Some(refused) = refusal(call, resource_type, name, Operation::AlterConfigs) {
        return Err(refused);
    }
    let current = broker
        .shard
        .topics
        .load()
        .by_name(name)
        .map(|t| (t.config, t.overrides.clone()))
        .ok_or((
            ResponseError::UnknownTopicOrPartition.code(),
            "Unknown topic.".to_string(),
        ))?;
    let (_, own) =
        change(current).map_err(|message| (ResponseError::InvalidConfig.code(), message))?;
    if validate_only {
        return Ok(());
    }
    store_topic_config(broker, name, own).await.map_err(|e| {
        (
            error_codes::code_of(Some(e)),
            error_codes::message_of(e).to_string(),
        )
    })
}

/// A broker's dynamic configs, whole: the listed ones set, every other one unset.
async fn alter_broker(
    call: &Call<'_>,
    resource: &AlterConfigsResource,
    validate_only: bool,
) -> Result<(), (i16, String)> {
    let name = resource.resource_name.as_str();
    let named: Vec<&str> = resource.configs.iter().map(|c| c.name.as_str()).collect();
    let configs: Vec<(String, String)> = resource
        .configs
        .iter()
        .filter_map(|c| Some((c.name.to_string(), c.value.as_ref()?.to_string())))
        .collect();
    let whole = |_: &[(String, String)]| Ok(configs.clone());
    broker_configs::alter_broker_configs(call, name, validate_only, whole, &named).await
}

pub fn answer(
    resource_type: i8,
    resource_name: StrBytes,
    outcome: Result<(), (i16, String)>,
) -> AlterConfigsResourceResponse {
    let response = AlterConfigsResourceResponse::default()
        .with_resource_type(resource_type)
        .with_resource_name(resource_name);
    match outcome {
        Ok(()) => response,
        Err((code, message)) => response
            .with_error_code(code)
            .with_error_message(Some(StrBytes::from_string(message))),
    }
}
