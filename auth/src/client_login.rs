//! A client's SASL login as a sequence of tokens: which to send first, and after each of the
//! server's answers, the next one or that the login is done. The caller carries the tokens
//! in SaslAuthenticate requests, over a blocking socket (the admin CLI) or an async one (a
//! mirror's source), so the mechanisms live here once.

use crate::client_security::SaslMechanism;
use crate::scram::ScramError;
use crate::scram_client::{AwaitingServerFinal, ScramClient};

/// What a login proves: a password (PLAIN, SCRAM) or a bearer token (OAUTHBEARER).
#[derive(Clone, PartialEq, Eq)]
pub enum LoginCredential {
    Password {
        user: String,
        password: String,
        /// SCRAM with a delegation token: the user is its id, the password its HMAC (KIP-48).
        delegation_token: bool,
    },
    Bearer {
        token: String,
        extensions: Vec<(String, String)>,
    },
}

// Secrets stay out of logs and panics.
impl std::fmt::Debug for LoginCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoginCredential::Password { user, .. } => write!(f, "Password({user})"),
            LoginCredential::Bearer { .. } => write!(f, "Bearer"),
        }
    }
}

pub struct ClientLogin {
    step: Step,
}

enum Step {
    /// PLAIN: the server's (empty) answer to the one token ends it.
    PlainSent,
    ScramFirstSent(ScramClient),
    ScramFinalSent(AwaitingServerFinal),
    /// OAUTHBEARER: an empty answer accepts the token; anything else is the server's error
    /// challenge, which the client acknowledges before the server fails the login.
    BearerSent,
    BearerRefused,
    Done,
}

impl ClientLogin {
    /// Starts a login with `mechanism`: the login and the first token to send; an error when
    /// the credential is not the kind the mechanism takes.
    pub fn start(
        mechanism: SaslMechanism,
        credential: &LoginCredential,
    ) -> Result<(ClientLogin, Vec<u8>), ScramError> {
        let (user, password, delegation_token) = match (mechanism, credential) {
            (SaslMechanism::OAuthBearer, LoginCredential::Bearer { token, extensions }) => {
                let message = bearer_message(token, extensions);
                return Ok((ClientLogin::at(Step::BearerSent), message));
            }
            (SaslMechanism::OAuthBearer, _) => {
                return Err(ScramError("OAUTHBEARER logs in with a token"))
            }
            (
                _,
                LoginCredential::Password {
                    user,
                    password,
                    delegation_token,
                },
            ) => (user, password, *delegation_token),
            (_, _) => return Err(ScramError("PLAIN and SCRAM log in with a password")),
        };
        let scram = match mechanism.scram() {
            Some(scram) => scram,
            None if delegation_token => {
                return Err(ScramError("delegation tokens log in with SCRAM, not PLAIN"))
            }
            None => {
                let token = format!("\0{user}\0{password}").into_bytes();
                return Ok((ClientLogin::at(Step::PlainSent), token));
            }
        };
        let (client, first) = ScramClient::start(scram, user, password, delegation_token);
        Ok((ClientLogin::at(Step::ScramFirstSent(client)), first))
    }

    fn at(step: Step) -> ClientLogin {
        ClientLogin { step }
    }

    /// The token to send after the server answered `server`, or None once logged in; an
    /// error when the server's answer is malformed or does not prove it knows the password.
    pub fn next(&mut self, server: &[u8]) -> Result<Option<Vec<u8>>, ScramError> {
        match std::mem::replace(&mut self.step, Step::Done) {
            Step::PlainSent => Ok(None),
            Step::ScramFirstSent(client) => {
                let (last, awaiting) = client.respond(server)?;
                self.step = Step::ScramFinalSent(awaiting);
                Ok(Some(last))
            }
            Step::ScramFinalSent(awaiting) => awaiting.verify(server).map(|()| None),
            Step::BearerSent if server.is_empty() => Ok(None),
            Step::BearerSent => {
                self.step = Step::BearerRefused;
                Ok(Some(vec![0x01]))
            }
            Step::BearerRefused => Err(ScramError("the server refused the token")),
            Step::Done => Err(ScramError("the login is over already")),
        }
    }
}

/// RFC 7628's initial client message: the GS2 header, the token and the extensions, each
/// ended by 0x01, and one 0x01 more.
fn bearer_message(token: &str, extensions: &[(String, String)]) -> Vec<u8> {
    let mut message = format!("n,,\u{1}auth=Bearer {token}\u{1}");
    for (key, value) in extensions {
        message.push_str(&format!("{key}={value}\u{1}"));
    }
    message.push('\u{1}');
    message.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oauthbearer::ClientMessage;

    fn password(user: &str, password: &str) -> LoginCredential {
        LoginCredential::Password {
            user: user.into(),
            password: password.into(),
            delegation_token: false,
        }
    }

    #[test]
    fn oauthbearer_sends_the_token_and_acknowledges_a_refusal() {
        let bearer = LoginCredential::Bearer {
            token: "eyJ.a.b".into(),
            extensions: vec![("traceId".into(), "42".into())],
        };
        let (mut login, message) = ClientLogin::start(SaslMechanism::OAuthBearer, &bearer).unwrap();
        let parsed = ClientMessage::parse(&message).unwrap();
        assert_eq!(parsed.token, "eyJ.a.b");
        assert_eq!(
            parsed.extensions.get("traceId").map(String::as_str),
            Some("42")
        );
        assert_eq!(login.next(b"").unwrap(), None);

        let (mut refused, _) = ClientLogin::start(SaslMechanism::OAuthBearer, &bearer).unwrap();
        let challenge = br#"{"status":"invalid_token"}"#;
        assert_eq!(refused.next(challenge).unwrap(), Some(vec![0x01]));
        assert!(refused.next(b"").is_err());

        assert!(ClientLogin::start(SaslMechanism::OAuthBearer, &password("a", "b")).is_err());
        assert!(ClientLogin::start(SaslMechanism::Plain, &bearer).is_err());
    }

    #[test]
    fn plain_is_one_token_and_done_after_the_answer() {
        let (mut login, token) =
            ClientLogin::start(SaslMechanism::Plain, &password("alice", "secret")).unwrap();
        assert_eq!(token, b"\0alice\0secret");
        assert_eq!(login.next(b"").unwrap(), None);
        assert!(login.next(b"").is_err());
    }

    #[test]
    fn scram_refuses_a_server_that_does_not_extend_the_nonce() {
        let (mut login, first) =
            ClientLogin::start(SaslMechanism::ScramSha256, &password("alice", "pw")).unwrap();
        assert!(first.starts_with(b"n,,n=alice,r="));
        let server_first = b"r=someone-elses-nonce,s=c2FsdA==,i=4096";
        assert!(login.next(server_first).is_err());
    }
}
