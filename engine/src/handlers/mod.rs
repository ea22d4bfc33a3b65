//! One file per Kafka API. `handle` dispatches a parsed request to its handler and frames
//! the answer; a handler never fails the connection, it answers with Kafka error codes.

mod api_versions;
mod create_topics;
mod delete_records;
mod delete_topics;
mod fetch;
mod init_producer_id;
mod list_offsets;
mod metadata;
mod produce;
mod topics;

use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, CreateTopicsRequest, DeleteRecordsRequest, DeleteTopicsRequest, FetchRequest,
    InitProducerIdRequest, ListOffsetsRequest, MetadataRequest, ProduceRequest,
};
use kafka_protocol::protocol::Encodable;
use shoal_shards::Shard;

use crate::config::BrokerConfig;
use crate::kafka::{codec, versions};
use crate::EngineError;

/// What every handler on a shard works with.
pub struct Broker {
    pub shard: Rc<Shard>,
    pub config: Arc<BrokerConfig>,
    pub advertised_host: String,
    pub advertised_port: i32,
}

impl Broker {
    pub fn new(shard: Rc<Shard>, config: Arc<BrokerConfig>) -> Broker {
        let (advertised_host, advertised_port) = config.advertised();
        Broker {
            shard,
            config,
            advertised_host,
            advertised_port,
        }
    }
}

/// A request whose header and body both decoded.
pub struct ParsedRequest {
    pub api_key: ApiKey,
    pub version: i16,
    pub correlation_id: i32,
    pub body: RequestBody,
}

pub enum RequestBody {
    ApiVersions,
    Metadata(MetadataRequest),
    CreateTopics(CreateTopicsRequest),
    DeleteTopics(DeleteTopicsRequest),
    Produce(ProduceRequest),
    Fetch(FetchRequest),
    ListOffsets(ListOffsetsRequest),
    DeleteRecords(DeleteRecordsRequest),
    InitProducerId(InitProducerIdRequest),
}

/// Decodes a whole frame. Any error here is a malformed request and closes the connection;
/// an unsupported ApiVersions version decodes fine and is answered by `handle`.
pub fn parse_request(mut frame: Bytes) -> Result<ParsedRequest, EngineError> {
    let (api_key, header) = codec::decode_header(&mut frame)?;
    let version = header.request_api_version;
    if !versions::is_supported(api_key, version) && api_key != ApiKey::ApiVersions {
        return Err(EngineError::MalformedRequest(format!(
            "{api_key:?} v{version} is not supported (see ApiVersions)"
        )));
    }
    let body = match api_key {
        // Its body may be of a version we do not know; only the header matters.
        ApiKey::ApiVersions => RequestBody::ApiVersions,
        ApiKey::Metadata => RequestBody::Metadata(codec::decode_body(&mut frame, version)?),
        ApiKey::CreateTopics => RequestBody::CreateTopics(codec::decode_body(&mut frame, version)?),
        ApiKey::DeleteTopics => RequestBody::DeleteTopics(codec::decode_body(&mut frame, version)?),
        ApiKey::Produce => RequestBody::Produce(codec::decode_body(&mut frame, version)?),
        ApiKey::Fetch => RequestBody::Fetch(codec::decode_body(&mut frame, version)?),
        ApiKey::ListOffsets => RequestBody::ListOffsets(codec::decode_body(&mut frame, version)?),
        ApiKey::DeleteRecords => {
            RequestBody::DeleteRecords(codec::decode_body(&mut frame, version)?)
        }
        ApiKey::InitProducerId => {
            RequestBody::InitProducerId(codec::decode_body(&mut frame, version)?)
        }
        other => {
            return Err(EngineError::MalformedRequest(format!(
                "{other:?} is not supported (see ApiVersions)"
            )))
        }
    };
    Ok(ParsedRequest {
        api_key,
        version,
        correlation_id: header.correlation_id,
        body,
    })
}

/// Answers one request. `None` means no response is sent: Produce with acks=0.
pub async fn handle(broker: &Broker, request: ParsedRequest) -> Option<Bytes> {
    let ParsedRequest {
        api_key,
        version,
        correlation_id,
        body,
    } = request;
    let encoded = match body {
        RequestBody::ApiVersions => {
            let response = api_versions::handle(version);
            // An unsupported ApiVersions version is answered in v0, as Kafka does.
            let reply_version = if versions::is_supported(api_key, version) {
                version
            } else {
                0
            };
            codec::encode_response(api_key, reply_version, correlation_id, &response)
        }
        RequestBody::Metadata(r) => encode(
            api_key,
            version,
            correlation_id,
            metadata::handle(broker, r, version).await,
        ),
        RequestBody::CreateTopics(r) => encode(
            api_key,
            version,
            correlation_id,
            create_topics::handle(broker, r, version).await,
        ),
        RequestBody::DeleteTopics(r) => encode(
            api_key,
            version,
            correlation_id,
            delete_topics::handle(broker, r, version).await,
        ),
        RequestBody::Produce(r) => {
            let response = produce::handle(broker, r, version).await?;
            encode(api_key, version, correlation_id, response)
        }
        RequestBody::Fetch(r) => encode(
            api_key,
            version,
            correlation_id,
            fetch::handle(broker, r, version).await,
        ),
        RequestBody::ListOffsets(r) => encode(
            api_key,
            version,
            correlation_id,
            list_offsets::handle(broker, r, version).await,
        ),
        RequestBody::DeleteRecords(r) => encode(
            api_key,
            version,
            correlation_id,
            delete_records::handle(broker, r, version).await,
        ),
        RequestBody::InitProducerId(r) => encode(
            api_key,
            version,
            correlation_id,
            init_producer_id::handle(broker, r, version).await,
        ),
    };
    match encoded {
        Ok(frame) => Some(frame),
        Err(e) => {
            tracing::error!(?api_key, version, error = %e, "cannot encode response");
            None
        }
    }
}

fn encode<T: Encodable>(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    response: T,
) -> Result<Bytes, EngineError> {
    codec::encode_response(api_key, version, correlation_id, &response)
}
