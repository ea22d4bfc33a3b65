//! `shoal topic list|create|describe|delete|alter`.

use std::collections::BTreeSet;

use kafka_protocol::protocol::StrBytes;
use serde_json::json;
use shoal_protocol::config_codes::{ConfigResource, ConfigSource};
use shoal_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use shoal_protocol::messages::delete_topics_request::DeleteTopicState;
use shoal_protocol::messages::describe_configs_request::DescribeConfigsResource;
use shoal_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use shoal_protocol::messages::{
    CreateTopicsRequest, DeleteTopicsRequest, DescribeConfigsRequest,
    IncrementalAlterConfigsRequest, TopicName,
};

use super::{check, name_value, offsets, print_table, Admin, AdminError, Format, Target};

const CREATE_TOPICS_VERSION: i16 = 7;
const DELETE_TOPICS_VERSION: i16 = 6;
const DESCRIBE_CONFIGS_VERSION: i16 = 4;
const INCREMENTAL_ALTER_CONFIGS_VERSION: i16 = 1;
const TIMEOUT_MS: i32 = 30_000;

#[derive(clap::Subcommand, Debug)]
pub enum TopicCommand {
    /// Every topic and its partition count.
    List,
    /// Create topics.
    Create {
        topics: Vec<String>,
        /// Partitions of each topic.
        #[arg(short, long, default_value_t = 1)]
        partitions: i32,
        /// A topic config, name=value (repeatable).
        #[arg(short = 'c', long = "topic-config", value_parser = name_value)]
        configs: Vec<(String, String)>,
    },
    /// Each topic's partitions with their leaders, and the configs set on it.
    Describe { topics: Vec<String> },
    /// Delete topics.
    Delete { topics: Vec<String> },
    /// Set (name=value) or delete (name) topic configs.
    Alter {
        topic: String,
        /// A config to set, name=value (repeatable).
        #[arg(long, value_parser = name_value)]
        set: Vec<(String, String)>,
        /// A config to delete, back to the broker's default (repeatable).
        #[arg(long)]
        delete: Vec<String>,
    },
}

pub fn run(target: &Target, command: TopicCommand) -> Result<(), AdminError> {
    let (mut admin, format) = (target.connect()?, target.format);
    match command {
        TopicCommand::List => list(&mut admin, format),
        TopicCommand::Create {
            topics,
            partitions,
            configs,
        } => create(&mut admin, format, &topics, partitions, &configs),
        TopicCommand::Describe { topics } => describe(&mut admin, format, &topics),
        TopicCommand::Delete { topics } => delete(&mut admin, format, &topics),
        TopicCommand::Alter { topic, set, delete } => alter(&mut admin, &topic, &set, &delete),
    }
}

fn list(admin: &mut Admin, format: Format) -> Result<(), AdminError> {
    let metadata = admin.metadata(None)?;
    let mut topics: Vec<(String, usize, bool)> = metadata
        .topics
        .iter()
        .filter(|t| t.error_code == 0)
        .filter_map(|t| {
            let name = t.name.as_ref()?.0.to_string();
            Some((name, t.partitions.len(), t.is_internal))
        })
        .collect();
    topics.sort();
    match format {
        Format::Json => {
            let list: Vec<_> = topics
                .iter()
                .map(|(n, p, i)| json!({"name": n, "partitions": p, "internal": i}))
                .collect();
            println!("{}", json!(list));
        }
        Format::Table => {
            let rows: Vec<Vec<String>> = topics
                .iter()
                .map(|(n, p, _)| vec![n.clone(), p.to_string()])
                .collect();
            print_table(&["NAME", "PARTITIONS"], &rows);
        }
    }
    Ok(())
}

fn create(
    admin: &mut Admin,
    format: Format,
    topics: &[String],
    partitions: i32,
    configs: &[(String, String)],
) -> Result<(), AdminError> {
    let request = CreateTopicsRequest::default()
        .with_timeout_ms(TIMEOUT_MS)
        .with_topics(
            topics
                .iter()
                .map(|name| {
                    CreatableTopic::default()
                        .with_name(TopicName(StrBytes::from_string(name.clone())))
                        .with_num_partitions(partitions)
                        .with_replication_factor(-1)
                        .with_configs(
                            configs
                                .iter()
                                .map(|(n, v)| {
                                    CreatableTopicConfig::default()
                                        .with_name(StrBytes::from_string(n.clone()))
                                        .with_value(Some(StrBytes::from_string(v.clone())))
                                })
                                .collect(),
                        )
                })
                .collect(),
        );
    let answer = admin.call(CREATE_TOPICS_VERSION, &request)?;
    let outcomes: Vec<(String, i16, String)> = answer
        .topics
        .iter()
        .map(|t| {
            let message = t.error_message.as_ref().map(|m| m.to_string());
            (
                t.name.0.to_string(),
                t.error_code,
                message.unwrap_or_default(),
            )
        })
        .collect();
    report(format, &outcomes, "created")
}

fn delete(admin: &mut Admin, format: Format, topics: &[String]) -> Result<(), AdminError> {
    let request = DeleteTopicsRequest::default()
        .with_timeout_ms(TIMEOUT_MS)
        .with_topics(
            topics
                .iter()
                .map(|n| {
                    DeleteTopicState::default()
                        .with_name(Some(TopicName(StrBytes::from_string(n.clone()))))
                })
                .collect(),
        );
    let answer = admin.call(DELETE_TOPICS_VERSION, &request)?;
    let outcomes: Vec<(String, i16, String)> = answer
        .responses
        .iter()
        .map(|t| {
            let name = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
            let message = t.error_message.as_ref().map(|m| m.to_string());
            (name, t.error_code, message.unwrap_or_default())
        })
        .collect();
    report(format, &outcomes, "deleted")
}

/// Prints each topic's outcome; the first refusal is the command's.
fn report(
    format: Format,
    outcomes: &[(String, i16, String)],
    done: &str,
) -> Result<(), AdminError> {
    match format {
        Format::Json => {
            let list: Vec<_> = outcomes
                .iter()
                .map(|(n, code, message)| json!({"name": n, "error_code": code, "error": message}))
                .collect();
            println!("{}", json!(list));
        }
        Format::Table => {
            let rows: Vec<Vec<String>> = outcomes
                .iter()
                .map(|(n, code, message)| {
                    let outcome = match code {
                        0 => done.to_string(),
                        _ => AdminError::Refused {
                            code: *code,
                            message: message.clone(),
                        }
                        .to_string(),
                    };
                    vec![n.clone(), outcome]
                })
                .collect();
            print_table(&["TOPIC", "OUTCOME"], &rows);
        }
    }
    match outcomes.iter().find(|(_, code, _)| *code != 0) {
        Some((_, code, message)) => check(*code, Some(message)),
        None => Ok(()),
    }
}

fn describe(admin: &mut Admin, format: Format, topics: &[String]) -> Result<(), AdminError> {
    let existing = admin.existing_topics(topics)?;
    let configs = admin.call(
        DESCRIBE_CONFIGS_VERSION,
        &DescribeConfigsRequest::default().with_resources(
            topics
                .iter()
                .map(|n| {
                    DescribeConfigsResource::default()
                        .with_resource_type(ConfigResource::Topic as i8)
                        .with_resource_name(StrBytes::from_string(n.clone()))
                        .with_configuration_keys(None)
                })
                .collect(),
        ),
    )?;
    let mut described = Vec::new();
    for (name, topic) in existing {
        let mut partitions: Vec<(i32, i32)> = topic
            .partitions
            .iter()
            .map(|p| (p.partition_index, p.leader_id.0))
            .collect();
        partitions.sort();
        let set: Vec<(String, String)> = configs
            .results
            .iter()
            .filter(|r| r.resource_name.as_str() == name)
            .flat_map(|r| &r.configs)
            .filter(|c| c.config_source == ConfigSource::DynamicTopic as i8)
            .map(|c| {
                let value = c.value.as_ref().map(|v| v.to_string()).unwrap_or_default();
                (c.name.to_string(), value)
            })
            .collect();
        // A table's positions are extra: one who may not read its group still gets the rest.
        let table = table_positions(admin, &name, &partitions).unwrap_or(None);
        described.push(Described {
            name,
            id: topic.topic_id,
            partitions,
            set,
            table,
        });
    }
    match format {
        Format::Json => print_json(&described),
        Format::Table => print_tables(&described),
    }
    Ok(())
}

/// Where a partition's Iceberg table stands.
struct TablePosition {
    partition: i32,
    /// The next offset the table takes.
    table_offset: i64,
    /// Committed records past it.
    lag: i64,
}

/// What `describe` found of one topic.
struct Described {
    name: String,
    id: uuid::Uuid,
    /// (partition, leader), in partition order.
    partitions: Vec<(i32, i32)>,
    /// The configs it sets itself.
    set: Vec<(String, String)>,
    /// Its Iceberg table's positions, when it has one.
    table: Option<Vec<TablePosition>>,
}

fn print_json(described: &[Described]) {
    let list: Vec<_> = described
        .iter()
        .map(|d| {
            json!({
                "iceberg_table": d.table.as_ref().map(|positions| json!({
                    "lag": positions.iter().map(|p| p.lag).sum::<i64>(),
                    "partitions": positions.iter()
                        .map(|p| json!({"partition": p.partition,
                                        "table_offset": p.table_offset,
                                        "lag": p.lag}))
                        .collect::<Vec<_>>(),
                })),
                "name": d.name,
                "id": d.id.to_string(),
                "partitions": d.partitions.iter()
                    .map(|(p, l)| json!({"partition": p, "leader": l}))
                    .collect::<Vec<_>>(),
                "configs": d.set.iter()
                    .map(|(k, v)| (k.clone(), json!(v)))
                    .collect::<serde_json::Map<_, _>>(),
            })
        })
        .collect();
    println!("{}", json!(list));
}

fn print_tables(described: &[Described]) {
    for Described {
        name,
        id,
        partitions,
        set,
        table,
    } in described
    {
        println!("TOPIC {name} ({id}), {} partitions", partitions.len());
        let rows: Vec<Vec<String>> = partitions
            .iter()
            .map(|(p, l)| vec![p.to_string(), l.to_string()])
            .collect();
        print_table(&["PARTITION", "LEADER"], &rows);
        if !set.is_empty() {
            let rows: Vec<Vec<String>> = set
                .iter()
                .map(|(n, v)| vec![n.clone(), v.clone()])
                .collect();
            print_table(&["CONFIG", "VALUE"], &rows);
        }
        if let Some(positions) = table {
            let lag: i64 = positions.iter().map(|p| p.lag).sum();
            println!("ICEBERG TABLE: {lag} committed records not in it yet");
            let rows: Vec<Vec<String>> = positions
                .iter()
                .map(|p| {
                    vec![
                        p.partition.to_string(),
                        p.table_offset.to_string(),
                        p.lag.to_string(),
                    ]
                })
                .collect();
            print_table(&["PARTITION", "TABLE OFFSET", "LAG"], &rows);
        }
    }
}

/// Where the topic's Iceberg table stands per partition, as the table writer last committed
/// to its group (`offsets::table_group`); None for a topic without a table.
fn table_positions(
    admin: &mut Admin,
    topic: &str,
    partitions: &[(i32, i32)],
) -> Result<Option<Vec<TablePosition>>, AdminError> {
    let group = offsets::table_group(topic);
    let coordinator = admin.group_coordinator(&group)?;
    let taken = offsets::committed(admin, coordinator, &group)?;
    if !taken.keys().any(|(t, _)| t == topic) {
        return Ok(None);
    }
    let all: BTreeSet<(String, i32)> = (partitions.iter())
        .map(|(p, _)| (topic.to_string(), *p))
        .collect();
    let stable = offsets::list_offsets(admin, &all, |_| offsets::LATEST, offsets::READ_COMMITTED)?;
    Ok(Some(
        all.iter()
            .map(|key| {
                let table_offset = taken.get(key).copied().unwrap_or(0);
                TablePosition {
                    partition: key.1,
                    table_offset,
                    lag: (stable.get(key).copied().unwrap_or(0) - table_offset).max(0),
                }
            })
            .collect(),
    ))
}

fn alter(
    admin: &mut Admin,
    topic: &str,
    set: &[(String, String)],
    delete: &[String],
) -> Result<(), AdminError> {
    use shoal_protocol::config_codes::config_operation::{DELETE, SET};
    let configs = set
        .iter()
        .map(|(n, v)| (n.clone(), SET, Some(v.clone())))
        .chain(delete.iter().map(|n| (n.clone(), DELETE, None)))
        .map(|(name, op, value)| {
            AlterableConfig::default()
                .with_name(StrBytes::from_string(name))
                .with_config_operation(op)
                .with_value(value.map(StrBytes::from_string))
        })
        .collect();
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(ConfigResource::Topic as i8)
            .with_resource_name(StrBytes::from_string(topic.to_string()))
            .with_configs(configs),
    ]);
    let answer = admin.call(INCREMENTAL_ALTER_CONFIGS_VERSION, &request)?;
    for r in &answer.responses {
        check(r.error_code, r.error_message.as_ref().map(|m| m.as_str()))?;
    }
    println!("altered {topic}");
    Ok(())
}
