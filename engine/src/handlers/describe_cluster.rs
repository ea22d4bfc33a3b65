use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};
use kafka_protocol::protocol::StrBytes;

use shoal_coordinator::acl::{self, Operation, ResourceType};
use shoal_protocol::ResponseError;

use crate::context::Call;
use crate::handlers::authorize::CLUSTER_OPERATIONS;

/// Every live broker; the lowest node id stands in as controller.
pub async fn handle(call: &Call<'_>, request: DescribeClusterRequest) -> DescribeClusterResponse {
    if !call.authorized_on_cluster(Operation::Describe) {
        return DescribeClusterResponse::default()
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code());
    }
    let brokers: Vec<DescribeClusterBroker> = call
        .cluster_brokers()
        .into_iter()
        .map(|b| {
            DescribeClusterBroker::default()
                .with_broker_id(BrokerId(b.node_id))
                .with_host(StrBytes::from_string(b.host))
                .with_port(b.port)
                .with_rack(b.rack.map(StrBytes::from_string))
        })
        .collect();
    let controller = brokers.first().map(|b| b.broker_id).unwrap_or(BrokerId(-1));
    let response = DescribeClusterResponse::default()
        .with_cluster_id(StrBytes::from_string(call.broker.config.cluster_id.clone()))
        .with_controller_id(controller)
        .with_brokers(brokers);
    match request.include_cluster_authorized_operations {
        true => response.with_cluster_authorized_operations(call.authorized_operations(
            &CLUSTER_OPERATIONS,
            ResourceType::Cluster,
            acl::CLUSTER_NAME,
        )),
        false => response,
    }
}
