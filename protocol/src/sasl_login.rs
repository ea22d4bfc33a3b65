//! A client's SASL login over the Kafka protocol, written once for every client: SaslHandshake
//! naming the mechanism, then SaslAuthenticate carrying `ClientLogin`'s tokens until the login
//! is done. It runs on `Caller`, which the blocking client (the admin commands, the benchmark)
//! and a mirror's async source connection both implement. The same exchange on a connection
//! already logged in is KIP-368's re-authentication.

use std::time::Duration;

use crate::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
use bytes::Bytes;
use kafka_protocol::protocol::{Request, StrBytes};
use shoal_auth::client_login::{ClientLogin, LoginCredential};
use shoal_auth::SaslMechanism;

use crate::ProtocolError;

const SASL_HANDSHAKE_VERSION: i16 = 1;
const SASL_AUTHENTICATE_VERSION: i16 = 2;

/// One request and its answer on a connection.
// Callers are single-threaded (a glommio executor, or a blocking client driven by
// `block_on`), so the futures need no `Send` bound.
#[allow(async_fn_in_trait)]
pub trait Caller {
    async fn call<R: Request>(
        &mut self,
        version: i16,
        request: &R,
    ) -> Result<R::Response, ProtocolError>;
}

/// Logs in on `connection` with `mechanism`: Ok once the broker accepted the credential, with
/// the session's lifetime when the broker gave one (KIP-368: log in again before it ends).
pub async fn log_in(
    connection: &mut impl Caller,
    mechanism: SaslMechanism,
    credential: &LoginCredential,
) -> Result<Option<Duration>, ProtocolError> {
    let handshake =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism.name()));
    let answer = connection.call(SASL_HANDSHAKE_VERSION, &handshake).await?;
    if answer.error_code != 0 {
        let offered: Vec<&str> = answer.mechanisms.iter().map(|m| m.as_str()).collect();
        return Err(ProtocolError::LoginRefused {
            code: answer.error_code,
            message: Some(format!(
                "the broker does not take SASL {}; it takes {offered:?}",
                mechanism.name()
            )),
        });
    }
    let (mut login, mut token) = ClientLogin::start(mechanism, credential)
        .map_err(|e| ProtocolError::Login(e.0.to_string()))?;
    loop {
        let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::from(token));
        let answer = connection.call(SASL_AUTHENTICATE_VERSION, &request).await?;
        if answer.error_code != 0 {
            return Err(ProtocolError::LoginRefused {
                code: answer.error_code,
                message: answer.error_message.map(|m| m.to_string()),
            });
        }
        match login
            .next(&answer.auth_bytes)
            .map_err(|e| ProtocolError::Login(e.0.to_string()))?
        {
            Some(next) => token = next,
            None => {
                let lifetime = u64::try_from(answer.session_lifetime_ms).unwrap_or(0);
                return Ok(Some(Duration::from_millis(lifetime)).filter(|l| !l.is_zero()));
            }
        }
    }
}
