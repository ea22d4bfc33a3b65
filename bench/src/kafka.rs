//! A blocking Kafka protocol connection: framed requests encoded with kafka-protocol, and the
//! few requests the load generator needs.

use std::io::{Read, Write};
use std::net::TcpStream;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, RequestHeader, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, StrBytes};

use crate::BenchError;

pub const CLIENT_ID: &str = "shoal-bench";

pub fn connect(bootstrap: &str) -> Result<TcpStream, BenchError> {
    let stream = TcpStream::connect(bootstrap)
        .map_err(|e| BenchError::Connect(format!("{bootstrap}: {e}")))?;
    stream.set_nodelay(true).ok();
    Ok(stream)
}

/// Encodes a whole request frame (size, header, body).
pub fn encode_request<T: Encodable + HeaderVersion>(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &T,
) -> Result<Bytes, BenchError> {
    let header = RequestHeader::default()
        .with_request_api_key(api_key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str(CLIENT_ID)));
    let header_version = T::header_version(version);
    let mut buf = BytesMut::with_capacity(256);
    buf.put_i32(0);
    header
        .encode(&mut buf, header_version)
        .map_err(|e| BenchError::Protocol(e.to_string()))?;
    body.encode(&mut buf, version)
        .map_err(|e| BenchError::Protocol(e.to_string()))?;
    let size = (buf.len() - 4) as i32;
    buf[0..4].copy_from_slice(&size.to_be_bytes());
    Ok(buf.freeze())
}

/// Reads one response frame and returns its correlation id and body.
pub fn read_response(
    stream: &mut impl Read,
    api_key: ApiKey,
    version: i16,
) -> Result<(i32, Bytes), BenchError> {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).map_err(BenchError::Io)?;
    let size = i32::from_be_bytes(size);
    if !(0..=(256 << 20)).contains(&size) {
        return Err(BenchError::Protocol(format!("response size {size}")));
    }
    let mut frame = vec![0u8; size as usize];
    stream.read_exact(&mut frame).map_err(BenchError::Io)?;
    let mut frame = Bytes::from(frame);
    let header = ResponseHeader::decode(&mut frame, api_key.response_header_version(version))
        .map_err(|e| BenchError::Protocol(e.to_string()))?;
    Ok((header.correlation_id, frame))
}

pub fn decode<T: Decodable>(body: &mut Bytes, version: i16) -> Result<T, BenchError> {
    T::decode(body, version).map_err(|e| BenchError::Protocol(e.to_string()))
}

/// Creates the topic; one that exists already is fine.
pub fn create_topic(bootstrap: &str, topic: &str, partitions: i32) -> Result<(), BenchError> {
    let mut stream = connect(bootstrap)?;
    let version = 5;
    let request = CreateTopicsRequest::default()
        .with_topics(vec![CreatableTopic::default()
            .with_name(TopicName(StrBytes::from_string(topic.to_string())))
            .with_num_partitions(partitions)
            .with_replication_factor(1)])
        .with_timeout_ms(30_000);
    let frame = encode_request(ApiKey::CreateTopics, version, 1, &request)?;
    stream.write_all(&frame).map_err(BenchError::Io)?;
    let (_, mut body) = read_response(&mut stream, ApiKey::CreateTopics, version)?;
    let response: kafka_protocol::messages::CreateTopicsResponse = decode(&mut body, version)?;
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
pub fn check_broker(bootstrap: &str, topic: &str, partitions: i32) -> Result<(), BenchError> {
    use kafka_protocol::messages::{
        ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse,
    };
    let mut stream = connect(bootstrap)?;
    let frame = encode_request(ApiKey::ApiVersions, 0, 1, &ApiVersionsRequest::default())?;
    stream.write_all(&frame).map_err(BenchError::Io)?;
    let (_, mut body) = read_response(&mut stream, ApiKey::ApiVersions, 0)?;
    let versions: ApiVersionsResponse = decode(&mut body, 0)?;
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
        kafka_protocol::messages::metadata_request::MetadataRequestTopic::default()
            .with_name(Some(TopicName(StrBytes::from_string(topic.to_string())))),
    ]));
    let frame = encode_request(ApiKey::Metadata, 1, 2, &request)?;
    stream.write_all(&frame).map_err(BenchError::Io)?;
    let (_, mut body) = read_response(&mut stream, ApiKey::Metadata, 1)?;
    let metadata: MetadataResponse = decode(&mut body, 1)?;
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
