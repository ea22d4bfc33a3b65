//! ConsumerGroupDescribe (KIP-848): consumer-protocol groups with their epochs, members,
//! subscriptions and assignments. A classic group or an unknown id gets GROUP_ID_NOT_FOUND,
//! as Kafka answers (admin clients then describe it with DescribeGroups).

use std::collections::BTreeSet;

use shoal_coordinator::{TopicPartition, TopicsView};
use shoal_protocol::messages::consumer_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use shoal_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, TopicName,
};
use shoal_shards::groups::classic::calls::DescribeGroup;
use shoal_shards::groups::consumer::calls::DescribeConsumerGroup;
use shoal_shards::groups::consumer::description::ConsumerMemberDescription;
use shoal_shards::groups::GroupError;

use super::{describe_each, named_topics_as, optional_text, text};
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
    let topics = call.broker.shard.topics.load_full();
    let include_operations = request.include_authorized_operations;
    let groups = describe_each(
        call,
        request.group_ids,
        true,
        include_operations,
        |name, answer| describe(call, &topics, name, answer),
    )
    .await;
    ConsumerGroupDescribeResponse::default().with_groups(groups)
}

async fn describe(
    call: &Call<'_>,
    topics: &TopicsView,
    name: String,
    answer: DescribedGroup,
) -> DescribedGroup {
    let shard = &call.broker.shard;
    let description = shard
        .try_group_call(&name, DescribeConsumerGroup(name.clone()))
        .await;
    let group = match description {
        Ok(Some(group)) => group,
        Err(error) => return answer.with_error_code(error_codes::code_of(Some(error))),
        Ok(None) => {
            // Kafka's words: the Admin client reports them if DescribeGroups finds no classic
            // group of the id either.
            let classic = shard
                .group_call(&name, DescribeGroup(name.clone()))
                .await
                .is_ok_and(|found| found.is_some());
            let message = match classic {
                true => format!("Group {name} is not a consumer group."),
                false => format!("Group {name} not found."),
            };
            return answer
                .with_error_code(error_codes::code_of(Some(GroupError::GroupIdNotFound)))
                .with_error_message(Some(text(message)));
        }
    };
    let members = group
        .members
        .into_iter()
        .map(|m| member(m, topics))
        .collect();
    answer
        .with_group_state(text(group.state))
        .with_group_epoch(group.group_epoch)
        .with_assignment_epoch(group.assignment_epoch)
        .with_assignor_name(text(group.assignor))
        .with_members(members)
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

fn assignment(partitions: &BTreeSet<TopicPartition>, topics: &TopicsView) -> Assignment {
    Assignment::default().with_topic_partitions(named_topics_as!(
        TopicPartitions,
        partitions,
        topics
    ))
}
