//! Connections as a secured Kafka client makes them: TLS (rustls) and a SASL login (PLAIN, SCRAM
//! or OAUTHBEARER), with the settings, TLS configuration and login every client of Shoal's shares
//! (`shoal_auth::ClientSecurity`, `shoal_net::tls_client`, `shoal_protocol::sasl_login`), so
//! the cost of SSL and SASL_SSL can be measured against PLAINTEXT in one run. A TLS connection
//! splits into a reader and a writer for the generator's two threads: they share the rustls
//! state behind a mutex that is never held across socket I/O.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rustls::ClientConnection;
use rustls_pki_types::ServerName;
use shoal_auth::{name_value, properties, ClientSecurity};
use shoal_net::tls_client::kafka_client_tls;
use shoal_protocol::client::BlockingClient;

use crate::BenchError;

/// Kafka's client security settings, as flags.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct Security {
    /// PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
    #[arg(long, default_value = "PLAINTEXT")]
    pub security_protocol: String,
    /// A CA (PEM) to trust for the broker's certificate besides the system's.
    #[arg(long)]
    pub ssl_ca_file: Option<PathBuf>,
    /// The name the broker's certificate must carry (default: the bootstrap host).
    #[arg(long)]
    pub ssl_server_name: Option<String>,
    /// PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (with the username and password flags), for
    /// SASL_PLAINTEXT and SASL_SSL; OAUTHBEARER through -X sasl.mechanism=OAUTHBEARER and
    /// the sasl.oauthbearer.* settings.
    #[arg(long, default_value = "PLAIN")]
    pub sasl_mechanism: String,
    #[arg(long, default_value = "")]
    pub sasl_username: String,
    #[arg(long, default_value = "")]
    pub sasl_password: String,
    /// Any other Kafka client security setting, name=value (repeatable), as the admin
    /// commands take them: ssl.certificate.location, ssl.key.location, sasl.jaas.config.
    #[arg(short = 'X', long = "client-config", value_parser = name_value)]
    pub client_config: Vec<(String, String)>,
    /// A file of those settings, one name=value a line, as Kafka's tools take it; -X and the
    /// flags above override it (--security-protocol unless left at PLAINTEXT). Keeps a
    /// password off the command line.
    #[arg(long)]
    pub command_config: Option<PathBuf>,
}

impl Security {
    /// The flags as Kafka's settings: the --command-config file's, then the flags', then -X.
    pub fn client_security(&self) -> Result<ClientSecurity, BenchError> {
        let mut settings = match &self.command_config {
            Some(path) => std::fs::read_to_string(path)
                .map_err(|e| e.to_string())
                .and_then(|text| properties(&text))
                .map_err(|e| BenchError::Usage(format!("{}: {e}", path.display())))?,
            None => Vec::new(),
        };
        let mut set = |name: &str, value: String| settings.push((name.to_string(), value));
        if self.command_config.is_none() || self.security_protocol != "PLAINTEXT" {
            set("security.protocol", self.security_protocol.clone());
        }
        if let Some(ca) = &self.ssl_ca_file {
            set("ssl.ca.location", ca.display().to_string());
        }
        if !self.sasl_username.is_empty() {
            set("sasl.mechanism", self.sasl_mechanism.clone());
            set("sasl.username", self.sasl_username.clone());
            set("sasl.password", self.sasl_password.clone());
        }
        settings.extend(self.client_config.iter().cloned());
        ClientSecurity::from_client_settings(settings.iter().map(|(n, v)| (n.as_str(), v.as_str())))
            .map_err(BenchError::Usage)
    }

    pub fn check(&self) -> Result<(), BenchError> {
        self.client_security().map(|_| ())
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
        let settings = security.client_security()?;
        let tcp = TcpStream::connect(address)
            .map_err(|e| BenchError::Connect(format!("{address}: {e}")))?;
        tcp.set_nodelay(true).ok();
        let mut connection = match settings.uses_tls() {
            true => tls(address, tcp, &settings, security.ssl_server_name.as_deref())?,
            false => Connection::Plain(tcp),
        };
        let credential = shoal_net::oauth_token::credential_source(&settings);
        BlockingClient::over(&mut connection, "shoal-bench", 1 << 20)
            .log_in(&settings, credential)
            .map_err(|e| BenchError::Protocol(format!("{address}: {e}")))?;
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

fn tls(
    address: &str,
    mut tcp: TcpStream,
    security: &ClientSecurity,
    server_name: Option<&str>,
) -> Result<Connection, BenchError> {
    let failed = |why: String| BenchError::Connect(format!("{address}: TLS: {why}"));
    let (config, name) = kafka_client_tls(security, address).map_err(|e| failed(e.to_string()))?;
    let name = match server_name {
        Some(other) => {
            ServerName::try_from(other.to_string()).map_err(|e| failed(e.to_string()))?
        }
        None => name,
    };
    let mut connection = ClientConnection::new(config, name).map_err(|e| failed(e.to_string()))?;
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
