//! The few Kafka requests the load generator needs, framed by `shoal_protocol` over blocking
//! sockets.

use std::io::Read;
use std::net::TcpStream;

use bytes::Bytes;
use kafka_protocol::protocol::{Decodable, HeaderVersion, Request, StrBytes};
use shoal_protocol::client::BlockingClient;
use shoal_protocol::messages::create_topics_request::CreatableTopic;
use shoal_protocol::messages::{ApiKey, CreateTopicsRequest, TopicName};
use shoal_protocol::{frame, ProtocolError};

use crate::secure::{Connection, Security};
use crate::BenchError;

/// The client.id of every request, set once from `--client-id` before the first one.
static CLIENT_ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();

pub fn set_client_id(id: &str) {
    let _ = CLIENT_ID.set(id.to_string());
}

fn client_id() -> &'static str {
    CLIENT_ID.get().map(String::as_str).unwrap_or("shoal-bench")
}

/// A Kafka connection, secured and logged in as the flags say.
pub fn connect(bootstrap: &str, security: &Security) -> Result<Connection, BenchError> {
    Connection::open(bootstrap, security)
}

/// A plain TCP connection (the metrics endpoint).
pub fn tcp_connect(address: &str) -> Result<TcpStream, BenchError> {
    let stream =
        TcpStream::connect(address).map_err(|e| BenchError::Connect(format!("{address}: {e}")))?;
    stream.set_nodelay(true).ok();
    Ok(stream)
}

/// The largest answer the generator accepts (a Fetch is bounded by its max bytes).
const RESPONSE_MAX_BYTES: usize = 256 << 20;

/// Encodes a whole request frame (size, header, body).
pub fn encode_request<R: Request>(
    version: i16,
    correlation_id: i32,
    body: &R,
) -> Result<Bytes, BenchError> {
    frame::encode_request(version, correlation_id, client_id(), body).map_err(protocol)
}

/// Reads one response frame and decodes it.
pub fn read_response<R: Decodable + HeaderVersion>(
    stream: &mut impl Read,
    version: i16,
) -> Result<R, BenchError> {
    let answer = frame::read_frame_blocking(stream, RESPONSE_MAX_BYTES).map_err(protocol)?;
    let (_, response) = frame::decode_response(answer, version).map_err(protocol)?;
    Ok(response)
}

fn protocol(e: ProtocolError) -> BenchError {
    match e {
        ProtocolError::Io(e) => BenchError::Io(e),
        other => BenchError::Protocol(other.to_string()),
    }
}

fn client(bootstrap: &str, security: &Security) -> Result<BlockingClient<Connection>, BenchError> {
    let connection = connect(bootstrap, security)?;
    Ok(BlockingClient::over(
        connection,
        client_id(),
        RESPONSE_MAX_BYTES,
    ))
}

/// Creates the topic; one that exists already is fine.
pub fn create_topic(
    bootstrap: &str,
    security: &Security,
    topic: &str,
    partitions: i32,
) -> Result<(), BenchError> {
    let request = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_num_partitions(partitions)
            .with_replication_factor(1)])
        .with_timeout_ms(30_000);
    let response = client(bootstrap, security)?
        .call(5, &request)
        .map_err(protocol)?;
    for t in response.topics {
        // 36: TOPIC_ALREADY_EXISTS
        if t.error_code != 0 && t.error_code != 36 {
            return Err(BenchError::Protocol(format!(
                "CreateTopics {topic}: error {}",
                t.error_code
            )));
        }
    }
    Ok(())
}

/// Checks that the broker serves the request versions the generator sends, and that every
/// partition of `topic` is led by the broker we talk to (the generator does not route).
pub fn check_broker(
    bootstrap: &str,
    security: &Security,
    topic: &str,
    partitions: i32,
) -> Result<(), BenchError> {
    use shoal_protocol::messages::{ApiVersionsRequest, MetadataRequest};
    let mut client = client(bootstrap, security)?;
    let versions = client
        .call(0, &ApiVersionsRequest::default())
        .map_err(protocol)?;
    let needed = [
        (ApiKey::Produce, 7),
        (ApiKey::Fetch, 11),
        (ApiKey::ListOffsets, 1),
        (ApiKey::Metadata, 1),
        (ApiKey::CreateTopics, 5),
    ];
    for (api, version) in needed {
        let served = versions.api_keys.iter().any(|k| {
            k.api_key == api as i16 && k.min_version <= version && version <= k.max_version
        });
        if !served {
            return Err(BenchError::Protocol(format!(
                "the broker does not serve {api:?} v{version}"
            )));
        }
    }
    let request = MetadataRequest::default().with_topics(Some(vec![
        shoal_protocol::messages::metadata_request::MetadataRequestTopic::default()
            .with_name(Some(TopicName(StrBytes::from_string(topic.to_string())))),
    ]));
    let metadata = client.call(1, &request).map_err(protocol)?;
    let Some(t) = metadata.topics.first() else {
        return Err(BenchError::Protocol(format!("no metadata for {topic}")));
    };
    if t.error_code != 0 {
        return Err(BenchError::Protocol(format!(
            "topic {topic}: error {} (create it with --create)",
            t.error_code
        )));
    }
    if (t.partitions.len() as i32) < partitions {
        return Err(BenchError::Protocol(format!(
            "topic {topic} has {} partitions, fewer than --partitions {partitions}",
            t.partitions.len()
        )));
    }
    let leaders: std::collections::BTreeSet<i32> =
        t.partitions.iter().map(|p| p.leader_id.0).collect();
    if leaders.len() > 1 {
        return Err(BenchError::Usage(format!(
            "{topic}'s partitions have several leaders {leaders:?}; shoal-bench sends \
             everything to {bootstrap}, so run one instance per broker"
        )));
    }
    Ok(())
}
