//! Who a client is, decided from bytes it sent: SASL/PLAIN tokens, both sides of SCRAM,
//! OAUTHBEARER messages and the JWTs they carry (checked against a JWKS), and principals from
//! certificate subjects; and a client's own side: its security settings and its login. I/O-free (callers carry the bytes), so every parser here is fuzzed
//! (`fuzz/fuzz_targets/sasl.rs`).

pub mod certificate;
pub mod client_login;
pub mod client_security;
pub mod credential;
pub mod delegation_token;
pub mod error;
pub mod jwks;
pub mod jwt;
pub mod oauthbearer;
pub mod plain;
pub mod principal;
pub mod scram;
pub mod scram_client;

pub use client_security::{
    name_value, properties, ClientSecurity, SaslMechanism, SecurityProtocol,
};
pub use credential::ScramCredential;
pub use error::AuthError;
pub use principal::Principal;
