//! Where PostgreSQL is and how to log in: a `postgres://user@host:port/database` URL, the
//! password kept out of it (from the environment or a file, resolved by the caller), and the
//! limits every connection works under.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::PgError;

/// libpq's `sslmode`, the two that mean what they say: no TLS, or TLS with the server's
/// certificate checked against trusted CAs and its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    VerifyFull,
}

#[derive(Clone, Debug)]
pub struct PgConfig {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub database: String,
    pub password: Option<String>,
    pub application_name: String,
    /// Connecting and logging in must finish within this.
    pub connect_timeout: Duration,
    /// PostgreSQL cancels a statement running longer (its `statement_timeout`); the client
    /// gives up on an answer a little later and drops the connection.
    pub statement_timeout: Duration,
    /// The largest single message accepted from the server, and the most bytes one answer
    /// (all its rows) may hold.
    pub max_message_bytes: usize,
    pub max_response_bytes: usize,
    pub ssl_mode: SslMode,
    /// `sslrootcert`: a PEM file of CAs trusted besides the system's.
    pub ssl_root_cert: Option<PathBuf>,
    /// The TLS client settings for verify-full, built by the caller (with `ssl_root_cert`).
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Connections a user of this config keeps open at most.
    pub pool_size: usize,
}

impl PgConfig {
    /// Reads `postgres://user[:password]@host[:port]/database`; a password in the URL is
    /// accepted but `password` (from the environment or a file) wins.
    pub fn from_url(url: &str, password: Option<String>) -> Result<PgConfig, PgError> {
        let parsed = url::Url::parse(url).map_err(|e| PgError::Config(format!("{url}: {e}")))?;
        if !matches!(parsed.scheme(), "postgres" | "postgresql") {
            return Err(PgError::Config(format!(
                "{}: the scheme must be postgres://",
                parsed.scheme()
            )));
        }
        let host = parsed
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| PgError::Config("no host in the URL".into()))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let user = match parsed.username() {
            "" => {
                return Err(PgError::Config(
                    "no user in the URL (postgres://user@host/db)".into(),
                ))
            }
            user => decode(user)?,
        };
        let database = match parsed.path().trim_start_matches('/') {
            "" => user.clone(),
            db => decode(db)?,
        };
        let in_url = parsed.password().map(decode).transpose()?;
        let (mut ssl_mode, mut ssl_root_cert) = (SslMode::Disable, None);
        let mut application_name = "shoal".to_string();
        for (key, value) in parsed.query_pairs() {
            match (key.as_ref(), value.as_ref()) {
                ("sslmode", "disable") => ssl_mode = SslMode::Disable,
                ("sslmode", "verify-full") => ssl_mode = SslMode::VerifyFull,
                ("sslmode", other) => {
                    return Err(PgError::Config(format!(
                        "sslmode={other}: use verify-full (TLS with the server's certificate and \
                         name checked) or disable; modes that encrypt without checking whom \
                         they talk to are not offered"
                    )))
                }
                ("sslrootcert", path) => ssl_root_cert = Some(PathBuf::from(path)),
                ("application_name", name) => application_name = name.to_string(),
                (other, _) => {
                    return Err(PgError::Config(format!("unknown URL parameter {other}")))
                }
            }
        }
        Ok(PgConfig {
            host,
            port: parsed.port().unwrap_or(5432),
            user,
            database,
            password: password.or(in_url),
            application_name,
            connect_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(10),
            max_message_bytes: 256 << 20,
            max_response_bytes: 512 << 20,
            ssl_mode,
            ssl_root_cert,
            tls: None,
            pool_size: 2,
        })
    }

    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

fn decode(part: &str) -> Result<String, PgError> {
    url::form_urlencoded::parse(format!("x={part}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .ok_or_else(|| PgError::Config(format!("cannot decode {part:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_gives_host_port_user_database_and_the_outside_password_wins() {
        let c = PgConfig::from_url(
            "postgres://shoal:inurl@db.example:6543/meta",
            Some("env".into()),
        )
        .unwrap();
        assert_eq!(
            (
                c.host.as_str(),
                c.port,
                c.user.as_str(),
                c.database.as_str()
            ),
            ("db.example", 6543, "shoal", "meta")
        );
        assert_eq!(c.password.as_deref(), Some("env"));
        let d = PgConfig::from_url("postgresql://sho%40al@[::1]/", None).unwrap();
        assert_eq!(
            (d.host.as_str(), d.port, d.user.as_str()),
            ("::1", 5432, "sho@al")
        );
        assert_eq!(
            d.database, "sho@al",
            "the database defaults to the user's name"
        );
        assert_eq!(d.address(), "[::1]:5432");
    }

    #[test]
    fn urls_without_user_or_with_another_scheme_are_refused() {
        assert!(PgConfig::from_url("postgres://db.example/meta", None).is_err());
        assert!(PgConfig::from_url("mysql://u@db.example/meta", None).is_err());
        assert!(PgConfig::from_url("not a url", None).is_err());
    }

    #[test]
    fn tls_is_verify_full_or_disable_and_other_parameters_are_refused() {
        let c = PgConfig::from_url(
            "postgres://u@h/db?sslmode=verify-full&sslrootcert=/etc/ca.pem&application_name=b1",
            None,
        )
        .unwrap();
        assert_eq!(c.ssl_mode, SslMode::VerifyFull);
        assert_eq!(c.ssl_root_cert, Some(PathBuf::from("/etc/ca.pem")));
        assert_eq!(c.application_name, "b1");
        assert_eq!(
            PgConfig::from_url("postgres://u@h/db", None)
                .unwrap()
                .ssl_mode,
            SslMode::Disable
        );
        let e = PgConfig::from_url("postgres://u@h/db?sslmode=require", None).unwrap_err();
        assert!(e.to_string().contains("verify-full"), "{e}");
        assert!(PgConfig::from_url("postgres://u@h/db?sslcert=x", None).is_err());
    }
}
