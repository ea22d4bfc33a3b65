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
/// The summary key of a compaction's snapshot naming what it replaced: deleted once no older
/// snapshot is kept.
pub const REPLACED_KEY: &str = "shoal.replaced";

/// The table property naming the topic (by its id) whose records the table holds: a topic
/// deleted and made again under the same name is another topic, whose offsets start again.
pub const TOPIC_ID_PROPERTY: &str = "shoal.topic-id";

/// The data files a compaction merged, and the manifests that named them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Replaced {
    pub files: Vec<String>,
    pub manifests: Vec<String>,
}

/// The metadata of a new, empty table of `schema` at `location` (no trailing slash), holding
/// the records of the topic whose id is `topic_id`.
pub fn new_table(
    location: &str,
    table_uuid: &str,
    topic_id: &str,
    schema: &TableSchema,
    now_ms: i64,
) -> Value {
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
        // A catalog that writes the metadata files (a REST one) deletes the old ones as this
        // writer does itself for a SQL catalog.
        "properties": {
            "write.format.default": "parquet",
            "write.metadata.delete-after-commit.enabled": "true",
            "write.metadata.previous-versions-max": METADATA_LOG_MAX.to_string(),
            TOPIC_ID_PROPERTY: topic_id,
        },
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
    /// For a compaction: the files (and their manifests) its file replaced.
    pub replaced: Option<&'a Replaced>,
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
    if let Some(replaced) = snapshot.replaced {
        let summary = &mut entry["summary"];
        summary["operation"] = json!("replace");
        summary["deleted-data-files"] = json!(replaced.files.len().to_string());
        summary["deleted-records"] = json!(snapshot.added_records.to_string());
        summary[REPLACED_KEY] = json!(serde_json::to_string(replaced).unwrap_or_default());
    }
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

/// How many old snapshots a table keeps (time travel reaches them), and for how long.
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    /// At most this many snapshots, the newest.
    pub max_snapshots: usize,
    /// None older than this, but the current one.
    pub max_age_ms: i64,
}

/// Earlier metadata files a table's metadata log names, the newest (as Iceberg's
/// `write.metadata.previous-versions-max`); older ones are deleted.
pub const METADATA_LOG_MAX: usize = 100;

/// What a commit's metadata no longer names: files to delete once it is the catalog's.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Expired {
    pub manifest_lists: Vec<String>,
    pub metadata_files: Vec<String>,
    /// What compactions replaced, once no snapshot older than the compaction is kept.
    pub replaced: Replaced,
}

/// Drops the snapshots `retention` lets go from `metadata`, and the metadata log's entries past
/// `METADATA_LOG_MAX`. Kept whatever their age: the snapshots refs name, and the newest on
/// `main` that carries the next offsets (a writer resumes from it).
pub fn expire(
    metadata: &mut Value,
    retention: &Retention,
    now_ms: i64,
) -> Result<Expired, IcebergError> {
    let mut kept: Vec<i64> = (metadata["refs"].as_object().into_iter().flatten())
        .filter_map(|(_, r)| r["snapshot-id"].as_i64())
        .collect();
    kept.extend(offsets_snapshot(metadata)?);
    let mut by_age: Vec<(i64, i64)> = (metadata["snapshots"].as_array().into_iter().flatten())
        .filter_map(|s| Some((s["timestamp-ms"].as_i64()?, s["snapshot-id"].as_i64()?)))
        .collect();
    by_age.sort_unstable_by(|a, b| b.cmp(a));
    for (rank, (at, id)) in by_age.into_iter().enumerate() {
        if rank < retention.max_snapshots && now_ms.saturating_sub(at) <= retention.max_age_ms {
            kept.push(id);
        }
    }
    let mut expired = Expired::default();
    // Sequence numbers of the snapshots before expiry, and of the compactions among them.
    let none = Vec::new();
    let snapshots = metadata["snapshots"].as_array().unwrap_or(&none);
    let sequence = |s: &Value| s["sequence-number"].as_i64().unwrap_or(0);
    let oldest_before = snapshots.iter().map(sequence).min();
    let oldest_after = (snapshots.iter())
        .filter(|s| {
            s["snapshot-id"]
                .as_i64()
                .is_some_and(|id| kept.contains(&id))
        })
        .map(sequence)
        .min();
    for compaction in snapshots {
        let Some(text) = compaction["summary"][REPLACED_KEY].as_str() else {
            continue;
        };
        let at = sequence(compaction);
        let was_needed = oldest_before.is_some_and(|oldest| oldest < at);
        let still_needed = oldest_after.is_some_and(|oldest| oldest < at);
        if was_needed && !still_needed {
            let replaced: Replaced = serde_json::from_str(text)
                .map_err(|e| IcebergError::Metadata(format!("a snapshot's {REPLACED_KEY}: {e}")))?;
            expired.replaced.files.extend(replaced.files);
            expired.replaced.manifests.extend(replaced.manifests);
        }
    }
    let object = metadata
        .as_object_mut()
        .ok_or_else(|| IcebergError::Metadata("metadata is not an object".into()))?;
    if let Some(snapshots) = object.get_mut("snapshots").and_then(Value::as_array_mut) {
        snapshots.retain(|s| {
            let keep = s["snapshot-id"]
                .as_i64()
                .is_some_and(|id| kept.contains(&id));
            if !keep {
                expired
                    .manifest_lists
                    .extend(s["manifest-list"].as_str().map(str::to_string));
            }
            keep
        });
    }
    if let Some(log) = object.get_mut("snapshot-log").and_then(Value::as_array_mut) {
        log.retain(|entry| (entry["snapshot-id"].as_i64()).is_some_and(|id| kept.contains(&id)));
    }
    if let Some(log) = object.get_mut("metadata-log").and_then(Value::as_array_mut) {
        let past = log.len().saturating_sub(METADATA_LOG_MAX);
        expired.metadata_files = (log.drain(..past))
            .filter_map(|entry| entry["metadata-file"].as_str().map(str::to_string))
            .collect();
    }
    Ok(expired)
}

/// The newest snapshot on `main`'s ancestry that carries the next offsets.
fn offsets_snapshot(metadata: &Value) -> Result<Option<i64>, IcebergError> {
    let mut id = current_snapshot(metadata)?.map(|s| s.snapshot_id);
    while let Some(snapshot_id) = id {
        let snapshot = snapshot_by_id(metadata, snapshot_id)?;
        if snapshot["summary"][NEXT_OFFSETS_KEY].is_string() {
            return Ok(Some(snapshot_id));
        }
        id = snapshot["parent-snapshot-id"].as_i64();
    }
    Ok(None)
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
    let Some(snapshot_id) = offsets_snapshot(metadata)? else {
        return Ok(BTreeMap::new());
    };
    let text = snapshot_by_id(metadata, snapshot_id)?["summary"][NEXT_OFFSETS_KEY]
        .as_str()
        .unwrap_or_default();
    let offsets: BTreeMap<String, i64> = serde_json::from_str(text).map_err(|e| {
        IcebergError::Metadata(format!("snapshot {snapshot_id}'s {NEXT_OFFSETS_KEY}: {e}"))
    })?;
    offsets
        .into_iter()
        .map(|(p, o)| {
            p.parse::<i32>().map(|p| (p, o)).map_err(|_| {
                IcebergError::Metadata(format!("snapshot {snapshot_id}: partition {p}"))
            })
        })
        .collect()
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
            "topic-id",
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
            replaced: None,
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

    #[test]
    fn expiry_keeps_the_newest_and_the_one_with_offsets() {
        let schema = TableSchema::new(crate::table_schema::ValueColumns::Binary);
        let mut table = new_table(
            "file:///t",
            "2c9c5a3e-0000-4000-8000-000000000002",
            "topic-id",
            &schema,
            0,
        );
        let offsets = BTreeMap::from([(0, 1)]);
        for (i, at) in [(1, 1_000), (2, 2_000), (3, 3_000), (4, 4_000)] {
            let list = format!("list-{i}");
            let snapshot = NewSnapshot {
                schema: &schema,
                snapshot_id: i,
                manifest_list: &list,
                added_files: 1,
                added_records: 1,
                replaced: None,
                next_offsets: &offsets,
                now_ms: at,
            };
            table = append(&table, &format!("m{i}"), &snapshot).unwrap().0;
        }
        // Another writer's snapshot without offsets becomes current.
        table["snapshots"].as_array_mut().unwrap().push(
            json!({"snapshot-id": 5, "parent-snapshot-id": 4, "timestamp-ms": 5_000,
                   "summary": {"operation": "replace"}, "manifest-list": "list-5"}),
        );
        table["refs"]["main"]["snapshot-id"] = json!(5);
        let retention = Retention {
            max_snapshots: 2,
            max_age_ms: 2_500,
        };
        let expired = expire(&mut table, &retention, 5_000).unwrap();
        assert_eq!(expired.manifest_lists, ["list-1", "list-2", "list-3"]);
        let ids: Vec<_> = (table["snapshots"].as_array().unwrap().iter())
            .map(|s| s["snapshot-id"].as_i64().unwrap())
            .collect();
        assert_eq!(ids, [4, 5]);
        assert_eq!(next_offsets(&table).unwrap(), offsets);
        // By age alone: only the current one and the one with offsets are left.
        let retention = Retention {
            max_snapshots: 10,
            max_age_ms: 0,
        };
        assert!(expire(&mut table, &retention, 9_000)
            .unwrap()
            .manifest_lists
            .is_empty());
        assert_eq!(table["snapshot-log"].as_array().unwrap().len(), 1);
    }
}
