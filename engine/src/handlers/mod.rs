//! One file per Kafka API. `handle` dispatches a parsed request to its handler and frames
//! the answer; a handler never fails the connection, it answers with Kafka error codes.

mod api_versions;
mod create_topics;
mod delete_topics;
mod fetch;
mod list_offsets;
mod metadata;
mod produce;
mod topics;

use std::rc::Rc;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestHeader};
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

pub struct ParsedRequest {
    pub api_key: ApiKey,
    pub header: RequestHeader,
    pub body: Bytes,
}

/// Splits a frame into its header and body. Only framing errors fail here; an unsupported
/// version is answered by `handle`.
pub fn parse_request(mut frame: Bytes) -> Result<ParsedRequest, EngineError> {
    let (api_key, header) = codec::decode_header(&mut frame)?;
    if !versions::is_supported(api_key, header.request_api_version)
        && api_key != ApiKey::ApiVersions
    {
        return Err(EngineError::MalformedRequest(format!(
            "{api_key:?} v{} is not supported (see ApiVersions)",
            header.request_api_version
        )));
    }
    Ok(ParsedRequest {
        api_key,
        header,
        body: frame,
    })
}

/// Answers one request. `None` means no response is sent (Produce with acks=0) or the
/// request could not be decoded, in which case the client times out as with Kafka.
pub async fn handle(broker: &Broker, request: ParsedRequest) -> Option<Bytes> {
    let ParsedRequest {
        api_key,
        header,
        mut body,
    } = request;
    let version = header.request_api_version;
    let correlation_id = header.correlation_id;
    macro_rules! decoded {
        () => {
            match codec::decode_body(&mut body, version) {
                Ok(decoded) => decoded,
                Err(e) => {
                    tracing::warn!(?api_key, version, error = %e, "undecodable request body");
                    return None;
                }
            }
        };
    }
    macro_rules! answer {
        ($module:ident) => {{
            let response = $module::handle(broker, decoded!(), version).await;
            codec::encode_response(api_key, version, correlation_id, &response)
        }};
    }
    let encoded = match api_key {
        ApiKey::ApiVersions => {
            let response = api_versions::handle(version);
            // An unsupported ApiVersions version is answered in v0, as Kafka does.
            let reply_version = if versions::is_supported(api_key, version) {
                version
            } else {
                0
            };
            codec::encode_response(api_key, reply_version, correlation_id, &response)
        }
        ApiKey::Metadata => answer!(metadata),
        ApiKey::CreateTopics => answer!(create_topics),
        ApiKey::DeleteTopics => answer!(delete_topics),
        ApiKey::Produce => {
            let response = produce::handle(broker, decoded!(), version).await?;
            codec::encode_response(api_key, version, correlation_id, &response)
        }
        ApiKey::Fetch => answer!(fetch),
        ApiKey::ListOffsets => answer!(list_offsets),
        other => {
            tracing::warn!(api_key = ?other, "request for an API that parse_request admitted");
            return None;
        }
    };
    match encoded {
        Ok(frame) => Some(frame),
        Err(e) => {
            tracing::error!(?api_key, version, error = %e, "cannot encode response");
            None
        }
    }
}
