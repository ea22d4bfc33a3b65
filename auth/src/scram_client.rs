//! The client's side of SCRAM (RFC 5802), for logging in to a mirror's source cluster. The
//! server's messages are checked before use: the nonce must extend ours, the iteration count
//! must lie in Kafka's range (a hostile server cannot make us hash for minutes), and the
//! server must prove it knows the password too.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;

use crate::plain::constant_time_eq;
use crate::scram::{random_bytes, ScramError, ScramMechanism, MAX_ITERATIONS, MIN_ITERATIONS};

pub struct ScramClient {
    mechanism: ScramMechanism,
    password: String,
    client_first_bare: String,
    nonce: String,
}

/// After the client's final message: what the server's final message must prove.
pub struct AwaitingServerFinal {
    expected_signature: Vec<u8>,
}

impl ScramClient {
    /// The client's first message ("n,,n=user,r=nonce"); with `delegation_token` the user is
    /// a delegation token's id, the password its HMAC, and the message says so
    /// (",tokenauth=true", Kafka's SCRAM extension).
    pub fn start(
        mechanism: ScramMechanism,
        user: &str,
        password: &str,
        delegation_token: bool,
    ) -> (ScramClient, Vec<u8>) {
        let nonce = BASE64.encode(random_bytes::<24>());
        ScramClient::with_nonce(mechanism, user, password, delegation_token, nonce)
    }

    fn with_nonce(
        mechanism: ScramMechanism,
        user: &str,
        password: &str,
        delegation_token: bool,
        nonce: String,
    ) -> (ScramClient, Vec<u8>) {
        let name = user.replace('=', "=3D").replace(',', "=2C");
        let extensions = if delegation_token {
            ",tokenauth=true"
        } else {
            ""
        };
        let client_first_bare = format!("n={name},r={nonce}{extensions}");
        let first = format!("n,,{client_first_bare}").into_bytes();
        let client = ScramClient {
            mechanism,
            password: password.to_string(),
            client_first_bare,
            nonce,
        };
        (client, first)
    }

    /// The client's final message, answering the server's first.
    pub fn respond(
        self,
        server_first: &[u8],
    ) -> Result<(Vec<u8>, AwaitingServerFinal), ScramError> {
        let text = std::str::from_utf8(server_first).map_err(|_| ScramError("not UTF-8"))?;
        let mut attributes = text.split(',');
        let mut next = |prefix: &'static str| {
            attributes
                .next()
                .and_then(|a| a.strip_prefix(prefix))
                .ok_or(ScramError("server-first message malformed"))
        };
        let nonce = next("r=")?;
        let salt = BASE64
            .decode(next("s=")?)
            .map_err(|_| ScramError("salt is not base64"))?;
        let iterations: i32 = next("i=")?
            .parse()
            .map_err(|_| ScramError("iteration count is not a number"))?;
        if !nonce.starts_with(&self.nonce) || nonce.len() == self.nonce.len() {
            return Err(ScramError("server nonce does not extend the client's"));
        }
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
            return Err(ScramError("iteration count outside Kafka's range"));
        }
        let m = self.mechanism;
        let salted = m.salted_password(self.password.as_bytes(), &salt, iterations);
        let client_key = m.hmac(&salted, b"Client Key");
        let without_proof = format!("c={},r={nonce}", BASE64.encode("n,,"));
        let auth_message = format!("{},{text},{without_proof}", self.client_first_bare);
        let signature = m.hmac(&m.hash(&client_key), auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = m.hmac(&salted, b"Server Key");
        let expected_signature = m.hmac(&server_key, auth_message.as_bytes());
        let last = format!("{without_proof},p={}", BASE64.encode(proof)).into_bytes();
        Ok((last, AwaitingServerFinal { expected_signature }))
    }
}

impl AwaitingServerFinal {
    /// Whether the server's final message ("v=signature") proves it holds the credential.
    pub fn verify(self, server_final: &[u8]) -> Result<(), ScramError> {
        let text = std::str::from_utf8(server_final).map_err(|_| ScramError("not UTF-8"))?;
        if text.starts_with("e=") {
            return Err(ScramError("the server refused the login"));
        }
        let signature = text
            .strip_prefix("v=")
            .and_then(|v| BASE64.decode(v).ok())
            .ok_or(ScramError("server-final message malformed"))?;
        if !constant_time_eq(&signature, &self.expected_signature) {
            return Err(ScramError("the server's signature is wrong"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scram::{ClientFirst, Exchange};

    #[test]
    fn rfc_7677_test_vector_proof_and_server_signature() {
        let (client, first) = ScramClient::with_nonce(
            ScramMechanism::Sha256,
            "user",
            "pencil",
            false,
            "rOprNGfwEbeRWgbNEkqO".into(),
        );
        assert_eq!(first, b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let (last, awaiting) = client.respond(server_first.as_bytes()).unwrap();
        assert_eq!(
            String::from_utf8(last).unwrap(),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,\
             p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        let server_final = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";
        assert!(awaiting.verify(server_final).is_ok());
        let (client, _) = ScramClient::with_nonce(
            ScramMechanism::Sha256,
            "user",
            "pencil",
            false,
            "rOprNGfwEbeRWgbNEkqO".into(),
        );
        let (_, awaiting) = client.respond(server_first.as_bytes()).unwrap();
        assert!(
            awaiting.verify(b"v=AAAA").is_err(),
            "a server that cannot prove itself"
        );
    }

    #[test]
    fn logs_in_to_our_own_server_and_refuses_a_server_that_cannot_prove_itself() {
        for mechanism in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
            let salted = mechanism.salted_password(b"pw", b"salt", MIN_ITERATIONS);
            let stored = mechanism.credential(b"salt", &salted, MIN_ITERATIONS);
            let (client, first) = ScramClient::start(mechanism, "a=b,c", "pw", false);
            let first = ClientFirst::parse(&first).unwrap();
            assert_eq!(first.user, "a=b,c");
            let (exchange, server_first) = Exchange::start(mechanism, first, Some(stored));
            let (last, awaiting) = client.respond(&server_first).unwrap();
            let (_, server_final) = exchange.finish(&last).unwrap();
            assert!(awaiting.verify(&server_final).is_ok());
            let (client, _) = ScramClient::start(mechanism, "u", "pw", false);
            assert!(client.respond(&server_first).is_err(), "another nonce");
        }
    }

    #[test]
    fn hostile_iteration_counts_are_refused_before_hashing() {
        let (client, _) =
            ScramClient::with_nonce(ScramMechanism::Sha512, "u", "p", false, "abc".into());
        assert!(client.respond(b"r=abcdef,s=AAAA,i=2000000000").is_err());
        let (client, _) =
            ScramClient::with_nonce(ScramMechanism::Sha512, "u", "p", false, "abc".into());
        assert!(client.respond(b"r=abcdef,s=AAAA,i=1").is_err());
    }
}
