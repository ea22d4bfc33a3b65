//! StreamsGroupHeartbeat (KIP-1071): a Kafka Streams member joins with its topology,
//! heartbeats, reconciles its tasks and leaves through this one API; the group's shard
//! decides (`groups::streams`). The internal topics the topology needs are created here,
//! by the broker, as Kafka's does: members are told MISSING_INTERNAL_TOPICS meanwhile.

use std::collections::{BTreeMap, BTreeSet};

use shoal_coordinator::features::{STREAMS_PROTOCOL_LEVEL, STREAMS_VERSION};
use shoal_coordinator::topic_configs::TopicOverrides;
use shoal_coordinator::{ErrorKind, TopicConfig};
use shoal_protocol::messages::streams_group_heartbeat_request::{self as request_types, TaskIds};
use shoal_protocol::messages::streams_group_heartbeat_response::{
    self as answer_types, EndpointToPartitions, Status,
};
use shoal_protocol::messages::{
    StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse, TopicName,
};
use shoal_protocol::ResponseError;
use shoal_shards::groups::streams::calls::StreamsGroupHeartbeat;
use shoal_shards::groups::streams::group::{
    Endpoint, EndpointPartitions, StreamsAnswer, StreamsHeartbeat,
};
use shoal_shards::groups::streams::tasks::{TaskId, Tasks};
use shoal_shards::groups::streams::topology::{
    CopartitionGroup, InternalTopic, Subtopology, TopicInfo, Topology,
};
use shoal_shards::groups::GroupError;

use super::{heartbeat_preamble, owned, owned_optional, text};
use crate::context::Call;
use crate::handlers::configs::group_configs::streams_group_settings;
use crate::handlers::configs::set_topic_config;
use crate::handlers::topics;
use crate::kafka::error_codes;

/// What a member waits before it sends its tasks' changelog offsets again (Kafka's default).
const TASK_OFFSET_INTERVAL_MS: i32 = 60_000;
/// The lag under which a member counts as caught up for an active task (Kafka's default).
const ACCEPTABLE_RECOVERY_LAG: i64 = 10_000;

pub async fn handle(
    call: &Call<'_>,
    request: StreamsGroupHeartbeatRequest,
) -> StreamsGroupHeartbeatResponse {
    let broker = call.broker;
    if call.feature_level(STREAMS_VERSION) < STREAMS_PROTOCOL_LEVEL {
        return refused(ResponseError::UnsupportedVersion.code(), None);
    }
    let group_id = owned(&request.group_id.0);
    let sources: Vec<&TopicName> = request
        .topology
        .iter()
        .flat_map(|t| &t.subtopologies)
        .flat_map(|s| &s.source_topics)
        .collect();
    if let Err(code) = heartbeat_preamble(call, &group_id, sources) {
        return refused(code, None);
    }
    let tasks_sent = [
        &request.active_tasks,
        &request.standby_tasks,
        &request.warmup_tasks,
    ];
    let sent = tasks_sent.iter().filter(|t| t.is_some()).count();
    if sent != 0 && sent != 3 {
        let message = "If one task-type is non-null, all must be non-null.";
        return refused(ResponseError::InvalidRequest.code(), Some(message));
    }
    let regex = request.topology.iter().flat_map(|t| &t.subtopologies);
    if regex.into_iter().any(|s| !s.source_topic_regex.is_empty()) {
        let message = "Regular expressions for source topics are not supported yet.";
        return refused(ResponseError::InvalidRequest.code(), Some(message));
    }
    let heartbeat = heartbeat_of(call, request);
    let topics = broker.shard.topics.load_full();
    let (settings, interval_ms) = streams_group_settings(&topics, &broker.config.groups, &group_id);
    let call_on_group = StreamsGroupHeartbeat {
        group_id: group_id.clone(),
        heartbeat,
        topics,
        settings,
    };
    match broker.shard.try_group_call(&group_id, call_on_group).await {
        Ok(answer) => {
            create_internal_topics(call, &group_id, &answer.to_create).await;
            answered(answer, interval_ms, call.version)
        }
        Err(error) => refused(error_codes::code_of(Some::<GroupError>(error)), None),
    }
}

fn heartbeat_of(call: &Call<'_>, request: StreamsGroupHeartbeatRequest) -> StreamsHeartbeat {
    let tasks = |list: &Option<Vec<TaskIds>>| -> Option<BTreeSet<TaskId>> {
        list.as_ref().map(|list| {
            list.iter()
                .flat_map(|t| {
                    let subtopology = t.subtopology_id.as_str();
                    t.partitions
                        .iter()
                        .map(move |&p| TaskId::new(subtopology, p))
                })
                .collect()
        })
    };
    let owned_tasks = match (
        tasks(&request.active_tasks),
        tasks(&request.standby_tasks),
        tasks(&request.warmup_tasks),
    ) {
        (Some(active), Some(standby), Some(warmup)) => Some(Tasks {
            active,
            standby,
            warmup,
        }),
        _ => None,
    };
    let offsets = |list: &Option<Vec<request_types::TaskOffset>>| {
        list.as_ref().map(|list| {
            list.iter()
                .map(|o| {
                    (
                        TaskId::new(o.subtopology_id.as_str(), o.partition),
                        o.offset,
                    )
                })
                .collect()
        })
    };
    StreamsHeartbeat {
        member_id: owned(&request.member_id),
        member_epoch: request.member_epoch,
        instance_id: owned_optional(&request.instance_id),
        rack_id: owned_optional(&request.rack_id),
        rebalance_timeout_ms: request.rebalance_timeout_ms,
        client_id: call.client.id.clone(),
        client_host: call.client.host.clone(),
        topology: request.topology.as_ref().map(topology_of),
        owned: owned_tasks,
        process_id: owned_optional(&request.process_id),
        user_endpoint: request.user_endpoint.as_ref().map(|e| Endpoint {
            host: owned(&e.host),
            port: e.port,
        }),
        client_tags: request.client_tags.as_ref().map(|tags| {
            tags.iter()
                .map(|kv| (owned(&kv.key), owned(&kv.value)))
                .collect::<BTreeMap<_, _>>()
        }),
        task_offsets: offsets(&request.task_offsets),
        task_end_offsets: offsets(&request.task_end_offsets),
        shutdown_application: request.shutdown_application,
        endpoint_epoch: request.endpoint_information_epoch,
    }
}

fn topology_of(t: &request_types::Topology) -> Topology {
    let info = |i: &request_types::TopicInfo| TopicInfo {
        name: owned(&i.name.0),
        partitions: i.partitions,
        replication_factor: i.replication_factor,
        configs: i
            .topic_configs
            .iter()
            .map(|kv| (owned(&kv.key), owned(&kv.value)))
            .collect(),
    };
    let mut subtopologies: Vec<Subtopology> = t
        .subtopologies
        .iter()
        .map(|s| Subtopology {
            id: owned(&s.subtopology_id),
            source_topics: s.source_topics.iter().map(|n| owned(&n.0)).collect(),
            repartition_sink_topics: s
                .repartition_sink_topics
                .iter()
                .map(|n| owned(&n.0))
                .collect(),
            changelog_topics: s.state_changelog_topics.iter().map(info).collect(),
            repartition_source_topics: s.repartition_source_topics.iter().map(info).collect(),
            copartition_groups: s
                .copartition_groups
                .iter()
                .map(|g| CopartitionGroup {
                    source_topics: g.source_topics.clone(),
                    repartition_source_topics: g.repartition_source_topics.clone(),
                })
                .collect(),
        })
        .collect();
    subtopologies.sort_by(|a, b| a.id.cmp(&b.id));
    Topology {
        epoch: t.epoch,
        subtopologies,
    }
}

/// Creates the group's missing internal topics with the configs its topology gives them (a
/// config Shoal does not take is left out, with a warning). Another member's heartbeat may
/// have created one first; a failure is logged and tried again at the next heartbeat.
async fn create_internal_topics(call: &Call<'_>, group_id: &str, missing: &[InternalTopic]) {
    for topic in missing {
        if call
            .broker
            .shard
            .topics
            .load()
            .by_name(&topic.name)
            .is_some()
        {
            continue;
        }
        let (mut config, mut own) = (TopicConfig::default(), TopicOverrides::new());
        for (name, value) in &topic.configs {
            if let Err(why) = set_topic_config(&mut config, &mut own, name, Some(value)) {
                tracing::warn!(
                    group = group_id,
                    topic = topic.name,
                    config = name,
                    why,
                    "an internal topic's config is left out"
                );
            }
        }
        match topics::create(call.broker, &topic.name, topic.partitions, own).await {
            Ok(_) | Err(ErrorKind::TopicAlreadyExists) => {
                tracing::info!(
                    group = group_id,
                    topic = topic.name,
                    partitions = topic.partitions,
                    "created a streams group's internal topic"
                );
            }
            Err(error) => {
                tracing::warn!(
                    group = group_id,
                    topic = topic.name,
                    ?error,
                    "could not create a streams group's internal topic"
                );
            }
        }
    }
}

fn refused(code: i16, message: Option<&str>) -> StreamsGroupHeartbeatResponse {
    let mut answer = StreamsGroupHeartbeatResponse::default();
    answer.error_code = code;
    answer.error_message = message.map(text);
    answer
}

fn answered(
    answer: StreamsAnswer,
    interval_ms: i32,
    version: i16,
) -> StreamsGroupHeartbeatResponse {
    let mut response = StreamsGroupHeartbeatResponse::default();
    response.member_id = text(answer.member_id);
    response.member_epoch = answer.member_epoch;
    response.heartbeat_interval_ms = interval_ms;
    // v0 carries the lag as an int32, v1 as an int64 (each version only its own field).
    match version {
        0 => response.acceptable_recovery_lag_legacy = ACCEPTABLE_RECOVERY_LAG as i32,
        _ => response.acceptable_recovery_lag = ACCEPTABLE_RECOVERY_LAG,
    }
    response.task_offset_interval_ms = TASK_OFFSET_INTERVAL_MS;
    if let Some(tasks) = &answer.tasks {
        response.active_tasks = Some(task_ids(&tasks.active));
        response.standby_tasks = Some(task_ids(&tasks.standby));
        response.warmup_tasks = Some(task_ids(&tasks.warmup));
    }
    if !answer.statuses.is_empty() {
        let statuses = answer.statuses.into_iter().map(|(code, detail)| {
            let mut status = Status::default();
            status.status_code = code as i8;
            status.status_detail = text(detail);
            status
        });
        response.status = Some(statuses.collect());
    }
    response.endpoint_information_epoch = answer.endpoint_epoch;
    response.partitions_by_user_endpoint = answer
        .endpoints
        .map(|endpoints| endpoints.into_iter().map(endpoint_partitions).collect());
    response
}

/// Tasks by subtopology, as the answer lists them.
fn task_ids(set: &BTreeSet<TaskId>) -> Vec<answer_types::TaskIds> {
    let mut by_subtopology: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for t in set {
        by_subtopology
            .entry(&t.subtopology)
            .or_default()
            .push(t.partition);
    }
    by_subtopology
        .into_iter()
        .map(|(id, partitions)| {
            let mut ids = answer_types::TaskIds::default();
            ids.subtopology_id = text(id);
            ids.partitions = partitions;
            ids
        })
        .collect()
}

/// One member's endpoint and the partitions its tasks read, as the answer lists them.
fn endpoint_partitions(e: EndpointPartitions) -> EndpointToPartitions {
    let partitions = |by_topic: BTreeMap<String, Vec<i32>>| {
        by_topic
            .into_iter()
            .map(|(topic, partitions)| {
                let mut tp = answer_types::TopicPartition::default();
                tp.topic = TopicName(text(topic));
                tp.partitions = partitions;
                tp
            })
            .collect()
    };
    let mut endpoint = answer_types::Endpoint::default();
    endpoint.host = text(e.endpoint.host);
    endpoint.port = e.endpoint.port;
    let mut entry = EndpointToPartitions::default();
    entry.user_endpoint = endpoint;
    entry.active_partitions = partitions(e.active);
    entry.standby_partitions = partitions(e.standby);
    entry
}
