//! Authentication bytes from clients and from mirror sources: PLAIN tokens, the SCRAM
//! server's view of a client's first and final messages, the SCRAM client's view of a
//! server's first and final messages, certificate subjects, OAUTHBEARER client messages and
//! the JWTs in them (against a key set that is itself the input's second half), and JWKS
//! documents.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use shoal_auth::client_login::{ClientLogin, LoginCredential};
use shoal_auth::jwks::Jwks;
use shoal_auth::jwt::{self, TokenRules};
use shoal_auth::oauthbearer::ClientMessage;
use shoal_auth::scram::{ClientFirst, Exchange, ScramMechanism, MIN_ITERATIONS};
use shoal_auth::SaslMechanism;
use shoal_auth::{certificate, plain};

fuzz_target!(|data: &[u8]| {
    let users = BTreeMap::from([("alice".to_string(), "secret".to_string())]);
    let _ = plain::authenticate(data, &users);
    let _ = certificate::principal_of(data);

    // The first message and the rest, split at the first newline the input holds.
    let (first, rest) = match data.iter().position(|b| *b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let mechanism = ScramMechanism::Sha256;
    if let Ok(client_first) = ClientFirst::parse(first) {
        let salted = mechanism.salted_password(b"secret", b"salt", MIN_ITERATIONS);
        let credential = mechanism.credential(b"salt", &salted, MIN_ITERATIONS);
        let (exchange, _) = Exchange::start(mechanism, client_first, Some(credential));
        let _ = exchange.finish(rest);
    }
    let jwks = Jwks::parse(rest).unwrap_or_default();
    let _ = Jwks::parse(data);
    let rules = TokenRules {
        allow_unsecured: true,
        ..TokenRules::default()
    };
    if let Ok(message) = ClientMessage::parse(first) {
        let _ = jwt::validate(&message.token, &jwks, &rules, 1_800_000_000_000);
    }
    if let Ok(token) = std::str::from_utf8(first) {
        let _ = jwt::validate(token, &jwks, &TokenRules::default(), 1_800_000_000_000);
    }
    let password = LoginCredential::Password {
        user: "alice".into(),
        password: "secret".into(),
        delegation_token: false,
    };
    let bearer = LoginCredential::Bearer {
        token: "eyJ.a.b".into(),
        extensions: Vec::new(),
    };
    for mechanism in SaslMechanism::ALL {
        let credential = if mechanism.uses_password() {
            &password
        } else {
            &bearer
        };
        let (mut login, _) = ClientLogin::start(mechanism, credential).expect("its credential");
        if let Ok(Some(_)) = login.next(first) {
            let _ = login.next(rest);
        }
    }
});
