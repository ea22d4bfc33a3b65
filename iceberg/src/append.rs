//! One append commit, planned without I/O: the objects to store (a data file, its manifest,
//! the snapshot's manifest list, the new table metadata, in that order) and the metadata's
//! location for the catalog's compare-and-swap. A commit that loses the swap is planned again
//! from the table the catalog then points at; its objects are left unreferenced.

use std::collections::BTreeMap;

use serde_json::Value;
use uuid::Uuid;

use crate::data_file::WrittenFile;
use crate::manifest::{self, DataFile, ManifestFile};
use crate::metadata::{self, Expired, NewSnapshot, Replaced, Retention};
use crate::shred::ValueLeaves;
use crate::table_schema::TableSchema;
use crate::{data_file, IcebergError, Row};

/// The table a commit starts from, as the catalog points at it.
pub struct TableState {
    pub metadata_location: String,
    pub metadata: Value,
    /// The current snapshot's manifest list, read by the caller (None for a new table).
    pub manifest_list: Option<Vec<u8>>,
}

/// An object to store at an absolute location (`file://…` or `s3://…`).
pub struct Object {
    pub location: String,
    pub bytes: Vec<u8>,
}

/// The rows a commit adds, and the schema they are written with (the table's, or the next
/// one when their value schemas added fields).
pub struct NewRows<'a> {
    pub rows: &'a [Row],
    pub schema: &'a TableSchema,
    /// The rows' value fields, for a table that has them.
    pub values: Option<&'a ValueLeaves>,
}

pub struct Append {
    /// To store before the catalog swaps to `metadata_location` (the metadata last).
    pub objects: Vec<Object>,
    pub metadata_location: String,
    /// The new metadata (the last object's bytes, parsed).
    pub metadata: Value,
    /// What the new metadata no longer names, to delete once the catalog names it.
    pub expired: Expired,
}

/// The commit that appends `new` to `table`, after which the table takes `next_offsets`; it
/// expires the snapshots `retention` lets go.
pub fn plan(
    table: &TableState,
    new: &NewRows<'_>,
    next_offsets: &BTreeMap<i32, i64>,
    retention: &Retention,
    now_ms: i64,
) -> Result<Append, IcebergError> {
    let data = match new.rows.is_empty() {
        true => None,
        false => Some(data_file::write(new.rows, new.schema, new.values)?),
    };
    let snapshot = Snapshot {
        schema: new.schema,
        data,
        kept_manifests: current_manifests(table)?,
        replaced: None,
        next_offsets,
    };
    commit(table, snapshot, retention, now_ms)
}

/// The commit that replaces the data files of `replaced` (each the one file of its manifest)
/// with `merged`, which holds their rows: the table reads the same after it.
pub fn plan_compaction(
    table: &TableState,
    schema: &TableSchema,
    merged: WrittenFile,
    replaced: &[(ManifestFile, DataFile)],
    retention: &Retention,
    now_ms: i64,
) -> Result<Append, IcebergError> {
    let gone: Vec<&str> = replaced.iter().map(|(m, _)| m.path.as_str()).collect();
    let mut kept_manifests = current_manifests(table)?;
    kept_manifests.retain(|m| !gone.contains(&m.path.as_str()));
    let next_offsets = metadata::next_offsets(&table.metadata)?;
    let replaced_paths = Replaced {
        files: replaced.iter().map(|(_, f)| f.path.clone()).collect(),
        manifests: gone.iter().map(|path| path.to_string()).collect(),
    };
    let snapshot = Snapshot {
        schema,
        data: Some(merged),
        kept_manifests,
        replaced: Some(&replaced_paths),
        next_offsets: &next_offsets,
    };
    commit(table, snapshot, retention, now_ms)
}

/// The manifests of the table's current snapshot.
pub fn current_manifests(table: &TableState) -> Result<Vec<ManifestFile>, IcebergError> {
    match &table.manifest_list {
        Some(list) => manifest::read_manifest_list(list),
        None => Ok(Vec::new()),
    }
}

/// What a new snapshot holds: the manifests it keeps of the current one, and a data file of
/// its own.
struct Snapshot<'a> {
    schema: &'a TableSchema,
    data: Option<WrittenFile>,
    kept_manifests: Vec<ManifestFile>,
    replaced: Option<&'a Replaced>,
    next_offsets: &'a BTreeMap<i32, i64>,
}

fn commit(
    table: &TableState,
    snapshot: Snapshot<'_>,
    retention: &Retention,
    now_ms: i64,
) -> Result<Append, IcebergError> {
    let location = table.metadata["location"]
        .as_str()
        .ok_or_else(|| IcebergError::Metadata(format!("{}: no location", table.metadata_location)))?
        .trim_end_matches('/')
        .to_string();
    let commit_id = Uuid::new_v4();
    let snapshot_id = (commit_id.as_u128() as i64) & i64::MAX;
    let mut objects = Vec::new();
    let mut added = Vec::new();
    if let Some(file) = snapshot.data {
        let path = format!("{location}/data/{commit_id}.parquet");
        added.push(DataFile {
            path: path.clone(),
            record_count: file.record_count,
            size_bytes: file.bytes.len() as i64,
            metrics: file.metrics,
        });
        objects.push(Object {
            location: path,
            bytes: file.bytes,
        });
    }
    let sequence_number = table.metadata["last-sequence-number"].as_i64().unwrap_or(0) + 1;
    let mut manifests = snapshot.kept_manifests;
    if !added.is_empty() {
        let bytes = manifest::write_manifest(snapshot_id, &added, snapshot.schema)?;
        let path = format!("{location}/metadata/{commit_id}-m0.avro");
        let length = bytes.len() as i64;
        manifests.push(ManifestFile::added(
            path.clone(),
            length,
            snapshot_id,
            sequence_number,
            &added,
        ));
        objects.push(Object {
            location: path,
            bytes,
        });
    }
    let parent = metadata::current_snapshot(&table.metadata)?.map(|s| s.snapshot_id);
    let list = manifest::write_manifest_list(snapshot_id, parent, sequence_number, &manifests)?;
    let list_location = format!("{location}/metadata/snap-{snapshot_id}-1-{commit_id}.avro");
    objects.push(Object {
        location: list_location.clone(),
        bytes: list,
    });
    let new_snapshot = NewSnapshot {
        schema: snapshot.schema,
        snapshot_id,
        manifest_list: &list_location,
        added_files: added.len(),
        added_records: added.iter().map(|f| f.record_count as u64).sum(),
        replaced: snapshot.replaced,
        next_offsets: snapshot.next_offsets,
        now_ms,
    };
    let (mut next, _) = metadata::append(&table.metadata, &table.metadata_location, &new_snapshot)?;
    // The version counts every commit, also those whose log entries have expired.
    let version = (table.metadata_location.rsplit('/').next())
        .and_then(|name| name.split('-').next())
        .and_then(|number| number.parse::<u64>().ok())
        .map_or(0, |previous| previous + 1);
    let expired = metadata::expire(&mut next, retention, now_ms)?;
    let metadata_location = format!("{location}/metadata/{version:05}-{commit_id}.metadata.json");
    objects.push(Object {
        location: metadata_location.clone(),
        bytes: serde_json::to_vec(&next)
            .map_err(|e| IcebergError::Metadata(format!("{metadata_location}: {e}")))?,
    });
    Ok(Append {
        objects,
        metadata_location,
        metadata: next,
        expired,
    })
}

/// The objects and metadata location of a new table of `schema` at `location`, holding the
/// records of the topic whose id is `topic_id`.
pub fn create(
    location: &str,
    topic_id: &str,
    schema: &TableSchema,
    now_ms: i64,
) -> Result<Append, IcebergError> {
    let location = location.trim_end_matches('/');
    let table_uuid = Uuid::new_v4();
    let metadata = metadata::new_table(location, &table_uuid.to_string(), topic_id, schema, now_ms);
    let metadata_location = format!("{location}/metadata/00000-{table_uuid}.metadata.json");
    let bytes = serde_json::to_vec(&metadata)
        .map_err(|e| IcebergError::Metadata(format!("{metadata_location}: {e}")))?;
    Ok(Append {
        objects: vec![Object {
            location: metadata_location.clone(),
            bytes,
        }],
        metadata_location,
        metadata,
        expired: Expired::default(),
    })
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    /// Stores `append`'s objects under the file:// locations; the table's new state.
    fn store(append: &Append, list: Option<Vec<u8>>) -> TableState {
        for object in &append.objects {
            let path = object.location.strip_prefix("file://").unwrap();
            std::fs::create_dir_all(std::path::Path::new(path).parent().unwrap()).unwrap();
            std::fs::write(path, &object.bytes).unwrap();
        }
        let metadata_bytes = &append.objects.last().unwrap().bytes;
        TableState {
            metadata_location: append.metadata_location.clone(),
            metadata: serde_json::from_slice(metadata_bytes).unwrap(),
            manifest_list: list,
        }
    }

    fn rows(partition: i32, offsets: std::ops::Range<i64>) -> Vec<Row> {
        offsets
            .map(|offset| Row {
                partition,
                offset,
                timestamp_ms: 1_700_000_000_000,
                key: None,
                value: Some(Bytes::from(format!("v{offset}"))),
                headers: vec![],
            })
            .collect()
    }

    #[test]
    fn appends_chain_their_manifests_and_offsets() {
        let dir = std::env::var("SHOAL_ICEBERG_TEST_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|_| std::env::temp_dir().join(format!("iceberg-{}", Uuid::new_v4())));
        let location = format!("file://{}/db/orders", dir.display());
        let schema = TableSchema::new(crate::table_schema::ValueColumns::Binary);
        let table = store(&create(&location, "topic-id", &schema, 1).unwrap(), None);
        let first_offsets = BTreeMap::from([(0, 10)]);
        let first_rows = rows(0, 0..10);
        let new = |rows| NewRows {
            rows,
            schema: &schema,
            values: None,
        };
        let retention = Retention {
            max_snapshots: 100,
            max_age_ms: i64::MAX,
        };
        let first = plan(&table, &new(&first_rows), &first_offsets, &retention, 2).unwrap();
        let list = first.objects[2].bytes.clone();
        let table = store(&first, Some(list));
        let second_offsets = BTreeMap::from([(0, 10), (1, 5)]);
        let second_rows = rows(1, 0..5);
        let second = plan(&table, &new(&second_rows), &second_offsets, &retention, 3).unwrap();
        let list = second.objects[2].bytes.clone();
        assert_eq!(manifest::read_manifest_list(&list).unwrap().len(), 2);
        let table = store(&second, Some(list));
        assert_eq!(
            metadata::next_offsets(&table.metadata).unwrap(),
            second_offsets
        );
        assert!(table.metadata_location.contains("/metadata/00002-"));
        if std::env::var("SHOAL_ICEBERG_TEST_DIR").is_err() {
            std::fs::remove_dir_all(&dir).unwrap();
        } else {
            println!("{}", table.metadata_location);
        }
    }
}
