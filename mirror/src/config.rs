//! A mirror's settings, given at CreateMirror as name/value pairs (the prototype's names and
//! defaults).

use crate::MirrorError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorConfig {
    /// `bootstrap.servers` of the source cluster: comma-separated host:port.
    pub bootstrap_servers: String,
    pub fetch_wait_max_ms: u32,
    pub fetch_min_bytes: u32,
    /// Per partition.
    pub fetch_max_bytes: u32,
    pub fetch_response_max_bytes: u32,
    pub fetch_backoff_ms: u32,
    pub retry_initial_backoff_ms: u64,
    pub retry_max_backoff_ms: u64,
    /// Retries of a FAILED partition before it waits for an operator; 0 means no limit.
    pub retry_max_attempts: u32,
    pub metadata_refresh_interval_ms: u64,
    /// How the source cluster is reached: Kafka's client security settings.
    pub security: SourceSecurity,
}

/// A Kafka client's security settings for the source cluster, with Kafka's names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SourceSecurity {
    /// PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
    pub protocol: String,
    /// PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
    pub sasl_mechanism: String,
    pub sasl_username: String,
    pub sasl_password: String,
    /// PEM CAs trusted for the source's certificate, besides the system's
    /// (`ssl.truststore.location` with `ssl.truststore.type=PEM`, or librdkafka's
    /// `ssl.ca.location`).
    pub ssl_ca_file: String,
    /// A client certificate and key (PEM) for sources that require one.
    pub ssl_certificate_file: String,
    pub ssl_key_file: String,
}

impl SourceSecurity {
    /// No TLS, no login: Kafka's default.
    pub fn plaintext() -> SourceSecurity {
        SourceSecurity {
            protocol: "PLAINTEXT".to_string(),
            ..SourceSecurity::default()
        }
    }

    /// Settings by Kafka's client names (`security.protocol`, `sasl.*`, `ssl.*`), as a
    /// client's properties file holds them; a name that is not one of them is refused.
    pub fn from_client_settings<'a>(
        settings: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<SourceSecurity, String> {
        let mut security = SourceSecurity::plaintext();
        for (name, value) in settings {
            match security.set(name, value) {
                Ok(true) => {}
                Ok(false) => return Err(format!("{name}: not a client security setting")),
                Err(e) => return Err(format!("{name}: {}", why(e))),
            }
        }
        security.check().map_err(why)?;
        Ok(security)
    }

    pub fn uses_tls(&self) -> bool {
        matches!(self.protocol.as_str(), "SSL" | "SASL_SSL")
    }

    pub fn uses_sasl(&self) -> bool {
        matches!(self.protocol.as_str(), "SASL_PLAINTEXT" | "SASL_SSL")
    }

    fn set(&mut self, name: &str, value: &str) -> Result<bool, MirrorError> {
        let value = value.trim();
        match name {
            "security.protocol" => {
                let protocol = value.to_ascii_uppercase();
                if !["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"].contains(&protocol.as_str())
                {
                    return Err(MirrorError::InvalidConfig("unknown security.protocol"));
                }
                self.protocol = protocol;
            }
            "sasl.mechanism" => {
                if !["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"].contains(&value) {
                    return Err(MirrorError::InvalidConfig(
                        "sasl.mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
                    ));
                }
                self.sasl_mechanism = value.to_string();
            }
            "sasl.username" => self.sasl_username = value.to_string(),
            "sasl.password" => self.sasl_password = value.to_string(),
            "sasl.jaas.config" => {
                let (user, password) =
                    jaas_credentials(value).ok_or(MirrorError::InvalidConfig(
                        "sasl.jaas.config needs username=\"...\" and password=\"...\"",
                    ))?;
                self.sasl_username = user;
                self.sasl_password = password;
            }
            "ssl.truststore.location" | "ssl.ca.location" => self.ssl_ca_file = value.to_string(),
            "ssl.truststore.type" | "ssl.keystore.type" if value.eq_ignore_ascii_case("PEM") => {}
            "ssl.keystore.location" | "ssl.certificate.location" => {
                self.ssl_certificate_file = value.to_string()
            }
            "ssl.key.location" => self.ssl_key_file = value.to_string(),
            // Kafka's default, and the only behaviour offered: the name must match.
            "ssl.endpoint.identification.algorithm" if value.eq_ignore_ascii_case("https") => {}
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn check(&self) -> Result<(), MirrorError> {
        if self.uses_sasl()
            && (self.sasl_mechanism.is_empty()
                || self.sasl_username.is_empty()
                || self.sasl_password.is_empty())
        {
            return Err(MirrorError::InvalidConfig(
                "a SASL source needs sasl.mechanism and a username and password",
            ));
        }
        if self.ssl_certificate_file.is_empty() != self.ssl_key_file.is_empty() {
            return Err(MirrorError::InvalidConfig(
                "a client certificate needs both its certificate and key locations",
            ));
        }
        Ok(())
    }

    fn to_pairs(&self) -> Vec<(&'static str, String)> {
        [
            ("security.protocol", &self.protocol),
            ("sasl.mechanism", &self.sasl_mechanism),
            ("sasl.username", &self.sasl_username),
            ("sasl.password", &self.sasl_password),
            ("ssl.truststore.location", &self.ssl_ca_file),
            ("ssl.keystore.location", &self.ssl_certificate_file),
            ("ssl.key.location", &self.ssl_key_file),
        ]
        .into_iter()
        .filter(|(_, value)| !value.is_empty())
        .map(|(name, value)| (name, value.clone()))
        .collect()
    }
}

/// A refused setting's reason, without the mirror's framing.
fn why(e: MirrorError) -> String {
    match e {
        MirrorError::InvalidConfig(why) => why.to_string(),
        other => other.to_string(),
    }
}

/// The username and password of a PlainLoginModule or ScramLoginModule line:
/// `org.apache...Module required username="alice" password="secret";`.
fn jaas_credentials(jaas: &str) -> Option<(String, String)> {
    let value_of = |key: &str| {
        let start = jaas.find(&format!("{key}=\""))? + key.len() + 2;
        let end = start + jaas[start..].find('"')?;
        Some(jaas[start..end].to_string())
    };
    Some((value_of("username")?, value_of("password")?))
}

impl MirrorConfig {
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<MirrorConfig, MirrorError> {
        let mut config = MirrorConfig {
            bootstrap_servers: String::new(),
            fetch_wait_max_ms: 1000,
            fetch_min_bytes: 1,
            fetch_max_bytes: 1_048_576,
            fetch_response_max_bytes: 10_485_760,
            fetch_backoff_ms: 1000,
            retry_initial_backoff_ms: 1000,
            retry_max_backoff_ms: 60_000,
            retry_max_attempts: 0,
            metadata_refresh_interval_ms: 60_000,
            security: SourceSecurity::plaintext(),
        };
        for (name, value) in pairs {
            let number = || {
                value
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| MirrorError::InvalidConfig("numeric settings take an integer"))
            };
            let small = || {
                number().and_then(|n| {
                    u32::try_from(n).map_err(|_| MirrorError::InvalidConfig("value too large"))
                })
            };
            match name {
                "bootstrap.servers" => config.bootstrap_servers = value.trim().to_string(),
                "mirror.fetch.wait.max.ms" => config.fetch_wait_max_ms = small()?,
                "mirror.fetch.min.bytes" => config.fetch_min_bytes = small()?,
                "mirror.fetch.max.bytes" => config.fetch_max_bytes = small()?,
                "mirror.fetch.response.max.bytes" => config.fetch_response_max_bytes = small()?,
                "mirror.fetch.backoff.ms" => config.fetch_backoff_ms = small()?,
                "mirror.failed.retry.initial.backoff.ms" => {
                    config.retry_initial_backoff_ms = number()?
                }
                "mirror.failed.retry.max.backoff.ms" => config.retry_max_backoff_ms = number()?,
                "mirror.failed.retry.max.attempts" => config.retry_max_attempts = small()?,
                "mirror.metadata.refresh.interval.ms" => {
                    config.metadata_refresh_interval_ms = number()?
                }
                _ if config.security.set(name, value)? => {}
                _ => return Err(MirrorError::InvalidConfig("unknown or unsupported setting")),
            }
        }
        if config.bootstrap_servers.is_empty() {
            return Err(MirrorError::InvalidConfig("bootstrap.servers is required"));
        }
        config.security.check()?;
        if config.retry_initial_backoff_ms == 0
            || config.retry_initial_backoff_ms > config.retry_max_backoff_ms
            || config.fetch_max_bytes == 0
        {
            return Err(MirrorError::InvalidConfig(
                "backoffs must satisfy 0 < initial <= max; fetch max bytes > 0",
            ));
        }
        Ok(config)
    }

    /// The settings as name/value pairs, for storing and describing.
    pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = vec![
            ("bootstrap.servers", self.bootstrap_servers.clone()),
            (
                "mirror.fetch.wait.max.ms",
                self.fetch_wait_max_ms.to_string(),
            ),
            ("mirror.fetch.min.bytes", self.fetch_min_bytes.to_string()),
            ("mirror.fetch.max.bytes", self.fetch_max_bytes.to_string()),
            (
                "mirror.fetch.response.max.bytes",
                self.fetch_response_max_bytes.to_string(),
            ),
            ("mirror.fetch.backoff.ms", self.fetch_backoff_ms.to_string()),
            (
                "mirror.failed.retry.initial.backoff.ms",
                self.retry_initial_backoff_ms.to_string(),
            ),
            (
                "mirror.failed.retry.max.backoff.ms",
                self.retry_max_backoff_ms.to_string(),
            ),
            (
                "mirror.failed.retry.max.attempts",
                self.retry_max_attempts.to_string(),
            ),
            (
                "mirror.metadata.refresh.interval.ms",
                self.metadata_refresh_interval_ms.to_string(),
            ),
        ];
        pairs.extend(self.security.to_pairs());
        pairs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_round_trip_and_are_checked() {
        let config = MirrorConfig::from_pairs([
            ("bootstrap.servers", "127.0.0.1:9092"),
            ("mirror.fetch.wait.max.ms", "200"),
        ])
        .unwrap();
        assert_eq!(config.fetch_wait_max_ms, 200);
        let pairs = config.to_pairs();
        let again = MirrorConfig::from_pairs(pairs.iter().map(|(n, v)| (*n, v.as_str()))).unwrap();
        assert_eq!(again, config);
        assert!(MirrorConfig::from_pairs([("mirror.fetch.wait.max.ms", "1")]).is_err());
        assert!(
            MirrorConfig::from_pairs([("bootstrap.servers", "x"), ("sasl.mechanism", "y")])
                .is_err()
        );
        assert!(MirrorConfig::from_pairs([
            ("bootstrap.servers", "x"),
            ("mirror.fetch.max.bytes", "-5")
        ])
        .is_err());
    }

    #[test]
    fn source_security_settings_parse_round_trip_and_are_checked() {
        let jaas = r#"org.apache.kafka.common.security.scram.ScramLoginModule required username="mirror" password="s3cret";"#;
        let config = MirrorConfig::from_pairs([
            ("bootstrap.servers", "source:9093"),
            ("security.protocol", "sasl_ssl"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            ("sasl.jaas.config", jaas),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.location", "/etc/ca.pem"),
        ])
        .unwrap();
        assert_eq!(config.security.protocol, "SASL_SSL");
        assert_eq!(config.security.sasl_username, "mirror");
        assert_eq!(config.security.sasl_password, "s3cret");
        assert!(config.security.uses_tls() && config.security.uses_sasl());
        let pairs = config.to_pairs();
        let again = MirrorConfig::from_pairs(pairs.iter().map(|(n, v)| (*n, v.as_str()))).unwrap();
        assert_eq!(again, config);
        let no_password = [
            ("bootstrap.servers", "s:1"),
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
        ];
        assert!(MirrorConfig::from_pairs(no_password).is_err());
        let bad_protocol = [("bootstrap.servers", "s:1"), ("security.protocol", "TLS")];
        assert!(MirrorConfig::from_pairs(bad_protocol).is_err());
        assert!(MirrorConfig::from_pairs([
            ("bootstrap.servers", "s:1"),
            ("ssl.endpoint.identification.algorithm", "")
        ])
        .is_err());
    }
}
