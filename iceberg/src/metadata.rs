//! Table metadata (format version 2) as the catalog's pointer names it: a new table's, and the
//! next one after appending a snapshot. Kept as JSON so that whatever another writer added
//! (properties, other snapshots, statistics) passes through a commit untouched.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::manifest::PARTITION_SPEC_ID;
use crate::table_schema::TableSchema;
use crate::IcebergError;

/// The snapshot summary key holding, per partition, the next offset the table takes.
pub const NEXT_OFFSETS_KEY: &str = "shoal.next-offsets";

/// The metadata of a new, empty table of `schema` at `location` (no trailing slash).
pub fn new_table(location: &str, table_uuid: &str, schema: &TableSchema, now_ms: i64) -> Value {
    json!({
        "format-version": 2,
        "table-uuid": table_uuid,
        "location": location,
        "last-sequence-number": 0,
        "last-updated-ms": now_ms,
        "last-column-id": schema.last_column_id,
        "current-schema-id": schema.schema_id,
        "schemas": [schema.to_json()],
        "default-spec-id": PARTITION_SPEC_ID,
        "partition-specs": [{"spec-id": PARTITION_SPEC_ID, "fields": []}],
        "last-partition-id": 999,
        "default-sort-order-id": 0,
        "sort-orders": [{"order-id": 0, "fields": []}],
        "properties": {"write.format.default": "parquet"},
        "current-snapshot-id": -1,
        "refs": {},
        "snapshots": [],
        "snapshot-log": [],
        "metadata-log": []
    })
}

/// A snapshot to append.
pub struct NewSnapshot<'a> {
    /// The schema its files were written with: the table's current one, or its next (which
    /// becomes current with this snapshot).
    pub schema: &'a TableSchema,
    pub snapshot_id: i64,
    pub manifest_list: &'a str,
    pub added_files: usize,
    pub added_records: u64,
    /// Per partition, the next offset the table takes after this snapshot.
    pub next_offsets: &'a BTreeMap<i32, i64>,
    pub now_ms: i64,
}

/// A table's current snapshot: its id and the manifest list it names.
pub struct CurrentSnapshot {
    pub snapshot_id: i64,
    pub manifest_list: String,
}

/// The metadata after appending `snapshot` to `metadata` (read from `metadata_location`),
/// with the new sequence number.
pub fn append(
    metadata: &Value,
    metadata_location: &str,
    snapshot: &NewSnapshot<'_>,
) -> Result<(Value, i64), IcebergError> {
    let mut next = metadata.clone();
    let bad = |what: &str| IcebergError::Metadata(format!("{metadata_location}: {what}"));
    let object = next.as_object_mut().ok_or_else(|| bad("not an object"))?;
    let sequence_number = object
        .get("last-sequence-number")
        .and_then(Value::as_i64)
        .ok_or_else(|| bad("no last-sequence-number"))?
        + 1;
    let parent = current_snapshot(metadata)?.map(|s| s.snapshot_id);
    let offsets: BTreeMap<String, i64> = (snapshot.next_offsets.iter())
        .map(|(p, o)| (p.to_string(), *o))
        .collect();
    let mut entry = json!({
        "snapshot-id": snapshot.snapshot_id,
        "sequence-number": sequence_number,
        "timestamp-ms": snapshot.now_ms,
        "manifest-list": snapshot.manifest_list,
        "schema-id": snapshot.schema.schema_id,
        "summary": {
            "operation": "append",
            "added-data-files": snapshot.added_files.to_string(),
            "added-records": snapshot.added_records.to_string(),
            NEXT_OFFSETS_KEY: serde_json::to_string(&offsets).unwrap_or_default(),
        }
    });
    if let Some(parent) = parent {
        entry["parent-snapshot-id"] = json!(parent);
    }
    push(object, "snapshots", entry)?;
    let schema_id = i64::from(snapshot.schema.schema_id);
    if object.get("current-schema-id").and_then(Value::as_i64) != Some(schema_id) {
        push(object, "schemas", snapshot.schema.to_json())?;
        object.insert("current-schema-id".into(), json!(schema_id));
        object.insert(
            "last-column-id".into(),
            json!(snapshot.schema.last_column_id),
        );
    }
    push(
        object,
        "snapshot-log",
        json!({"snapshot-id": snapshot.snapshot_id, "timestamp-ms": snapshot.now_ms}),
    )?;
    let previous_updated = object.get("last-updated-ms").cloned().unwrap_or(json!(0));
    push(
        object,
        "metadata-log",
        json!({"metadata-file": metadata_location, "timestamp-ms": previous_updated}),
    )?;
    object.insert("last-sequence-number".into(), json!(sequence_number));
    object.insert("last-updated-ms".into(), json!(snapshot.now_ms));
    object.insert("current-snapshot-id".into(), json!(snapshot.snapshot_id));
    let refs = object
        .entry("refs")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| bad("refs is not an object"))?;
    refs.insert(
        "main".into(),
        json!({"snapshot-id": snapshot.snapshot_id, "type": "branch"}),
    );
    Ok((next, sequence_number))
}

fn push(
    object: &mut serde_json::Map<String, Value>,
    key: &str,
    item: Value,
) -> Result<(), IcebergError> {
    object
        .entry(key)
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .ok_or_else(|| IcebergError::Metadata(format!("{key} is not a list")))?
        .push(item);
    Ok(())
}

/// The snapshot `main` points at, if any.
pub fn current_snapshot(metadata: &Value) -> Result<Option<CurrentSnapshot>, IcebergError> {
    let id = metadata["refs"]["main"]["snapshot-id"]
        .as_i64()
        .or_else(|| metadata["current-snapshot-id"].as_i64())
        .filter(|id| *id >= 0);
    let Some(id) = id else { return Ok(None) };
    let snapshot = snapshot_by_id(metadata, id)?;
    let manifest_list = snapshot["manifest-list"]
        .as_str()
        .ok_or_else(|| IcebergError::Metadata(format!("snapshot {id} has no manifest list")))?;
    Ok(Some(CurrentSnapshot {
        snapshot_id: id,
        manifest_list: manifest_list.to_string(),
    }))
}

fn snapshot_by_id(metadata: &Value, id: i64) -> Result<&Value, IcebergError> {
    (metadata["snapshots"].as_array().into_iter().flatten())
        .find(|s| s["snapshot-id"].as_i64() == Some(id))
        .ok_or_else(|| IcebergError::Metadata(format!("snapshot {id} is not listed")))
}

/// Per partition, the next offset the table takes: from the newest snapshot on `main`'s
/// ancestry that carries them (a snapshot another writer made, a compaction's, has none).
pub fn next_offsets(metadata: &Value) -> Result<BTreeMap<i32, i64>, IcebergError> {
    let mut id = current_snapshot(metadata)?.map(|s| s.snapshot_id);
    while let Some(snapshot_id) = id {
        let snapshot = snapshot_by_id(metadata, snapshot_id)?;
        if let Some(text) = snapshot["summary"][NEXT_OFFSETS_KEY].as_str() {
            let offsets: BTreeMap<String, i64> = serde_json::from_str(text).map_err(|e| {
                IcebergError::Metadata(format!("snapshot {snapshot_id}'s {NEXT_OFFSETS_KEY}: {e}"))
            })?;
            return offsets
                .into_iter()
                .map(|(p, o)| {
                    p.parse::<i32>().map(|p| (p, o)).map_err(|_| {
                        IcebergError::Metadata(format!("snapshot {snapshot_id}: partition {p}"))
                    })
                })
                .collect();
        }
        id = snapshot["parent-snapshot-id"].as_i64();
    }
    Ok(BTreeMap::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appended_snapshots_carry_the_next_offsets_and_chain() {
        let schema = TableSchema::new(crate::table_schema::ValueColumns::Binary);
        let table = new_table(
            "file:///w/db/orders",
            "2c9c5a3e-0000-4000-8000-000000000001",
            &schema,
            1,
        );
        assert_eq!(next_offsets(&table).unwrap(), BTreeMap::new());
        assert!(current_snapshot(&table).unwrap().is_none());
        let offsets = BTreeMap::from([(0, 100), (1, 42)]);
        let first = NewSnapshot {
            schema: &schema,
            snapshot_id: 11,
            manifest_list: "file:///w/db/orders/metadata/snap-11.avro",
            added_files: 1,
            added_records: 142,
            next_offsets: &offsets,
            now_ms: 2,
        };
        let (table, sequence) = append(&table, "v0.metadata.json", &first).unwrap();
        assert_eq!(sequence, 1);
        assert_eq!(next_offsets(&table).unwrap(), offsets);
        let later = BTreeMap::from([(0, 150), (1, 42)]);
        let second = NewSnapshot {
            snapshot_id: 12,
            next_offsets: &later,
            ..first
        };
        let (table, sequence) = append(&table, "v1.metadata.json", &second).unwrap();
        assert_eq!(sequence, 2);
        assert_eq!(table["snapshots"][1]["parent-snapshot-id"], 11);
        assert_eq!(table["refs"]["main"]["snapshot-id"], 12);
        assert_eq!(table["metadata-log"].as_array().unwrap().len(), 2);
        assert_eq!(next_offsets(&table).unwrap(), later);
        // A snapshot without the offsets (another writer's) passes them on from its parent.
        let mut foreign = table.clone();
        foreign["snapshots"]
            .as_array_mut()
            .unwrap()
            .push(json!({"snapshot-id": 13, "parent-snapshot-id": 12, "summary": {"operation": "replace"}, "manifest-list": "x"}));
        foreign["refs"]["main"]["snapshot-id"] = json!(13);
        assert_eq!(next_offsets(&foreign).unwrap(), later);
    }
}
