//! Consumer-group APIs (the classic protocol, ConsumerGroupHeartbeat of KIP-848, and the share
//! group APIs of KIP-932).
//! Membership is decided on the shard that owns the group (`Shard::group_call`); committed
//! offsets live in the coordinator.

pub mod commit_request;
pub mod consumer_group_describe;
pub mod consumer_heartbeat;
pub mod delete_groups;
pub mod describe_groups;
pub mod find_coordinator;
pub mod heartbeat;
pub mod join_group;
pub mod leave_group;
pub mod list_groups;
pub mod offset_commit;
pub mod offset_delete;
pub mod offset_fetch;
pub mod share_acknowledge;
pub mod share_fetch;
pub mod share_group_describe;
pub mod share_group_offsets;
pub mod share_heartbeat;
mod share_session;
pub mod sync_group;

use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::acl::{Operation, ResourceType};
use shoal_protocol::messages::TopicName;
use uuid::Uuid;

use crate::context::Call;
use crate::handlers::authorize::GROUP_OPERATIONS;
use crate::kafka::error_codes;

/// Kafka's authorized-operations value when the client did not ask for them.
const OPERATIONS_NOT_ASKED: i32 = i32::MIN;

/// What a heartbeat of the protocols the broker drives (consumer, share) checks first: READ on
/// the group, this broker its coordinator, and, as Kafka does, DESCRIBE on every topic the
/// member subscribes to. Err: the code to answer with.
fn heartbeat_preamble<'a>(
    call: &Call<'_>,
    group_id: &str,
    subscribed: impl IntoIterator<Item = &'a TopicName>,
) -> Result<(), i16> {
    call.check_group(Operation::Read, group_id)
        .and_then(|()| call.check_coordinator(group_id))
        .and_then(|()| {
            (subscribed.into_iter())
                .map(|name| call.check_topic(Operation::Describe, name.as_str()))
                .find_map(Result::err)
                .map_or(Ok(()), Err)
        })
        .map_err(|refused| error_codes::code_of(Some(refused)))
}

/// What a describe of any kind of group checks first: DESCRIBE on the group, and (where
/// `coordinated`) this broker its coordinator. Then the operations the client may do on it,
/// when asked (Kafka's "not asked" value otherwise). Err: the code to answer the group with.
fn describe_preamble(
    call: &Call<'_>,
    name: &str,
    coordinated: bool,
    include_operations: bool,
) -> Result<i32, i16> {
    let checked = call
        .check_group(Operation::Describe, name)
        .and_then(|()| match coordinated {
            true => call.check_coordinator(name),
            false => Ok(()),
        });
    if let Err(refused) = checked {
        return Err(error_codes::code_of(Some(refused)));
    }
    Ok(match include_operations {
        true => call.authorized_operations(&GROUP_OPERATIONS, ResourceType::Group, name),
        false => OPERATIONS_NOT_ASKED,
    })
}

fn text(s: impl Into<String>) -> StrBytes {
    StrBytes::from_string(s.into())
}

fn optional_text(s: Option<String>) -> Option<StrBytes> {
    s.map(StrBytes::from_string)
}

/// Items in topic order gathered by topic, in that order (responses list partitions under
/// their topic).
fn by_topic<P>(items: impl IntoIterator<Item = (Uuid, P)>) -> Vec<(Uuid, Vec<P>)> {
    let mut topics: Vec<(Uuid, Vec<P>)> = Vec::new();
    for (topic_id, item) in items {
        match topics.last_mut() {
            Some((id, items)) if *id == topic_id => items.push(item),
            _ => topics.push((topic_id, vec![item])),
        }
    }
    topics
}

/// `by_topic`, each topic made the answer's own topic type (its `with_topic_id` and
/// `with_partitions`): the heartbeats' assignments and the share answers each have one, as
/// generated types of the same shape.
macro_rules! topics_as {
    ($topic:ty, $items:expr) => {
        super::by_topic($items)
            .into_iter()
            .map(|(topic_id, partitions)| {
                <$topic>::default()
                    .with_topic_id(topic_id)
                    .with_partitions(partitions)
            })
            .collect()
    };
}
use topics_as;

fn owned(s: &StrBytes) -> String {
    s.as_str().to_string()
}

fn owned_optional(s: &Option<StrBytes>) -> Option<String> {
    s.as_ref().map(owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_gathered_under_their_topic_in_order() {
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let gathered = by_topic([(a, 0), (a, 1), (b, 0)]);
        assert_eq!(gathered, vec![(a, vec![0, 1]), (b, vec![0])]);
        assert!(by_topic(std::iter::empty::<(Uuid, i32)>()).is_empty());
    }
}
