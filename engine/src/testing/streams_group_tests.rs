//! Streams groups through the handlers, with the coordinator's log underneath: the broker
//! creates the topology's internal topics; a group survives a restart of the broker and a
//! claim by another broker, its member going on at its epoch with its tasks; sessions end on
//! the shard's timer, stored.

use std::time::Duration;

use kafka_protocol::protocol::StrBytes;
use shoal_coordinator::commands::{ClaimGroup, ReadStreamsGroup};
use shoal_protocol::messages::streams_group_heartbeat_request::{
    KeyValue, Subtopology, TaskIds, TopicInfo, Topology,
};
use shoal_protocol::messages::{
    GroupId, StreamsGroupDescribeRequest, StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse,
};

use super::*;
use crate::context::{Broker, ClientInfo};
use crate::handlers::groups::{streams_group_describe, streams_heartbeat};

const NOT_COORDINATOR: i16 = 16;
const GROUP_ID_NOT_FOUND: i16 = 69;
/// The heartbeat's MISSING_INTERNAL_TOPICS status.
const MISSING_INTERNAL_TOPICS: i8 = 3;
const CHANGELOG: &str = "app-store-changelog";

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// One subtopology reading `t`, with a compacted changelog.
fn topology() -> Topology {
    let mut changelog = TopicInfo::default();
    changelog.name = topic_name(CHANGELOG);
    let mut compact = KeyValue::default();
    compact.key = text("cleanup.policy");
    compact.value = text("compact");
    changelog.topic_configs = vec![compact];
    let mut subtopology = Subtopology::default();
    subtopology.subtopology_id = text("0");
    subtopology.source_topics = vec![topic_name("t")];
    subtopology.state_changelog_topics = vec![changelog];
    let mut topology = Topology::default();
    topology.subtopologies = vec![subtopology];
    topology
}

/// A v1 heartbeat of `member` at `epoch`, running `active` (a join when the epoch is 0).
async fn heartbeat(
    broker: &Broker,
    member: &str,
    epoch: i32,
    active: Option<Vec<TaskIds>>,
) -> StreamsGroupHeartbeatResponse {
    let client = ClientInfo::default();
    let mut request = StreamsGroupHeartbeatRequest::default();
    request.group_id = GroupId(text("app"));
    request.member_id = text(member);
    request.member_epoch = epoch;
    request.rebalance_timeout_ms = -1;
    if let Some(active) = active {
        request.active_tasks = Some(active);
        request.standby_tasks = Some(Vec::new());
        request.warmup_tasks = Some(Vec::new());
    }
    if epoch == 0 {
        request.rebalance_timeout_ms = 30_000;
        request.topology = Some(topology());
        request.process_id = Some(text("process-1"));
    }
    let call = call::<StreamsGroupHeartbeatRequest>(broker, 1, &client);
    streams_heartbeat::handle(&call, request).await
}

/// The active tasks an answer gives, as the member reports them next.
fn active(answer: &StreamsGroupHeartbeatResponse) -> Vec<TaskIds> {
    let tasks = answer.active_tasks.as_ref().expect("tasks");
    tasks
        .iter()
        .map(|t| {
            let mut ids = TaskIds::default();
            ids.subtopology_id = t.subtopology_id.clone();
            ids.partitions = t.partitions.clone();
            ids
        })
        .collect()
}

async fn described(broker: &Broker) -> (i16, usize) {
    let client = ClientInfo::default();
    let mut request = StreamsGroupDescribeRequest::default();
    request.group_ids = vec![GroupId(text("app"))];
    let call = call::<StreamsGroupDescribeRequest>(broker, 1, &client);
    let group = &streams_group_describe::handle(&call, request).await.groups[0];
    (group.error_code, group.members.len())
}

/// Joins a member and heartbeats until its tasks arrive (the broker creates the changelog
/// first); its epoch and tasks.
async fn joined(broker: &Broker) -> (i32, Vec<TaskIds>) {
    let first = heartbeat(broker, "m1", 0, None).await;
    assert_eq!(first.error_code, 0, "{:?}", first.error_message);
    let statuses = first.status.iter().flatten().map(|s| s.status_code);
    assert_eq!(statuses.collect::<Vec<_>>(), [MISSING_INTERNAL_TOPICS]);
    let topic = broker.shard.topics.load().by_name(CHANGELOG).cloned();
    assert_eq!(topic.expect("the changelog is created").partitions, 2);
    let mut answer = first;
    for _ in 0..3 {
        answer = heartbeat(broker, "m1", answer.member_epoch, Some(Vec::new())).await;
        if answer.active_tasks.as_ref().is_some_and(|t| !t.is_empty()) {
            break;
        }
    }
    let tasks = active(&answer);
    assert_eq!(tasks[0].partitions, [0, 1], "{answer:?}");
    (answer.member_epoch, tasks)
}

#[test]
fn a_group_survives_a_restart_of_its_broker_and_its_member_goes_on() {
    let dir = temp_dir("streams-group-restart");
    let first_life = std::sync::Arc::new(std::sync::Mutex::new(None));
    let kept = first_life.clone();
    run_broker(test_config(&dir), move |broker| {
        let kept = kept.clone();
        async move {
            create_topic(&broker, "t", 2).await;
            *kept.lock().unwrap() = Some(joined(&broker).await);
        }
    });
    let (epoch, tasks) = first_life.lock().unwrap().take().expect("joined");
    run_broker(test_config(&dir), move |broker| {
        let tasks = tasks.clone();
        async move {
            let again = heartbeat(&broker, "m1", epoch, Some(tasks)).await;
            assert_eq!(again.error_code, 0, "the member is known at its epoch");
            assert_eq!(again.member_epoch, epoch, "no rebalance");
            assert_eq!(described(&broker).await, (0, 1));
        }
    });
}

#[test]
fn a_group_claimed_elsewhere_and_back_is_read_from_the_log() {
    let dir = temp_dir("streams-group-claims");
    run_broker(test_config(&dir), |broker| async move {
        create_topic(&broker, "t", 2).await;
        let (epoch, tasks) = joined(&broker).await;
        let elsewhere = ClaimGroup {
            group: "app".into(),
            node_id: 99,
            incarnation: 7,
        };
        let coordinator = &broker.shard.coordinator;
        coordinator.run(elsewhere).await.unwrap().unwrap();
        let leaving = heartbeat(&broker, "m1", -1, None).await;
        assert_eq!(leaving.error_code, NOT_COORDINATOR);
        let again = heartbeat(&broker, "m1", epoch, Some(tasks)).await;
        assert_eq!((again.error_code, again.member_epoch), (0, epoch));
        let stored = coordinator.run(ReadStreamsGroup {
            group: "app".into(),
        });
        let stored = stored.await.unwrap().expect("the group is in the log");
        assert_eq!(stored.members["m1"].member_epoch, epoch);
        assert_eq!(stored.group.subtopologies.len(), 1, "with its topology");
    });
}

#[test]
fn a_session_that_runs_out_ends_on_the_timer_and_the_log_forgets_the_group() {
    let dir = temp_dir("streams-group-sessions");
    let mut config = test_config(&dir);
    config.groups.streams_session_timeout_ms = 300;
    run_broker(config, |broker| async move {
        create_topic(&broker, "t", 2).await;
        assert_eq!(heartbeat(&broker, "m1", 0, None).await.error_code, 0);
        assert_eq!(described(&broker).await, (0, 1));
        glommio::timer::sleep(Duration::from_millis(800)).await;
        assert_eq!(described(&broker).await.0, GROUP_ID_NOT_FOUND);
        let read = ReadStreamsGroup {
            group: "app".into(),
        };
        let stored = broker.shard.coordinator.run(read).await.unwrap();
        assert_eq!(stored, None, "the expiry was stored");
    });
}
