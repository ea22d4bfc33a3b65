//! What a Kafka client of Shoal's (the admin CLI, the benchmark, a mirror's source
//! connections) logs in with: its password, or for OAUTHBEARER a token, read from the file a
//! `file://` token endpoint names or asked of the identity provider's token endpoint with the
//! client-credentials grant (RFC 6749 §4.4), as Kafka's Java client and librdkafka's `oidc`
//! method do. Blocking: call it from a thread that may block.
//!
//! Tokens from an endpoint are kept, for every connection of the process, until 80 % of
//! their life has passed (Kafka's `sasl.login.refresh.window.factor`), so a client opening
//! many connections asks the provider once.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use rustls::ClientConfig;
use shoal_auth::client_login::LoginCredential;
use shoal_auth::client_security::OAuthBearerClient;
use shoal_auth::ClientSecurity;

use crate::http_client::{self, percent_encode, HttpLimits, HttpRequest, HttpUrl};
use crate::NetError;

/// A token larger than this is refused (a JWT is a few kilobytes).
const TOKEN_MAX_BYTES: u64 = 64 << 10;
/// The token endpoint's answer: the token and a few fields.
const ANSWER_MAX_BYTES: u64 = 1 << 20;
/// How long connecting to the endpoint, and each read and write, may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The part of a token's life after which a new one is asked for.
pub const REFRESH_WINDOW_FACTOR: f64 = 0.8;
/// A token's life when the endpoint gives none and the token names no expiry.
const UNSTATED_LIFETIME: Duration = Duration::from_secs(60);

/// The credential `security` logs in with, or None when it names no SASL login.
pub fn login_credential(security: &ClientSecurity) -> Result<Option<LoginCredential>, NetError> {
    let Some(mechanism) = security.sasl_mechanism.filter(|_| security.uses_sasl()) else {
        return Ok(None);
    };
    if mechanism.uses_password() {
        return Ok(Some(LoginCredential::Password {
            user: security.sasl_username.clone(),
            password: security.sasl_password.clone(),
            delegation_token: security.sasl_delegation_token,
        }));
    }
    let oauth = &security.oauthbearer;
    let token = match oauth.token_file() {
        Some(path) => read_token_file(&path)?,
        None => {
            let ca_file = (oauth.https_ca_file.as_deref()).or(security.ssl_ca_file.as_deref());
            endpoint_token(oauth, ca_file)?
        }
    };
    Ok(Some(LoginCredential::Bearer {
        token,
        extensions: oauth.extensions.clone(),
    }))
}

/// `security`'s credential, asked anew at each login (a blocking client's credential source).
pub fn credential_source(
    security: &ClientSecurity,
) -> Box<dyn FnMut() -> Result<LoginCredential, String> + Send> {
    let security = security.clone();
    Box::new(move || match login_credential(&security) {
        Ok(Some(credential)) => Ok(credential),
        Ok(None) => Err("the settings name no SASL login".into()),
        Err(e) => Err(e.to_string()),
    })
}

/// The token in `path`, trimmed, bounded in size.
fn read_token_file(path: &Path) -> Result<String, NetError> {
    let failed = |why: String| NetError::Config(format!("{}: {why}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| failed(e.to_string()))?;
    let mut text = String::new();
    file.take(TOKEN_MAX_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| failed(e.to_string()))?;
    if text.len() as u64 > TOKEN_MAX_BYTES {
        return Err(failed(format!("a token over {TOKEN_MAX_BYTES} bytes")));
    }
    let token = text.trim();
    if token.is_empty() || token.contains(char::is_whitespace) {
        return Err(failed("not one token".into()));
    }
    Ok(token.to_string())
}

/// A token kept until it is due for renewal.
struct Kept {
    token: String,
    renew_at: Instant,
}

/// Tokens by endpoint, client id and scope.
type Cache = Mutex<HashMap<(String, String, String), Kept>>;

fn cache() -> &'static Cache {
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    CACHE.get_or_init(Cache::default)
}

/// A token from the endpoint: the one kept, or a new one asked for.
fn endpoint_token(oauth: &OAuthBearerClient, ca_file: Option<&Path>) -> Result<String, NetError> {
    let key = (
        oauth.token_endpoint_url.clone(),
        oauth.client_id.clone(),
        oauth.scope.clone(),
    );
    let now = Instant::now();
    if let Some(kept) = cache().lock().ok().and_then(|c| {
        c.get(&key)
            .filter(|k| k.renew_at > now)
            .map(|k| k.token.clone())
    }) {
        return Ok(kept);
    }
    let (token, lifetime) = ask_endpoint(oauth, ca_file)?;
    let renew_at = now + lifetime.mul_f64(REFRESH_WINDOW_FACTOR);
    if let Ok(mut cache) = cache().lock() {
        let kept = Kept {
            token: token.clone(),
            renew_at,
        };
        cache.insert(key, kept);
    }
    Ok(token)
}

/// One client-credentials request: the token and how long it lives.
fn ask_endpoint(
    oauth: &OAuthBearerClient,
    ca_file: Option<&Path>,
) -> Result<(String, Duration), NetError> {
    let url = HttpUrl::parse(&oauth.token_endpoint_url)?;
    let tls: Option<Arc<ClientConfig>> = match url.https {
        true => Some(crate::tls_client::client_config(ca_file, None)?),
        false => None,
    };
    // RFC 6749 §2.3.1: the client authenticates with HTTP Basic.
    let basic = base64::engine::general_purpose::STANDARD
        .encode(format!("{}:{}", oauth.client_id, oauth.client_secret));
    let authorization = format!("Basic {basic}");
    let mut form = "grant_type=client_credentials".to_string();
    if !oauth.scope.is_empty() {
        form.push_str(&format!("&scope={}", percent_encode(&oauth.scope)));
    }
    let request = HttpRequest {
        method: "POST",
        url: &url,
        headers: &[
            ("Authorization", &authorization),
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Accept", "application/json"),
        ],
        body: form.as_bytes(),
    };
    let limits = HttpLimits {
        tls: tls.as_ref(),
        timeout: TIMEOUT,
        body_max_bytes: ANSWER_MAX_BYTES,
    };
    let answer = http_client::send(&request, &limits)?;
    let failed = |why: String| NetError::Http(format!("{}: {why}", url.describe()));
    if answer.status != 200 {
        let detail = String::from_utf8_lossy(&answer.body[..answer.body.len().min(200)]);
        return Err(failed(format!("HTTP status {}: {detail}", answer.status)));
    }
    parse_token_answer(&answer.body).map_err(failed)
}

/// The token endpoint's JSON answer: `access_token`, and its life from `expires_in`, else
/// from the token's own `exp`, else `UNSTATED_LIFETIME`.
fn parse_token_answer(body: &[u8]) -> Result<(String, Duration), String> {
    token_answer(body).map(|(token, life)| (token, life.unwrap_or(UNSTATED_LIFETIME)))
}

/// An OAuth2 token endpoint's JSON answer: `access_token`, and its life from `expires_in`,
/// else from the token's own `exp` (None when neither says).
pub fn token_answer(body: &[u8]) -> Result<(String, Option<Duration>), String> {
    let answer: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("an answer that is not JSON: {e}"))?;
    let token = answer["access_token"]
        .as_str()
        .filter(|t| !t.is_empty() && !t.contains(char::is_whitespace))
        .ok_or("no access_token in the answer")?
        .to_string();
    let lifetime = answer["expires_in"]
        .as_u64()
        .map(Duration::from_secs)
        .or_else(|| seconds_left(&token));
    Ok((token, lifetime))
}

/// The seconds a JWT has left by its `exp` claim (read, not verified: the broker verifies).
fn seconds_left(token: &str) -> Option<Duration> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let exp = claims["exp"].as_u64()?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_secs();
    Some(Duration::from_secs(exp.saturating_sub(now)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_answers_give_the_token_and_its_life() {
        let answer = br#"{"access_token":"a.b.c","token_type":"Bearer","expires_in":300}"#;
        assert_eq!(
            parse_token_answer(answer).unwrap(),
            ("a.b.c".to_string(), Duration::from_secs(300))
        );
        let far = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 120;
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(format!(r#"{{"sub":"svc","exp":{far}}}"#));
        let jwt = format!("e30.{payload}.sig");
        let body = format!(r#"{{"access_token":"{jwt}"}}"#);
        let (_, life) = parse_token_answer(body.as_bytes()).unwrap();
        assert!((118..=120).contains(&life.as_secs()), "{life:?}");
        assert_eq!(
            parse_token_answer(br#"{"access_token":"opaque"}"#)
                .unwrap()
                .1,
            UNSTATED_LIFETIME
        );
        for bad in [
            &br#"{"error":"invalid_client"}"#[..],
            b"<html>",
            br#"{"access_token":""}"#,
        ] {
            assert!(parse_token_answer(bad).is_err());
        }
    }

    #[test]
    fn a_token_file_holds_one_token() {
        let dir = std::env::temp_dir().join(format!("shoal-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("token");
        std::fs::write(&path, "a.b.c\n").unwrap();
        assert_eq!(read_token_file(&path).unwrap(), "a.b.c");
        std::fs::write(&path, "a.b.c d.e.f").unwrap();
        assert!(read_token_file(&path).is_err());
        std::fs::write(&path, "").unwrap();
        assert!(read_token_file(&path).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
