//! A Kafka client's security settings by Kafka's names (`security.protocol`, `sasl.*`,
//! `ssl.*`), as a client's properties file holds them: how the admin commands, the benchmark
//! and a mirror reach a broker. One type for all of them, so each takes the same names and
//! refuses the same mistakes.

use std::path::PathBuf;

/// Kafka's `security.protocol`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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
}

impl SaslMechanism {
    pub const ALL: [SaslMechanism; 3] = [
        SaslMechanism::Plain,
        SaslMechanism::ScramSha256,
        SaslMechanism::ScramSha512,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }

    pub fn from_name(name: &str) -> Option<SaslMechanism> {
        Self::ALL.into_iter().find(|m| m.name() == name.trim())
    }
}

/// How a client reaches a broker.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClientSecurity {
    pub protocol: SecurityProtocol,
    pub sasl_mechanism: Option<SaslMechanism>,
    pub sasl_username: String,
    pub sasl_password: String,
    /// PEM CAs trusted for the broker's certificate, besides the system's
    /// (`ssl.truststore.location` with `ssl.truststore.type=PEM`, or librdkafka's
    /// `ssl.ca.location`).
    pub ssl_ca_file: Option<PathBuf>,
    /// A client certificate and its key (PEM), for brokers that require one.
    pub ssl_certificate_file: Option<PathBuf>,
    pub ssl_key_file: Option<PathBuf>,
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
            "sasl.mechanism" => {
                self.sasl_mechanism = Some(
                    SaslMechanism::from_name(value)
                        .ok_or("sasl.mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")?,
                );
            }
            "sasl.username" => self.sasl_username = value.to_string(),
            "sasl.password" => self.sasl_password = value.to_string(),
            "sasl.jaas.config" => {
                let (user, password) = jaas_credentials(value)
                    .ok_or("sasl.jaas.config needs username=\"...\" and password=\"...\"")?;
                self.sasl_username = user;
                self.sasl_password = password;
            }
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
        if self.uses_sasl()
            && (self.sasl_mechanism.is_none()
                || self.sasl_username.is_empty()
                || self.sasl_password.is_empty())
        {
            return Err("SASL needs sasl.mechanism and a username and password");
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
            ("ssl.truststore.location", path(&self.ssl_ca_file)),
            ("ssl.keystore.location", path(&self.ssl_certificate_file)),
            ("ssl.key.location", path(&self.ssl_key_file)),
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(security.ssl_ca_file, Some(PathBuf::from("/etc/ca.pem")));
        assert!(security.uses_tls() && security.uses_sasl());
        let pairs = security.to_pairs();
        let again =
            ClientSecurity::from_client_settings(pairs.iter().map(|(n, v)| (*n, v.as_str())));
        assert_eq!(again.unwrap(), security);

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
