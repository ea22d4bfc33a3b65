//! AddPartitionsToTxn (v0-3, from producers): the transaction is open and will write
//! markers to these partitions. Every partition gets the request's one outcome, as in Kafka.

use shoal_coordinator::acl::Operation;
use shoal_coordinator::commands::AddToTransaction;
use shoal_coordinator::{ErrorKind, TopicPartition};
use shoal_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use shoal_protocol::messages::{AddPartitionsToTxnRequest, AddPartitionsToTxnResponse};
use shoal_protocol::ResponseError;

use crate::context::Call;
use crate::kafka::error_codes;

pub async fn handle(
    call: &Call<'_>,
    request: AddPartitionsToTxnRequest,
) -> AddPartitionsToTxnResponse {
    let id = request.v3_and_below_transactional_id.0.as_str();
    let view = call.broker.shard.topics.load();
    // Per topic: its partitions, or why it cannot be added.
    let mut partitions = Vec::new();
    let mut topic_errors = Vec::new();
    for topic in &request.v3_and_below_topics {
        let name = topic.name.0.as_str();
        let error = match (call.check_topic(Operation::Write, name), view.by_name(name)) {
            (Err(e), _) => Some(e),
            (Ok(()), None) => Some(ErrorKind::UnknownTopicOrPartition),
            (Ok(()), Some(meta)) => {
                for p in &topic.partitions {
                    partitions.push(TopicPartition {
                        topic_id: meta.id,
                        partition: *p,
                    });
                }
                None
            }
        };
        topic_errors.push(error);
    }
    let any_refused = topic_errors.iter().any(Option::is_some);
    let outcome = match super::check_transactional_id(call, id) {
        Err(e) => Err(e),
        // Kafka adds none when any is refused; the others are "not attempted".
        Ok(()) if any_refused => Ok(()),
        Ok(()) => {
            let command = AddToTransaction {
                transactional_id: id.to_string(),
                producer_id: request.v3_and_below_producer_id.0,
                producer_epoch: request.v3_and_below_producer_epoch,
                partitions,
            };
            match call.broker.shard.coordinator.run(command).await {
                Ok(result) => result,
                Err(_) => Err(ErrorKind::NotAvailable),
            }
        }
    };
    let results = request
        .v3_and_below_topics
        .iter()
        .zip(topic_errors)
        .map(|(topic, topic_error)| {
            let code = match (&outcome, topic_error) {
                (Err(e), _) => error_codes::code_of(Some(*e)),
                (Ok(()), Some(e)) => error_codes::code_of(Some(e)),
                (Ok(()), None) if any_refused => ResponseError::OperationNotAttempted.code(),
                (Ok(()), None) => 0,
            };
            AddPartitionsToTxnTopicResult::default()
                .with_name(topic.name.clone())
                .with_results_by_partition(
                    topic
                        .partitions
                        .iter()
                        .map(|p| {
                            AddPartitionsToTxnPartitionResult::default()
                                .with_partition_index(*p)
                                .with_partition_error_code(code)
                        })
                        .collect(),
                )
        })
        .collect();
    AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(results)
}
