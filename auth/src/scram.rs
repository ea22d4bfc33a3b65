//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka serves them: the server keeps
//! only the salt, StoredKey, ServerKey and iteration count; the client proves it knows the
//! password without sending it, and the server proves it knows the credential. An unknown user
//! gets a made-up salt that stays the same across attempts, so the exchange does not tell
//! whether a user exists.

use std::sync::OnceLock;

use crate::credential::ScramCredential;
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256, Sha512};

use crate::plain::constant_time_eq;

/// Kafka's bounds on `iterations` in AlterUserScramCredentials.
pub const MIN_ITERATIONS: i32 = 4096;
pub const MAX_ITERATIONS: i32 = 16384;
const NONCE_BYTES: usize = 24;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScramMechanism {
    Sha256,
    Sha512,
}

impl ScramMechanism {
    /// Kafka's ScramMechanism codes (AlterUserScramCredentials, DescribeUserScramCredentials).
    pub fn code(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    pub fn from_code(code: i8) -> Option<ScramMechanism> {
        match code {
            1 => Some(ScramMechanism::Sha256),
            2 => Some(ScramMechanism::Sha512),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    pub fn hmac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => {
                let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("any key");
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
            ScramMechanism::Sha512 => {
                let mut mac = <Hmac<Sha512> as KeyInit>::new_from_slice(key).expect("any key");
                mac.update(data);
                mac.finalize().into_bytes().to_vec()
            }
        }
    }

    pub fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
            ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// RFC 5802's Hi(): PBKDF2 with this HMAC and one output block. Clients compute it
    /// (AlterUserScramCredentials carries its result), as Shoal does toward a mirror's source.
    pub fn salted_password(self, password: &[u8], salt: &[u8], iterations: i32) -> Vec<u8> {
        let mut block = salt.to_vec();
        block.extend_from_slice(&1u32.to_be_bytes());
        let mut u = self.hmac(password, &block);
        let mut out = u.clone();
        for _ in 1..iterations.max(1) {
            u = self.hmac(password, &u);
            for (o, x) in out.iter_mut().zip(&u) {
                *o ^= x;
            }
        }
        out
    }

    /// What a server keeps from a salted password.
    pub fn credential(
        self,
        salt: &[u8],
        salted_password: &[u8],
        iterations: i32,
    ) -> ScramCredential {
        let client_key = self.hmac(salted_password, b"Client Key");
        ScramCredential {
            salt: salt.to_vec(),
            stored_key: self.hash(&client_key),
            server_key: self.hmac(salted_password, b"Server Key"),
            iterations,
        }
    }
}

/// The client's first message: "n,,n=user,r=nonce".
#[derive(Debug)]
pub struct ClientFirst {
    pub user: String,
    /// The `tokenauth=true` extension (KIP-48): the user is a delegation token's id and the
    /// password its HMAC.
    pub token_auth: bool,
    gs2_header: String,
    bare: String,
    client_nonce: String,
}

impl ClientFirst {
    pub fn parse(message: &[u8]) -> Result<ClientFirst, ScramError> {
        let first = std::str::from_utf8(message).map_err(|_| ScramError("not UTF-8"))?;
        let (gs2_header, bare) = split_gs2_header(first)?;
        let mut attributes = bare.split(',');
        let user = attributes
            .next()
            .and_then(|a| a.strip_prefix("n="))
            .ok_or(ScramError("no user name"))
            .and_then(decode_name)?;
        let client_nonce = attributes
            .next()
            .and_then(|a| a.strip_prefix("r="))
            .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_graphic() && c != ','))
            .ok_or(ScramError("no client nonce"))?;
        let mut token_auth = false;
        for attribute in attributes {
            if attribute.starts_with("m=") {
                return Err(ScramError("a mandatory extension is not supported"));
            }
            // Kafka's extensions are key=value; others are ignored, as Kafka ignores them.
            if let Some(value) = attribute.strip_prefix("tokenauth=") {
                token_auth = value.eq_ignore_ascii_case("true");
            }
        }
        if let Some(authzid) = gs2_header
            .split(',')
            .nth(1)
            .and_then(|a| a.strip_prefix("a="))
        {
            if decode_name(authzid)? != user {
                return Err(ScramError("acting as another user is not supported"));
            }
        }
        Ok(ClientFirst {
            user,
            token_auth,
            gs2_header: gs2_header.to_string(),
            bare: bare.to_string(),
            client_nonce: client_nonce.to_string(),
        })
    }
}

/// Why an exchange failed; said to no one but the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramError(pub &'static str);

/// The server's side of one exchange, between the client's first and final messages.
#[derive(Debug)]
pub struct Exchange {
    mechanism: ScramMechanism,
    user: String,
    gs2_header: String,
    client_first_bare: String,
    server_first: String,
    nonce: String,
    credential: ScramCredential,
    /// False when the user has no credential: the exchange runs on a made-up one and fails.
    known: bool,
}

impl Exchange {
    /// Answers the client's first message with the server's, using the user's credential
    /// (None: the user has none, and the exchange will fail at the proof).
    pub fn start(
        mechanism: ScramMechanism,
        first: ClientFirst,
        credential: Option<ScramCredential>,
    ) -> (Exchange, Vec<u8>) {
        let known = credential.is_some();
        let credential = credential.unwrap_or_else(|| made_up_credential(mechanism, &first.user));
        let nonce = format!(
            "{}{}",
            first.client_nonce,
            BASE64.encode(random_bytes::<NONCE_BYTES>())
        );
        let server_first = format!(
            "r={nonce},s={},i={}",
            BASE64.encode(&credential.salt),
            credential.iterations
        );
        let exchange = Exchange {
            mechanism,
            user: first.user,
            gs2_header: first.gs2_header,
            client_first_bare: first.bare,
            server_first: server_first.clone(),
            nonce,
            credential,
            known,
        };
        (exchange, server_first.into_bytes())
    }

    /// Checks the client's proof; on success the user and the server's final message.
    pub fn finish(self, client_final: &[u8]) -> Result<(String, Vec<u8>), ScramError> {
        let text = std::str::from_utf8(client_final).map_err(|_| ScramError("not UTF-8"))?;
        let (without_proof, proof) = text.rsplit_once(",p=").ok_or(ScramError("no proof"))?;
        let mut attributes = without_proof.split(',');
        let binding = attributes
            .next()
            .and_then(|a| a.strip_prefix("c="))
            .ok_or(ScramError("no channel binding"))?;
        if BASE64.decode(binding).ok().as_deref() != Some(self.gs2_header.as_bytes()) {
            return Err(ScramError("channel binding differs from the first message"));
        }
        if attributes.next().and_then(|a| a.strip_prefix("r=")) != Some(self.nonce.as_str()) {
            return Err(ScramError("nonce differs"));
        }
        let proof = BASE64
            .decode(proof)
            .map_err(|_| ScramError("proof is not base64"))?;
        let auth_message = format!(
            "{},{},{without_proof}",
            self.client_first_bare, self.server_first
        );
        let client_signature = self
            .mechanism
            .hmac(&self.credential.stored_key, auth_message.as_bytes());
        if proof.len() != client_signature.len() {
            return Err(ScramError("proof has the wrong length"));
        }
        let client_key: Vec<u8> = proof
            .iter()
            .zip(&client_signature)
            .map(|(p, s)| p ^ s)
            .collect();
        let matches = constant_time_eq(
            &self.mechanism.hash(&client_key),
            &self.credential.stored_key,
        );
        if !(matches && self.known) {
            return Err(ScramError("invalid proof"));
        }
        let server_signature = self
            .mechanism
            .hmac(&self.credential.server_key, auth_message.as_bytes());
        let server_final = format!("v={}", BASE64.encode(server_signature));
        Ok((self.user, server_final.into_bytes()))
    }
}

/// "n,," or "y,," or "n,a=user," then the bare message; channel binding ("p=") is refused.
fn split_gs2_header(first: &str) -> Result<(&str, &str), ScramError> {
    let mut parts = first.splitn(3, ',');
    let (Some(flag), Some(authzid), Some(bare)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(ScramError("no GS2 header"));
    };
    if flag != "n" && flag != "y" {
        return Err(ScramError("channel binding is not supported"));
    }
    if !authzid.is_empty() && !authzid.starts_with("a=") {
        return Err(ScramError("malformed authorization id"));
    }
    let header_len = flag.len() + 1 + authzid.len() + 1;
    Ok((&first[..header_len], bare))
}

/// RFC 5802's saslname: "=2C" is ',' and "=3D" is '='; any other '=' is malformed.
fn decode_name(name: &str) -> Result<String, ScramError> {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find('=') {
        out.push_str(&rest[..at]);
        let code = rest
            .get(at + 1..at + 3)
            .ok_or(ScramError("malformed user name"))?;
        out.push(match code {
            "2C" => ',',
            "3D" => '=',
            _ => return Err(ScramError("malformed user name")),
        });
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    if out.is_empty() {
        return Err(ScramError("empty user name"));
    }
    Ok(out)
}

/// A credential for a user that has none: its salt derives from the user name and a secret
/// of this process, so repeated attempts see the same salt, as for a real user.
fn made_up_credential(mechanism: ScramMechanism, user: &str) -> ScramCredential {
    static SECRET: OnceLock<[u8; 32]> = OnceLock::new();
    let secret = SECRET.get_or_init(random_bytes::<32>);
    let salt = mechanism.hmac(secret, user.as_bytes())[..16].to_vec();
    ScramCredential {
        salt,
        stored_key: random_bytes::<64>().to_vec(),
        server_key: random_bytes::<64>().to_vec(),
        iterations: MIN_ITERATIONS,
    }
}

pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    getrandom::getrandom(&mut bytes).expect("the OS random source works");
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scram_client::ScramClient;

    fn credential(mechanism: ScramMechanism, password: &str) -> ScramCredential {
        let salt = b"some-salt";
        let salted = mechanism.salted_password(password.as_bytes(), salt, MIN_ITERATIONS);
        mechanism.credential(salt, &salted, MIN_ITERATIONS)
    }

    fn login(
        mechanism: ScramMechanism,
        stored: Option<ScramCredential>,
        password: &str,
    ) -> Result<String, ScramError> {
        let (client, first) = ScramClient::start(mechanism, "alice", password, false);
        let first = ClientFirst::parse(&first)?;
        let (exchange, server_first) = Exchange::start(mechanism, first, stored);
        let (last, _) = client.respond(&server_first)?;
        exchange.finish(&last).map(|(user, _)| user)
    }

    #[test]
    fn the_right_password_logs_in_with_either_hash() {
        for mechanism in [ScramMechanism::Sha256, ScramMechanism::Sha512] {
            let stored = credential(mechanism, "pencil");
            assert_eq!(
                login(mechanism, Some(stored.clone()), "pencil"),
                Ok("alice".into())
            );
            assert!(login(mechanism, Some(stored), "pen").is_err());
            assert!(login(mechanism, None, "pencil").is_err(), "unknown user");
        }
    }

    #[test]
    fn rfc_7677_test_vector_salted_password() {
        // RFC 7677 §3: user "user", password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==, 4096.
        let salt = BASE64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let salted = ScramMechanism::Sha256.salted_password(b"pencil", &salt, 4096);
        let client_key = ScramMechanism::Sha256.hmac(&salted, b"Client Key");
        let stored = ScramMechanism::Sha256.hash(&client_key);
        let bare = "n=user,r=rOprNGfwEbeRWgbNEkqO";
        let server_first = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let without_proof = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let auth = format!("{bare},{server_first},{without_proof}");
        let signature = ScramMechanism::Sha256.hmac(&stored, auth.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(a, b)| a ^ b)
            .collect();
        assert_eq!(
            BASE64.encode(proof),
            "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
    }

    #[test]
    fn an_unknown_user_sees_the_same_salt_each_time() {
        let first = |_: ()| {
            let first = ClientFirst::parse(b"n,,n=nobody,r=x").unwrap();
            let (_, server_first) = Exchange::start(ScramMechanism::Sha512, first, None);
            String::from_utf8(server_first)
                .unwrap()
                .split(',')
                .nth(1)
                .unwrap()
                .to_string()
        };
        assert_eq!(first(()), first(()));
    }

    #[test]
    fn malformed_first_messages_are_refused() {
        for bad in [
            "",
            "n,,",
            "p=tls-unique,,n=a,r=x",
            "n,,n=,r=x",
            "n,,n=a=ZZ,r=x",
            "n,,r=x",
            "n,a=bob,n=alice,r=x",
            "n,,n=a,r=x,m=ext",
        ] {
            assert!(ClientFirst::parse(bad.as_bytes()).is_err(), "{bad:?}");
        }
        assert_eq!(ClientFirst::parse(b"n,,n=a=2Cb,r=x").unwrap().user, "a,b");
    }

    #[test]
    fn the_token_extension_is_read_and_others_are_ignored() {
        let token = |m: &str| ClientFirst::parse(m.as_bytes()).unwrap().token_auth;
        assert!(token("n,,n=t1,r=x,tokenauth=true"));
        assert!(token("n,,n=t1,r=x,other=1,tokenauth=TRUE"));
        assert!(!token("n,,n=t1,r=x,tokenauth=false"));
        assert!(!token("n,,n=alice,r=x"));
        assert!(!token("n,,n=alice,r=x,othertokenauth=true"));
    }
}
