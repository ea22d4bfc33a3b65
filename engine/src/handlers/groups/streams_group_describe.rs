//! StreamsGroupDescribe (KIP-1071): streams groups with their topology as configured, their
//! members, tasks and targets. Any other group, or an unknown id, gets GROUP_ID_NOT_FOUND, as
//! Kafka answers. No topology description is stored (Kafka keeps one only with a plugin
//! configured): v1's status says NOT_STORED when asked.

use std::collections::BTreeSet;

use shoal_protocol::messages::streams_group_describe_response::{
    Assignment, DescribedGroup, Endpoint, KeyValue, Member, Subtopology, TaskIds, TaskOffset,
    TopicInfo, Topology,
};
use shoal_protocol::messages::{
    StreamsGroupDescribeRequest, StreamsGroupDescribeResponse, TopicName,
};
use shoal_shards::groups::streams::calls::DescribeStreamsGroup;
use shoal_shards::groups::streams::group::Member as GroupMember;
use shoal_shards::groups::streams::tasks::{TaskId, Tasks};
use shoal_shards::groups::streams::topology::{self as topology, Configured};
use shoal_shards::groups::GroupError;

use super::{describe_each, text};
use crate::context::Call;
use crate::kafka::error_codes;

/// v1's TopologyDescriptionStatus values.
const NOT_REQUESTED: i8 = 0;
const NOT_STORED: i8 = 1;

pub async fn handle(
    call: &Call<'_>,
    request: StreamsGroupDescribeRequest,
) -> StreamsGroupDescribeResponse {
    let include_operations = request.include_authorized_operations;
    let status = match request.include_topology_description {
        true => NOT_STORED,
        false => NOT_REQUESTED,
    };
    let groups = describe_each(
        call,
        request.group_ids,
        true,
        include_operations,
        |name, answer| describe(call, name, answer, status),
    )
    .await;
    let mut response = StreamsGroupDescribeResponse::default();
    response.groups = groups;
    response
}

async fn describe(
    call: &Call<'_>,
    name: String,
    mut answer: DescribedGroup,
    status: i8,
) -> DescribedGroup {
    let shard = &call.broker.shard;
    let group = match shard
        .try_group_call(&name, DescribeStreamsGroup(name.clone()))
        .await
    {
        Ok(Some(group)) => group,
        Err(error) => {
            answer.error_code = error_codes::code_of(Some(error));
            return answer;
        }
        Ok(None) => {
            answer.error_code = error_codes::code_of(Some(GroupError::GroupIdNotFound));
            answer.error_message = Some(text(format!("Group {name} not found.")));
            return answer;
        }
    };
    answer.group_state = text(group.state);
    answer.group_epoch = group.group_epoch;
    answer.assignment_epoch = group.assignment_epoch;
    answer.topology_description_status = status;
    answer.assignor_name = Some(text("sticky"));
    answer.topology = group.topology.as_ref().map(|t| {
        let mut described = Topology::default();
        described.epoch = t.epoch;
        described.subtopologies = group.configured.is_ready().then(|| {
            t.subtopologies
                .iter()
                .map(|s| subtopology(s, &group.configured))
                .collect()
        });
        described
    });
    answer.members = group
        .members
        .into_iter()
        .map(|(id, m)| {
            let target = group.targets.get(&id).cloned().unwrap_or_default();
            member(id, m, &target)
        })
        .collect();
    answer
}

fn subtopology(s: &topology::Subtopology, configured: &Configured) -> Subtopology {
    let info = |t: &topology::TopicInfo, partitions: i32| {
        let mut info = TopicInfo::default();
        info.name = TopicName(text(t.name.clone()));
        info.partitions = partitions;
        info.replication_factor = t.replication_factor;
        info.topic_configs = t.configs.iter().map(|(k, v)| key_value(k, v)).collect();
        info
    };
    let tasks = configured.tasks.get(&s.id).copied().unwrap_or(0);
    let mut described = Subtopology::default();
    described.subtopology_id = text(s.id.clone());
    described.source_topics = s
        .source_topics
        .iter()
        .map(|t| TopicName(text(t.clone())))
        .collect();
    described.repartition_sink_topics = s
        .repartition_sink_topics
        .iter()
        .map(|t| TopicName(text(t.clone())))
        .collect();
    described.state_changelog_topics = s.changelog_topics.iter().map(|t| info(t, tasks)).collect();
    described.repartition_source_topics = s
        .repartition_source_topics
        .iter()
        .map(|t| {
            info(
                t,
                configured
                    .partitions
                    .get(&t.name)
                    .copied()
                    .unwrap_or(t.partitions),
            )
        })
        .collect();
    described
}

fn key_value(key: &str, value: &str) -> KeyValue {
    let mut kv = KeyValue::default();
    kv.key = text(key);
    kv.value = text(value);
    kv
}

fn task_ids(set: &BTreeSet<TaskId>) -> Vec<TaskIds> {
    let mut ids: Vec<TaskIds> = Vec::new();
    for t in set {
        match ids.last_mut() {
            Some(last) if last.subtopology_id.as_str() == t.subtopology => {
                last.partitions.push(t.partition)
            }
            _ => {
                let mut next = TaskIds::default();
                next.subtopology_id = text(t.subtopology.clone());
                next.partitions = vec![t.partition];
                ids.push(next);
            }
        }
    }
    ids
}

fn assignment(tasks: &Tasks) -> Assignment {
    let mut assignment = Assignment::default();
    assignment.active_tasks = task_ids(&tasks.active);
    assignment.standby_tasks = task_ids(&tasks.standby);
    assignment.warmup_tasks = task_ids(&tasks.warmup);
    assignment
}

fn offsets(list: &[(TaskId, i64)]) -> Vec<TaskOffset> {
    list.iter()
        .map(|(task, offset)| {
            let mut o = TaskOffset::default();
            o.subtopology_id = text(task.subtopology.clone());
            o.partition = task.partition;
            o.offset = *offset;
            o
        })
        .collect()
}

fn member(id: String, m: GroupMember, target: &Tasks) -> Member {
    let mut member = Member::default();
    member.member_id = text(id);
    member.member_epoch = m.tasks.epoch;
    member.instance_id = m.instance_id.map(text);
    member.rack_id = m.rack_id.map(text);
    member.client_id = text(m.client_id);
    member.client_host = text(m.client_host);
    member.topology_epoch = m.topology_epoch;
    member.process_id = text(m.process_id);
    member.user_endpoint = m.user_endpoint.map(|e| {
        let mut endpoint = Endpoint::default();
        endpoint.host = text(e.host);
        endpoint.port = e.port;
        endpoint
    });
    member.client_tags = m.client_tags.iter().map(|(k, v)| key_value(k, v)).collect();
    member.task_offsets = offsets(&m.task_offsets);
    member.task_end_offsets = offsets(&m.task_end_offsets);
    member.assignment = assignment(&m.tasks.assigned);
    member.target_assignment = assignment(target);
    member
}
