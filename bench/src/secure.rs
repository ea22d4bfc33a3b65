//! Connections as a secured Kafka client makes them: TLS (rustls) and a SASL/PLAIN login, so
//! the cost of SSL and SASL_SSL can be measured against PLAINTEXT in one run. A TLS
//! connection splits into a reader and a writer for the generator's two threads: they share
//! the rustls state behind a mutex that is never held across socket I/O.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use kafka_protocol::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use rustls::{ClientConnection, RootCertStore};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};

use crate::kafka;
use crate::BenchError;

/// Kafka's client security settings, as flags.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct Security {
    /// PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
    #[arg(long, default_value = "PLAINTEXT")]
    pub security_protocol: String,
    /// The CA (PEM) that signed the broker's certificate, for SSL and SASL_SSL.
    #[arg(long)]
    pub ssl_ca_file: Option<PathBuf>,
    /// The name the broker's certificate must carry (default: the bootstrap host).
    #[arg(long)]
    pub ssl_server_name: Option<String>,
    /// SASL/PLAIN credentials for SASL_PLAINTEXT and SASL_SSL.
    #[arg(long, default_value = "")]
    pub sasl_username: String,
    #[arg(long, default_value = "")]
    pub sasl_password: String,
}

impl Security {
    fn uses_tls(&self) -> bool {
        matches!(self.security_protocol.as_str(), "SSL" | "SASL_SSL")
    }

    fn uses_sasl(&self) -> bool {
        matches!(
            self.security_protocol.as_str(),
            "SASL_PLAINTEXT" | "SASL_SSL"
        )
    }

    pub fn check(&self) -> Result<(), BenchError> {
        let known = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"];
        if !known.contains(&self.security_protocol.as_str()) {
            return Err(BenchError::Usage(format!(
                "--security-protocol {}: one of {known:?}",
                self.security_protocol
            )));
        }
        if self.uses_tls() && self.ssl_ca_file.is_none() {
            return Err(BenchError::Usage("TLS needs --ssl-ca-file".into()));
        }
        if self.uses_sasl() && self.sasl_username.is_empty() {
            return Err(BenchError::Usage("SASL needs --sasl-username".into()));
        }
        Ok(())
    }
}

/// A connection's halves, for a reading thread and a writing thread.
pub type Halves = (Box<dyn Read + Send>, Box<dyn Write + Send>);

/// One connection to the broker, secured and logged in as `security` says.
pub enum Connection {
    Plain(TcpStream),
    Tls(TlsReader, TlsWriter),
}

impl Connection {
    pub fn open(address: &str, security: &Security) -> Result<Connection, BenchError> {
        let tcp = TcpStream::connect(address)
            .map_err(|e| BenchError::Connect(format!("{address}: {e}")))?;
        tcp.set_nodelay(true).ok();
        let mut connection = match security.uses_tls() {
            true => tls(address, tcp, security)?,
            false => Connection::Plain(tcp),
        };
        if security.uses_sasl() {
            connection.log_in(security)?;
        }
        Ok(connection)
    }

    /// Separate halves for a reading thread and a writing thread.
    pub fn split(self) -> Result<Halves, BenchError> {
        Ok(match self {
            Connection::Plain(tcp) => {
                let reader = tcp.try_clone().map_err(BenchError::Io)?;
                (Box::new(reader), Box::new(tcp))
            }
            Connection::Tls(reader, writer) => (Box::new(reader), Box::new(writer)),
        })
    }

    fn log_in(&mut self, security: &Security) -> Result<(), BenchError> {
        let handshake =
            SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN"));
        self.write_all(&kafka::encode_request(1, 1, &handshake)?)
            .map_err(BenchError::Io)?;
        let answer: SaslHandshakeResponse = kafka::read_response(self, 1)?;
        if answer.error_code != 0 {
            return Err(BenchError::Protocol(
                "the broker does not take SASL/PLAIN".into(),
            ));
        }
        let token = format!("\0{}\0{}", security.sasl_username, security.sasl_password);
        let login = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
        self.write_all(&kafka::encode_request(2, 2, &login)?)
            .map_err(BenchError::Io)?;
        let answer: SaslAuthenticateResponse = kafka::read_response(self, 2)?;
        if answer.error_code != 0 {
            return Err(BenchError::Protocol(format!(
                "SASL login refused: error {}",
                answer.error_code
            )));
        }
        Ok(())
    }
}

impl Read for Connection {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Connection::Plain(tcp) => tcp.read(buf),
            Connection::Tls(reader, _) => reader.read(buf),
        }
    }
}

impl Write for Connection {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Connection::Plain(tcp) => tcp.write(buf),
            Connection::Tls(_, writer) => writer.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Connection::Plain(tcp) => tcp.flush(),
            Connection::Tls(_, writer) => writer.flush(),
        }
    }
}

fn tls(address: &str, mut tcp: TcpStream, security: &Security) -> Result<Connection, BenchError> {
    let failed = |why: String| BenchError::Connect(format!("{address}: TLS: {why}"));
    let ca_file = security
        .ssl_ca_file
        .as_ref()
        .ok_or_else(|| failed("no CA".into()))?;
    let mut roots = RootCertStore::empty();
    for ca in CertificateDer::pem_file_iter(ca_file).map_err(|e| failed(e.to_string()))? {
        roots
            .add(ca.map_err(|e| failed(e.to_string()))?)
            .map_err(|e| failed(e.to_string()))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| failed(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let host = match &security.ssl_server_name {
        Some(name) => name.clone(),
        None => address
            .rsplit_once(':')
            .map_or(address, |(h, _)| h)
            .to_string(),
    };
    let name = ServerName::try_from(host).map_err(|e| failed(e.to_string()))?;
    let mut connection =
        ClientConnection::new(Arc::new(config), name).map_err(|e| failed(e.to_string()))?;
    // A produce request is larger than rustls's default plaintext buffer; the writer drains
    // the records after each write anyway.
    connection.set_buffer_limit(None);
    while connection.is_handshaking() {
        connection
            .complete_io(&mut tcp)
            .map_err(|e| failed(e.to_string()))?;
    }
    let shared = Arc::new(Mutex::new(connection));
    let reader = TlsReader {
        tcp: tcp.try_clone().map_err(BenchError::Io)?,
        tls: shared.clone(),
        received: Vec::new(),
    };
    let writer = TlsWriter { tcp, tls: shared };
    Ok(Connection::Tls(reader, writer))
}

pub struct TlsReader {
    tcp: TcpStream,
    tls: Arc<Mutex<ClientConnection>>,
    /// TLS bytes read from the socket that rustls has not taken yet.
    received: Vec<u8>,
}

impl Read for TlsReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            {
                let mut tls = self.tls.lock().map_err(|_| io::Error::other("poisoned"))?;
                match tls.reader().read(out) {
                    Ok(n) => return Ok(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                if !self.received.is_empty() {
                    let taken = tls.read_tls(&mut self.received.as_slice())?;
                    self.received.drain(..taken);
                    tls.process_new_packets().map_err(io::Error::other)?;
                    continue;
                }
            }
            let mut chunk = [0u8; 64 << 10];
            let n = self.tcp.read(&mut chunk)?;
            if n == 0 {
                return Ok(0);
            }
            self.received.extend_from_slice(&chunk[..n]);
        }
    }
}

pub struct TlsWriter {
    tcp: TcpStream,
    tls: Arc<Mutex<ClientConnection>>,
}

impl Write for TlsWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut records = Vec::with_capacity(buf.len() + 256);
        {
            let mut tls = self.tls.lock().map_err(|_| io::Error::other("poisoned"))?;
            tls.writer().write_all(buf)?;
            while tls.wants_write() {
                tls.write_tls(&mut records)?;
            }
        }
        self.tcp.write_all(&records)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tcp.flush()
    }
}
