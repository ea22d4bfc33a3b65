//! The config resources (topics, brokers, groups): DescribeConfigs, AlterConfigs and
//! IncrementalAlterConfigs, with a table per resource of the configs Shoal honours
//! (`topic_configs`, `static_broker_configs`, `crate::dynamic_configs`, `group_configs`).

pub mod alter_configs;
pub mod broker_configs;
pub mod describe_configs;
mod described;
pub mod group_configs;
pub mod incremental_alter_configs;
pub mod list_config_resources;
pub mod reference;
pub mod static_broker_configs;
mod topic_described;

use shoal_coordinator::commands::AlterTopicConfig;
use shoal_coordinator::topic_configs::TopicOverrides;
use shoal_coordinator::ErrorKind;

use shoal_coordinator::acl::{Operation, ResourceType};
use shoal_protocol::config_codes::ConfigResource;
use shoal_protocol::ResponseError;

use crate::context::{Broker, Call};

pub use shoal_coordinator::topic_configs::{set_topic_config, TOPIC_CONFIGS};
pub use topic_described::topic_config_found;

pub const RESOURCE_TOPIC: i8 = ConfigResource::Topic as i8;
pub const RESOURCE_BROKER: i8 = ConfigResource::Broker as i8;

/// Kafka's check for a config resource: `operation` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on
/// the topic or the group, or on the cluster for a broker's configs; the refusal (code,
/// message) if any.
pub fn refusal(
    call: &Call<'_>,
    resource_type: i8,
    name: &str,
    operation: Operation,
) -> Option<(i16, String)> {
    let error = match resource_type {
        RESOURCE_TOPIC if !call.authorized(operation, ResourceType::Topic, name) => {
            ResponseError::TopicAuthorizationFailed
        }
        RESOURCE_BROKER if !call.authorized_on_cluster(operation) => {
            ResponseError::ClusterAuthorizationFailed
        }
        group_configs::RESOURCE_GROUP if !call.authorized(operation, ResourceType::Group, name) => {
            ResponseError::GroupAuthorizationFailed
        }
        _ => return None,
    };
    Some((error.code(), "Not authorized.".to_string()))
}

/// Replaces the configs a topic sets itself in the coordinator (the rest follow the
/// cluster-wide defaults).
pub async fn store_topic_config(
    broker: &Broker,
    name: &str,
    overrides: TopicOverrides,
) -> Result<(), ErrorKind> {
    let request = AlterTopicConfig {
        name: name.to_string(),
        overrides,
    };
    match broker.shard.coordinator.run(request).await {
        Ok(result) => result,
        _ => Err(ErrorKind::NotAvailable),
    }
}
