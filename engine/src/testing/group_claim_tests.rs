//! Group claims through the handlers: a commit under a claim another broker superseded is
//! refused NOT_COORDINATOR and the group's members here are dropped; a lapsed cluster lease
//! drops every group; each time the group is claimed again and serves on.

use std::sync::atomic::Ordering;

use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::commands::ClaimGroup;
use shoal_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use shoal_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use shoal_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use shoal_protocol::messages::{
    GroupId, HeartbeatRequest, JoinGroupRequest, OffsetCommitRequest, SyncGroupRequest,
};

use super::*;
use crate::context::{Broker, ClientInfo};
use crate::handlers::groups::{heartbeat, join_group, offset_commit, sync_group};

const UNKNOWN_MEMBER_ID: i16 = 25;
const NOT_COORDINATOR: i16 = 16;

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// A one-member generation of group "g": (member id, generation).
async fn form_group(broker: &Broker) -> (StrBytes, i32) {
    let client = ClientInfo::default();
    let join = JoinGroupRequest::default()
        .with_group_id(GroupId(text("g")))
        .with_session_timeout_ms(30_000)
        .with_rebalance_timeout_ms(30_000)
        .with_protocol_type(text("consumer"))
        .with_protocols(vec![
            JoinGroupRequestProtocol::default().with_name(text("range"))
        ]);
    let joined = join_group::handle(&call::<JoinGroupRequest>(broker, 3, &client), join).await;
    assert_eq!(joined.error_code, 0);
    let sync = SyncGroupRequest::default()
        .with_group_id(GroupId(text("g")))
        .with_generation_id(joined.generation_id)
        .with_member_id(joined.member_id.clone())
        .with_assignments(vec![
            SyncGroupRequestAssignment::default().with_member_id(joined.member_id.clone())
        ]);
    let synced = sync_group::handle(&call::<SyncGroupRequest>(broker, 3, &client), sync).await;
    assert_eq!(synced.error_code, 0);
    (joined.member_id, joined.generation_id)
}

async fn commit(broker: &Broker, member: &(StrBytes, i32), offset: i64) -> i16 {
    let client = ClientInfo::default();
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(text("g")))
        .with_member_id(member.0.clone())
        .with_generation_id_or_member_epoch(member.1)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(topic_name("claimed"))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(offset)])]);
    let answer =
        offset_commit::handle(&call::<OffsetCommitRequest>(broker, 5, &client), request).await;
    answer.topics[0].partitions[0].error_code
}

async fn heartbeat(broker: &Broker, member: &(StrBytes, i32)) -> i16 {
    let client = ClientInfo::default();
    let request = HeartbeatRequest::default()
        .with_group_id(GroupId(text("g")))
        .with_member_id(member.0.clone())
        .with_generation_id(member.1);
    heartbeat::handle(&call::<HeartbeatRequest>(broker, 3, &client), request)
        .await
        .error_code
}

#[test]
fn a_superseded_claim_or_a_lapsed_lease_drops_the_group_which_is_claimed_again() {
    let dir = temp_dir("group-claims");
    let mut config = test_config(&dir);
    config.groups.initial_rebalance_delay_ms = 0;
    run_broker(config, |broker| async move {
        create_topic(&broker, "claimed", 1).await;
        let member = form_group(&broker).await;
        assert_eq!(commit(&broker, &member, 10).await, 0);
        // Another broker claims the group (as when this one was paused past its lease).
        let elsewhere = ClaimGroup {
            group: "g".into(),
            node_id: 99,
            incarnation: 7,
        };
        broker
            .shard
            .coordinator
            .run(elsewhere)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(commit(&broker, &member, 5).await, NOT_COORDINATOR);
        assert_eq!(
            heartbeat(&broker, &member).await,
            UNKNOWN_MEMBER_ID,
            "the refused claim took the group's members here with it"
        );
        // The member rejoins: the group is claimed again and commits count.
        let member = form_group(&broker).await;
        assert_eq!(commit(&broker, &member, 20).await, 0);
        // This broker's cluster lease lapses: every group goes, and comes back on rejoining.
        broker
            .shard
            .config
            .lease_lapses
            .fetch_add(1, Ordering::AcqRel);
        assert_eq!(heartbeat(&broker, &member).await, UNKNOWN_MEMBER_ID);
        let member = form_group(&broker).await;
        assert_eq!(commit(&broker, &member, 30).await, 0);
    });
}
