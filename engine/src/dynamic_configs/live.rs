//! Puts the dynamic broker configs that hold for this broker into effect: when the handler
//! that stored them answers (on that broker) and, for changes made through other brokers or
//! found at start, when shard 0 sees a new catalogue.

use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use shoal_coordinator::TopicsView;
use shoal_shards::{LiveSettings, Shard};

use super::catalogue::{
    dynamic_config, effective, Effect, DYNAMIC_CONFIGS, SSL_CERTIFICATE, SSL_KEY, SSL_TRUSTSTORE,
};
use crate::config::BrokerConfig;
use crate::security::tls::TlsFiles;
use crate::security::TlsServer;
use crate::server::ConnectionLimits;

/// How often shard 0 looks for a new catalogue.
const CHECK_EVERY: Duration = Duration::from_millis(200);

pub struct LiveConfigs {
    file: Arc<BrokerConfig>,
    settings: Arc<LiveSettings>,
    connections: Arc<ConnectionLimits>,
    /// The TLS listeners' certificates, if the broker has any.
    tls: Option<Arc<TlsServer>>,
    /// Each shard's budget for requests and answers (shards resize theirs to it).
    request_memory_bytes: AtomicUsize,
    /// The value each of `DYNAMIC_CONFIGS` was last given, in its order.
    applied: Mutex<Vec<String>>,
}

impl LiveConfigs {
    pub fn new(
        file: Arc<BrokerConfig>,
        settings: Arc<LiveSettings>,
        connections: Arc<ConnectionLimits>,
        tls: Option<Arc<TlsServer>>,
    ) -> Arc<LiveConfigs> {
        let applied = DYNAMIC_CONFIGS
            .iter()
            .map(|c| (c.file_value)(&file))
            .collect();
        Arc::new(LiveConfigs {
            request_memory_bytes: AtomicUsize::new(file.max_in_flight_request_bytes),
            file,
            settings,
            connections,
            tls,
            applied: Mutex::new(applied),
        })
    }

    pub fn connections(&self) -> &Arc<ConnectionLimits> {
        &self.connections
    }

    pub fn tls(&self) -> Option<&Arc<TlsServer>> {
        self.tls.as_ref()
    }

    /// The TLS files that hold for this broker: its own dynamic value, else the cluster
    /// default's, else the config file's (so a value deleted reverts to the file's).
    pub fn tls_files(&self, own: &[(String, String)], default: &[(String, String)]) -> TlsFiles {
        let path = |name: &str| {
            let config = dynamic_config(name)?;
            let value = effective(&self.file, config, own, default);
            let value = value.trim();
            (!value.is_empty()).then(|| std::path::PathBuf::from(value))
        };
        TlsFiles {
            certificate: path(SSL_CERTIFICATE),
            key: path(SSL_KEY),
            truststore: path(SSL_TRUSTSTORE),
        }
    }

    /// What each shard's request memory budget should hold now.
    pub fn request_memory_bytes(&self) -> usize {
        self.request_memory_bytes.load(Ordering::Relaxed)
    }

    /// Gives each dynamic config the value the catalogue now holds for this broker.
    pub fn apply(&self, view: &TopicsView) {
        self.apply_to(view, false, false)
    }

    /// As `apply`, before the first connection: certificates are loaded before it returns.
    pub fn apply_at_start(&self, view: &TopicsView) {
        self.apply_to(view, true, false)
    }

    /// As `apply`, and the TLS files are read again even if they are the same ones (an
    /// alter that names them asks for that, as Kafka re-reads its keystore).
    pub fn apply_rereading_tls(&self, view: &TopicsView) {
        self.apply_to(view, false, true)
    }

    fn apply_to(&self, view: &TopicsView, starting: bool, reread_tls: bool) {
        let own = view.broker_configs(Some(self.file.node_id));
        let default = view.broker_configs(None);
        let mut applied = self.applied.lock().unwrap_or_else(|e| e.into_inner());
        let mut changed = Vec::new();
        for (config, last) in DYNAMIC_CONFIGS.iter().zip(applied.iter_mut()) {
            let value = effective(&self.file, config, own, default);
            if *last != value {
                tracing::info!(config = config.name, %value, "broker config changed");
                *last = value;
                changed.push(config.effect);
            }
        }
        if !changed.is_empty() {
            self.put_in_effect(&applied);
        }
        if let Some(tls) = &self.tls {
            if reread_tls || changed.contains(&Effect::TlsFile) {
                // One load, so no older reload can finish after it.
                let settings = tls.with_files(&self.tls_files(own, default));
                let why = "the dynamic broker configs name other files";
                if starting {
                    tls.reconfigure(settings, why);
                } else {
                    // Off the executor: reading files blocks.
                    let tls = tls.clone();
                    std::thread::spawn(move || tls.reconfigure(settings, why));
                }
            }
        }
    }

    fn put_in_effect(&self, values: &[String]) {
        let mut connections = (0, 0);
        for (config, value) in DYNAMIC_CONFIGS.iter().zip(values) {
            // Each was checked before it was stored, and `effective` checks again.
            let number = || value.trim().parse::<u64>().unwrap_or(0);
            match config.effect {
                Effect::FetchMaxBytes => self.settings.set_fetch_max_bytes(number() as usize),
                Effect::FetchMaxWaitMs => self.settings.set_fetch_max_wait_ms(number()),
                Effect::BufferMaxBytes => self.settings.set_buffer_max_bytes(number() as usize),
                Effect::CommitIntervalMs => self.settings.set_commit_interval_ms(number()),
                Effect::RequestMemoryBytes => self
                    .request_memory_bytes
                    .store(number() as usize, Ordering::Relaxed),
                Effect::MaxConnections => connections.0 = number() as usize,
                Effect::MaxConnectionsPerIp => connections.1 = number() as usize,
                Effect::LogLevel => {
                    if let Err(e) = crate::log_filter::set(value) {
                        tracing::error!(error = %e, "log.level not applied; the level in use stays (give EnvFilter directives, e.g. info,shoal=debug)");
                    }
                }
                // Re-read together, off the executor (`apply_to`).
                Effect::TlsFile => {}
            }
        }
        self.connections.set(connections.0, connections.1);
    }

    /// On shard 0: applies what the catalogue holds now, then each change of it.
    pub async fn watch(self: Arc<Self>, shard: Rc<Shard>) {
        let mut seen = 0;
        loop {
            let view = shard.topics.load();
            if view.version() != seen {
                seen = view.version();
                self.apply(&view);
            }
            glommio::timer::sleep(CHECK_EVERY).await;
        }
    }
}
