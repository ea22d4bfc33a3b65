//! TLS for the SSL and SASL_SSL listeners: rustls over the glommio sockets (no tokio), PEM
//! certificate and key files, optional client certificates (mTLS) checked against a trust
//! store, and reloading on SIGHUP, when a file changes, or when the dynamic broker configs
//! name other files or ask for a re-read. A reload that fails keeps the certificate in use
//! and says why; connections already open keep theirs.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use arc_swap::ArcSwap;
use futures_rustls::TlsAcceptor;
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use shoal_net::tls_client::pem_certificates;

use crate::config::{ClientAuth, SslConfig};
use crate::EngineError;
use shoal_config::listeners::SecurityProtocol;

pub struct TlsServer {
    /// The config file's settings, with the files the dynamic configs name instead.
    settings: Mutex<SslConfig>,
    current: ArcSwap<ServerConfigs>,
    /// The files' modification times when last loaded.
    loaded_stamps: Mutex<Vec<Option<SystemTime>>>,
}

impl TlsServer {
    /// Loads the configured files; any problem is an error that names the file.
    pub fn load(settings: &SslConfig) -> Result<TlsServer, EngineError> {
        let stamps = stamps(settings);
        Ok(TlsServer {
            current: ArcSwap::from_pointee(ServerConfigs::load(settings)?),
            settings: Mutex::new(settings.clone()),
            loaded_stamps: Mutex::new(stamps),
        })
    }

    /// What accepts the next connection on a listener: the certificate loaded last. As in
    /// Kafka, `client_auth` applies to SSL listeners; SASL_SSL clients log in with SASL.
    pub fn acceptor(&self, protocol: SecurityProtocol) -> TlsAcceptor {
        let configs = self.current.load();
        match protocol {
            SecurityProtocol::SaslSsl => TlsAcceptor::from(configs.sasl_ssl.clone()),
            _ => TlsAcceptor::from(configs.ssl.clone()),
        }
    }

    fn settings(&self) -> SslConfig {
        self.settings
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The settings with other files: `Some` paths replace the current ones.
    pub fn with_files(&self, files: &TlsFiles) -> SslConfig {
        let mut settings = self.settings();
        let replace = |path: &Option<PathBuf>, current: &mut Option<PathBuf>| {
            if let Some(path) = path {
                *current = Some(path.clone());
            }
        };
        replace(&files.certificate, &mut settings.certificate_file);
        replace(&files.key, &mut settings.key_file);
        replace(&files.truststore, &mut settings.truststore_file);
        settings
    }

    /// Whether `settings` load (blocking file reads), and if not, why.
    pub fn check(settings: &SslConfig) -> Result<(), EngineError> {
        ServerConfigs::load(settings).map(|_| ())
    }

    /// Takes `settings` (other files) and loads them; on failure the certificate in use
    /// stays, and so do the files, so a later change of theirs is still noticed.
    pub fn reconfigure(&self, settings: SslConfig, why: &str) {
        match ServerConfigs::load(&settings) {
            Ok(config) => {
                *self.loaded_stamps.lock().unwrap_or_else(|e| e.into_inner()) = stamps(&settings);
                *self.settings.lock().unwrap_or_else(|e| e.into_inner()) = settings;
                self.current.store(Arc::new(config));
                tracing::info!(why, "TLS certificate reloaded");
            }
            Err(e) => {
                tracing::error!(why, error = %e, "TLS reload failed; keeping the current certificate (fix the files named: they are reloaded when they change)")
            }
        }
    }

    /// Loads the files again; on failure the certificate in use stays (and the files are
    /// not tried again until they change).
    pub fn reload(&self, why: &str) {
        let settings = self.settings();
        *self.loaded_stamps.lock().unwrap_or_else(|e| e.into_inner()) = stamps(&settings);
        self.reconfigure(settings, why);
    }

    fn files_changed(&self) -> bool {
        let now = stamps(&self.settings());
        *self.loaded_stamps.lock().unwrap_or_else(|e| e.into_inner()) != now
    }

    /// Reloads on SIGHUP, and when a file's modification time changes (checked every
    /// `reload_check_ms`; 0: on SIGHUP only).
    pub fn watch(self: Arc<Self>) -> Result<(), EngineError> {
        let hangup = Arc::new(AtomicBool::new(false));
        signal_hook::flag::register(signal_hook::consts::SIGHUP, hangup.clone())?;
        let check_every = Duration::from_millis(self.settings().reload_check_ms);
        // SIGHUP is noticed within this long.
        let tick = check_every.clamp(Duration::from_millis(10), Duration::from_secs(1));
        std::thread::Builder::new()
            .name("tls-reload".into())
            .spawn(move || {
                let mut checked = Instant::now();
                loop {
                    std::thread::sleep(tick);
                    if hangup.swap(false, Ordering::Relaxed) {
                        self.reload("SIGHUP");
                    } else if !check_every.is_zero() && checked.elapsed() >= check_every {
                        checked = Instant::now();
                        if self.files_changed() {
                            self.reload("a certificate file changed");
                        }
                    }
                }
            })?;
        Ok(())
    }
}

/// Files named by the dynamic broker configs (None: the config file's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsFiles {
    pub certificate: Option<PathBuf>,
    pub key: Option<PathBuf>,
    pub truststore: Option<PathBuf>,
}

fn files(settings: &SslConfig) -> impl Iterator<Item = &PathBuf> {
    [
        &settings.certificate_file,
        &settings.key_file,
        &settings.truststore_file,
    ]
    .into_iter()
    .flatten()
}

fn stamps(settings: &SslConfig) -> Vec<Option<SystemTime>> {
    files(settings)
        .map(|path| std::fs::metadata(path).and_then(|m| m.modified()).ok())
        .collect()
}

/// The same certificate with and without client certificates.
struct ServerConfigs {
    ssl: Arc<ServerConfig>,
    sasl_ssl: Arc<ServerConfig>,
}

impl ServerConfigs {
    fn load(settings: &SslConfig) -> Result<ServerConfigs, EngineError> {
        Ok(ServerConfigs {
            ssl: Arc::new(server_config(settings, settings.client_auth)?),
            sasl_ssl: Arc::new(server_config(settings, ClientAuth::None)?),
        })
    }
}

fn server_config(
    settings: &SslConfig,
    client_auth: ClientAuth,
) -> Result<ServerConfig, EngineError> {
    let (Some(certificate_file), Some(key_file)) = (&settings.certificate_file, &settings.key_file)
    else {
        return Err(EngineError::Config(
            "a TLS listener needs ssl.certificate_file and ssl.key_file".into(),
        ));
    };
    let chain = certificates(certificate_file)?;
    let key = PrivateKeyDer::from_pem_file(key_file)
        .map_err(|e| file_error(key_file, format!("no usable private key: {e}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| EngineError::Config(format!("TLS: {e}")))?;
    let builder = match client_auth {
        ClientAuth::None => builder.with_no_client_auth(),
        ClientAuth::Requested | ClientAuth::Required => {
            let Some(truststore) = &settings.truststore_file else {
                return Err(EngineError::Config(
                    "ssl.client_auth needs ssl.truststore_file (the CAs of client certificates)"
                        .into(),
                ));
            };
            let mut roots = RootCertStore::empty();
            for ca in certificates(truststore)? {
                roots
                    .add(ca)
                    .map_err(|e| file_error(truststore, format!("unusable CA: {e}")))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if client_auth == ClientAuth::Requested {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier
                .build()
                .map_err(|e| file_error(truststore, e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    builder
        .with_single_cert(chain, key)
        .map_err(|e| file_error(certificate_file, format!("certificate and key: {e}")))
}

/// Every certificate in a PEM file (the reader HTTPS to S3 and mirror sources use too).
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, EngineError> {
    // Its message already names the file.
    pem_certificates(path).map_err(|e| EngineError::Config(e.to_string()))
}

fn file_error(path: &Path, message: String) -> EngineError {
    EngineError::Config(format!("{}: {message}", path.display()))
}
