//! OAUTHBEARER tokens checked against the identity provider's keys (KIP-768): the JWKS is
//! read from `sasl.oauthbearer.jwks_endpoint_url` (a `file://` URL) at start, then again by a
//! watcher thread when the file changes and every `jwks_endpoint_refresh_ms`. A read that
//! fails keeps the keys in use and says why. Shards read the current keys without locking.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use arc_swap::ArcSwap;
use shoal_auth::jwks::{Jwks, JWKS_MAX_BYTES};
use shoal_auth::jwt::{self, TokenRules, ValidToken};
use shoal_auth::AuthError;

use crate::config::OAuthBearerConfig;
use crate::EngineError;

/// How often the watcher looks at the file's modification time.
const CHECK_EVERY: Duration = Duration::from_secs(1);

pub struct OAuthValidator {
    rules: TokenRules,
    /// The JWKS file; None with unsecured tokens only.
    path: Option<PathBuf>,
    refresh: Duration,
    keys: ArcSwap<Jwks>,
}

impl OAuthValidator {
    /// The validator `config` describes, its keys read now (an unreadable file is an error
    /// that names it).
    pub fn load(config: &OAuthBearerConfig) -> Result<OAuthValidator, EngineError> {
        let path = config
            .jwks_endpoint_url
            .as_deref()
            .map(|url| {
                url.strip_prefix("file://")
                    .map(PathBuf::from)
                    .ok_or_else(|| {
                        EngineError::Config(format!("{url}: only file:// JWKS URLs are served"))
                    })
            })
            .transpose()?;
        let keys = match &path {
            Some(path) => read_jwks(path).map_err(EngineError::Config)?,
            None => Jwks::default(),
        };
        Ok(OAuthValidator {
            rules: config.rules(),
            path,
            refresh: Duration::from_millis(config.jwks_endpoint_refresh_ms.max(1_000)),
            keys: ArcSwap::from_pointee(keys),
        })
    }

    /// The token checked at `now_ms` with the keys read last.
    pub fn validate(&self, token: &str, now_ms: i64) -> Result<ValidToken, AuthError> {
        jwt::validate(token, &self.keys.load(), &self.rules, now_ms)
    }

    /// Re-reads the keys when the file changes and every refresh interval, on a thread of
    /// its own (file reads block).
    pub fn watch(self: Arc<Self>) -> Result<(), EngineError> {
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        std::thread::Builder::new()
            .name("jwks-watcher".into())
            .spawn(move || {
                let mut stamp = modified(&path);
                let mut read_at = Instant::now();
                loop {
                    std::thread::sleep(CHECK_EVERY);
                    let now = modified(&path);
                    if now == stamp && read_at.elapsed() < self.refresh {
                        continue;
                    }
                    stamp = now;
                    read_at = Instant::now();
                    match read_jwks(&path) {
                        Ok(keys) => {
                            tracing::info!(path = %path.display(), keys = keys.keys.len(), "JWKS read");
                            self.keys.store(Arc::new(keys));
                        }
                        Err(why) => {
                            tracing::warn!(path = %path.display(), %why, "JWKS not re-read: the keys in use stay")
                        }
                    }
                }
            })
            .map_err(|e| EngineError::Config(format!("cannot start the JWKS watcher: {e}")))?;
        Ok(())
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// The JWKS in `path`, bounded in size.
fn read_jwks(path: &Path) -> Result<Jwks, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut document = Vec::new();
    file.take(JWKS_MAX_BYTES as u64 + 1)
        .read_to_end(&mut document)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Jwks::parse(&document).map_err(|e| format!("{}: {e}", path.display()))
}
