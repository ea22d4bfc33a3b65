//! `shoal group list|describe|reset-offsets`: groups, their members and each partition's
//! committed offset and lag, as `kafka-consumer-groups.sh` shows them.

use std::collections::{BTreeMap, BTreeSet};

use bytes::{Buf, Bytes};
use kafka_protocol::protocol::{Decodable, StrBytes};
use serde_json::json;
use shoal_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, ConsumerProtocolAssignment, DescribeGroupsRequest,
    GroupId, ListGroupsRequest,
};

use super::datetime::parse_millis;
use super::offsets::{commit, committed, list_offsets, EARLIEST, LATEST, READ_UNCOMMITTED};
use super::{check, only_item, print_table, Admin, AdminError, Format, Target};

const LIST_GROUPS_VERSION: i16 = 4;
const DESCRIBE_GROUPS_VERSION: i16 = 5;
const GROUP_ID_NOT_FOUND: i16 = 69;
const CONSUMER_GROUP_DESCRIBE_VERSION: i16 = 0;

#[derive(clap::Subcommand, Debug)]
pub enum GroupCommand {
    /// Every group of every broker, with its state and protocol.
    List,
    /// A group's state, members and, per partition, committed offset, end offset and lag.
    Describe { group: String },
    /// Moves a group's committed offsets (dry run unless --execute); refused while the group
    /// has members, as Kafka refuses it.
    ResetOffsets {
        group: String,
        /// The topics whose partitions move (repeatable); none: those the group has offsets
        /// for.
        #[arg(long = "topic")]
        topics: Vec<String>,
        #[command(flatten)]
        to: ResetTo,
        /// Commit the new offsets (without it, only print them).
        #[arg(long)]
        execute: bool,
    },
}

#[derive(clap::Args, Debug)]
#[group(required = true, multiple = false)]
pub struct ResetTo {
    /// Each partition's first offset.
    #[arg(long)]
    to_earliest: bool,
    /// Each partition's end (its high watermark).
    #[arg(long)]
    to_latest: bool,
    /// This offset on every partition (held within each partition's range).
    #[arg(long, value_name = "OFFSET")]
    to_offset: Option<i64>,
    /// ISO 8601, e.g. 2026-12-01T10:00:00Z: the first offset at or after it.
    #[arg(long, value_name = "DATETIME")]
    to_datetime: Option<String>,
    /// Moves each committed offset by N (negative: back).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    shift_by: Option<i64>,
}

pub fn run(target: &Target, command: GroupCommand) -> Result<(), AdminError> {
    let (mut admin, format) = (target.connect()?, target.format);
    match command {
        GroupCommand::List => list(&mut admin, format),
        GroupCommand::Describe { group } => describe(&mut admin, format, &group),
        GroupCommand::ResetOffsets {
            group,
            topics,
            to,
            execute,
        } => reset(&mut admin, format, &group, &topics, &to, execute),
    }
}

fn list(admin: &mut Admin, format: Format) -> Result<(), AdminError> {
    let metadata = admin.metadata(Some(&[]))?;
    let mut groups = BTreeMap::new();
    for broker in metadata.brokers.iter().map(|b| b.node_id.0) {
        let answer = admin.call_node(broker, LIST_GROUPS_VERSION, &ListGroupsRequest::default())?;
        check(answer.error_code, None)?;
        for g in answer.groups {
            let state = g.group_state.to_string();
            groups.insert(
                g.group_id.0.to_string(),
                (state, g.protocol_type.to_string()),
            );
        }
    }
    match format {
        Format::Json => {
            let list: Vec<_> = groups
                .iter()
                .map(|(g, (s, p))| json!({"group": g, "state": s, "protocol_type": p}))
                .collect();
            println!("{}", json!(list));
        }
        Format::Table => {
            let rows: Vec<Vec<String>> = groups
                .iter()
                .map(|(g, (s, p))| vec![g.clone(), s.clone(), p.clone()])
                .collect();
            print_table(&["GROUP", "STATE", "PROTOCOL TYPE"], &rows);
        }
    }
    Ok(())
}

/// A member: id, client id, host, assigned partitions.
type Member = (String, String, String, Vec<(String, i32)>);

/// One partition of a group: its committed offset (if any), end offset, lag and owner.
struct PartitionLag {
    topic: String,
    partition: i32,
    committed: Option<i64>,
    end: i64,
    lag: Option<i64>,
    member: String,
}

struct Described {
    /// None: DescribeGroups does not know the group (Kafka 4's consumer-protocol groups).
    state: Option<String>,
    members: Vec<Member>,
}

impl Described {
    fn not_found() -> Described {
        Described {
            state: None,
            members: Vec::new(),
        }
    }
}

fn describe_group(
    admin: &mut Admin,
    coordinator: i32,
    group: &str,
) -> Result<Described, AdminError> {
    let request = DescribeGroupsRequest::default()
        .with_groups(vec![GroupId(StrBytes::from_string(group.to_string()))]);
    let answer = admin.call_node(coordinator, DESCRIBE_GROUPS_VERSION, &request)?;
    let described = only_item(answer.groups, "DescribeGroups")?;
    if described.error_code == GROUP_ID_NOT_FOUND {
        // Not a classic group: a consumer-protocol one (KIP-848) where the broker has them.
        return match admin.serves(ApiKey::ConsumerGroupDescribe)? {
            true => describe_consumer_group(admin, coordinator, group),
            false => Ok(Described::not_found()),
        };
    }
    check(described.error_code, Some(group))?;
    let members = described
        .members
        .iter()
        .map(|m| {
            let assigned = assigned_partitions(m.member_assignment.clone());
            (
                m.member_id.to_string(),
                m.client_id.to_string(),
                m.client_host.to_string(),
                assigned,
            )
        })
        .collect();
    Ok(Described {
        state: Some(described.group_state.to_string()),
        members,
    })
}

/// A consumer-protocol group (KIP-848), by ConsumerGroupDescribe.
fn describe_consumer_group(
    admin: &mut Admin,
    coordinator: i32,
    group: &str,
) -> Result<Described, AdminError> {
    let request = ConsumerGroupDescribeRequest::default()
        .with_group_ids(vec![GroupId(StrBytes::from_string(group.to_string()))]);
    let answer = admin.call_node(coordinator, CONSUMER_GROUP_DESCRIBE_VERSION, &request)?;
    let described = only_item(answer.groups, "ConsumerGroupDescribe")?;
    if described.error_code == GROUP_ID_NOT_FOUND {
        return Ok(Described::not_found());
    }
    check(
        described.error_code,
        described.error_message.as_ref().map(|m| m.as_str()),
    )?;
    let members = described
        .members
        .iter()
        .map(|m| {
            let assigned = m
                .assignment
                .topic_partitions
                .iter()
                .flat_map(|t| {
                    t.partitions
                        .iter()
                        .map(|p| (t.topic_name.0.to_string(), *p))
                })
                .collect();
            (
                m.member_id.to_string(),
                m.client_id.to_string(),
                m.client_host.to_string(),
                assigned,
            )
        })
        .collect();
    Ok(Described {
        state: Some(described.group_state.to_string()),
        members,
    })
}

/// A classic consumer's assignment (empty when it is not one).
fn assigned_partitions(mut assignment: Bytes) -> Vec<(String, i32)> {
    if assignment.remaining() < 2 {
        return Vec::new();
    }
    let version = assignment.get_i16();
    ConsumerProtocolAssignment::decode(&mut assignment, version.clamp(0, 3))
        .map(|a| {
            a.assigned_partitions
                .iter()
                .flat_map(|t| t.partitions.iter().map(|p| (t.topic.0.to_string(), *p)))
                .collect()
        })
        .unwrap_or_default()
}

fn describe(admin: &mut Admin, format: Format, group: &str) -> Result<(), AdminError> {
    let coordinator = admin.group_coordinator(group)?;
    let described = describe_group(admin, coordinator, group)?;
    let committed = committed(admin, coordinator, group)?;
    let mut partitions: BTreeSet<(String, i32)> = committed.keys().cloned().collect();
    let mut owner = BTreeMap::new();
    for (member, client, host, assigned) in &described.members {
        for tp in assigned {
            partitions.insert(tp.clone());
            owner.insert(tp.clone(), format!("{member} ({client}, {host})"));
        }
    }
    let ends = list_offsets(admin, &partitions, |_| LATEST, READ_UNCOMMITTED)?;
    let rows: Vec<PartitionLag> = partitions
        .iter()
        .map(|tp| {
            let end = ends.get(tp).copied().unwrap_or(-1);
            let committed = committed.get(tp).copied();
            PartitionLag {
                topic: tp.0.clone(),
                partition: tp.1,
                committed,
                end,
                lag: committed.map(|c| (end - c).max(0)),
                member: owner.get(tp).cloned().unwrap_or_default(),
            }
        })
        .collect();
    match format {
        Format::Json => print_json(group, coordinator, &described, &rows),
        Format::Table => print_tables(group, coordinator, &described, &rows),
    }
    Ok(())
}

/// `shoal group describe --format json`.
fn print_json(group: &str, coordinator: i32, described: &Described, rows: &[PartitionLag]) {
    let total: i64 = rows.iter().filter_map(|r| r.lag).sum();
    let state = described.state.clone().unwrap_or_else(|| "unknown".into());
    let members: Vec<_> = described
        .members
        .iter()
        .map(|(id, client, host, assigned)| {
            json!({"member_id": id, "client_id": client, "host": host,
                   "partitions": assigned.iter()
                       .map(|(t, p)| json!({"topic": t, "partition": p}))
                       .collect::<Vec<_>>()})
        })
        .collect();
    let offsets: Vec<_> = rows
        .iter()
        .map(|r| {
            json!({"topic": r.topic, "partition": r.partition, "committed": r.committed,
                   "end": r.end, "lag": r.lag})
        })
        .collect();
    println!(
        "{}",
        json!({"group": group, "state": state, "coordinator": coordinator,
               "members": members, "offsets": offsets, "lag": total})
    );
}

/// `shoal group describe`: the group, then a row per partition.
fn print_tables(group: &str, coordinator: i32, described: &Described, rows: &[PartitionLag]) {
    let total: i64 = rows.iter().filter_map(|r| r.lag).sum();
    let state = described.state.clone().unwrap_or_else(|| "unknown".into());
    println!(
        "GROUP {group}: {state}, coordinator {coordinator}, {} members, total lag {total}",
        described.members.len()
    );
    let show = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.topic.clone(),
                r.partition.to_string(),
                show(r.committed),
                r.end.to_string(),
                show(r.lag),
                r.member.clone(),
            ]
        })
        .collect();
    print_table(
        &["TOPIC", "PARTITION", "COMMITTED", "END", "LAG", "MEMBER"],
        &rows,
    );
}

fn reset(
    admin: &mut Admin,
    format: Format,
    group: &str,
    topics: &[String],
    to: &ResetTo,
    execute: bool,
) -> Result<(), AdminError> {
    let coordinator = admin.group_coordinator(group)?;
    ensure_inactive(admin, coordinator, group)?;
    let committed = committed(admin, coordinator, group)?;
    let partitions: BTreeSet<(String, i32)> = if topics.is_empty() {
        committed.keys().cloned().collect()
    } else {
        let mut all = BTreeSet::new();
        for (name, t) in admin.existing_topics(topics)? {
            all.extend(
                t.partitions
                    .iter()
                    .map(|p| (name.clone(), p.partition_index)),
            );
        }
        all
    };
    let targets = reset_targets(admin, to, &partitions, &committed)?;
    if execute {
        commit(admin, coordinator, group, &targets)?;
    }
    print_reset(format, group, execute, &committed, &targets);
    Ok(())
}

/// Where `to` puts each partition: within its earliest and latest offsets.
fn reset_targets(
    admin: &mut Admin,
    to: &ResetTo,
    partitions: &BTreeSet<(String, i32)>,
    committed: &BTreeMap<(String, i32), i64>,
) -> Result<BTreeMap<(String, i32), i64>, AdminError> {
    let earliest = list_offsets(admin, partitions, |_| EARLIEST, READ_UNCOMMITTED)?;
    let latest = list_offsets(admin, partitions, |_| LATEST, READ_UNCOMMITTED)?;
    let within = |tp: &(String, i32), offset: i64| {
        let (low, high) = (
            earliest.get(tp).copied().unwrap_or(0),
            latest.get(tp).copied().unwrap_or(0),
        );
        offset.clamp(low, high.max(low))
    };
    Ok(if to.to_earliest {
        earliest.clone()
    } else if to.to_latest {
        latest.clone()
    } else if let Some(offset) = to.to_offset {
        partitions
            .iter()
            .map(|tp| (tp.clone(), within(tp, offset)))
            .collect()
    } else if let Some(when) = &to.to_datetime {
        let millis = parse_millis(when).map_err(AdminError::Protocol)?;
        let found = list_offsets(admin, partitions, |_| millis, READ_UNCOMMITTED)?;
        // No record at or after it: the end.
        found
            .into_iter()
            .map(|(tp, o)| {
                let end = latest.get(&tp).copied().unwrap_or(0);
                (tp, if o < 0 { end } else { o })
            })
            .collect()
    } else {
        let by = to.shift_by.unwrap_or(0);
        partitions
            .iter()
            .map(|tp| {
                let from = committed
                    .get(tp)
                    .copied()
                    .unwrap_or_else(|| latest.get(tp).copied().unwrap_or(0));
                (tp.clone(), within(tp, from.saturating_add(by)))
            })
            .collect()
    })
}

/// Offsets are reset only in a group without members, as kafka-consumer-groups refuses.
fn ensure_inactive(admin: &mut Admin, coordinator: i32, group: &str) -> Result<(), AdminError> {
    let described = describe_group(admin, coordinator, group)?;
    match described.state.as_deref() {
        Some("Empty") | Some("Dead") | None if described.members.is_empty() => Ok(()),
        state => Err(AdminError::Refused {
            code: shoal_protocol::ResponseError::NonEmptyGroup.code(),
            message: format!(
                "Assignments can only be reset if the group '{group}' is inactive, but the \
                 current state is {}.",
                state.unwrap_or("unknown")
            ),
        }),
    }
}

/// Each partition's previous and new offset.
fn print_reset(
    format: Format,
    group: &str,
    execute: bool,
    committed: &BTreeMap<(String, i32), i64>,
    targets: &BTreeMap<(String, i32), i64>,
) {
    match format {
        Format::Json => {
            let list: Vec<_> = targets
                .iter()
                .map(|((t, p), o)| {
                    json!({"topic": t, "partition": p, "previous": committed.get(&(t.clone(), *p)), "offset": o})
                })
                .collect();
            println!(
                "{}",
                json!({"group": group, "executed": execute, "offsets": list})
            );
        }
        Format::Table => {
            let rows: Vec<Vec<String>> = targets
                .iter()
                .map(|((t, p), o)| {
                    let previous = committed
                        .get(&(t.clone(), *p))
                        .map_or("-".to_string(), |c| c.to_string());
                    vec![t.clone(), p.to_string(), previous, o.to_string()]
                })
                .collect();
            print_table(&["TOPIC", "PARTITION", "PREVIOUS", "NEW OFFSET"], &rows);
            if !execute {
                println!("(dry run: --execute commits these)");
            }
        }
    }
}
