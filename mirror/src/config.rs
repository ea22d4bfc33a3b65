//! A mirror's settings, given at CreateMirror as name/value pairs (the prototype's names and
//! defaults).

use shoal_auth::ClientSecurity;

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
    pub security: ClientSecurity,
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
            security: ClientSecurity::default(),
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
                _ if config
                    .security
                    .set(name, value)
                    .map_err(MirrorError::InvalidConfig)? => {}
                _ => return Err(MirrorError::InvalidConfig("unknown or unsupported setting")),
            }
        }
        if config.bootstrap_servers.is_empty() {
            return Err(MirrorError::InvalidConfig("bootstrap.servers is required"));
        }
        config
            .security
            .check()
            .map_err(MirrorError::InvalidConfig)?;
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

    /// The source's security settings are the client's own (`ClientSecurity`, whose tests
    /// check each setting): a mirror reads them beside its own, keeps them through its stored
    /// pairs, and refuses what the client refuses.
    #[test]
    fn source_security_settings_are_the_clients_and_round_trip() {
        let security = [
            ("security.protocol", "sasl_plaintext"),
            ("sasl.mechanism", "PLAIN"),
            (
                "sasl.jaas.config",
                r#"org.apache.kafka.common.security.plain.PlainLoginModule required username="mirror" password="s3cret";"#,
            ),
        ];
        let config = MirrorConfig::from_pairs(
            [("bootstrap.servers", "source:9092")]
                .into_iter()
                .chain(security),
        )
        .unwrap();
        assert_eq!(
            config.security,
            ClientSecurity::from_client_settings(security).unwrap()
        );
        let pairs = config.to_pairs();
        let again = MirrorConfig::from_pairs(pairs.iter().map(|(n, v)| (*n, v.as_str()))).unwrap();
        assert_eq!(again, config);
        let no_password = [
            ("bootstrap.servers", "s:1"),
            ("security.protocol", "SASL_PLAINTEXT"),
            ("sasl.mechanism", "PLAIN"),
        ];
        assert!(MirrorConfig::from_pairs(no_password).is_err());
    }
}
