//! Rows as a table's value columns: for a table whose values are fields, each value's schema
//! (named by its wire-format id) is merged into the table's columns and the value decoded into
//! them. A value that cannot be is a bad record, named with its partition and offset; whether
//! that stops the table or sends the record to the dead-letter table is the writer's choice.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::rc::Rc;

use apache_avro::types::Value as AvroValue;
use prost_reflect::FileDescriptor;
use shoal_iceberg::avro_columns::{self, as_record, Names};
use shoal_iceberg::avro_unions::tag_unions;
use shoal_iceberg::columns::ColumnType;
use shoal_iceberg::json_columns;
use shoal_iceberg::protobuf_columns;
use shoal_iceberg::shred::ValueLeaves;
use shoal_iceberg::table_schema::{
    TableSchema, ValueColumns, DEAD_LETTER_BYTES, DEAD_LETTER_ERROR,
};
use shoal_iceberg::Row;
use shoal_registry::wire;

use super::value_schemas::{AvroValueSchema, Lookup, ValueSchemas};

/// How a row's value is decoded, once its schema is merged into the columns.
#[derive(Clone)]
enum Decode {
    Avro(Rc<AvroValueSchema>),
    /// As JSON, into the columns the table then has.
    Json,
    /// As the message of the file its indexes name.
    Protobuf(Rc<FileDescriptor>),
}

/// What one merge of a value schema covers: a schema id, and for Protobuf the message its
/// records' indexes name (records of one id may be of several messages).
type SchemaKey = (i32, Option<String>);

/// A row that cannot become the table's columns: its index among the rows read, and why.
pub struct BadRecord {
    pub index: usize,
    pub why: String,
}

/// The rows' values as the table's columns.
pub struct Converted {
    /// The schema the good rows are written with: the table's, or its next version.
    pub schema: TableSchema,
    /// The good rows' value fields, for a table that has them.
    pub values: Option<ValueLeaves>,
    /// In the order read.
    pub bad: Vec<BadRecord>,
}

/// The schema of a new table for `rows`: value fields when the first value names a
/// registered Avro record schema, JSON Schema of an object or Protobuf file, else bytes. Err
/// when the registry could not be asked.
pub fn new_table_schema(rows: &[Row], schemas: &mut ValueSchemas) -> Result<TableSchema, String> {
    let first_id = (rows.iter())
        .find_map(|r| r.value.as_deref())
        .and_then(|value| wire::schema_id(Some(value)));
    let fields = match first_id {
        Some(id) if schemas.has_registry() => match schemas.lookup(id)? {
            Lookup::Avro(avro) => {
                let names = avro.names();
                as_record(&avro.schema, &names).is_some()
            }
            Lookup::Json(schema) => json_columns::is_object(schema.documents()),
            Lookup::Protobuf(_) => true,
            Lookup::Refused(_) => false,
        },
        _ => false,
    };
    Ok(TableSchema::new(match fields {
        true => ValueColumns::Fields(Vec::new()),
        false => ValueColumns::Binary,
    }))
}

/// For a Protobuf schema, the full name of the message `value`'s indexes name (None when
/// they name none: decoding says so).
fn message_name(
    id: i32,
    value: &[u8],
    schemas: &mut ValueSchemas,
) -> Result<Option<String>, String> {
    Ok(match schemas.lookup(id)? {
        Lookup::Protobuf(file) => {
            let data = wire::data(value).unwrap_or_default();
            shoal_registry::decode::protobuf_message_type(&file, data)
                .ok()
                .map(|(message, _)| message.full_name().to_string())
        }
        _ => None,
    })
}

/// How values of a schema (`key`) are decoded, once its fields are merged into `schema`;
/// `value` is a record's of it. The inner Err says why they cannot be, the outer that the
/// registry could not be asked.
fn decide(
    (id, _): &SchemaKey,
    value: &[u8],
    schema: &mut TableSchema,
    schemas: &mut ValueSchemas,
) -> Result<Result<Decode, String>, String> {
    let id = *id;
    let (merged, decode) = match schemas.lookup(id)? {
        Lookup::Refused(why) => return Ok(Err(why)),
        Lookup::Avro(avro) => {
            let names = avro.names();
            let Some(record) = as_record(&avro.schema, &names) else {
                return Ok(Err(format!("schema id {id} is not a record")));
            };
            let merged = avro_columns::merge(schema, record, &names);
            (merged, Decode::Avro(avro.clone()))
        }
        Lookup::Json(json) => (json_columns::merge(schema, json.documents()), Decode::Json),
        Lookup::Protobuf(file) => {
            let data = wire::data(value).unwrap_or_default();
            let message = match shoal_registry::decode::protobuf_message_type(&file, data) {
                Ok((message, _)) => message,
                Err(why) => return Ok(Err(why)),
            };
            let merged = protobuf_columns::merge(schema, &message);
            (merged, Decode::Protobuf(file.clone()))
        }
    };
    Ok(match merged {
        Ok(merged) => {
            *schema = merged;
            Ok(decode)
        }
        Err(why) => Err(format!("schema id {id}: {why}")),
    })
}

/// `rows` as `table`'s columns. Err when the registry could not be asked.
pub fn convert(
    rows: &[Row],
    table: &TableSchema,
    schemas: &mut ValueSchemas,
) -> Result<Converted, String> {
    if table.value == ValueColumns::Binary {
        return Ok(Converted {
            schema: table.clone(),
            values: None,
            bad: Vec::new(),
        });
    }
    let mut bad = Vec::new();
    // Each row's schema, merged into the columns before any value is decoded; each id once.
    let mut schema = table.clone();
    let mut decided: HashMap<SchemaKey, Result<Decode, String>> = HashMap::new();
    let mut plans = Vec::with_capacity(rows.len());
    for (index, row) in rows.iter().enumerate() {
        let plan = match row.value.as_deref() {
            None => Ok(None),
            Some(value) => match wire::schema_id(Some(value)) {
                None => Err("the value does not start with a schema id".to_string()),
                Some(id) => {
                    let message = message_name(id, value, schemas)?;
                    match decided.entry((id, message)) {
                        Entry::Occupied(known) => known.get().clone().map(Some),
                        Entry::Vacant(place) => {
                            let decision = decide(place.key(), value, &mut schema, schemas)?;
                            place.insert(decision).clone().map(Some)
                        }
                    }
                }
            },
        };
        plans.push(plan.map_err(|why| bad.push(BadRecord { index, why })));
    }
    // Versions merged in one commit make one new schema version, not one each.
    if schema != *table {
        schema.schema_id = table.schema_id + 1;
    }
    let ValueColumns::Fields(fields) = &schema.value else {
        unreachable!("a table with value fields keeps them")
    };
    let mut values = ValueLeaves::new(fields);
    let value_type = ColumnType::Struct(fields.clone());
    // The named types of the Avro schemas whose values need their unions tagged, once each.
    let union_names: HashMap<*const AvroValueSchema, Names<'_>> = (decided.values())
        .filter_map(|decision| match decision {
            Ok(Decode::Avro(avro)) if avro.tagged_unions => Some((Rc::as_ptr(avro), avro.names())),
            _ => None,
        })
        .collect();
    for (index, (row, plan)) in rows.iter().zip(plans).enumerate() {
        let Ok(plan) = plan else { continue };
        let data = row
            .value
            .as_deref()
            .and_then(wire::data)
            .unwrap_or_default();
        let decoded = match plan {
            Some(Decode::Avro(avro)) => {
                let value =
                    shoal_registry::decode::avro_value(&avro.schema, &avro.referenced, data);
                match union_names.get(&Rc::as_ptr(&avro)) {
                    Some(names) => value.and_then(|v| tag_unions(v, &avro.schema, names)),
                    None => value,
                }
                .map(Some)
            }
            Some(Decode::Json) => serde_json::from_slice(data)
                .map_err(|e| format!("not JSON: {e}"))
                .and_then(|json| json_columns::value_of(&value_type, json))
                .map(Some),
            Some(Decode::Protobuf(file)) => shoal_registry::decode::protobuf_message(&file, data)
                .and_then(|message| protobuf_columns::value_of(&message))
                .map(Some),
            None => Ok(None),
        };
        if let Err(why) = decoded.and_then(|value| values.push(value)) {
            bad.push(BadRecord { index, why });
        }
    }
    bad.sort_by_key(|b| b.index);
    Ok(Converted {
        schema,
        values: Some(values),
        bad,
    })
}

/// The dead-letter table's value fields for `rows`: each one's bytes and why they could not
/// become columns.
pub fn dead_letter_values(rows: &[(&Row, &str)]) -> Result<ValueLeaves, String> {
    let schema = TableSchema::dead_letters();
    let ValueColumns::Fields(fields) = &schema.value else {
        unreachable!("a dead-letter table has value fields")
    };
    let mut values = ValueLeaves::new(fields);
    for (row, why) in rows {
        let bytes = (row.value.as_ref()).map_or(AvroValue::Null, |b| AvroValue::Bytes(b.to_vec()));
        values.push(Some(AvroValue::Record(vec![
            (DEAD_LETTER_BYTES.into(), bytes),
            (DEAD_LETTER_ERROR.into(), AvroValue::String(why.to_string())),
        ])))?;
    }
    Ok(values)
}
