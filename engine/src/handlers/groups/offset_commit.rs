use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::{OffsetCommitRequest, OffsetCommitResponse};
use shoal_coordinator::commands::CommitOffsets;
use shoal_coordinator::{ErrorKind, OffsetCommitEntry, TopicPartition};
use shoal_shards::groups::messages::{GroupRequest, GroupResponse, MemberRef};

use super::{owned, owned_optional};
use crate::handlers::topics::{permitted, Answers};
use crate::handlers::Call;
use crate::kafka::error_codes;
use shoal_coordinator::acl::code;

pub async fn handle(call: &Call<'_>, request: OffsetCommitRequest) -> OffsetCommitResponse {
    let broker = call.broker;
    let group_id = owned(&request.group_id.0);
    let member = MemberRef {
        group_id: group_id.clone(),
        member_id: owned(&request.member_id),
        generation_id: request.generation_id_or_member_epoch,
        group_instance_id: owned_optional(&request.group_instance_id),
    };
    let allowed = call
        .check_group(code::READ, &group_id)
        .and_then(|()| call.check_coordinator(&group_id));
    let refused = match allowed {
        Err(denied) => Some(denied),
        Ok(()) => match broker
            .shard
            .group_call(&group_id, GroupRequest::ValidateCommit(member))
            .await
        {
            GroupResponse::Outcome(error) => error,
            _ => Some(ErrorKind::NotAvailable),
        },
    };
    let view = broker.shard.topics.load();
    let mut entries = Vec::new();
    if refused.is_none() {
        for topic in &request.topics {
            let Ok(topic_id) = permitted(call, &view, topic.name.0.as_str(), code::READ) else {
                continue;
            };
            for p in &topic.partitions {
                entries.push(OffsetCommitEntry {
                    partition: TopicPartition {
                        topic_id,
                        partition: p.partition_index,
                    },
                    offset: p.committed_offset,
                    leader_epoch: p.committed_leader_epoch,
                    metadata: p
                        .committed_metadata
                        .as_ref()
                        .map(|m| m.as_str().to_string())
                        .unwrap_or_default(),
                });
            }
        }
    }
    let count = entries.len();
    let results = if entries.is_empty() {
        Some(Vec::new())
    } else {
        let request = CommitOffsets {
            group: group_id,
            offsets: entries,
        };
        match broker.shard.coordinator.run(request).await {
            Ok(results) if results.len() == count => Some(results),
            _ => None,
        }
    };
    let mut results = Answers::new(results);
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let known = permitted(call, &view, topic.name.0.as_str(), code::READ);
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    let error = match refused {
                        Some(e) => Some(e),
                        None => results.next(known).unwrap_or_else(Some),
                    };
                    OffsetCommitResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(error_codes::code_of(error))
                })
                .collect();
            OffsetCommitResponseTopic::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    OffsetCommitResponse::default().with_topics(topics)
}
