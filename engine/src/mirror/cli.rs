//! `shoal mirror ...`: the operator's commands, spoken to any broker over the KIP-1279 APIs.
//! A plain blocking client: one request, one answer, readable output.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use clap::Subcommand;
use kafka_protocol::messages::{RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

use super::messages as m;
use crate::diskless::wire::{WireDecode, WireEncode};
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
    let mut conn = Connection::open(bootstrap)?;
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
            let r: m::CreateMirrorResponse =
                conn.call(m::CreateMirrorRequest::API_KEY, &request)?;
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
            let r: m::AddTopicsToMirrorResponse =
                conn.call(m::AddTopicsToMirrorRequest::API_KEY, &request)?;
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
            let r: m::RemoveTopicsFromMirrorResponse =
                conn.call(m::RemoveTopicsFromMirrorRequest::API_KEY, &request)?;
            check(r.error_code, None)?;
            topic_results(r.topics.iter().map(|t| (&t.name, t.error_code)), "removed")?;
        }
        MirrorCommand::List => {
            let r: m::ListMirrorsResponse =
                conn.call(m::ListMirrorsRequest::API_KEY, &m::ListMirrorsRequest {})?;
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
            let r: m::DescribeMirrorsResponse =
                conn.call(m::DescribeMirrorsRequest::API_KEY, &request)?;
            println!(
                "{:<16} {:<24} {:>9} {:>14} {:>14} {:>10}  STATE",
                "MIRROR", "TOPIC", "PARTITION", "SOURCE", "DESTINATION", "LAG"
            );
            for mirror in r.mirrors {
                if mirror.error_code != error_codes::NONE {
                    println!("{:<16} error {}", mirror.mirror_name, mirror.error_code);
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
            let r: m::PauseMirrorTopicsResponse =
                conn.call(m::PauseMirrorTopicsRequest::API_KEY, &request)?;
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
            let r: m::ResumeMirrorTopicsResponse =
                conn.call(m::ResumeMirrorTopicsRequest::API_KEY, &request)?;
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
        "the broker refused: error {error_code}{}",
        message.map(|m| format!(" ({m})")).unwrap_or_default()
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
            println!("{name}: error {code}");
        }
    }
    if failed > 0 {
        return Err(EngineError::Config(format!("{failed} topic(s) refused")));
    }
    Ok(())
}

struct Connection {
    stream: TcpStream,
    correlation_id: i32,
}

impl Connection {
    fn open(bootstrap: &str) -> Result<Connection, EngineError> {
        let address = bootstrap.split(',').next().unwrap_or(bootstrap).trim();
        let stream = TcpStream::connect(address)
            .map_err(|e| EngineError::Config(format!("cannot reach {address}: {e}")))?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Connection {
            stream,
            correlation_id: 0,
        })
    }

    fn call<Req: WireEncode, Resp: WireDecode>(
        &mut self,
        api_key: i16,
        request: &Req,
    ) -> Result<Resp, EngineError> {
        self.correlation_id += 1;
        let header = RequestHeader::default()
            .with_request_api_key(api_key)
            .with_request_api_version(0)
            .with_correlation_id(self.correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("shoal-mirror-cli")));
        let mut frame = BytesMut::new();
        frame.put_i32(0);
        header
            .encode(&mut frame, 2)
            .map_err(|e| EngineError::Encode(e.to_string()))?;
        request.encode(&mut frame);
        let size = (frame.len() - 4) as i32;
        frame[0..4].copy_from_slice(&size.to_be_bytes());
        self.stream.write_all(&frame)?;
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size)?;
        let size = i32::from_be_bytes(size).clamp(0, 64 << 20) as usize;
        let mut answer = vec![0u8; size];
        self.stream.read_exact(&mut answer)?;
        let mut answer = Bytes::from(answer);
        ResponseHeader::decode(&mut answer, 1)
            .map_err(|e| EngineError::MalformedRequest(format!("response header: {e}")))?;
        Resp::decode(&mut answer).map_err(|e| EngineError::MalformedRequest(e.to_string()))
    }
}
