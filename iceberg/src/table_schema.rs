//! The table's columns, declared once here for Iceberg (the schema in the table's metadata)
//! and for Parquet (the data files' message type, carrying the same field ids, which is how
//! Iceberg readers match a file's columns to the table's).
//!
//! Every table has the `kafka` struct: the record's partition, offset, timestamp, key and
//! headers, apart from the value's own columns so a value field named `offset` cannot clash.
//! Without a registered schema the value is one binary column.

use serde_json::{json, Value};

/// The id of the schema the tables are written with.
pub const SCHEMA_ID: i64 = 0;
/// The highest field id the schema uses.
pub const LAST_COLUMN_ID: i64 = 10;

/// The Iceberg schema, as table metadata holds it.
pub fn iceberg_schema() -> Value {
    json!({
        "type": "struct",
        "schema-id": SCHEMA_ID,
        "fields": [
            {"id": 1, "name": "kafka", "required": true, "type": {
                "type": "struct",
                "fields": [
                    {"id": 2, "name": "partition", "required": true, "type": "int"},
                    {"id": 3, "name": "offset", "required": true, "type": "long"},
                    {"id": 4, "name": "timestamp", "required": true, "type": "timestamptz"},
                    {"id": 5, "name": "key", "required": false, "type": "binary"},
                    {"id": 6, "name": "headers", "required": false, "type": {
                        "type": "list",
                        "element-id": 7,
                        "element-required": true,
                        "element": {
                            "type": "struct",
                            "fields": [
                                {"id": 8, "name": "key", "required": true, "type": "string"},
                                {"id": 9, "name": "value", "required": false, "type": "binary"}
                            ]
                        }
                    }}
                ]
            }},
            {"id": 10, "name": "value", "required": false, "type": "binary"}
        ]
    })
}

/// The same columns as a Parquet message type, with their field ids. Leaves in order:
/// partition, offset, timestamp, key, each header's key and value, value.
pub const PARQUET_MESSAGE: &str = "
message table {
  required group kafka = 1 {
    required int32 partition = 2;
    required int64 offset = 3;
    required int64 timestamp (TIMESTAMP(MICROS,true)) = 4;
    optional binary key = 5;
    optional group headers (LIST) = 6 {
      repeated group list {
        required group element = 7 {
          required binary key (STRING) = 8;
          optional binary value = 9;
        }
      }
    }
  }
  optional binary value = 10;
}
";

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field id of the Iceberg schema, depth first.
    fn ids(value: &Value, out: &mut Vec<i64>) {
        match value {
            Value::Object(map) => {
                for key in ["id", "element-id"] {
                    if let Some(id) = map.get(key).and_then(Value::as_i64) {
                        out.push(id);
                    }
                }
                map.values().for_each(|v| ids(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| ids(v, out)),
            _ => {}
        }
    }

    #[test]
    fn both_declarations_carry_the_same_ids() {
        let mut iceberg = Vec::new();
        ids(&iceberg_schema(), &mut iceberg);
        iceberg.sort();
        assert_eq!(iceberg, (1..=LAST_COLUMN_ID).collect::<Vec<_>>());
        let parquet = parquet::schema::parser::parse_message_type(PARQUET_MESSAGE).unwrap();
        let mut parquet_ids = Vec::new();
        fn walk(t: &parquet::schema::types::Type, out: &mut Vec<i64>) {
            if t.get_basic_info().has_id() {
                out.push(i64::from(t.get_basic_info().id()));
            }
            if t.is_group() {
                t.get_fields().iter().for_each(|f| walk(f, out));
            }
        }
        walk(&parquet, &mut parquet_ids);
        parquet_ids.sort();
        assert_eq!(parquet_ids, iceberg);
    }
}
