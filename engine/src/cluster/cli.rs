//! `shoal cluster status`: the live brokers as a running broker sees them (DescribeCluster).

use std::time::Duration;

use kafka_protocol::messages::DescribeClusterRequest;
use shoal_protocol::client::BlockingClient;

use crate::EngineError;

const TIMEOUT: Duration = Duration::from_secs(10);
const RESPONSE_MAX_BYTES: usize = 16 << 20;

/// Prints one line per live broker: node id, address, rack, and which is the controller.
pub fn status(bootstrap: &str) -> Result<(), EngineError> {
    let fail = |e: String| EngineError::Config(format!("{bootstrap}: {e}"));
    let mut client =
        BlockingClient::connect(bootstrap, "shoal-cluster-cli", TIMEOUT, RESPONSE_MAX_BYTES)
            .map_err(|e| fail(format!("cannot connect: {e}")))?;
    let answer = client
        .call(0, &DescribeClusterRequest::default())
        .map_err(|e| fail(e.to_string()))?;
    if answer.error_code != 0 {
        return Err(fail(format!(
            "DescribeCluster refused: error {}{}",
            answer.error_code,
            answer
                .error_message
                .map(|m| format!(" ({})", m.as_str()))
                .unwrap_or_default()
        )));
    }
    println!("cluster {}", answer.cluster_id.as_str());
    println!("{:<8} {:<30} {:<16}", "NODE", "ADDRESS", "RACK");
    for broker in &answer.brokers {
        let marker = if broker.broker_id == answer.controller_id {
            " (lowest live node: runs the mirrors' metadata sync)"
        } else {
            ""
        };
        println!(
            "{:<8} {:<30} {:<16}{marker}",
            broker.broker_id.0,
            format!("{}:{}", broker.host.as_str(), broker.port),
            broker.rack.as_ref().map(|r| r.as_str()).unwrap_or("-"),
        );
    }
    Ok(())
}
