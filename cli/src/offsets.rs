//! Offsets as the admin CLI reads and writes them: a group's committed offsets, each
//! partition's offset for a time (earliest, latest, a timestamp) from its leader, and commits
//! as a standalone consumer (no member, generation -1), which Kafka takes while the group is
//! empty.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::protocol::StrBytes;
use shoal_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use shoal_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use shoal_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use shoal_protocol::messages::{
    BrokerId, GroupId, ListOffsetsRequest, OffsetCommitRequest, OffsetFetchRequest, TopicName,
};

use super::{check, Admin, AdminError};

const OFFSET_FETCH_VERSION: i16 = 8;
const OFFSET_COMMIT_VERSION: i16 = 8;
const LIST_OFFSETS_VERSION: i16 = 7;
/// ListOffsets' timestamps that ask for the end and the start.
pub const LATEST: i64 = -1;
pub const EARLIEST: i64 = -2;
/// Isolation levels: every record, or only those of committed transactions.
pub const READ_UNCOMMITTED: i8 = 0;
pub const READ_COMMITTED: i8 = 1;

/// The consumer group the table writer commits a topic's table's positions to, so that
/// `shoal topic describe`, Kafka's group tools and the group lag metrics show how far the table
/// trails (the table's snapshots remain what the writer resumes from).
pub fn table_group(topic: &str) -> String {
    format!("shoal-iceberg-{topic}")
}

/// The group's committed offsets by (topic, partition).
pub fn committed(
    admin: &mut Admin,
    coordinator: i32,
    group: &str,
) -> Result<BTreeMap<(String, i32), i64>, AdminError> {
    let request =
        OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
            .with_topics(None)]);
    let answer = admin.call_node(coordinator, OFFSET_FETCH_VERSION, &request)?;
    let mut offsets = BTreeMap::new();
    for g in answer.groups {
        check(g.error_code, Some(group))?;
        for t in g.topics {
            for p in t.partitions {
                if p.error_code == 0 && p.committed_offset >= 0 {
                    offsets.insert(
                        (t.name.0.to_string(), p.partition_index),
                        p.committed_offset,
                    );
                }
            }
        }
    }
    Ok(offsets)
}

/// Each partition's offset for `spec` (LATEST, EARLIEST or a timestamp), asked of its
/// leader (the last stable offset for LATEST at isolation level 1, read committed); -1
/// where there is none (no record at or after the timestamp).
pub fn list_offsets(
    admin: &mut Admin,
    partitions: &BTreeSet<(String, i32)>,
    spec: impl Fn(&(String, i32)) -> i64,
    isolation_level: i8,
) -> Result<BTreeMap<(String, i32), i64>, AdminError> {
    let topics: Vec<String> = partitions
        .iter()
        .map(|(t, _)| t.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut by_leader: BTreeMap<i32, BTreeMap<String, Vec<ListOffsetsPartition>>> = BTreeMap::new();
    for (name, topic) in admin.existing_topics(&topics)? {
        for p in &topic.partitions {
            let key = (name.clone(), p.partition_index);
            if partitions.contains(&key) {
                by_leader
                    .entry(p.leader_id.0)
                    .or_default()
                    .entry(name.clone())
                    .or_default()
                    .push(
                        ListOffsetsPartition::default()
                            .with_partition_index(p.partition_index)
                            .with_current_leader_epoch(-1)
                            .with_timestamp(spec(&key)),
                    );
            }
        }
    }
    let mut offsets = BTreeMap::new();
    for (leader, topics) in by_leader {
        let request = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_isolation_level(isolation_level)
            .with_topics(
                topics
                    .into_iter()
                    .map(|(name, partitions)| {
                        ListOffsetsTopic::default()
                            .with_name(TopicName(StrBytes::from_string(name)))
                            .with_partitions(partitions)
                    })
                    .collect(),
            );
        let answer = admin.call_node(leader, LIST_OFFSETS_VERSION, &request)?;
        for t in answer.topics {
            for p in t.partitions {
                check(
                    p.error_code,
                    Some(&format!("{} {}", t.name.0, p.partition_index)),
                )?;
                offsets.insert((t.name.0.to_string(), p.partition_index), p.offset);
            }
        }
    }
    Ok(offsets)
}

/// Commits `offsets` for `group` at its coordinator, as a consumer outside the group.
pub fn commit(
    admin: &mut Admin,
    coordinator: i32,
    group: &str,
    offsets: &BTreeMap<(String, i32), i64>,
) -> Result<(), AdminError> {
    let mut by_topic: BTreeMap<String, Vec<OffsetCommitRequestPartition>> = BTreeMap::new();
    for ((topic, partition), offset) in offsets {
        by_topic.entry(topic.clone()).or_default().push(
            OffsetCommitRequestPartition::default()
                .with_partition_index(*partition)
                .with_committed_offset(*offset)
                .with_committed_leader_epoch(-1)
                .with_committed_metadata(Some(StrBytes::from_static_str(""))),
        );
    }
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(StrBytes::from_static_str(""))
        .with_topics(
            by_topic
                .into_iter()
                .map(|(name, partitions)| {
                    OffsetCommitRequestTopic::default()
                        .with_name(TopicName(StrBytes::from_string(name)))
                        .with_partitions(partitions)
                })
                .collect(),
        );
    let answer = admin.call_node(coordinator, OFFSET_COMMIT_VERSION, &request)?;
    for t in &answer.topics {
        for p in &t.partitions {
            check(
                p.error_code,
                Some(&format!("{} {}", t.name.0, p.partition_index)),
            )?;
        }
    }
    Ok(())
}
