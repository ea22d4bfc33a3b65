//! `shoal mirror ...`: the operator's commands, spoken to any broker over the KIP-1279 APIs,
//! on a connection secured as the other admin commands' are.

use clap::Subcommand;
use serde_json::json;
use shoal_protocol::mirror as m;
use shoal_protocol::ErrorCode;

use super::{check, print_table, Admin, AdminError, Format, Target};
use shoal_protocol::codes as error_codes;

/// Every mirror API is at version 0.
const VERSION: i16 = 0;

#[derive(Subcommand, Debug)]
pub enum MirrorCommand {
    /// Create a mirror of a source cluster.
    Create {
        name: String,
        /// The source cluster's bootstrap servers (host:port,...).
        #[arg(long)]
        source: String,
        /// More settings, e.g. --set mirror.fetch.wait.max.ms=200.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        settings: Vec<String>,
    },
    /// Start mirroring source topics into this cluster.
    Add { name: String, topics: Vec<String> },
    /// Stop mirroring topics and make them writable here (failover).
    Remove { name: String, topics: Vec<String> },
    /// List mirrors.
    List,
    /// Per-partition state and lag of mirrors (all when none named).
    Describe { names: Vec<String> },
    /// Stop fetching for mirror topics; they stay read-only.
    Pause { topics: Vec<String> },
    /// Continue fetching paused mirror topics.
    Resume { topics: Vec<String> },
}

pub fn run(target: &Target, command: MirrorCommand) -> Result<(), AdminError> {
    let (mut admin, format) = (target.connect()?, target.format);
    match command {
        MirrorCommand::Create {
            name,
            source,
            settings,
        } => create(&mut admin, name, source, settings),
        MirrorCommand::Add { name, topics } => {
            let request = m::AddTopicsToMirrorRequest {
                mirror_name: name,
                topics: topics
                    .into_iter()
                    .map(|name| m::add_topics_to_mirror_request::TopicData { name })
                    .collect(),
            };
            let r: m::AddTopicsToMirrorResponse = admin.call(VERSION, &request)?;
            check(r.error_code, None)?;
            let results = r.topics.iter().map(|t| (&t.name, t.error_code));
            topic_results(results, "mirroring", format)
        }
        MirrorCommand::Remove { name, topics } => {
            let request = m::RemoveTopicsFromMirrorRequest {
                mirror_name: name,
                topics: topics
                    .into_iter()
                    .map(|name| m::remove_topics_from_mirror_request::TopicData { name })
                    .collect(),
            };
            let r: m::RemoveTopicsFromMirrorResponse = admin.call(VERSION, &request)?;
            check(r.error_code, None)?;
            topic_results(
                r.topics.iter().map(|t| (&t.name, t.error_code)),
                "removed",
                format,
            )
        }
        MirrorCommand::List => list(&mut admin, format),
        MirrorCommand::Describe { names } => describe_mirrors(&mut admin, names, format),
        MirrorCommand::Pause { topics } => pause(&mut admin, topics, format),
        MirrorCommand::Resume { topics } => resume(&mut admin, topics, format),
    }
}

/// Stops fetching for mirror topics; they stay read-only.
fn pause(admin: &mut Admin, topics: Vec<String>, format: Format) -> Result<(), AdminError> {
    let request = m::PauseMirrorTopicsRequest {
        topics: topics
            .into_iter()
            .map(|topic_name| m::pause_mirror_topics_request::TopicData {
                topic_id: uuid::Uuid::nil(),
                topic_name,
            })
            .collect(),
    };
    let r: m::PauseMirrorTopicsResponse = admin.call(VERSION, &request)?;
    check(r.error_code, None)?;
    topic_results(
        r.topics.iter().map(|t| (&t.name, t.error_code)),
        "paused",
        format,
    )
}

fn resume(admin: &mut Admin, topics: Vec<String>, format: Format) -> Result<(), AdminError> {
    let request = m::ResumeMirrorTopicsRequest {
        topics: topics
            .into_iter()
            .map(|topic_name| m::resume_mirror_topics_request::TopicData {
                topic_id: uuid::Uuid::nil(),
                topic_name,
            })
            .collect(),
    };
    let r: m::ResumeMirrorTopicsResponse = admin.call(VERSION, &request)?;
    check(r.error_code, None)?;
    topic_results(
        r.topics.iter().map(|t| (&t.name, t.error_code)),
        "resumed",
        format,
    )
}

fn create(
    admin: &mut Admin,
    name: String,
    source: String,
    settings: Vec<String>,
) -> Result<(), AdminError> {
    let mut configs = vec![m::create_mirror_request::MirrorConfig {
        name: "bootstrap.servers".into(),
        value: Some(source),
    }];
    for setting in settings {
        let (key, value) = setting
            .split_once('=')
            .ok_or_else(|| AdminError::Protocol(format!("--set {setting}: expected KEY=VALUE")))?;
        configs.push(m::create_mirror_request::MirrorConfig {
            name: key.into(),
            value: Some(value.into()),
        });
    }
    let request = m::CreateMirrorRequest {
        mirror_name: name.clone(),
        configs,
    };
    let r: m::CreateMirrorResponse = admin.call(VERSION, &request)?;
    check(r.error_code, r.error_message.as_deref())?;
    println!("created mirror {name}");
    Ok(())
}

fn list(admin: &mut Admin, format: Format) -> Result<(), AdminError> {
    let r: m::ListMirrorsResponse = admin.call(VERSION, &m::ListMirrorsRequest {})?;
    check(r.error_code, None)?;
    match format {
        Format::Table => {
            let rows: Vec<Vec<String>> = r
                .mirrors
                .into_iter()
                .map(|m| vec![m.mirror_name, m.source_bootstrap, m.topic_count.to_string()])
                .collect();
            print_table(&["MIRROR", "SOURCE", "TOPICS"], &rows);
        }
        Format::Json => {
            let list: Vec<_> = r
                .mirrors
                .iter()
                .map(|m| {
                    json!({"name": m.mirror_name, "source": m.source_bootstrap,
                           "topics": m.topic_count})
                })
                .collect();
            println!("{}", json!(list));
        }
    }
    Ok(())
}

/// Per partition of each named mirror (all when none named): offsets, lag and state.
fn describe_mirrors(
    admin: &mut Admin,
    names: Vec<String>,
    format: Format,
) -> Result<(), AdminError> {
    let request = m::DescribeMirrorsRequest {
        mirror_names: names,
        include_authorized_operations: false,
    };
    let r: m::DescribeMirrorsResponse = admin.call(VERSION, &request)?;
    let mut rows = Vec::new();
    let mut refused = Vec::new();
    for mirror in r.mirrors {
        if mirror.error_code != error_codes::NONE {
            refused.push((mirror.mirror_name, mirror.error_code));
            continue;
        }
        for topic in mirror.topics {
            for p in topic.partitions {
                rows.push((mirror.mirror_name.clone(), topic.topic_name.clone(), p));
            }
        }
    }
    match format {
        Format::Table => {
            println!(
                "{:<16} {:<24} {:>9} {:>14} {:>14} {:>10}  STATE",
                "MIRROR", "TOPIC", "PARTITION", "SOURCE", "DESTINATION", "LAG"
            );
            for (name, code) in &refused {
                println!("{name:<16} {}", describe(*code));
            }
            for (mirror, topic, p) in &rows {
                println!(
                    "{:<16} {:<24} {:>9} {:>14} {:>14} {:>10}  {}",
                    mirror,
                    topic,
                    p.partition_index,
                    p.source_offset,
                    p.destination_offset,
                    p.lag,
                    p.state
                );
            }
        }
        Format::Json => {
            let partitions: Vec<_> = rows
                .iter()
                .map(|(mirror, topic, p)| {
                    json!({"mirror": mirror, "topic": topic, "partition": p.partition_index,
                           "source_offset": p.source_offset,
                           "destination_offset": p.destination_offset,
                           "lag": p.lag, "state": p.state})
                })
                .collect();
            let refused: Vec<_> = refused
                .iter()
                .map(|(name, code)| json!({"mirror": name, "error_code": code}))
                .collect();
            println!("{}", json!({"partitions": partitions, "refused": refused}));
        }
    }
    Ok(())
}

/// One line (or JSON object) a topic; refused if any topic was, with the first one's code.
fn topic_results<'a>(
    results: impl Iterator<Item = (&'a String, i16)>,
    done: &str,
    format: Format,
) -> Result<(), AdminError> {
    let results: Vec<(&String, i16)> = results.collect();
    match format {
        Format::Table => {
            for (name, code) in &results {
                match *code {
                    error_codes::NONE => println!("{name}: {done}"),
                    code => println!("{name}: {}", describe(code)),
                }
            }
        }
        Format::Json => {
            let list: Vec<_> = results
                .iter()
                .map(|(name, code)| json!({"name": name, "error_code": code}))
                .collect();
            println!("{}", json!(list));
        }
    }
    let refused: Vec<i16> = results
        .iter()
        .map(|(_, code)| *code)
        .filter(|code| *code != error_codes::NONE)
        .collect();
    match refused.first() {
        None => Ok(()),
        Some(first) => Err(AdminError::Refused {
            code: *first,
            message: format!("{} topic(s) refused", refused.len()),
        }),
    }
}

/// "error 136 (UnknownMirror)": the number scripts match, the name people read.
fn describe(code: i16) -> String {
    match ErrorCode::from_code(code) {
        Some(e) => format!("error {code} ({})", e.name()),
        None => "no error".to_string(),
    }
}
