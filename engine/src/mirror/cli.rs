//! `shoal mirror ...`: the operator's commands, spoken to any broker over the KIP-1279 APIs.
//! A plain blocking client: one request, one answer, readable output.

use std::time::Duration;

use clap::Subcommand;
use shoal_protocol::client::BlockingClient;
use shoal_protocol::mirror as m;
use shoal_protocol::ErrorCode;

use crate::kafka::error_codes;
use crate::EngineError;

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

pub fn run(bootstrap: &str, command: MirrorCommand) -> Result<(), EngineError> {
    let mut conn = connect(bootstrap)?;
    match command {
        MirrorCommand::Create {
            name,
            source,
            settings,
        } => {
            let mut configs = vec![m::create_mirror_request::MirrorConfig {
                name: "bootstrap.servers".into(),
                value: Some(source),
            }];
            for setting in settings {
                let (key, value) = setting.split_once('=').ok_or_else(|| {
                    EngineError::Config(format!("--set {setting}: expected KEY=VALUE"))
                })?;
                configs.push(m::create_mirror_request::MirrorConfig {
                    name: key.into(),
                    value: Some(value.into()),
                });
            }
            let request = m::CreateMirrorRequest {
                mirror_name: name.clone(),
                configs,
            };
            let r: m::CreateMirrorResponse = conn.call(0, &request)?;
            check(r.error_code, r.error_message.as_deref())?;
            println!("created mirror {name}");
        }
        MirrorCommand::Add { name, topics } => {
            let request = m::AddTopicsToMirrorRequest {
                mirror_name: name,
                topics: topics
                    .into_iter()
                    .map(|name| m::add_topics_to_mirror_request::TopicData { name })
                    .collect(),
            };
            let r: m::AddTopicsToMirrorResponse = conn.call(0, &request)?;
            check(r.error_code, None)?;
            topic_results(
                r.topics.iter().map(|t| (&t.name, t.error_code)),
                "mirroring",
            )?;
        }
        MirrorCommand::Remove { name, topics } => {
            let request = m::RemoveTopicsFromMirrorRequest {
                mirror_name: name,
                topics: topics
                    .into_iter()
                    .map(|name| m::remove_topics_from_mirror_request::TopicData { name })
                    .collect(),
            };
            let r: m::RemoveTopicsFromMirrorResponse = conn.call(0, &request)?;
            check(r.error_code, None)?;
            topic_results(r.topics.iter().map(|t| (&t.name, t.error_code)), "removed")?;
        }
        MirrorCommand::List => {
            let r: m::ListMirrorsResponse = conn.call(0, &m::ListMirrorsRequest {})?;
            check(r.error_code, None)?;
            println!("{:<24} {:<32} {:>6}", "MIRROR", "SOURCE", "TOPICS");
            for mirror in r.mirrors {
                println!(
                    "{:<24} {:<32} {:>6}",
                    mirror.mirror_name, mirror.source_bootstrap, mirror.topic_count
                );
            }
        }
        MirrorCommand::Describe { names } => {
            let request = m::DescribeMirrorsRequest {
                mirror_names: names,
                include_authorized_operations: false,
            };
            let r: m::DescribeMirrorsResponse = conn.call(0, &request)?;
            println!(
                "{:<16} {:<24} {:>9} {:>14} {:>14} {:>10}  STATE",
                "MIRROR", "TOPIC", "PARTITION", "SOURCE", "DESTINATION", "LAG"
            );
            for mirror in r.mirrors {
                if mirror.error_code != error_codes::NONE {
                    println!("{:<16} {}", mirror.mirror_name, describe(mirror.error_code));
                    continue;
                }
                for topic in mirror.topics {
                    for p in topic.partitions {
                        println!(
                            "{:<16} {:<24} {:>9} {:>14} {:>14} {:>10}  {}",
                            mirror.mirror_name,
                            topic.topic_name,
                            p.partition_index,
                            p.source_offset,
                            p.destination_offset,
                            p.lag,
                            p.state
                        );
                    }
                }
            }
        }
        MirrorCommand::Pause { topics } => {
            let request = m::PauseMirrorTopicsRequest {
                topics: topics
                    .into_iter()
                    .map(|topic_name| m::pause_mirror_topics_request::TopicData {
                        topic_id: uuid::Uuid::nil(),
                        topic_name,
                    })
                    .collect(),
            };
            let r: m::PauseMirrorTopicsResponse = conn.call(0, &request)?;
            check(r.error_code, None)?;
            topic_results(r.topics.iter().map(|t| (&t.name, t.error_code)), "paused")?;
        }
        MirrorCommand::Resume { topics } => {
            let request = m::ResumeMirrorTopicsRequest {
                topics: topics
                    .into_iter()
                    .map(|topic_name| m::resume_mirror_topics_request::TopicData {
                        topic_id: uuid::Uuid::nil(),
                        topic_name,
                    })
                    .collect(),
            };
            let r: m::ResumeMirrorTopicsResponse = conn.call(0, &request)?;
            check(r.error_code, None)?;
            topic_results(r.topics.iter().map(|t| (&t.name, t.error_code)), "resumed")?;
        }
    }
    Ok(())
}

fn check(error_code: i16, message: Option<&str>) -> Result<(), EngineError> {
    if error_code == error_codes::NONE {
        return Ok(());
    }
    Err(EngineError::Config(format!(
        "the broker refused: {}{}",
        describe(error_code),
        message.map(|m| format!(": {m}")).unwrap_or_default()
    )))
}

fn topic_results<'a>(
    results: impl Iterator<Item = (&'a String, i16)>,
    done: &str,
) -> Result<(), EngineError> {
    let mut failed = 0;
    for (name, code) in results {
        if code == error_codes::NONE {
            println!("{name}: {done}");
        } else {
            failed += 1;
            println!("{name}: {}", describe(code));
        }
    }
    if failed > 0 {
        return Err(EngineError::Config(format!("{failed} topic(s) refused")));
    }
    Ok(())
}

/// "error 136 (UnknownMirror)": the number scripts match, the name people read.
fn describe(code: i16) -> String {
    match ErrorCode::from_code(code) {
        Some(e) => format!("error {code} ({})", e.name()),
        None => "no error".to_string(),
    }
}

/// Answers larger than this are refused (a describe of many partitions stays far below).
const RESPONSE_MAX_BYTES: usize = 64 << 20;
const TIMEOUT: Duration = Duration::from_secs(30);

fn connect(bootstrap: &str) -> Result<BlockingClient, EngineError> {
    BlockingClient::connect(bootstrap, "shoal-mirror-cli", TIMEOUT, RESPONSE_MAX_BYTES)
        .map_err(|e| EngineError::Config(format!("cannot reach {bootstrap}: {e}")))
}
