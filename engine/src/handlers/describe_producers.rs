//! DescribeProducers: the idempotent producers each partition remembers (the state the
//! coordinator keeps for duplicate and sequence checks). No transactions: no open ones.

use shoal_coordinator::commands::DescribeProducers;
use shoal_coordinator::TopicPartition;
use shoal_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use shoal_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse, ProducerId};

use super::topics::{permitted, Answers};
use crate::context::Call;
use crate::kafka::error_codes;
use shoal_coordinator::acl::Operation;

pub async fn handle(
    call: &Call<'_>,
    request: DescribeProducersRequest,
) -> DescribeProducersResponse {
    let broker = call.broker;
    let view = broker.shard.topics.load();
    let partitions: Vec<TopicPartition> = request
        .topics
        .iter()
        .filter_map(|t| {
            permitted(call, &view, t.name.0.as_str(), Operation::Read)
                .ok()
                .map(|id| (id, t))
        })
        .flat_map(|(topic_id, t)| {
            t.partition_indexes.iter().map(move |p| TopicPartition {
                topic_id,
                partition: *p,
            })
        })
        .collect();
    let count = partitions.len();
    let answers = match broker
        .shard
        .coordinator
        .run(DescribeProducers { partitions })
        .await
    {
        Ok(results) if results.len() == count => Some(results),
        _ => None,
    };
    let mut answers = Answers::new(answers);
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let known = permitted(call, &view, topic.name.0.as_str(), Operation::Read);
            let partitions = topic
                .partition_indexes
                .iter()
                .map(|index| {
                    let answer = PartitionResponse::default().with_partition_index(*index);
                    match answers.next(known).and_then(|r| r) {
                        Err(e) => answer.with_error_code(error_codes::code_of(Some(e))),
                        Ok(producers) => answer.with_active_producers(
                            producers
                                .into_iter()
                                .map(|p| {
                                    ProducerState::default()
                                        .with_producer_id(ProducerId(p.producer_id))
                                        .with_producer_epoch(p.producer_epoch as i32)
                                        .with_last_sequence(p.last_sequence)
                                        .with_last_timestamp(p.last_timestamp_ms)
                                        .with_current_txn_start_offset(p.current_txn_start_offset)
                                })
                                .collect(),
                        ),
                    }
                })
                .collect();
            TopicResponse::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    DescribeProducersResponse::default().with_topics(topics)
}
