//! ListGroups: groups with members (asked of every shard), and groups that only hold committed
//! offsets or share-partition states in the log (state Empty; after a restart, a share group
//! is listed before any member is back, as Kafka lists it); in a cluster, those this broker
//! coordinates.

use std::collections::BTreeMap;

use shoal_coordinator::commands::{ListOffsetGroups, ListShareGroups};
use shoal_protocol::messages::list_groups_response::ListedGroup;
use shoal_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse};
use shoal_shards::groups::calls::ListGroups;
use shoal_shards::groups::classic::messages::GroupListing;
use shoal_shards::groups::share::registry::SHARE_GROUP_TYPE;

use super::text;
use crate::context::Call;
use shoal_coordinator::acl::{Operation, ResourceType};

pub async fn handle(call: &Call<'_>, request: ListGroupsRequest) -> ListGroupsResponse {
    let broker = call.broker;
    let mut groups: BTreeMap<String, GroupListing> = BTreeMap::new();
    let offset_groups = broker.shard.coordinator.run(ListOffsetGroups).await;
    list_empty(&mut groups, offset_groups, "consumer", "classic");
    let share_groups = broker.shard.coordinator.run(ListShareGroups).await;
    list_empty(
        &mut groups,
        share_groups,
        SHARE_GROUP_TYPE,
        SHARE_GROUP_TYPE,
    );
    for listed in broker
        .shard
        .group_call_all(|| ListGroups)
        .await
        .into_iter()
        .flatten()
    {
        for g in listed {
            groups.insert(g.group_id.clone(), g);
        }
    }
    // In a cluster a group is listed by its coordinator alone, as Kafka lists it (an admin
    // client asks every broker): every broker reads the log's offsets and states, and a
    // share group's members here outlive a move of its coordination until they time out.
    groups.retain(|id, _| call.check_coordinator(id).is_ok());
    // Kafka lists every group to DESCRIBE on the cluster, else those the client may describe.
    let may_list_all = call.authorized_on_cluster(Operation::Describe);
    let wanted = |g: &GroupListing| {
        let state_ok = request.states_filter.is_empty()
            || request
                .states_filter
                .iter()
                .any(|s| s.as_str().eq_ignore_ascii_case(g.state));
        let type_ok = request.types_filter.is_empty()
            || request
                .types_filter
                .iter()
                .any(|t| t.as_str().eq_ignore_ascii_case(g.group_type));
        state_ok
            && type_ok
            && (may_list_all
                || call.authorized(Operation::Describe, ResourceType::Group, &g.group_id))
    };
    ListGroupsResponse::default().with_groups(
        groups
            .into_values()
            .filter(wanted)
            .map(|g| {
                ListedGroup::default()
                    .with_group_id(GroupId(text(g.group_id)))
                    .with_protocol_type(text(g.protocol_type))
                    .with_group_state(text(g.state))
                    .with_group_type(text(g.group_type))
            })
            .collect(),
    )
}

/// Groups the log holds offsets or states of, listed Empty (those with members here replace
/// them).
fn list_empty<E>(
    groups: &mut BTreeMap<String, GroupListing>,
    names: Result<Vec<String>, E>,
    protocol_type: &str,
    group_type: &'static str,
) {
    for name in names.into_iter().flatten() {
        let listing = GroupListing {
            group_id: name.clone(),
            protocol_type: protocol_type.to_string(),
            state: "Empty",
            group_type,
        };
        groups.insert(name, listing);
    }
}
