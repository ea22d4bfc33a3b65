//! A bearer token checked as Kafka's KIP-768 validator checks it: a compact JWS whose header
//! names an algorithm Kafka accepts (RS256/384/512, PS256/384/512, ES256/384; never `none`
//! unless unsecured tokens are explicitly allowed), whose signature a key of the JWKS verifies,
//! and whose claims hold: `exp` in the future and `nbf`/`iat` not in it (both within the
//! clock skew), the issuer and an audience when configured, the principal claim (`sub` by
//! default) a non-empty string, and the required scopes present.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde_json::{Map, Value};

use crate::error::AuthError;
use crate::jwks::{Curve, Jwks, KeyMaterial, PublicKey};

/// The longest token taken.
pub const TOKEN_MAX_BYTES: usize = 16 << 10;

/// What a token must satisfy besides its signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRules {
    /// `sasl.oauthbearer.expected.issuer`.
    pub expected_issuer: Option<String>,
    /// `sasl.oauthbearer.expected.audience`: the token's `aud` must name one (none: unchecked).
    pub expected_audience: Vec<String>,
    /// `sasl.oauthbearer.sub.claim.name`: the claim that names the principal.
    pub principal_claim: String,
    /// `sasl.oauthbearer.scope.claim.name`.
    pub scope_claim: String,
    /// Scopes every token must carry.
    pub required_scopes: Vec<String>,
    /// `sasl.oauthbearer.clock.skew.seconds`.
    pub clock_skew_s: i64,
    /// Kafka's unsecured (test-only) tokens: `alg` `none`, no signature.
    pub allow_unsecured: bool,
}

impl Default for TokenRules {
    fn default() -> Self {
        TokenRules {
            expected_issuer: None,
            expected_audience: Vec::new(),
            principal_claim: "sub".to_string(),
            scope_claim: "scope".to_string(),
            required_scopes: Vec::new(),
            clock_skew_s: 30,
            allow_unsecured: false,
        }
    }
}

/// A token that passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidToken {
    pub principal: String,
    /// `exp`, in milliseconds since the epoch.
    pub expires_at_ms: i64,
    /// Until when the token is taken (`exp` plus the clock skew): a session on it may last
    /// that long (KIP-368), which leaves a client time to refresh a token it re-authenticated
    /// with just before `exp`.
    pub valid_until_ms: i64,
    pub scopes: Vec<String>,
}

fn refused(why: impl Into<String>) -> AuthError {
    AuthError::Token(why.into())
}

/// Checks `token` with the keys of `jwks` and `rules` at `now_ms`.
pub fn validate(
    token: &str,
    jwks: &Jwks,
    rules: &TokenRules,
    now_ms: i64,
) -> Result<ValidToken, AuthError> {
    if token.len() > TOKEN_MAX_BYTES {
        return Err(refused("the token is too long"));
    }
    let mut parts = token.split('.');
    let (Some(header_b64), Some(claims_b64), Some(signature_b64), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(refused("not a compact JWS (three dot-separated parts)"));
    };
    let header = json_part(header_b64, "header")?;
    let claims = json_part(claims_b64, "claims")?;
    let alg = header
        .get("alg")
        .and_then(Value::as_str)
        .ok_or_else(|| refused("the header names no alg"))?;
    let signed = &token.as_bytes()[..header_b64.len() + 1 + claims_b64.len()];
    if alg == "none" {
        if !rules.allow_unsecured {
            return Err(refused("alg none: unsecured tokens are not accepted"));
        }
    } else {
        let algorithm = Algorithm::parse(alg)?;
        let signature = URL_SAFE_NO_PAD
            .decode(signature_b64)
            .map_err(|_| refused("the signature is not base64url"))?;
        let kid = header.get("kid").and_then(Value::as_str);
        let mut candidates = jwks
            .candidates(kid)
            .filter(|key| algorithm.fits(key))
            .peekable();
        if candidates.peek().is_none() {
            return Err(match kid {
                Some(kid) if jwks.candidates(Some(kid)).next().is_none() => {
                    AuthError::UnknownKey(kid.to_string())
                }
                Some(kid) => refused(format!("the key with id {kid:?} is not for {alg}")),
                None => refused(format!("no key for {alg}")),
            });
        }
        if !candidates.any(|key| algorithm.verify(key, signed, &signature)) {
            return Err(refused("the signature does not verify"));
        }
    }
    check_claims(&claims, rules, now_ms)
}

fn json_part(part: &str, what: &str) -> Result<Map<String, Value>, AuthError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| refused(format!("the {what} is not base64url")))?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(refused(format!("the {what} is not a JSON object"))),
    }
}

fn check_claims(
    claims: &Map<String, Value>,
    rules: &TokenRules,
    now_ms: i64,
) -> Result<ValidToken, AuthError> {
    let now_s = now_ms.div_euclid(1000);
    let seconds = |name: &str| -> Result<Option<i64>, AuthError> {
        match claims.get(name) {
            None => Ok(None),
            Some(value) => value
                .as_f64()
                .filter(|v| v.is_finite())
                .map(|v| Some(v as i64))
                .ok_or_else(|| refused(format!("{name} is not a number"))),
        }
    };
    let expires = seconds("exp")?.ok_or_else(|| refused("the token has no exp"))?;
    if expires.saturating_add(rules.clock_skew_s) <= now_s {
        return Err(refused("the token has expired"));
    }
    for name in ["nbf", "iat"] {
        if seconds(name)?.is_some_and(|t| t.saturating_sub(rules.clock_skew_s) > now_s) {
            return Err(refused(format!("{name} lies in the future")));
        }
    }
    if let Some(issuer) = &rules.expected_issuer {
        if claims.get("iss").and_then(Value::as_str) != Some(issuer.as_str()) {
            return Err(refused("the issuer is not the expected one"));
        }
    }
    if !rules.expected_audience.is_empty() {
        let audience: Vec<&str> = match claims.get("aud") {
            Some(Value::String(one)) => vec![one.as_str()],
            Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !audience
            .iter()
            .any(|a| rules.expected_audience.iter().any(|e| e == a))
        {
            return Err(refused("no expected audience"));
        }
    }
    let principal = claims
        .get(&rules.principal_claim)
        .and_then(Value::as_str)
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| refused(format!("no {} claim", rules.principal_claim)))?;
    let scopes: Vec<String> = match claims.get(&rules.scope_claim) {
        Some(Value::String(list)) => list.split_whitespace().map(str::to_string).collect(),
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    if let Some(missing) = rules.required_scopes.iter().find(|s| !scopes.contains(s)) {
        return Err(refused(format!("the scope {missing} is missing")));
    }
    Ok(ValidToken {
        principal: principal.to_string(),
        expires_at_ms: expires.saturating_mul(1000),
        valid_until_ms: expires
            .saturating_add(rules.clock_skew_s)
            .saturating_mul(1000),
        scopes,
    })
}

/// The signature algorithms Kafka's validator accepts that `ring` verifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Algorithm {
    Rs256,
    Rs384,
    Rs512,
    Ps256,
    Ps384,
    Ps512,
    Es256,
    Es384,
}

impl Algorithm {
    fn parse(name: &str) -> Result<Algorithm, AuthError> {
        Ok(match name {
            "RS256" => Algorithm::Rs256,
            "RS384" => Algorithm::Rs384,
            "RS512" => Algorithm::Rs512,
            "PS256" => Algorithm::Ps256,
            "PS384" => Algorithm::Ps384,
            "PS512" => Algorithm::Ps512,
            "ES256" => Algorithm::Es256,
            "ES384" => Algorithm::Es384,
            other => return Err(refused(format!("alg {other} is not accepted"))),
        })
    }

    fn name(self) -> &'static str {
        match self {
            Algorithm::Rs256 => "RS256",
            Algorithm::Rs384 => "RS384",
            Algorithm::Rs512 => "RS512",
            Algorithm::Ps256 => "PS256",
            Algorithm::Ps384 => "PS384",
            Algorithm::Ps512 => "PS512",
            Algorithm::Es256 => "ES256",
            Algorithm::Es384 => "ES384",
        }
    }

    /// Whether `key` can verify this algorithm (and does not say it is for another).
    fn fits(self, key: &PublicKey) -> bool {
        if key.alg.as_deref().is_some_and(|alg| alg != self.name()) {
            return false;
        }
        match (self, &key.material) {
            (Algorithm::Es256, KeyMaterial::Ec { curve, .. }) => *curve == Curve::P256,
            (Algorithm::Es384, KeyMaterial::Ec { curve, .. }) => *curve == Curve::P384,
            (Algorithm::Es256 | Algorithm::Es384, _) => false,
            (_, KeyMaterial::Rsa { .. }) => true,
            (_, KeyMaterial::Ec { .. }) => false,
        }
    }

    fn verify(self, key: &PublicKey, signed: &[u8], signature: &[u8]) -> bool {
        match &key.material {
            KeyMaterial::Rsa { n, e } => {
                let parameters: &signature::RsaParameters = match self {
                    Algorithm::Rs256 => &signature::RSA_PKCS1_2048_8192_SHA256,
                    Algorithm::Rs384 => &signature::RSA_PKCS1_2048_8192_SHA384,
                    Algorithm::Rs512 => &signature::RSA_PKCS1_2048_8192_SHA512,
                    Algorithm::Ps256 => &signature::RSA_PSS_2048_8192_SHA256,
                    Algorithm::Ps384 => &signature::RSA_PSS_2048_8192_SHA384,
                    Algorithm::Ps512 => &signature::RSA_PSS_2048_8192_SHA512,
                    Algorithm::Es256 | Algorithm::Es384 => return false,
                };
                RsaPublicKeyComponents { n, e }
                    .verify(parameters, signed, signature)
                    .is_ok()
            }
            KeyMaterial::Ec { point, .. } => {
                let algorithm: &signature::EcdsaVerificationAlgorithm = match self {
                    Algorithm::Es256 => &signature::ECDSA_P256_SHA256_FIXED,
                    Algorithm::Es384 => &signature::ECDSA_P384_SHA384_FIXED,
                    _ => return false,
                };
                UnparsedPublicKey::new(algorithm, point)
                    .verify(signed, signature)
                    .is_ok()
            }
        }
    }
}

#[cfg(test)]
mod tests;
