//! A JSON Schema of an object as the table's value columns (merged by `evolve`), and JSON
//! values as the rows' values in the form the shredder takes (`apache_avro`'s values, which
//! Avro records decode to as well).
//!
//! | JSON Schema | Iceberg |
//! |---|---|
//! | string | string |
//! | integer | long |
//! | number | double |
//! | boolean | boolean |
//! | array (with `items`) | list |
//! | object with `properties` | struct |
//! | object with only `additionalProperties` | map<string, …> |
//!
//! A `type` may name `null` beside one other type (every value column is optional), and so
//! may `oneOf` or `anyOf` name a null schema beside others of one column type (Confluent's
//! Java serializer writes each optional field so: `oneOf` a `{"type": "null"}` and the
//! field's schema); `$ref`s are followed: local ones (`#/definitions/…`, `#/$defs/…`) and
//! those to the schemas the registry's references name (`customer.json`, with a pointer into
//! it after `#` or not). Anything else (several types) has no column type here.

use std::collections::HashMap;

use apache_avro::types::Value as AvroValue;
use serde_json::Value;

use crate::columns::{Column, ColumnType};
use crate::evolve;
use crate::table_schema::TableSchema;

/// Schemas nest no deeper than this (a recursive `$ref` nests without end).
const DEPTH_MAX: usize = 32;

/// A schema and the schemas its references name, by the name each reference gives.
#[derive(Clone, Copy)]
pub struct Documents<'a> {
    pub schema: &'a Value,
    pub referenced: &'a [(String, Value)],
}

impl<'a> Documents<'a> {
    /// A schema that refers to no other.
    pub fn alone(schema: &'a Value) -> Documents<'a> {
        Documents {
            schema,
            referenced: &[],
        }
    }

    /// The schema `reference` points at from within `root`, and the document it is in.
    fn follow(&self, reference: &str, root: &'a Value) -> Result<(&'a Value, &'a Value), String> {
        let (document, pointer) = reference.split_once('#').unwrap_or((reference, ""));
        let document = match document {
            "" => root,
            name => (self.referenced.iter())
                .find(|(known, _)| known == name)
                .map(|(_, schema)| schema)
                .ok_or_else(|| format!("the reference {reference} names no referenced schema"))?,
        };
        let target = (document.pointer(pointer))
            .ok_or_else(|| format!("the reference {reference} is not in the schema"))?;
        Ok((target, document))
    }
}

/// Whether `documents`' schema describes objects with properties: values that can become
/// columns.
pub fn is_object(documents: Documents<'_>) -> bool {
    matches!(
        column_type(documents.schema, documents.schema, documents, 0),
        Ok(Some(ColumnType::Struct(_)))
    )
}

/// `table`'s schema after merging the object schema's properties into its value columns.
pub fn merge(table: &TableSchema, documents: Documents<'_>) -> Result<TableSchema, String> {
    let schema = documents.schema;
    let name = schema["title"].as_str().unwrap_or("value");
    match column_type(schema, schema, documents, 0).map_err(|e| format!("{name}: {e}"))? {
        Some(ColumnType::Struct(fields)) => evolve::merge(table, name, fields),
        _ => Err(format!("{name}: not an object with properties")),
    }
}

/// The column type of a schema (its ids all 0) in the document `root`; None for `null`.
fn column_type<'a>(
    schema: &'a Value,
    root: &'a Value,
    documents: Documents<'a>,
    depth: usize,
) -> Result<Option<ColumnType>, String> {
    if depth > DEPTH_MAX {
        return Err(format!("nested over {DEPTH_MAX} deep (a recursive $ref?)"));
    }
    if let Some(reference) = schema["$ref"].as_str() {
        let (target, root) = documents.follow(reference, root)?;
        return column_type(target, root, documents, depth + 1);
    }
    if let Some(choices) =
        (schema.get("oneOf").or_else(|| schema.get("anyOf"))).and_then(Value::as_array)
    {
        return one_of(choices, root, documents, depth);
    }
    let types: Vec<&str> = match &schema["type"] {
        Value::String(one) => vec![one.as_str()],
        Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
        Value::Null if schema.get("properties").is_some() => vec!["object"],
        _ => return Err("a schema without a type".into()),
    };
    if !types.is_empty() && types.iter().all(|t| *t == "null") {
        return Ok(None);
    }
    let mut not_null = types.into_iter().filter(|t| *t != "null");
    let (Some(only), None) = (not_null.next(), not_null.next()) else {
        return Err("several types (or none) have no column type".into());
    };
    Ok(Some(match only {
        "string" => ColumnType::String,
        "integer" => ColumnType::Long,
        "number" => ColumnType::Double,
        "boolean" => ColumnType::Boolean,
        "array" => match column_type(&schema["items"], root, documents, depth + 1)? {
            Some(kind) => ColumnType::list_of(kind),
            None => return Err("an array of nulls has no column type".into()),
        },
        "object" => match schema["properties"].as_object() {
            Some(properties) => {
                let mut fields = Vec::new();
                for (name, property) in properties {
                    let kind = column_type(property, root, documents, depth + 1)
                        .map_err(|e| format!("{name}: {e}"))?;
                    if let Some(kind) = kind {
                        fields.push(Column {
                            id: 0,
                            name: name.clone(),
                            required: false,
                            kind,
                        });
                    }
                }
                ColumnType::Struct(fields)
            }
            None => match column_type(&schema["additionalProperties"], root, documents, depth + 1)?
            {
                Some(kind) => ColumnType::string_map_of(kind),
                None => return Err("an object without properties has no column type".into()),
            },
        },
        other => return Err(format!("the type {other} has no column type")),
    }))
}

/// The column type of `oneOf`/`anyOf` `choices`: the one their non-null schemas share.
fn one_of<'a>(
    choices: &'a [Value],
    root: &'a Value,
    documents: Documents<'a>,
    depth: usize,
) -> Result<Option<ColumnType>, String> {
    let mut kinds = Vec::new();
    for choice in choices {
        kinds.extend(column_type(choice, root, documents, depth + 1)?);
    }
    let Some(first) = kinds.first() else {
        return Ok(None);
    };
    match kinds.iter().all(|kind| kind == first) {
        true => Ok(Some(first.clone())),
        false => Err("oneOf (or anyOf) schemas of several column types have no column type".into()),
    }
}

/// A JSON value as the value of a column of type `kind`; Err when it is not one.
pub fn value_of(kind: &ColumnType, json: Value) -> Result<AvroValue, String> {
    let wrong = |json: &Value| Err(format!("{json} where the column is a {}", kind.describe()));
    Ok(match (kind, json) {
        (_, Value::Null) => AvroValue::Null,
        (ColumnType::Struct(fields), Value::Object(mut object)) => AvroValue::Record(
            fields
                .iter()
                .map(|field| {
                    let value = object.remove(&field.name).unwrap_or(Value::Null);
                    Ok((field.name.clone(), value_of(&field.kind, value)?))
                })
                .collect::<Result<_, String>>()?,
        ),
        (ColumnType::List(element), Value::Array(items)) => AvroValue::Array(
            (items.into_iter())
                .map(|item| value_of(&element.kind, item))
                .collect::<Result<_, _>>()?,
        ),
        (ColumnType::Map(_, value), Value::Object(object)) => AvroValue::Map(
            (object.into_iter())
                .map(|(key, item)| Ok((key, value_of(&value.kind, item)?)))
                .collect::<Result<HashMap<_, _>, String>>()?,
        ),
        (ColumnType::String, Value::String(text)) => AvroValue::String(text),
        (ColumnType::Long, Value::Number(n)) if n.as_i64().is_some() => {
            AvroValue::Long(n.as_i64().unwrap_or_default())
        }
        (ColumnType::Double, Value::Number(n)) => AvroValue::Double(n.as_f64().unwrap_or(f64::NAN)),
        (ColumnType::Boolean, Value::Bool(b)) => AvroValue::Boolean(b),
        (_, json) => return wrong(&json),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::table_schema::ValueColumns;

    fn order_schema() -> Value {
        json!({
            "title": "Order", "type": "object",
            "properties": {
                "id": {"type": "string"},
                "units": {"type": "integer"},
                "price": {"type": ["number", "null"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "ship_to": {"$ref": "#/definitions/Address"},
                "extra": {"type": "object", "additionalProperties": {"type": "boolean"}}
            },
            "definitions": {"Address": {"type": "object", "properties": {"city": {"type": "string"}}}}
        })
    }

    #[test]
    fn properties_become_columns_and_values_fit_them() {
        let empty = TableSchema::new(ValueColumns::Fields(Vec::new()));
        let table = merge(&empty, Documents::alone(&order_schema())).unwrap();
        let ValueColumns::Fields(fields) = &table.value else {
            panic!()
        };
        let names: Vec<_> = fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["extra", "id", "price", "ship_to", "tags", "units"]);
        assert!(is_object(Documents::alone(&order_schema())));
        let kind = ColumnType::Struct(fields.clone());
        let value = value_of(
            &kind,
            json!({"id": "o-1", "units": 3, "tags": ["a"], "ship_to": {"city": "Oslo"},
                   "extra": {"gift": true}, "unknown": 1}),
        )
        .unwrap();
        let AvroValue::Record(values) = value else {
            panic!()
        };
        assert_eq!(values[1], ("id".into(), AvroValue::String("o-1".into())));
        assert_eq!(values[2], ("price".into(), AvroValue::Null));
        assert_eq!(values[5], ("units".into(), AvroValue::Long(3)));
        assert!(value_of(&kind, json!({"units": 2.5})).is_err());
        // A later version adds a property; a clash is refused.
        let mut v2 = order_schema();
        v2["properties"]["note"] = json!({"type": "string"});
        let next = merge(&table, Documents::alone(&v2)).unwrap();
        assert_eq!(next.last_column_id, table.last_column_id + 1);
        let mut clash = order_schema();
        clash["properties"]["units"] = json!({"type": "string"});
        assert!(merge(&table, Documents::alone(&clash))
            .unwrap_err()
            .contains("Order.units"));
        assert!(!is_object(Documents::alone(&json!({"type": "string"}))));
        assert!(merge(
            &empty,
            Documents::alone(&json!({"oneOf": [{"type": "string"}]}))
        )
        .is_err());
    }

    #[test]
    fn one_of_null_and_a_schema_is_that_schemas_column() {
        // As Confluent's Java serializer (its Jackson schema generator) writes optional fields.
        let nullable =
            |schema: Value| json!({"oneOf": [{"type": "null", "title": "Not included"}, schema]});
        let schema = json!({
            "title": "Order", "type": "object",
            "properties": {
                "id": nullable(json!({"type": "string"})),
                "units": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                "line": nullable(json!({"$ref": "#/definitions/Line"})),
                "either": {"oneOf": [{"type": "integer"}, {"type": "integer", "minimum": 5}]}
            },
            "definitions": {"Line": {"type": "object", "properties": {"sku": {"type": "string"}}}}
        });
        let empty = TableSchema::new(ValueColumns::Fields(Vec::new()));
        let table = merge(&empty, Documents::alone(&schema)).unwrap();
        let ValueColumns::Fields(fields) = &table.value else {
            panic!()
        };
        let kinds: Vec<(&str, String)> = (fields.iter())
            .map(|f| (f.name.as_str(), f.kind.describe()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("either", "long".into()),
                ("id", "string".into()),
                ("line", "struct".into()),
                ("units", "long".into())
            ]
        );
        let kind = ColumnType::Struct(fields.clone());
        let value = value_of(
            &kind,
            json!({"id": null, "units": 4, "line": {"sku": "s-1"}}),
        );
        assert!(value.is_ok(), "{value:?}");
        let several = json!({"type": "object", "properties": {
            "v": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}});
        assert!(merge(&empty, Documents::alone(&several))
            .unwrap_err()
            .contains("several column types"));
    }

    #[test]
    fn references_to_other_schemas_are_followed_by_their_names() {
        let customer = json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "home": {"$ref": "#/$defs/Address"}},
            "$defs": {"Address": {"type": "object", "properties": {"city": {"type": "string"}}}}
        });
        let money = json!({"definitions": {"Money": {"type": "number"}}});
        let referenced = [
            ("customer.json".to_string(), customer),
            ("money.json".to_string(), money),
        ];
        let order = json!({
            "title": "Order", "type": "object",
            "properties": {
                "customer": {"$ref": "customer.json"},
                "total": {"$ref": "money.json#/definitions/Money"}
            }
        });
        let documents = Documents {
            schema: &order,
            referenced: &referenced,
        };
        assert!(is_object(documents));
        let empty = TableSchema::new(ValueColumns::Fields(Vec::new()));
        let table = merge(&empty, documents).unwrap();
        let json = table.to_json().to_string();
        // The customer's local reference is to its own document's $defs.
        assert!(json.contains(r#""name":"city""#), "{json}");
        assert!(
            json.contains(r#""name":"total","required":false,"type":"double""#),
            "{json}"
        );
        let missing = json!({"type": "object", "properties": {"x": {"$ref": "other.json"}}});
        let error = merge(
            &empty,
            Documents {
                schema: &missing,
                referenced: &referenced,
            },
        );
        assert!(error
            .unwrap_err()
            .contains("other.json names no referenced schema"));
    }
}
