//! A Kafka client's security settings by Kafka's names (`security.protocol`, `sasl.*`,
//! `ssl.*`), as a client's properties file holds them: how the admin commands, the benchmark
//! and a mirror reach a broker. One type for all of them, so each takes the same names and
//! refuses the same mistakes.

use std::path::PathBuf;

use crate::scram::ScramMechanism;

/// Kafka's `security.protocol`: what a client connects with and what a listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SecurityProtocol {
    #[default]
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    pub const ALL: [SecurityProtocol; 4] = [
        SecurityProtocol::Plaintext,
        SecurityProtocol::Ssl,
        SecurityProtocol::SaslPlaintext,
        SecurityProtocol::SaslSsl,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// By Kafka's name, in any case (clients accept `sasl_ssl`).
    pub fn from_name(name: &str) -> Option<SecurityProtocol> {
        Self::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name.trim()))
    }

    pub const fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    pub const fn uses_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }
}

/// The SASL mechanisms a client logs in with (`client_login.rs`), by Kafka's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaslMechanism {
    Plain,
    ScramSha256,
    ScramSha512,
    OAuthBearer,
}

impl SaslMechanism {
    pub const ALL: [SaslMechanism; 4] = [
        SaslMechanism::Plain,
        SaslMechanism::ScramSha256,
        SaslMechanism::ScramSha512,
        SaslMechanism::OAuthBearer,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
            SaslMechanism::OAuthBearer => "OAUTHBEARER",
        }
    }

    /// The SCRAM variant, for the SCRAM mechanisms.
    pub const fn scram(self) -> Option<ScramMechanism> {
        match self {
            SaslMechanism::ScramSha256 => Some(ScramMechanism::Sha256),
            SaslMechanism::ScramSha512 => Some(ScramMechanism::Sha512),
            SaslMechanism::Plain | SaslMechanism::OAuthBearer => None,
        }
    }

    /// Whether the login proves a password (PLAIN, SCRAM) rather than carrying a token.
    pub const fn uses_password(self) -> bool {
        !matches!(self, SaslMechanism::OAuthBearer)
    }

    pub fn from_name(name: &str) -> Option<SaslMechanism> {
        Self::ALL.into_iter().find(|m| m.name() == name.trim())
    }
}

/// Shoal's name for ScramLoginModule's `tokenauth` option, stored with the other settings.
const DELEGATION_TOKEN_SETTING: &str = "shoal.sasl.delegation.token";

/// How a client reaches a broker.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClientSecurity {
    pub protocol: SecurityProtocol,
    pub sasl_mechanism: Option<SaslMechanism>,
    pub sasl_username: String,
    pub sasl_password: String,
    /// SCRAM with a delegation token (`tokenauth="true"` in ScramLoginModule's options):
    /// the username is the token's id, the password its HMAC.
    pub sasl_delegation_token: bool,
    /// PEM CAs trusted for the broker's certificate, besides the system's
    /// (`ssl.truststore.location` with `ssl.truststore.type=PEM`, or librdkafka's
    /// `ssl.ca.location`).
    pub ssl_ca_file: Option<PathBuf>,
    /// A client certificate and its key (PEM), for brokers that require one.
    pub ssl_certificate_file: Option<PathBuf>,
    pub ssl_key_file: Option<PathBuf>,
    /// Where an OAUTHBEARER client gets its tokens.
    pub oauthbearer: OAuthBearerClient,
}

/// An OAUTHBEARER client's token source, by the names Kafka's Java client (KIP-768,
/// KIP-1139) and librdkafka (`sasl.oauthbearer.method=oidc`) give it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OAuthBearerClient {
    /// `sasl.oauthbearer.token.endpoint.url`: a `file://` URL names a file holding the token
    /// (read again at each login, so whatever renews it is free to); an `http(s)://` URL is
    /// the provider's token endpoint, asked with the client-credentials grant.
    pub token_endpoint_url: String,
    pub client_id: String,
    pub client_secret: String,
    /// The scope asked for, space-separated; empty asks for none.
    pub scope: String,
    /// SASL extensions (KIP-342) sent with the token.
    pub extensions: Vec<(String, String)>,
    /// PEM CAs trusted for an https token endpoint besides the system's (librdkafka's
    /// `https.ca.location`); without it, the broker's CA file (`ssl.truststore.location`).
    pub https_ca_file: Option<PathBuf>,
}

impl OAuthBearerClient {
    /// The token file a `file://` endpoint names.
    pub fn token_file(&self) -> Option<PathBuf> {
        self.token_endpoint_url
            .strip_prefix("file://")
            .map(PathBuf::from)
    }
}

impl ClientSecurity {
    /// Settings by Kafka's client names; a name that is not one of them is refused.
    pub fn from_client_settings<'a>(
        settings: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<ClientSecurity, String> {
        let mut security = ClientSecurity::default();
        for (name, value) in settings {
            match security.set(name, value) {
                Ok(true) => {}
                Ok(false) => return Err(format!("{name}: not a client security setting")),
                Err(why) => return Err(format!("{name}: {why}")),
            }
        }
        security.check()?;
        Ok(security)
    }

    pub fn uses_tls(&self) -> bool {
        self.protocol.uses_tls()
    }

    pub fn uses_sasl(&self) -> bool {
        self.protocol.uses_sasl()
    }

    /// Takes one setting: Ok(false) when `name` is not a client security setting (the caller
    /// may know it as one of its own).
    pub fn set(&mut self, name: &str, value: &str) -> Result<bool, &'static str> {
        let value = value.trim();
        let path = || Some(PathBuf::from(value)).filter(|_| !value.is_empty());
        match name {
            "security.protocol" => {
                self.protocol =
                    SecurityProtocol::from_name(value).ok_or("unknown security.protocol")?;
            }
            // librdkafka's plural name too.
            "sasl.mechanism" | "sasl.mechanisms" => {
                self.sasl_mechanism =
                    Some(SaslMechanism::from_name(value).ok_or(
                        "sasl.mechanism: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER",
                    )?);
            }
            "sasl.username" => self.sasl_username = value.to_string(),
            "sasl.password" => self.sasl_password = value.to_string(),
            // How a login with a delegation token is stored (`to_pairs`); a client names it
            // with `tokenauth="true"` in sasl.jaas.config, as Kafka's do.
            DELEGATION_TOKEN_SETTING => self.sasl_delegation_token = value == "true",
            "sasl.jaas.config" => self.set_jaas(value)?,
            "sasl.oauthbearer.token.endpoint.url" => {
                self.oauthbearer.token_endpoint_url = value.to_string()
            }
            "sasl.oauthbearer.client.id" | "sasl.oauthbearer.client.credentials.client.id" => {
                self.oauthbearer.client_id = value.to_string()
            }
            "sasl.oauthbearer.client.secret"
            | "sasl.oauthbearer.client.credentials.client.secret" => {
                self.oauthbearer.client_secret = value.to_string()
            }
            "sasl.oauthbearer.scope" => self.oauthbearer.scope = value.to_string(),
            "sasl.oauthbearer.extensions" => {
                self.oauthbearer.extensions = extensions(value)
                    .ok_or("sasl.oauthbearer.extensions: key=value pairs, comma-separated")?
            }
            // The token comes from the endpoint (oidc); librdkafka's `default`, unsecured
            // tokens the client makes up, is not offered.
            "sasl.oauthbearer.method" if value.eq_ignore_ascii_case("oidc") => {}
            // The Java client's handler for the same settings: named in its properties files.
            "sasl.login.callback.handler.class"
                if value.ends_with(".OAuthBearerLoginCallbackHandler") => {}
            "https.ca.location" => self.oauthbearer.https_ca_file = path(),
            "ssl.truststore.location" | "ssl.ca.location" => self.ssl_ca_file = path(),
            "ssl.truststore.type" | "ssl.keystore.type" if value.eq_ignore_ascii_case("PEM") => {}
            "ssl.keystore.location" | "ssl.certificate.location" => {
                self.ssl_certificate_file = path()
            }
            "ssl.key.location" => self.ssl_key_file = path(),
            // Kafka's default, and the only behaviour offered: the name must match.
            "ssl.endpoint.identification.algorithm" if value.eq_ignore_ascii_case("https") => {}
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Whether the settings taken together can log in.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.uses_sasl() {
            let oauth = &self.oauthbearer;
            match self.sasl_mechanism {
                None => {
                    return Err(
                        "SASL needs sasl.mechanism, with a username and password or a token source",
                    )
                }
                Some(m) if m.uses_password() => {
                    if self.sasl_username.is_empty() || self.sasl_password.is_empty() {
                        return Err("SASL PLAIN and SCRAM need a username and password");
                    }
                }
                Some(_) if oauth.token_endpoint_url.is_empty() => {
                    return Err("OAUTHBEARER needs sasl.oauthbearer.token.endpoint.url");
                }
                Some(_) if oauth.token_file().is_some() => {}
                Some(_) => {
                    let url = &oauth.token_endpoint_url;
                    if !url.starts_with("https://") && !url.starts_with("http://") {
                        return Err(
                            "sasl.oauthbearer.token.endpoint.url: file://, https:// or http://",
                        );
                    }
                    if oauth.client_id.is_empty() || oauth.client_secret.is_empty() {
                        return Err("OAUTHBEARER's token endpoint needs a client id and secret");
                    }
                }
            }
        }
        if self.ssl_certificate_file.is_some() != self.ssl_key_file.is_some() {
            return Err("a client certificate needs both its certificate and key locations");
        }
        Ok(())
    }

    /// The settings given, by Kafka's names, for storing them.
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
        [
            ("security.protocol", Some(self.protocol.name().to_string())),
            (
                "sasl.mechanism",
                self.sasl_mechanism.map(|m| m.name().to_string()),
            ),
            ("sasl.username", Some(self.sasl_username.clone())),
            ("sasl.password", Some(self.sasl_password.clone())),
            (
                DELEGATION_TOKEN_SETTING,
                self.sasl_delegation_token.then(|| "true".to_string()),
            ),
            ("ssl.truststore.location", path(&self.ssl_ca_file)),
            ("ssl.keystore.location", path(&self.ssl_certificate_file)),
            ("ssl.key.location", path(&self.ssl_key_file)),
            (
                "sasl.oauthbearer.token.endpoint.url",
                Some(self.oauthbearer.token_endpoint_url.clone()),
            ),
            (
                "sasl.oauthbearer.client.id",
                Some(self.oauthbearer.client_id.clone()),
            ),
            (
                "sasl.oauthbearer.client.secret",
                Some(self.oauthbearer.client_secret.clone()),
            ),
            (
                "sasl.oauthbearer.scope",
                Some(self.oauthbearer.scope.clone()),
            ),
            (
                "sasl.oauthbearer.extensions",
                Some(
                    (self.oauthbearer.extensions.iter())
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(","),
                ),
            ),
            ("https.ca.location", path(&self.oauthbearer.https_ca_file)),
        ]
        .into_iter()
        .filter_map(|(name, value)| Some((name, value?)))
        .filter(|(_, value)| !value.is_empty())
        .collect()
    }
}

/// A `name=value` setting: a `-X` argument, or a line of a properties file.
pub fn name_value(text: &str) -> Result<(String, String), String> {
    text.split_once('=')
        .map(|(n, v)| (n.trim().to_string(), v.to_string()))
        .ok_or_else(|| format!("'{text}' is not name=value"))
}

/// The settings of a Kafka client properties file, as Kafka's tools take with
/// `--command-config`: one `name=value` a line, `#` or `!` starting a comment.
pub fn properties(text: &str) -> Result<Vec<(String, String)>, String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#') && !line.starts_with('!'))
        .map(name_value)
        .collect()
}

impl ClientSecurity {
    /// A JAAS line's options: `username` and `password` for PlainLoginModule and
    /// ScramLoginModule; `clientId`, `clientSecret`, `scope` and `extension_<key>` for
    /// OAuthBearerLoginModule.
    fn set_jaas(&mut self, jaas: &str) -> Result<(), &'static str> {
        let options = jaas_options(jaas).ok_or("sasl.jaas.config: options are key=\"value\"")?;
        if jaas.contains("OAuthBearerLoginModule") {
            for (key, value) in options {
                match key.as_str() {
                    "clientId" => self.oauthbearer.client_id = value,
                    "clientSecret" => self.oauthbearer.client_secret = value,
                    "scope" => self.oauthbearer.scope = value,
                    _ => {
                        if let Some(name) = key.strip_prefix("extension_") {
                            self.oauthbearer.extensions.push((name.to_string(), value));
                        }
                    }
                }
            }
            return Ok(());
        }
        let value_of = |name: &str| options.iter().find(|(k, _)| k == name).map(|(_, v)| v);
        match (value_of("username"), value_of("password")) {
            (Some(user), Some(password)) => {
                self.sasl_username = user.clone();
                self.sasl_password = password.clone();
                self.sasl_delegation_token =
                    value_of("tokenauth").is_some_and(|v| v.eq_ignore_ascii_case("true"));
                Ok(())
            }
            _ => Err("sasl.jaas.config needs username=\"...\" and password=\"...\""),
        }
    }
}

/// The `key="value"` options of a JAAS line: `org.apache...Module required k="v" k2="v2";`.
fn jaas_options(jaas: &str) -> Option<Vec<(String, String)>> {
    let mut options = Vec::new();
    let mut rest = jaas;
    while let Some(equals) = rest.find("=\"") {
        let key = rest[..equals].split_whitespace().last()?.to_string();
        let value_start = equals + 2;
        let value_len = rest[value_start..].find('"')?;
        options.push((key, rest[value_start..value_start + value_len].to_string()));
        rest = &rest[value_start + value_len + 1..];
    }
    Some(options)
}

/// librdkafka's `sasl.oauthbearer.extensions`: `key=value` pairs, comma-separated.
fn extensions(text: &str) -> Option<Vec<(String, String)>> {
    text.split(',')
        .map(str::trim)
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=')?;
            let key = key.trim();
            let letters = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphabetic());
            letters.then(|| (key.to_string(), value.trim().to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The settings stored by name read back the same.
    fn assert_round_trips(security: &ClientSecurity) {
        let pairs = security.to_pairs();
        let again =
            ClientSecurity::from_client_settings(pairs.iter().map(|(n, v)| (*n, v.as_str())));
        assert_eq!(&again.unwrap(), security);
    }

    #[test]
    fn settings_by_kafkas_names_round_trip_and_are_checked() {
        let jaas = r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="mirror" password="s3cret";"#;
        let security = ClientSecurity::from_client_settings([
            ("security.protocol", "sasl_ssl"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            ("sasl.jaas.config", jaas),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.location", "/etc/ca.pem"),
        ])
        .unwrap();
        assert_eq!(security.protocol, SecurityProtocol::SaslSsl);
        assert_eq!(security.sasl_mechanism, Some(SaslMechanism::ScramSha512));
        assert_eq!(security.sasl_username, "mirror");
        assert_eq!(security.sasl_password, "s3cret");
        assert!(!security.sasl_delegation_token);
        assert_eq!(security.ssl_ca_file, Some(PathBuf::from("/etc/ca.pem")));
        assert!(security.uses_tls() && security.uses_sasl());
        assert_round_trips(&security);
        let token = jaas.replace("s3cret\"", "s3cret\" tokenauth=\"true\"");
        let with_token = ClientSecurity::from_client_settings([
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "SCRAM-SHA-256"),
            ("sasl.jaas.config", token.as_str()),
        ])
        .unwrap();
        assert!(with_token.sasl_delegation_token);
        assert_round_trips(&with_token);

        let no_password = [
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
        ];
        assert!(ClientSecurity::from_client_settings(no_password).is_err());
        assert!(ClientSecurity::from_client_settings([("security.protocol", "TLS")]).is_err());
        assert!(ClientSecurity::from_client_settings([("sasl.mechanism", "GSSAPI")]).is_err());
        let no_key = [("ssl.certificate.location", "/c.pem")];
        assert!(ClientSecurity::from_client_settings(no_key).is_err());
        let unnamed = [("ssl.endpoint.identification.algorithm", "")];
        assert!(ClientSecurity::from_client_settings(unnamed).is_err());
        assert!(ClientSecurity::from_client_settings([("acks", "all")]).is_err());
    }

    #[test]
    fn oauthbearer_takes_kafkas_and_librdkafkas_names() {
        let jaas = r#"org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="svc" clientSecret="s3cret" scope="kafka" extension_traceId="42";"#;
        let java = ClientSecurity::from_client_settings([
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanism", "OAUTHBEARER"),
            ("sasl.jaas.config", jaas),
            (
                "sasl.login.callback.handler.class",
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
            ),
            ("sasl.oauthbearer.token.endpoint.url", "https://idp/token"),
        ])
        .unwrap();
        let oauth = &java.oauthbearer;
        assert_eq!(
            (oauth.client_id.as_str(), oauth.scope.as_str()),
            ("svc", "kafka")
        );
        assert_eq!(
            oauth.extensions,
            [("traceId".to_string(), "42".to_string())]
        );
        let librdkafka = ClientSecurity::from_client_settings([
            ("security.protocol", "SASL_SSL"),
            ("sasl.mechanisms", "OAUTHBEARER"),
            ("sasl.oauthbearer.method", "oidc"),
            ("sasl.oauthbearer.client.id", "svc"),
            ("sasl.oauthbearer.client.secret", "s3cret"),
            ("sasl.oauthbearer.scope", "kafka"),
            ("sasl.oauthbearer.extensions", "traceId=42"),
            ("sasl.oauthbearer.token.endpoint.url", "https://idp/token"),
        ])
        .unwrap();
        assert_eq!(librdkafka, java);
        assert_round_trips(&java);

        let file = [
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "OAUTHBEARER"),
            (
                "sasl.oauthbearer.token.endpoint.url",
                "file:///run/token.jwt",
            ),
        ];
        let from_file = ClientSecurity::from_client_settings(file).unwrap();
        let token_file = from_file.oauthbearer.token_file();
        assert_eq!(token_file, Some(PathBuf::from("/run/token.jwt")));

        let no_secret = [
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "OAUTHBEARER"),
            ("sasl.oauthbearer.token.endpoint.url", "https://idp/token"),
            ("sasl.oauthbearer.client.id", "svc"),
        ];
        assert!(ClientSecurity::from_client_settings(no_secret).is_err());
        let no_endpoint = [
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "OAUTHBEARER"),
        ];
        assert!(ClientSecurity::from_client_settings(no_endpoint).is_err());
        assert!(
            ClientSecurity::from_client_settings([("sasl.oauthbearer.method", "default")]).is_err()
        );
        let bad_extension = [("sasl.oauthbearer.extensions", "k3y=v")];
        assert!(ClientSecurity::from_client_settings(bad_extension).is_err());
    }

    #[test]
    fn a_properties_file_is_lines_of_settings_and_comments() {
        let text = "# as Kafka's --command-config takes them\n\nsecurity.protocol=SASL_SSL\n\
                    ! another comment\n  sasl.password = a=b \n";
        let settings = properties(text).unwrap();
        assert_eq!(
            settings,
            [
                ("security.protocol".to_string(), "SASL_SSL".to_string()),
                ("sasl.password".to_string(), " a=b".to_string()),
            ]
        );
        assert!(properties("security.protocol\n").is_err());
    }
}
