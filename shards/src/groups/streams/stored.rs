//! A streams group to and from the coordinator's records (`ShoalStreamsGroupRecord` and its
//! members' `ShoalStreamsMemberRecord`s), so a broker that claims the group continues it:
//! members keep their epochs, tasks and targets, and the topology stays. What changed is
//! found by comparing each member's record with the one last stored. Deadlines and task
//! offsets are not stored: a restored member has a whole session from the moment its group is
//! read back, and sends its offsets again.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use shoal_coordinator::state::streams_groups::StoredStreamsGroup;
use shoal_protocol::records::{
    ShoalStreamsClientTag, ShoalStreamsCopartitionGroup, ShoalStreamsGroupRecord,
    ShoalStreamsMemberRecord, ShoalStreamsSubtopology, ShoalStreamsTasks, ShoalStreamsTopicConfig,
    ShoalStreamsTopicInfo,
};

use super::group::{Endpoint, Member, StreamsGroup, MEMBER_OVERHEAD_BYTES, TASK_BYTES};
use super::reconcile::{MemberState, MemberTasks};
use super::tasks::{TaskId, Tasks};
use super::topology::{CopartitionGroup, Subtopology, TopicInfo, Topology};

/// What a change writes: the group's record and the records of the members that changed.
pub type StreamsChange = (ShoalStreamsGroupRecord, Vec<ShoalStreamsMemberRecord>);

/// What the group last stored, to find what changed since, and what its members hold in
/// memory as of then.
#[derive(Debug, Default)]
pub struct Stored {
    pub changes: i64,
    epochs: (i32, i32, i32),
    topology: Option<Topology>,
    members: BTreeMap<String, ShoalStreamsMemberRecord>,
    /// Members that may have changed since (heartbeated, left, or given a new target): only
    /// these are compared with their stored records, so a heartbeat costs one member's.
    pub(super) touched: BTreeSet<String>,
    /// Each member's estimated memory as last stored, and their sum.
    member_bytes: BTreeMap<String, usize>,
    pub(super) members_bytes: usize,
}

impl Stored {
    fn account(&mut self, id: &str, bytes: Option<usize>) {
        let before = match bytes {
            Some(bytes) => self.member_bytes.insert(id.to_string(), bytes),
            None => self.member_bytes.remove(id),
        };
        self.members_bytes = self.members_bytes - before.unwrap_or(0) + bytes.unwrap_or(0);
    }
}

impl StreamsGroup {
    /// The records of what changed since the last call (None: nothing did). A group left
    /// without members is recorded as deleted.
    pub fn take_change(&mut self, group_id: &str) -> Option<StreamsChange> {
        let epochs = (self.group_epoch, self.assignment_epoch, self.endpoint_epoch);
        let mut members = Vec::new();
        for id in std::mem::take(&mut self.stored.touched) {
            let now = self.members.get(&id).map(|m| {
                let target = self.target.get(&id);
                (member_record(&id, m, target), member_bytes(&id, m, target))
            });
            let stored = &mut self.stored;
            match now {
                Some((record, _)) if stored.members.get(&id) == Some(&record) => {}
                Some((record, bytes)) => {
                    stored.account(&id, Some(bytes));
                    stored.members.insert(id, record.clone());
                    members.push(record);
                }
                None if stored.members.remove(&id).is_some() => {
                    stored.account(&id, None);
                    members.push(ShoalStreamsMemberRecord {
                        member_id: id,
                        removed: true,
                        ..Default::default()
                    });
                }
                None => {}
            }
        }
        let stored = &mut self.stored;
        let topology_changed = stored.topology != self.topology;
        if members.is_empty() && !topology_changed && epochs == stored.epochs {
            return None;
        }
        stored.changes += 1;
        stored.epochs = epochs;
        stored.topology = self.topology.clone();
        let deleted = self.members.is_empty();
        let mut group = ShoalStreamsGroupRecord {
            group_id: group_id.to_string(),
            change: stored.changes,
            deleted,
            group_epoch: self.group_epoch,
            assignment_epoch: self.assignment_epoch,
            endpoint_epoch: self.endpoint_epoch,
            topology_changed,
            topology_epoch: -1,
            subtopologies: Vec::new(),
        };
        if let Some(topology) = self.topology.as_ref().filter(|_| topology_changed) {
            group.topology_epoch = topology.epoch;
            group.subtopologies = topology
                .subtopologies
                .iter()
                .map(subtopology_record)
                .collect();
        }
        match deleted {
            true => Some((group, Vec::new())),
            false => Some((group, members)),
        }
    }

    /// The group as stored, its members' sessions starting `now`. Its topology is configured
    /// against the topics at the next heartbeat without a new assignment.
    pub fn restore(
        stored: &StoredStreamsGroup,
        max_size: usize,
        session_timeout: Duration,
        standby_replicas: usize,
        now: Instant,
    ) -> StreamsGroup {
        let mut group = StreamsGroup::new(max_size, session_timeout, standby_replicas);
        let r = &stored.group;
        group.group_epoch = r.group_epoch;
        group.assignment_epoch = r.assignment_epoch;
        group.endpoint_epoch = r.endpoint_epoch;
        group.topology = (r.topology_epoch >= 0).then(|| Topology {
            epoch: r.topology_epoch,
            subtopologies: r.subtopologies.iter().map(subtopology_of).collect(),
        });
        for (id, m) in &stored.members {
            let member = restored_member(m, session_timeout, now);
            group.target.insert(id.clone(), target_of(m));
            group.restore_member(id, member);
        }
        group.stored = Stored {
            changes: r.change,
            epochs: (r.group_epoch, r.assignment_epoch, r.endpoint_epoch),
            topology: group.topology.clone(),
            members: stored.members.clone(),
            ..Default::default()
        };
        for (id, m) in &group.members {
            let bytes = member_bytes(id, m, group.target.get(id));
            group.stored.account(id, Some(bytes));
        }
        group.restored = true;
        group
    }
}

/// A member's memory, estimated: its strings and tasks (held and targeted), and the maps'
/// overhead; twice, for the member and its record as last stored.
fn member_bytes(id: &str, m: &Member, target: Option<&Tasks>) -> usize {
    let tasks = m.tasks.held().len() + target.map_or(0, Tasks::len);
    2 * (MEMBER_OVERHEAD_BYTES
        + id.len()
        + m.client_id.len()
        + m.process_id.len()
        + tasks * TASK_BYTES)
}

fn tasks_record(set: &BTreeSet<TaskId>) -> Vec<ShoalStreamsTasks> {
    let mut by_subtopology: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for t in set {
        by_subtopology
            .entry(&t.subtopology)
            .or_default()
            .push(t.partition);
    }
    by_subtopology
        .into_iter()
        .map(|(id, partitions)| ShoalStreamsTasks {
            subtopology_id: id.to_string(),
            partitions,
        })
        .collect()
}

fn tasks_of(records: &[ShoalStreamsTasks]) -> BTreeSet<TaskId> {
    records
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|&p| TaskId::new(&t.subtopology_id, p))
        })
        .collect()
}

fn member_record(id: &str, m: &Member, target: Option<&Tasks>) -> ShoalStreamsMemberRecord {
    let empty = Tasks::default();
    let target = target.unwrap_or(&empty);
    let (assigned, revoking) = (&m.tasks.assigned, &m.tasks.revoking);
    ShoalStreamsMemberRecord {
        member_id: id.to_string(),
        removed: false,
        instance_id: m.instance_id.clone(),
        rack_id: m.rack_id.clone(),
        client_id: m.client_id.clone(),
        client_host: m.client_host.clone(),
        process_id: m.process_id.clone(),
        endpoint_host: m.user_endpoint.as_ref().map(|e| e.host.clone()),
        endpoint_port: m.user_endpoint.as_ref().map_or(0, |e| i32::from(e.port)),
        client_tags: m
            .client_tags
            .iter()
            .map(|(key, value)| ShoalStreamsClientTag {
                key: key.clone(),
                value: value.clone(),
            })
            .collect(),
        topology_epoch: m.topology_epoch,
        rebalance_timeout_ms: i32::try_from(m.rebalance_timeout.as_millis()).unwrap_or(i32::MAX),
        state: match m.tasks.state {
            MemberState::Stable => 0,
            MemberState::UnrevokedTasks => 1,
            MemberState::UnreleasedTasks => 2,
        },
        member_epoch: m.tasks.epoch,
        previous_member_epoch: m.previous_epoch,
        left_statically: m.left_statically,
        assigned_active: tasks_record(&assigned.active),
        assigned_standby: tasks_record(&assigned.standby),
        assigned_warmup: tasks_record(&assigned.warmup),
        revoking_active: tasks_record(&revoking.active),
        revoking_standby: tasks_record(&revoking.standby),
        revoking_warmup: tasks_record(&revoking.warmup),
        target_active: tasks_record(&target.active),
        target_standby: tasks_record(&target.standby),
        target_warmup: tasks_record(&target.warmup),
    }
}

fn target_of(r: &ShoalStreamsMemberRecord) -> Tasks {
    Tasks {
        active: tasks_of(&r.target_active),
        standby: tasks_of(&r.target_standby),
        warmup: tasks_of(&r.target_warmup),
    }
}

fn restored_member(r: &ShoalStreamsMemberRecord, session: Duration, now: Instant) -> Member {
    // The log's entries are checked to hold states 0..=2.
    let state = match r.state {
        1 => MemberState::UnrevokedTasks,
        2 => MemberState::UnreleasedTasks,
        _ => MemberState::Stable,
    };
    let rebalance_timeout = Duration::from_millis(r.rebalance_timeout_ms.max(0) as u64);
    Member {
        instance_id: r.instance_id.clone(),
        rack_id: r.rack_id.clone(),
        client_id: r.client_id.clone(),
        client_host: r.client_host.clone(),
        process_id: r.process_id.clone(),
        user_endpoint: r.endpoint_host.as_ref().map(|host| Endpoint {
            host: host.clone(),
            port: u16::try_from(r.endpoint_port).unwrap_or(0),
        }),
        client_tags: r
            .client_tags
            .iter()
            .map(|t| (t.key.clone(), t.value.clone()))
            .collect(),
        topology_epoch: r.topology_epoch,
        rebalance_timeout,
        tasks: MemberTasks {
            state,
            epoch: r.member_epoch,
            assigned: Tasks {
                active: tasks_of(&r.assigned_active),
                standby: tasks_of(&r.assigned_standby),
                warmup: tasks_of(&r.assigned_warmup),
            },
            revoking: Tasks {
                active: tasks_of(&r.revoking_active),
                standby: tasks_of(&r.revoking_standby),
                warmup: tasks_of(&r.revoking_warmup),
            },
        },
        previous_epoch: r.previous_member_epoch,
        task_offsets: Vec::new(),
        task_end_offsets: Vec::new(),
        session_deadline: now + session,
        revocation_deadline: (state == MemberState::UnrevokedTasks)
            .then_some(now + rebalance_timeout),
        left_statically: r.left_statically,
    }
}

fn topic_info_record(t: &TopicInfo) -> ShoalStreamsTopicInfo {
    ShoalStreamsTopicInfo {
        name: t.name.clone(),
        partitions: t.partitions,
        replication_factor: t.replication_factor,
        configs: t
            .configs
            .iter()
            .map(|(key, value)| ShoalStreamsTopicConfig {
                key: key.clone(),
                value: value.clone(),
            })
            .collect(),
    }
}

fn topic_info_of(r: &ShoalStreamsTopicInfo) -> TopicInfo {
    TopicInfo {
        name: r.name.clone(),
        partitions: r.partitions,
        replication_factor: r.replication_factor,
        configs: r
            .configs
            .iter()
            .map(|c| (c.key.clone(), c.value.clone()))
            .collect(),
    }
}

fn subtopology_record(s: &Subtopology) -> ShoalStreamsSubtopology {
    let indexes = |list: &[i16]| list.iter().map(|&i| i32::from(i)).collect();
    ShoalStreamsSubtopology {
        id: s.id.clone(),
        source_topics: s.source_topics.clone(),
        repartition_sink_topics: s.repartition_sink_topics.clone(),
        changelog_topics: s.changelog_topics.iter().map(topic_info_record).collect(),
        repartition_source_topics: s
            .repartition_source_topics
            .iter()
            .map(topic_info_record)
            .collect(),
        copartition_groups: s
            .copartition_groups
            .iter()
            .map(|g| ShoalStreamsCopartitionGroup {
                source_topics: indexes(&g.source_topics),
                repartition_source_topics: indexes(&g.repartition_source_topics),
            })
            .collect(),
    }
}

fn subtopology_of(r: &ShoalStreamsSubtopology) -> Subtopology {
    // Stored only after validation here: indexes fit i16 (a bad one fails validation of the
    // configured topology's index checks, so it is kept out of range rather than wrapped).
    let indexes = |list: &[i32]| {
        list.iter()
            .map(|&i| i16::try_from(i).unwrap_or(i16::MAX))
            .collect()
    };
    Subtopology {
        id: r.id.clone(),
        source_topics: r.source_topics.clone(),
        repartition_sink_topics: r.repartition_sink_topics.clone(),
        changelog_topics: r.changelog_topics.iter().map(topic_info_of).collect(),
        repartition_source_topics: r
            .repartition_source_topics
            .iter()
            .map(topic_info_of)
            .collect(),
        copartition_groups: r
            .copartition_groups
            .iter()
            .map(|g| CopartitionGroup {
                source_topics: indexes(&g.source_topics),
                repartition_source_topics: indexes(&g.repartition_source_topics),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groups::streams::group::StreamsHeartbeat;
    use uuid::Uuid;

    #[test]
    fn a_restored_group_goes_on_where_it_was_without_a_new_assignment() {
        let topics = BTreeMap::from([("in".to_string(), (Uuid::from_bytes([1; 16]), 4))]);
        let topology = Topology {
            epoch: 0,
            subtopologies: vec![Subtopology {
                id: "0".into(),
                source_topics: vec!["in".into()],
                ..Default::default()
            }],
        };
        let now = Instant::now();
        let mut group = StreamsGroup::new(10, Duration::from_secs(45), 0);
        let join = |id: &str, process: &str| StreamsHeartbeat {
            member_id: id.into(),
            rebalance_timeout_ms: 1000,
            topology: Some(topology.clone()),
            process_id: Some(process.into()),
            ..Default::default()
        };
        group.heartbeat(join("a", "p1"), &topics, now).unwrap();
        group.heartbeat(join("b", "p2"), &topics, now).unwrap();
        let beat = |group: &StreamsGroup, id: &str| StreamsHeartbeat {
            member_id: id.into(),
            member_epoch: group.members[id].tasks.epoch,
            rebalance_timeout_ms: -1,
            owned: Some(group.members[id].tasks.assigned.clone()),
            ..Default::default()
        };
        for _ in 0..3 {
            for id in ["a", "b"] {
                group.heartbeat(beat(&group, id), &topics, now).unwrap();
            }
        }
        assert_eq!(group.state(), "Stable");
        let mut stored = StoredStreamsGroup {
            group: ShoalStreamsGroupRecord::default(),
            members: BTreeMap::new(),
        };
        let (record, members) = group.take_change("g").expect("changed");
        assert!(record.topology_changed && record.change == 1);
        stored.group = record;
        for m in members {
            stored.members.insert(m.member_id.clone(), m);
        }
        assert!(group.take_change("g").is_none(), "nothing changed since");
        let mut back = StreamsGroup::restore(&stored, 10, Duration::from_secs(45), 0, now);
        let epoch = group.members["a"].tasks.epoch;
        let answer = back.heartbeat(beat(&group, "a"), &topics, now).unwrap();
        assert_eq!(answer.member_epoch, epoch);
        assert_eq!(back.group_epoch, group.group_epoch, "no rebalance");
        assert_eq!(back.target, group.target);
        assert!(
            back.take_change("g").is_none(),
            "nothing to store after the restore"
        );
    }
}
