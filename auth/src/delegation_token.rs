//! Delegation tokens (KIP-48) as credentials: a token's HMAC is HMAC-SHA512 of its id under
//! the brokers' shared secret (`delegation.token.secret.key`), and a client logs in by SCRAM
//! with the token id as user name and the HMAC, base64, as password. So the broker derives
//! the SCRAM credential itself; no credential is ever stored.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;

use crate::credential::ScramCredential;
use crate::scram::{ScramMechanism, MIN_ITERATIONS};

/// Kafka's token HMAC: HmacSHA512 keyed with the secret's UTF-8 bytes, over the id's.
pub fn token_hmac(secret_key: &str, token_id: &str) -> Vec<u8> {
    ScramMechanism::Sha512.hmac(secret_key.as_bytes(), token_id.as_bytes())
}

/// The SCRAM credential a login with the token checks against: the password is the HMAC in
/// base64, at Kafka's minimum iteration count. Its salt derives from the HMAC, so every login
/// with one token sees one salt, as with a stored credential.
pub fn token_credential(mechanism: ScramMechanism, hmac: &[u8]) -> ScramCredential {
    let password = BASE64.encode(hmac);
    let salt = mechanism.hmac(hmac, b"shoal delegation token salt")[..16].to_vec();
    let salted = mechanism.salted_password(password.as_bytes(), &salt, MIN_ITERATIONS);
    mechanism.credential(&salt, &salted, MIN_ITERATIONS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scram::{ClientFirst, Exchange};
    use crate::scram_client::ScramClient;

    #[test]
    fn a_client_with_the_hmac_logs_in_and_one_without_does_not() {
        let hmac = token_hmac("secret", "token-1");
        assert_eq!(hmac.len(), 64);
        assert_ne!(hmac, token_hmac("other secret", "token-1"));
        for mechanism in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
            for (password, accepted) in [(BASE64.encode(&hmac), true), ("guess".into(), false)] {
                let (client, first) = ScramClient::start(mechanism, "token-1", &password, true);
                let first = ClientFirst::parse(&first).unwrap();
                assert!(first.token_auth);
                let credential = token_credential(mechanism, &hmac);
                let (exchange, server_first) = Exchange::start(mechanism, first, Some(credential));
                let (client_final, _) = client.respond(&server_first).unwrap();
                assert_eq!(exchange.finish(&client_final).is_ok(), accepted);
            }
        }
    }
}
