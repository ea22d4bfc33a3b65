//! The broker's configuration file (TOML), its defaults and their validation. See
//! `shoal.example.toml` at the repository root for every key with comments.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use shoal_shards::{
    FetchConfig, GroupConfig, MaintenanceConfig, ProduceConfig, RewriteConfig, RuntimeConfig,
    ShardsConfig,
};
use shoal_wal::{HttpConfig, LocalLayout, S3Config, StoreConfig};

use crate::cluster::ClusterConfig;
pub use crate::log_filter::{LogConfig, LogFormat};
use crate::security::listeners::parse_listeners;
use crate::security::{Listener, Mechanism};
use crate::EngineError;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BrokerConfig {
    /// The one PLAINTEXT listener when `listeners` is empty.
    pub listen: SocketAddr,
    /// Kafka's `listeners`: "NAME://host:port,...", each name a security protocol or mapped
    /// to one by `listener_security_protocol_map`.
    pub listeners: String,
    /// Kafka's `advertised.listeners`, same form; a listener not named advertises its address.
    pub advertised_listeners: String,
    /// Kafka's `listener.security.protocol.map`: "NAME:PROTOCOL,...".
    pub listener_security_protocol_map: String,
    pub sasl: SaslConfig,
    pub ssl: SslConfig,
    pub authorizer: AuthorizerConfig,
    /// Prometheus metrics at http://<this>/metrics; unset means no endpoint.
    pub metrics_listen: Option<SocketAddr>,
    /// Host and port clients are told to connect to; defaults to `listen`.
    pub advertised_listener: Option<String>,
    pub data_dir: PathBuf,
    pub node_id: i32,
    pub cluster_id: String,
    pub max_request_bytes: usize,
    /// Bytes of requests all connections of one shard may have in memory at once; readers
    /// wait for room (Kafka's queued.max.request.bytes).
    pub max_in_flight_request_bytes: usize,
    /// Requests one connection may have in flight (pipelined) before reading pauses.
    pub max_in_flight_per_connection: usize,
    /// A connection whose unwritten answers hold this many bytes is not read from until its
    /// client takes them (Kafka mutes such a channel).
    pub max_unsent_bytes_per_connection: usize,
    /// Kafka's `connections.max.idle.ms`: a connection that sends no request (while it waits
    /// for no answer) or takes no answer for this long is closed.
    pub connections_max_idle_ms: u64,
    /// A request must arrive whole within this long of its first bytes.
    pub request_read_timeout_ms: u64,
    /// How long each start-up step may take (the object store's check, PostgreSQL, the
    /// coordinator's recovery, each shard's wiring and listeners): passing failures are
    /// tried again within it; past it the broker stops, naming the step.
    pub startup_timeout_ms: u64,
    /// Kafka's `max.connections` and `max.connections.per.ip`: more are closed at once.
    pub max_connections: usize,
    pub max_connections_per_ip: usize,
    pub auto_create_topics: bool,
    pub default_partitions: i32,
    pub shards: ShardsConfig,
    pub coordinator: CoordinatorConfig,
    pub produce: ProduceConfig,
    pub fetch: FetchConfig,
    pub object_store: ObjectStoreConfig,
    pub groups: GroupConfig,
    pub cluster: ClusterConfig,
    pub rewrite: RewriteConfig,
    pub quotas: QuotasConfig,
    pub schema_registry: crate::schema_registry::SchemaRegistryConfig,
    pub iceberg: crate::iceberg::IcebergConfig,
    pub log: LogConfig,
}

/// How client quotas are measured (Kafka's `quota.window.*`): a client's rate is what it did
/// in the last `window_num` windows of `window_size_seconds`, and it is throttled for at
/// most their span.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct QuotasConfig {
    pub window_num: usize,
    pub window_size_seconds: u64,
}

impl QuotasConfig {
    pub fn windows(&self) -> crate::quotas::Windows {
        crate::quotas::Windows {
            count: self.window_num,
            size_ms: self.window_size_seconds * 1000,
        }
    }
}

impl Default for QuotasConfig {
    fn default() -> Self {
        QuotasConfig {
            window_num: 11,
            window_size_seconds: 1,
        }
    }
}

/// ACLs (Kafka's StandardAuthorizer settings).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthorizerConfig {
    /// Check every request against the ACLs (Kafka's `authorizer.class.name`); off, every
    /// client may do anything.
    pub enabled: bool,
    /// Kafka's `super.users`: principals ("User:admin") allowed everything.
    pub super_users: Vec<String>,
    /// Kafka's `allow.everyone.if.no.acl.found`: a resource no ACL names is open to all.
    pub allow_everyone_if_no_acl_found: bool,
    /// Listeners (by name) that serve the internal APIs (the Diskless coordinator's and
    /// mirror-state writes); empty: any listener. Those APIs also need ClusterAction.
    pub internal_listeners: Vec<String>,
}

/// TLS on the SSL and SASL_SSL listeners, from PEM files (Kafka's `ssl.*` settings with
/// `ssl.keystore.type=PEM`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SslConfig {
    /// The broker's certificate chain, its own certificate first.
    pub certificate_file: Option<PathBuf>,
    /// The certificate's private key (PKCS#8, PKCS#1 or SEC1).
    pub key_file: Option<PathBuf>,
    /// Kafka's `ssl.client.auth`: none, requested or required.
    pub client_auth: ClientAuth,
    /// The CAs that sign client certificates (Kafka's truststore).
    pub truststore_file: Option<PathBuf>,
    /// How often the files are checked for changes, which reloads them (SIGHUP always
    /// does); 0: only on SIGHUP.
    pub reload_check_ms: u64,
}

impl Default for SslConfig {
    fn default() -> Self {
        SslConfig {
            certificate_file: None,
            key_file: None,
            client_auth: ClientAuth::None,
            truststore_file: None,
            reload_check_ms: 1000,
        }
    }
}

/// Whether TLS clients present certificates; their principal is the certificate's subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientAuth {
    None,
    Requested,
    Required,
}

/// SASL authentication on the SASL_PLAINTEXT and SASL_SSL listeners.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct SaslConfig {
    /// Kafka's `sasl.enabled.mechanisms`.
    pub enabled_mechanisms: Vec<String>,
    /// PLAIN users and their passwords (Kafka's `user_<name>` JAAS options).
    pub plain_users: std::collections::BTreeMap<String, String>,
    /// A connection that has not authenticated this long after it opened is closed.
    pub authentication_timeout_ms: u64,
    /// Kafka's `connection.failed.authentication.delay.ms`: a failed login is answered after
    /// this long, which slows password guessing.
    pub failed_authentication_delay_ms: u64,
    /// Kafka's `connections.max.reauth.ms` (KIP-368): a SASL session lasts at most this long
    /// (an OAUTHBEARER session no longer than its token); the client re-authenticates on its
    /// connection before then, or the connection is closed at its next request. 0: sessions
    /// never end.
    pub connections_max_reauth_ms: u64,
    /// How OAUTHBEARER tokens are checked (KIP-768).
    pub oauthbearer: OAuthBearerConfig,
}

impl Default for SaslConfig {
    fn default() -> Self {
        SaslConfig {
            enabled_mechanisms: vec!["PLAIN".to_string()],
            plain_users: Default::default(),
            authentication_timeout_ms: 10_000,
            failed_authentication_delay_ms: 100,
            connections_max_reauth_ms: 0,
            oauthbearer: OAuthBearerConfig::default(),
        }
    }
}

/// SASL/OAUTHBEARER token validation: Kafka's `sasl.oauthbearer.*` broker settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct OAuthBearerConfig {
    /// `sasl.oauthbearer.jwks.endpoint.url`: where the identity provider's keys are: its
    /// `https://` JWKS endpoint, or a `file://` URL (re-read when the file changes).
    pub jwks_endpoint_url: Option<String>,
    /// CAs (PEM) trusted for an `https://` endpoint's certificate, besides the system's.
    pub jwks_endpoint_ca_file: Option<std::path::PathBuf>,
    /// `sasl.oauthbearer.jwks.endpoint.refresh.ms`: the keys are read again this often (and
    /// an endpoint fetched again at once when a token names a key id the set lacks).
    pub jwks_endpoint_refresh_ms: u64,
    /// `sasl.oauthbearer.expected.audience`: a token's `aud` must name one of these (empty:
    /// not checked).
    pub expected_audience: Vec<String>,
    /// `sasl.oauthbearer.expected.issuer`: a token's `iss` must be this (unset: not checked).
    pub expected_issuer: Option<String>,
    /// `sasl.oauthbearer.sub.claim.name`: the claim that names the principal.
    pub sub_claim_name: String,
    /// `sasl.oauthbearer.scope.claim.name`.
    pub scope_claim_name: String,
    /// Scopes every token must carry (empty: none).
    pub required_scopes: Vec<String>,
    /// `sasl.oauthbearer.clock.skew.seconds`: leeway for `exp`, `nbf` and `iat`.
    pub clock_skew_seconds: i64,
    /// Kafka's unsecured validator, for tests only: tokens with `alg` `none` and no
    /// signature are taken. Never on a network anyone else reaches.
    pub allow_unsecured_tokens: bool,
}

impl Default for OAuthBearerConfig {
    fn default() -> Self {
        let rules = shoal_auth::jwt::TokenRules::default();
        OAuthBearerConfig {
            jwks_endpoint_url: None,
            jwks_endpoint_ca_file: None,
            jwks_endpoint_refresh_ms: 3_600_000,
            expected_audience: rules.expected_audience,
            expected_issuer: rules.expected_issuer,
            sub_claim_name: rules.principal_claim,
            scope_claim_name: rules.scope_claim,
            required_scopes: rules.required_scopes,
            clock_skew_seconds: rules.clock_skew_s,
            allow_unsecured_tokens: rules.allow_unsecured,
        }
    }
}

impl OAuthBearerConfig {
    pub fn rules(&self) -> shoal_auth::jwt::TokenRules {
        shoal_auth::jwt::TokenRules {
            expected_issuer: self.expected_issuer.clone(),
            expected_audience: self.expected_audience.clone(),
            principal_claim: self.sub_claim_name.clone(),
            scope_claim: self.scope_claim_name.clone(),
            required_scopes: self.required_scopes.clone(),
            clock_skew_s: self.clock_skew_seconds,
            allow_unsecured: self.allow_unsecured_tokens,
        }
    }
}

/// Consumer groups; Kafka's `group.*` and `offsets.retention.minutes` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    Local,
    S3,
}

/// How the local store writes objects; see `shoal_wal::LocalLayout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LocalLayoutKind {
    Files,
    Segments,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ObjectStoreConfig {
    pub kind: StoreKind,
    /// Local only: one file per object, or objects appended to segment files.
    pub local_layout: LocalLayoutKind,
    /// Local segments: the size each segment file is preallocated to.
    pub segment_bytes: u64,
    /// S3: e.g. "http://127.0.0.1:9000".
    pub endpoint: String,
    pub bucket: String,
    pub region: String,
    /// Prepended to every object key.
    pub prefix: String,
    /// Path-style addressing (`endpoint/bucket/key`); unset: virtual-host style for AWS
    /// endpoints (`*.amazonaws.com`), path style for others (MinIO, s3s-fs, Garage).
    pub path_style: Option<bool>,
    /// For https endpoints: a PEM file of CAs to trust besides the system's.
    pub ca_file: Option<PathBuf>,
    /// Credentials; the AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN
    /// environment variables are used where these are not set.
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    pub session_token: Option<String>,
    pub multipart_threshold_bytes: usize,
    pub part_size_bytes: usize,
    pub max_connections: usize,
    pub connect_timeout_ms: u64,
    pub first_byte_timeout_ms: u64,
    pub request_timeout_ms: u64,
}

impl Default for ObjectStoreConfig {
    fn default() -> Self {
        ObjectStoreConfig {
            kind: StoreKind::Local,
            local_layout: LocalLayoutKind::Segments,
            segment_bytes: 64 << 20,
            endpoint: String::new(),
            bucket: String::new(),
            region: "us-east-1".to_string(),
            prefix: String::new(),
            path_style: None,
            ca_file: None,
            access_key_id: None,
            secret_access_key: None,
            session_token: None,
            multipart_threshold_bytes: 64 << 20,
            part_size_bytes: 16 << 20,
            max_connections: 16,
            connect_timeout_ms: 2_000,
            first_byte_timeout_ms: 10_000,
            request_timeout_ms: 30_000,
        }
    }
}

impl ObjectStoreConfig {
    fn is_aws(&self) -> bool {
        let after_scheme = self.endpoint.split_once("://").map_or("", |(_, rest)| rest);
        let host = after_scheme.split(['/', ':']).next().unwrap_or("");
        host.ends_with(".amazonaws.com")
    }

    /// The store the broker's objects are kept in.
    pub fn store(&self, data_dir: &Path) -> StoreConfig {
        match self.kind {
            StoreKind::Local => StoreConfig::Local {
                root: data_dir.join("objects"),
                layout: match self.local_layout {
                    LocalLayoutKind::Files => LocalLayout::Files,
                    LocalLayoutKind::Segments => LocalLayout::Segments {
                        segment_bytes: self.segment_bytes,
                    },
                },
            },
            StoreKind::S3 => {
                let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
                StoreConfig::S3(Box::new(S3Config {
                    endpoint: self.endpoint.clone(),
                    bucket: self.bucket.clone(),
                    region: self.region.clone(),
                    key_prefix: self.prefix.clone(),
                    path_style: self.path_style.unwrap_or(!self.is_aws()),
                    ca_file: self.ca_file.clone(),
                    access_key_id: self
                        .access_key_id
                        .clone()
                        .or_else(|| env("AWS_ACCESS_KEY_ID")),
                    secret_access_key: self
                        .secret_access_key
                        .clone()
                        .or_else(|| env("AWS_SECRET_ACCESS_KEY")),
                    session_token: self
                        .session_token
                        .clone()
                        .or_else(|| env("AWS_SESSION_TOKEN")),
                    multipart_threshold_bytes: self.multipart_threshold_bytes,
                    part_size_bytes: self.part_size_bytes,
                    http: HttpConfig {
                        max_connections: self.max_connections,
                        connect_timeout: ms(self.connect_timeout_ms),
                        first_byte_timeout: ms(self.first_byte_timeout_ms),
                        request_timeout: ms(self.request_timeout_ms),
                        // A ranged read is at most one object.
                        max_response_bytes: i32::MAX as usize,
                    },
                }))
            }
        }
    }
}

/// Where the coordinator's metadata log lives: the data directory or PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CoordinatorKind {
    Local,
    Postgres,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CoordinatorConfig {
    pub core: usize,
    /// Its own executor thread even where `core` has a shard; by default it runs as tasks on
    /// that shard's executor.
    pub own_executor: bool,
    /// "local": the metadata log in the data directory; "postgres": in PostgreSQL at `url`.
    pub kind: CoordinatorKind,
    /// postgres://user@host:port/database; the password comes from `password_file`, else the
    /// variable named by `password_env`, else the URL.
    pub url: Option<String>,
    pub password_env: String,
    pub password_file: Option<PathBuf>,
    pub connect_timeout_ms: u64,
    pub statement_timeout_ms: u64,
    /// Connections to PostgreSQL, each carrying one round's append: rounds in flight at once.
    pub pool_size: usize,
    pub retention_check_interval_ms: u64,
    pub retention_step_batches: usize,
    pub producer_id_expiration_ms: u64,
    pub file_cleaner_interval_ms: u64,
    pub file_cleaner_grace_ms: u64,
    pub orphan_scan_interval_ms: u64,
    pub orphan_grace_ms: u64,
    pub snapshot_log_bytes: u64,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        CoordinatorConfig {
            core: 0,
            own_executor: false,
            kind: CoordinatorKind::Local,
            url: None,
            password_env: "SHOAL_COORDINATOR_PASSWORD".into(),
            password_file: None,
            connect_timeout_ms: 5_000,
            statement_timeout_ms: 10_000,
            pool_size: 2,
            // Kafka's log.retention.check.interval.ms.
            retention_check_interval_ms: 300_000,
            retention_step_batches: 100_000,
            // Kafka's producer.id.expiration.ms.
            producer_id_expiration_ms: 86_400_000,
            // Inkless's file cleaner: every 2 minutes, 60 s grace.
            file_cleaner_interval_ms: 120_000,
            file_cleaner_grace_ms: 60_000,
            orphan_scan_interval_ms: 600_000,
            orphan_grace_ms: 600_000,
            snapshot_log_bytes: 256 << 20,
        }
    }
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig {
            listen: "127.0.0.1:9092".parse().expect("valid address"),
            listeners: String::new(),
            advertised_listeners: String::new(),
            listener_security_protocol_map: String::new(),
            sasl: SaslConfig::default(),
            ssl: SslConfig::default(),
            authorizer: AuthorizerConfig::default(),
            advertised_listener: None,
            metrics_listen: None,
            data_dir: PathBuf::from("./data"),
            node_id: 0,
            cluster_id: "shoal-local".to_string(),
            max_request_bytes: 100 << 20,
            max_in_flight_request_bytes: 512 << 20,
            max_in_flight_per_connection: 64,
            max_unsent_bytes_per_connection: 64 << 20,
            connections_max_idle_ms: 600_000,
            request_read_timeout_ms: 30_000,
            startup_timeout_ms: 60_000,
            max_connections: 10_000,
            max_connections_per_ip: 1_000,
            auto_create_topics: true,
            default_partitions: 1,
            shards: ShardsConfig::default(),
            coordinator: CoordinatorConfig::default(),
            produce: ProduceConfig::default(),
            fetch: FetchConfig::default(),
            object_store: ObjectStoreConfig::default(),
            groups: GroupConfig::default(),
            cluster: ClusterConfig::default(),
            rewrite: RewriteConfig::default(),
            quotas: QuotasConfig::default(),
            schema_registry: Default::default(),
            iceberg: Default::default(),
            log: LogConfig::default(),
        }
    }
}

/// Limits that keep every buffer bounded and objects under the 2 GiB format limit.
pub(crate) const BUFFER_MAX_BYTES_LIMIT: usize = 1 << 30;

impl BrokerConfig {
    pub fn load(path: Option<&Path>) -> Result<BrokerConfig, EngineError> {
        let Some(path) = path else {
            return Ok(BrokerConfig::default());
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| EngineError::Config(format!("cannot read {}: {e}", path.display())))?;
        toml::from_str(&text).map_err(|e| EngineError::Config(format!("{}: {e}", path.display())))
    }

    /// The listeners to bind, with their protocols and advertised addresses.
    pub fn listeners(&self) -> Result<Vec<Listener>, EngineError> {
        parse_listeners(
            &self.listeners,
            &self.advertised_listeners,
            &self.listener_security_protocol_map,
            self.listen,
            self.advertised_listener.as_deref(),
        )
    }

    pub fn validate(&self) -> Result<(), EngineError> {
        if let Some(level) = &self.log.level {
            crate::log_filter::check(level)
                .map_err(|e| EngineError::Config(format!("[log] level: {e}")))?;
        }
        let fail = |msg: String| Err(EngineError::Config(msg));
        if self.cluster.enabled {
            if self.coordinator.kind != CoordinatorKind::Postgres {
                return fail(
                    "cluster.enabled needs [coordinator] kind = \"postgres\": brokers share the \
                     coordinator's database"
                        .into(),
                );
            }
            if self.cluster.heartbeat_ms == 0 || self.cluster.lease_ms <= self.cluster.heartbeat_ms
            {
                return fail("cluster: heartbeat_ms must be positive and below lease_ms".into());
            }
        }
        self.schema_registry
            .validate()
            .map_err(EngineError::Config)?;
        if self.schema_registry.tls
            && (self.ssl.certificate_file.is_none() || self.ssl.key_file.is_none())
        {
            return fail(
                "[schema_registry] tls uses the broker's certificate: set ssl.certificate_file \
                 and ssl.key_file"
                    .into(),
            );
        }
        let listeners = self.listeners()?;
        if let Some(tls) = listeners.iter().find(|l| l.protocol.uses_tls()) {
            if self.ssl.certificate_file.is_none() || self.ssl.key_file.is_none() {
                return fail(format!(
                    "listener {} uses TLS: set ssl.certificate_file and ssl.key_file",
                    tls.name
                ));
            }
        }
        let oauth = &self.sasl.oauthbearer;
        if self
            .sasl
            .enabled_mechanisms
            .iter()
            .any(|m| m == "OAUTHBEARER")
            && oauth.jwks_endpoint_url.is_none()
            && !oauth.allow_unsecured_tokens
        {
            return fail(
                "sasl.enabled_mechanisms has OAUTHBEARER: set sasl.oauthbearer.jwks_endpoint_url \
                 (the identity provider's keys)"
                    .into(),
            );
        }
        if let Some(url) = &oauth.jwks_endpoint_url {
            if !url.starts_with("file://") && !url.starts_with("https://") {
                return fail(format!(
                    "sasl.oauthbearer.jwks_endpoint_url {url}: give an https:// or file:// URL"
                ));
            }
        }
        for mechanism in &self.sasl.enabled_mechanisms {
            if Mechanism::parse(mechanism).is_none() {
                return fail(format!(
                    "sasl.enabled_mechanisms: {mechanism} is not served"
                ));
            }
        }
        let windows = self.quotas.window_num;
        if !(1..=crate::quotas::MAX_WINDOWS).contains(&windows)
            || !(1..=3600).contains(&self.quotas.window_size_seconds)
        {
            return fail(format!(
                "quotas: window_num must be 1 to {} and window_size_seconds 1 to 3600",
                crate::quotas::MAX_WINDOWS
            ));
        }
        if self.default_partitions <= 0 {
            return fail("default_partitions must be at least 1".into());
        }
        if self.max_request_bytes < 1024 {
            return fail("max_request_bytes must be at least 1024".into());
        }
        if self.max_in_flight_request_bytes < self.max_request_bytes {
            return fail("max_in_flight_request_bytes must be at least max_request_bytes".into());
        }
        if self.max_in_flight_per_connection == 0 || self.shards.queue_depth == 0 {
            return fail("max_in_flight_per_connection and queue_depth must be positive".into());
        }
        if self.connections_max_idle_ms == 0
            || self.request_read_timeout_ms == 0
            || self.startup_timeout_ms == 0
            || self.max_connections == 0
            || self.max_connections_per_ip == 0
            || self.fetch.max_bytes == 0
        {
            return fail(
                "connections_max_idle_ms, request_read_timeout_ms, startup_timeout_ms, \
                 max_connections, max_connections_per_ip and fetch.max_bytes must be positive"
                    .into(),
            );
        }
        if self.produce.max_inflated_batch_bytes < self.produce.buffer_max_bytes {
            return fail(
                "produce.max_inflated_batch_bytes must be at least buffer_max_bytes".into(),
            );
        }
        if self.produce.buffer_max_bytes == 0
            || self.produce.buffer_max_bytes > BUFFER_MAX_BYTES_LIMIT
        {
            return fail(format!(
                "produce.buffer_max_bytes must be in 1..={BUFFER_MAX_BYTES_LIMIT}"
            ));
        }
        let groups = &self.groups;
        if groups.min_session_timeout_ms <= 0
            || groups.min_session_timeout_ms > groups.max_session_timeout_ms
            || groups.max_size == 0
            || groups.max_groups_per_shard == 0
            || groups.offsets_retention_ms <= 0
        {
            return fail(
                "groups: need 0 < min_session_timeout_ms <= max_session_timeout_ms, \
                 max_size >= 1 and offsets_retention_ms > 0"
                    .into(),
            );
        }
        let store = &self.object_store;
        if !(1 << 20..=1 << 40).contains(&store.segment_bytes) {
            return fail("object_store: segment_bytes must be between 1 MiB and 1 TiB".into());
        }
        if store.kind == StoreKind::S3 {
            if store.endpoint.is_empty() || store.bucket.is_empty() {
                return fail("object_store: kind = \"s3\" needs endpoint and bucket".into());
            }
            if store.max_connections == 0 || store.part_size_bytes < (5 << 20) {
                return fail(
                    "object_store: max_connections must be positive, part_size_bytes >= 5 MiB"
                        .into(),
                );
            }
        }
        let c = &self.coordinator;
        if c.retention_step_batches == 0
            || [
                c.retention_check_interval_ms,
                c.file_cleaner_interval_ms,
                c.orphan_scan_interval_ms,
            ]
            .contains(&0)
        {
            return fail(
                "coordinator intervals and retention_step_batches must be positive".into(),
            );
        }
        if self.produce.uploads_in_flight_max == 0 {
            return fail("produce.uploads_in_flight_max must be positive".into());
        }
        let online = online_cores();
        for core in self.shards.cores.iter().chain([&self.coordinator.core]) {
            if !online.contains(core) {
                return fail(format!("core {core} is not online (online: {online:?})"));
            }
        }
        Ok(())
    }

    /// The host and port written into Metadata responses.
    pub fn advertised(&self) -> (String, i32) {
        if let Some(listener) = &self.advertised_listener {
            if let Some((host, port)) = listener.rsplit_once(':') {
                if let Ok(port) = port.parse() {
                    return (host.to_string(), port);
                }
            }
        }
        (self.listen.ip().to_string(), self.listen.port() as i32)
    }

    pub fn runtime(&self) -> Result<RuntimeConfig, EngineError> {
        let shard_cores = if self.shards.cores.is_empty() {
            online_cores()
        } else {
            self.shards.cores.clone()
        };
        Ok(RuntimeConfig {
            node_id: self.node_id,
            data_dir: self.data_dir.clone(),
            store: self.object_store.store(&self.data_dir),
            shard_cores,
            coordinator_core: self.coordinator.core,
            coordinator_own_executor: self.coordinator.own_executor,
            shards: self.shards.clone(),
            produce: self.produce.clone(),
            fetch: self.fetch.clone(),
            live: std::sync::Arc::new(shoal_shards::LiveSettings::new(shoal_shards::LiveValues {
                commit_interval_ms: self.produce.commit_interval_ms,
                buffer_max_bytes: self.produce.buffer_max_bytes,
                fetch_max_bytes: self.fetch.max_bytes,
                fetch_max_wait_ms: self.fetch.max_wait_ms,
            })),
            maintenance: MaintenanceConfig {
                retention_check_interval: ms(self.coordinator.retention_check_interval_ms),
                retention_step_batches: self.coordinator.retention_step_batches,
                producer_id_expiration: ms(self.coordinator.producer_id_expiration_ms),
                file_cleaner_interval: ms(self.coordinator.file_cleaner_interval_ms),
                file_cleaner_grace: ms(self.coordinator.file_cleaner_grace_ms),
                orphan_scan_interval: ms(self.coordinator.orphan_scan_interval_ms),
                orphan_grace: ms(self.coordinator.orphan_grace_ms),
            },
            snapshot_log_bytes: self.coordinator.snapshot_log_bytes,
            coordinator_database: self.coordinator.database()?,
            shared_coordinator_log: self.cluster.enabled,
            groups: self.groups,
            incarnation: RuntimeConfig::draw_incarnation(),
            lease_lapses: Default::default(),
            duties: match self.cluster.enabled {
                true => shoal_metalog::Duties::unheld(),
                false => shoal_metalog::Duties::always(),
            },
            rewrite: self.rewrite.clone(),
            startup_timeout: ms(self.startup_timeout_ms),
        })
    }
}

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

fn online_cores() -> Vec<usize> {
    core_affinity::get_core_ids()
        .map(|ids| ids.into_iter().map(|c| c.id).collect())
        .unwrap_or_else(|| vec![0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_config_parses_and_validates() {
        let text = include_str!("../../shoal.example.toml");
        let config: BrokerConfig = toml::from_str(text).unwrap();
        config.validate().unwrap();
        assert_eq!(config.produce.commit_interval_ms, 5);
    }

    /// Every key of the example file is a setting with its default value, and every setting is
    /// in the example: the file documents the defaults, key for key.
    #[test]
    fn the_example_config_is_the_defaults_key_for_key() {
        let example: toml::Table =
            toml::from_str(include_str!("../../shoal.example.toml")).unwrap();
        let defaults = toml::Table::try_from(BrokerConfig::default()).unwrap();
        let keys = |table: &toml::Table| -> Vec<String> {
            let mut keys = Vec::new();
            for (key, value) in table {
                match value {
                    toml::Value::Table(inner) if !inner.is_empty() => {
                        keys.extend(inner.keys().map(|k| format!("{key}.{k}")))
                    }
                    _ => keys.push(key.clone()),
                }
            }
            keys
        };
        assert_eq!(keys(&example), keys(&defaults), "the same keys");
        assert_eq!(example, defaults, "the same values");
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused() {
        assert!(toml::from_str::<BrokerConfig>("listne = \"x\"").is_err());
        let config: BrokerConfig = toml::from_str("default_partitions = 0").unwrap();
        assert!(config.validate().is_err());
    }

    #[test]
    fn a_cluster_needs_the_coordinator_in_postgres_and_a_heartbeat_within_its_lease() {
        let parse = |text: &str| toml::from_str::<BrokerConfig>(text).unwrap().validate();
        let e = parse("[cluster]\nenabled = true\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("postgres"), "{e}");
        let postgres = "[coordinator]\nkind = \"postgres\"\nurl = \"postgres://u@h/db\"\n";
        let e = parse(&format!(
            "{postgres}[cluster]\nenabled = true\nlease_ms = 1000\nheartbeat_ms = 1000\n"
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("heartbeat_ms"), "{e}");
    }

    #[test]
    fn the_postgres_pool_size_is_bounded_by_the_rounds_a_log_may_have_in_flight() {
        let with_pool = |size: usize| {
            let text = format!(
                "[coordinator]\nkind = \"postgres\"\nurl = \"postgres://u@h/db\"\n\
                 pool_size = {size}\n"
            );
            toml::from_str::<BrokerConfig>(&text)
                .unwrap()
                .coordinator
                .database()
        };
        assert_eq!(with_pool(4).unwrap().unwrap().pool_size, 4);
        for refused in [0, 17] {
            let e = with_pool(refused).unwrap_err().to_string();
            assert!(e.contains("pool_size"), "{e}");
        }
    }
}
