//! The table writer: topics with `shoal.iceberg.enabled` kept as Apache Iceberg tables
//! (`shoal_iceberg` has the formats). It runs on a thread of its own, beside the shards, as a
//! Kafka client of its own broker: every `commit_interval_ms` it reads each such topic's
//! committed records (read_committed, so aborted transactions are left out) from where the
//! table's last snapshot says each partition ends, writes them as one Parquet file, and
//! commits the snapshot to the catalog (the SQL catalog's compare-and-swap, or a REST
//! catalog's commit that requires the table unchanged since it was read). The offsets a table has
//! reached live in its snapshots only, so a writer that restarts or loses a race continues
//! with no record missing or twice.

mod compaction;
mod convert;
mod pg_catalog;
mod reader;
mod registry_access;
mod rest_auth;
mod rest_catalog;
mod s3_client;
mod tables;
mod value_schemas;
mod warehouse;
mod writer;

use registry_access::RegistryAccess;
use warehouse::WarehouseSetup;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use shoal_auth::ClientSecurity;
use shoal_metalog::Duties;
use shoal_pg::PgConfig;
use shoal_wal::store::StoreConfig;

use crate::schema_registry::SchemaRegistryConfig;
use crate::security::listeners::SecurityProtocol;
use crate::security::Listener;
use crate::EngineError;

/// `[iceberg]`: whether this broker writes tables, where, and how often.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct IcebergConfig {
    /// Write the tables of topics with `shoal.iceberg.enabled=true`.
    pub enabled: bool,
    /// How often each table gets a snapshot of what was committed since the last one.
    pub commit_interval_ms: u64,
    /// The most record bytes one commit reads per table (the rest waits for the next).
    pub max_bytes_per_commit: u64,
    /// Each commit expires the table's snapshots past the newest `max_snapshots` or older than
    /// `snapshot_max_age_ms` (time travel reaches the rest), and deletes their manifest lists.
    pub max_snapshots: usize,
    pub snapshot_max_age_ms: u64,
    /// A table with this many data files under half of `target_file_bytes` has its oldest
    /// merged into one of up to `target_file_bytes` (the merged ones are deleted once the
    /// snapshots naming them expire).
    pub compact_min_files: usize,
    pub target_file_bytes: u64,
    /// The catalog namespace tables are created in; a table is named after its topic.
    pub namespace: String,
    /// The SQL catalog's name (`catalog_name` in its tables), as readers configure it.
    pub catalog_name: String,
    /// The SQLite file of the SQL catalog (default: `iceberg/catalog.db` in the data
    /// directory). A broker whose coordinator log is in PostgreSQL (every broker of a
    /// cluster) keeps the catalog's tables in that database instead.
    pub catalog_file: Option<PathBuf>,
    /// Where tables are stored: a `file://` URL, or `s3://bucket[/prefix]` reached with
    /// `[object_store]`'s endpoint and credentials (default: beside the broker's objects,
    /// `iceberg/warehouse` in the data directory or `<prefix>/iceberg` in its bucket).
    pub warehouse: Option<String>,
    /// The schema registry that records' schema ids are looked up in, to make their values
    /// columns (default: this broker's own, `[schema_registry] listen`, over HTTPS when it
    /// serves that, logged in as `[iceberg.client]`'s SASL user when it wants HTTP Basic;
    /// without one, values are kept as bytes).
    pub schema_registry_url: Option<String>,
    /// PEM CAs trusted for an https registry besides the system's (default for the broker's
    /// own: `[iceberg.client]`'s `ssl.ca.location`).
    pub schema_registry_ca_file: Option<PathBuf>,
    /// HTTP Basic credentials for the registry, `user:password` (default for the broker's own:
    /// `[iceberg.client]`'s `sasl.username` and `sasl.password`; else the broker's
    /// `SHOAL_REGISTRY_USER_INFO` environment variable, when set).
    pub schema_registry_user_info: Option<String>,
    /// A record whose value cannot become the table's columns (no schema id, a schema that is
    /// not an Avro record, data that does not decode): `stop` the table before it, or set it
    /// aside in the dead-letter table `<topic>_dead_letters` and go on.
    pub bad_records: BadRecords,
    /// `[iceberg.rest_catalog]`: register and commit tables in an Iceberg REST catalog
    /// instead of the SQL catalog.
    pub rest_catalog: Option<RestCatalogConfig>,
    /// `[iceberg.client]`: Kafka client settings the writer connects to this broker with
    /// (`security.protocol`, `sasl.*`, `ssl.*`, and `bootstrap.servers` to name the address
    /// its certificate is for). Empty: a PLAINTEXT listener, as `User:ANONYMOUS`.
    pub client: BTreeMap<String, String>,
}

/// `[iceberg.rest_catalog]`: an Iceberg REST catalog (Polaris, Lakekeeper, Gravitino, Glue's
/// Iceberg endpoint, Iceberg's reference server). The writer stores the tables' files in
/// `warehouse` as with the SQL catalog, so the catalog and its readers must reach that store.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RestCatalogConfig {
    /// The catalog's base URL, before `/v1/` (http:// or https://).
    pub url: String,
    /// The warehouse name the catalog's `GET /v1/config` is asked for, where it serves
    /// several.
    pub warehouse: Option<String>,
    /// A bearer token sent with every request, where the catalog wants one.
    pub token: Option<String>,
    /// Or `client_id:client_secret`, exchanged for tokens with OAuth2's client-credentials
    /// grant (Iceberg's `credential` catalog property).
    pub credential: Option<String>,
    /// Where the credential is exchanged (default: the catalog's `/v1/oauth/tokens`).
    pub oauth2_server_uri: Option<String>,
    /// The scope asked for (default `catalog`; Polaris wants `PRINCIPAL_ROLE:ALL`).
    pub scope: Option<String>,
    /// PEM CAs trusted for an https catalog besides the system's.
    pub ca_file: Option<PathBuf>,
}

/// `[iceberg] bad_records`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BadRecords {
    #[default]
    Stop,
    DeadLetter,
}

impl Default for IcebergConfig {
    fn default() -> Self {
        IcebergConfig {
            enabled: false,
            commit_interval_ms: 60_000,
            max_bytes_per_commit: 128 << 20,
            max_snapshots: 100,
            snapshot_max_age_ms: 24 * 60 * 60 * 1000,
            compact_min_files: 16,
            target_file_bytes: 128 << 20,
            namespace: "kafka".into(),
            catalog_name: "shoal".into(),
            catalog_file: None,
            warehouse: None,
            schema_registry_url: None,
            schema_registry_ca_file: None,
            schema_registry_user_info: None,
            bad_records: BadRecords::Stop,
            rest_catalog: None,
            client: BTreeMap::new(),
        }
    }
}

/// Which catalog tables are registered in.
#[derive(Debug, Clone)]
pub enum CatalogSetup {
    /// An Iceberg REST catalog.
    Rest(RestCatalogConfig),
    /// A SQLite file (one node's).
    Sqlite(PathBuf),
    /// The coordinator's PostgreSQL database (a cluster's, or a node whose log is there).
    Postgres(PgConfig),
}

/// Where the writer works: resolved from the config and the broker's own settings.
pub struct WriterSetup {
    pub config: IcebergConfig,
    /// The address of this broker's listener that the writer reads through, and how it
    /// secures the connection and logs in there.
    pub bootstrap: String,
    pub security: ClientSecurity,
    pub catalog: CatalogSetup,
    pub warehouse: WarehouseSetup,
    /// Where value schemas are looked up, if anywhere.
    pub schema_registry: Option<RegistryAccess>,
}

impl IcebergConfig {
    pub fn retention(&self) -> shoal_iceberg::metadata::Retention {
        shoal_iceberg::metadata::Retention {
            max_snapshots: self.max_snapshots,
            max_age_ms: i64::try_from(self.snapshot_max_age_ms).unwrap_or(i64::MAX),
        }
    }

    /// The writer's setup, or None when tables are not written here.
    pub fn setup(
        &self,
        data_dir: &Path,
        listeners: &[Listener],
        registry: &SchemaRegistryConfig,
        store: &StoreConfig,
        coordinator_database: Option<&PgConfig>,
    ) -> Result<Option<WriterSetup>, EngineError> {
        if !self.enabled {
            return Ok(None);
        }
        if self.commit_interval_ms == 0
            || self.max_bytes_per_commit == 0
            || self.max_snapshots == 0
            || self.target_file_bytes == 0
            || self.compact_min_files < 2
        {
            return Err(EngineError::Config(
                "[iceberg] commit_interval_ms, max_bytes_per_commit, max_snapshots and \
                 target_file_bytes must be positive, compact_min_files at least 2"
                    .into(),
            ));
        }
        let (bootstrap, security) = self.writer_client(listeners)?;
        let warehouse = self.warehouse_setup(data_dir, store)?;
        let catalog = match (&self.rest_catalog, coordinator_database) {
            (Some(rest), _) => CatalogSetup::Rest(rest.clone()),
            (None, Some(database)) => CatalogSetup::Postgres(database.clone()),
            (None, None) => CatalogSetup::Sqlite(
                (self.catalog_file.clone())
                    .unwrap_or_else(|| data_dir.join("iceberg").join("catalog.db")),
            ),
        };
        let schema_registry = registry_access::resolve(self, registry, &security);
        Ok(Some(WriterSetup {
            config: self.clone(),
            bootstrap,
            security,
            catalog,
            warehouse,
            schema_registry,
        }))
    }
}

impl IcebergConfig {
    /// Where the writer connects (`bootstrap.servers`, else this broker's listener of the
    /// protocol `[iceberg.client]` names), and with what security.
    fn writer_client(
        &self,
        listeners: &[Listener],
    ) -> Result<(String, ClientSecurity), EngineError> {
        let bad = |why: String| EngineError::Config(format!("[iceberg.client] {why}"));
        let settings = (self.client.iter())
            .filter(|(name, _)| *name != BOOTSTRAP_SERVERS)
            .map(|(name, value)| (name.as_str(), value.as_str()));
        let security = ClientSecurity::from_client_settings(settings).map_err(bad)?;
        let protocol = SecurityProtocol::parse(security.protocol.name())
            .expect("the client's protocols are the listeners'");
        let listener = listeners.iter().find(|l| l.protocol == protocol);
        let bootstrap = match (self.client.get(BOOTSTRAP_SERVERS), listener) {
            (Some(given), _) => given.clone(),
            (None, Some(listener)) => reachable(listener.address).to_string(),
            (None, None) => {
                return Err(bad(format!(
                    "the table writer connects to a listener of this broker; it has no {} \
                     listener (set security.protocol, with sasl.* and ssl.* settings, to one \
                     it has)",
                    security.protocol.name()
                )))
            }
        };
        Ok((bootstrap, security))
    }

    /// Where tables are kept: `warehouse` if set (an s3:// one reached with `[object_store]`'s
    /// endpoint and credentials); else beside the broker's objects: `iceberg/warehouse` in the
    /// data directory, or `<prefix>/iceberg` in its bucket.
    fn warehouse_setup(
        &self,
        data_dir: &Path,
        store: &StoreConfig,
    ) -> Result<WarehouseSetup, EngineError> {
        let bad =
            |url: &str, why: &str| EngineError::Config(format!("[iceberg] warehouse {url}: {why}"));
        match (&self.warehouse, store) {
            (None, StoreConfig::Local { .. }) => Ok(WarehouseSetup::Local(
                data_dir.join("iceberg").join("warehouse"),
            )),
            (None, StoreConfig::S3(s3)) => Ok(WarehouseSetup::S3 {
                prefix: [s3.key_prefix.trim_matches('/'), "iceberg"]
                    .iter()
                    .filter(|part| !part.is_empty())
                    .copied()
                    .collect::<Vec<_>>()
                    .join("/"),
                s3: s3.clone(),
            }),
            (Some(url), _) if url.starts_with("file://") => Ok(WarehouseSetup::Local(
                PathBuf::from(&url["file://".len()..]),
            )),
            (Some(url), StoreConfig::S3(s3)) if url.starts_with("s3://") => {
                let rest = &url["s3://".len()..];
                let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                if bucket.is_empty() {
                    return Err(bad(url, "no bucket"));
                }
                let mut s3 = s3.clone();
                s3.bucket = bucket.to_string();
                Ok(WarehouseSetup::S3 {
                    s3,
                    prefix: prefix.trim_matches('/').to_string(),
                })
            }
            (Some(url), _) if url.starts_with("s3://") => Err(bad(
                url,
                "an s3:// warehouse is reached with [object_store]'s endpoint and credentials, \
                 and [object_store] is not kind = \"s3\"",
            )),
            (Some(url), _) => Err(bad(url, "give a file:// or s3:// URL")),
        }
    }
}

/// The `[iceberg.client]` key naming the address the writer connects to.
const BOOTSTRAP_SERVERS: &str = "bootstrap.servers";

/// A listener's address as this host reaches it (a wildcard one on the loopback).
fn reachable(mut address: std::net::SocketAddr) -> std::net::SocketAddr {
    if address.ip().is_unspecified() {
        address.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    address
}

/// Starts the table writer's thread; it writes while this broker holds the cluster's duties
/// (a single node always does), so one broker of a cluster writes the tables at a time.
pub fn start(setup: WriterSetup, duties: Duties) -> Result<(), EngineError> {
    if let CatalogSetup::Sqlite(file) = &setup.catalog {
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| EngineError::Config(format!("{}: {e}", dir.display())))?;
        }
    }
    std::thread::Builder::new()
        .name("iceberg-writer".into())
        .spawn(move || writer::run(setup, duties))
        .map_err(|e| EngineError::Config(format!("cannot start the table writer: {e}")))?;
    Ok(())
}
