//! OffsetForLeaderEpoch: clients validate their positions after a metadata change. A diskless
//! partition has one leader epoch (0) for its whole life, which ends at the high watermark.

use shoal_coordinator::commands::ListOffsets;
use shoal_coordinator::LATEST_TIMESTAMP;
use shoal_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use shoal_protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};

use super::metadata::LEADER_EPOCH;
use super::topics::{partition_values, permitted, Answers};
use crate::context::Call;
use crate::kafka::error_codes;
use shoal_coordinator::acl::Operation;

/// Kafka's error for a client whose epoch is ahead of the leader's. None can be behind:
/// epoch 0 is the first (and -1 means "do not check").
const UNKNOWN_LEADER_EPOCH: i16 = 75;

pub async fn handle(
    call: &Call<'_>,
    request: OffsetForLeaderEpochRequest,
) -> OffsetForLeaderEpochResponse {
    let broker = call.broker;
    let view = broker.shard.topics.load();
    let targets = partition_values(
        &request.topics,
        |t| permitted(call, &view, t.topic.0.as_str(), Operation::Describe).ok(),
        |t| &t.partitions,
        |p| (p.partition, LATEST_TIMESTAMP),
    );
    let count = targets.len();
    let ends = match broker
        .shard
        .coordinator
        .run(ListOffsets {
            read_committed: false,
            partitions: targets,
        })
        .await
    {
        Ok(results) if results.len() == count => Some(results),
        _ => None,
    };
    let mut ends = Answers::new(ends);
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let known = permitted(call, &view, topic.topic.0.as_str(), Operation::Describe);
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    let answer = EpochEndOffset::default().with_partition(p.partition);
                    let end = ends.next(known).and_then(|r| r.error.map_or(Ok(r), Err));
                    match end {
                        Err(e) => answer
                            .with_error_code(error_codes::code_of(Some(e)))
                            .with_leader_epoch(-1)
                            .with_end_offset(-1),
                        Ok(_) if p.current_leader_epoch > LEADER_EPOCH => answer
                            .with_error_code(UNKNOWN_LEADER_EPOCH)
                            .with_leader_epoch(-1)
                            .with_end_offset(-1),
                        // An epoch before the first one: undefined, as Kafka answers it.
                        Ok(_) if p.leader_epoch < LEADER_EPOCH => {
                            answer.with_leader_epoch(-1).with_end_offset(-1)
                        }
                        Ok(end) => answer
                            .with_leader_epoch(LEADER_EPOCH)
                            .with_end_offset(end.offset),
                    }
                })
                .collect();
            OffsetForLeaderTopicResult::default()
                .with_topic(topic.topic)
                .with_partitions(partitions)
        })
        .collect();
    OffsetForLeaderEpochResponse::default().with_topics(topics)
}
