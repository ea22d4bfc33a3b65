//! IncrementalAlterConfigs: SET and DELETE (back to default) per config; APPEND and SUBTRACT
//! apply only to list configs, of which Shoal honours one, cleanup.policy.

use shoal_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use shoal_protocol::messages::{IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse};

use shoal_coordinator::acl::Operation;
use shoal_coordinator::CleanupPolicy;
use shoal_protocol::messages::incremental_alter_configs_request::AlterConfigsResource;
use shoal_protocol::ResponseError;

use super::alter_configs::{alter, answer};
use super::group_configs::{alter_group_configs, RESOURCE_GROUP};
use super::*;
use crate::context::Call;

use shoal_protocol::config_codes::config_operation::{
    APPEND as OP_APPEND, DELETE as OP_DELETE, SET as OP_SET, SUBTRACT as OP_SUBTRACT,
};

pub async fn handle(
    call: &Call<'_>,
    request: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
        let outcome = match resource.resource_type {
            RESOURCE_GROUP => alter_group(call, &resource, request.validate_only).await,
            RESOURCE_BROKER => alter_broker(call, &resource, request.validate_only).await,
            _ => alter_topic(call, &resource, request.validate_only).await,
        };
        let response = answer(resource.resource_type, resource.resource_name, outcome);
        responses.push(
            AlterConfigsResourceResponse::default()
                .with_error_code(response.error_code)
                .with_error_message(response.error_message)
                .with_resource_type(response.resource_type)
                .with_resource_name(response.resource_name),
        );
    }
    IncrementalAlterConfigsResponse::default().with_responses(responses)
}

/// A topic's configs: SET, DELETE, and APPEND or SUBTRACT on cleanup.policy.
async fn alter_topic(
    call: &Call<'_>,
    resource: &AlterConfigsResource,
    validate_only: bool,
) -> Result<(), (i16, String)> {
    let changes: Vec<(String, i8, Option<String>)> = resource
        .configs
        .iter()
        .map(|c| {
            (
                c.name.as_str().to_string(),
                c.config_operation,
                c.value.as_ref().map(|v| v.to_string()),
            )
        })
        .collect();
    alter(
        call,
        resource.resource_type,
        resource.resource_name.as_str(),
        validate_only,
        |(mut config, mut own)| {
            for (name, op, value) in &changes {
                match *op {
                    OP_SET => set_topic_config(&mut config, &mut own, name, value.as_deref())?,
                    OP_DELETE => set_topic_config(&mut config, &mut own, name, None)?,
                    OP_APPEND | OP_SUBTRACT if name == "cleanup.policy" => {
                        let list = changed_list(config.cleanup, *op, value.as_deref())?;
                        set_topic_config(&mut config, &mut own, name, Some(&list))?
                    }
                    OP_APPEND | OP_SUBTRACT => {
                        return Err(format!(
                            "APPEND and SUBTRACT apply to list configs; {name} is not one"
                        ))
                    }
                    other => return Err(format!("config operation {other} is unknown")),
                }
            }
            Ok((config, own))
        },
    )
    .await
}

/// A group's configs: SET and DELETE only (none of them is a list).
async fn alter_group(
    call: &Call<'_>,
    resource: &AlterConfigsResource,
    validate_only: bool,
) -> Result<(), (i16, String)> {
    let group = resource.resource_name.as_str();
    if let Some(refused) = refusal(call, RESOURCE_GROUP, group, Operation::AlterConfigs) {
        return Err(refused);
    }
    let mut changes = Vec::with_capacity(resource.configs.len());
    for c in &resource.configs {
        let value = match c.config_operation {
            OP_SET => c.value.as_ref().map(|v| v.to_string()),
            OP_DELETE => None,
            _ => {
                return Err((
                    ResponseError::InvalidConfig.code(),
                    format!(
                        "{} is not a list: only SET and DELETE apply",
                        c.name.as_str()
                    ),
                ))
            }
        };
        changes.push((c.name.as_str().to_string(), value));
    }
    alter_group_configs(call.broker, group, &changes, validate_only).await
}

/// A broker's dynamic configs: SET and DELETE (none of them is a list).
async fn alter_broker(
    call: &Call<'_>,
    resource: &AlterConfigsResource,
    validate_only: bool,
) -> Result<(), (i16, String)> {
    let name = resource.resource_name.as_str();
    let named: Vec<&str> = resource.configs.iter().map(|c| c.name.as_str()).collect();
    let change = |stored: &[(String, String)]| {
        let mut configs = stored.to_vec();
        for c in &resource.configs {
            let config = c.name.as_str();
            configs.retain(|(n, _)| n != config);
            match (c.config_operation, &c.value) {
                (OP_SET, Some(value)) => configs.push((config.to_string(), value.to_string())),
                (OP_SET, None) => return Err(format!("SET of {config} needs a value")),
                (OP_DELETE, _) => {}
                _ => return Err(format!("{config} is not a list: only SET and DELETE apply")),
            }
        }
        Ok(configs)
    };
    broker_configs::alter_broker_configs(call, name, validate_only, change, &named).await
}

/// cleanup.policy after APPEND or SUBTRACT of the listed values.
fn changed_list(current: CleanupPolicy, op: i8, value: Option<&str>) -> Result<String, String> {
    let mut items: Vec<&str> = current.name().split(',').collect();
    for item in value.unwrap_or_default().split(',').map(str::trim) {
        match op {
            OP_APPEND if !item.is_empty() && !items.contains(&item) => items.push(item),
            OP_SUBTRACT => items.retain(|i| *i != item),
            _ => {}
        }
    }
    Ok(items.join(","))
}
