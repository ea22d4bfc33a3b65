//! A minimal Kafka client for reading a mirror's source cluster: one connection, one request
//! in flight, bounded responses and timeouts. Speaks the Kafka codecs for standard APIs and
//! the generated mirror codecs for LastMirroredOffsets.

use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use shoal_wal::within;

use crate::diskless::wire::{WireDecode, WireEncode};
use crate::EngineError;

const CLIENT_ID: &str = "shoal-mirror";

pub struct SourceClient {
    stream: TcpStream,
    next_correlation_id: i32,
    timeout: Duration,
    max_response_bytes: usize,
    pub address: String,
}

impl SourceClient {
    /// Connects to the first answering address of `bootstrap` (comma-separated host:port).
    pub async fn connect(
        bootstrap: &str,
        timeout: Duration,
        max_response_bytes: usize,
    ) -> Result<SourceClient, EngineError> {
        let mut last_error = String::from("no address in bootstrap.servers");
        for address in bootstrap
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
        {
            match within(timeout, TcpStream::connect(address)).await {
                Some(Ok(stream)) => {
                    let _ = stream.set_nodelay(true);
                    return Ok(SourceClient {
                        stream,
                        next_correlation_id: 0,
                        timeout,
                        max_response_bytes,
                        address: address.to_string(),
                    });
                }
                Some(Err(e)) => last_error = format!("{address}: {e}"),
                None => last_error = format!("{address}: connect timed out"),
            }
        }
        Err(EngineError::Source(last_error))
    }

    /// Sends a standard Kafka request and decodes its answer.
    pub async fn call<Req: Encodable, Resp: Decodable>(
        &mut self,
        api_key: ApiKey,
        version: i16,
        request: &Req,
        extra_wait: Duration,
    ) -> Result<Resp, EngineError> {
        let header_version = api_key.request_header_version(version);
        let mut body = BytesMut::new();
        request
            .encode(&mut body, version)
            .map_err(|e| EngineError::Encode(e.to_string()))?;
        let mut frame = self.frame_header(api_key as i16, version, header_version)?;
        frame.extend_from_slice(&body);
        let mut answer = self.round_trip(frame, extra_wait).await?;
        ResponseHeader::decode(&mut answer, api_key.response_header_version(version))
            .map_err(|e| EngineError::Source(format!("response header: {e}")))?;
        Resp::decode(&mut answer, version)
            .map_err(|e| EngineError::Source(format!("{api_key:?} response: {e}")))
    }

    /// Sends one of the flexible mirror/diskless requests (version 0, header v2).
    pub async fn call_wire<Req: WireEncode, Resp: WireDecode>(
        &mut self,
        api_key: i16,
        request: &Req,
    ) -> Result<Resp, EngineError> {
        let mut frame = self.frame_header(api_key, 0, 2)?;
        request.encode(&mut frame);
        let mut answer = self.round_trip(frame, Duration::ZERO).await?;
        ResponseHeader::decode(&mut answer, 1)
            .map_err(|e| EngineError::Source(format!("response header: {e}")))?;
        Resp::decode(&mut answer).map_err(|e| EngineError::Source(format!("response: {e}")))
    }

    fn frame_header(
        &mut self,
        api_key: i16,
        version: i16,
        header_version: i16,
    ) -> Result<BytesMut, EngineError> {
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        let header = RequestHeader::default()
            .with_request_api_key(api_key)
            .with_request_api_version(version)
            .with_correlation_id(self.next_correlation_id)
            .with_client_id(Some(StrBytes::from_static_str(CLIENT_ID)));
        let mut frame = BytesMut::new();
        frame.put_i32(0);
        header
            .encode(&mut frame, header_version)
            .map_err(|e| EngineError::Encode(e.to_string()))?;
        Ok(frame)
    }

    async fn round_trip(
        &mut self,
        mut frame: BytesMut,
        extra_wait: Duration,
    ) -> Result<Bytes, EngineError> {
        let size = (frame.len() - 4) as i32;
        frame[0..4].copy_from_slice(&size.to_be_bytes());
        let expected = self.next_correlation_id;
        let timeout = self.timeout + extra_wait;
        let io = async {
            self.stream.write_all(&frame).await?;
            self.stream.flush().await?;
            let mut size = [0u8; 4];
            self.stream.read_exact(&mut size).await?;
            let size = i32::from_be_bytes(size);
            if size < 4 || size as usize > self.max_response_bytes {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("response of {size} bytes is out of bounds"),
                ));
            }
            let mut answer = vec![0u8; size as usize];
            self.stream.read_exact(&mut answer).await?;
            Ok(Bytes::from(answer))
        };
        let answer = within(timeout, io)
            .await
            .ok_or_else(|| EngineError::Source(format!("{}: request timed out", self.address)))?
            .map_err(|e| EngineError::Source(format!("{}: {e}", self.address)))?;
        let correlation_id = i32::from_be_bytes(answer[0..4].try_into().expect("4 bytes"));
        if correlation_id != expected {
            return Err(EngineError::Source(format!(
                "correlation id {correlation_id}, expected {expected}"
            )));
        }
        // The response header decoders read the correlation id again.
        Ok(answer)
    }
}
