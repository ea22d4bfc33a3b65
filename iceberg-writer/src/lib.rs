//! The table writer: topics with `shoal.iceberg.enabled` kept as Apache Iceberg tables
//! (`shoal_iceberg` has the formats). It runs on a thread of its own, beside the shards, as a
//! Kafka client of its own broker: every `commit_interval_ms` it reads each such topic's
//! committed records (read_committed, so aborted transactions are left out) from where the
//! table's last snapshot says each partition ends, writes them as one Parquet file, and
//! commits the snapshot to the catalog (the SQL catalog's compare-and-swap, or a REST
//! catalog's commit that requires the table unchanged since it was read). The offsets a table has
//! reached live in its snapshots only, so a writer that restarts or loses a race continues
//! with no record missing or twice. The broker (the engine crate) resolves its setup from its
//! config and starts it.

mod compaction;
mod config;
mod convert;
mod error;
mod pg_catalog;
mod reader;
mod registry_access;
mod rest_auth;
mod rest_catalog;
mod s3_client;
mod setup;
mod tables;
mod value_schemas;
mod warehouse;
mod writer;

pub use config::{BadRecords, IcebergConfig, RestCatalogConfig};
pub use error::WriterError;
pub use setup::{BrokerListener, CatalogSetup, WriterSetup};

use shoal_metalog::Duties;

/// Starts the table writer's thread; it writes while this broker holds the cluster's duties
/// (a single node always does), so one broker of a cluster writes the tables at a time.
pub fn start(setup: WriterSetup, duties: Duties) -> Result<(), WriterError> {
    if let CatalogSetup::Sqlite(file) = &setup.catalog {
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| WriterError::Config(format!("{}: {e}", dir.display())))?;
        }
    }
    std::thread::Builder::new()
        .name("iceberg-writer".into())
        .spawn(move || writer::run(setup, duties))
        .map_err(|e| WriterError::Config(format!("cannot start the table writer: {e}")))?;
    Ok(())
}
