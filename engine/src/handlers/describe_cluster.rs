use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{BrokerId, DescribeClusterRequest, DescribeClusterResponse};
use kafka_protocol::protocol::StrBytes;

use shoal_coordinator::acl::code;
use shoal_protocol::ResponseError;

use crate::handlers::Call;

/// One broker, which is also the controller.
pub async fn handle(call: &Call<'_>, _request: DescribeClusterRequest) -> DescribeClusterResponse {
    if !call.authorized_on_cluster(code::DESCRIBE) {
        return DescribeClusterResponse::default()
            .with_error_code(ResponseError::ClusterAuthorizationFailed.code());
    }
    let broker = call.broker;
    let node = BrokerId(broker.config.node_id);
    let (host, port) = call.advertised();
    DescribeClusterResponse::default()
        .with_cluster_id(StrBytes::from_string(broker.config.cluster_id.clone()))
        .with_controller_id(node)
        .with_brokers(vec![DescribeClusterBroker::default()
            .with_broker_id(node)
            .with_host(StrBytes::from_string(host))
            .with_port(port)])
}
