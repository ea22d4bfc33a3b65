//! SaslHandshake (17) and SaslAuthenticate (36): a SASL listener's client names a mechanism,
//! then authenticates with it before any other request is served. A failed login is answered
//! with `SASL_AUTHENTICATION_FAILED` after `failed_authentication_delay_ms`, logged without
//! secrets, and the connection is closed.

use std::time::Duration;

use kafka_protocol::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use shoal_protocol::ResponseError;

use crate::context::{Broker, Call};
use crate::security::scram::{ClientFirst, Exchange, ScramMechanism};
use crate::security::{plain, AuthState, Mechanism, Principal, Session};
use shoal_coordinator::commands::LookupScramCredential;

pub async fn handshake(call: &Call<'_>, request: SaslHandshakeRequest) -> SaslHandshakeResponse {
    let enabled = &call.broker.config.sasl.enabled_mechanisms;
    let mechanisms = enabled
        .iter()
        .map(|m| StrBytes::from_string(m.clone()))
        .collect();
    let session = &call.client.session;
    let error = if session.state() != AuthState::AwaitingHandshake {
        Some(ResponseError::IllegalSaslState)
    } else {
        let asked = request.mechanism.as_str();
        match Mechanism::parse(asked).filter(|_| enabled.iter().any(|m| m == asked)) {
            Some(mechanism) => {
                session.start(mechanism, call.version == 0);
                None
            }
            None => Some(ResponseError::UnsupportedSaslMechanism),
        }
    };
    SaslHandshakeResponse::default()
        .with_error_code(error.map_or(0, |e| e.code()))
        .with_mechanisms(mechanisms)
}

pub async fn authenticate(
    call: &Call<'_>,
    request: SaslAuthenticateRequest,
) -> SaslAuthenticateResponse {
    let session = &call.client.session;
    let AuthState::AwaitingToken(mechanism) = session.state() else {
        session.failed();
        return failure(
            ResponseError::IllegalSaslState,
            "SaslHandshake must come first",
        );
    };
    let host = &call.client.host;
    match check_token(call.broker, session, host, mechanism, &request.auth_bytes).await {
        Some(token) => SaslAuthenticateResponse::default().with_auth_bytes(token.into()),
        None => failure(
            ResponseError::SaslAuthenticationFailed,
            "Authentication failed: invalid credentials",
        ),
    }
}

/// Checks a mechanism's token and moves the session on. Some: the token to send back (the
/// session is authenticated, or a SCRAM exchange awaits its final message). None: failed,
/// after the failed-login delay, with a log line that holds no secret.
pub async fn check_token(
    broker: &Broker,
    session: &Session,
    client_host: &str,
    mechanism: Mechanism,
    token: &[u8],
) -> Option<Vec<u8>> {
    let outcome = match mechanism {
        Mechanism::Plain => plain::authenticate(token, &broker.config.sasl.plain_users)
            .map(|user| (Some(user), Vec::new()))
            .ok_or("invalid username or password"),
        Mechanism::Scram(scram) => scram_step(broker, session, scram, token).await,
    };
    match outcome {
        Ok((Some(user), reply)) => {
            session.authenticated(Principal::user(user));
            let principal = session.principal();
            tracing::debug!(%principal, listener = %session.listener.name, "authenticated");
            Some(reply)
        }
        Ok((None, reply)) => Some(reply),
        Err(why) => {
            tracing::warn!(
                client = %client_host,
                listener = %session.listener.name,
                mechanism = mechanism.name(),
                why,
                "authentication failed"
            );
            session.failed();
            let delay = broker.config.sasl.failed_authentication_delay_ms;
            glommio::timer::sleep(Duration::from_millis(delay)).await;
            None
        }
    }
}

/// One SCRAM message: the first gets the server's first message (after looking the user's
/// credential up), the final gets the proof checked. Ok((user once logged in, reply)).
async fn scram_step(
    broker: &Broker,
    session: &Session,
    mechanism: ScramMechanism,
    token: &[u8],
) -> Result<(Option<String>, Vec<u8>), &'static str> {
    match session.take_scram() {
        None => {
            let first = ClientFirst::parse(token).map_err(|e| e.0)?;
            let lookup = LookupScramCredential {
                user: first.user.clone(),
                mechanism: mechanism.code(),
            };
            let credential = broker
                .shard
                .coordinator
                .run(lookup)
                .await
                .map_err(|_| "the coordinator did not answer")?;
            let (exchange, reply) = Exchange::start(mechanism, first, credential);
            session.keep_scram(exchange);
            Ok((None, reply))
        }
        Some(exchange) => {
            let (user, reply) = exchange.finish(token).map_err(|e| e.0)?;
            Ok((Some(user), reply))
        }
    }
}

fn failure(error: ResponseError, message: &'static str) -> SaslAuthenticateResponse {
    SaslAuthenticateResponse::default()
        .with_error_code(error.code())
        .with_error_message(Some(StrBytes::from_static_str(message)))
}
