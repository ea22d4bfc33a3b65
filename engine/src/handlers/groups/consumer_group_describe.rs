//! ConsumerGroupDescribe (KIP-848): consumer-protocol groups with their epochs, members,
//! subscriptions and assignments. A classic group or an unknown id gets GROUP_ID_NOT_FOUND,
//! as Kafka answers (admin clients then describe it with DescribeGroups).

use std::collections::{BTreeMap, BTreeSet};

use shoal_coordinator::{TopicPartition, TopicsView};
use shoal_protocol::messages::consumer_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use shoal_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, TopicName,
};
use shoal_shards::groups::calls::DescribeGroup;
use shoal_shards::groups::consumer::description::ConsumerMemberDescription;
use shoal_shards::groups::consumer::DescribeConsumerGroup;
use shoal_shards::groups::GroupError;

use super::{describe_preamble, optional_text, owned, text};
use crate::context::Call;
use crate::kafka::error_codes;

/// ConsumerGroupDescribe v1's member types: of the classic protocol (in a group migrating
/// between the protocols), and of the consumer protocol.
const CLASSIC_MEMBER: i8 = 0;
const CONSUMER_MEMBER: i8 = 1;

pub async fn handle(
    call: &Call<'_>,
    request: ConsumerGroupDescribeRequest,
) -> ConsumerGroupDescribeResponse {
    let broker = call.broker;
    let topics = broker.shard.topics.load_full();
    let mut described = Vec::with_capacity(request.group_ids.len());
    for group_id in request.group_ids {
        let name = owned(&group_id.0);
        let answer = DescribedGroup::default().with_group_id(group_id);
        let answer =
            match describe_preamble(call, &name, true, request.include_authorized_operations) {
                Ok(operations) => answer.with_authorized_operations(operations),
                Err(code) => {
                    described.push(answer.with_error_code(code));
                    continue;
                }
            };
        let description = broker
            .shard
            .group_call(&name, DescribeConsumerGroup(name.clone()))
            .await
            .and_then(|reply| reply);
        let description = match description {
            Ok(description) => description,
            Err(error) => {
                described.push(answer.with_error_code(error_codes::code_of(Some(error))));
                continue;
            }
        };
        let Some(group) = description else {
            // Kafka's words: the Admin client reports them if DescribeGroups finds no classic
            // group of the id either.
            let classic = (broker.shard)
                .group_call(&name, DescribeGroup(name.clone()))
                .await
                .is_ok_and(|found| found.is_some());
            let message = match classic {
                true => format!("Group {name} is not a consumer group."),
                false => format!("Group {name} not found."),
            };
            described.push(
                answer
                    .with_error_code(error_codes::code_of(Some(GroupError::GroupIdNotFound)))
                    .with_error_message(Some(text(message))),
            );
            continue;
        };
        let members = group
            .members
            .into_iter()
            .map(|m| member(m, &topics))
            .collect();
        described.push(
            answer
                .with_group_state(text(group.state))
                .with_group_epoch(group.group_epoch)
                .with_assignment_epoch(group.assignment_epoch)
                .with_assignor_name(text(group.assignor))
                .with_members(members),
        );
    }
    ConsumerGroupDescribeResponse::default().with_groups(described)
}

fn member(m: ConsumerMemberDescription, topics: &TopicsView) -> Member {
    Member::default()
        .with_member_id(text(m.member_id))
        .with_instance_id(optional_text(m.instance_id))
        .with_rack_id(optional_text(m.rack_id))
        .with_member_epoch(m.member_epoch)
        .with_client_id(text(m.client_id))
        .with_client_host(text(m.client_host))
        .with_subscribed_topic_names(
            m.subscribed_topic_names
                .into_iter()
                .map(|n| TopicName(text(n)))
                .collect(),
        )
        .with_subscribed_topic_regex(optional_text(m.subscribed_topic_regex))
        .with_assignment(assignment(&m.assigned, topics))
        .with_target_assignment(assignment(&m.target, topics))
        .with_member_type(match m.classic {
            true => CLASSIC_MEMBER,
            false => CONSUMER_MEMBER,
        })
}

/// Partitions by topic, with each topic's name (a topic deleted since is left out).
fn assignment(partitions: &BTreeSet<TopicPartition>, topics: &TopicsView) -> Assignment {
    let mut by_topic: BTreeMap<_, Vec<i32>> = BTreeMap::new();
    for p in partitions {
        by_topic.entry(p.topic_id).or_default().push(p.partition);
    }
    let topic_partitions = by_topic
        .into_iter()
        .filter_map(|(id, partitions)| {
            let topic = topics.by_id(&id)?;
            Some(
                TopicPartitions::default()
                    .with_topic_id(id)
                    .with_topic_name(TopicName(text(topic.name.clone())))
                    .with_partitions(partitions),
            )
        })
        .collect();
    Assignment::default().with_topic_partitions(topic_partitions)
}
