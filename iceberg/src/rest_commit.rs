//! A commit as the Iceberg REST catalog protocol takes it (`CommitTableRequest`): the
//! changes from the metadata a commit was planned from to the one it planned, and the
//! requirements that make it land only on the table it was planned from. The catalog writes
//! the new metadata itself, so only what the writer changes is said: snapshots added and
//! expired, `main` moved, a new schema made current.

use serde_json::{json, Value};

use crate::IcebergError;

/// The request body that commits `next` over `from` (both table metadata).
pub fn commit_request(from: &Value, next: &Value) -> Result<Value, IcebergError> {
    let table_uuid = from["table-uuid"]
        .as_str()
        .ok_or_else(|| IcebergError::Metadata("the table's metadata has no table-uuid".into()))?;
    let main = |metadata: &Value| metadata["refs"]["main"]["snapshot-id"].as_i64();
    let requirements = vec![
        json!({"type": "assert-table-uuid", "uuid": table_uuid}),
        // Another writer's commit moves main: this one then fails and is planned again.
        json!({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": main(from)}),
    ];
    let mut updates = Vec::new();
    let schema_ids = |metadata: &Value| -> Vec<i64> {
        (metadata["schemas"].as_array().into_iter().flatten())
            .filter_map(|s| s["schema-id"].as_i64())
            .collect()
    };
    let known_schemas = schema_ids(from);
    let mut added_schemas = Vec::new();
    for schema in next["schemas"].as_array().into_iter().flatten() {
        if !(schema["schema-id"].as_i64()).is_some_and(|id| known_schemas.contains(&id)) {
            added_schemas.extend(schema["schema-id"].as_i64());
            updates.push(json!({
                "action": "add-schema",
                "schema": schema,
                "last-column-id": next["last-column-id"],
            }));
        }
    }
    if next["current-schema-id"] != from["current-schema-id"] {
        // -1 is the schema this commit added, whatever id the catalog gave it.
        let current = next["current-schema-id"].as_i64();
        let schema_id = match current.is_some_and(|id| added_schemas.contains(&id)) {
            true => json!(-1),
            false => next["current-schema-id"].clone(),
        };
        updates.push(json!({"action": "set-current-schema", "schema-id": schema_id}));
    }
    let snapshot_ids = |metadata: &Value| -> Vec<i64> {
        (metadata["snapshots"].as_array().into_iter().flatten())
            .filter_map(|s| s["snapshot-id"].as_i64())
            .collect()
    };
    let (before, after) = (snapshot_ids(from), snapshot_ids(next));
    for snapshot in next["snapshots"].as_array().into_iter().flatten() {
        if !(snapshot["snapshot-id"].as_i64()).is_some_and(|id| before.contains(&id)) {
            updates.push(json!({"action": "add-snapshot", "snapshot": snapshot}));
        }
    }
    if let Some(snapshot_id) = main(next).filter(|id| Some(*id) != main(from)) {
        updates.push(json!({
            "action": "set-snapshot-ref",
            "ref-name": "main",
            "type": "branch",
            "snapshot-id": snapshot_id,
        }));
    }
    let expired: Vec<i64> = before
        .into_iter()
        .filter(|id| !after.contains(id))
        .collect();
    if !expired.is_empty() {
        updates.push(json!({"action": "remove-snapshots", "snapshot-ids": expired}));
    }
    Ok(json!({"requirements": requirements, "updates": updates}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(id: i64) -> Value {
        json!({"snapshot-id": id, "sequence-number": id, "manifest-list": format!("l{id}")})
    }

    #[test]
    fn a_commit_says_what_it_added_moved_and_expired_and_where_it_started() {
        let from = json!({
            "table-uuid": "u",
            "current-schema-id": 0,
            "last-column-id": 10,
            "schemas": [{"schema-id": 0}],
            "snapshots": [snapshot(1), snapshot(2)],
            "refs": {"main": {"snapshot-id": 2, "type": "branch"}},
        });
        let next = json!({
            "table-uuid": "u",
            "current-schema-id": 1,
            "last-column-id": 12,
            "schemas": [{"schema-id": 0}, {"schema-id": 1}],
            "snapshots": [snapshot(2), snapshot(3)],
            "refs": {"main": {"snapshot-id": 3, "type": "branch"}},
        });
        let request = commit_request(&from, &next).unwrap();
        assert_eq!(
            request["requirements"][1],
            json!({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 2})
        );
        let actions: Vec<&str> = (request["updates"].as_array().unwrap().iter())
            .map(|u| u["action"].as_str().unwrap())
            .collect();
        assert_eq!(
            actions,
            [
                "add-schema",
                "set-current-schema",
                "add-snapshot",
                "set-snapshot-ref",
                "remove-snapshots"
            ]
        );
        assert_eq!(request["updates"][0]["last-column-id"], 12);
        assert_eq!(request["updates"][1]["schema-id"], -1);
        assert_eq!(request["updates"][2]["snapshot"]["snapshot-id"], 3);
        assert_eq!(request["updates"][4]["snapshot-ids"], json!([1]));
    }

    #[test]
    fn the_first_commit_requires_a_table_with_no_main() {
        let from = json!({"table-uuid": "u", "current-schema-id": 0, "refs": {}});
        let next = json!({
            "table-uuid": "u",
            "current-schema-id": 0,
            "snapshots": [snapshot(7)],
            "refs": {"main": {"snapshot-id": 7, "type": "branch"}},
        });
        let request = commit_request(&from, &next).unwrap();
        assert_eq!(request["requirements"][1]["snapshot-id"], Value::Null);
        assert_eq!(request["updates"].as_array().unwrap().len(), 2);
    }
}
