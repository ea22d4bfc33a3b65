//! How the table writer proves itself to a REST catalog: a bearer token given in the config,
//! or one asked for with OAuth2's client-credentials grant (Iceberg's `credential` catalog
//! property: `client_id:client_secret`, sent to the catalog's `/v1/oauth/tokens` or to an
//! identity provider's token endpoint, with the scope `catalog` unless another is given, as
//! Iceberg's Java client and pyiceberg ask). An asked-for token is kept until 80 % of its life
//! has passed, and forgotten when the catalog answers 401.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use shoal_iceberg::IcebergError;
use shoal_net::http_client::{self, percent_encode, HttpLimits, HttpRequest, HttpUrl};
use shoal_net::oauth_token::{token_answer, REFRESH_WINDOW_FACTOR};

use crate::config::RestCatalogConfig;

/// The scope asked for when the config names none (Iceberg's clients' default).
const DEFAULT_SCOPE: &str = "catalog";
/// A token's life when neither the endpoint nor the token (its `exp`) states one.
const UNSTATED_LIFETIME: Duration = Duration::from_secs(300);
/// The token endpoint's answer: a token and a few fields.
const ANSWER_MAX_BYTES: u64 = 1 << 20;
const TIMEOUT: Duration = Duration::from_secs(30);

pub enum RestAuth {
    None,
    Token(String),
    ClientCredentials(ClientCredentials),
}

pub struct ClientCredentials {
    endpoint: HttpUrl,
    client_id: String,
    client_secret: String,
    scope: String,
    tls: Option<Arc<rustls::ClientConfig>>,
    kept: RefCell<Option<(String, Instant)>>,
}

fn failed(why: impl std::fmt::Display) -> IcebergError {
    IcebergError::Catalog(format!("REST catalog token: {why}"))
}

impl RestAuth {
    /// As `config` says, for the catalog at `base`.
    pub fn of(config: &RestCatalogConfig, base: &HttpUrl) -> Result<RestAuth, String> {
        match (&config.token, &config.credential) {
            (Some(_), Some(_)) => {
                Err("[iceberg.rest_catalog] give a token or a credential, not both".into())
            }
            (Some(token), None) => Ok(RestAuth::Token(token.clone())),
            (None, None) => Ok(RestAuth::None),
            (None, Some(credential)) => {
                let (client_id, client_secret) = credential.split_once(':').ok_or(
                    "[iceberg.rest_catalog] credential: client_id:client_secret".to_string(),
                )?;
                let endpoint = match &config.oauth2_server_uri {
                    Some(uri) => HttpUrl::parse(uri).map_err(|e| e.to_string())?,
                    None => base.with_path(&format!(
                        "{}/v1/oauth/tokens",
                        base.path.trim_end_matches('/')
                    )),
                };
                let tls = match endpoint.https {
                    true => Some(
                        shoal_net::tls_client::client_config(config.ca_file.as_deref(), None)
                            .map_err(|e| e.to_string())?,
                    ),
                    false => None,
                };
                Ok(RestAuth::ClientCredentials(ClientCredentials {
                    endpoint,
                    client_id: client_id.to_string(),
                    client_secret: client_secret.to_string(),
                    scope: config.scope.clone().unwrap_or_else(|| DEFAULT_SCOPE.into()),
                    tls,
                    kept: RefCell::new(None),
                }))
            }
        }
    }

    /// The Authorization header's value for the next request, if any.
    pub fn header(&self) -> Result<Option<String>, IcebergError> {
        match self {
            RestAuth::None => Ok(None),
            RestAuth::Token(token) => Ok(Some(format!("Bearer {token}"))),
            RestAuth::ClientCredentials(credentials) => {
                credentials.token().map(|t| Some(format!("Bearer {t}")))
            }
        }
    }

    /// The catalog refused the token: the next request asks for a new one.
    pub fn forget(&self) {
        if let RestAuth::ClientCredentials(credentials) = self {
            credentials.kept.replace(None);
        }
    }

    pub fn renews(&self) -> bool {
        matches!(self, RestAuth::ClientCredentials(_))
    }
}

impl ClientCredentials {
    fn token(&self) -> Result<String, IcebergError> {
        if let Some((token, renew_at)) = &*self.kept.borrow() {
            if Instant::now() < *renew_at {
                return Ok(token.clone());
            }
        }
        let asked_at = Instant::now();
        let (token, lifetime) = self.ask()?;
        let renew_at = asked_at + lifetime.mul_f64(REFRESH_WINDOW_FACTOR);
        self.kept.replace(Some((token.clone(), renew_at)));
        Ok(token)
    }

    fn ask(&self) -> Result<(String, Duration), IcebergError> {
        let form = format!(
            "grant_type=client_credentials&client_id={}&client_secret={}&scope={}",
            percent_encode(&self.client_id),
            percent_encode(&self.client_secret),
            percent_encode(&self.scope)
        );
        let request = HttpRequest {
            method: "POST",
            url: &self.endpoint,
            headers: &[
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("Accept", "application/json"),
            ],
            body: form.as_bytes(),
        };
        let limits = HttpLimits {
            tls: self.tls.as_ref(),
            timeout: TIMEOUT,
            body_max_bytes: ANSWER_MAX_BYTES,
        };
        let answer = http_client::send(&request, &limits).map_err(failed)?;
        if answer.status != 200 {
            let said: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
            // OAuth2's error fields, or the REST protocol's ErrorModel.
            let why = (said["error_description"].as_str())
                .or(said["error"].as_str())
                .or(said["error"]["message"].as_str())
                .unwrap_or("no reason given");
            return Err(failed(format!(
                "{} answered HTTP {}: {why}",
                self.endpoint.describe(),
                answer.status
            )));
        }
        let (token, lifetime) = token_answer(&answer.body)
            .map_err(|why| failed(format!("{}: {why}", self.endpoint.describe())))?;
        Ok((token, lifetime.unwrap_or(UNSTATED_LIFETIME)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(token: Option<&str>, credential: Option<&str>) -> RestCatalogConfig {
        RestCatalogConfig {
            url: "http://catalog:8181/api/catalog".into(),
            warehouse: None,
            token: token.map(str::to_string),
            credential: credential.map(str::to_string),
            oauth2_server_uri: None,
            scope: None,
            ca_file: None,
        }
    }

    #[test]
    fn a_credential_is_asked_for_at_the_catalogs_token_route_unless_told_otherwise() {
        let base = HttpUrl::parse("http://catalog:8181/api/catalog").unwrap();
        let RestAuth::ClientCredentials(asked) =
            RestAuth::of(&config(None, Some("id:se:cret")), &base).unwrap()
        else {
            panic!("a credential is exchanged for tokens")
        };
        assert_eq!(asked.endpoint.path, "/api/catalog/v1/oauth/tokens");
        assert_eq!(
            (asked.client_id.as_str(), asked.client_secret.as_str()),
            ("id", "se:cret")
        );
        assert_eq!(asked.scope, "catalog");
        assert!(RestAuth::of(&config(Some("t"), Some("id:secret")), &base).is_err());
        assert!(RestAuth::of(&config(None, Some("no-secret")), &base).is_err());
        assert!(matches!(
            RestAuth::of(&config(Some("t"), None), &base).unwrap().header(),
            Ok(Some(header)) if header == "Bearer t"
        ));
    }
}
