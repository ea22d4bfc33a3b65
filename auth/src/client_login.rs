//! A client's SASL login as a sequence of tokens: which to send first, and after each of the
//! server's answers, the next one or that the login is done. The caller carries the tokens
//! in SaslAuthenticate requests, over a blocking socket (the admin CLI) or an async one (a
//! mirror's source), so the mechanisms live here once.

use crate::client_security::SaslMechanism;
use crate::scram::{ScramError, ScramMechanism};
use crate::scram_client::{AwaitingServerFinal, ScramClient};

pub struct ClientLogin {
    step: Step,
}

enum Step {
    /// PLAIN: the server's (empty) answer to the one token ends it.
    PlainSent,
    ScramFirstSent(ScramClient),
    ScramFinalSent(AwaitingServerFinal),
    Done,
}

impl ClientLogin {
    /// Starts a login with `mechanism`: the login and the first token to send.
    pub fn start(mechanism: SaslMechanism, user: &str, password: &str) -> (ClientLogin, Vec<u8>) {
        let scram = match mechanism {
            SaslMechanism::Plain => {
                let token = format!("\0{user}\0{password}").into_bytes();
                return (ClientLogin::at(Step::PlainSent), token);
            }
            SaslMechanism::ScramSha256 => ScramMechanism::Sha256,
            SaslMechanism::ScramSha512 => ScramMechanism::Sha512,
        };
        let (client, first) = ScramClient::start(scram, user, password);
        (ClientLogin::at(Step::ScramFirstSent(client)), first)
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
            Step::Done => Err(ScramError("the login is over already")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_is_one_token_and_done_after_the_answer() {
        let (mut login, token) = ClientLogin::start(SaslMechanism::Plain, "alice", "secret");
        assert_eq!(token, b"\0alice\0secret");
        assert_eq!(login.next(b"").unwrap(), None);
        assert!(login.next(b"").is_err());
    }

    #[test]
    fn scram_refuses_a_server_that_does_not_extend_the_nonce() {
        let (mut login, first) = ClientLogin::start(SaslMechanism::ScramSha256, "alice", "pw");
        assert!(first.starts_with(b"n,,n=alice,r="));
        let server_first = b"r=someone-elses-nonce,s=c2FsdA==,i=4096";
        assert!(login.next(server_first).is_err());
    }
}
