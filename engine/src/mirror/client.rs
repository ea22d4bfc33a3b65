//! A minimal Kafka client for reading a mirror's source cluster: one connection, one request
//! in flight, bounded responses and timeouts, over TLS and logged in with SASL (PLAIN or
//! SCRAM) when the mirror's settings say so. Framing and codecs are `shoal_protocol`'s.

use std::time::Duration;

use bytes::Bytes;
use futures_lite::AsyncWriteExt;
use futures_rustls::TlsConnector;
use glommio::net::TcpStream;
use kafka_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
use kafka_protocol::protocol::{Request, StrBytes};
use rustls_pki_types::ServerName;
use shoal_mirror::{MirrorConfig, SourceSecurity};
use shoal_protocol::frame;
use shoal_wal::tls_client::{client_config, ClientCertificate};
use shoal_wal::within;

use crate::security::scram_client::ScramClient;
use crate::security::stream::KafkaStream;
use crate::security::Mechanism;
use crate::EngineError;

const CLIENT_ID: &str = "shoal-mirror";

pub struct SourceClient {
    stream: KafkaStream,
    next_correlation_id: i32,
    timeout: Duration,
    max_response_bytes: usize,
    pub address: String,
}

impl SourceClient {
    /// Connects to the first answering address of the mirror's `bootstrap.servers`, then
    /// secures the connection and logs in as its security settings say.
    pub async fn connect(
        config: &MirrorConfig,
        timeout: Duration,
        max_response_bytes: usize,
    ) -> Result<SourceClient, EngineError> {
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
            };
            if security.uses_sasl() {
                client.log_in(security).await?;
            }
            return Ok(client);
        }
        Err(EngineError::Source(last_error))
    }

    /// SaslHandshake, then SaslAuthenticate until the mechanism is done.
    async fn log_in(&mut self, security: &SourceSecurity) -> Result<(), EngineError> {
        let refused = |why: String| EngineError::Source(format!("SASL login refused: {why}"));
        let mechanism = security.sasl_mechanism.as_str();
        let handshake = SaslHandshakeRequest::default()
            .with_mechanism(StrBytes::from_string(mechanism.to_string()));
        let answer = self.call(1, &handshake, Duration::ZERO).await?;
        if answer.error_code != 0 {
            return Err(refused(format!("{mechanism} not enabled on the source")));
        }
        let (user, password) = (&security.sasl_username, &security.sasl_password);
        match Mechanism::parse(mechanism) {
            Some(Mechanism::Plain) => {
                let token = format!("\0{user}\0{password}");
                self.authenticate(Bytes::from(token)).await?;
            }
            Some(Mechanism::Scram(scram)) => {
                let (client, first) = ScramClient::start(scram, user, password);
                let server_first = self.authenticate(Bytes::from(first)).await?;
                let (last, awaiting) = client
                    .respond(&server_first)
                    .map_err(|e| refused(e.0.to_string()))?;
                let server_final = self.authenticate(Bytes::from(last)).await?;
                awaiting
                    .verify(&server_final)
                    .map_err(|e| refused(e.0.to_string()))?;
            }
            None => return Err(refused(format!("unknown mechanism {mechanism}"))),
        }
        Ok(())
    }

    /// One SaslAuthenticate round; the server's bytes.
    async fn authenticate(&mut self, token: Bytes) -> Result<Bytes, EngineError> {
        let request = SaslAuthenticateRequest::default().with_auth_bytes(token);
        let answer = self.call(2, &request, Duration::ZERO).await?;
        if answer.error_code != 0 {
            let message = answer
                .error_message
                .map(|m| m.to_string())
                .unwrap_or_default();
            return Err(EngineError::Source(format!(
                "{}: SASL authentication failed: {message}",
                self.address
            )));
        }
        Ok(answer.auth_bytes)
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

/// TLS to the source, checking its certificate against the system's CAs and the mirror's.
async fn tls_to(
    address: &str,
    stream: TcpStream,
    security: &SourceSecurity,
    timeout: Duration,
) -> Result<KafkaStream, EngineError> {
    let failed = |why: String| EngineError::Source(format!("{address}: TLS: {why}"));
    let path = |p: &str| (!p.is_empty()).then(|| std::path::Path::new(p).to_path_buf());
    let ca_file = path(&security.ssl_ca_file);
    let (chain, key) = (
        path(&security.ssl_certificate_file),
        path(&security.ssl_key_file),
    );
    let certificate = chain
        .as_deref()
        .zip(key.as_deref())
        .map(|(chain_file, key_file)| ClientCertificate {
            chain_file,
            key_file,
        });
    let config =
        client_config(ca_file.as_deref(), certificate).map_err(|e| failed(e.to_string()))?;
    let host = address.rsplit_once(':').map_or(address, |(host, _)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let name = ServerName::try_from(host.to_string()).map_err(|e| failed(e.to_string()))?;
    let connecting = TlsConnector::from(config).connect(name, stream);
    let stream = within(timeout, connecting)
        .await
        .ok_or_else(|| failed("handshake timed out".into()))?
        .map_err(|e| failed(e.to_string()))?;
    Ok(KafkaStream::Tls(Box::new(stream.into())))
}
