//! `[coordinator] kind = "postgres"`: PostgreSQL's connection settings from the config, with
//! the password kept out of the config file (a file of its own, or an environment variable)
//! and TLS (`?sslmode=verify-full&sslrootcert=ca.pem` in the URL) through rustls.

use std::time::Duration;

use shoal_metalog::postgres_log::MAX_APPENDS_IN_FLIGHT;
use shoal_pg::{PgConfig, SslMode};

use crate::{ConfigError, CoordinatorConfig, CoordinatorKind};

impl CoordinatorConfig {
    /// PostgreSQL's settings for kind = "postgres"; None for the local log.
    pub fn database(&self) -> Result<Option<PgConfig>, ConfigError> {
        if self.kind == CoordinatorKind::Local {
            return Ok(None);
        }
        let fail = |msg: String| ConfigError(format!("coordinator: {msg}"));
        let url = self.url.as_deref().ok_or_else(|| {
            fail("kind = \"postgres\" needs url = \"postgres://user@host/db\"".into())
        })?;
        let password = match &self.password_file {
            Some(path) => Some(
                std::fs::read_to_string(path)
                    .map_err(|e| fail(format!("password_file {}: {e}", path.display())))?
                    .trim_end_matches(['\r', '\n'])
                    .to_string(),
            ),
            None => std::env::var(&self.password_env).ok(),
        };
        let mut config = PgConfig::from_url(url, password).map_err(|e| fail(e.to_string()))?;
        config.connect_timeout = Duration::from_millis(self.connect_timeout_ms);
        config.statement_timeout = Duration::from_millis(self.statement_timeout_ms);
        if config.connect_timeout.is_zero() || config.statement_timeout.is_zero() {
            return Err(fail(
                "connect_timeout_ms and statement_timeout_ms must be positive".into(),
            ));
        }
        if !(1..=MAX_APPENDS_IN_FLIGHT).contains(&self.pool_size) {
            return Err(fail(format!(
                "pool_size {} must be 1 to {MAX_APPENDS_IN_FLIGHT}",
                self.pool_size
            )));
        }
        config.pool_size = self.pool_size;
        if config.ssl_mode == SslMode::VerifyFull {
            // The system's CAs plus sslrootcert, as for HTTPS to S3.
            let tls = shoal_net::tls_client::client_config(config.ssl_root_cert.as_deref(), None)
                .map_err(|e| fail(e.to_string()))?;
            config.tls = Some(tls);
        }
        Ok(Some(config))
    }
}
