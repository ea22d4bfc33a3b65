//! Request header parsing and response framing (size prefix + header + body).

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable};

use crate::diskless::messages as diskless;
use crate::diskless::wire::{self, WireDecode, WireEncode};
use crate::EngineError;

/// Which API a request is for: one the Kafka codec knows, or a KIP-1164 Diskless* API
/// (keys 93 and up, generated from `engine/schemas/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Kafka(ApiKey),
    Diskless(i16),
    /// KIP-1279 mirror APIs (keys 1000 and up, generated from `engine/schemas/mirror/`).
    Mirror(i16),
}

impl Api {
    pub fn key(&self) -> i16 {
        match self {
            Api::Kafka(key) => *key as i16,
            Api::Diskless(key) | Api::Mirror(key) => *key,
        }
    }
}

/// Decodes the request header; `frame` is left at the start of the body.
pub fn decode_header(frame: &mut Bytes) -> Result<(Api, RequestHeader), EngineError> {
    if frame.len() < 8 {
        return Err(EngineError::MalformedRequest(format!(
            "a {}-byte frame cannot hold a request header",
            frame.len()
        )));
    }
    let raw_key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    if diskless::API_KEYS.contains(&raw_key) {
        // The Diskless* APIs are flexible from version 0: request header v2.
        let header = RequestHeader::decode(frame, 2)
            .map_err(|e| EngineError::MalformedRequest(format!("request header: {e}")))?;
        return Ok((Api::Diskless(raw_key), header));
    }
    if crate::mirror::messages::API_KEYS.contains(&raw_key) {
        let header = RequestHeader::decode(frame, 2)
            .map_err(|e| EngineError::MalformedRequest(format!("request header: {e}")))?;
        return Ok((Api::Mirror(raw_key), header));
    }
    let api_key = ApiKey::try_from(raw_key)
        .map_err(|_| EngineError::MalformedRequest(format!("unknown API key {raw_key}")))?;
    let header_version = if api_key.valid_versions().max >= version && version >= 0 {
        api_key.request_header_version(version)
    } else if api_key == ApiKey::ApiVersions {
        // A newer client's ApiVersions: Kafka reads it with the flexible (v2) header.
        2
    } else {
        1
    };
    let header = RequestHeader::decode(frame, header_version)
        .map_err(|e| EngineError::MalformedRequest(format!("request header: {e}")))?;
    Ok((Api::Kafka(api_key), header))
}

pub fn decode_wire_body<T: WireDecode>(body: &mut Bytes) -> Result<T, EngineError> {
    T::decode(body).map_err(|e| EngineError::MalformedRequest(format!("request body: {e}")))
}

/// Frames a Diskless* response: size prefix, flexible response header (v1), body.
pub fn encode_wire_response<T: WireEncode + ?Sized>(correlation_id: i32, body: &T) -> Bytes {
    let mut buf = BytesMut::with_capacity(64);
    buf.put_i32(0);
    buf.put_i32(correlation_id);
    wire::put_empty_tagged_fields(&mut buf);
    body.encode(&mut buf);
    let size = (buf.len() - 4) as i32;
    buf[0..4].copy_from_slice(&size.to_be_bytes());
    buf.freeze()
}

pub fn decode_body<T: Decodable>(body: &mut Bytes, version: i16) -> Result<T, EngineError> {
    T::decode(body, version)
        .map_err(|e| EngineError::MalformedRequest(format!("request body: {e}")))
}

/// Encodes a whole response frame, size prefix included.
pub fn encode_response<T: Encodable>(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &T,
) -> Result<Bytes, EngineError> {
    let header_version = api_key.response_header_version(version);
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    let size = header
        .compute_size(header_version)
        .and_then(|h| body.compute_size(version).map(|b| h + b))
        .map_err(|e| EngineError::Encode(e.to_string()))?;
    let mut buf = BytesMut::with_capacity(4 + size);
    buf.put_i32(size as i32);
    header
        .encode(&mut buf, header_version)
        .map_err(|e| EngineError::Encode(e.to_string()))?;
    body.encode(&mut buf, version)
        .map_err(|e| EngineError::Encode(e.to_string()))?;
    Ok(buf.freeze())
}
