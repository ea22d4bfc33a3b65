use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::json;

use super::*;

const NOW_MS: i64 = 1_800_000_000_000;
const NOW_S: i64 = NOW_MS / 1000;

struct Signer {
    pair: EcdsaKeyPair,
    rng: SystemRandom,
}

impl Signer {
    fn new() -> Signer {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        Signer { pair, rng }
    }

    fn jwks(&self, kid: &str) -> Jwks {
        let point = self.pair.public_key().as_ref();
        let document = json!({"keys": [{
            "kty": "EC", "crv": "P-256", "kid": kid, "use": "sig",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        }]});
        Jwks::parse(document.to_string().as_bytes()).unwrap()
    }

    fn token(&self, header: Value, claims: Value) -> String {
        let signed = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self.pair.sign(&self.rng, signed.as_bytes()).unwrap();
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
    }
}

fn claims() -> Value {
    json!({"sub": "alice", "iss": "https://idp", "aud": ["kafka"], "exp": NOW_S + 60,
           "iat": NOW_S, "scope": "produce consume"})
}

fn rules() -> TokenRules {
    TokenRules {
        expected_issuer: Some("https://idp".into()),
        expected_audience: vec!["kafka".into()],
        required_scopes: vec!["produce".into()],
        ..TokenRules::default()
    }
}

#[test]
fn a_signed_token_names_its_principal_and_its_end() {
    let signer = Signer::new();
    let token = signer.token(json!({"alg": "ES256", "kid": "k1"}), claims());
    let valid = validate(&token, &signer.jwks("k1"), &rules(), NOW_MS).unwrap();
    assert_eq!(valid.principal, "alice");
    assert_eq!(valid.expires_at_ms, (NOW_S + 60) * 1000);
    assert_eq!(valid.scopes, ["produce", "consume"]);
    // A token without a kid is tried against every key.
    let token = signer.token(json!({"alg": "ES256"}), claims());
    assert!(validate(&token, &signer.jwks("k1"), &rules(), NOW_MS).is_ok());
}

#[test]
fn tokens_are_refused_for_each_fault() {
    let signer = Signer::new();
    let jwks = signer.jwks("k1");
    let with = |key: &str, value: Value| {
        let mut claims = claims();
        claims[key] = value;
        signer.token(json!({"alg": "ES256", "kid": "k1"}), claims)
    };
    let without = |key: &str| {
        let mut claims = claims();
        claims.as_object_mut().unwrap().remove(key);
        signer.token(json!({"alg": "ES256", "kid": "k1"}), claims)
    };
    let good = signer.token(json!({"alg": "ES256", "kid": "k1"}), claims());
    let mut tampered = good.clone();
    tampered.replace_range(good.len() - 3.., "AAA");
    let other_signer = Signer::new();
    let cases = [
        ("expired", with("exp", json!(NOW_S - 31))),
        ("no exp", without("exp")),
        ("not yet valid", with("nbf", json!(NOW_S + 31))),
        ("issued in the future", with("iat", json!(NOW_S + 31))),
        ("wrong issuer", with("iss", json!("https://other"))),
        ("wrong audience", with("aud", json!("other"))),
        ("no principal", without("sub")),
        ("empty principal", with("sub", json!(" "))),
        ("missing scope", with("scope", json!("consume"))),
        ("tampered signature", tampered),
        (
            "another key's signature",
            other_signer.token(json!({"alg": "ES256", "kid": "k1"}), claims()),
        ),
        (
            "alg none",
            format!(
                "{}.{}.",
                URL_SAFE_NO_PAD.encode(json!({"alg": "none"}).to_string()),
                URL_SAFE_NO_PAD.encode(claims().to_string())
            ),
        ),
        (
            "HS256",
            signer.token(json!({"alg": "HS256", "kid": "k1"}), claims()),
        ),
        (
            "RS256 against an EC key",
            signer.token(json!({"alg": "RS256", "kid": "k1"}), claims()),
        ),
        ("two parts", "a.b".to_string()),
        ("not base64", "!!.??.--".to_string()),
        ("too long", "a".repeat(TOKEN_MAX_BYTES + 1)),
    ];
    for (what, token) in cases {
        assert!(
            matches!(
                validate(&token, &jwks, &rules(), NOW_MS),
                Err(AuthError::Token(_))
            ),
            "{what}"
        );
    }
    // A key id the set lacks is its own refusal: the broker fetches the keys again on it.
    let unknown = signer.token(json!({"alg": "ES256", "kid": "k2"}), claims());
    assert_eq!(
        validate(&unknown, &jwks, &rules(), NOW_MS),
        Err(AuthError::UnknownKey("k2".into()))
    );
    // Within the clock skew, a token just expired still passes.
    assert!(validate(&with("exp", json!(NOW_S - 5)), &jwks, &rules(), NOW_MS).is_ok());
}

#[test]
fn unsecured_tokens_only_when_allowed() {
    let token = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(json!({"alg": "none"}).to_string()),
        URL_SAFE_NO_PAD.encode(claims().to_string())
    );
    let allowed = TokenRules {
        allow_unsecured: true,
        ..rules()
    };
    assert_eq!(
        validate(&token, &Jwks::default(), &allowed, NOW_MS)
            .unwrap()
            .principal,
        "alice"
    );
    assert!(validate(&token, &Jwks::default(), &rules(), NOW_MS).is_err());
}

#[test]
fn key_sets_skip_what_they_cannot_use_and_refuse_what_is_broken() {
    let document = json!({"keys": [
        {"kty": "oct", "k": "c2VjcmV0"},
        {"kty": "EC", "crv": "P-521", "x": "AA", "y": "AA"},
        {"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"},
        {"kty": "RSA", "kid": "r", "n": "AAEAAQ", "e": "AQAB"},
    ]});
    let jwks = Jwks::parse(document.to_string().as_bytes()).unwrap();
    assert_eq!(jwks.keys.len(), 1);
    assert!(matches!(&jwks.keys[0].material, KeyMaterial::Rsa { n, .. } if n == &[1, 0, 1]));
    for broken in [
        json!({"keys": [{"kty": "RSA", "n": "AQAB"}]}),
        json!({"keys": [{"kty": "EC", "crv": "P-256", "x": "!!", "y": "AA"}]}),
        json!({"nokeys": []}),
    ] {
        assert!(
            Jwks::parse(broken.to_string().as_bytes()).is_err(),
            "{broken}"
        );
    }
}
