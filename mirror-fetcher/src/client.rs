//! A minimal Kafka client for reading a mirror's source cluster: one connection, one request
//! in flight, bounded responses and timeouts, over TLS and logged in with SASL (PLAIN, SCRAM
//! or OAUTHBEARER) when the mirror's settings say so, and again before a session the source
//! gave a lifetime ends (KIP-368). Framing and codecs are `shoal_protocol`'s.
//!
//! Sources are any Kafka-protocol broker, so every API's version is the newest both sides
//! speak (from the source's ApiVersions). Some brokers send tagged fields a strict decoder
//! refuses (a field at a version that does not define it), or drop a connection on a version
//! they advertise; for such a source the client steps down, once, to each API's last version
//! before Kafka's flexible encoding, which has no tagged fields, and says so in the log.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use futures_lite::AsyncWriteExt;
use futures_rustls::TlsConnector;
use glommio::net::TcpStream;
use kafka_protocol::protocol::Request;
use shoal_auth::ClientSecurity;
use shoal_mirror::MirrorConfig;
use shoal_net::tls_client::kafka_client_tls;
use shoal_net::within;
use shoal_protocol::messages::ApiVersionsRequest;
use shoal_protocol::sasl_login::{log_in, Caller};
use shoal_protocol::{frame, ProtocolError};

use crate::FetchError;
use shoal_net::TcpOrTls as KafkaStream;

const CLIENT_ID: &str = "shoal-mirror";

/// An API the mirror calls on a source: its key, the newest version Shoal speaks, and the
/// last version before the flexible (tagged-field) encoding.
#[derive(Clone, Copy, Debug)]
pub struct SourceApi {
    pub key: i16,
    pub name: &'static str,
    pub newest: i16,
    pub last_rigid: i16,
}

pub const FETCH: SourceApi = SourceApi {
    key: 1,
    name: "Fetch",
    newest: 12,
    last_rigid: 11,
};
pub const LIST_OFFSETS: SourceApi = SourceApi {
    key: 2,
    name: "ListOffsets",
    newest: 7,
    last_rigid: 5,
};
pub const METADATA: SourceApi = SourceApi {
    key: 3,
    name: "Metadata",
    newest: 12,
    last_rigid: 8,
};
pub const OFFSET_FETCH: SourceApi = SourceApi {
    key: 9,
    name: "OffsetFetch",
    newest: 7,
    last_rigid: 5,
};
pub const LIST_GROUPS: SourceApi = SourceApi {
    key: 16,
    name: "ListGroups",
    newest: 4,
    last_rigid: 2,
};
pub const DESCRIBE_CONFIGS: SourceApi = SourceApi {
    key: 32,
    name: "DescribeConfigs",
    newest: 4,
    last_rigid: 3,
};

thread_local! {
    /// Sources found to need pre-flexible versions, so a new connection starts there and the
    /// log says it once.
    static RIGID_SOURCES: RefCell<HashSet<String>> = RefCell::new(HashSet::new());
    /// What has been logged about sources, so a recurring condition is logged once.
    static SAID: RefCell<HashSet<String>> = RefCell::new(HashSet::new());
}

/// True the first time `what` is said on this executor: for conditions a mirror meets on
/// every round (a source without an optional API), so the log says them once.
pub fn first_time(what: String) -> bool {
    SAID.with(|said| said.borrow_mut().insert(what))
}

pub struct SourceClient {
    stream: KafkaStream,
    next_correlation_id: i32,
    timeout: Duration,
    max_response_bytes: usize,
    pub address: String,
    config: MirrorConfig,
    /// The source's versions per API key, from its ApiVersions.
    versions: HashMap<i16, (i16, i16)>,
    rigid: bool,
    /// When to log in again (KIP-368): within the session's last 15 %.
    renew_session_at: Option<Instant>,
}

/// The part of a session's life after which the client logs in again (Kafka's clients pick
/// between 85 % and 95 %; one connection a source needs no spread).
const SESSION_RENEWAL_FACTOR: f64 = 0.85;

impl SourceClient {
    /// Connects to the first answering address of the mirror's `bootstrap.servers`, then
    /// secures the connection and logs in as its security settings say.
    pub async fn connect(
        config: &MirrorConfig,
        timeout: Duration,
        max_response_bytes: usize,
    ) -> Result<SourceClient, FetchError> {
        let mut last_error = String::from("no address in bootstrap.servers");
        for address in config
            .bootstrap_servers
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
        {
            let stream = match within(timeout, TcpStream::connect(address)).await {
                Some(Ok(stream)) => stream,
                Some(Err(e)) => {
                    last_error = format!("{address}: {e}");
                    continue;
                }
                None => {
                    last_error = format!("{address}: connect timed out");
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            let security = &config.security;
            let stream = match security.uses_tls() {
                true => tls_to(address, stream, security, timeout).await?,
                false => KafkaStream::Plain(stream),
            };
            let mut client = SourceClient {
                stream,
                next_correlation_id: 0,
                timeout,
                max_response_bytes,
                address: address.to_string(),
                config: config.clone(),
                versions: HashMap::new(),
                rigid: RIGID_SOURCES.with(|rigid| rigid.borrow().contains(address)),
                renew_session_at: None,
            };
            if security.uses_sasl() {
                client.log_in(security).await?;
            }
            let versions = client
                .exchange(0, &ApiVersionsRequest::default(), Duration::ZERO)
                .await?;
            client.versions = versions
                .api_keys
                .iter()
                .map(|k| (k.api_key, (k.min_version, k.max_version)))
                .collect();
            return Ok(client);
        }
        Err(FetchError::Source(last_error))
    }

    /// Logs in as the mirror's settings say (the login every client of Shoal's shares). A
    /// token is read or fetched on the executor's blocking pool, off the shard.
    async fn log_in(&mut self, security: &ClientSecurity) -> Result<(), FetchError> {
        let Some(mechanism) = security.sasl_mechanism else {
            return Err(FetchError::Source("SASL needs sasl.mechanism".into()));
        };
        let address = self.address.clone();
        let settings = security.clone();
        let credential = glommio::executor()
            .spawn_blocking(move || shoal_net::oauth_token::login_credential(&settings))
            .await
            .map_err(|e| FetchError::Source(format!("{address}: SASL credential: {e}")))?
            .ok_or_else(|| FetchError::Source("SASL needs sasl.mechanism".into()))?;
        let lifetime = log_in(&mut LoginCalls(self), mechanism, &credential)
            .await
            .map_err(|e| match e {
                ProtocolError::LoginRefused { .. } => {
                    FetchError::Source(format!("{address}: SASL authentication failed: {e}"))
                }
                other => FetchError::Source(format!("{address}: SASL login: {other}")),
            })?;
        self.renew_session_at =
            lifetime.map(|life| Instant::now() + life.mul_f64(SESSION_RENEWAL_FACTOR));
        Ok(())
    }

    /// Logs in again on this connection when the session is due (before any other call).
    async fn renew_session_if_due(&mut self) -> Result<(), FetchError> {
        if self.renew_session_at.is_none_or(|at| Instant::now() < at) {
            return Ok(());
        }
        self.renew_session_at = None;
        let security = self.config.security.clone();
        self.log_in(&security).await?;
        tracing::debug!(source = %self.address, "logged in again to the mirror's source");
        Ok(())
    }

    /// Whether the source serves the API with the given key at all.
    pub fn serves(&self, key: i16) -> bool {
        self.versions.contains_key(&key)
    }

    /// The version to call `api` at: the newest both sides speak (pre-flexible for a rigid
    /// source), or an error naming what the source lacks.
    fn version_of(&self, api: SourceApi) -> Result<i16, FetchError> {
        negotiate(api, self.versions.get(&api.key).copied(), self.rigid)
            .map_err(|what| FetchError::Source(format!("{}: {what}", self.address)))
    }

    /// Calls `api` at the negotiated version. If a flexible version's answer does not decode
    /// or the source drops the connection, steps down to pre-flexible versions for this
    /// source (reconnecting when needed) and asks once more.
    pub async fn call_api<R: Request>(
        &mut self,
        api: SourceApi,
        request: &R,
        extra_wait: Duration,
    ) -> Result<R::Response, FetchError> {
        self.renew_session_if_due().await?;
        let version = self.version_of(api)?;
        let failure = match self.exchange(version, request, extra_wait).await {
            Ok(response) => return Ok(response),
            Err(e) if version > api.last_rigid && !self.rigid && looks_flexible_related(&e) => e,
            Err(e) => return Err(e),
        };
        let newly = RIGID_SOURCES.with(|rigid| rigid.borrow_mut().insert(self.address.clone()));
        if newly {
            tracing::warn!(
                source = %self.address,
                api = api.name,
                version,
                error = %failure,
                "the mirror source's flexible answers cannot be used; using each API's last \
                 version before the flexible encoding for it"
            );
        }
        self.rigid = true;
        if matches!(&failure, FetchError::SourceClosed(..)) {
            *self =
                SourceClient::connect(&self.config, self.timeout, self.max_response_bytes).await?;
        }
        let version = self.version_of(api)?;
        let retried = self.exchange(version, request, extra_wait).await;
        if retried.is_err() && newly {
            // Not the encoding after all (the source may simply be down): forget it.
            RIGID_SOURCES.with(|rigid| rigid.borrow_mut().remove(&self.address));
            self.rigid = false;
        }
        retried
    }

    /// Sends `request` at `version` and decodes its answer, logging in again first when the
    /// session is due; the source may take `extra_wait` beyond the client's timeout (a
    /// long-polling Fetch).
    pub async fn call<R: Request>(
        &mut self,
        version: i16,
        request: &R,
        extra_wait: Duration,
    ) -> Result<R::Response, FetchError> {
        self.renew_session_if_due().await?;
        self.exchange(version, request, extra_wait).await
    }

    /// One request and its answer.
    async fn exchange<R: Request>(
        &mut self,
        version: i16,
        request: &R,
        extra_wait: Duration,
    ) -> Result<R::Response, FetchError> {
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        let expected = self.next_correlation_id;
        let request_frame = frame::encode_request(version, expected, CLIENT_ID, request)
            .map_err(|e| FetchError::Encode(e.to_string()))?;
        let max = self.max_response_bytes;
        let stream = &mut self.stream;
        let io = async {
            stream.write_all(&request_frame).await?;
            stream.flush().await?;
            frame::read_frame(stream, max).await
        };
        let answer = within(self.timeout + extra_wait, io)
            .await
            .ok_or_else(|| FetchError::Source(format!("{}: request timed out", self.address)))?
            .map_err(|e| FetchError::SourceClosed(self.address.clone(), e.to_string()))?;
        let (correlation_id, response) = frame::decode_response::<R::Response>(answer, version)
            .map_err(|e| FetchError::SourceUndecodable(self.address.clone(), e.to_string()))?;
        if correlation_id != expected {
            return Err(FetchError::Source(format!(
                "{}: correlation id {correlation_id}, expected {expected}",
                self.address
            )));
        }
        Ok(response)
    }
}

/// The login's view of a source connection: its calls, their errors as the protocol's.
struct LoginCalls<'a>(&'a mut SourceClient);

impl Caller for LoginCalls<'_> {
    async fn call<R: Request>(
        &mut self,
        version: i16,
        request: &R,
    ) -> Result<R::Response, ProtocolError> {
        self.0
            .exchange(version, request, Duration::ZERO)
            .await
            .map_err(|e| ProtocolError::Io(std::io::Error::other(e.to_string())))
    }
}

/// The newest version of `api` both sides speak, given the source's (min, max) for it;
/// pre-flexible only for a `rigid` source.
fn negotiate(api: SourceApi, source: Option<(i16, i16)>, rigid: bool) -> Result<i16, String> {
    let (min, max) = source.ok_or_else(|| format!("the source does not serve {}", api.name))?;
    let newest = if rigid { api.last_rigid } else { api.newest };
    let version = newest.min(max);
    if version < min {
        return Err(format!(
            "the source serves {} v{min}-{max}, Shoal v0-{newest}",
            api.name
        ));
    }
    Ok(version)
}

/// The two failures that call for pre-flexible versions.
fn looks_flexible_related(e: &FetchError) -> bool {
    matches!(
        e,
        FetchError::SourceClosed(..) | FetchError::SourceUndecodable(..)
    )
}

/// TLS to the source, checking its certificate against the system's CAs and the mirror's.
async fn tls_to(
    address: &str,
    stream: TcpStream,
    security: &ClientSecurity,
    timeout: Duration,
) -> Result<KafkaStream, FetchError> {
    let failed = |why: String| FetchError::Source(format!("{address}: TLS: {why}"));
    let (config, name) = kafka_client_tls(security, address).map_err(|e| failed(e.to_string()))?;
    let connecting = TlsConnector::from(config).connect(name, stream);
    let stream = within(timeout, connecting)
        .await
        .ok_or_else(|| failed("handshake timed out".into()))?
        .map_err(|e| failed(e.to_string()))?;
    Ok(KafkaStream::Tls(Box::new(stream.into())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_the_newest_both_speak_and_pre_flexible_for_a_rigid_source() {
        assert_eq!(negotiate(FETCH, Some((0, 16)), false), Ok(12));
        assert_eq!(negotiate(FETCH, Some((0, 16)), true), Ok(11));
        assert_eq!(
            negotiate(FETCH, Some((4, 10)), false),
            Ok(10),
            "an older source"
        );
        assert_eq!(negotiate(METADATA, Some((0, 12)), true), Ok(8));
        let missing = negotiate(DESCRIBE_CONFIGS, None, false).unwrap_err();
        assert!(
            missing.contains("does not serve DescribeConfigs"),
            "{missing}"
        );
        let too_new = negotiate(LIST_OFFSETS, Some((8, 9)), true).unwrap_err();
        assert!(too_new.contains("v8-9"), "{too_new}");
    }
}
