//! Where the writer works, resolved from `[iceberg]` and the broker's own settings: the
//! listener it reads through, the catalog, the warehouse, the schema registry.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use shoal_auth::{ClientSecurity, SecurityProtocol};
use shoal_pg::PgConfig;
use shoal_registry_server::SchemaRegistryConfig;
use shoal_wal::store::StoreConfig;

use crate::config::{IcebergConfig, RestCatalogConfig};
use crate::registry_access::{self, RegistryAccess};
use crate::warehouse::WarehouseSetup;
use crate::WriterError;

/// One of this broker's listeners, as the writer may connect to it.
pub struct BrokerListener {
    pub protocol: SecurityProtocol,
    pub address: SocketAddr,
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
    /// The writer's setup, or None when tables are not written here.
    pub fn setup(
        &self,
        data_dir: &Path,
        listeners: &[BrokerListener],
        registry: &SchemaRegistryConfig,
        store: &StoreConfig,
        coordinator_database: Option<&PgConfig>,
    ) -> Result<Option<WriterSetup>, WriterError> {
        if !self.enabled {
            return Ok(None);
        }
        if self.commit_interval_ms == 0
            || self.max_bytes_per_commit == 0
            || self.max_snapshots == 0
            || self.target_file_bytes == 0
            || self.compact_min_files < 2
        {
            return Err(WriterError::Config(
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
        listeners: &[BrokerListener],
    ) -> Result<(String, ClientSecurity), WriterError> {
        let bad = |why: String| WriterError::Config(format!("[iceberg.client] {why}"));
        let settings = (self.client.iter())
            .filter(|(name, _)| *name != BOOTSTRAP_SERVERS)
            .map(|(name, value)| (name.as_str(), value.as_str()));
        let security = ClientSecurity::from_client_settings(settings).map_err(bad)?;
        let listener = listeners.iter().find(|l| l.protocol == security.protocol);
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
    ) -> Result<WarehouseSetup, WriterError> {
        let bad =
            |url: &str, why: &str| WriterError::Config(format!("[iceberg] warehouse {url}: {why}"));
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
pub(crate) fn reachable(mut address: std::net::SocketAddr) -> std::net::SocketAddr {
    if address.ip().is_unspecified() {
        address.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    address
}
