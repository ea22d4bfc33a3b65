//! A table's commits as the writer makes them: loaded from the catalog, created, and
//! published: the commit's files stored, the commit made in the catalog if the table is still
//! at the metadata the commit was planned from, and the files the commit let go deleted.

use shoal_iceberg::append::{self, Append, TableState};
use shoal_iceberg::catalog::{Catalog, Pointer, TableName, Version};
use shoal_iceberg::metadata;
use shoal_iceberg::table_schema::TableSchema;

use super::warehouse::Warehouse;

/// The most a table's metadata, a manifest list or a manifest may hold when read back.
pub const METADATA_MAX_BYTES: u64 = 64 << 20;

/// A table as the catalog names it: its metadata's location and the metadata.
pub type Loaded = (String, serde_json::Value);

/// The catalog and the warehouse its tables are kept in.
pub struct Tables {
    pub catalog: Box<dyn Catalog>,
    pub warehouse: Warehouse,
}

impl Tables {
    /// The table the catalog names, if any.
    pub fn load(&self, table: &TableName) -> Result<Option<Loaded>, String> {
        let Some(Pointer { location, metadata }) =
            self.catalog.load(table).map_err(|e| e.to_string())?
        else {
            return Ok(None);
        };
        let metadata = match metadata {
            Some(given) => given,
            None => {
                let bytes = self.warehouse.read(&location, METADATA_MAX_BYTES)?;
                serde_json::from_slice(&bytes).map_err(|e| format!("{location}: {e}"))?
            }
        };
        Ok(Some((location, metadata)))
    }

    /// The table as a commit starts from it: with its current manifest list read.
    pub fn state(&self, (metadata_location, metadata): Loaded) -> Result<TableState, String> {
        let manifest_list =
            match metadata::current_snapshot(&metadata).map_err(|e| e.to_string())? {
                Some(current) => Some(
                    self.warehouse
                        .read(&current.manifest_list, METADATA_MAX_BYTES)?,
                ),
                None => None,
            };
        Ok(TableState {
            metadata_location,
            metadata,
            manifest_list,
        })
    }

    /// Makes `planned` (planned from `from`) the table's state; Err when another writer committed
    /// first (the next round plans again).
    pub fn publish(
        &self,
        table: &TableName,
        from: &TableState,
        planned: &Append,
    ) -> Result<(), String> {
        let writes_metadata = self.catalog.writes_metadata();
        let objects = match writes_metadata {
            // The metadata is the last object: the catalog writes its own.
            true => &planned.objects[..planned.objects.len().saturating_sub(1)],
            false => &planned.objects[..],
        };
        self.warehouse.store(objects)?;
        let from_version = Version {
            location: &from.metadata_location,
            metadata: &from.metadata,
        };
        let next_version = Version {
            location: &planned.metadata_location,
            metadata: &planned.metadata,
        };
        if !self
            .catalog
            .commit(table, from_version, next_version)
            .map_err(|e| e.to_string())?
        {
            return Err("another writer committed first; planning again next round".into());
        }
        let expired = &planned.expired;
        // A catalog that writes the metadata files also deletes the old ones (the table's
        // `write.metadata.delete-after-commit.enabled`).
        let metadata_files = match writes_metadata {
            true => &[][..],
            false => &expired.metadata_files[..],
        };
        self.warehouse.delete(
            (expired.manifest_lists.iter())
                .chain(metadata_files)
                .chain(&expired.replaced.files)
                .chain(&expired.replaced.manifests),
        );
        Ok(())
    }

    /// A new table of `schema` in the warehouse for the records of the topic `topic_id`,
    /// registered in the catalog. Err when another writer registered it first (the next round
    /// takes it up).
    pub fn create(
        &self,
        table: &TableName,
        topic_id: &str,
        schema: &TableSchema,
    ) -> Result<Loaded, String> {
        let location = self
            .warehouse
            .table_location(&table.namespace, &table.table);
        let now_ms = shoal_shards::maintenance::now_ms();
        let created =
            append::create(&location, topic_id, schema, now_ms).map_err(|e| e.to_string())?;
        self.warehouse.store(&created.objects)?;
        if !self
            .catalog
            .create(table, &created.metadata_location)
            .map_err(|e| e.to_string())?
        {
            return Err("another writer created the table first; taking it up next round".into());
        }
        tracing::info!(namespace = %table.namespace, table = %table.table, %location, "Iceberg table created");
        Ok((created.metadata_location, created.metadata))
    }
}
