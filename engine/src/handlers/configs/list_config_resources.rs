//! ListConfigResources (KIP-1142; v0 was ListClientMetricsResources): the resources whose
//! configs DescribeConfigs can show, as Kafka lists them: every topic, each live broker, and
//! the groups that set configs of their own. Shoal keeps no client-metrics subscriptions
//! (KIP-714) and no broker loggers, so none of those are listed.

use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::acl::Operation;
use shoal_protocol::config_codes::ConfigResource;
use shoal_protocol::messages::list_config_resources_response::ConfigResource as Listed;
use shoal_protocol::messages::{ListConfigResourcesRequest, ListConfigResourcesResponse};
use shoal_protocol::ResponseError;

use crate::context::Call;

/// From v1 a client names the resource types it wants; before, only client metrics.
const RESOURCE_TYPES_FROM: i16 = 1;

/// What an empty list of types asks for: every type Kafka lists configs of.
const ALL_TYPES: [ConfigResource; 5] = [
    ConfigResource::Topic,
    ConfigResource::Broker,
    ConfigResource::BrokerLogger,
    ConfigResource::ClientMetrics,
    ConfigResource::Group,
];

pub async fn handle(
    call: &Call<'_>,
    request: ListConfigResourcesRequest,
) -> ListConfigResourcesResponse {
    let response = ListConfigResourcesResponse::default();
    // Kafka asks DESCRIBE_CONFIGS on the cluster, as it did of ListClientMetricsResources.
    if !call.authorized_on_cluster(Operation::DescribeConfigs) {
        return response.with_error_code(ResponseError::ClusterAuthorizationFailed.code());
    }
    let types = match requested_types(call.version, &request.resource_types) {
        Some(types) => types,
        None => return response.with_error_code(ResponseError::UnsupportedVersion.code()),
    };
    let view = call.broker.shard.topics.load();
    let mut listed = Vec::new();
    for resource in types {
        let names: Vec<String> = match resource {
            ConfigResource::Topic => view.all().map(|t| t.name.clone()).collect(),
            ConfigResource::Broker => call
                .cluster_brokers()
                .into_iter()
                .map(|b| b.node_id.to_string())
                .collect(),
            ConfigResource::Group => view.configured_groups().map(str::to_string).collect(),
            ConfigResource::BrokerLogger | ConfigResource::ClientMetrics => Vec::new(),
        };
        listed.extend(names.into_iter().map(|name| {
            Listed::default()
                .with_resource_name(StrBytes::from_string(name))
                .with_resource_type(resource as i8)
        }));
    }
    response.with_config_resources(listed)
}

/// The types asked for, in Kafka's order; None if one is no config resource type (Kafka
/// answers UNSUPPORTED_VERSION, as to a type its version cannot list).
fn requested_types(version: i16, asked: &[i8]) -> Option<Vec<ConfigResource>> {
    if version < RESOURCE_TYPES_FROM {
        return Some(vec![ConfigResource::ClientMetrics]);
    }
    if asked.is_empty() {
        return Some(ALL_TYPES.to_vec());
    }
    let known = |code: i8| ALL_TYPES.into_iter().find(|t| *t as i8 == code);
    let mut types: Vec<ConfigResource> = asked.iter().map(|&c| known(c)).collect::<Option<_>>()?;
    types.dedup();
    Some(types)
}
