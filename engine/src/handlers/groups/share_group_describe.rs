//! ShareGroupDescribe (KIP-932): share groups with their epochs, members, subscriptions and
//! assignments; one without members here but with share-partition states in the log (after a
//! restart) as Empty. An id that is not a share group gets GROUP_ID_NOT_FOUND, as Kafka
//! answers.

use std::collections::{BTreeMap, BTreeSet};

use shoal_coordinator::commands::HasShareStates;
use shoal_coordinator::{TopicPartition, TopicsView};
use shoal_protocol::messages::share_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use shoal_protocol::messages::{ShareGroupDescribeRequest, ShareGroupDescribeResponse, TopicName};
use shoal_shards::groups::share::calls::DescribeShareGroup;
use shoal_shards::groups::share::registry::ShareMemberDescription;
use shoal_shards::groups::GroupError;

use super::{describe_preamble, optional_text, owned, text};
use crate::context::Call;
use crate::kafka::error_codes;

/// Kafka's one share assignor.
const ASSIGNOR: &str = "simple";

pub async fn handle(
    call: &Call<'_>,
    request: ShareGroupDescribeRequest,
) -> ShareGroupDescribeResponse {
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
            .group_call(&name, DescribeShareGroup(name.clone()))
            .await;
        let group = match description {
            Ok(Some(group)) => group,
            Ok(None) if has_share_states(call, &name).await => {
                described.push(
                    answer
                        .with_group_state(text("Empty"))
                        .with_assignor_name(text(ASSIGNOR)),
                );
                continue;
            }
            Ok(None) => {
                let message = format!("Group {name} is not a share group.");
                described.push(
                    answer
                        .with_error_code(error_codes::code_of(Some(GroupError::GroupIdNotFound)))
                        .with_error_message(Some(text(message))),
                );
                continue;
            }
            Err(error) => {
                described.push(answer.with_error_code(error_codes::code_of(Some(error))));
                continue;
            }
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
                .with_assignment_epoch(group.group_epoch)
                .with_assignor_name(text(ASSIGNOR))
                .with_members(members),
        );
    }
    ShareGroupDescribeResponse::default().with_groups(described)
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
