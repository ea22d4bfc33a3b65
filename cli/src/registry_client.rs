//! A client of a schema registry's REST API (Confluent's, as Shoal's brokers serve it on
//! `[schema_registry] listen`): one HTTP/1.1 or HTTPS request a connection, with HTTP Basic
//! credentials from the environment when set, and the registry's errors as `AdminError`s.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use rustls::ClientConfig;
use serde_json::Value;
use shoal_net::http_client::{self, HttpLimits, HttpRequest, HttpUrl};

use super::schemas::RegistryTarget;
use super::AdminError;

pub use shoal_net::http_client::percent_encode as encode;

const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";
/// An answer larger than this is refused (a schema is at most a few MiB).
const ANSWER_MAX_BYTES: u64 = 64 << 20;
const TIMEOUT: Duration = Duration::from_secs(30);

/// HTTP Basic credentials, `user:password`, from the environment (kept off the command line,
/// where other users of the machine could read them).
const USER_INFO_VARIABLE: &str = "SHOAL_REGISTRY_USER_INFO";

/// A registry's URL: http:// or https://host:port, nothing after.
fn parse_url(url: &str) -> Result<HttpUrl, AdminError> {
    let wrong = || AdminError::Protocol(format!("{url}: give http:// or https://host:port"));
    let parsed = HttpUrl::parse(url).map_err(|_| wrong())?;
    match parsed.path.as_str() {
        "/" => Ok(parsed),
        _ => Err(wrong()),
    }
}

/// The `Authorization` header's value for `user:password`.
fn basic_authorization(user_info: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(user_info)
    )
}

/// A registry at host:port.
pub struct Registry {
    url: HttpUrl,
    /// For https: the TLS settings.
    tls: Option<Arc<ClientConfig>>,
    /// The `Authorization` header's value.
    authorization: Option<String>,
}

impl Registry {
    pub fn new(target: &RegistryTarget) -> Result<Registry, AdminError> {
        Registry::at(&target.registry, target.registry_ca.as_deref())
    }

    /// The registry at `url`, an https one trusted by the system's CAs and `ca`.
    pub fn at(url: &str, ca: Option<&std::path::Path>) -> Result<Registry, AdminError> {
        let url = parse_url(url)?;
        let tls = match url.https {
            true => Some(
                shoal_net::tls_client::client_config(ca, None)
                    .map_err(|e| AdminError::Connect(e.to_string()))?,
            ),
            false => None,
        };
        let authorization = (std::env::var(USER_INFO_VARIABLE).ok())
            .map(|user_info| basic_authorization(&user_info));
        Ok(Registry {
            url,
            tls,
            authorization,
        })
    }

    /// The same registry, asked with the HTTP Basic credentials `user_info` (`user:password`)
    /// rather than the environment's.
    pub fn with_user_info(mut self, user_info: &str) -> Registry {
        self.authorization = Some(basic_authorization(user_info));
        self
    }

    /// One request (a connection each); the answer's JSON, or the registry's error.
    pub fn call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, AdminError> {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut headers = vec![("Content-Type", CONTENT_TYPE), ("Accept", CONTENT_TYPE)];
        if let Some(authorization) = &self.authorization {
            headers.push(("Authorization", authorization));
        }
        let url = self.url.with_path(path);
        let request = HttpRequest {
            method,
            url: &url,
            headers: &headers,
            body: body.as_bytes(),
        };
        let limits = HttpLimits {
            tls: self.tls.as_ref(),
            timeout: TIMEOUT,
            body_max_bytes: ANSWER_MAX_BYTES,
        };
        let answer =
            http_client::send(&request, &limits).map_err(|e| AdminError::Connect(e.to_string()))?;
        let json: Value = serde_json::from_slice(&answer.body).map_err(|e| {
            AdminError::Protocol(format!(
                "{}: an answer that is not JSON: {e}",
                url.describe()
            ))
        })?;
        if answer.status == 200 {
            return Ok(json);
        }
        Err(AdminError::Registry {
            status: answer.status,
            code: json["error_code"]
                .as_u64()
                .unwrap_or(u64::from(answer.status)) as u32,
            message: json["message"].as_str().unwrap_or_default().to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_are_encoded_and_urls_checked() {
        assert_eq!(encode("a/b c-value"), "a%2Fb%20c-value");
        assert!(parse_url("ftp://x:1").is_err());
        assert!(parse_url("https://x:1").unwrap().https);
        assert!(parse_url("http://x:1/path").is_err());
        assert_eq!(parse_url("http://x:1/").unwrap().port, 1);
    }
}
