//! Consumer-protocol groups through the handlers, with the coordinator's log underneath: a
//! group another broker claims is read back from the log and its members go on at their
//! epochs; sessions end on the shard's timer, stored; joins beyond the shard's group memory
//! are refused.

use std::time::Duration;

use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::commands::{ClaimGroup, ReadConsumerGroup};
use shoal_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use shoal_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
    GroupId,
};

use super::*;
use crate::context::{Broker, ClientInfo};
use crate::handlers::groups::{consumer_group_describe, consumer_heartbeat};

const NOT_COORDINATOR: i16 = 16;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const GROUP_ID_NOT_FOUND: i16 = 69;

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// A v1 heartbeat of `member` at `epoch`, owning `owned` (a join when the epoch is 0).
async fn heartbeat(
    broker: &Broker,
    member: &str,
    epoch: i32,
    owned: &[TopicPartitions],
) -> ConsumerGroupHeartbeatResponse {
    let client = ClientInfo::default();
    let mut request = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(GroupId(text("g")))
        .with_member_id(text(member))
        .with_member_epoch(epoch)
        .with_topic_partitions(Some(owned.to_vec()));
    if epoch == 0 {
        request = request
            .with_rebalance_timeout_ms(30_000)
            .with_subscribed_topic_names(Some(vec![topic_name("t")]));
    }
    let call = call::<ConsumerGroupHeartbeatRequest>(broker, 1, &client);
    consumer_heartbeat::handle(&call, request).await
}

/// What an answer assigns, as the member reports it owning next.
fn owned(answer: &ConsumerGroupHeartbeatResponse) -> Vec<TopicPartitions> {
    let assignment = answer.assignment.as_ref().expect("an assignment");
    assignment
        .topic_partitions
        .iter()
        .map(|t| {
            TopicPartitions::default()
                .with_topic_id(t.topic_id)
                .with_partitions(t.partitions.clone())
        })
        .collect()
}

async fn described(broker: &Broker) -> (i16, usize) {
    let client = ClientInfo::default();
    let request = ConsumerGroupDescribeRequest::default().with_group_ids(vec![GroupId(text("g"))]);
    let call = call::<ConsumerGroupDescribeRequest>(broker, 1, &client);
    let group = &consumer_group_describe::handle(&call, request).await.groups[0];
    (group.error_code, group.members.len())
}

async fn described_error(broker: &Broker) -> i16 {
    described(broker).await.0
}

#[test]
fn a_group_claimed_elsewhere_and_back_is_read_from_the_log_and_its_member_goes_on() {
    let dir = temp_dir("consumer-group-claims");
    run_broker(test_config(&dir), |broker| async move {
        create_topic(&broker, "t", 2).await;
        let joined = heartbeat(&broker, "m1", 0, &[]).await;
        assert_eq!(joined.error_code, 0);
        let epoch = joined.member_epoch;
        let partitions = owned(&joined);
        assert_eq!(partitions[0].partitions.len(), 2);
        // Another broker claims the group: this one's next write is refused and it lets go.
        let elsewhere = ClaimGroup {
            group: "g".into(),
            node_id: 99,
            incarnation: 7,
        };
        let coordinator = &broker.shard.coordinator;
        coordinator.run(elsewhere).await.unwrap().unwrap();
        let leaving = heartbeat(&broker, "m1", -1, &partitions).await;
        assert_eq!(leaving.error_code, NOT_COORDINATOR);
        // Claimed again, the group is as the log has it: the member never left.
        let again = heartbeat(&broker, "m1", epoch, &partitions).await;
        assert_eq!(again.error_code, 0, "the member is known at its epoch");
        assert_eq!(again.member_epoch, epoch);
        let stored = coordinator.run(ReadConsumerGroup { group: "g".into() });
        let stored = stored.await.unwrap().expect("the group is in the log");
        assert_eq!(stored.members["m1"].member_epoch, epoch);
    });
}

#[test]
fn a_session_that_runs_out_ends_on_the_timer_and_the_log_forgets_the_group() {
    let dir = temp_dir("consumer-group-sessions");
    let mut config = test_config(&dir);
    config.groups.consumer_session_timeout_ms = 300;
    run_broker(config, |broker| async move {
        create_topic(&broker, "t", 2).await;
        assert_eq!(heartbeat(&broker, "m1", 0, &[]).await.error_code, 0);
        assert_eq!(described_error(&broker).await, 0);
        // Nobody heartbeats: only the timer can end the session.
        glommio::timer::sleep(Duration::from_millis(800)).await;
        assert_eq!(described_error(&broker).await, GROUP_ID_NOT_FOUND);
        let read = ReadConsumerGroup { group: "g".into() };
        let stored = broker.shard.coordinator.run(read).await.unwrap();
        assert_eq!(stored, None, "the expiry was stored");
    });
}

#[test]
fn members_beyond_the_shards_group_memory_are_refused() {
    let dir = temp_dir("consumer-group-memory");
    let mut config = test_config(&dir);
    config.groups.max_memory_bytes_per_shard = 2_000;
    run_broker(config, |broker| async move {
        create_topic(&broker, "t", 2).await;
        let mut codes = Vec::new();
        for i in 0..4 {
            let member = format!("member-{i}");
            codes.push(heartbeat(&broker, &member, 0, &[]).await.error_code);
        }
        assert_eq!(codes[0], 0);
        assert_eq!(codes[3], COORDINATOR_NOT_AVAILABLE, "{codes:?}");
    });
}

#[test]
fn a_restarted_broker_describes_a_group_from_the_log_before_its_members_return() {
    let dir = temp_dir("consumer-group-restart");
    run_broker(test_config(&dir), |broker| async move {
        create_topic(&broker, "t", 2).await;
        assert_eq!(heartbeat(&broker, "m1", 0, &[]).await.error_code, 0);
    });
    run_broker(test_config(&dir), |broker| async move {
        assert_eq!(described(&broker).await, (0, 1));
    });
}

#[test]
fn describing_a_group_nobody_has_writes_no_claim() {
    let dir = temp_dir("consumer-group-describe-unknown");
    run_broker(test_config(&dir), |broker| async move {
        assert_eq!(described(&broker).await, (GROUP_ID_NOT_FOUND, 0));
        // Had the describe claimed "g", this claim would be its second.
        let claim = ClaimGroup {
            group: "g".into(),
            node_id: 99,
            incarnation: 7,
        };
        let claim = broker.shard.coordinator.run(claim).await.unwrap().unwrap();
        assert_eq!(claim.epoch, 1);
    });
}
