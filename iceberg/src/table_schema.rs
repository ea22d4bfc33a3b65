//! A table's schema: the `kafka` struct every table has (the record's partition, offset,
//! timestamp, key and headers, apart from the value's own columns so a value field named
//! `offset` cannot clash), and the value: one binary column, or, for a topic whose records
//! carry a registered schema, a struct of that schema's fields. Which of the two is fixed when
//! the table is made; the struct's fields grow as new schema versions add fields.

use serde_json::{json, Value};

use crate::columns::{Column, ColumnType, Element, FieldId};
use crate::IcebergError;

/// The `kafka` struct's id and the ids below it (2 to 9).
pub const KAFKA_ID: FieldId = 1;
/// The value column's id; ids past it belong to the value's fields.
pub const VALUE_ID: FieldId = 10;
const VALUE_NAME: &str = "value";
/// A dead-letter table's value fields.
pub const DEAD_LETTER_BYTES: &str = "bytes";
pub const DEAD_LETTER_ERROR: &str = "error";

/// The value column: the record's bytes, or the fields its schema gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueColumns {
    Binary,
    Fields(Vec<Column>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSchema {
    pub schema_id: i32,
    pub value: ValueColumns,
    /// The highest field id the table has ever given (ids are never given twice).
    pub last_column_id: FieldId,
}

fn column(id: FieldId, name: &str, required: bool, kind: ColumnType) -> Column {
    Column {
        id,
        name: name.into(),
        required,
        kind,
    }
}

/// The `kafka` struct, whose leaves the data file writes first, in this order: partition,
/// offset, timestamp, key, each header's key and value.
pub fn kafka_column() -> Column {
    let header = ColumnType::Struct(vec![
        column(8, "key", true, ColumnType::String),
        column(9, "value", false, ColumnType::Binary),
    ]);
    column(
        KAFKA_ID,
        "kafka",
        true,
        ColumnType::Struct(vec![
            column(2, "partition", true, ColumnType::Int),
            column(3, "offset", true, ColumnType::Long),
            column(4, "timestamp", true, ColumnType::TimestampTz),
            column(5, "key", false, ColumnType::Binary),
            column(
                6,
                "headers",
                false,
                ColumnType::List(Box::new(Element {
                    id: 7,
                    required: true,
                    kind: header,
                })),
            ),
        ]),
    )
}

impl TableSchema {
    /// A new table's first schema.
    pub fn new(value: ValueColumns) -> TableSchema {
        let mut schema = TableSchema {
            schema_id: 0,
            value,
            last_column_id: VALUE_ID,
        };
        schema.last_column_id = schema.value_column().kind.max_id().max(VALUE_ID);
        schema
    }

    /// A dead-letter table's: the value struct holds the record's bytes and why they could
    /// not become the topic table's columns.
    pub fn dead_letters() -> TableSchema {
        TableSchema::new(ValueColumns::Fields(vec![
            column(VALUE_ID + 1, DEAD_LETTER_BYTES, false, ColumnType::Binary),
            column(VALUE_ID + 2, DEAD_LETTER_ERROR, false, ColumnType::String),
        ]))
    }

    pub fn value_column(&self) -> Column {
        let kind = match &self.value {
            ValueColumns::Binary => ColumnType::Binary,
            ValueColumns::Fields(fields) => ColumnType::Struct(fields.clone()),
        };
        column(VALUE_ID, VALUE_NAME, false, kind)
    }

    /// The schema as table metadata (and manifests) hold it.
    pub fn to_json(&self) -> Value {
        json!({
            "type": "struct",
            "schema-id": self.schema_id,
            "fields": [kafka_column().to_json(), self.value_column().to_json()],
        })
    }

    /// The data files' Parquet message type.
    pub fn parquet_message(&self) -> String {
        let mut text = String::from("message table {\n");
        kafka_column().write_parquet(&mut text);
        self.value_column().write_parquet(&mut text);
        text.push_str("}\n");
        text
    }

    /// The current schema of a table's metadata (read from `location`).
    pub fn of_metadata(metadata: &Value, location: &str) -> Result<TableSchema, IcebergError> {
        let bad = |what: String| IcebergError::Metadata(format!("{location}: {what}"));
        let current = metadata["current-schema-id"]
            .as_i64()
            .ok_or_else(|| bad("no current-schema-id".into()))?;
        let schema = (metadata["schemas"].as_array().into_iter().flatten())
            .find(|s| s["schema-id"].as_i64() == Some(current))
            .ok_or_else(|| bad(format!("schema {current} is not listed")))?;
        let value = (schema["fields"].as_array().into_iter().flatten())
            .find(|f| f["id"].as_i64() == Some(i64::from(VALUE_ID)))
            .ok_or_else(|| bad(format!("schema {current} has no value column")))?;
        let value = match Column::from_json(value)
            .map_err(|e| bad(e.to_string()))?
            .kind
        {
            ColumnType::Binary => ValueColumns::Binary,
            ColumnType::Struct(fields) => ValueColumns::Fields(fields),
            other => return Err(bad(format!("a value column of type {}", other.describe()))),
        };
        let last_column_id = (metadata["last-column-id"].as_i64())
            .and_then(|id| FieldId::try_from(id).ok())
            .ok_or_else(|| bad("no last-column-id".into()))?;
        Ok(TableSchema {
            schema_id: i32::try_from(current).map_err(|_| bad("a schema id past i32".into()))?,
            value,
            last_column_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field id of an Iceberg schema, depth first.
    fn ids(value: &Value, out: &mut Vec<i64>) {
        match value {
            Value::Object(map) => {
                for key in ["id", "element-id", "key-id", "value-id"] {
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
        let schema = TableSchema::new(ValueColumns::Binary);
        let mut iceberg = Vec::new();
        ids(&schema.to_json(), &mut iceberg);
        iceberg.sort();
        assert_eq!(iceberg, (1..=i64::from(VALUE_ID)).collect::<Vec<_>>());
        let parquet = parquet::schema::parser::parse_message_type(&schema.parquet_message());
        let mut parquet_ids = Vec::new();
        fn walk(t: &parquet::schema::types::Type, out: &mut Vec<i64>) {
            if t.get_basic_info().has_id() {
                out.push(i64::from(t.get_basic_info().id()));
            }
            if t.is_group() {
                t.get_fields().iter().for_each(|f| walk(f, out));
            }
        }
        walk(&parquet.unwrap(), &mut parquet_ids);
        parquet_ids.sort();
        assert_eq!(parquet_ids, iceberg);
    }

    #[test]
    fn the_current_schema_is_read_back_from_metadata() {
        let fields = vec![column(VALUE_ID + 1, "name", false, ColumnType::String)];
        let schema = TableSchema::new(ValueColumns::Fields(fields));
        assert_eq!(schema.last_column_id, 11);
        let metadata = json!({
            "current-schema-id": 0,
            "last-column-id": 11,
            "schemas": [schema.to_json()],
        });
        assert_eq!(TableSchema::of_metadata(&metadata, "m").unwrap(), schema);
    }
}
