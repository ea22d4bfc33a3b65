//! Kafka framing, shared by the broker, the benchmark and every client Shoal runs: a 4-byte
//! big-endian size, a request or response header, then the body.

use crate::messages::{ApiKey, RequestHeader, ResponseHeader};
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};

use crate::{diskless, mirror, ProtocolError};

pub const SIZE_PREFIX_BYTES: usize = 4;

/// Whether `api_key` is one of Shoal's own APIs (Diskless*, mirror): flexible from version 0.
pub fn is_shoal_api(api_key: i16) -> bool {
    diskless::API_KEYS.contains(&api_key) || mirror::API_KEYS.contains(&api_key)
}

/// The request header version a request of this API and version is sent with.
pub fn request_header_version(api_key: i16, version: i16) -> Result<i16, ProtocolError> {
    if is_shoal_api(api_key) {
        return Ok(2);
    }
    let key = ApiKey::try_from(api_key).map_err(|_| ProtocolError::UnknownApi(api_key))?;
    Ok(if (0..=key.valid_versions().max).contains(&version) {
        key.request_header_version(version)
    } else if key == ApiKey::ApiVersions {
        // A newer client's ApiVersions: Kafka reads it with the flexible (v2) header.
        2
    } else {
        1
    })
}

/// The size a frame's prefix announces, checked against `max`.
pub fn frame_size(prefix: [u8; SIZE_PREFIX_BYTES], max: usize) -> Result<usize, ProtocolError> {
    let size = i32::from_be_bytes(prefix);
    if size < 0 || size as usize > max {
        return Err(ProtocolError::FrameSize {
            size: size as i64,
            max,
        });
    }
    Ok(size as usize)
}

/// Decodes a request's header; `frame` (without its size prefix) is left at the body.
pub fn decode_request_header(frame: &mut Bytes) -> Result<RequestHeader, ProtocolError> {
    if frame.len() < 8 {
        return Err(ProtocolError::malformed(
            "request header",
            format!("a {}-byte frame cannot hold one", frame.len()),
        ));
    }
    let api_key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let header_version = request_header_version(api_key, version)?;
    RequestHeader::decode(frame, header_version)
        .map_err(|e| ProtocolError::malformed("request header", e))
}

fn with_size_prefix(
    size: usize,
    write: impl FnOnce(&mut BytesMut) -> anyhow::Result<()>,
) -> anyhow::Result<Bytes> {
    let mut buf = BytesMut::with_capacity(SIZE_PREFIX_BYTES + size);
    buf.put_i32(size as i32);
    write(&mut buf)?;
    debug_assert_eq!(
        buf.len(),
        SIZE_PREFIX_BYTES + size,
        "computed size is exact"
    );
    Ok(buf.freeze())
}

/// A whole request frame, size prefix included.
pub fn encode_request<R: Request>(
    version: i16,
    correlation_id: i32,
    client_id: &str,
    body: &R,
) -> Result<Bytes, ProtocolError> {
    let header = RequestHeader::default()
        .with_request_api_key(R::KEY)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_string(client_id.to_string())));
    let header_version = R::header_version(version);
    let size = header
        .compute_size(header_version)
        .and_then(|h| body.compute_size(version).map(|b| h + b))
        .map_err(|e| ProtocolError::encode("request", e))?;
    with_size_prefix(size, |buf| {
        header.encode(buf, header_version)?;
        body.encode(buf, version)
    })
    .map_err(|e| ProtocolError::encode("request", e))
}

/// A whole response frame, size prefix included.
pub fn encode_response<R: Encodable + HeaderVersion>(
    version: i16,
    correlation_id: i32,
    body: &R,
) -> Result<Bytes, ProtocolError> {
    let header_version = R::header_version(version);
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    let size = header
        .compute_size(header_version)
        .and_then(|h| body.compute_size(version).map(|b| h + b))
        .map_err(|e| ProtocolError::encode("response", e))?;
    with_size_prefix(size, |buf| {
        header.encode(buf, header_version)?;
        body.encode(buf, version)
    })
    .map_err(|e| ProtocolError::encode("response", e))
}

/// Decodes a response frame (without its size prefix): its correlation id and body.
pub fn decode_response<R: Decodable + HeaderVersion>(
    mut frame: Bytes,
    version: i16,
) -> Result<(i32, R), ProtocolError> {
    let header = ResponseHeader::decode(&mut frame, R::header_version(version))
        .map_err(|e| ProtocolError::malformed("response header", e))?;
    let body =
        R::decode(&mut frame, version).map_err(|e| ProtocolError::malformed("response", e))?;
    Ok((header.correlation_id, body))
}

/// Decodes a request body of a known type at `version`.
pub fn decode_body<R: Decodable>(body: &mut Bytes, version: i16) -> Result<R, ProtocolError> {
    R::decode(body, version).map_err(|e| ProtocolError::malformed("request body", e))
}

/// Reads one frame (without its size prefix) from a blocking reader.
pub fn read_frame_blocking(
    reader: &mut impl std::io::Read,
    max: usize,
) -> Result<Bytes, ProtocolError> {
    let mut prefix = [0u8; SIZE_PREFIX_BYTES];
    reader.read_exact(&mut prefix)?;
    let mut frame = vec![0u8; frame_size(prefix, max)?];
    reader.read_exact(&mut frame)?;
    Ok(Bytes::from(frame))
}

/// Reads one frame (without its size prefix) from an async reader.
pub async fn read_frame(
    reader: &mut (impl futures_lite::AsyncRead + Unpin),
    max: usize,
) -> Result<Bytes, ProtocolError> {
    use futures_lite::AsyncReadExt;
    let mut prefix = [0u8; SIZE_PREFIX_BYTES];
    reader.read_exact(&mut prefix).await?;
    let mut frame = vec![0u8; frame_size(prefix, max)?];
    reader.read_exact(&mut frame).await?;
    Ok(Bytes::from(frame))
}

#[cfg(test)]
mod tests {
    use crate::messages::{MetadataRequest, MetadataResponse};

    use super::*;
    use crate::diskless::{DisklessDescribeFilesRequest, DisklessDescribeFilesResponse};

    #[test]
    fn requests_and_responses_round_trip_through_frames() {
        let request = DisklessDescribeFilesRequest {
            files: vec![crate::diskless::DisklessDescribeFileEntry {
                object_key: "a".into(),
            }],
            timeout_ms: 5,
        };
        let frame = encode_request(0, 9, "test", &request).unwrap();
        let mut body = frame.slice(SIZE_PREFIX_BYTES..);
        let header = decode_request_header(&mut body).unwrap();
        assert_eq!(
            (header.request_api_key, header.correlation_id),
            (DisklessDescribeFilesRequest::KEY, 9)
        );
        assert_eq!(
            decode_body::<DisklessDescribeFilesRequest>(&mut body, 0).unwrap(),
            request
        );

        let response = DisklessDescribeFilesResponse::default();
        let frame = encode_response(0, 9, &response).unwrap();
        let (id, decoded) =
            decode_response::<DisklessDescribeFilesResponse>(frame.slice(SIZE_PREFIX_BYTES..), 0)
                .unwrap();
        assert_eq!((id, decoded), (9, response));

        let frame = encode_request(12, 3, "test", &MetadataRequest::default()).unwrap();
        let mut body = frame.slice(SIZE_PREFIX_BYTES..);
        assert_eq!(
            decode_request_header(&mut body)
                .unwrap()
                .request_api_version,
            12
        );
        let frame = encode_response(12, 3, &MetadataResponse::default()).unwrap();
        assert!(decode_response::<MetadataResponse>(frame.slice(4..), 12).is_ok());
    }

    #[test]
    fn frame_sizes_are_bounded() {
        assert_eq!(frame_size(10i32.to_be_bytes(), 10).unwrap(), 10);
        assert!(frame_size(11i32.to_be_bytes(), 10).is_err());
        assert!(frame_size((-1i32).to_be_bytes(), 10).is_err());
        let mut short = Bytes::from_static(&[0, 3, 0, 1]);
        assert!(decode_request_header(&mut short).is_err());
    }
}
