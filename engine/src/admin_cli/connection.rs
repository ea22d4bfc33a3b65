//! The admin CLI's connections to brokers, secured and logged in as Kafka's client settings
//! say (`security.protocol`, `sasl.*`, `ssl.*`): TLS with rustls, then SASL (PLAIN or SCRAM)
//! before the first request.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
use kafka_protocol::protocol::StrBytes;
use rustls::{ClientConnection, StreamOwned};
use shoal_auth::client_login::ClientLogin;
use shoal_mirror::SourceSecurity;
use shoal_protocol::client::BlockingClient;

use super::AdminError;
use crate::security::client_tls::client_tls;

const CLIENT_ID: &str = "shoal-admin";
const TIMEOUT: Duration = Duration::from_secs(30);
const RESPONSE_MAX_BYTES: usize = 256 << 20;
const SASL_HANDSHAKE_VERSION: i16 = 1;
const SASL_AUTHENTICATE_VERSION: i16 = 2;

/// One connection to a broker: plain TCP or TLS over it.
pub enum Connection {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

/// A client on `address` (host:port), secured and logged in as `security` says.
pub fn open(
    address: &str,
    security: &SourceSecurity,
) -> Result<BlockingClient<Connection>, AdminError> {
    let failed = |why: String| AdminError::Connect(format!("{address}: {why}"));
    let tcp = TcpStream::connect(address).map_err(|e| failed(e.to_string()))?;
    tcp.set_read_timeout(Some(TIMEOUT))
        .and_then(|()| tcp.set_write_timeout(Some(TIMEOUT)))
        .and_then(|()| tcp.set_nodelay(true))
        .map_err(|e| failed(e.to_string()))?;
    let connection = match security.uses_tls() {
        true => {
            let (config, name) = client_tls(security, address).map_err(failed)?;
            let tls = ClientConnection::new(config, name).map_err(|e| failed(e.to_string()))?;
            let mut stream = StreamOwned::new(tls, tcp);
            // The handshake now, so a refused certificate reads as a connection failure.
            while stream.conn.is_handshaking() {
                stream
                    .conn
                    .complete_io(&mut stream.sock)
                    .map_err(|e| failed(format!("TLS: {e}")))?;
            }
            Connection::Tls(Box::new(stream))
        }
        false => Connection::Plain(tcp),
    };
    let mut client = BlockingClient::over(connection, CLIENT_ID, RESPONSE_MAX_BYTES);
    if security.uses_sasl() {
        log_in(&mut client, security).map_err(|e| match e {
            AdminError::Protocol(why) => failed(why),
            refused => refused,
        })?;
    }
    Ok(client)
}

/// SaslHandshake, then SaslAuthenticate until the mechanism is done.
fn log_in(
    client: &mut BlockingClient<Connection>,
    security: &SourceSecurity,
) -> Result<(), AdminError> {
    let protocol = |e: shoal_protocol::ProtocolError| AdminError::Protocol(e.to_string());
    let mechanism = security.sasl_mechanism.as_str();
    let handshake = SaslHandshakeRequest::default()
        .with_mechanism(StrBytes::from_string(mechanism.to_string()));
    let answer = client
        .call(SASL_HANDSHAKE_VERSION, &handshake)
        .map_err(protocol)?;
    super::check(
        answer.error_code,
        Some(&format!(
            "the broker does not take SASL {mechanism}; it takes {:?}",
            answer
                .mechanisms
                .iter()
                .map(|m| m.as_str())
                .collect::<Vec<_>>()
        )),
    )?;
    let (mut login, mut token) =
        ClientLogin::start(mechanism, &security.sasl_username, &security.sasl_password)
            .map_err(|e| AdminError::Protocol(format!("SASL: {}", e.0)))?;
    loop {
        let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
        let answer = client
            .call(SASL_AUTHENTICATE_VERSION, &request)
            .map_err(protocol)?;
        super::check(
            answer.error_code,
            answer.error_message.as_ref().map(|m| m.as_str()),
        )?;
        match login
            .next(&answer.auth_bytes)
            .map_err(|e| AdminError::Protocol(format!("SASL: {}", e.0)))?
        {
            Some(next) => token = next,
            None => return Ok(()),
        }
    }
}

impl Read for Connection {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Connection::Plain(tcp) => tcp.read(buf),
            Connection::Tls(tls) => tls.read(buf),
        }
    }
}

impl Write for Connection {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Connection::Plain(tcp) => tcp.write(buf),
            Connection::Tls(tls) => tls.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Connection::Plain(tcp) => tcp.flush(),
            Connection::Tls(tls) => tls.flush(),
        }
    }
}
