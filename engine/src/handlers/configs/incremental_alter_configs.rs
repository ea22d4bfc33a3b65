//! IncrementalAlterConfigs: SET and DELETE (back to default) per config; APPEND and SUBTRACT
//! apply only to list configs, of which Shoal honours one, cleanup.policy.

use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse};

use super::alter_configs::{alter, answer};
use super::*;
use crate::handlers::Call;

const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;
const OP_APPEND: i8 = 2;
const OP_SUBTRACT: i8 = 3;

pub async fn handle(
    call: &Call<'_>,
    request: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let mut responses = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
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
        let outcome = alter(
            call,
            resource.resource_type,
            resource.resource_name.as_str(),
            request.validate_only,
            |mut config| {
                for (name, op, value) in &changes {
                    match *op {
                        OP_SET => set_topic_config(&mut config, name, value.as_deref())?,
                        OP_DELETE => set_topic_config(&mut config, name, None)?,
                        OP_APPEND | OP_SUBTRACT if name == "cleanup.policy" => {
                            let list = changed_list(config.cleanup, *op, value.as_deref())?;
                            set_topic_config(&mut config, name, Some(&list))?
                        }
                        OP_APPEND | OP_SUBTRACT => {
                            return Err(format!(
                                "APPEND and SUBTRACT apply to list configs; {name} is not one"
                            ))
                        }
                        other => return Err(format!("config operation {other} is unknown")),
                    }
                }
                Ok(config)
            },
        )
        .await;
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
