//! The table writer: topics with `shoal.iceberg.enabled` kept as Apache Iceberg tables
//! (`shoal_iceberg` has the formats). It runs on a thread of its own, beside the shards, as a
//! Kafka client of its own broker: every `commit_interval_ms` it reads each such topic's
//! committed records (read_committed, so aborted transactions are left out) from where the
//! table's last snapshot says each partition ends, writes them as one Parquet file, and
//! commits the snapshot to the SQL catalog with a compare-and-swap. The offsets a table has
//! reached live in its snapshots only, so a writer that restarts or loses a race continues
//! with no record missing or twice.

mod compaction;
mod convert;
mod reader;
mod tables;
mod value_schemas;
mod warehouse;
mod writer;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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
    /// directory).
    pub catalog_file: Option<PathBuf>,
    /// Where tables are stored, a `file://` URL (default: `iceberg/warehouse` in the data
    /// directory).
    pub warehouse: Option<String>,
    /// The schema registry that records' schema ids are looked up in, to make their values
    /// columns (default: this broker's own, when `[schema_registry] listen` serves plain HTTP;
    /// without one, values are kept as bytes).
    pub schema_registry_url: Option<String>,
    /// A record whose value cannot become the table's columns (no schema id, a schema that is
    /// not an Avro record, data that does not decode): `stop` the table before it, or set it
    /// aside in the dead-letter table `<topic>_dead_letters` and go on.
    pub bad_records: BadRecords,
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
            bad_records: BadRecords::Stop,
        }
    }
}

/// Where the writer works: resolved from the config and the broker's own settings.
pub struct WriterSetup {
    pub config: IcebergConfig,
    /// This broker's PLAINTEXT listener, which the writer reads through.
    pub bootstrap: String,
    pub catalog_file: PathBuf,
    /// The warehouse directory (file:// locations name it).
    pub warehouse_dir: PathBuf,
    /// Where value schemas are looked up, if anywhere.
    pub schema_registry_url: Option<String>,
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
        let listener = listeners
            .iter()
            .find(|l| l.protocol == SecurityProtocol::Plaintext)
            .ok_or_else(|| {
                EngineError::Config(
                    "[iceberg] the table writer reads through a PLAINTEXT listener; this broker \
                     has none"
                        .into(),
                )
            })?;
        let address = reachable(listener.address);
        let warehouse_dir = match &self.warehouse {
            None => data_dir.join("iceberg").join("warehouse"),
            Some(url) => PathBuf::from(url.strip_prefix("file://").ok_or_else(|| {
                EngineError::Config(format!(
                    "[iceberg] warehouse {url}: only file:// warehouses are written so far"
                ))
            })?),
        };
        let catalog_file = (self.catalog_file.clone())
            .unwrap_or_else(|| data_dir.join("iceberg").join("catalog.db"));
        let own_registry = match (registry.listen, registry.tls) {
            (Some(address), false) => Some(format!("http://{}", reachable(address))),
            _ => None,
        };
        Ok(Some(WriterSetup {
            config: self.clone(),
            bootstrap: address.to_string(),
            catalog_file,
            warehouse_dir,
            schema_registry_url: self.schema_registry_url.clone().or(own_registry),
        }))
    }
}

/// A listener's address as this host reaches it (a wildcard one on the loopback).
fn reachable(mut address: std::net::SocketAddr) -> std::net::SocketAddr {
    if address.ip().is_unspecified() {
        address.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    address
}

/// Starts the table writer's thread.
pub fn start(setup: WriterSetup) -> Result<(), EngineError> {
    for dir in [
        Some(setup.warehouse_dir.as_path()),
        setup.catalog_file.parent(),
    ]
    .into_iter()
    .flatten()
    {
        std::fs::create_dir_all(dir)
            .map_err(|e| EngineError::Config(format!("{}: {e}", dir.display())))?;
    }
    std::thread::Builder::new()
        .name("iceberg-writer".into())
        .spawn(move || writer::run(setup))
        .map_err(|e| EngineError::Config(format!("cannot start the table writer: {e}")))?;
    Ok(())
}
