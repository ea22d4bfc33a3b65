use kafka_protocol::protocol::StrBytes;
use shoal_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use shoal_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};

use shoal_coordinator::acl::{self, Operation, ResourceType};
use shoal_protocol::ResponseError;

use crate::context::Call;
use crate::handlers::authorize::CLUSTER_OPERATIONS;

/// KIP-919's endpoint types: a broker answers for brokers; controllers are not served here.
const BROKER_ENDPOINT: i8 = 1;

/// Every live broker; the lowest node id stands in as controller. v2's fenced brokers
/// (KIP-1073) are never listed: a broker whose heartbeats lapsed leaves the cluster's list, so
/// every broker listed is unfenced.
pub async fn handle(call: &Call<'_>, request: DescribeClusterRequest) -> DescribeClusterResponse {
    if request.endpoint_type != BROKER_ENDPOINT {
        // As Kafka's broker answers a request for its controllers (v1's endpoint type).
        return DescribeClusterResponse::default()
            .with_endpoint_type(BROKER_ENDPOINT)
            .with_error_code(ResponseError::MismatchedEndpointType.code())
            .with_error_message(Some(StrBytes::from_static_str(
                "this is a broker's listener; Shoal has no controller listener to describe",
            )));
    }
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
