use shoal_coordinator::commands::FetchOffsets;
use shoal_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use shoal_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse};
use shoal_shards::groups::classic::calls::DescribeGroup;
use shoal_shards::groups::consumer::calls::DescribeConsumerGroup;
use shoal_shards::groups::GroupError;

use super::{describe_each, optional_text, text};
use crate::context::Call;
use crate::kafka::error_codes;

/// The first DescribeGroups version whose groups carry an error message.
const ERROR_MESSAGE_VERSION: i16 = 6;

pub async fn handle(call: &Call<'_>, request: DescribeGroupsRequest) -> DescribeGroupsResponse {
    let include_operations = request.include_authorized_operations;
    let groups = describe_each(
        call,
        request.groups,
        false,
        include_operations,
        |name, answer| describe(call, name, answer),
    )
    .await;
    DescribeGroupsResponse::default().with_groups(groups)
}

async fn describe(call: &Call<'_>, name: String, answer: DescribedGroup) -> DescribedGroup {
    let broker = call.broker;
    let description = broker
        .shard
        .group_call(&name, DescribeGroup(name.clone()))
        .await
        .unwrap_or_default();
    match description {
        Some(d) => answer
            .with_group_state(text(d.state))
            .with_protocol_type(text(d.protocol_type))
            .with_protocol_data(text(d.protocol))
            .with_members(
                d.members
                    .into_iter()
                    .map(|m| {
                        DescribedGroupMember::default()
                            .with_member_id(text(m.member_id))
                            .with_group_instance_id(optional_text(m.group_instance_id))
                            .with_client_id(text(m.client_id))
                            .with_client_host(text(m.client_host))
                            .with_member_metadata(m.metadata)
                            .with_member_assignment(m.assignment)
                    })
                    .collect(),
            ),
        // A consumer-protocol group: Kafka's GROUP_ID_NOT_FOUND ("not a classic group").
        // Its message is for v6 on: an older answer cannot carry it.
        None if is_consumer_group(broker, &name).await => not_found(
            answer,
            call.version,
            format!("Group {name} is not a classic group."),
        ),
        // No members: Empty if it holds offsets; else no such group, which v6 on
        // (KIP-1043) says with GROUP_ID_NOT_FOUND, as Kafka 4 does, and older versions as
        // a Dead group.
        None => {
            let request = FetchOffsets {
                group: name.clone(),
                partitions: None,
            };
            let has_offsets = matches!(
                broker.shard.coordinator.run(request).await,
                Ok(offsets) if !offsets.is_empty()
            );
            match (has_offsets, call.version >= ERROR_MESSAGE_VERSION) {
                (true, _) => answer
                    .with_group_state(text("Empty"))
                    .with_protocol_type(text("consumer")),
                (false, true) => {
                    not_found(answer, call.version, format!("Group {name} not found."))
                }
                (false, false) => answer.with_group_state(text("Dead")),
            }
        }
    }
}

/// GROUP_ID_NOT_FOUND, with `message` where the version carries one.
fn not_found(answer: DescribedGroup, version: i16, message: String) -> DescribedGroup {
    let answer = answer.with_error_code(error_codes::code_of(Some(GroupError::GroupIdNotFound)));
    match version >= ERROR_MESSAGE_VERSION {
        true => answer.with_error_message(Some(text(message))),
        false => answer,
    }
}

async fn is_consumer_group(broker: &crate::context::Broker, name: &str) -> bool {
    let described = broker
        .shard
        .group_call(name, DescribeConsumerGroup(name.to_string()))
        .await;
    matches!(described, Ok(Ok(Some(_))))
}
