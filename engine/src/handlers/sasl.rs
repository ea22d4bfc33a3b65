//! SaslHandshake (17) and SaslAuthenticate (36): a SASL listener's client names a mechanism,
//! then authenticates with it before any other request is served. A failed login is answered
//! with `SASL_AUTHENTICATION_FAILED` after `failed_authentication_delay_ms`, logged without
//! secrets, and the connection is closed. OAUTHBEARER answers a refused token with RFC 7628's
//! error challenge first, as Kafka does. With `connections_max_reauth_ms` a session has a
//! lifetime (KIP-368): the client logs in again on its connection, as the same principal and
//! with the same mechanism, while its other requests go on.

use std::time::Duration;

use kafka_protocol::protocol::StrBytes;
use shoal_auth::oauthbearer::{error_challenge, ClientMessage};
use shoal_protocol::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use shoal_protocol::ResponseError;

use crate::context::{Broker, Call};
use crate::security::scram::{ClientFirst, Exchange, ScramMechanism};
use crate::security::session::TokenOwner;
use crate::security::{plain, AuthState, Principal, Session};
use shoal_auth::delegation_token::{token_credential, token_hmac};
use shoal_auth::SaslMechanism;
use shoal_auth::ScramCredential;
use shoal_coordinator::commands::LookupScramCredential;
use shoal_shards::maintenance::now_ms;

pub async fn handshake(call: &Call<'_>, request: SaslHandshakeRequest) -> SaslHandshakeResponse {
    let enabled = &call.broker.config.sasl.enabled_mechanisms;
    let mechanisms = enabled
        .iter()
        .map(|m| StrBytes::from_string(m.clone()))
        .collect();
    let session = &call.client.session;
    let asked = request.mechanism.as_str();
    let chosen = SaslMechanism::from_name(asked).filter(|_| enabled.iter().any(|m| m == asked));
    let error = match (session.state(), chosen) {
        (AuthState::AwaitingHandshake, Some(mechanism)) => {
            session.start(mechanism, call.version == 0);
            None
        }
        (AuthState::AwaitingHandshake, None) => Some(ResponseError::UnsupportedSaslMechanism),
        // KIP-368: an authenticated session with a lifetime logs in again, with v1 and the
        // mechanism it logged in with first.
        (AuthState::Authenticated, Some(mechanism))
            if call.version >= 1
                && session.ends_at_ms().is_some()
                && session.mechanism() == Some(mechanism) =>
        {
            session.start_reauthentication(mechanism);
            None
        }
        _ => Some(ResponseError::IllegalSaslState),
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
    let (AuthState::AwaitingToken(mechanism) | AuthState::Reauthenticating(mechanism)) =
        session.state()
    else {
        session.failed();
        return failure(
            ResponseError::IllegalSaslState,
            "SaslHandshake must come first",
        );
    };
    let host = &call.client.host;
    // RFC 7628: a refused token got an error challenge; whatever the client answers, the
    // authentication has failed.
    if let Some(why) = session.take_refused_token() {
        refuse(call.broker, session, host, mechanism, &why).await;
        return failure(
            ResponseError::SaslAuthenticationFailed,
            "Authentication failed: invalid token",
        );
    }
    let step = match mechanism {
        SaslMechanism::OAuthBearer => match oauth_login(call.broker, &request.auth_bytes) {
            Ok(login) => Ok(Step::LoggedIn(login, Vec::new())),
            // A token refused: the error challenge first (RFC 7628 3.2.2), as Kafka answers.
            Err(OAuthRefusal::Token(why)) => {
                session.refuse_token(why);
                return SaslAuthenticateResponse::default()
                    .with_auth_bytes(error_challenge(None).into());
            }
            Err(OAuthRefusal::Message(why)) => Err(why),
        },
        _ => password_step(call.broker, session, mechanism, &request.auth_bytes).await,
    };
    match step.and_then(|step| finish(call.broker, session, host, step)) {
        Ok((reply, lifetime_ms)) => {
            let answer = SaslAuthenticateResponse::default().with_auth_bytes(reply.into());
            // The session's lifetime exists from v1 (KIP-368).
            match call.version {
                0 => answer,
                _ => answer.with_session_lifetime_ms(lifetime_ms),
            }
        }
        Err(why) => {
            refuse(call.broker, session, host, mechanism, &why).await;
            failure(
                ResponseError::SaslAuthenticationFailed,
                "Authentication failed: invalid credentials",
            )
        }
    }
}

/// After a v0 SaslHandshake: the bare token checked. Some: the reply to frame back (the
/// session is authenticated, or a SCRAM exchange awaits its final message). None: failed,
/// after the failed-login delay, with a log line that holds no secret.
pub async fn check_token(
    broker: &Broker,
    session: &Session,
    client_host: &str,
    mechanism: SaslMechanism,
    token: &[u8],
) -> Option<Vec<u8>> {
    let step = match mechanism {
        // No error challenge without SaslAuthenticate: a refusal fails at once.
        SaslMechanism::OAuthBearer => oauth_login(broker, token)
            .map(|login| Step::LoggedIn(login, Vec::new()))
            .map_err(OAuthRefusal::why),
        _ => password_step(broker, session, mechanism, token).await,
    };
    match step.and_then(|step| finish(broker, session, client_host, step)) {
        Ok((reply, _lifetime_ms)) => Some(reply),
        Err(why) => {
            refuse(broker, session, client_host, mechanism, &why).await;
            None
        }
    }
}

/// Who a login proved the client to be, and until when its credential holds.
struct Login {
    principal: Principal,
    credential_ends_at_ms: Option<i64>,
    /// With a delegation token (SCRAM's `tokenauth` extension).
    by_token: bool,
}

impl Login {
    /// A user who proved a password (or a SCRAM credential of one): no end to the credential.
    fn user(name: String) -> Login {
        Login {
            principal: Principal::user(name),
            credential_ends_at_ms: None,
            by_token: false,
        }
    }
}

/// Where a mechanism's message left the exchange.
enum Step {
    /// Logged in; the reply to send.
    LoggedIn(Login, Vec<u8>),
    /// A SCRAM exchange goes on: its next message to send.
    Continue(Vec<u8>),
}

/// A PLAIN token, or one SCRAM message.
async fn password_step(
    broker: &Broker,
    session: &Session,
    mechanism: SaslMechanism,
    token: &[u8],
) -> Result<Step, String> {
    if let Some(scram) = mechanism.scram() {
        return match scram_step(broker, session, scram, token).await {
            Ok((Some(login), reply)) => Ok(Step::LoggedIn(login, reply)),
            Ok((None, reply)) => Ok(Step::Continue(reply)),
            Err(why) => Err(why.to_string()),
        };
    }
    match mechanism {
        SaslMechanism::Plain => plain::authenticate(token, &broker.config.sasl.plain_users)
            .map(|user| Step::LoggedIn(Login::user(user), Vec::new()))
            .ok_or_else(|| "invalid username or password".to_string()),
        _ => Err("not a password mechanism".to_string()),
    }
}

/// A step taken: a login moves the session on (authenticated, or re-authenticated as the
/// same principal) and sets its lifetime. Ok((reply, session lifetime in ms, 0: none)).
fn finish(
    broker: &Broker,
    session: &Session,
    client_host: &str,
    step: Step,
) -> Result<(Vec<u8>, i64), String> {
    let (login, reply) = match step {
        Step::Continue(reply) => return Ok((reply, 0)),
        Step::LoggedIn(login, reply) => (login, reply),
    };
    let reauthenticating = matches!(session.state(), AuthState::Reauthenticating(_));
    if reauthenticating && session.principal() != login.principal {
        return Err(format!(
            "re-authentication as {} on a session of {}: principals cannot change",
            login.principal,
            session.principal()
        ));
    }
    let now = now_ms();
    let lifetime_ms = session_lifetime_ms(
        broker.config.sasl.connections_max_reauth_ms,
        login.credential_ends_at_ms,
        now,
    );
    session.authenticated(login.principal, login.by_token);
    session.ends_at((lifetime_ms > 0).then(|| now + lifetime_ms));
    let principal = session.principal();
    if reauthenticating {
        broker.shard.metrics.counters.sasl_reauthentications.add(1);
        tracing::info!(%principal, client = client_host, lifetime_ms, "re-authenticated");
    } else {
        tracing::debug!(%principal, listener = %session.listener.name, lifetime_ms, "authenticated");
    }
    Ok((reply, lifetime_ms))
}

/// KIP-368: with `connections.max.reauth.ms` set, a session lasts that long, and no longer
/// than its credential (a token) holds; 0 (off): sessions never end.
fn session_lifetime_ms(max_reauth_ms: u64, credential_ends_at_ms: Option<i64>, now_ms: i64) -> i64 {
    if max_reauth_ms == 0 {
        return 0;
    }
    let max = i64::try_from(max_reauth_ms).unwrap_or(i64::MAX);
    match credential_ends_at_ms {
        Some(end) => max.min(end - now_ms).max(1),
        None => max,
    }
}

/// Why an OAUTHBEARER login failed (for the log, not the client).
enum OAuthRefusal {
    /// The client message itself is malformed: refused at once.
    Message(String),
    /// The token is refused: answered with the error challenge first.
    Token(String),
}

impl OAuthRefusal {
    fn why(self) -> String {
        match self {
            OAuthRefusal::Message(why) | OAuthRefusal::Token(why) => why,
        }
    }
}

/// An OAUTHBEARER client message: its token checked, the token's principal and expiry.
fn oauth_login(broker: &Broker, message: &[u8]) -> Result<Login, OAuthRefusal> {
    let message =
        ClientMessage::parse(message).map_err(|e| OAuthRefusal::Message(e.to_string()))?;
    let validator = broker
        .oauth
        .as_ref()
        .ok_or_else(|| OAuthRefusal::Token("OAUTHBEARER has no validator".into()))?;
    let token = validator
        .validate(&message.token, now_ms())
        .map_err(|e| OAuthRefusal::Token(e.to_string()))?;
    if message
        .authzid
        .as_ref()
        .is_some_and(|authzid| *authzid != token.principal)
    {
        return Err(OAuthRefusal::Token(
            "the authzid is not the token's principal".into(),
        ));
    }
    Ok(Login {
        principal: Principal::user(token.principal),
        credential_ends_at_ms: Some(token.valid_until_ms),
        by_token: false,
    })
}

/// A failed login: logged without secrets, the session failed, after the failed-login delay
/// (the caller answers with the failure).
async fn refuse(
    broker: &Broker,
    session: &Session,
    client_host: &str,
    mechanism: SaslMechanism,
    why: &str,
) {
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
}

/// One SCRAM message: the first gets the server's first message (after looking the user's
/// credential up, or deriving a delegation token's), the final gets the proof checked.
/// Ok((the login once proved, reply)).
async fn scram_step(
    broker: &Broker,
    session: &Session,
    mechanism: ScramMechanism,
    token: &[u8],
) -> Result<(Option<Login>, Vec<u8>), &'static str> {
    match session.take_scram() {
        None => {
            let first = ClientFirst::parse(token).map_err(|e| e.0)?;
            let (credential, token_owner) = match first.token_auth {
                true => token_login(broker, mechanism, &first.user).unzip(),
                false => {
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
                    (credential, None)
                }
            };
            let (exchange, reply) = Exchange::start(mechanism, first, credential);
            session.keep_scram(exchange, token_owner);
            Ok((None, reply))
        }
        Some((exchange, token_owner)) => {
            let (user, reply) = exchange.finish(token).map_err(|e| e.0)?;
            let login = match token_owner {
                Some(owner) => Login {
                    principal: owner.principal,
                    credential_ends_at_ms: Some(owner.expires_at_ms),
                    by_token: true,
                },
                None => Login::user(user),
            };
            Ok((Some(login), reply))
        }
    }
}

/// A login with the delegation token `token_id` (KIP-48): the credential its HMAC makes and
/// its owner, whom the login acts as until the token expires. None (the exchange fails at
/// the proof, telling nothing) when tokens are off, or the token is unknown, expired or not
/// a user's.
fn token_login(
    broker: &Broker,
    mechanism: ScramMechanism,
    token_id: &str,
) -> Option<(ScramCredential, TokenOwner)> {
    let secret = broker.config.delegation_token.secret_key.as_deref()?;
    let view = broker.shard.topics.load();
    let token = view.delegation_tokens().get(token_id)?;
    if token.is_expired(now_ms()) {
        return None;
    }
    let owner = (token.owner.split_once(':'))
        .filter(|(kind, _)| *kind == Principal::USER_TYPE)
        .map(|(_, name)| name)?;
    let credential = token_credential(mechanism, &token_hmac(secret, token_id));
    let owner = TokenOwner {
        principal: Principal::user(owner),
        expires_at_ms: token.expiry_timestamp_ms.min(token.max_timestamp_ms),
    };
    Some((credential, owner))
}

fn failure(error: ResponseError, message: &'static str) -> SaslAuthenticateResponse {
    SaslAuthenticateResponse::default()
        .with_error_code(error.code())
        .with_error_message(Some(StrBytes::from_static_str(message)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_last_the_setting_and_no_longer_than_their_token() {
        assert_eq!(session_lifetime_ms(0, Some(5_000), 1_000), 0);
        assert_eq!(session_lifetime_ms(60_000, None, 1_000), 60_000);
        assert_eq!(session_lifetime_ms(60_000, Some(11_000), 1_000), 10_000);
        assert_eq!(session_lifetime_ms(60_000, Some(500_000), 1_000), 60_000);
        // A token that ends now still gets a session (of a moment): the client refreshes.
        assert_eq!(session_lifetime_ms(60_000, Some(1_000), 1_000), 1);
    }
}
