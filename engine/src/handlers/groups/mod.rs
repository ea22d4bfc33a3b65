//! Consumer-group APIs (the classic protocol, ConsumerGroupHeartbeat of KIP-848, and the share
//! group APIs of KIP-932).
//! Membership is decided on the shard that owns the group (`Shard::group_call`); committed
//! offsets live in the coordinator.

pub mod commit_request;
pub mod consumer_group_describe;
pub mod consumer_heartbeat;
mod dead_letters;
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
pub mod streams_group_describe;
pub mod streams_heartbeat;
pub mod sync_group;

use std::future::Future;

use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::acl::{Operation, ResourceType};
use shoal_protocol::messages::{
    consumer_group_describe_response, describe_groups_response, share_group_describe_response,
    streams_group_describe_response, GroupId, TopicName,
};
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

/// A described group of any describe API (each has its own generated type of this shape):
/// what `describe_each` sets before the handler describes the group itself.
trait DescribedGroupAnswer: Sized {
    fn named(group_id: GroupId) -> Self;
    fn refused(self, code: i16) -> Self;
    fn with_operations(self, operations: i32) -> Self;
}

macro_rules! described_group_answers {
    ($($answer:ty),*) => {$(
        impl DescribedGroupAnswer for $answer {
            fn named(group_id: GroupId) -> Self {
                Self::default().with_group_id(group_id)
            }
            fn refused(self, code: i16) -> Self {
                self.with_error_code(code)
            }
            fn with_operations(self, operations: i32) -> Self {
                self.with_authorized_operations(operations)
            }
        }
    )*};
}
described_group_answers!(
    describe_groups_response::DescribedGroup,
    consumer_group_describe_response::DescribedGroup,
    share_group_describe_response::DescribedGroup,
    streams_group_describe_response::DescribedGroup
);

/// Every describe API's loop over its groups: each checked first (`describe_preamble`), a
/// refused one answered with its code, the others described by `describe` from the group's
/// name and its answer so far.
async fn describe_each<G: DescribedGroupAnswer, Described: Future<Output = G>>(
    call: &Call<'_>,
    group_ids: Vec<GroupId>,
    coordinated: bool,
    include_operations: bool,
    mut describe: impl FnMut(String, G) -> Described,
) -> Vec<G> {
    let mut described = Vec::with_capacity(group_ids.len());
    for group_id in group_ids {
        let name = owned(&group_id.0);
        let answer = G::named(group_id);
        described.push(
            match describe_preamble(call, &name, coordinated, include_operations) {
                Ok(operations) => describe(name, answer.with_operations(operations)).await,
                Err(code) => answer.refused(code),
            },
        );
    }
    described
}

/// An assignment's partitions (in topic order, as a `BTreeSet<TopicPartition>` holds them) by
/// topic, each topic as the answer's own type with its id and name (a topic deleted since is
/// left out): the consumer and share describe answers each have one, as generated types of the
/// same shape.
macro_rules! named_topics_as {
    ($topic:ty, $partitions:expr, $topics:expr) => {
        super::by_topic($partitions.iter().map(|p| (p.topic_id, p.partition)))
            .into_iter()
            .filter_map(|(id, partitions)| {
                let topic = $topics.by_id(&id)?;
                Some(
                    <$topic>::default()
                        .with_topic_id(id)
                        .with_topic_name(TopicName(super::text(topic.name.clone())))
                        .with_partitions(partitions),
                )
            })
            .collect()
    };
}
use named_topics_as;

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
