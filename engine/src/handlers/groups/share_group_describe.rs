//! ShareGroupDescribe (KIP-932): share groups with their epochs, members, subscriptions and
//! assignments; one without members here but with share-partition states in the log (after a
//! restart) as Empty. An id that is not a share group gets GROUP_ID_NOT_FOUND, as Kafka
//! answers.

use std::collections::BTreeSet;

use shoal_coordinator::commands::HasShareStates;
use shoal_coordinator::{TopicPartition, TopicsView};
use shoal_protocol::messages::share_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use shoal_protocol::messages::{ShareGroupDescribeRequest, ShareGroupDescribeResponse, TopicName};
use shoal_shards::groups::share::calls::DescribeShareGroup;
use shoal_shards::groups::share::registry::ShareMemberDescription;
use shoal_shards::groups::GroupError;

use super::{describe_each, named_topics_as, optional_text, text};
use crate::context::Call;
use crate::kafka::error_codes;

/// Kafka's one share assignor.
const ASSIGNOR: &str = "simple";

pub async fn handle(
    call: &Call<'_>,
    request: ShareGroupDescribeRequest,
) -> ShareGroupDescribeResponse {
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
    ShareGroupDescribeResponse::default().with_groups(groups)
}

async fn describe(
    call: &Call<'_>,
    topics: &TopicsView,
    name: String,
    answer: DescribedGroup,
) -> DescribedGroup {
    let description = (call.broker.shard)
        .group_call(&name, DescribeShareGroup(name.clone()))
        .await;
    let group = match description {
        Ok(Some(group)) => group,
        Ok(None) if has_share_states(call, &name).await => {
            return answer
                .with_group_state(text("Empty"))
                .with_assignor_name(text(ASSIGNOR));
        }
        Ok(None) => {
            let message = format!("Group {name} is not a share group.");
            return answer
                .with_error_code(error_codes::code_of(Some(GroupError::GroupIdNotFound)))
                .with_error_message(Some(text(message)));
        }
        Err(error) => return answer.with_error_code(error_codes::code_of(Some(error))),
    };
    let members = group
        .members
        .into_iter()
        .map(|m| member(m, topics))
        .collect();
    answer
        .with_group_state(text(group.state))
        .with_group_epoch(group.group_epoch)
        .with_assignment_epoch(group.group_epoch)
        .with_assignor_name(text(ASSIGNOR))
        .with_members(members)
}

/// Whether the log holds share-partition states of the group.
async fn has_share_states(call: &Call<'_>, group_id: &str) -> bool {
    let asked = HasShareStates {
        group: group_id.to_string(),
    };
    call.broker
        .shard
        .coordinator
        .run(asked)
        .await
        .unwrap_or(false)
}

fn member(m: ShareMemberDescription, topics: &TopicsView) -> Member {
    Member::default()
        .with_member_id(text(m.member_id))
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
        .with_assignment(assignment(&m.assignment, topics))
}

fn assignment(partitions: &BTreeSet<TopicPartition>, topics: &TopicsView) -> Assignment {
    Assignment::default().with_topic_partitions(named_topics_as!(
        TopicPartitions,
        partitions,
        topics
    ))
}
