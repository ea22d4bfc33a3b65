//! `[iceberg]` and its tables: what the broker's config file says about tables.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

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

impl IcebergConfig {
    pub fn retention(&self) -> shoal_iceberg::metadata::Retention {
        shoal_iceberg::metadata::Retention {
            max_snapshots: self.max_snapshots,
            max_age_ms: i64::try_from(self.snapshot_max_age_ms).unwrap_or(i64::MAX),
        }
    }
}
