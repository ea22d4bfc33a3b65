//! IncrementalAlterConfigs: SET and DELETE (back to default) per config; APPEND and SUBTRACT
//! apply only to list configs, and the one list Shoal honours (cleanup.policy) has a single
//! allowed value.

use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::{IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse};

use super::alter_configs::{alter, answer};
use super::*;
use crate::handlers::Call;

const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;

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
                        _ => {
                            return Err(format!(
                                "APPEND and SUBTRACT are not supported for {name}: the only \
                                 list config Shoal honours, cleanup.policy, allows only delete"
                            ))
                        }
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
