//! A blocking client for tools (the benchmark, the `shoal mirror` CLI): one connection, one
//! request at a time, bounded answers and a read timeout.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use kafka_protocol::protocol::Request;
use shoal_auth::client_login::LoginCredential;
use shoal_auth::{ClientSecurity, SaslMechanism};

use crate::frame::{decode_response, encode_request, read_frame_blocking};
use crate::sasl_login::{self, Caller};
use crate::ProtocolError;

pub struct BlockingClient<S = TcpStream> {
    stream: S,
    client_id: String,
    next_correlation_id: i32,
    max_response_bytes: usize,
    /// The SASL session, when logged in.
    session: Option<Session>,
}

/// Where a login's credential comes from, each time: a password, or a token read or fetched
/// anew (a token's life is short).
pub type CredentialSource = Box<dyn FnMut() -> Result<LoginCredential, String> + Send>;

/// A SASL session the broker gave a lifetime: logged in again on the same connection before
/// it ends (KIP-368), before the first call after `renew_at`.
struct Session {
    mechanism: SaslMechanism,
    credential: CredentialSource,
    renew_at: Option<Instant>,
}

/// When to log in again: between 85 % and 95 % of the session's life (Kafka's clients pick
/// a point in that window, so the connections a client opened at once do not all log in
/// again at once).
fn renewal_time(lifetime: Option<Duration>) -> Option<Instant> {
    let spread = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() % 1_000);
    let factor = 0.85 + 0.1 * f64::from(spread) / 1_000.0;
    lifetime.map(|life| Instant::now() + life.mul_f64(factor))
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
            session: None,
        }
    }

    /// Sends `request` at `version` and waits for its answer (logging in again first when the
    /// session is due).
    pub fn call<R: Request>(
        &mut self,
        version: i16,
        request: &R,
    ) -> Result<R::Response, ProtocolError> {
        let due = (self.session.as_ref())
            .and_then(|s| s.renew_at)
            .is_some_and(|at| Instant::now() >= at);
        if due {
            self.log_in_again()?;
        }
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
    /// Logs in as `security` says when it names SASL, with the credentials `credential`
    /// gives; nothing otherwise. When the broker gives the session a lifetime, the client logs
    /// in again before it ends.
    pub fn log_in(
        &mut self,
        security: &ClientSecurity,
        credential: CredentialSource,
    ) -> Result<(), ProtocolError> {
        let Some(mechanism) = security.sasl_mechanism.filter(|_| security.uses_sasl()) else {
            return Ok(());
        };
        self.log_in_with(Session {
            mechanism,
            credential,
            renew_at: None,
        })
    }

    fn log_in_again(&mut self) -> Result<(), ProtocolError> {
        match self.session.take() {
            Some(session) => self.log_in_with(session),
            None => Ok(()),
        }
    }

    /// One login; the session is kept only when it succeeds (and is away meanwhile, so the
    /// login's own calls do not ask for it).
    fn log_in_with(&mut self, mut session: Session) -> Result<(), ProtocolError> {
        let credential = (session.credential)().map_err(ProtocolError::Login)?;
        let login = sasl_login::log_in(self, session.mechanism, &credential);
        let lifetime = futures_lite::future::block_on(login)?;
        session.renew_at = renewal_time(lifetime);
        self.session = Some(session);
        Ok(())
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
