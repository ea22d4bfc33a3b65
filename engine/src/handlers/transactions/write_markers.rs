//! WriteTxnMarkers, as an operator sends it: Admin `abortTransaction` (`kafka-transactions
//! abort`) asks a partition's leader to abort a transaction that holds the partition's last
//! stable offset back. Kafka's brokers also send each other commit markers with it; Shoal's
//! coordinator writes its own markers, so a commit marker from outside is refused.

use shoal_coordinator::acl::Operation;
use shoal_coordinator::commands::AbortTransactionIn;
use shoal_coordinator::{ErrorKind, TopicPartition};
use shoal_protocol::messages::write_txn_markers_request::WritableTxnMarker;
use shoal_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use shoal_protocol::messages::{WriteTxnMarkersRequest, WriteTxnMarkersResponse};

use crate::context::Call;
use crate::kafka::error_codes;

pub async fn handle(call: &Call<'_>, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse {
    // Kafka asks CLUSTER_ACTION of whoever writes markers, an operator's tool included.
    let allowed = call.authorized_on_cluster(Operation::ClusterAction);
    let mut results = Vec::with_capacity(request.markers.len());
    for marker in &request.markers {
        let mut topics = Vec::with_capacity(marker.topics.len());
        for topic in &marker.topics {
            let mut partitions = Vec::with_capacity(topic.partition_indexes.len());
            for &index in &topic.partition_indexes {
                let outcome = match allowed {
                    false => Err(ErrorKind::ClusterAuthorizationFailed),
                    true => abort(call, marker, topic.name.0.as_str(), index).await,
                };
                partitions.push(
                    WritableTxnMarkerPartitionResult::default()
                        .with_partition_index(index)
                        .with_error_code(error_codes::code_of(outcome.err())),
                );
            }
            topics.push(
                WritableTxnMarkerTopicResult::default()
                    .with_name(topic.name.clone())
                    .with_partitions(partitions),
            );
        }
        results.push(
            WritableTxnMarkerResult::default()
                .with_producer_id(marker.producer_id)
                .with_topics(topics),
        );
    }
    WriteTxnMarkersResponse::default().with_markers(results)
}

/// Aborts the marker's producer's transaction open in one partition, and waits for its
/// markers, so the last stable offset has moved when the operator is answered.
async fn abort(
    call: &Call<'_>,
    marker: &WritableTxnMarker,
    topic: &str,
    partition: i32,
) -> Result<(), ErrorKind> {
    if marker.transaction_result {
        return Err(ErrorKind::InvalidRequest);
    }
    let shard = &call.broker.shard;
    let view = shard.topics.load();
    let meta = view
        .by_name(topic)
        .filter(|meta| (0..meta.partitions).contains(&partition))
        .ok_or(ErrorKind::UnknownTopicOrPartition)?;
    let command = AbortTransactionIn {
        producer_id: marker.producer_id.0,
        producer_epoch: marker.producer_epoch,
        partition: TopicPartition {
            topic_id: meta.id,
            partition,
        },
    };
    let ending = match shard.coordinator.run(command).await {
        Ok(ending) => ending?,
        Err(_) => return Err(ErrorKind::NotAvailable),
    };
    match ending {
        Some(ending) => shard.end_transaction(ending).await,
        None => Ok(()),
    }
}
