//! Compaction of a table's small data files, after its commits: once the current snapshot has
//! `[iceberg] compact_min_files` files under half of `target_file_bytes` (each the one file of
//! a manifest, as the writer's commits make them), the oldest of them, up to
//! `target_file_bytes` and written with one schema, are merged into one file in a `replace`
//! snapshot. The table reads the same after it; the merged files are deleted once no snapshot
//! older than the compaction is kept (`metadata::expire`).

use bytes::Bytes;
use shoal_iceberg::append;
use shoal_iceberg::catalog::TableName;
use shoal_iceberg::compact::{merge_files, schema_of};
use shoal_iceberg::manifest::{self, DataFile, ManifestFile};
use shoal_iceberg::table_schema::TableSchema;

use super::tables::{Tables, METADATA_MAX_BYTES};
use super::WriterSetup;

/// Compacts `table` if it has enough small files; whether it did.
pub fn compact(setup: &WriterSetup, tables: &Tables, table: &TableName) -> Result<bool, String> {
    let config = &setup.config;
    let Some(loaded) = tables.load(table)? else {
        return Ok(false);
    };
    let schema = TableSchema::of_metadata(&loaded.1, &loaded.0).map_err(|e| e.to_string())?;
    let from = tables.state(loaded)?;
    let mut singles: Vec<ManifestFile> = (append::current_manifests(&from))
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|m| {
            m.content == 0
                && m.added_files_count == 1
                && m.existing_files_count == 0
                && m.deleted_files_count == 0
        })
        .collect();
    if singles.len() < config.compact_min_files {
        return Ok(false);
    }
    singles.sort_by_key(|m| m.sequence_number);
    let small_bytes = i64::try_from(config.target_file_bytes / 2).unwrap_or(i64::MAX);
    let mut small = Vec::new();
    for manifest_file in singles {
        let bytes = tables
            .warehouse
            .read(&manifest_file.path, METADATA_MAX_BYTES)?;
        let files = manifest::read_manifest(&bytes).map_err(|e| e.to_string())?;
        if let [file] = files.as_slice() {
            if file.size_bytes < small_bytes {
                small.push((manifest_file, file.clone()));
            }
        }
    }
    if small.len() < config.compact_min_files {
        return Ok(false);
    }
    // The oldest, while they fit the target and share the first one's schema.
    let mut taken: Vec<(ManifestFile, DataFile)> = Vec::new();
    let mut contents: Vec<Bytes> = Vec::new();
    let mut total = 0u64;
    let mut first_schema = None;
    for (manifest_file, file) in small {
        let size = file.size_bytes.max(0) as u64;
        if total + size > config.target_file_bytes && taken.len() >= 2 {
            break;
        }
        let content = Bytes::from(
            tables
                .warehouse
                .read(&file.path, config.target_file_bytes)?,
        );
        let file_schema = schema_of(&content).map_err(|e| e.to_string())?;
        match &first_schema {
            None => first_schema = Some(file_schema),
            Some(first) if *first != file_schema => break,
            Some(_) => {}
        }
        total += size;
        taken.push((manifest_file, file));
        contents.push(content);
    }
    if taken.len() < 2 {
        return Ok(false);
    }
    let merged = merge_files(&contents).map_err(|e| e.to_string())?;
    let rows = merged.record_count;
    let now_ms = shoal_shards::maintenance::now_ms();
    let planned =
        append::plan_compaction(&from, &schema, merged, &taken, &config.retention(), now_ms)
            .map_err(|e| e.to_string())?;
    tables.publish(table, &from, &planned)?;
    tracing::info!(namespace = %table.namespace, table = %table.table, files = taken.len(), rows, bytes = total, "table files compacted");
    Ok(true)
}
