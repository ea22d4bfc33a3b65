//! OAUTHBEARER tokens checked against the identity provider's keys (KIP-768). The JWKS comes
//! from `sasl.oauthbearer.jwks_endpoint_url`: a `file://` URL, read at start and again when the
//! file changes; or the provider's `https://` endpoint, fetched at start and every
//! `jwks_endpoint_refresh_ms`, and at once (at most every 10 s) when a token names a key id the
//! set lacks (the provider rotated its keys). A watcher thread does the reading; one that fails
//! keeps the keys in use and says why. Shards read the current keys without locking.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use arc_swap::ArcSwap;
use rustls::ClientConfig;
use shoal_auth::jwks::{Jwks, JWKS_MAX_BYTES};
use shoal_auth::jwt::{self, TokenRules, ValidToken};
use shoal_auth::AuthError;

use shoal_net::http_client::{self, HttpLimits, HttpRequest, HttpUrl};

use crate::config::OAuthBearerConfig;
use crate::EngineError;

/// How long connecting to the endpoint, and each read and write, may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the watcher wakes to look for work.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// The soonest a key id the set lacks makes the endpoint be fetched again.
const UNKNOWN_KEY_REFETCH_EVERY: Duration = Duration::from_secs(10);

/// Where the keys come from.
enum Source {
    File(PathBuf),
    Https(HttpUrl, Arc<ClientConfig>),
    /// Unsecured tokens only: no keys.
    None,
}

impl Source {
    fn read(&self) -> Result<Jwks, String> {
        match self {
            Source::File(path) => read_jwks(path),
            Source::Https(url, tls) => {
                let request = HttpRequest {
                    method: "GET",
                    url,
                    headers: &[("Accept", "application/json")],
                    body: &[],
                };
                let limits = HttpLimits {
                    tls: Some(tls),
                    timeout: FETCH_TIMEOUT,
                    body_max_bytes: JWKS_MAX_BYTES as u64,
                };
                let answer = http_client::send(&request, &limits).map_err(|e| e.to_string())?;
                if answer.status != 200 {
                    return Err(format!("{}: HTTP status {}", url.describe(), answer.status));
                }
                Jwks::parse(&answer.body).map_err(|e| format!("{}: {e}", url.describe()))
            }
            Source::None => Ok(Jwks::default()),
        }
    }

    fn describe(&self) -> String {
        match self {
            Source::File(path) => path.display().to_string(),
            Source::Https(url, _) => url.describe(),
            Source::None => "none".to_string(),
        }
    }
}

pub struct OAuthValidator {
    rules: TokenRules,
    source: Source,
    refresh: Duration,
    keys: ArcSwap<Jwks>,
    /// A token named a key id the set lacks: fetch the endpoint again soon.
    unknown_key_seen: AtomicBool,
}

impl OAuthValidator {
    /// The validator `config` describes, its keys read now. An unreadable file is an error
    /// that names it; an endpoint that does not answer leaves the set empty (every token
    /// refused) until the watcher fetches it.
    pub fn load(config: &OAuthBearerConfig) -> Result<OAuthValidator, EngineError> {
        let source = match config.jwks_endpoint_url.as_deref() {
            None => Source::None,
            Some(url) => match url.strip_prefix("file://") {
                Some(path) => Source::File(PathBuf::from(path)),
                None => {
                    let parsed = HttpUrl::parse(url)
                        .ok()
                        .filter(|parsed| parsed.https)
                        .ok_or_else(|| {
                            EngineError::Config(format!(
                                "sasl.oauthbearer.jwks_endpoint_url {url}: give file:// or https://"
                            ))
                        })?;
                    let ca_file = config.jwks_endpoint_ca_file.as_deref();
                    let tls = shoal_net::tls_client::client_config(ca_file, None)
                        .map_err(|e| EngineError::Config(e.to_string()))?;
                    Source::Https(parsed, tls)
                }
            },
        };
        let keys = match (&source, source.read()) {
            (_, Ok(keys)) => keys,
            (Source::File(_), Err(why)) => return Err(EngineError::Config(why)),
            (_, Err(why)) => {
                tracing::warn!(%why, "JWKS not fetched at start: OAUTHBEARER logins fail until it is");
                Jwks::default()
            }
        };
        Ok(OAuthValidator {
            rules: config.rules(),
            source,
            refresh: Duration::from_millis(config.jwks_endpoint_refresh_ms.max(1_000)),
            keys: ArcSwap::from_pointee(keys),
            unknown_key_seen: AtomicBool::new(false),
        })
    }

    /// The token checked at `now_ms` with the keys read last.
    pub fn validate(&self, token: &str, now_ms: i64) -> Result<ValidToken, AuthError> {
        let checked = jwt::validate(token, &self.keys.load(), &self.rules, now_ms);
        if let Err(AuthError::UnknownKey(_)) = &checked {
            self.unknown_key_seen.store(true, Ordering::Relaxed);
        }
        checked
    }

    /// Reads the keys again as the source wants (see the module's notes), on a thread of its
    /// own (file reads and HTTPS block).
    pub fn watch(self: Arc<Self>) -> Result<(), EngineError> {
        if matches!(self.source, Source::None) {
            return Ok(());
        }
        std::thread::Builder::new()
            .name("jwks-watcher".into())
            .spawn(move || self.watch_loop())
            .map_err(|e| EngineError::Config(format!("cannot start the JWKS watcher: {e}")))?;
        Ok(())
    }

    fn watch_loop(&self) {
        let mut stamp = self.stamp();
        let mut read_at = Instant::now();
        let mut unknown_fetch_at: Option<Instant> = None;
        loop {
            std::thread::sleep(CHECK_EVERY);
            let changed = self.stamp() != stamp;
            let due = read_at.elapsed() >= self.refresh;
            let unknown = matches!(self.source, Source::Https(..))
                && self.unknown_key_seen.load(Ordering::Relaxed)
                && unknown_fetch_at.is_none_or(|at| at.elapsed() >= UNKNOWN_KEY_REFETCH_EVERY);
            if !(changed || due || unknown) {
                continue;
            }
            if unknown {
                unknown_fetch_at = Some(Instant::now());
            }
            self.unknown_key_seen.store(false, Ordering::Relaxed);
            stamp = self.stamp();
            read_at = Instant::now();
            let from = self.source.describe();
            match self.source.read() {
                Ok(keys) => {
                    tracing::info!(%from, keys = keys.keys.len(), "JWKS read");
                    self.keys.store(Arc::new(keys));
                }
                Err(why) => {
                    tracing::warn!(%from, %why, "JWKS not read again: the keys in use stay")
                }
            }
        }
    }

    /// A file's modification time (None for an endpoint).
    fn stamp(&self) -> Option<SystemTime> {
        match &self.source {
            Source::File(path) => std::fs::metadata(path).and_then(|m| m.modified()).ok(),
            _ => None,
        }
    }
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
