//! `shoal cluster status`: the live brokers as a running broker sees them (DescribeCluster).

use serde_json::json;
use shoal_protocol::messages::DescribeClusterRequest;

use super::{check, print_table, AdminError, Format, Target};

const DESCRIBE_CLUSTER_VERSION: i16 = 0;

#[derive(clap::Subcommand, Debug)]
pub enum ClusterCommand {
    /// One line per live broker: node id, address and rack.
    Status,
}

/// Prints one line per live broker: node id, address, rack, and which is the controller.
pub fn run(target: &Target, command: ClusterCommand) -> Result<(), AdminError> {
    let ClusterCommand::Status = command;
    let mut admin = target.connect()?;
    let answer = admin.call(DESCRIBE_CLUSTER_VERSION, &DescribeClusterRequest::default())?;
    check(
        answer.error_code,
        answer.error_message.as_ref().map(|m| m.as_str()),
    )?;
    let brokers = answer.brokers.iter().map(|b| {
        (
            b.broker_id.0,
            format!("{}:{}", b.host.as_str(), b.port),
            b.rack.as_ref().map(|r| r.to_string()),
            b.broker_id == answer.controller_id,
        )
    });
    match target.format {
        Format::Table => {
            println!("cluster {}", answer.cluster_id.as_str());
            let rows: Vec<Vec<String>> = brokers
                .map(|(node, address, rack, controller)| {
                    let mut rack = rack.unwrap_or_else(|| "-".to_string());
                    if controller {
                        rack.push_str(" (lowest live node: runs the mirrors' metadata sync)");
                    }
                    vec![node.to_string(), address, rack]
                })
                .collect();
            print_table(&["NODE", "ADDRESS", "RACK"], &rows);
        }
        Format::Json => {
            let list: Vec<_> = brokers
                .map(|(node, address, rack, controller)| {
                    json!({"node": node, "address": address, "rack": rack, "controller": controller})
                })
                .collect();
            println!(
                "{}",
                json!({"cluster_id": answer.cluster_id.as_str(), "brokers": list})
            );
        }
    }
    Ok(())
}
