//! The admin CLI's connections to brokers, secured and logged in as Kafka's client settings
//! say (`security.protocol`, `sasl.*`, `ssl.*`): TLS with rustls, then SASL (PLAIN, SCRAM or
//! OAUTHBEARER) before the first request, and again before the session ends.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use rustls::{ClientConnection, StreamOwned};
use shoal_auth::ClientSecurity;
use shoal_net::tls_client::kafka_client_tls;
use shoal_protocol::client::BlockingClient;
use shoal_protocol::ProtocolError;

use crate::error::AdminError;

const CLIENT_ID: &str = "shoal-admin";
const TIMEOUT: Duration = Duration::from_secs(30);
const RESPONSE_MAX_BYTES: usize = 256 << 20;

/// One connection to a broker: plain TCP or TLS over it.
pub enum Connection {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

/// A client on `address` (host:port), secured and logged in as `security` says.
pub fn open(
    address: &str,
    security: &ClientSecurity,
) -> Result<BlockingClient<Connection>, AdminError> {
    let failed = |why: String| AdminError::Connect(format!("{address}: {why}"));
    let tcp = TcpStream::connect(address).map_err(|e| failed(e.to_string()))?;
    tcp.set_read_timeout(Some(TIMEOUT))
        .and_then(|()| tcp.set_write_timeout(Some(TIMEOUT)))
        .and_then(|()| tcp.set_nodelay(true))
        .map_err(|e| failed(e.to_string()))?;
    let connection = match security.uses_tls() {
        true => {
            let (config, name) =
                kafka_client_tls(security, address).map_err(|e| failed(e.to_string()))?;
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
    let credential = shoal_net::oauth_token::credential_source(security);
    client.log_in(security, credential).map_err(|e| match e {
        // A refused login is the broker's answer (exit 1), as any other refusal.
        ProtocolError::LoginRefused { code, message } => AdminError::Refused {
            code,
            message: message.unwrap_or_default(),
        },
        other => failed(other.to_string()),
    })?;
    Ok(client)
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
