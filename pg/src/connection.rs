//! One connection to PostgreSQL over a glommio socket: start-up and login (SCRAM-SHA-256,
//! MD5 or cleartext, as the server asks), simple statements, and parameterised queries in
//! the extended protocol with binary values. Every exchange runs under a deadline; a
//! connection that timed out or failed mid-exchange is marked broken and must be dropped.

use std::net::ToSocketAddrs;
use std::time::Duration;

use bytes::BytesMut;
use futures::{AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256, SCRAM_SHA_256};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;
use shoal_net::within;
use shoal_net::TcpOrTls as Stream;

use crate::wire::{server_error, take_message, Param, Row};
use crate::{PgConfig, PgError, SslMode};

/// Bytes asked of the socket per read.
const READ_CHUNK_BYTES: usize = 64 * 1024;
/// How much longer than the server's statement_timeout the client waits for an answer.
const ANSWER_GRACE: Duration = Duration::from_secs(2);

pub struct Connection {
    stream: Stream,
    config: PgConfig,
    read_buffer: BytesMut,
    chunk: Vec<u8>,
    broken: bool,
    /// The server's transaction status after the last exchange: b'I' idle, b'T' in a
    /// transaction, b'E' in a failed one.
    transaction_status: u8,
}

impl Connection {
    /// Connects, logs in and sets the statement timeout, all within `connect_timeout`.
    pub async fn connect(config: &PgConfig) -> Result<Connection, PgError> {
        let address = config.address();
        let io = |source| PgError::Io {
            address: address.clone(),
            source,
        };
        let socket = address
            .to_socket_addrs()
            .map_err(io)?
            .next()
            .ok_or_else(|| PgError::Config(format!("{address} resolves to nothing")))?;
        let started = std::time::Instant::now();
        let tcp = TcpStream::connect_timeout(socket, config.connect_timeout)
            .await
            .map_err(|e| io(e.into()))?;
        let _ = tcp.set_nodelay(true);
        let left = config.connect_timeout.saturating_sub(started.elapsed());
        let stream = match within(left, secure(tcp, config)).await {
            Some(stream) => stream?,
            None => return Err(PgError::Timeout(address)),
        };
        let mut connection = Connection {
            stream,
            config: config.clone(),
            read_buffer: BytesMut::new(),
            chunk: vec![0; READ_CHUNK_BYTES],
            broken: false,
            transaction_status: b'I',
        };
        let left = config.connect_timeout.saturating_sub(started.elapsed());
        match within(left, connection.log_in()).await {
            Some(result) => result?,
            None => return Err(PgError::Timeout(address)),
        }
        let timeout_ms = config.statement_timeout.as_millis();
        connection
            .batch_execute(&format!("SET statement_timeout = {timeout_ms}"))
            .await?;
        Ok(connection)
    }

    /// True once an exchange failed in a way that leaves the protocol state unknown.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// b'I' idle, b'T' inside a transaction, b'E' inside a failed one.
    pub fn transaction_status(&self) -> u8 {
        self.transaction_status
    }

    async fn log_in(&mut self) -> Result<(), PgError> {
        let mut out = BytesMut::new();
        let parameters = [
            ("user", self.config.user.as_str()),
            ("database", self.config.database.as_str()),
            ("application_name", self.config.application_name.as_str()),
            ("client_encoding", "UTF8"),
        ];
        frontend::startup_message(parameters.iter().copied(), &mut out).map_err(protocol)?;
        self.send(&out).await?;
        let mut scram: Option<ScramSha256> = None;
        loop {
            match self.next_message().await? {
                Message::AuthenticationOk => {}
                Message::AuthenticationCleartextPassword => {
                    let password = self.password()?.to_vec();
                    self.send_password(&password).await?;
                }
                Message::AuthenticationMd5Password(body) => {
                    let hashed =
                        md5_hash(self.config.user.as_bytes(), self.password()?, body.salt());
                    self.send_password(hashed.as_bytes()).await?;
                }
                Message::AuthenticationSasl(body) => {
                    let mut offered = body.mechanisms();
                    let mut has_scram = false;
                    while let Some(mechanism) =
                        fallible_iterator::FallibleIterator::next(&mut offered).map_err(protocol)?
                    {
                        has_scram |= mechanism == SCRAM_SHA_256;
                    }
                    if !has_scram {
                        return Err(PgError::UnsupportedAuthentication(
                            "SASL without SCRAM-SHA-256",
                        ));
                    }
                    let exchange =
                        ScramSha256::new(self.password()?, ChannelBinding::unsupported());
                    let mut out = BytesMut::new();
                    frontend::sasl_initial_response(SCRAM_SHA_256, exchange.message(), &mut out)
                        .map_err(protocol)?;
                    self.send(&out).await?;
                    scram = Some(exchange);
                }
                Message::AuthenticationSaslContinue(body) => {
                    let exchange = scram.as_mut().ok_or_else(|| unexpected("SASL continue"))?;
                    exchange.update(body.data()).map_err(protocol)?;
                    let mut out = BytesMut::new();
                    frontend::sasl_response(exchange.message(), &mut out).map_err(protocol)?;
                    self.send(&out).await?;
                }
                Message::AuthenticationSaslFinal(body) => {
                    // Proves the server knew the password too.
                    let mut exchange = scram.take().ok_or_else(|| unexpected("SASL final"))?;
                    exchange.finish(body.data()).map_err(protocol)?;
                }
                Message::AuthenticationKerberosV5 => {
                    return Err(PgError::UnsupportedAuthentication("Kerberos"))
                }
                Message::AuthenticationGss | Message::AuthenticationGssContinue(_) => {
                    return Err(PgError::UnsupportedAuthentication("GSSAPI"))
                }
                Message::AuthenticationSspi => {
                    return Err(PgError::UnsupportedAuthentication("SSPI"))
                }
                Message::AuthenticationScmCredential => {
                    return Err(PgError::UnsupportedAuthentication("SCM credential"))
                }
                Message::ErrorResponse(body) => return Err(server_error(&body)),
                Message::ReadyForQuery(body) => {
                    self.transaction_status = body.status();
                    return Ok(());
                }
                Message::ParameterStatus(_) | Message::BackendKeyData(_) => {}
                Message::NoticeResponse(_) => {}
                _ => return Err(unexpected("message during start-up")),
            }
        }
    }

    fn password(&self) -> Result<&[u8], PgError> {
        self.config
            .password
            .as_deref()
            .map(str::as_bytes)
            .ok_or(PgError::PasswordRequired)
    }

    async fn send_password(&mut self, password: &[u8]) -> Result<(), PgError> {
        let mut out = BytesMut::new();
        frontend::password_message(password, &mut out).map_err(protocol)?;
        self.send(&out).await
    }

    /// Runs statements without parameters or results (DDL, SET, BEGIN/COMMIT), several
    /// separated by semicolons in one round trip.
    pub async fn batch_execute(&mut self, sql: &str) -> Result<(), PgError> {
        let mut out = BytesMut::new();
        frontend::query(sql, &mut out).map_err(protocol)?;
        self.exchange(out, false).await.map(|_| ())
    }

    /// Runs one parameterised statement and returns its rows, every value binary.
    pub async fn query(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>, PgError> {
        Ok(self.extended(sql, params).await?.0)
    }

    /// Runs one parameterised statement and returns how many rows it touched.
    pub async fn execute(&mut self, sql: &str, params: &[Param<'_>]) -> Result<u64, PgError> {
        Ok(self.extended(sql, params).await?.1)
    }

    /// Sends simple statements (no parameters, rows ignored) and a parameterised query in one
    /// write and returns the query's rows: one round trip where two would follow each other,
    /// such as taking a lock and reading what it protects. A failed statement fails the call.
    pub async fn simple_then_query(
        &mut self,
        simple: &str,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Vec<Row>, PgError> {
        let mut out = BytesMut::new();
        frontend::query(simple, &mut out).map_err(protocol)?;
        encode_extended(sql, params, &mut out)?;
        let answers = self.exchange_many(out, &[false, true]).await?;
        Ok(answers.into_iter().nth(1).expect("two answers").0)
    }

    /// Sends a parameterised statement and simple statements after it in one write, such as
    /// an INSERT and its COMMIT; returns the rows the first touched. If it fails, the error is
    /// returned (a COMMIT after it then only ends the failed transaction).
    pub async fn execute_then_simple(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
        simple: &str,
    ) -> Result<u64, PgError> {
        let mut out = BytesMut::new();
        encode_extended(sql, params, &mut out)?;
        frontend::query(simple, &mut out).map_err(protocol)?;
        let answers = self.exchange_many(out, &[true, false]).await?;
        Ok(answers[0].1)
    }

    async fn extended(
        &mut self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<(Vec<Row>, u64), PgError> {
        let mut out = BytesMut::new();
        encode_extended(sql, params, &mut out)?;
        self.exchange(out, true).await
    }

    /// Sends `out` and reads to ReadyForQuery, under the answer deadline.
    async fn exchange(&mut self, out: BytesMut, binary: bool) -> Result<(Vec<Row>, u64), PgError> {
        let mut answers = self.exchange_many(out, &[binary]).await?;
        Ok(answers.pop().expect("one answer"))
    }

    /// Sends `out`, which holds one request per entry of `binary`, and reads every answer
    /// (each to its ReadyForQuery), under one answer deadline. The first server error is
    /// returned once all answers are read, so the protocol stays in step.
    async fn exchange_many(
        &mut self,
        out: BytesMut,
        binary: &[bool],
    ) -> Result<Vec<(Vec<Row>, u64)>, PgError> {
        if self.broken {
            return Err(PgError::Closed);
        }
        let limit = self.config.statement_timeout + ANSWER_GRACE;
        let result = within(limit, async {
            self.send(&out).await?;
            let mut answers = Vec::with_capacity(binary.len());
            let mut first_failure = None;
            for &binary in binary {
                match self.read_answer(binary).await {
                    Ok(answer) => answers.push(answer),
                    Err(e @ PgError::Server { .. }) => {
                        first_failure.get_or_insert(e);
                        answers.push((Vec::new(), 0));
                    }
                    Err(e) => return Err(e),
                }
            }
            match first_failure {
                Some(e) => Err(e),
                None => Ok(answers),
            }
        })
        .await;
        match result {
            Some(Ok(answers)) => Ok(answers),
            Some(Err(e)) => {
                // A server error leaves the protocol in step; anything else does not.
                if !matches!(e, PgError::Server { .. }) {
                    self.broken = true;
                }
                Err(e)
            }
            None => {
                self.broken = true;
                Err(PgError::Timeout(self.config.address()))
            }
        }
    }

    async fn read_answer(&mut self, binary: bool) -> Result<(Vec<Row>, u64), PgError> {
        let mut rows = Vec::new();
        let mut row_bytes = 0usize;
        let mut touched = 0u64;
        let mut failure = None;
        loop {
            match self.next_message().await? {
                Message::DataRow(body) => {
                    row_bytes += body.buffer().len();
                    if row_bytes > self.config.max_response_bytes {
                        self.broken = true;
                        return Err(PgError::ResponseTooLarge(self.config.max_response_bytes));
                    }
                    if binary && failure.is_none() {
                        rows.push(Row::from_body(&body)?);
                    }
                }
                Message::CommandComplete(body) => {
                    let tag = body.tag().map_err(protocol)?;
                    touched = tag
                        .rsplit(' ')
                        .next()
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(0);
                }
                Message::ErrorResponse(body) => failure = Some(server_error(&body)),
                Message::ReadyForQuery(body) => {
                    self.transaction_status = body.status();
                    return match failure {
                        Some(e) => Err(e),
                        None => Ok((rows, touched)),
                    };
                }
                Message::ParseComplete
                | Message::BindComplete
                | Message::EmptyQueryResponse
                | Message::RowDescription(_)
                | Message::NoData
                | Message::ParameterStatus(_)
                | Message::NoticeResponse(_)
                | Message::NotificationResponse(_) => {}
                _ => return Err(unexpected("message in an answer")),
            }
        }
    }

    async fn send(&mut self, bytes: &[u8]) -> Result<(), PgError> {
        let sent = async {
            self.stream.write_all(bytes).await?;
            self.stream.flush().await
        }
        .await;
        sent.map_err(|source| PgError::Io {
            address: self.config.address(),
            source,
        })
    }

    async fn next_message(&mut self) -> Result<Message, PgError> {
        loop {
            if let Some(message) =
                take_message(&mut self.read_buffer, self.config.max_message_bytes)?
            {
                return Ok(message);
            }
            let read = self
                .stream
                .read(&mut self.chunk)
                .await
                .map_err(|source| PgError::Io {
                    address: self.config.address(),
                    source,
                })?;
            if read == 0 {
                return Err(PgError::Closed);
            }
            self.read_buffer.extend_from_slice(&self.chunk[..read]);
        }
    }

    /// Waits, without a deadline, for the next NOTIFY on a channel this connection LISTENs
    /// to, and returns its channel and payload. For a connection that only listens: it must
    /// not be used for statements meanwhile. An error leaves it broken.
    pub async fn next_notification(&mut self) -> Result<(String, String), PgError> {
        if self.broken {
            return Err(PgError::Closed);
        }
        loop {
            let message = match self.next_message().await {
                Ok(message) => message,
                Err(e) => {
                    self.broken = true;
                    return Err(e);
                }
            };
            match message {
                Message::NotificationResponse(body) => {
                    let channel = body.channel().map_err(protocol)?.to_string();
                    let payload = body.message().map_err(protocol)?.to_string();
                    return Ok((channel, payload));
                }
                Message::ParameterStatus(_) | Message::NoticeResponse(_) => {}
                Message::ErrorResponse(body) => {
                    // The server is going away (an administrator's shutdown, say).
                    self.broken = true;
                    return Err(server_error(&body));
                }
                _ => {
                    self.broken = true;
                    return Err(unexpected("message while listening"));
                }
            }
        }
    }

    /// Says goodbye so the server does not log a lost connection.
    pub async fn close(mut self) {
        let mut out = BytesMut::new();
        frontend::terminate(&mut out);
        let _ = self.send(&out).await;
        let _ = self.stream.close().await;
    }
}

/// Parse, Bind (binary values and results), Execute and Sync for one statement.
fn encode_extended(sql: &str, params: &[Param<'_>], out: &mut BytesMut) -> Result<(), PgError> {
    frontend::parse("", sql, params.iter().map(Param::type_oid), out).map_err(protocol)?;
    frontend::bind(
        "",
        "",
        params.iter().map(|_| 1),
        params.iter(),
        |param, buffer| Ok(param.encode(buffer)),
        [1],
        out,
    )
    .map_err(|e| match e {
        frontend::BindError::Conversion(e) => PgError::Protocol(e.to_string()),
        frontend::BindError::Serialization(e) => protocol(e),
    })?;
    frontend::execute("", 0, out).map_err(protocol)?;
    frontend::sync(out);
    Ok(())
}

/// TLS when the config asks for it: an SSLRequest, PostgreSQL's one-byte yes, then the
/// handshake with the server's certificate and name checked.
async fn secure(mut tcp: TcpStream, config: &PgConfig) -> Result<Stream, PgError> {
    if config.ssl_mode == SslMode::Disable {
        return Ok(Stream::Plain(tcp));
    }
    let io = |source| PgError::Io {
        address: config.address(),
        source,
    };
    let tls = config
        .tls
        .clone()
        .ok_or_else(|| PgError::Config("sslmode=verify-full needs TLS client settings".into()))?;
    let name = rustls_pki_types::ServerName::try_from(config.host.clone())
        .map_err(|e| PgError::Config(format!("{}: {e}", config.host)))?;
    let mut request = BytesMut::new();
    frontend::ssl_request(&mut request);
    tcp.write_all(&request).await.map_err(io)?;
    let mut answer = [0u8; 1];
    tcp.read_exact(&mut answer).await.map_err(io)?;
    match answer[0] {
        b'S' => {}
        b'N' => {
            return Err(PgError::Config(format!(
                "PostgreSQL at {} does not accept TLS (ssl = off there)",
                config.address()
            )))
        }
        other => {
            return Err(PgError::Protocol(format!(
                "answer {other:#x} to SSLRequest"
            )))
        }
    }
    let stream = futures_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await
        .map_err(io)?;
    Ok(Stream::Tls(Box::new(stream.into())))
}

fn protocol(e: std::io::Error) -> PgError {
    PgError::Protocol(e.to_string())
}

fn unexpected(what: &str) -> PgError {
    PgError::Protocol(format!("unexpected {what}"))
}
