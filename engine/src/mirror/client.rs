//! A minimal Kafka client for reading a mirror's source cluster: one connection, one request
//! in flight, bounded responses and timeouts. Framing and codecs are `shoal_protocol`'s.

use std::time::Duration;

use futures_lite::AsyncWriteExt;
use glommio::net::TcpStream;
use kafka_protocol::protocol::Request;
use shoal_protocol::frame;
use shoal_wal::within;

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

    /// Sends `request` at `version` and decodes its answer; the source may take `extra_wait`
    /// beyond the client's timeout (a long-polling Fetch).
    pub async fn call<R: Request>(
        &mut self,
        version: i16,
        request: &R,
        extra_wait: Duration,
    ) -> Result<R::Response, EngineError> {
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        let expected = self.next_correlation_id;
        let request_frame = frame::encode_request(version, expected, CLIENT_ID, request)
            .map_err(|e| EngineError::Encode(e.to_string()))?;
        let max = self.max_response_bytes;
        let stream = &mut self.stream;
        let io = async {
            stream.write_all(&request_frame).await?;
            stream.flush().await?;
            frame::read_frame(stream, max).await
        };
        let answer = within(self.timeout + extra_wait, io)
            .await
            .ok_or_else(|| EngineError::Source(format!("{}: request timed out", self.address)))?
            .map_err(|e| EngineError::Source(format!("{}: {e}", self.address)))?;
        let (correlation_id, response) = frame::decode_response::<R::Response>(answer, version)
            .map_err(|e| EngineError::Source(format!("{}: {e}", self.address)))?;
        if correlation_id != expected {
            return Err(EngineError::Source(format!(
                "{}: correlation id {correlation_id}, expected {expected}",
                self.address
            )));
        }
        Ok(response)
    }
}
