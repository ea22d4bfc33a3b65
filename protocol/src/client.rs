//! A blocking client for tools (the benchmark, the `shoal mirror` CLI): one connection, one
//! request at a time, bounded answers and a read timeout.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use kafka_protocol::protocol::Request;
use shoal_auth::ClientSecurity;

use crate::frame::{decode_response, encode_request, read_frame_blocking};
use crate::sasl_login::{self, Caller};
use crate::ProtocolError;

pub struct BlockingClient<S = TcpStream> {
    stream: S,
    client_id: String,
    next_correlation_id: i32,
    max_response_bytes: usize,
}

impl BlockingClient<TcpStream> {
    /// Connects to the first address of `bootstrap` (host:port, comma-separated).
    pub fn connect(
        bootstrap: &str,
        client_id: &str,
        timeout: Duration,
        max_response_bytes: usize,
    ) -> Result<BlockingClient, ProtocolError> {
        let address = bootstrap.split(',').next().unwrap_or(bootstrap).trim();
        let stream = TcpStream::connect(address)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_nodelay(true)?;
        Ok(BlockingClient::over(stream, client_id, max_response_bytes))
    }
}

impl<S: Read + Write> BlockingClient<S> {
    /// A client on a connection the caller opened (and secured).
    pub fn over(stream: S, client_id: &str, max_response_bytes: usize) -> BlockingClient<S> {
        BlockingClient {
            stream,
            client_id: client_id.to_string(),
            next_correlation_id: 0,
            max_response_bytes,
        }
    }

    /// Sends `request` at `version` and waits for its answer.
    pub fn call<R: Request>(
        &mut self,
        version: i16,
        request: &R,
    ) -> Result<R::Response, ProtocolError> {
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        let expected = self.next_correlation_id;
        let frame = encode_request(version, expected, &self.client_id, request)?;
        self.stream.write_all(&frame)?;
        let answer = read_frame_blocking(&mut self.stream, self.max_response_bytes)?;
        let (got, response) = decode_response::<R::Response>(answer, version)?;
        if got != expected {
            return Err(ProtocolError::CorrelationMismatch { got, expected });
        }
        Ok(response)
    }
}

impl<S: Read + Write> BlockingClient<S> {
    /// Logs in as `security` says when it names SASL; nothing otherwise.
    pub fn log_in(&mut self, security: &ClientSecurity) -> Result<(), ProtocolError> {
        let Some(mechanism) = security.sasl_mechanism.filter(|_| security.uses_sasl()) else {
            return Ok(());
        };
        let (user, password) = (&security.sasl_username, &security.sasl_password);
        futures_lite::future::block_on(sasl_login::log_in(self, mechanism, user, password))
    }
}

/// The blocking call as a future that is ready when it returns, for the shared login.
impl<S: Read + Write> Caller for BlockingClient<S> {
    async fn call<R: Request>(
        &mut self,
        version: i16,
        request: &R,
    ) -> Result<R::Response, ProtocolError> {
        BlockingClient::call(self, version, request)
    }
}
