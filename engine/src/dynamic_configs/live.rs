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
    dynamic_config, effective, DYNAMIC_CONFIGS, SSL_CERTIFICATE, SSL_KEY, SSL_TRUSTSTORE,
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
                changed.push(config.name);
            }
        }
        if !changed.is_empty() {
            self.put_in_effect(&applied);
        }
        if let Some(tls) = &self.tls {
            if reread_tls || changed.iter().any(|name| name.starts_with("ssl.")) {
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
        let value = |name: &str| -> &str {
            let at = DYNAMIC_CONFIGS.iter().position(|c| c.name == name);
            at.map_or("", |i| values[i].as_str())
        };
        // Each was checked before it was stored, and `effective` checks again.
        let number = |name: &str| value(name).trim().parse::<u64>().unwrap_or(0);
        self.settings
            .set_fetch_max_bytes(number("fetch.max.bytes") as usize);
        self.settings
            .set_fetch_max_wait_ms(number("fetch.max.wait.ms"));
        self.settings
            .set_buffer_max_bytes(number("produce.buffer.max.bytes") as usize);
        self.settings
            .set_commit_interval_ms(number("produce.commit.interval.ms"));
        self.request_memory_bytes.store(
            number("max.in.flight.request.bytes") as usize,
            Ordering::Relaxed,
        );
        self.connections.set(
            number("max.connections") as usize,
            number("max.connections.per.ip") as usize,
        );
        if let Err(e) = crate::log_filter::set(value("log.level")) {
            tracing::error!(error = %e, "log.level not applied; the level in use stays (give EnvFilter directives, e.g. info,shoal=debug)");
        }
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
