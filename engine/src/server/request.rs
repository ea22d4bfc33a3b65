//! A request frame turned into what the connection does with it: run a handler, send an
//! error answer straight back (an API or version Shoal does not serve), or close the
//! connection (a frame that cannot be read, or an unserved request that cannot carry an error).

use std::rc::Rc;
use std::time::Instant;

use bytes::Bytes;
use shoal_protocol::messages::ApiKey;
use shoal_protocol::{frame, ResponseError};

use crate::context::ApiSpec;
use crate::context::ClientInfo;
use crate::handlers::api_versions;
use crate::handlers::registry::{self, DecodedRequest};
use crate::kafka::unsupported;
use crate::quotas::ConnectionQuotas;
use crate::security::Session;
use crate::EngineError;

pub enum Incoming {
    /// Answered without a handler.
    Answered {
        api_key: i16,
        frame: Bytes,
    },
    Handle(Box<ParsedRequest>),
}

/// A served request whose header and body both decoded.
pub struct ParsedRequest {
    pub spec: &'static ApiSpec,
    pub version: i16,
    pub correlation_id: i32,
    pub client: ClientInfo,
    pub body: DecodedRequest,
    /// What the decoded request occupies beyond its frame.
    pub decoded_bytes: usize,
    /// Until when the client is throttled for sending it (its produce bytes).
    pub throttled_until: Option<Instant>,
}

pub fn parse(
    mut frame: Bytes,
    session: &Rc<Session>,
    quotas: &Rc<ConnectionQuotas>,
) -> Result<Incoming, EngineError> {
    let header = frame::decode_request_header(&mut frame).map_err(malformed)?;
    let (api_key, version, correlation_id) = (
        header.request_api_key,
        header.request_api_version,
        header.correlation_id,
    );
    let unsupported = ResponseError::UnsupportedVersion.code();
    let answered = |frame: Option<Bytes>| match frame {
        Some(frame) => Ok(Incoming::Answered { api_key, frame }),
        None => Err(EngineError::MalformedRequest(format!(
            "{} v{version} is not served (see ApiVersions)",
            registry::name_of(api_key)
        ))),
    };
    let Some(spec) = registry::spec(api_key) else {
        let known = ApiKey::try_from(api_key).ok();
        return answered(
            known.and_then(|k| unsupported::error_response(k, version, correlation_id)),
        );
    };
    if !spec.serves(version) {
        if api_key == ApiKey::ApiVersions as i16 {
            // Answered in v0 with the versions served, as Kafka does.
            let response = api_versions::response(unsupported);
            return answered(frame::encode_response(0, correlation_id, &response).ok());
        }
        return answered(spec.error_answer(version, correlation_id, unsupported));
    }
    let (body, decoded_bytes) =
        registry::decode_body(api_key, version, &mut frame).map_err(malformed)?;
    Ok(Incoming::Handle(Box::new(ParsedRequest {
        spec,
        version,
        correlation_id,
        client: ClientInfo {
            id: header
                .client_id
                .map(|c| c.as_str().to_string())
                .unwrap_or_default(),
            host: String::new(),
            session: session.clone(),
            quotas: Some(quotas.clone()),
        },
        body,
        decoded_bytes,
        throttled_until: None,
    })))
}

fn malformed(e: shoal_protocol::ProtocolError) -> EngineError {
    EngineError::MalformedRequest(e.to_string())
}
