//! `[authorizer]`, `[ssl]`, `[sasl]` (with `[sasl.oauthbearer]`) and `[delegation_token]`:
//! who may connect, how they prove it, and what they may do.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// ACLs (Kafka's StandardAuthorizer settings).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthorizerConfig {
    /// Check every request against the ACLs (Kafka's `authorizer.class.name`); off, every
    /// client may do anything.
    pub enabled: bool,
    /// Kafka's `super.users`: principals ("User:admin") allowed everything.
    pub super_users: Vec<String>,
    /// Kafka's `allow.everyone.if.no.acl.found`: a resource no ACL names is open to all.
    pub allow_everyone_if_no_acl_found: bool,
    /// Listeners (by name) that serve the internal APIs (the Diskless coordinator's and
    /// mirror-state writes); empty: any listener. Those APIs also need ClusterAction.
    pub internal_listeners: Vec<String>,
}

/// TLS on the SSL and SASL_SSL listeners, from PEM files (Kafka's `ssl.*` settings with
/// `ssl.keystore.type=PEM`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SslConfig {
    /// The broker's certificate chain, its own certificate first.
    pub certificate_file: Option<PathBuf>,
    /// The certificate's private key (PKCS#8, PKCS#1 or SEC1).
    pub key_file: Option<PathBuf>,
    /// Kafka's `ssl.client.auth`: none, requested or required.
    pub client_auth: ClientAuth,
    /// The CAs that sign client certificates (Kafka's truststore).
    pub truststore_file: Option<PathBuf>,
    /// How often the files are checked for changes, which reloads them (SIGHUP always
    /// does); 0: only on SIGHUP.
    pub reload_check_ms: u64,
}

impl Default for SslConfig {
    fn default() -> Self {
        SslConfig {
            certificate_file: None,
            key_file: None,
            client_auth: ClientAuth::None,
            truststore_file: None,
            reload_check_ms: 1000,
        }
    }
}

/// Whether TLS clients present certificates; their principal is the certificate's subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientAuth {
    None,
    Requested,
    Required,
}

/// SASL authentication on the SASL_PLAINTEXT and SASL_SSL listeners.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SaslConfig {
    /// Kafka's `sasl.enabled.mechanisms`.
    pub enabled_mechanisms: Vec<String>,
    /// PLAIN users and their passwords (Kafka's `user_<name>` JAAS options).
    pub plain_users: std::collections::BTreeMap<String, String>,
    /// A connection that has not authenticated this long after it opened is closed.
    pub authentication_timeout_ms: u64,
    /// Kafka's `connection.failed.authentication.delay.ms`: a failed login is answered after
    /// this long, which slows password guessing.
    pub failed_authentication_delay_ms: u64,
    /// Kafka's `connections.max.reauth.ms` (KIP-368): a SASL session lasts at most this long
    /// (an OAUTHBEARER session no longer than its token); the client re-authenticates on its
    /// connection before then, or the connection is closed at its next request. 0: sessions
    /// never end.
    pub connections_max_reauth_ms: u64,
    /// How OAUTHBEARER tokens are checked (KIP-768).
    pub oauthbearer: OAuthBearerConfig,
}

impl Default for SaslConfig {
    fn default() -> Self {
        SaslConfig {
            enabled_mechanisms: vec!["PLAIN".to_string()],
            plain_users: Default::default(),
            authentication_timeout_ms: 10_000,
            failed_authentication_delay_ms: 100,
            connections_max_reauth_ms: 0,
            oauthbearer: OAuthBearerConfig::default(),
        }
    }
}

/// Delegation tokens (KIP-48): Kafka's `delegation.token.*` broker settings. Off until a
/// secret key is set; every broker of a cluster must have the same one.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct DelegationTokenConfig {
    /// `delegation.token.secret.key`: signs tokens (their HMACs). Changing it invalidates
    /// every token. Keep the config file readable by the broker only.
    pub secret_key: Option<String>,
    /// `delegation.token.max.lifetime.ms`: no token outlives this, however often renewed.
    pub max_lifetime_ms: i64,
    /// `delegation.token.expiry.time.ms`: a token expires this long after it was made or
    /// last renewed.
    pub expiry_time_ms: i64,
    /// `delegation.token.expiry.check.interval.ms`: how often expired tokens are removed
    /// (a login with an expired token is refused before then too).
    pub expiry_check_interval_ms: u64,
}

impl Default for DelegationTokenConfig {
    fn default() -> Self {
        DelegationTokenConfig {
            secret_key: None,
            max_lifetime_ms: 7 * 24 * 3_600_000,
            expiry_time_ms: 24 * 3_600_000,
            expiry_check_interval_ms: 3_600_000,
        }
    }
}

impl DelegationTokenConfig {
    pub fn lifetimes(&self) -> shoal_coordinator::delegation_tokens::TokenLifetimes {
        shoal_coordinator::delegation_tokens::TokenLifetimes {
            max_lifetime_ms: self.max_lifetime_ms,
            expiry_time_ms: self.expiry_time_ms,
        }
    }
}

/// SASL/OAUTHBEARER token validation: Kafka's `sasl.oauthbearer.*` broker settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct OAuthBearerConfig {
    /// `sasl.oauthbearer.jwks.endpoint.url`: where the identity provider's keys are: its
    /// `https://` JWKS endpoint, or a `file://` URL (re-read when the file changes).
    pub jwks_endpoint_url: Option<String>,
    /// CAs (PEM) trusted for an `https://` endpoint's certificate, besides the system's.
    pub jwks_endpoint_ca_file: Option<std::path::PathBuf>,
    /// `sasl.oauthbearer.jwks.endpoint.refresh.ms`: the keys are read again this often (and
    /// an endpoint fetched again at once when a token names a key id the set lacks).
    pub jwks_endpoint_refresh_ms: u64,
    /// `sasl.oauthbearer.expected.audience`: a token's `aud` must name one of these (empty:
    /// not checked).
    pub expected_audience: Vec<String>,
    /// `sasl.oauthbearer.expected.issuer`: a token's `iss` must be this (unset: not checked).
    pub expected_issuer: Option<String>,
    /// `sasl.oauthbearer.sub.claim.name`: the claim that names the principal.
    pub sub_claim_name: String,
    /// `sasl.oauthbearer.scope.claim.name`.
    pub scope_claim_name: String,
    /// Scopes every token must carry (empty: none).
    pub required_scopes: Vec<String>,
    /// `sasl.oauthbearer.clock.skew.seconds`: leeway for `exp`, `nbf` and `iat`.
    pub clock_skew_seconds: i64,
    /// Kafka's unsecured validator, for tests only: tokens with `alg` `none` and no
    /// signature are taken. Never on a network anyone else reaches.
    pub allow_unsecured_tokens: bool,
}

impl Default for OAuthBearerConfig {
    fn default() -> Self {
        let rules = shoal_auth::jwt::TokenRules::default();
        OAuthBearerConfig {
            jwks_endpoint_url: None,
            jwks_endpoint_ca_file: None,
            jwks_endpoint_refresh_ms: 3_600_000,
            expected_audience: rules.expected_audience,
            expected_issuer: rules.expected_issuer,
            sub_claim_name: rules.principal_claim,
            scope_claim_name: rules.scope_claim,
            required_scopes: rules.required_scopes,
            clock_skew_seconds: rules.clock_skew_s,
            allow_unsecured_tokens: rules.allow_unsecured,
        }
    }
}

impl OAuthBearerConfig {
    pub fn rules(&self) -> shoal_auth::jwt::TokenRules {
        shoal_auth::jwt::TokenRules {
            expected_issuer: self.expected_issuer.clone(),
            expected_audience: self.expected_audience.clone(),
            principal_claim: self.sub_claim_name.clone(),
            scope_claim: self.scope_claim_name.clone(),
            required_scopes: self.required_scopes.clone(),
            clock_skew_s: self.clock_skew_seconds,
            allow_unsecured: self.allow_unsecured_tokens,
        }
    }
}
